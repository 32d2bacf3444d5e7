/* steps.h -- one table for what a claim's answer means: the next step of
 * a tick's claim, and of a manual run's (trigger.h claims a request the way
 * claim.h claims a tick), and the move it is in the tick's life
 * (ticklife.h). The claimer (claimer.c: a tick's claim) and control.c (a
 * manual run's) look the step up here and carry it out; no other code
 * decides on a claim's result.
 *
 *   result            a tick                      a manual run     the tick
 *   ok, ours          start its run               start its run    won
 *   not_durable       record it not started       leave it (1)     void
 *   skipped, ours_sk. record it skipped           drop it (2)      won_skip
 *   ours_expired      record it not started       drop it          void
 *   busy              wait for the runs alive     wait for them    busy
 *   taken             drop it (another's)         drop it (3)      taken
 *   not_leader        retry soon                  retry soon       refused
 *   error             retry soon (in order)       retry soon       no_answer
 *   full              wait for a slot (runlimits.h)  wait for them    full
 *
 * (1) recovered once its registration expires; (2) not answered; (3) done,
 * or another attempt's.
 *
 * A claim to start that came after the lease's stop point (the leader was
 * stalled) does not start: a tick's is recorded not started, a manual
 * run's request is left claimed for the next leader (claimer_late()). */
#ifndef BATON_STEPS_H
#define BATON_STEPS_H

#include <stdbool.h>

#include "claim.h"
#include "ticklife.h"

enum claim_step {
    STEP_START,       /* the tick or request is ours: start its run */
    STEP_NOT_STARTED, /* a tick: ours, but it must not run: record it not started */
    STEP_SKIPPED,     /* a tick: claimed as skipped: record it */
    STEP_LEAVE,       /* a request: claimed, not to run here: leave it for recovery */
    STEP_DROP,        /* decided elsewhere: nothing to do here */
    STEP_WAIT,        /* runs of the job alive: wait for them (or replace them) */
    STEP_RETRY,       /* no answer, or not the leader: try again soon */
    STEP_FULL,        /* a limit is reached (runlimits.h): wait for a slot, unclaimed */
};

/* The reasons recorded (a tick not started) or logged (a request left). */
#define STEP_WHY_NOT_DURABLE                                                                       \
    "claimed, but not acknowledged by min_replicas replicas in time: not run (after a failover "   \
    "another leader could run it too)"
#define STEP_WHY_EXPIRED                                                                           \
    "claimed by a request whose answer was lost (Redis stalled) until its registration "           \
    "expired: not started"
#define STEP_WHY_LEFT "claimed, but not acknowledged by min_replicas replicas in time"

/* X(result, a tick's step, a manual run's step, dealt with, a tick's reason, a request's,
 *   the tick's move) */
#define CLAIM_STEPS(X)                                                                             \
    X(CLAIM_OK, STEP_START, STEP_START, true, NULL, NULL, WON)                                     \
    X(CLAIM_OURS, STEP_START, STEP_START, true, NULL, NULL, WON)                                   \
    X(CLAIM_NOT_DURABLE, STEP_NOT_STARTED, STEP_LEAVE, true, STEP_WHY_NOT_DURABLE, STEP_WHY_LEFT,  \
      VOID)                                                                                        \
    X(CLAIM_SKIPPED, STEP_SKIPPED, STEP_DROP, true, NULL, NULL, WON_SKIP)                          \
    X(CLAIM_OURS_SKIPPED, STEP_SKIPPED, STEP_DROP, true, NULL, NULL, WON_SKIP)                     \
    X(CLAIM_OURS_EXPIRED, STEP_NOT_STARTED, STEP_DROP, true, STEP_WHY_EXPIRED, NULL, VOID)         \
    X(CLAIM_BUSY, STEP_WAIT, STEP_WAIT, false, NULL, NULL, BUSY)                                   \
    X(CLAIM_TAKEN, STEP_DROP, STEP_DROP, true, NULL, NULL, TAKEN)                                  \
    X(CLAIM_NOT_LEADER, STEP_RETRY, STEP_RETRY, false, NULL, NULL, REFUSED)                        \
    X(CLAIM_ERROR, STEP_RETRY, STEP_RETRY, false, NULL, NULL, NO_ANSWER)                           \
    X(CLAIM_FULL, STEP_FULL, STEP_WAIT, false, NULL, NULL, FULL)

/* The step after a claim answered res: of a tick (manual false) or of a
 * manual run's request (manual true). */
struct claim_next {
    enum claim_step step;
    bool done;            /* the tick or request is dealt with: out of its queue */
    const char *reason;   /* STEP_NOT_STARTED: to record; STEP_LEAVE: to log (static) */
    enum tick_event tick; /* a tick's: its move (ticklife.h) */
};
struct claim_next claim_step_of(enum claim_result res, bool manual);

/* The step's name ("start"...). Static. */
const char *claim_step_name(enum claim_step s);

#endif
