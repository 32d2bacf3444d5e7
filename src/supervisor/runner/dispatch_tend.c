/* dispatch_tend.c -- see dispatch.h: what the leader does every
 * DISPATCH_TEND_MS (dispatch_tend): what is outstanding read in one call,
 * oldest tick first, each decided (offered again, recorded, retried), and
 * the registrations of ticks that wait for room, or for their retry's
 * backoff, held. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch_int.h"
#include "facts.h"
#include "hook.h"
#include "jobtable.h"
#include "schedule.h"

/* Offers outstanding a (as read: its value) again, to another member
 * than the one that let it down; why: for the log. Returns false when
 * this node no longer leads. */
static bool reoffer(const struct rctx *x, struct dispatch *d, const struct job *job,
                    const struct assign *was, struct assign *a, const char *why)
{
    const char *token = baton_election_token(x->election);
    const char *key = baton_election_key(x->election);
    enum tick_state state = TICK_ASSIGNED;
    char member[sizeof was->node + sizeof was->run_id + 2];
    snprintf(member, sizeof member, "%s/%s", was->node, was->run_id);
    if (token == NULL)
        return false;
    struct fleet *f = NULL;
    long i = a->moves >= DISPATCH_MOVES_MAX ? ASSIGN_NO_MEMBER
                                            : fleet_pick(x, d, job, a->tick, was->node, &f);
    if (i == ASSIGN_NO_ROOM) { /* it waits for room, as it is */
        dispatch_wait_room(d);
        return true;
    }
    if (i < 0) {
        int rc = assign_drop(x->client, x->group, job->name, key, token, was->value, was);
        if (rc == 1)
            dispatch_not_started(x, job, a, member, &state,
                                 a->moves >= DISPATCH_MOVES_MAX ? dispatch_why_moves
                                                                : dispatch_why_none);
        return rc != BATON_ELOST;
    }
    snprintf(a->node, sizeof a->node, "%s", f->v[i].node);
    a->moves++;
    int rc = assign_offer(x->client, x->group, job->name, key, token, NULL, was->value, a,
                          ASSIGN_OFFER_MS);
    if (rc == 1) {
        ticklife_move(x, job->name, a->tick, &state, TICK_EV_REASSIGN);
        cJSON *lf = dispatch_log_fields(job->name, a->tick, a->run_id);
        cJSON_AddStringToObject(lf, "from", was->node);
        cJSON_AddStringToObject(lf, "to", a->node);
        cJSON_AddNumberToObject(lf, "attempt", a->attempt);
        cJSON_AddStringToObject(lf, "reason", why);
        log_emit_facts(x->log, LE_REASSIGNED, lf, &(struct log_facts){.job = job->name});
        dispatch_offered(x, d, f, job, was->node, i, a);
    }
    return rc != BATON_ELOST;
}

/* A run accepted by was->node, whose registration went before it started
 * it (its member died, or was cut off): offered elsewhere once; the
 * member that runs it says so in its record. A second member lost so
 * before starting it: recorded not started, naming both. Returns false
 * when this node no longer leads. */
static bool died_before_start(const struct rctx *x, struct dispatch *d, const struct job *job,
                              const struct assign *was)
{
    char why[480];
    struct assign a = *was;
    if (was->died[0] == '\0') {
        snprintf(a.died, sizeof a.died, "%s", was->node);
        snprintf(why, sizeof why,
                 "%s accepted it, then was lost before it started it: it runs elsewhere, once",
                 was->node);
        return reoffer(x, d, job, was, &a, why);
    }
    const char *token = baton_election_token(x->election);
    enum tick_state state = TICK_ASSIGNED;
    char member[sizeof was->node + sizeof was->run_id + 2];
    if (token == NULL)
        return false;
    snprintf(member, sizeof member, "%s/%s", was->node, was->run_id);
    snprintf(why, sizeof why,
             "%s, then %s, accepted it and each was lost before it started it: not offered "
             "again, not run",
             was->died, was->node);
    int rc = assign_drop(x->client, x->group, job->name, baton_election_key(x->election), token,
                         was->value, was);
    if (rc == 1)
        dispatch_not_started(x, job, was, member, &state, why);
    return rc != BATON_ELOST;
}

#define NEXT_WAIT 2 /* next_attempt(): no member has room: it waits */

/* Offers the next attempt of was's tick (its run lost while it ran, or
 * failed with a retry due) to another member than was's (run_on: all:
 * to was's node, alive), under a new run id; a: the offer made, to
 * (*fp)->v[*ip]. Returns assign_offer()'s answer, 0 when there is no
 * member for it, or NEXT_WAIT when none has room (nothing done: *a
 * unset). */
static int next_attempt(const struct rctx *x, struct dispatch *d, const struct job *job,
                        const struct assign *was, struct assign *a, struct fleet **fp, long *ip)
{
    long i = ASSIGN_NO_MEMBER;
    if (job_run_on(job, NULL) != JOB_RUN_ON_ALL)
        i = fleet_pick(x, d, job, was->tick, was->node, fp);
    else if ((*fp = fleet_get(x, d, false)) == NULL)
        i = ASSIGN_NO_ROOM;
    else /* a node's own run: on that node again, while it is alive */
        for (size_t k = 0; k < (*fp)->n && i < 0; k++)
            if (strcmp((*fp)->v[k].node, was->node) == 0 && (*fp)->v[k].alive)
                i = (long)k;
    *ip = i;
    if (i == ASSIGN_NO_ROOM)
        return NEXT_WAIT;
    if (i < 0)
        return 0;
    struct fleet *f = *fp;
    *a = *was;
    d->seq++;
    a->attempt = was->attempt + 1;
    a->moves = was->moves + 1;
    a->died[0] = '\0';
    snprintf(a->node, sizeof a->node, "%s", f->v[i].node);
    snprintf(a->run_id, sizeof a->run_id, "%" PRId64 "-%" PRIu64 "-%d-d%" PRIu64, was->tick,
             x->term, a->attempt, d->seq);
    return assign_offer(x->client, x->group, job->name, baton_election_key(x->election),
                        baton_election_token(x->election), NULL, was->value, a, ASSIGN_OFFER_MS);
}

/* a's run was lost while it ran (its registration gone after started):
 * recorded lost with its node, then offered again as the next attempt
 * while the job's retries allow. Returns false when this node no longer
 * leads. */
static bool lost(const struct rctx *x, struct dispatch *d, const struct job *job,
                 const struct assign *was)
{
    const char *token = baton_election_token(x->election);
    enum tick_state state = TICK_ASSIGNED;
    char why[320];
    struct assign a;
    struct fleet *f = NULL;
    long i = -1;
    int rc = 0;
    snprintf(why, sizeof why,
             "its node %s was lost while it ran (its registration lapsed: the run was stopped "
             "before it could)",
             was->node);
    if (token == NULL)
        return false;
    if (was->attempt <= job->retries)
        rc = next_attempt(x, d, job, was, &a, &f, &i);
    if (rc == NEXT_WAIT) { /* recorded when its next attempt is offered */
        dispatch_wait_room(d);
        return true;
    }
    bool retried = rc == 1;
    if (!retried && rc == 0)
        rc = assign_drop(x->client, x->group, job->name, baton_election_key(x->election), token,
                         was->value, was);
    if (rc != 1)
        return rc != BATON_ELOST;
    records_lost(x->rec, job->name, x->term, was->tick, was->node, was->run_id, was->attempt, why);
    cJSON *lf = dispatch_log_fields(job->name, was->tick, was->run_id);
    cJSON_AddStringToObject(lf, "member", was->node);
    cJSON_AddNumberToObject(lf, "attempt", was->attempt);
    cJSON_AddStringToObject(lf, "then", retried ? "retried on another member" : "recorded");
    log_emit_facts_at(x->log, LOG_WARN, LE_LOST, lf, &(struct log_facts){.job = job->name});
    if (retried) {
        ticklife_move(x, job->name, was->tick, &state, TICK_EV_RETRY);
        dispatch_log_assigned(x, job->name, &a);
        dispatch_offered(x, d, f, job, was->node, i, &a);
    } else {
        ticklife_move(x, job->name, was->tick, &state, TICK_EV_LOST);
    }
    return true;
}

/* was's run failed on its member, which recorded it and handed it back
 * as a retry now due: its next attempt offered to another member (or,
 * none fitting, the retry dropped: the failure is its tick's record).
 * Returns false when this node no longer leads. */
static bool retry(const struct rctx *x, struct dispatch *d, const struct job *job,
                  const struct assign *was)
{
    const char *token = baton_election_token(x->election);
    enum tick_state state = TICK_ASSIGNED;
    struct assign a;
    struct fleet *f = NULL;
    long i = -1;
    if (token == NULL)
        return false;
    int rc = next_attempt(x, d, job, was, &a, &f, &i);
    if (rc == NEXT_WAIT) {
        dispatch_wait_room(d);
    } else if (rc == 1) {
        ticklife_move(x, job->name, was->tick, &state, TICK_EV_RETRY);
        dispatch_log_assigned(x, job->name, &a);
        dispatch_offered(x, d, f, job, was->node, i, &a);
    } else if (rc == 0 &&
               assign_drop(x->client, x->group, job->name, baton_election_key(x->election), token,
                           was->value, was) == 1) {
        hooks_retry_dropped(x->hooks, job->name, was->tick);
    }
    return rc != BATON_ELOST;
}

/* run_on: all: a node's offer not accepted in time, or its run accepted
 * and lost before its start, is recorded not started, naming that node
 * (never moved to another node). Returns false when this node no longer leads. */
static bool not_moved(const struct rctx *x, const struct job *job, const struct assign *was)
{
    const char *token = baton_election_token(x->election);
    enum tick_state state = TICK_ASSIGNED;
    char member[sizeof was->node + sizeof was->run_id + 2], why[400];
    if (token == NULL)
        return false;
    snprintf(member, sizeof member, "%s/%s", was->node, was->run_id);
    snprintf(why, sizeof why,
             was->state == ASSIGN_OFFERED
                 ? "run_on: all: %s did not accept it in time (gone or full): not run there"
                 : "run_on: all: %s accepted it, then was lost before it started it: not run "
                   "there",
             was->node);
    int rc = assign_drop(x->client, x->group, job->name, baton_election_key(x->election), token,
                         was->value, was);
    if (rc == 1)
        dispatch_not_run_there(x, job, was, member, &state, why);
    return rc != BATON_ELOST;
}

/* js's tick held by a pause (a marker not yet offered waits for its end). */
static bool held(const struct jobstate *js, int64_t tick)
{
    return js->ctl.pause_until != 0 && tick <= js->ctl.pause_until;
}

/* Oldest tick first, then by job and field: the order ticks waiting for
 * room are served in (the same on every leader). */
static int by_tick(const void *pa, const void *pb)
{
    const struct assign *a = pa, *b = pb;
    if (a->tick != b->tick)
        return a->tick < b->tick ? -1 : 1;
    int c = strcmp(a->job, b->job);
    return c != 0 ? c : strcmp(a->field, b->field);
}

/* The registrations of the n ticks in w that wait for room (markers,
 * offers past their deadline, the next attempt of a run lost or failed:
 * assign_hold), or for their retry's backoff, held for a lease more, at
 * most every DISPATCH_TEND_MS: a forbid job, and max_running, see such a
 * tick alive as they see an offered one. */
static void hold(const struct rctx *x, struct dispatch *d, const struct assign *const *w, size_t n,
                 int64_t now)
{
    const char *token = baton_election_token(x->election);
    if (n == 0 || token == NULL || now - d->held_at < DISPATCH_TEND_MS * MS)
        return;
    d->held_at = now;
    assign_hold(x->client, x->group, baton_election_key(x->election), token, w, n, x->lease_ttl_ms);
}

/* The n ticks in w (oldest first) that wait for room now become d's list
 * for status; one listed at the last look keeps when it began to wait. */
static void note_waits(struct dispatch *d, const struct assign *const *w, size_t n)
{
    struct dispatch_wait v[DISPATCH_WAITS_MAX];
    size_t nv = 0;
    int64_t wall = rtime_wall_ms();
    for (size_t i = 0; i < n && nv < DISPATCH_WAITS_MAX; i++) {
        struct dispatch_wait *e = &v[nv++];
        snprintf(e->job, sizeof e->job, "%s", w[i]->job);
        e->tick = w[i]->tick;
        e->since_ms = wall;
        for (size_t k = 0; k < d->nwaits; k++)
            if (d->waits[k].tick == e->tick && strcmp(d->waits[k].job, e->job) == 0)
                e->since_ms = d->waits[k].since_ms;
    }
    memcpy(d->waits, v, nv * sizeof *v);
    d->nwaits = nv;
}

static const char why_aged[] =
    "it waited to be offered (no member had room, or its leader was lost) past its catch-up "
    "window: not run";

/* Marker m of job, not offered yet (it waited for room, or its leader
 * was lost), is decided as a held tick is (sched_held): aged out of the
 * catch-up window, recorded missed; with catchup: last and a newer tick
 * due, superseded (not for forbid: its newer ticks were skipped while it
 * waited alive, so it runs). Returns true when it is not to be offered
 * (*leads false when this node no longer leads). */
static bool aged(const struct rctx *x, const struct job *job, const struct assign *m, bool *leads)
{
    enum sched_verdict v = sched_held(job, m->tick, rtime_wall_ms());
    const char *token = baton_election_token(x->election);
    if (v == SV_SUPERSEDE && job->concurrency == JOB_FORBID)
        v = SV_START;
    if (token == NULL) {
        *leads = false;
        return true;
    }
    if (v == SV_START)
        return false;
    int rc = assign_drop(x->client, x->group, job->name, baton_election_key(x->election), token,
                         "claimed", m);
    if (rc == 1) {
        enum tick_state s = TICK_CLAIMED;
        ticklife_move(x, job->name, m->tick, &s, v == SV_DROP ? TICK_EV_DROP : TICK_EV_SUPERSEDE);
        records_skipped_one(x->rec, job->name, x->term, m->tick,
                            v == SV_DROP ? HO_MISSED : HO_SUPERSEDED,
                            v == SV_DROP ? why_aged : sched_reason(job, v));
    }
    *leads = rc != BATON_ELOST;
    return true;
}

/* Decides v (its job's js), due: returns false when this node no longer
 * leads. */
static bool tend_one(const struct rctx *x, struct dispatch *d, struct jobstate *js,
                     struct assign *v)
{
    struct assign a = *v;
    char why[320];
    enum tick_state state = TICK_CLAIMED;
    if (job_run_on(js->job, NULL) == JOB_RUN_ON_ALL &&
        (v->state == ASSIGN_OFFERED || v->state == ASSIGN_ACCEPTED))
        return not_moved(x, js->job, v);
    switch (v->state) {
    case ASSIGN_CLAIMED: { /* claimed, never offered (its leader died, no answer, no room) */
        bool leads = true;
        if (held(js, v->tick) || aged(x, js->job, v, &leads))
            return leads;
        return dispatch_offer_marker(x, d, js->job, v, &state) != BATON_ELOST;
    }
    case ASSIGN_OFFERED:
        snprintf(why, sizeof why, "%s did not accept it in time", v->node);
        return reoffer(x, d, js->job, v, &a, why);
    case ASSIGN_ACCEPTED: return died_before_start(x, d, js->job, v);
    case ASSIGN_STARTED: return lost(x, d, js->job, v);
    case ASSIGN_RETRY: return retry(x, d, js->job, v);
    case ASSIGN_SKIPPED: return dispatch_skipped(x, js->job, v); /* run_on: all, forbid */
    }
    return true;
}

void dispatch_tend(const struct rctx *x, struct dispatch *d, int64_t now)
{
    if (!x->leading && d->view != NULL) { /* a next term starts its shares anew */
        fleet_free(d->view);
        d->view = NULL;
        d->waiting = 0;
    }
    if (!x->leading)
        d->nwaits = 0;
    if (!x->leading || !d->fleet || d->tend_at == 0 || now < d->tend_at)
        return;
    d->tend_at = now + DISPATCH_TEND_MS * MS;
    d->tended_at = now;
    if (!rctx_may_block(x))
        return;
    /* What is outstanding, of every job, in one call (assign_list_all);
     * what needs a decision, oldest tick first. */
    struct assign *v = calloc(DISPATCH_LIST_MAX, sizeof *v);
    const struct assign **w = calloc(DISPATCH_LIST_MAX, sizeof *w);
    bool *alive = calloc(DISPATCH_LIST_MAX, sizeof *alive);
    size_t n = 0, todo = 0, nw = 0, nb = 0, backoff = 0;
    int64_t server_ms;
    if (v == NULL || w == NULL || alive == NULL ||
        assign_list_all(x->client, x->group, v, alive, DISPATCH_LIST_MAX, true, &n, &server_ms) !=
            BATON_OK)
        goto out;
    /* What needs a decision first, then the retries in their backoff
     * (alive: listed to be held). */
    for (size_t i = 0; i < n; i++)
        if (!alive[i]) {
            struct assign t = v[todo];
            v[todo] = v[i];
            v[i] = t;
            alive[i] = alive[todo];
            alive[todo++] = false;
        }
    for (size_t i = todo; i < n; i++)
        if (v[i].state == ASSIGN_RETRY)
            v[todo + backoff++] = v[i];
    qsort(v, todo, sizeof *v, by_tick);
    d->waiting = 0;
    d->reread = true;
    bool leads = true;
    for (size_t i = 0; i < todo && leads && x->leading && rctx_may_block(x); i++) {
        struct jobstate *js = jobtable_find(x->jt, v[i].job);
        if (js == NULL || job_run_on(js->job, NULL) == JOB_RUN_ON_LEADER)
            continue; /* not a job this leader dispatches: left as it is */
        size_t before = d->waiting;
        leads = tend_one(x, d, js, &v[i]);
        if (d->waiting > before) /* a marker, an offer, or a run's next attempt */
            w[nw++] = &v[i];
    }
    for (size_t i = todo; i < todo + backoff; i++) {
        const struct jobstate *js = jobtable_find(x->jt, v[i].job);
        if (js != NULL && job_run_on(js->job, NULL) != JOB_RUN_ON_LEADER)
            w[nw + nb++] = &v[i]; /* after the waits: held, not listed as waiting */
    }
    if (leads && x->leading)
        hold(x, d, w, nw + nb, now);
    note_waits(d, w, nw);
out:
    free(v);
    free(w);
    free(alive);
}
