/* runner.h -- the jobs of jobs.yaml: scheduling, exactly-once claims,
 * catch-up, child processes, output, timeouts, retries, history.
 *
 * The runner schedules only between runner_lead() and runner_unlead(); it
 * never decides leadership. Before each start it claims the job's tick in
 * Redis with one script that also checks that the leader key still holds
 * this node's token: a tick claimed is a tick no other node will run, and a
 * node that is no longer the leader cannot claim at all. Single-threaded:
 * everything runs on the daemon's loop. */
#ifndef BATON_RUNNER_H
#define BATON_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "baton.h"
#include "jobs.h"
#include "log.h"
#include "loop.h"

struct runner;

struct runner_host {      /* node and group are copied; the rest is borrowed */
    struct log *log;
    struct loop *loop; /* the runner registers its children's pipes here */
    struct baton_client *client;
    struct baton_election *election;
    const char *node;
    const char *group;
    int64_t history_len;
    int64_t guard_ns; /* no claim starts later than the lease deadline minus this */
};

/* Returns: owned (free with runner_free), or NULL on ENOMEM. */
struct runner *runner_new(const struct runner_host *host);
/* Kills whatever still runs (SIGKILL to each group) and frees r. */
void runner_free(struct runner *r);

/* Takes ownership of jobs. A job whose definition did not change keeps its
 * state (running children, next tick); a removed or changed job's running
 * children finish under their old definition. */
void runner_set_jobs(struct runner *r, struct jobs *jobs);

/* Starts scheduling as the leader of term: runs the ticks missed since each
 * job's last claimed tick (within its catch-up window), then every tick. */
void runner_lead(struct runner *r, uint64_t term);
/* Stops starting anything (pending retries and replacements are dropped). */
void runner_unlead(struct runner *r);

/* Number of job processes running. */
size_t runner_running(const struct runner *r);

/* SIGTERM to every running job's process group now; SIGKILL to each at
 * min(now + its kill_grace, kill_by_ns), kill_by_ns 0 meaning no bound.
 * With a bound, the runner makes no Redis call until runner_flush_history()
 * (history entries wait in a bounded queue): nothing may delay the kills. */
void runner_terminate(struct runner *r, int64_t kill_by_ns);
/* Writes the history entries queued since runner_terminate(). */
void runner_flush_history(struct runner *r);

/* CLOCK_MONOTONIC time of the runner's next event (a tick, a timeout, a
 * kill, a retry), or 0. The daemon arms a timer for it. */
int64_t runner_next_ns(const struct runner *r);
/* Handles everything due. */
void runner_on_timer(struct runner *r);
/* Reaps exited children (after SIGCHLD). */
void runner_on_sigchld(struct runner *r);

#endif
