/* bench_cron.c -- next-fire computations per second, single thread, over a
 * mix of expressions (every syntax family, fixed-time and interval-like,
 * seconds, macros, @every) and zones (UTC, two DST hemispheres, a half-hour
 * offset), from start times spread over 2024-2031 with a third of them within
 * hours of a DST transition. Prints one JSON object:
 *
 *   {"bench":"cron_next","ops":...,"seconds":...,"ops_per_sec":...,
 *    "target":500000,"ok":true,...}
 *
 * Usage: bench_cron [--smoke] [--seconds S] [--list] [--skip EXPR]...
 *   --smoke    run ~0.2 s (a test that it works)
 *   --list     print the expressions, zones and start times (unix seconds)
 *              as one JSON object and exit: bench_peers.sh gives them to
 *              the JavaScript parsers, so that all run the same work
 *   --skip E   leave expression E out of the mix (one a peer refuses);
 *              the loop is the same, E's turns are passed over
 * Exit: 0; 1 when a computation fails; 2 for bad arguments. The target
 * is a figure ("ok" says whether it was met), not an exit status: a
 * loaded machine misses it, and the benchmark still ran. Needs no Redis.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cron.h"

#define TARGET_OPS 500000
#define NSTARTS 4096
#define BATCH 4096

static const char *const expr_texts[] = {
    "*/5 * * * *",       "0 7 * * MON-FRI",    "30 2 * * *",       "0 0 1 * *",
    "0 */2 * * *",       "15,45 9-17 * * 1-5", "0 0 L * *",        "0 9 * * 1#2",
    "0 12 * * 5L",       "*/20 * * * * *",     "0 30 2 * * *",     "@hourly",
    "@daily",            "@every 90s",         "0 0 13 * FRI",     "0 0 29 2 *",
    "0 0,30 1-3 * * *",  "0 22 * * SUN",       "5 4 * * 0",        "0 0 1 1 *",
    "*/10 2 * * *",      "0 0 */2 * *",        "0 8-18/2 ? * MON", "0 6 1-7 * 1",
};
static const char *const zone_names[] = {
    "UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Sydney",
};
#define NEXPR (sizeof expr_texts / sizeof expr_texts[0])
#define NZONE (sizeof zone_names / sizeof zone_names[0])

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

int main(int argc, char **argv)
{
    struct cron_expr *exprs[NEXPR] = {0};
    struct cron_tz *zones[NZONE] = {0};
    static int64_t starts[NSTARTS];
    double seconds = 2.0;
    bool smoke = false, list = false;
    bool skip[NEXPR] = {false};
    int rc = 1;
    uint64_t seed = 0x853c49e6748fea9bu, ops = 0, failures = 0;
    int64_t checksum = 0, t0, elapsed;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0) {
            smoke = true;
            seconds = 0.2;
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            char *end = NULL;
            seconds = strtod(argv[++i], &end);
            if (end == argv[i] || *end != '\0' || seconds <= 0 || seconds > 600) {
                fprintf(stderr, "bench_cron: --seconds: expected a number of seconds in (0, 600]\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--list") == 0) {
            list = true;
        } else if (strcmp(argv[i], "--skip") == 0 && i + 1 < argc) {
            size_t e = 0;
            while (e < NEXPR && strcmp(expr_texts[e], argv[i + 1]) != 0)
                e++;
            if (e == NEXPR) {
                fprintf(stderr, "bench_cron: --skip: no expression '%s' in the mix\n", argv[i + 1]);
                return 2;
            }
            skip[e] = true;
            i++;
        } else {
            fprintf(stderr, "usage: bench_cron [--smoke] [--seconds S] [--list] [--skip EXPR]...\n");
            return 2;
        }
    }
    for (size_t i = 0; i < NEXPR; i++) {
        struct cron_error ce;
        char msg[320];
        if (cron_parse(expr_texts[i], &exprs[i], &ce) != 0) {
            fprintf(stderr, "bench_cron: %s: %s\n", expr_texts[i], cron_error_format(&ce, msg, sizeof msg));
            goto out;
        }
    }
    for (size_t i = 0; i < NZONE; i++) {
        char err[256];
        if (cron_tz_load(zone_names[i], &zones[i], err, sizeof err) != 0) {
            fprintf(stderr, "bench_cron: %s\n", err);
            goto out;
        }
    }
    /* Start times: 2024-01-01 .. 2031-12-31; every third one within four
     * hours of a Berlin, New York or Sydney transition of 2024-2031. */
    for (size_t i = 0; i < NSTARTS; i++) {
        int64_t base = INT64_C(1704067200) + (int64_t)(rng_next(&seed) % UINT64_C(252460800));
        if (i % 3 == 0) {
            static const size_t dst_zones[] = {1, 2, 4}; /* Berlin, New York, Sydney */
            const struct cron_tz *tz = zones[dst_zones[rng_next(&seed) % 3]];
            int32_t off = cron_tz_offset(tz, base);
            int64_t t = base;
            while (cron_tz_offset(tz, t) == off && t < base + 400 * INT64_C(86400))
                t += 3600;
            base = t - 4 * 3600 + (int64_t)(rng_next(&seed) % (8 * 3600));
        }
        starts[i] = base;
    }

    if (list) {
        printf("{\"expressions\":[");
        for (size_t i = 0; i < NEXPR; i++)
            printf("%s\"%s\"", i ? "," : "", expr_texts[i]);
        printf("],\"zones\":[");
        for (size_t i = 0; i < NZONE; i++)
            printf("%s\"%s\"", i ? "," : "", zone_names[i]);
        printf("],\"starts\":[");
        for (size_t i = 0; i < NSTARTS; i++)
            printf("%s%lld", i ? "," : "", (long long)starts[i]);
        printf("]}\n");
        rc = 0;
        goto out;
    }
    size_t nskip = 0;
    for (size_t i = 0; i < NEXPR; i++)
        nskip += skip[i];
    uint64_t k = 0; /* turns, skipped ones included: the mix of the full run */
    t0 = now_ns();
    do {
        for (int b = 0; b < BATCH; b++, k++) {
            size_t e = k % NEXPR, z = (k / NEXPR) % NZONE;
            int64_t next = 0;
            if (skip[e])
                continue;
            if (cron_next(exprs[e], zones[z], starts[k % NSTARTS], &next) != 0)
                failures++;
            checksum += next & 0xff;
            ops++;
        }
        elapsed = now_ns() - t0;
    } while (elapsed < (int64_t)(seconds * 1e9));

    double secs = (double)elapsed / 1e9, per_sec = (double)ops / secs;
    bool ok = failures == 0 && per_sec >= TARGET_OPS;
    printf("{\"bench\":\"cron_next\",\"ops\":%llu,\"seconds\":%.3f,\"ops_per_sec\":%.0f,"
           "\"ns_per_op\":%.1f,\"target\":%d,\"ok\":%s,\"expressions\":%zu,\"zones\":%zu,"
           "\"failures\":%llu,\"smoke\":%s,\"checksum\":%lld}\n",
           (unsigned long long)ops, secs, per_sec, 1e9 / per_sec, TARGET_OPS, ok ? "true" : "false",
           NEXPR - nskip, NZONE, (unsigned long long)failures, smoke ? "true" : "false", (long long)checksum);
    rc = failures == 0 ? 0 : 1;
out:
    for (size_t i = 0; i < NEXPR; i++)
        cron_free(exprs[i]);
    for (size_t i = 0; i < NZONE; i++)
        cron_tz_free(zones[i]);
    return rc;
}
