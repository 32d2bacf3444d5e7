/* claimer.h -- the runner's claims in Redis (claim.h): the high-water
 * marks a leadership starts from, the claim of a job's next tick and what
 * its answer means (steps.h: start the run, record, wait, retry), retries
 * of ticks already ours, claims whose answer was lost and how they are
 * settled, a run of failed claims said once, and the claim-ahead window.
 * Per job: its claim in flight (its run id kept across retries, so that a
 * retry after a lost answer is known for the same claim).
 *
 * The claim-ahead window: a live tick is claimed and its run prepared at
 * least PRECLAIM_MS before its instant; the window doubles, up to
 * PRECLAIM_MAX_MS, when a live tick of an instant some of whose runs were
 * prepared in time is claimed after that instant (the batch outgrew the
 * window; logged claim_ahead), and shrinks back by an eighth of its excess
 * at each instant whose preparations ended with more than half of it to
 * spare. Late claims in the first PRECLAIM_SETTLE_MS of a leadership (its
 * first ticks are claimed as the marks are read) do not grow it. */
#ifndef BATON_CLAIMER_H
#define BATON_CLAIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "claim.h"
#include "rctx.h"
#include "run.h"
#include "ticks.h"

#define PRECLAIM_MS        25
#define PRECLAIM_MAX_MS    250
#define PRECLAIM_SETTLE_MS 1000
#define CLAIM_RETRY_MS     100 /* a claim that failed (Redis unreachable) is retried this often */

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
    /* The window: its length now (ms); the instant (Unix ms, a tick's
     * start: sched_start_ms; 0: none) whose runs were prepared last, and when the last of them was (wall ms);
     * the instants whose late claim grew it and whose go was weighed for a
     * shrink, last; when this leadership began (CLOCK_MONOTONIC). */
    int64_t ahead_ms, prep_at, prep_done_ms, grown_at, went_at, lead_since;
    size_t nlost; /* jobs whose claim is lost */
    uint64_t seq; /* of the run ids this process makes */
    /* This term's grant came from a server that may lack the last writes
     * of the term before (baton_election_server_changed): no catch-up from
     * before the term (ticks_take_mark); said once. */
    bool no_catchup, no_catchup_logged;
    int64_t lead_wall_s; /* when this leadership began (Unix s) */
};

/* A new run id for attempt of tick ("<tick>-<term>-<attempt>-<seq>"). */
void claimer_run_id(const struct rctx *x, struct claimer *c, int64_t tick, int attempt, char *id,
                    size_t len);

/* True when now is past the lease's stop point: a claim that has just
 * succeeded is ours, but starting its run could overlap the next leader. */
bool claimer_late(const struct rctx *x);

/* How long before its instant js's next live tick is claimed (ms): 0 when
 * it cannot be decided ahead (a run of a forbid or replace job is alive
 * here: whether the tick runs or is skipped depends on when that ends). */
int64_t claimer_ahead_ms(const struct claimer *c, const struct jobstate *js);

/* Reads the marks of the n jobs of js[] and applies them (ticks.h), writes
 * the marks Redis had none of. Returns false when they could not be read. */
bool claimer_read_marks(const struct rctx *x, struct claimer *c, struct jobstate **js, size_t n);
/* Writes the marks of those of js[0..n) that Redis had none of. */
void claimer_write_marks(const struct rctx *x, struct jobstate **js, size_t n);

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
 * registered like any run, without a claim (the tick is ours). */
void claimer_retries(const struct rctx *x, struct claimer *c, struct runs *rs, struct jobstate *js,
                     int64_t now);

/* js's retry t is let go before its run starts (taken out of js's list;
 * freeing it is the caller's): a retry is forgotten (its tick was recorded
 * with the attempt before; its hook goes now). A tick that a resume with
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

/* The runs of instant at (Unix ms) went (the window may shrink). */
void claimer_window_went(struct claimer *c, int64_t at);

#endif
