/* jobtable.h -- the runner's jobs: one thin record per job of jobs.yaml,
 * which embeds the state each part owns (ticks.h, claimer.h, control.h,
 * finish.h), found by name in a hash, and waiting in a min-heap keyed by
 * the time it next has something to do, so that a timer costs
 * O(log jobs), never O(jobs). The jobs.yaml generations (job sets) are
 * kept while a record or a run uses them; a reload reconciles the records
 * with the new file: an unchanged job keeps its state, a new or changed
 * one starts afresh, a removed one goes (its runs finish under their old
 * definition). */
#ifndef BATON_JOBTABLE_H
#define BATON_JOBTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "claimer.h"
#include "control.h"
#include "finish.h"
#include "jobs.h"
#include "ticks.h"

struct pool;

#define JOBTABLE_HASH_SIZE 16384
#define HEAP_NONE          ((size_t)-1)

/* A jobs.yaml generation, kept while a record or a run uses it. */
struct jobset {
    struct jobs *jobs;
    int refs;
    struct jobset *next;
};

struct jobstate {
    const struct job *job; /* borrowed from set */
    struct jobset *set;
    int64_t hold_until; /* CLOCK_MONOTONIC: the queue's head waits until then (0: no hold) */
    struct ticks ticks;
    struct claim_state claim;
    struct control_job ctl;
    struct runs_job runs;
    struct pool *pool; /* its pool's (pools.h; the coordinator's), NULL: none */
    /* the table's own */
    size_t heap_pos;
    int64_t key;               /* when it next has something to do (CLOCK_MONOTONIC), 0: never */
    bool kept;                 /* jobtable_apply: matched by a job of the new file */
    bool rekey;                /* jobtable_apply: new or changed */
    struct jobstate *old_next; /* jobtable_apply: the list before it */
    struct jobstate *next;     /* every record, in the file's order */
    struct jobstate *hash_next;
};

struct jobtable {
    struct jobset *sets, *current;
    struct jobstate *states;
    struct jobstate *hash[JOBTABLE_HASH_SIZE];
    struct jobstate **heap;
    size_t nheap, heapcap;
};

/* The record of job name, or NULL. */
struct jobstate *jobtable_find(const struct jobtable *t, const char *name);
/* Sets js's key (0: nothing to do) and its place in the heap. */
void jobtable_set_key(struct jobtable *t, struct jobstate *js, int64_t key);
/* js looks at its head now: its hold is lifted, and (leading) its key is
 * now. */
void jobtable_wake(struct jobtable *t, struct jobstate *js, bool leading);
/* The record with the earliest key, or NULL. */
struct jobstate *jobtable_top(const struct jobtable *t);

/* A job set held (by a run), and let go. */
void jobtable_hold_set(struct jobset *s);
void jobtable_unref_set(struct jobtable *t, struct jobset *s);

/* Takes ownership of jobs and reconciles the records with it: an unchanged
 * job keeps its record; changed(ctx, js) is called for a new or changed
 * one (js->rekey set), gone(ctx, js) for one no longer in the file before
 * its record is freed (its parts' memory too: the caller has taken what it
 * must record). Returns 0 or BATON_ENOMEM (then jobs is freed). */
int jobtable_apply(struct jobtable *t, struct jobs *jobs,
                   void (*changed)(void *ctx, struct jobstate *js),
                   void (*gone)(void *ctx, struct jobstate *js), void *ctx);

/* Frees every record and set (t itself is the caller's). */
void jobtable_free(struct jobtable *t);

#endif
