/* http.c -- see http.h. The requests: the Host check, the routes, the
 * control hook's calls (their bodies read, their connections suspended
 * while the hook's side carries them out); and the server's life: the
 * listening socket, the thread, start and stop.
 *
 * libmicrohttpd runs in "external polling" mode with epoll, driven by a
 * thread of ours, and has no listening socket: our thread accepts every
 * connection and hands it over (http_conns.c says how and why). The
 * listening socket (close-on-exec, a Unix socket when asked) stays in the
 * thread's epoll set; every descriptor libmicrohttpd opens is close-on-exec
 * as well. Its daemons, one per certificate, are started and replaced by
 * http_tls.c. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "http.h"

#ifndef BATON_HAVE_MHD

bool http_available(void)
{
    return false;
}

int http_start(const struct http_listen *l, const char *allowed_hosts,
               const struct http_route *routes, void *ctx, struct http **out, char *msg,
               size_t msglen)
{
    (void)l;
    (void)allowed_hosts;
    (void)routes;
    (void)ctx;
    *out = NULL;
    snprintf(msg, msglen, "this baton was built without libmicrohttpd");
    return -1;
}

int http_start_control(const struct http_listen *l, const char *allowed_hosts,
                       const struct http_route *routes, void *ctx,
                       const struct http_control *control, const struct http_tls *tls,
                       struct http **out, char *msg, size_t msglen)
{
    (void)control;
    (void)tls;
    return http_start(l, allowed_hosts, routes, ctx, out, msg, msglen);
}

int http_tls_replace(struct http *h, const struct http_tls *tls, char *msg, size_t msglen)
{
    (void)h;
    (void)tls;
    snprintf(msg, msglen, "this baton was built without libmicrohttpd");
    return -1;
}

void http_call_answer(struct http_call *call, struct http_response *out)
{
    (void)call;
    free(out->body);
}

const char *http_address(const struct http *h)
{
    (void)h;
    return "";
}

void http_stop(struct http *h)
{
    (void)h;
}

#else /* BATON_HAVE_MHD */

#include <microhttpd.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>

#include "clock.h"
#include "dynlib.h"
#include "http_int.h"

static int mhd_load(struct mhd_api *m, char *msg, size_t msglen)
{
    const struct dynlib_sym syms[] = {
#define MHD_SYM_(field, sym) {#sym, &m->field},
        DYNLIB_MHD_CALLS(MHD_SYM_)
#undef MHD_SYM_
    };
    return dynlib_mhd_open(syms, sizeof syms / sizeof syms[0], msg, msglen);
}

bool http_available(void)
{
    return true;
}

/* The smaller of two epoll timeouts in ms (-1: none). */
static int sooner(int a, int b)
{
    return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

static enum MHD_Result answer_with(const struct mhd_api *m, struct MHD_Connection *c, int status,
                                   const char *type, char *body, size_t len, bool page,
                                   const char *allow, int retry_after_s, bool www_auth)
{
    const union MHD_ConnectionInfo *ci =
        m->get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (ci != NULL && ci->socket_context != NULL)
        ((struct conn *)ci->socket_context)->served = true;
    struct MHD_Response *r = m->create_response_from_buffer(len, body != NULL ? body : (char *)"",
                                                            body != NULL ? MHD_RESPMEM_MUST_FREE
                                                                         : MHD_RESPMEM_PERSISTENT);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    m->add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    m->add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    m->add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (page) {
        /* Nothing leaves the page: no external script, style, image or
         * frame; it may only fetch itself. */
        m->add_response_header(r, "Content-Security-Policy",
                               "default-src 'none'; style-src 'unsafe-inline'; "
                               "script-src 'unsafe-inline'; connect-src 'self'; img-src data:; "
                               "base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
        m->add_response_header(r, "X-Frame-Options", "DENY");
        m->add_response_header(r, "Referrer-Policy", "no-referrer");
    }
    if (allow != NULL)
        m->add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    if (retry_after_s > 0) {
        char v[24];
        snprintf(v, sizeof v, "%d", retry_after_s);
        m->add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, v);
    }
    if (www_auth)
        m->add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    enum MHD_Result rc = m->queue_response(c, (unsigned)status, r);
    m->destroy_response(r);
    return rc;
}

static enum MHD_Result answer(const struct mhd_api *m, struct MHD_Connection *c, int status,
                              const char *type, char *body, size_t len, bool page, bool allow)
{
    return answer_with(m, c, status, type, body, len, page, allow ? "GET, HEAD" : NULL, 0, false);
}

static enum MHD_Result answer_response(const struct mhd_api *m, struct MHD_Connection *c,
                                       struct http_response *out)
{
    if (out->body == NULL && out->status == 500)
        out->body = strdup("out of memory\n");
    if (out->body != NULL && out->len == 0)
        out->len = strlen(out->body);
    const char *allow = out->status == MHD_HTTP_METHOD_NOT_ALLOWED
                            ? (out->allow != NULL ? out->allow : "GET, HEAD")
                            : NULL;
    return answer_with(m, c, out->status, out->type, out->body, out->len, out->page, allow,
                       out->retry_after_s, out->www_auth && out->status == 401);
}

static char *text(const char *s, size_t *len)
{
    *len = strlen(s);
    return strdup(s);
}

/* Answers a request whose Host this server does not answer to (0: none). */
static int host_refusal(const struct http *h, struct MHD_Connection *c, const char *version)
{
    if (h->unix_socket)
        return 0;
    const char *host = h->mhd.lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (host == NULL || host[0] == '\0')
        return strcmp(version, MHD_HTTP_VERSION_1_0) == 0 ? 0 : MHD_HTTP_BAD_REQUEST;
    return http_host_allowed(host, h->allowed) ? 0 : MHD_HTTP_MISDIRECTED_REQUEST;
}

/* The routes' answer to a GET or HEAD of url (404 for another path). */
static enum MHD_Result serve_route(struct http *h, struct MHD_Connection *c, const char *url,
                                   int grant)
{
    size_t len;
    if (strlen(url) > HTTP_MAX_URI) {
        char *b = text("the URI is too long\n", &len);
        return answer(&h->mhd, c, MHD_HTTP_URI_TOO_LONG, "text/plain; charset=utf-8", b, len, false,
                      false);
    }
    for (const struct http_route *r = h->routes; r->path != NULL; r++) {
        if (strcmp(r->path, url) != 0)
            continue;
        struct http_response out = {
            .status = 500, .type = "text/plain; charset=utf-8", .grant = grant};
        r->fn(h->ctx, url, &out);
        if (out.body == NULL && out.status == 500)
            out.body = text("out of memory\n", &out.len);
        return answer(&h->mhd, c, out.status, out.type, out.body, out.len, out.page, false);
    }
    char *b = text("not found: try /, /status, /metrics, /healthz or /readyz\n", &len);
    return answer(&h->mhd, c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", b, len, false,
                  false);
}

/* The peer's address as text ("unix" for a Unix socket's). */
static void peer_text(const struct http *h, struct MHD_Connection *c, char *buf, size_t len)
{
    const union MHD_ConnectionInfo *ci =
        h->mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    const struct conn *k = ci != NULL ? ci->socket_context : NULL;
    snprintf(buf, len, "unix");
    if (k == NULL || !k->has_peer)
        return;
    if (getnameinfo((const struct sockaddr *)&k->peer, sizeof k->peer, buf, (socklen_t)len, NULL, 0,
                    NI_NUMERICHOST) != 0)
        snprintf(buf, len, "?");
}

/* Writes one query argument back as "k=v&" (libmicrohttpd decoded it;
 * the hook reads the pairs with its own parser, so '&' and '=' inside a
 * value are refused there, not guessed). */
static enum MHD_Result query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
    (void)kind;
    fprintf(cls, "%s%s%s&", key, value != NULL ? "=" : "", value != NULL ? value : "");
    return MHD_YES;
}

/* Frees a call once libmicrohttpd is done with its request. */
void http_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                       enum MHD_RequestTerminationCode toe)
{
    const struct http *h = cls;
    struct http_call *call = *con_cls;
    (void)c;
    (void)toe;
    if (call == NULL || h->control.fn == NULL) /* without a hook, con_cls is h: a mark */
        return;
    if (atomic_load(&call->answered))
        free(call->resp.body); /* NULL once answered */
    free(call->body);
    free(call);
    *con_cls = NULL;
}

void http_call_answer(struct http_call *call, struct http_response *out)
{
    struct http *h = call->h;
    uint64_t one = 1;
    call->resp = *out;
    out->body = NULL;
    atomic_store(&call->answered, true);
    h->mhd.resume_connection(call->c);
    if (write(h->wake, &one, sizeof one) < 0) {
        /* full: readable already */
    }
}

/* A request of a server with a control hook: reads its body, then asks
 * the hook. */
static enum MHD_Result on_control(struct http *h, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *upload_data,
                                  size_t *upload_data_size, struct http_call *call)
{
    if (call->taken) { /* resumed: the hook's side answered */
        if (!atomic_load(&call->answered))
            return MHD_YES;
        enum MHD_Result rc = answer_response(&h->mhd, c, &call->resp);
        call->resp.body = NULL; /* the response owns it */
        return rc;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (call->too_big || call->len + n > HTTP_MAX_BODY) {
            call->too_big = true;
            return MHD_YES;
        }
        char *b = realloc(call->body, call->len + n + 1);
        if (b == NULL) {
            call->too_big = true;
            return MHD_YES;
        }
        memcpy(b + call->len, upload_data, n);
        call->body = b;
        call->len += n;
        b[call->len] = '\0';
        return MHD_YES;
    }
    char remote[INET6_ADDRSTRLEN + 8];
    peer_text(h, c, remote, sizeof remote);
    const char *q = strchr(url, '?'); /* libmicrohttpd strips it; kept for safety */
    char path[HTTP_MAX_URI + 1];
    snprintf(path, sizeof path, "%.*s", (int)(q != NULL ? (size_t)(q - url) : strlen(url)), url);
    char *query = NULL;
    size_t qlen = 0;
    FILE *qf = open_memstream(&query, &qlen);
    if (qf != NULL) {
        h->mhd.get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_arg, qf);
        fclose(qf);
    }
    struct http_request rq = {.method = method,
                              .path = path,
                              .query = query != NULL ? query : "",
                              .authorization = h->mhd.lookup_connection_value(
                                  c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
                              .content_type = h->mhd.lookup_connection_value(
                                  c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
                              .remote = remote,
                              .body = call->too_big || call->body == NULL ? "" : call->body,
                              .body_len = call->too_big ? 0 : call->len,
                              .body_too_big = call->too_big,
                              .call = call};
    struct http_response out = {.status = 500, .type = "application/json"};
    enum http_verdict v =
        strlen(url) > HTTP_MAX_URI ? HTTP_PASS : h->control.fn(h->control.ctx, &rq, &out);
    free(query);
    if (v == HTTP_ANSWER)
        return answer_response(&h->mhd, c, &out);
    if (v == HTTP_LATER) {
        const union MHD_ConnectionInfo *ci =
            h->mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        struct conn *k = ci != NULL ? ci->socket_context : NULL;
        if (k != NULL) { /* kept while the call runs; not the first to make room */
            k->served = true;
            k->deadline_ns = mono_ns() + (int64_t)HTTP_CALL_MAX_MS * 1000000;
        }
        call->taken = true;
        h->mhd.suspend_connection(c);
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        size_t len;
        char *b = text("only GET and HEAD are served\n", &len);
        return answer(&h->mhd, c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", b, len,
                      false, true);
    }
    return serve_route(h, c, url, out.grant);
}

enum MHD_Result http_on_request(void *cls, struct MHD_Connection *c, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_data_size, void **con_cls)
{
    struct http *h = cls;
    size_t len;
    (void)upload_data;
    if (*con_cls != NULL && h->control.fn != NULL)
        return on_control(h, c, url, method, upload_data, upload_data_size, *con_cls);
    int refused = host_refusal(h, c, version);
    if (refused != 0) {
        *upload_data_size = 0; /* the connection closes after */
        char *b = text(refused == MHD_HTTP_BAD_REQUEST
                           ? "a Host header is required\n"
                           : "this server does not answer to that Host: use its address, or "
                             "add the name to http.allowed_hosts\n",
                       &len);
        return answer(&h->mhd, c, refused, "text/plain; charset=utf-8", b, len, false, false);
    }
    if (h->control.fn != NULL) { /* the body is read, then the hook asked */
        struct http_call *call = calloc(1, sizeof *call);
        if (call == NULL)
            return MHD_NO;
        call->h = h;
        call->c = c;
        atomic_init(&call->answered, false);
        *con_cls = call;
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        *upload_data_size = 0; /* a body is not read: the connection closes after */
        char *b = text("only GET and HEAD are served\n", &len);
        return answer(&h->mhd, c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", b, len,
                      false, true);
    }
    /* The first call only announces the request: answering it closes
     * the connection after the response, so answer the second (a GET has
     * no body to wait for), and the client may keep the connection. */
    if (*con_cls == NULL) {
        *con_cls = h;
        return MHD_YES;
    }
    *upload_data_size = 0; /* a body sent with a GET is ignored */
    return serve_route(h, c, url, 0);
}

/* The server's thread. The listening socket is in our own epoll set, so a
 * new client always wakes it: libmicrohttpd's accept, which takes its
 * listening socket out of its set at its connection limit and puts it
 * back only in a later run, once left the thread asleep for good. */
static void *serve(void *arg)
{
    struct http *h = arg;
    struct epoll_event ev[8];
    while (!atomic_load(&h->stop)) {
        http_take_pending(h);
        int timeout = http_expire(h);
        MHD_UNSIGNED_LONG_LONG to;
        if (h->mhd.get_timeout(h->cur.d, &to) == MHD_YES)
            timeout = sooner(timeout, to > INT32_MAX ? INT32_MAX : (int)to);
        for (int i = 0; i < HTTP_TLS_DRAINING; i++)
            if (h->draining[i].d != NULL && h->mhd.get_timeout(h->draining[i].d, &to) == MHD_YES)
                timeout = sooner(timeout, to > INT32_MAX ? INT32_MAX : (int)to);
        if (h->nconns > h->nlive) /* shut down, not closed yet */
            timeout = sooner(timeout, LOOK_AGAIN_MS);
        timeout = sooner(timeout, http_arm_listen(h));
        int n = epoll_wait(h->ep, ev, sizeof ev / sizeof ev[0], timeout);
        bool waiting = false;
        for (int i = 0; i < n; i++) {
            if (ev[i].data.fd == h->wake) {
                uint64_t v;
                if (read(h->wake, &v, sizeof v) < 0)
                    continue;
            } else if (ev[i].data.fd == h->listen_fd) {
                waiting = true;
            }
        }
        if (waiting)
            http_accept_some(h);
        h->mhd.run(h->cur.d);
        http_run_draining(h);
    }
    return NULL;
}

/* Opens a listening socket for l (non-blocking: serve() accepts until
 * EAGAIN). Returns the fd, or -1 with msg. */
static int listen_on(const struct http_listen *l, struct http *h, char *msg, size_t msglen)
{
    int fd = -1;
    if (l->unix_socket) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        struct stat st;
        size_t plen = strnlen(l->host, sizeof l->host);
        if (plen >= sizeof sa.sun_path) { /* http_listen_parse refuses it already */
            errno = ENAMETOOLONG;
            goto fail;
        }
        memcpy(sa.sun_path, l->host, plen + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            goto fail;
        /* A socket file nobody listens on is a predecessor's: replace it. */
        if (lstat(l->host, &st) == 0 && S_ISSOCK(st.st_mode)) {
            int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            bool live = probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0;
            if (probe >= 0)
                close(probe);
            if (live) {
                errno = EADDRINUSE;
                goto fail;
            }
            unlink(l->host);
        }
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, SOMAXCONN) != 0)
            goto fail;
        snprintf(h->unix_path, sizeof h->unix_path, "%s", l->host);
        snprintf(h->address, sizeof h->address, "unix:%s", l->host);
        return fd;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
    int gai = getaddrinfo(l->host, l->port, &hints, &ai);
    if (gai != 0) {
        snprintf(msg, msglen, "%s:%s: %s", l->host, l->port, gai_strerror(gai));
        return -1;
    }
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
        freeaddrinfo(ai);
        goto fail;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[128], port[16];
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
        getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0)
        snprintf(h->address, sizeof h->address, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
                 host, port);
    else
        snprintf(h->address, sizeof h->address, "%s:%s", l->host, l->port);
    return fd;
fail:
    snprintf(msg, msglen, "%s%s%s: %s", l->unix_socket ? "unix:" : l->host,
             l->unix_socket ? l->host : ":", l->unix_socket ? "" : l->port, strerror(errno));
    if (fd >= 0)
        close(fd);
    return -1;
}

/* The names a TCP server answers to: those given, the machine's host name
 * (and its first label, when it has dots: "web-1" for web-1.example.com)
 * and a listen address that is a name (IP literals need no listing).
 * Returns: owned, or NULL on ENOMEM. */
static char *allowed_names(const struct http_listen *l, const char *given)
{
    char host[256] = "", *out = NULL;
    size_t len = 0;
    struct in6_addr a;
    if (gethostname(host, sizeof host) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    FILE *f = open_memstream(&out, &len);
    if (f == NULL)
        return NULL;
    fprintf(f, "%s,%s,%.*s", given != NULL ? given : "", host, (int)strcspn(host, "."), host);
    if (!l->unix_socket && inet_pton(AF_INET, l->host, &a) != 1 &&
        inet_pton(AF_INET6, l->host, &a) != 1)
        fprintf(f, ",%s", l->host);
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

int http_start(const struct http_listen *l, const char *allowed_hosts,
               const struct http_route *routes, void *ctx, struct http **out, char *msg,
               size_t msglen)
{
    return http_start_control(l, allowed_hosts, routes, ctx, NULL, NULL, out, msg, msglen);
}

int http_start_control(const struct http_listen *l, const char *allowed_hosts,
                       const struct http_route *routes, void *ctx,
                       const struct http_control *control, const struct http_tls *tls,
                       struct http **out, char *msg, size_t msglen)
{
    struct http *h = calloc(1, sizeof *h);
    *out = NULL;
    if (h == NULL) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    h->routes = routes;
    h->ctx = ctx;
    if (control != NULL)
        h->control = *control;
    h->unix_socket = l->unix_socket;
    h->listen_fd = h->ep = h->wake = -1;
    h->cur.epoll_fd = h->pending.epoll_fd = -1;
    for (int i = 0; i < HTTP_TLS_DRAINING; i++)
        h->draining[i].epoll_fd = -1;
    pthread_mutex_init(&h->tls_mu, NULL);
    atomic_init(&h->stop, false);
    h->allowed = allowed_names(l, allowed_hosts);
    if (h->allowed == NULL) {
        snprintf(msg, msglen, "out of memory");
        goto fail;
    }
    if (mhd_load(&h->mhd, msg, msglen) != 0)
        goto fail;
    h->listen_fd = listen_on(l, h, msg, msglen);
    if (h->listen_fd < 0)
        goto fail;
    h->ep = epoll_create1(EPOLL_CLOEXEC);
    h->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event e2 = {.events = EPOLLIN, .data.fd = h->wake};
    struct epoll_event e3 = {.events = EPOLLIN, .data.fd = h->listen_fd};
    if (h->ep < 0 || h->wake < 0 || epoll_ctl(h->ep, EPOLL_CTL_ADD, h->wake, &e2) != 0 ||
        epoll_ctl(h->ep, EPOLL_CTL_ADD, h->listen_fd, &e3) != 0) {
        snprintf(msg, msglen, "%s: %s", h->address, strerror(errno));
        goto fail;
    }
    h->tls = tls != NULL;
    if (http_inst_start(h, tls, &h->cur, msg, msglen) != 0 ||
        http_inst_watch(h, &h->cur, msg, msglen) != 0)
        goto fail;
    h->listen_armed = true;
    int err = pthread_create(&h->thread, NULL, serve, h);
    if (err != 0) {
        snprintf(msg, msglen, "%s: cannot start a thread: %s", h->address, strerror(err));
        goto fail;
    }
    pthread_setname_np(h->thread, "baton-http"); /* as top -H and ps -L show it */
    h->started = true;
    *out = h;
    return 0;
fail:
    http_stop(h);
    return -1;
}

const char *http_address(const struct http *h)
{
    return h->address;
}

void http_stop(struct http *h)
{
    if (h == NULL)
        return;
    if (h->started) {
        uint64_t one = 1;
        atomic_store(&h->stop, true);
        if (write(h->wake, &one, sizeof one) < 0) {
            /* an eventfd write fails only when the counter is full: it is
             * readable already */
        }
        pthread_join(h->thread, NULL);
    }
    http_inst_stop(h, &h->cur); /* closes the connections (each notified closed) */
    http_inst_stop(h, &h->pending);
    for (int i = 0; i < HTTP_TLS_DRAINING; i++)
        http_inst_stop(h, &h->draining[i]);
    if (h->listen_fd >= 0)
        close(h->listen_fd);
    if (h->unix_path[0] != '\0')
        unlink(h->unix_path);
    if (h->ep >= 0)
        close(h->ep);
    if (h->wake >= 0)
        close(h->wake);
    while (h->oldest != NULL) { /* MHD_stop_daemon notified them closed; to be sure */
        struct conn *k = h->oldest;
        h->oldest = k->next;
        free(k);
    }
    free(h->allowed);
    pthread_mutex_destroy(&h->tls_mu);
    free(h);
}

#endif /* BATON_HAVE_MHD */
