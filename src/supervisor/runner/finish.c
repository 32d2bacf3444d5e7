/* finish.c -- see finish.h. */
#include <stdio.h>
#include <stdlib.h>

#include "facts.h"
#include "finish.h"
#include "jobtable.h"
#include "rtime.h"

static int64_t retry_delay_ms(const struct job *job, int attempt)
{
    int64_t d = job->retry_backoff_ms;
    for (int i = 1; i < attempt && d < INT64_C(3600000); i++)
        d *= 2;
    return d > INT64_C(3600000) ? INT64_C(3600000) : d;
}

/* run failed: its next attempt comes in delay ms (job_retry). */
static void log_retry(const struct rctx *x, const struct run *run, int64_t delay)
{
    cJSON *g = log_fields();
    cJSON_AddStringToObject(g, "job", run->job->name);
    cJSON_AddStringToObject(g, "run_id", run->id);
    cJSON_AddNumberToObject(g, "next_attempt", run->attempt + 1);
    cJSON_AddNumberToObject(g, "retry_in_ms", (double)delay);
    log_emit_facts(x->log, LE_JOB_RETRY, g, &(struct log_facts){.job = run->job->name});
}

/* rr ended: retried, recorded or held, taken out; its job woken. */
static void finish(const struct rctx *x, struct runs *rs, struct rrun *rr)
{
    struct run *run = &rr->run;
    struct jobstate *js = rr->js;
    bool ours = js != NULL && x->leading && !rr->own && js->job == run->job, retry = false;
    bool failed = run->outcome == HO_FAILED || run->outcome == HO_TIMEOUT;
    if (failed && ours && rr->trigger_id[0] == '\0' && run->attempt <= js->job->retries &&
        run->term == x->term) {
        int64_t delay = retry_delay_ms(run->job, run->attempt);
        enum tick_state next = rr->tick;
        ticklife_move(x, run->job->name, run->tick, &next, TICK_EV_RETRY);
        if (finish_add_retry(&js->runs, run->tick, run->attempt + 1, loop_now() + delay * MS,
                             RUN_TRIGGER_RETRY, next)) {
            /* its registration holds the job busy until the retry's own */
            snprintf(js->runs.retries->member, sizeof js->runs.retries->member, "%s", run->member);
            rr->tick = next;
            log_retry(x, run, delay);
            retry = true;
        }
    }
    if (run->outcome == HO_SKIPPED) { /* cancelled before its instant (paused) */
        /* Held for the pause's end while this leader is on it: a resume
         * with catch-up runs it; else it is recorded skipped then. */
        bool hold = ours && js->ctl.pause_until != 0;
        if (hold)
            runs_move_tick(x, rr, TICK_EV_HOLD);
        if (!(hold && finish_hold(&js->runs, run->tick, rr->tick))) {
            runs_move_tick(x, rr, TICK_EV_SKIP);
            if (js != NULL) { /* the ticks before it first */
                struct sched_range before = ticks_take_skipped(&js->ticks);
                records_skipped(x->rec, run->job->name, x->term, &before);
            }
            records_skipped_one(x->rec, run->job->name, x->term, run->tick, HO_SKIPPED, run->error);
        }
        outbox_release(x->out, run->job->name, run->member);
    } else if (rr->handed_back) { /* paused before its go: the leader keeps the tick */
        runs_move_tick(x, rr, TICK_EV_FORGET);
        char when[32];
        log_rfc3339(run->tick, when, sizeof when);
        cJSON *g = log_fields();
        cJSON_AddStringToObject(g, "job", run->job->name);
        cJSON_AddStringToObject(g, "scheduled_at", when);
        cJSON_AddStringToObject(g, "run_id", run->id);
        cJSON_AddStringToObject(g, "reason", run->error);
        log_emit(x->log, LE_HANDED_BACK, g);
    } else if (rr->field[0] != '\0') { /* dispatched here */
        /* A failed run whose job's retries allow another attempt is handed
         * back to the leader (a retry due after the backoff, offered to
         * another member), as the leader retries its own runs. */
        int64_t retry_ms = failed && rr->tick != TICK_ACCEPTED && run->attempt <= run->job->retries
                               ? retry_delay_ms(run->job, run->attempt)
                               : -1;
        char why[480] = "";
        int k = 0;
        if (rr->died[0] != '\0')
            k = snprintf(why, sizeof why,
                         "%s accepted it and was lost before it started it: run here instead; ",
                         rr->died);
        if (rr->moves > 0 && k >= 0 && (size_t)k < sizeof why)
            snprintf(why + k, sizeof why - (size_t)k,
                     "offered %d more time(s) before this node took it", rr->moves);
        runs_move_tick(x, rr, rr->tick == TICK_ACCEPTED ? TICK_EV_START_FAILED : TICK_EV_END);
        if (retry_ms >= 0)
            log_retry(x, run, retry_ms);
        records_assigned(x->rec, run, rr->field, why[0] != '\0' ? why : NULL, retry_ms);
    } else {
        if (!retry) /* a prepared run that never went did not start */
            runs_move_tick(x, rr, rr->tick == TICK_CLAIMED ? TICK_EV_START_FAILED : TICK_EV_END);
        records_run(x->rec, run, rr->trigger_id, retry);
    }
    if (js != NULL) {
        js->runs.running--;
        if (x->leading)
            jobtable_set_key(x->jt, js, loop_now());
    }
    struct jobset *set = rr->set;
    runs_discard(rs, rr);
    jobtable_unref_set(x->jt, set);
    rctx_runs_changed(x);
}

bool finish_reaped(const struct rctx *x, struct runs *rs, pid_t pgid, int wstatus)
{
    struct rrun *rr = rs->list;
    while (rr != NULL && rr->run.pgid != pgid)
        rr = rr->next;
    if (rr == NULL)
        return false;
    run_reaped(&rr->run, wstatus);
    finish(x, rs, rr);
    return true;
}

bool finish_add_retry(struct runs_job *rj, int64_t tick, int attempt, int64_t at_ns,
                      enum run_trigger trigger, enum tick_state state)
{
    struct retry *t = calloc(1, sizeof *t);
    if (t == NULL)
        return false;
    *t = (struct retry){.tick = tick,
                        .state = state,
                        .attempt = attempt,
                        .at_ns = at_ns,
                        .trigger = trigger,
                        .next = rj->retries};
    rj->retries = t;
    return true;
}

bool finish_hold(struct runs_job *rj, int64_t tick, enum tick_state state)
{
    struct retry *t = calloc(1, sizeof *t), **q = &rj->retries;
    if (t == NULL)
        return false;
    *t = (struct retry){.tick = tick, .state = state, .attempt = 1, .trigger = RUN_TRIGGER_CATCHUP};
    while (*q != NULL && !((*q)->state == TICK_HELD && (*q)->tick > tick))
        q = &(*q)->next;
    t->next = *q;
    *q = t;
    return true;
}

bool finish_take_held(struct runs_job *rj, int64_t *tick, enum tick_state *state)
{
    for (struct retry **q = &rj->retries; *q != NULL; q = &(*q)->next)
        if ((*q)->state == TICK_HELD) {
            struct retry *t = *q;
            *tick = t->tick;
            *state = t->state;
            *q = t->next;
            free(t);
            return true;
        }
    return false;
}
