/* http.h -- a small HTTP server (libmicrohttpd) in a thread of its own,
 * for the supervisor's /metrics, /healthz, /readyz, /status, status page
 * and, through a control hook, the control API (api.h).
 *
 * It knows nothing of baton: it serves a table of routes, each a handler
 * that fills a response. Handlers run on the server's thread and must not
 * block: they read what the supervisor's loop published (ops.c); the loop
 * never waits for the server, and no route ever reaches Redis. A control
 * hook (http_start_control) sees every request first and may take it to
 * answer later from another thread (the API's workers, which do reach
 * Redis), while the server goes on serving the others.
 *
 * Without a hook only GET and HEAD are served (405 with `Allow: GET,
 * HEAD` otherwise); an unknown path is 404; a request line or header block
 * larger than HTTP_MAX_REQUEST bytes is refused (414 for a long URI,
 * 431/400 for the rest).
 *
 * Slow or idle clients cannot starve the others, however many: at most
 * HTTP_MAX_CONNS connections are open (HTTP_MAX_PER_IP from one TCP
 * address), and a new one always gets in: a client already holding
 * HTTP_MAX_PER_IP loses its own oldest connection to it, a full server its
 * oldest, in both cases preferring one that has not had a request answered
 * yet. Each connection is also closed after HTTP_IDLE_S seconds without
 * traffic and, whatever it does, HTTP_LIFETIME_MS after it was accepted (a
 * slowloris client trickling one header byte a second is cut off then). A
 * Unix socket's clients have no address to tell them apart: they share the
 * HTTP_MAX_CONNS.
 *
 * TLS (struct http_tls): libmicrohttpd's own (GnuTLS in Debian's build),
 * with a certificate and key given as PEM text; http_tls_replace() serves
 * new connections with another pair (a SIGHUP's), the open ones end with
 * the old.
 *
 * DNS rebinding: a TCP server answers only the Host headers that
 * http_host_allowed() (listen.h) accepts, with the allowed names given to
 * http_start(); others get 421 Misdirected Request. A request without
 * Host is served over HTTP/1.0 only.
 *
 * libmicrohttpd is opened when a server starts (dynlib.h). Without it at
 * build time (BATON_HAVE_MHD undefined), http_start() fails and
 * http_available() is false. */
#ifndef BATON_HTTP_H
#define BATON_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "listen.h" /* struct http_listen, http_host_allowed */

#define HTTP_MAX_CONNS   64
#define HTTP_MAX_PER_IP  16
#define HTTP_IDLE_S      5
#define HTTP_LIFETIME_MS 10000
#define HTTP_MAX_URI     2048
#define HTTP_MAX_REQUEST 16384

/* What a handler answers. body is owned by the response (malloc'd; freed
 * by the server); NULL with len 0 for none. */
struct http_response {
    int status;       /* 200, 503... */
    const char *type; /* Content-Type (static) */
    char *body;
    size_t len;
    bool page;         /* an HTML page: stricter security headers */
    const char *allow; /* with 405: the Allow header (static); NULL: "GET, HEAD" */
    int retry_after_s; /* > 0: a Retry-After header (429, 503) */
    bool www_auth;     /* with 401: WWW-Authenticate: Bearer */
    /* A control hook's HTTP_PASS: what it grants the caller (its meaning
     * is the hook's), handed to the route's handler in its out->grant;
     * 0 without a hook. */
    int grant;
};

/* path: the request's path (without its query, which is ignored). Called
 * on the server's thread. */
typedef void (*http_handler_fn)(void *ctx, const char *path, struct http_response *out);

struct http_route {
    const char *path; /* exact match */
    http_handler_fn fn;
};

/* ---- the control hook (http_start_control) ----
 *
 * A server may have a hook that sees every request first, once its body
 * (at most HTTP_MAX_BODY bytes) is read: it answers it (HTTP_ANSWER), lets
 * the routes answer it as above (HTTP_PASS: then only GET and HEAD are
 * served), or takes it (HTTP_LATER): the connection is suspended, the
 * server goes on serving the others (/healthz and /readyz answer while a
 * call waits), and the hook's side answers it from any thread with
 * http_call_answer(), within HTTP_CALL_MAX_MS (the connection is kept that
 * long, then closed). Every HTTP_LATER must be answered before
 * http_stop(). */
#define HTTP_MAX_BODY    8192
#define HTTP_CALL_MAX_MS 75000

struct http;
struct http_call;

/* A request as the hook sees it. Borrowed for the call (call: until it
 * is answered). */
struct http_request {
    const char *method, *path; /* path without its query */
    const char *query;         /* the raw query after '?', or "" */
    const char *authorization; /* the header's value, or NULL */
    const char *content_type;  /* or NULL */
    const char *remote;        /* the peer's address ("10.0.0.7", "::1"), or "unix" */
    const char *body;          /* "" for none; NUL-terminated */
    size_t body_len;
    bool body_too_big; /* more than HTTP_MAX_BODY bytes were sent (body is empty) */
    struct http_call *call;
};

enum http_verdict { HTTP_PASS, HTTP_ANSWER, HTTP_LATER };

typedef enum http_verdict (*http_control_fn)(void *ctx, const struct http_request *rq,
                                             struct http_response *out);

struct http_control {
    http_control_fn fn;
    void *ctx;
};

/* A certificate (the server's, then its chain) and its private key, PEM
 * text, NUL-terminated. Borrowed for the call (copied). */
struct http_tls {
    const char *cert, *key;
};

/* Daemons of replaced certificates still serving their connections, at
 * most (each for HTTP_CALL_MAX_MS at most). */
#define HTTP_TLS_DRAINING 4

/* http_start() with a control hook (control NULL: none, as http_start)
 * and TLS (tls NULL: plain HTTP; with tls, libmicrohttpd must have TLS:
 * else -1 saying so). */
int http_start_control(const struct http_listen *l, const char *allowed_hosts,
                       const struct http_route *routes, void *ctx,
                       const struct http_control *control, const struct http_tls *tls,
                       struct http **out, char *msg, size_t msglen);

/* Serves the connections accepted from now on with tls (a server started
 * with TLS only); those open end with the certificate they began with.
 * Any one thread (the loop's). Returns 0, or -1 with msg (GnuTLS refused
 * the pair, a plain server, HTTP_TLS_DRAINING replaced ones still
 * serving): the old certificate stays. */
int http_tls_replace(struct http *h, const struct http_tls *tls, char *msg, size_t msglen);

/* Answers a call the hook took (HTTP_LATER) with out (its body taken).
 * Any thread; once per call. */
void http_call_answer(struct http_call *call, struct http_response *out);

/* True when this build has the HTTP server. */
bool http_available(void);

struct http;

/* Binds l and starts the server's thread. allowed_hosts: the names a TCP
 * server answers to besides those it always does (comma-separated; NULL or
 * "" for none; copied). routes: borrowed, ending with a NULL path; ctx is
 * passed to the handlers. The caller blocks the signals
 * it handles before, so that the thread inherits the mask. Returns 0 and
 * *out (owned; stop and free with http_stop), or -1 with a message in msg
 * (the address in use, no permission...). */
int http_start(const struct http_listen *l, const char *allowed_hosts,
               const struct http_route *routes, void *ctx, struct http **out, char *msg,
               size_t msglen);
/* The address as bound, e.g. "127.0.0.1:9746" (a port 0 resolved) or
 * "unix:/run/baton/http.sock". Borrowed; valid until http_stop(). */
const char *http_address(const struct http *h);
/* Stops the thread, closes every connection and the socket (removing a
 * Unix socket's file), frees h. NULL is a no-op. */
void http_stop(struct http *h);

#endif /* BATON_HTTP_H */
