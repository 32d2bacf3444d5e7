/* finish.h -- what follows the end of a run of this node (runs.h): it is
 * retried when it failed and its job allows (not a manual run: whoever
 * asked sees its outcome), held for the pause's end when a pause
 * cancelled it before its instant, handed back to the leader (a run
 * dispatched here whose job was paused before its go), or recorded
 * (records.h); then it is taken out of the runs and its job is woken.
 *
 * Per job, this part owns how many of its runs are alive here and the
 * runs of ticks already ours that wait to start without a new claim: the
 * retries, and the ticks a pause held back after their claim (in tick
 * order), which the claimer (claimer_retries) and a pause's end
 * (control.h) take from here. */
#ifndef BATON_FINISH_H
#define BATON_FINISH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "rctx.h"
#include "run.h"
#include "runs.h"
#include "ticklife.h"

/* A run of a tick of ours to start without a new claim: a retry, or a
 * tick held by a pause that came after its claim (its state held: its
 * prepared run was cancelled before the instant; it waits for the pause's
 * end). */
struct retry {
    int64_t tick;
    enum tick_state state; /* retrying; held; claimed once a pause's end released it */
    int attempt;
    int64_t at_ns; /* when it is due (CLOCK_MONOTONIC); not while held */
    enum run_trigger trigger;
    /* A retry of a failed run of this leader: that run's registration,
     * kept (refreshed with the lease) through the backoff, so that a
     * forbid job's next tick finds the job busy and max_running counts it,
     * as a fleet run's retry is held (assign.h); released once the retry
     * is registered, or let go. "": none. */
    char member[RUN_ID_MAX + 160];
    struct retry *next;
};

/* One job's. */
struct runs_job {
    int running;           /* its runs alive here (counted by runs_start) */
    struct retry *retries; /* retries, and held ticks in tick order */
};

/* A child exited: if it is one of the runs, it is reaped, retried when it
 * failed and its job allows, recorded (held, when a pause cancelled it
 * before its instant), and taken out; its job is woken. Returns false
 * when pgid is not a run. */
bool finish_reaped(const struct rctx *x, struct runs *rs, pid_t pgid, int wstatus);

/* Queues a retry (at at_ns), or a held tick (in tick order among them),
 * its tick in state (held for finish_hold); false when out of memory. */
bool finish_add_retry(struct runs_job *rj, int64_t tick, int attempt, int64_t at_ns,
                      enum run_trigger trigger, enum tick_state state);
bool finish_hold(struct runs_job *rj, int64_t tick, enum tick_state state);
/* The next held tick (in tick order) and its state, taken out (false:
 * none). */
bool finish_take_held(struct runs_job *rj, int64_t *tick, enum tick_state *state);

#endif
