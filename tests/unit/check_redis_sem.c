/* check_redis_sem.c -- semaphores against a real redis-server (started by
 * tests/lib/with-redis.sh): the limit, permits and fences, reclaiming
 * expired permits by server time, release by id, waiting (wake on release,
 * at a lease's end, FIFO, timeouts, a dead waiter's reservation, a grant
 * published to a waiter elsewhere), leases (extend, auto-renewal, loss),
 * different limits, threads, and the asynchronous calls (50 waiters
 * cycling on the loop thread alone; refusals, timeouts, arguments). */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baton.h"
#include "baton_redis.h"
#include "testutil.h"

static struct baton_client *client(void) { return tu_client(500); }

static int holders(struct baton_client *c, const char *name)
{
    int n = -1;
    ck_assert_int_eq(baton_sem_holders(c, name, &n), BATON_OK);
    return n;
}

/* Server time, ms. */
static long long server_ms(void)
{
    char *t = tu_redis("TIME");
    long long sec = 0, usec = 0;
    ck_assert_int_eq(sscanf(t, "%lld %lld", &sec, &usec), 2);
    free(t);
    return sec * 1000 + usec / 1000;
}

START_TEST(limit_and_fences)
{
    struct baton_client *c = client();
    struct baton_permit *p[4] = {NULL};
    struct baton_sem_opts o = {.ttl_ms = 10000};
    uint64_t last = 0;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(baton_sem_try(c, "s:lim", 3, &o, &p[i]), BATON_OK);
        ck_assert_int_eq(strlen(baton_permit_id(p[i])), 48);
        ck_assert_str_eq(baton_permit_name(p[i]), "s:lim");
        ck_assert_uint_gt(baton_permit_fence(p[i]), last);
        last = baton_permit_fence(p[i]);
        ck_assert(!baton_permit_lost(p[i]));
    }
    ck_assert_str_ne(baton_permit_id(p[0]), baton_permit_id(p[1]));
    ck_assert_int_eq(holders(c, "s:lim"), 3);
    ck_assert_int_eq(tu_redis_int("ZCARD baton:{s:lim}:sem"), 3);
    ck_assert_int_eq(baton_sem_try(c, "s:lim", 3, &o, &p[3]), BATON_ETAKEN);
    ck_assert_ptr_null(p[3]);
    ck_assert_int_eq(baton_sem_release(p[1]), BATON_OK);
    ck_assert_int_eq(baton_sem_release(p[1]), BATON_EINVAL); /* twice */
    ck_assert_int_eq(holders(c, "s:lim"), 2);
    ck_assert_int_eq(baton_sem_try(c, "s:lim", 3, &o, &p[3]), BATON_OK);
    ck_assert_uint_gt(baton_permit_fence(p[3]), last);
    ck_assert_int_eq(tu_redis_int("PTTL baton:{s:lim}:sem:fence"), -1); /* never expires */
    for (int i = 0; i < 4; i++) {
        if (i != 1)
            ck_assert_int_eq(baton_sem_release(p[i]), BATON_OK);
        baton_permit_free(p[i]);
    }
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{s:lim}:sem"), 0);
    baton_client_free(c);
}
END_TEST

/* Leases are scored with the server's clock, and expire on it. */
START_TEST(server_time_and_reclaim)
{
    struct baton_client *c = client();
    struct baton_permit *a = NULL, *b = NULL, *x = NULL;
    ck_assert_int_eq(baton_sem_try(c, "s:exp", 2, &(struct baton_sem_opts){.ttl_ms = 100}, &a),
                     BATON_OK);
    ck_assert_int_eq(baton_sem_try(c, "s:exp", 2, &(struct baton_sem_opts){.ttl_ms = 20000}, &b),
                     BATON_OK);
    /* b's score = server time (ms) + 20000. */
    char cmd[160];
    snprintf(cmd, sizeof cmd, "ZSCORE baton:{s:exp}:sem %s", baton_permit_id(b));
    long long score = tu_redis_int(cmd);
    long long now = server_ms();
    ck_assert_int_le(score - now, 20000);
    ck_assert_int_ge(score - now, 19500);
    /* The set's own TTL covers the longest lease. */
    ck_assert_int_gt(tu_redis_int("PTTL baton:{s:exp}:sem"), 19000);

    ck_assert_int_eq(baton_sem_try(c, "s:exp", 2, NULL, &x), BATON_ETAKEN);
    tu_sleep_ms(150); /* a's lease runs out: the next acquire reclaims it */
    ck_assert(baton_permit_lost(a));
    ck_assert_int_eq(holders(c, "s:exp"), 1);
    ck_assert_int_eq(baton_sem_try(c, "s:exp", 2, NULL, &x), BATON_OK);
    ck_assert_int_eq(tu_redis_int("ZCARD baton:{s:exp}:sem"), 2);
    /* The expired permit cannot be released or extended. */
    ck_assert_int_eq(baton_sem_extend(a, 5000), BATON_ELOST);
    ck_assert_int_eq(baton_sem_release(a), BATON_ELOST);
    ck_assert_int_eq(holders(c, "s:exp"), 2);
    baton_sem_release(b);
    baton_sem_release(x);
    baton_permit_free(a);
    baton_permit_free(b);
    baton_permit_free(x);
    baton_client_free(c);
}
END_TEST

START_TEST(release_by_id)
{
    struct baton_client *c = client();
    struct baton_permit *p = NULL;
    ck_assert_int_eq(baton_sem_try(c, "s:id", 1, NULL, &p), BATON_OK);
    char id[64];
    snprintf(id, sizeof id, "%s", baton_permit_id(p));
    ck_assert_int_eq(baton_sem_release_id(c, "s:id", "not-a-permit"), BATON_ELOST);
    ck_assert_int_eq(holders(c, "s:id"), 1);
    ck_assert_int_eq(baton_sem_release_id(c, "s:id", id), BATON_OK);
    ck_assert_int_eq(holders(c, "s:id"), 0);
    ck_assert_int_eq(baton_sem_release_id(c, "s:id", id), BATON_ELOST);
    ck_assert_int_eq(baton_sem_release(p), BATON_ELOST);
    ck_assert_str_eq(baton_permit_errstr(p),
                     "permit of semaphore s:id was no longer held at release");
    ck_assert_int_eq(baton_sem_release_id(c, "s:id", ""), BATON_EINVAL);
    ck_assert_int_eq(baton_sem_release_id(c, "", id), BATON_EINVAL);
    baton_permit_free(p);
    baton_client_free(c);
}
END_TEST

struct waiter {
    struct baton_client *c;
    const char *name;
    int limit;
    struct baton_sem_opts o;
    int rc;
    int64_t got_ns;
    int order;
    int64_t hold_ms;
    atomic_int *counter;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    struct baton_permit *p = NULL;
    w->rc = baton_sem_acquire(w->c, w->name, w->limit, &w->o, &p);
    w->got_ns = tu_now_ns();
    if (w->rc == BATON_OK) {
        if (w->counter != NULL)
            w->order = atomic_fetch_add(w->counter, 1);
        if (w->hold_ms > 0)
            tu_sleep_ms(w->hold_ms);
        baton_sem_release(p);
    }
    baton_permit_free(p);
    return NULL;
}

/* Releases p while w waits on thread t: w gets the slot within 200 ms,
 * woken by the release (not by its retry timer). */
static void release_wakes(struct baton_permit *p, struct waiter *w, pthread_t t)
{
    int64_t released = tu_now_ns();
    ck_assert_int_eq(baton_sem_release(p), BATON_OK);
    pthread_join(t, NULL);
    ck_assert_int_eq(w->rc, BATON_OK);
    ck_assert_msg(w->got_ns - released < INT64_C(200000000), "woken after %lld ms",
                  (long long)((w->got_ns - released) / 1000000));
}

/* A waiter is woken by a release, not by its retry timer (5 s here). */
START_TEST(wake_on_release)
{
    struct baton_client *c = client();
    struct baton_permit *h1 = NULL, *h2 = NULL;
    ck_assert_int_eq(baton_sem_try(c, "s:wake", 2, NULL, &h1), BATON_OK);
    ck_assert_int_eq(baton_sem_try(c, "s:wake", 2, NULL, &h2), BATON_OK);
    struct waiter w = {
        .c = c, .name = "s:wake", .limit = 2, .o = {.max_wait_ms = 10000, .retry_delay_ms = 5000}};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &w);
    tu_sleep_ms(300);
    release_wakes(h2, &w, t);
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{s:wake}:sem:q"), 0);
    baton_sem_release(h1);
    baton_permit_free(h1);
    baton_permit_free(h2);
    baton_client_free(c);
}
END_TEST

/* A holder that vanishes costs only its lease. */
START_TEST(wake_at_lease_end)
{
    struct baton_client *c = client();
    struct baton_permit *h = NULL;
    ck_assert_int_eq(baton_sem_try(c, "s:crash", 1, &(struct baton_sem_opts){.ttl_ms = 600}, &h),
                     BATON_OK);
    int64_t granted = tu_now_ns();
    baton_permit_free(h); /* "crash": no release */
    struct waiter w = {
        .c = c, .name = "s:crash", .limit = 1, .o = {.max_wait_ms = 10000, .retry_delay_ms = 5000}};
    waiter_main(&w);
    ck_assert_int_eq(w.rc, BATON_OK);
    int64_t ms = (w.got_ns - granted) / 1000000;
    ck_assert_msg(ms >= 590 && ms < 900, "acquired %lld ms after the grant (ttl 600)",
                  (long long)ms);
    baton_client_free(c);
}
END_TEST

START_TEST(timeout_leaves_the_queue)
{
    struct baton_client *c = client();
    struct baton_permit *h = NULL, *w = NULL;
    ck_assert_int_eq(baton_sem_try(c, "s:to", 1, NULL, &h), BATON_OK);
    int64_t t0 = tu_now_ns();
    ck_assert_int_eq(
        baton_sem_acquire(c, "s:to", 1, &(struct baton_sem_opts){.max_wait_ms = 300}, &w),
        BATON_ETIMEDOUT);
    int64_t ms = (tu_now_ns() - t0) / 1000000;
    ck_assert_int_ge(ms, 300);
    ck_assert_int_lt(ms, 800);
    ck_assert_ptr_null(w);
    ck_assert_int_eq(tu_redis_int("ZCARD baton:{s:to}:sem:q"), 0);
    ck_assert_int_eq(
        baton_sem_acquire(c, "s:to", 1, &(struct baton_sem_opts){.max_wait_ms = BATON_NO_WAIT}, &w),
        BATON_ETAKEN);
    baton_sem_release(h);
    baton_permit_free(h);
    baton_client_free(c);
}
END_TEST

/* Waiters are served in arrival order, across clients. */
START_TEST(fifo_order)
{
    enum { N = 5 };
    struct baton_client *hc = client();
    struct baton_client *cs[N];
    struct baton_permit *h = NULL;
    atomic_int counter = 0;
    ck_assert_int_eq(baton_sem_try(hc, "s:fifo", 1, NULL, &h), BATON_OK);
    struct waiter w[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        cs[i] = client();
        w[i] = (struct waiter){.c = cs[i],
                               .name = "s:fifo",
                               .limit = 1,
                               .counter = &counter,
                               .o = {.max_wait_ms = 10000, .retry_delay_ms = 50}};
        pthread_create(&t[i], NULL, waiter_main, &w[i]);
        tu_sleep_ms(100); /* arrival order = i */
    }
    baton_sem_release(h);
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(w[i].rc, BATON_OK);
        ck_assert_int_eq(w[i].order, i);
        baton_client_free(cs[i]);
    }
    baton_permit_free(h);
    baton_client_free(hc);
}
END_TEST

/* A slot handed to a waiter that has died (its queue entry, planted here,
 * is never refreshed) is reclaimed when the reservation runs out. */
START_TEST(dead_waiter_reservation_expires)
{
    struct baton_client *c = client();
    struct baton_permit *h = NULL;
    ck_assert_int_eq(baton_sem_try(c, "s:dead", 1, NULL, &h), BATON_OK);
    long long now = server_ms();
    char cmd[200];
    const char *ghost = "ffffffffffffffff00000000000000000000000000000000";
    snprintf(cmd, sizeof cmd, "ZADD baton:{s:dead}:sem:q 1 %lld|30000|%s", now + 700, ghost);
    free(tu_redis(cmd));
    /* The live waiter is not told (the ghost was woken instead): its retry
     * timer finds the slot once the ghost's reservation has run out. */
    struct waiter w = {
        .c = c, .name = "s:dead", .limit = 1, .o = {.max_wait_ms = 10000, .retry_delay_ms = 200}};
    pthread_t th;
    pthread_create(&th, NULL, waiter_main, &w);
    tu_sleep_ms(200);
    int64_t released = tu_now_ns();
    ck_assert_int_eq(baton_sem_release(h), BATON_OK); /* handed to the ghost */
    snprintf(cmd, sizeof cmd, "ZSCORE baton:{s:dead}:sem %s", ghost);
    char *s = tu_redis(cmd);
    ck_assert_str_ne(s, "(nil)");
    free(s);
    pthread_join(th, NULL);
    ck_assert_int_eq(w.rc, BATON_OK);
    int64_t ms = (w.got_ns - released) / 1000000;
    ck_assert_msg(ms >= 400 && ms < 1000, "acquired %lld ms after the release", (long long)ms);
    baton_permit_free(h);
    baton_client_free(c);
}
END_TEST

/* A waiter that keeps its permit (for the tests of published grants). */
struct keeper {
    struct baton_client *c;
    const char *name;
    struct baton_sem_opts o;
    int rc;
    int64_t got_ns;
    struct baton_permit *p;
};

static void *keeper_main(void *arg)
{
    struct keeper *k = arg;
    k->rc = baton_sem_acquire(k->c, k->name, 1, &k->o, &k->p);
    k->got_ns = tu_now_ns();
    return NULL;
}

/* Waits up to 2 s until name's queue holds n waiters. */
static void await_queued(const char *name, int n)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "ZCARD baton:{%s}:sem:q", name);
    int64_t until = tu_now_ns() + INT64_C(2000000000);
    while (tu_redis_int(cmd) != n && tu_now_ns() < until)
        tu_sleep_ms(5);
    ck_assert_int_eq(tu_redis_int(cmd), n);
}

/* Scripts run by the server so far (EVALSHA and EVAL). */
static long long scripts_run(void)
{
    char *info = tu_redis("INFO commandstats");
    long long n = 0;
    for (const char *k = info; (k = strstr(k, "cmdstat_eval")) != NULL; k++) {
        const char *calls = strstr(k, "calls=");
        if (calls != NULL)
            n += strtoll(calls + 6, NULL, 10);
    }
    free(info);
    return n;
}

/* A release grants its slot to a waiter of another client inside the
 * script and publishes the grant: the waiter holds the permit, with its
 * own lease and a higher fence, without another script of its own (its
 * retry timer is 5 s). */
START_TEST(grant_published_to_another_client)
{
    struct baton_client *hc = client(), *wc = client();
    struct baton_permit *h = NULL, *warm = NULL;
    struct baton_sem_opts o = {.ttl_ms = 20000};
    /* Every script has run once: none is loaded by a NOSCRIPT fallback
     * during the count below. */
    ck_assert_int_eq(baton_sem_try(hc, "s:pub:warm", 1, &o, &warm), BATON_OK);
    ck_assert_int_eq(baton_sem_release(warm), BATON_OK);
    ck_assert_int_eq(baton_sem_try(hc, "s:pub", 1, &o, &h), BATON_OK);
    struct keeper k = {.c = wc,
                       .name = "s:pub",
                       .o = {.ttl_ms = 20000, .max_wait_ms = 10000, .retry_delay_ms = 5000}};
    pthread_t t;
    pthread_create(&t, NULL, keeper_main, &k);
    await_queued("s:pub", 1);
    tu_sleep_ms(50);
    long long before = scripts_run();
    int64_t released = tu_now_ns();
    ck_assert_int_eq(baton_sem_release(h), BATON_OK);
    pthread_join(t, NULL);
    ck_assert_int_eq(k.rc, BATON_OK);
    ck_assert_int_eq(scripts_run() - before, 1); /* the release, nothing else */
    ck_assert_msg(k.got_ns - released < INT64_C(200000000), "granted %lld ms after the release",
                  (long long)((k.got_ns - released) / 1000000));
    ck_assert_uint_gt(baton_permit_fence(k.p), baton_permit_fence(h));
    /* Its lease runs from its last attempt (~50 ms before the release),
     * and Redis holds it for the full ttl. */
    ck_assert_int_gt(baton_permit_remaining_ms(k.p), 20000 - 1000);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "ZSCORE baton:{s:pub}:sem %s", baton_permit_id(k.p));
    ck_assert_int_gt(tu_redis_int(cmd) - server_ms(), 20000 - 1000);
    ck_assert_int_eq(holders(hc, "s:pub"), 1);
    ck_assert(!baton_permit_lost(k.p));
    ck_assert_int_eq(baton_sem_release(k.p), BATON_OK);
    ck_assert_int_eq(holders(hc, "s:pub"), 0);
    baton_permit_free(warm);
    baton_permit_free(h);
    baton_permit_free(k.p);
    baton_client_free(wc);
    baton_client_free(hc);
}
END_TEST

/* The process that released (and so granted the slot) dies at once: the
 * grant is Redis's, and the waiter keeps its permit. */
START_TEST(granter_process_dies)
{
    int ready[2], go[2];
    ck_assert_int_eq(pipe(ready), 0);
    ck_assert_int_eq(pipe(go), 0);
    pid_t pid = fork(); /* before any client: the child has no threads to lose */
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct baton_client *c = NULL;
        struct baton_permit *p = NULL;
        char b = 0;
        if (baton_client_new(tu_redis_url(), NULL, &c) != BATON_OK ||
            baton_sem_try(c, "s:dies", 1, &(struct baton_sem_opts){.ttl_ms = 20000}, &p) !=
                BATON_OK)
            _exit(2);
        if (write(ready[1], "r", 1) != 1 || read(go[0], &b, 1) != 1)
            _exit(3);
        _exit(baton_sem_release(p) == BATON_OK ? 0 : 4); /* no cleanup: gone */
    }
    char b = 0;
    ck_assert_int_eq(read(ready[0], &b, 1), 1);
    struct baton_client *wc = client();
    struct keeper k = {.c = wc,
                       .name = "s:dies",
                       .o = {.ttl_ms = 20000, .max_wait_ms = 10000, .retry_delay_ms = 5000}};
    pthread_t t;
    pthread_create(&t, NULL, keeper_main, &k);
    await_queued("s:dies", 1);
    ck_assert_int_eq(write(go[1], "g", 1), 1);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the holder's process: %d",
                  status);
    pthread_join(t, NULL);
    ck_assert_int_eq(k.rc, BATON_OK);
    tu_sleep_ms(300);
    ck_assert(!baton_permit_lost(k.p));
    ck_assert_int_eq(holders(wc, "s:dies"), 1);
    ck_assert_int_eq(baton_sem_release(k.p), BATON_OK);
    baton_permit_free(k.p);
    baton_client_free(wc);
    for (int i = 0; i < 2; i++) {
        close(ready[i]);
        close(go[i]);
    }
}
END_TEST

/* A published grant whose fence is not above the one the waiter's last
 * attempt saw was made before that attempt (which would have found it):
 * it is stale, and the waiter goes on waiting for a real one. */
START_TEST(stale_published_grant_refused)
{
    struct baton_client *hc = client(), *wc = client();
    struct baton_permit *h = NULL;
    ck_assert_int_eq(baton_sem_try(hc, "s:stale", 1, NULL, &h), BATON_OK);
    struct keeper k = {.c = wc,
                       .name = "s:stale",
                       .o = {.ttl_ms = 20000, .max_wait_ms = 10000, .retry_delay_ms = 5000}};
    pthread_t t;
    pthread_create(&t, NULL, keeper_main, &k);
    await_queued("s:stale", 1);
    char *member = tu_redis("ZRANGE baton:{s:stale}:sem:q 0 0");
    const char *tok = strrchr(member, '|'); /* "<expiry>|<ttl>|<token>" */
    ck_assert_ptr_nonnull(tok);
    tok++;
    char chan[64], msg[128], fence[32];
    snprintf(chan, sizeof chan, "baton:wake:%.16s", tok);
    snprintf(fence, sizeof fence, "%llu", (unsigned long long)baton_permit_fence(h));
    snprintf(msg, sizeof msg, "%s %s", tok, fence);
    const char *args[2] = {chan, msg};
    struct baton_reply *r = NULL;
    ck_assert_int_eq(baton_client_eval(hc, "return redis.call('publish', ARGV[1], ARGV[2])", 0,
                                       NULL, 2, args, &r),
                     BATON_OK);
    ck_assert_int_eq(r->integer, 1); /* the waiter's client heard it */
    baton_reply_free(r);
    tu_sleep_ms(300);
    ck_assert_int_eq(k.got_ns, 0); /* still waiting */
    int64_t released = tu_now_ns();
    ck_assert_int_eq(baton_sem_release(h), BATON_OK);
    pthread_join(t, NULL);
    ck_assert_int_eq(k.rc, BATON_OK);
    ck_assert_msg(k.got_ns - released < INT64_C(200000000), "granted %lld ms after the release",
                  (long long)((k.got_ns - released) / 1000000));
    ck_assert_uint_gt(baton_permit_fence(k.p), baton_permit_fence(h));
    ck_assert_int_eq(baton_sem_release(k.p), BATON_OK);
    free(member);
    baton_permit_free(h);
    baton_permit_free(k.p);
    baton_client_free(wc);
    baton_client_free(hc);
}
END_TEST

/* With min_replicas a published grant is only a wake-up: the waiter's own
 * attempt must make it durable. Here nothing can (no replica): the waiter
 * is woken at once (its retry timer is 10 s), its attempt's grant is not
 * acknowledged and is given back at once, and, queued, it waits on as a
 * lock's waiter does through a failover, until its maximum wait (3 s)
 * ends with ENOTDURABLE. */
START_TEST(published_grant_needs_durability)
{
    struct baton_client *hc = client(), *wc = NULL;
    struct baton_client_opts co = {
        .connect_timeout_ms = 1000, .command_timeout_ms = 1000, .min_replicas = 1};
    ck_assert_int_eq(baton_client_new(tu_redis_url(), &co, &wc), BATON_OK);
    struct baton_permit *h = NULL;
    ck_assert_int_eq(baton_sem_try(hc, "s:durable", 1, NULL, &h), BATON_OK);
    struct keeper k = {.c = wc,
                       .name = "s:durable",
                       .o = {.ttl_ms = 20000, .max_wait_ms = 3000, .retry_delay_ms = 10000}};
    pthread_t t;
    int64_t started = tu_now_ns();
    pthread_create(&t, NULL, keeper_main, &k);
    await_queued("s:durable", 1);
    tu_sleep_ms(1100); /* its first attempt's WAIT is over */
    int64_t released = tu_now_ns();
    ck_assert_int_eq(baton_sem_release(h), BATON_OK);
    /* The grant went to the waiter, and its woken attempt gave it back */
    while (holders(hc, "s:durable") != 0 && tu_now_ns() - released < INT64_C(1500000000))
        tu_sleep_ms(5);
    ck_assert_int_eq(holders(hc, "s:durable"), 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(k.rc, BATON_ENOTDURABLE);
    ck_assert_ptr_null(k.p);
    ck_assert_msg(k.got_ns - started < INT64_C(4500000000), "gave up %lld ms after it started",
                  (long long)((k.got_ns - started) / 1000000));
    ck_assert_int_eq(holders(hc, "s:durable"), 0);
    baton_permit_free(h);
    baton_client_free(wc);
    baton_client_free(hc);
}
END_TEST

/* Free slots go to queued waiters first: a newcomer gets one only when
 * the free slots outnumber the live waiters. */
START_TEST(waiters_before_newcomers)
{
    struct baton_client *c = client();
    struct baton_permit *h = NULL, *n1 = NULL, *n2 = NULL;
    ck_assert_int_eq(baton_sem_try(c, "s:owed", 3, NULL, &h), BATON_OK);
    long long now = server_ms();
    char cmd[200];
    const char *ghost = "eeeeeeeeeeeeeeee00000000000000000000000000000000";
    snprintf(cmd, sizeof cmd, "ZADD baton:{s:owed}:sem:q 1 %lld|30000|%s", now + 20000, ghost);
    free(tu_redis(cmd));
    /* 2 free slots, 1 live waiter: one is left for a newcomer... */
    ck_assert_int_eq(baton_sem_try(c, "s:owed", 3, NULL, &n1), BATON_OK);
    /* ...but not two: the last free slot is the waiter's. */
    ck_assert_int_eq(baton_sem_try(c, "s:owed", 3, NULL, &n2), BATON_ETAKEN);
    ck_assert_int_eq(holders(c, "s:owed"), 2);
    baton_sem_release(h);
    baton_sem_release(n1);
    baton_permit_free(h);
    baton_permit_free(n1);
    baton_client_free(c);
}
END_TEST

/* A holder whose token is queued as well (a retry whose reply was lost
 * queues a waiter again; its older entry is granted first) is skipped by
 * the handoff: the slot goes to the next waiter, and the holder's lease is
 * left as it was. */
START_TEST(holder_queued_again_is_skipped)
{
    struct baton_client *c = client();
    struct baton_permit *p1 = NULL, *p2 = NULL;
    ck_assert_int_eq(baton_sem_try(c, "s:twice", 2, NULL, &p1), BATON_OK);
    ck_assert_int_eq(baton_sem_try(c, "s:twice", 2, NULL, &p2), BATON_OK);
    char lease_cmd[200], cmd[300];
    snprintf(lease_cmd, sizeof lease_cmd, "ZSCORE baton:{s:twice}:sem %s", baton_permit_id(p1));
    char *lease = tu_redis(lease_cmd);
    long long now = server_ms();
    snprintf(cmd, sizeof cmd, "ZADD baton:{s:twice}:sem:q 1 %lld|30000|%s", now + 20000,
             baton_permit_id(p1));
    free(tu_redis(cmd));
    struct waiter w = {
        .c = c, .name = "s:twice", .limit = 2, .o = {.max_wait_ms = 10000, .retry_delay_ms = 5000}};
    pthread_t th;
    pthread_create(&th, NULL, waiter_main, &w);
    await_queued("s:twice", 2);
    release_wakes(p2, &w, th);
    char *after = tu_redis(lease_cmd);
    ck_assert_str_eq(after, lease);
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{s:twice}:sem:q"), 0);
    free(lease);
    free(after);
    ck_assert_int_eq(baton_sem_release(p1), BATON_OK);
    baton_permit_free(p1);
    baton_permit_free(p2);
    baton_client_free(c);
}
END_TEST

static void count_lost(struct baton_permit *p, void *arg)
{
    (void)p;
    atomic_fetch_add((atomic_int *)arg, 1);
}

START_TEST(auto_renew_and_extend)
{
    struct baton_client *c = client();
    struct baton_permit *p = NULL, *x = NULL;
    atomic_int lost = 0;
    struct baton_sem_opts o = {
        .ttl_ms = 300, .auto_renew = true, .on_lost = count_lost, .on_lost_arg = &lost};
    ck_assert_int_eq(baton_sem_try(c, "s:renew", 1, &o, &p), BATON_OK);
    tu_sleep_ms(1200); /* four leases */
    ck_assert(!baton_permit_lost(p));
    ck_assert_int_eq(atomic_load(&lost), 0);
    ck_assert_int_eq(baton_sem_try(c, "s:renew", 1, NULL, &x), BATON_ETAKEN);
    int64_t before = tu_now_ns();
    ck_assert_int_eq(baton_sem_extend(p, 20000), BATON_OK);
    int64_t after = tu_now_ns();
    ck_assert_int_ge(baton_permit_remaining_ms(p), 19000);
    /* The deadline (monotonic clock) is measured from the extension's send
     * time, less the clock-drift margin, like a lock's. */
    int64_t dl = baton_permit_deadline_ns(p);
    ck_assert_int_ge(dl, before + (20000 - 300) * INT64_C(1000000));
    ck_assert_int_le(dl, after + 20000 * INT64_C(1000000));
    ck_assert_int_eq(baton_permit_deadline_ns(NULL), 0);
    ck_assert_int_eq(baton_sem_release(p), BATON_OK);
    tu_sleep_ms(200);
    ck_assert_int_eq(holders(c, "s:renew"), 0); /* renewal stopped before the release */
    baton_permit_free(p);
    /* Manual renewal switched on later. */
    ck_assert_int_eq(baton_sem_try(c, "s:renew", 1, &(struct baton_sem_opts){.ttl_ms = 300}, &p),
                     BATON_OK);
    ck_assert_int_eq(baton_sem_auto_renew(p, 0), BATON_OK);
    tu_sleep_ms(700);
    ck_assert(!baton_permit_lost(p));
    ck_assert_int_eq(baton_sem_release(p), BATON_OK);
    baton_permit_free(p);
    baton_client_free(c);
}
END_TEST

/* The permit removed behind the owner's back: renewal reports it, once. */
START_TEST(loss_reported)
{
    struct baton_client *c = client();
    struct baton_permit *p = NULL;
    atomic_int lost = 0;
    struct baton_sem_opts o = {
        .ttl_ms = 600, .auto_renew = true, .on_lost = count_lost, .on_lost_arg = &lost};
    ck_assert_int_eq(baton_sem_try(c, "s:stolen", 2, &o, &p), BATON_OK);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "ZREM baton:{s:stolen}:sem %s", baton_permit_id(p));
    free(tu_redis(cmd));
    int64_t t0 = tu_now_ns();
    while (atomic_load(&lost) == 0 && tu_now_ns() - t0 < INT64_C(2000000000))
        tu_sleep_ms(5);
    ck_assert_int_eq(atomic_load(&lost), 1);
    ck_assert_int_lt(tu_now_ns() - t0, INT64_C(300000000)); /* within one renew period */
    ck_assert(baton_permit_lost(p));
    ck_assert_str_eq(baton_permit_errstr(p), "lock semaphore s:stolen was lost: renewal found it "
                                             "no longer held by this owner");
    ck_assert_int_eq(baton_sem_release(p), BATON_ELOST);
    ck_assert_int_eq(atomic_load(&lost), 1);
    baton_permit_free(p);
    baton_client_free(c);
}
END_TEST

/* Each acquire checks its own limit against the live holders. */
START_TEST(different_limits)
{
    struct baton_client *c = client();
    struct baton_permit *p[4] = {NULL};
    ck_assert_int_eq(baton_sem_try(c, "s:mixed", 2, NULL, &p[0]), BATON_OK);
    ck_assert_int_eq(baton_sem_try(c, "s:mixed", 2, NULL, &p[1]), BATON_OK);
    ck_assert_int_eq(baton_sem_try(c, "s:mixed", 2, NULL, &p[2]), BATON_ETAKEN);
    ck_assert_int_eq(baton_sem_try(c, "s:mixed", 3, NULL, &p[2]), BATON_OK);
    ck_assert_int_eq(baton_sem_try(c, "s:mixed", 3, NULL, &p[3]), BATON_ETAKEN);
    ck_assert_int_eq(baton_sem_try(c, "s:mixed", 1, NULL, &p[3]), BATON_ETAKEN);
    ck_assert_int_eq(holders(c, "s:mixed"), 3);
    for (int i = 0; i < 3; i++) {
        baton_sem_release(p[i]);
        baton_permit_free(p[i]);
    }
    baton_client_free(c);
}
END_TEST

/* Scripts are called by SHA; a flushed script cache is reloaded. */
START_TEST(noscript_fallback)
{
    struct baton_client *c = client();
    struct baton_permit *p = NULL;
    free(tu_redis("SCRIPT FLUSH"));
    ck_assert_int_eq(baton_sem_try(c, "s:noscript", 2, NULL, &p), BATON_OK);
    free(tu_redis("SCRIPT FLUSH"));
    ck_assert_int_eq(baton_sem_extend(p, 0), BATON_OK);
    free(tu_redis("SCRIPT FLUSH"));
    ck_assert_int_eq(baton_sem_release(p), BATON_OK);
    baton_permit_free(p);
    baton_client_free(c);
}
END_TEST

struct worker {
    struct baton_client *c;
    atomic_int *inside, *max_inside;
    int ok, failed;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct baton_sem_opts o = {.ttl_ms = 5000, .max_wait_ms = 20000};
    for (int i = 0; i < 25; i++) {
        struct baton_permit *p = NULL;
        if (baton_sem_acquire(w->c, "s:threads", 3, &o, &p) != BATON_OK) {
            w->failed++;
            continue;
        }
        int now = atomic_fetch_add(w->inside, 1) + 1;
        int seen = atomic_load(w->max_inside);
        while (now > seen && !atomic_compare_exchange_weak(w->max_inside, &seen, now))
            ;
        usleep(2000);
        atomic_fetch_sub(w->inside, 1);
        if (baton_sem_release(p) == BATON_OK)
            w->ok++;
        else
            w->failed++;
        baton_permit_free(p);
    }
    return NULL;
}

/* Twelve threads sharing one client (so one subscriber): never more than 3
 * inside, and 3 do get in together. */
START_TEST(threads_respect_the_limit)
{
    enum { T = 12 };
    struct baton_client *c = client();
    atomic_int inside = 0, max_inside = 0;
    struct worker w[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        w[i] = (struct worker){.c = c, .inside = &inside, .max_inside = &max_inside};
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(w[i].failed, 0);
        ck_assert_int_eq(w[i].ok, 25);
    }
    ck_assert_int_eq(atomic_load(&max_inside), 3);
    ck_assert_int_eq(holders(c, "s:threads"), 0);
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{s:threads}:sem:q"), 0);
    baton_client_free(c);
}
END_TEST

/* max_waiters_per_key applies per semaphore. */
START_TEST(queue_full)
{
    struct baton_client *c = NULL;
    struct baton_client_opts co = {.max_waiters_per_key = 1};
    ck_assert_int_eq(baton_client_new(tu_redis_url(), &co, &c), BATON_OK);
    struct baton_permit *h = NULL, *x = NULL;
    ck_assert_int_eq(baton_sem_try(c, "s:full", 1, NULL, &h), BATON_OK);
    struct waiter w = {.c = c, .name = "s:full", .limit = 1, .o = {.max_wait_ms = 3000}};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &w);
    tu_sleep_ms(200);
    ck_assert_int_eq(baton_sem_acquire(c, "s:full", 1, NULL, &x), BATON_EQUEUEFULL);
    baton_sem_release(h);
    pthread_join(t, NULL);
    ck_assert_int_eq(w.rc, BATON_OK);
    baton_permit_free(h);
    baton_client_free(c);
}
END_TEST

START_TEST(bad_arguments)
{
    struct baton_client *c = client();
    struct baton_permit *p = NULL;
    ck_assert_int_eq(baton_sem_try(c, "s:bad", 0, NULL, &p), BATON_EINVAL);
    ck_assert_int_eq(baton_sem_try(c, "s:bad", 1000001, NULL, &p), BATON_EINVAL);
    ck_assert_int_eq(baton_sem_try(c, "", 1, NULL, &p), BATON_EINVAL);
    ck_assert_int_eq(baton_sem_try(c, NULL, 1, NULL, &p), BATON_EINVAL);
    ck_assert_int_eq(baton_sem_try(NULL, "s:bad", 1, NULL, &p), BATON_EINVAL);
    ck_assert_int_eq(baton_sem_try(c, "s:bad", 1, NULL, NULL), BATON_EINVAL);
    ck_assert_int_eq(baton_sem_acquire(c, "s:bad", 1, &(struct baton_sem_opts){.ttl_ms = -1}, &p),
                     BATON_EINVAL);
    ck_assert_int_eq(baton_sem_release(NULL), BATON_EINVAL);
    ck_assert_int_eq(baton_sem_holders(c, "", NULL), BATON_EINVAL);
    ck_assert(!baton_permit_lost(NULL));
    ck_assert_str_eq(baton_permit_id(NULL), "");
    baton_permit_free(NULL);
    baton_client_free(c);
}
END_TEST

/* ---- the asynchronous calls ---- */

/* 50 waiters, one client, one thread (the loop's): each cycles
 * acquire_async -> release_async from its callbacks on a semaphore of 5.
 * Every grant is made inside a release script and handed over in the turn
 * that read it: about two scripts per cycle, no retries; the limit holds
 * and every fence is new. */
enum { ASYNC_WAITERS = 50, ASYNC_CYCLES = 40, ASYNC_LIMIT = 5 };

struct cycles {
    struct baton_client *c;
    atomic_int inside, max_inside, done, errors, off_loop;
    atomic_int nfences;
    uint64_t fences[ASYNC_WAITERS * ASYNC_CYCLES];
};

struct cycler {
    struct cycles *all;
    int left;
};

static void cycle_granted(struct baton_permit *p, int rc, const char *why, void *arg);

static void cycle_next(struct cycler *w)
{
    struct cycles *all = w->all;
    struct baton_sem_opts o = {.max_wait_ms = 20000};
    if (w->left-- == 0) {
        atomic_fetch_add(&all->done, 1);
        return;
    }
    if (baton_sem_acquire_async(all->c, "s:async", ASYNC_LIMIT, &o, cycle_granted, w) != BATON_OK) {
        atomic_fetch_add(&all->errors, 1);
        atomic_fetch_add(&all->done, 1);
    }
}

static void cycle_released(struct baton_permit *p, int rc, const char *why, void *arg)
{
    struct cycler *w = arg;
    (void)why;
    if (rc != BATON_OK)
        atomic_fetch_add(&w->all->errors, 1);
    baton_permit_free(p);
    cycle_next(w);
}

static void cycle_granted(struct baton_permit *p, int rc, const char *why, void *arg)
{
    struct cycler *w = arg;
    struct cycles *all = w->all;
    if (!baton_client_in_loop(all->c))
        atomic_fetch_add(&all->off_loop, 1);
    if (rc != BATON_OK) {
        fprintf(stderr, "acquire_async: %s: %s\n", baton_errname(rc), why);
        atomic_fetch_add(&all->errors, 1);
        atomic_fetch_add(&all->done, 1);
        return;
    }
    int in = atomic_fetch_add(&all->inside, 1) + 1;
    int max = atomic_load(&all->max_inside);
    while (in > max && !atomic_compare_exchange_weak(&all->max_inside, &max, in))
        ;
    all->fences[atomic_fetch_add(&all->nfences, 1)] = baton_permit_fence(p);
    atomic_fetch_sub(&all->inside, 1);
    if (baton_sem_release_async(p, cycle_released, w) != BATON_OK) {
        atomic_fetch_add(&all->errors, 1);
        baton_permit_free(p);
        atomic_fetch_add(&all->done, 1);
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

START_TEST(async_cycles_on_one_thread)
{
    static struct cycles all;
    struct cycler w[ASYNC_WAITERS];
    memset(&all, 0, sizeof all);
    all.c = client();
    long long scripts0 = scripts_run();
    for (int i = 0; i < ASYNC_WAITERS; i++) {
        w[i] = (struct cycler){.all = &all, .left = ASYNC_CYCLES};
        cycle_next(&w[i]);
    }
    int64_t until = tu_now_ns() + INT64_C(30000000000);
    while (atomic_load(&all.done) < ASYNC_WAITERS && tu_now_ns() < until)
        tu_sleep_ms(5);
    ck_assert_int_eq(atomic_load(&all.done), ASYNC_WAITERS);
    ck_assert_int_eq(atomic_load(&all.errors), 0);
    ck_assert_int_eq(atomic_load(&all.off_loop), 0);
    int n = atomic_load(&all.nfences);
    ck_assert_int_eq(n, ASYNC_WAITERS * ASYNC_CYCLES);
    qsort(all.fences, (size_t)n, sizeof all.fences[0], cmp_u64);
    for (int i = 1; i < n; i++)
        ck_assert_msg(all.fences[i] > all.fences[i - 1], "fence %llu granted twice",
                      (unsigned long long)all.fences[i]);
    ck_assert_int_eq(holders(all.c, "s:async"), 0);
    ck_assert_int_eq(tu_redis_int("ZCARD baton:{s:async}:sem:q"), 0);
    /* acquire + release per cycle, and the few attempts of waiters
     * that joined while slots were free */
    long long scripts = scripts_run() - scripts0;
    ck_assert_msg(scripts <= (long long)n * 5 / 2, "%lld scripts for %d cycles", scripts, n);
    baton_client_free(all.c);
}
END_TEST

/* One operation's result, written by its callback. */
struct pres {
    atomic_int calls;
    int rc;
    struct baton_permit *p;
    char why[256];
};

static void precord(struct baton_permit *p, int rc, const char *why, void *arg)
{
    struct pres *r = arg;
    r->rc = rc;
    r->p = p;
    snprintf(r->why, sizeof r->why, "%s", why);
    atomic_fetch_add(&r->calls, 1);
}

static void pwait(struct pres *r)
{
    int64_t until = tu_now_ns() + INT64_C(5000000000);
    while (atomic_load(&r->calls) == 0 && tu_now_ns() < until)
        tu_sleep_ms(1);
    ck_assert_int_eq(atomic_load(&r->calls), 1);
}

START_TEST(async_refusals_and_arguments)
{
    struct baton_client *c = client();
    struct baton_permit *h = NULL;
    struct pres t = {0}, a = {0}, rel = {0}, again = {0};
    ck_assert_int_eq(baton_sem_try(c, "s:arefuse", 1, NULL, &h), BATON_OK);

    ck_assert_int_eq(baton_sem_try_async(c, "s:arefuse", 1, NULL, precord, &t), BATON_OK);
    pwait(&t);
    ck_assert_int_eq(t.rc, BATON_ETAKEN);
    ck_assert_ptr_null(t.p);

    int64_t t0 = tu_now_ns();
    struct baton_sem_opts o = {.max_wait_ms = 200};
    ck_assert_int_eq(baton_sem_acquire_async(c, "s:arefuse", 1, &o, precord, &a), BATON_OK);
    pwait(&a);
    ck_assert_int_eq(a.rc, BATON_ETIMEDOUT);
    ck_assert_ptr_null(a.p);
    ck_assert_int_ge(tu_now_ns() - t0, INT64_C(200000000));
    ck_assert_int_eq(tu_redis_int("ZCARD baton:{s:arefuse}:sem:q"), 0); /* left the queue */

    ck_assert_int_eq(baton_sem_release_async(h, precord, &rel), BATON_OK);
    pwait(&rel);
    ck_assert_int_eq(rel.rc, BATON_OK);
    ck_assert_ptr_eq(rel.p, h);
    ck_assert_int_eq(holders(c, "s:arefuse"), 0);
    ck_assert_int_eq(baton_sem_release_async(h, precord, &again), BATON_EINVAL);

    ck_assert_int_eq(baton_sem_try_async(c, "s:arefuse", 1, NULL, NULL, NULL), BATON_EINVAL);
    ck_assert_int_eq(baton_sem_acquire_async(c, "s:arefuse", 0, NULL, precord, &again),
                     BATON_EINVAL);
    ck_assert_int_eq(baton_sem_acquire_async(c, "", 1, NULL, precord, &again), BATON_EINVAL);
    ck_assert_int_eq(baton_sem_acquire_async(NULL, "s:x", 1, NULL, precord, &again), BATON_EINVAL);
    ck_assert_int_eq(baton_sem_release_async(NULL, precord, &again), BATON_EINVAL);
    tu_sleep_ms(50);
    ck_assert_int_eq(atomic_load(&again.calls), 0);
    baton_permit_free(h);
    baton_client_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("redis_sem");
    TCase *tc = tcase_create("permits");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, limit_and_fences);
    tcase_add_test(tc, server_time_and_reclaim);
    tcase_add_test(tc, release_by_id);
    tcase_add_test(tc, different_limits);
    tcase_add_test(tc, noscript_fallback);
    tcase_add_test(tc, bad_arguments);
    suite_add_tcase(s, tc);

    TCase *tw = tcase_create("waiting");
    tcase_set_timeout(tw, 60);
    tcase_add_test(tw, wake_on_release);
    tcase_add_test(tw, wake_at_lease_end);
    tcase_add_test(tw, timeout_leaves_the_queue);
    tcase_add_test(tw, fifo_order);
    tcase_add_test(tw, dead_waiter_reservation_expires);
    tcase_add_test(tw, grant_published_to_another_client);
    tcase_add_test(tw, granter_process_dies);
    tcase_add_test(tw, stale_published_grant_refused);
    tcase_add_test(tw, published_grant_needs_durability);
    tcase_add_test(tw, waiters_before_newcomers);
    tcase_add_test(tw, holder_queued_again_is_skipped);
    tcase_add_test(tw, queue_full);
    tcase_add_test(tw, threads_respect_the_limit);
    suite_add_tcase(s, tw);

    TCase *ta = tcase_create("asynchronous");
    tcase_set_timeout(ta, 60);
    tcase_add_test(ta, async_cycles_on_one_thread);
    tcase_add_test(ta, async_refusals_and_arguments);
    suite_add_tcase(s, ta);

    TCase *tr = tcase_create("leases");
    tcase_set_timeout(tr, 60);
    tcase_add_test(tr, auto_renew_and_extend);
    tcase_add_test(tr, loss_reported);
    suite_add_tcase(s, tr);
    return s;
}

int main(void) { return tu_run(suite()); }
