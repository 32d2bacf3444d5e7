/* check_redis_async.c -- the asynchronous lock API against a real
 * redis-server (started by tests/lib/with-redis.sh, or by a test itself
 * when it must restart it): results and ownership, thousands of
 * operations in flight from one thread, waiting and wake-ups, flood
 * control, extend, the loop's rules (no blocking call in a callback), and
 * the failure paths: Redis frozen (SIGSTOP), the connection killed, Redis
 * restarted, the client freed with operations in flight. In every one,
 * each operation gets exactly one result. */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baton.h"
#include "testutil.h"

extern char **environ;

static struct baton_client *client(void)
{
    return tu_client(500);
}

static void redis_signal(int sig)
{
    const char *p = getenv("BATON_TEST_REDIS_PID");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(kill((pid_t)atoi(p), sig), 0);
}

/* One operation's result, written by its callback. */
struct res {
    struct baton_client *c;
    atomic_int calls; /* must end at exactly 1 */
    int rc;
    struct baton_lock *lk;
    char why[256];
    bool on_loop;
    int64_t at_ns;
};

static void record(struct baton_lock *lk, int rc, const char *why, void *arg)
{
    struct res *r = arg;
    r->rc = rc;
    r->lk = lk;
    snprintf(r->why, sizeof r->why, "%s", why);
    r->on_loop = baton_client_in_loop(r->c);
    r->at_ns = tu_now_ns();
    atomic_fetch_add(&r->calls, 1);
}

/* Waits until n results came (or ms passed). Returns how many came. */
static int wait_all(struct res *r, int n, int64_t ms)
{
    int64_t until = tu_now_ns() + ms * 1000000;
    for (;;) {
        int done = 0;
        for (int i = 0; i < n; i++)
            done += atomic_load(&r[i].calls) > 0;
        if (done == n || tu_now_ns() >= until)
            return done;
        tu_sleep_ms(1);
    }
}

START_TEST(try_release_extend)
{
    struct baton_client *c = client();
    struct res a = {.c = c}, b = {.c = c}, e = {.c = c}, rel = {.c = c};
    struct baton_lock_opts o = {.ttl_ms = 5000};
    ck_assert_int_eq(baton_lock_try_async(c, "a:one", &o, record, &a), BATON_OK);
    ck_assert_int_eq(wait_all(&a, 1, 2000), 1);
    ck_assert_int_eq(a.rc, BATON_OK);
    ck_assert_str_eq(a.why, "");
    ck_assert(a.on_loop); /* callbacks run on the client's loop thread */
    ck_assert(!baton_client_in_loop(c));
    ck_assert_ptr_nonnull(a.lk);
    ck_assert_uint_gt(baton_lock_fence(a.lk), 0);
    char *v = tu_redis("GET baton:{a:one}");
    ck_assert_str_eq(v, baton_lock_token(a.lk));
    free(v);
    /* Taken: a result, not a failure; no lock object. */
    ck_assert_int_eq(baton_lock_try_async(c, "a:one", &o, record, &b), BATON_OK);
    ck_assert_int_eq(wait_all(&b, 1, 2000), 1);
    ck_assert_int_eq(b.rc, BATON_ETAKEN);
    ck_assert_ptr_null(b.lk);
    /* Extend moves the deadline and the TTL in Redis. */
    int64_t before = baton_lock_deadline_ns(a.lk);
    tu_sleep_ms(20);
    ck_assert_int_eq(baton_lock_extend_async(a.lk, 60000, record, &e), BATON_OK);
    ck_assert_int_eq(wait_all(&e, 1, 2000), 1);
    ck_assert_int_eq(e.rc, BATON_OK);
    ck_assert_ptr_eq(e.lk, a.lk);
    ck_assert_int_gt(baton_lock_deadline_ns(a.lk), before + INT64_C(50000000000));
    ck_assert_int_gt(tu_redis_int("PTTL baton:{a:one}"), 50000);
    ck_assert_int_eq(baton_lock_release_async(a.lk, record, &rel), BATON_OK);
    ck_assert_int_eq(wait_all(&rel, 1, 2000), 1);
    ck_assert_int_eq(rel.rc, BATON_OK);
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{a:one}"), 0);
    /* After a release: EINVAL at once, no callback. */
    ck_assert_int_eq(baton_lock_release_async(a.lk, record, &rel), BATON_EINVAL);
    ck_assert_int_eq(baton_lock_extend_async(a.lk, 0, record, &rel), BATON_EINVAL);
    ck_assert_int_eq(atomic_load(&rel.calls), 1);
    baton_lock_free(a.lk);
    baton_client_free(c);
}
END_TEST

START_TEST(extend_and_release_find_it_lost)
{
    struct baton_client *c = client();
    struct res a = {.c = c}, e = {.c = c}, rel = {.c = c};
    ck_assert_int_eq(baton_lock_try_async(c, "a:lost", NULL, record, &a), BATON_OK);
    ck_assert_int_eq(wait_all(&a, 1, 2000), 1);
    ck_assert_int_eq(a.rc, BATON_OK);
    free(tu_redis("SET baton:{a:lost} someone-else"));
    ck_assert_int_eq(baton_lock_extend_async(a.lk, 0, record, &e), BATON_OK);
    ck_assert_int_eq(wait_all(&e, 1, 2000), 1);
    ck_assert_int_eq(e.rc, BATON_ELOST);
    ck_assert_ptr_nonnull(strstr(e.why, "no longer held"));
    ck_assert(baton_lock_lost(a.lk));
    ck_assert_int_eq(baton_lock_release_async(a.lk, record, &rel), BATON_OK);
    ck_assert_int_eq(wait_all(&rel, 1, 2000), 1);
    ck_assert_int_eq(rel.rc, BATON_ELOST);
    /* Not released by a non-owner. */
    char *v = tu_redis("GET baton:{a:lost}");
    ck_assert_str_eq(v, "someone-else");
    free(v);
    baton_lock_free(a.lk);
    baton_client_free(c);
}
END_TEST

/* ---- one thread, thousands in flight ---- */

enum { MANY = 3000 };

struct many {
    struct baton_client *c;
    struct res r[MANY];
    struct res rel[MANY];
};

START_TEST(thousands_in_flight)
{
    struct baton_client *c = tu_client(5000);
    struct many *m = calloc(1, sizeof *m);
    char key[32];
    for (int i = 0; i < MANY; i++) {
        m->r[i].c = m->rel[i].c = c;
        snprintf(key, sizeof key, "a:many:%d", i);
        ck_assert_int_eq(baton_lock_try_async(c, key, NULL, record, &m->r[i]), BATON_OK);
    }
    ck_assert_int_eq(wait_all(m->r, MANY, 10000), MANY);
    for (int i = 0; i < MANY; i++) {
        ck_assert_int_eq(m->r[i].rc, BATON_OK);
        ck_assert_int_eq(baton_lock_release_async(m->r[i].lk, record, &m->rel[i]), BATON_OK);
    }
    ck_assert_int_eq(wait_all(m->rel, MANY, 10000), MANY);
    tu_sleep_ms(50); /* a second callback would show here */
    for (int i = 0; i < MANY; i++) {
        ck_assert_int_eq(atomic_load(&m->r[i].calls), 1);
        ck_assert_int_eq(atomic_load(&m->rel[i].calls), 1);
        ck_assert_int_eq(m->rel[i].rc, BATON_OK);
        baton_lock_free(m->r[i].lk);
    }
    ck_assert_int_eq(
        tu_redis_int("EXISTS baton:{a:many:0} baton:{a:many:1500} baton:{a:many:2999}"), 0);
    free(m);
    baton_client_free(c);
}
END_TEST

/* The calls on one lock keep their order, whichever of the client's
 * pipes they take: a try sent right behind the release of the same key,
 * without waiting for it, finds the key free. */
START_TEST(calls_on_one_lock_keep_their_order)
{
    enum { N = 64 };
    struct baton_client *c = client();
    struct res rel[N], again[N];
    struct baton_lock *lk[N];
    char key[32];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "a:order:%d", i);
        ck_assert_int_eq(baton_lock_try(c, key, NULL, &lk[i]), BATON_OK);
    }
    for (int i = 0; i < N; i++) {
        rel[i] = (struct res){.c = c};
        again[i] = (struct res){.c = c};
        snprintf(key, sizeof key, "a:order:%d", i);
        ck_assert_int_eq(baton_lock_release_async(lk[i], record, &rel[i]), BATON_OK);
        ck_assert_int_eq(baton_lock_try_async(c, key, NULL, record, &again[i]), BATON_OK);
    }
    ck_assert_int_eq(wait_all(rel, N, 5000), N);
    ck_assert_int_eq(wait_all(again, N, 5000), N);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(rel[i].rc, BATON_OK);
        ck_assert_msg(again[i].rc == BATON_OK, "key %d: the try overtook the release: %s", i,
                      baton_strerror(again[i].rc));
        ck_assert_int_lt(rel[i].at_ns, again[i].at_ns + 1);
        baton_lock_free(lk[i]);
        baton_lock_free(again[i].lk);
    }
    baton_client_free(c);
}
END_TEST

/* Chains started from the callbacks themselves: each cycle's next
 * operation is started on the loop thread. */
struct chain {
    struct baton_client *c;
    char key[32];
    int left;
    atomic_int done;
    int errors;
    uint64_t last_fence;
};

static void chain_step(struct chain *ch);

static void chain_released(struct baton_lock *lk, int rc, const char *why, void *arg)
{
    struct chain *ch = arg;
    (void)why;
    if (rc != BATON_OK)
        ch->errors++;
    baton_lock_free(lk);
    chain_step(ch);
}

static void chain_taken(struct baton_lock *lk, int rc, const char *why, void *arg)
{
    struct chain *ch = arg;
    (void)why;
    if (rc != BATON_OK) {
        ch->errors++;
        atomic_store(&ch->done, 1);
        return;
    }
    if (baton_lock_fence(lk) <= ch->last_fence)
        ch->errors++;
    ch->last_fence = baton_lock_fence(lk);
    /* A blocking call here would wait for this very thread: refused. */
    struct baton_lock *other = NULL;
    if (baton_lock_try(ch->c, "a:never", NULL, &other) != BATON_EINVAL)
        ch->errors++;
    if (baton_lock_acquire(ch->c, "a:never", NULL, &other) != BATON_EINVAL || other != NULL)
        ch->errors++;
    if (baton_lock_release_async(lk, chain_released, ch) != BATON_OK) {
        ch->errors++;
        atomic_store(&ch->done, 1);
    }
}

static void chain_step(struct chain *ch)
{
    if (ch->left-- == 0 || baton_lock_try_async(ch->c, ch->key, NULL, chain_taken, ch) != BATON_OK)
        atomic_store(&ch->done, 1);
}

START_TEST(chains_from_callbacks)
{
    enum { N = 50 };
    struct baton_client *c = client();
    struct chain ch[N];
    for (int i = 0; i < N; i++) {
        ch[i] = (struct chain){.c = c, .left = 40};
        snprintf(ch[i].key, sizeof ch[i].key, "a:chain:%d", i);
        chain_step(&ch[i]);
    }
    int64_t until = tu_now_ns() + INT64_C(20000000000);
    for (int i = 0; i < N; i++) {
        while (atomic_load(&ch[i].done) == 0 && tu_now_ns() < until)
            tu_sleep_ms(1);
        ck_assert_int_eq(atomic_load(&ch[i].done), 1);
        ck_assert_int_eq(ch[i].errors, 0);
        ck_assert_int_eq(ch[i].left, -1);
    }
    baton_client_free(c);
}
END_TEST

/* ---- waiting ---- */

/* The loop's own path through a flushed script cache (EVAL runs it) and
 * a master demoted to replica (READONLY: once more on a new connection,
 * then Redis's words; a master again, the next call succeeds). */
START_TEST(noscript_and_readonly_on_the_loop)
{
    struct baton_client *c = client();
    struct res a = {.c = c}, b = {.c = c}, d = {.c = c}, rel = {.c = c};
    char cmd[64];
    free(tu_redis("SCRIPT FLUSH"));
    ck_assert_int_eq(baton_lock_try_async(c, "a:ro", NULL, record, &a), BATON_OK);
    ck_assert_int_eq(wait_all(&a, 1, 2000), 1);
    ck_assert_int_eq(a.rc, BATON_OK);
    ck_assert_int_eq(baton_lock_release_async(a.lk, record, &rel), BATON_OK);
    ck_assert_int_eq(wait_all(&rel, 1, 2000), 1);
    ck_assert_int_eq(rel.rc, BATON_OK);
    baton_lock_free(a.lk);
    snprintf(cmd, sizeof cmd, "REPLICAOF 127.0.0.1 %d", tu_dead_port());
    free(tu_redis(cmd));
    ck_assert_int_eq(baton_lock_try_async(c, "a:ro", NULL, record, &b), BATON_OK);
    ck_assert_int_eq(wait_all(&b, 1, 2000), 1);
    free(tu_redis("REPLICAOF NO ONE"));
    ck_assert_int_eq(b.rc, BATON_EREDIS);
    ck_assert_msg(strstr(b.why, "READONLY") != NULL, "%s", b.why);
    ck_assert_int_eq(baton_lock_try_async(c, "a:ro", NULL, record, &d), BATON_OK);
    ck_assert_int_eq(wait_all(&d, 1, 2000), 1);
    ck_assert_int_eq(d.rc, BATON_OK);
    baton_lock_free(d.lk);
    baton_client_free(c);
}
END_TEST

START_TEST(acquire_woken_on_release)
{
    struct baton_client *c = client();
    struct baton_lock *h = NULL;
    struct res w = {.c = c};
    ck_assert_int_eq(baton_lock_try(c, "a:wait", NULL, &h), BATON_OK);
    /* A retry delay far longer than the test: only the wake-up can grant. */
    struct baton_lock_opts o = {.max_wait_ms = 5000, .retry_delay_ms = 4000};
    ck_assert_int_eq(baton_lock_acquire_async(c, "a:wait", &o, record, &w), BATON_OK);
    tu_sleep_ms(150);
    ck_assert_int_eq(atomic_load(&w.calls), 0);
    int64_t t0 = tu_now_ns();
    ck_assert_int_eq(baton_lock_release(h), BATON_OK);
    ck_assert_int_eq(wait_all(&w, 1, 3000), 1);
    ck_assert_int_eq(w.rc, BATON_OK);
    ck_assert_msg(w.at_ns - t0 < INT64_C(300000000), "granted %lld ms after the release",
                  (long long)((w.at_ns - t0) / 1000000));
    ck_assert_uint_gt(baton_lock_fence(w.lk), baton_lock_fence(h));
    struct baton_stats st;
    ck_assert_int_eq(baton_stats_get(c, "a", &st), BATON_OK);
    ck_assert_uint_ge(st.contention, 1);
    ck_assert_int_eq(baton_lock_release(w.lk), BATON_OK);
    baton_lock_free(w.lk);
    baton_lock_free(h);
    baton_client_free(c);
}
END_TEST

/* A release gives the lock to the first waiter inside the script: the
 * lock holds the waiter's token with the waiter's own lease, the queue is
 * empty, and the waiter needed no request of its own (its fence is the
 * holder's + 1 or more, its deadline within its ttl). A waiter that left
 * no lease (an older baton) gets a reservation instead. */
START_TEST(release_grants_directly)
{
    struct baton_client *c = client();
    struct baton_lock *h = NULL;
    struct res w = {.c = c};
    ck_assert_int_eq(baton_lock_try(c, "a:direct", NULL, &h), BATON_OK);
    struct baton_lock_opts o = {.ttl_ms = 7000, .max_wait_ms = 5000, .retry_delay_ms = 4000};
    ck_assert_int_eq(baton_lock_acquire_async(c, "a:direct", &o, record, &w), BATON_OK);
    tu_sleep_ms(150);
    /* Queued with its lease. */
    ck_assert_int_eq(tu_redis_int("HLEN baton:{a:direct}:qt"), 1);
    char *queued = tu_redis("ZRANGE baton:{a:direct}:q 0 0");
    char q[200];
    snprintf(q, sizeof q, "HGET baton:{a:direct}:qt %s", queued);
    free(queued);
    ck_assert_int_eq(tu_redis_int(q), 7000);
    ck_assert_int_eq(baton_lock_release(h), BATON_OK);
    ck_assert_int_eq(wait_all(&w, 1, 3000), 1);
    ck_assert_int_eq(w.rc, BATON_OK);
    char *v = tu_redis("GET baton:{a:direct}");
    ck_assert_str_eq(v, baton_lock_token(w.lk));
    free(v);
    long long pttl = tu_redis_int("PTTL baton:{a:direct}");
    ck_assert_msg(pttl > 6000 && pttl <= 7000, "pttl %lld", pttl);
    ck_assert_int_eq(
        tu_redis_int("EXISTS baton:{a:direct}:q baton:{a:direct}:qx baton:{a:direct}:qt"), 0);
    ck_assert_uint_gt(baton_lock_fence(w.lk), baton_lock_fence(h));
    ck_assert_uint_eq(baton_lock_fence(w.lk), (uint64_t)tu_redis_int("GET baton:{a:direct}:fence"));
    ck_assert_int_le(baton_lock_remaining_ms(w.lk), 7000);
    ck_assert_int_gt(baton_lock_remaining_ms(w.lk), 6000);
    ck_assert_int_eq(baton_lock_release(w.lk), BATON_OK);
    baton_lock_free(w.lk);

    /* An older waiter: queued without a lease in :qt. */
    struct baton_lock *h2 = NULL;
    ck_assert_int_eq(baton_lock_try(c, "a:direct", NULL, &h2), BATON_OK);
    char *t = tu_redis("TIME");
    long long sec = 0, usec = 0;
    ck_assert_int_eq(sscanf(t, "%lld %lld", &sec, &usec), 2);
    free(t);
    const char *ghost = "ffffffffffffffff00000000000000000000000000000000";
    char cmd[200];
    snprintf(cmd, sizeof cmd, "ZADD baton:{a:direct}:q 1 %s", ghost);
    free(tu_redis(cmd));
    snprintf(cmd, sizeof cmd, "HSET baton:{a:direct}:qx %s %lld", ghost,
             sec * 1000 + usec / 1000 + 5000);
    free(tu_redis(cmd));
    ck_assert_int_eq(baton_lock_release(h2), BATON_OK);
    v = tu_redis("GET baton:{a:direct}");
    ck_assert_int_eq(v[0], '~');
    ck_assert_str_eq(v + 1, ghost);
    free(v);
    ck_assert_int_le(tu_redis_int("PTTL baton:{a:direct}"), 5000);
    baton_lock_free(h);
    baton_lock_free(h2);
    baton_client_free(c);
}
END_TEST

/* Asynchronous waiters are served in arrival order, each granted by the
 * release of the one before (from its callback). */
struct fifo {
    struct baton_client *c;
    atomic_int next;
    int order[8];
};

struct fifo_waiter {
    struct fifo *f;
    int id;
    struct res r;
};

static void fifo_granted(struct baton_lock *lk, int rc, const char *why, void *arg)
{
    struct fifo_waiter *w = arg;
    (void)why;
    w->r.rc = rc;
    if (rc == BATON_OK) {
        w->f->order[atomic_fetch_add(&w->f->next, 1)] = w->id;
        if (baton_lock_release_async(lk, record, &w->r) != BATON_OK)
            w->r.rc = BATON_EIO;
        return;
    }
    atomic_fetch_add(&w->r.calls, 1);
}

START_TEST(acquire_fifo)
{
    enum { N = 6 };
    struct baton_client *c = client();
    struct baton_lock *h = NULL;
    struct fifo f = {.c = c};
    struct fifo_waiter w[N];
    ck_assert_int_eq(baton_lock_try(c, "a:fifo", NULL, &h), BATON_OK);
    struct baton_lock_opts o = {.max_wait_ms = 8000, .retry_delay_ms = 3000};
    for (int i = 0; i < N; i++) {
        w[i] = (struct fifo_waiter){.f = &f, .id = i, .r = {.c = c}};
        ck_assert_int_eq(baton_lock_acquire_async(c, "a:fifo", &o, fifo_granted, &w[i]), BATON_OK);
        tu_sleep_ms(30); /* each queued before the next asks */
    }
    ck_assert_int_eq(baton_lock_release(h), BATON_OK);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(wait_all(&w[i].r, 1, 6000), 1);
        ck_assert_int_eq(w[i].r.rc, BATON_OK);
        baton_lock_free(w[i].r.lk);
    }
    ck_assert_int_eq(atomic_load(&f.next), N);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(f.order[i], i);
    baton_lock_free(h);
    baton_client_free(c);
}
END_TEST

START_TEST(acquire_times_out_and_leaves_the_queue)
{
    struct baton_client *c = client();
    struct baton_lock *h = NULL;
    struct res w = {.c = c};
    ck_assert_int_eq(baton_lock_try(c, "a:to", NULL, &h), BATON_OK);
    int64_t t0 = tu_now_ns();
    struct baton_lock_opts o = {.max_wait_ms = 300, .retry_delay_ms = 50};
    ck_assert_int_eq(baton_lock_acquire_async(c, "a:to", &o, record, &w), BATON_OK);
    ck_assert_int_eq(wait_all(&w, 1, 3000), 1);
    ck_assert_int_eq(w.rc, BATON_ETIMEDOUT);
    ck_assert_ptr_null(w.lk);
    ck_assert_int_ge(w.at_ns - t0, INT64_C(290000000));
    ck_assert_int_eq(tu_redis_int("ZCARD baton:{a:to}:q"), 0);
    struct baton_stats st;
    ck_assert_int_eq(baton_stats_get(c, "a", &st), BATON_OK);
    ck_assert_uint_eq(st.acquire_timeouts, 1);
    ck_assert_int_eq(baton_lock_release(h), BATON_OK);
    baton_lock_free(h);
    baton_client_free(c);
}
END_TEST

START_TEST(acquire_queue_full)
{
    struct baton_client *c = NULL;
    struct baton_client_opts co = {.max_waiters_per_key = 2, .command_timeout_ms = 1000};
    ck_assert_int_eq(baton_client_new(tu_redis_url(), &co, &c), BATON_OK);
    struct baton_lock *h = NULL;
    struct res w[3] = {{.c = c}, {.c = c}, {.c = c}};
    ck_assert_int_eq(baton_lock_try(c, "a:full", NULL, &h), BATON_OK);
    struct baton_lock_opts o = {.max_wait_ms = 400};
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(baton_lock_acquire_async(c, "a:full", &o, record, &w[i]), BATON_OK);
    ck_assert_int_eq(wait_all(w, 3, 3000), 3);
    int full = 0, timedout = 0;
    for (int i = 0; i < 3; i++) {
        full += w[i].rc == BATON_EQUEUEFULL;
        timedout += w[i].rc == BATON_ETIMEDOUT;
    }
    ck_assert_int_eq(full, 1);
    ck_assert_int_eq(timedout, 2);
    baton_lock_release(h);
    baton_lock_free(h);
    baton_client_free(c);
}
END_TEST

/* An auto-renewed lock taken asynchronously outlives its ttl, and its
 * release waits for nothing but stops the renewal. */
START_TEST(auto_renew_then_release)
{
    struct baton_client *c = client();
    struct res a = {.c = c}, rel = {.c = c};
    struct baton_lock_opts o = {.ttl_ms = 300, .auto_renew = true};
    ck_assert_int_eq(baton_lock_try_async(c, "a:renew", &o, record, &a), BATON_OK);
    ck_assert_int_eq(wait_all(&a, 1, 2000), 1);
    ck_assert_int_eq(a.rc, BATON_OK);
    tu_sleep_ms(900);
    ck_assert(!baton_lock_lost(a.lk));
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{a:renew}"), 1);
    ck_assert_int_eq(baton_lock_release_async(a.lk, record, &rel), BATON_OK);
    ck_assert_int_eq(wait_all(&rel, 1, 2000), 1);
    ck_assert_int_eq(rel.rc, BATON_OK);
    tu_sleep_ms(400); /* no renewal after the release */
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{a:renew}"), 0);
    ck_assert(!baton_lock_lost(a.lk));
    baton_lock_free(a.lk);
    baton_client_free(c);
}
END_TEST

START_TEST(bad_arguments)
{
    struct baton_client *c = client();
    struct res r = {.c = c};
    ck_assert_int_eq(baton_lock_try_async(NULL, "k", NULL, record, &r), BATON_EINVAL);
    ck_assert_int_eq(baton_lock_try_async(c, "", NULL, record, &r), BATON_EINVAL);
    ck_assert_int_eq(baton_lock_try_async(c, "k", NULL, NULL, &r), BATON_EINVAL);
    ck_assert_int_eq(
        baton_lock_acquire_async(c, "k", &(struct baton_lock_opts){.ttl_ms = -1}, record, &r),
        BATON_EINVAL);
    ck_assert_int_eq(baton_lock_release_async(NULL, record, &r), BATON_EINVAL);
    ck_assert_int_eq(baton_lock_extend_async(NULL, 0, record, &r), BATON_EINVAL);
    tu_sleep_ms(20);
    ck_assert_int_eq(atomic_load(&r.calls), 0);
    baton_client_free(c);
}
END_TEST

/* ---- failures ---- */

/* Redis frozen with many operations in flight on the one connection: each
 * fails once, by the command timeout; the client recovers after. */
START_TEST(frozen_redis)
{
    enum { N = 500 };
    struct baton_client *c = client(); /* 500 ms command timeout */
    struct res *r = calloc(N, sizeof *r);
    char key[32];
    ck_assert_int_eq(baton_lock_try_async(c, "a:warm", NULL, record, &r[0]), BATON_OK);
    ck_assert_int_eq(wait_all(r, 1, 2000), 1); /* connected */
    baton_lock_free(r[0].lk);
    memset(r, 0, sizeof *r);
    redis_signal(SIGSTOP);
    int64_t t0 = tu_now_ns();
    for (int i = 0; i < N; i++) {
        r[i].c = c;
        snprintf(key, sizeof key, "a:frozen:%d", i);
        ck_assert_int_eq(baton_lock_try_async(c, key, NULL, record, &r[i]), BATON_OK);
    }
    int came = wait_all(r, N, 3000);
    int64_t last = 0;
    for (int i = 0; i < N; i++)
        if (r[i].at_ns > last)
            last = r[i].at_ns;
    redis_signal(SIGCONT);
    ck_assert_int_eq(came, N);
    ck_assert_msg(last - t0 < INT64_C(1200000000), "last result %lld ms after the start",
                  (long long)((last - t0) / 1000000));
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(r[i].rc, BATON_EIO);
        ck_assert_ptr_null(r[i].lk);
    }
    ck_assert_ptr_nonnull(strstr(r[0].why, "timed out"));
    tu_sleep_ms(100);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(atomic_load(&r[i].calls), 1);
    /* Recovery: a new connection serves the next operations. */
    struct res ok = {.c = c};
    ck_assert_int_eq(baton_lock_try_async(c, "a:after-freeze", NULL, record, &ok), BATON_OK);
    ck_assert_int_eq(wait_all(&ok, 1, 3000), 1);
    ck_assert_int_eq(ok.rc, BATON_OK);
    baton_lock_free(ok.lk);
    free(r);
    baton_client_free(c);
}
END_TEST

/* The connection killed by the server while many operations are in
 * flight: each gets one result (granted before the kill, or EIO), and a
 * grant reported is a grant in Redis. */
START_TEST(connection_killed_mid_flight)
{
    enum { N = 2000 };
    struct baton_client *c = tu_client(2000);
    struct res *r = calloc(N, sizeof *r);
    char key[32];
    ck_assert_int_eq(baton_lock_try_async(c, "a:warm", NULL, record, &r[0]), BATON_OK);
    ck_assert_int_eq(wait_all(r, 1, 2000), 1);
    baton_lock_free(r[0].lk);
    memset(r, 0, sizeof *r);
    for (int i = 0; i < N; i++) {
        r[i].c = c;
        snprintf(key, sizeof key, "a:kill:%d", i);
        ck_assert_int_eq(baton_lock_try_async(c, key, NULL, record, &r[i]), BATON_OK);
        if (i == N / 4)
            free(tu_redis("CLIENT KILL TYPE normal SKIPME yes"));
    }
    ck_assert_int_eq(wait_all(r, N, 5000), N);
    tu_sleep_ms(50);
    int ok = 0, eio = 0;
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(atomic_load(&r[i].calls), 1);
        if (r[i].rc == BATON_OK) {
            ok++;
            snprintf(key, sizeof key, "GET baton:{a:kill:%d}", i);
            char *v = tu_redis(key);
            ck_assert_str_eq(v, baton_lock_token(r[i].lk));
            free(v);
            baton_lock_free(r[i].lk);
        } else {
            ck_assert_int_eq(r[i].rc, BATON_EIO);
            eio++;
        }
    }
    ck_assert_int_eq(ok + eio, N);
    ck_assert_int_gt(ok, 0);
    free(r);
    baton_client_free(c);
}
END_TEST

/* A request that comes while an older connection attempt is still blocked
 * on a frozen Redis gets an attempt of its own: it never fails with the
 * older attempt's error (it did: "read: timed out" 1 ms after SIGCONT). */
START_TEST(no_failure_from_an_older_connect)
{
    for (int i = 0; i < 5; i++) {
        struct baton_client *c = NULL;
        struct baton_client_opts o = {
            .connect_timeout_ms = 500, .command_timeout_ms = 500, .lazy = true};
        ck_assert_int_eq(baton_client_new(tu_redis_url(), &o, &c), BATON_OK);
        struct baton_lock *lk = NULL;
        redis_signal(SIGSTOP);
        int rc = baton_lock_try(c, "a:older", NULL, &lk);
        redis_signal(SIGCONT);
        ck_assert_int_eq(rc, BATON_EIO);
        rc = baton_lock_try(c, "a:older2", NULL, &lk);
        ck_assert_msg(rc == BATON_OK, "round %d after the freeze: %s: %s", i, baton_errname(rc),
                      baton_client_errstr(c));
        baton_lock_release(lk);
        baton_lock_free(lk);
        baton_client_free(c);
    }
}
END_TEST

/* ---- a server of the test's own, to restart ---- */

static pid_t start_redis(int port)
{
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    char *argv[] = {"redis-server", "--port", ports,       "--bind",    "127.0.0.1", "--save", "",
                    "--appendonly", "no",     "--logfile", "/dev/null", NULL};
    pid_t pid = 0;
    ck_assert_int_eq(posix_spawnp(&pid, "redis-server", NULL, NULL, argv, environ), 0);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", port);
    for (int i = 0; i < 250; i++) {
        struct baton_client *p = NULL;
        struct baton_client_opts o = {.connect_timeout_ms = 200, .command_timeout_ms = 200};
        int rc = baton_client_new(url, &o, &p);
        baton_client_free(p);
        if (rc == BATON_OK)
            return pid;
        tu_sleep_ms(20);
    }
    ck_abort_msg("redis-server on port %d did not start", port);
    return -1;
}

static void stop_redis(pid_t pid)
{
    int st;
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
}

START_TEST(redis_restarted)
{
    enum { N = 300 };
    int port = tu_dead_port();
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", port);
    pid_t pid = start_redis(port);
    struct baton_client *c = NULL;
    struct baton_client_opts o = {.connect_timeout_ms = 300, .command_timeout_ms = 500};
    ck_assert_int_eq(baton_client_new(url, &o, &c), BATON_OK);
    struct res *r = calloc(N, sizeof *r);
    char key[32];
    for (int i = 0; i < N; i++) {
        r[i].c = c;
        snprintf(key, sizeof key, "a:restart:%d", i);
        ck_assert_int_eq(baton_lock_try_async(c, key, NULL, record, &r[i]), BATON_OK);
        if (i == N / 2)
            stop_redis(pid);
    }
    ck_assert_int_eq(wait_all(r, N, 5000), N);
    int failed = 0;
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(atomic_load(&r[i].calls), 1);
        if (r[i].rc != BATON_OK) {
            ck_assert_int_eq(r[i].rc, BATON_EIO);
            failed++;
        }
        baton_lock_free(r[i].lk);
    }
    ck_assert_int_gt(failed, 0);
    /* Down: a clear error, quickly. */
    struct res down = {.c = c};
    ck_assert_int_eq(baton_lock_try_async(c, "a:down", NULL, record, &down), BATON_OK);
    ck_assert_int_eq(wait_all(&down, 1, 3000), 1);
    ck_assert_int_eq(down.rc, BATON_EIO);
    ck_assert_ptr_nonnull(strstr(down.why, "cannot connect"));
    /* Back (empty: no persistence): the scripts are loaded again. */
    pid = start_redis(port);
    struct res up = {.c = c};
    ck_assert_int_eq(baton_lock_try_async(c, "a:up", NULL, record, &up), BATON_OK);
    ck_assert_int_eq(wait_all(&up, 1, 3000), 1);
    ck_assert_msg(up.rc == BATON_OK, "after the restart: %s", up.why);
    baton_lock_free(up.lk);
    baton_client_free(c);
    stop_redis(pid);
    free(r);
}
END_TEST

/* The client freed with operations in flight and waiting: each callback
 * runs once, before baton_client_free() returns. */
START_TEST(client_freed_with_operations_running)
{
    enum { N = 200 };
    struct baton_client *c = client();
    struct baton_lock *h = NULL;
    struct res *r = calloc(N + 1, sizeof *r);
    char key[32];
    ck_assert_int_eq(baton_lock_try(c, "a:freewait", NULL, &h), BATON_OK);
    r[N].c = c;
    struct baton_lock_opts o = {.max_wait_ms = 10000};
    ck_assert_int_eq(baton_lock_acquire_async(c, "a:freewait", &o, record, &r[N]), BATON_OK);
    tu_sleep_ms(100); /* waiting, on a timer */
    for (int i = 0; i < N; i++) {
        r[i].c = c;
        snprintf(key, sizeof key, "a:free:%d", i);
        ck_assert_int_eq(baton_lock_try_async(c, key, NULL, record, &r[i]), BATON_OK);
    }
    baton_lock_release(h);
    baton_lock_free(h);
    baton_client_free(c);
    for (int i = 0; i <= N; i++) {
        ck_assert_int_eq(atomic_load(&r[i].calls), 1);
        if (r[i].rc != BATON_OK)
            ck_assert_msg(r[i].rc == BATON_EINVAL || r[i].rc == BATON_EIO, "op %d: %s", i,
                          baton_errname(r[i].rc));
        baton_lock_free(r[i].lk); /* after the client: still safe */
    }
    free(r);
}
END_TEST

/* The client freed while its only work is a waiter asleep on a timer (or
 * a subscription waiting to reconnect): baton_client_free() fires the
 * timers at once and returns, rather than waiting for a wake-up. */
START_TEST(client_freed_with_a_waiter_asleep)
{
    struct baton_client *holder = client(), *c = client();
    struct baton_lock *h = NULL;
    struct res w = {.c = c};
    ck_assert_int_eq(baton_lock_try(holder, "a:asleep", NULL, &h), BATON_OK);
    struct baton_lock_opts o = {.max_wait_ms = 20000, .retry_delay_ms = 10000};
    ck_assert_int_eq(baton_lock_acquire_async(c, "a:asleep", &o, record, &w), BATON_OK);
    tu_sleep_ms(300); /* refused, queued, asleep until the retry */
    int64_t t0 = tu_now_ns();
    baton_client_free(c);
    int64_t ms = (tu_now_ns() - t0) / 1000000;
    ck_assert_msg(ms < 1000, "baton_client_free took %lld ms", (long long)ms);
    ck_assert_int_eq(atomic_load(&w.calls), 1);
    ck_assert_int_eq(w.rc, BATON_EINVAL);
    baton_lock_release(h);
    baton_lock_free(h);
    baton_client_free(holder);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("redis_async");
    TCase *tc = tcase_create("api");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, try_release_extend);
    tcase_add_test(tc, extend_and_release_find_it_lost);
    tcase_add_test(tc, thousands_in_flight);
    tcase_add_test(tc, calls_on_one_lock_keep_their_order);
    tcase_add_test(tc, chains_from_callbacks);
    tcase_add_test(tc, auto_renew_then_release);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, noscript_and_readonly_on_the_loop);
    suite_add_tcase(s, tc);

    TCase *tw = tcase_create("waiting");
    tcase_set_timeout(tw, 60);
    tcase_add_test(tw, acquire_woken_on_release);
    tcase_add_test(tw, release_grants_directly);
    tcase_add_test(tw, acquire_fifo);
    tcase_add_test(tw, acquire_times_out_and_leaves_the_queue);
    tcase_add_test(tw, acquire_queue_full);
    suite_add_tcase(s, tw);

    TCase *tf = tcase_create("failures");
    tcase_set_timeout(tf, 60);
    tcase_add_test(tf, frozen_redis);
    tcase_add_test(tf, connection_killed_mid_flight);
    tcase_add_test(tf, no_failure_from_an_older_connect);
    tcase_add_test(tf, redis_restarted);
    tcase_add_test(tf, client_freed_with_operations_running);
    tcase_add_test(tf, client_freed_with_a_waiter_asleep);
    suite_add_tcase(s, tf);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
