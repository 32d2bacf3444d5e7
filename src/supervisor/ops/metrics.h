/* metrics.h -- the supervisor's Prometheus metrics, counted from its log.
 *
 * metrics_observe() is given every log event (through the log's observer,
 * log.h) with the typed facts its emitter gave beside the line (facts.h),
 * and counts them by a table with one row per event kind: every event by
 * kind, transitions by from/to/trigger, job runs by outcome with their
 * duration and start lateness, retries, ticks that did not run by outcome
 * and reason, Redis failures, reloads, `baton trigger` requests by
 * outcome, pauses. Every count is a count of log lines, made from the
 * values their fields were written from, so metrics and logs cannot
 * disagree. What is state
 * rather than history (the machine's state, leadership, term, lease left,
 * runs alive) the caller passes to metrics_write() as gauges, and so too
 * the lines the log dropped: the log counts them as it drops them, long
 * before the line that reports them can be written.
 *
 * Names follow Prometheus conventions: the `baton_` prefix, `_total` for
 * counters, base units (`_seconds`), HELP and TYPE on every family; the
 * output is the text format 0.0.4 and passes `promtool check metrics`.
 * Jobs are labelled `job_name`, not `job`, which Prometheus gives the
 * scrape job. Cardinality is bounded: METRICS_MAX_JOBS jobs get their own
 * series (a job removed by a reload keeps its series until restart, as
 * counters must), later ones count as job_name="other"; at most
 * METRICS_MAX_REASONS reasons are told apart (the Redis operations are a
 * closed set: enum log_during).
 *
 * Not thread-safe: the caller serializes. metrics_dup() takes a copy to
 * write out without holding the caller's lock. */
#ifndef BATON_METRICS_H
#define BATON_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "events.h"

#define METRICS_MAX_JOBS    4096
#define METRICS_MAX_REASONS 32

struct metrics;
struct log_facts; /* facts.h */

/* Returns: owned (free with metrics_free), or NULL on ENOMEM. */
struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);
/* Returns: an owned copy (free with metrics_free), or NULL on ENOMEM. */
struct metrics *metrics_dup(const struct metrics *m);

/* Gives job its series now (zeros), so that a configured job that has not
 * run yet is there for rate() and absent-run alerts. */
void metrics_add_job(struct metrics *m, const char *job);

/* Counts one log event: in baton_events_total, and in what its row of the
 * event table (metrics.c, one row per event kind) says. facts: what the
 * emitter gave (NULL for an event that carries none; for one that does,
 * NULL counts it by its kind only); now_unix_ms: the wall clock, for the
 * last-run timestamps. */
void metrics_observe(struct metrics *m, enum log_event ev, const struct log_facts *facts,
                     int64_t now_unix_ms);
/* Sets every job's paused gauge from l, the group's paused hash as read
 * (pause.h): what a node that does not lead knows of pauses. */
struct pause_list;
void metrics_set_pauses(struct metrics *m, const struct pause_list *l);

/* The fleet-wide limits (runlimits.h), state the caller sets. A job's
 * limits (its pool, its max_running): its baton_ticks_waiting series. */
void metrics_job_limits(struct metrics *m, const char *job, bool pool, bool max_running);
/* The pools, their limits and live runs as last read from Redis (runs < 0:
 * not read; its series is left out). Copied. */
struct limits_pool;
void metrics_set_pools(struct metrics *m, const struct limits_pool *v, size_t n);
/* The jobs whose ticks wait for a limit now (the leader's; none elsewhere):
 * every other job's count is 0. */
enum metrics_wait_reason {
    METRICS_WAIT_POOL,        /* a slot of its pool */
    METRICS_WAIT_MAX_RUNNING, /* one of its max_running */
    METRICS_WAIT_ROOM,        /* a member with room (run_on other than leader) */
    METRICS_WAIT_REASONS
};
struct metrics_wait {
    const char *job;
    enum metrics_wait_reason reason;
    size_t ticks; /* its ticks waiting for that (entries of a job and reason add up) */
};
void metrics_set_waiting(struct metrics *m, const struct metrics_wait *w, size_t n);

/* The jobs that run on members (run_on other than leader): their
 * dispatch series are written from the start (0), as a limit's are. */
void metrics_job_fleet(struct metrics *m, const char *job, bool fleet);
/* Each node as its last heartbeat says (and Redis counts its offers):
 * baton_fleet_capacity, _runs, _offers{node}. A value < 0 is unknown (its
 * series is left out). Copied. */
struct metrics_node {
    const char *node;
    int64_t capacity; /* baton.yaml's capacity */
    int64_t runs;     /* accepted and not ended (the heartbeat's assigned) */
    int64_t offers;   /* offered, not yet accepted nor expired (Redis) */
};
void metrics_set_fleet(struct metrics *m, const struct metrics_node *v, size_t n);

/* What the event table says ev counts (static text), or NULL when ev has
 * no row: a bug, which check_metrics finds for every kind. */
const char *metrics_event_counts(enum log_event ev);

/* What is state, not history: the caller's view now (and the log's own
 * count of its drops). */
struct metrics_gauges {
    int state;           /* enum machine_state */
    bool is_leader;      /* working or renewing */
    uint64_t term;       /* the term this node leads or follows (0: none yet) */
    double lease_left_s; /* while leading; else 0 */
    size_t running;      /* runs alive on this node */
    double claim_ahead_s; /* the claim-ahead window while leading; else 0 */
    bool redis_up;       /* no outage under way */
    double start_time_s; /* Unix time the process started */
    uint64_t log_lines_dropped;         /* the log's count, made at each drop (log_dropped_lines) */
    const char *version, *group, *node; /* baton_build_info's labels */
};

/* Writes every family (text format 0.0.4): the gauges, the counters, and
 * the process's CPU time, memory and descriptors (process_*). Returns 0,
 * or -1 when writing to out failed. */
int metrics_write(const struct metrics *m, const struct metrics_gauges *g, FILE *out);

#endif /* BATON_METRICS_H */
