/* http.c -- see http.h.
 *
 * libmicrohttpd runs in "external polling" mode with epoll, driven by a
 * thread of ours: that thread owns every connection, so it can enforce a
 * lifetime on each (libmicrohttpd's own timeout only counts idle time) by
 * shutting down a connection's socket and letting the next MHD_run() close
 * it. The listening socket is ours too (close-on-exec, a Unix socket when
 * asked); every descriptor libmicrohttpd opens is close-on-exec as well. */
#include <errno.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "http.h"

/* ---- http.listen ---- */

static bool all_digits(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s != '\0'; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

int http_listen_parse(const char *spec, struct http_listen *out, char *msg, size_t msglen)
{
    memset(out, 0, sizeof *out);
    if (strncmp(spec, "unix:", 5) == 0) {
        const char *path = spec + 5;
        if (path[0] != '/') {
            snprintf(msg, msglen, "a Unix socket needs an absolute path (unix:/run/baton/http.sock)");
            return -1;
        }
        if (strlen(path) >= sizeof ((struct sockaddr_un *)0)->sun_path) {
            snprintf(msg, msglen, "the Unix socket's path is longer than %zu bytes",
                     sizeof ((struct sockaddr_un *)0)->sun_path - 1);
            return -1;
        }
        out->unix_socket = true;
        snprintf(out->host, sizeof out->host, "%s", path);
        return 0;
    }
    const char *colon = strrchr(spec, ':');
    const char *host = spec, *host_end = colon;
    if (spec[0] == '[') { /* [v6]:port */
        const char *close = strchr(spec, ']');
        if (close == NULL || close[1] != ':') {
            snprintf(msg, msglen, "expected [address]:port for an IPv6 address");
            return -1;
        }
        host = spec + 1;
        host_end = close;
        colon = close + 1;
    }
    if (colon == NULL || host_end == host) {
        snprintf(msg, msglen,
                 "expected host:port (127.0.0.1:9746; 0.0.0.0:9746 for every interface), "
                 "[address]:port, or unix:/path");
        return -1;
    }
    char *end = NULL;
    errno = 0;
    long port = all_digits(colon + 1) ? strtol(colon + 1, &end, 10) : -1;
    if (errno != 0 || port < 0 || port > 65535) {
        snprintf(msg, msglen, "the port must be a number from 0 to 65535");
        return -1;
    }
    if ((size_t)(host_end - host) >= sizeof out->host) {
        snprintf(msg, msglen, "the host is too long");
        return -1;
    }
    memcpy(out->host, host, (size_t)(host_end - host));
    snprintf(out->port, sizeof out->port, "%ld", port);
    return 0;
}

#ifndef BATON_HAVE_MHD

bool http_available(void)
{
    return false;
}

int http_load(char *msg, size_t msglen)
{
    snprintf(msg, msglen, "this baton was built without libmicrohttpd: it has no HTTP server "
                          "(install libmicrohttpd-dev and rebuild, or set http.listen: off)");
    return -1;
}

int http_start(const struct http_listen *l, const struct http_route *routes, void *ctx,
               struct http **out, char *msg, size_t msglen)
{
    (void)l;
    (void)routes;
    (void)ctx;
    *out = NULL;
    snprintf(msg, msglen, "this baton was built without libmicrohttpd");
    return -1;
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

#include "dynlib.h"

/* libmicrohttpd's calls, opened when a server starts (dynlib.h says why). */
struct mhd_api {
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_run) *run;
    __typeof__(MHD_get_timeout) *get_timeout;
    __typeof__(MHD_get_daemon_info) *get_daemon_info;
    __typeof__(MHD_get_connection_info) *get_connection_info;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_destroy_response) *destroy_response;
};

static int mhd_load(struct mhd_api *m, char *msg, size_t msglen)
{
    const struct dynlib_sym syms[] = {
        {"MHD_start_daemon", &m->start_daemon},
        {"MHD_stop_daemon", &m->stop_daemon},
        {"MHD_run", &m->run},
        {"MHD_get_timeout", &m->get_timeout},
        {"MHD_get_daemon_info", &m->get_daemon_info},
        {"MHD_get_connection_info", &m->get_connection_info},
        {"MHD_create_response_from_buffer", &m->create_response_from_buffer},
        {"MHD_add_response_header", &m->add_response_header},
        {"MHD_queue_response", &m->queue_response},
        {"MHD_destroy_response", &m->destroy_response},
    };
    return dynlib_open(BATON_MHD_SONAME, "the HTTP endpoint", "libmicrohttpd12", syms,
                       sizeof syms / sizeof syms[0], msg, msglen);
}

bool http_available(void)
{
    return true;
}

int http_load(char *msg, size_t msglen)
{
    struct mhd_api m;
    return mhd_load(&m, msg, msglen);
}

/* A connection, from libmicrohttpd's "started" to its "closed". */
struct conn {
    int fd;
    int64_t deadline_ns; /* shut down at this point */
    bool shut;
    struct conn *prev, *next;
};

struct http {
    struct mhd_api mhd;
    struct MHD_Daemon *d;
    const struct http_route *routes;
    void *ctx;
    pthread_t thread;
    bool started;
    int ep;     /* ours: libmicrohttpd's epoll fd and wake */
    int wake;   /* eventfd: stop */
    atomic_bool stop;
    struct conn *conns; /* touched on the server's thread only */
    char address[300];
    char unix_path[256]; /* removed at stop */
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct http *h = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            h->mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct conn *k = calloc(1, sizeof *k);
        if (k == NULL || ci == NULL) {
            free(k);
            *socket_context = NULL;
            return;
        }
        k->fd = ci->connect_fd;
        k->deadline_ns = mono_ns() + (int64_t)HTTP_LIFETIME_MS * 1000000;
        k->next = h->conns;
        if (h->conns != NULL)
            h->conns->prev = k;
        h->conns = k;
        *socket_context = k;
        return;
    }
    struct conn *k = *socket_context;
    if (k == NULL)
        return;
    if (k->prev != NULL)
        k->prev->next = k->next;
    else
        h->conns = k->next;
    if (k->next != NULL)
        k->next->prev = k->prev;
    free(k);
    *socket_context = NULL;
}

/* Shuts down the connections past their lifetime. Returns the time to the
 * next deadline in ms (-1: none). */
static int expire(struct http *h)
{
    int64_t now = mono_ns(), next = -1;
    for (struct conn *k = h->conns; k != NULL; k = k->next) {
        if (k->shut)
            continue;
        if (now >= k->deadline_ns) {
            shutdown(k->fd, SHUT_RDWR); /* libmicrohttpd closes it on its next run */
            k->shut = true;
        } else if (next < 0 || k->deadline_ns - now < next) {
            next = k->deadline_ns - now;
        }
    }
    return next < 0 ? -1 : (int)(next / 1000000 + 1);
}

static enum MHD_Result answer(const struct mhd_api *m, struct MHD_Connection *c, int status,
                              const char *type, char *body, size_t len, bool page, bool allow)
{
    struct MHD_Response *r = m->create_response_from_buffer(
        len, body != NULL ? body : (char *)"", body != NULL ? MHD_RESPMEM_MUST_FREE
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
    if (allow)
        m->add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result rc = m->queue_response(c, (unsigned)status, r);
    m->destroy_response(r);
    return rc;
}

static char *text(const char *s, size_t *len)
{
    *len = strlen(s);
    return strdup(s);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    struct http *h = cls;
    size_t len;
    (void)version;
    (void)upload_data;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        *upload_data_size = 0; /* a body is not read: the connection closes after */
        char *b = text("only GET and HEAD are served\n", &len);
        return answer(&h->mhd, c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", b, len, false,
                      true);
    }
    /* The first call only announces the request: answering it closes
     * the connection after the response, so answer the second (a GET has
     * no body to wait for), and the client may keep the connection. */
    if (*con_cls == NULL) {
        *con_cls = h;
        return MHD_YES;
    }
    *upload_data_size = 0; /* a body sent with a GET is ignored */
    if (strlen(url) > HTTP_MAX_URI) {
        char *b = text("the URI is too long\n", &len);
        return answer(&h->mhd, c, MHD_HTTP_URI_TOO_LONG, "text/plain; charset=utf-8", b, len, false,
                      false);
    }
    for (const struct http_route *r = h->routes; r->path != NULL; r++) {
        if (strcmp(r->path, url) != 0)
            continue;
        struct http_response out = {.status = 500, .type = "text/plain; charset=utf-8"};
        r->fn(h->ctx, url, &out);
        if (out.body == NULL && out.status == 500)
            out.body = text("out of memory\n", &out.len);
        return answer(&h->mhd, c, out.status, out.type, out.body, out.len, out.page, false);
    }
    char *b = text("not found: try /, /status, /metrics, /healthz or /readyz\n", &len);
    return answer(&h->mhd, c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", b, len, false, false);
}

static void *serve(void *arg)
{
    struct http *h = arg;
    struct epoll_event ev[4];
    while (!atomic_load(&h->stop)) {
        int timeout = expire(h);
        MHD_UNSIGNED_LONG_LONG to;
        if (h->mhd.get_timeout(h->d, &to) == MHD_YES && (timeout < 0 || to < (unsigned)timeout))
            timeout = (int)to;
        int n = epoll_wait(h->ep, ev, 4, timeout);
        for (int i = 0; i < n; i++)
            if (ev[i].data.fd == h->wake) {
                uint64_t v;
                if (read(h->wake, &v, sizeof v) < 0)
                    continue;
            }
        h->mhd.run(h->d);
    }
    return NULL;
}

/* Opens a listening socket for l. Returns the fd, or -1 with msg. */
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
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 64) != 0)
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
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0) {
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

int http_start(const struct http_listen *l, const struct http_route *routes, void *ctx,
               struct http **out, char *msg, size_t msglen)
{
    struct http *h = calloc(1, sizeof *h);
    int fd = -1;
    *out = NULL;
    if (h == NULL) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    h->routes = routes;
    h->ctx = ctx;
    h->ep = h->wake = -1;
    atomic_init(&h->stop, false);
    if (mhd_load(&h->mhd, msg, msglen) != 0)
        goto fail;
    fd = listen_on(l, h, msg, msglen);
    if (fd < 0)
        goto fail;
    h->d = h->mhd.start_daemon(
        MHD_USE_EPOLL, 0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_MAX_CONNS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)(l->unix_socket ? 0 : HTTP_MAX_PER_IP), MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)HTTP_IDLE_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_MAX_REQUEST,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_END);
    if (h->d == NULL) {
        snprintf(msg, msglen, "%s: libmicrohttpd could not start", h->address);
        close(fd);
        goto fail;
    }
    const union MHD_DaemonInfo *di = h->mhd.get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
    h->ep = epoll_create1(EPOLL_CLOEXEC);
    h->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event e1 = {.events = EPOLLIN, .data.fd = di != NULL ? di->epoll_fd : -1};
    struct epoll_event e2 = {.events = EPOLLIN, .data.fd = h->wake};
    if (di == NULL || h->ep < 0 || h->wake < 0 ||
        epoll_ctl(h->ep, EPOLL_CTL_ADD, di->epoll_fd, &e1) != 0 ||
        epoll_ctl(h->ep, EPOLL_CTL_ADD, h->wake, &e2) != 0) {
        snprintf(msg, msglen, "%s: %s", h->address, strerror(errno));
        goto fail;
    }
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
    if (h->d != NULL)
        h->mhd.stop_daemon(h->d); /* closes the connections and the listening socket */
    if (h->unix_path[0] != '\0')
        unlink(h->unix_path);
    if (h->ep >= 0)
        close(h->ep);
    if (h->wake >= 0)
        close(h->wake);
    while (h->conns != NULL) { /* MHD_stop_daemon notified them closed; to be sure */
        struct conn *k = h->conns;
        h->conns = k->next;
        free(k);
    }
    free(h);
}

#endif /* BATON_HAVE_MHD */
