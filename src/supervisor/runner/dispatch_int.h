/* dispatch_int.h -- what the files of the dispatch share (dispatch.c: the
 * offers; dispatch_tend.c: the leader's tend; dispatch_member.c: a node's
 * side): the log lines and records of a tick dispatched, and the steps of
 * an offer. Not for the rest of the runner: dispatch.h is. */
#ifndef BATON_DISPATCH_INT_H
#define BATON_DISPATCH_INT_H

#include "assign.h"
#include "dispatch.h"
#include "fleet.h"
#include "rtime.h"

#define DISPATCH_LIST_MAX                                                                          \
    1024 /* assignments due read per tend (one call; the rest at the next)                         \
          */

/* Why a tick dispatched is not run (records, not_started). */
extern const char dispatch_why_none[];
extern const char dispatch_why_moves[];

/* The log fields of job's tick and run id. Returns: owned (log_emit takes
 * it). */
cJSON *dispatch_log_fields(const char *job, int64_t tick, const char *run_id);
/* Logs a, an offer of job's tick, made (LE_ASSIGNED). */
void dispatch_log_assigned(const struct rctx *x, const char *job, const struct assign *a);

/* The tick of job in *state (assigned) is not run: recorded so (member:
 * the registration named in the record; why: static). */
void dispatch_not_started(const struct rctx *x, const struct job *job, const struct assign *a,
                          const char *member, enum tick_state *state, const char *why);
/* dispatch_not_started() of a node's own tick (run_on: all: a->node's to
 * run): the record names a->node, not this node. */
void dispatch_not_run_there(const struct rctx *x, const struct job *job, const struct assign *a,
                            const char *member, enum tick_state *state, const char *why);

/* a, an offer of job's tick, was made to f->v[i] (chosen by fleet_pick
 * with avoid): its share and in_use count it, and an offer to this node is
 * accepted at once (its loop would hear "offer" only after its turn of
 * claims, and the offers made to it meanwhile would look like load). */
void dispatch_offered(const struct rctx *x, struct dispatch *d, struct fleet *f,
                      const struct job *job, const char *avoid, long i, const struct assign *a);

/* A tick waits for a member with room: the next tend comes within
 * DISPATCH_WAIT_MS, or at once when a run ends (dispatch_ended). */
void dispatch_wait_room(struct dispatch *d);

/* The first offer of m, the claim's marker of its tick (node: the leader
 * that claimed it, whose registration the offer replaces), to a member;
 * *state: the tick's (claimed), assigned after. No member with room: the
 * marker waits (dispatch_wait_room); no member for it: the marker is
 * dropped and the tick recorded not started. Returns assign_offer()'s (or
 * assign_drop()'s) answer, 0 when it waits. */
int dispatch_offer_marker(const struct rctx *x, struct dispatch *d, const struct job *job,
                          const struct assign *m, enum tick_state *state);

/* run_on: all: v, a node's tick skipped by the offers' script
 * (ASSIGN_SKIPPED: forbid, its earlier run lived; replace, a newer tick
 * came before it took this one), is dropped and recorded skipped (or
 * superseded) against that node. Returns false when this node no longer
 * leads. */
bool dispatch_skipped(const struct rctx *x, const struct job *job, const struct assign *v);

/* Accepts the offer "<job> <field>" just made to this node, at once,
 * unless it is stopping (dispatch_member.c). */
void dispatch_accept_own(const struct rctx *x, struct dispatch *d, const char *job,
                         const char *field);

#endif
