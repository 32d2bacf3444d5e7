/* yamlx_values.c -- the values of scalars (see yamlx.h): durations,
 * integers and booleans read strictly (one spelling of each, the range
 * checked), and a duration written back. Each failure says what was given,
 * quoted as the user wrote it (yamlx_quote). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cron.h"
#include "yamlx.h"

static bool all_digits(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s != '\0'; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

int yamlx_parse_duration(const char *s, int64_t *ms, char *msg, size_t msglen)
{
    char q[96];

    if (all_digits(s)) {
        bool zero = true;

        for (const char *p = s; *p != '\0'; p++)
            zero = zero && *p == '0';
        if (zero) {
            *ms = 0;
            return 0;
        }
        snprintf(msg, msglen, "%s has no unit (durations look like 500ms, 10s, 1h30m)",
                 yamlx_quote(s, q, sizeof q));
        return -1;
    }
    if (cron_duration_parse(s, ms, msg, msglen) != 0) {
        char inner[160];

        snprintf(inner, sizeof inner, "%s", msg);
        snprintf(msg, msglen, "%s: %s", yamlx_quote(s, q, sizeof q), inner);
        return -1;
    }
    return 0;
}

int yamlx_parse_int(const char *s, int64_t *v, char *msg, size_t msglen)
{
    const char *p = s;
    bool neg = false;
    int64_t x = 0;
    char q[96];

    if (*p == '-') {
        neg = true;
        p++;
    }
    if (!all_digits(p))
        goto out_bad;
    if (p[0] == '0' && p[1] != '\0') {
        /* YAML 1.1 (and C) read 010 as octal 8; a human reads ten. */
        const char *digits = p + strspn(p, "0");
        snprintf(msg, msglen, "%s has a leading zero (YAML 1.1 reads it as octal): write %s%s",
                 yamlx_quote(s, q, sizeof q), *digits != '\0' && neg ? "-" : "",
                 *digits != '\0' ? digits : "0");
        return -1;
    }
    for (; *p != '\0'; p++) {
        int dgt = *p - '0';

        /* Accumulate negatively so that INT64_MIN fits. */
        if (x < (INT64_MIN + dgt) / 10)
            goto out_range;
        x = x * 10 - dgt;
    }
    if (!neg) {
        if (x == INT64_MIN)
            goto out_range;
        x = -x;
    }
    *v = x;
    return 0;
out_range:
    snprintf(msg, msglen, "%s is too large", yamlx_quote(s, q, sizeof q));
    return -1;
out_bad:
    snprintf(msg, msglen, "expected an integer, got %s", yamlx_quote(s, q, sizeof q));
    return -1;
}

int yamlx_parse_bool(const char *s, bool *v, char *msg, size_t msglen)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes",
                                      "YES",  "on",   "On",   "ON"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No",
                                     "NO",    "off",   "Off",   "OFF"};
    char q[96];

    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcmp(s, yes[i]) == 0) {
            *v = true;
            return 0;
        }
        if (strcmp(s, no[i]) == 0) {
            *v = false;
            return 0;
        }
    }
    snprintf(msg, msglen, "expected true or false, got %s", yamlx_quote(s, q, sizeof q));
    return -1;
}

const char *yamlx_format_duration(int64_t ms, char *buf, size_t len)
{
    static const struct {
        const char *name;
        int64_t ms;
    } units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
    size_t o = 0;

    if (len == 0)
        return buf;
    buf[0] = '\0';
    if (ms <= 0) {
        snprintf(buf, len, "%" PRId64, ms);
        return buf;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0] && o < len; i++) {
        int64_t q = ms / units[i].ms;
        int n;

        if (q == 0)
            continue;
        ms -= q * units[i].ms;
        n = snprintf(buf + o, len - o, "%" PRId64 "%s", q, units[i].name);
        if (n < 0)
            break;
        o += (size_t)n;
    }
    return buf;
}

int yamlx_duration_in(const char *s, int64_t min, int64_t max, int64_t *out, char *msg,
                      size_t msglen)
{
    char lo[32], hi[32], q[96];
    int64_t v;

    if (yamlx_parse_duration(s, &v, msg, msglen) != 0)
        return -1;
    if (v < min || v > max) {
        snprintf(msg, msglen, "%s is out of range (%s..%s)", yamlx_quote(s, q, sizeof q),
                 yamlx_format_duration(min, lo, sizeof lo),
                 yamlx_format_duration(max, hi, sizeof hi));
        return -1;
    }
    *out = v;
    return 0;
}

int yamlx_int_in(const char *s, int64_t min, int64_t max, int64_t *out, char *msg, size_t msglen)
{
    char q[96];
    int64_t v;

    if (yamlx_parse_int(s, &v, msg, msglen) != 0)
        return -1;
    if (v < min || v > max) {
        snprintf(msg, msglen, "%s is out of range (%" PRId64 "..%" PRId64 ")",
                 yamlx_quote(s, q, sizeof q), min, max);
        return -1;
    }
    *out = v;
    return 0;
}
