/* cron_int.h -- internals shared by cron.c and tz.c: the proleptic Gregorian
 * calendar on day numbers, and a zone's timeline as spans of constant offset.
 *
 * Not installed and not part of the cron.h interface. Everything here is pure.
 */
#ifndef BATON_CRON_INT_H
#define BATON_CRON_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "cron.h"

/* The instants cron_next() works with: 0001-01-01T00:00:00Z ..
 * 9999-12-31T23:59:59Z. Zones answer for a little beyond both ends. */
#define CRON_T_MIN INT64_C(-62135596800)
#define CRON_T_MAX INT64_C(253402300799)
/* Stand-ins for "no transition before / after": far outside every range we
 * compute with, yet far from overflow when an offset is added. */
#define CRON_T_NONE_LO (INT64_MIN / 4)
#define CRON_T_NONE_HI (INT64_MAX / 4)

#define CRON_DAY_SECS 86400
/* Days between 0001-01-01 and 1970-01-01. */
#define CRON_DAYS_0001_TO_1970 INT64_C(719162)
/* Days in 400 Gregorian years: the calendar (and every POSIX TZ rule) repeats
 * with this period, which is a whole number of weeks. */
#define CRON_DAYS_400Y INT64_C(146097)

static inline int64_t cron__floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static inline int64_t cron__floor_mod(int64_t a, int64_t b)
{
    return a - cron__floor_div(a, b) * b;
}

static inline bool cron__is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days in month m (1-12) of year y. */
static inline int cron__month_days(int64_t y, int m)
{
    static const unsigned char len[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return (m == 2 && cron__is_leap(y)) ? 29 : len[m];
}

/* Day number (days since 1970-01-01) of y-m-d; m 1-12, d 1-31; any y. */
static inline int64_t cron__days_from_civil(int64_t y, int m, int d)
{
    static const short before[13] = {0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    int64_t p = y - 1; /* whole years before y, counted from year 1 */
    int64_t days = 365 * p + cron__floor_div(p, 4) - cron__floor_div(p, 100) +
                   cron__floor_div(p, 400);
    days += before[m] + (m > 2 && cron__is_leap(y) ? 1 : 0) + (d - 1);
    return days - CRON_DAYS_0001_TO_1970;
}

/* The inverse of cron__days_from_civil(). */
static inline void cron__civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    int64_t n = z + CRON_DAYS_0001_TO_1970; /* days since 0001-01-01 */
    int64_t q400 = cron__floor_div(n, CRON_DAYS_400Y);
    n -= q400 * CRON_DAYS_400Y; /* 0 .. 146096 */
    int64_t q100 = n / 36524;
    if (q100 == 4)
        q100 = 3; /* the last day of a leap 400th year */
    n -= q100 * 36524;
    int64_t q4 = n / 1461;
    n -= q4 * 1461;
    int64_t q1 = n / 365;
    if (q1 == 4)
        q1 = 3; /* Dec 31 of a leap year */
    n -= q1 * 365;
    int64_t year = 1 + 400 * q400 + 100 * q100 + 4 * q4 + q1;
    int month = 1;
    for (;;) {
        int len = cron__month_days(year, month);
        if (n < len)
            break;
        n -= len;
        month++;
    }
    *y = year;
    *m = month;
    *d = (int)n + 1;
}

/* Day of the week of day number z: 0 Sunday .. 6 Saturday. */
static inline int cron__weekday(int64_t z)
{
    return (int)cron__floor_mod(z + 4, 7); /* 1970-01-01 was a Thursday */
}

/* A stretch of the zone's timeline with one UTC offset: the instants
 * [start, end). wall = instant + off. hw ("high water") is the latest wall
 * time reached by any instant before start (exclusive bound): wall times below
 * hw that this span shows again are repeats (fall back), and wall times in
 * [hw, start + off) were skipped (spring forward). */
struct cron__span {
    int64_t start; /* CRON_T_NONE_LO when the span has no beginning */
    int64_t end;   /* CRON_T_NONE_HI when the span has no end */
    int64_t hw;
    int32_t off;
};

/* Fills *sp with the span of tz containing instant t. t is clamped to a range
 * a little wider than [CRON_T_MIN, CRON_T_MAX]. */
void cron__tz_span(const struct cron_tz *tz, int64_t t, struct cron__span *sp);

/* A zone with one fixed offset and no transitions ("UTC"). Same contract as
 * cron_tz_from_tzif(). */
int cron__tz_fixed(const char *name, int32_t off, struct cron_tz **out, char *err, size_t errlen);

#endif /* BATON_CRON_INT_H */
