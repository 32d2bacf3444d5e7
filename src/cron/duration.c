/* duration.c -- parse "500ms", "10s", "1h30m" (or a bare "0") into milliseconds. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cron.h"

struct unit {
    const char *name;
    int64_t ms;
};

/* Longest names first so that "ms" is not read as "m" followed by "s". */
static const struct unit units[] = {
    {"ms", 1}, {"s", 1000}, {"m", 60 * 1000}, {"h", 3600 * 1000}, {"d", 86400 * 1000},
};

static const struct unit *match_unit(const char *p, size_t *len)
{
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        size_t n = strlen(units[i].name);
        if (strncmp(p, units[i].name, n) == 0) {
            *len = n;
            return &units[i];
        }
    }
    return NULL;
}

int cron_duration_parse(const char *s, int64_t *ms, char *err, size_t errlen)
{
    /* One year is a generous bound for every duration baton takes, and keeps
     * sums and products far from overflow. */
    const int64_t max_ms = INT64_C(366) * 86400 * 1000;
    int64_t total = 0, last_unit = 0; /* 0: none yet */
    const char *p = s;

    if (s == NULL || *s == '\0') {
        snprintf(err, errlen, "empty duration");
        return -1;
    }
    if (strcmp(s, "0") == 0) { /* zero needs no unit */
        *ms = 0;
        return 0;
    }
    while (*p != '\0') {
        if (*p < '0' || *p > '9') {
            snprintf(err, errlen, "expected a number at \"%s\" (durations look like 500ms, 10s, 1h30m)", p);
            return -1;
        }
        const char *num = p;
        int64_t n = 0;
        while (*p >= '0' && *p <= '9') {
            n = n * 10 + (*p - '0');
            if (n > max_ms) {
                snprintf(err, errlen, "duration too large (at most 366d)");
                return -1;
            }
            p++;
        }
        size_t ulen = 0;
        const struct unit *u = match_unit(p, &ulen);
        if (u == NULL) {
            snprintf(err, errlen, "missing or unknown unit at \"%s\" (use ms, s, m, h or d)", p);
            return -1;
        }
        /* Each unit once, largest first: "1h1h" or "30m1h" is a typo
         * more often than a sum. */
        if (last_unit != 0 && u->ms >= last_unit) {
            snprintf(err, errlen,
                     u->ms == last_unit
                         ? "unit \"%s\" repeated at \"%s\" (write each unit once, largest first: "
                           "1h30m)"
                         : "unit \"%s\" after a smaller one at \"%s\" (write each unit once, "
                           "largest first: 1h30m)",
                     u->name, num);
            return -1;
        }
        last_unit = u->ms;
        if (n > (max_ms - total) / u->ms) {
            snprintf(err, errlen, "duration too large (at most 366d)");
            return -1;
        }
        total += n * u->ms;
        p += ulen;
    }
    *ms = total;
    return 0;
}
