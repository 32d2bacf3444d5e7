/* ticks.c -- see ticks.h. */
#include <stdlib.h>
#include <string.h>

#include "ticks.h"

#define QUEUE_MAX 4096 /* ticks queued per job, at most */

/* The reason to record for a live tick skipped because of a run elsewhere. */
static const char reason_busy[] = "a run of the job was still alive in the group "
                                  "(concurrency: forbid)";
static const char reason_full[] = "the job's queue of due ticks is full";

void ticks_free(struct ticks *t)
{
    free(t->q);
    t->q = NULL;
    t->qcap = t->qhead = t->qlen = t->qmissed = 0;
}

void ticks_forget(struct ticks *t)
{
    t->qhead = t->qlen = t->qmissed = 0;
    t->mark_known = t->mark_unset = false;
    t->next_tick = 0;
}

bool ticks_has_head(const struct ticks *t)
{
    return t->qlen > 0;
}

struct tick_slot *ticks_head(struct ticks *t)
{
    return &t->q[t->qhead];
}

struct tick_slot *ticks_at(struct ticks *t, size_t i)
{
    return &t->q[(t->qhead + i) % t->qcap];
}

bool ticks_push(struct ticks *t, int64_t at, bool missed, bool overlapped)
{
    if (t->qlen == t->qcap) {
        if (t->qcap == QUEUE_MAX)
            return false;
        size_t cap = t->qcap ? t->qcap * 2 : 8;
        struct tick_slot *q = malloc(cap * sizeof *q);
        if (q == NULL)
            return false;
        for (size_t i = 0; i < t->qlen; i++)
            q[i] = t->q[(t->qhead + i) % t->qcap];
        free(t->q);
        t->q = q;
        t->qcap = cap;
        t->qhead = 0;
    }
    t->q[(t->qhead + t->qlen) % t->qcap] = (struct tick_slot){
        .t = {.at = at, .missed = missed, .overlapped = overlapped}, .state = TICK_DUE};
    t->qlen++;
    t->qmissed += missed;
    return true;
}

void ticks_pop(struct ticks *t)
{
    t->qmissed -= ticks_head(t)->t.missed;
    t->qhead = (t->qhead + 1) % t->qcap;
    t->qlen--;
}

bool ticks_skip(struct ticks *t, int64_t tick, enum history_outcome o, const char *reason,
                struct sched_range *flushed)
{
    struct sched_range *s = &t->skipped;
    bool flush = s->count != 0 && (s->outcome != o || strcmp(s->reason, reason) != 0);
    if (flush)
        *flushed = ticks_take_skipped(t);
    if (s->count == 0) {
        s->first = tick;
        s->outcome = o;
        s->reason = reason;
    }
    if (s->count >= 0)
        s->count++;
    s->last = tick;
    return flush;
}

struct sched_range ticks_take_skipped(struct ticks *t)
{
    struct sched_range s = t->skipped;
    memset(&t->skipped, 0, sizeof t->skipped);
    return s;
}

void ticks_queue_due(struct ticks *t, const struct job *job, int64_t wall_ms, int running,
                     struct ticks_due *out)
{
    int64_t missed[SCHED_CATCHUP_MAX];
    struct sched_due d;
    size_t room = QUEUE_MAX - t->qlen;
    if (job_run_on(job, NULL) == JOB_RUN_ON_ALL && job->concurrency == JOB_FORBID)
        running = 0; /* this node's own share: forbid applies per node (ticks_next) */
    sched_due(job, t->last, wall_ms, missed, room < SCHED_CATCHUP_MAX ? room : SCHED_CATCHUP_MAX,
              &d);
    size_t before = t->qlen;
    *out =
        (struct ticks_due){.dropped = d.dropped, .superseded = d.superseded, .nmissed = d.nmissed};
    /* In tick order: the dropped ones are the oldest, then the superseded
     * (catchup: last), then those that run. */
    for (size_t i = 0; i < d.nmissed; i++)
        ticks_push(t, missed[i], true, false);
    if (d.live != 0 && !ticks_push(t, d.live, false, job->concurrency == JOB_FORBID && running > 0))
        out->full = d.live;
    out->nqueued = t->qlen - before;
    /* Dealt with up to now, but for a tick of this second or before whose
     * run begins later (jitter): the next call starts from it. */
    t->last = wall_ms / 1000;
    if (d.next != 0 && d.next <= t->last)
        t->last = d.next - 1;
    t->next_tick = d.next;
}

enum ticks_mark ticks_take_mark(struct ticks *t, const struct job *job, bool has, int64_t v,
                                bool no_catchup, int64_t lead_s, int64_t now_s)
{
    enum ticks_mark m = TM_CATCH_UP;
    if (has && no_catchup) {
        /* The server may lack the last claims of the term before (a failover
         * to a replica): what ran before this term cannot be known, so
         * nothing before it is caught up. What this term claimed it holds:
         * a mark read later in the term (a resume with catch-up) is caught
         * up from, as far back as the term's start. */
        int64_t from = v > t->claimed_max ? v : t->claimed_max;
        int64_t next = sched_next(job, v);
        if (next != 0 && next < lead_s)
            m = TM_NO_CATCH_UP;
        t->last = from > lead_s ? from : lead_s;
    } else if (has) {
        t->last = v > t->claimed_max ? v : t->claimed_max;
    } else {
        t->last = now_s;
        t->mark_unset = true; /* for the caller to write */
        m = TM_NO_MARK;
    }
    t->mark_known = true;
    t->next_tick = sched_next(job, t->last);
    return m;
}

void ticks_note_claimed(struct ticks *t, int64_t tick)
{
    if (tick > t->claimed_max)
        t->claimed_max = tick;
}

struct tick_intent ticks_next(struct ticks *t, const struct job *job, int running, int64_t wall_ms,
                              int64_t ahead_ms)
{
    if (t->qlen == 0)
        return (struct tick_intent){.step = TS_NONE};
    /* run_on: all: this node's runs of the job are its own share, and
     * forbid and replace apply per node, at the offers (assign.h): a live
     * tick is claimed to run whatever runs live; a missed one (forbid's
     * backlog) still waits for the runs alive, as do ticks claimed ahead
     * (decided at their instant). allow is unchanged (fleet-wide). */
    bool per_node = job_run_on(job, NULL) == JOB_RUN_ON_ALL && job->concurrency != JOB_ALLOW;
    if (per_node)
        running = 0;
    struct sched_tick *h = &ticks_head(t)->t;
    /* Its claim's answer was lost: it may be ours already, so neither its
     * age nor the catch-up policy decides it behind that claim. */
    bool unsettled = ticks_head(t)->state == TICK_CLAIMING;
    int64_t start = sched_start_ms(job, h->at); /* its run begins then */
    struct tick_intent in = {.at = h->at, .start_ms = start, .early = start > wall_ms};
    if (in.early && ahead_ms == 0) { /* decided at its instant */
        in.step = TS_AT_INSTANT;
        return in;
    }
    if (!h->missed && !unsettled && wall_ms - start >= SCHED_LIVE_SLACK_MS) {
        h->missed = true; /* it waited: the catch-up policy decides now */
        t->qmissed++;
    }
    enum sched_verdict v =
        sched_decide(job, h, t->qlen - 1, t->qmissed - (h->missed ? 1 : 0), running, wall_ms);
    if (unsettled && (v == SV_DROP || v == SV_SUPERSEDE))
        v = SV_START; /* claimed again: its answer decides (claimer_head) */
    switch (v) {
    case SV_WAIT: in.step = TS_WAIT; return in;
    case SV_REPLACE: in.step = TS_REPLACE; return in;
    case SV_DROP:
    case SV_SUPERSEDE:
        in.step = TS_RECORD;
        in.outcome = v == SV_DROP ? HO_MISSED : HO_SUPERSEDED;
        in.ev = v == SV_DROP ? TICK_EV_DROP : TICK_EV_SUPERSEDE;
        in.reason = sched_reason(job, v);
        return in;
    case SV_START:
    case SV_SKIP: break;
    }
    in.step = TS_CLAIM;
    in.mode = CLAIM_RUN; /* allow */
    if (v == SV_SKIP)
        in.mode = CLAIM_SKIP;
    else if (job->concurrency == JOB_FORBID && !h->missed)
        in.mode = CLAIM_RUN_OR_SKIP;
    else if (job->concurrency != JOB_ALLOW)
        in.mode = CLAIM_RUN_OR_WAIT; /* forbid's backlog; replace: runs elsewhere */
    if (in.early && in.mode == CLAIM_RUN_OR_SKIP)
        in.mode = CLAIM_RUN_OR_WAIT; /* busy elsewhere: decided at its instant */
    else if (per_node && !in.early &&
             (in.mode == CLAIM_RUN_OR_SKIP ||
              (in.mode == CLAIM_RUN_OR_WAIT && job->concurrency == JOB_REPLACE)))
        in.mode = CLAIM_RUN;
    in.reason = in.mode == CLAIM_SKIP          ? sched_reason(job, SV_SKIP)
                : in.mode == CLAIM_RUN_OR_SKIP ? reason_busy
                                               : NULL;
    return in;
}

const char *ticks_reason_full(void)
{
    return reason_full;
}

const char *ticks_reason_busy(void)
{
    return reason_busy;
}
