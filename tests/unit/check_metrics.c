/* check_metrics.c -- the Prometheus metrics counted from log events and
 * the typed facts their emitters give (metrics.h, facts.h): at least one
 * row per event kind (every_kind_has_a_row fails for a kind without one,
 * here or in metrics.c's event table) and the series it must produce;
 * every value of the facts' enums counted under its name; the facts
 * travelling with the line through a real log; every emit in src/ of an
 * event that carries facts giving them (a scan of the sources);
 * HELP and TYPE once per family, every sample in a declared family;
 * bounded cardinality; label escaping; a copy writes what the original
 * does. */
#include <check.h>
#include <ctype.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "facts.h"
#include "machine.h"
#include "metrics.h"
#include "pause.h"
#include "runlimits.h"
#include "testutil.h"

/* Writes m with quiet gauges. Returns: owned text. */
static char *render(const struct metrics *m);

/* render() without the process_* families, which change by themselves
 * (CPU time, memory): what the counters say. */
static char *counted(const struct metrics *m)
{
    char *text = render(m);
    char *cut = strstr(text, "# HELP process_");
    if (cut != NULL)
        *cut = '\0';
    return text;
}

static char *render(const struct metrics *m)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct metrics_gauges g = {.state = ST_WAITING, .term = 3, .redis_up = true,
                               .start_time_s = 1.7e9, .log_lines_dropped = 5,
                               .version = "0.1.0", .group = "g", .node = "n"};
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(metrics_write(m, &g, f), 0);
    fclose(f);
    return buf;
}

/* Counts one event with its facts, as the log's observer does: NULL for
 * an event that carries none. */
static void feed(struct metrics *m, enum log_event ev, const struct log_facts *facts)
{
    metrics_observe(m, ev, log_facts_carried(ev) ? facts : NULL, 1700000000123);
}

/* True when text has line as a whole line. */
static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = strstr(text, line); p != NULL; p = strstr(p + 1, line))
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

#define F(...) ((struct log_facts){__VA_ARGS__})

static const struct {
    enum log_event ev;
    struct log_facts facts; /* what its emitter gives (none: zeros, and NULL is fed) */
    const char *want;       /* a line the output must have */
} rows[] = {
    {LE_TRANSITION, F(.from = ST_ACQUIRING, .to = ST_WORKING, .trigger = EV_ACQUIRED),
     "baton_transitions_total{from=\"acquiring\",to=\"working\",trigger=\"acquired\"} 1"},
    {LE_TRANSITION, F(.from = ST_WORKING, .to = ST_RENEWING, .trigger = EV_RENEW_DUE),
     "baton_transitions_total{from=\"working\",to=\"renewing\",trigger=\"renew_due\"} 1"},
    {LE_JOB_START, F(.job = "a", .run_trigger = RUN_TRIGGER_SCHEDULE, .lateness_ms = 3),
     "baton_job_start_lateness_seconds_bucket{trigger=\"schedule\",le=\"0.005\"} 1"},
    {LE_JOB_START, F(.job = "a", .run_trigger = RUN_TRIGGER_SCHEDULE, .lateness_ms = 3),
     "baton_job_start_lateness_seconds_bucket{trigger=\"schedule\",le=\"0.0025\"} 0"},
    {LE_JOB_START, F(.job = "a", .run_trigger = RUN_TRIGGER_CATCHUP, .lateness_ms = 120000),
     "baton_job_start_lateness_seconds_bucket{trigger=\"catchup\",le=\"300\"} 1"},
    {LE_JOB_START, F(.job = "a", .run_trigger = RUN_TRIGGER_RETRY, .lateness_ms = 4000000),
     "baton_job_start_lateness_seconds_bucket{trigger=\"retry\",le=\"+Inf\"} 1"},
    {LE_JOB_START, F(.job = "a", .run_trigger = RUN_TRIGGER_CATCHUP, .lateness_ms = 120000),
     "baton_job_start_lateness_seconds_sum{trigger=\"catchup\"} 120.000000"},
    /* A manual run has no tick to be late for. */
    {LE_JOB_START, F(.job = "a", .run_trigger = RUN_TRIGGER_MANUAL, .lateness_ms = 5),
     "baton_job_start_lateness_seconds_count{trigger=\"schedule\"} 0"},
    {LE_JOB_END, F(.job = "a", .outcome = HO_OK, .duration_ms = 1500),
     "baton_job_runs_total{job_name=\"a\",outcome=\"ok\"} 1"},
    {LE_JOB_END, F(.job = "a", .outcome = HO_OK, .duration_ms = 1500),
     "baton_job_run_duration_seconds_bucket{job_name=\"a\",le=\"5\"} 1"},
    {LE_JOB_END, F(.job = "a", .outcome = HO_OK, .duration_ms = 1500),
     "baton_job_run_duration_seconds_bucket{job_name=\"a\",le=\"1\"} 0"},
    {LE_JOB_END, F(.job = "a", .outcome = HO_OK, .duration_ms = 1500),
     "baton_job_last_success_timestamp_seconds{job_name=\"a\"} 1700000000.123"},
    {LE_JOB_END, F(.job = "a", .outcome = HO_FAILED, .duration_ms = 10),
     "baton_job_last_run_timestamp_seconds{job_name=\"a\"} 1700000000.123"},
    {LE_JOB_END, F(.job = "b", .outcome = HO_FAILED_TO_START),
     "baton_job_runs_total{job_name=\"b\",outcome=\"failed_to_start\"} 1"},
    {LE_JOB_END, F(.job = "b", .outcome = HO_TIMEOUT, .duration_ms = 60000),
     "baton_job_runs_total{job_name=\"b\",outcome=\"timeout\"} 1"},
    {LE_TICK_SKIPPED, F(.job = "a", .outcome = HO_SKIPPED, .ticks = 3, .reason = "a run was alive"),
     "baton_ticks_not_run_total{job_name=\"a\",outcome=\"skipped\",reason=\"a run was alive\"} 3"},
    /* A range too long to count ("ticks": null) counts once. */
    {LE_TICK_SKIPPED, F(.job = "a", .outcome = HO_MISSED, .ticks = -1, .reason = "old"),
     "baton_ticks_not_run_total{job_name=\"a\",outcome=\"missed\",reason=\"old\"} 1"},
    {LE_TICK_SKIPPED,
     F(.job = "a", .outcome = HO_SUPERSEDED, .ticks = 2, .reason = "say \"x\"\\y\nz"),
     "baton_ticks_not_run_total{job_name=\"a\",outcome=\"superseded\",reason=\"say "
     "\\\"x\\\"\\\\y\\nz\"} 2"},
    {LE_REDIS_UNREACHABLE, F(.during = DURING_CAMPAIGN, .error = "refused"),
     "baton_redis_errors_total{during=\"campaign\"} 1"},
    {LE_CLAIM_FAILED, F(0), "baton_redis_errors_total{during=\"claim\"} 1"},
    {LE_HISTORY_WRITE_FAILED, F(0), "baton_redis_errors_total{during=\"history\"} 1"},
    {LE_HANDOVER_FAILED, F(0), "baton_redis_errors_total{during=\"handover\"} 1"},
    {LE_LEASE_RELEASE_FAILED, F(0), "baton_redis_errors_total{during=\"release\"} 1"},
    {LE_RELOAD_FAILED, F(0), "baton_config_last_reload_successful 0"},
    {LE_RELOAD_FAILED, F(0), "baton_reloads_total{result=\"failed\"} 1"},
    {LE_RELOADED, F(0), "baton_reloads_total{result=\"ok\"} 1"},
    {LE_JOB_RETRY, F(.job = "a"), "baton_job_retries_total{job_name=\"a\"} 1"},
    {LE_TRIGGER_RECEIVED, F(.job = "a"),
     "baton_triggers_total{job_name=\"a\",outcome=\"received\"} 1"},
    {LE_TRIGGER_REJECTED, F(.job = "nope"),
     "baton_triggers_total{job_name=\"nope\",outcome=\"rejected\"} 1"},
    {LE_TRIGGER_LEFT, F(.job = "a"), "baton_triggers_total{job_name=\"a\",outcome=\"left\"} 1"},
    {LE_TRIGGER_LOST, F(.job = "a"), "baton_triggers_total{job_name=\"a\",outcome=\"lost\"} 1"},
    {LE_TRIGGER_LEFT, F(.job = "a"), "baton_triggers_total{job_name=\"a\",outcome=\"received\"} 0"},
    {LE_JOB_PAUSED, F(.job = "a"), "baton_job_paused{job_name=\"a\"} 1"},
    {LE_JOB_RESUMED, F(.job = "a"), "baton_job_paused{job_name=\"a\"} 0"},
    /* The report counts as an event; the lines are the log's count (a gauge). */
    {LE_LOG_LINES_DROPPED, F(0), "baton_events_total{event=\"log_lines_dropped\"} 1"},
    {LE_LOG_LINES_DROPPED, F(0), "baton_log_lines_dropped_total 5"},
    {LE_HOOK_END, F(.job = "a", .outcome = HO_OK),
     "baton_hook_runs_total{job_name=\"a\",outcome=\"ok\"} 1"},
    {LE_HOOK_END, F(.job = "a", .outcome = HO_TIMEOUT),
     "baton_hook_runs_total{job_name=\"a\",outcome=\"failed\"} 1"},
    {LE_CONFIG_DRIFT, F(0), "baton_config_drift_nodes 1"},
    {LE_CONFIG_DRIFT_RESOLVED, F(0), "baton_config_drift_nodes 0"},
    {LE_HOOK_START, F(0), "baton_events_total{event=\"hook_start\"} 1"},
    {LE_HOOK_OUTPUT, F(0), "baton_events_total{event=\"hook_output\"} 1"},
    /* The kinds counted in baton_events_total only. */
    {LE_SECRET_FILE_MODE, F(0), "baton_events_total{event=\"secret_file_mode\"} 1"},
    {LE_TLS_VERIFY_OFF, F(0), "baton_events_total{event=\"tls_verify_off\"} 1"},
    {LE_CATCH_UP_SKIPPED, F(0), "baton_events_total{event=\"catch_up_skipped\"} 1"},
    {LE_STARTED, F(0), "baton_events_total{event=\"started\"} 1"},
    {LE_STOPPED, F(0), "baton_events_total{event=\"stopped\"} 1"},
    {LE_MACHINE_LOOP, F(0), "baton_events_total{event=\"machine_loop\"} 1"},
    {LE_TICK_MOVE_REFUSED, F(0), "baton_events_total{event=\"tick_move_refused\"} 1"},
    {LE_FOLLOWING, F(.leader = "b", .term = 4, .lease_left_ms = 900),
     "baton_events_total{event=\"following\"} 1"},
    {LE_LEASE_RENEWED, F(0), "baton_events_total{event=\"lease_renewed\"} 1"},
    {LE_LEASE_DEADLINE_MISSED, F(0), "baton_events_total{event=\"lease_deadline_missed\"} 1"},
    {LE_LEASE_RELEASED, F(0), "baton_events_total{event=\"lease_released\"} 1"},
    {LE_STALE_LEASE_RELEASED, F(0), "baton_events_total{event=\"stale_lease_released\"} 1"},
    {LE_REDIS_CONNECTED, F(0), "baton_events_total{event=\"redis_connected\"} 1"},
    {LE_REDIS_REACHABLE, F(0), "baton_events_total{event=\"redis_reachable\"} 1"},
    {LE_WATCH_LOST, F(0), "baton_events_total{event=\"watch_lost\"} 1"},
    {LE_HTTP_LISTENING, F(0), "baton_events_total{event=\"http_listening\"} 1"},
    {LE_HTTP_TLS_RELOADED, F(0), "baton_events_total{event=\"http_tls_reloaded\"} 1"},
    {LE_HTTP_TLS_RELOAD_FAILED, F(0), "baton_events_total{event=\"http_tls_reload_failed\"} 1"},
    {LE_SYSTEMD_NOTIFY, F(0), "baton_events_total{event=\"systemd_notify\"} 1"},
    {LE_SIGNAL_RECEIVED, F(.signal = SIGHUP), "baton_events_total{event=\"signal_received\"} 1"},
    {LE_STEP_DOWN_REQUESTED, F(0), "baton_events_total{event=\"step_down_requested\"} 1"},
    {LE_HANDOVER, F(0), "baton_events_total{event=\"handover\"} 1"},
    {LE_DRAINING, F(0), "baton_events_total{event=\"draining\"} 1"},
    {LE_DRAIN_TIMEOUT, F(0), "baton_events_total{event=\"drain_timeout\"} 1"},
    {LE_CATCH_UP, F(0), "baton_events_total{event=\"catch_up\"} 1"},
    {LE_CLAIM_AHEAD, F(0), "baton_events_total{event=\"claim_ahead\"} 1"},
    {LE_NO_HIGH_WATER_MARK, F(0), "baton_events_total{event=\"no_high_water_mark\"} 1"},
    {LE_CLAIM_REFUSED, F(0), "baton_events_total{event=\"claim_refused\"} 1"},
    {LE_LIMIT_WAIT, F(0), "baton_events_total{event=\"limit_wait\"} 1"},
    {LE_ASSIGNED, F(0), "baton_events_total{event=\"assigned\"} 1"},
    {LE_ACCEPTED, F(0), "baton_events_total{event=\"accepted\"} 1"},
    {LE_REASSIGNED, F(.job = "d"), "baton_events_total{event=\"reassigned\"} 1"},
    {LE_REASSIGNED, F(.job = "d"), "baton_offers_reassigned_total{job_name=\"d\"} 1"},
    {LE_LOST, F(.job = "d"), "baton_events_total{event=\"lost\"} 1"},
    {LE_LOST, F(.job = "d"), "baton_runs_lost_total{job_name=\"d\"} 1"},
    /* A dispatched tick's start on its member: its dispatch delay. */
    {LE_JOB_START,
     F(.job = "d", .run_trigger = RUN_TRIGGER_SCHEDULE, .lateness_ms = 4, .dispatched = true),
     "baton_dispatch_seconds_bucket{job_name=\"d\",le=\"0.005\"} 1"},
    {LE_JOB_START,
     F(.job = "d", .run_trigger = RUN_TRIGGER_SCHEDULE, .lateness_ms = 4, .dispatched = true),
     "baton_dispatch_seconds_bucket{job_name=\"d\",le=\"0.0025\"} 0"},
    {LE_HANDED_BACK, F(0), "baton_events_total{event=\"handed_back\"} 1"},
    {LE_API_CALL, F(0), "baton_events_total{event=\"api_call\"} 1"},
    {LE_API_TOKENS_RELOAD_FAILED, F(0), "baton_events_total{event=\"api_tokens_reload_failed\"} 1"},
    {LE_LIMIT_WAITED, F(0), "baton_events_total{event=\"limit_waited\"} 1"},
    {LE_CLAIM_RECOVERED, F(0), "baton_events_total{event=\"claim_recovered\"} 1"},
    {LE_CLAIM_FAILURES_ENDED, F(0), "baton_events_total{event=\"claim_failures_ended\"} 1"},
    {LE_JOB_OUTPUT, F(0), "baton_events_total{event=\"job_output\"} 1"},
    {LE_RUN_STATE, F(0), "baton_events_total{event=\"run_state\"} 1"},
    {LE_JOB_TIMEOUT, F(0), "baton_events_total{event=\"job_timeout\"} 1"},
    {LE_RUN_LOST, F(0), "baton_events_total{event=\"run_lost\"} 1"},
    {LE_JOB_END, F(.job = "a", .outcome = HO_OK, .duration_ms = 1),
     "baton_events_total{event=\"job_end\"} 1"},
};

/* Every event kind has a row in the observer's table (metrics.c) and at
 * least one row above: a new event cannot be left uncounted unnoticed. */
START_TEST(every_kind_has_a_row)
{
    for (int ev = 0; ev < LE_COUNT; ev++) {
        const char *counts = metrics_event_counts((enum log_event)ev);
        ck_assert_msg(counts != NULL && counts[0] != '\0',
                      "event %s has no row in metrics.c's event table",
                      log_event_name((enum log_event)ev));
        bool tested = false;
        for (size_t i = 0; i < sizeof rows / sizeof rows[0] && !tested; i++)
            tested = rows[i].ev == (enum log_event)ev;
        ck_assert_msg(tested, "event %s has no row in check_metrics.c's rows[]",
                      log_event_name((enum log_event)ev));
    }
    ck_assert_ptr_null(metrics_event_counts(LE_COUNT));
}
END_TEST

START_TEST(event_row)
{
    struct metrics *m = metrics_new();
    feed(m, rows[_i].ev, &rows[_i].facts);
    char *text = render(m);
    ck_assert_msg(has_line(text, rows[_i].want), "row %d: no line <%s> in\n%s", _i, rows[_i].want,
                  text);
    free(text);
    metrics_free(m);
}
END_TEST

/* text without its baton_events_total samples, in place. Returns text. */
static char *without_events(char *text)
{
    char *w = text;
    for (char *line = text; *line != '\0';) {
        char *end = strchr(line, '\n');
        size_t n = end != NULL ? (size_t)(end - line) + 1 : strlen(line);
        if (strncmp(line, "baton_events_total{", 19) != 0) {
            memmove(w, line, n);
            w += n;
        }
        line += n;
    }
    *w = '\0';
    return text;
}

/* Events that say nothing countable count nothing but themselves (in
 * baton_events_total), and never crash: an event that carries facts
 * emitted without them (an emitter's bug, which no_site_without_facts
 * finds), facts out of their enums' range, unknown kinds. */
START_TEST(junk_counts_nothing)
{
    struct metrics *m = metrics_new();
    char *before = without_events(counted(m));
    for (int ev = 0; ev < LE_COUNT; ev++)
        if (log_facts_carried((enum log_event)ev))
            metrics_observe(m, (enum log_event)ev, NULL, 0);
    feed(m, LE_TRANSITION, &F(.from = ST_COUNT, .to = ST_WORKING, .trigger = EV_ACQUIRED));
    feed(m, LE_TRANSITION, &F(.from = ST_IDLE, .to = (enum machine_state) - 1));
    feed(m, LE_TRANSITION, &F(.from = ST_IDLE, .to = ST_WORKING, .trigger = EV_COUNT));
    feed(m, LE_JOB_END, &F(.job = "a", .outcome = HO_COUNT));
    feed(m, LE_JOB_START, &F(.job = "a", .run_trigger = (enum run_trigger)99));
    feed(m, LE_TICK_SKIPPED, &F(.outcome = (enum history_outcome) - 1));
    feed(m, LE_REDIS_UNREACHABLE, &F(.during = DURING_COUNT));
    feed(m, LE_JOB_OUTPUT, &F(.job = "a"));
    metrics_observe(m, LE_JOB_END, NULL, 0);
    metrics_observe(m, LE_COUNT, NULL, 0);
    metrics_observe(m, (enum log_event)-1, NULL, 0);
    char *after = without_events(counted(m));
    ck_assert_msg(strcmp(before, after) == 0, "junk changed the counts");
    free(before);
    free(after);
    metrics_free(m);
}
END_TEST

/* HELP and TYPE once per family; every sample belongs to a family declared
 * before it (histograms by their _bucket, _sum, _count). */
START_TEST(families_declared)
{
    struct metrics *m = metrics_new();
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        feed(m, rows[i].ev, &rows[i].facts);
    char *text = render(m);
    char fam[64][96], type[64][16];
    int nfam = 0, nhelp = 0;
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char name[96], kind[16];
        if (sscanf(line, "# HELP %95s", name) == 1) {
            nhelp++;
            continue;
        }
        if (sscanf(line, "# TYPE %95s %15s", name, kind) == 2) {
            for (int k = 0; k < nfam; k++)
                ck_assert_msg(strcmp(fam[k], name) != 0, "TYPE twice: %s", name);
            ck_assert_int_lt(nfam, 64);
            snprintf(fam[nfam], sizeof fam[0], "%s", name);
            snprintf(type[nfam++], sizeof type[0], "%s", kind);
            continue;
        }
        size_t n = strcspn(line, "{ ");
        snprintf(name, sizeof name, "%.*s", (int)n, line);
        bool found = false;
        for (int k = 0; k < nfam && !found; k++) {
            size_t fl = strlen(fam[k]);
            if (strcmp(name, fam[k]) == 0)
                found = strcmp(type[k], "histogram") != 0;
            else if (strcmp(type[k], "histogram") == 0 && strncmp(name, fam[k], fl) == 0)
                found = strcmp(name + fl, "_bucket") == 0 || strcmp(name + fl, "_sum") == 0 ||
                        strcmp(name + fl, "_count") == 0;
        }
        ck_assert_msg(found, "a sample of no declared family: %s", line);
        ck_assert_msg(strncmp(name, "baton_", 6) == 0 || strncmp(name, "process_", 8) == 0,
                      "no baton_ prefix: %s", name);
    }
    ck_assert_int_eq(nhelp, nfam);
    for (int k = 0; k < nfam; k++)
        if (strcmp(type[k], "counter") == 0)
            ck_assert_msg(strstr(fam[k], "_total") != NULL, "a counter without _total: %s", fam[k]);
    free(text);
    metrics_free(m);
}
END_TEST

/* The state is one-hot, and a configured job has its series before it ran. */
START_TEST(gauges_and_declared_jobs)
{
    struct metrics *m = metrics_new();
    metrics_add_job(m, "nightly");
    char *text = render(m);
    ck_assert(has_line(text, "baton_state{state=\"waiting\"} 1"));
    ck_assert(has_line(text, "baton_state{state=\"working\"} 0"));
    ck_assert(has_line(text, "baton_term 3"));
    ck_assert(has_line(text, "baton_is_leader 0"));
    ck_assert(has_line(text, "baton_claim_ahead_seconds 0.000"));
    ck_assert(has_line(text, "baton_job_runs_total{job_name=\"nightly\",outcome=\"ok\"} 0"));
    ck_assert(has_line(text, "baton_job_runs_total{job_name=\"nightly\",outcome=\"failed\"} 0"));
    ck_assert(has_line(text, "baton_build_info{version=\"0.1.0\",group=\"g\",node=\"n\"} 1"));
    free(text);
    metrics_free(m);
}
END_TEST

/* baton_job_paused: a job's own pause, and --all's for every job, from the
 * leader's events and from the paused hash as read (a follower's view);
 * a resume not yet applied is no pause. */
START_TEST(pauses)
{
    struct metrics *m = metrics_new();
    metrics_add_job(m, "a");
    metrics_add_job(m, "b");
    feed(m, LE_JOB_PAUSED, &F(.job = PAUSE_ALL));
    char *text = render(m);
    ck_assert(has_line(text, "baton_job_paused{job_name=\"a\"} 1"));
    ck_assert(has_line(text, "baton_job_paused{job_name=\"b\"} 1"));
    free(text);
    feed(m, LE_JOB_RESUMED, &F(.job = PAUSE_ALL));
    feed(m, LE_JOB_PAUSED, &F(.job = "b"));
    text = render(m);
    ck_assert(has_line(text, "baton_job_paused{job_name=\"a\"} 0"));
    ck_assert(has_line(text, "baton_job_paused{job_name=\"b\"} 1"));
    free(text);
    struct pause_entry v[2] = {{.job = "a", .raw = "{}"}, {.job = "b", .raw = "{}", .resumed = true}};
    struct pause_list l = {.v = v, .n = 2};
    metrics_set_pauses(m, &l);
    text = render(m);
    ck_assert(has_line(text, "baton_job_paused{job_name=\"a\"} 1"));
    ck_assert(has_line(text, "baton_job_paused{job_name=\"b\"} 0"));
    free(text);
    metrics_free(m);
}
END_TEST

/* The fleet-wide limits: each pool's limit and its runs as read (none
 * before a read), and each limited job's waiting ticks by reason, 0 when
 * none wait; a copy keeps them. */
START_TEST(limits)
{
    struct metrics *m = metrics_new();
    metrics_add_job(m, "a");
    metrics_add_job(m, "m");
    metrics_add_job(m, "free");
    metrics_job_limits(m, "a", true, false);
    metrics_job_limits(m, "m", false, true);
    struct limits_pool p[2] = {{.name = "exports", .limit = 3, .runs = 2},
                               {.name = "unread", .limit = 1, .runs = -1}};
    metrics_set_pools(m, p, 2);
    metrics_add_job(m, "f");
    metrics_job_fleet(m, "f", true);
    /* a job on members waiting for room: one entry a tick, added up */
    struct metrics_wait w[3] = {{.job = "a", .reason = METRICS_WAIT_POOL, .ticks = 4},
                                {.job = "f", .reason = METRICS_WAIT_ROOM, .ticks = 1},
                                {.job = "f", .reason = METRICS_WAIT_ROOM, .ticks = 1}};
    metrics_set_waiting(m, w, 3);
    struct metrics *c = metrics_dup(m);
    char *text = render(c);
    ck_assert(has_line(text, "baton_pool_limit{pool=\"exports\"} 3"));
    ck_assert(has_line(text, "baton_pool_runs{pool=\"exports\"} 2"));
    ck_assert(has_line(text, "baton_pool_limit{pool=\"unread\"} 1"));
    ck_assert_ptr_null(strstr(text, "baton_pool_runs{pool=\"unread\"}"));
    ck_assert(has_line(text, "baton_ticks_waiting{job_name=\"a\",reason=\"pool\"} 4"));
    ck_assert(has_line(text, "baton_ticks_waiting{job_name=\"m\",reason=\"max_running\"} 0"));
    ck_assert(has_line(text, "baton_ticks_waiting{job_name=\"f\",reason=\"room\"} 2"));
    ck_assert_ptr_null(strstr(text, "baton_ticks_waiting{job_name=\"a\",reason=\"room\"}"));
    ck_assert_ptr_null(strstr(text, "baton_ticks_waiting{job_name=\"free\""));
    ck_assert_ptr_null(strstr(text, "baton_ticks_waiting{job_name=\"a\",reason=\"max_running\"}"));
    free(text);
    metrics_free(c);
    w[0] = (struct metrics_wait){.job = "m", .reason = METRICS_WAIT_MAX_RUNNING, .ticks = 1};
    metrics_set_waiting(m, w, 1);
    text = render(m);
    ck_assert(has_line(text, "baton_ticks_waiting{job_name=\"f\",reason=\"room\"} 0"));
    ck_assert(has_line(text, "baton_ticks_waiting{job_name=\"a\",reason=\"pool\"} 0"));
    ck_assert(has_line(text, "baton_ticks_waiting{job_name=\"m\",reason=\"max_running\"} 1"));
    free(text);
    metrics_free(m);
}
END_TEST

/* The fleet: each node's capacity, capacity in use and offers as last
 * read (unknown: no series), a copy keeps them; a job that runs on members
 * has its dispatch counters from the start, a job on the leader none, and
 * a leader-local start is no dispatch. */
START_TEST(fleet)
{
    struct metrics *m = metrics_new();
    metrics_add_job(m, "d");
    metrics_add_job(m, "local");
    metrics_job_fleet(m, "d", true);
    metrics_job_fleet(m, "local", false);
    feed(m, LE_JOB_START, &F(.job = "local", .run_trigger = RUN_TRIGGER_SCHEDULE, .lateness_ms = 1));
    char node[] = "web-\"2\"";
    struct metrics_node v[2] = {{.node = "web-1", .capacity = 4, .runs = 3, .offers = 1},
                                {.node = node, .capacity = 2, .runs = -1, .offers = -1}};
    metrics_set_fleet(m, v, 2);
    node[0] = 'X'; /* copied */
    struct metrics *c = metrics_dup(m);
    char *text = render(c);
    ck_assert(has_line(text, "baton_fleet_capacity{node=\"web-1\"} 4"));
    ck_assert(has_line(text, "baton_fleet_runs{node=\"web-1\"} 3"));
    ck_assert(has_line(text, "baton_fleet_offers{node=\"web-1\"} 1"));
    ck_assert(has_line(text, "baton_fleet_capacity{node=\"web-\\\"2\\\"\"} 2"));
    ck_assert_ptr_null(strstr(text, "baton_fleet_runs{node=\"web-\\\"2"));
    ck_assert_ptr_null(strstr(text, "baton_fleet_offers{node=\"web-\\\"2"));
    ck_assert(has_line(text, "baton_offers_reassigned_total{job_name=\"d\"} 0"));
    ck_assert(has_line(text, "baton_runs_lost_total{job_name=\"d\"} 0"));
    ck_assert_ptr_null(strstr(text, "baton_offers_reassigned_total{job_name=\"local\"}"));
    ck_assert_ptr_null(strstr(text, "baton_dispatch_seconds_count{job_name=\"local\"}"));
    free(text);
    metrics_free(c);
    metrics_set_fleet(m, NULL, 0); /* no node seen any more */
    text = render(m);
    ck_assert_ptr_null(strstr(text, "baton_fleet_capacity{"));
    free(text);
    metrics_free(m);
}
END_TEST

/* At most METRICS_MAX_JOBS jobs get series; the rest count as "other". */
START_TEST(bounded_jobs)
{
    struct metrics *m = metrics_new();
    char name[32];
    for (int i = 0; i < METRICS_MAX_JOBS + 50; i++) {
        snprintf(name, sizeof name, "j%d", i);
        feed(m, LE_JOB_END, &F(.job = name, .outcome = HO_OK, .duration_ms = 1));
    }
    char *text = render(m);
    ck_assert(has_line(text, "baton_job_runs_total{job_name=\"other\",outcome=\"ok\"} 50"));
    ck_assert(has_line(text, "baton_job_runs_total{job_name=\"j0\",outcome=\"ok\"} 1"));
    ck_assert(strstr(text, "job_name=\"j4100\"") == NULL);
    free(text);
    /* Each is found again by its name (the index, rebuilt seven times on the
     * way), in the original and in a copy (which builds its own). */
    for (int i = 0; i < METRICS_MAX_JOBS + 50; i++) {
        snprintf(name, sizeof name, "j%d", i);
        feed(m, LE_JOB_END, &F(.job = name, .outcome = HO_OK, .duration_ms = 1));
    }
    struct metrics *c = metrics_dup(m);
    feed(c, LE_JOB_END, &F(.job = "j77", .outcome = HO_OK, .duration_ms = 1));
    feed(c, LE_JOB_END, &F(.job = "j9999", .outcome = HO_OK, .duration_ms = 1));
    text = render(m);
    ck_assert(has_line(text, "baton_job_runs_total{job_name=\"other\",outcome=\"ok\"} 100"));
    ck_assert(has_line(text, "baton_job_runs_total{job_name=\"j0\",outcome=\"ok\"} 2"));
    ck_assert(has_line(text, "baton_job_runs_total{job_name=\"j77\",outcome=\"ok\"} 2"));
    ck_assert(has_line(text, "baton_job_runs_total{job_name=\"j4095\",outcome=\"ok\"} 2"));
    free(text);
    text = render(c);
    ck_assert(has_line(text, "baton_job_runs_total{job_name=\"j77\",outcome=\"ok\"} 3"));
    ck_assert(has_line(text, "baton_job_runs_total{job_name=\"other\",outcome=\"ok\"} 101"));
    free(text);
    metrics_free(c);
    metrics_free(m);
}
END_TEST

/* A copy writes what the original does; later events change only the original. */
START_TEST(a_copy)
{
    struct metrics *m = metrics_new();
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        feed(m, rows[i].ev, &rows[i].facts);
    struct metrics *c = metrics_dup(m);
    char *a = counted(m), *b = counted(c);
    ck_assert_msg(strcmp(a, b) == 0, "the copy writes something else");
    feed(m, LE_JOB_END, &F(.job = "a", .outcome = HO_OK, .duration_ms = 1));
    char *b2 = counted(c), *a2 = counted(m);
    ck_assert_msg(strcmp(b, b2) == 0, "an event reached the copy");
    ck_assert_msg(strcmp(a, a2) != 0, "an event did not reach the original");
    free(a2);
    free(a);
    free(b);
    free(b2);
    metrics_free(c);
    metrics_free(m);
    metrics_free(NULL);
}
END_TEST

/* ---- counted from the typed facts ---- */

/* Each value of the enums the facts carry is counted under its own name:
 * a transition by its states and event (each move fed 1 + its from's
 * index times, so that from and to are told apart), a run by its outcome,
 * a tick not run by its outcome, a Redis failure by what was being done, a
 * start's lateness by its trigger. The labels are the enums' names, never
 * text read back from a line. */
START_TEST(counted_by_enum)
{
    struct metrics *m = metrics_new();
    char want[256];
    for (int f = 0; f < ST_COUNT; f++)
        for (int t = 0; t < ST_COUNT; t++)
            for (int e = 0; e < EV_COUNT; e++)
                for (int k = 0; k <= f; k++)
                    feed(m, LE_TRANSITION,
                         &F(.from = (enum machine_state)f, .to = (enum machine_state)t,
                            .trigger = (enum machine_event)e));
    for (int o = 0; o < HO_COUNT; o++) {
        feed(m, LE_JOB_END, &F(.job = "a", .outcome = (enum history_outcome)o, .duration_ms = 1));
        if (!history_outcome_ran((enum history_outcome)o))
            feed(m, LE_TICK_SKIPPED,
                 &F(.job = "b", .outcome = (enum history_outcome)o, .ticks = 2, .reason = "r"));
    }
    for (int d = 0; d < DURING_COUNT; d++)
        feed(m, LE_REDIS_UNREACHABLE, &F(.during = (enum log_during)d, .error = "x"));
    for (int t = 0; t <= RUN_TRIGGER_MANUAL; t++)
        feed(m, LE_JOB_START, &F(.job = "a", .run_trigger = (enum run_trigger)t, .lateness_ms = 1));
    char *text = render(m);
    for (int f = 0; f < ST_COUNT; f++)
        for (int t = 0; t < ST_COUNT; t++)
            for (int e = 0; e < EV_COUNT; e++) {
                snprintf(want, sizeof want,
                         "baton_transitions_total{from=\"%s\",to=\"%s\",trigger=\"%s\"} %d",
                         machine_state_name((enum machine_state)f),
                         machine_state_name((enum machine_state)t),
                         machine_event_name((enum machine_event)e), f + 1);
                ck_assert_msg(has_line(text, want), "no line <%s>", want);
            }
    for (int o = 0; o < HO_COUNT; o++) {
        const char *name = history_outcome_name((enum history_outcome)o);
        snprintf(want, sizeof want, "baton_job_runs_total{job_name=\"a\",outcome=\"%s\"} 1", name);
        ck_assert_msg(has_line(text, want), "no line <%s>", want);
        snprintf(want, sizeof want,
                 "baton_ticks_not_run_total{job_name=\"b\",outcome=\"%s\",reason=\"r\"} 2", name);
        ck_assert_msg(has_line(text, want) == !history_outcome_ran((enum history_outcome)o),
                      "line <%s>: wrong", want);
    }
    for (int d = 0; d < DURING_COUNT; d++) {
        snprintf(want, sizeof want, "baton_redis_errors_total{during=\"%s\"} 1",
                 log_during_name((enum log_during)d));
        ck_assert_msg(has_line(text, want), "no line <%s>", want);
    }
    for (int t = 0; t < RUN_TRIGGER_MANUAL; t++) {
        snprintf(want, sizeof want, "baton_job_start_lateness_seconds_count{trigger=\"%s\"} 1",
                 run_trigger_name((enum run_trigger)t));
        ck_assert_msg(has_line(text, want), "no line <%s>", want);
    }
    ck_assert_ptr_null(strstr(text, "trigger=\"manual\""));
    free(text);
    metrics_free(m);
}
END_TEST

static void observe_into(void *ctx, enum log_event ev, enum log_level lvl,
                         const struct log_facts *facts)
{
    (void)lvl;
    metrics_observe(ctx, ev, facts, 0);
}

/* The facts travel with the line, in the one call that emits it: the
 * observer counts a transition from them, at debug level too (a line
 * log.level does not write); an emit without them (an emitter's bug)
 * counts the event by its kind and nothing else. */
START_TEST(the_log_gives_its_observer_the_facts)
{
    struct metrics *m = metrics_new();
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    struct log *lg = log_new(fd, LOG_INFO, "n", "g");
    ck_assert_ptr_nonnull(lg);
    log_set_observer(lg, observe_into, m);
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "from", "nowhere"); /* the line's text is not read */
    log_emit_facts_at(lg, LOG_DEBUG, LE_TRANSITION, f,
                      &F(.from = ST_WORKING, .to = ST_RENEWING, .trigger = EV_RENEW_DUE));
    f = log_fields();
    cJSON_AddStringToObject(f, "from", "working");
    cJSON_AddStringToObject(f, "to", "idle");
    cJSON_AddStringToObject(f, "trigger", "lost");
    log_emit_at(lg, LOG_INFO, LE_TRANSITION, f);
    log_free(lg);
    close(fd);
    char *text = render(m);
    ck_assert(has_line(text, "baton_transitions_total{from=\"working\",to=\"renewing\",trigger="
                             "\"renew_due\"} 1"));
    ck_assert(has_line(text, "baton_events_total{event=\"transition\"} 2"));
    ck_assert_ptr_null(strstr(text, "to=\"idle\""));
    free(text);
    metrics_free(m);
}
END_TEST

/* ---- every emitter of an event that carries facts gives them ---- */

/* The plain emits (log_emit, log_emit_at) whose event is a variable, by
 * file: none of the events they pass carries facts (log.c: its entry
 * points, which forward what they are given, NULL facts for the plain
 * ones). A new one elsewhere fails no_site_without_facts: give it facts,
 * or list it here. */
static const struct {
    const char *file, *why;
} plain_sites[] = {
    {"log.c", "the log's own entry points, and its report of drops"},
    {"claimer.c", "claim_failed, claim_refused, claim_recovered: counted by their kind"},
    {"output.c", "job_output, hook_output: counted by their kind"},
};

/* The emitting functions: the index of their event argument, and of their
 * facts (-1: none). */
static const struct {
    const char *name;
    int ev, facts;
} emitters[] = {
    {"log_emit", 1, -1},
    {"log_emit_at", 2, -1},
    {"log_emit_facts", 1, 3},
    {"log_emit_facts_at", 2, 4},
};

#define MAX_ARGS 6

/* Splits the arguments of the call whose '(' is at p (strings, nested
 * brackets skipped) into arg[] (trimmed, up to MAX_ARGS). Returns their
 * number (0 for "()"), or -1 when the call does not close. */
static int call_args(const char *p, const char *arg[], size_t len[])
{
    int depth = 0, n = 0;
    const char *a = p + 1;
    for (const char *q = p + 1; *q != '\0'; q++) {
        char c = *q;
        if (c == '"' || c == '\'') {
            for (q++; *q != '\0' && *q != c; q++)
                if (*q == '\\' && q[1] != '\0')
                    q++;
            if (*q == '\0')
                return -1;
        } else if (c == '(' || c == '[' || c == '{') {
            depth++;
        } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
            depth--;
        } else if (c == ',' || c == ')') {
            const char *e = q;
            while (a < e && isspace((unsigned char)*a))
                a++;
            while (e > a && isspace((unsigned char)e[-1]))
                e--;
            if (c == ')' && n == 0 && e == a)
                return 0;
            if (n < MAX_ARGS) {
                arg[n] = a;
                len[n] = (size_t)(e - a);
            }
            n++;
            if (c == ')')
                return n;
            a = q + 1;
        }
    }
    return -1;
}

/* The event an argument names (LE_TRANSITION), or LE_COUNT. */
static enum log_event event_named(const char *a, size_t n)
{
    for (int e = 0; e < LE_COUNT; e++) {
        const char *name = log_event_name((enum log_event)e);
        size_t k = strlen(name), i = 0;
        if (n != 3 + k || strncmp(a, "LE_", 3) != 0)
            continue;
        while (i < k && toupper((unsigned char)name[i]) == a[3 + i])
            i++;
        if (i == k)
            return (enum log_event)e;
    }
    return LE_COUNT;
}

static bool plain_site(const char *path)
{
    const char *base = strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : path;
    for (size_t i = 0; i < sizeof plain_sites / sizeof plain_sites[0]; i++)
        if (strcmp(base, plain_sites[i].file) == 0)
            return true;
    return false;
}

struct scan {
    int calls, with_facts, bad;
    char report[4096];
};

static void flag(struct scan *sc, const char *path, const char *text, const char *at,
                 const char *what, const char *a, size_t n)
{
    int line = 1;
    for (const char *p = text; p < at; p++)
        line += *p == '\n';
    size_t used = strlen(sc->report);
    snprintf(sc->report + used, sizeof sc->report - used, "%s:%d: %s (%.*s)\n", path, line, what,
             (int)n, a);
    sc->bad++;
}

/* Checks every emit in text (the source of path): an event that carries
 * facts is emitted with them (log_emit_facts, never NULL), and an event
 * the call does not name (a variable) only where plain_sites allows. */
static void scan_text(struct scan *sc, const char *path, const char *text)
{
    for (const char *p = text; *p != '\0'; p++) {
        if (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
            continue;
        for (size_t k = 0; k < sizeof emitters / sizeof emitters[0]; k++) {
            size_t n = strlen(emitters[k].name);
            const char *arg[MAX_ARGS];
            size_t len[MAX_ARGS];
            if (strncmp(p, emitters[k].name, n) != 0 || p[n] != '(')
                continue;
            int nargs = call_args(p + n, arg, len);
            int ev = emitters[k].ev, facts = emitters[k].facts;
            if (nargs <= (facts >= 0 ? facts : ev) || strncmp(arg[ev], "enum ", 5) == 0)
                break; /* a mention in prose, or the declaration */
            sc->calls++;
            enum log_event e = event_named(arg[ev], len[ev]);
            if (facts >= 0) {
                sc->with_facts++;
                if (len[facts] == 4 && strncmp(arg[facts], "NULL", 4) == 0 && !plain_site(path))
                    flag(sc, path, text, p, "emits with NULL facts", arg[ev], len[ev]);
            } else if (e != LE_COUNT && log_facts_carried(e)) {
                flag(sc, path, text, p,
                     "emits an event that carries facts without them: "
                     "use log_emit_facts",
                     arg[ev], len[ev]);
            } else if (e == LE_COUNT && !plain_site(path)) {
                flag(sc, path, text, p,
                     "emits an event it does not name without facts: "
                     "use log_emit_facts, or list the file in plain_sites",
                     arg[ev], len[ev]);
            }
            break;
        }
    }
}

static struct scan *tree_scan; /* nftw's callback has no context */

static int scan_file(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    size_t n = strlen(path);
    if (type != FTW_F || n < 2 || strcmp(path + n - 2, ".c") != 0)
        return 0;
    FILE *f = fopen(path, "re");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    char *text = NULL;
    size_t cap = 0;
    ssize_t got = getdelim(&text, &cap, '\0', f);
    fclose(f);
    ck_assert_msg(got >= 0, "cannot read %s", path);
    scan_text(tree_scan, path, text);
    free(text);
    return 0;
}

/* Every call in src/ that emits an event which carries facts gives them:
 * one that does not would leave its metrics uncounted, silently. */
START_TEST(no_site_without_facts)
{
    const char *root = getenv("BATON_SOURCE_DIR");
    ck_assert_msg(root != NULL, "BATON_SOURCE_DIR is not set (ctest sets it)");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/src", root);
    struct scan sc = {0};
    tree_scan = &sc;
    ck_assert_int_eq(nftw(dir, scan_file, 16, FTW_PHYS), 0);
    ck_assert_msg(sc.bad == 0, "%d emits without their facts:\n%s", sc.bad, sc.report);
    /* The scan saw the tree's emits (a change of their spelling would
     * make it pass on nothing). */
    ck_assert_int_ge(sc.calls, 50);
    ck_assert_int_ge(sc.with_facts, 15);
}
END_TEST

/* The scan fails for each kind of mistake, and only for them. */
START_TEST(the_scan_finds_a_site_without_facts)
{
    static const struct {
        const char *path, *text;
        int bad;
        const char *want;
    } cases[] = {
        {"src/supervisor/daemon.c",
         "f = 1;\n    log_emit_at(d->log, quiet ? LOG_DEBUG : LOG_INFO, LE_TRANSITION, f);\n", 1,
         "src/supervisor/daemon.c:2: emits an event that carries facts without them"},
        {"src/supervisor/runner/runs.c", "log_emit(x->log, LE_JOB_RETRY, g);", 1,
         "runs.c:1: emits an event that carries facts without them: use log_emit_facts "
         "(LE_JOB_RETRY)"},
        {"src/supervisor/runner/runs.c", "log_emit_facts(x->log, LE_JOB_RETRY, g, NULL);", 1,
         "runs.c:1: emits with NULL facts (LE_JOB_RETRY)"},
        {"src/supervisor/runner/control.c", "log_emit(x->log, ev, f);", 1,
         "control.c:1: emits an event it does not name without facts"},
        {"src/supervisor/runner/claimer.c", "log_emit_at(x->log, lvl, ev, f);", 0, NULL},
        {"src/supervisor/runner/runs.c",
         "log_emit_facts(x->log, LE_JOB_RETRY, g, &(struct log_facts){.job = \"a,b)\"});\n"
         "log_emit(lg, LE_STARTED, f); /* log_emit() */\n"
         "void log_emit_at(struct log *lg, enum log_level lvl, enum log_event ev, cJSON *f)\n",
         0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct scan sc = {0};
        scan_text(&sc, cases[i].path, cases[i].text);
        ck_assert_msg(sc.bad == cases[i].bad, "case %zu: %d found, not %d:\n%s", i, sc.bad,
                      cases[i].bad, sc.report);
        if (cases[i].want != NULL)
            ck_assert_msg(strstr(sc.report, cases[i].want) != NULL, "case %zu: <%s> not in %s", i,
                          cases[i].want, sc.report);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("metrics");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, event_row, 0, (int)(sizeof rows / sizeof rows[0]));
    tcase_add_test(tc, every_kind_has_a_row);
    tcase_add_test(tc, junk_counts_nothing);
    tcase_add_test(tc, families_declared);
    tcase_add_test(tc, gauges_and_declared_jobs);
    tcase_add_test(tc, pauses);
    tcase_add_test(tc, limits);
    tcase_add_test(tc, fleet);
    tcase_add_test(tc, bounded_jobs);
    tcase_add_test(tc, a_copy);
    tcase_add_test(tc, counted_by_enum);
    tcase_add_test(tc, the_log_gives_its_observer_the_facts);
    tcase_add_test(tc, no_site_without_facts);
    tcase_add_test(tc, the_scan_finds_a_site_without_facts);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
