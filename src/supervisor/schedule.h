/* schedule.h -- when a job's ticks fall, and what becomes of each. Pure:
 * no I/O and no clock reads (callers pass the time), so every rule here is
 * a table-driven unit test (tests/unit/check_schedule.c).
 *
 * The life of a tick, as the runner drives it:
 *
 *   jobs.yaml --sched_next()--> a tick T is due
 *     --sched_due()--> T is live (on time), or missed (a failover, a stall:
 *                      the catch-up policy decides: queued, superseded or
 *                      dropped)
 *     --> the job's queue, in tick order
 *     --sched_decide() at the head--> start | wait | skip | supersede |
 *                      drop | replace
 *     --> claim (claim.h) --> run (run.h)
 *
 * Ticks are claimed in increasing order per job (the claim moves a
 * high-water mark), so the queue is strictly ordered and only its head is
 * ever decided: a tick that waits holds back the ones behind it.
 *
 * Concurrency policies:
 *   forbid   one run at a time. A tick that fires while a run of the job is
 *            alive is skipped (recorded); missed ticks (the backlog of a
 *            failover) wait and run one after another, in order.
 *   allow    runs overlap; the backlog starts at once (at most
 *            SCHED_ALLOW_PARALLEL runs of one job at a time).
 *   replace  only the newest queued tick runs; older ones are superseded
 *            (recorded); a running run is stopped first, and the tick is
 *            claimed only once it is gone (a leader that dies meanwhile
 *            leaves it unclaimed, to the next one).
 */
#ifndef BATON_SCHEDULE_H
#define BATON_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "history.h"
#include "jobs.h"

#define SCHED_LIVE_SLACK_MS  1000   /* a tick handled later than this after its time is missed */
#define SCHED_CATCHUP_MAX    1000   /* missed ticks queued per job at once, at most */
#define SCHED_ALLOW_PARALLEL 32     /* runs of one `allow` job at once, at most */
#define SCHED_ENUM_MAX       200000 /* ticks counted one by one, at most, per call */

/* The next tick of job strictly after `after` (Unix s); 0 when there is
 * none (disabled, or an expression that no longer fires). */
int64_t sched_next(const struct job *job, int64_t after);

/* The instant tick's run begins (Unix ms): the tick, delayed by the job's
 * jitter (jitter.h: a pure function of group, job and tick, so every
 * leader computes the same), cut to end a millisecond before the job's next
 * tick when that comes sooner than the load saw (a DST change): the starts
 * of a job's ticks keep the ticks' order. Without jitter: tick * 1000.
 * Every "when" of a tick in the runner is this instant (its claim ahead of
 * it, its go, its lateness, live or missed, the catch-up window); every
 * "which" (claims, marks, pauses, the history) is the tick. */
int64_t sched_start_ms(const struct job *job, int64_t tick);
/* Its delay: sched_start_ms() - tick * 1000. */
int64_t sched_jitter_ms(const struct job *job, int64_t tick);

/* A run of ticks that will not run, and why. count 0: none; count -1: more
 * than could be counted (first and last are still right, last at most
 * approximate: the second before the next tick considered). reason is
 * static. */
struct sched_range {
    int64_t first, last, count;
    enum history_outcome outcome;
    const char *reason;
};

/* What is due for job at now_ms (Unix ms), after the tick `after` (the
 * last one already dealt with: the high-water mark for a new leader, the
 * last queued tick otherwise): the ticks whose run begins by now_ms
 * (sched_start_ms), missed once that is SCHED_LIVE_SLACK_MS past. */
struct sched_due {
    struct sched_range dropped;    /* missed, outside the catch-up window */
    struct sched_range superseded; /* missed, and catchup: last keeps only the newest */
    size_t nmissed;                /* missed ticks to queue, written to missed[] */
    int64_t live;                  /* the tick due now (within the slack), or 0 */
    int64_t next;                  /* the first tick whose run begins after now_ms, or 0 */
};

/* Fills out for the ticks in (after, now_ms]; missed[] (cap entries)
 * receives the missed ticks to queue, oldest first (when there are more
 * than cap, the oldest beyond it are dropped). */
void sched_due(const struct job *job, int64_t after, int64_t now_ms, int64_t *missed, size_t cap,
               struct sched_due *out);

/* Adds the ticks of job in (after, until] (Unix s) to r as outcome o with
 * reason why (r may hold earlier ticks of the same outcome and reason
 * already). Beyond SCHED_ENUM_MAX ticks counted one by one, r->count
 * becomes -1 and the walk jumps close to until. Returns the first tick
 * after until, or 0 when there is none. */
int64_t sched_span(const struct job *job, int64_t after, int64_t until, enum history_outcome o,
                   const char *why, struct sched_range *r);

/* One queued tick. */
struct sched_tick {
    int64_t at;      /* Unix s */
    bool missed;     /* from a failover or a stall, not on time */
    bool overlapped; /* it fired while a run of the job was alive (forbid) */
};

enum sched_verdict {
    SV_START,     /* claim it and start a run */
    SV_WAIT,      /* leave it at the head until a run ends */
    SV_SKIP,      /* claim it as skipped: forbid, and it fired while a run was alive */
    SV_SUPERSEDE, /* record it superseded: a newer tick runs instead */
    SV_DROP,      /* record it missed: it aged out of the catch-up window in the queue */
    SV_REPLACE,   /* replace: stop the running runs; it waits, unclaimed, until they end */
};

/* Returns: the verdict's name ("start", "wait"...). Static. */
const char *sched_verdict_name(enum sched_verdict v);

/* What to do with the head of a job's queue: head, with `behind` ticks
 * queued after it (`missed_behind` of them missed), while `running` runs
 * of the job are alive here, at now_ms. */
enum sched_verdict sched_decide(const struct job *job, const struct sched_tick *head, size_t behind,
                                size_t missed_behind, int running, int64_t now_ms);

/* A tick that was claimed, then held back by a pause that came after its
 * claim (its prepared run was cancelled before its instant), when the
 * pause ends with catch-up at now_ms: SV_START (run it now), SV_DROP (it
 * aged out of the catch-up window, or catchup is 0 and it is missed) or
 * SV_SUPERSEDE (catchup: last, and a newer tick is due already: that one
 * runs). The rules are sched_decide()'s for a missed tick; a tick still
 * within SCHED_LIVE_SLACK_MS of its instant is on time and runs. */
enum sched_verdict sched_held(const struct job *job, int64_t tick, int64_t now_ms);

/* The reason recorded for a verdict that does not run its tick. Static. */
const char *sched_reason(const struct job *job, enum sched_verdict v);

#endif /* BATON_SCHEDULE_H */
