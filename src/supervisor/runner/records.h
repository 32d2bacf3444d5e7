/* records.h -- what the runner records of each tick: a run's end (its
 * history record, the end of its registration or its manual request, its
 * hook), a claimed tick that did not start, and ranges of ticks that did
 * not run (one tick_skipped line and one history record each). Every tick
 * of a job either ran or says why here. Written through the outbox
 * (outbox.h). */
#ifndef BATON_RECORDS_H
#define BATON_RECORDS_H

#include <stdbool.h>
#include <stdint.h>

#include "hook.h"
#include "outbox.h"
#include "run.h"
#include "schedule.h"

struct recorder {
    struct outbox *out;  /* borrowed */
    struct log *log;     /* borrowed */
    const char *node;    /* borrowed */
    struct hooks *hooks; /* borrowed; NULL: none (going away) */
};

/* Records range s of job's ticks that did not run (count 0: nothing),
 * decided in term. */
void records_skipped(struct recorder *rc, const char *job, uint64_t term,
                     const struct sched_range *s);
/* Records one tick of job that did not run. */
void records_skipped_one(struct recorder *rc, const char *job, uint64_t term, int64_t tick,
                         enum history_outcome o, const char *reason);

/* run_on: all: records tick of job as not run (o: skipped, superseded) on
 * node alone (its would-be run id; reason: why), decided in term; the
 * other nodes' runs of the tick are recorded as theirs. */
void records_skipped_node(struct recorder *rc, const char *job, uint64_t term, int64_t tick,
                          const char *node, const char *run_id, enum history_outcome o,
                          const char *reason);

/* Records an ended run (or one that never started) and ends its
 * registration (kept while a retry follows: the retry holds the job busy
 * through its backoff with it, finish.h); a manual run's request
 * (trigger_id not "") is done with its outcome. The run then goes to its
 * hook (deferred while a retry follows: hook.h). */
void records_run(struct recorder *rc, const struct run *run, const char *trigger_id,
                 bool retry_follows);

/* Records a run dispatched to this node (run_on other than leader) that
 * ended, with its dispatch delay (reason, may be NULL: said when the run
 * has none of its own), and ends its assignment (field; assign_end), or
 * with retry_ms >= 0 (it failed, retries allow another attempt) hands it
 * back to the leader as a retry due then. */
void records_assigned(struct recorder *rc, const struct run *run, const char *field,
                      const char *reason, int64_t retry_ms);
/* Records job's tick as lost (the leader's word): its run_id's attempt ran
 * on node, which was lost while it ran, because of reason. */
void records_lost(struct recorder *rc, const char *job, uint64_t term, int64_t tick,
                  const char *node, const char *run_id, int attempt, const char *reason);

/* Records tick of job, claimed under run id (its registration member) in
 * term, as failed to start because of why (logged job_end). */
void records_not_started(struct recorder *rc, const struct job *job, uint64_t term, const char *id,
                         const char *member, int64_t tick, bool missed, const char *why);
/* records_not_started() of a tick that was node's own to run (run_on:
 * all), not this node's: the record names node. */
void records_not_started_on(struct recorder *rc, const char *node, const struct job *job,
                            uint64_t term, const char *id, const char *member, int64_t tick,
                            bool missed, const char *why);

#endif
