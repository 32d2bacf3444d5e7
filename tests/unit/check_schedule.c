/* check_schedule.c -- the pure rules of a tick's life (schedule.h), and the
 * run state table (run.h): table-driven, no Redis, no processes, no clock.
 *
 * Times are written as RFC 3339 strings and the jobs as jobs.yaml text, so
 * each row reads as the situation it describes. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jobs.h"
#include "run.h"
#include "schedule.h"
#include "testutil.h"
#include "trigger.h"

/* Unix seconds of "2026-03-29T01:00:00Z". */
static int64_t at(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
    ck_assert_msg(end != NULL && *end == '\0', "bad time %s", s);
    return (int64_t)timegm(&tm);
}

/* A job from one line of flow YAML: {schedule: ..., catchup: ...}. */
static struct jobs *job(const char *fields)
{
    char yaml[512], err[512];
    struct jobs *j = NULL;
    snprintf(yaml, sizeof yaml, "jobs:\n  - {name: j, shell: 'true', %s}\n", fields);
    ck_assert_msg(jobs_load_buffer("j.yaml", yaml, strlen(yaml), "UTC", &j, err, sizeof err) == 0,
                  "%s: %s", fields, err);
    return j;
}

/* ------------------------------------------------------------------------ */
/* sched_due: what is due, and what the catch-up policy makes of it */

static const struct due_case {
    const char *what;
    const char *job;   /* flow YAML fields */
    const char *after; /* the last tick dealt with */
    const char *now;   /* with the ms below */
    int now_ms;
    /* expected */
    int64_t dropped;        /* count; -1: too many to count */
    const char *dropped_first, *dropped_last;
    int64_t superseded;
    const char *missed_first, *missed_last;
    size_t nmissed;
    const char *live; /* NULL: none */
    const char *next;
} due_cases[] = {
    {"every second, 1h window: the gap is missed, now is live",
     "schedule: '* * * * * *', catchup: 1h", "2026-01-01T00:00:00Z", "2026-01-01T00:00:10Z", 100,
     0, NULL, NULL, 0, "2026-01-01T00:00:01Z", "2026-01-01T00:00:09Z", 9, "2026-01-01T00:00:10Z",
     "2026-01-01T00:00:11Z"},
    {"catchup: last keeps the newest missed tick, supersedes the rest",
     "schedule: '* * * * * *', catchup: last", "2026-01-01T00:00:00Z", "2026-01-01T00:00:10Z", 100,
     0, NULL, NULL, 8, "2026-01-01T00:00:09Z", "2026-01-01T00:00:09Z", 1, "2026-01-01T00:00:10Z",
     "2026-01-01T00:00:11Z"},
    {"catchup: 0 drops every missed tick", "schedule: '* * * * * *', catchup: 0",
     "2026-01-01T00:00:00Z", "2026-01-01T00:00:10Z", 100, 9, "2026-01-01T00:00:01Z",
     "2026-01-01T00:00:09Z", 0, NULL, NULL, 0, "2026-01-01T00:00:10Z", "2026-01-01T00:00:11Z"},
    {"a 5s window: older ticks dropped, the window's edge kept",
     "schedule: '* * * * * *', catchup: 5s", "2026-01-01T00:00:00Z", "2026-01-01T00:00:10Z", 0,
     4, "2026-01-01T00:00:01Z", "2026-01-01T00:00:04Z", 0, "2026-01-01T00:00:05Z",
     "2026-01-01T00:00:09Z", 5, "2026-01-01T00:00:10Z", "2026-01-01T00:00:11Z"},
    {"the live slack: 999 ms late is live", "schedule: '* * * * * *', catchup: 1h",
     "2026-01-01T00:00:09Z", "2026-01-01T00:00:10Z", 999, 0, NULL, NULL, 0, NULL, NULL, 0,
     "2026-01-01T00:00:10Z", "2026-01-01T00:00:11Z"},
    {"the live slack: 1000 ms late is missed", "schedule: '* * * * * *', catchup: 1h",
     "2026-01-01T00:00:09Z", "2026-01-01T00:00:11Z", 0, 0, NULL, NULL, 0,
     "2026-01-01T00:00:10Z", "2026-01-01T00:00:10Z", 1, "2026-01-01T00:00:11Z",
     "2026-01-01T00:00:12Z"},
    {"nothing due yet", "schedule: '0 * * * *', catchup: 1h", "2026-01-01T00:00:00Z",
     "2026-01-01T00:30:00Z", 0, 0, NULL, NULL, 0, NULL, NULL, 0, NULL, "2026-01-01T01:00:00Z"},
    {"more missed ticks than are queued at once: the oldest are dropped",
     "schedule: '* * * * * *', catchup: 1h", "2026-01-01T00:00:00Z", "2026-01-01T00:33:20Z", 500,
     999, "2026-01-01T00:00:01Z", "2026-01-01T00:16:39Z", 0, "2026-01-01T00:16:40Z",
     "2026-01-01T00:33:19Z", SCHED_CATCHUP_MAX, "2026-01-01T00:33:20Z", "2026-01-01T00:33:21Z"},
    {"a disabled job has nothing due", "schedule: '* * * * * *', enabled: false",
     "2026-01-01T00:00:00Z", "2026-01-01T00:00:10Z", 0, 0, NULL, NULL, 0, NULL, NULL, 0, NULL,
     NULL},
    /* Europe/Berlin springs forward on 2026-03-29 at 02:00 local (01:00Z):
     * the fixed-time 02:30 falls in the gap and fires at 03:00 local. */
    {"DST spring forward: the 02:30 in the gap is missed at 03:00 local",
     "schedule: '30 2 * * *', timezone: Europe/Berlin, catchup: 6h", "2026-03-28T23:00:00Z",
     "2026-03-29T06:00:00Z", 0, 0, NULL, NULL, 0, "2026-03-29T01:00:00Z", "2026-03-29T01:00:00Z",
     1, NULL, "2026-03-30T00:30:00Z"},
    {"DST spring forward, a 1h window: that tick is dropped",
     "schedule: '30 2 * * *', timezone: Europe/Berlin, catchup: 1h", "2026-03-28T23:00:00Z",
     "2026-03-29T06:00:00Z", 0, 1, "2026-03-29T01:00:00Z", "2026-03-29T01:00:00Z", 0, NULL, NULL,
     0, NULL, "2026-03-30T00:30:00Z"},
    /* Europe/Berlin falls back on 2026-10-25 at 03:00 local (01:00Z): an
     * interval-like schedule fires in both copies of 02:00. */
    {"DST fall back: an hourly job owes both 02:00s", "schedule: '0 * * * *', "
     "timezone: Europe/Berlin, catchup: 3h", "2026-10-24T23:30:00Z", "2026-10-25T01:30:00Z", 0, 0,
     NULL, NULL, 0, "2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", 2, NULL,
     "2026-10-25T02:00:00Z"},
    {"DST fall back, fixed-time: the repeated 02:30 fires once",
     "schedule: '30 2 * * *', timezone: Europe/Berlin, catchup: 6h", "2026-10-24T23:00:00Z",
     "2026-10-25T04:00:00Z", 0, 0, NULL, NULL, 0, "2026-10-25T00:30:00Z", "2026-10-25T00:30:00Z",
     1, NULL, "2026-10-26T01:30:00Z"},
};

START_TEST(due)
{
    const struct due_case *c = &due_cases[_i];
    struct jobs *j = job(c->job);
    int64_t missed[SCHED_CATCHUP_MAX];
    struct sched_due d;
    sched_due(&j->v[0], at(c->after), at(c->now) * 1000 + c->now_ms, missed, SCHED_CATCHUP_MAX,
              &d);
    ck_assert_msg(d.dropped.count == c->dropped, "%s: dropped %" PRId64, c->what, d.dropped.count);
    if (c->dropped != 0) {
        ck_assert_int_eq(d.dropped.first, at(c->dropped_first));
        ck_assert_int_eq(d.dropped.last, at(c->dropped_last));
        ck_assert_int_eq(d.dropped.outcome, HO_MISSED);
        ck_assert(d.dropped.reason != NULL && d.dropped.reason[0] != '\0');
    }
    ck_assert_msg(d.superseded.count == c->superseded, "%s: superseded %" PRId64, c->what,
                  d.superseded.count);
    if (c->superseded != 0)
        ck_assert_int_eq(d.superseded.outcome, HO_SUPERSEDED);
    ck_assert_msg(d.nmissed == c->nmissed, "%s: %zu missed", c->what, d.nmissed);
    if (c->nmissed > 0) {
        ck_assert_int_eq(missed[0], at(c->missed_first));
        ck_assert_int_eq(missed[d.nmissed - 1], at(c->missed_last));
        for (size_t i = 1; i < d.nmissed; i++)
            ck_assert_int_lt(missed[i - 1], missed[i]); /* in tick order */
    }
    ck_assert_int_eq(d.live, c->live != NULL ? at(c->live) : 0);
    ck_assert_int_eq(d.next, c->next != NULL ? at(c->next) : 0);
    jobs_free(j);
}
END_TEST

/* Every tick in (after, now] is accounted for exactly once: dropped,
 * superseded, missed or live; the next is after now. */
START_TEST(due_accounts_for_every_tick)
{
    static const char *const jobs_[] = {"schedule: '*/7 * * * * *', catchup: 1m",
                                        "schedule: '*/7 * * * * *', catchup: last",
                                        "schedule: '*/7 * * * * *', catchup: 0",
                                        "schedule: '@every 13s', catchup: 30s"};
    for (size_t k = 0; k < sizeof jobs_ / sizeof jobs_[0]; k++) {
        struct jobs *j = job(jobs_[k]);
        int64_t after = at("2026-05-01T00:00:00Z");
        for (int64_t span = 0; span < 400; span += 11) {
            int64_t now_ms = (after + span) * 1000 + 500, missed[SCHED_CATCHUP_MAX];
            struct sched_due d;
            sched_due(&j->v[0], after, now_ms, missed, SCHED_CATCHUP_MAX, &d);
            int64_t n = 0;
            for (int64_t t = sched_next(&j->v[0], after); t != 0 && t * 1000 <= now_ms;
                 t = sched_next(&j->v[0], t))
                n++;
            int64_t got = d.dropped.count + d.superseded.count + (int64_t)d.nmissed +
                          (d.live != 0 ? 1 : 0);
            ck_assert_msg(got == n, "%s, %" PRId64 " s: %" PRId64 " ticks, accounted %" PRId64,
                          jobs_[k], span, n, got);
            ck_assert(d.next == 0 || d.next * 1000 > now_ms);
        }
        jobs_free(j);
    }
}
END_TEST

/* A mark a year old on an every-second job: catchup: last and 0 do not go
 * through 31 million ticks one by one, and still find the right ones. */
START_TEST(due_far_behind)
{
    struct jobs *last = job("schedule: '* * * * * *', catchup: last");
    struct jobs *none = job("schedule: '* * * * * *', catchup: 0");
    int64_t missed[4], now_ms = at("2026-06-01T12:00:00Z") * 1000 + 200;
    int64_t after = at("2025-06-01T12:00:00Z");
    struct sched_due d;
    clock_t t0 = clock();
    sched_due(&last->v[0], after, now_ms, missed, 4, &d);
    ck_assert_int_eq(d.nmissed, 1);
    ck_assert_int_eq(missed[0], at("2026-06-01T11:59:59Z"));
    ck_assert_int_eq(d.superseded.count, -1);
    ck_assert_int_eq(d.superseded.first, after + 1);
    ck_assert_int_eq(d.live, at("2026-06-01T12:00:00Z"));
    sched_due(&none->v[0], after, now_ms, missed, 4, &d);
    ck_assert_int_eq(d.nmissed, 0);
    ck_assert_int_eq(d.dropped.count, -1);
    ck_assert_int_eq(d.dropped.first, after + 1);
    ck_assert_int_eq(d.live, at("2026-06-01T12:00:00Z"));
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    ck_assert_msg(secs < 2.0, "took %.2f s", secs); /* 31 M steps would take several */
    jobs_free(last);
    jobs_free(none);
}
END_TEST

/* sched_span: a paused job's ticks, counted into one range. */
START_TEST(span)
{
    struct jobs *sec = job("schedule: '* * * * * *'");
    struct jobs *min = job("schedule: '0 * * * * *'");
    struct sched_range r = {0};
    int64_t a = at("2026-01-01T00:00:00Z");
    /* (a, a+10]: ten seconds; the next after is a+11 */
    ck_assert_int_eq(sched_span(&sec->v[0], a, a + 10, HO_SKIPPED, "paused", &r), a + 11);
    ck_assert_int_eq(r.count, 10);
    ck_assert_int_eq(r.first, a + 1);
    ck_assert_int_eq(r.last, a + 10);
    ck_assert_str_eq(r.reason, "paused");
    /* extended, not restarted */
    sched_span(&sec->v[0], a + 10, a + 12, HO_SKIPPED, "paused", &r);
    ck_assert_int_eq(r.count, 12);
    ck_assert_int_eq(r.first, a + 1);
    ck_assert_int_eq(r.last, a + 12);
    /* nothing in the span: the range stays, the next tick is returned */
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(sched_span(&min->v[0], a, a + 59, HO_SKIPPED, "paused", &r), a + 60);
    ck_assert_int_eq(r.count, 0);
    /* a year of seconds: counted up to a point, then -1, and the last right */
    memset(&r, 0, sizeof r);
    int64_t y = at("2027-01-01T00:00:00Z");
    ck_assert_int_eq(sched_span(&sec->v[0], a, y, HO_SKIPPED, "paused", &r), y + 1);
    ck_assert_int_eq(r.count, -1);
    ck_assert_int_eq(r.first, a + 1);
    ck_assert_int_eq(r.last, y);
    jobs_free(sec);
    jobs_free(min);
}
END_TEST

/* The ids of baton trigger, and the run ids made from them. */
START_TEST(trigger_ids)
{
    static const char *const good[] = {"a", "20261123T101500-3f9a0c2d", "nightly:42", "x_y.z-1",
                                       "123456789012345678901234567890123456789012345678"};
    static const char *const bad[] = {"", "-a", ".a", "a b", "a/b", "é", "a{b}",
                                      "1234567890123456789012345678901234567890123456789"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        ck_assert_msg(trigger_id_ok(good[i]), "%s", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!trigger_id_ok(bad[i]), "%s", bad[i]);
    char id[TRIGGER_ID_MAX + 1], run[TRIGGER_ID_MAX + 16];
    ck_assert_int_eq(trigger_make_id(id, sizeof id), 0);
    ck_assert_msg(trigger_id_ok(id), "%s", id);
    trigger_run_id("abc", 1, run, sizeof run);
    ck_assert_str_eq(run, "abc");
    trigger_run_id("abc", 2, run, sizeof run);
    ck_assert_str_eq(run, "abc.2");
    ck_assert_str_eq(run_trigger_name(RUN_TRIGGER_MANUAL), "manual");
}
END_TEST

/* ------------------------------------------------------------------------ */
/* sched_decide: the head of a job's queue */

static const struct decide_case {
    const char *what;
    const char *job;
    bool missed, overlapped;
    int age_s; /* how old the head is */
    size_t behind, missed_behind;
    int running;
    enum sched_verdict want;
} decide_cases[] = {
    {"forbid, live, idle: start", "concurrency: forbid, catchup: 1h", false, false, 0, 0, 0, 0,
     SV_START},
    {"forbid, live, fired while a run was alive: skip", "concurrency: forbid, catchup: 1h", false,
     true, 0, 0, 0, 1, SV_SKIP},
    {"forbid, overlapped but the run ended since: still skipped",
     "concurrency: forbid, catchup: 1h", false, true, 0, 0, 0, 0, SV_SKIP},
    {"forbid, missed, a run alive: wait (the backlog runs one after another)",
     "concurrency: forbid, catchup: 1h", true, false, 5, 3, 3, 1, SV_WAIT},
    {"forbid, missed, idle: start", "concurrency: forbid, catchup: 1h", true, false, 5, 3, 3, 0,
     SV_START},
    {"allow, missed, runs alive: start", "concurrency: allow, catchup: 1h", true, false, 5, 3, 3,
     5, SV_START},
    {"allow, at its parallel limit: wait", "concurrency: allow, catchup: 1h", false, false, 0, 0,
     0, SCHED_ALLOW_PARALLEL, SV_WAIT},
    {"replace, a newer tick queued: supersede", "concurrency: replace, catchup: 1h", true, false,
     5, 1, 1, 0, SV_SUPERSEDE},
    {"replace, the newest, a run alive: replace it", "concurrency: replace, catchup: 1h", false,
     false, 0, 0, 0, 1, SV_REPLACE},
    {"replace, the newest, idle: start", "concurrency: replace, catchup: 1h", false, false, 0, 0,
     0, 0, SV_START},
    {"a missed tick older than its window: drop", "concurrency: forbid, catchup: 5s", true, false,
     6, 0, 0, 0, SV_DROP},
    {"a missed tick on its window's edge: start", "concurrency: forbid, catchup: 5s", true, false,
     5, 0, 0, 0, SV_START},
    {"catchup: last, a newer missed tick queued: supersede", "concurrency: allow, catchup: last",
     true, false, 5, 1, 1, 0, SV_SUPERSEDE},
    {"catchup: last, a newer live tick only: start", "concurrency: allow, catchup: last", true,
     false, 5, 1, 0, 0, SV_START},
    {"catchup: 0, a tick that became missed while waiting: drop", "concurrency: allow, catchup: 0",
     true, false, 2, 0, 0, 0, SV_DROP},
};

START_TEST(decide)
{
    const struct decide_case *c = &decide_cases[_i];
    char fields[256];
    snprintf(fields, sizeof fields, "schedule: '* * * * * *', %s", c->job);
    struct jobs *j = job(fields);
    int64_t now_ms = at("2026-01-01T00:00:10Z") * 1000;
    struct sched_tick h = {.at = now_ms / 1000 - c->age_s, .missed = c->missed,
                           .overlapped = c->overlapped};
    enum sched_verdict v = sched_decide(&j->v[0], &h, c->behind, c->missed_behind, c->running,
                                        now_ms);
    ck_assert_msg(v == c->want, "%s: %s, want %s", c->what, sched_verdict_name(v),
                  sched_verdict_name(c->want));
    if (v == SV_SKIP || v == SV_DROP || v == SV_SUPERSEDE)
        ck_assert(sched_reason(&j->v[0], v)[0] != '\0'); /* every tick not run says why */
    jobs_free(j);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The run state table (run.h) */

START_TEST(run_states)
{
    static const enum run_state X = RUN_STATE_COUNT; /* no move */
    static const enum run_state want[RUN_STATE_COUNT][5] = {
        /*                  spawned       spawn_failed  term              kill          reaped */
        [RUN_STARTING] = {RUN_RUNNING, RUN_EXITED, X, X, RUN_EXITED}, /* reaped: a prepared run */
        [RUN_RUNNING] = {X, X, RUN_TERMINATING, RUN_KILLING, RUN_EXITED},
        [RUN_TERMINATING] = {X, X, X, RUN_KILLING, RUN_EXITED},
        [RUN_KILLING] = {X, X, X, X, RUN_EXITED},
        [RUN_EXITED] = {X, X, X, X, X},
    };
    for (int s = 0; s < RUN_STATE_COUNT; s++)
        for (int e = 0; e <= RUN_EV_REAPED; e++) {
            enum run_state n = run_next_state((enum run_state)s, (enum run_event)e);
            enum run_state w = want[s][e] == X ? (enum run_state)s : want[s][e];
            ck_assert_msg(n == w, "%s + event %d: %s, want %s", run_state_name((enum run_state)s),
                          e, run_state_name(n), run_state_name(w));
        }
    /* Every state but exited can end, and nothing leaves exited. */
    for (int s = 0; s < RUN_STATE_COUNT - 1; s++)
        ck_assert(run_next_state((enum run_state)s, RUN_EV_REAPED) == RUN_EXITED ||
                  run_next_state((enum run_state)s, RUN_EV_SPAWN_FAILED) == RUN_EXITED);
    ck_assert_str_eq(run_state_name(RUN_TERMINATING), "terminating");
    ck_assert_str_eq(run_stop_name(RUN_STOP_PAUSED), "lease_lost");
    ck_assert_str_eq(run_trigger_name(RUN_TRIGGER_CATCHUP), "catchup");
    ck_assert_str_eq(history_outcome_name(HO_FAILED_TO_START), "failed_to_start");
    enum history_outcome o;
    ck_assert(history_outcome_parse("superseded", &o) && o == HO_SUPERSEDED);
    ck_assert(!history_outcome_parse("exploded", &o));
    ck_assert(history_outcome_ran(HO_TIMEOUT) && !history_outcome_ran(HO_SKIPPED));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("schedule");
    TCase *tc = tcase_create("schedule");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, due, 0, (int)(sizeof due_cases / sizeof due_cases[0]));
    tcase_add_test(tc, due_accounts_for_every_tick);
    tcase_add_test(tc, due_far_behind);
    tcase_add_test(tc, span);
    tcase_add_test(tc, trigger_ids);
    tcase_add_loop_test(tc, decide, 0, (int)(sizeof decide_cases / sizeof decide_cases[0]));
    tcase_add_test(tc, run_states);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
