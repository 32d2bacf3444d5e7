/* dispatch.c -- see dispatch.h: the leader's offers (a tick just
 * claimed, a marker, run_on: all), the log lines and records they share
 * with the tend (dispatch_tend.c), and what the leader holds. The members
 * as the leader sees them are fleet.c's; a node's side is
 * dispatch_member.c's. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch_int.h"
#include "jobtable.h"
#include "waits.h"

cJSON *dispatch_log_fields(const char *job, int64_t tick, const char *run_id)
{
    char when[32];
    log_rfc3339(tick, when, sizeof when);
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", job);
    cJSON_AddStringToObject(f, "scheduled_at", when);
    cJSON_AddStringToObject(f, "run_id", run_id);
    return f;
}

void dispatch_log_assigned(const struct rctx *x, const char *job, const struct assign *a)
{
    cJSON *f = dispatch_log_fields(job, a->tick, a->run_id);
    cJSON_AddStringToObject(f, "member", a->node);
    cJSON_AddNumberToObject(f, "attempt", a->attempt);
    log_emit(x->log, LE_ASSIGNED, f);
}

const char dispatch_why_none[] =
    "no live member carries the job's labels and takes runs (capacity): not run";
const char dispatch_why_moves[] =
    "offered to members too many times, none of which ran it: not run";

void dispatch_offered(const struct rctx *x, struct dispatch *d, struct fleet *f,
                      const struct job *job, const char *avoid, long i, const struct assign *a)
{
    fleet_charge(f, job, avoid, i);
    if (strcmp(a->node, x->node) == 0)
        dispatch_accept_own(x, d, job->name, a->field);
}

void dispatch_wait_room(struct dispatch *d)
{
    int64_t soon = loop_now() + DISPATCH_WAIT_MS * MS;
    d->waiting++;
    if (d->tend_at == 0 || d->tend_at > soon)
        d->tend_at = soon;
}

void dispatch_not_started(const struct rctx *x, const struct job *job, const struct assign *a,
                          const char *member, enum tick_state *state, const char *why)
{
    ticklife_move(x, job->name, a->tick, state, TICK_EV_START_FAILED);
    records_not_started(x->rec, job, x->term, a->run_id, member, a->tick, false, why);
}

void dispatch_not_run_there(const struct rctx *x, const struct job *job, const struct assign *a,
                            const char *member, enum tick_state *state, const char *why)
{
    ticklife_move(x, job->name, a->tick, state, TICK_EV_START_FAILED);
    records_not_started_on(x->rec, a->node, job, x->term, a->run_id, member, a->tick, false, why);
}

/* run_on: all: the offers of marker m, one to each live member that
 * carries the job's labels and takes runs, in one script; none: the tick
 * is recorded not started. forbid: a member whose earlier run lives is
 * skipped by the script; replace: a member's older tick not yet accepted
 * gives way; the tend, at once, records them (dispatch_skipped). Returns
 * assign_offer_all()'s answer. */
static int offer_every(const struct rctx *x, struct dispatch *d, const struct job *job,
                       const struct assign *m, enum tick_state *state)
{
    const char *const *labels;
    size_t nl = fleet_job_labels(job, &labels), n = 0, made = 0, gave = 0;
    enum assign_per_node policy = job->concurrency == JOB_FORBID    ? ASSIGN_NODE_FORBID
                                  : job->concurrency == JOB_REPLACE ? ASSIGN_NODE_REPLACE
                                                                    : ASSIGN_NODE_ALLOW;
    const struct fleet *f = fleet_get(x, d, false);
    if (f == NULL)
        return BATON_EPROTO; /* Redis could not say: the marker waits for the next tend */
    const char **nodes = calloc(f->n + 1, sizeof *nodes), **ids = calloc(f->n + 1, sizeof *ids);
    char(*idv)[sizeof m->run_id] = calloc(f->n + 1, sizeof *idv);
    bool *skipped = calloc(f->n + 1, sizeof *skipped);
    char member[sizeof m->node + sizeof m->run_id + 2];
    int rc = BATON_ENOMEM;
    snprintf(member, sizeof member, "%s/%s", m->node, m->run_id);
    if (nodes == NULL || ids == NULL || idv == NULL || skipped == NULL)
        goto out;
    for (size_t i = 0; i < f->n; i++) {
        const struct assign_node *v = &f->v[i];
        if (!v->alive || v->capacity <= 0 || !assign_has_labels(v, labels, nl))
            continue;
        /* a run id of its own for each node's run (its history, its output) */
        snprintf(idv[n], sizeof idv[n], "%.48s.%zu", m->run_id, n + 1);
        nodes[n] = v->node;
        ids[n] = idv[n];
        n++;
    }
    rc = assign_offer_all(x->client, x->group, job->name, baton_election_key(x->election),
                          baton_election_token(x->election), m, nodes, ids, n, policy,
                          ASSIGN_OFFER_MS, &made, skipped, &gave);
    if (rc == 1 && gave > 0) /* recorded by the tend, now (here or on the next leader) */
        d->tend_at = loop_now();
    if (rc == 1 && n == 0)
        dispatch_not_started(x, job, m, member, state, dispatch_why_none);
    for (size_t i = 0; rc == 1 && i < n; i++) {
        struct assign a = *m;
        if (skipped[i]) { /* recorded by the tend, now (here or on the next leader) */
            d->tend_at = loop_now();
            continue;
        }
        snprintf(a.field, sizeof a.field, "%" PRId64 "/%s", m->tick, nodes[i]);
        snprintf(a.node, sizeof a.node, "%s", nodes[i]);
        snprintf(a.run_id, sizeof a.run_id, "%s", ids[i]);
        dispatch_log_assigned(x, job->name, &a);
        if (strcmp(a.node, x->node) == 0)
            dispatch_accept_own(x, d, job->name, a.field);
    }
out:
    free(nodes);
    free(ids);
    free(idv);
    free(skipped);
    return rc;
}

bool dispatch_skipped(const struct rctx *x, const struct job *job, const struct assign *v)
{
    const char *token = baton_election_token(x->election);
    char why[sizeof v->node + 128];
    bool replace = job->concurrency == JOB_REPLACE;
    if (token == NULL)
        return false;
    snprintf(why, sizeof why,
             replace ? "run_on: all: %s was offered a newer tick before it took this one "
                       "(concurrency: replace): superseded there"
                     : "run_on: all: %s was still running an earlier tick of the job "
                       "(concurrency: forbid): skipped there",
             v->node);
    int rc = assign_drop(x->client, x->group, job->name, baton_election_key(x->election), token,
                         v->value, v);
    if (rc == 1) {
        enum tick_state s = TICK_ASSIGNED;
        ticklife_move(x, job->name, v->tick, &s, replace ? TICK_EV_SUPERSEDE : TICK_EV_SKIP);
        records_skipped_node(x->rec, job->name, x->term, v->tick, v->node, v->run_id,
                             replace ? HO_SUPERSEDED : HO_SKIPPED, why);
    }
    return rc != BATON_ELOST;
}

int dispatch_offer_marker(const struct rctx *x, struct dispatch *d, const struct job *job,
                          const struct assign *m, enum tick_state *state)
{
    const char *token = baton_election_token(x->election);
    const char *key = baton_election_key(x->election);
    char member[sizeof m->node + sizeof m->run_id + 2];
    snprintf(member, sizeof member, "%s/%s", m->node, m->run_id);
    if (token == NULL)
        return BATON_ELOST;
    ticklife_move(x, job->name, m->tick, state, TICK_EV_ASSIGN);
    if (job_run_on(job, NULL) == JOB_RUN_ON_ALL && strchr(m->field, '/') == NULL)
        return offer_every(x, d, job, m, state);
    struct fleet *f;
    if (strchr(m->field, '/') != NULL) { /* a node's own (all), handed back: to that node */
        struct assign a = *m;
        long i = -1;
        if ((f = fleet_get(x, d, false)) == NULL)
            return BATON_EPROTO; /* the marker waits for the next tend */
        for (size_t k = 0; k < f->n && i < 0; k++)
            if (strcmp(f->v[k].node, m->node) == 0 && f->v[k].alive)
                i = (long)k;
        if (i >= 0) {
            int rc = assign_offer(x->client, x->group, job->name, key, token, NULL, "claimed", &a,
                                  ASSIGN_OFFER_MS);
            if (rc == 1)
                dispatch_log_assigned(x, job->name, &a);
            if (rc == 1 && strcmp(a.node, x->node) == 0)
                dispatch_accept_own(x, d, job->name, a.field);
            return rc;
        }
        int rc = assign_drop(x->client, x->group, job->name, key, token, "claimed", m);
        char why[sizeof m->node + 96];
        snprintf(why, sizeof why, "its node %s handed it back and is no longer live: not run",
                 m->node);
        if (rc == 1)
            dispatch_not_run_there(x, job, m, member, state, why);
        return rc;
    }
    long i = fleet_pick(x, d, job, m->tick, NULL, &f);
    if (i == ASSIGN_NO_ROOM) { /* the marker waits in Redis for room */
        dispatch_wait_room(d);
        return 0;
    }
    if (i < 0) {
        int rc = assign_drop(x->client, x->group, job->name, key, token, "claimed", m);
        if (rc == 1) /* its registration goes with the record */
            dispatch_not_started(x, job, m, member, state, dispatch_why_none);
        return rc;
    }
    struct assign a = *m;
    snprintf(a.node, sizeof a.node, "%s", f->v[i].node);
    a.moves = 0;
    a.died[0] = '\0';
    int rc = assign_offer(x->client, x->group, job->name, key, token, NULL, "claimed", &a,
                          ASSIGN_OFFER_MS);
    if (rc == 1) {
        dispatch_log_assigned(x, job->name, &a);
        dispatch_offered(x, d, f, job, NULL, i, &a);
    }
    return rc;
}

/* The marker of js's tick, claimed by this node under run id. */
static struct assign marker_of(const struct rctx *x, int64_t tick, const char *id)
{
    struct assign m = {.tick = tick, .attempt = 1, .state = ASSIGN_CLAIMED};
    snprintf(m.field, sizeof m.field, "%" PRId64, tick);
    snprintf(m.node, sizeof m.node, "%s", x->node);
    snprintf(m.run_id, sizeof m.run_id, "%s", id);
    return m;
}

void dispatch_offer(const struct rctx *x, struct jobstate *js, const char *id, int64_t tick,
                    enum tick_state *state)
{
    struct assign m = marker_of(x, tick, id);
    struct dispatch *d = x->disp;
    if (x->fault_stop_before_offer)
        raise(SIGSTOP);
    d->reread = true;
    if (d->waiting > 0 && job_run_on(js->job, NULL) != JOB_RUN_ON_ALL) {
        /* older ticks wait for room: this one waits behind them, first come
         * first served (the tend offers them in tick order) */
        ticklife_move(x, js->job->name, tick, state, TICK_EV_ASSIGN);
        dispatch_wait_room(d);
        return;
    }
    /* Not offered (no answer, the lease lost): the marker stays in Redis,
     * and the next tend, here or on the next leader, offers it. */
    dispatch_offer_marker(x, d, js->job, &m, state);
}

bool dispatch_record_held(const struct rctx *x, const struct jobstate *js, int64_t until,
                          const char *reason)
{
    const char *token = baton_election_token(x->election);
    struct assign *v = calloc(DISPATCH_LIST_MAX, sizeof *v);
    bool *alive = calloc(DISPATCH_LIST_MAX, sizeof *alive), ok = false;
    size_t n = 0;
    int64_t server_ms;
    if (token == NULL || v == NULL || alive == NULL || !rctx_may_block(x) ||
        assign_list_all(x->client, x->group, v, alive, DISPATCH_LIST_MAX, true, &n, &server_ms) !=
            BATON_OK)
        goto out;
    ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        if (v[i].state != ASSIGN_CLAIMED || v[i].tick > until ||
            strcmp(v[i].job, js->job->name) != 0)
            continue;
        int rc = assign_drop(x->client, x->group, js->job->name, baton_election_key(x->election),
                             token, "claimed", &v[i]);
        if (rc == 1) {
            enum tick_state s = TICK_HELD;
            ticklife_move(x, js->job->name, v[i].tick, &s, TICK_EV_SKIP);
            records_skipped_one(x->rec, js->job->name, x->term, v[i].tick, HO_SKIPPED, reason);
        }
        ok = rc >= 0;
    }
out:
    free(v);
    free(alive);
    return ok;
}

bool dispatch_let_go(const struct rctx *x, const struct jobstate *js, int64_t tick, const char *id)
{
    const char *token = baton_election_token(x->election);
    struct assign m = marker_of(x, tick, id);
    return token != NULL && rctx_may_block(x) &&
           assign_drop(x->client, x->group, js->job->name, baton_election_key(x->election), token,
                       "claimed", &m) == 1;
}

void dispatch_ended(struct dispatch *d)
{
    /* A member may have room now: a tend, but not more often than every
     * DISPATCH_WAIT_MS (runs may end by the hundred a second, and a tend
     * reads all that is outstanding). */
    int64_t at = d->tended_at + DISPATCH_WAIT_MS * MS;
    if (d->waiting > 0 && (d->tend_at == 0 || d->tend_at > at))
        d->tend_at = at > loop_now() ? at : loop_now();
}

size_t dispatch_waiting(const struct dispatch *d, const struct jobtable *jt,
                        struct runner_wait *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < d->nwaits && n < max; i++) {
        const struct jobstate *js = jobtable_find(jt, d->waits[i].job);
        if (js == NULL)
            continue; /* gone with a reload: the next look drops it */
        size_t queued = 0;
        for (size_t k = 0; k < d->nwaits; k++)
            queued += strcmp(d->waits[k].job, d->waits[i].job) == 0;
        out[n++] = (struct runner_wait){.job = js->job->name,
                                        .room = true,
                                        .tick = d->waits[i].tick,
                                        .since_ms = d->waits[i].since_ms,
                                        .queued = queued};
    }
    return n;
}

void dispatch_free(struct dispatch *d)
{
    fleet_free(d->view);
    d->view = NULL;
}
