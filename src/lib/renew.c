/* renew.c -- auto-renewal: one thread per client renews every registered
 * lock every renew_ms, whatever the lock's owner is doing.
 *
 * Each renewal is the owner-checked extend script, so a late renewal can
 * never extend a lock that someone else now holds. A lock is reported lost
 * (flag + on_lost) when a renewal finds another owner, and also when its
 * validity deadline passes without a confirmed renewal, whether or not Redis
 * can be reached: the thread wakes at each deadline, and every Redis call it
 * makes is bounded by the earliest deadline in play.
 *
 * Its calls run on the client's loop like every other (call.c): the thread
 * sleeps while the loop does the I/O. A lock freed on the loop thread (in
 * a callback) while its renewal is in flight cannot wait for it, as that
 * renewal waits for the loop: it is left for this thread to free when the
 * renewal is done, and its loss is no longer reported. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_int.h"

/* After a failed renewal, try again this soon (bounded by renew_ms/4). */
#define RETRY_MS 200

struct baton__renewer {
    struct baton_client *c;
    pthread_mutex_t mu;     /* guards the list, the locks' renew fields, stop */
    pthread_cond_t cv;      /* work changed */
    pthread_cond_t idle_cv; /* a lock stopped being busy */
    struct baton_lock *head;
    bool stop;
    pthread_t thread;
};

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Renews one lock. Returns the time of its next attempt. */
static int64_t renew_one(struct baton__renewer *rn, struct baton_lock *lk, int64_t bound_ns)
{
    struct baton_client *c = rn->c;
    char err[BATON__ERRLEN];
    int64_t retry = baton__now_ns() + min64(RETRY_MS, lk->renew_ms / 4 + 1) * 1000000;
    int rc = baton__lock_extend_call(lk, lk->ttl_ms, min64(baton__client_deadline(c), bound_ns),
                                     true, err, sizeof err);
    if (rc == BATON_OK) {
        pthread_mutex_lock(&lk->mu);
        int64_t sent = lk->confirmed_sent_ns;
        pthread_mutex_unlock(&lk->mu);
        retry = sent + lk->renew_ms * 1000000;
    }
    return retry; /* ELOST: marked lost, skipped from now on */
}

/* Collects the locks due for renewal or past their deadline into a batch
 * (marking them busy). Returns the batch; *wake gets the next event time
 * when the batch is empty. Called with rn->mu held. */
static struct baton_lock *collect(struct baton__renewer *rn, int64_t now, int64_t *wake,
                                  int64_t *bound)
{
    struct baton_lock *batch = NULL;
    *wake = INT64_MAX;
    *bound = INT64_MAX;
    for (struct baton_lock *lk = rn->head; lk != NULL; lk = lk->rnext) {
        if (atomic_load(&lk->lost))
            continue;
        int64_t dl = atomic_load(&lk->deadline_ns);
        *bound = min64(*bound, dl);
        if (now >= dl || now >= lk->next_renew_ns) {
            lk->batch_expired = now >= dl;
            lk->busy++;
            lk->bnext = batch;
            batch = lk;
        } else {
            *wake = min64(*wake, min64(lk->next_renew_ns, dl));
        }
    }
    return batch;
}

static void *renewer_main(void *arg)
{
    struct baton__renewer *rn = arg;
    pthread_mutex_lock(&rn->mu);
    while (!rn->stop) {
        int64_t wake, bound;
        struct baton_lock *batch = collect(rn, baton__now_ns(), &wake, &bound);
        if (batch == NULL) {
            struct timespec ts;
            baton__timespec_at(wake == INT64_MAX ? baton__now_ns() + INT64_C(3600000000000) : wake,
                               &ts);
            pthread_cond_timedwait(&rn->cv, &rn->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&rn->mu);
        for (struct baton_lock *lk = batch; lk != NULL; lk = lk->bnext) {
            if (lk->batch_expired) {
                char why[BATON__ERRLEN];
                baton__set_error(why, sizeof why,
                                 "lock %s was lost: its validity deadline passed without a "
                                 "confirmed renewal",
                                 lk->key);
                baton__lock_mark_lost(lk, why);
                continue;
            }
            int64_t next = renew_one(rn, lk, bound);
            pthread_mutex_lock(&rn->mu);
            lk->next_renew_ns = next;
            pthread_mutex_unlock(&rn->mu);
        }
        pthread_mutex_lock(&rn->mu);
        struct baton_lock *dead = NULL;
        for (struct baton_lock *lk = batch; lk != NULL;) {
            struct baton_lock *next = lk->bnext;
            lk->bnext = NULL;
            if (--lk->busy == 0 && atomic_load(&lk->free_pending)) {
                lk->bnext = dead; /* freed on the loop thread while we used it */
                dead = lk;
            }
            lk = next;
        }
        pthread_cond_broadcast(&rn->idle_cv);
        pthread_mutex_unlock(&rn->mu);
        while (dead != NULL) {
            struct baton_lock *next = dead->bnext;
            baton__lock_destroy(dead);
            dead = next;
        }
        pthread_mutex_lock(&rn->mu);
    }
    pthread_mutex_unlock(&rn->mu);
    return NULL;
}

static struct baton__renewer *get_renewer(struct baton_client *c)
{
    pthread_mutex_lock(&c->mu);
    struct baton__renewer *rn = c->renewer;
    if (rn != NULL || atomic_load(&c->closed))
        goto out;
    if ((rn = calloc(1, sizeof *rn)) == NULL)
        goto out;
    rn->c = c;
    if (pthread_mutex_init(&rn->mu, NULL) != 0)
        goto out_free;
    if (baton__cond_init_monotonic(&rn->cv) != BATON_OK)
        goto out_mutex;
    if (pthread_cond_init(&rn->idle_cv, NULL) != 0)
        goto out_cv;
    if (pthread_create(&rn->thread, NULL, renewer_main, rn) != 0)
        goto out_idle;
    c->renewer = rn;
    goto out;
out_idle:
    pthread_cond_destroy(&rn->idle_cv);
out_cv:
    pthread_cond_destroy(&rn->cv);
out_mutex:
    pthread_mutex_destroy(&rn->mu);
out_free:
    free(rn);
    rn = NULL;
out:
    pthread_mutex_unlock(&c->mu);
    return rn;
}

int baton__renew_add(struct baton_lock *lk, int64_t renew_ms)
{
    if (atomic_load(&lk->c->closed))
        return BATON_EINVAL;
    struct baton__renewer *rn = get_renewer(lk->c);
    if (rn == NULL)
        return atomic_load(&lk->c->closed) ? BATON_EINVAL : BATON_ENOMEM;
    pthread_mutex_lock(&lk->mu);
    int64_t base = lk->confirmed_sent_ns;
    pthread_mutex_unlock(&lk->mu);

    atomic_store(&lk->ever_renewed, true);
    pthread_mutex_lock(&rn->mu);
    lk->renew_ms = renew_ms;
    lk->next_renew_ns = base + renew_ms * 1000000;
    if (!lk->renewing) {
        lk->renewing = true;
        lk->rprev = NULL;
        lk->rnext = rn->head;
        if (rn->head != NULL)
            rn->head->rprev = lk;
        rn->head = lk;
    }
    pthread_cond_signal(&rn->cv);
    pthread_mutex_unlock(&rn->mu);
    return BATON_OK;
}

static struct baton__renewer *renewer_of(struct baton_lock *lk)
{
    if (!atomic_load(&lk->ever_renewed))
        return NULL;
    pthread_mutex_lock(&lk->c->mu);
    struct baton__renewer *rn = lk->c->renewer;
    pthread_mutex_unlock(&lk->c->mu);
    return rn;
}

/* Takes lk out of the list. Under rn->mu. */
static void unlink_locked(struct baton__renewer *rn, struct baton_lock *lk)
{
    if (!lk->renewing)
        return;
    if (lk->rprev != NULL)
        lk->rprev->rnext = lk->rnext;
    else
        rn->head = lk->rnext;
    if (lk->rnext != NULL)
        lk->rnext->rprev = lk->rprev;
    lk->renewing = false;
    lk->rnext = lk->rprev = NULL;
}

bool baton__renew_remove(struct baton_lock *lk, bool free_after)
{
    struct baton__renewer *rn = renewer_of(lk);
    if (rn == NULL)
        return false;
    bool on_loop = baton__loop_here(atomic_load(&lk->c->loop));
    bool deferred = false;
    pthread_mutex_lock(&rn->mu);
    unlink_locked(rn, lk);
    if (on_loop && free_after && lk->busy > 0) {
        atomic_store(&lk->free_pending, true); /* renewer_main frees it */
        deferred = true;
    }
    while (!on_loop && lk->busy > 0)
        pthread_cond_wait(&rn->idle_cv, &rn->mu);
    pthread_mutex_unlock(&rn->mu);
    return deferred;
}

bool baton__renew_unlink(struct baton_lock *lk)
{
    struct baton__renewer *rn = renewer_of(lk);
    if (rn == NULL)
        return false;
    pthread_mutex_lock(&rn->mu);
    unlink_locked(rn, lk);
    bool busy = lk->busy > 0;
    pthread_mutex_unlock(&rn->mu);
    return busy;
}

void baton__renew_stop(struct baton_client *c)
{
    struct baton__renewer *rn = c->renewer;
    if (rn == NULL)
        return;
    pthread_mutex_lock(&rn->mu);
    rn->stop = true;
    pthread_cond_signal(&rn->cv);
    pthread_mutex_unlock(&rn->mu);
    pthread_join(rn->thread, NULL);
    pthread_cond_destroy(&rn->idle_cv);
    pthread_cond_destroy(&rn->cv);
    pthread_mutex_destroy(&rn->mu);
    free(rn);
    c->renewer = NULL;
}
