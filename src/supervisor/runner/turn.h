/* turn.h -- one job's turn: what the coordinator (runner.c) does with a
 * job whose key (jobtable.h) has come. In one turn a job reads its mark
 * (marks.h), starts its due retries and its manual runs, holds its ticks
 * while it is paused (control.h), queues its ticks due (ticks.h; those the
 * catch-up policy does not run are recorded), and decides its queue head
 * after head: recorded, left to wait (for its instant, a run of ours, or
 * a slot of its pool in order: pools.h), or claimed and carried out
 * (claimer_head; waits.h); then it gets its next key.
 *
 * This part owns the budget of one turn of the loop: the jobs due are
 * served earliest first for at most TURN_BUDGET_MS (at least one job), so
 * that a catch-up of many jobs never holds the loop past the lease's
 * renewal. The parts it drives are the coordinator's (borrowed); it calls
 * only down (control, marks, claimer, window, runs, jobtable, records,
 * ticks, waits). */
#ifndef BATON_TURN_H
#define BATON_TURN_H

#include <stdbool.h>
#include <stdint.h>

#include "rctx.h"

struct claimer;
struct control;
struct jobstate;
struct marks;
struct runs;

struct turn {
    const struct rctx *x; /* the coordinator's; and so are the parts below */
    struct marks *marks;
    struct claimer *cl;
    struct control *ctl;
    struct runs *runs;
    int64_t end; /* the turn of the loop in progress yields at this time */
};

/* Gives every job whose key has come (earliest first) its turn, for at
 * most TURN_BUDGET_MS from now (at least one job), while leading. Each
 * gets a key in the future, or none, or a hold of now when the budget ran
 * out while it claimed: the loop ends, and the coordinator's timer
 * (never sooner than a millisecond) gives the rest their turn. */
void turn_jobs(struct turn *tn, int64_t now);

/* Forgets js's schedule (no longer leading, or its definition changed):
 * what is decided is recorded (skipped ticks, ticks a pause held, retries
 * let go: claimer_let_go), its place in its pool's order is let go (the
 * next waiter looks), requests and pauses stay in Redis for the next
 * leader to read; js gets no key. */
void turn_clear(struct turn *tn, struct jobstate *js);

#endif
