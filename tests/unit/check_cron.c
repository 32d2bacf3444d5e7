/* check_cron.c -- Check suite for src/cron: the parser, the next fire time in
 * any zone, TZif and POSIX TZ rules, durations and RFC 3339.
 *
 * The expected times in the tables were computed by an independent
 * brute-force reference (a minute-by-minute walk over real instants with
 * Python's zoneinfo, applying the rules of PRODUCT.md literally) and checked
 * by hand where they matter (DST rows). Two further tests compare cron_next()
 * with brute-force walks written here, on generated expressions: one for the
 * day fields (UTC), one for the DST rules (several zones, every transition of
 * a year).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cron.h"
#include "testutil.h"

#define TIMEOUT_S 60

/* ---- helpers ------------------------------------------------------------- */

static int64_t at(const char *rfc3339)
{
    int64_t t = 0;
    char err[128];
    ck_assert_msg(cron_time_parse(rfc3339, &t, err, sizeof err) == 0, "%s: %s", rfc3339, err);
    return t;
}

static struct cron_tz *zone(const char *name)
{
    struct cron_tz *tz = NULL;
    char err[256];
    ck_assert_msg(cron_tz_load(name, &tz, err, sizeof err) == 0, "%s: %s", name, err);
    return tz;
}

static struct cron_expr *expr(const char *text)
{
    struct cron_expr *e = NULL;
    struct cron_error ce;
    char msg[320];
    ck_assert_msg(cron_parse(text, &e, &ce) == 0, "\"%s\": %s", text,
                  cron_error_format(&ce, msg, sizeof msg));
    return e;
}

static const char *utc(int64_t t, char *buf)
{
    return cron_time_format(t, NULL, buf, CRON_TIME_BUFSZ);
}

/* ---- next fire times: tables ------------------------------------------------ */

struct next_case {
    const char *zone, *from, *expr;
    const char *want[4]; /* the next four fire times, RFC 3339 UTC */
};

static void check_next(const struct next_case *c)
{
    struct cron_tz *tz = zone(c->zone);
    struct cron_expr *e = expr(c->expr);
    int64_t t = at(c->from);
    char got[CRON_TIME_BUFSZ];

    for (int i = 0; i < 4 && c->want[i] != NULL; i++) {
        ck_assert_msg(cron_next(e, tz, t, &t) == 0, "%s in %s after %s: no fire time #%d",
                      c->expr, c->zone, c->from, i + 1);
        ck_assert_msg(strcmp(utc(t, got), c->want[i]) == 0, "%s in %s after %s: fire #%d is %s, want %s",
                      c->expr, c->zone, c->from, i + 1, got, c->want[i]);
    }
    cron_free(e);
    cron_tz_free(tz);
}

/* Every syntax element: values, names (any case), ranges, steps (*\/n, a-b/n,
 * a/n), lists, ?, dow 7, 6 fields, "strictly after". */
static const struct next_case syntax_cases[] = {
    {"UTC", "2026-01-01T00:00:00Z", "* * * * *", {"2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z", "2026-01-01T00:03:00Z", "2026-01-01T00:04:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 * * * *", {"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T03:00:00Z", "2026-01-01T04:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "30 7 * * *", {"2026-01-01T07:30:00Z", "2026-01-02T07:30:00Z", "2026-01-03T07:30:00Z", "2026-01-04T07:30:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "*/15 * * * *", {"2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:45:00Z", "2026-01-01T01:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "5-10/2 * * * *", {"2026-01-01T00:05:00Z", "2026-01-01T00:07:00Z", "2026-01-01T00:09:00Z", "2026-01-01T01:05:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "50/4 * * * *", {"2026-01-01T00:50:00Z", "2026-01-01T00:54:00Z", "2026-01-01T00:58:00Z", "2026-01-01T01:50:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0,30 9,17 * * *", {"2026-01-01T09:00:00Z", "2026-01-01T09:30:00Z", "2026-01-01T17:00:00Z", "2026-01-01T17:30:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 1 JAN,jul *", {"2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z", "2027-07-01T00:00:00Z", "2028-01-01T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 1 feb-apr *", {"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z", "2027-02-01T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 1 */4 *", {"2026-05-01T00:00:00Z", "2026-09-01T00:00:00Z", "2027-01-01T00:00:00Z", "2027-05-01T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 1 2/5 *", {"2026-02-01T00:00:00Z", "2026-07-01T00:00:00Z", "2026-12-01T00:00:00Z", "2027-02-01T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * * mon", {"2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z", "2026-01-19T00:00:00Z", "2026-01-26T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * * Fri-sun", {"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-09T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * * 7", {"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-18T00:00:00Z", "2026-01-25T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * * 0", {"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-18T00:00:00Z", "2026-01-25T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * * 5-7", {"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-09T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * * MON-SUN", {"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-05T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * * 1-5/2", {"2026-01-02T00:00:00Z", "2026-01-05T00:00:00Z", "2026-01-07T00:00:00Z", "2026-01-09T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 ? * 1", {"2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z", "2026-01-19T00:00:00Z", "2026-01-26T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 15 * ?", {"2026-01-15T00:00:00Z", "2026-02-15T00:00:00Z", "2026-03-15T00:00:00Z", "2026-04-15T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 12 10-12 * *", {"2026-01-10T12:00:00Z", "2026-01-11T12:00:00Z", "2026-01-12T12:00:00Z", "2026-02-10T12:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "*/20 * * * * *", {"2026-01-01T00:00:20Z", "2026-01-01T00:00:40Z", "2026-01-01T00:01:00Z", "2026-01-01T00:01:20Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "30 0 12 * * *", {"2026-01-01T12:00:30Z", "2026-01-02T12:00:30Z", "2026-01-03T12:00:30Z", "2026-01-04T12:00:30Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0-2 0 0 * * *", {"2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z", "2026-01-02T00:00:00Z", "2026-01-02T00:00:01Z"}},
    {"UTC", "2026-01-01T07:30:00Z", "30 7 * * *", {"2026-01-02T07:30:00Z", "2026-01-03T07:30:00Z", "2026-01-04T07:30:00Z", "2026-01-05T07:30:00Z"}},
    {"UTC", "2026-01-01T07:29:59Z", "30 7 * * *", {"2026-01-01T07:30:00Z", "2026-01-02T07:30:00Z", "2026-01-03T07:30:00Z", "2026-01-04T07:30:00Z"}},
};

/* Leap years, months without day 31, L, nL, n#k, year boundaries. */
static const struct next_case calendar_cases[] = {
    {"UTC", "2026-01-01T00:00:00Z", "0 0 1,15,L * *", {"2026-01-15T00:00:00Z", "2026-01-31T00:00:00Z", "2026-02-01T00:00:00Z", "2026-02-15T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 L * *", {"2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z", "2026-04-30T00:00:00Z"}},
    {"UTC", "2027-06-01T00:00:00Z", "0 0 L 2 *", {"2028-02-29T00:00:00Z", "2029-02-28T00:00:00Z", "2030-02-28T00:00:00Z", "2031-02-28T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 29 2 *", {"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z", "2036-02-29T00:00:00Z", "2040-02-29T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 31 * *", {"2026-01-31T00:00:00Z", "2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 30 * *", {"2026-01-30T00:00:00Z", "2026-03-30T00:00:00Z", "2026-04-30T00:00:00Z", "2026-05-30T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 31 3-5 *", {"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2027-03-31T00:00:00Z", "2027-05-31T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * * 5L", {"2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z", "2026-03-27T00:00:00Z", "2026-04-24T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * * FRIL", {"2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z", "2026-03-27T00:00:00Z", "2026-04-24T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * * 1#2", {"2026-01-12T00:00:00Z", "2026-02-09T00:00:00Z", "2026-03-09T00:00:00Z", "2026-04-13T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * * mon#1", {"2026-01-05T00:00:00Z", "2026-02-02T00:00:00Z", "2026-03-02T00:00:00Z", "2026-04-06T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * * 0#5", {"2026-03-29T00:00:00Z", "2026-05-31T00:00:00Z", "2026-08-30T00:00:00Z", "2026-11-29T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * 2 0#5", {"2032-02-29T00:00:00Z", "2060-02-29T00:00:00Z", "2088-02-29T00:00:00Z", "2128-02-29T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * * 1#1,5L", {"2026-01-05T00:00:00Z", "2026-01-30T00:00:00Z", "2026-02-02T00:00:00Z", "2026-02-27T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * * 3,0L", {"2026-01-07T00:00:00Z", "2026-01-14T00:00:00Z", "2026-01-21T00:00:00Z", "2026-01-25T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "15,45 */30 * * * *", {"2026-01-01T00:00:15Z", "2026-01-01T00:00:45Z", "2026-01-01T00:30:15Z", "2026-01-01T00:30:45Z"}},
    {"UTC", "2026-12-31T23:59:59Z", "0 0 1 1 *", {"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z", "2029-01-01T00:00:00Z", "2030-01-01T00:00:00Z"}},
    {"UTC", "2026-12-31T23:59:00Z", "59 23 31 12 *", {"2027-12-31T23:59:00Z", "2028-12-31T23:59:00Z", "2029-12-31T23:59:00Z", "2030-12-31T23:59:00Z"}},
    {"UTC", "2026-12-31T23:59:59Z", "* * * * * *", {"2027-01-01T00:00:00Z", "2027-01-01T00:00:01Z", "2027-01-01T00:00:02Z", "2027-01-01T00:00:03Z"}},
};

/* Every macro. */
static const struct next_case macro_cases[] = {
    {"UTC", "2026-01-01T00:00:00Z", "@yearly", {"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z", "2029-01-01T00:00:00Z", "2030-01-01T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "@annually", {"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z", "2029-01-01T00:00:00Z", "2030-01-01T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "@monthly", {"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z", "2026-05-01T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "@weekly", {"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-18T00:00:00Z", "2026-01-25T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "@daily", {"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-05T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "@midnight", {"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-05T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "@hourly", {"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T03:00:00Z", "2026-01-01T04:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "@DAILY", {"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-05T00:00:00Z"}},
    {"Europe/Berlin", "2026-10-24T12:00:00Z", "@daily", {"2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z", "2026-10-26T23:00:00Z", "2026-10-27T23:00:00Z"}},
    {"Europe/Berlin", "2026-10-24T23:30:00Z", "@hourly", {"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z"}},
};

/* The Vixie/cronie day rule: both restricted -> either matches; a field that
 * begins with * (also * /2) or is ? is unrestricted -> both must match. */
static const struct next_case domdow_cases[] = {
    {"UTC", "2026-01-01T00:00:00Z", "0 0 13 * FRI", {"2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z", "2026-01-13T00:00:00Z", "2026-01-16T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 */2 * FRI", {"2026-01-09T00:00:00Z", "2026-01-23T00:00:00Z", "2026-02-13T00:00:00Z", "2026-02-27T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 13 * */2", {"2026-01-13T00:00:00Z", "2026-06-13T00:00:00Z", "2026-08-13T00:00:00Z", "2026-09-13T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 ? * FRI", {"2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z", "2026-01-16T00:00:00Z", "2026-01-23T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 1 * 0-7", {"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-05T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 L * 1", {"2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z", "2026-01-19T00:00:00Z", "2026-01-26T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 15 * 5L", {"2026-01-15T00:00:00Z", "2026-01-30T00:00:00Z", "2026-02-15T00:00:00Z", "2026-02-27T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 1-7 * 1", {"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-05T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 1-7 * *", {"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-05T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 * * 1#3", {"2026-01-19T00:00:00Z", "2026-02-16T00:00:00Z", "2026-03-16T00:00:00Z", "2026-04-20T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 10 * 1#3", {"2026-01-10T00:00:00Z", "2026-01-19T00:00:00Z", "2026-02-10T00:00:00Z", "2026-02-16T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 */10 * 1", {"2026-05-11T00:00:00Z", "2026-06-01T00:00:00Z", "2026-08-31T00:00:00Z", "2026-09-21T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 1 * ?", {"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z", "2026-05-01T00:00:00Z"}},
    {"UTC", "2026-01-01T00:00:00Z", "0 0 ? * ?", {"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-05T00:00:00Z"}},
};

/* DST. Europe/Berlin 2026: gap 02:00-03:00 on 03-29 (01:00Z), repeat
 * 02:00-03:00 on 10-25 (00:00Z-02:00Z). America/New_York 2026: gap 02:00-03:00
 * on 03-08 (07:00Z), repeat 01:00-02:00 on 11-01 (05:00Z-07:00Z). Also a
 * southern zone (Sydney), a rule with negative and midnight times (Nuuk:
 * M3.5.0/-1, M10.5.0/0), a zone without DST (Kolkata, +05:30), UTC, years
 * past the TZif table (footer rule: 2040, 2045, 2050) and past one 400-year
 * cycle of it (2500, 2900). */
static const struct next_case dst_cases[] = {
    {"Europe/Berlin", "2026-03-28T12:00:00Z", "30 2 * * *", {"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z", "2026-04-01T00:30:00Z"}},
    {"Europe/Berlin", "2026-03-28T12:00:00Z", "0 2 * * *", {"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "2026-03-31T00:00:00Z", "2026-04-01T00:00:00Z"}},
    {"Europe/Berlin", "2026-03-28T12:00:00Z", "0,30 2 * * *", {"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:00:00Z"}},
    {"Europe/Berlin", "2026-03-28T12:00:00Z", "30 1-3 * * *", {"2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z", "2026-03-29T23:30:00Z"}},
    {"Europe/Berlin", "2026-03-28T12:00:00Z", "0 2,3 * * *", {"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "2026-03-30T01:00:00Z", "2026-03-31T00:00:00Z"}},
    {"Europe/Berlin", "2026-03-29T00:00:00Z", "*/30 * * * *", {"2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z", "2026-03-29T02:00:00Z"}},
    {"Europe/Berlin", "2026-03-28T12:00:00Z", "* 2 * * *", {"2026-03-30T00:00:00Z", "2026-03-30T00:01:00Z", "2026-03-30T00:02:00Z", "2026-03-30T00:03:00Z"}},
    {"Europe/Berlin", "2026-03-29T00:00:00Z", "0 * * * *", {"2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z", "2026-03-29T03:00:00Z", "2026-03-29T04:00:00Z"}},
    {"Europe/Berlin", "2026-03-28T12:00:00Z", "0 30 2 * * *", {"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z", "2026-04-01T00:30:00Z"}},
    {"Europe/Berlin", "2026-03-28T12:00:00Z", "* 30 2 * * *", {"2026-03-30T00:30:00Z", "2026-03-30T00:30:01Z", "2026-03-30T00:30:02Z", "2026-03-30T00:30:03Z"}},
    {"Europe/Berlin", "2026-03-28T12:00:00Z", "30 2 29 3 *", {"2026-03-29T01:00:00Z", "2027-03-29T00:30:00Z", "2028-03-29T00:30:00Z", "2029-03-29T00:30:00Z"}},
    {"Europe/Berlin", "2026-03-29T00:59:59Z", "0 2 * * *", {"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "2026-03-31T00:00:00Z", "2026-04-01T00:00:00Z"}},
    {"Europe/Berlin", "2026-03-29T01:00:00Z", "0 2 * * *", {"2026-03-30T00:00:00Z", "2026-03-31T00:00:00Z", "2026-04-01T00:00:00Z", "2026-04-02T00:00:00Z"}},
    {"Europe/Berlin", "2026-10-24T12:00:00Z", "30 2 * * *", {"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z", "2026-10-28T01:30:00Z"}},
    {"Europe/Berlin", "2026-10-24T12:00:00Z", "0 2,3 * * *", {"2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z", "2026-10-26T01:00:00Z", "2026-10-26T02:00:00Z"}},
    {"Europe/Berlin", "2026-10-24T12:00:00Z", "30 1-3 * * *", {"2026-10-24T23:30:00Z", "2026-10-25T00:30:00Z", "2026-10-25T02:30:00Z", "2026-10-26T00:30:00Z"}},
    {"Europe/Berlin", "2026-10-24T12:00:00Z", "*/30 2 * * *", {"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z"}},
    {"Europe/Berlin", "2026-10-24T23:30:00Z", "0 * * * *", {"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z"}},
    {"Europe/Berlin", "2026-10-25T00:59:30Z", "* 2 * * *", {"2026-10-25T01:00:00Z", "2026-10-25T01:01:00Z", "2026-10-25T01:02:00Z", "2026-10-25T01:03:00Z"}},
    {"Europe/Berlin", "2026-10-24T12:00:00Z", "0 */30 2 * * *", {"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z"}},
    {"Europe/Berlin", "2026-10-24T12:00:00Z", "0 0,30 2 * * *", {"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:00:00Z", "2026-10-26T01:30:00Z"}},
    {"Europe/Berlin", "2026-10-25T00:30:00Z", "30 2 * * *", {"2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z", "2026-10-28T01:30:00Z", "2026-10-29T01:30:00Z"}},
    {"America/New_York", "2026-03-07T12:00:00Z", "30 2 * * *", {"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z", "2026-03-11T06:30:00Z"}},
    {"America/New_York", "2026-03-07T12:00:00Z", "0 2 * * *", {"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z", "2026-03-10T06:00:00Z", "2026-03-11T06:00:00Z"}},
    {"America/New_York", "2026-03-08T06:15:00Z", "*/30 * * * *", {"2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z", "2026-03-08T08:00:00Z"}},
    {"America/New_York", "2026-03-07T12:00:00Z", "*/15 2 * * *", {"2026-03-09T06:00:00Z", "2026-03-09T06:15:00Z", "2026-03-09T06:30:00Z", "2026-03-09T06:45:00Z"}},
    {"America/New_York", "2026-03-07T12:00:00Z", "0 1-3 * * *", {"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-09T05:00:00Z", "2026-03-09T06:00:00Z"}},
    {"America/New_York", "2026-10-31T12:00:00Z", "30 1 * * *", {"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z", "2026-11-03T06:30:00Z", "2026-11-04T06:30:00Z"}},
    {"America/New_York", "2026-10-31T12:00:00Z", "0 1 * * *", {"2026-11-01T05:00:00Z", "2026-11-02T06:00:00Z", "2026-11-03T06:00:00Z", "2026-11-04T06:00:00Z"}},
    {"America/New_York", "2026-10-31T12:00:00Z", "*/30 1 * * *", {"2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z"}},
    {"America/New_York", "2026-10-31T12:00:00Z", "0 1-2 * * *", {"2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z", "2026-11-02T06:00:00Z", "2026-11-02T07:00:00Z"}},
    {"America/New_York", "2026-11-01T04:30:00Z", "0 * * * *", {"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z"}},
    {"America/New_York", "2026-10-31T12:00:00Z", "30 30 1 * * *", {"2026-11-01T05:30:30Z", "2026-11-02T06:30:30Z", "2026-11-03T06:30:30Z", "2026-11-04T06:30:30Z"}},
    {"America/New_York", "2026-10-31T12:00:00Z", "30 * 1 * * *", {"2026-11-01T05:00:30Z", "2026-11-01T05:01:30Z", "2026-11-01T05:02:30Z", "2026-11-01T05:03:30Z"}},
    {"Asia/Kolkata", "2026-03-28T12:00:00Z", "30 2 * * *", {"2026-03-28T21:00:00Z", "2026-03-29T21:00:00Z", "2026-03-30T21:00:00Z", "2026-03-31T21:00:00Z"}},
    {"Asia/Kolkata", "2026-01-01T00:00:00Z", "0 9 * * MON-FRI", {"2026-01-01T03:30:00Z", "2026-01-02T03:30:00Z", "2026-01-05T03:30:00Z", "2026-01-06T03:30:00Z"}},
    {"Asia/Kolkata", "2026-01-01T00:00:00Z", "*/45 * * * *", {"2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T01:15:00Z", "2026-01-01T01:30:00Z"}},
    {"UTC", "2026-03-28T12:00:00Z", "30 2 * * *", {"2026-03-29T02:30:00Z", "2026-03-30T02:30:00Z", "2026-03-31T02:30:00Z", "2026-04-01T02:30:00Z"}},
    {"UTC", "2026-10-24T12:00:00Z", "30 2 * * *", {"2026-10-25T02:30:00Z", "2026-10-26T02:30:00Z", "2026-10-27T02:30:00Z", "2026-10-28T02:30:00Z"}},
    {"Australia/Sydney", "2026-10-03T12:00:00Z", "30 2 * * *", {"2026-10-03T16:00:00Z", "2026-10-04T15:30:00Z", "2026-10-05T15:30:00Z", "2026-10-06T15:30:00Z"}},
    {"Australia/Sydney", "2026-04-04T12:00:00Z", "30 2 * * *", {"2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z", "2026-04-06T16:30:00Z", "2026-04-07T16:30:00Z"}},
    {"Australia/Sydney", "2026-04-04T14:30:00Z", "*/30 2 * * *", {"2026-04-04T15:00:00Z", "2026-04-04T15:30:00Z", "2026-04-04T16:00:00Z", "2026-04-04T16:30:00Z"}},
    {"America/Nuuk", "2026-03-28T12:00:00Z", "30 23 * * *", {"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z", "2026-04-01T00:30:00Z"}},
    {"America/Nuuk", "2026-03-28T12:00:00Z", "0 * * * *", {"2026-03-28T13:00:00Z", "2026-03-28T14:00:00Z", "2026-03-28T15:00:00Z", "2026-03-28T16:00:00Z"}},
    {"America/Nuuk", "2026-10-24T12:00:00Z", "30 23 * * *", {"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z", "2026-10-28T01:30:00Z"}},
    {"America/Nuuk", "2026-10-24T12:00:00Z", "*/30 23 * * *", {"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z"}},
    {"Europe/Berlin", "2040-03-24T12:00:00Z", "30 2 * * *", {"2040-03-25T01:00:00Z", "2040-03-26T00:30:00Z", "2040-03-27T00:30:00Z", "2040-03-28T00:30:00Z"}},
    {"Europe/Berlin", "2040-10-27T12:00:00Z", "30 2 * * *", {"2040-10-28T00:30:00Z", "2040-10-29T01:30:00Z", "2040-10-30T01:30:00Z", "2040-10-31T01:30:00Z"}},
    {"Europe/Berlin", "2040-10-27T12:00:00Z", "*/30 2 * * *", {"2040-10-28T00:00:00Z", "2040-10-28T00:30:00Z", "2040-10-28T01:00:00Z", "2040-10-28T01:30:00Z"}},
    {"America/New_York", "2045-03-11T12:00:00Z", "30 2 * * *", {"2045-03-12T07:00:00Z", "2045-03-13T06:30:00Z", "2045-03-14T06:30:00Z", "2045-03-15T06:30:00Z"}},
    {"America/Nuuk", "2050-03-25T12:00:00Z", "30 23 * * *", {"2050-03-26T01:30:00Z", "2050-03-27T01:00:00Z", "2050-03-28T00:30:00Z", "2050-03-29T00:30:00Z"}},
    {"Europe/Berlin", "2500-03-27T12:00:00Z", "30 2 * * *", {"2500-03-28T01:00:00Z", "2500-03-29T00:30:00Z", "2500-03-30T00:30:00Z", "2500-03-31T00:30:00Z"}},
    {"Europe/Berlin", "2500-10-30T12:00:00Z", "*/30 2 * * *", {"2500-10-31T00:00:00Z", "2500-10-31T00:30:00Z", "2500-10-31T01:00:00Z", "2500-10-31T01:30:00Z"}},
    /* The first transition of the expanded rule (2038) and its copies one
     * and two 400-year cycles later. */
    {"Europe/Berlin", "2038-03-27T12:00:00Z", "30 2 * * *", {"2038-03-28T01:00:00Z", "2038-03-29T00:30:00Z", "2038-03-30T00:30:00Z", "2038-03-31T00:30:00Z"}},
    {"Europe/Berlin", "2438-03-27T12:00:00Z", "30 2 * * *", {"2438-03-28T01:00:00Z", "2438-03-29T00:30:00Z", "2438-03-30T00:30:00Z", "2438-03-31T00:30:00Z"}},
    {"Europe/Berlin", "2838-03-27T12:00:00Z", "0,30 2 * * *", {"2838-03-28T01:00:00Z", "2838-03-29T00:00:00Z", "2838-03-29T00:30:00Z", "2838-03-30T00:00:00Z"}},
    {"America/New_York", "2900-03-09T12:00:00Z", "30 2 * * *", {"2900-03-10T07:30:00Z", "2900-03-11T07:30:00Z", "2900-03-12T07:30:00Z", "2900-03-13T07:30:00Z"}},
};

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

START_TEST(test_syntax) { check_next(&syntax_cases[_i]); }
END_TEST
START_TEST(test_calendar) { check_next(&calendar_cases[_i]); }
END_TEST
START_TEST(test_macros) { check_next(&macro_cases[_i]); }
END_TEST
START_TEST(test_domdow) { check_next(&domdow_cases[_i]); }
END_TEST
START_TEST(test_dst) { check_next(&dst_cases[_i]); }
END_TEST

/* fixed-time vs interval-like classification (decides the DST behaviour). */
static const struct {
    const char *expr;
    bool fixed;
} fixed_cases[] = {
    {"30 2 * * *", true},       {"30 1-3 * * *", true},    {"0 2,3 * * *", true},
    {"0-59 2 * * *", true},     {"0 30 2 * * *", true},    {"@daily", true},
    {"@weekly", true},          {"*/30 * * * *", false},   {"0 * * * *", false},
    {"* 2 * * *", false},       {"*/5 2 * * *", false},    {"* 30 2 * * *", false},
    {"*/10 30 2 * * *", false}, {"0 */30 2 * * *", false}, {"@hourly", false},
    {"@every 1h", false},
};

START_TEST(test_fixed_time)
{
    struct cron_expr *e = expr(fixed_cases[_i].expr);
    ck_assert_msg(cron_is_fixed_time(e) == fixed_cases[_i].fixed, "%s", fixed_cases[_i].expr);
    cron_free(e);
}
END_TEST

/* ---- parse errors ------------------------------------------------------------- */

static const struct {
    const char *expr, *msg;
} error_cases[] = {
    {"0 25 * * *", "field 2 (hour) \"25\": value out of range 0-23 (column 3)"},
    {"  0 25 * * *", "field 2 (hour) \"25\": value out of range 0-23 (column 5)"},
    {"0 1,25 * * *", "field 2 (hour) \"25\": value out of range 0-23 (column 5)"},
    {"60 * * * *", "field 1 (minute) \"60\": value out of range 0-59 (column 1)"},
    {"0 0 32 * *", "field 3 (day-of-month) \"32\": value out of range 1-31 (column 5)"},
    {"0 0 0 * *", "field 3 (day-of-month) \"0\": value out of range 1-31 (column 5)"},
    {"0 0 * 13 *", "field 4 (month) \"13\": value out of range 1-12 (column 7)"},
    {"0 0 * * 8", "field 5 (day-of-week) \"8\": value out of range 0-7 (column 9)"},
    {"0 0 * * 99999999999999999999", "field 5 (day-of-week) \"99999999999999999999\": value out of range 0-7 (column 9)"},
    {"0 0 * FOO *", "field 4 (month) \"FOO\": unknown name (use JAN-DEC) (column 7)"},
    {"0 0 * * FUN", "field 5 (day-of-week) \"FUN\": unknown name (use SUN-SAT) (column 9)"},
    {"0 0 * * MONDAY", "field 5 (day-of-week) \"MONDAY\": unknown name (use SUN-SAT) (column 9)"},
    {"0 JAN * * *", "field 2 (hour) \"JAN\": expected a number (column 3)"},
    {"x * * * *", "field 1 (minute) \"x\": expected a number (column 1)"},
    {"1.5 * * * *", "field 1 (minute) \".5\": unexpected text (column 2)"},
    {"* * * *", "expected 5 or 6 fields (minute hour day-of-month month day-of-week), found 4 (column 8)"},
    {"* * * * * * *", "\"*\": expected 5 or 6 fields, found more (six fields are second minute "
                      "hour day-of-month month day-of-week: seconds first, and a year field is "
                      "not supported) (column 13)"},
    {"*/0 * * * *", "field 1 (minute) \"0\": step out of range 1-60 (column 3)"},
    {"*/61 * * * *", "field 1 (minute) \"61\": step out of range 1-60 (column 3)"},
    {"0 */25 * * *", "field 2 (hour) \"25\": step out of range 1-24 (column 5)"},
    {"0 0 * * */8", "field 5 (day-of-week) \"8\": step out of range 1-7 (column 11)"},
    {"*/ * * * *", "field 1 (minute) \"\": expected a step after / (column 3)"},
    {"*/2/3 * * * *", "field 1 (minute) \"/3\": unexpected text (column 4)"},
    {"5-2 * * * *", "field 1 (minute) \"5-2\": range start 5 is greater than end 2 (column 1)"},
    {"0 0 * * FRI-MON", "field 5 (day-of-week) \"FRI-MON\": range start 5 is greater than end 1 (column 9)"},
    {"0 0 1-2-3 * *", "field 3 (day-of-month) \"-3\": unexpected text (column 8)"},
    {"1-* * * * *", "field 1 (minute) \"*\": expected a number (column 3)"},
    {"0 0 * * 1-", "field 5 (day-of-week) \"\": missing value (column 11)"},
    {"1,,2 * * * *", "field 1 (minute) \"\": empty list element (column 3)"},
    {"1, * * * *", "field 1 (minute) \"\": empty list element (column 3)"},
    {",1 * * * *", "field 1 (minute) \"\": empty list element (column 1)"},
    {"? * * * *", "field 1 (minute) \"?\": ? is only allowed in day-of-month and day-of-week (column 1)"},
    {"0 0 * ? *", "field 4 (month) \"?\": ? is only allowed in day-of-month and day-of-week (column 7)"},
    {"0 0 ?,1 * *", "field 3 (day-of-month) \"?,1\": ? must be the whole field (column 5)"},
    {"0 0 L * L", "field 5 (day-of-week) \"L\": L needs a day in day-of-week (5L: the last Friday) (column 9)"},
    {"0 L * * *", "field 2 (hour) \"L\": L is only allowed in day-of-month, or as nL in day-of-week (column 3)"},
    {"0 0 L-2 * *", "field 3 (day-of-month) \"L-2\": unexpected text after L (L-n is not supported) (column 5)"},
    {"0 0 LW * *", "field 3 (day-of-month) \"LW\": W (nearest weekday) is not supported (column 5)"},
    {"0 0 15W * *", "field 3 (day-of-month) \"W\": W (nearest weekday) is not supported (column 7)"},
    {"0 0 * * 5L2", "field 5 (day-of-week) \"2\": unexpected text after nL (column 11)"},
    {"0 0 * * 1#6", "field 5 (day-of-week) \"6\": occurrence out of range 1-5 (column 11)"},
    {"0 0 * * 1#0", "field 5 (day-of-week) \"0\": occurrence out of range 1-5 (column 11)"},
    {"0 0 * * 8#1", "field 5 (day-of-week) \"8\": value out of range 0-7 (column 9)"},
    {"0 0 * * 1#", "field 5 (day-of-week) \"\": expected an occurrence 1-5 after # (column 11)"},
    /* never fires */
    {"0 0 30 2 *", "field 3 (day-of-month) \"30\": never fires: no selected month has such a day (column 5)"},
    {"0 0 31 4,6,9,11 *", "field 3 (day-of-month) \"31\": never fires: no selected month has such a day (column 5)"},
    {"0 0 30,31 2 *", "field 3 (day-of-month) \"30,31\": never fires: no selected month has such a day (column 5)"},
    {"0 0 31 2 */2", "field 3 (day-of-month) \"31\": never fires: no selected month has such a day (column 5)"},
    {"0 0 0 30 2 *", "field 4 (day-of-month) \"30\": never fires: no selected month has such a day (column 7)"},
    {"0 0 */10 11 5L", "\"0 0 */10 11 5L\": never fires: no day matches the day-of-month, month and day-of-week fields (column 1)"},
    /* 6 fields: seconds are field 1 */
    {"0 0 25 * * *", "field 3 (hour) \"25\": value out of range 0-23 (column 5)"},
    {"61 * * * * *", "field 1 (second) \"61\": value out of range 0-59 (column 1)"},
    {"0 0 0 * * 8", "field 6 (day-of-week) \"8\": value out of range 0-7; six fields are second "
                    "minute hour day-of-month month day-of-week: seconds first, and a year field "
                    "is not supported (column 11)"},
    /* A year written as a sixth field: how six fields read. */
    {"0 9 * * 1-5 2026", "field 6 (day-of-week) \"2026\": value out of range 0-7; six fields are "
                         "second minute hour day-of-month month day-of-week: seconds first, and "
                         "a year field is not supported (column 13)"},
    {"0 9 * 1 MON 2026", "field 5 (month) \"MON\": unknown name (use JAN-DEC); six fields are "
                         "second minute hour day-of-month month day-of-week: seconds first, and "
                         "a year field is not supported (column 9)"},
    {"0 9 * * 1-5 2026 x", "\"x\": expected 5 or 6 fields, found more (six fields are second "
                           "minute hour day-of-month month day-of-week: seconds first, and a year "
                           "field is not supported) (column 18)"},
    /* macros */
    {"", "empty expression (column 1)"},
    {"   ", "empty expression (column 1)"},
    {"@foo", "\"@foo\": unknown macro (use @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every DURATION) (column 1)"},
    {"@reboot", "\"@reboot\": unknown macro (use @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every DURATION) (column 1)"},
    {"@daily extra", "\"extra\": unexpected text after @daily (column 8)"},
    {"@every", "@every needs a duration (@every 90s, @every 1h30m) (column 7)"},
    {"@every 1500ms", "\"1500ms\": @every needs a whole number of seconds (column 8)"},
    {"@every 500ms", "\"500ms\": @every needs a whole number of seconds (column 8)"},
    {"@every 0s", "\"0s\": @every needs at least 1s (column 8)"},
    {"@every 5x", "\"5x\": missing or unknown unit at \"x\" (use ms, s, m, h or d) (column 8)"},
    {"@every 90s extra", "\"extra\": unexpected text after @every DURATION (column 12)"},
};

START_TEST(test_parse_errors)
{
    struct cron_expr *e = (struct cron_expr *)1;
    struct cron_error ce;
    char msg[320];

    ck_assert_msg(cron_parse(error_cases[_i].expr, &e, &ce) == -1, "\"%s\" parsed", error_cases[_i].expr);
    ck_assert_ptr_null(e);
    cron_error_format(&ce, msg, sizeof msg);
    ck_assert_msg(strcmp(msg, error_cases[_i].msg) == 0, "\"%s\":\n got  %s\n want %s",
                  error_cases[_i].expr, msg, error_cases[_i].msg);
}
END_TEST

START_TEST(test_error_format_edges)
{
    struct cron_error ce;
    char small[8], msg[320];

    memset(&ce, 0, sizeof ce);
    ck_assert_int_eq(cron_parse("0 99 * * *", &(struct cron_expr *){NULL}, &ce), -1);
    /* Truncates, always terminated. */
    cron_error_format(&ce, small, sizeof small);
    ck_assert_str_eq(small, "field 2");
    /* Without field_name (a struct filled by hand): 5-field names. */
    ce.field_name = NULL;
    ck_assert_str_eq(cron_error_format(&ce, msg, sizeof msg),
                     "field 2 (hour) \"99\": value out of range 0-23 (column 3)");
    /* Unprintable bytes and quotes in the token are masked. */
    ck_assert_int_eq(cron_parse("0 0 * * M\"\x01", &(struct cron_expr *){NULL}, &ce), -1);
    ck_assert_str_eq(cron_error_format(&ce, msg, sizeof msg),
                     "field 5 (day-of-week) \"M\": unknown name (use SUN-SAT) (column 9)");
    ck_assert_int_eq(cron_parse("0 0 * * 1\"\x01", &(struct cron_expr *){NULL}, &ce), -1);
    ck_assert_str_eq(cron_error_format(&ce, msg, sizeof msg),
                     "field 5 (day-of-week) \"??\": unexpected text (column 10)");
}
END_TEST

/* ---- never fires, bounds ----------------------------------------------------- */

START_TEST(test_never_fires_dst)
{
    /* Last Sunday of March 02:xx does not exist in Berlin: an interval-like
     * schedule never fires there; the search is bounded and says so. */
    struct cron_tz *tz = zone("Europe/Berlin");
    struct cron_expr *e = expr("*/5 2 * 3 SUNL");
    struct timespec a, b;
    int64_t t;
    char buf[CRON_TIME_BUFSZ];

    clock_gettime(CLOCK_MONOTONIC, &a);
    ck_assert_int_eq(cron_next(e, tz, at("2026-01-01T00:00:00Z"), &t), -1);
    clock_gettime(CLOCK_MONOTONIC, &b);
    ck_assert_msg((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < 2000,
                  "the bounded search took more than 2 s");
    cron_free(e);
    /* The fixed-time version fires once a year at the end of the gap. */
    e = expr("30 2 * 3 SUNL");
    ck_assert_int_eq(cron_next(e, tz, at("2026-01-01T00:00:00Z"), &t), 0);
    ck_assert_str_eq(utc(t, buf), "2026-03-29T01:00:00Z");
    ck_assert_int_eq(cron_next(e, tz, t, &t), 0);
    ck_assert_str_eq(utc(t, buf), "2027-03-28T01:00:00Z");
    cron_free(e);
    cron_tz_free(tz);
}
END_TEST

START_TEST(test_bounds)
{
    struct cron_expr *e = expr("* * * * * *");
    struct cron_expr *yearly = expr("0 0 1 1 *");
    struct cron_tz *tz = zone("Europe/Berlin");
    int64_t t;
    char buf[CRON_TIME_BUFSZ];

    ck_assert_int_eq(cron_next(e, tz, INT64_MIN, &t), -1);
    ck_assert_int_eq(cron_next(e, tz, INT64_MAX, &t), -1);
    ck_assert_int_eq(cron_next(e, NULL, at("9999-12-31T23:59:58Z"), &t), 0);
    ck_assert_str_eq(utc(t, buf), "9999-12-31T23:59:59Z");
    ck_assert_int_eq(cron_next(e, NULL, t, &t), -1);
    ck_assert_int_eq(cron_next(yearly, tz, at("9999-06-01T00:00:00Z"), &t), 0);
    ck_assert_str_eq(utc(t, buf), "9999-12-31T23:00:00Z"); /* 10000-01-01 00:00 CET */
    ck_assert_int_eq(cron_next(yearly, tz, t, &t), -1);
    ck_assert_int_eq(cron_next(yearly, tz, at("0001-01-01T00:00:00Z") - 1, &t), 0);
    ck_assert_str_eq(utc(t, buf), "0001-12-31T23:06:32Z"); /* LMT +00:53:28 */
    cron_free(e);
    cron_free(yearly);
    cron_tz_free(tz);
}
END_TEST

/* ---- @every and durations ---------------------------------------------------- */

static const struct {
    const char *expr, *from, *want[3];
    int64_t secs;
} every_cases[] = {
    {"@every 90s", "2026-01-01T00:00:00Z", {"2026-01-01T00:01:30Z", "2026-01-01T00:03:00Z", "2026-01-01T00:04:30Z"}, 90},
    {"@every 13m", "2026-01-01T00:00:00Z", {"2026-01-01T00:02:00Z", "2026-01-01T00:15:00Z", "2026-01-01T00:28:00Z"}, 780},
    {"@every 1h30m", "2026-01-01T00:00:00Z", {"2026-01-01T01:30:00Z", "2026-01-01T03:00:00Z", "2026-01-01T04:30:00Z"}, 5400},
    {"@every 7s", "1970-01-01T00:00:00Z", {"1970-01-01T00:00:07Z", "1970-01-01T00:00:14Z", "1970-01-01T00:00:21Z"}, 7},
    {"@every 7s", "1969-12-31T23:59:59Z", {"1970-01-01T00:00:00Z", "1970-01-01T00:00:07Z", "1970-01-01T00:00:14Z"}, 7},
    {"@every 7s", "1969-12-31T23:59:50Z", {"1969-12-31T23:59:53Z", "1970-01-01T00:00:00Z", "1970-01-01T00:00:07Z"}, 7},
    {"@every 1d", "2026-03-28T12:00:00Z", {"2026-03-29T00:00:00Z", "2026-03-30T00:00:00Z", "2026-03-31T00:00:00Z"}, 86400},
    {"@EVERY   1s  ", "2026-01-01T00:00:00Z", {"2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z", "2026-01-01T00:00:03Z"}, 1},
    {"@every 2000ms", "2026-01-01T00:00:01Z", {"2026-01-01T00:00:02Z", "2026-01-01T00:00:04Z", "2026-01-01T00:00:06Z"}, 2},
};

START_TEST(test_every)
{
    /* Ticks are multiples of the period since the epoch, in every zone. */
    const char *zones[] = {"UTC", "Europe/Berlin", "Asia/Kolkata"};
    struct cron_expr *e = expr(every_cases[_i].expr);
    char buf[CRON_TIME_BUFSZ];

    ck_assert(cron_is_every(e));
    ck_assert(!cron_is_fixed_time(e));
    ck_assert_int_eq(cron_every_seconds(e), every_cases[_i].secs);
    for (int z = 0; z < 3; z++) {
        struct cron_tz *tz = zone(zones[z]);
        int64_t t = at(every_cases[_i].from);
        for (int k = 0; k < 3; k++) {
            ck_assert_int_eq(cron_next(e, tz, t, &t), 0);
            ck_assert_msg(strcmp(utc(t, buf), every_cases[_i].want[k]) == 0, "%s in %s: #%d %s want %s",
                          every_cases[_i].expr, zones[z], k, buf, every_cases[_i].want[k]);
        }
        cron_tz_free(tz);
    }
    cron_free(e);
}
END_TEST

START_TEST(test_not_every)
{
    struct cron_expr *e = expr("@daily");
    ck_assert(!cron_is_every(e));
    ck_assert_int_eq(cron_every_seconds(e), 0);
    cron_free(e);
}
END_TEST

static const struct {
    const char *in;
    int64_t ms;      /* -1: an error */
    const char *err; /* the message, when an error */
} duration_cases[] = {
    {"500ms", 500, NULL},
    {"10s", 10000, NULL},
    {"2m", 120000, NULL},
    {"1h30m", 5400000, NULL},
    {"1d", 86400000, NULL},
    {"1h1m1s1ms", 3661001, NULL},
    {"0s", 0, NULL},
    {"366d", INT64_C(31622400000), NULL},
    {"", -1, "empty duration"},
    {"10", -1, "missing or unknown unit at \"\" (use ms, s, m, h or d)"},
    {"s", -1, "expected a number at \"s\" (durations look like 500ms, 10s, 1h30m)"},
    {"-1s", -1, "expected a number at \"-1s\" (durations look like 500ms, 10s, 1h30m)"},
    {"1.5s", -1, "missing or unknown unit at \".5s\" (use ms, s, m, h or d)"},
    {"10x", -1, "missing or unknown unit at \"x\" (use ms, s, m, h or d)"},
    {"1 s", -1, "missing or unknown unit at \" s\" (use ms, s, m, h or d)"},
    {"367d", -1, "duration too large (at most 366d)"},
    /* Each unit once, largest first. */
    {"1h1h", -1, "unit \"h\" repeated at \"1h\" (write each unit once, largest first: 1h30m)"},
    {"1h30m30m", -1,
     "unit \"m\" repeated at \"30m\" (write each unit once, largest first: 1h30m)"},
    {"30m1h", -1,
     "unit \"h\" after a smaller one at \"1h\" (write each unit once, largest first: 1h30m)"},
    {"1s500ms1s", -1,
     "unit \"s\" after a smaller one at \"1s\" (write each unit once, largest first: 1h30m)"},
    {"90s", 90000, NULL},
    {"1d25h", INT64_C(176400000), NULL},
    {"99999999999999999999s", -1, "duration too large (at most 366d)"},
};

START_TEST(test_durations)
{
    int64_t ms = -7;
    char err[160] = "";
    int rc = cron_duration_parse(duration_cases[_i].in, &ms, err, sizeof err);
    if (duration_cases[_i].ms >= 0) {
        ck_assert_msg(rc == 0, "\"%s\": %s", duration_cases[_i].in, err);
        ck_assert_int_eq(ms, duration_cases[_i].ms);
    } else {
        ck_assert_msg(rc == -1, "\"%s\" parsed", duration_cases[_i].in);
        ck_assert_str_eq(err, duration_cases[_i].err);
    }
}
END_TEST

/* ---- RFC 3339 ------------------------------------------------------------------- */

static const struct {
    const char *in;
    int64_t t;
    const char *err; /* NULL: valid */
} rfc_cases[] = {
    {"2026-01-02T07:00:00Z", INT64_C(1767337200), NULL},
    {"2026-01-02t07:00:00z", INT64_C(1767337200), NULL},
    {"2026-01-02 07:00:00Z", INT64_C(1767337200), NULL},
    {"2026-01-02T08:00:00+01:00", INT64_C(1767337200), NULL},
    {"2026-01-02T01:30:00-05:30", INT64_C(1767337200), NULL},
    {"2026-01-02T07:00:00-00:00", INT64_C(1767337200), NULL},
    {"2026-01-02T07:00:00.999999Z", INT64_C(1767337200), NULL},
    {"2026-01-02T07:00:00,5Z", INT64_C(1767337200), NULL},
    {"1969-12-31T23:59:59.5Z", -1, NULL},
    {"2028-02-29T00:00:00Z", INT64_C(1835395200), NULL},
    {"0001-01-01T00:00:00Z", INT64_C(-62135596800), NULL},
    {"9999-12-31T23:59:59Z", INT64_C(253402300799), NULL},
    {"2026-01-02", 0, "expected T between the date and the time"},
    {"2026-1-02T07:00:00Z", 0, "expected a date YYYY-MM-DD at the start"},
    {"0000-01-01T00:00:00Z", 0, "year 0000 out of range 0001-9999"},
    {"2026-13-01T00:00:00Z", 0, "month 13 out of range 01-12"},
    {"2026-02-29T00:00:00Z", 0, "day 29 out of range for 2026-02 (01-28)"},
    {"2026-04-31T00:00:00Z", 0, "day 31 out of range for 2026-04 (01-30)"},
    {"2026-01-02T24:00:00Z", 0, "hour 24 out of range 00-23"},
    {"2026-01-02T07:60:00Z", 0, "minute 60 out of range 00-59"},
    {"2026-01-02T07:00:60Z", 0, "second 60 out of range 00-59 (leap seconds are not supported)"},
    {"2026-01-02T07:00Z", 0, "expected a time HH:MM:SS after the date"},
    {"2026-01-02T07:00:00", 0, "missing time zone offset (add Z for UTC, or +HH:MM)"},
    {"2026-01-02T07:00:00.Z", 0, "expected digits after the decimal point"},
    {"2026-01-02T07:00:00+1:00", 0, "expected an offset +HH:MM"},
    {"2026-01-02T07:00:00+0100", 0, "expected an offset +HH:MM"},
    {"2026-01-02T07:00:00+24:00", 0, "offset +24:00 out of range"},
    {"2026-01-02T07:00:00 Z", 0, "expected Z or an offset +HH:MM after the time"},
    {"2026-01-02T07:00:00Zjunk", 0, "unexpected text after the offset"},
    {"", 0, "expected a date YYYY-MM-DD at the start"},
};

START_TEST(test_rfc3339_parse)
{
    int64_t t = 42;
    char err[160] = "";
    int rc = cron_time_parse(rfc_cases[_i].in, &t, err, sizeof err);
    if (rfc_cases[_i].err == NULL) {
        ck_assert_msg(rc == 0, "\"%s\": %s", rfc_cases[_i].in, err);
        ck_assert_int_eq(t, rfc_cases[_i].t);
    } else {
        ck_assert_msg(rc == -1, "\"%s\" parsed", rfc_cases[_i].in);
        ck_assert_str_eq(err, rfc_cases[_i].err);
    }
}
END_TEST

START_TEST(test_rfc3339_format)
{
    struct cron_tz *berlin = zone("Europe/Berlin"), *ny = zone("America/New_York");
    struct cron_tz *kolkata = zone("Asia/Kolkata"), *u = zone("UTC");
    char buf[CRON_TIME_BUFSZ], tiny[5];
    int64_t t = at("2026-07-01T12:00:00Z");

    ck_assert_str_eq(cron_time_format(t, NULL, buf, sizeof buf), "2026-07-01T12:00:00Z");
    ck_assert_str_eq(cron_time_format(t, berlin, buf, sizeof buf), "2026-07-01T14:00:00+02:00");
    ck_assert_str_eq(cron_time_format(t, ny, buf, sizeof buf), "2026-07-01T08:00:00-04:00");
    ck_assert_str_eq(cron_time_format(t, kolkata, buf, sizeof buf), "2026-07-01T17:30:00+05:30");
    ck_assert_str_eq(cron_time_format(t, u, buf, sizeof buf), "2026-07-01T12:00:00+00:00");
    ck_assert_str_eq(cron_time_format(at("2026-01-15T12:00:00Z"), berlin, buf, sizeof buf),
                     "2026-01-15T13:00:00+01:00");
    /* Local mean time before 1893 has seconds in its offset. */
    ck_assert_str_eq(cron_time_format(at("1880-01-01T00:00:00Z"), berlin, buf, sizeof buf),
                     "1880-01-01T00:53:28+00:53:28");
    ck_assert_str_eq(cron_time_format(-1, NULL, buf, sizeof buf), "1969-12-31T23:59:59Z");
    ck_assert_str_eq(cron_time_format(at("2000-02-29T23:59:59Z"), NULL, buf, sizeof buf),
                     "2000-02-29T23:59:59Z");
    ck_assert_str_eq(cron_time_format(t, NULL, tiny, sizeof tiny), "2026");
    cron_tz_free(berlin);
    cron_tz_free(ny);
    cron_tz_free(kolkata);
    cron_tz_free(u);
}
END_TEST

/* Every fifth day (and an hour) from 1600 to 2400: format, parse back. */
START_TEST(test_rfc3339_roundtrip)
{
    char buf[CRON_TIME_BUFSZ], err[160];
    for (int64_t t = at("1600-01-01T00:00:00Z"); t < at("2400-12-31T00:00:00Z"); t += 5 * 86400 + 3601) {
        int64_t back;
        cron_time_format(t, NULL, buf, sizeof buf);
        ck_assert_msg(cron_time_parse(buf, &back, err, sizeof err) == 0, "%s: %s", buf, err);
        ck_assert_msg(back == t, "%s: %lld != %lld", buf, (long long)back, (long long)t);
    }
}
END_TEST

/* ---- zones: TZif and POSIX rules ---------------------------------------------- */

struct tzb {
    unsigned char b[8192];
    size_t n;
};

static void put8(struct tzb *t, unsigned v) { t->b[t->n++] = (unsigned char)v; }
static void put32(struct tzb *t, uint32_t v)
{
    for (int i = 3; i >= 0; i--)
        put8(t, (v >> (8 * i)) & 0xff);
}
static void put64(struct tzb *t, int64_t v)
{
    put32(t, (uint32_t)((uint64_t)v >> 32));
    put32(t, (uint32_t)v);
}

static void put_header(struct tzb *t, char version, uint32_t timecnt, uint32_t typecnt)
{
    memcpy(t->b + t->n, "TZif", 4);
    t->n += 4;
    put8(t, (unsigned char)version);
    for (int i = 0; i < 15; i++)
        put8(t, 0);
    put32(t, 0);       /* isutcnt */
    put32(t, 0);       /* isstdcnt */
    put32(t, 0);       /* leapcnt */
    put32(t, timecnt); /* timecnt */
    put32(t, typecnt); /* typecnt */
    put32(t, 4);       /* charcnt */
}

/* A TZif file: transitions times[i] to type idx[i]; types with offsets offs;
 * version 0 (v1 only) or '2'/'3' with footer (NULL: none at all). */
static void make_tzif(struct tzb *t, char version, int ntr, const int64_t *times,
                      const unsigned char *idx, int ntypes, const int32_t *offs, const char *footer)
{
    t->n = 0;
    for (int pass = 0; pass < (version ? 2 : 1); pass++) {
        bool v2 = pass == 1;
        int n = (version && !v2) ? 0 : ntr; /* the v1 block of a v2 file: empty */
        put_header(t, version, (uint32_t)n, (uint32_t)ntypes);
        for (int i = 0; i < n; i++) {
            if (v2)
                put64(t, times[i]);
            else
                put32(t, (uint32_t)(int32_t)times[i]);
        }
        for (int i = 0; i < n; i++)
            put8(t, idx[i]);
        for (int i = 0; i < ntypes; i++) {
            put32(t, (uint32_t)offs[i]);
            put8(t, 0);
            put8(t, 0);
        }
        memcpy(t->b + t->n, "ABC", 4);
        t->n += 4;
    }
    if (version && footer != NULL) {
        put8(t, '\n');
        memcpy(t->b + t->n, footer, strlen(footer));
        t->n += strlen(footer);
        put8(t, '\n');
    }
}

static struct cron_tz *from_tzif(const struct tzb *t)
{
    struct cron_tz *tz = NULL;
    char err[256];
    ck_assert_msg(cron_tz_from_tzif("Test/Zone", t->b, t->n, &tz, err, sizeof err) == 0, "%s", err);
    return tz;
}

START_TEST(test_tzif_v1)
{
    struct tzb t;
    const int64_t times[] = {1000, 2000};
    const unsigned char idx[] = {1, 0};
    const int32_t offs[] = {-3600, 7200};
    make_tzif(&t, 0, 2, times, idx, 2, offs, NULL);
    struct cron_tz *tz = from_tzif(&t);
    ck_assert_str_eq(cron_tz_name(tz), "Test/Zone");
    ck_assert_int_eq(cron_tz_offset(tz, -100000), -3600);
    ck_assert_int_eq(cron_tz_offset(tz, 999), -3600);
    ck_assert_int_eq(cron_tz_offset(tz, 1000), 7200);
    ck_assert_int_eq(cron_tz_offset(tz, 1999), 7200);
    ck_assert_int_eq(cron_tz_offset(tz, 2000), -3600);
    ck_assert_int_eq(cron_tz_offset(tz, INT64_C(253402300799)), -3600);
    cron_tz_free(tz);
}
END_TEST

/* A zone given only by its footer rule must agree with the real zone
 * everywhere the real zone follows that rule: checks rule expansion and the
 * 400-year cycle (2400+, 9000+). */
static const struct {
    const char *real, *rule;
    const char *from; /* the real zone follows the rule from here */
} rule_cases[] = {
    {"Europe/Berlin", "CET-1CEST,M3.5.0,M10.5.0/3", "1996-01-01T00:00:00Z"},
    {"America/New_York", "EST5EDT,M3.2.0,M11.1.0", "2007-01-01T00:00:00Z"},
    {"America/Nuuk", "<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "2024-01-01T00:00:00Z"},
    {"Australia/Sydney", "AEST-10AEDT,M10.1.0,M4.1.0/3", "2008-06-01T00:00:00Z"},
    {"Australia/Lord_Howe", "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "2008-06-01T00:00:00Z"},
    {"Asia/Kolkata", "IST-5:30", "1946-01-01T00:00:00Z"},
};

START_TEST(test_tz_footer_only)
{
    struct tzb t;
    const int32_t offs[] = {0};
    make_tzif(&t, '3', 0, NULL, NULL, 1, offs, rule_cases[_i].rule);
    struct cron_tz *synth = from_tzif(&t), *real = zone(rule_cases[_i].real);
    int transitions = 0;
    const int64_t spans[][2] = {
        {at(rule_cases[_i].from), at("2110-01-01T00:00:00Z")},
        {at("2390-01-01T00:00:00Z"), at("2420-01-01T00:00:00Z")},
        {at("9970-01-01T00:00:00Z"), at("9999-12-31T00:00:00Z")},
    };
    for (int s = 0; s < 3; s++) {
        /* Day by day; at each of the real zone's transitions, exactly. */
        for (int64_t x = spans[s][0]; x < spans[s][1]; x += 86400) {
            int64_t lo = x, hi = x + 86400;
            ck_assert_msg(cron_tz_offset(synth, x) == cron_tz_offset(real, x), "%s at %lld",
                          rule_cases[_i].rule, (long long)x);
            if (cron_tz_offset(real, lo) == cron_tz_offset(real, hi))
                continue;
            while (hi - lo > 1) { /* the real transition is in (lo, hi] */
                int64_t mid = lo + (hi - lo) / 2;
                if (cron_tz_offset(real, mid) == cron_tz_offset(real, lo))
                    lo = mid;
                else
                    hi = mid;
            }
            ck_assert_msg(cron_tz_offset(synth, lo) == cron_tz_offset(real, lo) &&
                              cron_tz_offset(synth, hi) == cron_tz_offset(real, hi),
                          "%s: the transition at %lld differs", rule_cases[_i].rule, (long long)hi);
            transitions++;
        }
    }
    ck_assert(strchr(rule_cases[_i].rule, ',') == NULL || transitions > 2 * 100);
    cron_tz_free(synth);
    cron_tz_free(real);
}
END_TEST

START_TEST(test_tz_rule_forms)
{
    struct tzb t;
    const int32_t offs[] = {-10800};
    struct cron_tz *tz;

    /* Jn: day n of 365 (Feb 29 never counted): J60 is Mar 1 every year. */
    make_tzif(&t, '2', 0, NULL, NULL, 1, offs, "XST3XDT,J60/2,J300/2");
    tz = from_tzif(&t);
    ck_assert_int_eq(cron_tz_offset(tz, at("2027-03-01T04:59:59Z")), -10800);
    ck_assert_int_eq(cron_tz_offset(tz, at("2027-03-01T05:00:00Z")), -7200);
    ck_assert_int_eq(cron_tz_offset(tz, at("2028-03-01T04:59:59Z")), -10800);
    ck_assert_int_eq(cron_tz_offset(tz, at("2028-03-01T05:00:00Z")), -7200);
    cron_tz_free(tz);
    /* n: zero-based day counting Feb 29: 59 is Feb 29 in leap years. */
    make_tzif(&t, '2', 0, NULL, NULL, 1, offs, "XST3XDT,59/2,299/2");
    tz = from_tzif(&t);
    ck_assert_int_eq(cron_tz_offset(tz, at("2027-03-01T05:00:00Z")), -7200);
    ck_assert_int_eq(cron_tz_offset(tz, at("2028-02-29T04:59:59Z")), -10800);
    ck_assert_int_eq(cron_tz_offset(tz, at("2028-02-29T05:00:00Z")), -7200);
    cron_tz_free(tz);
    /* DST all year (RFC 8536 3.3.1). */
    make_tzif(&t, '3', 0, NULL, NULL, 1, offs, "EST5EDT,0/0,J365/25");
    tz = from_tzif(&t);
    for (int64_t x = at("2020-01-01T00:00:00Z"); x < at("2030-01-01T00:00:00Z"); x += 86400 / 3)
        ck_assert_int_eq(cron_tz_offset(tz, x), -4 * 3600);
    cron_tz_free(tz);
    /* A DST name without a rule: the US rule, DST one hour ahead. */
    make_tzif(&t, '2', 0, NULL, NULL, 1, offs, "EST5EDT");
    tz = from_tzif(&t);
    ck_assert_int_eq(cron_tz_offset(tz, at("2030-07-01T00:00:00Z")), -4 * 3600);
    ck_assert_int_eq(cron_tz_offset(tz, at("2030-12-01T00:00:00Z")), -5 * 3600);
    cron_tz_free(tz);
    /* An empty footer: the last type holds forever. */
    const int64_t times[] = {1000};
    const unsigned char idx[] = {1};
    const int32_t offs2[] = {0, 19800};
    make_tzif(&t, '2', 1, times, idx, 2, offs2, "");
    tz = from_tzif(&t);
    ck_assert_int_eq(cron_tz_offset(tz, at("3000-07-01T00:00:00Z")), 19800);
    cron_tz_free(tz);
}
END_TEST

/* The DST rules on a rule-only zone far in the future: the gap and the
 * repeat come from the expanded rule, shifted by whole 400-year cycles. */
START_TEST(test_tz_cycle_dst)
{
    struct tzb t;
    const int32_t offs[] = {3600};
    make_tzif(&t, '2', 0, NULL, NULL, 1, offs, "CET-1CEST,M3.5.0,M10.5.0/3");
    struct cron_tz *tz = from_tzif(&t);
    struct cron_expr *fixed = expr("30 2 * * *"), *interval = expr("*/30 2 * * *");
    char buf[CRON_TIME_BUFSZ];
    int64_t x;

    /* 2026 + 2000 years (5 cycles): 4026-03-29 is a Sunday again. */
    ck_assert_int_eq(cron_next(fixed, tz, at("4026-03-28T12:00:00Z"), &x), 0);
    ck_assert_str_eq(utc(x, buf), "4026-03-29T01:00:00Z");
    ck_assert_int_eq(cron_next(fixed, tz, at("4026-10-24T12:00:00Z"), &x), 0);
    ck_assert_str_eq(utc(x, buf), "4026-10-25T00:30:00Z");
    ck_assert_int_eq(cron_next(fixed, tz, x, &x), 0);
    ck_assert_str_eq(utc(x, buf), "4026-10-26T01:30:00Z");
    ck_assert_int_eq(cron_next(interval, tz, at("4026-10-25T00:30:00Z"), &x), 0);
    ck_assert_str_eq(utc(x, buf), "4026-10-25T01:00:00Z");
    /* Year 4001: the first transition of a shifted cycle (the rule-only
     * zone's cycle begins in year 1). */
    ck_assert_int_eq(cron_next(fixed, tz, at("4001-03-24T12:00:00Z"), &x), 0);
    ck_assert_str_eq(utc(x, buf), "4001-03-25T01:00:00Z");
    cron_free(fixed);
    cron_free(interval);
    cron_tz_free(tz);
}
END_TEST

static const char *const bad_footers[] = {
    "CET-1CEST,M13.5.0,M10.5.0/3", "CET-1CEST,M3.6.0,M10.5.0/3", "CET-1CEST,M3.5.7,M10.5.0/3",
    "CET-1CEST,M3.5.0",             "CET-1CEST,J0,J300",          "CET-1CEST,J60,366",
    "CET-1CEST,M3.5.0/168,M10.5.0", "CE-1",                       "CET",
    "CET-25",                       "<CET-1",                     "<C>-1",
    "CET-1:60",                     "CET-1CEST,M3.5.0,M10.5.0/3x", "CET-1CEST-",
};

START_TEST(test_tzif_bad_footer)
{
    struct tzb t;
    struct cron_tz *tz = (struct cron_tz *)1;
    const int32_t offs[] = {3600};
    char err[256];
    make_tzif(&t, '2', 0, NULL, NULL, 1, offs, bad_footers[_i]);
    ck_assert_msg(cron_tz_from_tzif("Test/Zone", t.b, t.n, &tz, err, sizeof err) == -1, "%s accepted",
                  bad_footers[_i]);
    ck_assert_ptr_null(tz);
    ck_assert_msg(strstr(err, "invalid TZ rule") != NULL, "%s", err);
}
END_TEST

static void expect_tzif_error(const struct tzb *t, const char *want)
{
    struct cron_tz *tz = (struct cron_tz *)1;
    char err[256] = "";
    ck_assert_int_eq(cron_tz_from_tzif("Test/Zone", t->b, t->n, &tz, err, sizeof err), -1);
    ck_assert_ptr_null(tz);
    ck_assert_msg(strcmp(err, want) == 0, "got \"%s\", want \"%s\"", err, want);
}

START_TEST(test_tzif_malformed)
{
    struct tzb t, full;
    const int64_t times[] = {1000, 2000, 3000};
    const unsigned char idx[] = {1, 0, 1};
    const int32_t offs[] = {0, 3600};

    t.n = 0;
    expect_tzif_error(&t, "time zone \"Test/Zone\": not a TZif file");
    make_tzif(&t, '2', 3, times, idx, 2, offs, "CET-1");
    t.b[0] = 'X';
    expect_tzif_error(&t, "time zone \"Test/Zone\": not a TZif file");
    /* Every truncation: an error or (past the data) a valid zone; never a
     * crash or a read past the end (ASan). */
    make_tzif(&full, '2', 3, times, idx, 2, offs, "CET-1");
    for (size_t n = 0; n < full.n; n++) {
        struct cron_tz *tz = NULL;
        char err[256];
        unsigned char *copy = malloc(n + 1);
        memcpy(copy, full.b, n);
        if (cron_tz_from_tzif("Test/Zone", copy, n, &tz, err, sizeof err) == 0)
            ck_assert_msg(n >= full.n - 7, "accepted a TZif file cut at %zu of %zu bytes", n, full.n);
        cron_tz_free(tz);
        free(copy);
    }
    make_tzif(&t, '2', 3, times, idx, 0, offs, NULL);
    expect_tzif_error(&t, "time zone \"Test/Zone\": invalid TZif counts");
    const unsigned char bad_idx[] = {1, 2, 1};
    make_tzif(&t, '2', 3, times, bad_idx, 2, offs, "CET-1");
    expect_tzif_error(&t, "time zone \"Test/Zone\": invalid TZif transitions");
    const int64_t desc[] = {1000, 3000, 2000};
    make_tzif(&t, '2', 3, desc, idx, 2, offs, "CET-1");
    expect_tzif_error(&t, "time zone \"Test/Zone\": invalid TZif transitions");
    const int32_t huge[] = {0, 100000};
    make_tzif(&t, '2', 3, times, idx, 2, huge, "CET-1");
    expect_tzif_error(&t, "time zone \"Test/Zone\": UTC offset out of range");
    make_tzif(&t, '2', 3, times, idx, 2, offs, "CET-1");
    t.n--; /* the footer's closing newline */
    expect_tzif_error(&t, "time zone \"Test/Zone\": malformed TZif footer");
    {
        struct cron_tz *tz = (struct cron_tz *)1;
        char err[256];
        ck_assert_int_eq(cron_tz_from_tzif("", full.b, full.n, &tz, err, sizeof err), -1);
        ck_assert_str_eq(err, "invalid time zone name");
        ck_assert_ptr_null(tz);
    }
}
END_TEST

/* Transitions far outside years 1-9999 (zic's "big bang" at -2^59, or
 * garbage) do not upset the arithmetic. */
START_TEST(test_tzif_extreme_times)
{
    struct tzb t;
    const int64_t times[] = {-(INT64_C(1) << 59), 1000, INT64_C(1) << 59, INT64_MAX};
    const unsigned char idx[] = {1, 2, 0, 1};
    const int32_t offs[] = {0, 3600, -3600};
    make_tzif(&t, '2', 4, times, idx, 3, offs, "CET-1CEST,M3.5.0,M10.5.0/3");
    struct cron_tz *tz = from_tzif(&t);
    struct cron_expr *e = expr("0 0 * * *");
    int64_t x;
    ck_assert_int_eq(cron_tz_offset(tz, INT64_MIN), 3600);
    ck_assert_int_eq(cron_tz_offset(tz, 0), 3600);
    ck_assert_int_eq(cron_tz_offset(tz, 5000), -3600);
    ck_assert_int_eq(cron_tz_offset(tz, INT64_MAX), -3600);
    ck_assert_int_eq(cron_next(e, tz, 5000, &x), 0);
    ck_assert_int_eq(x, 86400 + 3600);
    cron_free(e);
    cron_tz_free(tz);
}
END_TEST

static const struct {
    const char *name, *err;
} load_cases[] = {
    {"", "invalid time zone name \"\" (use an IANA name like Europe/Berlin)"},
    {"/etc/passwd", "invalid time zone name \"/etc/passwd\" (use an IANA name like Europe/Berlin)"},
    {"../etc/passwd", "invalid time zone name \"../etc/passwd\" (use an IANA name like Europe/Berlin)"},
    {"Europe/../../etc/passwd", "invalid time zone name \"Europe/../../etc/passwd\" (use an IANA name like Europe/Berlin)"},
    {"Europe//Berlin", "invalid time zone name \"Europe//Berlin\" (use an IANA name like Europe/Berlin)"},
    {"Europe/Berlin/", "invalid time zone name \"Europe/Berlin/\" (use an IANA name like Europe/Berlin)"},
    {"./UTC", "invalid time zone name \"./UTC\" (use an IANA name like Europe/Berlin)"},
    {"Europe/Ber lin", "invalid time zone name \"Europe/Ber lin\" (use an IANA name like Europe/Berlin)"},
    {"Europe/Berlin\n", "invalid time zone name \"Europe/Berlin?\" (use an IANA name like Europe/Berlin)"},
    {"Mars/Base", "unknown time zone \"Mars/Base\""},
    {"Europe/Berlin/x", "unknown time zone \"Europe/Berlin/x\""},
};

START_TEST(test_tz_load_errors)
{
    struct cron_tz *tz = (struct cron_tz *)1;
    char err[256] = "";
    ck_assert_int_eq(cron_tz_load(load_cases[_i].name, &tz, err, sizeof err), -1);
    ck_assert_ptr_null(tz);
    ck_assert_str_eq(err, load_cases[_i].err);
}
END_TEST

START_TEST(test_tz_load_dir)
{
    char dir[] = "/tmp/check_cron.XXXXXX", path[256], err[256];
    struct cron_tz *tz = NULL;
    struct tzb t;
    const int32_t offs[] = {-9000};
    FILE *f;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/Test", dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    make_tzif(&t, '2', 0, NULL, NULL, 1, offs, "<-0230>2:30");
    snprintf(path, sizeof path, "%s/Test/Zone", dir);
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fwrite(t.b, 1, t.n, f), t.n);
    fclose(f);
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("not a zone\n", f);
    fclose(f);
    setenv("TZDIR", dir, 1);

    ck_assert_int_eq(cron_tz_load("Test/Zone", &tz, err, sizeof err), 0);
    ck_assert_int_eq(cron_tz_offset(tz, 0), -9000);
    cron_tz_free(tz);
    /* UTC needs no file. */
    ck_assert_int_eq(cron_tz_load("UTC", &tz, err, sizeof err), 0);
    ck_assert_int_eq(cron_tz_offset(tz, 0), 0);
    ck_assert_str_eq(cron_tz_name(tz), "UTC");
    cron_tz_free(tz);
    ck_assert_int_eq(cron_tz_load("Etc/UTC", &tz, err, sizeof err), 0);
    cron_tz_free(tz);
    ck_assert_int_eq(cron_tz_load("Europe/Berlin", &tz, err, sizeof err), -1);
    ck_assert_str_eq(err, "unknown time zone \"Europe/Berlin\"");
    ck_assert_int_eq(cron_tz_load("Test", &tz, err, sizeof err), -1);
    snprintf(path, sizeof path, "unknown time zone \"Test\" (%s/Test is not a TZif file)", dir);
    ck_assert_str_eq(err, path);
    ck_assert_int_eq(cron_tz_load("notes.txt", &tz, err, sizeof err), -1);
    snprintf(path, sizeof path, "unknown time zone \"notes.txt\" (%s/notes.txt is not a TZif file)", dir);
    ck_assert_str_eq(err, path);

    snprintf(path, sizeof path, "%s/Test/Zone", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/Test", dir);
    rmdir(path);
    rmdir(dir);
}
END_TEST

/* Several zones in one process; results do not depend on TZ, which is never
 * changed. */
START_TEST(test_tz_independent_of_process_tz)
{
    const char *names[] = {"Europe/Berlin", "America/New_York", "Asia/Kolkata", "UTC"};
    const char *want[] = {"2026-03-29T01:00:00Z", "2026-03-29T06:30:00Z", "2026-03-28T21:00:00Z",
                          "2026-03-29T02:30:00Z"};
    struct cron_tz *tz[4];
    struct cron_expr *e = expr("30 2 * * *");
    char buf[CRON_TIME_BUFSZ];

    setenv("TZ", "Pacific/Chatham", 1);
    for (int i = 0; i < 4; i++)
        tz[i] = zone(names[i]);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 4; i++) {
            int64_t x;
            ck_assert_int_eq(cron_next(e, tz[i], at("2026-03-28T12:00:00Z"), &x), 0);
            ck_assert_msg(strcmp(utc(x, buf), want[i]) == 0, "%s: %s", names[i], buf);
        }
    }
    ck_assert_str_eq(getenv("TZ"), "Pacific/Chatham");
    for (int i = 0; i < 4; i++)
        cron_tz_free(tz[i]);
    cron_free(e);
}
END_TEST

START_TEST(test_free_null)
{
    cron_free(NULL);
    cron_tz_free(NULL);
    ck_assert_int_eq(cron_tz_offset(NULL, 12345), 0);
}
END_TEST

/* ---- brute-force cross-checks ------------------------------------------------ */

/* A small deterministic generator (xorshift), so failures reproduce. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

struct day_choice {
    const char *text;
    int kind; /* what it means; see day_choice_match() */
};

/* dom choices */
static const struct day_choice dom_choices[] = {
    {"*", 0}, {"?", 0}, {"1", 1}, {"15", 2}, {"31", 3}, {"L", 4}, {"*/2", 5}, {"1-7", 6},
    {"10,20,L", 7}, {"29", 8}, {"2/3", 9}, {"*/10", 10},
};
/* dow choices */
static const struct day_choice dow_choices[] = {
    {"*", 0}, {"?", 0}, {"1", 1}, {"MON-FRI", 2}, {"5L", 3}, {"1#2", 4}, {"0#5", 5}, {"*/2", 6},
    {"SUN,SAT", 7}, {"0-7", 8}, {"1-5/2", 9}, {"fril", 10}, {"7", 11}, {"6#1,0L", 12},
};
/* month choices */
static const struct day_choice mon_choices[] = {
    {"*", 0}, {"2", 1}, {"FEB,MAR", 2}, {"*/3", 3}, {"4-6", 4}, {"jan,dec", 5},
};

static bool dom_match(int kind, int d, int len)
{
    switch (kind) {
    case 0: return true;
    case 1: return d == 1;
    case 2: return d == 15;
    case 3: return d == 31;
    case 4: return d == len;
    case 5: return d % 2 == 1;
    case 6: return d <= 7;
    case 7: return d == 10 || d == 20 || d == len;
    case 8: return d == 29;
    case 9: return d >= 2 && (d - 2) % 3 == 0;
    default: return d % 10 == 1;
    }
}

static bool dow_match(int kind, int wd, int d, int len)
{
    switch (kind) {
    case 0: case 8: return true;
    case 1: return wd == 1;
    case 2: return wd >= 1 && wd <= 5;
    case 3: return wd == 5 && d + 7 > len;
    case 4: return wd == 1 && (d - 1) / 7 == 1;
    case 5: return wd == 0 && d > 28;
    case 6: return wd % 2 == 0;
    case 7: return wd == 0 || wd == 6;
    case 9: return wd == 1 || wd == 3 || wd == 5;
    case 10: return wd == 5 && d + 7 > len;
    case 11: return wd == 0;
    default: return (wd == 6 && d <= 7) || (wd == 0 && d + 7 > len);
    }
}

static bool mon_match(int kind, int m)
{
    switch (kind) {
    case 0: return true;
    case 1: return m == 2;
    case 2: return m == 2 || m == 3;
    case 3: return m % 3 == 1;
    case 4: return m >= 4 && m <= 6;
    default: return m == 1 || m == 12;
    }
}

/* The Vixie/cronie day rule, DST-free, via gmtime_r: the first day at or
 * after `day` (days since the epoch) that matches, within `limit` days. */
static int64_t brute_day(const struct day_choice *dom, const struct day_choice *dow,
                         const struct day_choice *mon, int64_t day, int limit)
{
    bool dom_r = dom->text[0] != '*' && dom->text[0] != '?';
    bool dow_r = dow->text[0] != '*' && dow->text[0] != '?';
    for (int i = 0; i < limit; i++, day++) {
        time_t tt = (time_t)(day * 86400);
        struct tm tm, next;
        time_t tn = tt;
        gmtime_r(&tt, &tm);
        int len = 28;
        for (int k = 28; k <= 31; k++) { /* the month's length */
            tn = tt + (time_t)(k - tm.tm_mday + 1) * 86400;
            gmtime_r(&tn, &next);
            if (next.tm_mon == tm.tm_mon)
                len = k + 1 > 31 ? 31 : k + 1;
        }
        len = 0;
        for (int k = 28; k <= 31; k++) {
            tn = tt + (time_t)(k - tm.tm_mday) * 86400;
            gmtime_r(&tn, &next);
            if (next.tm_mon == tm.tm_mon && next.tm_mday == k)
                len = k;
        }
        if (!mon_match(mon->kind, tm.tm_mon + 1))
            continue;
        bool a = dom_match(dom->kind, tm.tm_mday, len);
        bool b = dow_match(dow->kind, tm.tm_wday, tm.tm_mday, len);
        if ((dom_r && dow_r) ? (a || b) : (a && b))
            return day;
    }
    return -1;
}

START_TEST(test_brute_days)
{
    uint64_t seed = 0x9e3779b97f4a7c15u + (uint64_t)_i;
    for (int round = 0; round < 400; round++) {
        const struct day_choice *dom = &dom_choices[rng_next(&seed) % N(dom_choices)];
        const struct day_choice *dow = &dow_choices[rng_next(&seed) % N(dow_choices)];
        const struct day_choice *mon = &mon_choices[rng_next(&seed) % N(mon_choices)];
        char text[96];
        struct cron_expr *e = NULL;
        struct cron_error ce;
        int64_t from_day = 19723 + (int64_t)(rng_next(&seed) % 3000); /* 2024.. */
        int64_t t = from_day * 86400 + 4 * 3600 + 30 * 60;          /* 04:30: the fire time */

        snprintf(text, sizeof text, "30 4 %s %s %s", dom->text, mon->text, dow->text);
        int rc = cron_parse(text, &e, &ce);
        int64_t want = brute_day(dom, dow, mon, from_day + 1, 366 * 401);
        if (want < 0) { /* never fires: a parse error */
            ck_assert_msg(rc == -1, "%s parsed, yet never fires", text);
            continue;
        }
        ck_assert_msg(rc == 0, "%s: %s", text, ce.message);
        for (int k = 0; k < 3; k++) {
            int64_t got;
            ck_assert_int_eq(cron_next(e, NULL, t, &got), 0);
            ck_assert_msg(got == want * 86400 + 4 * 3600 + 30 * 60, "%s after %lld: got day %lld, want %lld",
                          text, (long long)t, (long long)(got / 86400), (long long)want);
            t = got;
            want = brute_day(dom, dow, mon, want + 1, 366 * 401);
        }
        cron_free(e);
    }
}
END_TEST

/* DST by brute force: walks real instants minute by minute (offsets from
 * cron_tz_offset, itself checked against the zone files above) and applies
 * the rules of PRODUCT.md literally. */
struct tod_choice {
    const char *text;
    bool (*match)(int v);
};
static bool m_0(int v) { return v == 0; }
static bool m_30(int v) { return v == 30; }
static bool m_0_30(int v) { return v == 0 || v == 30; }
static bool m_any(int v) { (void)v; return true; }
static bool m_15s(int v) { return v % 15 == 0; }
static bool m_45(int v) { return v == 45; }
static bool h_2(int v) { return v == 2; }
static bool h_1_3(int v) { return v >= 1 && v <= 3; }
static bool h_2_3(int v) { return v == 2 || v == 3; }
static bool h_1(int v) { return v == 1; }
static bool h_23_0(int v) { return v == 23 || v == 0; }
static bool h_even(int v) { return v % 2 == 0; }
static bool h_0_4(int v) { return v <= 4; }

static const struct tod_choice min_choices[] = {
    {"0", m_0}, {"30", m_30}, {"0,30", m_0_30}, {"*", m_any}, {"*/15", m_15s}, {"45", m_45}, {"0-59/15", m_15s},
};
static const struct tod_choice hour_choices[] = {
    {"2", h_2}, {"1-3", h_1_3}, {"2,3", h_2_3}, {"1", h_1}, {"*", m_any}, {"23,0", h_23_0},
    {"*/2", h_even}, {"0-4", h_0_4},
};

static bool wall_match(const struct tod_choice *mi, const struct tod_choice *h, int64_t wall)
{
    int64_t sod = wall - (wall / 86400 - (wall % 86400 < 0)) * 86400;
    return (sod % 60 == 0) && mi->match((int)(sod / 60 % 60)) && h->match((int)(sod / 3600));
}

static int64_t brute_dst(const struct cron_tz *tz, const struct tod_choice *mi,
                         const struct tod_choice *h, bool fixed, int64_t after)
{
    for (int64_t t = (after / 60 + 1) * 60; t < after + 3 * 86400; t += 60) {
        int32_t o = cron_tz_offset(tz, t), prev = cron_tz_offset(tz, t - 1);
        if (fixed && o > prev) { /* a gap ends at t: any matching wall time in it? */
            for (int64_t w = t - 1 + prev + 1; w < t + o; w++)
                if (wall_match(mi, h, w))
                    return t;
        }
        if (!wall_match(mi, h, t + o))
            continue;
        if (fixed) { /* only the first occurrence of a wall time */
            bool repeat = false;
            for (int k = 1; k < 4 * 27 && !repeat; k++) {
                int64_t earlier = t + o - cron_tz_offset(tz, t - k * 900);
                repeat = earlier < t && earlier + cron_tz_offset(tz, earlier) == t + o;
            }
            if (repeat)
                continue;
        }
        return t;
    }
    return -1;
}

static const char *const dst_zones[] = {
    "Europe/Berlin", "America/New_York", "Australia/Sydney", "America/Nuuk",
    "Australia/Lord_Howe", "Asia/Kolkata", "America/Santiago", "Pacific/Chatham",
};

START_TEST(test_brute_dst)
{
    struct cron_tz *tz = zone(dst_zones[_i]);
    uint64_t seed = 0x243f6a8885a308d3u + (uint64_t)_i;
    char buf[CRON_TIME_BUFSZ], wbuf[CRON_TIME_BUFSZ];
    int checked = 0;

    /* Every transition of 2025-2027: from a few hours before, each
     * minute/hour combination once. */
    for (int64_t t = at("2025-01-01T00:00:00Z"); t < at("2028-01-01T00:00:00Z"); t += 1800) {
        if (cron_tz_offset(tz, t) == cron_tz_offset(tz, t + 1800))
            continue;
        for (size_t mi = 0; mi < (size_t)N(min_choices); mi++) {
            for (size_t h = 0; h < (size_t)N(hour_choices); h++) {
                char text[64];
                snprintf(text, sizeof text, "%s %s * * *", min_choices[mi].text, hour_choices[h].text);
                struct cron_expr *e = expr(text);
                bool fixed = min_choices[mi].text[0] != '*' && hour_choices[h].text[0] != '*';
                ck_assert(cron_is_fixed_time(e) == fixed);
                int64_t from = t - 4 * 3600 + (int64_t)(rng_next(&seed) % (8 * 3600));
                for (int k = 0; k < 4; k++) {
                    int64_t got, want = brute_dst(tz, &min_choices[mi], &hour_choices[h], fixed, from);
                    if (want < 0)
                        break;
                    ck_assert_int_eq(cron_next(e, tz, from, &got), 0);
                    ck_assert_msg(got == want, "%s in %s after %s: got %s, want %s", text, dst_zones[_i],
                                  utc(from, buf), utc(got, buf), utc(want, wbuf));
                    from = got;
                    checked++;
                }
                cron_free(e);
            }
        }
    }
    ck_assert_msg(strcmp(dst_zones[_i], "Asia/Kolkata") == 0 || checked > 1000, "only %d checks", checked);
    cron_tz_free(tz);
}
END_TEST

/* ---- the suite ------------------------------------------------------------------ */

static TCase *tcase(Suite *s, const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, TIMEOUT_S);
    suite_add_tcase(s, tc);
    return tc;
}

static Suite *cron_suite(void)
{
    Suite *s = suite_create("cron");
    TCase *tc;

    tc = tcase(s, "next");
    tcase_add_loop_test(tc, test_syntax, 0, N(syntax_cases));
    tcase_add_loop_test(tc, test_calendar, 0, N(calendar_cases));
    tcase_add_loop_test(tc, test_macros, 0, N(macro_cases));
    tcase_add_loop_test(tc, test_domdow, 0, N(domdow_cases));
    tcase_add_loop_test(tc, test_fixed_time, 0, N(fixed_cases));
    tcase_add_test(tc, test_never_fires_dst);
    tcase_add_test(tc, test_bounds);

    tc = tcase(s, "dst");
    tcase_add_loop_test(tc, test_dst, 0, N(dst_cases));
    tcase_add_test(tc, test_tz_independent_of_process_tz);

    tc = tcase(s, "errors");
    tcase_add_loop_test(tc, test_parse_errors, 0, N(error_cases));
    tcase_add_test(tc, test_error_format_edges);

    tc = tcase(s, "every");
    tcase_add_loop_test(tc, test_every, 0, N(every_cases));
    tcase_add_test(tc, test_not_every);
    tcase_add_loop_test(tc, test_durations, 0, N(duration_cases));

    tc = tcase(s, "rfc3339");
    tcase_add_loop_test(tc, test_rfc3339_parse, 0, N(rfc_cases));
    tcase_add_test(tc, test_rfc3339_format);
    tcase_add_test(tc, test_rfc3339_roundtrip);

    tc = tcase(s, "tz");
    tcase_add_test(tc, test_tzif_v1);
    tcase_add_loop_test(tc, test_tz_footer_only, 0, N(rule_cases));
    tcase_add_test(tc, test_tz_rule_forms);
    tcase_add_test(tc, test_tz_cycle_dst);
    tcase_add_loop_test(tc, test_tzif_bad_footer, 0, N(bad_footers));
    tcase_add_test(tc, test_tzif_malformed);
    tcase_add_test(tc, test_tzif_extreme_times);
    tcase_add_loop_test(tc, test_tz_load_errors, 0, N(load_cases));
    tcase_add_test(tc, test_tz_load_dir);
    tcase_add_test(tc, test_free_null);

    tc = tcase(s, "brute");
    tcase_add_loop_test(tc, test_brute_days, 0, 8);
    tcase_add_loop_test(tc, test_brute_dst, 0, N(dst_zones));
    return s;
}

int main(void) { return tu_run(cron_suite()); }
