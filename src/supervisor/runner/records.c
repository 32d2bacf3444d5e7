/* records.c -- see records.h. */
#include <stdio.h>

#include "facts.h"
#include "records.h"

void records_skipped(struct recorder *rc, const char *job, uint64_t term,
                     const struct sched_range *s)
{
    char first[32], last[32];
    if (s->count == 0)
        return;
    log_rfc3339(s->first, first, sizeof first);
    log_rfc3339(s->last, last, sizeof last);
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", job);
    cJSON_AddStringToObject(f, "scheduled_at", first);
    cJSON_AddStringToObject(f, "until", last);
    if (s->count > 0)
        cJSON_AddNumberToObject(f, "ticks", (double)s->count);
    else
        cJSON_AddNullToObject(f, "ticks");
    cJSON_AddStringToObject(f, "outcome", history_outcome_name(s->outcome));
    cJSON_AddStringToObject(f, "reason", s->reason);
    log_emit_facts_at(
        rc->log, s->outcome == HO_MISSED ? LOG_WARN : LOG_INFO, LE_TICK_SKIPPED, f,
        &(struct log_facts){
            .job = job, .outcome = s->outcome, .ticks = s->count, .reason = s->reason});
    struct history_rec rec = {.run_id = "",
                              .node = rc->node,
                              .term = term,
                              .scheduled_at = s->first,
                              .until = s->last,
                              .ticks = s->count > 0 ? s->count : 0,
                              .trigger = "schedule",
                              .outcome = s->outcome,
                              .exit_code = -1,
                              .signal = "",
                              .reason = s->reason};
    outbox_history(rc->out, job, &rec);
}

void records_skipped_one(struct recorder *rc, const char *job, uint64_t term, int64_t tick,
                         enum history_outcome o, const char *reason)
{
    struct sched_range one = {
        .first = tick, .last = tick, .count = 1, .outcome = o, .reason = reason};
    records_skipped(rc, job, term, &one);
}

void records_skipped_node(struct recorder *rc, const char *job, uint64_t term, int64_t tick,
                          const char *node, const char *run_id, enum history_outcome o,
                          const char *reason)
{
    char when[32];
    log_rfc3339(tick, when, sizeof when);
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", job);
    cJSON_AddStringToObject(f, "scheduled_at", when);
    cJSON_AddStringToObject(f, "until", when);
    cJSON_AddNumberToObject(f, "ticks", 1);
    cJSON_AddStringToObject(f, "outcome", history_outcome_name(o));
    cJSON_AddStringToObject(f, "reason", reason);
    cJSON_AddStringToObject(f, "member", node);
    log_emit_facts_at(rc->log, LOG_INFO, LE_TICK_SKIPPED, f,
                      &(struct log_facts){.job = job, .outcome = o, .ticks = 1, .reason = reason});
    struct history_rec rec = {.run_id = run_id,
                              .node = node,
                              .term = term,
                              .scheduled_at = tick,
                              .until = tick,
                              .ticks = 1,
                              .trigger = "schedule",
                              .outcome = o,
                              .exit_code = -1,
                              .signal = "",
                              .reason = reason};
    outbox_history(rc->out, job, &rec);
}

void records_run(struct recorder *rc, const struct run *run, const char *trigger_id,
                 bool retry_follows)
{
    struct history_rec rec;
    run_record(run, rc->node, &rec);
    if (trigger_id != NULL && trigger_id[0] != '\0')
        outbox_trigger(rc->out, run, trigger_id, &rec);
    else if (!retry_follows) /* else its retry holds it (finish.h) */
        outbox_release(rc->out, run->job->name, run->member);
    outbox_history(rc->out, run->job->name, &rec);
    hooks_run_ended(rc->hooks, run, retry_follows);
}

void records_assigned(struct recorder *rc, const struct run *run, const char *field,
                      const char *reason, int64_t retry_ms)
{
    struct history_rec rec;
    run_record(run, rc->node, &rec);
    if (run->started_wall_ms > 0) {
        rec.dispatched = true;
        rec.dispatch_ms = run->started_wall_ms - run->tick * 1000;
    }
    if ((rec.reason == NULL || rec.reason[0] == '\0') && reason != NULL)
        rec.reason = reason;
    outbox_history(rc->out, run->job->name, &rec);
    outbox_assign_end(rc->out, run->job->name, field, rc->node, run->id, retry_ms);
    hooks_run_ended(rc->hooks, run, retry_ms >= 0);
}

void records_lost(struct recorder *rc, const char *job, uint64_t term, int64_t tick,
                  const char *node, const char *run_id, int attempt, const char *reason)
{
    struct history_rec rec = {.run_id = run_id,
                              .node = node,
                              .term = term,
                              .scheduled_at = tick,
                              .until = tick,
                              .ticks = 1,
                              .trigger = attempt > 1 ? "retry" : "schedule",
                              .outcome = HO_LOST,
                              .exit_code = -1,
                              .signal = "",
                              .attempt = attempt,
                              .reason = reason};
    outbox_history(rc->out, job, &rec);
}

void records_not_started(struct recorder *rc, const struct job *job, uint64_t term, const char *id,
                         const char *member, int64_t tick, bool missed, const char *why)
{
    struct run gone = {.job = job,
                       .tick = tick,
                       .attempt = 1,
                       .term = term,
                       .state = RUN_STARTING,
                       .fence_fd = -1};
    snprintf(gone.id, sizeof gone.id, "%s", id);
    snprintf(gone.member, sizeof gone.member, "%s", member);
    gone.trigger = missed ? RUN_TRIGGER_CATCHUP : RUN_TRIGGER_SCHEDULE;
    gone.outcome = HO_FAILED_TO_START;
    snprintf(gone.error, sizeof gone.error, "%s", why);
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", job->name);
    cJSON_AddStringToObject(f, "run_id", id);
    cJSON_AddStringToObject(f, "outcome", "failed_to_start");
    cJSON_AddStringToObject(f, "error", gone.error);
    log_emit_facts_at(rc->log, LOG_ERROR, LE_JOB_END, f,
                      &(struct log_facts){.job = job->name, .outcome = HO_FAILED_TO_START});
    records_run(rc, &gone, NULL, false);
}

void records_not_started_on(struct recorder *rc, const char *node, const struct job *job,
                            uint64_t term, const char *id, const char *member, int64_t tick,
                            bool missed, const char *why)
{
    struct recorder on = *rc; /* the same writers; the record's node is node */
    on.node = node;
    records_not_started(&on, job, term, id, member, tick, missed, why);
}
