/* turn.c -- see turn.h. */
#include <stdlib.h>

#include "claimer.h"
#include "control.h"
#include "jobtable.h"
#include "marks.h"
#include "records.h"
#include "rtime.h"
#include "runs.h"
#include "turn.h"
#include "waits.h"

/* Starting runs (a claim round trip and a fork each) stops after this long
 * in one turn of the loop and goes on a millisecond later, after the
 * lease's own timers: a catch-up of many jobs at once never holds the
 * loop past the renewal. */
#define TURN_BUDGET_MS 20

/* Queues the ticks due for js at wall (ms), recording those the catch-up
 * policy does not run. */
static void queue_due(struct turn *tn, struct jobstate *js, int64_t wall)
{
    struct ticks_due d;
    struct sched_range before;
    const char *name = js->job->name;
    ticks_queue_due(&js->ticks, js->job, wall, js->runs.running, &d);
    for (size_t i = js->ticks.qlen - d.nqueued; i < js->ticks.qlen; i++) {
        struct tick_slot *q = ticks_at(&js->ticks, i);
        ticklife_move(tn->x, name, q->t.at, &q->state, TICK_EV_QUEUE);
    }
    ticklife_move_range(tn->x, name, &d.dropped, TICK_DUE, TICK_EV_DROP);
    ticklife_move_range(tn->x, name, &d.superseded, TICK_DUE, TICK_EV_SUPERSEDE);
    if (d.nmissed > 0 || d.dropped.count != 0 || d.superseded.count != 0) {
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "job", js->job->name);
        cJSON_AddNumberToObject(f, "missed_ticks", (double)d.nmissed);
        if (d.dropped.count != 0)
            cJSON_AddNumberToObject(f, "outside_window", (double)d.dropped.count);
        if (d.superseded.count != 0)
            cJSON_AddNumberToObject(f, "superseded", (double)d.superseded.count);
        log_emit(tn->x->log, LE_CATCH_UP, f);
    }
    /* In tick order: the dropped ones are the oldest, then the superseded
     * (catchup: last), then those that run. */
    before = ticks_take_skipped(&js->ticks);
    records_skipped(tn->x->rec, js->job->name, tn->x->term, &before);
    records_skipped(tn->x->rec, js->job->name, tn->x->term, &d.dropped);
    records_skipped(tn->x->rec, js->job->name, tn->x->term, &d.superseded);
    if (d.full != 0) {
        enum tick_state full = TICK_DUE;
        ticklife_move(tn->x, name, d.full, &full, TICK_EV_SKIP);
        if (ticks_skip(&js->ticks, d.full, HO_SKIPPED, ticks_reason_full(), &before))
            records_skipped(tn->x->rec, js->job->name, tn->x->term, &before);
    }
}

/* Decides js's queue, head after head, claiming what it can in this turn. */
static void decide_ticks(struct turn *tn, struct jobstate *js, int64_t now, int64_t wall)
{
    struct sched_range before;
    for (int claims = 0; tn->x->leading && js->hold_until == 0; claims++) {
        if (!ticks_has_head(&js->ticks))
            break;
        if (claims > 0 && loop_now() >= tn->end) {
            js->hold_until = loop_now(); /* the rest next turn (runner_on_timer) */
            break;
        }
        struct tick_intent in = ticks_next(&js->ticks, js->job, js->runs.running, wall,
                                           window_ahead_ms(&tn->cl->win, js));
        if (in.step == TS_AT_INSTANT) {
            js->hold_until = rtime_mono_at_ms(in.start_ms, now, wall);
            break;
        }
        if (in.step == TS_WAIT || in.step == TS_NONE)
            break; /* a run of ours ends first: its SIGCHLD wakes us */
        if (in.step == TS_REPLACE) {
            /* Unclaimed until the old runs are gone: a leader that dies
             * meanwhile leaves the tick to the next one, not lost. */
            runs_stop_job(tn->runs, js);
            break;
        }
        if (in.step == TS_RECORD) {
            ticklife_move(tn->x, js->job->name, in.at, &ticks_head(&js->ticks)->state, in.ev);
            if (ticks_skip(&js->ticks, in.at, in.outcome, in.reason, &before))
                records_skipped(tn->x->rec, js->job->name, tn->x->term, &before);
            ticks_pop(&js->ticks);
            continue;
        }
        if (waits_behind(js, &in, now))
            break;
        bool dealt = claimer_head(tn->x, tn->cl, tn->runs, js, &in);
        waits_after_claim(tn->x, js, in.at, dealt);
        if (!dealt)
            break;
    }
    before = ticks_take_skipped(&js->ticks);
    records_skipped(tn->x->rec, js->job->name, tn->x->term, &before);
}

/* When js next has something to do: its next tick (paused: the resume, or
 * the next record of its skipped ticks), a hold, a retry. */
static int64_t next_key(const struct turn *tn, const struct jobstate *js, int64_t now, int64_t wall)
{
    int64_t key = 0;
    if (js->ctl.pause_until != 0 && js->ticks.mark_known && js->hold_until == 0) {
        int64_t at = js->ctl.pause_until != PAUSE_FOREVER ? js->ctl.pause_until
                                                          : js->ticks.last + PAUSE_FLUSH_S;
        int64_t t = rtime_mono_at(at, now, wall);
        rtime_earliest(&key, t > now ? t : now + CONTROL_RETRY_MS * MS);
    } else if (js->ticks.next_tick != 0 && js->ctl.pause_until == 0) {
        rtime_earliest(&key,
                       rtime_mono_at_ms(sched_start_ms(js->job, js->ticks.next_tick), now, wall) -
                           window_ahead_ms(&tn->cl->win, js) * MS);
    }
    rtime_earliest(&key, js->hold_until);
    /* A due retry that could not start (no blocking call allowed, Redis
     * failing) looks again soon: never a key in the past. */
    for (const struct retry *t = js->runs.retries; t != NULL; t = t->next)
        if (t->state != TICK_HELD && !(js->job->concurrency == JOB_FORBID && js->runs.running > 0))
            rtime_earliest(&key, t->at_ns > now ? t->at_ns : now + GATE_RETRY_MS * MS);
    return key;
}

/* Does what js has to do now; sets its key to when it next has something
 * to do. */
static void process_job(struct turn *tn, struct jobstate *js)
{
    int64_t now = loop_now(), wall = rtime_wall_ms();
    if (!tn->x->leading) {
        jobtable_set_key(tn->x->jt, js, 0);
        return;
    }
    if (js->hold_until != 0 && js->hold_until <= now)
        js->hold_until = 0;
    if (!js->ticks.mark_known && js->hold_until == 0 &&
        !marks_read(tn->x, tn->marks, tn->cl, &js, 1))
        js->hold_until = now + CLAIM_RETRY_MS * MS;
    if (js->ticks.mark_known && js->ticks.mark_unset)
        marks_write(tn->x, &js, 1);
    if (js->ticks.mark_known) {
        claimer_retries(tn->x, tn->cl, tn->runs, js, now);
        control_manuals(tn->x, tn->ctl, tn->runs, js, now); /* a paused job runs by hand */
        if (js->ctl.pause_until != 0 && js->hold_until == 0 &&
            !control_hold(tn->x, tn->ctl, tn->cl, tn->runs, js, wall))
            js->hold_until = now + CLAIM_RETRY_MS * MS;
    }
    if (js->ticks.mark_known && js->ctl.pause_until == 0) {
        int64_t ahead = window_ahead_ms(&tn->cl->win, js);
        if (js->ticks.next_tick != 0 &&
            sched_start_ms(js->job, js->ticks.next_tick) <= wall + ahead)
            queue_due(tn, js, wall + ahead);
        decide_ticks(tn, js, now, wall);
    }
    jobtable_set_key(tn->x->jt, js, next_key(tn, js, now, wall));
}

/* Forgets js's schedule (no longer leading, or its definition changed):
 * what is decided is recorded; requests and pauses stay in Redis for the
 * next leader to read. */
void turn_clear(struct turn *tn, struct jobstate *js)
{
    struct sched_range before = ticks_take_skipped(&js->ticks);
    waits_leave(tn->x, js);
    claimer_failures_end(tn->x, &js->claim, js->job->name, false);
    records_skipped(tn->x->rec, js->job->name, tn->x->term, &before);
    control_record_held(tn->x, js);
    ticklife_forget(tn->x, js->job->name, &js->ticks);
    js->hold_until = 0;
    while (js->runs.retries != NULL) {
        struct retry *t = js->runs.retries;
        js->runs.retries = t->next;
        claimer_let_go(tn->x, tn->cl, js, t, NULL);
        free(t);
    }
    control_job_clear(tn->ctl, &js->ctl);
    jobtable_set_key(tn->x->jt, js, 0);
}
void turn_jobs(struct turn *tn, int64_t now)
{
    /* Every job that has something to do now, earliest first, for at most
     * TURN_BUDGET_MS (at least one job). A job that still has something to
     * do now gets a later key (a hold), or a hold of now when the budget
     * ran out while it started runs: the loop ends. */
    tn->end = now + TURN_BUDGET_MS * MS;
    for (int jobs = 0; tn->x->leading && tn->x->jt->nheap > 0; jobs++) {
        int64_t t = loop_now();
        struct jobstate *top = jobtable_top(tn->x->jt);
        if (top->key > t || (jobs > 0 && t >= tn->end))
            break; /* past the budget: the coordinator's timer makes the rest due in 1 ms */
        process_job(tn, top); /* gives it a key in the future, or none */
    }
}
