/* check_redis_pause.c -- the records of pauses and resumes in a job's
 * history (src/group/pauselog.c, written by pause.c) through a real
 * redis-server: a pause and a resume each leave one record with who, when
 * and why, and a call that changes nothing leaves none; a pause of every
 * job is one record, read with each job's own, newest first; a resume of
 * every job records each entry it resumes; count bounds a read; the
 * streams stay capped near keep; the JSON and the words of each; nothing
 * is written to the job's runs. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton.h"
#include "baton_redis.h"
#include "pause.h"
#include "pauselog.h"
#include "testutil.h"

#define G "pzl"

static void clean(void)
{
    free(tu_redis("DEL baton:{" G "}:paused baton:{" G "}:pauses:a baton:{" G "}:pauses:b baton:{" G
                  "}:pauses:* baton:{" G "}:runs:a"));
}

static const char *describe(const struct pause_rec *r)
{
    static char buf[512];
    return pause_rec_describe(r, buf, sizeof buf);
}

START_TEST(pause_and_resume_recorded)
{
    struct baton_client *c = tu_client(1000);
    struct pause_rec_list l = {0};
    bool was = false;
    int n = 0;
    clean();
    ck_assert_int_eq(pause_set(c, G, "a", "alice@web-1", "freeze", 100, &was), BATON_OK);
    ck_assert(!was);
    ck_assert_int_eq(pause_set(c, G, "a", "bob@web-2", "again", 100, &was), BATON_OK);
    ck_assert(was); /* changed nothing: no record */
    ck_assert_int_eq(pause_resume(c, G, "a", false, "ops-bot (token) from 10.0.0.7", 100, &n),
                     BATON_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(pause_resume(c, G, "a", false, "carol@web-3", 100, &n), BATON_OK);
    ck_assert_int_eq(n, 0); /* a resume pending already: nothing new */
    ck_assert_int_eq(tu_redis_int("XLEN baton:{" G "}:pauses:a"), 2);
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{" G "}:runs:a"), 0);

    ck_assert_int_eq(pause_rec_read(c, G, "a", 10, &l), BATON_OK);
    ck_assert_uint_eq(l.n, 2);
    ck_assert(l.v[0].resume && !l.v[1].resume);
    ck_assert_int_ge(l.v[0].at_ms, l.v[1].at_ms);
    ck_assert_int_gt(l.v[1].at_ms, INT64_C(1600000000000));
    ck_assert_str_eq(describe(&l.v[0]), "resumed by ops-bot (token) from 10.0.0.7");
    ck_assert_str_eq(describe(&l.v[1]), "paused by alice@web-1: freeze");
    cJSON *o = pause_rec_json(&l.v[1]);
    char *s = cJSON_PrintUnformatted(o);
    ck_assert_ptr_nonnull(strstr(s, "\"kind\":\"pause\""));
    ck_assert_ptr_nonnull(strstr(s, "\"job\":\"a\",\"by\":\"alice@web-1\",\"all\":false,"
                                    "\"reason\":\"freeze\"}"));
    free(s);
    cJSON_Delete(o);
    pause_rec_list_free(&l);
    baton_client_free(c);
}
END_TEST

START_TEST(every_job)
{
    struct baton_client *c = tu_client(1000);
    struct pause_rec_list l = {0};
    bool was = false;
    int n = 0;
    clean();
    ck_assert_int_eq(pause_set(c, G, "b", "alice@web-1", "", 100, &was), BATON_OK);
    usleep(5000); /* each call its own ms: the order below is the calls' */
    ck_assert_int_eq(pause_set(c, G, NULL, "ops-bot (token) from ::1", "month-end", 100, &was),
                     BATON_OK);
    usleep(5000);
    ck_assert_int_eq(pause_resume(c, G, NULL, true, "bob@web-2", 100, &n), BATON_OK);
    ck_assert_int_eq(n, 2); /* "*" and b's own */
    ck_assert_int_eq(tu_redis_int("XLEN baton:{" G "}:pauses:*"), 2);
    ck_assert_int_eq(tu_redis_int("XLEN baton:{" G "}:pauses:b"), 2);

    /* a: every job's records only; b: its own among them, newest first */
    ck_assert_int_eq(pause_rec_read(c, G, "a", 10, &l), BATON_OK);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_str_eq(describe(&l.v[0]), "resumed every job by bob@web-2 (catch-up)");
    ck_assert_str_eq(describe(&l.v[1]), "paused every job by ops-bot (token) from ::1: month-end");
    cJSON *o = pause_rec_json(&l.v[0]);
    char *s = cJSON_PrintUnformatted(o);
    ck_assert_ptr_nonnull(strstr(s, "\"job\":null,\"by\":\"bob@web-2\",\"all\":true,"
                                    "\"catchup\":true}"));
    free(s);
    cJSON_Delete(o);
    pause_rec_list_free(&l);
    ck_assert_int_eq(pause_rec_read(c, G, "b", 10, &l), BATON_OK);
    ck_assert_uint_eq(l.n, 4);
    ck_assert_str_eq(describe(&l.v[3]), "paused by alice@web-1");
    int own_resume = 0;
    for (size_t i = 0; i < 2; i++)
        if (strcmp(l.v[i].job, "b") == 0) {
            own_resume++;
            ck_assert_str_eq(describe(&l.v[i]),
                             "resumed by bob@web-2 (catch-up) (a resume of every job)");
        }
    ck_assert_int_eq(own_resume, 1);
    pause_rec_list_free(&l);
    /* count bounds the two streams together */
    ck_assert_int_eq(pause_rec_read(c, G, "b", 3, &l), BATON_OK);
    ck_assert_uint_eq(l.n, 3);
    ck_assert(!(l.v[2].resume));
    pause_rec_list_free(&l);
    baton_client_free(c);
}
END_TEST

/* keep caps the stream near it, as history.runs does a job's runs (XADD
 * MAXLEN ~: Redis trims whole blocks of 100 entries). */
START_TEST(capped)
{
    struct baton_client *c = tu_client(1000);
    bool was = false;
    int n = 0;
    clean();
    for (int i = 0; i < 300; i++) {
        ck_assert_int_eq(pause_set(c, G, "a", "x@y", "cycle", 5, &was), BATON_OK);
        ck_assert_int_eq(pause_resume(c, G, "a", true, "x@y", 5, &n), BATON_OK);
    }
    long long len = tu_redis_int("XLEN baton:{" G "}:pauses:a");
    ck_assert_int_ge(len, 5);
    ck_assert_int_le(len, 5 + 100);
    printf("capped: 600 records written with keep 5, %lld kept\n", len);
    baton_client_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("pauselog");
    TCase *tc = tcase_create("pauselog");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, pause_and_resume_recorded);
    tcase_add_test(tc, every_job);
    tcase_add_test(tc, capped);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
