/* window.h -- the claim-ahead window: how long before its instant a live
 * tick is claimed and its run prepared (run.h: the shim started, waiting
 * for its go), so that at the instant only the go remains.
 *
 * It is at least PRECLAIM_MS; it doubles, up to PRECLAIM_MAX_MS, when a
 * live tick of an instant some of whose runs were prepared in time is
 * claimed after that instant (the batch outgrew the window; logged
 * claim_ahead), and shrinks back by an eighth of its excess at each
 * instant whose preparations ended with more than half of it to spare.
 * Late claims in the first PRECLAIM_SETTLE_MS of a leadership (its first
 * ticks are claimed as the marks are read) do not grow it. The claimer
 * (claimer.h) holds it and tells it what it prepares; the runs' go
 * (runs_go) tells it what went. */
#ifndef BATON_WINDOW_H
#define BATON_WINDOW_H

#include <stdint.h>

#include "rctx.h"

#define PRECLAIM_MS        25
#define PRECLAIM_MAX_MS    250
#define PRECLAIM_SETTLE_MS 1000

struct jobstate;

struct claim_window {
    /* Its length now (ms); the instant (Unix ms, a tick's start:
     * sched_start_ms; 0: none) whose runs were prepared last, and when the
     * last of them was (wall ms); the instants whose late claim grew it and
     * whose go was weighed for a shrink, last; when this leadership began
     * (CLOCK_MONOTONIC). */
    int64_t ahead_ms, prep_at, prep_done_ms, grown_at, went_at, lead_since;
};

/* How long before its instant js's next live tick is claimed (ms): 0 when
 * it cannot be decided ahead (a run of a forbid or replace job is alive
 * here: whether the tick runs or is skipped depends on when that ends). */
int64_t window_ahead_ms(const struct claim_window *c, const struct jobstate *js);

/* The first claim of js's live tick of instant at (Unix ms) came late_ms
 * after it: the window may grow (logged claim_ahead). */
void window_late(const struct rctx *x, struct claim_window *c, const struct jobstate *js,
                 int64_t at, int64_t late_ms);
/* A leadership begins now (its first late claims do not grow the
 * window). */
void window_lead(struct claim_window *c);
/* A run of instant at (Unix ms) was prepared, now. */
void window_prepared(struct claim_window *c, int64_t at);
/* The runs of instant at (Unix ms) went (the window may shrink). */
void window_went(struct claim_window *c, int64_t at);

#endif
