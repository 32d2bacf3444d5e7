/* jitter.c -- see jitter.h.
 *
 * OpenSSL's low-level SHA-1, as the library's sha1.c uses it and for the
 * same reason: EVP loads the configuration and a provider (2 MB resident)
 * and fetches the algorithm at each call; a leader computes a delay per
 * tick. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <inttypes.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

#include "cron.h"
#include "jitter.h"

int64_t jitter_delay_ms(const char *group, const char *job, int64_t tick, int64_t jitter_ms)
{
    if (jitter_ms <= 0)
        return 0;
    unsigned char md[SHA_DIGEST_LENGTH];
    char t[24];
    int tn = snprintf(t, sizeof t, "%" PRId64, tick);
    SHA_CTX ctx;
    SHA1_Init(&ctx);
    if (group != NULL)
        SHA1_Update(&ctx, group, strlen(group));
    SHA1_Update(&ctx, "", 1); /* the NUL */
    SHA1_Update(&ctx, job, strlen(job));
    SHA1_Update(&ctx, "", 1);
    SHA1_Update(&ctx, t, (size_t)tn);
    SHA1_Final(md, &ctx);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | md[i];
    return (int64_t)(v % (uint64_t)jitter_ms);
}

int64_t jitter_shortest_ms(const struct cron_expr *e, const struct cron_tz *tz, int64_t after,
                           int64_t stop_ms, int64_t *at)
{
    int64_t best = 0, prev = 0, t = 0;
    if (cron_is_every(e)) {
        if (at != NULL && cron_next(e, tz, after, at) != 0)
            *at = 0;
        return cron_every_seconds(e) * 1000;
    }
    if (cron_next(e, tz, after, &prev) != 0)
        return 0;
    for (int i = 0; i < JITTER_PROBE_TICKS && cron_next(e, tz, prev, &t) == 0; i++) {
        if (best == 0 || (t - prev) * 1000 < best) {
            best = (t - prev) * 1000;
            if (at != NULL)
                *at = prev;
        }
        if (best <= stop_ms)
            break;
        prev = t;
    }
    return best;
}
