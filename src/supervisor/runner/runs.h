/* runs.h -- the runs of this node (run.h): the processes it started, live
 * or prepared, of any term, and what covers each: the lease while this
 * node leads, or its own registration in Redis after a graceful handover
 * (claim.h), which this part keeps alive (every lease.renew) and enforces
 * like a lease: a run whose cover cannot be confirmed is stopped before it
 * ends. Every run's shim is told where its fence is (proc.h), so that a
 * stopped or starved baton cannot keep a run past its cover. What follows
 * a run's end (retried, recorded, held) is finish.h's.
 *
 * Runs are a list: their number is bounded by the processes alive, not by
 * the jobs. A run knows its job's record and job set only as opaque
 * owners (the coordinator's: jobtable.h). */
#ifndef BATON_RUNS_H
#define BATON_RUNS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "assign.h"
#include "claim.h"
#include "rctx.h"
#include "run.h"
#include "ticklife.h"
#include "trigger.h"

struct jobstate; /* jobtable.h */
struct jobset;   /* jobtable.h */

struct rrun {
    struct run run;
    struct jobstate *js; /* its job's record; NULL once its job is gone from jobs.yaml */
    struct jobset *set;  /* the job set its job belongs to (held) */
    bool own;            /* registered on its own (after a handover), not by the lease */
    char trigger_id[TRIGGER_ID_MAX + 1]; /* a manual run's request; "" for a tick's run */
    enum tick_state tick;                /* a tick's run: the tick's state (ticklife.h) */
    /* A run dispatched to this node (run_on other than leader; own): its
     * assignment's field ("" for the others) and value as accepted (what
     * assign_started() expects), and how many times it was offered again
     * before (said in its record). */
    char field[ASSIGN_FIELD_MAX];
    char avalue[ASSIGN_VALUE_MAX];
    int moves;
    char died[160];   /* the member that accepted it before and died ("": none) */
    bool handed_back; /* paused before its go: given back to the leader, not recorded */
    struct rrun *next;
};

struct runs {
    struct rrun *list; /* newest first */
    size_t n;
    struct run_env env;
    int64_t kill_margin_ns; /* runs are dead this long before a cover ends */
    int64_t refresh_ms;     /* own registrations are refreshed this often */
    int64_t lease_deadline; /* covers the runs that are not on their own */
    int64_t own_cover;      /* covers the runs on their own: their registration's end */
    int64_t own_refresh_at; /* next refresh of those */
};

/* Starts a run of js for tick in this term (a manual run: trigger_id,
 * else NULL, the tick in state, claimed or retrying), fenced by the lease,
 * prepared (waiting for its go) when asked. A start that fails is
 * recorded. Returns the run when its command runs (or waits, prepared),
 * else NULL. */
struct rrun *runs_start(const struct rctx *x, struct runs *rs, struct jobstate *js, const char *id,
                        int64_t tick, int attempt, enum run_trigger trigger, const char *trigger_id,
                        bool prepared, enum tick_state state);
/* Starts the run of a's tick of js, which this node has just accepted
 * (assign_accept() sent at sent_ns; the offering leader's term): on its
 * own registration (as a handed-over run), prepared: at the tick's
 * instant runs_go() marks it started (assign_started()) and only then
 * sends the go. Its end is recorded with its dispatch delay and ends the
 * assignment (records_assigned). Returns the run, or NULL (its start
 * failed, recorded). */
struct rrun *runs_accepted(const struct rctx *x, struct runs *rs, struct jobstate *js,
                           const struct assign *a, uint64_t term, int64_t sent_ns);
/* Runs dispatched to this node, alive. */
size_t runs_assigned(const struct runs *rs);

/* Moves the tick of rr (a tick's run; not a manual one) by ev. */
void runs_move_tick(const struct rctx *x, struct rrun *rr, enum tick_event ev);
/* Takes rr out of the list and frees it (SIGKILL to its group if it
 * still runs: run_dispose). */
void runs_discard(struct runs *rs, struct rrun *rr);
/* Frees every run (SIGKILL to each group). */
void runs_free(struct runs *rs);

/* True when request id is a run here. */
bool runs_have_trigger(const struct runs *rs, const char *id);
/* True when member ("<node>/<run_id>") of job is a run of this node that
 * has ended: not one of rs alive, and the write that ends its
 * registration still waits in the outbox (outbox_ends). Other entries
 * under this node's name are alive: a claim's marker the dispatch holds
 * while it waits for room, a "/wait" hold (a lost run's, a retry's). */
bool runs_stale(const struct rctx *x, const struct runs *rs, const char *job, const char *member);
/* SIGTERMs js's running runs (concurrency: replace; their SIGCHLD wakes
 * the job). */
void runs_stop_job(struct runs *rs, const struct jobstate *js);
/* A "stop <member>" message: stops that run if it is ours. */
void runs_stop_member(struct runs *rs, const char *member, size_t len);

/* The lease was renewed to deadline: the shims hear it, and the leader's
 * runs' registrations are extended (when a blocking call may start), and
 * those its retries hold through their backoff (finish.h). */
void runs_lease_renewed(const struct rctx *x, struct runs *rs, int64_t deadline);
/* A graceful handover: registers the runs covered by the lease on their
 * own. Returns 0 or the error (they stay covered by the lease only). */
int runs_handover(const struct rctx *x, struct runs *rs, int64_t deadline);
/* Keeps the own registrations alive (may_block: a refresh may start);
 * stops the runs they no longer cover. */
void runs_tend(const struct rctx *x, struct runs *rs, int64_t now);
/* Not leading: the runs covered by the lease only are stopped before it
 * ends. */
void runs_fence_lease(const struct rctx *x, struct runs *rs, int64_t now);
/* The earliest stop point of the covers in use (0: none). */
int64_t runs_stop_point(const struct rctx *x, const struct runs *rs);
/* SIGTERM to the runs covered by the lease (all: every run). */
void runs_terminate(struct runs *rs, bool all, int64_t kill_by_ns);

/* Prepared runs whose instant has come: each goes, or is cancelled with
 * its reason (failed_to_start), or, its job paused since its claim,
 * cancelled as skipped; late: the lease is past its stop point. One whose
 * instant is further ahead than stepped_ns is cancelled: the wall clock
 * was stepped back under it. went(ctx, tick) is told of each instant
 * weighed, by its instant in Unix ms (the claim-ahead window learns from
 * it). A run's instant is its tick's start (run_start_ms: jitter). */
void runs_go(const struct rctx *x, struct runs *rs, bool late, int64_t stepped_ns,
             void (*went)(void *ctx, int64_t at_ms), void *ctx);

/* The next time something of the runs is due (CLOCK_MONOTONIC; 0: none),
 * and the wall instant of the next prepared run's go (*go, ns; 0: none). */
int64_t runs_next(const struct rctx *x, const struct runs *rs, int64_t *go);
/* Acts on each run's timers due at now (timeouts, kills). */
void runs_tick(struct runs *rs, int64_t now);

/* Up to max of the runs whose command runs now, oldest first, as
 * runner_runs_json() describes them. */
cJSON *runs_json(const struct runs *rs, size_t max);

#endif
