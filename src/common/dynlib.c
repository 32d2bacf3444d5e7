/* dynlib.c -- see dynlib.h. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "dynlib.h"

#ifdef BATON_HAVE_MHD
#include <microhttpd.h>
#endif

/* A function pointer is stored through the bytes of a data pointer, as
 * dlsym(3) has it: POSIX makes the two the same size. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function and data pointers differ");

int dynlib_open(const char *soname, const char *what, const char *package,
                const struct dynlib_sym *syms, size_t n, char *msg, size_t msglen)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (h == NULL) {
        snprintf(msg, msglen, "%s needs %s, which cannot be loaded (%s): apt-get install %s", what,
                 soname, dlerror(), package);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        dlerror();
        void *p = dlsym(h, syms[i].name);
        const char *err = dlerror();
        if (p == NULL || err != NULL) {
            snprintf(msg, msglen, "%s needs %s() from %s: %s", what, syms[i].name, soname,
                     err != NULL ? err : "not found");
            dlclose(h);
            return -1;
        }
        memcpy(syms[i].slot, &p, sizeof p);
    }
    dlclose(h); /* RTLD_NODELETE: it stays, and its addresses with it */
    return 0;
}

int dynlib_mhd_open(const struct dynlib_sym *syms, size_t n, char *msg, size_t msglen)
{
#ifdef BATON_HAVE_MHD
    void *slot[64];
    struct dynlib_sym all[] = {
#define DYNLIB_MHD_NAME_(field, sym) {#sym, NULL},
        DYNLIB_MHD_CALLS(DYNLIB_MHD_NAME_)
#undef DYNLIB_MHD_NAME_
    };
    _Static_assert(sizeof all / sizeof all[0] <= sizeof slot / sizeof slot[0],
                   "room for the calls");
    if (syms == NULL) {
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            all[i].slot = &slot[i];
        syms = all;
        n = sizeof all / sizeof all[0];
    }
    return dynlib_open(BATON_MHD_SONAME, "the HTTP endpoint", "libmicrohttpd12", syms, n, msg,
                       msglen);
#else
    (void)syms;
    (void)n;
    snprintf(msg, msglen,
             "this baton was built without libmicrohttpd: it has no HTTP server "
             "(install libmicrohttpd-dev and rebuild, or set http.listen: off)");
    return -1;
#endif
}

int dynlib_mhd_tls(char *msg, size_t msglen)
{
#ifdef BATON_HAVE_MHD
    __typeof__(MHD_is_feature_supported) *supported = NULL;
    const struct dynlib_sym sym = {"MHD_is_feature_supported", &supported};
    if (dynlib_mhd_open(&sym, 1, msg, msglen) != 0)
        return -1;
    if (supported(MHD_FEATURE_TLS) == MHD_YES)
        return 0;
    snprintf(msg, msglen,
             "http.tls: %s was built without TLS (MHD_FEATURE_TLS): install Debian's "
             "libmicrohttpd12, which has it through GnuTLS, or terminate TLS in a proxy",
             BATON_MHD_SONAME);
    return -1;
#else
    return dynlib_mhd_open(NULL, 0, msg, msglen);
#endif
}
