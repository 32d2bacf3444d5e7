/* check_logfmt.c -- the log's text format (logfmt.c): a table of JSON lines
 * and the exact text each becomes, with and without colour; lines that are
 * not events pass unchanged. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "logfmt.h"
#include "machine.h"
#include "run.h"
#include "testutil.h"

static const struct {
    const char *json, *text;
} cases[] = {
    /* A phrase: its fields are not repeated; fence (= term) is hidden. */
    {"{\"ts\":\"2026-11-22T02:30:23.573Z\",\"level\":\"info\",\"event\":\"transition\","
     "\"node\":\"node-b\",\"group\":\"default\",\"from\":\"acquiring\",\"to\":\"working\","
     "\"trigger\":\"acquired\",\"term\":2,\"fence\":2,\"in_state_ms\":0}",
     "2026-11-22T02:30:23.573Z INFO  node-b transition acquiring -> working (acquired)  term=2"
     "  in_state_ms=0"},
    /* Values with spaces are quoted; another group is shown. */
    {"{\"ts\":\"2026-11-22T02:30:25.001Z\",\"level\":\"info\",\"event\":\"job_output\","
     "\"node\":\"a\",\"group\":\"g1\",\"job\":\"hello\",\"run_id\":\"1-2-1-3\","
     "\"stream\":\"stderr\",\"line\":\"about to fail\"}",
     "2026-11-22T02:30:25.001Z INFO  a job_output hello: about to fail  stream=stderr  group=g1"},
    {"{\"ts\":\"T\",\"level\":\"warn\",\"event\":\"job_end\",\"node\":\"a\",\"group\":\"default\","
     "\"job\":\"flaky\",\"outcome\":\"failed\",\"exit_code\":1,\"duration_ms\":3,"
     "\"error\":\"a \\\"b\\\"\",\"ok\":false,\"x\":null,\"list\":[1,\"two\"],\"f\":1.5}",
     "T WARN  a job_end flaky failed  exit_code=1  duration_ms=3  error=\"a \\\"b\\\"\"  ok=false"
     "  x=null  list=[1,\"two\"]  f=1.5"},
    /* An event without a phrase: every field as key=value. */
    {"{\"ts\":\"T\",\"level\":\"debug\",\"event\":\"lease_renewed\",\"node\":\"n\","
     "\"group\":\"default\",\"term\":7,\"ttl_ms\":10000}",
     "T DEBUG n lease_renewed  term=7  ttl_ms=10000"},
    {"{\"ts\":\"T\",\"level\":\"info\",\"event\":\"stopped\",\"node\":\"n\",\"group\":\"default\"}",
     "T INFO  n stopped"},
    /* A phrase whose field is missing shows '?'; empty strings are quoted. */
    {"{\"ts\":\"T\",\"level\":\"info\",\"event\":\"following\",\"node\":\"n\",\"term\":3,"
     "\"lease_left_ms\":900,\"note\":\"\"}",
     "T INFO  n following ? (term 3)  lease_left_ms=900  note=\"\""},
    /* Internal names read as words: a guard, a trigger, why a run was
     * stopped; optional parts of a phrase only when their fields are there. */
    {"{\"ts\":\"T\",\"level\":\"info\",\"event\":\"transition\",\"node\":\"n\","
     "\"from\":\"waiting\",\"to\":\"idle\",\"trigger\":\"stop\",\"guard\":\"not runs_left\","
     "\"term\":0,\"fence\":0,\"in_state_ms\":5}",
     "T INFO  n transition waiting -> idle (stop, no run left)  term=0  in_state_ms=5"},
    {"{\"ts\":\"T\",\"level\":\"info\",\"event\":\"transition\",\"node\":\"n\","
     "\"from\":\"releasing\",\"to\":\"idle\",\"trigger\":\"released\","
     "\"guard\":\"not stopping\",\"term\":4}",
     "T INFO  n transition releasing -> idle (lease given up, not shutting down)  term=4"},
    {"{\"ts\":\"T\",\"level\":\"info\",\"event\":\"catch_up\",\"node\":\"n\",\"job\":\"j\","
     "\"missed_ticks\":2,\"outside_window\":1}",
     "T INFO  n catch_up j: catching up 2 missed tick(s); 1 older than its catch-up window, not "
     "run"},
    {"{\"ts\":\"T\",\"level\":\"info\",\"event\":\"no_high_water_mark\",\"node\":\"n\","
     "\"job\":\"j\"}",
     "T INFO  n no_high_water_mark j: no tick of it was ever claimed (a new job, or Redis lost its "
     "data): it starts from now, without catch-up"},
    {"{\"ts\":\"T\",\"level\":\"warn\",\"event\":\"job_end\",\"node\":\"n\",\"job\":\"j\","
     "\"outcome\":\"killed\",\"stopped_because\":\"lease_lost\",\"signal\":\"KILL\"}",
     "T WARN  n job_end j killed (this node lost its lease)  signal=KILL"},
    {"{\"ts\":\"T\",\"level\":\"debug\",\"event\":\"run_state\",\"node\":\"n\","
     "\"because\":\"replaced\"}",
     "T DEBUG n run_state  because=\"replaced by a newer tick\""},
    {"{\"ts\":\"T\",\"level\":\"warn\",\"event\":\"config_drift\",\"node\":\"a\","
     "\"follower\":\"c\",\"jobs\":2}",
     "T WARN  a config_drift c runs other jobs than this leader  jobs=2"},
    /* A line of an older baton with two "node"s: the second is not lost. */
    {"{\"ts\":\"T\",\"level\":\"warn\",\"event\":\"x\",\"node\":\"a\",\"group\":\"default\","
     "\"node\":\"c\"}",
     "T WARN  a x  node=c"},
    /* What a terminal would act on is escaped, wherever it is: a title
     * change and a screen clear in job output, line breaks in a pause
     * reason, an ESC in a node name and in a key. */
    {"{\"ts\":\"T\",\"level\":\"info\",\"event\":\"job_output\",\"node\":\"a\","
     "\"job\":\"j\",\"line\":\"\\u001b]0;owned\\u0007\\u001b[2J\\rdone\"}",
     "T INFO  a job_output j: \\x1b]0;owned\\x07\\x1b[2J\\rdone"},
    {"{\"ts\":\"T\",\"level\":\"info\",\"event\":\"job_paused\",\"node\":\"n\\u001b[31m\","
     "\"job\":\"j\",\"reason\":\"x\\nT ERROR forged\\u009b\",\"k\\u001bq\":1}",
     "T INFO  n\\x1b[31m job_paused  job=j  reason=\"x\\nT ERROR forged\\u009b\"  k\\x1bq=1"},
    {"raw \033]0;title\007 \302\233", "raw \\x1b]0;title\\x07 \\u009b"},
    /* Not events: unchanged. */
    {"plain text from somewhere", "plain text from somewhere"},
    {"{\"not\":\"an event\"}", "{\"not\":\"an event\"}"},
    {"{broken json", "{broken json"},
    {"", ""},
};

START_TEST(table)
{
    char *t = logfmt_line(cases[_i].json, strlen(cases[_i].json), false);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t, cases[_i].text);
    free(t);
}
END_TEST

/* Colour: escapes around the parts, and the same text once they are removed. */
START_TEST(colour)
{
    const char *json = cases[0].json;
    char *t = logfmt_line(json, strlen(json), true);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(strstr(t, "\033[32mINFO \033[0m"));
    ck_assert_ptr_nonnull(strstr(t, "\033[1macquiring -> working (acquired)\033[0m"));
    char plain[512];
    size_t n = 0;
    for (const char *p = t; *p != '\0' && n + 1 < sizeof plain; p++) {
        if (*p == '\033') {
            p = strchr(p, 'm');
            ck_assert_ptr_nonnull(p);
            continue;
        }
        plain[n++] = *p;
    }
    plain[n] = '\0';
    ck_assert_str_eq(plain, cases[0].text);
    free(t);
    /* A warning is yellow, an error bold red. */
    const char *warn = "{\"ts\":\"T\",\"level\":\"warn\",\"event\":\"x\",\"node\":\"n\"}";
    t = logfmt_line(warn, strlen(warn), true);
    ck_assert_ptr_nonnull(strstr(t, "\033[33mWARN \033[0m"));
    free(t);
    const char *err = "{\"ts\":\"T\",\"level\":\"error\",\"event\":\"x\",\"node\":\"n\"}";
    t = logfmt_line(err, strlen(err), true);
    ck_assert_ptr_nonnull(strstr(t, "\033[1;31mERROR\033[0m"));
    free(t);
}
END_TEST

/* The supervisor's own text log: output comes as raw items (quoted by the
 * log) and reads as baton logs shows it, escaped, not quoted. */
START_TEST(raw_output)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "ts", "T");
    cJSON_AddStringToObject(o, "level", "info");
    cJSON_AddStringToObject(o, "event", "job_output");
    cJSON_AddStringToObject(o, "node", "n");
    cJSON_AddStringToObject(o, "job", "j");
    cJSON_AddRawToObject(o, "line", "\"a \\u001b[2J\\r\"");
    cJSON_AddRawToObject(o, "other", "\"b \\u0007\"");
    char *t = logfmt_event(o, false);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t, "T INFO  n job_output j: a \\x1b[2J\\r  other=\"b \\u0007\"");
    free(t);
    cJSON_Delete(o);
}
END_TEST

/* A node's colour never reads as a warning, an error (red, yellow) or the
 * INFO level (green), whatever its name. */
START_TEST(node_colours)
{
    for (int i = 0; i < 300; i++) {
        char json[160];
        snprintf(json, sizeof json,
                 "{\"ts\":\"T\",\"level\":\"info\",\"event\":\"x\",\"node\":\"node-%d\"}", i);
        char *t = logfmt_line(json, strlen(json), true);
        ck_assert_ptr_nonnull(t);
        const char *at = strstr(t, "INFO \033[0m ");
        ck_assert_ptr_nonnull(at);
        at += strlen("INFO \033[0m ");
        int code = 0;
        ck_assert_msg(sscanf(at, "\033[%dm", &code) == 1, "no colour before the node: %s", t);
        ck_assert_msg(code == 34 || code == 35 || code == 36 || code == 94 || code == 95 ||
                          code == 96,
                      "node-%d is in colour %d", i, code);
        free(t);
    }
}
END_TEST

/* The tables hold: every phrase is of an event of events.h, and every
 * internal name a value can take reads as words -- a guard held or not,
 * a machine event that is not a plain word, a reason to stop a run. */
START_TEST(tables)
{
    for (size_t i = 0; logfmt_phrase_event(i) != NULL; i++) {
        bool known = false;
        for (int e = 0; e < LE_COUNT && !known; e++)
            known = strcmp(logfmt_phrase_event(i), log_event_name((enum log_event)e)) == 0;
        ck_assert_msg(known, "a phrase for %s, which is no event", logfmt_phrase_event(i));
    }
    for (int g = G_ALWAYS + 1; g < G_COUNT; g++) {
        const char *name = machine_guard_name((enum machine_guard)g);
        char negated[64];
        snprintf(negated, sizeof negated, "not %s", name);
        ck_assert_msg(logfmt_words("guard", name) != NULL, "guard %s", name);
        ck_assert_msg(logfmt_words("guard", negated) != NULL, "guard %s", negated);
    }
    for (int e = 0; e < EV_COUNT; e++) {
        const char *name = machine_event_name((enum machine_event)e);
        ck_assert_msg(strchr(name, '_') == NULL || logfmt_words("trigger", name) != NULL,
                      "trigger %s", name);
    }
    for (int r = RUN_STOP_NONE + 1; r < RUN_STOP_COUNT; r++) {
        const char *name = run_stop_name((enum run_stop)r);
        ck_assert_msg(logfmt_words("stopped_because", name) != NULL, "stopped_because %s", name);
        ck_assert_msg(logfmt_words("because", name) != NULL, "because %s", name);
    }
    ck_assert_ptr_null(logfmt_words("job", "not runs_left")); /* by field */
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("logfmt");
    TCase *tc = tcase_create("format");
    tcase_set_timeout(tc, 10);
    tcase_add_loop_test(tc, table, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, colour);
    tcase_add_test(tc, raw_output);
    tcase_add_test(tc, node_colours);
    tcase_add_test(tc, tables);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
