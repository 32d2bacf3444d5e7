/* control.c -- see control.h. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claimer.h"
#include "control.h"
#include "dispatch.h"
#include "facts.h"
#include "finish.h"
#include "jobtable.h"
#include "rtime.h"
#include "steps.h"

static const char reason_paused[] = "paused (baton pause)";

static unsigned hash_id(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % MANUAL_HASH_SIZE;
}

static void wake(const struct rctx *x, struct jobstate *js)
{
    if (x->leading)
        jobtable_set_key(x->jt, js, loop_now());
}

/* ---- requests ---- */

static void log_trigger(const struct rctx *x, enum log_event ev, const char *job, const char *id,
                        int attempt, const char *detail)
{
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", job);
    cJSON_AddStringToObject(f, "trigger_id", id);
    if (attempt > 0)
        cJSON_AddNumberToObject(f, "attempt", attempt);
    if (detail != NULL)
        cJSON_AddStringToObject(f, ev == LE_TRIGGER_RECEIVED ? "by" : "reason", detail);
    log_emit_facts(x->log, ev, f, &(struct log_facts){.job = job});
}

/* Appends request t (attempt) to js's and to the index, and wakes js. */
static void add_manual(const struct rctx *x, struct control *c, struct jobstate *js,
                       const struct trigger *t, int attempt)
{
    struct manual *m = calloc(1, sizeof *m);
    if (m == NULL)
        return; /* it stays pending: the next read of the requests tries again */
    snprintf(m->id, sizeof m->id, "%s", t->id);
    snprintf(m->by, sizeof m->by, "%s", t->by);
    m->attempt = attempt;
    m->requested_s = t->requested_ms / 1000;
    struct manual **p = &js->ctl.manuals, **h = &c->manual_hash[hash_id(m->id)];
    while (*p != NULL)
        p = &(*p)->next;
    *p = m;
    m->hash_next = *h;
    *h = m;
    c->nmanuals++;
    log_trigger(x, LE_TRIGGER_RECEIVED, js->job->name, t->id, attempt, t->by);
    wake(x, js);
}

/* Takes cj's first request out of its list and the index, and frees it. */
static void pop_manual(struct control *c, struct control_job *cj)
{
    struct manual *m = cj->manuals;
    cj->manuals = m->next;
    for (struct manual **h = &c->manual_hash[hash_id(m->id)]; *h != NULL; h = &(*h)->hash_next)
        if (*h == m) {
            *h = m->hash_next;
            break;
        }
    free(m);
    c->nmanuals--;
}

/* True when request id is one this runner knows: waiting here, or running. */
static bool manual_known(const struct control *c, const struct runs *rs, const char *id)
{
    if (runs_have_trigger(rs, id))
        return true;
    for (const struct manual *m = c->manual_hash[hash_id(id)]; m != NULL; m = m->hash_next)
        if (strcmp(m->id, id) == 0)
            return true;
    return false;
}

/* Acts on request t as the leader: a pending one is queued on its job (or
 * rejected when there is no such job); one claimed by a run that no longer
 * exists is recovered (trigger_recover). Returns false when Redis failed. */
/* The first label of js's run_on this node lacks, or NULL. A manual run
 * of a job run on members runs on the leader (control.h): one whose labels
 * the leader lacks is refused, not run on the wrong server. */
static const char *label_missing(const struct rctx *x, const struct jobstate *js)
{
    char *const *want;
    if (job_run_on(js->job, &want) != JOB_RUN_ON_LABELS)
        return NULL;
    for (; want != NULL && *want != NULL; want++) {
        bool has = false;
        for (const char *const *l = x->labels; l != NULL && *l != NULL && !has; l++)
            has = strcmp(*l, *want) == 0;
        if (!has)
            return *want;
    }
    return NULL;
}

static bool take_trigger(const struct rctx *x, struct control *c, const struct trigger *t)
{
    struct jobstate *js = jobtable_find(x->jt, t->job);
    const char *missing = js != NULL ? label_missing(x, js) : NULL;
    if (t->state == TRIGGER_PENDING && missing != NULL) {
        char why[JOB_NAME_MAX + 320];
        snprintf(why, sizeof why,
                 "a manual run of a job run on members runs on the leader, and the leader "
                 "(node %s) lacks the label \"%s\" of its run_on: rejected (trigger it while "
                 "a node with the label leads)",
                 x->node, missing);
        log_trigger(x, LE_TRIGGER_REJECTED, t->job, t->id, 0, why);
        return trigger_reject(x->client, x->group, t->id, why) == BATON_OK;
    }
    if (t->state == TRIGGER_PENDING) {
        if (js != NULL) {
            add_manual(x, c, js, t, t->attempt);
            return true;
        }
        char why[JOB_NAME_MAX + 160];
        snprintf(why, sizeof why, "the leader (node %s) has no job \"%s\" in its jobs.yaml",
                 x->node, t->job);
        log_trigger(x, LE_TRIGGER_REJECTED, t->job, t->id, 0, why);
        return trigger_reject(x->client, x->group, t->id, why) == BATON_OK;
    }
    if (t->state != TRIGGER_CLAIMED && t->state != TRIGGER_RUNNING)
        return true;
    char member[RUN_ID_MAX + 160];
    bool requeued, lost;
    snprintf(member, sizeof member, "%s/%s", t->node, t->run_id);
    if (trigger_recover(x->client, x->group, t->job, t->id, t->run_id, member, x->lease_ttl_ms,
                        &requeued, &lost) != BATON_OK)
        return false;
    if (lost)
        log_trigger(x, LE_TRIGGER_LOST, t->job, t->id, t->attempt,
                    "its node stopped answering while it ran: presumed killed, not run again");
    if (requeued && js != NULL)
        add_manual(x, c, js, t, t->attempt + 1);
    return true;
}

/* Reads the requests not yet done (all of them, at most TRIGGER_QUEUE_MAX:
 * the requests of one busy job must never hide another's) and takes those
 * this runner does not know. Returns false when Redis failed. */
static bool read_triggers(const struct rctx *x, struct control *c, const struct runs *rs)
{
    struct trigger_reply ids;
    if (trigger_list(x->client, x->group, TRIGGER_QUEUE_MAX, &ids) != BATON_OK)
        return false;
    bool ok = true;
    for (size_t i = 0; i < ids.n && ok; i++) {
        struct trigger_reply t;
        if (manual_known(c, rs, ids.v[i].id))
            continue;
        if (!rctx_may_block(x)) {
            ok = false;
            break;
        }
        if (trigger_get(x->client, x->group, ids.v[i].id, &t) != BATON_OK) {
            ok = false;
        } else if (t.n == 0) {
            trigger_forget(x->client, x->group, ids.v[i].id); /* its hash is gone */
        } else if (t.incomplete && t.v[0].state == TRIGGER_PENDING) {
            /* It reached a minority of the quorum's masters when it was
             * made (its client was told so): no majority can claim it. */
            static const char why[] = "incomplete: the request reached only a minority of the "
                                      "masters when it was made (baton trigger said so)";
            log_trigger(x, LE_TRIGGER_REJECTED, t.v[0].job, t.v[0].id, 0, why);
            ok = trigger_reject(x->client, x->group, t.v[0].id, why) == BATON_OK;
        } else {
            ok = take_trigger(x, c, &t.v[0]);
        }
        trigger_reply_free(&t);
    }
    trigger_reply_free(&ids);
    return ok;
}

void control_manuals(const struct rctx *x, struct control *c, struct runs *rs, struct jobstate *js,
                     int64_t now)
{
    while (js->ctl.manuals != NULL && js->hold_until == 0 && x->leading) {
        struct manual *m = js->ctl.manuals;
        enum claim_mode mode = CLAIM_RUN;
        if (js->job->concurrency != JOB_ALLOW) {
            if (js->runs.running > 0) { /* a run of ours first: its SIGCHLD wakes us */
                if (js->job->concurrency == JOB_REPLACE)
                    runs_stop_job(rs, js);
                return;
            }
            mode = CLAIM_RUN_OR_WAIT;
        } else if (js->runs.running >= SCHED_ALLOW_PARALLEL) {
            return;
        }
        const char *token = baton_election_token(x->election);
        outbox_flush(x->out, x->may_block, x->host); /* our ended runs must not look busy */
        if (token == NULL)
            return;
        if (!rctx_may_block(x)) {
            js->hold_until = now + GATE_RETRY_MS * MS;
            return;
        }
        char id[RUN_ID_MAX], member[RUN_ID_MAX + 160];
        struct claim_reply reply;
        trigger_run_id(m->id, m->attempt, id, sizeof id);
        snprintf(member, sizeof member, "%s/%s", x->node, id);
        enum claim_result res =
            trigger_claim(x->client, x->group, js->job->name, baton_election_key(x->election),
                          token, m->id, m->attempt, mode, member, x->node, x->term, &reply);
        struct claim_next next = claim_step_of(res, true);
        bool late = next.step == STEP_START && claimer_late(x);
        if (next.step == STEP_START && x->fault_stop_after_claim) {
            raise(SIGSTOP);
            late = claimer_late(x);
        }
        if (next.step == STEP_START && late) { /* left claimed: the next leader runs it */
            log_trigger(x, LE_TRIGGER_LEFT, js->job->name, m->id, m->attempt,
                        "claimed after the leader's stop point (it was stalled)");
        } else if (next.step == STEP_START) {
            struct rrun *rr = runs_start(x, rs, js, id, m->requested_s, m->attempt,
                                         RUN_TRIGGER_MANUAL, m->id, false, TICK_CLAIMED);
            if (rr != NULL) { /* its request says it started */
                snprintf(rr->run.by, sizeof rr->run.by, "%s", m->by);
                outbox_trigger(x->out, &rr->run, rr->trigger_id, NULL);
            }
        } else if (next.step == STEP_LEAVE) {
            log_trigger(x, LE_TRIGGER_LEFT, js->job->name, m->id, m->attempt, next.reason);
        } else if (next.step == STEP_WAIT) {
            claimer_wait_busy(x, js, &reply, rs, false, 0, now);
        } else if (next.step == STEP_RETRY) {
            js->hold_until = now + CLAIM_RETRY_MS * MS;
        }
        claim_reply_free(&reply);
        if (!next.done)
            return;
        pop_manual(c, &js->ctl);
    }
}

/* ---- pauses ---- */

/* The pause an entry means (0: none; PAUSE_FOREVER: no resume yet; else
 * its resume's instant, Unix s). */
static int64_t entry_until(const struct pause_entry *e)
{
    return e == NULL ? 0 : e->resumed ? e->resumed_at : PAUSE_FOREVER;
}

/* Logs a change of entry job ("*" for every job) from old (its raw JSON,
 * NULL: none) to e (NULL: gone). */
static void log_pause(const struct rctx *x, const char *job, const char *old,
                      const struct pause_entry *e)
{
    if ((e != NULL && old != NULL && strcmp(old, e->raw) == 0) || (e == NULL && old == NULL))
        return;
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", job);
    if (e != NULL && !e->resumed) {
        char since[40];
        log_rfc3339_ms(e->since_ms, since, sizeof since);
        cJSON_AddStringToObject(f, "since", since);
        cJSON_AddStringToObject(f, "by", e->by);
        cJSON_AddStringToObject(f, "reason", e->reason);
        log_emit_facts(x->log, LE_JOB_PAUSED, f, &(struct log_facts){.job = job});
        return;
    }
    cJSON_AddBoolToObject(f, "catchup", e == NULL);
    if (e != NULL) {
        char at[32];
        log_rfc3339(e->resumed_at, at, sizeof at);
        cJSON_AddStringToObject(f, "skipped_until", at);
        cJSON_AddStringToObject(f, "by", e->by);
    }
    log_emit_facts(x->log, LE_JOB_RESUMED, f, &(struct log_facts){.job = job});
}

/* The end of a resume of entry (job, or "*" when job is NULL): deletes it
 * if it still holds raw (what was read). */
static void entry_done(const struct rctx *x, const char *job, const char *raw)
{
    if (raw != NULL && rctx_may_block(x))
        pause_done(x->client, x->group, job != NULL ? job : PAUSE_ALL, raw);
}

void control_record_held(const struct rctx *x, struct jobstate *js)
{
    int64_t tick;
    enum tick_state s;
    while (finish_take_held(&js->runs, &tick, &s)) {
        ticklife_move(x, js->job->name, tick, &s, TICK_EV_SKIP);
        struct sched_range before = ticks_take_skipped(&js->ticks); /* in tick order */
        records_skipped(x->rec, js->job->name, x->term, &before);
        records_skipped_one(x->rec, js->job->name, x->term, tick, HO_SKIPPED, reason_paused);
    }
}

/* js's pause ended with catch-up at wall (ms): each held tick runs now (a
 * retry of attempt 1, due at once), or is recorded as the catch-up policy
 * says (sched_held()); the job then catches up from its mark, as a new
 * leader does. */
static void resume_catchup(const struct rctx *x, struct jobstate *js, int64_t wall)
{
    int64_t tick;
    enum tick_state s;
    struct runs_job kept = {0};
    while (finish_take_held(&js->runs, &tick, &s)) {
        enum sched_verdict v = sched_held(js->job, tick, wall);
        if (v == SV_START) {
            enum tick_state resumed = s;
            ticklife_move(x, js->job->name, tick, &resumed, TICK_EV_RESUME);
            if (finish_add_retry(&kept, tick, 1, loop_now(),
                                 wall - sched_start_ms(js->job, tick) < SCHED_LIVE_SLACK_MS
                                     ? RUN_TRIGGER_SCHEDULE
                                     : RUN_TRIGGER_CATCHUP,
                                 resumed))
                continue;
            v = SV_DROP; /* out of memory: it was claimed; recorded */
        }
        ticklife_move(x, js->job->name, tick, &s, v == SV_DROP ? TICK_EV_DROP : TICK_EV_SUPERSEDE);
        struct sched_range before = ticks_take_skipped(&js->ticks);
        records_skipped(x->rec, js->job->name, x->term, &before);
        records_skipped_one(x->rec, js->job->name, x->term, tick,
                            v == SV_DROP ? HO_MISSED : HO_SUPERSEDED, sched_reason(js->job, v));
    }
    while (kept.retries != NULL) { /* due now, as retries of attempt 1 */
        struct retry *r = kept.retries;
        kept.retries = r->next;
        r->next = js->runs.retries;
        js->runs.retries = r;
    }
    memset(&js->ctl.paused, 0, sizeof js->ctl.paused);
    ticklife_forget(x, js->job->name, &js->ticks);
}

/* Adds s, a range of later ticks of the same outcome and reason, to r. */
static void range_join(struct sched_range *r, const struct sched_range *s)
{
    if (s->count == 0)
        return;
    if (r->count == 0) {
        *r = *s;
        return;
    }
    r->last = s->last;
    r->count = r->count < 0 || s->count < 0 ? -1 : r->count + s->count;
}

/* Records js's range of paused ticks and moves its mark past them (a
 * claim of the last one as skipped, with a member of its own, so that a
 * retry after a lost answer knows the claim for ours). Returns false when
 * it cannot now. */
static bool write_paused(const struct rctx *x, struct jobstate *js)
{
    struct sched_range *p = &js->ctl.paused;
    const char *token = baton_election_token(x->election);
    if (p->count == 0)
        return true;
    if (token == NULL || !rctx_may_block(x))
        return false;
    struct claim_reply reply;
    char member[RUN_ID_MAX + 160];
    snprintf(member, sizeof member, "%s/paused-%" PRId64, x->node, p->last);
    enum claim_result res =
        claim_tick(x->client, x->group, js->job->name, baton_election_key(x->election), token,
                   p->last, CLAIM_SKIP, member, NULL, &reply);
    claim_reply_free(&reply);
    if (res == CLAIM_SKIPPED || res == CLAIM_OURS_SKIPPED || res == CLAIM_NOT_DURABLE)
        records_skipped(x->rec, js->job->name, x->term, p);
    else if (res != CLAIM_TAKEN) /* TAKEN: dealt with already */
        return false;
    ticks_note_claimed(&js->ticks, p->last);
    memset(p, 0, sizeof *p);
    return true;
}

bool control_hold(const struct rctx *x, struct control *c, struct claimer *cl, struct runs *rs,
                  struct jobstate *js, int64_t wall)
{
    struct control_job *cj = &js->ctl;
    struct ticks *t = &js->ticks;
    int64_t now_s = wall / 1000;
    bool finishing = cj->pause_until != PAUSE_FOREVER && now_s >= cj->pause_until;
    int64_t until = finishing ? cj->pause_until : now_s;
    if (ticks_has_head(t) && ticks_head(t)->state == TICK_CLAIMING) {
        /* It may be ours already: its claim, made again to run (the
         * answer says what the lost claim did; one to skip would turn a
         * claim to run into skipped), decides it: ours to run, held as a
         * tick claimed before the pause is; one not applied is claimed
         * now and held too, which ends as a paused tick does (recorded
         * skipped at a resume, run at one with catch-up). */
        struct tick_intent in = {.step = TS_CLAIM,
                                 .mode = CLAIM_RUN,
                                 .at = ticks_head(t)->t.at,
                                 .reason = reason_paused,
                                 .hold = true};
        if (!claimer_head(x, cl, rs, js, &in))
            return false;
        struct sched_range skipped = ticks_take_skipped(t); /* found claimed as skipped */
        records_skipped(x->rec, js->job->name, x->term, &skipped);
    }
    if (!finishing && now_s - t->last < PAUSE_FLUSH_S)
        return true; /* nothing to write yet: counted when it is */
    struct sched_range before = ticks_take_skipped(t); /* in tick order: what was decided */
    records_skipped(x->rec, js->job->name, x->term, &before);
    control_record_held(x, js); /* claimed already: older than the queue's */
    /* run on members: the markers the pause held in Redis (claimed before
     * it, or handed back by their member) are recorded skipped alike */
    if (finishing && job_run_on(js->job, NULL) != JOB_RUN_ON_LEADER &&
        !dispatch_record_held(x, js, until, reason_paused))
        return false;
    for (struct tick_slot *q; ticks_has_head(t); ticks_pop(t)) {
        q = ticks_head(t);
        ticklife_move(x, js->job->name, q->t.at, &q->state, TICK_EV_SKIP);
        sched_span(js->job, q->t.at - 1, q->t.at, HO_SKIPPED, reason_paused, &cj->paused);
    }
    if (until > t->last) {
        struct sched_range span = {0};
        t->next_tick = sched_span(js->job, t->last, until, HO_SKIPPED, reason_paused, &span);
        ticklife_move_range(x, js->job->name, &span, TICK_DUE, TICK_EV_SKIP);
        range_join(&cj->paused, &span);
        t->last = until;
    }
    if (!write_paused(x, js))
        return false;
    if (!finishing)
        return true;
    entry_done(x, js->job->name, cj->pause_raw);
    free(cj->pause_raw);
    cj->pause_raw = NULL;
    cj->pause_until = cj->own_until = 0;
    if (cj->all_pending) {
        cj->all_pending = false;
        if (--c->all_pending == 0)
            entry_done(x, NULL, c->all_raw);
    }
    return true;
}

/* Applies the paused hash as read: each job's pause_until is the later of
 * its own entry's and "*"'s. A job no longer paused at all was resumed
 * with catch-up: it catches up from its high-water mark. */
static void apply_pauses(const struct rctx *x, struct control *c, const struct pause_list *l)
{
    const struct pause_entry *all = pause_find(l, PAUSE_ALL);
    bool all_changed = !(all == NULL ? c->all_raw == NULL
                                     : c->all_raw != NULL && strcmp(all->raw, c->all_raw) == 0);
    if (all_changed) {
        log_pause(x, PAUSE_ALL, c->all_raw, all);
        free(c->all_raw);
        c->all_raw = all != NULL ? strdup(all->raw) : NULL;
        c->all_until = c->all_raw != NULL ? entry_until(all) : 0;
    }
    /* Nothing paused now nor at the last read: nothing to walk (this runs
     * every control_poll_ms, and 10,000 jobs are not walked for nothing). */
    if (l->n == 0 && !all_changed && c->all_raw == NULL && c->npaused == 0)
        return;
    for (struct jobstate *js = x->jt->states; js != NULL; js = js->next)
        js->ctl.own_until = -1; /* not seen yet */
    for (size_t i = 0; i < l->n; i++) {
        struct jobstate *js = jobtable_find(x->jt, l->v[i].job);
        if (js == NULL)
            continue;
        log_pause(x, js->job->name, js->ctl.pause_raw, &l->v[i]);
        if (js->ctl.pause_raw == NULL || strcmp(js->ctl.pause_raw, l->v[i].raw) != 0) {
            free(js->ctl.pause_raw);
            js->ctl.pause_raw = strdup(l->v[i].raw);
        }
        js->ctl.own_until = entry_until(&l->v[i]);
    }
    c->all_pending = 0;
    c->npaused = 0;
    for (struct jobstate *js = x->jt->states; js != NULL; js = js->next) {
        struct control_job *cj = &js->ctl;
        if (cj->own_until < 0) { /* no entry of its own */
            log_pause(x, js->job->name, cj->pause_raw, NULL);
            free(cj->pause_raw);
            cj->pause_raw = NULL;
            cj->own_until = 0;
        }
        int64_t until = cj->own_until > c->all_until ? cj->own_until : c->all_until;
        if (all_changed)
            cj->all_pending =
                c->all_until != 0 && c->all_until != PAUSE_FOREVER && cj->own_until <= c->all_until;
        c->all_pending += cj->all_pending;
        c->npaused += until != 0 || cj->pause_raw != NULL;
        if (until == cj->pause_until)
            continue;
        if (until == 0) /* resumed with catch-up: from the mark, as a new leader */
            resume_catchup(x, js, rtime_wall_ms());
        cj->pause_until = until;
        wake(x, js);
    }
    if (all_changed && c->all_until != 0 && c->all_until != PAUSE_FOREVER && c->all_pending == 0)
        entry_done(x, NULL, c->all_raw);
}

void control_read(const struct rctx *x, struct control *c, const struct runs *rs, int64_t now)
{
    struct pause_list l;
    if (!x->leading) {
        c->at = 0;
        return;
    }
    if (!rctx_may_block(x)) {
        c->at = now + GATE_RETRY_MS * MS;
        return;
    }
    if (pause_read(x->client, x->group, &l) != BATON_OK) {
        c->at = now + CONTROL_RETRY_MS * MS;
        return;
    }
    apply_pauses(x, c, &l);
    pause_list_free(&l);
    c->at = now + (read_triggers(x, c, rs) ? c->poll_ms : CONTROL_RETRY_MS) * MS;
}

void control_job_clear(struct control *c, struct control_job *cj)
{
    while (cj->manuals != NULL)
        pop_manual(c, cj);
    free(cj->pause_raw);
    cj->pause_raw = NULL;
    cj->pause_until = cj->own_until = 0;
    cj->all_pending = false;
    memset(&cj->paused, 0, sizeof cj->paused);
}

void control_forget_all(struct control *c)
{
    free(c->all_raw);
    c->all_raw = NULL;
    c->all_until = 0;
    c->all_pending = 0;
}
