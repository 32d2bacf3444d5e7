/* runner.c -- see runner.h. The coordinator: it owns the runner's parts
 * and drives them, each owning a piece of a job's state (held together in
 * one thin record per job: jobtable.h), and none calling this file:
 *
 *   turn.c      one job's turn: its ticks decided and claimed, its next
 *               key; the budget of a turn of the loop
 *   ticks.c     a job's due ticks and what to do with the next (pure)
 *   marks.c     the high-water marks a leadership starts from
 *   claimer.c   the claims in Redis and what their answers mean (steps.h),
 *               lost answers
 *   window.c    the claim-ahead window
 *   waits.c     the pools: the ticks that wait for a slot, in order
 *   control.c   pauses and manual requests
 *   runs.c      the processes: start, go, stop, fences, what covers each
 *   finish.c    a run's end: retried, held, handed back or recorded; per
 *               job, its runs alive and the ticks waiting without a claim
 *   records.c   what is recorded of each tick; outbox.c: the writes
 *   jobtable.c  the records, the heap of when each has something to do,
 *               jobs.yaml's generations
 *
 *   dispatch.c  run_on other than leader: offers to members (the leader;
 *               fleet.c: the members as it sees them), what is outstanding
 *               (dispatch_tend.c), offers accepted (dispatch_member.c:
 *               every node)
 *
 * The order of calls is one way: runner -> turn -> control -> marks ->
 * claimer -> dispatch -> finish -> runs -> waits, window -> jobtable ->
 * records -> outbox, ticks, pools and steps below all.
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
#include "finish.h"
#include "hook.h"
#include "jobtable.h"
#include "marks.h"
#include "outbox.h"
#include "pools.h"
#include "records.h"
#include "rtime.h"
#include "runner.h"
#include "runs.h"
#include "turn.h"
#include "waits.h"

#define STEP_BACK_MS 1000 /* a prepared run this much past the window: the clock went back */

struct runner {
    struct runner_host h;
    struct rctx x;
    char *node, *group;
    char **labels; /* this node's, a copy (NULL-terminated) */
    struct jobtable jt;
    struct outbox out;
    struct recorder rec;
    struct marks marks;
    struct claimer cl;
    struct control ctl;
    struct runs runs;
    struct pools pools; /* the waiting ticks of each pool, in order (waits.h) */
    struct dispatch disp;
    struct turn turn;       /* one job's turn, over the parts above (turn.h) */
    int64_t wall_offset_ms; /* wall - monotonic when the keys were computed */
    int64_t lost_retry_at;  /* not leading, with lost claims to settle: the next try; 0: none */
};

/* ---- the job table ---- */

static void job_changed(void *ctx, struct jobstate *js)
{
    struct runner *r = ctx;
    if (!r->x.leading)
        return;
    /* New or changed while leading: its schedule starts now. */
    turn_clear(&r->turn, js);
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
    turn_clear(&r->turn, js);
}

static void labels_free(char **labels)
{
    for (char **l = labels; l != NULL && *l != NULL; l++)
        free(*l);
    free(labels);
}

/* A NULL-terminated copy of labels (NULL: none), or NULL on ENOMEM. */
static char **labels_dup(const char *const *labels)
{
    size_t n = 0;
    while (labels != NULL && labels[n] != NULL)
        n++;
    char **c = calloc(n + 1, sizeof *c);
    for (size_t i = 0; c != NULL && i < n; i++)
        if ((c[i] = strdup(labels[i])) == NULL) {
            labels_free(c);
            return NULL;
        }
    return c;
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
    r->labels = labels_dup(host->labels);
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
    r->cl.win.ahead_ms = PRECLAIM_MS;
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
    r->turn = (struct turn){
        .x = &r->x, .marks = &r->marks, .cl = &r->cl, .ctl = &r->ctl, .runs = &r->runs};
    return r;
}

int runner_set_jobs(struct runner *r, struct jobs *jobs)
{
    int rc = jobtable_apply(&r->jt, jobs, job_changed, job_gone, r);
    if (rc != BATON_OK)
        return rc;
    waits_rebuild(&r->pools, r->jt.states);
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

int runner_set_node(struct runner *r, int64_t capacity, const char *const *labels)
{
    char **c = labels_dup(labels);
    if (c == NULL)
        return BATON_ENOMEM;
    labels_free(r->labels);
    r->labels = c;
    r->h.labels = r->x.labels = (const char *const *)c;
    /* Runs accepted beyond a lowered capacity finish; no new one is taken
     * until the use is under it (assign_accept counts in Redis). */
    r->h.capacity = r->disp.capacity = capacity;
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
    labels_free(r->labels);
    free(r);
}

/* ---- reading ---- */

size_t runner_running(const struct runner *r)
{
    return r->runs.n;
}

int64_t runner_claim_ahead_ms(const struct runner *r)
{
    return r->x.leading ? r->cl.win.ahead_ms : 0;
}

cJSON *runner_runs_json(const struct runner *r, size_t max)
{
    return runs_json(&r->runs, max);
}

struct runner_wait *runner_waiting(const struct runner *r, size_t *n)
{
    *n = 0;
    if (!r->x.leading)
        return NULL;
    struct runner_wait *l = waits_list(&r->pools, r->jt.states, n);
    if (r->disp.nwaits == 0)
        return l;
    /* then those that wait for a member with room, oldest first */
    struct runner_wait *v = realloc(l, (*n + r->disp.nwaits) * sizeof *v);
    if (v == NULL)
        return l;
    *n += dispatch_waiting(&r->disp, &r->jt, v + *n, r->disp.nwaits);
    return v;
}

cJSON *runner_waiting_json(const struct runner *r, size_t max)
{
    size_t n;
    struct runner_wait *w = runner_waiting(r, &n);
    cJSON *a = waits_json(w, n, max);
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
    window_lead(&r->cl.win);
    r->runs.lease_deadline = lease_deadline_ns;
    r->disp.tend_at = loop_now(); /* what the last leader left outstanding: adopted */
    for (struct jobstate *js = r->jt.states; js != NULL; js = js->next)
        turn_clear(&r->turn, js);
    control_forget_all(&r->ctl);
    marks_lead(&r->x, &r->marks, &r->cl, r->jt.states,
               baton_election_server_changed(r->h.election));
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
        turn_clear(&r->turn, js);
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
    window_went(ctx, at_ms);
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
            &r->cl.win);
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
    turn_jobs(&r->turn, now); /* the jobs whose key has come */
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
        if (!finish_reaped(&r->x, &r->runs, pid, st))
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
            jobtable_wake(&r->jt, js, r->x.leading);
        if (js != NULL && js->pool != NULL) /* a slot of its pool is free */
            waits_wake(&r->x, js->pool, NULL);
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
