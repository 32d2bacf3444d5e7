/* sem.c -- semaphores: at most `limit` holders of a name, each with a
 * permit that is a lease of its own.
 *
 * A permit is a struct baton_lock underneath (lk->sem_limit set), so that
 * the deadline, the loss report, auto-renewal (renew.c, with the permit's
 * extend script), the stats and the whole acquire -- the asynchronous
 * operation of lock_async.c, its queue, wake-ups and maximum wait, which
 * the blocking calls wait for -- are the lock's, not a second copy: its
 * Redis "key" is the holders' sorted set and its token is the permit id.
 * What is the semaphore's own is here: its scripts' arguments and
 * replies, which lock.c's prep and read functions hand over to, and the
 * permit around the lease. Waiting uses the client's one subscriber and
 * flood control (waiters.c); the scripts are in scripts.c
 * (BATON__S_SEM_*), run by SHA with the NOSCRIPT fallback. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_int.h"

#define MAX_LIMIT 1000000

struct baton_permit {
    struct baton_lock *lk; /* the lease (lk->sem_limit: the limit): id, fence, deadline,
                              renewal, loss */
    char *name;
    baton_permit_lost_fn on_lost;
    void *on_lost_arg;
    baton_permit_cb cb; /* the asynchronous operation in progress */
    void *cb_arg;
};

static bool valid_name(const char *name)
{
    return name != NULL && *name != '\0' && strnlen(name, BATON__KEY_MAX + 1) <= BATON__KEY_MAX;
}

/* The lease reports its loss; the permit's callback hears it. */
static void permit_lost(struct baton_lock *lk, void *arg)
{
    struct baton_permit *p = arg;
    (void)lk;
    p->on_lost(p, p->on_lost_arg);
}

/* Fills *lo (normalized lock options) from opts. Returns 0 or EINVAL. */
static int sem_opts(const struct baton_sem_opts *opts, struct baton_lock_opts *lo)
{
    struct baton_lock_opts in = {0};
    if (opts != NULL) {
        in.ttl_ms = opts->ttl_ms;
        in.max_wait_ms = opts->max_wait_ms;
        in.retry_delay_ms = opts->retry_delay_ms;
        in.auto_renew = opts->auto_renew;
        in.renew_ms = opts->renew_ms;
    }
    return baton__lock_opts(&in, lo);
}

/* Makes a permit object (no Redis I/O). Returns 0 and *out, or ENOMEM/EIO. */
static int permit_new(struct baton_client *c, const char *name, int limit,
                      const struct baton_sem_opts *opts, const struct baton_lock_opts *lo,
                      struct baton_permit **out)
{
    char *base = NULL, *label = NULL;
    int rc = BATON_ENOMEM;
    struct baton_permit *p = calloc(1, sizeof *p);
    *out = NULL;
    if (p == NULL)
        goto out;
    if ((p->name = strdup(name)) == NULL)
        goto out_free;
    if (asprintf(&base, "%s{%s}:sem", c->prefix, name) < 0) {
        base = NULL;
        goto out_free;
    }
    if (asprintf(&label, "semaphore %s", name) < 0) {
        label = NULL;
        goto out_free;
    }
    if ((rc = baton__lock_new(c, base, label, NULL, lo, &p->lk)) != BATON_OK)
        goto out_free;
    p->lk->extend_script = BATON__S_SEM_EXTEND;
    p->lk->sem_limit = limit;
    if (opts != NULL && opts->on_lost != NULL) {
        p->on_lost = opts->on_lost;
        p->on_lost_arg = opts->on_lost_arg;
        p->lk->on_lost = permit_lost;
        p->lk->on_lost_arg = p;
    }
    *out = p;
    goto out;
out_free:
    baton_permit_free(p);
out:
    free(base);
    free(label);
    return rc;
}

/* ---- the scripts' calls (lock.c's prep and read functions hand a
 * permit's over to these) ---- */

void baton__sem_prep_acquire(struct baton_lock *lk, bool wait, bool queued, int64_t entry_ttl_ms,
                             struct baton__lock_call *lc)
{
    for (int i = 0; i < 3; i++)
        lc->keys[i] = lk->rkeys[i]; /* holders, fence, q */
    lc->args[0] = lk->token;
    lc->args[1] = baton__i64_str(lk->sem_limit, lc->n3);
    lc->args[2] = baton__i64_str(lk->ttl_ms, lc->n1);
    lc->args[3] = wait ? "1" : "0";
    lc->args[4] = baton__i64_str(entry_ttl_ms, lc->n2);
    lc->args[5] = queued ? "1" : "0";
    lc->args[6] = lk->qentry;
    lc->k = (struct baton__call){.id = BATON__S_SEM_ACQUIRE,
                                 .nkeys = 3,
                                 .keys = lc->keys,
                                 .nargs = 7,
                                 .args = lc->args,
                                 .deadline_ns = baton__client_grant_deadline(lk->c, lk->ttl_ms),
                                 .durable = true,
                                 .err = lk->errstr,
                                 .errlen = sizeof lk->errstr};
}

int baton__sem_took(struct baton_lock *lk, struct baton__call *k, int rc, struct baton__holder *h,
                    bool *drop)
{
    redisReply *r = k->reply;
    k->reply = NULL;
    *drop = false;
    if (rc != BATON_OK && rc != BATON_ENOTDURABLE)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER && r->integer > 0) {
        if (rc == BATON_ENOTDURABLE) {
            *drop = true; /* granted on the master only: not ours to use */
        } else {
            atomic_store(&lk->fence, (uint64_t)r->integer);
            lk->qentry[0] = '\0'; /* the grant took us out of the queue */
            baton__lock_granted_by(lk, k->runid);
            baton__lock_confirm(lk, k->sent_ns, lk->ttl_ms);
        }
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
               r->element[0]->type == REDIS_REPLY_INTEGER) {
        /* Refused ({ms until the earliest lease ends, last fence, our
         * queue entry}); WAIT does not matter. An unreadable fence trusts
         * no published grant (the next attempt finds a real one in Redis).
         * The entry is kept for the next attempt and the cancel, which
         * find our place by it; one that does not fit (no script of ours
         * writes one) is forgotten: that attempt queues us again. */
        h->pttl_ms = r->element[0]->integer;
        h->value[0] = '\0';
        h->fence = UINT64_MAX;
        if (r->elements >= 2 && r->element[1]->type == REDIS_REPLY_STRING) {
            char *end = NULL;
            unsigned long long f = strtoull(r->element[1]->str, &end, 10);
            if (end != r->element[1]->str && *end == '\0')
                h->fence = f;
        }
        lk->qentry[0] = '\0';
        if (r->elements >= 3 && r->element[2]->type == REDIS_REPLY_STRING &&
            r->element[2]->len < sizeof lk->qentry)
            memcpy(lk->qentry, r->element[2]->str, r->element[2]->len + 1);
        rc = BATON_ETAKEN;
    } else {
        baton__set_error(lk->errstr, sizeof lk->errstr,
                         "%s: unexpected reply to the semaphore acquire script",
                         lk->c->url.redacted);
        rc = BATON_EPROTO;
    }
    freeReplyObject(r);
    return rc;
}

void baton__sem_prep_give_back(struct baton_client *c, char *const *rkeys, enum baton__script_id id,
                               const char *token, const char *entry, struct baton__lock_call *lc,
                               char *err, size_t errlen)
{
    lc->keys[0] = rkeys[0];
    lc->keys[1] = rkeys[2];
    lc->keys[2] = rkeys[1];
    lc->args[0] = token;
    lc->args[1] = baton__waiters_channel(c);
    lc->args[2] = c->cid;
    lc->args[3] = entry != NULL ? entry : "";
    /* Durable, because it may grant our slot to a waiter of this process;
     * a grant not acknowledged is not handed over (the waiter's next
     * attempt finds it in Redis and makes it durable). */
    lc->k = (struct baton__call){.id = id,
                                 .nkeys = 3,
                                 .keys = lc->keys,
                                 .nargs = id == BATON__S_SEM_CANCEL ? 4 : 3,
                                 .args = lc->args,
                                 .deadline_ns = baton__client_deadline(c),
                                 .durable = true,
                                 .err = err,
                                 .errlen = errlen};
}

int baton__sem_gave_back(struct baton_client *c, struct baton__call *k, int rc, long long *held)
{
    redisReply *r = k->reply;
    k->reply = NULL;
    bool durable = rc == BATON_OK;
    if (rc != BATON_OK && rc != BATON_ENOTDURABLE)
        return rc;
    rc = BATON_OK;
    if (r->type == REDIS_REPLY_INTEGER) {
        *held = r->integer;
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
               r->element[0]->type == REDIS_REPLY_STRING &&
               r->element[1]->type == REDIS_REPLY_INTEGER && r->element[1]->integer > 0) {
        /* Our slot went to a waiter of this process: tell it directly. If
         * it has stopped waiting, its cancel (or its next attempt) finds
         * the grant in Redis. */
        *held = 1;
        if (durable)
            (void)baton__waiters_grant(c, r->element[0]->str, (uint64_t)r->element[1]->integer,
                                       k->sent_ns);
    } else {
        baton__set_error(k->err, k->errlen, "%s: unexpected reply to the semaphore release script",
                         c->url.redacted);
        rc = BATON_EPROTO;
    }
    freeReplyObject(r);
    return rc;
}

/* ---- the calls ---- */

/* Checks the common arguments. Returns 0 or EINVAL (with *out cleared). */
static int check_args(struct baton_client *c, const char *name, int limit,
                      const struct baton_sem_opts *opts, struct baton_lock_opts *lo,
                      struct baton_permit **out)
{
    if (out == NULL)
        return BATON_EINVAL;
    *out = NULL;
    if (c == NULL || !valid_name(name) || limit < 1 || limit > MAX_LIMIT ||
        sem_opts(opts, lo) != BATON_OK)
        return BATON_EINVAL;
    if (c->quorum != NULL) {
        char err[BATON__ERRLEN];
        baton__set_error(err, sizeof err,
                         "%s: not supported over a Redlock quorum: semaphores need one master "
                         "(locks and elections run on every master)",
                         c->url.redacted);
        baton__client_error(c, err);
        return BATON_EINVAL;
    }
    return BATON_OK;
}

/* The try (wait false) or acquire, waited for: the permit's lease goes
 * through lock_async.c's operation. */
static int take(struct baton_client *c, const char *name, int limit,
                const struct baton_sem_opts *opts, bool wait, struct baton_permit **out)
{
    struct baton_lock_opts lo;
    struct baton_permit *p = NULL;
    struct baton_lock *lk = NULL;
    int rc;

    if ((rc = check_args(c, name, limit, opts, &lo, out)) != BATON_OK)
        return rc;
    if ((rc = permit_new(c, name, limit, opts, &lo, &p)) != BATON_OK)
        return rc;
    rc = baton__lock_start_wait(c, p->lk, p->name, &lo, wait, &lk);
    if (rc != BATON_OK) {
        p->lk = NULL; /* freed by the operation */
        baton_permit_free(p);
        return rc;
    }
    *out = p;
    return BATON_OK;
}

int baton_sem_try(struct baton_client *c, const char *name, int limit,
                  const struct baton_sem_opts *opts, struct baton_permit **out)
{
    return take(c, name, limit, opts, false, out);
}

int baton_sem_acquire(struct baton_client *c, const char *name, int limit,
                      const struct baton_sem_opts *opts, struct baton_permit **out)
{
    return take(c, name, limit, opts, true, out);
}

int baton_sem_release(struct baton_permit *p)
{
    return p != NULL ? baton_lock_release(p->lk) : BATON_EINVAL;
}

/* ---- the asynchronous calls: the lease's operations, their result
 * passed on as the permit's ---- */

static void permit_done(struct baton_lock *lk, int rc, const char *why, void *arg)
{
    struct baton_permit *p = arg;
    baton_permit_cb cb = p->cb;
    void *cb_arg = p->cb_arg;
    if (lk == NULL) { /* not granted: the operation freed the lease */
        p->lk = NULL;
        baton_permit_free(p);
        p = NULL;
    }
    cb(p, rc, why, cb_arg);
}

static int take_async(struct baton_client *c, const char *name, int limit,
                      const struct baton_sem_opts *opts, bool wait, baton_permit_cb cb, void *arg)
{
    struct baton_lock_opts lo;
    struct baton_permit *p = NULL;
    int rc;

    if ((rc = check_args(c, name, limit, opts, &lo, &p)) != BATON_OK)
        return rc;
    if (cb == NULL)
        return BATON_EINVAL;
    if ((rc = permit_new(c, name, limit, opts, &lo, &p)) != BATON_OK)
        return rc;
    p->cb = cb;
    p->cb_arg = arg;
    if ((rc = baton__lock_start(c, p->lk, p->name, &lo, wait, permit_done, p)) != BATON_OK)
        baton_permit_free(p);
    return rc;
}

int baton_sem_try_async(struct baton_client *c, const char *name, int limit,
                        const struct baton_sem_opts *opts, baton_permit_cb cb, void *arg)
{
    return take_async(c, name, limit, opts, false, cb, arg);
}

int baton_sem_acquire_async(struct baton_client *c, const char *name, int limit,
                            const struct baton_sem_opts *opts, baton_permit_cb cb, void *arg)
{
    return take_async(c, name, limit, opts, true, cb, arg);
}

int baton_sem_release_async(struct baton_permit *p, baton_permit_cb cb, void *arg)
{
    if (p == NULL || cb == NULL)
        return BATON_EINVAL;
    p->cb = cb;
    p->cb_arg = arg;
    return baton_lock_release_async(p->lk, permit_done, p);
}

int baton_sem_release_id(struct baton_client *c, const char *name, const char *permit_id)
{
    char *rkeys[3] = {NULL, NULL, NULL};
    char err[BATON__ERRLEN];
    long long held = 0;
    struct baton__lock_call lc;
    int rc = BATON_ENOMEM;

    if (c == NULL || !valid_name(name) || permit_id == NULL || *permit_id == '\0' ||
        strlen(permit_id) > 256)
        return BATON_EINVAL;
    if (asprintf(&rkeys[0], "%s{%s}:sem", c->prefix, name) < 0 ||
        asprintf(&rkeys[1], "%s{%s}:sem:fence", c->prefix, name) < 0 ||
        asprintf(&rkeys[2], "%s{%s}:sem:q", c->prefix, name) < 0)
        goto out;
    baton__sem_prep_give_back(c, rkeys, BATON__S_SEM_RELEASE, permit_id, NULL, &lc, err,
                              sizeof err);
    rc = baton__sem_gave_back(c, &lc.k, baton__script_call(c, &lc.k), &held);
    if (rc != BATON_OK)
        baton__client_error(c, err);
    else if (held != 1)
        rc = BATON_ELOST;
out:
    for (int i = 0; i < 3; i++)
        free(rkeys[i]);
    return rc;
}

int baton_sem_holders(struct baton_client *c, const char *name, int *holders)
{
    static const char script[] =
        "local t = redis.call('time')\n"
        "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
        "return redis.call('zcount', KEYS[1], '(' .. string.format('%d', now), '+inf')\n";
    char *key = NULL;
    struct baton_reply *r = NULL;
    int rc;

    if (c == NULL || !valid_name(name) || holders == NULL)
        return BATON_EINVAL;
    *holders = 0;
    if (asprintf(&key, "%s{%s}:sem", c->prefix, name) < 0)
        return BATON_ENOMEM;
    rc = baton__client_eval(c, script, 1, (const char *const *)&key, 0, NULL, false, &r);
    if (rc == BATON_OK) {
        if (r->type == BATON_REPLY_INTEGER)
            *holders = (int)r->integer;
        else
            rc = BATON_EPROTO;
    }
    baton_reply_free(r);
    free(key);
    return rc;
}

int baton_sem_extend(struct baton_permit *p, int64_t ttl_ms)
{
    return p != NULL ? baton_lock_extend(p->lk, ttl_ms) : BATON_EINVAL;
}

int baton_sem_auto_renew(struct baton_permit *p, int64_t renew_ms)
{
    return p != NULL ? baton_lock_auto_renew(p->lk, renew_ms) : BATON_EINVAL;
}

void baton_permit_free(struct baton_permit *p)
{
    if (p == NULL)
        return;
    baton_lock_free(p->lk); /* stops renewal before p goes */
    free(p->name);
    free(p);
}

bool baton_permit_lost(const struct baton_permit *p)
{
    return p != NULL && baton_lock_lost(p->lk);
}

uint64_t baton_permit_fence(const struct baton_permit *p)
{
    return p != NULL ? baton_lock_fence(p->lk) : 0;
}

int64_t baton_permit_deadline_ns(const struct baton_permit *p)
{
    return p != NULL ? baton_lock_deadline_ns(p->lk) : 0;
}

int64_t baton_permit_remaining_ms(const struct baton_permit *p)
{
    return p != NULL ? baton_lock_remaining_ms(p->lk) : 0;
}

const char *baton_permit_id(const struct baton_permit *p)
{
    return p != NULL ? p->lk->token : "";
}

const char *baton_permit_name(const struct baton_permit *p)
{
    return p != NULL ? p->name : "";
}

const char *baton_permit_errstr(const struct baton_permit *p)
{
    return p != NULL ? baton_lock_errstr(p->lk) : "";
}
