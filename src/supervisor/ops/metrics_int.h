/* metrics_int.h -- what the two halves of the metrics share (metrics.h says
 * what they are): metrics.c counts (the event table, the state the caller
 * sets, the jobs' slots) and metrics_write.c writes the counts out in the
 * text format. The counts are plain integers in one struct with a flat
 * array of jobs, so that metrics_dup() is a few allocations and copies: the
 * HTTP thread copies under its lock and formats outside it. Nothing but
 * those two files includes this one. */
#ifndef BATON_METRICS_INT_H
#define BATON_METRICS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "facts.h"
#include "history.h"
#include "jobs.h"
#include "machine.h"
#include "metrics.h"

/* Histogram bounds, seconds: run durations, and start lateness (a catch-up
 * run starts late by design: it has its own trigger label). */
#define NBUCKETS 13
/* Static: one copy in each of the two files, read by histo_add (counting)
 * and histo_write (writing). */
static const double duration_le[NBUCKETS] = {0.01, 0.05, 0.1, 0.5, 1,    5,    10,
                                             30,   60,   300, 900, 3600, 10800};
static const double lateness_le[NBUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                             0.25,  0.5,    1,     5,    30,    300};

/* Run triggers (run.h) with a start lateness: all but manual, which has no
 * tick to be late for. */
#define NTRIGGERS RUN_TRIGGER_MANUAL

struct histo {
    uint64_t n[NBUCKETS + 1]; /* per bucket, not cumulative; last: above all */
    uint64_t count;
    double sum;
};

/* What became of `baton trigger` requests: one per trigger_* event (their
 * names: metrics_write.c). */
enum { TRIGGER_RECEIVED, TRIGGER_REJECTED, TRIGGER_LEFT, TRIGGER_LOST, NTRIGGER_OUTCOMES };

#define NOTRUN_SLOTS 8 /* (outcome, reason) pairs per job; more fold into the last */

struct mjob {
    char name[JOB_NAME_MAX + 1];
    uint64_t runs[HO_COUNT];              /* job_end, by outcome */
    uint64_t retries;                     /* job_retry */
    uint64_t hooks_ok, hooks_failed;      /* hook_end, by outcome */
    uint64_t triggers[NTRIGGER_OUTCOMES]; /* trigger_*, by outcome */
    bool paused;                          /* its own pause (job_paused, or metrics_set_pauses) */
    bool limit_pool, limit_max;           /* it has a pool, a max_running (metrics_job_limits) */
    uint64_t waiting[METRICS_WAIT_REASONS]; /* its ticks waiting, by reason (metrics_set_waiting) */
    bool fleet;                           /* it runs on members (metrics_job_fleet) */
    uint64_t reassigned, lost;            /* reassigned, lost (the leader's) */
    struct histo dispatch;                /* job_start of its dispatched ticks (the member's) */
    double last_run_s, last_success_s;
    struct histo duration;
    struct {
        uint8_t outcome, reason;
        uint64_t ticks;
    } notrun[NOTRUN_SLOTS];
    size_t nnotrun;
};

struct metrics {
    uint64_t events[LE_COUNT]; /* every event, by kind */
    uint64_t transitions[ST_COUNT][ST_COUNT][EV_COUNT];
    struct histo lateness[NTRIGGERS]; /* by enum run_trigger */
    uint64_t redis_errors[DURING_COUNT];
    char reasons[METRICS_MAX_REASONS][160];
    size_t nreasons;
    bool all_paused; /* `baton pause --all` */
    uint64_t reloads_ok, reloads_failed;
    bool last_reload_ok;
    int64_t drifting;  /* config_drift minus config_drift_resolved: nodes now */
    struct mjob *jobs; /* METRICS_MAX_JOBS at most, then "other" */
    size_t njobs, capjobs;
    /* The jobs by name (job_slot): open addressing, slot i + 1 of jobs (0:
     * empty), index_cap a power of two at least twice njobs; NULL in a copy
     * until it needs one. Every log line of a job looks its slot up, and a
     * reload of 10,000 jobs adds them all: a linear search made that
     * O(jobs) per line and O(jobs^2) per reload (95 ms on the loop). */
    uint32_t *index;
    size_t index_cap;
    struct mjob other;
    struct mpool {
        char name[JOB_NAME_MAX + 1];
        int limit, runs; /* runs < 0: not read */
    } * pools;           /* metrics_set_pools */
    size_t npools;
    struct metrics_node *nodes; /* metrics_set_fleet; node names owned */
    size_t nnodes;
};

#endif /* BATON_METRICS_INT_H */
