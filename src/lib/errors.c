/* errors.c -- baton_strerror() and baton_errname(), generated from the one
 * error table in baton.h. */
#include "baton.h"

const char *baton_strerror(int code)
{
    switch (code) {
#define BATON_ERR_MSG_(name, value, msg)                                                           \
    case value: return msg;
        BATON_ERRNO_MAP(BATON_ERR_MSG_)
#undef BATON_ERR_MSG_
    }
    return "unknown error";
}

const char *baton_errname(int code)
{
    switch (code) {
#define BATON_ERR_NAME_(name, value, msg)                                                          \
    case value: return #name;
        BATON_ERRNO_MAP(BATON_ERR_NAME_)
#undef BATON_ERR_NAME_
    }
    return "UNKNOWN";
}
