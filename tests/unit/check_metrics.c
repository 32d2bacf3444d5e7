/* check_metrics.c -- the Prometheus metrics counted from log events
 * (metrics.h): at least one row per event kind (every_kind_has_a_row
 * fails for a kind without one, here or in metrics.c's event table) and
 * the series it must produce;
 * HELP and TYPE once per family, every sample in a declared family;
 * bounded cardinality; label escaping; a copy writes what the original
 * does. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"
#include "metrics.h"
#include "pause.h"
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

static void feed(struct metrics *m, enum log_event ev, const char *json)
{
    cJSON *f = json != NULL ? cJSON_Parse(json) : NULL;
    ck_assert_msg(json == NULL || f != NULL, "bad test JSON: %s", json);
    metrics_observe(m, ev, f, 1700000000123);
    cJSON_Delete(f);
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

static const struct {
    enum log_event ev;
    const char *fields;
    const char *want; /* a line the output must have */
} rows[] = {
    {LE_TRANSITION, "{\"from\":\"acquiring\",\"to\":\"working\",\"trigger\":\"acquired\"}",
     "baton_transitions_total{from=\"acquiring\",to=\"working\",trigger=\"acquired\"} 1"},
    {LE_TRANSITION, "{\"from\":\"working\",\"to\":\"renewing\",\"trigger\":\"renew_due\"}",
     "baton_transitions_total{from=\"working\",to=\"renewing\",trigger=\"renew_due\"} 1"},
    {LE_JOB_START, "{\"job\":\"a\",\"trigger\":\"schedule\",\"lateness_ms\":3}",
     "baton_job_start_lateness_seconds_bucket{trigger=\"schedule\",le=\"0.005\"} 1"},
    {LE_JOB_START, "{\"job\":\"a\",\"trigger\":\"schedule\",\"lateness_ms\":3}",
     "baton_job_start_lateness_seconds_bucket{trigger=\"schedule\",le=\"0.0025\"} 0"},
    {LE_JOB_START, "{\"job\":\"a\",\"trigger\":\"catchup\",\"lateness_ms\":120000}",
     "baton_job_start_lateness_seconds_bucket{trigger=\"catchup\",le=\"300\"} 1"},
    {LE_JOB_START, "{\"job\":\"a\",\"trigger\":\"retry\",\"lateness_ms\":4000000}",
     "baton_job_start_lateness_seconds_bucket{trigger=\"retry\",le=\"+Inf\"} 1"},
    {LE_JOB_START, "{\"job\":\"a\",\"trigger\":\"catchup\",\"lateness_ms\":120000}",
     "baton_job_start_lateness_seconds_sum{trigger=\"catchup\"} 120.000000"},
    {LE_JOB_END, "{\"job\":\"a\",\"outcome\":\"ok\",\"duration_ms\":1500}",
     "baton_job_runs_total{job_name=\"a\",outcome=\"ok\"} 1"},
    {LE_JOB_END, "{\"job\":\"a\",\"outcome\":\"ok\",\"duration_ms\":1500}",
     "baton_job_run_duration_seconds_bucket{job_name=\"a\",le=\"5\"} 1"},
    {LE_JOB_END, "{\"job\":\"a\",\"outcome\":\"ok\",\"duration_ms\":1500}",
     "baton_job_run_duration_seconds_bucket{job_name=\"a\",le=\"1\"} 0"},
    {LE_JOB_END, "{\"job\":\"a\",\"outcome\":\"ok\",\"duration_ms\":1500}",
     "baton_job_last_success_timestamp_seconds{job_name=\"a\"} 1700000000.123"},
    {LE_JOB_END, "{\"job\":\"a\",\"outcome\":\"failed\",\"duration_ms\":10}",
     "baton_job_last_run_timestamp_seconds{job_name=\"a\"} 1700000000.123"},
    {LE_JOB_END, "{\"job\":\"b\",\"outcome\":\"failed_to_start\",\"error\":\"no such file\"}",
     "baton_job_runs_total{job_name=\"b\",outcome=\"failed_to_start\"} 1"},
    {LE_JOB_END, "{\"job\":\"b\",\"outcome\":\"timeout\",\"duration_ms\":60000}",
     "baton_job_runs_total{job_name=\"b\",outcome=\"timeout\"} 1"},
    {LE_TICK_SKIPPED,
     "{\"job\":\"a\",\"outcome\":\"skipped\",\"ticks\":3,\"reason\":\"a run was alive\"}",
     "baton_ticks_not_run_total{job_name=\"a\",outcome=\"skipped\",reason=\"a run was alive\"} 3"},
    {LE_TICK_SKIPPED, "{\"job\":\"a\",\"outcome\":\"missed\",\"ticks\":null,\"reason\":\"old\"}",
     "baton_ticks_not_run_total{job_name=\"a\",outcome=\"missed\",reason=\"old\"} 1"},
    {LE_TICK_SKIPPED,
     "{\"job\":\"a\",\"outcome\":\"superseded\",\"ticks\":2,\"reason\":\"say \\\"x\\\"\\\\y\\nz\"}",
     "baton_ticks_not_run_total{job_name=\"a\",outcome=\"superseded\",reason=\"say \\\"x\\\"\\\\y\\nz\"} 2"},
    {LE_REDIS_UNREACHABLE, "{\"during\":\"campaign\",\"error\":\"refused\"}",
     "baton_redis_errors_total{during=\"campaign\"} 1"},
    {LE_CLAIM_FAILED, "{\"job\":\"a\",\"error\":\"timeout\"}",
     "baton_redis_errors_total{during=\"claim\"} 1"},
    {LE_HISTORY_WRITE_FAILED, "{\"job\":\"a\",\"error\":\"x\"}",
     "baton_redis_errors_total{during=\"history\"} 1"},
    {LE_HANDOVER_FAILED, "{\"term\":2,\"error\":\"x\"}",
     "baton_redis_errors_total{during=\"handover\"} 1"},
    {LE_LEASE_RELEASE_FAILED, "{\"term\":2,\"error\":\"x\"}",
     "baton_redis_errors_total{during=\"release\"} 1"},
    {LE_RELOAD_FAILED, "{\"error\":\"jobs.yaml:3:5: bad\"}",
     "baton_config_last_reload_successful 0"},
    {LE_RELOAD_FAILED, "{\"error\":\"jobs.yaml:3:5: bad\"}", "baton_reloads_total{result=\"failed\"} 1"},
    {LE_RELOADED, "{\"jobs\":3}", "baton_reloads_total{result=\"ok\"} 1"},
    {LE_JOB_RETRY, "{\"job\":\"a\",\"run_id\":\"r\",\"next_attempt\":2}",
     "baton_job_retries_total{job_name=\"a\"} 1"},
    {LE_TRIGGER_RECEIVED, "{\"job\":\"a\",\"trigger_id\":\"t1\",\"attempt\":1,\"by\":\"u@h\"}",
     "baton_triggers_total{job_name=\"a\",outcome=\"received\"} 1"},
    {LE_TRIGGER_REJECTED, "{\"job\":\"nope\",\"trigger_id\":\"t2\",\"reason\":\"no such job\"}",
     "baton_triggers_total{job_name=\"nope\",outcome=\"rejected\"} 1"},
    {LE_TRIGGER_LEFT, "{\"job\":\"a\",\"trigger_id\":\"t3\",\"attempt\":1,\"reason\":\"late\"}",
     "baton_triggers_total{job_name=\"a\",outcome=\"left\"} 1"},
    {LE_TRIGGER_LOST, "{\"job\":\"a\",\"trigger_id\":\"t4\",\"attempt\":1,\"reason\":\"x\"}",
     "baton_triggers_total{job_name=\"a\",outcome=\"lost\"} 1"},
    {LE_TRIGGER_LEFT, "{\"job\":\"a\",\"trigger_id\":\"t3\",\"attempt\":1,\"reason\":\"late\"}",
     "baton_triggers_total{job_name=\"a\",outcome=\"received\"} 0"},
    {LE_JOB_PAUSED, "{\"job\":\"a\",\"by\":\"u@h\",\"reason\":\"migration\"}",
     "baton_job_paused{job_name=\"a\"} 1"},
    {LE_JOB_RESUMED, "{\"job\":\"a\",\"catchup\":false,\"by\":\"u@h\"}",
     "baton_job_paused{job_name=\"a\"} 0"},
    /* The report counts as an event; the lines are the log's count (a gauge). */
    {LE_LOG_LINES_DROPPED, "{\"lines\":7,\"bytes\":900}",
     "baton_events_total{event=\"log_lines_dropped\"} 1"},
    {LE_LOG_LINES_DROPPED, "{\"lines\":7,\"bytes\":900}", "baton_log_lines_dropped_total 5"},
    {LE_HOOK_END,
     "{\"job\":\"a\",\"run_id\":\"r\",\"hook\":\"on_failure\",\"duration_ms\":3,"
     "\"exit_code\":0,\"outcome\":\"ok\"}",
     "baton_hook_runs_total{job_name=\"a\",outcome=\"ok\"} 1"},
    {LE_CONFIG_DRIFT, "{\"follower\":\"n2\",\"jobs_hash\":\"00\",\"jobs\":1}",
     "baton_config_drift_nodes 1"},
    {LE_CONFIG_DRIFT_RESOLVED, "{\"follower\":\"n2\",\"jobs_hash\":\"00\"}",
     "baton_config_drift_nodes 0"},
    {LE_HOOK_START, "{\"job\":\"a\",\"run_id\":\"r\",\"hook\":\"on_success\"}",
     "baton_events_total{event=\"hook_start\"} 1"},
    {LE_HOOK_OUTPUT, "{\"job\":\"a\",\"run_id\":\"r\",\"hook\":\"on_success\",\"line\":\"x\"}",
     "baton_events_total{event=\"hook_output\"} 1"},
    /* The kinds counted in baton_events_total only. */
    {LE_SECRET_FILE_MODE, "{\"warning\":\"x\"}", "baton_events_total{event=\"secret_file_mode\"} 1"},
    {LE_TLS_VERIFY_OFF, "{\"warning\":\"x\"}", "baton_events_total{event=\"tls_verify_off\"} 1"},
    {LE_CATCH_UP_SKIPPED, "{\"term\":4,\"reason\":\"x\"}",
     "baton_events_total{event=\"catch_up_skipped\"} 1"},
    {LE_STARTED, "{\"version\":\"0.1.0\"}", "baton_events_total{event=\"started\"} 1"},
    {LE_STOPPED, NULL, "baton_events_total{event=\"stopped\"} 1"},
    {LE_MACHINE_LOOP, NULL, "baton_events_total{event=\"machine_loop\"} 1"},
    {LE_TICK_MOVE_REFUSED, "{\"job\":\"a\",\"state\":\"left\",\"because\":\"claim\"}",
     "baton_events_total{event=\"tick_move_refused\"} 1"},
    {LE_FOLLOWING, "{\"leader\":\"b\",\"term\":4}", "baton_events_total{event=\"following\"} 1"},
    {LE_LEASE_RENEWED, "{\"term\":4}", "baton_events_total{event=\"lease_renewed\"} 1"},
    {LE_LEASE_DEADLINE_MISSED, "{\"term\":4}",
     "baton_events_total{event=\"lease_deadline_missed\"} 1"},
    {LE_LEASE_RELEASED, "{\"term\":4}", "baton_events_total{event=\"lease_released\"} 1"},
    {LE_STALE_LEASE_RELEASED, "{\"term\":4}",
     "baton_events_total{event=\"stale_lease_released\"} 1"},
    {LE_REDIS_CONNECTED, "{\"url\":\"redis://x\"}", "baton_events_total{event=\"redis_connected\"} 1"},
    {LE_REDIS_REACHABLE, "{\"outage_ms\":3}", "baton_events_total{event=\"redis_reachable\"} 1"},
    {LE_WATCH_LOST, "{\"error\":\"x\"}", "baton_events_total{event=\"watch_lost\"} 1"},
    {LE_HTTP_LISTENING, "{\"listen\":\"127.0.0.1:1\"}", "baton_events_total{event=\"http_listening\"} 1"},
    {LE_SYSTEMD_NOTIFY, "{\"watchdog_ms\":null}", "baton_events_total{event=\"systemd_notify\"} 1"},
    {LE_SIGNAL_RECEIVED, "{\"signal\":\"HUP\"}", "baton_events_total{event=\"signal_received\"} 1"},
    {LE_STEP_DOWN_REQUESTED, NULL, "baton_events_total{event=\"step_down_requested\"} 1"},
    {LE_HANDOVER, "{\"term\":4,\"running\":1}", "baton_events_total{event=\"handover\"} 1"},
    {LE_DRAINING, "{\"running\":1}", "baton_events_total{event=\"draining\"} 1"},
    {LE_DRAIN_TIMEOUT, "{\"running\":1}", "baton_events_total{event=\"drain_timeout\"} 1"},
    {LE_CATCH_UP, "{\"job\":\"a\",\"missed_ticks\":3}", "baton_events_total{event=\"catch_up\"} 1"},
    {LE_CLAIM_AHEAD, "{\"ahead_ms\":50,\"was_ms\":25,\"job\":\"a\",\"late_ms\":12}",
     "baton_events_total{event=\"claim_ahead\"} 1"},
    {LE_NO_HIGH_WATER_MARK, "{\"job\":\"a\"}",
     "baton_events_total{event=\"no_high_water_mark\"} 1"},
    {LE_CLAIM_REFUSED, "{\"job\":\"a\"}", "baton_events_total{event=\"claim_refused\"} 1"},
    {LE_CLAIM_RECOVERED, "{\"job\":\"a\",\"then\":\"run\"}",
     "baton_events_total{event=\"claim_recovered\"} 1"},
    {LE_CLAIM_FAILURES_ENDED, "{\"job\":\"a\",\"failures\":30,\"outage_ms\":3000}",
     "baton_events_total{event=\"claim_failures_ended\"} 1"},
    {LE_JOB_OUTPUT, "{\"job\":\"a\",\"line\":\"x\"}", "baton_events_total{event=\"job_output\"} 1"},
    {LE_RUN_STATE, "{\"job\":\"a\"}", "baton_events_total{event=\"run_state\"} 1"},
    {LE_JOB_TIMEOUT, "{\"job\":\"a\",\"timeout_ms\":5}", "baton_events_total{event=\"job_timeout\"} 1"},
    {LE_RUN_LOST, "{\"job\":\"a\",\"reason\":\"x\"}", "baton_events_total{event=\"run_lost\"} 1"},
    {LE_JOB_END, "{\"job\":\"a\",\"outcome\":\"ok\",\"duration_ms\":1}",
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
    feed(m, rows[_i].ev, rows[_i].fields);
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
 * baton_events_total), and never crash. */
START_TEST(junk_counts_nothing)
{
    struct metrics *m = metrics_new();
    char *before = without_events(counted(m));
    feed(m, LE_TRANSITION, "{\"from\":\"nowhere\",\"to\":\"working\",\"trigger\":\"acquired\"}");
    feed(m, LE_TRANSITION, "{}");
    feed(m, LE_JOB_END, "{\"job\":\"a\",\"outcome\":\"exploded\"}");
    feed(m, LE_JOB_START, "{\"job\":\"a\"}");
    feed(m, LE_TICK_SKIPPED, "{\"outcome\":7}");
    feed(m, LE_JOB_OUTPUT, "{\"job\":\"a\",\"line\":\"x\"}");
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
        feed(m, rows[i].ev, rows[i].fields);
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
    feed(m, LE_JOB_PAUSED, "{\"job\":\"*\",\"by\":\"u@h\"}");
    char *text = render(m);
    ck_assert(has_line(text, "baton_job_paused{job_name=\"a\"} 1"));
    ck_assert(has_line(text, "baton_job_paused{job_name=\"b\"} 1"));
    free(text);
    feed(m, LE_JOB_RESUMED, "{\"job\":\"*\",\"catchup\":true}");
    feed(m, LE_JOB_PAUSED, "{\"job\":\"b\"}");
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

/* At most METRICS_MAX_JOBS jobs get series; the rest count as "other". */
START_TEST(bounded_jobs)
{
    struct metrics *m = metrics_new();
    char ev[128];
    for (int i = 0; i < METRICS_MAX_JOBS + 50; i++) {
        snprintf(ev, sizeof ev, "{\"job\":\"j%d\",\"outcome\":\"ok\",\"duration_ms\":1}", i);
        feed(m, LE_JOB_END, ev);
    }
    char *text = render(m);
    ck_assert(has_line(text, "baton_job_runs_total{job_name=\"other\",outcome=\"ok\"} 50"));
    ck_assert(has_line(text, "baton_job_runs_total{job_name=\"j0\",outcome=\"ok\"} 1"));
    ck_assert(strstr(text, "job_name=\"j4100\"") == NULL);
    free(text);
    /* Each is found again by its name (the index, rebuilt seven times on the
     * way), in the original and in a copy (which builds its own). */
    for (int i = 0; i < METRICS_MAX_JOBS + 50; i++) {
        snprintf(ev, sizeof ev, "{\"job\":\"j%d\",\"outcome\":\"ok\",\"duration_ms\":1}", i);
        feed(m, LE_JOB_END, ev);
    }
    struct metrics *c = metrics_dup(m);
    feed(c, LE_JOB_END, "{\"job\":\"j77\",\"outcome\":\"ok\",\"duration_ms\":1}");
    feed(c, LE_JOB_END, "{\"job\":\"j9999\",\"outcome\":\"ok\",\"duration_ms\":1}");
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
START_TEST(dup)
{
    struct metrics *m = metrics_new();
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        feed(m, rows[i].ev, rows[i].fields);
    struct metrics *c = metrics_dup(m);
    char *a = counted(m), *b = counted(c);
    ck_assert_msg(strcmp(a, b) == 0, "the copy writes something else");
    feed(m, LE_JOB_END, "{\"job\":\"a\",\"outcome\":\"ok\",\"duration_ms\":1}");
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
    tcase_add_test(tc, bounded_jobs);
    tcase_add_test(tc, dup);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
