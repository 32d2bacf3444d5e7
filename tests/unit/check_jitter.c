/* check_jitter.c -- a job's jitter (jitter.h) on its own: the delay is the
 * documented function of (group, job, tick) (a vector computed outside,
 * with sha1sum), the same at every call, within [0, jitter), spread evenly,
 * and different for another group, job or tick; the shortest interval of a
 * schedule; and the instant a tick's run begins (schedule.h's
 * sched_start_ms), which never reaches the next tick.
 *
 * Each case is named after the rule it checks. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "cron.h"
#include "jitter.h"
#include "jobs.h"
#include "schedule.h"
#include "testutil.h"

/* The vector: printf 'g\0backup\0%s' 1700000000 | sha1sum gives
 * 9c1f90672d231322..., whose first 8 bytes, as a number, are 162 mod 800
 * and 892962 mod 3600000. */
START_TEST(the_delay_is_the_documented_hash)
{
    ck_assert_int_eq(jitter_delay_ms("g", "backup", 1700000000, 800), 162);
    ck_assert_int_eq(jitter_delay_ms("g", "backup", 1700000000, 3600000), 892962);
}
END_TEST

START_TEST(no_jitter_is_no_delay)
{
    ck_assert_int_eq(jitter_delay_ms("g", "backup", 1700000000, 0), 0);
    ck_assert_int_eq(jitter_delay_ms("g", "backup", 1700000000, -5), 0);
    ck_assert_int_eq(jitter_delay_ms("g", "backup", 1700000000, 1), 0);
}
END_TEST

START_TEST(the_same_tick_gets_the_same_delay_every_time)
{
    for (int64_t t = 1700000000; t < 1700000000 + 1000; t++) {
        int64_t d = jitter_delay_ms("fleet", "report", t, 60000);
        ck_assert_int_eq(jitter_delay_ms("fleet", "report", t, 60000), d);
    }
}
END_TEST

START_TEST(a_null_group_is_the_empty_one)
{
    ck_assert_int_eq(jitter_delay_ms(NULL, "j", 42, 1000), jitter_delay_ms("", "j", 42, 1000));
}
END_TEST

START_TEST(the_delay_is_within_the_jitter_and_spread_evenly)
{
    /* 20,000 ticks into 10 buckets of a 10s jitter: each bucket within 10 %
     * of its fair share (2,000; a binomial's sigma is about 42), and both
     * ends of the range reached closely. */
    enum { N = 20000, B = 10 };
    const int64_t jitter = 10000;
    int buckets[B] = {0};
    int64_t lo = jitter, hi = -1;
    for (int64_t i = 0; i < N; i++) {
        int64_t d = jitter_delay_ms("g", "spread", 1700000000 + i, jitter);
        ck_assert(d >= 0 && d < jitter);
        buckets[d * B / jitter]++;
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    for (int b = 0; b < B; b++)
        ck_assert_msg(buckets[b] > N / B * 9 / 10 && buckets[b] < N / B * 11 / 10,
                      "bucket %d holds %d of %d", b, buckets[b], N);
    ck_assert_int_lt(lo, 10);
    ck_assert_int_gt(hi, jitter - 10);
}
END_TEST

START_TEST(group_job_and_tick_each_change_the_delay)
{
    /* Of 200 ticks, the delays of two jobs (or groups) agree on a few by
     * chance (1 in 100,000 each), not on many. */
    int same_job = 0, same_group = 0, same_next = 0;
    for (int64_t t = 1700000000; t < 1700000000 + 200; t++) {
        int64_t d = jitter_delay_ms("g", "a", t, 100000);
        same_job += d == jitter_delay_ms("g", "b", t, 100000);
        same_group += d == jitter_delay_ms("h", "a", t, 100000);
        same_next += d == jitter_delay_ms("g", "a", t + 1, 100000);
    }
    ck_assert_int_lt(same_job, 3);
    ck_assert_int_lt(same_group, 3);
    ck_assert_int_lt(same_next, 3);
    /* The NUL between the parts: "ab"+"c" is not "a"+"bc". */
    ck_assert_int_ne(jitter_delay_ms("ab", "c", 1, 1000000007),
                     jitter_delay_ms("a", "bc", 1, 1000000007));
}
END_TEST

static int64_t shortest(const char *expr, int64_t stop_ms)
{
    struct cron_expr *e = NULL;
    struct cron_error err;
    ck_assert_int_eq(cron_parse(expr, &e, &err), 0);
    int64_t s = jitter_shortest_ms(e, NULL, 1700000000, stop_ms, NULL);
    cron_free(e);
    return s;
}

START_TEST(the_shortest_interval_is_found_in_the_schedule)
{
    ck_assert_int_eq(shortest("* * * * * *", 0), 1000);
    ck_assert_int_eq(shortest("*/5 * * * * *", 0), 5000);
    ck_assert_int_eq(shortest("@every 90s", 0), 90000);
    ck_assert_int_eq(shortest("@hourly", 0), 3600000);
    /* Uneven: 23:00 and midnight are an hour apart, midnight and 23:00 23. */
    ck_assert_int_eq(shortest("0 0 0,23 * * *", 0), 3600000);
    ck_assert_int_eq(shortest("0 0,50 * * * *", 0), 600000);
    /* It stops at the first interval at most stop_ms. */
    ck_assert_int_le(shortest("0 0 0,23 * * *", 86400000), 86400000);
}
END_TEST

static struct jobs *load(const char *yaml)
{
    struct jobs *j = NULL;
    char err[512];
    struct jobs_base base = {.timezone = "UTC", .group = "g"};
    ck_assert_msg(jobs_load_buffer_base("j.yaml", yaml, strlen(yaml), &base, &j, err, sizeof err) ==
                      0,
                  "%s", err);
    return j;
}

START_TEST(a_jobs_start_is_its_tick_delayed_by_its_groups_hash)
{
    struct jobs *j = load("jobs:\n"
                          "  - {name: backup, schedule: \"* * * * * *\", shell: x, jitter: 800ms}\n"
                          "  - {name: plain, schedule: \"* * * * * *\", shell: x}\n");
    ck_assert_str_eq(j->v[0].group, "g");
    ck_assert_int_eq(j->v[0].jitter_ms, 800);
    ck_assert_int_eq(sched_jitter_ms(&j->v[0], 1700000000), 162);
    ck_assert_int_eq(sched_start_ms(&j->v[0], 1700000000), INT64_C(1700000000162));
    ck_assert_int_eq(sched_jitter_ms(&j->v[1], 1700000000), 0);
    ck_assert_int_eq(sched_start_ms(&j->v[1], 1700000000), INT64_C(1700000000000));
    jobs_free(j);
}
END_TEST

START_TEST(a_start_never_reaches_the_next_tick)
{
    /* A 10h jitter on ticks 30 minutes apart cannot load; the runner still
     * keeps each start before the next tick if a schedule gets closer than
     * the load saw (a DST change): simulated by setting the jitter after. */
    struct jobs *j = load("jobs:\n"
                          "  - {name: close, schedule: \"0 */30 * * * *\", shell: x}\n");
    struct job *job = &j->v[0];
    job->jitter_ms = 10 * 3600 * 1000;
    int cut = 0;
    for (int64_t t = 1700001000; t < 1700001000 + 200 * 1800; t += 1800) {
        int64_t next = sched_next(job, t), start = sched_start_ms(job, t);
        ck_assert_int_ge(start, t * 1000);
        ck_assert_int_lt(start, next * 1000);
        cut += start == next * 1000 - 1;
    }
    ck_assert_int_gt(cut, 100); /* most of a 10h delay is cut to 30 minutes */
    jobs_free(j);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("jitter");
    TCase *tc = tcase_create("jitter");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, the_delay_is_the_documented_hash);
    tcase_add_test(tc, no_jitter_is_no_delay);
    tcase_add_test(tc, the_same_tick_gets_the_same_delay_every_time);
    tcase_add_test(tc, a_null_group_is_the_empty_one);
    tcase_add_test(tc, the_delay_is_within_the_jitter_and_spread_evenly);
    tcase_add_test(tc, group_job_and_tick_each_change_the_delay);
    tcase_add_test(tc, the_shortest_interval_is_found_in_the_schedule);
    tcase_add_test(tc, a_jobs_start_is_its_tick_delayed_by_its_groups_hash);
    tcase_add_test(tc, a_start_never_reaches_the_next_tick);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
