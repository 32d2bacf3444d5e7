/* check_redis_lock.c -- the lock core against a real redis-server (started
 * by tests/lib/with-redis.sh): ownership, fencing, deadlines, waiting and
 * wake-ups, flood control, auto-renewal and loss, with_lock, threads. */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "baton.h"
#include "baton_election.h"
#include "baton_redis.h"
#include "testutil.h"

static struct baton_client *client(void)
{
    return tu_client(500);
}

static void redis_eq(const char *cmd, const char *want)
{
    char *got = tu_redis(cmd);
    ck_assert_msg(strcmp(got, want) == 0, "%s: want [%s] got [%s]", cmd, want, got);
    free(got);
}

START_TEST(try_release_and_taken)
{
    struct baton_client *c = client();
    struct baton_lock *a = NULL, *b = NULL;
    struct baton_lock_opts o = {.ttl_ms = 5000};
    ck_assert_int_eq(baton_lock_try(c, "t:basic", &o, &a), BATON_OK);
    ck_assert_int_eq(strlen(baton_lock_token(a)), 48);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "GET baton:{t:basic}");
    redis_eq(cmd, baton_lock_token(a));
    ck_assert_int_eq(baton_lock_try(c, "t:basic", &o, &b), BATON_ETAKEN);
    ck_assert_ptr_null(b);
    ck_assert(!baton_lock_lost(a));
    ck_assert_int_eq(baton_lock_release(a), BATON_OK);
    redis_eq("EXISTS baton:{t:basic}", "0");
    ck_assert(!baton_lock_lost(a));
    ck_assert_int_eq(baton_lock_try(c, "t:basic", &o, &b), BATON_OK);
    ck_assert_int_eq(baton_lock_release(b), BATON_OK);
    baton_lock_free(a);
    baton_lock_free(b);
    baton_client_free(c);
}
END_TEST

/* Release and extend by a non-owner change nothing. */
START_TEST(non_owner_cannot_release_or_extend)
{
    struct baton_client *c = client();
    struct baton_lock *old = NULL, *cur = NULL;
    ck_assert_int_eq(baton_lock_try(c, "t:owner", &(struct baton_lock_opts){.ttl_ms = 100}, &old),
                     BATON_OK);
    tu_sleep_ms(150); /* old's lease runs out */
    ck_assert(baton_lock_lost(old));
    ck_assert_int_eq(baton_lock_try(c, "t:owner", &(struct baton_lock_opts){.ttl_ms = 10000}, &cur),
                     BATON_OK);
    ck_assert_int_eq(baton_lock_extend(old, 60000), BATON_ELOST);
    ck_assert_int_eq(baton_lock_release(old), BATON_ELOST);
    ck_assert_str_eq(baton_lock_errstr(old),
                     "lock t:owner was no longer held by this owner at release");
    char cmd[64] = "GET baton:{t:owner}";
    redis_eq(cmd, baton_lock_token(cur));
    char *pttl = tu_redis("PTTL baton:{t:owner}");
    ck_assert_int_le(atoi(pttl), 10000); /* not the 60 s the stale owner asked for */
    ck_assert_int_gt(atoi(pttl), 9000);
    free(pttl);
    ck_assert_int_eq(baton_lock_release(cur), BATON_OK);
    baton_lock_free(old);
    baton_lock_free(cur);
    baton_client_free(c);
}
END_TEST

START_TEST(fence_strictly_increases)
{
    struct baton_client *c = client();
    uint64_t last = 0;
    for (int i = 0; i < 30; i++) {
        struct baton_lock *lk = NULL;
        ck_assert_int_eq(baton_lock_try(c, "t:fence", &(struct baton_lock_opts){.ttl_ms = 50}, &lk),
                         BATON_OK);
        ck_assert_uint_gt(baton_lock_fence(lk), last);
        last = baton_lock_fence(lk);
        if (i % 3 == 0)
            tu_sleep_ms(60); /* expire instead of release: the counter survives */
        else
            ck_assert_int_eq(baton_lock_release(lk), BATON_OK);
        baton_lock_free(lk);
    }
    redis_eq("PTTL baton:{t:fence}:fence", "-1"); /* the counter never expires */
    baton_client_free(c);
}
END_TEST

/* deadline = send time + ttl - (1% ttl + 2 ms), on the monotonic clock. */
START_TEST(validity_deadline)
{
    struct baton_client *c = client();
    struct baton_lock *lk = NULL;
    int64_t before = tu_now_ns();
    ck_assert_int_eq(
        baton_lock_try(c, "t:deadline", &(struct baton_lock_opts){.ttl_ms = 10000}, &lk), BATON_OK);
    int64_t after = tu_now_ns();
    int64_t dl = baton_lock_deadline_ns(lk);
    ck_assert_int_ge(dl, before + (10000 - 102) * INT64_C(1000000));
    ck_assert_int_le(dl, after + (10000 - 102) * INT64_C(1000000));
    ck_assert_int_le(baton_lock_remaining_ms(lk), 9898);
    ck_assert_int_ge(baton_lock_remaining_ms(lk), 9800);
    ck_assert_int_eq(baton_lock_extend(lk, 20000), BATON_OK);
    ck_assert_int_ge(baton_lock_remaining_ms(lk), 19700);
    baton_lock_release(lk);
    baton_lock_free(lk);
    baton_client_free(c);
}
END_TEST

struct waiter_arg {
    struct baton_client *c;
    const char *key;
    struct baton_lock_opts o;
    int rc;
    int64_t got_ns;
    int order;
    atomic_int *counter;
};

static void *waiter_main(void *p)
{
    struct waiter_arg *w = p;
    struct baton_lock *lk = NULL;
    w->rc = baton_lock_acquire(w->c, w->key, &w->o, &lk);
    w->got_ns = tu_now_ns();
    if (w->rc == BATON_OK) {
        if (w->counter != NULL)
            w->order = atomic_fetch_add(w->counter, 1);
        baton_lock_release(lk);
    }
    baton_lock_free(lk);
    return NULL;
}

/* A waiter is woken by the release, not by its retry timer (5 s here). */
START_TEST(wake_on_release)
{
    struct baton_client *c = client();
    struct baton_lock *h = NULL;
    ck_assert_int_eq(baton_lock_try(c, "t:wake", &(struct baton_lock_opts){.ttl_ms = 30000}, &h),
                     BATON_OK);
    struct waiter_arg w = {.c = c,
                           .key = "t:wake",
                           .o = {.ttl_ms = 5000, .max_wait_ms = 10000, .retry_delay_ms = 5000}};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &w);
    tu_sleep_ms(300);
    int64_t released = tu_now_ns();
    ck_assert_int_eq(baton_lock_release(h), BATON_OK);
    pthread_join(t, NULL);
    ck_assert_int_eq(w.rc, BATON_OK);
    ck_assert_msg(w.got_ns - released < INT64_C(1000000000), "woken after %lld ms",
                  (long long)((w.got_ns - released) / 1000000));
    baton_lock_free(h);
    baton_client_free(c);
}
END_TEST

/* A holder that vanishes without releasing costs only its TTL. */
START_TEST(wake_at_holder_ttl)
{
    struct baton_client *c = client();
    struct baton_lock *h = NULL;
    ck_assert_int_eq(baton_lock_try(c, "t:crash", &(struct baton_lock_opts){.ttl_ms = 600}, &h),
                     BATON_OK);
    int64_t granted = tu_now_ns();
    baton_lock_free(h); /* "crash": no release */
    struct waiter_arg w = {.c = c,
                           .key = "t:crash",
                           .o = {.ttl_ms = 5000, .max_wait_ms = 10000, .retry_delay_ms = 5000}};
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
    struct baton_lock *h = NULL, *w = NULL;
    ck_assert_int_eq(baton_lock_try(c, "t:to", &(struct baton_lock_opts){.ttl_ms = 30000}, &h),
                     BATON_OK);
    int64_t t0 = tu_now_ns();
    ck_assert_int_eq(
        baton_lock_acquire(c, "t:to", &(struct baton_lock_opts){.max_wait_ms = 300}, &w),
        BATON_ETIMEDOUT);
    int64_t ms = (tu_now_ns() - t0) / 1000000;
    ck_assert_int_ge(ms, 300);
    ck_assert_int_lt(ms, 800);
    ck_assert_ptr_null(w);
    redis_eq("ZCARD baton:{t:to}:q", "0");
    /* Try-once is refused while held. */
    ck_assert_int_eq(
        baton_lock_acquire(c, "t:to", &(struct baton_lock_opts){.max_wait_ms = BATON_NO_WAIT}, &w),
        BATON_ETAKEN);
    baton_lock_release(h);
    baton_lock_free(h);
    baton_client_free(c);
}
END_TEST

/* max_waiters_per_key: the next waiter is refused at once. */
START_TEST(queue_full)
{
    struct baton_client *c = NULL;
    struct baton_client_opts co = {.max_waiters_per_key = 2};
    ck_assert_int_eq(baton_client_new(tu_redis_url(), &co, &c), BATON_OK);
    struct baton_lock *h = NULL, *x = NULL;
    ck_assert_int_eq(baton_lock_try(c, "t:full", NULL, &h), BATON_OK);
    struct waiter_arg w[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        w[i] = (struct waiter_arg){.c = c, .key = "t:full", .o = {.max_wait_ms = 3000}};
        pthread_create(&t[i], NULL, waiter_main, &w[i]);
    }
    tu_sleep_ms(200);
    int64_t t0 = tu_now_ns();
    ck_assert_int_eq(
        baton_lock_acquire(c, "t:full", &(struct baton_lock_opts){.max_wait_ms = 3000}, &x),
        BATON_EQUEUEFULL);
    ck_assert_int_lt(tu_now_ns() - t0, INT64_C(50000000));
    /* Another key is not affected. */
    ck_assert_int_eq(baton_lock_acquire(c, "t:other", NULL, &x), BATON_OK);
    baton_lock_release(x);
    baton_lock_free(x);
    baton_lock_release(h);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(w[i].rc, BATON_OK);
    }
    baton_lock_free(h);
    baton_client_free(c);
}
END_TEST

/* Waiters are served in arrival order, across clients. */
START_TEST(fifo_order)
{
    enum { N = 6 };
    struct baton_client *hc = client();
    struct baton_client *cs[N];
    struct baton_lock *h = NULL;
    atomic_int counter = 0;
    ck_assert_int_eq(baton_lock_try(hc, "t:fifo", NULL, &h), BATON_OK);
    struct waiter_arg w[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        cs[i] = client();
        w[i] = (struct waiter_arg){.c = cs[i],
                                   .key = "t:fifo",
                                   .counter = &counter,
                                   .o = {.max_wait_ms = 10000, .retry_delay_ms = 50}};
        pthread_create(&t[i], NULL, waiter_main, &w[i]);
        tu_sleep_ms(100); /* arrival order = i */
    }
    baton_lock_release(h);
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(w[i].rc, BATON_OK);
        ck_assert_int_eq(w[i].order, i);
        baton_client_free(cs[i]);
    }
    baton_lock_free(h);
    baton_client_free(hc);
}
END_TEST

static void count_lost(struct baton_lock *lk, void *arg)
{
    (void)lk;
    atomic_fetch_add((atomic_int *)arg, 1);
}

/* Auto-renewal keeps a lock whose owner is busy far past its TTL. */
START_TEST(auto_renew_outlives_ttl)
{
    struct baton_client *c = client();
    struct baton_lock *lk = NULL;
    atomic_int lost = 0;
    struct baton_lock_opts o = {
        .ttl_ms = 300, .auto_renew = true, .on_lost = count_lost, .on_lost_arg = &lost};
    ck_assert_int_eq(baton_lock_try(c, "t:renew", &o, &lk), BATON_OK);
    tu_sleep_ms(1500); /* the caller "blocks" for 5 TTLs */
    ck_assert(!baton_lock_lost(lk));
    ck_assert_int_eq(atomic_load(&lost), 0);
    char cmd[64] = "GET baton:{t:renew}";
    redis_eq(cmd, baton_lock_token(lk));
    ck_assert_int_eq(baton_lock_release(lk), BATON_OK);
    tu_sleep_ms(200);
    redis_eq("EXISTS baton:{t:renew}", "0"); /* renewal stopped before release */
    baton_lock_free(lk);
    baton_client_free(c);
}
END_TEST

/* The key deleted behind the owner's back: the next renewal reports it. */
START_TEST(loss_reported_by_renewal)
{
    struct baton_client *c = client();
    struct baton_lock *lk = NULL;
    atomic_int lost = 0;
    struct baton_lock_opts o = {
        .ttl_ms = 600, .auto_renew = true, .on_lost = count_lost, .on_lost_arg = &lost};
    ck_assert_int_eq(baton_lock_try(c, "t:stolen", &o, &lk), BATON_OK);
    free(tu_redis("DEL baton:{t:stolen}"));
    int64_t t0 = tu_now_ns();
    while (atomic_load(&lost) == 0 && tu_now_ns() - t0 < INT64_C(2000000000))
        tu_sleep_ms(5);
    ck_assert_int_eq(atomic_load(&lost), 1);
    ck_assert_int_lt(tu_now_ns() - t0, INT64_C(300000000)); /* within one renew period */
    ck_assert(baton_lock_lost(lk));
    ck_assert_str_eq(baton_lock_errstr(lk),
                     "lock t:stolen was lost: renewal found it no longer held by this owner");
    ck_assert_int_eq(baton_lock_release(lk), BATON_ELOST);
    ck_assert_int_eq(atomic_load(&lost), 1); /* reported once */
    baton_lock_free(lk);
    baton_client_free(c);
}
END_TEST

static void redis_signal(int sig)
{
    const char *p = getenv("BATON_TEST_REDIS_PID");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(kill((pid_t)atoi(p), sig), 0);
}

/* Redis frozen: no renewal can be confirmed, and the loss is reported at
 * the validity deadline, not later. */
START_TEST(loss_at_deadline_when_unreachable)
{
    struct baton_client *c = client();
    struct baton_lock *lk = NULL;
    atomic_int lost = 0;
    struct baton_lock_opts o = {
        .ttl_ms = 600, .auto_renew = true, .on_lost = count_lost, .on_lost_arg = &lost};
    ck_assert_int_eq(baton_lock_try(c, "t:frozen", &o, &lk), BATON_OK);
    int64_t deadline = baton_lock_deadline_ns(lk);
    redis_signal(SIGSTOP);
    while (atomic_load(&lost) == 0 && tu_now_ns() < deadline + INT64_C(2000000000))
        tu_sleep_ms(1);
    int64_t at = tu_now_ns();
    redis_signal(SIGCONT);
    ck_assert_int_eq(atomic_load(&lost), 1);
    /* Not before the deadline of the last confirmed renewal... */
    ck_assert_int_ge(at, baton_lock_deadline_ns(lk));
    /* ...and promptly after it. */
    ck_assert_msg(at - baton_lock_deadline_ns(lk) < INT64_C(60000000), "reported %lld ms late",
                  (long long)((at - baton_lock_deadline_ns(lk)) / 1000000));
    ck_assert_int_gt(baton_lock_deadline_ns(lk), deadline - 1); /* renewals had moved it */
    ck_assert(baton_lock_lost(lk));
    baton_lock_free(lk);
    baton_client_free(c);
}
END_TEST

/* Redis frozen: an operation fails within the command timeout. */
START_TEST(command_timeout_bounds_calls)
{
    struct baton_client *c = client(); /* 500 ms command timeout */
    struct baton_lock *lk = NULL;
    redis_signal(SIGSTOP);
    int64_t t0 = tu_now_ns();
    int rc = baton_lock_try(c, "t:stall", NULL, &lk);
    int64_t ms = (tu_now_ns() - t0) / 1000000;
    redis_signal(SIGCONT);
    ck_assert_int_eq(rc, BATON_EIO);
    ck_assert_int_ge(ms, 450);
    ck_assert_int_lt(ms, 1000);
    ck_assert_ptr_nonnull(strstr(baton_client_errstr(c), "timed out"));
    /* And the client recovers. (The timed-out request itself was executed
     * when Redis woke up: its grant expires with its TTL.) */
    rc = baton_lock_try(c, "t:stall2", NULL, &lk);
    ck_assert_msg(rc == BATON_OK, "after the freeze: %s: %s", baton_errname(rc),
                  baton_client_errstr(c));
    baton_lock_release(lk);
    baton_lock_free(lk);
    baton_client_free(c);
}
END_TEST

START_TEST(unreachable_is_a_clear_error)
{
    char url[64];
    int port = tu_dead_port();
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", port);
    struct baton_client *c = NULL;
    ck_assert_int_eq(baton_client_new(url, NULL, &c), BATON_EIO);
    char want[128];
    snprintf(want, sizeof want, "redis://127.0.0.1:%d/0: cannot connect: Connection refused", port);
    ck_assert_str_eq(baton_client_errstr(c), want);
    baton_client_free(c);
}
END_TEST

/* Scripts are called by SHA; a flushed script cache is reloaded. */
START_TEST(noscript_fallback)
{
    struct baton_client *c = client();
    struct baton_lock *lk = NULL;
    free(tu_redis("SCRIPT FLUSH"));
    ck_assert_int_eq(baton_lock_try(c, "t:noscript", NULL, &lk), BATON_OK);
    free(tu_redis("SCRIPT FLUSH"));
    ck_assert_int_eq(baton_lock_extend(lk, 0), BATON_OK);
    free(tu_redis("SCRIPT FLUSH"));
    ck_assert_int_eq(baton_lock_release(lk), BATON_OK);
    baton_lock_free(lk);
    baton_client_free(c);
}
END_TEST

/* A caller alone on its client does its own I/O: no hop to the loop
 * thread and back. Each round trip then blocks the process once (its
 * thread waiting for the reply): two voluntary context switches per
 * cycle, where the loop's hop adds two more, the loop thread's. */
START_TEST(a_lone_call_stays_on_its_thread)
{
    enum { N = 300 };
    struct baton_client *c = client();
    struct baton_lock_opts o = {.ttl_ms = 5000};
    struct baton_lock *lk = NULL;
    struct rusage r0, r1;
    for (int i = 0; i < 2 * N; i++) { /* the second half is measured */
        if (i == N)
            ck_assert_int_eq(getrusage(RUSAGE_SELF, &r0), 0);
        ck_assert_int_eq(baton_lock_try(c, "t:lone", &o, &lk), BATON_OK);
        ck_assert_int_eq(baton_lock_extend(lk, 0), BATON_OK);
        ck_assert_int_eq(baton_lock_release(lk), BATON_OK);
        baton_lock_free(lk);
    }
    ck_assert_int_eq(getrusage(RUSAGE_SELF, &r1), 0);
    double per = (double)(r1.ru_nvcsw - r0.ru_nvcsw) / N;
    ck_assert_msg(per < 4.5, "%.2f voluntary context switches per cycle of 3 calls", per);
    baton_client_free(c);
}
END_TEST

START_TEST(acl_user_and_database)
{
    free(tu_redis("ACL SETUSER alice on >s3cret ~* &* +@all"));
    char url[128];
    struct baton_client *c = NULL;
    struct baton_lock *lk = NULL;
    snprintf(url, sizeof url, "redis://alice:s3cret@127.0.0.1:%d/3", tu_redis_port());
    ck_assert_int_eq(baton_client_new(url, NULL, &c), BATON_OK);
    ck_assert_int_eq(baton_lock_try(c, "t:db3", NULL, &lk), BATON_OK);
    redis_eq("EXISTS baton:{t:db3}", "0"); /* not in db 0 */
    baton_lock_release(lk);
    baton_lock_free(lk);
    baton_client_free(c);

    snprintf(url, sizeof url, "redis://alice:wrong@127.0.0.1:%d/0", tu_redis_port());
    ck_assert_int_eq(baton_client_new(url, NULL, &c), BATON_EAUTH);
    ck_assert_ptr_nonnull(strstr(baton_client_errstr(c), "authentication failed"));
    ck_assert_ptr_null(strstr(baton_client_errstr(c), "wrong"));
    baton_client_free(c);
}
END_TEST

struct inc_arg {
    int *counter;
};

static int increment(struct baton_lock *lk, void *p)
{
    (void)lk;
    int *counter = ((struct inc_arg *)p)->counter;
    int v = *counter; /* a deliberately racy read-modify-write */
    usleep(100);
    *counter = v + 1;
    return 7;
}

struct thread_arg {
    struct baton_client *c;
    int *counter;
    int failures;
};

static void *incrementer(void *p)
{
    struct thread_arg *t = p;
    struct inc_arg ia = {t->counter};
    for (int i = 0; i < 50; i++)
        if (baton_with_lock(t->c, "t:counter",
                            &(struct baton_lock_opts){.ttl_ms = 5000, .max_wait_ms = 20000},
                            increment, &ia) != 7)
            t->failures++;
    return NULL;
}

/* Eight threads sharing one client: the with_lock sections exclude. */
START_TEST(threads_mutual_exclusion)
{
    enum { T = 8 };
    struct baton_client *c = client();
    int counter = 0;
    pthread_t th[T];
    struct thread_arg ta[T];
    for (int i = 0; i < T; i++) {
        ta[i] = (struct thread_arg){c, &counter, 0};
        pthread_create(&th[i], NULL, incrementer, &ta[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(ta[i].failures, 0);
    }
    ck_assert_int_eq(counter, T * 50);
    baton_client_free(c);
}
END_TEST

/* Threads sharing a client share its pipelined connections (mux.c): every
 * reply must reach the thread that asked. Each thread cycles a lock of its
 * own, whose fencing counter only it moves: each fence must be the one
 * stored for its key, so any reply handed to the wrong thread shows. */
struct mux_arg {
    struct baton_client *c;
    int id, cycles, failures;
    int64_t worst_ms; /* frozen test: the slowest failure */
    int rc;
};

static void *mux_cycler(void *p)
{
    struct mux_arg *a = p;
    char key[32];
    char fkey[64];
    uint64_t last = 0;
    snprintf(key, sizeof key, "t:mux:%d", a->id);
    snprintf(fkey, sizeof fkey, "baton:{%s}:fence", key);
    for (int i = 0; i < a->cycles; i++) {
        struct baton_lock *lk = NULL;
        if (baton_lock_try(a->c, key, NULL, &lk) != BATON_OK) {
            a->failures++;
            continue;
        }
        /* The fence must be the one stored for our key (only this thread
         * moves it), read on a connection of its own. */
        uint64_t f = baton_lock_fence(lk);
        const char *get[2] = {"GET", fkey};
        struct baton_reply *rep = NULL;
        if (baton_client_command(a->c, 2, get, NULL, &rep) != BATON_OK ||
            rep->type != BATON_REPLY_STRING || strtoull(rep->str, NULL, 10) != f || f <= last ||
            strcmp(baton_lock_key(lk), key) != 0)
            a->failures++;
        baton_reply_free(rep);
        last = f;
        if (baton_lock_release(lk) != BATON_OK)
            a->failures++;
        baton_lock_free(lk);
    }
    return NULL;
}

/* Runs n threads of fn on c, thread i with a[i] = {c, i, cycles}, and
 * waits for them all. */
static void mux_run(struct baton_client *c, int n, int cycles, void *(*fn)(void *),
                    struct mux_arg *a)
{
    pthread_t th[64];
    ck_assert_int_le(n, 64);
    for (int i = 0; i < n; i++) {
        a[i] = (struct mux_arg){.c = c, .id = i, .cycles = cycles};
        pthread_create(&th[i], NULL, fn, &a[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

START_TEST(threads_get_their_own_replies)
{
    enum { T = 32 };
    struct baton_client *c = client();
    struct mux_arg a[T];
    mux_run(c, T, 300, mux_cycler, a);
    for (int i = 0; i < T; i++)
        ck_assert_int_eq(a[i].failures, 0);
    baton_client_free(c);
}
END_TEST

static void *mux_frozen(void *p)
{
    struct mux_arg *a = p;
    struct baton_lock *lk = NULL;
    char key[32];
    snprintf(key, sizeof key, "t:muxf:%d", a->id);
    int64_t t0 = tu_now_ns();
    a->rc = baton_lock_try(a->c, key, NULL, &lk);
    a->worst_ms = (tu_now_ns() - t0) / 1000000;
    baton_lock_free(lk);
    return NULL;
}

/* Redis frozen with many requests queued on the shared connections: every
 * one fails within the command timeout, and the client recovers. */
START_TEST(threads_fail_in_time_when_frozen)
{
    enum { T = 24 };
    struct baton_client *c = client(); /* 500 ms command timeout */
    struct mux_arg a[T];
    redis_signal(SIGSTOP);
    mux_run(c, T, 0, mux_frozen, a);
    redis_signal(SIGCONT);
    for (int i = 0; i < T; i++) {
        ck_assert_int_eq(a[i].rc, BATON_EIO);
        ck_assert_msg(a[i].worst_ms < 1000, "thread %d failed after %lld ms", i,
                      (long long)a[i].worst_ms);
    }
    mux_run(c, T, 20, mux_cycler, a);
    for (int i = 0; i < T; i++)
        ck_assert_int_eq(a[i].failures, 0);
    baton_client_free(c);
}
END_TEST

static int wait_for_loss(struct baton_lock *lk, void *arg)
{
    (void)arg;
    free(tu_redis("DEL baton:{t:wl}"));
    for (int i = 0; i < 400 && !baton_lock_lost(lk); i++)
        tu_sleep_ms(5);
    return baton_lock_lost(lk) ? 1 : 0;
}

START_TEST(with_lock_reports_loss)
{
    struct baton_client *c = client();
    ck_assert_int_eq(
        baton_with_lock(c, "t:wl", &(struct baton_lock_opts){.ttl_ms = 300}, wait_for_loss, NULL),
        BATON_ELOST);
    struct baton_lock *h = NULL;
    ck_assert_int_eq(baton_lock_try(c, "t:wl", NULL, &h), BATON_OK);
    ck_assert_int_eq(baton_with_lock(c, "t:wl", &(struct baton_lock_opts){.max_wait_ms = 100},
                                     wait_for_loss, NULL),
                     BATON_ETIMEDOUT);
    baton_lock_release(h);
    baton_lock_free(h);
    ck_assert_int_eq(baton_with_lock(c, "t:wl", NULL, NULL, NULL), BATON_EINVAL);
    baton_client_free(c);
}
END_TEST

/* Misuse the header warns against, made safe: the client freed while an
 * auto-renewed lock and an election are alive. Their calls fail with
 * EINVAL, renewal has stopped (lost at the deadline), freeing them later is
 * clean (ASan would see a use after free). */
START_TEST(client_freed_before_its_locks)
{
    struct baton_client *c = client();
    struct baton_lock *lk = NULL, *plain = NULL;
    struct baton_election *e = NULL;
    struct baton_lock_opts o = {.ttl_ms = 300, .auto_renew = true};
    ck_assert_int_eq(baton_lock_try(c, "t:freed", &o, &lk), BATON_OK);
    ck_assert_int_eq(baton_lock_try(c, "t:freed2", &(struct baton_lock_opts){.ttl_ms = 300}, &plain),
                     BATON_OK);
    ck_assert_int_eq(baton_election_new(c, "t-freed", NULL, &e), BATON_OK);
    baton_client_free(c);
    ck_assert_int_eq(baton_lock_extend(lk, 0), BATON_EINVAL);
    ck_assert_int_eq(baton_lock_auto_renew(plain, 0), BATON_EINVAL);
    ck_assert_int_eq(baton_lock_release(plain), BATON_EINVAL);
    tu_sleep_ms(400); /* no renewal any more: past the deadline, lost */
    ck_assert(baton_lock_lost(lk));
    baton_lock_free(lk);
    baton_lock_free(plain);
    baton_election_free(e); /* the last reference: the client goes now */
}
END_TEST

/* A release that found the lock lost leaves extend saying so (ELOST); after
 * a release that succeeded, extend is a misuse (EINVAL). */
START_TEST(extend_after_release)
{
    struct baton_client *c = client();
    struct baton_lock *lk = NULL;
    ck_assert_int_eq(baton_lock_try(c, "t:ext", &(struct baton_lock_opts){.ttl_ms = 100}, &lk),
                     BATON_OK);
    tu_sleep_ms(150);
    ck_assert_int_eq(baton_lock_release(lk), BATON_ELOST);
    ck_assert_int_eq(baton_lock_extend(lk, 0), BATON_ELOST);
    baton_lock_free(lk);
    ck_assert_int_eq(baton_lock_try(c, "t:ext", &(struct baton_lock_opts){.ttl_ms = 1000}, &lk),
                     BATON_OK);
    ck_assert_int_eq(baton_lock_release(lk), BATON_OK);
    ck_assert_int_eq(baton_lock_extend(lk, 0), BATON_EINVAL);
    baton_lock_free(lk);
    baton_client_free(c);
}
END_TEST

START_TEST(bad_arguments)
{
    struct baton_client *c = client();
    struct baton_lock *lk = NULL;
    ck_assert_int_eq(baton_lock_try(c, "", NULL, &lk), BATON_EINVAL);
    ck_assert_int_eq(baton_lock_try(c, NULL, NULL, &lk), BATON_EINVAL);
    ck_assert_int_eq(baton_lock_try(c, "k", &(struct baton_lock_opts){.ttl_ms = -5}, &lk),
                     BATON_EINVAL);
    ck_assert_int_eq(
        baton_lock_try(c, "k", &(struct baton_lock_opts){.ttl_ms = 100, .renew_ms = 100}, &lk),
        BATON_EINVAL);
    ck_assert_int_eq(baton_lock_try(NULL, "k", NULL, &lk), BATON_EINVAL);
    ck_assert_int_eq(baton_lock_try(c, "k", NULL, NULL), BATON_EINVAL);
    char big[2000];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ck_assert_int_eq(baton_lock_try(c, big, NULL, &lk), BATON_EINVAL);
    ck_assert_int_eq(baton_lock_release(NULL), BATON_EINVAL);
    baton_client_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("redis_lock");
    TCase *tc = tcase_create("lock");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, try_release_and_taken);
    tcase_add_test(tc, non_owner_cannot_release_or_extend);
    tcase_add_test(tc, fence_strictly_increases);
    tcase_add_test(tc, validity_deadline);
    tcase_add_test(tc, noscript_fallback);
    tcase_add_test(tc, a_lone_call_stays_on_its_thread);
    tcase_add_test(tc, acl_user_and_database);
    tcase_add_test(tc, unreachable_is_a_clear_error);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, client_freed_before_its_locks);
    tcase_add_test(tc, extend_after_release);
    suite_add_tcase(s, tc);

    TCase *tw = tcase_create("waiting");
    tcase_set_timeout(tw, 60);
    tcase_add_test(tw, wake_on_release);
    tcase_add_test(tw, wake_at_holder_ttl);
    tcase_add_test(tw, timeout_leaves_the_queue);
    tcase_add_test(tw, queue_full);
    tcase_add_test(tw, fifo_order);
    suite_add_tcase(s, tw);

    TCase *tr = tcase_create("renewal");
    tcase_set_timeout(tr, 60);
    tcase_add_test(tr, auto_renew_outlives_ttl);
    tcase_add_test(tr, loss_reported_by_renewal);
    tcase_add_test(tr, loss_at_deadline_when_unreachable);
    tcase_add_test(tr, command_timeout_bounds_calls);
    tcase_add_test(tr, with_lock_reports_loss);
    tcase_add_test(tr, threads_mutual_exclusion);
    tcase_add_test(tr, threads_get_their_own_replies);
    tcase_add_test(tr, threads_fail_in_time_when_frozen);
    suite_add_tcase(s, tr);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
