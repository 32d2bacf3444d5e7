/* lock.c -- the lock: try, acquire with a bounded wait, extend, release.
 *
 * A grant's validity deadline is measured on CLOCK_MONOTONIC from the send
 * time of the request that succeeded: sent + ttl - drift, drift = 1% of ttl
 * + 2 ms (the margin Redlock uses for clock drift between the two hosts). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_int.h"

#define DEFAULT_TTL_MS      30000
#define DEFAULT_MAX_WAIT_MS 5000
#define DEFAULT_RETRY_MS    200
#define MAX_DURATION_MS     (INT64_C(366) * 86400 * 1000)

int baton__lock_opts(const struct baton_lock_opts *in, struct baton_lock_opts *o)
{
    static const struct baton_lock_opts zero = {0};
    *o = in != NULL ? *in : zero;
    if (o->ttl_ms == 0)
        o->ttl_ms = DEFAULT_TTL_MS;
    if (o->max_wait_ms == 0)
        o->max_wait_ms = DEFAULT_MAX_WAIT_MS;
    if (o->retry_delay_ms == 0)
        o->retry_delay_ms = DEFAULT_RETRY_MS;
    if (o->renew_ms == 0)
        o->renew_ms = o->ttl_ms / 3;
    if (o->ttl_ms < 10 || o->ttl_ms > MAX_DURATION_MS)
        return BATON_EINVAL;
    if (o->max_wait_ms < BATON_NO_WAIT || o->max_wait_ms > MAX_DURATION_MS)
        return BATON_EINVAL;
    if (o->retry_delay_ms < 1 || o->retry_delay_ms > 60000)
        return BATON_EINVAL;
    if (o->renew_ms < 1 || o->renew_ms >= o->ttl_ms)
        return BATON_EINVAL;
    return BATON_OK;
}

int baton__lock_new(struct baton_client *c, const char *base, const char *name,
                    const char *identity, const struct baton_lock_opts *o, struct baton_lock **out)
{
    static const char *const suffix[BATON__RKEYS] = {"", ":fence", ":q", ":qx", ":qt"};
    unsigned char rnd[(BATON__TOKEN_LEN - BATON__CID_LEN) / 2];
    size_t blen = strlen(base), nlen = strlen(name);
    size_t ilen = identity != NULL ? strlen(identity) + 1 : 0;

    *out = NULL;
    /* The lock and its strings in one allocation: name, token, the keys. */
    size_t need = sizeof(struct baton_lock) + nlen + 1 + BATON__TOKEN_LEN + ilen + 1;
    for (int i = 0; i < BATON__RKEYS; i++)
        need += blen + strlen(suffix[i]) + 1;
    struct baton_lock *lk = calloc(1, need);
    if (lk == NULL)
        return BATON_ENOMEM;
    if (pthread_mutex_init(&lk->mu, NULL) != 0) {
        free(lk);
        return BATON_ENOMEM;
    }
    char *p = (char *)(lk + 1);
    lk->key = p;
    memcpy(p, name, nlen + 1);
    p += nlen + 1;
    lk->token = p;
    p += BATON__TOKEN_LEN + ilen + 1;
    for (int i = 0; i < BATON__RKEYS; i++) {
        size_t n = blen + strlen(suffix[i]) + 1;
        lk->rkeys[i] = p;
        memcpy(p, base, blen); /* not snprintf: this is every acquire's path */
        memcpy(p + blen, suffix[i], n - blen);
        p += n;
    }
    lk->c = c;
    baton__client_ref(c);
    lk->extend_script = BATON__S_EXTEND;
    lk->ttl_ms = o->ttl_ms;
    lk->renew_ms = o->renew_ms;
    lk->on_lost = o->on_lost;
    lk->on_lost_arg = o->on_lost_arg;
    int rc = baton__client_random(c, rnd, sizeof rnd);
    if (rc != BATON_OK) {
        baton_lock_free(lk);
        return rc;
    }
    memcpy(lk->token, c->cid, BATON__CID_LEN);
    baton__hex(rnd, sizeof rnd, lk->token + BATON__CID_LEN);
    if (identity != NULL) {
        lk->token[BATON__TOKEN_LEN] = ':';
        memcpy(lk->token + BATON__TOKEN_LEN + 1, identity, ilen);
    }
    *out = lk;
    return BATON_OK;
}

/* A user lock on key lives at prefix{key}. */
int baton__lock_new_user(struct baton_client *c, const char *key, const struct baton_lock_opts *o,
                         struct baton_lock **out)
{
    size_t plen = strlen(c->prefix), klen = strlen(key); /* key <= BATON_KEY_MAX */
    char base[BATON_KEY_MAX + 200];
    memcpy(base, c->prefix, plen);
    base[plen] = '{';
    memcpy(base + plen + 1, key, klen);
    memcpy(base + plen + 1 + klen, "}", 2);
    return baton__lock_new(c, base, key, NULL, o, out);
}

static bool valid_key(const char *key)
{
    if (key == NULL || *key == '\0')
        return false;
    return strnlen(key, BATON__KEY_MAX + 1) <= BATON__KEY_MAX;
}

void baton__lock_confirm(struct baton_lock *lk, int64_t sent_ns, int64_t ttl_ms)
{
    int64_t drift_ms = ttl_ms / 100 + 2;
    pthread_mutex_lock(&lk->mu);
    if (sent_ns >= lk->confirmed_sent_ns) {
        lk->confirmed_sent_ns = sent_ns;
        atomic_store(&lk->deadline_ns, sent_ns + (ttl_ms - drift_ms) * 1000000);
    }
    pthread_mutex_unlock(&lk->mu);
}

void baton__lock_mark_lost(struct baton_lock *lk, const char *why)
{
    bool first = false;
    pthread_mutex_lock(&lk->mu);
    if (!atomic_load(&lk->lost)) {
        baton__set_error(lk->lost_why, sizeof lk->lost_why, "%s", why);
        atomic_store(&lk->lost, true);
        first = true;
    }
    pthread_mutex_unlock(&lk->mu);
    if (first)
        baton__stats_lost(lk);
    if (first && lk->on_lost != NULL && !atomic_load(&lk->free_pending))
        lk->on_lost(lk, lk->on_lost_arg);
}

void baton__lock_granted_by(struct baton_lock *lk, const char *runid)
{
    pthread_mutex_lock(&lk->mu);
    memcpy(lk->runid, runid, sizeof lk->runid);
    pthread_mutex_unlock(&lk->mu);
}

/* ---- the script calls, prepared and read here for both forms: the
 * blocking functions below and lock_async.c; a semaphore permit's are
 * sem.c's scripts ---- */

void baton__lock_prep_acquire(struct baton_lock *lk, bool wait, bool queued, int64_t entry_ttl_ms,
                              struct baton__lock_call *lc)
{
    struct baton_client *c = lk->c;
    if (lk->sem_limit > 0) {
        baton__sem_prep_acquire(lk, wait, queued, entry_ttl_ms, lc);
        return;
    }
    for (int i = 0; i < 5; i++)
        lc->keys[i] = lk->rkeys[i];
    lc->args[0] = lk->token;
    lc->args[1] = baton__i64_str(lk->ttl_ms, lc->n1);
    lc->args[2] = wait ? "1" : "0";
    lc->args[3] = baton__i64_str(entry_ttl_ms, lc->n2);
    lc->args[4] = queued ? "1" : "0";
    lc->k = (struct baton__call){.id = BATON__S_ACQUIRE,
                                 /* a try touches the lock and its fence only */
                                 .nkeys = wait || queued ? 5 : 2,
                                 .keys = lc->keys,
                                 .nargs = wait || queued ? 5 : 2,
                                 .args = lc->args,
                                 .deadline_ns = baton__client_grant_deadline(c, lk->ttl_ms),
                                 .durable = true,
                                 .err = lk->errstr,
                                 .errlen = sizeof lk->errstr};
}

void baton__lock_prep_release(struct baton_lock *lk, struct baton__lock_call *lc, char *err,
                              size_t errlen)
{
    struct baton_client *c = lk->c;
    if (lk->sem_limit > 0) {
        baton__sem_prep_give_back(c, lk->rkeys, BATON__S_SEM_RELEASE, lk->token, NULL, lc, err,
                                  errlen);
        return;
    }
    lc->keys[0] = lk->rkeys[0];
    lc->keys[1] = lk->rkeys[2];
    lc->keys[2] = lk->rkeys[3];
    lc->keys[3] = lk->rkeys[1];
    lc->keys[4] = lk->rkeys[4];
    lc->args[0] = lk->token;
    lc->args[1] = baton__waiters_channel(c);
    lc->args[2] = lk->release_chan != NULL ? lk->release_chan : "";
    lc->args[3] = lk->release_self;
    lc->k = (struct baton__call){.id = BATON__S_RELEASE,
                                 .nkeys = 5,
                                 .keys = lc->keys,
                                 .nargs = lk->release_chan == NULL   ? 2
                                          : lk->release_self == NULL ? 3
                                                                     : 4,
                                 .args = lc->args,
                                 .deadline_ns = baton__client_deadline(c),
                                 .err = err,
                                 .errlen = errlen};
}

void baton__lock_prep_cancel(struct baton_lock *lk, struct baton__lock_call *lc)
{
    if (lk->sem_limit > 0) {
        baton__sem_prep_give_back(lk->c, lk->rkeys, BATON__S_SEM_CANCEL, lk->token, lk->qentry, lc,
                                  lc->err, sizeof lc->err);
        return;
    }
    baton__lock_prep_release(lk, lc, lc->err, sizeof lc->err);
    lc->k.id = BATON__S_CANCEL;
    lc->k.nargs = 2;
}

void baton__lock_prep_extend(struct baton_lock *lk, int64_t ttl_ms, int64_t deadline_ns,
                             struct baton__lock_call *lc, char *err, size_t errlen)
{
    int64_t grant_by = baton__client_grant_deadline(lk->c, ttl_ms);
    lc->keys[0] = lk->rkeys[0];
    lc->args[0] = lk->token;
    lc->args[1] = baton__i64_str(ttl_ms, lc->n1);
    lc->k = (struct baton__call){.id = lk->extend_script,
                                 .nkeys = 1,
                                 .keys = lc->keys,
                                 .nargs = 2,
                                 .args = lc->args,
                                 .deadline_ns = deadline_ns < grant_by ? deadline_ns : grant_by,
                                 .durable = true,
                                 .err = err,
                                 .errlen = errlen};
}

int baton__lock_took(struct baton_lock *lk, struct baton__call *k, int rc, struct baton__holder *h,
                     bool *drop)
{
    if (lk->sem_limit > 0)
        return baton__sem_took(lk, k, rc, h, drop);
    redisReply *r = k->reply;
    k->reply = NULL;
    *drop = false;
    if (rc == BATON_ENOTDURABLE) {
        if (r->type == REDIS_REPLY_INTEGER && r->integer > 0)
            *drop = true; /* granted on the master only: not ours to use */
        else if (r->type == REDIS_REPLY_ARRAY && r->elements == 3)
            rc = BATON_ETAKEN; /* refused anyway: WAIT does not matter */
        if (rc == BATON_ETAKEN)
            goto taken;
        freeReplyObject(r);
        return rc;
    }
    if (rc != BATON_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER && r->integer > 0) {
        atomic_store(&lk->fence, (uint64_t)r->integer);
        baton__lock_granted_by(lk, k->runid);
        baton__lock_confirm(lk, k->sent_ns, lk->ttl_ms);
        freeReplyObject(r);
        return BATON_OK;
    }
taken:
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
        r->element[0]->type == REDIS_REPLY_INTEGER && r->element[1]->type == REDIS_REPLY_STRING &&
        r->element[2]->type == REDIS_REPLY_STRING) {
        h->pttl_ms = r->element[0]->integer;
        snprintf(h->value, sizeof h->value, "%s", r->element[1]->str);
        h->fence = strtoull(r->element[2]->str, NULL, 10);
        rc = BATON_ETAKEN;
    } else {
        baton__set_error(lk->errstr, sizeof lk->errstr,
                         "%s: unexpected reply to the acquire script", lk->c->url.redacted);
        rc = BATON_EPROTO;
    }
    freeReplyObject(r);
    return rc;
}

int baton__lock_released(struct baton_lock *lk, struct baton__call *k, int rc)
{
    long long held = -1;
    if (lk->sem_limit > 0) {
        if ((rc = baton__sem_gave_back(lk->c, k, rc, &held)) != BATON_OK)
            return rc;
    } else {
        redisReply *r = k->reply;
        k->reply = NULL;
        if (rc != BATON_OK)
            return rc;
        if (r->type == REDIS_REPLY_INTEGER)
            held = r->integer;
        freeReplyObject(r);
    }
    if (held == 1) {
        atomic_store(&lk->released, true);
        baton__stats_released(lk);
        return BATON_OK;
    }
    if (held != 0)
        return BATON_EPROTO;
    if (lk->sem_limit > 0) /* lk->key: "semaphore NAME" */
        baton__set_error(lk->errstr, sizeof lk->errstr, "permit of %s was no longer held at release",
                         lk->key);
    else
        baton__set_error(lk->errstr, sizeof lk->errstr,
                         "lock %s was no longer held by this owner at release", lk->key);
    baton__lock_mark_lost(lk, lk->errstr);
    atomic_store(&lk->released, true);
    return BATON_ELOST;
}

void baton__lock_discard(struct baton_lock *lk, struct baton__call *k)
{
    long long held;
    if (lk->sem_limit > 0) {
        (void)baton__sem_gave_back(lk->c, k, k->rc, &held); /* frees the reply */
        return;
    }
    if (k->reply != NULL) /* rc 0, or BATON_ENOTDURABLE */
        freeReplyObject(k->reply);
    k->reply = NULL;
}

/* Best effort: releases a grant we will not use (not durable, or made by
 * a server we do not trust). Elections publish their release. */
static void drop_grant(struct baton_lock *lk)
{
    struct baton__lock_call lc;
    baton__lock_prep_release(lk, &lc, lc.err, sizeof lc.err);
    lc.k.rc = baton__script_call(lk->c, &lc.k);
    baton__lock_discard(lk, &lc.k);
}

/* One run of the acquire script; wait: join (or stay in) the queue;
 * queued: we may already be in it. Returns 0 when granted (fence and
 * deadline set); BATON_ETAKEN with *h (what the holder looks like);
 * BATON_ENOTDURABLE (granted but not acknowledged by min_replicas: given
 * back); or an error. */
static int attempt(struct baton_lock *lk, bool wait, bool queued, int64_t entry_ttl_ms,
                   struct baton__holder *h)
{
    struct baton__lock_call lc;
    bool drop;
    baton__lock_prep_acquire(lk, wait, queued, entry_ttl_ms, &lc);
    int rc = baton__lock_took(lk, &lc.k, baton__script_call(lk->c, &lc.k), h, &drop);
    if (drop)
        drop_grant(lk);
    return rc;
}

/* Returns the error, after copying lk's detail to the client for callers
 * who get no lock object back. */
static int give_up(struct baton_lock *lk, int rc, struct baton_lock **out)
{
    if (rc != BATON_ETAKEN && rc != BATON_ETIMEDOUT && rc != BATON_EQUEUEFULL) {
        pthread_mutex_lock(&lk->c->mu);
        baton__set_error(lk->c->errstr, sizeof lk->c->errstr, "%s", lk->errstr);
        pthread_mutex_unlock(&lk->c->mu);
    }
    baton_lock_free(lk);
    *out = NULL;
    return rc;
}

int baton_lock_try(struct baton_client *c, const char *key, const struct baton_lock_opts *opts,
                   struct baton_lock **out)
{
    struct baton_lock_opts o;
    struct baton_lock *lk = NULL;
    struct baton__holder h;
    int rc;

    if (out == NULL)
        return BATON_EINVAL;
    *out = NULL;
    if (c == NULL || !valid_key(key) || baton__lock_opts(opts, &o) != BATON_OK)
        return BATON_EINVAL;
    if ((rc = baton__lock_new_user(c, key, &o, &lk)) != BATON_OK)
        return rc;
    rc = c->quorum != NULL ? baton__quorum_try(lk, &h) : attempt(lk, false, false, 0, &h);
    if (rc != BATON_OK) {
        if (rc == BATON_ETAKEN)
            baton__stats_refused(c, key, false);
        return give_up(lk, rc, out);
    }
    baton__stats_granted(lk, key, 0, false);
    if (o.auto_renew && (rc = baton__renew_add(lk, o.renew_ms)) != BATON_OK)
        return give_up(lk, rc, out);
    *out = lk;
    return BATON_OK;
}

int baton_lock_acquire(struct baton_client *c, const char *key, const struct baton_lock_opts *opts,
                       struct baton_lock **out)
{
    struct baton_lock_opts o;
    struct baton_lock *lk = NULL;
    int rc;

    if (out == NULL)
        return BATON_EINVAL;
    *out = NULL;
    if (c == NULL || !valid_key(key) || baton__lock_opts(opts, &o) != BATON_OK)
        return BATON_EINVAL;
    if (o.max_wait_ms == BATON_NO_WAIT)
        return baton_lock_try(c, key, opts, out);
    if ((rc = baton__lock_new_user(c, key, &o, &lk)) != BATON_OK)
        return rc;
    if (c->quorum == NULL) /* the asynchronous acquire, waited for (lock_async.c) */
        return baton__lock_start_wait(c, lk, lk->key, &o, true, out);
    /* No queue or wake-ups over a quorum yet: retries with jitter */
    int64_t start = baton__now_ns();
    if ((rc = baton__quorum_acquire(lk, &o)) != BATON_OK) {
        if (rc == BATON_ETIMEDOUT)
            baton__stats_refused(c, key, true);
        return give_up(lk, rc, out);
    }
    baton__stats_granted(lk, key, baton__now_ns() - start, false);
    if (o.auto_renew && (rc = baton__renew_add(lk, o.renew_ms)) != BATON_OK)
        return give_up(lk, rc, out);
    *out = lk;
    return BATON_OK;
}

/* Whether a confirmation from server runid may confirm lk: the server
 * that granted it; the same master restarted (not a promoted replica: its
 * persistence kept our grant, or the extension would have found nothing);
 * or, with min_replicas, any (a failover to a replica that acknowledged
 * keeps the grant; finding our token there proves it). What is left is a
 * switch to a promoted replica without durable grants: not trusted. */
static bool trusted(struct baton_lock *lk, const char *runid, bool promoted, char *granted)
{
    bool ok;
    pthread_mutex_lock(&lk->mu);
    memcpy(granted, lk->runid, sizeof lk->runid);
    ok = lk->runid[0] == '\0' || runid[0] == '\0' || strcmp(lk->runid, runid) == 0;
    if (!ok && (!promoted || lk->c->min_replicas > 0)) {
        memcpy(lk->runid, runid, sizeof lk->runid);
        ok = true;
    }
    pthread_mutex_unlock(&lk->mu);
    return ok;
}

int baton__lock_extended(struct baton_lock *lk, struct baton__call *k, int rc, int64_t ttl_ms,
                         bool renewal, char *err, size_t errlen, bool *drop)
{
    char granted[41];
    redisReply *r = k->reply;
    k->reply = NULL;
    *drop = false;
    if (rc != BATON_OK && rc != BATON_ENOTDURABLE)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 1) {
        if (!trusted(lk, k->runid, k->promoted, granted)) {
            /* A promoted replica answered: a failover. Without
             * min_replicas our grant was not made to survive one: we give
             * it up and say so, and it is free at once for whoever waits;
             * the holder re-acquires, with a token from the new master. */
            baton__set_error(err, errlen,
                             "lock %s was lost: Redis failed over (granted by server %.8s, %s "
                             "answered by %.8s, a promoted replica); without min_replicas a grant "
                             "is not trusted across a switch: acquire it again",
                             lk->key, granted, renewal ? "renewal" : "extension", k->runid);
            *drop = lk->extend_script == BATON__S_EXTEND;
            baton__lock_mark_lost(lk, err);
            rc = BATON_ELOST;
        } else if (rc == BATON_OK) {
            baton__lock_confirm(lk, k->sent_ns, ttl_ms);
        }
    } else if (r->type == REDIS_REPLY_INTEGER) {
        if (renewal)
            baton__set_error(err, errlen,
                             "lock %s was lost: renewal found it no longer held by this owner",
                             lk->key);
        else
            baton__set_error(err, errlen, "lock %s is no longer held by this owner", lk->key);
        baton__lock_mark_lost(lk, err);
        rc = BATON_ELOST;
    } else {
        baton__set_error(err, errlen, "%s: unexpected reply to the extend script",
                         lk->c->url.redacted);
        rc = BATON_EPROTO;
    }
    freeReplyObject(r);
    return rc;
}

int baton__lock_extend_call(struct baton_lock *lk, int64_t ttl_ms, int64_t deadline_ns,
                            bool renewal, char *err, size_t errlen)
{
    struct baton__lock_call lc;
    bool drop;
    if (lk->c->quorum != NULL)
        return baton__quorum_extend(lk, ttl_ms, deadline_ns, renewal, err, errlen);
    baton__lock_prep_extend(lk, ttl_ms, deadline_ns, &lc, err, errlen);
    lc.k.via_loop = renewal; /* baton_client_free() fails a renewal in flight at once */
    int rc = baton__lock_extended(lk, &lc.k, baton__script_call(lk->c, &lc.k), ttl_ms, renewal, err,
                                  errlen, &drop);
    if (drop)
        drop_grant(lk);
    return rc;
}

int baton_lock_extend(struct baton_lock *lk, int64_t ttl_ms)
{
    if (lk != NULL && atomic_load(&lk->released) && atomic_load(&lk->lost))
        return BATON_ELOST; /* a release found it lost: it still is */
    if (lk == NULL || ttl_ms < 0 || ttl_ms > MAX_DURATION_MS || atomic_load(&lk->released))
        return BATON_EINVAL;
    if (ttl_ms == 0)
        ttl_ms = lk->ttl_ms;
    return baton__lock_extend_call(lk, ttl_ms, baton__client_deadline(lk->c), false, lk->errstr,
                                   sizeof lk->errstr);
}

int baton_lock_release(struct baton_lock *lk)
{
    if (lk == NULL || atomic_load(&lk->released))
        return BATON_EINVAL;
    baton__renew_remove(lk, false); /* renewal never outlives the release */
    if (lk->c->quorum != NULL)
        return baton__quorum_release(lk);

    struct baton__lock_call lc;
    baton__lock_prep_release(lk, &lc, lk->errstr, sizeof lk->errstr);
    return baton__lock_released(lk, &lc.k, baton__script_call(lk->c, &lc.k));
}

int baton_lock_auto_renew(struct baton_lock *lk, int64_t renew_ms)
{
    if (lk == NULL || atomic_load(&lk->released) || renew_ms < 0 || renew_ms >= lk->ttl_ms)
        return BATON_EINVAL;
    return baton__renew_add(lk, renew_ms != 0 ? renew_ms : lk->ttl_ms / 3);
}

void baton_lock_free(struct baton_lock *lk)
{
    if (lk == NULL)
        return;
    if (lk->c != NULL && baton__renew_remove(lk, true))
        return; /* the renewal thread frees it when its renewal is done */
    baton__lock_destroy(lk);
}

void baton__lock_destroy(struct baton_lock *lk)
{
    struct baton_client *c = lk->c;
    baton__stats_dropped(lk);
    pthread_mutex_destroy(&lk->mu);
    free(lk);
    if (c != NULL)
        baton__client_unref(c); /* may free a client freed before lk */
}

bool baton_lock_lost(const struct baton_lock *lk)
{
    if (lk == NULL || atomic_load(&lk->released))
        return lk != NULL && atomic_load(&lk->lost);
    return atomic_load(&lk->lost) || baton__now_ns() >= atomic_load(&lk->deadline_ns);
}

uint64_t baton_lock_fence(const struct baton_lock *lk)
{
    return lk ? atomic_load(&lk->fence) : 0;
}

int64_t baton_lock_deadline_ns(const struct baton_lock *lk)
{
    return lk ? atomic_load(&lk->deadline_ns) : 0;
}

int64_t baton_lock_remaining_ms(const struct baton_lock *lk)
{
    if (lk == NULL || atomic_load(&lk->lost) || atomic_load(&lk->released))
        return 0;
    int64_t left = atomic_load(&lk->deadline_ns) - baton__now_ns();
    return left > 0 ? left / 1000000 : 0;
}

const char *baton_lock_key(const struct baton_lock *lk)
{
    return lk ? lk->key : "";
}
const char *baton_lock_token(const struct baton_lock *lk)
{
    return lk ? lk->token : "";
}

const char *baton_lock_errstr(const struct baton_lock *lk)
{
    if (lk == NULL)
        return "";
    if (lk->errstr[0] == '\0' && atomic_load(&lk->lost))
        return lk->lost_why;
    return lk->errstr;
}
