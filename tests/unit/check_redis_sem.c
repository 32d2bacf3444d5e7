/* check_redis_sem.c -- semaphores against a real redis-server (started by
 * tests/lib/with-redis.sh): the limit, permits and fences, reclaiming
 * expired permits by server time, release by id, waiting (wake on release,
 * at a lease's end, FIFO, timeouts, a dead waiter's reservation), leases
 * (extend, auto-renewal, loss), different limits, and threads. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton.h"
#include "testutil.h"

static struct baton_client *client(void) { return tu_client(500); }

static int holders(struct baton_client *c, const char *name)
{
    int n = -1;
    ck_assert_int_eq(baton_sem_holders(c, name, &n), BATON_OK);
    return n;
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
    char *t = tu_redis("TIME");
    long long sec = 0, usec = 0;
    ck_assert_int_eq(sscanf(t, "%lld %lld", &sec, &usec), 2);
    free(t);
    long long now = sec * 1000 + usec / 1000;
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
    int64_t released = tu_now_ns();
    ck_assert_int_eq(baton_sem_release(h2), BATON_OK);
    pthread_join(t, NULL);
    ck_assert_int_eq(w.rc, BATON_OK);
    ck_assert_msg(w.got_ns - released < INT64_C(200000000), "woken after %lld ms",
                  (long long)((w.got_ns - released) / 1000000));
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
    ck_assert_int_eq(tu_redis_int("ZCARD baton:{s:to}:sem:qx"), 0);
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
    char *t = tu_redis("TIME");
    long long sec = 0, usec = 0;
    ck_assert_int_eq(sscanf(t, "%lld %lld", &sec, &usec), 2);
    free(t);
    char cmd[200];
    const char *ghost = "ffffffffffffffff00000000000000000000000000000000";
    snprintf(cmd, sizeof cmd, "ZADD baton:{s:dead}:sem:q 1 30000|%s", ghost);
    free(tu_redis(cmd));
    snprintf(cmd, sizeof cmd, "ZADD baton:{s:dead}:sem:qx %lld 30000|%s",
             sec * 1000 + usec / 1000 + 700, ghost);
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

/* Free slots go to queued waiters first: a newcomer gets one only when
 * the free slots outnumber the live waiters. */
START_TEST(waiters_before_newcomers)
{
    struct baton_client *c = client();
    struct baton_permit *h = NULL, *n1 = NULL, *n2 = NULL;
    ck_assert_int_eq(baton_sem_try(c, "s:owed", 3, NULL, &h), BATON_OK);
    char *t = tu_redis("TIME");
    long long sec = 0, usec = 0;
    ck_assert_int_eq(sscanf(t, "%lld %lld", &sec, &usec), 2);
    free(t);
    char cmd[200];
    const char *ghost = "eeeeeeeeeeeeeeee00000000000000000000000000000000";
    snprintf(cmd, sizeof cmd, "ZADD baton:{s:owed}:sem:q 1 30000|%s", ghost);
    free(tu_redis(cmd));
    snprintf(cmd, sizeof cmd, "ZADD baton:{s:owed}:sem:qx %lld 30000|%s",
             sec * 1000 + usec / 1000 + 20000, ghost);
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
    ck_assert_int_eq(baton_sem_extend(p, 20000), BATON_OK);
    ck_assert_int_ge(baton_permit_remaining_ms(p), 19000);
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
    tcase_add_test(tw, waiters_before_newcomers);
    tcase_add_test(tw, queue_full);
    tcase_add_test(tw, threads_respect_the_limit);
    suite_add_tcase(s, tw);

    TCase *tr = tcase_create("leases");
    tcase_set_timeout(tr, 60);
    tcase_add_test(tr, auto_renew_and_extend);
    tcase_add_test(tr, loss_reported);
    suite_add_tcase(s, tr);
    return s;
}

int main(void) { return tu_run(suite()); }
