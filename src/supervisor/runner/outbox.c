/* outbox.c -- see outbox.h. */
#include <stdlib.h>
#include <string.h>

#include "assign.h"
#include "claim.h"
#include "outbox.h"
#include "rtime.h"
#include "trigger.h"

#define OUTBOX_MAX     1000 /* bookkeeping writes waiting, at most */
#define FLUSH_RETRY_MS 1000 /* a write could not be made: try again then */

enum outbox_kind {
    OUT_HISTORY,         /* a history record */
    OUT_RELEASE,         /* unregister a run (claim_release) */
    OUT_TRIGGER_STARTED, /* a manual run started (trigger_started) */
    OUT_TRIGGER_DONE,    /* a manual run ended: unregister it, request done (trigger_finish) */
    OUT_ASSIGN_END,      /* a run dispatched here ended: unregister it, end it (assign_end) */
};

struct outbox_item {
    enum outbox_kind kind;
    struct history_command cmd;         /* OUT_HISTORY */
    char *job, *member;                 /* OUT_RELEASE, OUT_TRIGGER_DONE */
    char *trigger_id, *run_id, *reason; /* OUT_TRIGGER_*; run_id: OUT_ASSIGN_END too */
    char *field, *node;                 /* OUT_ASSIGN_END */
    enum history_outcome outcome;       /* OUT_TRIGGER_DONE */
    int exit_code;
    const char *signal;              /* static */
    int64_t started_ms, duration_ms; /* OUT_TRIGGER_DONE: when the command ran */
    int64_t retry_ms;                /* OUT_ASSIGN_END: a retry due in (-1: none) */
    struct outbox_item *next;
};

static void item_free(struct outbox_item *it)
{
    history_command_free(&it->cmd);
    free(it->job);
    free(it->member);
    free(it->trigger_id);
    free(it->run_id);
    free(it->reason);
    free(it->field);
    free(it->node);
    free(it);
}

static bool unregisters(const struct outbox_item *it)
{
    return it->kind == OUT_RELEASE || it->kind == OUT_TRIGGER_DONE || it->kind == OUT_ASSIGN_END;
}

/* Takes the oldest item out and frees it. */
static void pop(struct outbox *o)
{
    struct outbox_item *it = o->head;
    o->head = it->next;
    if (o->head == NULL)
        o->tail = NULL;
    o->n--;
    o->nunreg -= unregisters(it);
    item_free(it);
}

static void put(struct outbox *o, struct outbox_item *it)
{
    if (o->n == OUTBOX_MAX) { /* bounded: the oldest goes */
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "job", o->head->job != NULL ? o->head->job : "");
        cJSON_AddStringToObject(f, "run_id", "");
        cJSON_AddStringToObject(f, "error",
                                "too many records waiting for Redis: the oldest is dropped");
        log_emit(o->log, LE_HISTORY_WRITE_FAILED, f);
        pop(o);
    }
    if (o->tail != NULL)
        o->tail->next = it;
    else
        o->head = it;
    o->tail = it;
    o->n++;
    o->nunreg += unregisters(it);
}

void outbox_history(struct outbox *o, const char *job, const struct history_rec *rec)
{
    struct outbox_item *it = calloc(1, sizeof *it);
    if (it == NULL || (it->job = strdup(job)) == NULL ||
        history_command(rec, o->group, job, o->history_len, &it->cmd) != BATON_OK) {
        if (it != NULL)
            item_free(it);
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "job", job);
        cJSON_AddStringToObject(f, "run_id", rec->run_id != NULL ? rec->run_id : "");
        cJSON_AddStringToObject(f, "error", "out of memory");
        log_emit(o->log, LE_HISTORY_WRITE_FAILED, f);
        return;
    }
    put(o, it);
}

void outbox_release(struct outbox *o, const char *job, const char *member)
{
    struct outbox_item *it = calloc(1, sizeof *it);
    if (it == NULL || (it->job = strdup(job)) == NULL || (it->member = strdup(member)) == NULL) {
        if (it != NULL)
            item_free(it);
        return; /* the registration expires on its own */
    }
    it->kind = OUT_RELEASE;
    put(o, it);
}

void outbox_assign_end(struct outbox *o, const char *job, const char *field, const char *node,
                       const char *run_id, int64_t retry_ms)
{
    struct outbox_item *it = calloc(1, sizeof *it);
    if (it == NULL || (it->job = strdup(job)) == NULL || (it->field = strdup(field)) == NULL ||
        (it->node = strdup(node)) == NULL || (it->run_id = strdup(run_id)) == NULL) {
        if (it != NULL)
            item_free(it);
        return; /* the registration expires on its own; the leader then finds it lost */
    }
    it->kind = OUT_ASSIGN_END;
    it->retry_ms = retry_ms;
    put(o, it);
}

void outbox_trigger(struct outbox *o, const struct run *run, const char *trigger_id,
                    const struct history_rec *rec)
{
    struct outbox_item *it = calloc(1, sizeof *it);
    if (it == NULL || (it->job = strdup(run->job->name)) == NULL ||
        (it->member = strdup(run->member)) == NULL ||
        (it->trigger_id = strdup(trigger_id)) == NULL || (it->run_id = strdup(run->id)) == NULL ||
        (it->reason = strdup(rec != NULL ? rec->reason : "")) == NULL) {
        if (it != NULL)
            item_free(it);
        if (rec != NULL) /* at least unregister it */
            outbox_release(o, run->job->name, run->member);
        return;
    }
    it->kind = rec != NULL ? OUT_TRIGGER_DONE : OUT_TRIGGER_STARTED;
    if (rec != NULL) {
        it->outcome = rec->outcome;
        it->exit_code = rec->exit_code;
        it->signal = rec->signal;
        it->started_ms = rec->started_ms;
        it->duration_ms = rec->duration_ms;
    }
    put(o, it);
}

/* Writes one item. Returns 0 or a BATON_E* code. */
static int write_item(struct outbox *o, const struct outbox_item *it)
{
    switch (it->kind) {
    case OUT_RELEASE: return claim_release(o->client, o->group, it->job, it->member);
    case OUT_ASSIGN_END:
        return assign_end(o->client, o->group, it->job, it->field, it->node, it->run_id,
                          it->retry_ms);
    case OUT_TRIGGER_STARTED:
        return trigger_started(o->client, o->group, it->trigger_id, it->run_id);
    case OUT_TRIGGER_DONE: {
        struct history_rec rec = {.run_id = it->run_id,
                                  .outcome = it->outcome,
                                  .exit_code = it->exit_code,
                                  .signal = it->signal,
                                  .reason = it->reason,
                                  .started_ms = it->started_ms,
                                  .duration_ms = it->duration_ms};
        return trigger_finish(o->client, o->group, it->job, it->member, it->trigger_id, &rec);
    }
    case OUT_HISTORY: break;
    }
    return history_write(o->client, &it->cmd);
}

void outbox_flush(struct outbox *o, bool (*may_block)(void *ctx), void *ctx)
{
    /* After a failure, not before its retry time, however often we are
     * called: over a quorum without a majority, a write that failed may
     * still have reached some masters (a release publishes "ended J" there,
     * which wakes us), and trying again at each wake-up would feed itself. */
    if (o->failed_until != 0 && loop_now() < o->failed_until)
        return;
    o->failed_until = 0;
    while (o->head != NULL && may_block(ctx)) {
        struct outbox_item *it = o->head;
        int rc = write_item(o, it);
        if (rc == BATON_EIO || rc == BATON_ENOMEM) {
            o->retry_at = loop_now() + FLUSH_RETRY_MS * MS; /* keep it: try later */
            o->failed_until = o->retry_at;
            return;
        }
        if (rc != BATON_OK && it->kind == OUT_HISTORY) {
            cJSON *f = log_fields();
            cJSON_AddStringToObject(f, "job", it->job);
            cJSON_AddStringToObject(f, "run_id", it->cmd.argc > 10 ? it->cmd.argv[9] : "");
            cJSON_AddStringToObject(f, "error", baton_client_errstr(o->client));
            log_emit(o->log, LE_HISTORY_WRITE_FAILED, f);
        }
        pop(o);
    }
    /* Whatever is left waits for the gate to open. */
    o->retry_at = o->head == NULL ? 0 : loop_now() + GATE_RETRY_MS * MS;
}

void outbox_clear(struct outbox *o)
{
    while (o->head != NULL)
        pop(o);
}

bool outbox_unregisters(const struct outbox *o, const char *job)
{
    for (const struct outbox_item *it = o->head; it != NULL && o->nunreg > 0; it = it->next)
        if (unregisters(it) && strcmp(it->job, job) == 0)
            return true;
    return false;
}

bool outbox_ends(const struct outbox *o, const char *job, const char *member)
{
    for (const struct outbox_item *it = o->head; it != NULL && o->nunreg > 0; it = it->next) {
        if (!unregisters(it) || strcmp(it->job, job) != 0)
            continue;
        if (it->kind != OUT_ASSIGN_END) {
            if (strcmp(it->member, member) == 0)
                return true;
            continue;
        }
        size_t nl = strlen(it->node); /* a retry's end holds the job on: not ended */
        if (it->retry_ms < 0 && strncmp(member, it->node, nl) == 0 && member[nl] == '/' &&
            strcmp(member + nl + 1, it->run_id) == 0)
            return true;
    }
    return false;
}
