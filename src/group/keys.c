/* keys.c -- see keys.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "keys.h"

char *group_key(const char *group, const char *fmt, ...)
{
    char *suffix = NULL, *key = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&suffix, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    if (asprintf(&key, "baton:{%s}:%s", group, suffix) < 0)
        key = NULL;
    free(suffix);
    return key;
}
