/* pools.h -- the leader's side of the fleet-wide limits (runlimits.h): for
 * each pool of jobs.yaml, its jobs (what a claim counts) and the ticks
 * that wait for one of its slots, first come, first served.
 *
 * The count is Redis's (a claim takes its slot atomically, runlimits.h); what
 * this part keeps is the order: a pool's waiting ticks are ordered by
 * their instant, then their job's name (the order every leader rebuilds
 * from the marks after a failover), one per job (its queue's head; the
 * ticks behind it wait behind it). A pool job's head is claimed only when
 * no earlier tick of the pool waits (pools_first), so that a slot freed
 * goes to the longest waiter; when the first waiter is dealt with, the
 * next is the one to wake. Entries of ticks decided otherwise meanwhile
 * (dropped by the catch-up policy, a pause, a lost leadership) are let go
 * as the coordinator finds them (the live() predicate). Pure: no Redis,
 * no clock, no log. */
#ifndef BATON_POOLS_H
#define BATON_POOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jobstate;

struct pool_waiter {
    struct jobstate *js;
    const char *job; /* borrowed from js's job */
    int64_t tick;
    int64_t since_ms; /* when it began to wait for this tick (the caller's clock) */
};

struct pool {
    const char *name;  /* borrowed from the first job of the pool */
    int limit;         /* the jobs' pool_limit */
    const char **jobs; /* the pool's jobs' names (borrowed from their jobs), njobs */
    size_t njobs;
    struct pool_waiter *w; /* in order; nw of them */
    size_t nw, wcap;
};

struct pools {
    struct pool *v;
    size_t n;
};

/* True while waiter w's tick still waits (the job's head, this node leads). */
typedef bool (*pools_live_fn)(const struct pool_waiter *w);

/* The pool named name, or NULL. */
struct pool *pools_find(const struct pools *p, const char *name);
/* Adds job (its pool and the pool's limit; borrowed while the pools are)
 * to its pool, made on first use. Returns false when out of memory. The
 * pools may move: find them (pools_find) once every job is added. */
bool pools_add(struct pools *p, const char *job, const char *pool, int limit);
/* Forgets every pool (before pools_add() of a new job set). */
void pools_clear(struct pools *p);

/* True when js's tick may be claimed now: no earlier live tick of pl waits
 * (stale entries ahead of it are let go). */
bool pools_first(struct pool *pl, const struct jobstate *js, const char *job, int64_t tick,
                 pools_live_fn live);
/* js's tick waits for a slot of pl since now_ms (its entry made, or moved
 * to tick; one of the same tick keeps its since). Returns false when out
 * of memory (it then waits unordered). */
bool pools_wait(struct pool *pl, struct jobstate *js, const char *job, int64_t tick,
                int64_t now_ms);
/* js waits no more. Returns true when it was the first waiter (the next
 * one is to be woken: pools_head()). */
bool pools_leave(struct pool *pl, const struct jobstate *js);
/* The first live waiter of pl (stale ones let go), or NULL. */
struct jobstate *pools_head(struct pool *pl, pools_live_fn live);

#endif
