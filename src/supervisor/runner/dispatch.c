/* dispatch.c -- see dispatch.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign.h"
#include "dispatch.h"
#include "facts.h"
#include "jobtable.h"
#include "members.h"
#include "rtime.h"
#include "runs.h"

#define OFFERS_MAX 32  /* offers read per poll */
#define LIST_MAX   256 /* assignments of a job read per tend */

/* ---- the members, as the leader sees them ---- */

struct fleet {
    struct member *m;
    size_t n;
    struct assign_node *v;
    cJSON **info;        /* each heartbeat, parsed (the labels point into it) */
    const char **labels; /* every node's, one block */
};

static void fleet_free(struct fleet *f)
{
    for (size_t i = 0; f->info != NULL && i < f->n; i++)
        cJSON_Delete(f->info[i]);
    free(f->info);
    free(f->labels);
    free(f->v);
    members_free(f->m, f->n);
    memset(f, 0, sizeof *f);
}

/* Reads the members' last heartbeats and what Redis counts of their
 * loads. Returns false when Redis could not say. */
static bool fleet_read(const struct rctx *x, struct fleet *f)
{
    memset(f, 0, sizeof *f);
    if (members_read(x->client, x->group, &f->m, &f->n) != BATON_OK)
        return false;
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
    }
    if (ok && f->n > 0 && assign_loads(x->client, x->group, names, f->n, in_use) != BATON_OK)
        ok = false;
    for (size_t i = 0; ok && i < f->n; i++)
        f->v[i].in_use = in_use[i];
    free(names);
    free(in_use);
    if (!ok)
        fleet_free(f);
    return ok;
}

/* The member to offer job's tick to (avoid: the one that let it down),
 * with room first; when none has room, the least loaded that carries the
 * labels anyway (its offer waits to be accepted, or expires and moves on).
 * Returns its index, or -1 when no live member carries the labels. */
static long fleet_pick(const struct fleet *f, const struct job *job, int64_t tick,
                       const char *avoid)
{
    char *const *labels;
    size_t nl = 0;
    job_run_on(job, &labels);
    while (labels != NULL && labels[nl] != NULL)
        nl++;
    uint64_t seed = assign_seed(job->name, tick, NULL);
    const char *const *l = (const char *const *)labels;
    long i = assign_choose(f->v, f->n, l, nl, avoid, seed);
    if (i >= 0 || f->n == 0)
        return i;
    struct assign_node *v = calloc(f->n, sizeof *v);
    if (v == NULL)
        return -1;
    for (size_t k = 0; k < f->n; k++) {
        v[k] = f->v[k];
        v[k].in_use = 0;
    }
    i = assign_choose(v, f->n, l, nl, avoid, seed);
    free(v);
    return i;
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

/* The tick of job in *state (assigned) is not run: recorded so. */
static void not_started(const struct rctx *x, const struct job *job, const struct assign *a,
                        const char *member, enum tick_state *state, const char *why)
{
    ticklife_move(x, job->name, a->tick, state, TICK_EV_START_FAILED);
    records_not_started(x->rec, job, x->term, a->run_id, member, a->tick, false, why);
}

static void add_pending(struct dispatch *d, const char *job, const struct assign *a,
                        const char *from)
{
    struct dispatch_pending *p = calloc(1, sizeof *p);
    if (p == NULL || (p->job = strdup(job)) == NULL) {
        free(p);
        return;
    }
    p->tick = a->tick;
    p->attempt = a->attempt;
    snprintf(p->run_id, sizeof p->run_id, "%s", a->run_id);
    snprintf(p->from, sizeof p->from, "%s", from);
    p->next = d->pending;
    d->pending = p;
}

/* The first offer of a (its field, tick, attempt and run id set) to a
 * member of f, from the claim's registration. */
static void first_offer(const struct rctx *x, struct dispatch *d, const struct fleet *f,
                        const struct job *job, struct assign *a, const char *from,
                        enum tick_state *state)
{
    const char *token = baton_election_token(x->election);
    long i = fleet_pick(f, job, a->tick, NULL);
    ticklife_move(x, job->name, a->tick, state, TICK_EV_ASSIGN);
    if (i < 0 || token == NULL) { /* its registration goes with the record */
        not_started(x, job, a, from, state, why_none);
        return;
    }
    snprintf(a->node, sizeof a->node, "%s", f->v[i].node);
    int rc = assign_offer(x->client, x->group, job->name, baton_election_key(x->election), token,
                          from, NULL, a, ASSIGN_OFFER_MS);
    if (rc == 1)
        log_assigned(x, job->name, a);
    else if (rc == 0) /* made before, by an offer whose answer was lost */
        ;
    else if (rc == BATON_ELOST)
        not_started(x, job, a, from, state,
                    "claimed, but the lease was lost before it could be offered to a member: "
                    "not run");
    else
        add_pending(d, job->name, a, from); /* it may have applied: made again */
}

void dispatch_offer(const struct rctx *x, struct dispatch *d, struct jobstate *js, const char *id,
                    const char *member, int64_t tick, enum tick_state *state)
{
    struct assign a = {.tick = tick, .attempt = 1};
    struct fleet f;
    snprintf(a.field, sizeof a.field, "%" PRId64, tick);
    snprintf(a.run_id, sizeof a.run_id, "%s", id);
    if (!fleet_read(x, &f)) {
        ticklife_move(x, js->job->name, tick, state, TICK_EV_ASSIGN);
        add_pending(d, js->job->name, &a, member);
        return;
    }
    first_offer(x, d, &f, js->job, &a, member, state);
    fleet_free(&f);
}

/* Offers outstanding a (as read: its value) again, to another member
 * than the one that let it down; why: for the log. Returns false when
 * this node no longer leads. */
static bool reoffer(const struct rctx *x, const struct fleet *f, const struct job *job,
                    const struct assign *was, struct assign *a, const char *why)
{
    const char *token = baton_election_token(x->election);
    const char *key = baton_election_key(x->election);
    enum tick_state state = TICK_ASSIGNED;
    char member[sizeof was->node + sizeof was->run_id + 2];
    snprintf(member, sizeof member, "%s/%s", was->node, was->run_id);
    if (token == NULL)
        return false;
    long i = a->moves >= DISPATCH_MOVES_MAX ? -1 : fleet_pick(f, job, a->tick, was->node);
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
    }
    return rc != BATON_ELOST;
}

/* a's run was lost while it ran (its registration gone after started):
 * recorded lost with its node, then offered again as the next attempt
 * while the job's retries allow. Returns false when this node no longer
 * leads. */
static bool lost(const struct rctx *x, struct dispatch *d, const struct fleet *f,
                 const struct job *job, const struct assign *was)
{
    const char *token = baton_election_token(x->election);
    const char *key = baton_election_key(x->election);
    enum tick_state state = TICK_ASSIGNED;
    char why[320];
    struct assign a = *was;
    bool retry = was->attempt <= job->retries;
    long i = retry ? fleet_pick(f, job, was->tick, was->node) : -1;
    int rc;
    snprintf(why, sizeof why,
             "its node %s was lost while it ran (its registration lapsed: the run was stopped "
             "before it could)",
             was->node);
    if (token == NULL)
        return false;
    if (i >= 0) {
        d->seq++;
        a.attempt = was->attempt + 1;
        a.moves = was->moves + 1;
        snprintf(a.node, sizeof a.node, "%s", f->v[i].node);
        snprintf(a.run_id, sizeof a.run_id, "%" PRId64 "-%" PRIu64 "-%d-d%" PRIu64, was->tick,
                 x->term, a.attempt, d->seq);
        rc = assign_offer(x->client, x->group, job->name, key, token, NULL, was->value, &a,
                          ASSIGN_OFFER_MS);
    } else {
        rc = assign_drop(x->client, x->group, job->name, key, token, was->value, was);
    }
    if (rc != 1)
        return rc != BATON_ELOST;
    records_lost(x->rec, job->name, x->term, was->tick, was->node, was->run_id, was->attempt, why);
    cJSON *lf = fields(job->name, was->tick, was->run_id);
    cJSON_AddStringToObject(lf, "member", was->node);
    cJSON_AddNumberToObject(lf, "attempt", was->attempt);
    cJSON_AddStringToObject(lf, "then", i >= 0 ? "retried on another member" : "recorded");
    log_emit_facts_at(x->log, LOG_WARN, LE_LOST, lf, &(struct log_facts){.job = job->name});
    if (i >= 0) {
        ticklife_move(x, job->name, was->tick, &state, TICK_EV_RETRY);
        log_assigned(x, job->name, &a);
    } else {
        ticklife_move(x, job->name, was->tick, &state, TICK_EV_LOST);
    }
    return true;
}

/* The offers whose answer was lost, made again. */
static void tend_pending(const struct rctx *x, struct dispatch *d, const struct fleet *f)
{
    for (struct dispatch_pending **p = &d->pending; *p != NULL;) {
        struct dispatch_pending *q = *p;
        struct jobstate *js = jobtable_find(x->jt, q->job);
        struct assign a = {.tick = q->tick, .attempt = q->attempt};
        enum tick_state state = TICK_ASSIGNED;
        const char *token = baton_election_token(x->election);
        snprintf(a.field, sizeof a.field, "%" PRId64, q->tick);
        snprintf(a.run_id, sizeof a.run_id, "%s", q->run_id);
        long i = js != NULL ? fleet_pick(f, js->job, q->tick, NULL) : -1;
        int rc = 1;
        if (js != NULL && i >= 0 && token != NULL) {
            snprintf(a.node, sizeof a.node, "%s", f->v[i].node);
            rc = assign_offer(x->client, x->group, q->job, baton_election_key(x->election), token,
                              q->from, NULL, &a, ASSIGN_OFFER_MS);
            if (rc == 1)
                log_assigned(x, q->job, &a);
        } else if (js != NULL) {
            not_started(x, js->job, &a, q->from, &state, why_none);
        }
        if (rc != 1 && rc != 0 && rc != BATON_ELOST) {
            p = &q->next; /* no answer again: the next tend */
            continue;
        }
        if (rc == BATON_ELOST && js != NULL)
            not_started(x, js->job, &a, q->from, &state,
                        "claimed, but the lease was lost before it could be offered to a "
                        "member: not run");
        *p = q->next;
        free(q->job);
        free(q);
    }
}

void dispatch_tend(const struct rctx *x, struct dispatch *d, int64_t now)
{
    if (!x->leading || !d->fleet || d->tend_at == 0 || now < d->tend_at)
        return;
    d->tend_at = now + DISPATCH_TEND_MS * MS;
    if (!rctx_may_block(x))
        return;
    struct fleet f;
    if (!fleet_read(x, &f))
        return;
    tend_pending(x, d, &f);
    struct assign *v = calloc(LIST_MAX, sizeof *v);
    bool *alive = calloc(LIST_MAX, sizeof *alive);
    for (struct jobstate *js = x->jt->states; v != NULL && alive != NULL && js != NULL;
         js = js->next) {
        size_t n = 0;
        int64_t server_ms;
        if (job_run_on(js->job, NULL) == JOB_RUN_ON_LEADER || !x->leading || !rctx_may_block(x))
            continue;
        if (assign_list(x->client, x->group, js->job->name, v, alive, LIST_MAX, &n, &server_ms) !=
            BATON_OK)
            continue;
        bool leads = true;
        for (size_t i = 0; i < n && leads; i++) {
            if (alive[i])
                continue;
            struct assign a = v[i];
            char why[320];
            if (v[i].state == ASSIGN_OFFERED) {
                snprintf(why, sizeof why, "%s did not accept it in time", v[i].node);
                leads = reoffer(x, &f, js->job, &v[i], &a, why);
            } else if (v[i].state == ASSIGN_ACCEPTED) {
                snprintf(why, sizeof why,
                         "%s accepted it, then was lost before it started it: it runs "
                         "elsewhere, once",
                         v[i].node);
                leads = reoffer(x, &f, js->job, &v[i], &a, why);
            } else {
                leads = lost(x, d, &f, js->job, &v[i]);
            }
        }
    }
    free(v);
    free(alive);
    fleet_free(&f);
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

void dispatch_poll(const struct rctx *x, struct dispatch *d, struct runs *rs, int64_t now)
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
        struct jobstate *js = jobtable_find(x->jt, jobs[i]);
        struct assign a;
        if (full || js == NULL || job_run_on(js->job, NULL) == JOB_RUN_ON_LEADER ||
            !rctx_may_block(x))
            continue; /* not this node's to run: it expires and moves on */
        int64_t sent = loop_now();
        enum assign_answer ans = assign_accept(x->client, x->group, jobs[i], fieldv[i], x->node,
                                               d->capacity, x->lease_ttl_ms, &a);
        if (ans == ASSIGN_FULL || ans == ASSIGN_ERROR) {
            full = true;
            continue;
        }
        if (ans != ASSIGN_OK)
            continue;
        enum tick_state state = TICK_ASSIGNED;
        ticklife_move(x, jobs[i], a.tick, &state, TICK_EV_ACCEPT);
        cJSON *lf = fields(jobs[i], a.tick, a.run_id);
        cJSON_AddNumberToObject(lf, "attempt", a.attempt);
        cJSON_AddNumberToObject(lf, "moves", a.moves);
        log_emit(x->log, LE_ACCEPTED, lf);
        runs_accepted(x, rs, js, &a, term_of(a.run_id), sent);
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

void dispatch_clear(struct dispatch *d)
{
    while (d->pending != NULL) {
        struct dispatch_pending *p = d->pending;
        d->pending = p->next;
        free(p->job);
        free(p);
    }
}
