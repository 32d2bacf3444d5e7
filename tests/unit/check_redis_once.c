/* check_redis_once.c -- baton_once() against a real redis-server: the three
 * outcomes, the marker (written only after success, with its TTL), fn's
 * failure, a processor that dies mid-fn, and five concurrent deliveries. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baton.h"
#include "testutil.h"

static struct baton_client *client(void) { return tu_client(1000); }

struct work {
    atomic_int runs;
    int result;      /* what fn returns */
    int64_t hold_ms; /* how long fn works */
    uint64_t fence;  /* the lock's fence, seen by fn */
    atomic_bool started;
};

static int process(struct baton_lock *lk, void *arg)
{
    struct work *w = arg;
    atomic_fetch_add(&w->runs, 1);
    w->fence = baton_lock_fence(lk);
    atomic_store(&w->started, true);
    if (w->hold_ms > 0)
        tu_sleep_ms(w->hold_ms);
    return w->result;
}

START_TEST(processed_then_already_processed)
{
    struct baton_client *c = client();
    struct work w = {0};
    ck_assert_int_eq(baton_once(c, "hook:1", 60000, process, &w), BATON_ONCE_PROCESSED);
    ck_assert_int_eq(atomic_load(&w.runs), 1);
    /* The marker: the run's fence, with the TTL asked for. */
    ck_assert_int_eq(tu_redis_int("GET baton:{hook:1}:done"), (long long)w.fence);
    long long pttl = tu_redis_int("PTTL baton:{hook:1}:done");
    ck_assert_int_gt(pttl, 59000);
    ck_assert_int_le(pttl, 60000);
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{hook:1}"), 0); /* the lock is released */
    ck_assert_int_eq(baton_once(c, "hook:1", 60000, process, &w), BATON_ONCE_ALREADY_PROCESSED);
    ck_assert_int_eq(atomic_load(&w.runs), 1);
    baton_client_free(c);
}
END_TEST

struct delivery {
    struct baton_client *c;
    const char *id;
    struct work *w;
    int rc;
};

static void *deliver(void *arg)
{
    struct delivery *d = arg;
    d->rc = baton_once(d->c, d->id, 60000, process, d->w);
    return NULL;
}

/* While one processes, another delivery is a duplicate, at once. */
START_TEST(duplicate_while_processing)
{
    struct baton_client *c = client();
    struct work w = {.hold_ms = 500};
    struct delivery d = {.c = c, .id = "hook:2", .w = &w};
    pthread_t t;
    pthread_create(&t, NULL, deliver, &d);
    while (!atomic_load(&w.started))
        tu_sleep_ms(1);
    int64_t t0 = tu_now_ns();
    ck_assert_int_eq(baton_once(c, "hook:2", 60000, process, &w), BATON_ONCE_DUPLICATE);
    ck_assert_int_lt(tu_now_ns() - t0, INT64_C(100000000));
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{hook:2}:done"), 0); /* not done yet */
    pthread_join(t, NULL);
    ck_assert_int_eq(d.rc, BATON_ONCE_PROCESSED);
    ck_assert_int_eq(atomic_load(&w.runs), 1);
    baton_client_free(c);
}
END_TEST

/* Five concurrent deliveries of one id, each from its own client: one
 * processes it, the others are duplicate or already_processed. */
START_TEST(five_concurrent_deliveries)
{
    enum { N = 5 };
    struct baton_client *cs[N];
    struct work w = {.hold_ms = 50};
    struct delivery d[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        cs[i] = client();
        d[i] = (struct delivery){.c = cs[i], .id = "hook:5x", .w = &w};
    }
    for (int i = 0; i < N; i++)
        pthread_create(&t[i], NULL, deliver, &d[i]);
    int processed = 0, others = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        if (d[i].rc == BATON_ONCE_PROCESSED)
            processed++;
        else if (d[i].rc == BATON_ONCE_DUPLICATE || d[i].rc == BATON_ONCE_ALREADY_PROCESSED)
            others++;
        baton_client_free(cs[i]);
    }
    ck_assert_int_eq(processed, 1);
    ck_assert_int_eq(others, N - 1);
    ck_assert_int_eq(atomic_load(&w.runs), 1);
}
END_TEST

/* fn fails: no marker, its error comes back, and the id can be processed
 * again at once. */
START_TEST(failure_leaves_no_marker)
{
    struct baton_client *c = client();
    struct work w = {.result = -1000};
    ck_assert_int_eq(baton_once(c, "hook:3", 60000, process, &w), -1000);
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{hook:3}:done baton:{hook:3}"), 0);
    w.result = 7; /* positive: outcomes are positive, so it is EINVAL */
    ck_assert_int_eq(baton_once(c, "hook:3", 60000, process, &w), BATON_EINVAL);
    w.result = 0;
    ck_assert_int_eq(baton_once(c, "hook:3", 60000, process, &w), BATON_ONCE_PROCESSED);
    ck_assert_int_eq(atomic_load(&w.runs), 3);
    baton_client_free(c);
}
END_TEST

static int die(struct baton_lock *lk, void *arg)
{
    (void)lk;
    (void)arg;
    _exit(0); /* the processor crashes mid-work */
}

/* A processor dies in fn: duplicate until its lock's lease runs out, then
 * processable again. */
START_TEST(crash_mid_fn)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct baton_client *cc = NULL;
        if (baton_client_new(tu_redis_url(), NULL, &cc) != BATON_OK)
            _exit(2);
        struct baton_once_opts o = {.marker_ttl_ms = 60000, .lock_ttl_ms = 600};
        (void)baton_once_with(cc, "hook:crash", &o, die, NULL);
        _exit(3);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int64_t died = tu_now_ns();
    struct baton_client *c = client();
    struct work w = {0};
    ck_assert_int_eq(baton_once(c, "hook:crash", 60000, process, &w), BATON_ONCE_DUPLICATE);
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{hook:crash}:done"), 0);
    int rc;
    while ((rc = baton_once(c, "hook:crash", 60000, process, &w)) == BATON_ONCE_DUPLICATE)
        tu_sleep_ms(20);
    ck_assert_int_eq(rc, BATON_ONCE_PROCESSED);
    ck_assert_int_lt(tu_now_ns() - died, INT64_C(800000000)); /* within the 600 ms lease */
    ck_assert_int_eq(atomic_load(&w.runs), 1);
    baton_client_free(c);
}
END_TEST

/* The marker is remembered for ttl, then the id is new again. */
START_TEST(marker_expires)
{
    struct baton_client *c = client();
    struct work w = {0};
    ck_assert_int_eq(baton_once(c, "hook:ttl", 200, process, &w), BATON_ONCE_PROCESSED);
    ck_assert_int_eq(baton_once(c, "hook:ttl", 200, process, &w), BATON_ONCE_ALREADY_PROCESSED);
    tu_sleep_ms(300);
    ck_assert_int_eq(baton_once(c, "hook:ttl", 200, process, &w), BATON_ONCE_PROCESSED);
    ck_assert_int_eq(atomic_load(&w.runs), 2);
    baton_client_free(c);
}
END_TEST

static int steal(struct baton_lock *lk, void *arg)
{
    (void)arg;
    free(tu_redis("DEL baton:{hook:lost}"));
    for (int i = 0; i < 200 && !baton_lock_lost(lk); i++)
        tu_sleep_ms(5);
    return 0;
}

/* The lock lost while fn ran: ELOST, but the work was done, so marked. */
START_TEST(lost_while_processing)
{
    struct baton_client *c = client();
    struct baton_once_opts o = {.lock_ttl_ms = 300};
    ck_assert_int_eq(baton_once_with(c, "hook:lost", &o, steal, NULL), BATON_ELOST);
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{hook:lost}:done"), 1);
    baton_client_free(c);
}
END_TEST

START_TEST(names_and_bad_arguments)
{
    ck_assert_str_eq(baton_once_result_name(BATON_ONCE_PROCESSED), "processed");
    ck_assert_str_eq(baton_once_result_name(BATON_ONCE_DUPLICATE), "duplicate");
    ck_assert_str_eq(baton_once_result_name(BATON_ONCE_ALREADY_PROCESSED), "already_processed");
    ck_assert_str_eq(baton_once_result_name(BATON_EIO), "EIO");
    struct baton_client *c = client();
    struct work w = {0};
    ck_assert_int_eq(baton_once(c, "", 1000, process, &w), BATON_EINVAL);
    ck_assert_int_eq(baton_once(c, NULL, 1000, process, &w), BATON_EINVAL);
    ck_assert_int_eq(baton_once(c, "x", 0, process, &w), BATON_EINVAL);
    ck_assert_int_eq(baton_once(c, "x", 1000, NULL, &w), BATON_EINVAL);
    ck_assert_int_eq(baton_once(NULL, "x", 1000, process, &w), BATON_EINVAL);
    ck_assert_int_eq(atomic_load(&w.runs), 0);
    baton_client_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("redis_once");
    TCase *tc = tcase_create("once");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, processed_then_already_processed);
    tcase_add_test(tc, duplicate_while_processing);
    tcase_add_test(tc, five_concurrent_deliveries);
    tcase_add_test(tc, failure_leaves_no_marker);
    tcase_add_test(tc, crash_mid_fn);
    tcase_add_test(tc, marker_expires);
    tcase_add_test(tc, lost_while_processing);
    tcase_add_test(tc, names_and_bad_arguments);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
