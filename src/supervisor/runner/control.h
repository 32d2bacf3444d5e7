/* control.h -- the operators' say over the jobs while this node leads:
 * pauses (pause.h) and manual runs (trigger.h), as the leader reads them
 * when a message says they changed and every control_poll_ms (pub/sub may
 * lose one). Per job: until when its ticks are held by a pause, the entry
 * that holds it, the ticks skipped so far (recorded when the pause ends
 * or every PAUSE_FLUSH_S), and its requests to run now, oldest first. For
 * the group: the "*" entry (pause --all), and an index of the requests by
 * id.
 *
 * A paused job's ticks do not run: they are recorded skipped, and its mark
 * moved past them (a claim of the last as skipped), when the pause ends
 * without catch-up, so that no later leader catches them up; a resume
 * with catch-up clears the entry and the job catches up from its mark, as
 * after a failover, and its ticks held since their claim run (or are
 * recorded as the catch-up policy says). A paused job can still be run by
 * hand: its requests are claimed like ticks (steps.h) and run under the
 * job's concurrency policy. A manual run of a job run on members runs here
 * too (dispatch.h says why), refused when this node lacks the job's
 * labels. */
#ifndef BATON_CONTROL_H
#define BATON_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pause.h"
#include "rctx.h"
#include "schedule.h"
#include "ticks.h"
#include "trigger.h"

#define PAUSE_FLUSH_S    3600 /* a paused job's skipped ticks are recorded at least this often */
#define CONTROL_RETRY_MS 1000 /* the control keys could not be read: try again then */
#define PAUSE_FOREVER    INT64_MAX /* paused, no resume yet */
#define MANUAL_HASH_SIZE 1024      /* requests waiting are at most TRIGGER_QUEUE_MAX */

struct claimer;
struct jobstate;
struct runs;
struct runs_job;

/* A request of baton trigger this leader is to run. */
struct manual {
    char id[TRIGGER_ID_MAX + 1];
    char by[128]; /* who asked */
    int attempt;
    int64_t requested_s;
    struct manual *next;      /* the job's, oldest first */
    struct manual *hash_next; /* the index's */
};

/* One job's. */
struct control_job {
    /* Until when its ticks are held (Unix s; 0: not paused, PAUSE_FOREVER:
     * no resume yet): the later of its own entry's and "*"'s. */
    int64_t pause_until;
    char *pause_raw;           /* its own entry as read (NULL: none; paused by "*" only) */
    int64_t own_until;         /* its own entry's part */
    bool all_pending;          /* "*"'s resume waits for this job's ticks to be recorded */
    struct sched_range paused; /* the ticks skipped so far */
    struct manual *manuals;    /* requests to run now, oldest first */
};

struct control {
    int64_t at;         /* the next read (CLOCK_MONOTONIC; 0: not leading) */
    int64_t poll_ms;    /* control_poll_ms */
    char *all_raw;      /* the "*" entry as read */
    int64_t all_until;  /* its pause (as pause_until) */
    size_t all_pending; /* jobs whose ticks before its resume are not yet recorded */
    size_t npaused;     /* jobs paused or with an entry, at the last read */
    size_t nmanuals;    /* requests waiting in the jobs' lists */
    struct manual *manual_hash[MANUAL_HASH_SIZE];
};

/* Reads the paused hash and the requests, and applies them to every job
 * (rs: the runs here, whose requests are known). */
void control_read(const struct rctx *x, struct control *c, const struct runs *rs, int64_t now);

/* Starts js's requests in order, as its concurrency policy allows: allow
 * at once; forbid once no run of the job is alive in the group; replace
 * once the runs alive are stopped. */
void control_manuals(const struct rctx *x, struct control *c, struct runs *rs, struct jobstate *js,
                     int64_t now);

/* js is paused at wall (ms): its due ticks, queued ones first, join its
 * paused range instead of running; the range is recorded when the resume
 * comes, or when the oldest is PAUSE_FLUSH_S old. A queued tick whose
 * claim's answer was lost (claiming) is not the pause's to decide: its
 * claim is made again (claimer_head, cl and rs) and its answer decides it
 * first (ours to run: held, as a tick claimed before the pause is). A
 * resume without catch-up, once recorded, lets the job run again
 * (pause_until 0). Returns false when the record could not be written now,
 * or that claim is still unanswered (hold the job a while). */
bool control_hold(const struct rctx *x, struct control *c, struct claimer *cl, struct runs *rs,
                  struct jobstate *js, int64_t wall);

/* Records the ticks js holds (a pause held them after their claim) as
 * skipped, reason paused: no later leader runs them. */
void control_record_held(const struct rctx *x, struct jobstate *js);

/* Forgets what cj knew of pauses and requests (they stay in Redis for the
 * next leader to read). */
void control_job_clear(struct control *c, struct control_job *cj);
/* Forgets the "*" entry as read: the next read applies it afresh. */
void control_forget_all(struct control *c);

#endif
