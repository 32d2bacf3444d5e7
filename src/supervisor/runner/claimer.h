/* claimer.h -- the runner's claims in Redis (claim.h): the claim of a
 * job's next tick and what its answer means (steps.h: start the run,
 * record, wait, retry), retries of ticks already ours, claims whose answer
 * was lost and how they are settled, a run of failed claims said once.
 * Per job: its claim in flight (its run id kept across retries, so that a
 * retry after a lost answer is known for the same claim). How far ahead
 * of its instant a tick is claimed is the window's (window.h); the marks
 * a leadership starts from are marks.h's. */
#ifndef BATON_CLAIMER_H
#define BATON_CLAIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "claim.h"
#include "rctx.h"
#include "run.h"
#include "ticks.h"
#include "window.h"

#define CLAIM_RETRY_MS 100 /* a claim that failed (Redis unreachable) is retried this often */

struct jobstate;
struct retry;
struct runs;

/* One job's claim. */
struct claim_state {
    int64_t tick;        /* the tick id was made for */
    uint64_t term;       /* ... and the term it was made in */
    char id[RUN_ID_MAX]; /* "": none */
    /* The claim of tick went unanswered (Redis stalled past redis_timeout),
     * or was undecided on a quorum: it may have been applied after all. */
    bool lost;
    int majority; /* of the masters it went to (1: one server) */
    /* The reason to record if that claim was to skip the tick (NULL: to
     * run it): a lost skip claim is recorded with it. */
    const char *skip_reason;
    /* Claims that failed in a row, and since when (CLOCK_MONOTONIC). */
    int64_t failures, failing_since;
    /* The last claim found a limit reached (runlimits.h): CLAIM_FULL's
     * reply.pool_full (pool) or not (max_running); the tick that waits
     * (0: none) and since when (Unix ms). */
    bool full, full_pool;
    int64_t full_tick, full_since_ms;
};

struct claimer {
    struct claim_window win; /* how far ahead a live tick is claimed (window.h) */
    size_t nlost;            /* jobs whose claim is lost */
    uint64_t seq;            /* of the run ids this process makes */
};

/* A new run id for attempt of tick ("<tick>-<term>-<attempt>-<seq>"). */
void claimer_run_id(const struct rctx *x, struct claimer *c, int64_t tick, int attempt, char *id,
                    size_t len);

/* True when now is past the lease's stop point: a claim that has just
 * succeeded is ours, but starting its run could overlap the next leader. */
bool claimer_late(const struct rctx *x);

/* Claims the head of js's queue as intent `in` says, and carries out the
 * step its answer means (steps.h). A head whose last claim's answer was
 * lost (claiming) is claimed again under the same run id, and this answer
 * is that claim's: ours to run, it runs, or (it aged meanwhile) the
 * catch-up policy records it, as for a held tick (sched_held); in->hold
 * (paused): held for the pause's end. Returns true when the head was dealt
 * with (popped), false when it waits (js->hold_until says until when, 0:
 * until a run ends). */
bool claimer_head(const struct rctx *x, struct claimer *c, struct runs *rs, struct jobstate *js,
                  const struct tick_intent *in);
/* Starts js's retries (and released held ticks) that are due at now:
 * registered like any run, without a claim (the tick is ours); a retry
 * that holds its failed run's registration (finish.h) holds its slot:
 * registered without the limits' check, that registration then
 * released. */
void claimer_retries(const struct rctx *x, struct claimer *c, struct runs *rs, struct jobstate *js,
                     int64_t now);

/* js's retry t is let go before its run starts (taken out of js's list;
 * freeing it is the caller's): a retry is forgotten (its tick was recorded
 * with the attempt before; its hook goes now; the registration it held
 * is released). A tick that a resume with
 * catch-up released (claimed, not yet run) is recorded not started: the
 * mark is past it, so no later leader would run it, as for every claimed
 * tick whose run does not start. id: the run id whose registration was
 * refused (the lease is no longer ours), or NULL: this node let it go
 * (it stopped leading, or the job changed). */
void claimer_let_go(const struct rctx *x, struct claimer *c, struct jobstate *js, struct retry *t,
                    const char *id);

/* Settles js's lost claim, once this node will not claim that tick again
 * (and only when a blocking call may start): if Redis applied it after all
 * (on a quorum: a majority did), the tick is recorded (not started, or
 * skipped); over a quorum, too few answers to tell decide at once: not
 * run here. */
void claimer_settle(const struct rctx *x, struct claimer *c, struct jobstate *js);
/* The end of js's run of failed claims (answered: a claim got an answer;
 * else the node stopped trying): one line with their number and time. */
void claimer_failures_end(const struct rctx *x, struct claim_state *cs, const char *job,
                          bool answered);
/* Sets cs->lost, keeping c->nlost. */
void claimer_set_lost(struct claimer *c, struct claim_state *cs, bool lost);

/* A concurrency that waits: the claim found runs of js alive (busy, the
 * claim's reply): wait for them, or (replace) have them stopped. ahead:
 * the claim was before the tick's instant at_ms (Unix ms: sched_start_ms). */
void claimer_wait_busy(const struct rctx *x, struct jobstate *js, struct claim_reply *busy,
                       const struct runs *rs, bool ahead, int64_t at_ms, int64_t now);

#endif
