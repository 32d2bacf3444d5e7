/* runner.h -- the jobs of jobs.yaml while this node leads, and the runs it
 * still has after it stops leading.
 *
 * A tick goes schedule.h -> claim.h -> run.h: when it is due the runner
 * queues it (schedule decides live or missed), decides the head of the
 * job's queue (schedule), claims it in Redis (claim), and starts the run
 * (run). Every tick that does not run is recorded with its reason
 * (history.h), so that each tick of a job either ran or says why not. Each
 * step is a move in the life of the tick (ticklife.h), its table the judge.
 *
 * A live tick is claimed a little ahead of its instant and its run
 * prepared (its shim started, waiting): at the instant only the go remains,
 * sent only before the stop point of what covers the run; a prepared run
 * that may not go is recorded failed_to_start with its reason (runner.c).
 *
 * The runner schedules only between runner_lead() and runner_unlead(); it
 * never decides leadership. It owns one timer of the daemon's loop
 * (host->timer_id) and arms it itself after every call.
 *
 * Runs outlive leadership: at a graceful handover (runner_handover) the
 * leader's runs are registered in Redis on their own, and the runner keeps
 * that registration alive while they finish; the next leader sees them
 * (claim.h) and applies each job's concurrency policy against them. If the
 * registration cannot be confirmed, the runner stops those runs before it
 * could expire (SIGTERM at its stop point, SIGKILL before its end), as the
 * daemon does for the lease.
 *
 * The leader also serves the operators' requests (runner_control_changed,
 * and a read every control_poll_ms): manual runs (trigger.h), claimed like
 * ticks and run under the job's concurrency policy, and pauses (pause.h):
 * a paused job's ticks are recorded as skipped, not run.
 *
 * No blocking Redis call starts unless host->may_block() allows it (the
 * daemon's stop point): bookkeeping (history records, unregistering runs)
 * waits in a bounded outbox meanwhile. Single-threaded: everything runs
 * on the daemon's loop. */
#ifndef BATON_RUNNER_H
#define BATON_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton_election.h"
#include "jobs.h"
#include "log.h"
#include "loop.h"
#include "ticklife.h"
#include "waits.h" /* struct runner_wait */

struct runner;
struct hooks;

struct runner_host { /* node and group are copied; the rest is borrowed */
    struct log *log;
    struct loop *loop;
    int timer_id; /* the loop timer the runner owns */
    struct baton_client *client;
    struct baton_election *election;
    const char *node;
    const char *group;
    int64_t history_len;
    size_t output_bytes;     /* each run's output tail kept with its record (run.h) */
    struct hooks *hooks;     /* where ended runs go for their hooks (hook.h); may be NULL */
    int64_t lease_ttl_ms;    /* runs on their own are registered for this long */
    int64_t refresh_ms;      /* ... and refreshed this often (lease.renew) */
    int64_t guard_ns;        /* stop point = end of a registration - guard_ns */
    int64_t control_poll_ms; /* the leader reads pauses and requests this often at least */
    int64_t kill_margin_ns;  /* runs are dead this long before it ends */
    int64_t capacity;        /* the most runs this node takes from the fleet (dispatch.h) */
    const char *const *labels; /* this node's (NULL-terminated; may be NULL): copied */
    /* True when a blocking Redis call (up to redis_timeout) may start now. */
    bool (*may_block)(void *ctx);
    /* Called when the last run alive ended. */
    void (*on_idle)(void *ctx);
    /* Called when a run starts its command or ends (runner_runs_json
     * changed); may be NULL. */
    void (*on_runs_changed)(void *ctx);
    /* Called at each move of a tick's life (ticklife.h), refused ones
     * included; may be NULL. */
    void (*on_tick)(void *ctx, const struct tick_moved *m);
    void *ctx;
    bool fault_start; /* tests (BATON_TEST_FAULT=start): every start fails after its claim */
    /* tests (BATON_TEST_FAULT=stop-after-claim): the process stops itself
     * (SIGSTOP) right after it claims a manual run, before starting it. */
    bool fault_stop_after_claim;
    /* tests (BATON_TEST_FAULT=stop-after-preclaim): the process stops
     * itself (SIGSTOP) once it has claimed a tick ahead of its instant and
     * prepared its run, before the go. */
    bool fault_stop_after_preclaim;
    /* tests (BATON_TEST_FAULT=slow-prepare): each run prepared ahead takes
     * 15 ms more (a sleep after its shim's start), so that the runs of one
     * instant overrun the claim-ahead window. */
    bool fault_slow_prepare;
    /* tests (BATON_TEST_FAULT=stop-before-offer): SIGSTOP itself after
     * the claim of a tick run on members, before its offer;
     * (stop-after-accept): after it accepts an offer, before the run's
     * start. */
    bool fault_stop_before_offer, fault_stop_after_accept;
};

/* Returns: owned (free with runner_free), or NULL on ENOMEM. */
struct runner *runner_new(const struct runner_host *host);

/* The runs whose command runs here now, at most max of them (the oldest
 * first), each {"job","run_id","trigger","scheduled_at","started","by"}
 * (by: who asked for a manual run, else null): what heartbeats carry for
 * `baton status`. Returns: owned array (cJSON_Delete), or NULL on ENOMEM. */
cJSON *runner_runs_json(const struct runner *r, size_t max);
/* Kills whatever still runs (SIGKILL to each group) and frees r. */
void runner_free(struct runner *r);

/* Takes ownership of jobs. A job whose definition did not change keeps its
 * state (queue, running runs, next tick); a removed or changed job's runs
 * finish under their old definition. Returns 0, or BATON_ENOMEM (then the
 * running set stays and jobs is freed). */
int runner_set_jobs(struct runner *r, struct jobs *jobs);

/* Applies a SIGHUP's node settings (baton.yaml): capacity, the most runs of
 * members' ticks taken at once from now on, and labels (copied;
 * NULL-terminated, may be NULL), which the leader's checks of manual runs
 * use; the leader learns both from the next heartbeat. Returns 0, or
 * BATON_ENOMEM (then the old settings stay). */
int runner_set_node(struct runner *r, int64_t capacity, const char *const *labels);

/* Starts scheduling as the leader of term whose lease ends at
 * lease_deadline_ns: reads each job's high-water mark and queues the ticks
 * missed since (within its catch-up window), then every tick. */
void runner_lead(struct runner *r, uint64_t term, int64_t lease_deadline_ns);
/* The lease was renewed: extends the registration of the leader's runs. */
void runner_lease_renewed(struct runner *r, int64_t lease_deadline_ns);
/* Stops scheduling: queues, pending retries and replacements are dropped
 * (their ticks stay unclaimed, for the next leader). */
void runner_unlead(struct runner *r);
/* Stops claiming and starting ticks at once, leaving the jobs' state for
 * runner_unlead() (O(jobs)): a graceful handover gives the lease up in
 * between, so that the next leader does not wait for it. */
void runner_stop_scheduling(struct runner *r);

/* A graceful handover, called while still the leader: registers the
 * leader's runs on their own. Returns 0, or the error (the runs then stay
 * covered by the lease only: the runner stops them before it ends). */
int runner_handover(struct runner *r, int64_t lease_deadline_ns);

/* This node stops accepting runs of other nodes' offers (dispatch.h):
 * it is going away (SIGTERM). */
void runner_close(struct runner *r);
/* False once runner_close() was called (heartbeats say so). */
bool runner_accepting(const struct runner *r);
/* Runs alive here that members' offers brought (its capacity in use). */
size_t runner_assigned(const struct runner *r);

/* Runs alive (of any term). Hooks are not runs (hook.h). */
size_t runner_running(const struct runner *r);

/* The jobs whose tick waits for a limit now (none unless leading), in the
 * order a slot goes to them (instant, then job name: pools.h), then the
 * ticks that wait for a member with room (dispatch_waiting: room), oldest
 * first. Returns: owned array (free()) of *n, or NULL when none (or
 * ENOMEM: *n 0). */
struct runner_wait *runner_waiting(const struct runner *r, size_t *n);
/* The same as a heartbeat carries it for `baton status` (status.h): at most
 * max {"job","scheduled_at","since","reason":"pool"|"max_running"|"room","pool",
 * "limit","queued"}. Returns: owned array (cJSON_Delete), or NULL on ENOMEM. */
cJSON *runner_waiting_json(const struct runner *r, size_t max);

/* How far ahead of its instant a live tick is claimed and its run
 * prepared now (ms): the adaptive window, 25 to 250 ms; 0 when not
 * leading. */
int64_t runner_claim_ahead_ms(const struct runner *r);

/* SIGTERM now to the runs covered by the lease (all runs when all is
 * true), SIGKILL to each at min(now + its kill_grace, kill_by_ns), kill_by_ns
 * 0 meaning no bound. */
void runner_terminate(struct runner *r, bool all, int64_t kill_by_ns);

/* The point before which the runner's own registrations need a confirmed
 * refresh (CLOCK_MONOTONIC ns), or 0 when it has none: blocking calls must
 * not start after it. */
int64_t runner_stop_point(const struct runner *r);

/* Writes what the outbox holds (history, unregistrations) while
 * host->may_block() allows. */
void runner_flush(struct runner *r);

/* Event sources. */
void runner_on_timer(struct runner *r);
/* Reaps every child that exited: runs, and hooks (hooks_reaped()). */
void runner_on_sigchld(struct runner *r);
/* A message on the group's events channel that the election did not
 * consume ("ended <job>", "stop <node>/<run_id>", "trigger <id>",
 * "paused <job>", "resumed <job>"). */
void runner_on_message(struct runner *r, const char *msg, size_t len);
/* Messages may have been lost (the subscription was made again): the
 * leader reads pauses and requests now, every node its offers. */
void runner_control_changed(struct runner *r);

#endif /* BATON_RUNNER_H */
