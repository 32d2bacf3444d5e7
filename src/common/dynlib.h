/* dynlib.h -- optional libraries opened when a feature is used (dlopen),
 * not at every start.
 *
 * libmicrohttpd (http.listen) and libsystemd (a Type=notify unit) pull in
 * GnuTLS, p11-kit, nettle, libgcrypt and compressors, and libmicrohttpd
 * initialises GnuTLS at load: linked, they made about 3.3 MB resident in
 * every supervisor, followers that serve no HTTP and nodes outside systemd
 * included (measured: an idle follower 8.2 -> 4.8 MB). The headers are
 * still the packages' own, so each call keeps its prototype (the pointers
 * are declared with __typeof__ of the function). */
#ifndef BATON_DYNLIB_H
#define BATON_DYNLIB_H

#include <stddef.h>

/* One symbol to resolve: its name, and where its address goes (the
 * address of a function pointer). */
struct dynlib_sym {
    const char *name;
    void *slot;
};

/* Opens soname and stores the address of each of syms[0..n) in its slot.
 * Returns 0, or -1 with msg saying what could not be loaded, for what, and
 * which Debian package brings it. The library stays loaded for the life
 * of the process (RTLD_NODELETE): a reload may start the feature again,
 * and unloading GnuTLS would leave what it allocated unreachable. Opening
 * it again costs a lookup. */
int dynlib_open(const char *soname, const char *what, const char *package,
                const struct dynlib_sym *syms, size_t n, char *msg, size_t msglen);

/* libmicrohttpd's calls that the HTTP endpoint makes (ops/http.c),
 * X(field, symbol): one list for the server, which resolves them into
 * pointers typed by the package's header, and for the configuration's
 * check, which only needs them to resolve. */
#define DYNLIB_MHD_CALLS(X)                                                                        \
    X(start_daemon, MHD_start_daemon)                                                              \
    X(stop_daemon, MHD_stop_daemon)                                                                \
    X(run, MHD_run)                                                                                \
    X(get_timeout, MHD_get_timeout)                                                                \
    X(get_daemon_info, MHD_get_daemon_info)                                                        \
    X(get_connection_info, MHD_get_connection_info)                                                \
    X(add_connection, MHD_add_connection)                                                          \
    X(lookup_connection_value, MHD_lookup_connection_value)                                        \
    X(get_connection_values, MHD_get_connection_values)                                            \
    X(create_response_from_buffer, MHD_create_response_from_buffer)                                \
    X(add_response_header, MHD_add_response_header)                                                \
    X(queue_response, MHD_queue_response)                                                          \
    X(destroy_response, MHD_destroy_response)                                                      \
    X(suspend_connection, MHD_suspend_connection)                                                  \
    X(resume_connection, MHD_resume_connection)                                                    \
    X(is_feature_supported, MHD_is_feature_supported)

/* Opens libmicrohttpd for the HTTP endpoint and resolves syms[0..n) (the
 * calls above); with syms NULL, resolves every call of the list and keeps
 * none: a configuration asking for HTTP is so refused at once where the
 * library is missing. Returns 0, or -1 with msg as dynlib_open()'s (in a
 * build without libmicrohttpd, always -1, saying so). */
int dynlib_mhd_open(const struct dynlib_sym *syms, size_t n, char *msg, size_t msglen);

/* Opens libmicrohttpd as above and asks it whether it was built with TLS
 * (MHD_FEATURE_TLS: GnuTLS in Debian's build), for http.tls. Returns 0, or
 * -1 with msg saying what is missing. */
int dynlib_mhd_tls(char *msg, size_t msglen);

#endif
