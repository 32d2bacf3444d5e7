/* dispatch.c -- see dispatch.h. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign.h"
#include "dispatch.h"
#include "facts.h"
#include "hook.h"
#include "jobtable.h"
#include "members.h"
#include "rtime.h"
#include "runs.h"
#include "schedule.h"

#define OFFERS_MAX 32   /* offers read per poll */
#define LIST_MAX   1024 /* assignments due read per tend (one call; the rest at the next) */

/* ---- the members, as the leader sees them ---- */

struct fleet {
    struct member *m;
    size_t n;
    struct assign_node *v;
    cJSON **info;        /* each heartbeat, parsed (the labels point into it) */
    const char **labels; /* every node's, one block */
    int64_t read_at;     /* when read (CLOCK_MONOTONIC) */
};

static void fleet_free(struct fleet *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; f->info != NULL && i < f->n; i++)
        cJSON_Delete(f->info[i]);
    free(f->info);
    free(f->labels);
    free(f->v);
    members_free(f->m, f->n);
    free(f);
}

/* Reads the members' last heartbeats and what Redis counts of their
 * loads; the credits of the nodes of was (may be NULL) carried over.
 * Returns: owned (fleet_free), or NULL when Redis could not say. */
static struct fleet *fleet_read(const struct rctx *x, const struct fleet *was)
{
    struct fleet *f = calloc(1, sizeof *f);
    if (f == NULL || members_read(x->client, x->group, &f->m, &f->n) != BATON_OK) {
        free(f);
        return NULL;
    }
    f->read_at = loop_now();
    f->v = calloc(f->n + 1, sizeof *f->v);
    f->info = calloc(f->n + 1, sizeof *f->info);
    f->labels = calloc(f->n * ASSIGN_LABELS_MAX + 1, sizeof *f->labels);
    const char **names = calloc(f->n + 1, sizeof *names);
    int64_t *in_use = calloc(f->n + 1, sizeof *in_use);
    bool ok =
        f->v != NULL && f->info != NULL && f->labels != NULL && names != NULL && in_use != NULL;
    for (size_t i = 0; ok && i < f->n; i++) {
        struct assign_node *a = &f->v[i];
        cJSON *o = f->info[i] = cJSON_Parse(f->m[i].info_json);
        const cJSON *cap = cJSON_GetObjectItemCaseSensitive(o, "capacity");
        const cJSON *acc = cJSON_GetObjectItemCaseSensitive(o, "accepting");
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "labels"), *e;
        a->node = names[i] = f->m[i].node;
        a->labels = f->labels + i * ASSIGN_LABELS_MAX;
        cJSON_ArrayForEach(e, l)
        {
            if (cJSON_IsString(e) && a->nlabels < ASSIGN_LABELS_MAX)
                f->labels[i * ASSIGN_LABELS_MAX + a->nlabels++] = e->valuestring;
        }
        /* An older baton says no capacity: it takes nothing. */
        a->capacity = cJSON_IsNumber(cap) ? (int64_t)cap->valuedouble : 0;
        a->alive = members_alive(&f->m[i]) && !cJSON_IsFalse(acc);
        for (size_t k = 0; was != NULL && k < was->n; k++)
            if (strcmp(was->v[k].node, a->node) == 0)
                a->credit = was->v[k].credit;
    }
    if (ok && f->n > 0 && assign_loads(x->client, x->group, names, f->n, in_use) != BATON_OK)
        ok = false;
    for (size_t i = 0; ok && i < f->n; i++)
        f->v[i].in_use = in_use[i];
    free(names);
    free(in_use);
    if (!ok) {
        fleet_free(f);
        f = NULL;
    }
    return f;
}

/* The members as the leader last read them, read again when that is
 * DISPATCH_FLEET_MS old, or DISPATCH_ROOM_MS old when room is wanted (no
 * member had it; once a tend, or a claimed tick, at most): not once a
 * tick, whatever the number of nodes; between two reads the offers made
 * count in their members' in_use. NULL when Redis could not say. */
static struct fleet *fleet_get(const struct rctx *x, struct dispatch *d, bool room)
{
    int64_t now = loop_now(), age = d->view != NULL ? now - d->view->read_at : 0;
    if (d->view != NULL && age < DISPATCH_FLEET_MS * MS &&
        (!room || !d->reread || age < DISPATCH_ROOM_MS * MS))
        return d->view;
    d->reread = false;
    struct fleet *f = fleet_read(x, d->view);
    if (f != NULL) {
        fleet_free(d->view);
        d->view = f;
    }
    return f;
}

/* job's labels (run_on), and how many. */
static size_t job_labels(const struct job *job, const char *const **labels)
{
    char *const *l;
    size_t nl = 0;
    job_run_on(job, &l);
    while (l != NULL && l[nl] != NULL)
        nl++;
    *labels = (const char *const *)l;
    return nl;
}

/* The member to offer job's tick to (avoid: the one that let it down, if
 * another fits), with room (the members read again once when none has);
 * *fp: the view chosen from. Returns its index in (*fp)->v,
 * ASSIGN_NO_ROOM (the tick waits for room) or ASSIGN_NO_MEMBER. */
static long fleet_pick(const struct rctx *x, struct dispatch *d, const struct job *job,
                       int64_t tick, const char *avoid, struct fleet **fp)
{
    const char *const *l;
    size_t nl = job_labels(job, &l);
    uint64_t seed = assign_seed(job->name, tick, NULL);
    long i = ASSIGN_NO_MEMBER;
    for (int pass = 0; pass < 2 && (pass == 0 || i == ASSIGN_NO_ROOM); pass++) {
        *fp = fleet_get(x, d, pass == 1);
        if (*fp == NULL)
            return ASSIGN_NO_ROOM; /* Redis could not say: it waits */
        i = assign_choose((*fp)->v, (*fp)->n, l, nl, avoid, seed);
    }
    return i;
}

/* f->v[i] was offered job's tick (fleet_pick with avoid): its share and
 * in_use count it. */
static void fleet_charge(struct fleet *f, const struct job *job, const char *avoid, long i)
{
    const char *const *l;
    size_t nl = job_labels(job, &l);
    assign_charge(f->v, f->n, l, nl, avoid, i);
}

/* ---- the log ---- */

static cJSON *fields(const char *job, int64_t tick, const char *run_id)
{
    char when[32];
    log_rfc3339(tick, when, sizeof when);
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", job);
    cJSON_AddStringToObject(f, "scheduled_at", when);
    cJSON_AddStringToObject(f, "run_id", run_id);
    return f;
}

static void log_assigned(const struct rctx *x, const char *job, const struct assign *a)
{
    cJSON *f = fields(job, a->tick, a->run_id);
    cJSON_AddStringToObject(f, "member", a->node);
    cJSON_AddNumberToObject(f, "attempt", a->attempt);
    log_emit(x->log, LE_ASSIGNED, f);
}

static const char why_none[] =
    "no live member carries the job's labels and takes runs (capacity): not run";
static const char why_moves[] = "offered to members too many times, none of which ran it: not run";

/* ---- the leader ---- */

static void accept_own(const struct rctx *x, struct dispatch *d, const char *job,
                       const char *field);

/* a, an offer of job's tick, was made to f->v[i] (chosen by fleet_pick
 * with avoid): its share and in_use count it, and an offer to this node is
 * accepted at once (its loop would hear "offer" only after its turn of
 * claims, and the offers made to it meanwhile would look like load). */
static void offered(const struct rctx *x, struct dispatch *d, struct fleet *f,
                    const struct job *job, const char *avoid, long i, const struct assign *a)
{
    fleet_charge(f, job, avoid, i);
    if (strcmp(a->node, x->node) == 0)
        accept_own(x, d, job->name, a->field);
}

/* A tick waits for a member with room: the next tend comes within
 * DISPATCH_WAIT_MS, or at once when a run ends (dispatch_ended). */
static void wait_room(struct dispatch *d)
{
    int64_t soon = loop_now() + DISPATCH_WAIT_MS * MS;
    d->waiting++;
    if (d->tend_at == 0 || d->tend_at > soon)
        d->tend_at = soon;
}

/* The tick of job in *state (assigned) is not run: recorded so. */
static void not_started(const struct rctx *x, const struct job *job, const struct assign *a,
                        const char *member, enum tick_state *state, const char *why)
{
    ticklife_move(x, job->name, a->tick, state, TICK_EV_START_FAILED);
    records_not_started(x->rec, job, x->term, a->run_id, member, a->tick, false, why);
}

/* run_on: all: the offers of marker m, one to each live member that
 * carries the job's labels and takes runs, in one script; none: the tick
 * is recorded not started. Returns assign_offer_all()'s answer. */
static int offer_every(const struct rctx *x, struct dispatch *d, const struct job *job,
                       const struct assign *m, enum tick_state *state)
{
    const char *const *labels;
    size_t nl = job_labels(job, &labels), n = 0, made = 0;
    const struct fleet *f = fleet_get(x, d, false);
    if (f == NULL)
        return BATON_EPROTO; /* Redis could not say: the marker waits for the next tend */
    const char **nodes = calloc(f->n + 1, sizeof *nodes), **ids = calloc(f->n + 1, sizeof *ids);
    char(*idv)[sizeof m->run_id] = calloc(f->n + 1, sizeof *idv);
    char member[sizeof m->node + sizeof m->run_id + 2];
    int rc = BATON_ENOMEM;
    snprintf(member, sizeof member, "%s/%s", m->node, m->run_id);
    if (nodes == NULL || ids == NULL || idv == NULL)
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
                          baton_election_token(x->election), m, nodes, ids, n, ASSIGN_OFFER_MS,
                          &made);
    if (rc == 1 && n == 0)
        not_started(x, job, m, member, state, why_none);
    for (size_t i = 0; rc == 1 && i < n; i++) {
        struct assign a = *m;
        snprintf(a.field, sizeof a.field, "%" PRId64 "/%s", m->tick, nodes[i]);
        snprintf(a.node, sizeof a.node, "%s", nodes[i]);
        snprintf(a.run_id, sizeof a.run_id, "%s", ids[i]);
        log_assigned(x, job->name, &a);
        if (strcmp(a.node, x->node) == 0)
            accept_own(x, d, job->name, a.field);
    }
out:
    free(nodes);
    free(ids);
    free(idv);
    return rc;
}

/* The first offer of m, the claim's marker of its tick (node: the leader
 * that claimed it, whose registration the offer replaces), to a member
 * of f; *state: the tick's (claimed), assigned after. No member for it:
 * the marker is dropped and the tick recorded not started. Returns
 * assign_offer()'s (or assign_drop()'s) answer. */
static int offer_marker(const struct rctx *x, struct dispatch *d, const struct job *job,
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
                log_assigned(x, job->name, &a);
            if (rc == 1 && strcmp(a.node, x->node) == 0)
                accept_own(x, d, job->name, a.field);
            return rc;
        }
        int rc = assign_drop(x->client, x->group, job->name, key, token, "claimed", m);
        if (rc == 1)
            not_started(x, job, m, member, state, why_none);
        return rc;
    }
    long i = fleet_pick(x, d, job, m->tick, NULL, &f);
    if (i == ASSIGN_NO_ROOM) { /* the marker waits in Redis for room */
        wait_room(d);
        return 0;
    }
    if (i < 0) {
        int rc = assign_drop(x->client, x->group, job->name, key, token, "claimed", m);
        if (rc == 1) /* its registration goes with the record */
            not_started(x, job, m, member, state, why_none);
        return rc;
    }
    struct assign a = *m;
    snprintf(a.node, sizeof a.node, "%s", f->v[i].node);
    a.moves = 0;
    a.died[0] = '\0';
    int rc = assign_offer(x->client, x->group, job->name, key, token, NULL, "claimed", &a,
                          ASSIGN_OFFER_MS);
    if (rc == 1) {
        log_assigned(x, job->name, &a);
        offered(x, d, f, job, NULL, i, &a);
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
        wait_room(d);
        return;
    }
    /* Not offered (no answer, the lease lost): the marker stays in Redis,
     * and the next tend, here or on the next leader, offers it. */
    offer_marker(x, d, js->job, &m, state);
}

bool dispatch_record_held(const struct rctx *x, const struct jobstate *js, int64_t until,
                          const char *reason)
{
    const char *token = baton_election_token(x->election);
    struct assign *v = calloc(LIST_MAX, sizeof *v);
    bool *alive = calloc(LIST_MAX, sizeof *alive), ok = false;
    size_t n = 0;
    int64_t server_ms;
    if (token == NULL || v == NULL || alive == NULL || !rctx_may_block(x) ||
        assign_list_all(x->client, x->group, v, alive, LIST_MAX, true, &n, &server_ms) != BATON_OK)
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
        wait_room(d);
        return true;
    }
    if (i < 0) {
        int rc = assign_drop(x->client, x->group, job->name, key, token, was->value, was);
        if (rc == 1)
            not_started(x, job, a, member, &state,
                        a->moves >= DISPATCH_MOVES_MAX ? why_moves : why_none);
        return rc != BATON_ELOST;
    }
    snprintf(a->node, sizeof a->node, "%s", f->v[i].node);
    a->moves++;
    int rc = assign_offer(x->client, x->group, job->name, key, token, NULL, was->value, a,
                          ASSIGN_OFFER_MS);
    if (rc == 1) {
        ticklife_move(x, job->name, a->tick, &state, TICK_EV_REASSIGN);
        cJSON *lf = fields(job->name, a->tick, a->run_id);
        cJSON_AddStringToObject(lf, "from", was->node);
        cJSON_AddStringToObject(lf, "to", a->node);
        cJSON_AddNumberToObject(lf, "attempt", a->attempt);
        cJSON_AddStringToObject(lf, "reason", why);
        log_emit_facts(x->log, LE_REASSIGNED, lf, &(struct log_facts){.job = job->name});
        offered(x, d, f, job, was->node, i, a);
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
        not_started(x, job, was, member, &state, why);
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
        wait_room(d);
        return true;
    }
    bool retried = rc == 1;
    if (!retried && rc == 0)
        rc = assign_drop(x->client, x->group, job->name, baton_election_key(x->election), token,
                         was->value, was);
    if (rc != 1)
        return rc != BATON_ELOST;
    records_lost(x->rec, job->name, x->term, was->tick, was->node, was->run_id, was->attempt, why);
    cJSON *lf = fields(job->name, was->tick, was->run_id);
    cJSON_AddStringToObject(lf, "member", was->node);
    cJSON_AddNumberToObject(lf, "attempt", was->attempt);
    cJSON_AddStringToObject(lf, "then", retried ? "retried on another member" : "recorded");
    log_emit_facts_at(x->log, LOG_WARN, LE_LOST, lf, &(struct log_facts){.job = job->name});
    if (retried) {
        ticklife_move(x, job->name, was->tick, &state, TICK_EV_RETRY);
        log_assigned(x, job->name, &a);
        offered(x, d, f, job, was->node, i, &a);
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
        wait_room(d);
    } else if (rc == 1) {
        ticklife_move(x, job->name, was->tick, &state, TICK_EV_RETRY);
        log_assigned(x, job->name, &a);
        offered(x, d, f, job, was->node, i, &a);
    } else if (rc == 0 &&
               assign_drop(x->client, x->group, job->name, baton_election_key(x->election), token,
                           was->value, was) == 1) {
        hooks_retry_dropped(x->hooks, job->name, was->tick);
    }
    return rc != BATON_ELOST;
}

/* run_on: all: a node's offer not accepted in time, or its run accepted
 * and lost before its start, is recorded not started (never moved to
 * another node). Returns false when this node no longer leads. */
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
        not_started(x, job, was, member, &state, why);
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
 * offers past their deadline) held for a lease more, at most every
 * DISPATCH_TEND_MS: a forbid job, and max_running, see such a tick alive
 * as they see an offered one. */
static void hold(const struct rctx *x, struct dispatch *d, const struct assign *const *w, size_t n,
                 int64_t now)
{
    const char *token = baton_election_token(x->election);
    if (n == 0 || token == NULL || now - d->held_at < DISPATCH_TEND_MS * MS)
        return;
    d->held_at = now;
    assign_hold(x->client, x->group, baton_election_key(x->election), token, w, n, x->lease_ttl_ms);
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
        return offer_marker(x, d, js->job, v, &state) != BATON_ELOST;
    }
    case ASSIGN_OFFERED:
        snprintf(why, sizeof why, "%s did not accept it in time", v->node);
        return reoffer(x, d, js->job, v, &a, why);
    case ASSIGN_ACCEPTED: return died_before_start(x, d, js->job, v);
    case ASSIGN_STARTED: return lost(x, d, js->job, v);
    case ASSIGN_RETRY: return retry(x, d, js->job, v);
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
    if (!x->leading || !d->fleet || d->tend_at == 0 || now < d->tend_at)
        return;
    d->tend_at = now + DISPATCH_TEND_MS * MS;
    if (!rctx_may_block(x))
        return;
    /* What is outstanding, of every job, in one call (assign_list_all);
     * what needs a decision, oldest tick first. */
    struct assign *v = calloc(LIST_MAX, sizeof *v);
    const struct assign **w = calloc(LIST_MAX, sizeof *w);
    bool *alive = calloc(LIST_MAX, sizeof *alive);
    size_t n = 0, todo = 0, nw = 0;
    int64_t server_ms;
    if (v == NULL || w == NULL || alive == NULL ||
        assign_list_all(x->client, x->group, v, alive, LIST_MAX, true, &n, &server_ms) != BATON_OK)
        goto out;
    for (size_t i = 0; i < n; i++)
        if (!alive[i])
            v[todo++] = v[i];
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
        if (d->waiting > before && (v[i].state == ASSIGN_CLAIMED || v[i].state == ASSIGN_OFFERED))
            w[nw++] = &v[i];
    }
    if (leads && x->leading)
        hold(x, d, w, nw, now);
out:
    free(v);
    free(w);
    free(alive);
}

void dispatch_ended(struct dispatch *d)
{
    if (d->waiting > 0) /* a member may have room now */
        d->tend_at = loop_now();
}

void dispatch_free(struct dispatch *d)
{
    fleet_free(d->view);
    d->view = NULL;
}

/* ---- every node ---- */

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
    int64_t sent = loop_now();
    enum assign_answer ans =
        assign_accept(x->client, x->group, job, field, x->node, d->capacity, x->lease_ttl_ms, &a);
    if (ans != ASSIGN_OK)
        return ans;
    enum tick_state state = TICK_ASSIGNED;
    ticklife_move(x, job, a.tick, &state, TICK_EV_ACCEPT);
    cJSON *lf = fields(job, a.tick, a.run_id);
    cJSON_AddNumberToObject(lf, "attempt", a.attempt);
    cJSON_AddNumberToObject(lf, "moves", a.moves);
    log_emit(x->log, LE_ACCEPTED, lf);
    if (x->fault_stop_after_accept)
        raise(SIGSTOP);
    runs_accepted(x, d->rs, js, &a, term_of(a.run_id), sent);
    return ASSIGN_OK;
}

static void accept_own(const struct rctx *x, struct dispatch *d, const char *job, const char *field)
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
