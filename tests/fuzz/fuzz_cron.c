/* fuzz_cron.c -- libFuzzer target: cron_parse() and cron_next() on any input.
 *
 * Input: byte 0 picks a zone from a fixed list and how the start time is
 * read; bytes 1-8 are the start time; the rest is the expression. The same
 * text also goes through the duration and RFC 3339 parsers. Checks, beyond
 * "no crash, no hang, no leak": errors come back formatted and terminated,
 * and fire times strictly increase.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cron.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const zone_names[] = {
    "UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "America/Nuuk",
};
#define NZONES (sizeof zone_names / sizeof zone_names[0])

/* Zones are loaded once per process (file I/O per input would dominate);
 * they stay reachable, so LeakSanitizer does not report them. */
static struct cron_tz *zones[NZONES];

static const struct cron_tz *get_zone(size_t i)
{
    char err[256];
    if (zones[i] == NULL && cron_tz_load(zone_names[i], &zones[i], err, sizeof err) != 0)
        abort(); /* the fuzz machine lacks tzdata: a setup error, not a finding */
    return zones[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cron_expr *e = NULL;
    struct cron_error ce;
    char msg[320], when[CRON_TIME_BUFSZ], err[160];
    uint64_t raw = 0;
    int64_t after, t, ms;
    char *text;

    if (size < 9)
        return 0;
    for (int i = 0; i < 8; i++)
        raw = raw << 8 | data[1 + i];
    if (data[0] & 0x80) {
        after = (int64_t)raw; /* anything, to probe the bounds */
    } else {
        /* 1900-2300, where zones have transitions. */
        after = INT64_C(-2208988800) + (int64_t)(raw % UINT64_C(12623040000));
    }
    const struct cron_tz *tz = get_zone((size_t)(data[0] & 0x7f) % NZONES);

    text = malloc(size - 9 + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data + 9, size - 9);
    text[size - 9] = '\0';

    (void)cron_duration_parse(text, &ms, err, sizeof err);
    if (cron_time_parse(text, &t, err, sizeof err) == 0)
        cron_time_format(t, tz, when, sizeof when);

    if (cron_parse(text, &e, &ce) != 0) {
        if (e != NULL || memchr(cron_error_format(&ce, msg, sizeof msg), '\0', sizeof msg) == NULL)
            abort();
        goto out;
    }
    t = after;
    for (int i = 0; i < 6; i++) {
        int64_t next;
        if (cron_next(e, tz, t, &next) != 0)
            break;
        if (next <= t)
            abort(); /* not strictly after */
        cron_time_format(next, tz, when, sizeof when);
        t = next;
    }
    cron_free(e);
out:
    free(text);
    return 0;
}
