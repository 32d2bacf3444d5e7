/* claimer.c -- see claimer.h. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "claimer.h"
#include "dispatch.h"
#include "finish.h"
#include "hook.h"
#include "jobtable.h"
#include "runlimits.h"
#include "pools.h"
#include "rtime.h"
#include "steps.h"

#define BUSY_POLL_MS 500 /* a tick waiting for a run elsewhere looks again this often */

void claimer_run_id(const struct rctx *x, struct claimer *c, int64_t tick, int attempt, char *id,
                    size_t len)
{
    c->seq++;
    snprintf(id, len, "%" PRId64 "-%" PRIu64 "-%d-%" PRIu64, tick, x->term, attempt, c->seq);
}

bool claimer_late(const struct rctx *x)
{
    return loop_now() >= baton_election_deadline_ns(x->election) - x->guard_ns;
}

void claimer_set_lost(struct claimer *c, struct claim_state *cs, bool lost)
{
    if (cs->lost != lost)
        c->nlost = lost ? c->nlost + 1 : c->nlost - 1;
    cs->lost = lost;
}

static void log_claim(const struct rctx *x, const char *job, int64_t tick, enum log_event ev,
                      enum log_level lvl, const char *error, const char *then)
{
    char when[32];
    log_rfc3339(tick, when, sizeof when);
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", job);
    cJSON_AddStringToObject(f, "scheduled_at", when);
    if (error != NULL)
        cJSON_AddStringToObject(f, "error", error);
    cJSON_AddStringToObject(f, "then", then);
    log_emit_at(x->log, lvl, ev, f);
}

void claimer_failures_end(const struct rctx *x, struct claim_state *cs, const char *job,
                          bool answered)
{
    if (cs->failures == 0)
        return;
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", job);
    cJSON_AddNumberToObject(f, "failures", (double)cs->failures);
    cJSON_AddNumberToObject(f, "outage_ms", (double)((loop_now() - cs->failing_since) / MS));
    cJSON_AddBoolToObject(f, "answered", answered);
    log_emit(x->log, LE_CLAIM_FAILURES_ENDED, f);
    cs->failures = cs->failing_since = 0;
}

/* ---- settling lost claims ---- */

static const char reason_lost[] =
    "claimed by a request whose answer was lost (Redis stalled), and this node stopped leading "
    "before it could start it: not run";
static const char reason_reset[] =
    "claimed by a request whose answer was lost (Redis stalled), and let go before it could "
    "start (its job was resumed with catch-up, or changed): not run";
static const char reason_undecided[] =
    "its claim was undecided (a majority of the masters did not answer it) when this node gave "
    "it up: not run here (a later leader runs it unless a majority had it)";

void claimer_settle(const struct rctx *x, struct claimer *c, struct jobstate *js)
{
    struct claim_state *cs = &js->claim;
    if (!cs->lost || cs->id[0] == '\0' || !rctx_may_block(x))
        return;
    char member[RUN_ID_MAX + 160];
    snprintf(member, sizeof member, "%s/%s", x->node, cs->id);
    enum claim_result res = claim_lookup(x->client, x->group, js->job->name, cs->tick, member);
    enum tick_state s = TICK_CLAIMING; /* a lost claim: its answer comes now */
    if ((res == CLAIM_OURS || res == CLAIM_OURS_EXPIRED) &&
        job_run_on(js->job, NULL) != JOB_RUN_ON_LEADER &&
        !dispatch_let_go(x, js, cs->tick, cs->id)) {
        /* run on members: its marker is offered by a tend (dispatch.h) */
        ticklife_move(x, js->job->name, cs->tick, &s, TICK_EV_WON);
        log_claim(x, js->job->name, cs->tick, LE_CLAIM_RECOVERED, LOG_INFO, NULL,
                  "offered to a member");
    } else if (res == CLAIM_OURS || res == CLAIM_OURS_EXPIRED) {
        ticklife_move(x, js->job->name, cs->tick, &s, TICK_EV_VOID);
        log_claim(x, js->job->name, cs->tick, LE_CLAIM_RECOVERED, LOG_INFO, NULL,
                  "recorded not started");
        records_not_started(x->rec, js->job, x->term, cs->id, member, cs->tick, true,
                            x->leading && cs->term == x->term ? reason_reset : reason_lost);
    } else if (res == CLAIM_OURS_SKIPPED) {
        ticklife_move(x, js->job->name, cs->tick, &s, TICK_EV_WON_SKIP);
        log_claim(x, js->job->name, cs->tick, LE_CLAIM_RECOVERED, LOG_INFO, NULL,
                  "recorded skipped");
        records_skipped_one(x->rec, js->job->name, x->term, cs->tick, HO_SKIPPED,
                            cs->skip_reason != NULL ? cs->skip_reason : ticks_reason_busy());
    } else if (res == CLAIM_ERROR && cs->majority > 1) {
        ticklife_move(x, js->job->name, cs->tick, &s, TICK_EV_VOID);
        records_not_started(x->rec, js->job, x->term, cs->id, member, cs->tick, true,
                            reason_undecided);
        res = CLAIM_TAKEN; /* dealt with */
    } else if (res == CLAIM_TAKEN) {
        ticklife_move(x, js->job->name, cs->tick, &s, TICK_EV_TAKEN);
    }
    if (res != CLAIM_ERROR) {
        claimer_set_lost(c, cs, false);
        cs->id[0] = '\0';
    }
}

/* ---- claims ---- */

/* Leaves out of reply (of job) the runs of ours that have ended
 * (runs_stale): they count for nothing. */
static void live_busy(const struct rctx *x, const struct runs *rs, const char *job,
                      struct claim_reply *reply)
{
    size_t live = 0;
    for (size_t i = 0; i < reply->nbusy; i++)
        if (!runs_stale(x, rs, job, reply->busy[i]))
            reply->busy[live++] = reply->busy[i];
    reply->nbusy = live;
}

void claimer_wait_busy(const struct rctx *x, struct jobstate *js, struct claim_reply *busy,
                       const struct runs *rs, bool ahead, int64_t at_ms, int64_t now)
{
    live_busy(x, rs, js->job->name, busy);
    if (ahead) { /* decided at its instant, as if it had not been claimed ahead */
        js->hold_until = rtime_mono_at_ms(at_ms, now, rtime_wall_ms());
    } else if (busy->nbusy == 0) { /* only our own ended runs: try again at once */
        js->hold_until = now + GATE_RETRY_MS * MS;
    } else {
        /* concurrency: replace: the nodes running them elsewhere are asked
         * to stop them (their "ended" message wakes the job). */
        size_t nl = strlen(x->node);
        for (size_t i = 0; js->job->concurrency == JOB_REPLACE && i < busy->nbusy; i++)
            if (!(strncmp(busy->busy[i], x->node, nl) == 0 && busy->busy[i][nl] == '/'))
                claim_request_stop(x->client, x->group, busy->busy[i]);
        js->hold_until = now + BUSY_POLL_MS * MS;
    }
}

/* The claim of js's tick (the head, h) answered res: keeps js->claim and
 * says what happened in the log (started: what becomes of a tick ours to
 * run). */
static void note_answer(const struct rctx *x, struct claimer *c, struct jobstate *js,
                        const struct claim_reply *reply, enum claim_result res, int64_t tick,
                        const char *started)
{
    struct claim_state *cs = &js->claim;
    if (res != CLAIM_ERROR)
        claimer_failures_end(x, cs, js->job->name, true);
    if (reply->partial) /* undecided where it applied: settled if we stop leading */
        claimer_set_lost(c, cs, true);
    cs->majority = reply->majority;
    if (res != CLAIM_ERROR && res != CLAIM_BUSY && res != CLAIM_NOT_LEADER && res != CLAIM_FULL) {
        cs->id[0] = '\0'; /* the tick is decided: the next claims afresh */
        claimer_set_lost(c, cs, false);
    }
    if (res == CLAIM_OURS || res == CLAIM_OURS_SKIPPED || res == CLAIM_OURS_EXPIRED) {
        log_claim(x, js->job->name, tick, LE_CLAIM_RECOVERED, LOG_INFO, NULL,
                  res == CLAIM_OURS           ? started
                  : res == CLAIM_OURS_SKIPPED ? "recorded skipped"
                                              : "recorded not started");
    } else if (res == CLAIM_NOT_LEADER) {
        log_claim(x, js->job->name, tick, LE_CLAIM_REFUSED, LOG_WARN, NULL, "not run");
    } else if (res == CLAIM_ERROR) {
        /* The first of a run of failures at warn, the next at debug (each
         * counted in /metrics all the same): an outage is one line per job,
         * not ten a second. */
        const char *error = reply->why[0] != '\0' ? reply->why : baton_client_errstr(x->client);
        if (cs->failures++ == 0)
            cs->failing_since = loop_now();
        log_claim(x, js->job->name, tick, LE_CLAIM_FAILED, cs->failures == 1 ? LOG_WARN : LOG_DEBUG,
                  error, "retried in order within its catch-up window");
        claimer_set_lost(c, cs, true);
    }
}

/* js's limits (runlimits.h), borrowed from its job and pool. */
static struct claim_limits limits_of(const struct jobstate *js)
{
    struct claim_limits l = {.max_running = js->job->max_running,
                             .dispatch = job_run_on(js->job, NULL) != JOB_RUN_ON_LEADER};
    if (js->pool != NULL) {
        l.pool_limit = js->pool->limit;
        l.pool_jobs = js->pool->jobs;
        l.npool = js->pool->njobs;
    }
    return l;
}

/* The claim of js's tick at answered res: a limit reached (CLAIM_FULL)
 * makes it wait, said once per tick (limit_wait); one that waited and is
 * answered otherwise now says how long (limit_waited). */
static void note_full(const struct rctx *x, struct jobstate *js, enum claim_result res,
                      const struct claim_reply *reply, int64_t at)
{
    struct claim_state *cs = &js->claim;
    char when[32];
    cs->full = res == CLAIM_FULL;
    cs->full_pool = cs->full && reply->pool_full;
    if (cs->full_tick != 0 && (cs->full_tick != at || !cs->full)) {
        if (cs->full_tick == at) {
            log_rfc3339(at, when, sizeof when);
            cJSON *f = log_fields();
            cJSON_AddStringToObject(f, "job", js->job->name);
            cJSON_AddStringToObject(f, "scheduled_at", when);
            cJSON_AddNumberToObject(f, "waited_ms", (double)(rtime_wall_ms() - cs->full_since_ms));
            cJSON_AddStringToObject(f, "then", claim_result_name(res));
            log_emit(x->log, LE_LIMIT_WAITED, f);
        }
        cs->full_tick = 0;
    }
    if (!cs->full || cs->full_tick == at)
        return;
    cs->full_tick = at;
    cs->full_since_ms = rtime_wall_ms();
    log_rfc3339(at, when, sizeof when);
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", js->job->name);
    cJSON_AddStringToObject(f, "scheduled_at", when);
    if (cs->full_pool) {
        cJSON_AddStringToObject(f, "pool", js->job->pool);
        cJSON_AddNumberToObject(f, "limit", js->job->pool_limit);
    } else {
        cJSON_AddNumberToObject(f, "max_running", js->job->max_running);
    }
    log_emit(x->log, LE_LIMIT_WAIT, f);
}

static void flush_skipped(const struct rctx *x, struct jobstate *js)
{
    struct sched_range s = ticks_take_skipped(&js->ticks);
    records_skipped(x->rec, js->job->name, x->term, &s);
}

/* Claims tick at of js in mode for member (the answer in *reply). A claim
 * that would skip the tick for a run alive (forbid, live) while an
 * unregistration of the job still waits in the outbox (it could not be
 * written yet) first asks without deciding (run or wait): a run of ours
 * that ended, still registered, must not make the tick look busy. It is
 * then made again: to run when only such runs were there, else as asked. */
static enum claim_result claim_head(const struct rctx *x, const struct runs *rs,
                                    const struct jobstate *js, int64_t at, enum claim_mode mode,
                                    const char *member, struct claim_reply *reply)
{
    const char *job = js->job->name, *key = baton_election_key(x->election);
    bool ask = mode == CLAIM_RUN_OR_SKIP && outbox_unregisters(x->out, job);
    struct claim_limits lim = limits_of(js);
    enum claim_result res =
        claim_tick(x->client, x->group, job, key, baton_election_token(x->election), at,
                   ask ? CLAIM_RUN_OR_WAIT : mode, member, &lim, reply);
    if (!ask || res != CLAIM_BUSY || reply->partial)
        return res;
    live_busy(x, rs, job, reply);
    if (reply->nbusy == 0)
        mode = CLAIM_RUN;
    claim_reply_free(reply);
    return claim_tick(x->client, x->group, job, key, baton_election_token(x->election), at, mode,
                      member, &lim, reply);
}

/* The tick at of paused js, claimed to run before the pause came (its
 * claim's answer was lost until now), in state (claimed): held for the
 * pause's end, as runs_go() holds a prepared run (finish.c); its
 * registration goes (a resume with catch-up registers its run anew). */
static void hold_claimed(const struct rctx *x, struct jobstate *js, int64_t at,
                         enum tick_state state, const char *member, const char *reason)
{
    ticklife_move(x, js->job->name, at, &state, TICK_EV_HOLD);
    outbox_release(x->out, js->job->name, member);
    if (finish_hold(&js->runs, at, state))
        return;
    ticklife_move(x, js->job->name, at, &state, TICK_EV_SKIP); /* out of memory: recorded */
    records_skipped_one(x->rec, js->job->name, x->term, at, HO_SKIPPED, reason);
}

bool claimer_head(const struct rctx *x, struct claimer *c, struct runs *rs, struct jobstate *js,
                  const struct tick_intent *in)
{
    struct tick_slot *slot = ticks_head(&js->ticks);
    const struct sched_tick h = slot->t;
    const char *name = js->job->name;
    int64_t now = loop_now();
    if (baton_election_token(x->election) == NULL)
        return false;
    if (!rctx_may_block(x)) {
        js->hold_until = now + GATE_RETRY_MS * MS;
        return false;
    }
    if (js->claim.lost && js->claim.tick != h.at) {
        /* A lost claim of another tick is settled first: its record in
         * claimed:J is this node's last claim of the job until the next. */
        claimer_settle(x, c, js);
        if (js->claim.lost) {
            js->hold_until = now + CLAIM_RETRY_MS * MS;
            return false;
        }
    }
    /* The records of the ticks before this one (superseded, dropped, a
     * lost claim settled just now: this claim passes them), and the
     * registrations of our ended runs and of that claim released: they
     * must not look busy. */
    flush_skipped(x, js);
    outbox_flush(x->out, x->may_block, x->host);
    /* Its last claim's answer was lost: this claim's answer is that one's. */
    bool waited = slot->state == TICK_CLAIMING;
    int64_t start = sched_start_ms(js->job, h.at); /* its instant: jitter */
    if (js->claim.tick != h.at || js->claim.id[0] == '\0') {
        claimer_run_id(x, c, h.at, 1, js->claim.id, sizeof js->claim.id);
        js->claim.tick = h.at;
        js->claim.term = x->term;
        if (!in->early && !h.missed) /* its first try, at or after its instant */
            window_late(x, &c->win, js, start, rtime_wall_ms() - start);
    }
    char id[RUN_ID_MAX], member[RUN_ID_MAX + 160];
    snprintf(id, sizeof id, "%s", js->claim.id);
    snprintf(member, sizeof member, "%s/%s", x->node, id);
    const char *skip_reason = js->claim.skip_reason; /* the lost claim's, if it was to skip */
    js->claim.skip_reason =
        in->mode == CLAIM_SKIP || in->mode == CLAIM_RUN_OR_SKIP ? in->reason : NULL;
    ticklife_move(x, name, h.at, &slot->state, TICK_EV_CLAIM);
    struct claim_reply reply;
    enum claim_result res = claim_head(x, rs, js, h.at, in->mode, member, &reply);
    bool late = (res == CLAIM_OK || res == CLAIM_OURS) && claimer_late(x);
    /* A claim answered after its tick aged (its answer was lost): a tick
     * that waited, decided as a held tick is (sched_held). */
    int64_t wall = rtime_wall_ms();
    bool missed = h.missed || (waited && wall - start >= SCHED_LIVE_SLACK_MS);
    enum sched_verdict v = waited ? sched_held(js->job, h.at, wall) : SV_START;
    note_answer(x, c, js, &reply, res, h.at,
                late                ? "recorded not started"
                : in->hold          ? "held (paused)"
                : v == SV_DROP      ? "recorded missed"
                : v == SV_SUPERSEDE ? "recorded superseded"
                                    : "run");
    if (reply.undo) /* a quorum's masters registered what does not run: released */
        outbox_release(x->out, name, member);
    note_full(x, js, res, &reply, h.at);
    struct claim_next next = claim_step_of(res, false);
    /* An answer that leaves a lost claim of this tick unsettled (refused:
     * the script looked at nothing; busy or no answer where it may have
     * applied) leaves the tick claiming: nothing but that claim decides it. */
    ticklife_move(x, name, h.at, &slot->state,
                  js->claim.lost && js->claim.tick == h.at ? TICK_EV_NO_ANSWER : next.tick);
    enum tick_state state = slot->state; /* the slot's until it is popped */
    if (next.done) {
        ticks_pop(&js->ticks);
        if (res != CLAIM_TAKEN)
            ticks_note_claimed(&js->ticks, h.at);
    }
    /* A tick run on members: once claimed, its marker is in Redis, and
     * it is offered (by this leader or the next), or recorded here only
     * once its marker is taken back (dispatch_let_go): never both. A late
     * claim is offered all the same (the offer is fenced by the lease in
     * its script, and the run by its member's registration); a pause
     * holds the marker until the pause ends (dispatch_tend). */
    bool disp = job_run_on(js->job, NULL) != JOB_RUN_ON_LEADER;
    if (disp && (next.step == STEP_START || next.step == STEP_NOT_STARTED)) {
        if (next.step == STEP_START && v == SV_START) {
            if (!in->hold) {
                dispatch_offer(x, js, id, h.at, &state);
            } else { /* its marker waits for the pause's end; its registration goes */
                ticklife_move(x, name, h.at, &state, TICK_EV_HOLD);
                outbox_release(x->out, name, member);
            }
            claim_reply_free(&reply);
            return next.done;
        }
        if (!dispatch_let_go(x, js, h.at, id)) { /* the dispatch's now */
            claim_reply_free(&reply);
            return next.done;
        }
    }
    switch (next.step) {
    case STEP_START:
        if (late && !disp) {
            ticklife_move(x, name, h.at, &state, TICK_EV_START_FAILED);
            records_not_started(x->rec, js->job, x->term, id, member, h.at, missed,
                                "claimed after the leader's stop point (it was stalled): not "
                                "started");
            break;
        }
        if (in->hold && !disp) { /* paused after its claim */
            hold_claimed(x, js, h.at, state, member, in->reason);
            break;
        }
        if (v != SV_START) { /* aged while its answer was lost: the catch-up policy's */
            ticklife_move(x, name, h.at, &state, v == SV_DROP ? TICK_EV_DROP : TICK_EV_SUPERSEDE);
            outbox_release(x->out, name, member);
            records_skipped_one(x->rec, name, x->term, h.at,
                                v == SV_DROP ? HO_MISSED : HO_SUPERSEDED, sched_reason(js->job, v));
            break;
        }
        struct rrun *rr =
            runs_start(x, rs, js, id, h.at, 1, missed ? RUN_TRIGGER_CATCHUP : RUN_TRIGGER_SCHEDULE,
                       NULL, in->early && wall < start, state);
        if (rr != NULL && rr->run.prepared) {
            if (x->fault_slow_prepare)
                nanosleep(&(struct timespec){.tv_nsec = 15 * MS}, NULL);
            window_prepared(&c->win, start);
            if (x->fault_stop_after_preclaim)
                raise(SIGSTOP);
        }
        break;
    case STEP_NOT_STARTED:
        records_not_started(x->rec, js->job, x->term, id, member, h.at, missed, next.reason);
        break;
    case STEP_SKIPPED: {
        struct sched_range before;
        const char *why = res == CLAIM_OURS_SKIPPED && waited && skip_reason != NULL ? skip_reason
                          : in->reason != NULL                                       ? in->reason
                                               : ticks_reason_busy();
        if (ticks_skip(&js->ticks, h.at, HO_SKIPPED, why, &before))
            records_skipped(x->rec, name, x->term, &before);
        break;
    }
    case STEP_WAIT: claimer_wait_busy(x, js, &reply, rs, in->early, start, now); break;
    case STEP_RETRY: js->hold_until = now + CLAIM_RETRY_MS * MS; break;
    case STEP_FULL: /* woken sooner by an end in the job or its pool (runner.c) */
        js->hold_until = now + LIMITS_POLL_MS * MS;
        break;
    case STEP_LEAVE:
    case STEP_DROP: break;
    }
    claim_reply_free(&reply);
    return next.done;
}

void claimer_retries(const struct rctx *x, struct claimer *c, struct runs *rs, struct jobstate *js,
                     int64_t now)
{
    for (struct retry **p = &js->runs.retries; *p != NULL;) {
        struct retry *t = *p;
        if (t->state == TICK_HELD || t->at_ns > now ||
            (js->job->concurrency == JOB_FORBID && js->runs.running > 0)) {
            p = &t->next;
            continue;
        }
        const char *token = baton_election_token(x->election);
        if (token == NULL || !rctx_may_block(x))
            return;
        char id[RUN_ID_MAX], member[RUN_ID_MAX + 160];
        struct claim_reply reply;
        claimer_run_id(x, c, t->tick, t->attempt, id, sizeof id);
        snprintf(member, sizeof member, "%s/%s", x->node, id);
        /* A retry that holds its run's registration holds its slot too:
         * registered beside it, then that one released. */
        struct claim_limits lim = limits_of(js);
        if (t->member[0] != '\0')
            lim = (struct claim_limits){.dispatch = lim.dispatch};
        enum claim_result res =
            claim_tick(x->client, x->group, js->job->name, baton_election_key(x->election), token,
                       t->tick, CLAIM_REGISTER, member, &lim, &reply);
        if ((reply.undo || reply.partial) && res != CLAIM_OK)
            outbox_release(x->out, js->job->name, member);
        claim_reply_free(&reply);
        if (res == CLAIM_ERROR || res == CLAIM_NOT_DURABLE) {
            t->at_ns = now + CLAIM_RETRY_MS * MS;
            return;
        }
        if (res == CLAIM_FULL) { /* a limit reached: the retry waits for a slot */
            t->at_ns = now + LIMITS_POLL_MS * MS;
            p = &t->next;
            continue;
        }
        *p = t->next;
        if (res == CLAIM_OK) {
            runs_start(x, rs, js, id, t->tick, t->attempt, t->trigger, NULL, false, t->state);
            if (t->member[0] != '\0')
                outbox_release(x->out, js->job->name, t->member);
        } else {
            claimer_let_go(x, c, js, t, id);
        }
        free(t);
    }
}

static const char reason_let_go[] =
    "released by a resume with catch-up, but this node stopped leading (or the job changed) "
    "before its run could start: not run";
static const char reason_refused[] =
    "released by a resume with catch-up, but the lease was no longer this node's when its run "
    "was to start: not run";

void claimer_let_go(const struct rctx *x, struct claimer *c, struct jobstate *js, struct retry *t,
                    const char *id)
{
    const char *name = js->job->name;
    if (t->member[0] != '\0') /* the hold of its backoff */
        outbox_release(x->out, name, t->member);
    if (t->state != TICK_CLAIMED) { /* a retry: its tick is recorded (the attempt before) */
        ticklife_move(x, name, t->tick, &t->state, TICK_EV_FORGET);
        hooks_retry_dropped(x->hooks, name, t->tick);
        return;
    }
    char made[RUN_ID_MAX], member[RUN_ID_MAX + 160];
    const char *why = id != NULL ? reason_refused : reason_let_go;
    if (id == NULL) {
        claimer_run_id(x, c, t->tick, t->attempt, made, sizeof made);
        id = made;
    }
    snprintf(member, sizeof member, "%s/%s", x->node, id);
    ticklife_move(x, name, t->tick, &t->state, TICK_EV_START_FAILED);
    records_not_started(x->rec, js->job, x->term, id, member, t->tick,
                        t->trigger == RUN_TRIGGER_CATCHUP, why);
}
