/* sem.c -- semaphores: at most `limit` holders of a name, each with a
 * permit that is a lease of its own.
 *
 * A permit is a struct baton_lock underneath, so that the deadline, the
 * loss report, auto-renewal (renew.c, with the permit's extend script) and
 * the stats are the lock's, not a second copy: its Redis "key" is the
 * holders' sorted set and its token is the permit id. Waiting uses the
 * client's one subscriber and flood control (waiters.c); the scripts are in
 * scripts.c (BATON__S_SEM_*), run by SHA with the NOSCRIPT fallback. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton_int.h"

#define MAX_LIMIT 1000000

struct baton_permit {
    struct baton_lock *lk; /* the lease: id, fence, deadline, renewal, loss */
    char *name;
    int limit;
    baton_permit_lost_fn on_lost;
    void *on_lost_arg;
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
    p->limit = limit;
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

/* What an attempt that was refused saw: ms until the earliest lease ends
 * (-1: unknown), the last fence granted, and the attempt's send time. A
 * grant published with a higher fence was made after this attempt ran, so
 * its lease started after sent_ns. */
struct refusal {
    int64_t next_ms;
    uint64_t fence;
    int64_t sent_ns;
};

/* One run of the acquire script. Returns 0 when granted (fence and
 * deadline set); BATON_ETAKEN with *why filled; or an error with detail in
 * lk->errstr. */
static int give_back(struct baton_client *c, char *const rkeys[4], enum baton__script_id id,
                     const char *token, int64_t ttl_ms, long long *held, char *err, size_t errlen);

static int attempt(struct baton_permit *p, bool wait, bool queued, int64_t entry_ttl_ms,
                   struct refusal *why)
{
    struct baton_lock *lk = p->lk;
    struct baton_client *c = lk->c;
    char limit[16], ttl[24], ettl[24];
    int rc;

    snprintf(limit, sizeof limit, "%d", p->limit);
    snprintf(ttl, sizeof ttl, "%lld", (long long)lk->ttl_ms);
    snprintf(ettl, sizeof ettl, "%lld", (long long)entry_ttl_ms);
    const char *keys[4] = {lk->rkeys[0], lk->rkeys[1], lk->rkeys[2], lk->rkeys[3]};
    const char *args[6] = {lk->token, limit, ttl, wait ? "1" : "0", ettl, queued ? "1" : "0"};
    struct baton__call k = {.id = BATON__S_SEM_ACQUIRE,
                            .nkeys = 4,
                            .keys = keys,
                            .nargs = 6,
                            .args = args,
                            .deadline_ns = baton__client_grant_deadline(c, lk->ttl_ms),
                            .durable = true,
                            .err = lk->errstr,
                            .errlen = sizeof lk->errstr};

    *why = (struct refusal){.next_ms = -1};
    rc = baton__script_call(c, &k);
    redisReply *r = k.reply;
    if (rc == BATON_ENOTDURABLE && r->type == REDIS_REPLY_INTEGER && r->integer > 0) {
        /* Granted on the master only: not ours to use. */
        char err[BATON__ERRLEN];
        long long held = 0;
        (void)give_back(c, lk->rkeys, BATON__S_SEM_RELEASE, lk->token, lk->ttl_ms, &held, err,
                        sizeof err);
        freeReplyObject(r);
        return rc;
    }
    if (rc != BATON_OK && rc != BATON_ENOTDURABLE)
        return rc;
    rc = BATON_OK;
    if (r->type == REDIS_REPLY_INTEGER && r->integer > 0) {
        atomic_store(&lk->fence, (uint64_t)r->integer);
        baton__lock_granted_by(lk, k.runid);
        baton__lock_confirm(lk, k.sent_ns, lk->ttl_ms);
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
               r->element[0]->type == REDIS_REPLY_INTEGER) {
        why->next_ms = r->element[0]->integer;
        why->sent_ns = k.sent_ns;
        /* Unreadable: no published grant is trusted (the next attempt
         * finds a real one in Redis). */
        why->fence = UINT64_MAX;
        if (r->elements >= 2 && r->element[1]->type == REDIS_REPLY_STRING) {
            char *end = NULL;
            unsigned long long f = strtoull(r->element[1]->str, &end, 10);
            if (end != r->element[1]->str && *end == '\0')
                why->fence = f;
        }
        rc = BATON_ETAKEN;
    } else {
        baton__set_error(lk->errstr, sizeof lk->errstr,
                         "%s: unexpected reply to the semaphore acquire script", c->url.redacted);
        rc = BATON_EPROTO;
    }
    freeReplyObject(r);
    return rc;
}

/* Runs the release or cancel script (id) for token on name's keys; ttl_ms
 * is the token's lease (cancel finds its queue entry by it). When the slot
 * is granted to another waiter of this client, hands it the grant.
 * Returns 0 with *held (1 released, 0 not held), or an error with detail
 * in err. */
static int give_back(struct baton_client *c, char *const rkeys[4], enum baton__script_id id,
                     const char *token, int64_t ttl_ms, long long *held, char *err, size_t errlen)
{
    char ttl[24];
    int rc;

    snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_ms);
    const char *keys[4] = {rkeys[0], rkeys[2], rkeys[3], rkeys[1]};
    const char *args[4] = {token, baton__waiters_channel(c), c->cid, ttl};
    /* Durable, because it may grant our slot to a waiter of this process;
     * a grant not acknowledged is not handed over (the waiter's next
     * attempt finds it in Redis and makes it durable). */
    struct baton__call k = {.id = id,
                            .nkeys = 4,
                            .keys = keys,
                            .nargs = id == BATON__S_SEM_CANCEL ? 4 : 3,
                            .args = args,
                            .deadline_ns = baton__client_deadline(c),
                            .durable = true,
                            .err = err,
                            .errlen = errlen};
    rc = baton__script_call(c, &k);
    redisReply *r = k.reply;
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
                                       k.sent_ns);
    } else {
        baton__set_error(err, errlen, "%s: unexpected reply to the semaphore release script",
                         c->url.redacted);
        rc = BATON_EPROTO;
    }
    freeReplyObject(r);
    return rc;
}

/* True when a release has granted us its slot: a release in this process
 * (give_back(), which hands over the send time of that release), or one
 * elsewhere whose grant came as a message (waiters.c; no send time). The
 * permit then holds it, its lease measured from a time no later than the
 * grant: the release's send time, or the send time of our last refused
 * attempt (last), which saw a lower fence than the grant's. A published
 * grant whose fence is not above what that attempt saw was made before
 * it, and the attempt would have found it held: it is stale (its lease
 * ran out before the attempt), and we go on waiting. */
static bool take_grant(struct baton_permit *p, struct baton__waiter *w, const struct refusal *last)
{
    if (!atomic_load(&w->granted))
        return false;
    int64_t from = w->grant_sent_ns;
    if (from == 0) { /* published */
        if (w->grant_fence <= last->fence || last->sent_ns == 0) {
            atomic_store(&w->granted, false);
            return false;
        }
        from = last->sent_ns;
    }
    atomic_store(&p->lk->fence, w->grant_fence);
    baton__lock_confirm(p->lk, from, p->lk->ttl_ms);
    return true;
}

/* Returns rc after copying p's detail to the client (for callers who get
 * no permit back) and freeing p. */
static int give_up(struct baton_permit *p, int rc, struct baton_permit **out)
{
    if (rc != BATON_ETAKEN && rc != BATON_ETIMEDOUT && rc != BATON_EQUEUEFULL)
        baton__client_error(p->lk->c, p->lk->errstr);
    baton_permit_free(p);
    *out = NULL;
    return rc;
}

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
    return BATON_OK;
}

int baton_sem_try(struct baton_client *c, const char *name, int limit,
                  const struct baton_sem_opts *opts, struct baton_permit **out)
{
    struct baton_lock_opts lo;
    struct baton_permit *p = NULL;
    struct refusal why;
    int rc;

    if ((rc = check_args(c, name, limit, opts, &lo, out)) != BATON_OK)
        return rc;
    if ((rc = permit_new(c, name, limit, opts, &lo, &p)) != BATON_OK)
        return rc;
    if ((rc = attempt(p, false, false, 0, &why)) != BATON_OK) {
        if (rc == BATON_ETAKEN)
            baton__stats_refused(c, name, false);
        return give_up(p, rc, out);
    }
    baton__stats_granted(p->lk, name, 0, false);
    if (lo.auto_renew && (rc = baton__renew_add(p->lk, lo.renew_ms)) != BATON_OK)
        return give_up(p, rc, out);
    *out = p;
    return BATON_OK;
}

int baton_sem_acquire(struct baton_client *c, const char *name, int limit,
                      const struct baton_sem_opts *opts, struct baton_permit **out)
{
    struct baton_lock_opts lo;
    struct baton_permit *p = NULL;
    struct baton__waiter w = {0};
    uint64_t rng = 0;
    bool queued = false;
    long long ignored;
    int rc;

    if ((rc = check_args(c, name, limit, opts, &lo, out)) != BATON_OK)
        return rc;
    if (lo.max_wait_ms == BATON_NO_WAIT)
        return baton_sem_try(c, name, limit, opts, out);
    if ((rc = permit_new(c, name, limit, opts, &lo, &p)) != BATON_OK)
        return rc;
    w.key = p->lk->key; /* "semaphore NAME": flood control per semaphore */
    w.token = p->lk->token;
    if ((rc = baton__waiters_enter(c, &w)) != BATON_OK)
        return give_up(p, rc, out);
    baton__random(&rng, sizeof rng);

    int64_t start = baton__now_ns();
    int64_t deadline = lo.max_wait_ms < 0 ? INT64_MAX : start + lo.max_wait_ms * 1000000;
    /* As for locks: a queue entry outlives two retry periods. */
    int64_t entry_ttl = lo.retry_delay_ms * 5 / 2 + 1000;
    struct refusal last = {0};
    for (;;) {
        rc = attempt(p, true, queued, entry_ttl, &last);
        if (rc != BATON_ETAKEN)
            break;
        queued = true;
        if (take_grant(p, &w, &last)) {
            rc = BATON_OK;
            break;
        }
        int64_t now = baton__now_ns();
        if (now >= deadline) {
            rc = BATON_ETIMEDOUT;
            break;
        }
        int64_t until = now + baton__jitter(lo.retry_delay_ms, &rng) * 1000000;
        if (last.next_ms >= 0 && now + (last.next_ms + 1) * 1000000 < until)
            until = now + (last.next_ms + 1) * 1000000; /* the earliest lease runs out */
        if (until > deadline)
            until = deadline;
        baton__waiters_sleep(c, &w, until);
        if (take_grant(p, &w, &last)) {
            rc = BATON_OK;
            break;
        }
    }
    baton__waiters_leave(c, &w);
    if (rc != BATON_OK) {
        char err[BATON__ERRLEN];
        if (queued) /* best effort: leave the queue, pass on a slot handed to us */
            (void)give_back(c, p->lk->rkeys, BATON__S_SEM_CANCEL, p->lk->token, p->lk->ttl_ms,
                            &ignored, err, sizeof err);
        if (queued || rc == BATON_ETIMEDOUT)
            baton__stats_refused(c, name, rc == BATON_ETIMEDOUT);
        return give_up(p, rc, out);
    }
    baton__stats_granted(p->lk, name, baton__now_ns() - start, queued);
    if (lo.auto_renew && (rc = baton__renew_add(p->lk, lo.renew_ms)) != BATON_OK)
        return give_up(p, rc, out);
    *out = p;
    return BATON_OK;
}

int baton_sem_release(struct baton_permit *p)
{
    long long held = 0;
    if (p == NULL || atomic_load(&p->lk->released))
        return BATON_EINVAL;
    struct baton_lock *lk = p->lk;
    baton__renew_remove(lk, false); /* renewal never outlives the release */
    int rc = give_back(lk->c, lk->rkeys, BATON__S_SEM_RELEASE, lk->token, 0, &held, lk->errstr,
                       sizeof lk->errstr);
    if (rc != BATON_OK)
        return rc;
    atomic_store(&lk->released, true);
    if (held == 1) {
        baton__stats_released(lk);
        return BATON_OK;
    }
    baton__set_error(lk->errstr, sizeof lk->errstr,
                     "permit of semaphore %s was no longer held at release", p->name);
    baton__lock_mark_lost(lk, lk->errstr);
    return BATON_ELOST;
}

int baton_sem_release_id(struct baton_client *c, const char *name, const char *permit_id)
{
    char *rkeys[4] = {NULL, NULL, NULL, NULL};
    char err[BATON__ERRLEN];
    long long held = 0;
    int rc = BATON_ENOMEM;

    if (c == NULL || !valid_name(name) || permit_id == NULL || *permit_id == '\0' ||
        strlen(permit_id) > 256)
        return BATON_EINVAL;
    if (asprintf(&rkeys[0], "%s{%s}:sem", c->prefix, name) < 0 ||
        asprintf(&rkeys[1], "%s{%s}:sem:fence", c->prefix, name) < 0 ||
        asprintf(&rkeys[2], "%s{%s}:sem:q", c->prefix, name) < 0 ||
        asprintf(&rkeys[3], "%s{%s}:sem:qx", c->prefix, name) < 0)
        goto out;
    rc = give_back(c, rkeys, BATON__S_SEM_RELEASE, permit_id, 0, &held, err, sizeof err);
    if (rc != BATON_OK)
        baton__client_error(c, err);
    else if (held != 1)
        rc = BATON_ELOST;
out:
    for (int i = 0; i < 4; i++)
        free(rkeys[i]);
    return rc;
}

int baton_sem_holders(struct baton_client *c, const char *name, int *holders)
{
    static const char script[] =
        "local t = redis.call('time')\n"
        "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
        "return redis.call('zcount', KEYS[1], '(' .. string.format('%.0f', now), '+inf')\n";
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
