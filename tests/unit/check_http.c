/* check_http.c -- the HTTP server (http.h): http.listen's grammar, one row
 * per spelling; which Host headers a TCP server answers to, and which
 * allowed names a configuration may give, one row each; a live server on
 * loopback and on a Unix socket answering its routes, 404, 405 with Allow,
 * 414, HEAD, several requests on one connection, 421 for another site's
 * Host; more idle connections than its limits, the oldest idle ones making
 * room for the new; handlers on the server's own thread; nothing left
 * behind by http_stop(). */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "http.h"
#include "testutil.h"

static const struct {
    const char *spec;
    bool ok;
    bool unix_socket;
    const char *host, *port; /* when ok */
    const char *msg;         /* part of the message when not */
} specs[] = {
    {"127.0.0.1:9746", true, false, "127.0.0.1", "9746", NULL},
    {"0.0.0.0:0", true, false, "0.0.0.0", "0", NULL},
    {"localhost:80", true, false, "localhost", "80", NULL},
    {"[::1]:9746", true, false, "::1", "9746", NULL},
    {"[::]:65535", true, false, "::", "65535", NULL},
    {"unix:/run/baton/http.sock", true, true, "/run/baton/http.sock", "", NULL},
    {"unix:run/http.sock", false, false, NULL, NULL, "absolute path"},
    {"unix:/a/very/long/path/that/goes/on/and/on/and/on/and/on/and/on/and/on/and/on/and/on/"
     "and/on/and/on/and/on/and/on/and/on/and/on/and/on.sock",
     false, false, NULL, NULL, "longer than"},
    {"127.0.0.1", false, false, NULL, NULL, "expected host:port"},
    {":9746", false, false, NULL, NULL, "expected host:port"},
    {"127.0.0.1:", false, false, NULL, NULL, "port must be a number"},
    {"127.0.0.1:65536", false, false, NULL, NULL, "port must be a number"},
    {"127.0.0.1:-1", false, false, NULL, NULL, "port must be a number"},
    {"127.0.0.1:80x", false, false, NULL, NULL, "port must be a number"},
    {"[::1]9746", false, false, NULL, NULL, "[address]:port"},
    {"[::1:9746", false, false, NULL, NULL, "[address]:port"},
};

START_TEST(listen_spec)
{
    struct http_listen l;
    char msg[256] = "";
    int rc = http_listen_parse(specs[_i].spec, &l, msg, sizeof msg);
    if (specs[_i].ok) {
        ck_assert_msg(rc == 0, "%s: %s", specs[_i].spec, msg);
        ck_assert_int_eq(l.unix_socket, specs[_i].unix_socket);
        ck_assert_str_eq(l.host, specs[_i].host);
        ck_assert_str_eq(l.port, specs[_i].port);
    } else {
        ck_assert_msg(rc != 0, "%s accepted", specs[_i].spec);
        ck_assert_msg(strstr(msg, specs[_i].msg) != NULL, "%s: <%s>", specs[_i].spec, msg);
    }
}
END_TEST

/* Host headers: what a TCP server with the allowed names "baton.example,
 * *.corp.example" answers. */
static const struct {
    const char *host;
    bool ok;
} hosts[] = {
    {"127.0.0.1", true},
    {"127.0.0.1:9746", true},
    {"10.1.2.3:8080", true},
    {"[::1]:9746", true},
    {"[::1]", true},
    {"[fd00::7]:80", true},
    {"localhost", true},
    {"LOCALHOST:9746", true},
    {"localhost.", true},
    {"probe.localhost:1", true},
    {"baton.example", true},
    {"Baton.Example.:9746", true},
    {"a.corp.example", true},
    {"b.a.corp.example:443", true},
    {"evil.example", false},
    {"evil.example:9746", false},
    {"corp.example", false},
    {"xcorp.example", false},
    {"baton.example.evil", false},
    {"localhost.evil.example", false},
    {"1.2.3.4.nip.io", false},
    {"::1", false},
    {"[::1", false},
    {"[::1]x", false},
    {"[::1]:x", false},
    {"[evil.example]", false},
    {"baton.example:x", false},
    {"baton.example:80:80", false},
    {":9746", false},
    {".", false},
    {"999.1.1.1", false},
    {"localhostx", false},
};

START_TEST(host_allowed)
{
    ck_assert_msg(http_host_allowed(hosts[_i].host, "baton.example,*.corp.example") == hosts[_i].ok,
                  "Host: %s", hosts[_i].host);
    if (!hosts[_i].ok) /* nor without allowed names */
        ck_assert(!http_host_allowed(hosts[_i].host, NULL));
}
END_TEST

static const struct {
    const char *name;
    const char *msg; /* part of the message; NULL: accepted */
} names[] = {
    {"baton.example", NULL},
    {"*.corp.example", NULL},
    {"web-1", NULL},
    {"a_b.internal", NULL},
    {"10.0.0.1", NULL},
    {"baton.example:9746", "without a port"},
    {"[::1]", "without a port"},
    {"", "expected a host name"},
    {"*", "expected a host name"},
    {"*.", "expected a host name"},
    {"a..b", "expected a host name"},
    {".a", "expected a host name"},
    {"a.", "expected a host name"},
    {"a.*.b", "expected a host name"},
    {"a b", "expected a host name"},
    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b", "expected a host name"},
};

START_TEST(allowed_name)
{
    char msg[256] = "";
    int rc = http_allowed_name_check(names[_i].name, msg, sizeof msg);
    if (names[_i].msg == NULL) {
        ck_assert_msg(rc == 0, "%s: %s", names[_i].name, msg);
    } else {
        ck_assert_msg(rc != 0, "%s accepted", names[_i].name);
        ck_assert_msg(strstr(msg, names[_i].msg) != NULL, "%s: <%s>", names[_i].name, msg);
    }
}
END_TEST

/* What the handlers are given: the test's thread, and how often they ran. */
struct probe {
    pthread_t caller;
    atomic_int calls;
    atomic_bool wrong_thread;
};

static void hello(void *ctx, const char *path, struct http_response *out)
{
    struct probe *p = ctx;
    if (pthread_equal(pthread_self(), p->caller)) /* it must be the server's thread */
        atomic_store(&p->wrong_thread, true);
    atomic_fetch_add(&p->calls, 1);
    out->status = strcmp(path, "/down") == 0 ? 503 : 200;
    out->type = "text/plain";
    out->body = strdup("hello\n");
    out->len = 6;
}

static const struct http_route routes[] = {{"/hello", hello}, {"/down", hello}, {NULL, NULL}};

/* A connection to addr ("127.0.0.1:PORT" or "unix:PATH") from the local
 * address src (TCP; NULL: any). Returns: the fd (owned). */
static int dial(const char *addr, const char *src)
{
    int fd;
    if (strncmp(addr, "unix:", 5) == 0) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", addr + 5);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
        return fd;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)strtol(strchr(addr, ':') + 1, NULL, 10))};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (src != NULL) {
        struct sockaddr_in from = {.sin_family = AF_INET};
        inet_pton(AF_INET, src, &from.sin_addr);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&from, sizeof from), 0);
    }
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* Sends req on a new connection to addr ("127.0.0.1:PORT" or
 * "unix:PATH"), reads until the server closes or n responses came. Returns:
 * owned text. */
static char *exchange(const char *addr, const char *req, int n)
{
    int fd = dial(addr, NULL);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
    size_t cap = 1 << 16, len = 0;
    char *buf = calloc(1, cap);
    for (;;) {
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r <= 0)
            break;
        len += (size_t)r;
        int seen = 0;
        for (const char *p = buf; (p = strstr(p, "HTTP/1.1 ")) != NULL; p++)
            seen++;
        if (seen >= n && strstr(buf, "hello\n") != NULL && n > 1)
            break;
    }
    close(fd);
    return buf;
}

/* Asks a server on spec every kind of request. Returns the handlers' calls. */
static int serve_and_ask(const char *spec)
{
    struct http_listen l;
    struct http *h = NULL;
    char msg[256];
    struct probe p = {.caller = pthread_self()};
    atomic_init(&p.calls, 0);
    atomic_init(&p.wrong_thread, false);
    ck_assert_int_eq(http_listen_parse(spec, &l, msg, sizeof msg), 0);
    ck_assert_msg(http_start(&l, NULL, routes, &p, &h, msg, sizeof msg) == 0, "%s", msg);
    const char *addr = http_address(h);
    char *r =
        exchange(addr, "GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", 1);
    ck_assert_msg(strncmp(r, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", r);
    ck_assert_ptr_nonnull(strstr(r, "\r\n\r\nhello\n"));
    ck_assert_ptr_nonnull(strstr(r, "Cache-Control: no-store"));
    free(r);
    r = exchange(addr, "GET /down?x=1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", 1);
    ck_assert_msg(strncmp(r, "HTTP/1.1 503", 12) == 0, "%s", r);
    free(r);
    r = exchange(addr, "GET /nope HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", 1);
    ck_assert_msg(strncmp(r, "HTTP/1.1 404", 12) == 0, "%s", r);
    free(r);
    r = exchange(addr, "POST /hello HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\nabc",
                 1);
    ck_assert_msg(strncmp(r, "HTTP/1.1 405", 12) == 0, "%s", r);
    ck_assert_ptr_nonnull(strstr(r, "Allow: GET, HEAD"));
    free(r);
    r = exchange(addr, "HEAD /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", 1);
    ck_assert_msg(strncmp(r, "HTTP/1.1 200", 12) == 0, "%s", r);
    ck_assert_ptr_null(strstr(r, "hello\n"));
    free(r);
    char big[HTTP_MAX_URI + 96];
    memset(big, 'a', sizeof big);
    memcpy(big, "GET /", 5);
    snprintf(big + HTTP_MAX_URI + 10, sizeof big - HTTP_MAX_URI - 10,
             " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    r = exchange(addr, big, 1);
    ck_assert_msg(strncmp(r, "HTTP/1.1 414", 12) == 0, "%s", r);
    free(r);
    /* Two requests on one connection: both answered, the connection kept. */
    r = exchange(
        addr,
        "GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\nGET /hello HTTP/1.1\r\nHost: localhost\r\n"
        "Connection: close\r\n\r\n",
        2);
    const char *second = strstr(r + 1, "HTTP/1.1 200");
    ck_assert_msg(second != NULL, "one answer only: %s", r);
    free(r);
    http_stop(h);
    ck_assert_msg(!atomic_load(&p.wrong_thread), "a handler ran on the caller's thread");
    return atomic_load(&p.calls);
}

START_TEST(tcp)
{
    ck_assert_int_ge(serve_and_ask("127.0.0.1:0"), 4);
}
END_TEST

START_TEST(unix_socket)
{
    char spec[128];
    snprintf(spec, sizeof spec, "unix:/tmp/check_http.%d.sock", (int)getpid());
    ck_assert_int_ge(serve_and_ask(spec), 4);
    ck_assert_int_ne(access(spec + 5, F_OK), 0); /* removed */
}
END_TEST

/* A server on spec answering the names allowed. Returns: owned. */
static struct http *start(const char *spec, const char *allowed, struct probe *p)
{
    struct http_listen l;
    struct http *h = NULL;
    char msg[256];
    p->caller = pthread_self();
    atomic_init(&p->calls, 0);
    atomic_init(&p->wrong_thread, false);
    ck_assert_int_eq(http_listen_parse(spec, &l, msg, sizeof msg), 0);
    ck_assert_msg(http_start(&l, allowed, routes, p, &h, msg, sizeof msg) == 0, "%s", msg);
    return h;
}

/* Asks addr for /hello with the header lines extra. Returns: the status. */
static int status_with(const char *addr, const char *version, const char *extra)
{
    char req[256];
    snprintf(req, sizeof req, "GET /hello %s\r\n%sConnection: close\r\n\r\n", version, extra);
    char *r = exchange(addr, req, 1);
    int status = strncmp(r, "HTTP/1.", 7) == 0 ? (int)strtol(r + 9, NULL, 10) : 0;
    free(r);
    return status;
}

/* DNS rebinding: another site's Host is refused before any handler runs;
 * a Unix socket answers any. */
START_TEST(host_header)
{
    struct probe p;
    struct http *h = start("127.0.0.1:0", "baton.example", &p);
    const char *addr = http_address(h);
    char *r = exchange(addr, "GET /hello HTTP/1.1\r\nHost: evil.example:80\r\n\r\n", 1);
    ck_assert_msg(strncmp(r, "HTTP/1.1 421", 12) == 0, "%s", r);
    ck_assert_ptr_null(strstr(r, "hello\n"));
    ck_assert_ptr_nonnull(strstr(r, "http.allowed_hosts"));
    free(r);
    ck_assert_int_eq(status_with(addr, "HTTP/1.1", "Host: 10.0.0.1:9746\r\n"), 200);
    ck_assert_int_eq(status_with(addr, "HTTP/1.1", "Host: Baton.Example\r\n"), 200);
    ck_assert_int_eq(status_with(addr, "HTTP/1.0", ""), 200);
    ck_assert_int_eq(status_with(addr, "HTTP/1.1", ""), 400);
    ck_assert_int_eq(atomic_load(&p.calls), 3);
    http_stop(h);
    char spec[128];
    snprintf(spec, sizeof spec, "unix:/tmp/check_http_host.%d.sock", (int)getpid());
    h = start(spec, NULL, &p);
    ck_assert_int_eq(status_with(http_address(h), "HTTP/1.1", "Host: evil.example\r\n"), 200);
    http_stop(h);
}
END_TEST

/* True when the server has closed fd, within ms. */
static bool closed_within(int fd, int ms)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN | POLLRDHUP};
    char b[64];
    if (poll(&pfd, 1, ms) < 1)
        return false;
    ssize_t r = recv(fd, b, sizeof b, MSG_DONTWAIT | MSG_PEEK);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Asserts that fd was closed by now (waiting a moment for it), or not. */
static void assert_closed(int fd, bool want, int i)
{
    bool is = closed_within(fd, want ? 2000 : 0);
    ck_assert_msg(is == want, "connection %d: %s", i, is ? "closed" : "open");
}

/* Sends one request on fd and reads its answer (keep-alive). */
static void ask_on(int fd)
{
    static const char req[] = "GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n";
    char b[1024];
    size_t len = 0;
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ck_assert_int_eq(write(fd, req, sizeof req - 1), (ssize_t)(sizeof req - 1));
    while (len < sizeof b - 1) {
        ssize_t r = read(fd, b + len, sizeof b - 1 - len);
        ck_assert_int_gt(r, 0);
        len += (size_t)r;
        b[len] = '\0';
        if (strstr(b, "hello\n") != NULL)
            return;
    }
    ck_abort_msg("no answer on a kept connection");
}

/* More idle connections than the server's limit: each new one is served,
 * the oldest idle connections make room, one answered before stays. */
START_TEST(full_unix)
{
    enum { EXTRA = 8 };
    struct probe p;
    char spec[128];
    snprintf(spec, sizeof spec, "unix:/tmp/check_http_full.%d.sock", (int)getpid());
    struct http *h = start(spec, NULL, &p);
    const char *addr = http_address(h);
    int kept = dial(addr, NULL), idle[HTTP_MAX_CONNS + EXTRA];
    ask_on(kept); /* answered once: the last to go */
    for (int i = 0; i < HTTP_MAX_CONNS + EXTRA; i++)
        idle[i] = dial(addr, NULL);
    /* Accepted in order, so once this is answered each was admitted. */
    ck_assert_int_eq(status_with(addr, "HTTP/1.1", "Host: localhost\r\n"), 200);
    /* kept + 72 idle + this one: the EXTRA + 2 oldest idle made room. */
    for (int i = 0; i < HTTP_MAX_CONNS + EXTRA; i++)
        assert_closed(idle[i], i < EXTRA + 2, i);
    assert_closed(kept, false, -1);
    ask_on(kept);
    for (int i = 0; i < HTTP_MAX_CONNS + EXTRA; i++)
        close(idle[i]);
    close(kept);
    http_stop(h);
}
END_TEST

/* One TCP address holding its share (HTTP_MAX_PER_IP) makes room for its
 * own new connections; another address is not touched. */
START_TEST(full_per_address)
{
    enum { MINE = HTTP_MAX_PER_IP + 4 };
    struct probe p;
    struct http *h = start("127.0.0.1:0", NULL, &p);
    const char *addr = http_address(h);
    int other = dial(addr, "127.0.0.3"), mine[MINE];
    for (int i = 0; i < MINE; i++)
        mine[i] = dial(addr, "127.0.0.2");
    int late = dial(addr, "127.0.0.2");
    ask_on(late); /* the 21st from 127.0.0.2, answered */
    for (int i = 0; i < MINE; i++)
        assert_closed(mine[i], i < MINE - HTTP_MAX_PER_IP + 1, i);
    assert_closed(other, false, -1);
    for (int i = 0; i < MINE; i++)
        close(mine[i]);
    close(late);
    close(other);
    http_stop(h);
}
END_TEST

/* The address in use: a precise message, and nothing leaked. */
START_TEST(in_use)
{
    struct http_listen l;
    struct http *a = NULL, *b = NULL;
    char msg[256], spec[64];
    ck_assert_int_eq(http_listen_parse("127.0.0.1:0", &l, msg, sizeof msg), 0);
    ck_assert_int_eq(http_start(&l, NULL, routes, NULL, &a, msg, sizeof msg), 0);
    snprintf(spec, sizeof spec, "%s", http_address(a));
    ck_assert_int_eq(http_listen_parse(spec, &l, msg, sizeof msg), 0);
    ck_assert_int_ne(http_start(&l, NULL, routes, NULL, &b, msg, sizeof msg), 0);
    ck_assert_ptr_null(b);
    ck_assert_msg(strstr(msg, "Address already in use") != NULL, "%s", msg);
    http_stop(a);
    http_stop(NULL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("http");
    TCase *tc = tcase_create("http");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, listen_spec, 0, (int)(sizeof specs / sizeof specs[0]));
    tcase_add_loop_test(tc, host_allowed, 0, (int)(sizeof hosts / sizeof hosts[0]));
    tcase_add_loop_test(tc, allowed_name, 0, (int)(sizeof names / sizeof names[0]));
    tcase_add_test(tc, tcp);
    tcase_add_test(tc, unix_socket);
    tcase_add_test(tc, in_use);
    tcase_add_test(tc, host_header);
    tcase_add_test(tc, full_unix);
    tcase_add_test(tc, full_per_address);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!http_available()) { /* never skip: a build for the tests has it */
        fprintf(stderr, "check_http: this build has no HTTP server (libmicrohttpd-dev)\n");
        return 1;
    }
    return tu_run(suite());
}
