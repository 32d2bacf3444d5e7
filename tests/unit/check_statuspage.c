/* check_statuspage.c -- the status document (status.h) and the page made
 * from it (statuspage.h): a node list's age moves its heartbeats into the
 * past; a pause is written as `baton status --json` writes it; the page
 * names the leader in its title, escapes what nodes and pauses say, loads
 * nothing from elsewhere, and says "never", "disabled" and "paused"; what
 * runs now (a heartbeat's runs) is in the document and on the page; so are
 * each node's capacity in use, capacity and labels, and the ticks offered
 * to members not yet accepted. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cron.h"
#include "status.h"
#include "statuspage.h"
#include "testutil.h"

static const struct member members[] = {
    {.node = "web-1",
     .info_json = "{\"state\":\"working\",\"term\":3,\"pid\":10,\"host\":\"<script>alert(1)</script>\","
                  "\"poll_ms\":1000,\"since\":\"2026-01-02T07:00:00Z\",\"version\":\"0.1.0\","
                  "\"running\":1,\"capacity\":4,\"assigned\":1,\"accepting\":true,"
                  "\"labels\":[\"reports\",\"<gpu>\"],"
                  "\"runs\":[{\"job\":\"tick\",\"run_id\":\"r-1\",\"trigger\":\"manual\","
                  "\"scheduled_at\":\"2026-01-02T06:59:00Z\",\"started\":\"2026-01-02T06:59:00.500Z\","
                  "\"by\":\"<i>ops</i>@web-1\"}]}",
     .seen_ago_ms = 100},
    {.node = "web-2", .info_json = "{\"state\":\"waiting\",\"term\":3,\"poll_ms\":1000}",
     .seen_ago_ms = 900},
};

static cJSON *doc(bool leader, int64_t age_ms)
{
    struct cron_expr *every = NULL;
    struct cron_error ce;
    ck_assert_int_eq(cron_parse("*/5 * * * * *", &every, &ce), 0);
    struct baton_leader_info li = {.has_leader = leader, .term = 3, .ttl_ms = 4200};
    snprintf(li.identity, sizeof li.identity, "web-1");
    const struct pause_entry pause = {.job = "backup", .raw = "{}", .since_ms = 1767330000000,
                                      .by = "ops@web-1", .reason = "<b>migration</b>"};
    struct status_job jobs[3] = {
        {.name = "tick", .schedule = "*/5 * * * * *", .enabled = true, .expr = every},
        {.name = "off", .schedule = "@hourly", .enabled = false},
        {.name = "backup", .schedule = "*/5 * * * * *", .enabled = true, .expr = every,
         .paused = &pause},
    };
    struct status_offer offer[2] = {{.node = "web-2", .job = "resize", .field = "1767337199"},
                                    {.node = "web-2", .job = "bad", .field = "x"}};
    size_t per_node[2] = {0, 2};
    const struct status_offers offers = {.v = offer, .n = 2, .per_node = per_node};
    struct status_doc d = {.group = "g", .redis = "redis://127.0.0.1:6379/0", .leader = &li,
                           .members = members, .nmembers = 2, .members_age_ms = age_ms,
                           .jobs = jobs, .njobs = 3, .offers = &offers, .now = 1767337200};
    cJSON *o = status_doc_json(&d);
    cron_free(every);
    ck_assert_ptr_nonnull(o);
    cJSON *v = cJSON_AddObjectToObject(o, "view");
    cJSON_AddStringToObject(v, "node", "web-2");
    cJSON_AddStringToObject(v, "state", "waiting");
    cJSON_AddBoolToObject(v, "ready", true);
    cJSON_AddBoolToObject(v, "redis_up", true);
    cJSON *tr = cJSON_AddArrayToObject(v, "transitions");
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "ts", "2026-01-02T06:59:00.000Z");
    cJSON_AddStringToObject(t, "from", "releasing");
    cJSON_AddStringToObject(t, "to", "idle");
    cJSON_AddStringToObject(t, "trigger", "released");
    cJSON_AddStringToObject(t, "guard", "not stopping");
    cJSON_AddItemToArray(tr, t);
    return o;
}

START_TEST(document)
{
    cJSON *o = doc(true, 0);
    char *s = cJSON_PrintUnformatted(o);
    ck_assert_ptr_nonnull(strstr(s, "\"leader\":{\"node\":\"web-1\",\"term\":3,\"lease_ms\":4200}"));
    ck_assert_ptr_nonnull(strstr(s, "\"next_run\":\"2026-01-02T07:00:05Z\""));
    ck_assert_ptr_nonnull(strstr(s, "{\"name\":\"off\",\"schedule\":\"@hourly\",\"timezone\":\"UTC\","
                                    "\"enabled\":false,\"last_run\":null,\"next_run\":null,"
                                    "\"paused\":null,\"running\":[]}"));
    /* What runs now: tick on web-1, 59.5 s in (now is 07:00:00). */
    ck_assert_ptr_nonnull(strstr(s, "\"running\":[{\"node\":\"web-1\",\"run_id\":\"r-1\","
                                    "\"trigger\":\"manual\",\"scheduled_at\":\"2026-01-02T06:59:00Z\","
                                    "\"started\":\"2026-01-02T06:59:00.500Z\",\"elapsed_ms\":59500,"
                                    "\"by\":\"<i>ops</i>@web-1\"}]"));
    ck_assert_ptr_nonnull(strstr(s, "\"jobs_differ\":null,\"running\":1,\"capacity\":4,"
                                    "\"assigned\":1,\"accepting\":true,"
                                    "\"labels\":[\"reports\",\"<gpu>\"]}"));
    /* a heartbeat without them (an older baton) */
    ck_assert_ptr_nonnull(strstr(s, "\"running\":null,\"capacity\":null,\"assigned\":null,"
                                    "\"accepting\":null,\"labels\":[]}"));
    /* The offers: a field that is not a tick's is left out. */
    ck_assert_ptr_nonnull(strstr(s, "\"offers\":[{\"node\":\"web-2\",\"job\":\"resize\","
                                    "\"scheduled_at\":\"2026-01-02T06:59:59Z\","
                                    "\"tick\":1767337199}]"));
    /* As `baton status --json` writes a pause. */
    ck_assert_ptr_nonnull(strstr(s, "\"paused\":{\"since\":\"2026-01-02T05:00:00.000Z\","
                                    "\"by\":\"ops@web-1\",\"reason\":\"<b>migration</b>\","
                                    "\"all\":false}"));
    free(s);
    cJSON_Delete(o);
    /* A node list read 10 s ago: its heartbeats are 10 s older, and web-1
     * (poll 1 s) is no longer alive. */
    o = doc(true, 10000);
    const cJSON *n = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "nodes"), 0);
    ck_assert_int_eq((int)cJSON_GetObjectItem(n, "seen_ms_ago")->valuedouble, 10100);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(n, "alive")));
    cJSON_Delete(o);
}
END_TEST

START_TEST(page)
{
    size_t len;
    cJSON *o = doc(true, 0);
    char *html = statuspage_render(o, 1767337200000, &len);
    ck_assert_ptr_nonnull(html);
    ck_assert_uint_eq(len, strlen(html));
    ck_assert_ptr_nonnull(strstr(html, "<title>baton g: leader web-1 (term 3)</title>"));
    ck_assert_ptr_nonnull(strstr(html, "data-leader=\"web-1\""));
    ck_assert_ptr_null(strstr(html, "<script>alert"));
    ck_assert_ptr_nonnull(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    ck_assert_ptr_nonnull(strstr(html, "<meta name=\"viewport\""));
    ck_assert_ptr_nonnull(strstr(html, "<noscript><meta http-equiv=\"refresh\""));
    ck_assert_ptr_null(strstr(html, "http://"));
    ck_assert_ptr_null(strstr(html, "https://"));
    ck_assert_ptr_null(strstr(html, " src="));
    ck_assert_ptr_nonnull(strstr(html, "<td>off</td><td><span class=\"mute\">never</span></td>"));
    ck_assert_ptr_nonnull(strstr(html, "disabled"));
    ck_assert_ptr_nonnull(strstr(html, "in 5.0 s")); /* tick's next run */
    /* A transition's internal names in words, as the text log says them. */
    ck_assert_ptr_nonnull(strstr(html, "<td>lease given up <span class=\"mute\">[not shutting "
                                       "down]</span>"));
    /* backup is paused: said in its row and in words below, escaped. */
    ck_assert_ptr_nonnull(strstr(html, "<td><span class=\"warn\" title=\"since "
                                       "2026-01-02T05:00:00.000Z by ops@web-1: "
                                       "&lt;b&gt;migration&lt;/b&gt;\">paused</span></td>"));
    ck_assert_ptr_nonnull(strstr(html, "<li><b>backup</b> <span class=\"warn\">paused</span> since "
                                       "2026-01-02T05:00:00.000Z by ops@web-1: "
                                       "&lt;b&gt;migration&lt;/b&gt;</li>"));
    ck_assert_ptr_null(strstr(html, "<b>migration"));
    /* What runs now, its who escaped. */
    ck_assert_ptr_nonnull(strstr(html, "<table id=\"running\">"));
    ck_assert_ptr_nonnull(strstr(html, "<tr><td>tick</td><td>web-1</td><td>manual by "
                                       "&lt;i&gt;ops&lt;/i&gt;@web-1</td>"));
    ck_assert_ptr_nonnull(strstr(html, "<code>r-1</code>"));
    ck_assert_ptr_null(strstr(html, "<i>ops"));
    /* Capacity in use / capacity and the labels, escaped; none from an
     * older baton's heartbeat. */
    ck_assert_ptr_nonnull(strstr(html, "<td>1</td><td class=\"\">1/4</td><td>reports, "
                                       "&lt;gpu&gt;</td>"));
    ck_assert_ptr_nonnull(strstr(html, "<td></td><td class=\"mute\"></td><td></td>"));
    ck_assert_ptr_nonnull(strstr(html, "<table id=\"offers\">"));
    ck_assert_ptr_nonnull(
        strstr(html, "<tr><td>resize</td><td>2026-01-02T06:59:59Z</td><td>web-2</td></tr>"));
    free(html);
    cJSON_Delete(o);
    o = doc(false, 0);
    html = statuspage_render(o, 1767337200000, &len);
    ck_assert_ptr_nonnull(strstr(html, "<title>baton g: no leader</title>"));
    ck_assert_ptr_nonnull(strstr(html, "data-leader=\"\""));
    free(html);
    cJSON_Delete(o);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("statuspage");
    TCase *tc = tcase_create("statuspage");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, document);
    tcase_add_test(tc, page);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
