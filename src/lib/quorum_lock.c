/* quorum_lock.c -- locks over a Redlock quorum (quorum.c has the masters
 * and the requests to all of them): try, acquire, extend and release, with
 * lock.c's contracts; elections (election.c) are such locks.
 *
 * A grant holds when a majority of the masters that count granted it, with
 * validity ttl - elapsed - drift from the send time (lock.c's
 * baton__lock_confirm).
 *
 * Fences: a master grants with fence F only when the lock is free there
 * and its own counter is below F, and then stores F. Any two grants'
 * majorities share a master, which saw both in order: the later grant's
 * fence is higher. The fence asked for is the highest counter a majority
 * reported (a first round of GETs), or, when this client granted or saw
 * the key's counter before, that value + 1 (a hint kept per key hash: a
 * stale hint only costs a second round, with the highest counter the
 * masters reported, as any master whose counter is not below F refuses).
 *
 * Split votes: when no holder has a majority (several acquirers took
 * masters at the same instant), each gives back what it got and the holder
 * reported is none, with a short random wait (1 to 4 node_timeouts) before
 * the next attempt, so that the next round rarely splits again.
 *
 * Elections: the leadership is such a lock, whose renewal also takes the
 * key again on a master where it is free (a master that restarted empty,
 * or missed the grant) if that master's counter is not above the term: the
 * lease heals as masters come back, instead of shrinking to a bare
 * majority. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lock_int.h"

#define FENCE_ROUNDS 3 /* rounds again when a master had a higher fence */

/* argv of EVALSHA of our script id. */
static int script_argv(const struct baton_client *c, enum baton__script_id id, int nkeys,
                       const char *const *keys, int nargs, const char *const *args,
                       const char **argv, size_t *lens, char nk[BATON__I64_LEN])
{
    return baton__script_argv("EVALSHA", c->sha[id], nkeys, keys, nargs, args, argv, lens, nk,
                              BATON__SCRIPT_MAX_ARGS);
}

static bool reply_u64(const redisReply *r, uint64_t *v)
{
    if (r->type == REDIS_REPLY_INTEGER && r->integer >= 0) {
        *v = (uint64_t)r->integer;
        return true;
    }
    if (r->type == REDIS_REPLY_STRING) {
        char *end = NULL;
        errno = 0;
        unsigned long long x = strtoull(r->str, &end, 10);
        if (errno == 0 && end != r->str && *end == '\0') {
            *v = x;
            return true;
        }
    }
    if (r->type == REDIS_REPLY_NIL) {
        *v = 0;
        return true;
    }
    return false;
}

static void hint_raise(_Atomic uint64_t *h, uint64_t v)
{
    uint64_t old = atomic_load(h);
    while (old < v && !atomic_compare_exchange_weak(h, &old, v))
        ;
}

/* Best effort, by deadline_ns: the release script on every master (a
 * failed acquire gives back what it got; a release). chan: the release
 * channel of an election ("resigned" is published there), or "". Returns
 * how many released it, and in *answered how many counting masters
 * answered. */
static int release_all(struct baton_lock *lk, const char *chan, int64_t deadline_ns, int *answered)
{
    struct baton_client *c = lk->c;
    int nq = baton__quorum_masters(c);
    struct baton__qslot s[BATON__QUORUM_MAX];
    const char *argv[16];
    size_t lens[16];
    char nk[BATON__I64_LEN];
    int64_t sent;
    int released = 0;
    const char *keys[1] = {lk->rkeys[0]};
    const char *args[2] = {lk->token, chan};
    int argc = script_argv(c, BATON__S_QUORUM_RELEASE, 1, keys, 2, args, argv, lens, nk);
    baton__quorum_fanout(c, argc, argv, lens, baton__script_source(BATON__S_QUORUM_RELEASE), s,
                         &sent, deadline_ns);
    *answered = 0;
    for (int i = 0; i < nq; i++) {
        if (s[i].rc != BATON_OK)
            continue;
        if (s[i].counts)
            (*answered)++;
        if (s[i].reply->type == REDIS_REPLY_INTEGER && s[i].reply->integer == 1)
            released++;
    }
    baton__quorum_slots_clear(s, nq);
    return released;
}

/* Phase 1: the highest fence counter of the masters that answered, a
 * majority of counting masters among them. */
static int read_fence(struct baton_lock *lk, uint64_t *max, int64_t deadline_ns)
{
    struct baton_client *c = lk->c;
    int nq = baton__quorum_masters(c), majority = baton__quorum_majority(c);
    struct baton__qslot s[BATON__QUORUM_MAX];
    const char *argv[2] = {"GET", lk->rkeys[1]};
    size_t lens[2] = {3, strlen(lk->rkeys[1])};
    char why[BATON__ERRLEN / 2];
    int64_t sent;
    int answered = 0, rc = BATON_OK;

    *max = 0;
    baton__quorum_fanout(c, 2, argv, lens, NULL, s, &sent, deadline_ns);
    for (int i = 0; i < nq; i++) {
        uint64_t v;
        if (s[i].rc != BATON_OK)
            continue;
        if (!reply_u64(s[i].reply, &v)) {
            baton__set_error(s[i].err, sizeof s[i].err, "unexpected reply to GET of the fence");
            s[i].rc = BATON_EPROTO;
            continue;
        }
        if (v > *max)
            *max = v; /* a quarantined master's too: higher is only safer */
        if (s[i].counts)
            answered++;
    }
    if (answered < majority) {
        baton__quorum_describe(c, s, why, sizeof why);
        baton__set_error(
            lk->errstr, sizeof lk->errstr,
            "%s: no quorum: %d of %d masters counted in the fence read (%d needed): %s",
            c->url.redacted, answered, nq, majority, why);
        rc = BATON_EIO;
    }
    baton__quorum_slots_clear(s, nq);
    return rc;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* What the refusals of one round say of the holder: the value a majority
 * of the counted masters hold, and when its grant stops holding a
 * majority (the (held - majority + 1)-th expiry among them); or, when no
 * holder has a majority (a split vote), none and a short random wait. */
static void holder_of(struct baton_client *c, const struct baton__qslot *s, struct baton__holder *h)
{
    int nq = baton__quorum_masters(c), majority = baton__quorum_majority(c);
    int best = -1, best_n = 0;
    uint64_t fence = 0;
    for (int i = 0; i < nq; i++) {
        const redisReply *r = s[i].reply;
        uint64_t v;
        if (s[i].rc != BATON_OK || r->element[0]->integer != 0 || r->elements != 4)
            continue;
        if (reply_u64(r->element[3], &v) && v > fence)
            fence = v;
        if (!s[i].counts || r->element[2]->type != REDIS_REPLY_STRING)
            continue;
        int n = 0;
        for (int j = 0; j < nq; j++)
            if (s[j].rc == BATON_OK && s[j].counts && s[j].reply->element[0]->integer == 0 &&
                s[j].reply->elements == 4 && s[j].reply->element[2]->type == REDIS_REPLY_STRING &&
                strcmp(s[j].reply->element[2]->str, r->element[2]->str) == 0)
                n++;
        if (n > best_n) {
            best_n = n;
            best = i;
        }
    }
    h->fence = fence;
    h->value[0] = '\0';
    if (best < 0 || best_n < majority) {
        uint64_t rnd = 0;
        baton__random(&rnd, sizeof rnd);
        h->pttl_ms = baton__quorum_node_timeout_ms(c) +
                     (int64_t)(rnd % (uint64_t)(3 * baton__quorum_node_timeout_ms(c) + 1));
        return;
    }
    const char *value = s[best].reply->element[2]->str;
    int64_t pttl[BATON__QUORUM_MAX];
    int k = 0;
    for (int j = 0; j < nq; j++)
        if (s[j].rc == BATON_OK && s[j].counts && s[j].reply->element[0]->integer == 0 &&
            s[j].reply->elements == 4 && s[j].reply->element[2]->type == REDIS_REPLY_STRING &&
            strcmp(s[j].reply->element[2]->str, value) == 0)
            pttl[k++] = s[j].reply->element[1]->type == REDIS_REPLY_INTEGER
                            ? s[j].reply->element[1]->integer
                            : -1;
    qsort(pttl, (size_t)k, sizeof pttl[0], cmp_i64);
    h->pttl_ms = pttl[k - majority];
    snprintf(h->value, sizeof h->value, "%s", value);
}

int baton__quorum_try(struct baton_lock *lk, struct baton__holder *h)
{
    struct baton_client *c = lk->c;
    int nq = baton__quorum_masters(c), majority = baton__quorum_majority(c);
    struct baton__qslot s[BATON__QUORUM_MAX];
    const char *argv[16];
    size_t lens[16];
    char nk[BATON__I64_LEN], ttl[BATON__I64_LEN], fb[BATON__I64_LEN];
    char why[BATON__ERRLEN / 2];
    uint64_t fence;
    int rc;

    int64_t deadline = baton__client_deadline(c);
    if (lk->ttl_ms > baton__quorum_max_ttl_ms(c)) {
        baton__set_error(lk->errstr, sizeof lk->errstr,
                         "%s: ttl %lld ms exceeds the quorum's max_ttl %lld ms (a restarted "
                         "master is kept out for max_ttl: raise max_ttl= in the URL)",
                         c->url.redacted, (long long)lk->ttl_ms,
                         (long long)baton__quorum_max_ttl_ms(c));
        return BATON_EINVAL;
    }
    _Atomic uint64_t *hint = baton__quorum_hint(c, lk->rkeys[1]);
    fence = atomic_load(hint);
    if (fence == 0 && (rc = read_fence(lk, &fence, deadline)) != BATON_OK)
        return rc;
    for (int round = 0; round < FENCE_ROUNDS; round++) {
        const char *keys[2] = {lk->rkeys[0], lk->rkeys[1]};
        const char *args[3] = {lk->token, baton__i64_str(lk->ttl_ms, ttl),
                               baton__i64_str((int64_t)(fence + 1), fb)};
        int argc = script_argv(c, BATON__S_QUORUM_ACQUIRE, 2, keys, 3, args, argv, lens, nk);
        int64_t sent;
        int granted = 0, taken = 0, behind = 0, answered = 0;
        uint64_t higher = fence;

        baton__quorum_fanout(c, argc, argv, lens, baton__script_source(BATON__S_QUORUM_ACQUIRE), s,
                             &sent, deadline);
        for (int i = 0; i < nq; i++) {
            redisReply *r = s[i].reply;
            if (s[i].rc != BATON_OK)
                continue;
            if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
                r->element[0]->type != REDIS_REPLY_INTEGER ||
                (r->element[0]->integer == 0 && r->elements != 4)) {
                baton__set_error(s[i].err, sizeof s[i].err,
                                 "unexpected reply to the quorum acquire script");
                s[i].rc = BATON_EPROTO;
                continue;
            }
            long long kind = r->element[0]->integer;
            uint64_t v = 0;
            if (kind == -1 && reply_u64(r->element[1], &v) && v > higher)
                higher = v;
            if (!s[i].counts)
                continue;
            answered++;
            granted += kind == 1;
            taken += kind == 0;
            behind += kind == -1;
        }
        int64_t elapsed_ms = (baton__now_ns() - sent) / 1000000;
        int64_t validity = lk->ttl_ms - elapsed_ms - (lk->ttl_ms / 100 + 2);
        if (granted >= majority && validity > 0) {
            baton__quorum_slots_clear(s, nq);
            hint_raise(hint, fence + 1);
            atomic_store(&lk->fence, fence + 1);
            baton__lock_confirm(lk, sent, lk->ttl_ms);
            return BATON_OK;
        }
        if (taken > 0 && h != NULL)
            holder_of(c, s, h);
        baton__quorum_describe(c, s, why, sizeof why);
        baton__quorum_slots_clear(s, nq);
        if (higher > fence)
            hint_raise(hint, higher);
        int dummy;
        if (granted > 0 || answered < nq) /* give back what we got (or may have got) */
            release_all(lk, "", baton__client_deadline(c), &dummy);
        if (granted >= majority) {
            baton__set_error(lk->errstr, sizeof lk->errstr,
                             "%s: granted by a majority but too late: %lld ms of ttl %lld ms "
                             "elapsed (given back)",
                             c->url.redacted, (long long)elapsed_ms, (long long)lk->ttl_ms);
            return BATON_ETIMEDOUT;
        }
        if (taken > 0 && answered >= majority)
            return BATON_ETAKEN;
        if (behind > 0 && higher > fence && answered >= majority && baton__now_ns() < deadline) {
            fence = higher; /* a master had a higher counter than read or hinted */
            continue;
        }
        baton__set_error(lk->errstr, sizeof lk->errstr,
                         "%s: no quorum: %d of %d masters granted (%d needed), %d answered "
                         "and counted: %s",
                         c->url.redacted, granted, nq, majority, answered, why);
        return BATON_EIO;
    }
    baton__set_error(lk->errstr, sizeof lk->errstr,
                     "%s: no quorum: the fence moved %d times during the acquire", c->url.redacted,
                     FENCE_ROUNDS);
    return BATON_EIO;
}

int baton__quorum_acquire(struct baton_lock *lk, const struct baton_lock_opts *o)
{
    uint64_t rng = 0;
    int rc;
    baton__random(&rng, sizeof rng);
    int64_t deadline = o->max_wait_ms < 0 ? INT64_MAX : baton__now_ns() + o->max_wait_ms * 1000000;
    for (;;) {
        struct baton__holder h = {.pttl_ms = -1};
        rc = baton__quorum_try(lk, &h);
        if (rc != BATON_ETAKEN)
            return rc;
        int64_t now = baton__now_ns();
        if (now >= deadline)
            return BATON_ETIMEDOUT;
        int64_t until = now + baton__jitter(o->retry_delay_ms, &rng) * 1000000;
        if (h.pttl_ms > 0 && now + (h.pttl_ms + 1) * 1000000 < until)
            until = now + (h.pttl_ms + 1) * 1000000;
        if (until > deadline)
            until = deadline;
        struct timespec ts;
        int64_t d = until - now;
        ts.tv_sec = d / 1000000000;
        ts.tv_nsec = d % 1000000000;
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
}

int baton__quorum_extend(struct baton_lock *lk, int64_t ttl_ms, int64_t deadline_ns, bool renewal,
                         char *err, size_t errlen)
{
    struct baton_client *c = lk->c;
    int nq = baton__quorum_masters(c), majority = baton__quorum_majority(c);
    struct baton__qslot s[BATON__QUORUM_MAX];
    const char *argv[16];
    size_t lens[16];
    char nk[BATON__I64_LEN], ttl[BATON__I64_LEN], fb[BATON__I64_LEN];
    char why[BATON__ERRLEN / 2];
    int64_t sent;
    int ok = 0, notours = 0, answered = 0, argc;

    if (ttl_ms > baton__quorum_max_ttl_ms(c)) {
        baton__set_error(err, errlen, "%s: ttl %lld ms exceeds the quorum's max_ttl %lld ms",
                         c->url.redacted, (long long)ttl_ms,
                         (long long)baton__quorum_max_ttl_ms(c));
        return BATON_EINVAL;
    }
    if (lk->extend_script == BATON__S_QUORUM_EXTEND) {
        /* An election: extend, or take again where free (see the top) */
        const char *keys[2] = {lk->rkeys[0], lk->rkeys[1]};
        const char *args[3] = {lk->token, baton__i64_str(ttl_ms, ttl),
                               baton__i64_str((int64_t)atomic_load(&lk->fence), fb)};
        argc = script_argv(c, BATON__S_QUORUM_EXTEND, 2, keys, 3, args, argv, lens, nk);
    } else {
        const char *keys[1] = {lk->rkeys[0]};
        const char *args[2] = {lk->token, baton__i64_str(ttl_ms, ttl)};
        argc = script_argv(c, BATON__S_EXTEND, 1, keys, 2, args, argv, lens, nk);
    }
    int64_t by = baton__client_deadline(c);
    baton__quorum_fanout(c, argc, argv, lens, baton__script_source(lk->extend_script), s, &sent,
                         deadline_ns < by ? deadline_ns : by);
    for (int i = 0; i < nq; i++) {
        if (s[i].rc != BATON_OK || !s[i].counts)
            continue;
        answered++;
        if (s[i].reply->type == REDIS_REPLY_INTEGER && s[i].reply->integer >= 1)
            ok++;
        else
            notours++;
    }
    baton__quorum_describe(c, s, why, sizeof why);
    baton__quorum_slots_clear(s, nq);
    int64_t elapsed_ms = (baton__now_ns() - sent) / 1000000;
    /* Valid only when the old grant was still valid when the extension
     * reached a majority: else another may have taken it in between. */
    if (ok >= majority && baton__now_ns() < atomic_load(&lk->deadline_ns) &&
        ttl_ms - elapsed_ms - (ttl_ms / 100 + 2) > 0) {
        baton__lock_confirm(lk, sent, ttl_ms);
        return BATON_OK;
    }
    if (notours > nq - majority || baton__now_ns() >= atomic_load(&lk->deadline_ns)) {
        baton__set_error(err, errlen,
                         "lock %s was lost: %s reached only %d of %d masters in time (%d "
                         "needed)%s%s",
                         lk->key, renewal ? "renewal" : "extension", ok, nq, majority,
                         why[0] != '\0' ? ": " : "", why);
        int dummy;
        release_all(lk, "", baton__client_deadline(c), &dummy);
        baton__lock_mark_lost(lk, err);
        return BATON_ELOST;
    }
    baton__set_error(err, errlen,
                     "%s: no quorum for the %s of lock %s: %d of %d masters extended it (%d "
                     "needed): %s",
                     c->url.redacted, renewal ? "renewal" : "extension", lk->key, ok, nq, majority,
                     why);
    return BATON_EIO;
}

int baton__quorum_release(struct baton_lock *lk)
{
    struct baton_client *c = lk->c;
    int nq = baton__quorum_masters(c), majority = baton__quorum_majority(c);
    int answered = 0;
    int released = release_all(lk, lk->release_chan != NULL ? lk->release_chan : "",
                               baton__client_deadline(c), &answered);
    if (released > 0 && atomic_load(&lk->deadline_ns) > baton__now_ns()) {
        atomic_store(&lk->released, true);
        baton__stats_released(lk);
        return BATON_OK;
    }
    if (answered >= majority || released > 0) {
        baton__set_error(lk->errstr, sizeof lk->errstr,
                         "lock %s was no longer held by this owner at release", lk->key);
        baton__lock_mark_lost(lk, lk->errstr);
        atomic_store(&lk->released, true);
        return BATON_ELOST;
    }
    baton__set_error(lk->errstr, sizeof lk->errstr,
                     "%s: release reached %d of %d masters; the rest expire with the ttl",
                     c->url.redacted, answered, nq);
    return BATON_EIO;
}
