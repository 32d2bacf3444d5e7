/* lock_int.h -- libbaton internals, the lock layer: locks and what is
 * built on them (waiters, renewals, stats, semaphores, multi-locks, once,
 * locks over a quorum, elections and leaders). Only client.c is above it.
 * base_int.h has the map of the layers. */
#ifndef BATON_LOCK_INT_H
#define BATON_LOCK_INT_H

#include "loop_int.h"

/* ---- lock.c (shared with renew.c and waiters.c) ---- */

struct baton_lock {
    struct baton_client *c;
    char *key;                 /* the user's key (one allocation with rkeys) */
#define BATON__RKEYS 5
    char *rkeys[BATON__RKEYS]; /* lock, fence counter, queue, queue expiries, queue leases */
    _Atomic bool ever_renewed; /* registered with the renewer at some time */
    char *token;               /* 48 hex chars [+ ":" + identity] (same allocation) */
    const char *release_chan;  /* elections: published to on release; else NULL */
    const char *release_self;  /* elections: our own successor channel, or NULL */
    /* BATON__S_EXTEND; semaphore permits: BATON__S_SEM_EXTEND */
    enum baton__script_id extend_script;
    /* Semaphore permits: the semaphore's limit, and the prep and read
     * functions below run sem.c's scripts; 0 for a lock. */
    int sem_limit;
    /* Semaphore permits: our entry in the waiters' queue as the last
     * acquire attempt wrote it ("" none); the acquire's, on the loop */
#define BATON__QENTRY_LEN (2 * BATON__I64_LEN + BATON__TOKEN_LEN + 8)
    char qentry[BATON__QENTRY_LEN];
    int64_t ttl_ms;
    int64_t renew_ms;
    baton_lost_fn on_lost;
    void *on_lost_arg;

    pthread_mutex_t mu; /* orders confirmations and the loss report */
    _Atomic uint64_t fence;
    _Atomic int64_t deadline_ns;
    _Atomic bool lost;
    _Atomic bool released;
    int64_t confirmed_sent_ns;    /* under mu: send time of the last confirmation */
    char runid[41];               /* under mu: the server that granted it ("" unknown) */
    char lost_why[BATON__ERRLEN]; /* under mu; written once, before lost is set */
    char errstr[BATON__ERRLEN];   /* owner thread's last failure */

    /* stats.c's: set while a grant is counted as held in class stats_class */
    _Atomic bool stats_held;
    int stats_class;

    /* renew.c's, under the renewer's mutex */
    bool renewing;
    int busy; /* the renewal thread is using it */
    int64_t next_renew_ns;
    struct baton_lock *rnext, *rprev; /* the renewer's list */
    struct baton_lock *bnext;         /* the renewer's current batch */
    bool batch_expired;               /* in the batch because its deadline passed */
    _Atomic bool free_pending;        /* freed by the renewal thread when not busy */
};
/* What baton_lock_free() does once no renewal uses lk any more. */
void baton__lock_destroy(struct baton_lock *lk);

/* Makes a lock object (no Redis I/O) on the Redis key base (its companions
 * are base + ":fence", ":q", ":qx", ":qt"). name is shown in messages; identity,
 * when not NULL, is appended to the token after a ':'. o must be
 * normalized. Returns 0 and *out, or BATON_ENOMEM/EIO. */
int baton__lock_new(struct baton_client *c, const char *base, const char *name,
                    const char *identity, const struct baton_lock_opts *o, struct baton_lock **out);
/* The lock object of the user's key (the Redis key prefix{key}); key
 * checked by the caller. Same contract. */
int baton__lock_new_user(struct baton_client *c, const char *key, const struct baton_lock_opts *o,
                         struct baton_lock **out);
/* lock_async.c: the asynchronous try (wait false) or acquire of lk, a
 * lock object made and not yet used (a semaphore's permit too), counted
 * in the stats under stats_key (which outlives the operation); o
 * normalized; not on a quorum. On failure lk is freed before cb gets
 * NULL. Returns 0 (cb will run on the loop thread), or EINVAL/ENOMEM
 * (lk not freed, cb never runs). */
int baton__lock_start(struct baton_client *c, struct baton_lock *lk, const char *stats_key,
                      const struct baton_lock_opts *o, bool wait, baton_lock_cb cb, void *arg);
/* The same, its thread asleep until the result: 0 and *out = lk, or the
 * error (lk freed, *out NULL). Refused on the loop thread (EINVAL). */
int baton__lock_start_wait(struct baton_client *c, struct baton_lock *lk, const char *stats_key,
                           const struct baton_lock_opts *o, bool wait, struct baton_lock **out);
/* Fills *o from in with defaults applied. Returns 0 or BATON_EINVAL. */
int baton__lock_opts(const struct baton_lock_opts *in, struct baton_lock_opts *o);
/* What an acquire attempt saw of the holder when it was refused. */
struct baton__holder {
    int64_t pttl_ms; /* remaining lease, -1 unknown */
    char value[320]; /* the lock's value (truncated) */
    uint64_t fence;  /* the last fence granted */
};

/* A lock script call and what its arguments point to, prepared by
 * baton__lock_prep_*() for either form (the blocking functions of lock.c,
 * lock_async.c), its result read by the matching function below, which
 * frees the reply. */
struct baton__lock_call {
    struct baton__call k;
    const char *keys[5];
    const char *args[7];
    char n1[BATON__I64_LEN], n2[BATON__I64_LEN], n3[BATON__I64_LEN];
    char err[BATON__ERRLEN]; /* the detail of best-effort calls (drop, cancel) */
};
/* The acquire script (lk->errstr gets the detail); wait: join (or stay
 * in) the queue; queued: lk may be in it already. */
void baton__lock_prep_acquire(struct baton_lock *lk, bool wait, bool queued, int64_t entry_ttl_ms,
                              struct baton__lock_call *lc);
/* The release script, also used to drop a grant we will not use. */
void baton__lock_prep_release(struct baton_lock *lk, struct baton__lock_call *lc, char *err,
                              size_t errlen);
/* The cancel script (leave the queue), detail in lc->err. */
void baton__lock_prep_cancel(struct baton_lock *lk, struct baton__lock_call *lc);
/* The extend script (lk->extend_script) to ttl_ms, due by deadline_ns and
 * by the grant's validity. */
void baton__lock_prep_extend(struct baton_lock *lk, int64_t ttl_ms, int64_t deadline_ns,
                             struct baton__lock_call *lc, char *err, size_t errlen);
/* The acquire's result rc: 0 granted (fence, deadline, server set);
 * BATON_ETAKEN with *h; BATON_ENOTDURABLE (with *drop: granted on the
 * master only, to be given back by a release call); or the error. */
int baton__lock_took(struct baton_lock *lk, struct baton__call *k, int rc, struct baton__holder *h,
                     bool *drop);
/* The release's result: 0 (released, counted), BATON_ELOST (not ours:
 * marked lost), BATON_EPROTO, or the error. */
int baton__lock_released(struct baton_lock *lk, struct baton__call *k, int rc);
/* The end of a best-effort call (k->rc set: a grant dropped, a queue left):
 * its reply, if any, freed; a permit's give-back first hands a slot it
 * granted to a waiter of this client over. */
void baton__lock_discard(struct baton_lock *lk, struct baton__call *k);

/* sem.c: the scripts of a permit (lk->sem_limit > 0), prepared and read
 * for the functions above, which hand a permit's calls over to these. */
void baton__sem_prep_acquire(struct baton_lock *lk, bool wait, bool queued, int64_t entry_ttl_ms,
                             struct baton__lock_call *lc);
/* As baton__lock_took(); *h gets the time until the earliest lease ends
 * (pttl_ms) and the last fence, its value "". */
int baton__sem_took(struct baton_lock *lk, struct baton__call *k, int rc, struct baton__holder *h,
                    bool *drop);
/* The release (id BATON__S_SEM_RELEASE) or cancel (BATON__S_SEM_CANCEL:
 * entry, the waiter's queue entry or NULL, is taken out of the queue) of
 * token on the semaphore's keys rkeys (holders, fence, q). */
void baton__sem_prep_give_back(struct baton_client *c, char *const *rkeys, enum baton__script_id id,
                               const char *token, const char *entry, struct baton__lock_call *lc,
                               char *err, size_t errlen);
/* Its result: 0 with *held (1 released or passed on, 0 not held), or an
 * error. A slot granted to a waiter of this client is handed to it here. */
int baton__sem_gave_back(struct baton_client *c, struct baton__call *k, int rc, long long *held);
/* The extension's result: as baton__lock_extend_call(); *drop: a failover
 * answered, the grant to be given back by a release call. */
int baton__lock_extended(struct baton_lock *lk, struct baton__call *k, int rc, int64_t ttl_ms,
                         bool renewal, char *err, size_t errlen, bool *drop);
/* Marks lk lost with a reason (first reason wins) and calls on_lost once.
 * Safe from any thread. */
void baton__lock_mark_lost(struct baton_lock *lk, const char *why);
/* Records a confirmed grant or extension sent at sent_ns. */
void baton__lock_confirm(struct baton_lock *lk, int64_t sent_ns, int64_t ttl_ms);
/* Records the server that granted lk. */
void baton__lock_granted_by(struct baton_lock *lk, const char *runid);
/* One extension of lk to ttl_ms by deadline_ns, by its extend script.
 * Returns 0 (confirmed: deadline moved); BATON_ELOST (marked lost: not ours
 * any more, or answered by another server than the one that granted it,
 * without min_replicas: then it is released there); BATON_ENOTDURABLE
 * (not acknowledged: deadline kept); or an error. Detail in err. */
int baton__lock_extend_call(struct baton_lock *lk, int64_t ttl_ms, int64_t deadline_ns,
                            bool renewal, char *err, size_t errlen);

/* ---- waiters.c ---- */

struct baton__waiter {
    const char *key;
    const char *token;
    bool woken;
    /* Wakes it: called under the waiters' lock, from the subscriber (or a
     * releasing) thread; it only posts a task to the loop. */
    void (*wake)(struct baton__waiter *w);
    struct baton__waiter *next, *prev;
    /* A semaphore grant handed over by baton__waiters_grant() (a release
     * in this process: grant_sent_ns is its send time) or by the
     * subscriber (a grant published by a release elsewhere: grant_sent_ns
     * 0). The fields are written, under the waiters' lock, before granted
     * is set; a second grant of the token (after the first ran out) may
     * rewrite them, and sem.c only trusts a fence above what it last saw. */
    _Atomic bool granted;
    uint64_t grant_fence;
    int64_t grant_sent_ns;
};

/* Registers w (w->wake set) as a waiter of w->key. Returns 0;
 * BATON_EQUEUEFULL when the process already has max_waiters_per_key
 * waiters for it. Starts the subscriber on first use (it wakes every
 * waiter once subscribed). */
int baton__waiters_enter(struct baton_client *c, struct baton__waiter *w);
void baton__waiters_leave(struct baton_client *c, struct baton__waiter *w);
/* Whether w was woken since the last look (the flag is cleared). */
bool baton__waiters_take_wake(struct baton_client *c, struct baton__waiter *w);
/* Hands a grant to this client's waiter of token (a semaphore release
 * that gave its slot to a waiter of the same process) and wakes it: fence,
 * and the send time of the request that granted it (not 0). Returns false when no
 * such waiter waits any more (it then finds the grant in Redis, or its
 * cancel passes it on). */
bool baton__waiters_grant(struct baton_client *c, const char *token, uint64_t fence,
                          int64_t sent_ns);
/* The prefix of the channels on which waiters are woken (the scripts
 * append a client id). */
const char *baton__waiters_channel(const struct baton_client *c);
void baton__waiters_stop(struct baton_client *c);

/* ---- renew.c ---- */

int baton__renew_add(struct baton_lock *lk, int64_t renew_ms);
/* Stops renewing lk; waits for a renewal of lk in flight to finish. On the
 * loop thread (which that renewal may be waiting for) it does not wait:
 * with free_after, lk is then left for the renewal thread to free once its
 * renewal is done, and true is returned. */
bool baton__renew_remove(struct baton_lock *lk, bool free_after);
/* Stops renewing lk without waiting (again: a no-op). Returns true while a
 * renewal of lk is still in flight. */
bool baton__renew_unlink(struct baton_lock *lk);
void baton__renew_stop(struct baton_client *c);

/* ---- stats.c ---- */

/* Returns: owned; free with baton__stats_free(). NULL on ENOMEM. */
struct baton__stats *baton__stats_new(void);
void baton__stats_free(struct baton__stats *st);
/* The hooks. key is the user's key (its class is the part before the first
 * ':'). A grant marks lk held; released/lost/dropped unmark it, and the
 * first of them to do so counts (a lock is held at most once). */
void baton__stats_granted(struct baton_lock *lk, const char *key, int64_t wait_ns, bool contended);
/* An acquire found key held: contention; timed_out: it then gave up. */
void baton__stats_refused(struct baton_client *c, const char *key, bool timed_out);
void baton__stats_released(struct baton_lock *lk);
void baton__stats_lost(struct baton_lock *lk);
/* Freed while still counted as held (never released). */
void baton__stats_dropped(struct baton_lock *lk);

/* ---- quorum_lock.c ---- */

/* The lock calls over the quorum, with lock.c's contracts. An election's
 * lock (extend_script BATON__S_QUORUM_EXTEND) is taken again, on renewal,
 * where it is free and the master's counter is not above its term. */
int baton__quorum_try(struct baton_lock *lk, struct baton__holder *h);
int baton__quorum_acquire(struct baton_lock *lk, const struct baton_lock_opts *o);
int baton__quorum_extend(struct baton_lock *lk, int64_t ttl_ms, int64_t deadline_ns,
                         bool renewal, char *err, size_t errlen);
int baton__quorum_release(struct baton_lock *lk);

#endif /* BATON_LOCK_INT_H */
