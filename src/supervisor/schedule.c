/* schedule.c -- see schedule.h. */
#include <string.h>

#include "cron.h"
#include "jitter.h"
#include "schedule.h"

int64_t sched_next(const struct job *job, int64_t after)
{
    int64_t t = 0;
    if (!job->enabled || cron_next(job->expr, job->tz, after, &t) != 0)
        return 0;
    return t;
}

int64_t sched_jitter_ms(const struct job *job, int64_t tick)
{
    int64_t d = jitter_delay_ms(job->group, job->name, tick, job->jitter_ms);
    if (d < 1000)
        return d; /* ticks are whole seconds apart: the next is later still */
    int64_t next = sched_next(job, tick);
    if (next != 0 && tick * 1000 + d >= next * 1000)
        d = (next - tick) * 1000 - 1;
    return d;
}

int64_t sched_start_ms(const struct job *job, int64_t tick)
{
    return tick * 1000 + (job->jitter_ms > 0 ? sched_jitter_ms(job, tick) : 0);
}

/* Tick t of job, whose run begins at its start instant, is late at now_ms. */
static bool is_missed(const struct job *job, int64_t t, int64_t now_ms)
{
    return now_ms - sched_start_ms(job, t) >= SCHED_LIVE_SLACK_MS;
}

/* Adds t to range r (kept in order: t is never below r->last). */
static void range_add(struct sched_range *r, int64_t t, enum history_outcome o, const char *why)
{
    if (r->count == 0) {
        r->first = t;
        r->outcome = o;
        r->reason = why;
    }
    if (r->count >= 0)
        r->count++;
    r->last = t;
}

static const char reason_window[] = "older than the catch-up window";
static const char reason_none[] = "missed, and catchup is 0";
static const char reason_last[] = "catchup: last runs only the most recent missed tick";
static const char reason_cap[] = "more missed ticks than are caught up at once";
static const char reason_forbid[] = "a run of the job was still alive (concurrency: forbid)";
static const char reason_replace[] = "a newer tick ran instead (concurrency: replace)";
static const char reason_aged[] = "aged out of the catch-up window while waiting";

/* A point shortly before `until` (Unix s) from which the job's ticks up to
 * `until` are few: the latest of windows of growing size that still holds
 * a tick (or the largest one). Used to skip ticks too many to go through
 * one by one when only the most recent matter. */
static int64_t jump_near(const struct job *job, int64_t until)
{
    static const int64_t spans[] = {60, 3600, 86400, 31 * 86400, 366 * 86400, 10 * 366 * 86400};
    int64_t from = until - spans[0];
    for (size_t i = 0; i < sizeof spans / sizeof spans[0]; i++) {
        from = until - spans[i];
        int64_t t = sched_next(job, from);
        if (t != 0 && t <= until)
            break;
    }
    return from;
}

void sched_due(const struct job *job, int64_t after, int64_t now_ms, int64_t *missed, size_t cap,
               struct sched_due *out)
{
    memset(out, 0, sizeof *out);
    /* The last second whose tick is missed rather than live, whatever its
     * jitter. */
    int64_t missed_until = (now_ms - SCHED_LIVE_SLACK_MS - job->jitter_ms) / 1000;
    int64_t t = sched_next(job, after);
    long steps = 0;

    /* Missed ticks older than a window: counted (up to a point), not run. */
    if (job->catchup_ms > 0)
        while (t != 0 && is_missed(job, t, now_ms) &&
               now_ms - sched_start_ms(job, t) > job->catchup_ms) {
            range_add(&out->dropped, t, HO_MISSED, reason_window);
            t = sched_next(job, t);
            if (++steps > SCHED_ENUM_MAX) {
                /* Too many to count: go on from the window's start
                 * (a jittered tick before it begins before it too). */
                int64_t start = (now_ms - job->catchup_ms + 999) / 1000;
                out->dropped.count = -1;
                if (t != 0 && t < start) {
                    t = sched_next(job, start - 1);
                    out->dropped.last = t != 0 ? t - 1 : start - 1;
                }
                break;
            }
        }

    /* Missed ticks the policy may run. A window holds at most 7 days of
     * ticks; `last` and `0` have no window, so there the walk jumps close
     * to now once it has gone through SCHED_ENUM_MAX ticks. */
    size_t n = 0;
    steps = 0;
    while (t != 0 && is_missed(job, t, now_ms)) {
        if (job->catchup_ms == 0) {
            range_add(&out->dropped, t, HO_MISSED, reason_none);
        } else if (job->catchup_ms == JOB_CATCHUP_LAST) {
            if (n == 1)
                range_add(&out->superseded, missed[0], HO_SUPERSEDED, reason_last);
            if (cap > 0)
                missed[0] = t;
            n = cap > 0 ? 1 : 0;
        } else {
            if (n == cap && cap > 0) { /* keep the newest cap: the oldest goes */
                range_add(&out->dropped, missed[0], HO_MISSED,
                          out->dropped.count == 0 ? reason_cap : out->dropped.reason);
                memmove(missed, missed + 1, (cap - 1) * sizeof *missed);
                n--;
            }
            if (cap > 0)
                missed[n++] = t;
        }
        t = sched_next(job, t);
        if (++steps > SCHED_ENUM_MAX && job->catchup_ms <= 0 && t != 0 && t <= missed_until) {
            int64_t from = jump_near(job, missed_until);
            if (from >= t) {
                struct sched_range *r = job->catchup_ms == 0 ? &out->dropped : &out->superseded;
                if (job->catchup_ms != 0 && n == 1) /* the kept one is superseded too */
                    range_add(r, missed[0], HO_SUPERSEDED, reason_last);
                r->count = -1;
                t = sched_next(job, from);
                r->last = t != 0 ? t - 1 : from;
                n = 0;
            }
            steps = 0;
        }
    }
    out->nmissed = n;

    /* The tick due now (its run begins by now_ms), if any. */
    if (t != 0 && sched_start_ms(job, t) <= now_ms) {
        out->live = t;
        t = sched_next(job, t);
    }
    out->next = t;
}

int64_t sched_span(const struct job *job, int64_t after, int64_t until, enum history_outcome o,
                   const char *why, struct sched_range *r)
{
    int64_t t = sched_next(job, after);
    long steps = 0;
    while (t != 0 && t <= until) {
        range_add(r, t, o, why);
        t = sched_next(job, t);
        if (++steps > SCHED_ENUM_MAX && t != 0 && t <= until) {
            int64_t from = jump_near(job, until);
            if (from >= t) { /* too many to count: on from close to until */
                r->count = -1;
                t = sched_next(job, from);
            }
            steps = 0;
        }
    }
    return t;
}

const char *sched_verdict_name(enum sched_verdict v)
{
    static const char *const names[] = {"start", "wait", "skip", "supersede", "drop", "replace"};
    return ((int)v >= 0 && (size_t)v < sizeof names / sizeof names[0]) ? names[v] : "?";
}

enum sched_verdict sched_decide(const struct job *job, const struct sched_tick *head, size_t behind,
                                size_t missed_behind, int running, int64_t now_ms)
{
    /* A missed tick that waited past its window is owed no more; with
     * catchup: 0, no missed tick is. */
    if (head->missed && job->catchup_ms > 0 &&
        now_ms - sched_start_ms(job, head->at) > job->catchup_ms)
        return SV_DROP;
    if (head->missed && job->catchup_ms == 0)
        return SV_DROP;
    /* catchup: last keeps the most recent missed tick only. */
    if (head->missed && job->catchup_ms == JOB_CATCHUP_LAST && missed_behind > 0)
        return SV_SUPERSEDE;
    switch (job->concurrency) {
    case JOB_ALLOW: return running >= SCHED_ALLOW_PARALLEL ? SV_WAIT : SV_START;
    case JOB_REPLACE:
        if (behind > 0)
            return SV_SUPERSEDE;
        return running > 0 ? SV_REPLACE : SV_START;
    case JOB_FORBID: break;
    }
    if (head->overlapped)
        return SV_SKIP;
    return running > 0 ? SV_WAIT : SV_START;
}

enum sched_verdict sched_held(const struct job *job, int64_t tick, int64_t now_ms)
{
    if (!is_missed(job, tick, now_ms))
        return SV_START;
    if (job->catchup_ms == 0 ||
        (job->catchup_ms > 0 && now_ms - sched_start_ms(job, tick) > job->catchup_ms))
        return SV_DROP;
    if (job->catchup_ms == JOB_CATCHUP_LAST) {
        int64_t next = sched_next(job, tick);
        if (next != 0 && sched_start_ms(job, next) <= now_ms)
            return SV_SUPERSEDE;
    }
    return SV_START;
}

const char *sched_reason(const struct job *job, enum sched_verdict v)
{
    switch (v) {
    case SV_SKIP: return reason_forbid;
    case SV_SUPERSEDE: return job->concurrency == JOB_REPLACE ? reason_replace : reason_last;
    case SV_DROP: return job->catchup_ms == 0 ? reason_none : reason_aged;
    default: return "";
    }
}
