/* testutil.c -- see testutil.h. */
#include <arpa/inet.h>
#include <check.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "baton.h"
#include "transport_int.h"
#include "testutil.h"

int tu_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

const char *tu_redis_url(void)
{
    const char *u = getenv("BATON_TEST_URL");
    if (u == NULL || *u == '\0') {
        fprintf(stderr,
                "BATON_TEST_URL is not set: run this suite through tests/lib/with-redis.sh\n");
        abort();
    }
    return u;
}

int tu_redis_port(void)
{
    const char *p = getenv("BATON_TEST_REDIS_PORT");
    if (p == NULL) {
        fprintf(stderr, "BATON_TEST_REDIS_PORT is not set: run through tests/lib/with-redis.sh\n");
        abort();
    }
    return (int)strtol(p, NULL, 10);
}

int64_t tu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t tu_now_ms(void)
{
    return tu_now_ns() / 1000000;
}

void tu_sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static char *reply_text(const redisReply *r)
{
    char *out = NULL;
    switch (r->type) {
    case REDIS_REPLY_NIL: out = strdup("(nil)"); break;
    case REDIS_REPLY_INTEGER:
        if (asprintf(&out, "%lld", r->integer) < 0)
            out = NULL;
        break;
    case REDIS_REPLY_ERROR:
        if (asprintf(&out, "-%s", r->str) < 0)
            out = NULL;
        break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS: out = strdup(r->str); break;
    case REDIS_REPLY_ARRAY: {
        size_t cap = 2, len = 0;
        out = calloc(1, cap);
        for (size_t i = 0; out != NULL && i < r->elements; i++) {
            char *e = reply_text(r->element[i]);
            size_t n = strlen(e);
            char *grown = realloc(out, cap + n + 1);
            if (grown == NULL) {
                free(out);
                out = NULL;
            } else {
                out = grown;
                cap += n + 1;
                memcpy(out + len, e, n);
                len += n;
                out[len++] = (i + 1 < r->elements) ? ' ' : '\0';
                out[len] = '\0';
            }
            free(e);
        }
        break;
    }
    default: out = strdup("?");
    }
    return out;
}

char *tu_redis(const char *cmd)
{
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", tu_redis_port(), tv);
    if (c == NULL || c->err) {
        fprintf(stderr, "tu_redis: cannot connect: %s\n", c ? c->errstr : "oom");
        abort();
    }
    redisReply *r = redisCommand(c, cmd);
    if (r == NULL) {
        fprintf(stderr, "tu_redis: %s: %s\n", cmd, c->errstr);
        abort();
    }
    char *out = reply_text(r);
    freeReplyObject(r);
    redisFree(c);
    return out;
}

struct baton_client *tu_client(int64_t timeout_ms)
{
    struct baton_client *c = NULL;
    struct baton_client_opts o = {.command_timeout_ms = timeout_ms,
                                  .connect_timeout_ms = timeout_ms};
    int rc = baton_client_new(tu_redis_url(), &o, &c);
    ck_assert_msg(rc == BATON_OK, "connect: %s", baton_client_errstr(c));
    return c;
}

long long tu_redis_int(const char *cmd)
{
    char *got = tu_redis(cmd);
    char *end = NULL;
    long long v = strtoll(got, &end, 10);
    ck_assert_msg(end != got && *end == '\0', "%s: not an integer: [%s]", cmd, got);
    free(got);
    return v;
}

/* One command, waiting at most 2 s. */
bool tu_raw_cmd(struct baton__conn *cn, int argc, const char *const *argv)
{
    size_t lens[16];
    redisReply *r = NULL;
    if (argc > 16)
        return false;
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    if (baton__conn_command(cn, argc, (const char **)argv, lens, &r,
                            tu_now_ns() + INT64_C(2000000000)) != BATON_OK)
        return false;
    freeReplyObject(r);
    return true;
}

struct baton__conn *tu_raw_open(const char *url)
{
    struct baton__url u;
    struct baton__conn *cn = NULL;
    char err[256];
    int64_t deadline = tu_now_ns() + INT64_C(2000000000);
    if (baton__url_parse(url, &u, err, sizeof err) != BATON_OK)
        return NULL;
    /* Plain TCP and Unix sockets only: the ceilings are measured there. */
    struct baton__endpoint ep = {.host = u.host, .port = u.port, .path = u.path};
    if (!u.tls && u.master == NULL &&
        baton__conn_open(&ep, deadline, &cn, err, sizeof err) == BATON_OK &&
        baton__conn_hello(cn, u.user, u.pass, u.db, false, deadline) != BATON_OK) {
        baton__conn_free(cn);
        cn = NULL;
    }
    baton__url_clear(&u);
    return cn;
}

void tu_raw_close(struct baton__conn *cn)
{
    baton__conn_free(cn);
}

int64_t tu_raw_pairs(const char *url, int na, const char *const *a, int nb, const char *const *b,
                     atomic_bool *stop)
{
    struct baton__conn *cn = tu_raw_open(url);
    int64_t pairs = cn != NULL ? 0 : -1;
    while (pairs >= 0 && !atomic_load(stop)) {
        if (!tu_raw_cmd(cn, na, a) || !tu_raw_cmd(cn, nb, b))
            pairs = -1;
        else
            pairs++;
    }
    tu_raw_close(cn);
    return pairs;
}

struct tu_tnode {
    pthread_cond_t cv;
    bool got;
    struct tu_tnode *next;
};

void tu_tokens_take(struct tu_tokens *t)
{
    pthread_mutex_lock(&t->mu);
    if (t->free > 0 && t->head == NULL) {
        t->free--;
    } else {
        struct tu_tnode n = {.got = false};
        pthread_cond_init(&n.cv, NULL);
        if (t->tail != NULL)
            t->tail->next = &n;
        else
            t->head = &n;
        t->tail = &n;
        while (!n.got)
            pthread_cond_wait(&n.cv, &t->mu);
        pthread_cond_destroy(&n.cv);
    }
    pthread_mutex_unlock(&t->mu);
}

void tu_tokens_give(struct tu_tokens *t)
{
    pthread_mutex_lock(&t->mu);
    struct tu_tnode *n = t->head;
    if (n != NULL) { /* straight to the first waiter: nobody barges in */
        t->head = n->next;
        if (t->head == NULL)
            t->tail = NULL;
        n->got = true;
        pthread_cond_signal(&n->cv);
    } else {
        t->free++;
    }
    pthread_mutex_unlock(&t->mu);
}

int tu_dead_port(void)
{
    /* Bind a port, do not listen, close: connecting to it is refused. */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, len) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        abort();
    close(fd);
    return ntohs(a.sin_port);
}

int64_t tu_ctx_switches(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return -1;
    return (int64_t)ru.ru_nvcsw + ru.ru_nivcsw;
}
