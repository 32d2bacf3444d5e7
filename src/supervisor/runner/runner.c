/* runner.c -- see runner.h. The coordinator: it owns the runner's parts
 * and drives them, each owning a piece of a job's state (held together in
 * one thin record per job: jobtable.h), and none calling this file:
 *
 *   ticks.c     a job's due ticks and what to do with the next (pure)
 *   claimer.c   the claims in Redis and what their answers mean (steps.h),
 *               marks, lost answers, the claim-ahead window
 *   control.c   pauses and manual requests
 *   runs.c      the processes: start, go, stop, fences, what covers each
 *   records.c   what is recorded of each tick; outbox.c: the writes
 *   jobtable.c  the records, the heap of when each has something to do,
 *               jobs.yaml's generations
 *
 *   dispatch.c  run_on other than leader: offers to members (the leader;
 *               fleet.c: the members as it sees them), what is outstanding
 *               (dispatch_tend.c), offers accepted (dispatch_member.c:
 *               every node)
 *
 * The order of calls is one way: runner -> control -> claimer -> dispatch
 * -> runs -> jobtable -> records -> outbox, ticks and steps below all.
 *
 * A tick's instant is when its run begins: the tick, delayed by its job's
 * jitter (sched_start_ms); everything here that waits for a tick waits
 * for that instant, and everything that names one (claims, marks, pauses,
 * records) names the tick.
 *
 * A live tick is claimed a window ahead of its instant and its run
 * prepared (run.h: the shim started, waiting): at the instant the wall
 * timer (loop.h) fires and only the go remains, sent only before the stop
 * point of what covers the run (else it is cancelled and recorded
 * failed_to_start with its reason), and not when the job was paused in
 * between (the tick is then held for the pause's end). A job with a run
 * alive under forbid or replace is not claimed ahead (its tick is decided
 * at its instant), and a run elsewhere makes a claim ahead wait for the
 * instant instead of skipping, so the policies decide as they did. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "claimer.h"
#include "control.h"
#include "dispatch.h"
#include "hook.h"
#include "jobtable.h"
#include "outbox.h"
#include "pools.h"
#include "records.h"
#include "rtime.h"
#include "runlimits.h"
#include "runner.h"
#include "runs.h"

#define GATE_RETRY_MS    20   /* no blocking call allowed now: look again this soon */
#define CONTROL_RETRY_MS 1000 /* the control keys could not be read: try again then */
#define STEP_BACK_MS     1000 /* a prepared run this much past the window: the clock went back */
/* Starting runs (a claim round trip and a fork each) stops after this long
 * in one turn of the loop and goes on a millisecond later, after the
 * lease's own timers: a catch-up of many jobs at once never holds the
 * loop past the renewal. */
#define TURN_BUDGET_MS 20

struct runner {
    struct runner_host h;
    struct rctx x;
    char *node, *group;
    char **labels; /* this node's, a copy (NULL-terminated) */
    struct jobtable jt;
    struct outbox out;
    struct recorder rec;
    struct claimer cl;
    struct control ctl;
    struct runs runs;
    struct pools pools;     /* the waiting ticks of each pool, in order (pools.h) */
    struct dispatch disp;
    int64_t wall_offset_ms; /* wall - monotonic when the keys were computed */
    int64_t turn_end;       /* this turn of the loop yields at this time (TURN_BUDGET_MS) */
    int64_t lost_retry_at;  /* not leading, with lost claims to settle: the next try; 0: none */
};

/* ---- one job's turn ---- */

/* Queues the ticks due for js at wall (ms), recording those the catch-up
 * policy does not run. */
static void queue_due(struct runner *r, struct jobstate *js, int64_t wall)
{
    struct ticks_due d;
    struct sched_range before;
    const char *name = js->job->name;
    ticks_queue_due(&js->ticks, js->job, wall, js->runs.running, &d);
    for (size_t i = js->ticks.qlen - d.nqueued; i < js->ticks.qlen; i++) {
        struct tick_slot *q = ticks_at(&js->ticks, i);
        ticklife_move(&r->x, name, q->t.at, &q->state, TICK_EV_QUEUE);
    }
    ticklife_move_range(&r->x, name, &d.dropped, TICK_DUE, TICK_EV_DROP);
    ticklife_move_range(&r->x, name, &d.superseded, TICK_DUE, TICK_EV_SUPERSEDE);
    if (d.nmissed > 0 || d.dropped.count != 0 || d.superseded.count != 0) {
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "job", js->job->name);
        cJSON_AddNumberToObject(f, "missed_ticks", (double)d.nmissed);
        if (d.dropped.count != 0)
            cJSON_AddNumberToObject(f, "outside_window", (double)d.dropped.count);
        if (d.superseded.count != 0)
            cJSON_AddNumberToObject(f, "superseded", (double)d.superseded.count);
        log_emit(r->h.log, LE_CATCH_UP, f);
    }
    /* In tick order: the dropped ones are the oldest, then the superseded
     * (catchup: last), then those that run. */
    before = ticks_take_skipped(&js->ticks);
    records_skipped(&r->rec, js->job->name, r->x.term, &before);
    records_skipped(&r->rec, js->job->name, r->x.term, &d.dropped);
    records_skipped(&r->rec, js->job->name, r->x.term, &d.superseded);
    if (d.full != 0) {
        enum tick_state full = TICK_DUE;
        ticklife_move(&r->x, name, d.full, &full, TICK_EV_SKIP);
        if (ticks_skip(&js->ticks, d.full, HO_SKIPPED, ticks_reason_full(), &before))
            records_skipped(&r->rec, js->job->name, r->x.term, &before);
    }
}

/* ---- pools: the order of the ticks that wait for a slot ---- */

/* A waiter's tick still waits: it is its job's head. */
static bool waiter_live(const struct pool_waiter *w)
{
    struct jobstate *js = w->js;
    return ticks_has_head(&js->ticks) && ticks_head(&js->ticks)->t.at == w->tick;
}

/* js looks at its head now. */
static void wake(struct runner *r, struct jobstate *js)
{
    js->hold_until = 0;
    if (r->x.leading)
        jobtable_set_key(&r->jt, js, loop_now());
}

/* A slot of pl may be free: its first waiter looks (but not me). */
static void wake_pool(struct runner *r, struct pool *pl, const struct jobstate *me)
{
    struct jobstate *head = pools_head(pl, waiter_live);
    if (head != NULL && head != me)
        wake(r, head);
}

/* js's head tick at waits behind an earlier tick of its pool (first come,
 * first served): true, and it waits in order; false when it may claim. */
static bool pool_behind(struct jobstate *js, const struct tick_intent *in, int64_t now)
{
    if (js->pool == NULL || in->mode == CLAIM_SKIP ||
        pools_first(js->pool, js, js->job->name, in->at, waiter_live))
        return false;
    pools_wait(js->pool, js, js->job->name, in->at, rtime_wall_ms());
    js->hold_until = now + LIMITS_POLL_MS * MS;
    return true;
}

/* After a claim of js's head (dealt: it was dealt with): a tick that found
 * its pool full waits in order; one dealt with, or waiting for its own
 * max_running, lets the next waiter of the pool look. */
static void pool_after_claim(struct runner *r, struct jobstate *js, int64_t at, bool dealt)
{
    if (js->pool == NULL)
        return;
    if (js->claim.full && js->claim.full_pool)
        pools_wait(js->pool, js, js->job->name, at, rtime_wall_ms());
    else if ((dealt || js->claim.full) && pools_leave(js->pool, js))
        wake_pool(r, js->pool, js);
}

/* The pools of the jobs now (after a reload): the ticks that waited keep
 * their order. */
static void pools_rebuild(struct runner *r)
{
    struct pools old = r->pools;
    r->pools = (struct pools){0};
    for (struct jobstate *js = r->jt.states; js != NULL; js = js->next)
        if (js->job->pool != NULL)
            pools_add(&r->pools, js->job->name, js->job->pool, js->job->pool_limit);
    for (struct jobstate *js = r->jt.states; js != NULL; js = js->next)
        js->pool = js->job->pool != NULL ? pools_find(&r->pools, js->job->pool) : NULL;
    for (size_t i = 0; i < old.n; i++)
        for (size_t k = 0; k < old.v[i].nw; k++) {
            struct jobstate *js = old.v[i].w[k].js;
            if (js->pool != NULL)
                pools_wait(js->pool, js, js->job->name, old.v[i].w[k].tick, old.v[i].w[k].since_ms);
        }
    pools_clear(&old);
}

/* Decides js's queue, head after head, claiming what it can in this turn. */
static void decide_ticks(struct runner *r, struct jobstate *js, int64_t now, int64_t wall)
{
    struct sched_range before;
    for (int claims = 0; r->x.leading && js->hold_until == 0; claims++) {
        if (!ticks_has_head(&js->ticks))
            break;
        if (claims > 0 && loop_now() >= r->turn_end) {
            js->hold_until = loop_now(); /* the rest next turn (runner_on_timer) */
            break;
        }
        struct tick_intent in =
            ticks_next(&js->ticks, js->job, js->runs.running, wall, claimer_ahead_ms(&r->cl, js));
        if (in.step == TS_AT_INSTANT) {
            js->hold_until = rtime_mono_at_ms(in.start_ms, now, wall);
            break;
        }
        if (in.step == TS_WAIT || in.step == TS_NONE)
            break; /* a run of ours ends first: its SIGCHLD wakes us */
        if (in.step == TS_REPLACE) {
            /* Unclaimed until the old runs are gone: a leader that dies
             * meanwhile leaves the tick to the next one, not lost. */
            runs_stop_job(&r->runs, js);
            break;
        }
        if (in.step == TS_RECORD) {
            ticklife_move(&r->x, js->job->name, in.at, &ticks_head(&js->ticks)->state, in.ev);
            if (ticks_skip(&js->ticks, in.at, in.outcome, in.reason, &before))
                records_skipped(&r->rec, js->job->name, r->x.term, &before);
            ticks_pop(&js->ticks);
            continue;
        }
        if (pool_behind(js, &in, now))
            break;
        bool dealt = claimer_head(&r->x, &r->cl, &r->runs, js, &in);
        pool_after_claim(r, js, in.at, dealt);
        if (!dealt)
            break;
    }
    before = ticks_take_skipped(&js->ticks);
    records_skipped(&r->rec, js->job->name, r->x.term, &before);
}

/* When js next has something to do: its next tick (paused: the resume, or
 * the next record of its skipped ticks), a hold, a retry. */
static int64_t next_key(const struct runner *r, const struct jobstate *js, int64_t now,
                        int64_t wall)
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
                           claimer_ahead_ms(&r->cl, js) * MS);
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
static void process_job(struct runner *r, struct jobstate *js)
{
    int64_t now = loop_now(), wall = rtime_wall_ms();
    if (!r->x.leading) {
        jobtable_set_key(&r->jt, js, 0);
        return;
    }
    if (js->hold_until != 0 && js->hold_until <= now)
        js->hold_until = 0;
    if (!js->ticks.mark_known && js->hold_until == 0 && !claimer_read_marks(&r->x, &r->cl, &js, 1))
        js->hold_until = now + CLAIM_RETRY_MS * MS;
    if (js->ticks.mark_known && js->ticks.mark_unset)
        claimer_write_marks(&r->x, &js, 1);
    if (js->ticks.mark_known) {
        claimer_retries(&r->x, &r->cl, &r->runs, js, now);
        control_manuals(&r->x, &r->ctl, &r->runs, js, now); /* a paused job runs by hand */
        if (js->ctl.pause_until != 0 && js->hold_until == 0 &&
            !control_hold(&r->x, &r->ctl, &r->cl, &r->runs, js, wall))
            js->hold_until = now + CLAIM_RETRY_MS * MS;
    }
    if (js->ticks.mark_known && js->ctl.pause_until == 0) {
        int64_t ahead = claimer_ahead_ms(&r->cl, js);
        if (js->ticks.next_tick != 0 &&
            sched_start_ms(js->job, js->ticks.next_tick) <= wall + ahead)
            queue_due(r, js, wall + ahead);
        decide_ticks(r, js, now, wall);
    }
    jobtable_set_key(&r->jt, js, next_key(r, js, now, wall));
}

/* Forgets js's schedule (no longer leading, or its definition changed):
 * what is decided is recorded; requests and pauses stay in Redis for the
 * next leader to read. */
static void clear_schedule(struct runner *r, struct jobstate *js)
{
    struct sched_range before = ticks_take_skipped(&js->ticks);
    if (js->pool != NULL && pools_leave(js->pool, js))
        wake_pool(r, js->pool, js);
    claimer_failures_end(&r->x, &js->claim, js->job->name, false);
    records_skipped(&r->rec, js->job->name, r->x.term, &before);
    control_record_held(&r->x, js);
    ticklife_forget(&r->x, js->job->name, &js->ticks);
    js->hold_until = 0;
    while (js->runs.retries != NULL) {
        struct retry *t = js->runs.retries;
        js->runs.retries = t->next;
        claimer_let_go(&r->x, &r->cl, js, t, NULL);
        free(t);
    }
    control_job_clear(&r->ctl, &js->ctl);
    jobtable_set_key(&r->jt, js, 0);
}

/* ---- the job table ---- */

static void job_changed(void *ctx, struct jobstate *js)
{
    struct runner *r = ctx;
    if (!r->x.leading)
        return;
    /* New or changed while leading: its schedule starts now. */
    clear_schedule(r, js);
    js->ticks.mark_known = true;
    js->ticks.last = rtime_wall_ms() / 1000;
    js->ticks.next_tick = sched_next(js->job, js->ticks.last);
}

static void job_gone(void *ctx, struct jobstate *js)
{
    struct runner *r = ctx;
    /* Its runs finish under their old definition. */
    for (struct rrun *rr = r->runs.list; rr != NULL; rr = rr->next)
        if (rr->js == js)
            rr->js = NULL;
    claimer_set_lost(&r->cl, &js->claim, false);
    clear_schedule(r, js);
}

struct runner *runner_new(const struct runner_host *host)
{
    struct runner *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->h = *host;
    /* Our own copies: a reload frees the configuration they came from. */
    r->h.node = r->node = strdup(host->node);
    r->h.group = r->group = strdup(host->group);
    size_t nl = 0;
    while (host->labels != NULL && host->labels[nl] != NULL)
        nl++;
    r->labels = calloc(nl + 1, sizeof *r->labels);
    for (size_t i = 0; r->labels != NULL && i < nl; i++)
        if ((r->labels[i] = strdup(host->labels[i])) == NULL) {
            runner_free(r);
            return NULL;
        }
    r->h.labels = (const char *const *)r->labels;
    if (r->node == NULL || r->group == NULL || r->labels == NULL) {
        runner_free(r);
        return NULL;
    }
    r->x = (struct rctx){.node = r->node,
                         .group = r->group,
                         .log = host->log,
                         .client = host->client,
                         .election = host->election,
                         .hooks = host->hooks,
                         .jt = &r->jt,
                         .out = &r->out,
                         .rec = &r->rec,
                         .disp = &r->disp,
                         .guard_ns = host->guard_ns,
                         .lease_ttl_ms = host->lease_ttl_ms,
                         .may_block = host->may_block,
                         .on_runs_changed = host->on_runs_changed,
                         .on_tick = host->on_tick,
                         .host = host->ctx,
                         .fault_stop_after_claim = host->fault_stop_after_claim,
                         .fault_stop_after_preclaim = host->fault_stop_after_preclaim,
                         .fault_slow_prepare = host->fault_slow_prepare,
                         .fault_stop_before_offer = host->fault_stop_before_offer,
                         .fault_stop_after_accept = host->fault_stop_after_accept,
                         .labels = (const char *const *)r->labels};
    r->out = (struct outbox){.client = host->client,
                             .group = r->group,
                             .log = host->log,
                             .history_len = host->history_len};
    r->rec =
        (struct recorder){.out = &r->out, .log = host->log, .node = r->node, .hooks = host->hooks};
    r->cl.ahead_ms = PRECLAIM_MS;
    r->ctl.poll_ms = host->control_poll_ms;
    r->runs.env = (struct run_env){.log = host->log,
                                   .loop = host->loop,
                                   .node = r->node,
                                   .output_bytes = host->output_bytes,
                                   .fault_start = host->fault_start};
    r->runs.kill_margin_ns = host->kill_margin_ns;
    r->disp.capacity = host->capacity;
    r->disp.rs = &r->runs;
    r->runs.refresh_ms = host->refresh_ms;
    return r;
}

int runner_set_jobs(struct runner *r, struct jobs *jobs)
{
    int rc = jobtable_apply(&r->jt, jobs, job_changed, job_gone, r);
    if (rc != BATON_OK)
        return rc;
    pools_rebuild(r);
    bool fleet = false;
    for (struct jobstate *js = r->jt.states; js != NULL && !fleet; js = js->next)
        fleet = job_run_on(js->job, NULL) != JOB_RUN_ON_LEADER;
    dispatch_jobs(&r->disp, fleet);
    /* New and changed jobs are looked at now; the others keep their keys:
     * making 10,000 unchanged jobs due at once would hold the next
     * instant's claims behind them. */
    for (struct jobstate *js = r->jt.states; js != NULL && r->x.leading; js = js->next)
        if (js->rekey)
            jobtable_set_key(&r->jt, js, loop_now());
    if (r->x.leading) { /* requests and pauses of new or changed jobs: read again */
        control_forget_all(&r->ctl);
        r->ctl.at = loop_now();
    }
    runner_on_timer(r);
    return BATON_OK;
}

void runner_free(struct runner *r)
{
    if (r == NULL)
        return;
    r->h.hooks = r->x.hooks = r->rec.hooks = NULL; /* going away: no hook starts now */
    runs_free(&r->runs);
    dispatch_free(&r->disp);
    for (struct jobstate *js = r->jt.states; js != NULL; js = js->next)
        control_job_clear(&r->ctl, &js->ctl);
    jobtable_free(&r->jt);
    pools_clear(&r->pools);
    outbox_clear(&r->out);
    control_forget_all(&r->ctl);
    free(r->node);
    free(r->group);
    for (char **l = r->labels; l != NULL && *l != NULL; l++)
        free(*l);
    free(r->labels);
    free(r);
}

/* ---- reading ---- */

size_t runner_running(const struct runner *r)
{
    return r->runs.n;
}

int64_t runner_claim_ahead_ms(const struct runner *r)
{
    return r->x.leading ? r->cl.ahead_ms : 0;
}

cJSON *runner_runs_json(const struct runner *r, size_t max)
{
    return runs_json(&r->runs, max);
}

/* Serve order (pools.h): the earlier tick, then the job's name. */
static int wait_cmp(const void *a, const void *b)
{
    const struct runner_wait *x = a, *y = b;
    if (x->tick != y->tick)
        return x->tick < y->tick ? -1 : 1;
    return strcmp(x->job, y->job);
}

/* js's head waits for a limit: the last claim of it found one reached
 * (a tick dropped or claimed since has left the head). */
static bool head_full(struct jobstate *js)
{
    const struct claim_state *cs = &js->claim;
    return cs->full && cs->full_tick != 0 && ticks_has_head(&js->ticks) &&
           ticks_head(&js->ticks)->t.at == cs->full_tick;
}

/* Appends w to *v (n used of *cap). Returns false on ENOMEM. */
static bool wait_add(struct runner_wait **v, size_t *n, size_t *cap, struct runner_wait w)
{
    if (*n == *cap) {
        size_t nc = *cap != 0 ? 2 * *cap : 16;
        struct runner_wait *nv = realloc(*v, nc * sizeof *nv);
        if (nv == NULL)
            return false;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = w;
    return true;
}

struct runner_wait *runner_waiting(const struct runner *r, size_t *n)
{
    struct runner_wait *v = NULL;
    size_t cap = 0;
    bool ok = true;
    *n = 0;
    if (!r->x.leading)
        return NULL;
    /* Those a claim answered full (max_running, or the pool's limit)... */
    for (struct jobstate *js = r->jt.states; ok && js != NULL; js = js->next)
        if (head_full(js))
            ok = wait_add(&v, n, &cap,
                          (struct runner_wait){.job = js->job->name,
                                               .pool = js->claim.full_pool ? js->job->pool : NULL,
                                               .limit = js->claim.full_pool ? js->job->pool_limit
                                                                            : js->job->max_running,
                                               .tick = js->claim.full_tick,
                                               .since_ms = js->claim.full_since_ms,
                                               .queued = js->ticks.qlen});
    /* ... and those behind an earlier tick of their pool, not asked yet. */
    for (size_t p = 0; ok && p < r->pools.n; p++) {
        const struct pool *pl = &r->pools.v[p];
        for (size_t i = 0; ok && i < pl->nw; i++) {
            struct jobstate *js = pl->w[i].js;
            if (waiter_live(&pl->w[i]) && !head_full(js))
                ok = wait_add(&v, n, &cap,
                              (struct runner_wait){.job = js->job->name,
                                                   .pool = js->job->pool,
                                                   .limit = js->job->pool_limit,
                                                   .tick = pl->w[i].tick,
                                                   .since_ms = pl->w[i].since_ms,
                                                   .queued = js->ticks.qlen});
        }
    }
    if (!ok) {
        free(v);
        *n = 0;
        return NULL;
    }
    if (*n > 1)
        qsort(v, *n, sizeof *v, wait_cmp);
    return v;
}

cJSON *runner_waiting_json(const struct runner *r, size_t max)
{
    size_t n;
    struct runner_wait *w = runner_waiting(r, &n);
    cJSON *a = cJSON_CreateArray();
    char ts[40];
    for (size_t i = 0; a != NULL && i < n && i < max; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "job", w[i].job);
        log_rfc3339(w[i].tick, ts, sizeof ts);
        cJSON_AddStringToObject(o, "scheduled_at", ts);
        log_rfc3339_ms(w[i].since_ms, ts, sizeof ts);
        cJSON_AddStringToObject(o, "since", ts);
        cJSON_AddStringToObject(o, "reason", w[i].pool != NULL ? "pool" : "max_running");
        if (w[i].pool != NULL)
            cJSON_AddStringToObject(o, "pool", w[i].pool);
        else
            cJSON_AddNullToObject(o, "pool");
        cJSON_AddNumberToObject(o, "limit", w[i].limit);
        cJSON_AddNumberToObject(o, "queued", (double)w[i].queued);
        cJSON_AddItemToArray(a, o);
    }
    free(w);
    return a;
}

int64_t runner_stop_point(const struct runner *r)
{
    return runs_stop_point(&r->x, &r->runs);
}

/* ---- leading ---- */

void runner_lead(struct runner *r, uint64_t term, int64_t lease_deadline_ns)
{
    runner_flush(r);
    r->x.leading = true;
    r->x.term = term;
    r->cl.lead_since = loop_now();
    r->cl.lead_wall_s = rtime_wall_ms() / 1000;
    r->cl.no_catchup = baton_election_server_changed(r->h.election);
    r->cl.no_catchup_logged = false;
    r->runs.lease_deadline = lease_deadline_ns;
    r->disp.tend_at = loop_now(); /* what the last leader left outstanding: adopted */
    for (struct jobstate *js = r->jt.states; js != NULL; js = js->next)
        clear_schedule(r, js);
    control_forget_all(&r->ctl);
    /* Every job's mark, CLAIM_MARKS_MAX per read; a job whose mark could
     * not be read reads it itself later. */
    struct jobstate *batch[CLAIM_MARKS_MAX];
    for (struct jobstate *js = r->jt.states; js != NULL;) {
        size_t n = 0;
        for (; js != NULL && n < CLAIM_MARKS_MAX; js = js->next)
            batch[n++] = js;
        if (!claimer_read_marks(&r->x, &r->cl, batch, n))
            break;
    }
    control_read(&r->x, &r->ctl, &r->runs, loop_now());
    int64_t now = loop_now();
    for (struct jobstate *js = r->jt.states; js != NULL; js = js->next)
        jobtable_set_key(&r->jt, js, now);
    runner_on_timer(r);
}

void runner_lease_renewed(struct runner *r, int64_t lease_deadline_ns)
{
    runs_lease_renewed(&r->x, &r->runs, lease_deadline_ns);
    runner_on_timer(r);
}

void runner_stop_scheduling(struct runner *r)
{
    r->x.leading = false; /* every claim and start asks this first */
    r->ctl.at = 0;
}

void runner_unlead(struct runner *r)
{
    runner_stop_scheduling(r);
    r->lost_retry_at = loop_now(); /* claims left undecided: settled from now on */
    for (struct jobstate *js = r->jt.states; js != NULL; js = js->next)
        clear_schedule(r, js);
    control_forget_all(&r->ctl);
    /* claimed ticks not yet offered: their markers are in Redis, for the
     * next leader's tend (dispatch.h) */
    runner_on_timer(r);
}

void runner_close(struct runner *r)
{
    dispatch_close(&r->disp);
    runner_on_timer(r);
}

bool runner_accepting(const struct runner *r)
{
    return !r->disp.closed;
}

size_t runner_assigned(const struct runner *r)
{
    return runs_assigned(&r->runs);
}

int runner_handover(struct runner *r, int64_t lease_deadline_ns)
{
    int rc = runs_handover(&r->x, &r->runs, lease_deadline_ns);
    runner_on_timer(r);
    return rc;
}

void runner_terminate(struct runner *r, bool all, int64_t kill_by_ns)
{
    runs_terminate(&r->runs, all, kill_by_ns);
    runner_on_timer(r);
}

/* ---- the timer ---- */

static void went(void *ctx, int64_t at_ms)
{
    claimer_window_went(ctx, at_ms);
}

static void rearm(struct runner *r)
{
    int64_t go = 0, next = runs_next(&r->x, &r->runs, &go);
    struct jobstate *top = jobtable_top(&r->jt);
    if (top != NULL)
        rtime_earliest(&next, top->key);
    rtime_earliest(&next, r->x.leading ? r->ctl.at : r->lost_retry_at);
    rtime_earliest(&next, r->out.retry_at);
    rtime_earliest(&next, dispatch_next(&r->x, &r->disp));
    /* The go of prepared runs on the exact wall timer, and on the monotonic
     * one a millisecond later (the fallback: a wall timer that fired
     * already, or cannot be had; the instant as the wall clock shows it
     * now). */
    if (go != 0) {
        loop_arm_wall(r->h.loop, r->h.timer_id, go);
        rtime_earliest(&next, loop_now() + (go - loop_wall_ns()) + MS);
    } else {
        loop_disarm_wall(r->h.loop);
    }
    /* Everything due was just done: a time in the past here would be a bug
     * that spins the loop and starves its descriptors (signals). Never
     * sooner than a millisecond. */
    int64_t soonest = loop_now() + MS;
    if (next != 0 && next < soonest)
        next = soonest;
    if (next != 0)
        loop_arm(r->h.loop, r->h.timer_id, next);
    else
        loop_disarm(r->h.loop, r->h.timer_id);
}

void runner_on_timer(struct runner *r)
{
    /* First: nothing else stands between an instant and its go. */
    runs_go(&r->x, &r->runs, claimer_late(&r->x), (PRECLAIM_MAX_MS + STEP_BACK_MS) * MS, went,
            &r->cl);
    int64_t now = loop_now(), wall = rtime_wall_ms();
    /* A step of the wall clock moves every tick's monotonic time. */
    int64_t offset = wall - now / MS;
    if (llabs(offset - r->wall_offset_ms) > 500) {
        r->wall_offset_ms = offset;
        for (struct jobstate *js = r->jt.states; js != NULL && r->x.leading; js = js->next)
            if (js->key != 0)
                jobtable_set_key(&r->jt, js, now);
    }
    runs_tick(&r->runs, now);
    if (!r->x.leading && r->cl.nlost > 0 && r->lost_retry_at != 0 && r->lost_retry_at <= now) {
        /* Lost claims of a term that ended: a follower looks at those jobs
         * only, again in a while as long as Redis cannot tell. */
        r->lost_retry_at = 0;
        for (struct jobstate *js = r->jt.states; js != NULL; js = js->next) {
            claimer_settle(&r->x, &r->cl, js);
            if (js->claim.lost)
                r->lost_retry_at = now + CONTROL_RETRY_MS * MS;
        }
    }
    runs_tend(&r->x, &r->runs, now);
    runs_fence_lease(&r->x, &r->runs, now);
    dispatch_tend(&r->x, &r->disp, now);
    dispatch_poll(&r->x, &r->disp, now);
    if (r->x.leading && r->ctl.at != 0 && r->ctl.at <= now)
        control_read(&r->x, &r->ctl, &r->runs, now);
    /* Every job that has something to do now, earliest first, for at most
     * TURN_BUDGET_MS (at least one job). A job that still has something to
     * do now gets a later key (a hold), or a hold of now when the budget
     * ran out while it started runs: the loop ends. */
    r->turn_end = now + TURN_BUDGET_MS * MS;
    for (int jobs = 0; r->x.leading && r->jt.nheap > 0; jobs++) {
        int64_t t = loop_now();
        struct jobstate *top = jobtable_top(&r->jt);
        if (top->key > t || (jobs > 0 && t >= r->turn_end))
            break;           /* past the budget: rearm() makes the rest due in 1 ms */
        process_job(r, top); /* gives it a key in the future, or none */
    }
    runner_flush(r);
    rearm(r);
}

void runner_flush(struct runner *r)
{
    outbox_flush(&r->out, r->h.may_block, r->h.ctx);
}

void runner_on_sigchld(struct runner *r)
{
    size_t before = r->runs.n;
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0)
            break;
        if (!runs_reaped(&r->x, &r->runs, pid, st))
            hooks_reaped(r->h.hooks, pid, st);
    }
    runner_on_timer(r);
    if (before > 0 && r->runs.n == 0 && r->h.on_idle != NULL)
        r->h.on_idle(r->h.ctx);
}

void runner_on_message(struct runner *r, const char *msg, size_t len)
{
    if (len > 6 && strncmp(msg, "ended ", 6) == 0) {
        char name[JOB_NAME_MAX + 1];
        size_t n = len - 6 < JOB_NAME_MAX ? len - 6 : JOB_NAME_MAX;
        memcpy(name, msg + 6, n);
        name[n] = '\0';
        struct jobstate *js = jobtable_find(&r->jt, name);
        if (js != NULL && js->hold_until != 0) /* it waited for a run to end */
            wake(r, js);
        if (js != NULL && js->pool != NULL) /* a slot of its pool is free */
            wake_pool(r, js->pool, NULL);
        if (r->x.leading) /* a member may have room */
            dispatch_ended(&r->disp);
    } else if (r->x.leading && ((len > 8 && strncmp(msg, "trigger ", 8) == 0) ||
                                (len > 7 && strncmp(msg, "paused ", 7) == 0) ||
                                (len > 8 && strncmp(msg, "resumed ", 8) == 0))) {
        r->ctl.at = loop_now(); /* read at once, below */
    } else if (len > 6 && strncmp(msg, "offer ", 6) == 0) {
        dispatch_heard(&r->x, &r->disp, msg + 6, len - 6);
    } else if (len > 5 && strncmp(msg, "stop ", 5) == 0) {
        size_t nl = strlen(r->node);
        const char *member = msg + 5;
        if (len - 5 > nl && strncmp(member, r->node, nl) == 0 && member[nl] == '/')
            runs_stop_member(&r->runs, member, len - 5);
    }
    runner_on_timer(r);
}

void runner_control_changed(struct runner *r)
{
    dispatch_missed(&r->disp); /* offers published meanwhile */
    if (r->x.leading)
        r->ctl.at = loop_now();
    runner_on_timer(r);
}
