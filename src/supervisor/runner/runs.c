/* runs.c -- see runs.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "jobtable.h"
#include "outbox.h"
#include "rtime.h"
#include "runs.h"

/* The fence a run's shim enforces on its own (proc.h): SIGTERM at the stop
 * point of what covers it (the lease, or its own registration after a
 * handover), SIGKILL kill_margin before that ends: what the daemon and the
 * runner do themselves, in a process that a stopped or starved baton does
 * not hold back. */
static void fence_of(const struct rctx *x, const struct runs *rs, bool own, int64_t *term_at,
                     int64_t *kill_at)
{
    int64_t cover = own ? rs->own_cover : rs->lease_deadline;
    *term_at = cover != 0 ? cover - x->guard_ns : 0;
    *kill_at = cover != 0 ? cover - rs->kill_margin_ns : 0;
}

/* Tells the shims of the runs covered by the lease (own false) or by their
 * own registration (own true) where their fence is now. */
static void send_fences(const struct rctx *x, struct runs *rs, bool own)
{
    int64_t term_at, kill_at;
    fence_of(x, rs, own, &term_at, &kill_at);
    for (struct rrun *rr = rs->list; rr != NULL; rr = rr->next)
        if (rr->own == own)
            run_fence(&rr->run, term_at, kill_at);
}

/* Moves the tick of rr (a tick's run; not a manual one) by ev. */
void runs_move_tick(const struct rctx *x, struct rrun *rr, enum tick_event ev)
{
    if (rr->trigger_id[0] == '\0')
        ticklife_move(x, rr->run.job->name, rr->run.tick, &rr->tick, ev);
}

/* Takes rr out of the list and frees it. */
void runs_discard(struct runs *rs, struct rrun *rr)
{
    for (struct rrun **p = &rs->list; *p != NULL; p = &(*p)->next)
        if (*p == rr) {
            *p = rr->next;
            rs->n--;
            break;
        }
    run_dispose(&rr->run);
    free(rr);
}

/* runs_start() and runs_accepted(): a run covered by the lease, or (own)
 * by its own registration, in term. */
static struct rrun *start(const struct rctx *x, struct runs *rs, struct jobstate *js,
                          const char *id, int64_t tick, int attempt, enum run_trigger trigger,
                          const char *trigger_id, bool prepared, enum tick_state state,
                          const struct assign *a, uint64_t term)
{
    struct rrun *rr = calloc(1, sizeof *rr);
    if (rr == NULL) { /* no memory for even the record: a tiny one on the stack */
        struct run gone = {.job = js->job,
                           .tick = tick,
                           .attempt = attempt,
                           .term = term,
                           .trigger = trigger,
                           .state = RUN_EXITED,
                           .outcome = HO_FAILED_TO_START,
                           .fence_fd = -1,
                           .env = &rs->env};
        snprintf(gone.id, sizeof gone.id, "%s", id);
        snprintf(gone.member, sizeof gone.member, "%s/%s", x->node, id);
        snprintf(gone.error, sizeof gone.error, "out of memory");
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "job", js->job->name);
        cJSON_AddStringToObject(f, "run_id", id);
        cJSON_AddStringToObject(f, "outcome", "failed_to_start");
        cJSON_AddStringToObject(f, "error", "out of memory");
        log_emit_facts_at(x->log, LOG_ERROR, LE_JOB_END, f,
                          &(struct log_facts){.job = js->job->name, .outcome = HO_FAILED_TO_START});
        if (trigger_id == NULL)
            ticklife_move(x, js->job->name, tick, &state, TICK_EV_START_FAILED);
        if (a != NULL)
            records_assigned(x->rec, &gone, a->field, NULL, -1);
        else
            records_run(x->rec, &gone, trigger_id, false);
        return NULL;
    }
    int64_t term_at, kill_at;
    fence_of(x, rs, a != NULL, &term_at, &kill_at);
    rr->next = rs->list;
    rs->list = rr;
    rs->n++;
    if (trigger_id != NULL)
        snprintf(rr->trigger_id, sizeof rr->trigger_id, "%s", trigger_id);
    if (a != NULL) {
        rr->own = true;
        snprintf(rr->field, sizeof rr->field, "%s", a->field);
        snprintf(rr->avalue, sizeof rr->avalue, "%s", a->value);
        rr->moves = a->moves;
        snprintf(rr->died, sizeof rr->died, "%s", a->died);
    }
    rr->tick = state;
    bool started = run_start(&rr->run, &rs->env, js->job, id, tick, attempt, term, trigger, term_at,
                             kill_at, prepared);
    if (!started || !rr->run.prepared) /* a prepared one starts at its go */
        runs_move_tick(x, rr, started ? TICK_EV_START : TICK_EV_START_FAILED);
    if (!started) {
        if (a != NULL) /* failed_to_start: logged */
            records_assigned(x->rec, &rr->run, a->field, NULL, -1);
        else
            records_run(x->rec, &rr->run, trigger_id, false);
        runs_discard(rs, rr);
        return NULL;
    }
    rr->js = js;
    rr->set = js->set;
    jobtable_hold_set(js->set);
    js->runs.running++;
    if (!rr->run.prepared)
        rctx_runs_changed(x);
    return rr;
}

struct rrun *runs_start(const struct rctx *x, struct runs *rs, struct jobstate *js, const char *id,
                        int64_t tick, int attempt, enum run_trigger trigger, const char *trigger_id,
                        bool prepared, enum tick_state state)
{
    return start(x, rs, js, id, tick, attempt, trigger, trigger_id, prepared, state, NULL, x->term);
}

/* The end of a registration measured from the send time of the request
 * that confirmed it, less the drift the library allows a lease. */
static int64_t cover_from(int64_t sent_ns, int64_t ttl_ms)
{
    return sent_ns + (ttl_ms - ttl_ms / 100 - 2) * MS;
}

struct rrun *runs_accepted(const struct rctx *x, struct runs *rs, struct jobstate *js,
                           const struct assign *a, uint64_t term, int64_t sent_ns)
{
    /* Its registration ends no sooner than the oldest confirmed of the
     * others': they share one cover, refreshed together (runs_tend). */
    int64_t cover = cover_from(sent_ns, x->lease_ttl_ms);
    if (rs->own_cover == 0 || cover < rs->own_cover)
        rs->own_cover = cover;
    if (rs->own_refresh_at == 0)
        rs->own_refresh_at = loop_now() + rs->refresh_ms * MS;
    return start(x, rs, js, a->run_id, a->tick, a->attempt,
                 a->attempt > 1 ? RUN_TRIGGER_RETRY : RUN_TRIGGER_SCHEDULE, NULL, true,
                 TICK_ACCEPTED, a, term);
}

size_t runs_assigned(const struct runs *rs)
{
    size_t n = 0;
    for (const struct rrun *rr = rs->list; rr != NULL; rr = rr->next)
        n += rr->field[0] != '\0';
    return n;
}

void runs_free(struct runs *rs)
{
    while (rs->list != NULL)
        runs_discard(rs, rs->list); /* SIGKILLs the group (run_dispose) */
}

bool runs_have_trigger(const struct runs *rs, const char *id)
{
    for (const struct rrun *rr = rs->list; rr != NULL; rr = rr->next)
        if (strcmp(rr->trigger_id, id) == 0)
            return true;
    return false;
}

bool runs_stale(const struct rctx *x, const struct runs *rs, const char *job, const char *member)
{
    size_t nl = strlen(x->node);
    if (strncmp(member, x->node, nl) != 0 || member[nl] != '/')
        return false;
    for (const struct rrun *rr = rs->list; rr != NULL; rr = rr->next)
        if (strcmp(rr->run.member, member) == 0)
            return false;
    return outbox_ends(x->out, job, member);
}

void runs_stop_job(struct runs *rs, const struct jobstate *js)
{
    for (struct rrun *rr = rs->list; rr != NULL; rr = rr->next)
        if (rr->js == js && rr->run.state == RUN_RUNNING)
            run_stop(&rr->run, RUN_STOP_REPLACED, 0);
}

void runs_stop_member(struct runs *rs, const char *member, size_t len)
{
    for (struct rrun *rr = rs->list; rr != NULL; rr = rr->next)
        if (strlen(rr->run.member) == len && memcmp(rr->run.member, member, len) == 0)
            run_stop(&rr->run, RUN_STOP_REPLACED, 0);
}

/* The runs covered by the lease (own false) or on their own, as claim
 * entries. Returns how many (owned arrays in *out and *which; none when
 * out of memory). */
static size_t entries(struct runs *rs, bool own, struct claim_entry **out, struct rrun ***which)
{
    size_t n = 0, i = 0;
    *out = NULL;
    *which = NULL;
    for (struct rrun *rr = rs->list; rr != NULL; rr = rr->next)
        n += rr->own == own && rr->run.state != RUN_EXITED;
    if (n == 0)
        return 0;
    *out = calloc(n, sizeof **out);
    *which = calloc(n, sizeof **which);
    if (*out == NULL || *which == NULL) {
        free(*out);
        free(*which);
        *out = NULL;
        *which = NULL;
        return 0;
    }
    for (struct rrun *rr = rs->list; rr != NULL; rr = rr->next)
        if (rr->own == own && rr->run.state != RUN_EXITED) {
            (*out)[i] = (struct claim_entry){.job = rr->run.job->name, .member = rr->run.member};
            (*which)[i++] = rr;
        }
    return n;
}

/* The registrations that the retries of this leader's failed runs keep
 * through their backoff (finish.h), as claim entries. Returns how many
 * (an owned array in *out; none when out of memory). */
static size_t held_entries(const struct rctx *x, struct claim_entry **out)
{
    size_t n = 0, i = 0;
    *out = NULL;
    for (const struct jobstate *js = x->jt->states; js != NULL; js = js->next)
        for (const struct retry *t = js->runs.retries; t != NULL; t = t->next)
            n += t->member[0] != '\0';
    if (n == 0 || (*out = calloc(n, sizeof **out)) == NULL)
        return 0;
    for (const struct jobstate *js = x->jt->states; js != NULL; js = js->next)
        for (const struct retry *t = js->runs.retries; t != NULL; t = t->next)
            if (t->member[0] != '\0')
                (*out)[i++] = (struct claim_entry){.job = js->job->name, .member = t->member};
    return n;
}

/* Extends the n registrations e with the lease (lost: they were gone). */
static void refresh_lease(const struct rctx *x, const struct claim_entry *e, size_t n)
{
    const char *token = baton_election_token(x->election);
    if (n == 0 || token == NULL || !rctx_may_block(x))
        return;
    bool *lost = calloc(n, sizeof *lost);
    if (lost != NULL)
        claim_refresh(x->client, x->group, baton_election_key(x->election), token, REFRESH_LEASE,
                      x->lease_ttl_ms, e, n, lost);
    free(lost);
}

void runs_lease_renewed(const struct rctx *x, struct runs *rs, int64_t deadline)
{
    struct claim_entry *e;
    struct rrun **which;
    rs->lease_deadline = deadline;
    send_fences(x, rs, false);
    size_t n = entries(rs, false, &e, &which);
    refresh_lease(x, e, n);
    free(e);
    free(which);
    n = held_entries(x, &e);
    refresh_lease(x, e, n);
    free(e);
}

int runs_handover(const struct rctx *x, struct runs *rs, int64_t deadline)
{
    struct claim_entry *e;
    struct rrun **which;
    rs->lease_deadline = deadline;
    size_t n = entries(rs, false, &e, &which);
    const char *token = baton_election_token(x->election);
    int rc = BATON_OK;
    if (n > 0) {
        bool *lost = calloc(n, sizeof *lost);
        int64_t sent = loop_now();
        if (lost == NULL)
            rc = BATON_ENOMEM;
        else if (token == NULL)
            rc = BATON_ELOST;
        else if (!rctx_may_block(x))
            rc = BATON_ETIMEDOUT;
        else
            rc = claim_refresh(x->client, x->group, baton_election_key(x->election), token,
                               REFRESH_HANDOVER, x->lease_ttl_ms, e, n, lost);
        if (rc == BATON_OK) {
            int64_t cover = cover_from(sent, x->lease_ttl_ms);
            for (size_t i = 0; i < n; i++) {
                which[i]->own = !lost[i];
                if (lost[i]) /* gone from Redis (a data loss): nothing covers it */
                    run_stop(&which[i]->run, RUN_STOP_UNREGISTERED, loop_now());
            }
            if (rs->own_cover == 0 || cover < rs->own_cover)
                rs->own_cover = cover;
            rs->own_refresh_at = loop_now() + rs->refresh_ms * MS;
            send_fences(x, rs, true);
        }
        free(lost);
    }
    free(e);
    free(which);
    return rc;
}

static void log_lost(const struct rctx *x, const struct rrun *rr, const char *reason)
{
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", rr->run.job->name);
    cJSON_AddStringToObject(f, "run_id", rr->run.id);
    cJSON_AddStringToObject(f, "reason", reason);
    log_emit(x->log, LE_RUN_LOST, f);
}

void runs_tend(const struct rctx *x, struct runs *rs, int64_t now)
{
    struct claim_entry *e;
    struct rrun **which;
    size_t n = entries(rs, true, &e, &which);
    if (n == 0) {
        rs->own_cover = rs->own_refresh_at = 0;
        goto out;
    }
    if (now >= rs->own_cover - x->guard_ns) {
        /* Unconfirmed at its stop point: dead before it ends. */
        for (size_t i = 0; i < n; i++)
            if (which[i]->run.state == RUN_RUNNING)
                log_lost(x, which[i], "its registration could not be renewed");
        for (size_t i = 0; i < n; i++)
            run_stop(&which[i]->run, RUN_STOP_UNREGISTERED, rs->own_cover - rs->kill_margin_ns);
        goto out;
    }
    if (now < rs->own_refresh_at)
        goto out;
    if (!rctx_may_block(x)) {
        rs->own_refresh_at = now + GATE_RETRY_MS * MS;
        goto out;
    }
    bool *lost = calloc(n, sizeof *lost);
    int64_t sent = loop_now();
    int rc = lost != NULL ? claim_refresh(x->client, x->group, baton_election_key(x->election),
                                          NULL, REFRESH_OWN, x->lease_ttl_ms, e, n, lost)
                          : BATON_ENOMEM;
    if (rc == BATON_OK) {
        rs->own_cover = cover_from(sent, x->lease_ttl_ms);
        rs->own_refresh_at = loop_now() + rs->refresh_ms * MS;
        send_fences(x, rs, true);
        for (size_t i = 0; i < n; i++)
            if (lost[i] && which[i]->run.state == RUN_RUNNING) {
                log_lost(x, which[i], "its registration is gone from Redis");
                run_stop(&which[i]->run, RUN_STOP_UNREGISTERED, loop_now());
            }
    } else {
        int64_t retry = rs->refresh_ms / 4;
        rs->own_refresh_at = loop_now() + (retry < 10 ? 10 : retry > 500 ? 500 : retry) * MS;
    }
    free(lost);
out:
    free(e);
    free(which);
}

void runs_fence_lease(const struct rctx *x, struct runs *rs, int64_t now)
{
    if (x->leading || rs->lease_deadline == 0 || now < rs->lease_deadline - x->guard_ns)
        return;
    for (struct rrun *rr = rs->list; rr != NULL; rr = rr->next)
        if (!rr->own)
            run_stop(&rr->run, RUN_STOP_PAUSED, rs->lease_deadline - rs->kill_margin_ns);
}

int64_t runs_stop_point(const struct rctx *x, const struct runs *rs)
{
    int64_t p = 0;
    for (const struct rrun *rr = rs->list; rr != NULL; rr = rr->next) {
        int64_t cover = rr->own ? rs->own_cover : (x->leading ? 0 : rs->lease_deadline);
        if (cover != 0 && (p == 0 || cover - x->guard_ns < p))
            p = cover - x->guard_ns;
    }
    return p;
}

void runs_terminate(struct runs *rs, bool all, int64_t kill_by_ns)
{
    for (struct rrun *rr = rs->list; rr != NULL; rr = rr->next)
        if (all || !rr->own)
            run_stop(&rr->run, all ? RUN_STOP_SHUTDOWN : RUN_STOP_PAUSED, kill_by_ns);
}

void runs_go(const struct rctx *x, struct runs *rs, bool late, int64_t stepped_ns,
             void (*went)(void *ctx, int64_t tick), void *ctx)
{
    int64_t now = loop_now(), wall = loop_wall_ns();
    for (struct rrun *rr = rs->list; rr != NULL; rr = rr->next) {
        struct run *run = &rr->run;
        if (!run->prepared)
            continue;
        int64_t at = run_start_ms(run) * MS;
        if (at - wall > stepped_ns) {
            run_cancel(run, HO_FAILED_TO_START,
                       "the wall clock was stepped back after its claim, before the tick's "
                       "instant: not run");
            continue;
        }
        if (wall < at)
            continue;
        const char *why = NULL;
        if (rr->own) {
            if (rs->own_cover == 0 || now >= rs->own_cover - x->guard_ns)
                why = "its registration reached its stop point before the tick's instant "
                      "(after a handover): not run";
        } else if (!x->leading) {
            why = "this node stopped leading before the tick's instant: not run";
        } else if (late) {
            why = "the lease reached its stop point before the tick's instant (the leader "
                  "was stalled): not run";
        }
        if (why == NULL && rr->field[0] != '\0') {
            /* Dispatched here: marked started before its exec, or not run
             * (the leader may have offered it elsewhere already). */
            if (!rctx_may_block(x))
                continue; /* the gate: looked at again in a millisecond */
            struct assign a;
            int rc = assign_parse(rr->field, rr->avalue, &a)
                         ? assign_started(x->client, x->group, run->job->name, &a)
                         : BATON_EPROTO;
            if (rc == ASSIGN_PAUSED) { /* as the leader holds its own claimed ticks */
                rr->handed_back = true;
                why = "its job was paused before the tick's instant: handed back to the leader, "
                      "which holds it for the pause's end";
            } else if (rc == BATON_ELOST)
                why = "its registration lapsed before the tick's instant (the leader may offer "
                      "it to another member): not run here";
            else if (rc != BATON_OK)
                why = "it could not be marked started in Redis: not run";
        }
        if (why != NULL)
            run_cancel(run, HO_FAILED_TO_START, why);
        else if (!rr->own && rr->js != NULL && rr->js->ctl.pause_until != 0 &&
                 run->tick <= rr->js->ctl.pause_until) /* paused after its claim */
            run_cancel(run, HO_SKIPPED, "paused (baton pause)");
        else if (run_go(run)) {
            runs_move_tick(x, rr, TICK_EV_START);
            rctx_runs_changed(x);
        }
        went(ctx, run_start_ms(run));
    }
}

int64_t runs_next(const struct rctx *x, const struct runs *rs, int64_t *go)
{
    int64_t next = 0;
    bool own = false, own_running = false, lease_running = false;
    *go = 0;
    /* The stop points matter for runs not yet told to stop (a run being
     * stopped has its own KILL time): never a time in the past again. */
    for (const struct rrun *rr = rs->list; rr != NULL; rr = rr->next) {
        rtime_earliest(&next, run_next_ns(&rr->run));
        if (rr->run.prepared && (*go == 0 || run_start_ms(&rr->run) * MS < *go))
            *go = run_start_ms(&rr->run) * MS;
        own |= rr->own;
        own_running |= rr->own && rr->run.state == RUN_RUNNING;
        lease_running |= !rr->own && rr->run.state == RUN_RUNNING;
    }
    if (own)
        rtime_earliest(&next, rs->own_refresh_at);
    if (own_running)
        rtime_earliest(&next, rs->own_cover - x->guard_ns);
    if (lease_running && !x->leading && rs->lease_deadline != 0)
        rtime_earliest(&next, rs->lease_deadline - x->guard_ns);
    return next;
}

void runs_tick(struct runs *rs, int64_t now)
{
    for (struct rrun *rr = rs->list; rr != NULL; rr = rr->next)
        run_tick(&rr->run, now);
}

cJSON *runs_json(const struct runs *rs, size_t max)
{
    cJSON *a = cJSON_CreateArray();
    size_t n = 0, skip = 0;
    for (const struct rrun *rr = rs->list; rr != NULL; rr = rr->next)
        n += rr->run.state != RUN_STARTING && rr->run.state != RUN_EXITED;
    if (n > max)
        skip = n - max; /* the newest (the list's first) are left out */
    for (const struct rrun *rr = rs->list; rr != NULL && a != NULL; rr = rr->next) {
        const struct run *run = &rr->run;
        char when[40];
        if (run->state == RUN_STARTING || run->state == RUN_EXITED)
            continue;
        if (skip > 0) {
            skip--;
            continue;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "job", run->job->name);
        cJSON_AddStringToObject(o, "run_id", run->id);
        cJSON_AddStringToObject(o, "trigger", run_trigger_name(run->trigger));
        log_rfc3339(run->tick, when, sizeof when);
        cJSON_AddStringToObject(o, "scheduled_at", when);
        log_rfc3339_ms(run->started_wall_ms, when, sizeof when);
        cJSON_AddStringToObject(o, "started", when);
        if (run->by[0] != '\0')
            cJSON_AddStringToObject(o, "by", run->by);
        else
            cJSON_AddNullToObject(o, "by");
        cJSON_InsertItemInArray(a, 0, o); /* the oldest first */
    }
    return a;
}
