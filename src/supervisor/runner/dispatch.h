/* dispatch.h -- the runner's part of run_on other than leader (assign.h's
 * protocol): on the leader, a claimed tick offered to a member and what
 * is outstanding watched; on every node, the leader included, the offers
 * made to it accepted and their runs started (runs.h).
 *
 * The leader (dispatch_offer, dispatch_tend): a tick of a job with run_on
 * any or {labels} that it has claimed (the claim wrote its marker in the
 * same script: claim.h, assign.h) is offered to a live member chosen
 * from the heartbeats (members.h: alive and accepting, carrying the job's
 * labels) with room by the loads Redis counts (assign_loads) and the
 * offers made since, in proportion to capacity (assign_choose); the
 * members are read every DISPATCH_FLEET_MS, or DISPATCH_ROOM_MS when none
 * had room, not once a tick. No member with room: the marker waits in
 * Redis (its registration held, so that forbid and max_running count it)
 * and the ticks that wait are offered oldest first, by the tend, every
 * DISPATCH_WAIT_MS and whenever a run ends; a tick claimed meanwhile
 * waits behind them. An offer made to the leader itself is accepted at
 * once. Every DISPATCH_TEND_MS it reads what is outstanding of every
 * job, in one call (assign_list_all), its own and the last leader's alike
 * (a new leader adopts them: it never dispatches a claimed tick again):
 *   - a marker (claimed, never offered: the leader died or stopped between
 *     the claim and the offer, or the offer's answer was lost) is offered,
 *     unless the job is paused (it waits for the pause's end);
 *   - an offer not accepted by its deadline is offered again, to another
 *     member when there is one (logged reassigned), when one has room;
 *   - a run accepted whose registration is gone before it started (its
 *     member died, or was cut off) is offered again elsewhere once
 *     (reassigned), and the record of the member that runs it names the
 *     one that died; a second member lost so: recorded not started,
 *     naming both;
 *   - a run started whose registration is gone (its shim killed it before
 *     the registration could pass) is recorded `lost` with its node
 *     (logged lost), then offered again as the next attempt while the
 *     job's retries allow;
 *   - a run that failed, handed back by its member as a retry due (it
 *     recorded the failure), is offered as the next attempt to another
 *     member when one fits, once one has room (none carries the labels:
 *     the retry is dropped); until it is due, its hold (the job busy
 *     through the backoff: assign_end) is kept alive (assign_hold);
 *   - a tick offered DISPATCH_MOVES_MAX times without being run, or for
 *     which no live member carries the labels, is recorded failed_to_start.
 * Every decision is a compare-and-set on the value read, in a script
 * fenced by the leader's token: an answer lost leaves Redis as it was or
 * as decided, and the next tend reads which.
 *
 * Every node (dispatch_poll): woken by "offer <node>" on the group's
 * channel, or when its subscription was made again (messages may have
 * been lost: dispatch_missed), or every DISPATCH_POLL_MS (a safety net:
 * an offer not accepted in time moves on anyway; a poll every 500 ms of
 * every node was most of what grew with the nodes), it reads its offers and accepts
 * them (assign_accept: under its capacity counted in Redis) for the jobs
 * its jobs.yaml has with run_on other than leader. A node told to stop
 * (dispatch_close) accepts nothing more: its offers expire and go
 * elsewhere; the runs it accepted finish within shutdown_grace.
 *
 * run_on: all (and {labels: [...], all: true}): the marker is replaced by
 * one offer to each live member carrying the labels, in one script
 * (assign_offer_all); a node's offer or run is never moved to another
 * node: expired, or lost before its start, it is recorded not started;
 * lost while it ran, recorded lost; a retry goes to the same node.
 * forbid and replace apply per node there: with forbid the same script
 * leaves a node whose earlier run lives "skipped" instead of an offer,
 * recorded skipped against that node by the tend (dispatch_skipped);
 * with replace the node stops its earlier run and accepts the offer once
 * that run has ended (dispatch_member.c).
 *
 * A manual run (baton trigger) of a job run on members runs on the
 * leader, as a manual run of any job does (control.h): its request's
 * protocol (claimed, started, done, recovered when its node dies) is the
 * leader's, and an operator's run-now needs no member's free capacity; the
 * leader refuses it, saying so, when it lacks the job's labels. */
#ifndef BATON_DISPATCH_H
#define BATON_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rctx.h"
#include "run.h"
#include "ticklife.h"

#define DISPATCH_TEND_MS   250  /* the leader reads what is outstanding this often */
#define DISPATCH_WAIT_MS   40   /* ... and this often while ticks wait for room */
#define DISPATCH_FLEET_MS  1000 /* the leader reads the members this often at most */
#define DISPATCH_ROOM_MS   10   /* ... or this often when none had room */
#define DISPATCH_POLL_MS   5000 /* a node reads its offers this often at least */
#define DISPATCH_MOVES_MAX 30   /* offered this many times without a run: recorded */

struct jobstate;
struct runs;
struct fleet;
struct jobtable;
struct runner_wait;

#define DISPATCH_WAITS_MAX 64 /* ticks waiting for room the leader lists (status) */

/* A tick that waited for a member with room at the leader's last look. */
struct dispatch_wait {
    char job[129];    /* JOB_NAME_MAX + 1 */
    int64_t tick;     /* Unix s */
    int64_t since_ms; /* Unix ms: the first look that found it waiting */
};

struct dispatch {
    int64_t capacity;   /* this node's (baton.yaml) */
    bool fleet;         /* some job of jobs.yaml runs on members */
    bool closed;        /* stopping: accepts no more offers */
    int64_t tend_at;    /* leader: the next look at what is outstanding (0: none) */
    int64_t poll_at;    /* the next read of this node's offers (0: none) */
    uint64_t seq;       /* of the run ids of retries made here */
    struct runs *rs;    /* this node's runs (the coordinator's): where accepted runs go */
    struct fleet *view; /* leader: the members as last read, and their shares (owned) */
    size_t waiting;     /* leader: ticks that waited for room at the last look */
    bool reread;        /* leader: the members may be read again for room */
    int64_t tended_at;  /* leader: the last tend */
    int64_t held_at;    /* leader: the last hold of their registrations */
    struct dispatch_wait waits[DISPATCH_WAITS_MAX]; /* leader: the first nwaits of those */
    size_t nwaits;
};

/* Offers js's tick, just claimed to run under run id (the claim wrote its
 * marker: claim.h, assign.h), to a member; the tick in *state (claimed)
 * moves to assigned, or (no member for it) is recorded not started. Not
 * offered now (no answer, the lease lost), the marker waits for the next
 * tend, here or on the next leader. */
void dispatch_offer(const struct rctx *x, struct jobstate *js, const char *id, int64_t tick,
                    enum tick_state *state);

/* A pause of js ended without catch-up at until (Unix s): the claim's
 * markers of its ticks up to until that the pause held (claimed before it,
 * or handed back by their member) are dropped and recorded skipped
 * (reason), as control_record_held() records the leader's own. Returns
 * false when Redis could not say (try again). */
bool dispatch_record_held(const struct rctx *x, const struct jobstate *js, int64_t until,
                          const char *reason);

/* The claim's marker of js's tick (run id) is taken back, so that the
 * caller records the tick (not started, skipped) itself. Returns false
 * when it was not (offered already, no answer, not the leader): the tick
 * is then the dispatch's to offer or record, not the caller's. */
bool dispatch_let_go(const struct rctx *x, const struct jobstate *js, int64_t tick, const char *id);

/* What the leader does every DISPATCH_TEND_MS (see the top). */
void dispatch_tend(const struct rctx *x, struct dispatch *d, int64_t now);

/* Reads this node's offers and accepts what it can (see the top); the
 * runs go to d->rs. */
void dispatch_poll(const struct rctx *x, struct dispatch *d, int64_t now);

/* A run ended somewhere ("ended <job>"): ticks waiting for room are looked
 * at now. */
void dispatch_ended(struct dispatch *d);

/* The ticks that waited for room at the leader's last look (none when not
 * leading), oldest first, as runner_wait (waits.h: room) into out[0..max)
 * for `baton status` and the metrics: job names borrowed from jt (valid
 * until the next runner_set_jobs()); queued: that job's ticks in the list.
 * Returns how many were written. */
size_t dispatch_waiting(const struct dispatch *d, const struct jobtable *jt,
                        struct runner_wait *out, size_t max);

/* Frees what d holds (the leader's view of the members). */
void dispatch_free(struct dispatch *d);

/* "offer <node>" was heard: node's offers are read now if it is ours. */
void dispatch_heard(const struct rctx *x, struct dispatch *d, const char *node, size_t len);

/* Messages may have been lost (the subscription was made again): this
 * node's offers are read now. */
void dispatch_missed(struct dispatch *d);

/* The jobs changed: whether any runs on members (polling starts or
 * stops). */
void dispatch_jobs(struct dispatch *d, bool fleet);

/* No more offers accepted from now on. */
void dispatch_close(struct dispatch *d);

/* The next time dispatch has something to do (CLOCK_MONOTONIC; 0: none). */
int64_t dispatch_next(const struct rctx *x, const struct dispatch *d);

#endif
