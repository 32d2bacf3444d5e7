/* waits.h -- on the leader, the ticks that wait for a slot of a
 * fleet-wide limit (runlimits.h). This part owns the pools (pools.h: each
 * pool's jobs and the order of its waiting ticks, first come, first
 * served), keeps that order from the claims' answers (a tick that found
 * its pool full waits in order; one dealt with lets the next look), wakes
 * a pool's first waiter when a slot may be free, rebuilds the pools after
 * a reload with the waiters' order kept, and lists every tick that waits
 * (one a claim answered full, or one behind an earlier tick of its pool)
 * for `baton status`. A job's own pool is its record's (jobstate.pool). */
#ifndef BATON_WAITS_H
#define BATON_WAITS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jobstate;
struct pool;
struct pools;
struct rctx;
struct tick_intent;

/* A job whose next tick waits, unclaimed, for a slot of a fleet-wide
 * limit (runlimits.h), or a claimed tick of a job run on members that
 * waits for one with room (dispatch.h). Strings borrowed: valid until the
 * next runner_set_jobs(). */
struct runner_wait {
    const char *job;
    bool room;        /* it waits for a member with room (dispatch.h); pool NULL, limit 0 */
    const char *pool; /* the pool it waits for; NULL: its max_running (or room) */
    int limit;        /* that pool's limit, or max_running */
    int64_t tick;     /* the tick that waits (Unix s) */
    int64_t since_ms; /* Unix ms: the first claim of it that found the limit reached */
    size_t queued;    /* the job's ticks waiting: this one and those behind it */
};

/* True when js's head (intent in, at now) must wait behind an earlier
 * tick of its pool: it then waits in order, looking again within
 * LIMITS_POLL_MS (js->hold_until). False when it may be claimed now. */
bool waits_behind(struct jobstate *js, const struct tick_intent *in, int64_t now);
/* The claim of js's head tick at was answered (dealt: the tick was dealt
 * with): keeps its place in its pool's order, or lets the next waiter
 * look. */
void waits_after_claim(const struct rctx *x, struct jobstate *js, int64_t at, bool dealt);
/* A slot of pl may be free: the first of its ticks that still waits gets
 * its turn now (jobtable_wake), unless it is me's (NULL: any). */
void waits_wake(const struct rctx *x, struct pool *pl, const struct jobstate *me);
/* js's ticks wait no more (its schedule is forgotten): when it was its
 * pool's first waiter, the next looks. */
void waits_leave(const struct rctx *x, struct jobstate *js);

/* Makes p the pools of the jobs of states (after a reload), pointing each
 * record at its pool: the ticks that waited keep their order. */
void waits_rebuild(struct pools *p, struct jobstate *states);

/* Every tick that waits for a limit, in the order a slot goes to them
 * (instant, then job name: pools.h). Returns: owned array (free()) of *n,
 * or NULL when none (or ENOMEM: *n 0). */
struct runner_wait *waits_list(const struct pools *pools, struct jobstate *states, size_t *n);
/* The first max of w[0..n) as runner_waiting_json() describes them.
 * Returns: owned array (cJSON_Delete), or NULL on ENOMEM. */
cJSON *waits_json(const struct runner_wait *w, size_t n, size_t max);

#endif
