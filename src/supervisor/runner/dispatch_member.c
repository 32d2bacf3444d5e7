/* dispatch_member.c -- see dispatch.h: every node's side, the leader
 * included: its offers read (dispatch_poll, on "offer <node>", a
 * subscription made again, or every DISPATCH_POLL_MS) and accepted under
 * its capacity, their runs started (runs.h); and when there is something
 * to do (dispatch_next). */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch_int.h"
#include "jobtable.h"
#include "runs.h"

#define OFFERS_MAX      32 /* offers read per poll */
#define REPLACE_POLL_MS 50 /* an offer waiting for this node's earlier run to end looks again */

/* The term in run id "<tick>-<term>-<attempt>-<seq>" (0 when it has
 * none). */
static uint64_t term_of(const char *id)
{
    const char *p = strchr(id, '-');
    char *end;
    if (p == NULL)
        return 0;
    unsigned long long t = strtoull(p + 1, &end, 10);
    return *end == '-' ? (uint64_t)t : 0;
}

/* Accepts the offer "<job> <field>" made to this node, and starts its
 * run (runs_accepted). Returns assign_accept()'s answer (ASSIGN_GONE: not
 * a job of this node's jobs.yaml run on members, or Redis may not be
 * called now). */
static enum assign_answer accept_one(const struct rctx *x, struct dispatch *d, const char *job,
                                     const char *field)
{
    struct jobstate *js = jobtable_find(x->jt, job);
    struct assign a;
    if (js == NULL || job_run_on(js->job, NULL) == JOB_RUN_ON_LEADER || !rctx_may_block(x))
        return ASSIGN_GONE; /* not this node's to run: it expires and moves on */
    if (job_run_on(js->job, NULL) == JOB_RUN_ON_ALL && js->job->concurrency == JOB_REPLACE &&
        js->runs.running > 0) {
        /* replace, per node: this node's earlier run stops first; the
         * offer is accepted once it has ended (its deadline allowing) */
        runs_stop_job(d->rs, js);
        d->poll_at = loop_now() + REPLACE_POLL_MS * MS;
        return ASSIGN_GONE;
    }
    int64_t sent = loop_now();
    enum assign_answer ans =
        assign_accept(x->client, x->group, job, field, x->node, d->capacity, x->lease_ttl_ms, &a);
    if (ans != ASSIGN_OK)
        return ans;
    enum tick_state state = TICK_ASSIGNED;
    ticklife_move(x, job, a.tick, &state, TICK_EV_ACCEPT);
    cJSON *lf = dispatch_log_fields(job, a.tick, a.run_id);
    cJSON_AddNumberToObject(lf, "attempt", a.attempt);
    cJSON_AddNumberToObject(lf, "moves", a.moves);
    log_emit(x->log, LE_ACCEPTED, lf);
    if (x->fault_stop_after_accept)
        raise(SIGSTOP);
    runs_accepted(x, d->rs, js, &a, term_of(a.run_id), sent);
    return ASSIGN_OK;
}

void dispatch_accept_own(const struct rctx *x, struct dispatch *d, const char *job,
                         const char *field)
{
    if (d->fleet && !d->closed && d->rs != NULL)
        accept_one(x, d, job, field);
}

void dispatch_poll(const struct rctx *x, struct dispatch *d, int64_t now)
{
    if (!d->fleet || d->closed || d->poll_at == 0 || now < d->poll_at)
        return;
    d->poll_at = now + DISPATCH_POLL_MS * MS;
    if (!rctx_may_block(x))
        return;
    char *jobs[OFFERS_MAX], *fieldv[OFFERS_MAX];
    size_t n = 0;
    if (assign_offers(x->client, x->group, x->node, jobs, fieldv, OFFERS_MAX, &n) != BATON_OK)
        n = 0;
    bool full = false;
    for (size_t i = 0; i < n; i++) {
        if (full)
            continue; /* at capacity: the rest expire and move on */
        enum assign_answer ans = accept_one(x, d, jobs[i], fieldv[i]);
        full = ans == ASSIGN_FULL || ans == ASSIGN_ERROR;
    }
    for (size_t i = 0; i < n; i++) {
        free(jobs[i]);
        free(fieldv[i]);
    }
}

void dispatch_heard(const struct rctx *x, struct dispatch *d, const char *node, size_t len)
{
    if (d->fleet && !d->closed && strlen(x->node) == len && memcmp(node, x->node, len) == 0)
        d->poll_at = loop_now();
}

void dispatch_missed(struct dispatch *d)
{
    if (d->fleet && !d->closed)
        d->poll_at = loop_now();
}

void dispatch_jobs(struct dispatch *d, bool fleet)
{
    d->fleet = fleet;
    if (fleet && d->poll_at == 0)
        d->poll_at = loop_now();
    if (fleet && d->tend_at == 0)
        d->tend_at = loop_now();
}

void dispatch_close(struct dispatch *d)
{
    d->closed = true;
}

int64_t dispatch_next(const struct rctx *x, const struct dispatch *d)
{
    int64_t next = 0;
    if (!d->fleet)
        return 0;
    if (x->leading)
        rtime_earliest(&next, d->tend_at);
    if (!d->closed)
        rtime_earliest(&next, d->poll_at);
    return next;
}
