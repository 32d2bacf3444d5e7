/* lock_async.c -- the asynchronous lock API: try, acquire, release and
 * extend as operations that the client's loop runs to completion, each
 * ending in one call of the user's callback on the loop thread.
 *
 * An operation is a heap object that owns its script call (call.c) while
 * one is in flight. The calls, and the reading of their replies, are
 * lock.c's (baton__lock_prep_* and the functions that read the result), so
 * that both forms grant, refuse, extend and release alike; what is here is
 * the sequencing that the blocking functions do with a loop and sleeps:
 *
 *   try      acquire script -> (not durable: release script) -> callback
 *   acquire  enter the waiters (flood control) -> acquire script, joining
 *            the queue -> taken: sleep on a loop timer until the retry
 *            delay (jittered), the holder's lease end or the maximum wait,
 *            or until the subscription wakes the waiter (a release:
 *            waiters.c calls op_wake, which posts a task) -> granted by
 *            the release ("token fence", take_grant) or again; the
 *            maximum wait over: cancel script (leave the queue, pass on a
 *            grant made meanwhile) -> callback
 *   release  renewal stopped (a renewal in flight is polled for on a timer,
 *            never waited for: it waits for this loop) -> release script
 *   extend   extend script -> (a failover answered: release script)
 *
 * The blocking baton_lock_acquire() is this acquire and a wait
 * (baton__lock_start_wait): a wake-up's next attempt leaves from the
 * loop in the turn that read the message, with no thread woken between.
 *
 * Lifetime: the operation is freed after its callback returns, except when
 * a wake-up task of the subscriber is still queued for it: that task frees
 * it. */
#include <errno.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_int.h"

#define RENEWAL_POLL_NS       (INT64_C(200) * 1000) /* an auto-renewal in flight, looked at again */

enum op_kind { OP_TRY, OP_ACQUIRE, OP_RELEASE, OP_EXTEND };

struct op {
    enum op_kind kind;
    struct baton_client *c;
    struct baton_lock *lk;
    const char *stats_key;    /* try, acquire: the class counted (the user's key or name) */
    struct baton_lock_opts o; /* try, acquire: normalized */
    int64_t ttl_ms;           /* extend */
    baton_lock_cb cb;
    void *arg;
    int rc;                     /* the result, once known */
    struct baton__lock_call lc; /* the call in flight */
    struct baton__task task;    /* start, and the result of a call that could not start */
    struct baton__timer timer;  /* acquire: the next attempt; release: the renewal poll */
    /* acquire */
    struct baton__waiter w;
    bool entered, queued, sleeping, finished;
    _Atomic bool wake_posted;
    struct baton__task wake_task;
    uint64_t rng;
    int64_t start, deadline, entry_ttl;
    struct baton__holder h; /* what the last refused attempt saw */
    int64_t last_sent;      /* and its send time, */
    char last_runid[41];    /* and the server that answered */
};

/* On the loop thread the operation's memory is kept for the next one
 * (baton__loop_calloc): with many cycles in flight, each makes and frees
 * two, and a fresh allocation of this size costs malloc a pass over its
 * fast bins every time. */
static void op_free(struct op *op)
{
    baton__loop_cfree(atomic_load(&op->c->loop), op, sizeof *op);
}

/* Runs the callback, then frees the operation (or leaves it to a wake-up
 * task still queued). */
static void deliver(struct op *op, struct baton_lock *lk, int rc, const char *why)
{
    op->cb(lk, rc, why, op->arg);
    op->finished = true;
    if (!atomic_load(&op->wake_posted))
        op_free(op);
}

/* try/acquire failed: lk's detail to the client (as the blocking calls
 * do), lk freed, NULL to the callback. */
static void fail_new(struct op *op, int rc)
{
    char why[BATON__ERRLEN];
    struct baton_lock *lk = op->lk;
    baton__set_error(why, sizeof why, "%s", lk->errstr[0] ? lk->errstr : baton_strerror(rc));
    if (rc != BATON_ETAKEN && rc != BATON_ETIMEDOUT && rc != BATON_EQUEUEFULL)
        baton__client_error(op->c, lk->errstr);
    op->lk = NULL;
    baton_lock_free(lk);
    deliver(op, NULL, rc, why);
}

static void granted(struct op *op)
{
    struct baton_lock *lk = op->lk;
    int64_t waited = op->kind == OP_ACQUIRE ? baton__now_ns() - op->start : 0;
    baton__stats_granted(lk, op->stats_key, waited, op->queued);
    int rc = op->o.auto_renew ? baton__renew_add(lk, op->o.renew_ms) : BATON_OK;
    if (rc != BATON_OK) {
        fail_new(op, rc);
        return;
    }
    op->lk = NULL;
    deliver(op, lk, BATON_OK, "");
}

/* Starts lc's call, with done() on its result. A call that cannot start
 * (the client is being freed) reports its result later in the turn. */
static void call_failed(struct baton__task *t)
{
    struct op *op = BATON__OWNER(t, struct op, task);
    op->lc.k.done(&op->lc.k);
}

static void call(struct op *op, void (*done)(struct baton__call *k))
{
    op->lc.k.done = done;
    op->lc.k.arg = op;
    if (!baton__call_start(op->c, &op->lc.k)) {
        op->task.run = call_failed;
        baton__loop_defer(atomic_load(&op->c->loop), &op->task);
    }
}

/* ---- try and acquire ---- */

static void attempt(struct op *op);

static void after_cancel(struct baton__call *k)
{
    struct op *op = k->arg;
    baton__lock_discard(op->lk, k);
    fail_new(op, op->rc);
}

/* The acquire is over: out of the waiters; a failure leaves the queue
 * first (best effort), as baton_lock_acquire() does. */
static void acquire_over(struct op *op, int rc)
{
    if (op->entered) {
        baton__waiters_leave(op->c, &op->w);
        op->entered = false;
    }
    if (rc == BATON_OK) {
        granted(op);
        return;
    }
    op->rc = rc;
    if (op->kind == OP_ACQUIRE && (op->queued || rc == BATON_ETIMEDOUT))
        baton__stats_refused(op->c, op->stats_key, rc == BATON_ETIMEDOUT);
    else if (rc == BATON_ETAKEN)
        baton__stats_refused(op->c, op->stats_key, false);
    if (op->queued) {
        baton__lock_prep_cancel(op->lk, &op->lc);
        call(op, after_cancel);
        return;
    }
    fail_new(op, rc);
}

/* A release granted us the lock (or permit) and said so (waiters.c has
 * put the fence on the waiter). A grant published by a release elsewhere
 * is taken when its fence is above what our last refused attempt saw
 * (the grant came after that attempt ran, so its lease started after
 * that attempt's send time, from which the validity is measured); a
 * semaphore slot handed over by a release of this client carries that
 * release's send time, from which it is measured. Either is taken when
 * that leaves at least half the ttl; else the next attempt confirms it
 * (it finds our token among the holders). */
static bool take_grant(struct op *op)
{
    if (!atomic_load(&op->w.granted))
        return false;
    atomic_store(&op->w.granted, false);
    struct baton_lock *lk = op->lk;
    int64_t from = op->w.grant_sent_ns;
    if (from == 0) { /* published */
        if (op->w.grant_fence <= op->h.fence)
            return false;
        from = op->last_sent;
    }
    int64_t valid_ns = (lk->ttl_ms - lk->ttl_ms / 100 - 2) * 1000000;
    if (from == 0 || from + valid_ns - baton__now_ns() < valid_ns / 2)
        return false;
    atomic_store(&lk->fence, op->w.grant_fence);
    baton__lock_granted_by(lk, op->last_runid);
    baton__lock_confirm(lk, from, lk->ttl_ms);
    return true;
}

static void retry_due(struct baton__timer *t)
{
    struct op *op = BATON__OWNER(t, struct op, timer);
    op->sleeping = false;
    (void)baton__waiters_take_wake(op->c, &op->w);
    if (take_grant(op)) {
        acquire_over(op, BATON_OK);
        return;
    }
    attempt(op);
}

/* An attempt's result rc: granted, refused (sleep, or give up at the
 * maximum wait), or failed. */
static void attempted_result(struct op *op, int rc)
{
    if (op->kind == OP_TRY) {
        if (rc == BATON_OK)
            granted(op);
        else
            acquire_over(op, rc);
        return;
    }
    /* Queued already, Redis went away (a failover, a restart): keep
     * waiting, through the failover, until the wait is over. */
    bool outage = op->queued && (rc == BATON_EIO || rc == BATON_ENOTDURABLE);
    if (rc != BATON_ETAKEN && !outage) {
        acquire_over(op, rc);
        return;
    }
    op->queued = true;
    if (rc == BATON_ETAKEN) {
        op->last_sent = op->lc.k.sent_ns;
        memcpy(op->last_runid, op->lc.k.runid, sizeof op->last_runid);
    }
    if (take_grant(op)) { /* granted while this attempt was in flight */
        acquire_over(op, BATON_OK);
        return;
    }
    struct baton__loop *l = atomic_load(&op->c->loop);
    int64_t now = baton__now_ns();
    if (now >= op->deadline || baton__loop_stopping(l)) {
        acquire_over(op, outage ? rc : baton__loop_stopping(l) ? BATON_EINVAL : BATON_ETIMEDOUT);
        return;
    }
    if (baton__waiters_take_wake(op->c, &op->w)) {
        attempt(op); /* woken while the attempt was in flight */
        return;
    }
    int64_t until = now + baton__jitter(op->o.retry_delay_ms, &op->rng) * 1000000;
    int64_t pttl = op->h.pttl_ms;
    if (pttl > 0 && now + (pttl + 1) * 1000000 < until)
        until = now + (pttl + 1) * 1000000; /* the holder's lease runs out */
    if (until > op->deadline)
        until = op->deadline;
    op->timer.fire = retry_due;
    if (baton__timer_arm(l, &op->timer, until) != BATON_OK) {
        acquire_over(op, BATON_ENOMEM);
        return;
    }
    op->sleeping = true;
}

static void after_drop(struct baton__call *k)
{
    struct op *op = k->arg;
    baton__lock_discard(op->lk, k);
    attempted_result(op, BATON_ENOTDURABLE);
}

static void attempted(struct baton__call *k)
{
    struct op *op = k->arg;
    bool drop;
    op->h = (struct baton__holder){.pttl_ms = -1};
    int rc = baton__lock_took(op->lk, k, k->rc, &op->h, &drop);
    if (drop) { /* granted on the master only: not ours to use */
        baton__lock_prep_release(op->lk, &op->lc, op->lc.err, sizeof op->lc.err);
        call(op, after_drop);
        return;
    }
    attempted_result(op, rc);
}

static void attempt(struct op *op)
{
    baton__lock_prep_acquire(op->lk, op->kind == OP_ACQUIRE, op->queued, op->entry_ttl, &op->lc);
    call(op, attempted);
}

/* The subscriber (or a releasing thread) woke the waiter: under the
 * waiters' lock, so it only posts. */
static void woken_on_loop(struct baton__task *t)
{
    struct op *op = BATON__OWNER(t, struct op, wake_task);
    atomic_store(&op->wake_posted, false);
    if (op->finished) {
        op_free(op); /* completed while this task was queued */
        return;
    }
    if (!op->sleeping)
        return; /* an attempt is in flight: it sees the flag when it returns */
    op->sleeping = false;
    baton__timer_disarm(atomic_load(&op->c->loop), &op->timer);
    (void)baton__waiters_take_wake(op->c, &op->w);
    if (take_grant(op)) {
        acquire_over(op, BATON_OK);
        return;
    }
    attempt(op);
}

static void op_wake(struct baton__waiter *w)
{
    struct op *op = BATON__OWNER(w, struct op, w);
    if (atomic_exchange(&op->wake_posted, true))
        return; /* one task queued is enough */
    op->wake_task.run = woken_on_loop;
    if (!baton__loop_post(atomic_load(&op->c->loop), &op->wake_task))
        atomic_store(&op->wake_posted, false); /* the loop has stopped: nothing to wake */
}

static void start_acquire(struct baton__task *t)
{
    struct op *op = BATON__OWNER(t, struct op, task);
    if (op->kind == OP_ACQUIRE) {
        op->w.key = op->lk->key;
        op->w.token = op->lk->token;
        op->w.wake = op_wake;
        int rc = baton__waiters_enter(op->c, &op->w);
        if (rc != BATON_OK) {
            acquire_over(op, rc);
            return;
        }
        op->entered = true;
        baton__random(&op->rng, sizeof op->rng);
        op->start = baton__now_ns();
        op->deadline = op->o.max_wait_ms < 0 ? INT64_MAX : op->start + op->o.max_wait_ms * 1000000;
        /* A queue entry outlives two retry periods, so only a dead
         * waiter's entry ever expires. */
        op->entry_ttl = op->o.retry_delay_ms * 5 / 2 + 1000;
    }
    attempt(op);
}

/* ---- release and extend ---- */

static void released(struct baton__call *k)
{
    struct op *op = k->arg;
    int rc = baton__lock_released(op->lk, k, k->rc);
    deliver(op, op->lk, rc, rc == BATON_OK ? "" : op->lk->errstr);
}

static void release_now(struct op *op)
{
    baton__lock_prep_release(op->lk, &op->lc, op->lk->errstr, sizeof op->lk->errstr);
    call(op, released);
}

static void renewal_poll(struct baton__timer *t)
{
    struct op *op = BATON__OWNER(t, struct op, timer);
    struct baton__loop *l = atomic_load(&op->c->loop);
    if (baton__renew_unlink(op->lk) && !baton__loop_stopping(l) &&
        baton__timer_arm(l, &op->timer, baton__now_ns() + RENEWAL_POLL_NS) == BATON_OK)
        return;
    release_now(op);
}

static void start_release(struct baton__task *t)
{
    struct op *op = BATON__OWNER(t, struct op, task);
    /* Renewal never outlives the release: none starts from here on, and
     * one in flight (on the renewal thread, waiting for this loop) is
     * waited for on a timer. */
    if (baton__renew_unlink(op->lk)) {
        op->timer.fire = renewal_poll;
        renewal_poll(&op->timer);
        return;
    }
    release_now(op);
}

static void after_extend_drop(struct baton__call *k)
{
    struct op *op = k->arg;
    baton__lock_discard(op->lk, k);
    deliver(op, op->lk, BATON_ELOST, op->lk->errstr);
}

static void extended(struct baton__call *k)
{
    struct op *op = k->arg;
    struct baton_lock *lk = op->lk;
    bool drop;
    int rc =
        baton__lock_extended(lk, k, k->rc, op->ttl_ms, false, lk->errstr, sizeof lk->errstr, &drop);
    if (drop) { /* a failover answered: the grant is given back */
        baton__lock_prep_release(lk, &op->lc, op->lc.err, sizeof op->lc.err);
        call(op, after_extend_drop);
        return;
    }
    deliver(op, lk, rc, rc == BATON_OK ? "" : lk->errstr);
}

static void start_extend(struct baton__task *t)
{
    struct op *op = BATON__OWNER(t, struct op, task);
    struct baton_lock *lk = op->lk;
    if (atomic_load(&lk->released) && atomic_load(&lk->lost)) {
        deliver(op, lk, BATON_ELOST, lk->lost_why); /* a release found it lost: it still is */
        return;
    }
    baton__lock_prep_extend(lk, op->ttl_ms, baton__client_deadline(op->c), &op->lc, lk->errstr,
                            sizeof lk->errstr);
    call(op, extended);
}

/* ---- starting ---- */

/* The operation for c, or NULL: c unusable for asynchronous calls. */
static struct op *op_new(struct baton_client *c, enum op_kind kind, baton_lock_cb cb, void *arg)
{
    if (c != NULL && c->quorum != NULL)
        baton__client_error(c, "not supported over a Redlock quorum: the _async lock calls (the "
                               "blocking ones run on every master)");
    if (c == NULL || cb == NULL || c->quorum != NULL || atomic_load(&c->closed))
        return NULL;
    struct op *op = baton__loop_calloc(atomic_load(&c->loop), sizeof *op);
    if (op == NULL)
        return NULL;
    op->kind = kind;
    op->c = c;
    op->cb = cb;
    op->arg = arg;
    return op;
}

/* Posts the operation's first step. Returns 0, or the code of a client
 * that cannot run it (op freed). */
static int op_start(struct op *op, void (*first)(struct baton__task *t))
{
    struct baton__loop *l = baton__loop_of(op->c);
    op->task.run = first;
    if (l == NULL || !baton__loop_post(l, &op->task)) {
        int rc = l == NULL && !atomic_load(&op->c->closed) ? BATON_ENOMEM : BATON_EINVAL;
        op_free(op);
        return rc;
    }
    return BATON_OK;
}

int baton__lock_start(struct baton_client *c, struct baton_lock *lk, const char *stats_key,
                      const struct baton_lock_opts *o, bool wait, baton_lock_cb cb, void *arg)
{
    enum op_kind kind = wait && o->max_wait_ms != BATON_NO_WAIT ? OP_ACQUIRE : OP_TRY;
    struct op *op = op_new(c, kind, cb, arg);
    if (op == NULL)
        return c == NULL || cb == NULL || c->quorum != NULL || atomic_load(&c->closed)
                   ? BATON_EINVAL
                   : BATON_ENOMEM;
    op->o = *o;
    op->lk = lk;
    op->stats_key = stats_key;
    return op_start(op, start_acquire);
}

static int start_new(struct baton_client *c, const char *key, const struct baton_lock_opts *opts,
                     bool wait, baton_lock_cb cb, void *arg)
{
    struct baton_lock_opts o;
    struct baton_lock *lk = NULL;
    if (key == NULL || *key == '\0' || strnlen(key, BATON_KEY_MAX + 1) > BATON_KEY_MAX ||
        baton__lock_opts(opts, &o) != BATON_OK)
        return BATON_EINVAL;
    if (c == NULL || cb == NULL)
        return BATON_EINVAL;
    int rc = baton__lock_new_user(c, key, &o, &lk);
    if (rc != BATON_OK)
        return rc;
    if ((rc = baton__lock_start(c, lk, lk->key, &o, wait, cb, arg)) != BATON_OK)
        baton_lock_free(lk);
    return rc;
}

int baton_lock_try_async(struct baton_client *c, const char *key,
                         const struct baton_lock_opts *opts, baton_lock_cb cb, void *arg)
{
    return start_new(c, key, opts, false, cb, arg);
}

int baton_lock_acquire_async(struct baton_client *c, const char *key,
                             const struct baton_lock_opts *opts, baton_lock_cb cb, void *arg)
{
    return start_new(c, key, opts, true, cb, arg);
}

int baton_lock_release_async(struct baton_lock *lk, baton_lock_cb cb, void *arg)
{
    if (lk == NULL || atomic_load(&lk->released))
        return BATON_EINVAL;
    struct op *op = op_new(lk->c, OP_RELEASE, cb, arg);
    if (op == NULL)
        return BATON_EINVAL;
    op->lk = lk;
    return op_start(op, start_release);
}

int baton_lock_extend_async(struct baton_lock *lk, int64_t ttl_ms, baton_lock_cb cb, void *arg)
{
    if (lk == NULL || ttl_ms < 0 || ttl_ms > INT64_C(366) * 86400 * 1000)
        return BATON_EINVAL;
    if (atomic_load(&lk->released) && !atomic_load(&lk->lost))
        return BATON_EINVAL; /* released: nothing to extend */
    struct op *op = op_new(lk->c, OP_EXTEND, cb, arg);
    if (op == NULL)
        return BATON_EINVAL;
    op->lk = lk;
    op->ttl_ms = ttl_ms != 0 ? ttl_ms : lk->ttl_ms;
    return op_start(op, start_extend);
}

/* baton_lock_acquire(), baton_sem_try() and _acquire(): the same
 * operation, its thread asleep until the callback. */
struct waiting {
    sem_t done;
    struct baton_lock *lk;
    int rc;
};

static void wait_done(struct baton_lock *lk, int rc, const char *why, void *arg)
{
    struct waiting *w = arg;
    (void)why; /* the client's errstr has it (fail_new) */
    w->lk = lk;
    w->rc = rc;
    sem_post(&w->done);
}

int baton__lock_start_wait(struct baton_client *c, struct baton_lock *lk, const char *stats_key,
                           const struct baton_lock_opts *o, bool wait, struct baton_lock **out)
{
    struct waiting w = {.rc = BATON_EINVAL};
    int rc = BATON_EINVAL;
    *out = NULL;
    if (baton__loop_here(atomic_load(&c->loop))) {
        baton__client_error(c, "a blocking call on the client's loop thread (inside a callback "
                               "of an asynchronous call): use the _async calls there");
        goto fail;
    }
    rc = BATON_ENOMEM;
    if (sem_init(&w.done, 0, 0) != 0)
        goto fail;
    rc = baton__lock_start(c, lk, stats_key, o, wait, wait_done, &w);
    if (rc != BATON_OK) {
        sem_destroy(&w.done);
        goto fail;
    }
    while (sem_wait(&w.done) != 0 && errno == EINTR)
        ;
    sem_destroy(&w.done);
    *out = w.lk; /* NULL on failure: the operation freed lk */
    return w.rc;
fail:
    baton_lock_free(lk);
    return rc;
}

bool baton_client_in_loop(const struct baton_client *c)
{
    return c != NULL && baton__loop_here(atomic_load(&c->loop));
}
