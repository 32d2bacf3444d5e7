/* check_redis_multi.c -- the multi-lock against a real redis-server: one
 * script when the keys share a hash slot, sorted one-by-one otherwise, all
 * or nothing, waiting, exclusion with single locks, and {A,B} against
 * {B,A} from two threads without deadlock. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton.h"
#include "topology_int.h" /* baton__key_slot */
#include "testutil.h"

static struct baton_client *client(void) { return tu_client(1000); }

/* Script calls so far (EVALSHA + EVAL), from INFO commandstats. */
static long long script_calls(void)
{
    char *info = tu_redis("INFO commandstats");
    long long total = 0;
    const char *names[2] = {"cmdstat_evalsha:calls=", "cmdstat_eval:calls="};
    for (int i = 0; i < 2; i++) {
        const char *p = strstr(info, names[i]);
        if (p != NULL)
            total += strtoll(p + strlen(names[i]), NULL, 10);
    }
    free(info);
    return total;
}

START_TEST(key_slots)
{
    /* CRC-16/XMODEM check value of "123456789" is 0x31c3. */
    ck_assert_uint_eq(baton__key_slot("123456789", 9), 0x31c3 & 16383);
    /* Hash tags: the part between the first { and the next }. */
    ck_assert_uint_eq(baton__key_slot("{user1000}.following", 20),
                      baton__key_slot("{user1000}.followers", 20));
    ck_assert_uint_eq(baton__key_slot("{user1000}.following", 20), baton__key_slot("user1000", 8));
    ck_assert_uint_eq(baton__key_slot("foo{}{bar}", 10), baton__key_slot("foo{}{bar}", 10));
    ck_assert_uint_ne(baton__key_slot("foo{}{bar}", 10), baton__key_slot("bar", 3));
    ck_assert_uint_eq(baton__key_slot("foo{{bar}}zap", 13), baton__key_slot("{bar", 4));
    ck_assert_uint_eq(baton__key_slot("foo{bar}{zap}", 13), baton__key_slot("bar", 3));
    ck_assert_uint_lt(baton__key_slot("anything", 8), 16384);
}
END_TEST

/* {acct}:1..3 -> baton:{{acct}:1} ...: one slot, one script. */
START_TEST(one_slot_one_script)
{
    struct baton_client *c = client();
    struct baton_multi *m = NULL;
    const char *keys[3] = {"{acct}:3", "{acct}:1", "{acct}:2"};
    struct baton_multi *wm = NULL;
    /* Load the scripts first so that the count below is one EVALSHA. */
    ck_assert_int_eq(baton_multi_acquire(c, keys, 3, NULL, &wm), BATON_OK);
    baton_multi_release(wm);
    baton_multi_free(wm);

    long long before = script_calls();
    ck_assert_int_eq(baton_multi_acquire(c, keys, 3, NULL, &m), BATON_OK);
    ck_assert_int_eq(script_calls() - before, 1);
    ck_assert_uint_eq(baton_multi_count(m), 3);
    ck_assert_str_eq(baton_lock_key(baton_multi_lock(m, 0)), "{acct}:1");
    ck_assert_str_eq(baton_lock_key(baton_multi_lock(m, 2)), "{acct}:3");
    for (size_t i = 0; i < 3; i++) {
        struct baton_lock *lk = baton_multi_lock(m, i);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "GET baton:{%s}", baton_lock_key(lk));
        char *v = tu_redis(cmd);
        ck_assert_str_eq(v, baton_lock_token(lk));
        free(v);
        snprintf(cmd, sizeof cmd, "GET baton:{%s}:fence", baton_lock_key(lk));
        ck_assert_int_eq(tu_redis_int(cmd), (long long)baton_lock_fence(lk));
        ck_assert_int_gt(baton_lock_remaining_ms(lk), 29000);
    }
    ck_assert(!baton_multi_lost(m));
    ck_assert_int_le(baton_multi_deadline_ns(m), baton_lock_deadline_ns(baton_multi_lock(m, 1)));
    ck_assert_int_eq(baton_multi_release(m), BATON_OK);
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{{acct}:1} baton:{{acct}:2} baton:{{acct}:3}"), 0);
    baton_multi_free(m);
    baton_client_free(c);
}
END_TEST

/* Keys in different slots are taken one by one, in sorted order. */
START_TEST(cross_slot_sequential)
{
    struct baton_client *c = client();
    struct baton_multi *m = NULL;
    const char *keys[3] = {"acct:b", "acct:c", "acct:a"};
    ck_assert_uint_ne(baton__key_slot("baton:{acct:a}", 14), baton__key_slot("baton:{acct:b}", 14));
    long long before = script_calls();
    ck_assert_int_eq(baton_multi_acquire(c, keys, 3, NULL, &m), BATON_OK);
    ck_assert_int_ge(script_calls() - before, 3);
    ck_assert_str_eq(baton_lock_key(baton_multi_lock(m, 0)), "acct:a");
    ck_assert_str_eq(baton_lock_key(baton_multi_lock(m, 1)), "acct:b");
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{acct:a} baton:{acct:b} baton:{acct:c}"), 3);
    ck_assert_int_eq(baton_multi_release(m), BATON_OK);
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{acct:a} baton:{acct:b} baton:{acct:c}"), 0);
    baton_multi_free(m);
    baton_client_free(c);
}
END_TEST

/* One key held: nothing else is taken, in either layout. */
static void all_or_nothing(const char *a, const char *b, const char *c3)
{
    struct baton_client *c = client();
    struct baton_lock *h = NULL;
    struct baton_multi *m = NULL;
    const char *keys[3] = {a, b, c3};
    char cmd[256];
    ck_assert_int_eq(baton_lock_try(c, b, NULL, &h), BATON_OK);
    ck_assert_int_eq(baton_multi_acquire(
                         c, keys, 3, &(struct baton_lock_opts){.max_wait_ms = BATON_NO_WAIT}, &m),
                     BATON_ETAKEN);
    ck_assert_ptr_null(m);
    snprintf(cmd, sizeof cmd, "EXISTS baton:{%s} baton:{%s}", a, c3);
    ck_assert_int_eq(tu_redis_int(cmd), 0);
    int64_t t0 = tu_now_ns();
    ck_assert_int_eq(
        baton_multi_acquire(c, keys, 3, &(struct baton_lock_opts){.max_wait_ms = 300}, &m),
        BATON_ETIMEDOUT);
    int64_t ms = (tu_now_ns() - t0) / 1000000;
    ck_assert_int_ge(ms, 290);
    ck_assert_int_lt(ms, 900);
    ck_assert_int_eq(tu_redis_int(cmd), 0);
    baton_lock_release(h);
    baton_lock_free(h);
    baton_client_free(c);
}

START_TEST(all_or_nothing_one_slot)
{
    all_or_nothing("{t}:x", "{t}:y", "{t}:z");
}
END_TEST

START_TEST(all_or_nothing_cross_slot)
{
    all_or_nothing("t:x", "t:y", "t:z");
}
END_TEST

struct holder_arg {
    struct baton_lock *lk;
    int64_t after_ms;
    int64_t released_ns;
};

static void *release_later(void *p)
{
    struct holder_arg *h = p;
    tu_sleep_ms(h->after_ms);
    h->released_ns = tu_now_ns();
    baton_lock_release(h->lk);
    return NULL;
}

/* A held key: the multi-lock waits and is woken by the release. */
START_TEST(waits_and_is_woken)
{
    struct baton_client *c = client();
    struct baton_lock *h = NULL;
    struct baton_multi *m = NULL;
    const char *keys[2] = {"{w}:a", "{w}:b"};
    ck_assert_int_eq(baton_lock_try(c, "{w}:b", NULL, &h), BATON_OK);
    struct holder_arg ha = {.lk = h, .after_ms = 300};
    pthread_t t;
    pthread_create(&t, NULL, release_later, &ha);
    ck_assert_int_eq(
        baton_multi_acquire(c, keys, 2,
                            &(struct baton_lock_opts){.max_wait_ms = 10000, .retry_delay_ms = 5000},
                            &m),
        BATON_OK);
    int64_t got = tu_now_ns();
    pthread_join(t, NULL);
    ck_assert_msg(got - ha.released_ns < INT64_C(500000000), "woken %lld ms after the release",
                  (long long)((got - ha.released_ns) / 1000000));
    ck_assert_int_eq(baton_multi_release(m), BATON_OK);
    baton_multi_free(m);
    baton_lock_free(h);
    baton_client_free(c);
}
END_TEST

START_TEST(duplicates_dropped)
{
    struct baton_client *c = client();
    struct baton_multi *m = NULL;
    const char *keys[3] = {"d:a", "d:a", "d:b"};
    ck_assert_int_eq(baton_multi_acquire(c, keys, 3, NULL, &m), BATON_OK);
    ck_assert_uint_eq(baton_multi_count(m), 2);
    ck_assert_ptr_null(baton_multi_lock(m, 2));
    ck_assert_int_eq(baton_multi_release(m), BATON_OK);
    baton_multi_free(m);
    baton_client_free(c);
}
END_TEST

START_TEST(release_reports_loss)
{
    struct baton_client *c = client();
    struct baton_multi *m = NULL;
    const char *keys[2] = {"{l}:a", "{l}:b"};
    ck_assert_int_eq(baton_multi_acquire(c, keys, 2, NULL, &m), BATON_OK);
    free(tu_redis("DEL baton:{{l}:a}"));
    ck_assert_int_eq(baton_multi_extend(m, 0), BATON_ELOST);
    ck_assert(baton_multi_lost(m));
    ck_assert_int_eq(baton_multi_release(m), BATON_ELOST);
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{{l}:b}"), 0); /* the other was released anyway */
    baton_multi_free(m);
    baton_client_free(c);
}
END_TEST

/* Two threads moving money between A and B in opposite directions. */
struct mover {
    struct baton_client *c;
    const char *from, *to;
    int *balance_a, *balance_b;
    const char *key_a;
    int done, failed;
};

static int move(struct baton_multi *m, void *arg)
{
    struct mover *mv = arg;
    (void)m;
    int *src = strcmp(mv->from, mv->key_a) == 0 ? mv->balance_a : mv->balance_b;
    int *dst = src == mv->balance_a ? mv->balance_b : mv->balance_a;
    int s = *src, d = *dst; /* a racy read-modify-write, made safe by the locks */
    usleep(50);
    *src = s - 1;
    *dst = d + 1;
    return 0;
}

static void *mover_main(void *arg)
{
    struct mover *mv = arg;
    const char *keys[2] = {mv->from, mv->to}; /* {A,B} in one thread, {B,A} in the other */
    struct baton_lock_opts o = {.ttl_ms = 5000, .max_wait_ms = 10000};
    for (int i = 0; i < 100; i++) {
        if (baton_with_locks(mv->c, keys, 2, &o, move, mv) == 0)
            mv->done++;
        else
            mv->failed++;
    }
    return NULL;
}

static void opposite_directions(const char *a, const char *b)
{
    struct baton_client *c1 = client(), *c2 = client();
    int ba = 1000, bb = 1000;
    struct mover m1 = {.c = c1, .from = a, .to = b, .balance_a = &ba, .balance_b = &bb, .key_a = a};
    struct mover m2 = {.c = c2, .from = b, .to = a, .balance_a = &ba, .balance_b = &bb, .key_a = a};
    pthread_t t1, t2;
    int64_t t0 = tu_now_ns();
    pthread_create(&t1, NULL, mover_main, &m1);
    pthread_create(&t2, NULL, mover_main, &m2);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    ck_assert_int_eq(m1.failed, 0);
    ck_assert_int_eq(m2.failed, 0);
    ck_assert_int_eq(m1.done, 100);
    ck_assert_int_eq(m2.done, 100);
    ck_assert_int_eq(ba, 1000); /* 100 each way */
    ck_assert_int_eq(bb, 1000);
    ck_assert_int_lt(tu_now_ns() - t0, INT64_C(20000000000));
    baton_client_free(c1);
    baton_client_free(c2);
}

START_TEST(no_deadlock_cross_slot)
{
    opposite_directions("bank:A", "bank:B");
}
END_TEST

START_TEST(no_deadlock_one_slot)
{
    opposite_directions("{bank}:A", "{bank}:B");
}
END_TEST

static int ret42(struct baton_multi *m, void *arg)
{
    (void)m;
    (void)arg;
    return 42;
}

START_TEST(bad_arguments)
{
    struct baton_client *c = client();
    struct baton_multi *m = NULL;
    const char *keys[BATON_MULTI_MAX_KEYS + 1];
    char names[BATON_MULTI_MAX_KEYS + 1][16];
    for (int i = 0; i <= BATON_MULTI_MAX_KEYS; i++) {
        snprintf(names[i], sizeof names[i], "{many}:%02d", i);
        keys[i] = names[i];
    }
    ck_assert_int_eq(baton_multi_acquire(c, keys, 0, NULL, &m), BATON_EINVAL);
    ck_assert_int_eq(baton_multi_acquire(c, keys, BATON_MULTI_MAX_KEYS + 1, NULL, &m),
                     BATON_EINVAL);
    ck_assert_int_eq(baton_multi_acquire(c, keys, BATON_MULTI_MAX_KEYS, NULL, &m), BATON_OK);
    ck_assert_uint_eq(baton_multi_count(m), BATON_MULTI_MAX_KEYS);
    ck_assert_int_eq(baton_multi_release(m), BATON_OK);
    baton_multi_free(m);
    const char *bad[2] = {"ok", ""};
    ck_assert_int_eq(baton_multi_acquire(c, bad, 2, NULL, &m), BATON_EINVAL);
    bad[1] = NULL;
    ck_assert_int_eq(baton_multi_acquire(c, bad, 2, NULL, &m), BATON_EINVAL);
    ck_assert_int_eq(baton_multi_acquire(NULL, keys, 1, NULL, &m), BATON_EINVAL);
    ck_assert_int_eq(baton_multi_acquire(c, keys, 1, NULL, NULL), BATON_EINVAL);
    ck_assert_int_eq(baton_with_locks(c, keys, 2, NULL, ret42, NULL), 42);
    ck_assert_int_eq(baton_with_locks(c, keys, 2, NULL, NULL, NULL), BATON_EINVAL);
    ck_assert_int_eq(baton_multi_release(NULL), BATON_EINVAL);
    baton_multi_free(NULL);
    baton_client_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("redis_multi");
    TCase *tc = tcase_create("multi");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, key_slots);
    tcase_add_test(tc, one_slot_one_script);
    tcase_add_test(tc, cross_slot_sequential);
    tcase_add_test(tc, all_or_nothing_one_slot);
    tcase_add_test(tc, all_or_nothing_cross_slot);
    tcase_add_test(tc, waits_and_is_woken);
    tcase_add_test(tc, duplicates_dropped);
    tcase_add_test(tc, release_reports_loss);
    tcase_add_test(tc, bad_arguments);
    suite_add_tcase(s, tc);

    TCase *td = tcase_create("deadlock");
    tcase_set_timeout(td, 60);
    tcase_add_test(td, no_deadlock_cross_slot);
    tcase_add_test(td, no_deadlock_one_slot);
    suite_add_tcase(s, td);
    return s;
}

int main(void) { return tu_run(suite()); }
