/* quorum_check.c -- libbaton's locks over a Redlock quorum, for
 * tests/integration/test_quorum.sh. URL is a redis-quorum:// URL.
 *   quorum_check URL basic            lock/unlock with strictly increasing
 *                                     fences, a second owner refused, extend,
 *                                     auto-renewal, elections (campaign, a
 *                                     second candidate refused with the
 *                                     leader's name, renew, resign, the
 *                                     follower woken, terms increasing),
 *                                     baton_client_eval_all/command_all, what
 *                                     is refused (semaphores, once, commands
 *                                     of one master, ttl above max_ttl); one
 *                                     line per check
 *   quorum_check URL cycles KEY N     N lock/unlock cycles; prints
 *                                     "fences FIRST LAST", fails unless they
 *                                     strictly increase
 *   quorum_check URL try KEY          one try; prints "granted FENCE" or
 *                                     "ERRNAME: errstr"; exit 0 either way
 *                                     (the script judges)
 *   quorum_check URL latency KEY N    N try+release cycles 50 ms apart; prints
 *                                     "max_ms M p50_ms P errors E"
 *   quorum_check URL hold KEY TTL GO  takes KEY for TTL ms (no renewal),
 *                                     prints "fence F", waits for the file GO
 *                                     (20 s at most), then tries KEY:other
 *                                     and prints as `try`
 *   quorum_check URL contend KEY SECS LEDGER
 *                                     acquire/release loop for SECS seconds;
 *                                     appends "start_ns end_ns fence" per
 *                                     grant to LEDGER (O_APPEND) */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "baton.h"
#include "baton_election.h"
#include "baton_redis.h"

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        bool check_ok_ = (cond); /* evaluated once: it may act */                                  \
        printf(check_ok_ ? "ok   " : "FAIL ");                                                     \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
        if (!check_ok_)                                                                            \
            return 1;                                                                              \
    } while (0)

static int64_t now_ns(int clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static long num(const char *s)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0') {
        fprintf(stderr, "not a number: %s\n", s);
        exit(2);
    }
    return v;
}

static int noop(struct baton_lock *lk, void *arg)
{
    (void)lk;
    (void)arg;
    return 0;
}

/* An asynchronous call's callback: a quorum refuses them, so never run */
static void never_called(struct baton_lock *lk, int rc, const char *why, void *arg)
{
    (void)lk, (void)rc, (void)why, (void)arg;
    abort();
}

static int basic(struct baton_client *c)
{
    struct baton_lock_opts o = {.ttl_ms = 2000, .max_wait_ms = BATON_NO_WAIT};
    struct baton_lock *lk = NULL, *other = NULL;
    uint64_t last = 0;
    int rc;

    for (int i = 0; i < 5; i++) {
        rc = baton_lock_try(c, "basic", &o, &lk);
        CHECK(rc == 0, "lock %d: %s %s", i, baton_errname(rc), rc ? baton_client_errstr(c) : "");
        uint64_t f = baton_lock_fence(lk);
        CHECK(f > last, "fence %llu > %llu", (unsigned long long)f, (unsigned long long)last);
        last = f;
        int64_t left = baton_lock_remaining_ms(lk);
        CHECK(left > 1000 && left <= 1978,
              "validity %lld ms of ttl 2000 (minus drift 22 ms, elapsed)", (long long)left);
        if (i == 0) {
            rc = baton_lock_try(c, "basic", &o, &other);
            CHECK(rc == BATON_ETAKEN, "a second owner is refused: %s", baton_errname(rc));
            rc = baton_lock_extend(lk, 1500);
            CHECK(rc == 0, "extend: %s %s", baton_errname(rc), rc ? baton_lock_errstr(lk) : "");
            left = baton_lock_remaining_ms(lk);
            CHECK(left > 900 && left <= 1483,
                  "validity after extend to 1500 (minus drift 17 ms): %lld", (long long)left);
        }
        rc = baton_lock_release(lk);
        CHECK(rc == 0, "release %d: %s %s", i, baton_errname(rc), rc ? baton_lock_errstr(lk) : "");
        rc = baton_lock_extend(lk, 1000);
        CHECK(rc != 0, "no extend after release: %s", baton_errname(rc));
        baton_lock_free(lk);
        lk = NULL;
    }

    /* Auto-renewal over the quorum keeps a lock past its ttl */
    struct baton_lock_opts ro = {
        .ttl_ms = 600, .renew_ms = 150, .auto_renew = true, .max_wait_ms = BATON_NO_WAIT};
    rc = baton_lock_try(c, "renewed", &ro, &lk);
    CHECK(rc == 0, "renewed lock: %s %s", baton_errname(rc), rc ? baton_client_errstr(c) : "");
    nap_ms(1500);
    CHECK(!baton_lock_lost(lk) && baton_lock_remaining_ms(lk) > 0,
          "auto-renewed past 2.5 ttl: %lld ms left", (long long)baton_lock_remaining_ms(lk));
    rc = baton_lock_try(c, "renewed", &o, &other);
    CHECK(rc == BATON_ETAKEN, "still held by its owner: %s", baton_errname(rc));
    CHECK(baton_lock_release(lk) == 0, "renewed lock released");
    baton_lock_free(lk);

    /* A waiting acquire is served once the holder releases */
    struct baton_lock_opts wo = {.ttl_ms = 2000, .max_wait_ms = 3000, .retry_delay_ms = 50};
    rc = baton_lock_try(c, "wait", &o, &lk);
    CHECK(rc == 0, "holder of wait");
    int64_t t0 = now_ns(CLOCK_MONOTONIC);
    rc = baton_lock_acquire(c, "wait", &wo, &other);
    int64_t waited = (now_ns(CLOCK_MONOTONIC) - t0) / 1000000;
    CHECK(rc == 0 && waited >= 1500, "waiter got it when the lease ran out, after %lld ms: %s",
          (long long)waited, baton_errname(rc));
    baton_lock_release(other);
    baton_lock_free(other);
    baton_lock_free(lk);

    /* What a quorum refuses, precisely */
    struct baton_lock_opts lo = {.ttl_ms = 3600000, .max_wait_ms = BATON_NO_WAIT};
    rc = baton_lock_try(c, "long", &lo, &lk);
    CHECK(rc == BATON_EINVAL && strstr(baton_client_errstr(c), "max_ttl") != NULL,
          "ttl above max_ttl refused: %s: %s", baton_errname(rc), baton_client_errstr(c));
    struct baton_permit *p = NULL;
    rc = baton_sem_try(c, "sem", 2, NULL, &p);
    CHECK(rc == BATON_EINVAL &&
              strstr(baton_client_errstr(c), "not supported over a Redlock quorum") != NULL,
          "semaphore refused: %s: %s", baton_errname(rc), baton_client_errstr(c));
    rc = baton_lock_try_async(c, "async", &lo, never_called, NULL);
    CHECK(rc == BATON_EINVAL &&
              strstr(baton_client_errstr(c), "not supported over a Redlock quorum") != NULL,
          "asynchronous lock refused: %s: %s", baton_errname(rc), baton_client_errstr(c));
    const char *argv[1] = {"PING"};
    size_t lens[1] = {4};
    struct baton_reply *reply = NULL;
    rc = baton_client_command(c, 1, argv, lens, &reply);
    CHECK(rc == BATON_EINVAL &&
              strstr(baton_client_errstr(c), "not supported over a Redlock quorum") != NULL,
          "baton_client_command refused: %s", baton_errname(rc));
    /* Elections over the quorum */
    struct baton_election *e = NULL, *f = NULL;
    struct baton_election_opts ea = {.ttl_ms = 2000, .identity = "node-a"};
    struct baton_election_opts eb = {.ttl_ms = 2000, .identity = "node-b"};
    struct baton_leader_info info;
    CHECK(baton_election_new(c, "el", &ea, &e) == 0 && baton_election_new(c, "el", &eb, &f) == 0,
          "two candidates");
    CHECK(baton_election_watch(f) == 0 && baton_election_watch_complete(f),
          "the follower subscribed on every master: %s", baton_election_errstr(f));
    rc = baton_election_campaign(e, &info);
    CHECK(rc == 0, "campaign: %s %s", baton_errname(rc), baton_election_errstr(e));
    uint64_t t1 = baton_election_term(e);
    rc = baton_election_campaign(f, &info);
    CHECK(rc == BATON_ETAKEN && info.has_leader && strcmp(info.identity, "node-a") == 0 &&
              info.term == t1 && info.ttl_ms > 1000,
          "second candidate refused: %s, leader '%s' term %llu (%llu) lease %lld ms",
          baton_errname(rc), info.identity, (unsigned long long)info.term, (unsigned long long)t1,
          (long long)info.ttl_ms);
    CHECK(baton_election_leader(c, "el", &info) == 0 && info.has_leader &&
              strcmp(info.identity, "node-a") == 0 && info.term == t1,
          "the leader as read: '%s' term %llu", info.identity, (unsigned long long)info.term);
    rc = baton_election_renew(e);
    CHECK(rc == 0 && baton_election_is_leader(e), "renew: %s %s", baton_errname(rc),
          baton_election_errstr(e));
    CHECK(baton_election_resign(e) == 0, "resign: %s", baton_election_errstr(e));
    unsigned ev = 0;
    int64_t until = now_ns(CLOCK_MONOTONIC) + 2000000000;
    while (!(ev & BATON_EVENT_RESIGNED) && now_ns(CLOCK_MONOTONIC) < until) {
        nap_ms(5);
        baton_election_watch_read(f, &ev);
    }
    CHECK(ev & BATON_EVENT_RESIGNED, "the follower heard the resignation");
    rc = baton_election_campaign(f, &info);
    CHECK(rc == 0 && baton_election_term(f) > t1, "the follower leads, term %llu > %llu: %s",
          (unsigned long long)baton_election_term(f), (unsigned long long)t1, baton_errname(rc));
    int receivers = 0;
    CHECK(baton_election_request_step_down(c, "el", baton_election_term(f), &receivers) == 0,
          "step-down request published (%d receivers)", receivers);
    CHECK(baton_election_resign(f) == 0, "the second leader resigned");
    baton_election_free(e);
    baton_election_free(f);

    /* Every master: a script and a command, each master's answer */
    struct baton_answers *a = NULL;
    const char *keys[1] = {"qc:k"};
    const char *args[1] = {"v"};
    rc = baton_client_eval_all(c, "redis.call('set', KEYS[1], ARGV[1]) return 7", 1, keys, 1, args,
                               &a);
    CHECK(rc == 0 && a->n == 5 && a->majority == 3 && baton_answers_check(c, a) == 0,
          "eval_all: %s, %d answers of %d", baton_errname(rc), a != NULL ? a->answered : 0,
          a != NULL ? a->n : 0);
    for (int i = 0; i < a->n; i++)
        CHECK(a->v[i].rc == 0 && a->v[i].reply->type == BATON_REPLY_INTEGER &&
                  a->v[i].reply->integer == 7,
              "master %s answered 7", a->v[i].master);
    baton_answers_free(a);
    const char *get[2] = {"GET", "qc:k"};
    rc = baton_client_command_all(c, 2, get, NULL, &a);
    CHECK(rc == 0 && a->v[0].reply->type == BATON_REPLY_STRING &&
              strcmp(a->v[0].reply->str, "v") == 0,
          "command_all: %s", baton_errname(rc));
    baton_answers_free(a);
    const char *bad[1] = {"NOSUCHCOMMAND"};
    rc = baton_client_command_all(c, 1, bad, NULL, &a);
    CHECK(rc == 0 && a->v[0].rc == BATON_EREDIS && baton_answers_check(c, a) == BATON_EREDIS &&
              strstr(baton_client_errstr(c), "applied by 0 of 5 masters") != NULL,
          "an error reply: %s", baton_client_errstr(c));
    baton_answers_free(a);
    rc = baton_once(c, "id1", 1000, noop, NULL);
    CHECK(rc == BATON_EINVAL &&
              strstr(baton_client_errstr(c), "not supported over a Redlock quorum") != NULL,
          "once refused: %s: %s", baton_errname(rc), baton_client_errstr(c));
    return 0;
}

static int cycles(struct baton_client *c, const char *key, long n)
{
    struct baton_lock_opts o = {.ttl_ms = 2000, .max_wait_ms = 2000, .retry_delay_ms = 50};
    uint64_t first = 0, last = 0;
    for (long i = 0; i < n; i++) {
        struct baton_lock *lk = NULL;
        int rc = baton_lock_acquire(c, key, &o, &lk);
        if (rc != 0) {
            printf("FAIL cycle %ld: %s: %s\n", i, baton_errname(rc), baton_client_errstr(c));
            return 1;
        }
        uint64_t f = baton_lock_fence(lk);
        if (f <= last) {
            printf("FAIL fence %llu after %llu\n", (unsigned long long)f, (unsigned long long)last);
            return 1;
        }
        if (first == 0)
            first = f;
        last = f;
        baton_lock_release(lk);
        baton_lock_free(lk);
    }
    printf("fences %llu %llu\n", (unsigned long long)first, (unsigned long long)last);
    return 0;
}

static void try_once(struct baton_client *c, const char *key)
{
    struct baton_lock_opts o = {.ttl_ms = 2000, .max_wait_ms = BATON_NO_WAIT};
    struct baton_lock *lk = NULL;
    int rc = baton_lock_try(c, key, &o, &lk);
    if (rc == 0)
        printf("granted %llu\n", (unsigned long long)baton_lock_fence(lk));
    else
        printf("%s: %s\n", baton_errname(rc),
               rc == BATON_ETAKEN ? "held by another owner" : baton_client_errstr(c));
    fflush(stdout);
    baton_lock_free(lk); /* not released: a granted one expires with its ttl */
}

static int latency(struct baton_client *c, const char *key, long n)
{
    struct baton_lock_opts o = {.ttl_ms = 2000, .max_wait_ms = BATON_NO_WAIT};
    int64_t *ms = calloc((size_t)n, sizeof *ms);
    int64_t max = 0;
    long errors = 0;
    if (ms == NULL)
        return 1;
    for (long i = 0; i < n; i++) {
        struct baton_lock *lk = NULL;
        int64_t t0 = now_ns(CLOCK_MONOTONIC);
        int rc = baton_lock_try(c, key, &o, &lk);
        ms[i] = (now_ns(CLOCK_MONOTONIC) - t0) / 1000000;
        if (ms[i] > max)
            max = ms[i];
        if (rc != 0) {
            errors++;
            fprintf(stderr, "%s: %s\n", baton_errname(rc), baton_client_errstr(c));
            continue;
        }
        baton_lock_release(lk);
        baton_lock_free(lk);
        nap_ms(50); /* n cycles span more than one of a stopped master's down windows */
    }
    for (long i = 1; i < n; i++) /* insertion sort: n is small */
        for (long j = i; j > 0 && ms[j - 1] > ms[j]; j--) {
            int64_t t = ms[j];
            ms[j] = ms[j - 1];
            ms[j - 1] = t;
        }
    printf("max_ms %lld p50_ms %lld errors %ld\n", (long long)max, (long long)ms[n / 2], errors);
    free(ms);
    return 0;
}

static int hold(struct baton_client *c, const char *key, long ttl, const char *go)
{
    struct baton_lock_opts o = {.ttl_ms = ttl, .max_wait_ms = BATON_NO_WAIT};
    struct baton_lock *lk = NULL;
    char other[256];
    int rc = baton_lock_try(c, key, &o, &lk);
    if (rc != 0) {
        printf("FAIL hold: %s: %s\n", baton_errname(rc), baton_client_errstr(c));
        return 1;
    }
    printf("fence %llu\n", (unsigned long long)baton_lock_fence(lk));
    fflush(stdout);
    for (int i = 0; i < 2000 && access(go, F_OK) != 0; i++)
        nap_ms(10);
    snprintf(other, sizeof other, "%s:other", key);
    try_once(c, other);
    baton_lock_free(lk);
    return 0;
}

static int contend(struct baton_client *c, const char *key, long secs, const char *ledger)
{
    struct baton_lock_opts o = {.ttl_ms = 2000, .max_wait_ms = 5000, .retry_delay_ms = 20};
    int fd = open(ledger, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int64_t end = now_ns(CLOCK_MONOTONIC) + secs * 1000000000;
    long grants = 0, errors = 0;
    if (fd < 0)
        return 1;
    while (now_ns(CLOCK_MONOTONIC) < end) {
        struct baton_lock *lk = NULL;
        int rc = baton_lock_acquire(c, key, &o, &lk);
        if (rc != 0) {
            errors++;
            fprintf(stderr, "%s: %s\n", baton_errname(rc), baton_client_errstr(c));
            continue;
        }
        int64_t s = now_ns(CLOCK_REALTIME);
        nap_ms(2); /* the critical section */
        int64_t e = now_ns(CLOCK_REALTIME);
        bool valid = baton_lock_remaining_ms(lk) > 0;
        char line[128];
        int n = snprintf(line, sizeof line, "%lld %lld %llu %d\n", (long long)s, (long long)e,
                         (unsigned long long)baton_lock_fence(lk), valid ? 1 : 0);
        if (write(fd, line, (size_t)n) != n)
            errors++;
        baton_lock_release(lk);
        baton_lock_free(lk);
        grants++;
    }
    close(fd);
    printf("grants %ld errors %ld\n", grants, errors);
    return 0;
}

int main(int argc, char **argv)
{
    struct baton_client *c = NULL;
    int rc;
    if (argc < 3) {
        fprintf(stderr, "usage: quorum_check URL basic|cycles|try|latency|hold|contend ...\n");
        return 2;
    }
    /* try: lazy, so that an acquire (not the connection check) meets the
     * masters that are down */
    struct baton_client_opts co = {.lazy = strcmp(argv[2], "try") == 0};
    if ((rc = baton_client_new(argv[1], &co, &c)) != 0) {
        printf("%s: %s\n", baton_errname(rc), baton_client_errstr(c));
        baton_client_free(c);
        return strcmp(argv[2], "try") == 0 ? 0 : 1;
    }
    const char *mode = argv[2];
    if (strcmp(mode, "basic") == 0)
        rc = basic(c);
    else if (strcmp(mode, "cycles") == 0 && argc == 5)
        rc = cycles(c, argv[3], num(argv[4]));
    else if (strcmp(mode, "try") == 0 && argc == 4)
        try_once(c, argv[3]), rc = 0;
    else if (strcmp(mode, "latency") == 0 && argc == 5)
        rc = latency(c, argv[3], num(argv[4]));
    else if (strcmp(mode, "hold") == 0 && argc == 6)
        rc = hold(c, argv[3], num(argv[4]), argv[5]);
    else if (strcmp(mode, "contend") == 0 && argc == 6)
        rc = contend(c, argv[3], num(argv[4]), argv[5]);
    else {
        fprintf(stderr, "quorum_check: bad arguments\n");
        rc = 2;
    }
    baton_client_free(c);
    return rc;
}
