/* once.c -- baton_once(): process an id at most once (seed 000's webhook
 * dedup), from a lock and a "done" marker.
 *
 * The id is a lock key (prefix{id}); the marker is prefix{id}:done, in the
 * same slot. Order of operations, and why:
 *   1. EXISTS marker: a redelivery of a finished id costs one round trip
 *      and never touches the lock.
 *   2. Try the lock once, auto-renewed: held by someone -> duplicate.
 *   3. EXISTS marker again: someone may have finished between 1 and 2.
 *   4. fn; on success SET marker PX ttl, then release the lock. The marker
 *      is written before the lock goes, so there is no moment when neither
 *      says the id is taken; a crash in fn leaves no marker, and the id is
 *      free again when the lock's lease runs out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_int.h"

#define DEFAULT_MARKER_TTL_MS (INT64_C(86400) * 1000)
#define DEFAULT_LOCK_TTL_MS   30000
#define MAX_TTL_MS            (INT64_C(3660) * 86400 * 1000)

const char *baton_once_result_name(int result)
{
    switch (result) {
    case BATON_ONCE_PROCESSED: return "processed";
    case BATON_ONCE_DUPLICATE: return "duplicate";
    case BATON_ONCE_ALREADY_PROCESSED: return "already_processed";
    default: break;
    }
    return baton_errname(result);
}

/* Is the marker there? Returns 1 yes, 0 no, or a negative code. */
static int marker_present(struct baton_client *c, const char *marker)
{
    struct baton_reply *r = NULL;
    const char *argv[2] = {"EXISTS", marker};
    int rc = baton_client_command(c, 2, argv, NULL, &r);
    if (rc == BATON_OK)
        rc = r->type == BATON_REPLY_INTEGER ? (r->integer > 0) : BATON_EPROTO;
    baton_reply_free(r);
    return rc;
}

/* Writes the marker: the fence of the run that did the work, for
 * whoever reads it. Returns 0 or a negative code. */
static int marker_write(struct baton_client *c, const char *marker, int64_t ttl_ms, uint64_t fence)
{
    struct baton_reply *r = NULL;
    char ttl[24], value[32];
    snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_ms);
    snprintf(value, sizeof value, "%llu", (unsigned long long)fence);
    const char *argv[5] = {"SET", marker, value, "PX", ttl};
    int rc = baton_client_command(c, 5, argv, NULL, &r);
    baton_reply_free(r);
    return rc;
}

int baton_once_with(struct baton_client *c, const char *id, const struct baton_once_opts *opts,
                    baton_locked_fn fn, void *arg)
{
    int64_t marker_ttl =
        opts != NULL && opts->marker_ttl_ms != 0 ? opts->marker_ttl_ms : DEFAULT_MARKER_TTL_MS;
    int64_t lock_ttl =
        opts != NULL && opts->lock_ttl_ms != 0 ? opts->lock_ttl_ms : DEFAULT_LOCK_TTL_MS;
    struct baton_lock_opts lo = {.ttl_ms = lock_ttl, .auto_renew = true};
    struct baton_lock *lk = NULL;
    char *marker = NULL;
    bool lost;
    int rc, result;

    if (c == NULL || fn == NULL || id == NULL || *id == '\0' ||
        strnlen(id, BATON__KEY_MAX + 1) > BATON__KEY_MAX || marker_ttl < 1 ||
        marker_ttl > MAX_TTL_MS || lock_ttl < 10)
        return BATON_EINVAL;
    if (asprintf(&marker, "%s{%s}:done", c->prefix, id) < 0)
        return BATON_ENOMEM;

    if ((rc = marker_present(c, marker)) != 0) {
        rc = rc == 1 ? BATON_ONCE_ALREADY_PROCESSED : rc;
        goto out;
    }
    rc = baton_lock_try(c, id, &lo, &lk);
    if (rc == BATON_ETAKEN) {
        rc = BATON_ONCE_DUPLICATE;
        goto out;
    }
    if (rc != BATON_OK)
        goto out;
    if ((rc = marker_present(c, marker)) != 0) {
        rc = rc == 1 ? BATON_ONCE_ALREADY_PROCESSED : rc;
        goto out_release;
    }

    result = fn(lk, arg);
    if (result != 0) {
        rc = result < 0 ? result : BATON_EINVAL;
        goto out_release;
    }
    lost = baton_lock_lost(lk);
    if ((rc = marker_write(c, marker, marker_ttl, baton_lock_fence(lk))) != BATON_OK)
        goto out_release;
    rc = (lost || baton_lock_release(lk) == BATON_ELOST) ? BATON_ELOST : BATON_ONCE_PROCESSED;
    goto out_free;

out_release:
    (void)baton_lock_release(lk);
out_free:
    baton_lock_free(lk);
out:
    free(marker);
    return rc;
}

int baton_once(struct baton_client *c, const char *id, int64_t ttl_ms, baton_locked_fn fn,
               void *arg)
{
    if (ttl_ms <= 0)
        return BATON_EINVAL;
    struct baton_once_opts o = {.marker_ttl_ms = ttl_ms};
    return baton_once_with(c, id, &o, fn, arg);
}
