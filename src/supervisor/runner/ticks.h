/* ticks.h -- one job's ticks while this node leads: the last tick dealt
 * with, the next one to wait for, the queue of due ticks (live, or missed:
 * a failover's or a stall's backlog), and the range of ticks that did not
 * run, not yet recorded. Pure: no Redis, no clock reads (callers pass the
 * time), no log; it answers with an intent (ticks_next) and a job's turn
 * (turn.c) acts on it.
 *
 * Each queued tick carries its state in the life of a tick (ticklife.h):
 * queued, or claiming while its claim is out; the coordinator moves it,
 * deciding with the intent ticks_next() returns (schedule.h's rules):
 *
 *   due --ticks_queue_due--> queued (live | missed), or a range not run
 *     (outside the catch-up window: missed; catchup: last: superseded)
 *   queued --ticks_next--> claim (mode) --claimer--> claiming --> ...
 *                       \-> wait (a run of ours ends first)
 *                       \-> replace (stop our runs first, then claim)
 *                       \-> record: missed (drop) | superseded
 *
 * Ticks are claimed in increasing order, so only the queue's head is
 * decided, and it holds back the ones behind it. */
#ifndef BATON_TICKS_H
#define BATON_TICKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "claim.h"
#include "jobs.h"
#include "schedule.h"
#include "ticklife.h"

/* One queued tick. */
struct tick_slot {
    struct sched_tick t;
    /* queued, or claiming (ticklife.h): its claim went out and its answer
     * was lost, so it may be ours already: only that claim's answer (a
     * retry, or claimer_settle) decides it. */
    enum tick_state state;
};

struct ticks {
    bool mark_known;   /* the high-water mark was read in this leadership */
    bool mark_unset;   /* Redis has none: ours (last) is still to be written */
    int64_t last;      /* the last tick dealt with (Unix s) */
    int64_t next_tick; /* the next tick to queue (Unix s); 0: none */
    struct tick_slot *q;
    size_t qhead, qlen, qcap, qmissed; /* a ring; qmissed: how many are missed */
    struct sched_range skipped;        /* ticks that did not run, not yet recorded */
    int64_t claimed_max; /* the last tick this process claimed (kept across leaderships) */
};

/* Frees the queue (t itself is the caller's). */
void ticks_free(struct ticks *t);
/* Forgets what this leadership knew: the queue, the mark, the next tick
 * (claimed_max stays). The range of skipped ticks is the caller's to take
 * first (ticks_take_skipped). */
void ticks_forget(struct ticks *t);

/* The queue's head (ticks_has_head first), and its i-th tick (i < qlen). */
struct tick_slot *ticks_head(struct ticks *t);
struct tick_slot *ticks_at(struct ticks *t, size_t i);
bool ticks_has_head(const struct ticks *t);
/* Appends tick at, due (false when the queue is full: QUEUE_MAX ticks). */
bool ticks_push(struct ticks *t, int64_t at, bool missed, bool overlapped);
/* Takes the head out (the caller has moved it on, or to its end). */
void ticks_pop(struct ticks *t);

/* Adds tick to the range of ticks that did not run. When its outcome or
 * reason differs from the range's, the range so far is moved to *flushed
 * first (returns true: the caller records it before anything else). */
bool ticks_skip(struct ticks *t, int64_t tick, enum history_outcome o, const char *reason,
                struct sched_range *flushed);
/* Takes the range of ticks that did not run (count 0: none). */
struct sched_range ticks_take_skipped(struct ticks *t);

/* What ticks_queue_due() found: the ranges the catch-up policy does not
 * run (to record, oldest first), how many missed ticks were queued, how
 * many ticks were queued (the queue's last, each still due), and a live
 * tick that did not fit in the queue (0: none). */
struct ticks_due {
    struct sched_range dropped, superseded;
    size_t nmissed, nqueued;
    int64_t full; /* record it skipped: the queue is full */
};
/* Queues the ticks of job due at wall_ms (Unix ms: the claim-ahead window
 * added), live or missed; running: runs of the job alive here. */
void ticks_queue_due(struct ticks *t, const struct job *job, int64_t wall_ms, int running,
                     struct ticks_due *out);

/* What the mark read from Redis means for the job's schedule. */
enum ticks_mark {
    TM_CATCH_UP,    /* the schedule continues after the mark */
    TM_NO_CATCH_UP, /* from the term's start: what ran before it cannot be known (log
                       catch_up_skipped, once a term) */
    TM_NO_MARK,     /* none (a new job, or Redis lost it): from now, the mark to write
                       (mark_unset) */
};
/* Applies job's mark (has: Redis had one, v its tick) at now_s. no_catchup:
 * this term's server may lack the last term's claims; lead_s: when this
 * term began (Unix s). */
enum ticks_mark ticks_take_mark(struct ticks *t, const struct job *job, bool has, int64_t v,
                                bool no_catchup, int64_t lead_s, int64_t now_s);
/* This process claimed tick: a later leadership of ours starts after it
 * even if Redis lost the mark. */
void ticks_note_claimed(struct ticks *t, int64_t tick);

/* What to do with the queue's head now. */
enum tick_step {
    TS_NONE,       /* the queue is empty */
    TS_AT_INSTANT, /* decided at its instant (start_ms): a run of the job is alive here */
    TS_WAIT,       /* a run of ours ends first (its SIGCHLD wakes the job) */
    TS_REPLACE,    /* replace: stop our runs; the tick stays unclaimed until they end */
    TS_RECORD,     /* record it (outcome, reason) and pop it: dropped or superseded */
    TS_CLAIM,      /* claim it with mode (early: before its instant, start_ms) */
};
struct tick_intent {
    enum tick_step step;
    enum claim_mode mode;         /* TS_CLAIM */
    bool early;                   /* TS_CLAIM: before its instant */
    int64_t at;                   /* the head's tick */
    int64_t start_ms;             /* when its run begins (sched_start_ms: jitter) */
    enum history_outcome outcome; /* TS_RECORD */
    enum tick_event ev;           /* TS_RECORD: the head's move (drop, supersede) */
    const char *reason;           /* TS_RECORD; TS_CLAIM to skip: the reason to record */
    /* TS_CLAIM: the job is paused (control_hold settles a claiming head): a
     * tick that turns out ours to run is held for the pause's end, not
     * started. */
    bool hold;
};
/* Decides the head at wall_ms (Unix ms) for job, with running runs of the
 * job alive here and live ticks claimed ahead_ms before their instant (0:
 * at their instant). A head that waited past SCHED_LIVE_SLACK_MS becomes
 * missed here, and the catch-up policy decides it; not a claiming head:
 * its claim is made again (the same run id), and its answer decides it
 * (claimer_head: late, the policy then, as for a held tick). */
struct tick_intent ticks_next(struct ticks *t, const struct job *job, int running, int64_t wall_ms,
                              int64_t ahead_ms);

/* The reasons recorded for a tick that did not fit in the queue, and for a
 * live tick skipped because a run of its forbid job was alive elsewhere.
 * Static. */
const char *ticks_reason_full(void);
const char *ticks_reason_busy(void);

#endif
