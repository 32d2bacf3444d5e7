/* fleet.h -- the members of the group as the leader sees them, for the
 * dispatch (dispatch.h): their last heartbeats (members.h: alive and
 * accepting, capacity, labels) and the load Redis counts of each
 * (assign_loads), read every DISPATCH_FLEET_MS (or DISPATCH_ROOM_MS when
 * none had room), not once a tick; between two reads the offers made
 * count in their members' in_use, and each member's share of the ticks
 * (its credit, assign_choose) is carried from read to read. The view is
 * the dispatch's (d->view), dropped when leadership ends. */
#ifndef BATON_FLEET_H
#define BATON_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "assign.h"
#include "dispatch.h"
#include "jobs.h"
#include "log.h"

struct member;

struct fleet {
    struct member *m;
    size_t n;
    struct assign_node *v;
    cJSON **info;        /* each heartbeat, parsed (the labels point into it) */
    const char **labels; /* every node's, one block */
    int64_t read_at;     /* when read (CLOCK_MONOTONIC) */
};

/* Frees f (NULL: nothing). */
void fleet_free(struct fleet *f);

/* d's view of the members, read again when it is DISPATCH_FLEET_MS old,
 * or DISPATCH_ROOM_MS old when room is wanted and d->reread allows it
 * (once a tend, or a claimed tick). Returns: borrowed, valid until the
 * next call; NULL when Redis could not say. */
struct fleet *fleet_get(const struct rctx *x, struct dispatch *d, bool room);

/* job's labels (run_on) into *labels (borrowed from job); returns how
 * many. */
size_t fleet_job_labels(const struct job *job, const char *const **labels);

/* The member to offer job's tick to (avoid: the one that let it down, if
 * another fits), with room (the members read again once when none has);
 * *fp: the view chosen from. Returns its index in (*fp)->v,
 * ASSIGN_NO_ROOM (the tick waits for room; also when Redis could not say)
 * or ASSIGN_NO_MEMBER. */
long fleet_pick(const struct rctx *x, struct dispatch *d, const struct job *job, int64_t tick,
                const char *avoid, struct fleet **fp);

/* f->v[i] was offered job's tick (fleet_pick with avoid): its share and
 * in_use count it. */
void fleet_charge(struct fleet *f, const struct job *job, const char *avoid, long i);

#endif
