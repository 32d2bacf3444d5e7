/* rfc3339.c -- see rfc3339.h. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rfc3339.h"

void log_rfc3339_ms(int64_t unix_ms, char *buf, size_t len)
{
    time_t s = (time_t)(unix_ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(unix_ms % 1000));
}

void log_rfc3339(int64_t unix_s, char *buf, size_t len)
{
    time_t s = (time_t)unix_s;
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

bool log_parse_rfc3339_ms(const char *s, int64_t *ms)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    int frac = 0;
    if (p == NULL)
        return false;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 3)
                frac = frac * 10 + (*p - '0');
        for (; digits < 3; digits++)
            frac *= 10;
    }
    if (strcmp(p, "Z") != 0)
        return false;
    *ms = (int64_t)timegm(&tm) * 1000 + frac;
    return true;
}
