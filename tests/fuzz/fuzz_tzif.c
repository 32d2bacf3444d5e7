/* fuzz_tzif.c -- libFuzzer target: cron_tz_from_tzif() on any bytes, then
 * offsets and next fire times in the zone it built.
 *
 * Checks, beyond "no crash, no hang, no leak": a rejected file leaves *out
 * NULL and a terminated message; offsets stay within RFC 8536's bounds; fire
 * times strictly increase.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cron.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const exprs[] = {"30 2 * * *", "*/7 * * * *", "0 0,30 1-3 * * SUN"};
    static const int64_t starts[] = {
        INT64_C(-62135596800), INT64_C(-2208988800), 0, INT64_C(1774740000),
        INT64_C(2145916800), INT64_C(16725225600), INT64_C(253402300000),
    };
    struct cron_tz *tz = NULL;
    char err[256];
    char when[CRON_TIME_BUFSZ];

    err[0] = 'x';
    if (cron_tz_from_tzif("Fuzz/Zone", data, size, &tz, err, sizeof err) != 0) {
        if (tz != NULL || memchr(err, '\0', sizeof err) == NULL)
            abort();
        return 0;
    }
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
        int32_t off = cron_tz_offset(tz, starts[i]);
        if (off < -89999 || off > 93599)
            abort();
        cron_time_format(starts[i], tz, when, sizeof when);
    }
    for (size_t k = 0; k < sizeof exprs / sizeof exprs[0]; k++) {
        struct cron_expr *e = NULL;
        struct cron_error ce;
        if (cron_parse(exprs[k], &e, &ce) != 0)
            abort();
        for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
            int64_t t = starts[i];
            for (int n = 0; n < 4; n++) {
                int64_t next;
                if (cron_next(e, tz, t, &next) != 0)
                    break;
                if (next <= t)
                    abort();
                t = next;
            }
        }
        cron_free(e);
    }
    cron_tz_free(tz);
    return 0;
}
