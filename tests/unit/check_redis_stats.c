/* check_redis_stats.c -- lock statistics against a real redis-server: each
 * counter moved by what a user does (grant, release, contention, timeout,
 * loss, held), the wait histogram, key classes and their cap, counting
 * from many threads, per-client books, and the Prometheus text output,
 * exact lines and validated by `promtool check metrics` (which must be
 * installed: the test fails without it). */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baton.h"
#include "baton_election.h"
#include "testutil.h"

#define PROMTOOL "/usr/bin/promtool"

static struct baton_client *client(void) { return tu_client(1000); }

static struct baton_stats get(struct baton_client *c, const char *cls)
{
    struct baton_stats s;
    ck_assert_int_eq(baton_stats_get(c, cls, &s), BATON_OK);
    ck_assert_str_eq(s.key_class, cls);
    return s;
}

START_TEST(grants_releases_and_held)
{
    struct baton_client *c = client();
    struct baton_lock *a = NULL, *b = NULL;
    struct baton_stats s = get(c, "acct");
    ck_assert_uint_eq(s.acquired, 0);
    ck_assert_int_eq(baton_lock_try(c, "acct:1", NULL, &a), BATON_OK);
    ck_assert_int_eq(baton_lock_acquire(c, "acct:2", NULL, &b), BATON_OK);
    s = get(c, "acct");
    ck_assert_uint_eq(s.acquired, 2);
    ck_assert_int_eq(s.held, 2);
    ck_assert_uint_eq(s.released, 0);
    ck_assert_uint_eq(s.contention, 0);
    ck_assert_uint_eq(s.wait_count, 2);
    ck_assert_uint_eq(s.wait_le[BATON_STATS_BUCKETS - 1], 2);
    ck_assert_int_eq(baton_lock_release(a), BATON_OK);
    baton_lock_free(a);
    s = get(c, "acct");
    ck_assert_uint_eq(s.released, 1);
    ck_assert_int_eq(s.held, 1);
    baton_lock_free(b); /* freed without release: no longer counted as held */
    s = get(c, "acct");
    ck_assert_int_eq(s.held, 0);
    ck_assert_uint_eq(s.released, 1);
    /* A key without a colon is its own class. */
    ck_assert_int_eq(baton_lock_try(c, "plain", NULL, &a), BATON_OK);
    baton_lock_release(a);
    baton_lock_free(a);
    ck_assert_uint_eq(get(c, "plain").acquired, 1);
    ck_assert_uint_eq(get(c, "acct").acquired, 2);
    baton_client_free(c);
}
END_TEST

START_TEST(contention_and_timeouts)
{
    struct baton_client *c = client();
    struct baton_lock *h = NULL, *x = NULL;
    ck_assert_int_eq(baton_lock_try(c, "job:a", NULL, &h), BATON_OK);
    ck_assert_int_eq(baton_lock_try(c, "job:a", NULL, &x), BATON_ETAKEN);
    struct baton_stats s = get(c, "job");
    ck_assert_uint_eq(s.contention, 1);
    ck_assert_uint_eq(s.acquire_timeouts, 0);
    ck_assert_int_eq(
        baton_lock_acquire(c, "job:a", &(struct baton_lock_opts){.max_wait_ms = 100}, &x),
        BATON_ETIMEDOUT);
    s = get(c, "job");
    ck_assert_uint_eq(s.contention, 2);
    ck_assert_uint_eq(s.acquire_timeouts, 1);
    ck_assert_uint_eq(s.acquired, 1);
    baton_lock_release(h);
    baton_lock_free(h);
    baton_client_free(c);
}
END_TEST

struct later {
    struct baton_lock *lk;
    int64_t ms;
};

static void *release_later(void *arg)
{
    struct later *l = arg;
    tu_sleep_ms(l->ms);
    baton_lock_release(l->lk);
    return NULL;
}

/* A wait of ~300 ms lands in the (0.25, 0.5] bucket, and counts as
 * contention. */
START_TEST(wait_histogram)
{
    struct baton_client *c = client();
    struct baton_lock *h = NULL, *w = NULL;
    ck_assert_int_eq(baton_lock_try(c, "wait:x", NULL, &h), BATON_OK);
    struct later l = {h, 300};
    pthread_t t;
    pthread_create(&t, NULL, release_later, &l);
    ck_assert_int_eq(
        baton_lock_acquire(c, "wait:x", &(struct baton_lock_opts){.max_wait_ms = 5000}, &w),
        BATON_OK);
    pthread_join(t, NULL);
    struct baton_stats s = get(c, "wait");
    ck_assert_uint_eq(s.acquired, 2);
    ck_assert_uint_eq(s.contention, 1);
    /* Bounds: ... 0.1 (7), 0.25 (8), 0.5 (9) ... */
    ck_assert_uint_eq(s.wait_le[8], 1); /* only the first, immediate grant */
    ck_assert_uint_eq(s.wait_le[9], 2);
    ck_assert_uint_eq(s.wait_count, 2);
    ck_assert(s.wait_sum_seconds > 0.29 && s.wait_sum_seconds < 0.6);
    baton_lock_release(w);
    baton_lock_free(w);
    baton_lock_free(h);
    baton_client_free(c);
}
END_TEST

START_TEST(loss_counted)
{
    struct baton_client *c = client();
    struct baton_lock *lk = NULL;
    ck_assert_int_eq(baton_lock_try(c, "lost:1",
                                    &(struct baton_lock_opts){.ttl_ms = 300, .auto_renew = true},
                                    &lk),
                     BATON_OK);
    free(tu_redis("DEL baton:{lost:1}"));
    for (int i = 0; i < 200 && !baton_lock_lost(lk); i++)
        tu_sleep_ms(5);
    ck_assert(baton_lock_lost(lk));
    tu_sleep_ms(20);
    struct baton_stats s = get(c, "lost");
    ck_assert_uint_eq(s.lost, 1);
    ck_assert_int_eq(s.held, 0);
    ck_assert_int_eq(baton_lock_release(lk), BATON_ELOST);
    s = get(c, "lost");
    ck_assert_uint_eq(s.lost, 1); /* counted once */
    ck_assert_uint_eq(s.released, 0);
    ck_assert_int_eq(s.held, 0);
    baton_lock_free(lk);
    baton_client_free(c);
}
END_TEST

/* Semaphore permits count under their name's class; multi-locks per key;
 * baton_once() under its id's; elections not at all. */
START_TEST(other_primitives_counted)
{
    struct baton_client *c = client();
    struct baton_permit *p = NULL;
    ck_assert_int_eq(baton_sem_try(c, "api:ext", 2, NULL, &p), BATON_OK);
    ck_assert_int_eq(get(c, "api").held, 1);
    ck_assert_int_eq(baton_sem_release(p), BATON_OK);
    baton_permit_free(p);
    struct baton_multi *m = NULL;
    const char *keys[2] = {"{bank}:1", "{bank}:2"};
    ck_assert_int_eq(baton_multi_acquire(c, keys, 2, NULL, &m), BATON_OK);
    ck_assert_int_eq(get(c, "{bank}").held, 2);
    baton_multi_release(m);
    baton_multi_free(m);
    struct baton_stats s = get(c, "api");
    ck_assert_uint_eq(s.acquired, 1);
    ck_assert_uint_eq(s.released, 1);
    ck_assert_int_eq(s.held, 0);
    s = get(c, "{bank}");
    ck_assert_uint_eq(s.acquired, 2);
    ck_assert_uint_eq(s.released, 2);
    struct baton_election *e = NULL;
    ck_assert_int_eq(baton_election_new(c, "grp", NULL, &e), BATON_OK);
    ck_assert_int_eq(baton_election_campaign(e, NULL), BATON_OK);
    baton_election_resign(e);
    baton_election_free(e);
    struct baton_stats all[BATON_STATS_MAX_CLASSES + 1];
    ck_assert_int_eq(baton_stats_classes(c, all, BATON_STATS_MAX_CLASSES + 1), 2);
    baton_client_free(c);
}
END_TEST

/* 40 classes: the first 32 keep their own, the rest count as "other". */
START_TEST(class_cap)
{
    struct baton_client *c = client();
    for (int i = 0; i < 40; i++) {
        char key[32];
        struct baton_lock *lk = NULL;
        snprintf(key, sizeof key, "c%02d:key", i);
        ck_assert_int_eq(baton_lock_try(c, key, NULL, &lk), BATON_OK);
        baton_lock_release(lk);
        baton_lock_free(lk);
    }
    struct baton_lock *lk = NULL;
    ck_assert_int_eq(baton_lock_try(c, "other:x", NULL, &lk), BATON_OK); /* named "other" */
    baton_lock_release(lk);
    baton_lock_free(lk);
    struct baton_stats all[BATON_STATS_MAX_CLASSES + 1];
    int n = baton_stats_classes(c, all, BATON_STATS_MAX_CLASSES + 1);
    ck_assert_int_eq(n, BATON_STATS_MAX_CLASSES + 1);
    ck_assert_str_eq(all[0].key_class, "c00");
    ck_assert_str_eq(all[31].key_class, "c31");
    ck_assert_str_eq(all[32].key_class, "other");
    ck_assert_uint_eq(all[32].acquired, 9);
    ck_assert_uint_eq(get(c, "c35").acquired, 0); /* never got its own series */
    ck_assert_int_eq(baton_stats_classes(c, all, 3), 3);
    ck_assert_int_eq(baton_stats_classes(c, NULL, 0), 0);
    ck_assert_int_eq(baton_stats_classes(c, NULL, 2), BATON_EINVAL);
    baton_client_free(c);
}
END_TEST

struct counter_arg {
    struct baton_client *c;
    int id;
    int failures;
};

static void *hammer(void *arg)
{
    struct counter_arg *a = arg;
    char key[32];
    snprintf(key, sizeof key, "mt:%d", a->id);
    for (int i = 0; i < 150; i++) {
        struct baton_lock *lk = NULL;
        if (baton_lock_try(a->c, key, NULL, &lk) != BATON_OK || baton_lock_release(lk) != BATON_OK)
            a->failures++;
        baton_lock_free(lk);
    }
    return NULL;
}

/* Eight threads, one client: not one count lost. */
START_TEST(threads_count_exactly)
{
    enum { T = 8 };
    struct baton_client *c = client();
    struct counter_arg a[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        a[i] = (struct counter_arg){c, i, 0};
        pthread_create(&th[i], NULL, hammer, &a[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(a[i].failures, 0);
    }
    struct baton_stats s = get(c, "mt");
    ck_assert_uint_eq(s.acquired, T * 150);
    ck_assert_uint_eq(s.released, T * 150);
    ck_assert_uint_eq(s.wait_count, T * 150);
    ck_assert_int_eq(s.held, 0);
    baton_client_free(c);
}
END_TEST

START_TEST(per_client_books)
{
    struct baton_client *c1 = client(), *c2 = client();
    struct baton_lock *lk = NULL;
    ck_assert_int_eq(baton_lock_try(c1, "own:1", NULL, &lk), BATON_OK);
    baton_lock_release(lk);
    baton_lock_free(lk);
    ck_assert_uint_eq(get(c1, "own").acquired, 1);
    ck_assert_uint_eq(get(c2, "own").acquired, 0);
    baton_client_free(c1);
    baton_client_free(c2);
}
END_TEST

/* Writes c's stats to a file and returns its contents. Returns: owned;
 * free with free(). */
static char *prometheus_text(struct baton_client *c, const char *path)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(baton_stats_write_prometheus(c, f), BATON_OK);
    fclose(f);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char *text = calloc(1, 1 << 20);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* Runs `promtool check metrics < path`; fails the test unless it exits 0. */
static void promtool_check(const char *path)
{
    ck_assert_msg(access(PROMTOOL, X_OK) == 0,
                  PROMTOOL " is missing: install the Debian package prometheus");
    char cmd[512];
    snprintf(cmd, sizeof cmd, PROMTOOL " check metrics < %s > %s.out 2>&1", path, path);
    int st = system(cmd);
    char out[4096] = "";
    snprintf(cmd, sizeof cmd, "%s.out", path);
    FILE *f = fopen(cmd, "r");
    if (f != NULL) {
        size_t n = fread(out, 1, sizeof out - 1, f);
        out[n] = '\0';
        fclose(f);
    }
    unlink(cmd);
    ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "promtool check metrics failed (status %d):\n%s", st, out);
}

START_TEST(prometheus_output)
{
    struct baton_client *c = client();
    char path[] = "/tmp/baton-stats-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);

    /* Nothing counted yet: the families alone are valid. */
    char *text = prometheus_text(c, path);
    ck_assert_ptr_nonnull(strstr(text, "# TYPE baton_lock_acquired_total counter\n"));
    ck_assert_ptr_null(strstr(text, "key_class"));
    free(text);
    promtool_check(path);

    struct baton_lock *h = NULL, *lk = NULL;
    ck_assert_int_eq(baton_lock_try(c, "order:1", NULL, &h), BATON_OK);
    ck_assert_int_eq(
        baton_lock_acquire(c, "order:1", &(struct baton_lock_opts){.max_wait_ms = 50}, &lk),
        BATON_ETIMEDOUT);
    /* Classes that need escaping or replacing in a label value. */
    const char *odd[3] = {"say \"hi\":1", "back\\slash:1", "caf\xc3\xa9\nnl:1"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(baton_lock_try(c, odd[i], NULL, &lk), BATON_OK);
        baton_lock_release(lk);
        baton_lock_free(lk);
    }
    text = prometheus_text(c, path);
    const char *want[] = {
        "# HELP baton_lock_acquired_total ",
        "# TYPE baton_lock_acquired_total counter\n",
        "baton_lock_acquired_total{key_class=\"order\"} 1\n",
        "baton_lock_acquire_timeouts_total{key_class=\"order\"} 1\n",
        "baton_lock_contention_total{key_class=\"order\"} 1\n",
        "baton_lock_lost_total{key_class=\"order\"} 0\n",
        "baton_lock_released_total{key_class=\"order\"} 0\n",
        "# TYPE baton_lock_held gauge\n",
        "baton_lock_held{key_class=\"order\"} 1\n",
        "# TYPE baton_lock_acquire_wait_seconds histogram\n",
        "baton_lock_acquire_wait_seconds_bucket{key_class=\"order\",le=\"0.0005\"} ",
        "baton_lock_acquire_wait_seconds_bucket{key_class=\"order\",le=\"10\"} 1\n",
        "baton_lock_acquire_wait_seconds_bucket{key_class=\"order\",le=\"+Inf\"} 1\n",
        "baton_lock_acquire_wait_seconds_count{key_class=\"order\"} 1\n",
        "baton_lock_acquire_wait_seconds_sum{key_class=\"order\"} ",
        "baton_lock_acquired_total{key_class=\"say \\\"hi\\\"\"} 1\n",
        "baton_lock_acquired_total{key_class=\"back\\\\slash\"} 1\n",
        "baton_lock_acquired_total{key_class=\"caf___nl\"} 1\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(text, want[i]) != NULL, "missing [%s] in:\n%s", want[i], text);
    free(text);
    promtool_check(path);

    /* A full table, "other" included, is still valid. */
    for (int i = 0; i < 40; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%02d:x", i);
        ck_assert_int_eq(baton_lock_try(c, key, NULL, &lk), BATON_OK);
        baton_lock_release(lk);
        baton_lock_free(lk);
    }
    text = prometheus_text(c, path);
    ck_assert_ptr_nonnull(strstr(text, "baton_lock_acquired_total{key_class=\"other\"} "));
    free(text);
    promtool_check(path);
    unlink(path);

    /* A write error is reported. */
    FILE *full = fopen("/dev/full", "w");
    ck_assert_ptr_nonnull(full);
    ck_assert_int_eq(baton_stats_write_prometheus(c, full), BATON_EIO);
    fclose(full);
    ck_assert_int_eq(baton_stats_write_prometheus(NULL, stdout), BATON_EINVAL);
    baton_lock_release(h);
    baton_lock_free(h);
    baton_client_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("redis_stats");
    TCase *tc = tcase_create("stats");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, grants_releases_and_held);
    tcase_add_test(tc, contention_and_timeouts);
    tcase_add_test(tc, wait_histogram);
    tcase_add_test(tc, loss_counted);
    tcase_add_test(tc, other_primitives_counted);
    tcase_add_test(tc, class_cap);
    tcase_add_test(tc, threads_count_exactly);
    tcase_add_test(tc, per_client_books);
    tcase_add_test(tc, prometheus_output);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
