/* check_http.c -- the HTTP server (http.h): http.listen's grammar, one row
 * per spelling; a live server on loopback and on a Unix socket answering
 * its routes, 404, 405 with Allow, 414, HEAD, several requests on one
 * connection; handlers on the server's own thread; nothing left behind by
 * http_stop(). */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
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

/* Sends req on a new connection to addr ("127.0.0.1:PORT" or
 * "unix:PATH"), reads until the server closes or n responses came. Returns:
 * owned text. */
static char *exchange(const char *addr, const char *req, int n)
{
    int fd;
    if (strncmp(addr, "unix:", 5) == 0) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", addr + 5);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    } else {
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)strtol(strchr(addr, ':') + 1, NULL, 10))};
        inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    }
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
    ck_assert_msg(http_start(&l, routes, &p, &h, msg, sizeof msg) == 0, "%s", msg);
    const char *addr = http_address(h);
    char *r = exchange(addr, "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 1);
    ck_assert_msg(strncmp(r, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", r);
    ck_assert_ptr_nonnull(strstr(r, "\r\n\r\nhello\n"));
    ck_assert_ptr_nonnull(strstr(r, "Cache-Control: no-store"));
    free(r);
    r = exchange(addr, "GET /down?x=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 1);
    ck_assert_msg(strncmp(r, "HTTP/1.1 503", 12) == 0, "%s", r);
    free(r);
    r = exchange(addr, "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 1);
    ck_assert_msg(strncmp(r, "HTTP/1.1 404", 12) == 0, "%s", r);
    free(r);
    r = exchange(addr, "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", 1);
    ck_assert_msg(strncmp(r, "HTTP/1.1 405", 12) == 0, "%s", r);
    ck_assert_ptr_nonnull(strstr(r, "Allow: GET, HEAD"));
    free(r);
    r = exchange(addr, "HEAD /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 1);
    ck_assert_msg(strncmp(r, "HTTP/1.1 200", 12) == 0, "%s", r);
    ck_assert_ptr_null(strstr(r, "hello\n"));
    free(r);
    char big[HTTP_MAX_URI + 96];
    memset(big, 'a', sizeof big);
    memcpy(big, "GET /", 5);
    snprintf(big + HTTP_MAX_URI + 10, sizeof big - HTTP_MAX_URI - 10,
             " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    r = exchange(addr, big, 1);
    ck_assert_msg(strncmp(r, "HTTP/1.1 414", 12) == 0, "%s", r);
    free(r);
    /* Two requests on one connection: both answered, the connection kept. */
    r = exchange(addr,
                 "GET /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n"
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

/* The address in use: a precise message, and nothing leaked. */
START_TEST(in_use)
{
    struct http_listen l;
    struct http *a = NULL, *b = NULL;
    char msg[256], spec[64];
    ck_assert_int_eq(http_listen_parse("127.0.0.1:0", &l, msg, sizeof msg), 0);
    ck_assert_int_eq(http_start(&l, routes, NULL, &a, msg, sizeof msg), 0);
    snprintf(spec, sizeof spec, "%s", http_address(a));
    ck_assert_int_eq(http_listen_parse(spec, &l, msg, sizeof msg), 0);
    ck_assert_int_ne(http_start(&l, routes, NULL, &b, msg, sizeof msg), 0);
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
    tcase_add_test(tc, tcp);
    tcase_add_test(tc, unix_socket);
    tcase_add_test(tc, in_use);
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
