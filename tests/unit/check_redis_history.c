/* check_redis_history.c -- the run record (src/group/history.c)
 * through a real redis-server: a version 3 record with its output written
 * by history_command() and read back by history_read() and history_find()
 * field for field; records of versions 1 and 2 (written as those versions
 * wrote them) still read; the JSON of a record is valid whatever the
 * stream holds, and carries the output only when asked; history_find()
 * pages through more records than one read returns; the stream stays
 * capped. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton.h"
#include "baton_redis.h"
#include "history.h"
#include "utf8.h"
#include "testutil.h"

static void xadd(struct baton_client *c, const struct history_rec *r, const char *job,
                 int64_t maxlen)
{
    struct history_command cmd;
    struct baton_reply *rep = NULL;
    ck_assert_int_eq(history_command(r, "hist", job, maxlen, &cmd), BATON_OK);
    ck_assert_int_eq(
        baton_client_command(c, cmd.argc, (const char *const *)cmd.argv, NULL, &rep), BATON_OK);
    baton_reply_free(rep);
    history_command_free(&cmd);
}

static struct history_rec a_run(const char *run_id, const char *output)
{
    return (struct history_rec){.run_id = run_id,
                                .node = "web-1",
                                .term = 7,
                                .scheduled_at = 1767337804,
                                .until = 1767337804,
                                .ticks = 1,
                                .trigger = "retry",
                                .started_ms = INT64_C(1767337804123),
                                .duration_ms = 42,
                                .attempt = 2,
                                .outcome = HO_FAILED,
                                .exit_code = 3,
                                .signal = "",
                                .reason = "",
                                .has_output = output != NULL,
                                .output = output,
                                .output_len = output != NULL ? strlen(output) : 0,
                                .output_dropped = 1234};
}

START_TEST(round_trip_v3)
{
    struct baton_client *c = tu_client(1000);
    const char *out = "line 1\nli\xc3\xa9ne 2 \x1b[31m\t\"q\"\n\xef\xbf\xbd\n";
    struct history_rec w = a_run("1767337804-7-2-9", out);
    struct history_list l = {0};
    free(tu_redis("DEL baton:{hist}:runs:rt"));
    xadd(c, &w, "rt", 100);
    ck_assert_int_eq(history_read(c, "hist", "rt", 10, &l), BATON_OK);
    ck_assert_uint_eq(l.n, 1);
    const struct history_rec *r = &l.v[0];
    ck_assert_int_eq(r->version, HISTORY_VERSION);
    ck_assert_int_eq(HISTORY_VERSION, 3);
    ck_assert_str_eq(r->run_id, w.run_id);
    ck_assert_str_eq(r->node, "web-1");
    ck_assert_uint_eq(r->term, 7);
    ck_assert_int_eq(r->scheduled_at, w.scheduled_at);
    ck_assert_int_eq(r->started_ms, w.started_ms);
    ck_assert_int_eq(r->duration_ms, 42);
    ck_assert_int_eq(r->attempt, 2);
    ck_assert_str_eq(r->trigger, "retry");
    ck_assert_int_eq(r->outcome, HO_FAILED);
    ck_assert_int_eq(r->exit_code, 3);
    ck_assert(r->has_output);
    ck_assert_uint_eq(r->output_len, strlen(out));
    ck_assert_int_eq(memcmp(r->output, out, r->output_len), 0);
    ck_assert_int_eq(r->output_dropped, 1234);

    /* JSON: small by default, the output when asked, valid either way. */
    cJSON *j = history_json(r);
    ck_assert_ptr_null(cJSON_GetObjectItem(j, "output"));
    ck_assert_int_eq((int)cJSON_GetObjectItem(j, "output_bytes")->valuedouble, (int)strlen(out));
    ck_assert_int_eq((int)cJSON_GetObjectItem(j, "output_dropped")->valuedouble, 1234);
    cJSON_Delete(j);
    j = history_json_opts(r, HISTORY_JSON_OUTPUT);
    char *text = cJSON_PrintUnformatted(j);
    cJSON *back = cJSON_Parse(text);
    ck_assert_ptr_nonnull(back);
    ck_assert_str_eq(cJSON_GetObjectItem(back, "output")->valuestring, out);
    cJSON_Delete(back);
    free(text);
    cJSON_Delete(j);
    history_list_free(&l);

    /* Without output (history.output_bytes 0): no output fields. */
    w = a_run("1767337804-7-2-10", NULL);
    xadd(c, &w, "rt", 100);
    ck_assert_int_eq(history_find(c, "hist", "rt", "1767337804-7-2-10", &l), BATON_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert(!l.v[0].has_output);
    j = history_json_opts(&l.v[0], HISTORY_JSON_OUTPUT);
    ck_assert_ptr_null(cJSON_GetObjectItem(j, "output"));
    ck_assert_ptr_null(cJSON_GetObjectItem(j, "output_bytes"));
    cJSON_Delete(j);
    history_list_free(&l);
    baton_client_free(c);
}
END_TEST

/* Records as versions 1 and 2 wrote them are still read. */
START_TEST(older_versions)
{
    struct baton_client *c = tu_client(1000);
    struct history_list l = {0};
    free(tu_redis("DEL baton:{hist}:runs:old"));
    free(tu_redis("XADD baton:{hist}:runs:old * run_id 1-1-1-1 node n1 term 1 scheduled_at "
                  "2026-01-02T07:00:00Z started 2026-01-02T07:00:00.010Z duration_ms 5 attempt 1 "
                  "outcome ok result exit_0"));
    /* version 1's result is "exit 0" with a space: write it with a client. */
    struct baton_reply *rep = NULL;
    const char *v1[] = {"XADD",    "baton:{hist}:runs:old", "*",         "run_id",
                        "1-1-1-2", "node",                  "n1",        "scheduled_at",
                        "2026-01-02T07:00:01Z",             "started",   "2026-01-02T07:00:01.010Z",
                        "outcome", "failed",                "result",    "signal TERM"};
    ck_assert_int_eq(baton_client_command(c, 15, v1, NULL, &rep), BATON_OK);
    baton_reply_free(rep);
    const char *v2[] = {"XADD",         "baton:{hist}:runs:old", "*",
                        "v",            "2",                     "run_id",
                        "1-1-1-3",      "node",                  "n2",
                        "scheduled_at", "2026-01-02T07:00:02Z",  "started",
                        "2026-01-02T07:00:02.010Z",              "outcome",
                        "ok",           "exit_code",             "0"};
    ck_assert_int_eq(baton_client_command(c, 17, v2, NULL, &rep), BATON_OK);
    baton_reply_free(rep);
    ck_assert_int_eq(history_read(c, "hist", "old", 10, &l), BATON_OK);
    ck_assert_uint_eq(l.n, 3);
    ck_assert_int_eq(l.v[0].version, 2);
    ck_assert_int_eq(l.v[0].exit_code, 0);
    ck_assert(!l.v[0].has_output);
    ck_assert_int_eq(l.v[1].version, 1);
    ck_assert_str_eq(l.v[1].signal, "TERM");
    ck_assert(!l.v[1].has_output);
    history_list_free(&l);
    /* find: the newest run that started is the v2 one. */
    ck_assert_int_eq(history_find(c, "hist", "old", NULL, &l), BATON_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(l.v[0].run_id, "1-1-1-3");
    history_list_free(&l);
    baton_client_free(c);
}
END_TEST

/* An output that is not valid UTF-8 (another writer's) still gives valid
 * JSON. */
START_TEST(json_always_valid)
{
    struct baton_client *c = tu_client(1000);
    struct history_list l = {0};
    struct baton_reply *rep = NULL;
    free(tu_redis("DEL baton:{hist}:runs:bad"));
    const char *raw[] = {"XADD", "baton:{hist}:runs:bad", "*", "v", "3", "run_id", "r1",
                         "started", "2026-01-02T07:00:02.010Z", "outcome", "ok", "output",
                         "a\xff\xfe" "b\n", "output_dropped", "0"};
    ck_assert_int_eq(baton_client_command(c, 15, raw, NULL, &rep), BATON_OK);
    baton_reply_free(rep);
    ck_assert_int_eq(history_find(c, "hist", "bad", "r1", &l), BATON_OK);
    ck_assert_uint_eq(l.n, 1);
    cJSON *j = history_json_opts(&l.v[0], HISTORY_JSON_OUTPUT);
    char *text = cJSON_PrintUnformatted(j);
    ck_assert(utf8_valid(text, strlen(text)));
    ck_assert_ptr_nonnull(strstr(text, "\"output\":\"a\xef\xbf\xbd\xef\xbf\xbd" "b\\n\""));
    free(text);
    cJSON_Delete(j);
    history_list_free(&l);
    baton_client_free(c);
}
END_TEST

/* find pages back through the stream: a run 120 records deep is found;
 * one not there is not; skipped ranges are not "the newest run". */
START_TEST(find_pages)
{
    struct baton_client *c = tu_client(1000);
    struct history_list l = {0};
    char id[64];
    free(tu_redis("DEL baton:{hist}:runs:deep"));
    for (int i = 0; i < 130; i++) {
        snprintf(id, sizeof id, "run-%d", i);
        struct history_rec w = a_run(id, "out\n");
        xadd(c, &w, "deep", 1000);
    }
    struct history_rec skipped = {.run_id = "", .node = "n", .scheduled_at = 1767337804,
                                  .until = 1767337810, .ticks = 7, .trigger = "schedule",
                                  .outcome = HO_SKIPPED, .exit_code = -1, .signal = "",
                                  .reason = "busy"};
    xadd(c, &skipped, "deep", 1000);
    ck_assert_int_eq(history_find(c, "hist", "deep", "run-9", &l), BATON_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(l.v[0].run_id, "run-9");
    ck_assert_str_eq(l.v[0].output, "out\n");
    history_list_free(&l);
    ck_assert_int_eq(history_find(c, "hist", "deep", NULL, &l), BATON_OK);
    ck_assert_str_eq(l.v[0].run_id, "run-129");
    history_list_free(&l);
    ck_assert_int_eq(history_find(c, "hist", "deep", "run-999", &l), BATON_OK);
    ck_assert_uint_eq(l.n, 0);
    history_list_free(&l);
    ck_assert_int_eq(history_find(c, "hist", "nothing-here", NULL, &l), BATON_OK);
    ck_assert_uint_eq(l.n, 0);
    history_list_free(&l);
    baton_client_free(c);
}
END_TEST

/* The stream is capped: records with a 16 KiB output leave at most one
 * record beyond history.runs (Redis trims whole blocks, and a block closes
 * at 4 KiB), so Redis holds about runs x output_bytes of output per job
 * (measured: 11 records, 209 kB). */
START_TEST(capped)
{
    struct baton_client *c = tu_client(1000);
    char *big = malloc(16385);
    memset(big, 'x', 16383);
    big[16383] = '\n';
    big[16384] = '\0';
    free(tu_redis("DEL baton:{hist}:runs:cap"));
    for (int i = 0; i < 60; i++) {
        char id[32];
        snprintf(id, sizeof id, "c-%d", i);
        struct history_rec w = a_run(id, big);
        xadd(c, &w, "cap", 10);
    }
    long long n = tu_redis_int("XLEN baton:{hist}:runs:cap");
    ck_assert_int_ge(n, 10);
    ck_assert_int_le(n, 11);
    long long mem = tu_redis_int("MEMORY USAGE baton:{hist}:runs:cap SAMPLES 0");
    /* Each record costs its output plus the allocator's rounding (jemalloc
     * serves 16 KiB + a little from its 20 KiB class). */
    ck_assert_int_le(mem, n * 20480 + 16384);
    printf("capped: %lld records of 16 KiB output, %lld bytes in Redis\n", n, mem);
    free(big);
    baton_client_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("history");
    TCase *tc = tcase_create("history");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, round_trip_v3);
    tcase_add_test(tc, older_versions);
    tcase_add_test(tc, json_always_valid);
    tcase_add_test(tc, find_pages);
    tcase_add_test(tc, capped);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
