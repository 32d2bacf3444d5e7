/* status.c -- see status.h. */
#include <stdlib.h>
#include <string.h>

#include "assign.h"
#include "cron.h"
#include "rfc3339.h"
#include "status.h"

struct status_job status_job_of(const struct job *j, const struct history_rec *last,
                                const struct pause_entry *paused)
{
    return (struct status_job){.name = j->name,
                               .schedule = j->schedule,
                               .timezone = j->timezone,
                               .enabled = j->enabled,
                               .expr = j->expr,
                               .tz = j->tz,
                               .last = last,
                               .paused = paused};
}

static void add_hb_field(cJSON *o, const cJSON *hb, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(hb, name);
    if (cJSON_IsString(v) || cJSON_IsNumber(v))
        cJSON_AddItemToObject(o, name, cJSON_Duplicate(v, false));
    else
        cJSON_AddNullToObject(o, name);
}

static bool is_leader(const struct status_doc *d, const char *node)
{
    return d->leader->has_leader && strcmp(d->leader->identity, node) == 0;
}

int status_jobs_differ(const struct baton_leader_info *leader, const struct member *members,
                       size_t n, const struct member *m)
{
    char mine[JOBS_HASH_HEX], theirs[JOBS_HASH_HEX];
    long njobs;
    bool have = false;
    for (size_t i = 0; !have && leader->has_leader && i < n; i++)
        if (strcmp(leader->identity, members[i].node) == 0)
            have = members_jobs(&members[i], theirs, sizeof theirs, &njobs);
    if (!have || !members_jobs(m, mine, sizeof mine, &njobs))
        return -1;
    return strcmp(mine, theirs) != 0;
}

void status_offers_free(struct status_offers *o)
{
    for (size_t i = 0; o->v != NULL && i < o->n; i++) {
        free(o->v[i].node);
        free(o->v[i].job);
        free(o->v[i].field);
    }
    free(o->v);
    free(o->per_node);
    memset(o, 0, sizeof *o);
}

int status_offers_read(struct baton_client *c, const char *group, const struct member *m, size_t n,
                       struct status_offers *out)
{
    char *jobs[STATUS_OFFERS_MAX], *fields[STATUS_OFFERS_MAX];
    int rc = BATON_OK;
    memset(out, 0, sizeof *out);
    out->per_node = calloc(n + 1, sizeof *out->per_node);
    if (out->per_node == NULL)
        return BATON_ENOMEM;
    for (size_t i = 0; rc == BATON_OK && i < n; i++) {
        size_t k = 0;
        if (!members_alive(&m[i]))
            continue;
        rc = assign_offers(c, group, m[i].node, jobs, fields, STATUS_OFFERS_MAX, &k);
        struct status_offer *v = k > 0 ? realloc(out->v, (out->n + k) * sizeof *v) : NULL;
        if (v != NULL)
            out->v = v;
        for (size_t j = 0; j < k; j++) {
            char *node = v != NULL ? strdup(m[i].node) : NULL;
            if (node == NULL) { /* out of memory: the offers read so far stay */
                free(jobs[j]);
                free(fields[j]);
                rc = BATON_ENOMEM;
                continue;
            }
            v[out->n++] = (struct status_offer){.node = node, .job = jobs[j], .field = fields[j]};
            out->per_node[i]++;
        }
    }
    return rc;
}

/* The offers of o as status shows them, into a. */
static void add_offers(cJSON *a, const struct status_offers *o)
{
    for (size_t i = 0; o != NULL && i < o->n; i++) {
        char *end, when[32];
        int64_t tick = strtoll(o->v[i].field, &end, 10);
        if (end == o->v[i].field || (*end != '\0' && *end != '/'))
            continue; /* not a field as assign.h writes them */
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "node", o->v[i].node);
        cJSON_AddStringToObject(e, "job", o->v[i].job);
        log_rfc3339(tick, when, sizeof when);
        cJSON_AddStringToObject(e, "scheduled_at", when);
        cJSON_AddNumberToObject(e, "tick", (double)tick);
        cJSON_AddItemToArray(a, e);
    }
}

void status_runs_free(struct status_runs *r)
{
    for (size_t i = 0; i < r->nhb; i++)
        cJSON_Delete(r->hb[i]);
    free(r->hb);
    free(r->v);
    memset(r, 0, sizeof *r);
}

static const char *str_item(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int status_runs_read(const struct member *m, size_t n, struct status_runs *out)
{
    memset(out, 0, sizeof *out);
    size_t cap = 0;
    if (n > 0 && (out->hb = calloc(n, sizeof *out->hb)) == NULL)
        return BATON_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (!members_alive(&m[i]))
            continue;
        cJSON *hb = cJSON_Parse(m[i].info_json);
        const cJSON *runs = cJSON_GetObjectItemCaseSensitive(hb, "runs"), *r;
        if (hb == NULL)
            continue;
        out->hb[out->nhb++] = hb;
        cJSON_ArrayForEach(r, runs)
        {
            struct status_run x = {.node = m[i].node,
                                   .job = str_item(r, "job"),
                                   .run_id = str_item(r, "run_id"),
                                   .trigger = str_item(r, "trigger"),
                                   .scheduled_at = str_item(r, "scheduled_at"),
                                   .started = str_item(r, "started"),
                                   .by = str_item(r, "by")};
            if (x.job == NULL || x.run_id == NULL)
                continue; /* not a run as we write them */
            if (x.started == NULL || !log_parse_rfc3339_ms(x.started, &x.started_ms))
                x.started_ms = 0;
            if (out->n == cap) {
                size_t nc = cap ? 2 * cap : 16;
                struct status_run *v = realloc(out->v, nc * sizeof *v);
                if (v == NULL)
                    return BATON_ENOMEM;
                out->v = v;
                cap = nc;
            }
            out->v[out->n++] = x;
        }
    }
    return BATON_OK;
}

/* qsort_r's order: the leader (arg, NULL: none) first, then by name. */
static int by_leader_then_name(const void *a, const void *b, void *arg)
{
    const struct member *x = a, *y = b;
    const char *leader = arg;
    bool lx = leader != NULL && strcmp(x->node, leader) == 0;
    bool ly = leader != NULL && strcmp(y->node, leader) == 0;
    if (lx != ly)
        return lx ? -1 : 1;
    return strcmp(x->node, y->node);
}

void status_order_members(struct member *m, size_t n, const char *leader)
{
    if (n > 1)
        qsort_r(m, n, sizeof *m, by_leader_then_name, (void *)leader);
}

/* The runs of job name in r, as status --json shows them, into a. */
static void add_job_runs(cJSON *a, const struct status_runs *r, const char *name, int64_t now_ms)
{
    for (size_t i = 0; i < r->n; i++) {
        const struct status_run *x = &r->v[i];
        if (strcmp(x->job, name) != 0)
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "node", x->node);
        cJSON_AddStringToObject(o, "run_id", x->run_id);
        cJSON_AddStringToObject(o, "trigger", x->trigger != NULL ? x->trigger : "");
        if (x->scheduled_at != NULL)
            cJSON_AddStringToObject(o, "scheduled_at", x->scheduled_at);
        else
            cJSON_AddNullToObject(o, "scheduled_at");
        if (x->started_ms > 0) {
            cJSON_AddStringToObject(o, "started", x->started);
            cJSON_AddNumberToObject(o, "elapsed_ms",
                                    (double)(now_ms > x->started_ms ? now_ms - x->started_ms : 0));
        } else {
            cJSON_AddNullToObject(o, "started");
            cJSON_AddNullToObject(o, "elapsed_ms");
        }
        if (x->by != NULL)
            cJSON_AddStringToObject(o, "by", x->by);
        else
            cJSON_AddNullToObject(o, "by");
        cJSON_AddItemToArray(a, o);
    }
}

/* The leader's ticks waiting for a limit (its heartbeat's "waiting"), each
 * with how long it has waited, into a. */
static void add_waiting(cJSON *a, const struct status_doc *d, int64_t now_ms)
{
    for (size_t i = 0; i < d->nmembers; i++) {
        if (!is_leader(d, d->members[i].node) || !members_alive(&d->members[i]))
            continue;
        cJSON *hb = cJSON_Parse(d->members[i].info_json), *w;
        cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(hb, "waiting"))
        {
            const char *since = str_item(w, "since");
            int64_t since_ms;
            if (str_item(w, "job") == NULL || since == NULL ||
                !log_parse_rfc3339_ms(since, &since_ms))
                continue; /* not one as we write them */
            cJSON *o = cJSON_Duplicate(w, true);
            cJSON_DeleteItemFromObjectCaseSensitive(o, "waited_ms");
            cJSON_AddNumberToObject(o, "waited_ms",
                                    (double)(now_ms > since_ms ? now_ms - since_ms : 0));
            cJSON_AddItemToArray(a, o);
        }
        cJSON_Delete(hb);
    }
}

cJSON *status_doc_json(const struct status_doc *d)
{
    struct status_runs runs;
    int64_t now_ms = d->now_ms != 0 ? d->now_ms : d->now * 1000;
    if (status_runs_read(d->members, d->nmembers, &runs) != BATON_OK) {
        status_runs_free(&runs);
        return NULL;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "group", d->group);
    cJSON_AddStringToObject(o, "redis", d->redis);
    if (d->leader->has_leader) {
        cJSON *l = cJSON_AddObjectToObject(o, "leader");
        cJSON_AddStringToObject(l, "node", d->leader->identity);
        cJSON_AddNumberToObject(l, "term", (double)d->leader->term);
        if (d->leader->ttl_ms >= 0)
            cJSON_AddNumberToObject(l, "lease_ms", (double)d->leader->ttl_ms);
        else
            cJSON_AddNullToObject(l, "lease_ms");
    } else {
        cJSON_AddNullToObject(o, "leader");
    }
    cJSON_AddNumberToObject(o, "term", (double)d->leader->term);

    cJSON *nodes = cJSON_AddArrayToObject(o, "nodes");
    for (size_t i = 0; i < d->nmembers; i++) {
        struct member m = d->members[i];
        m.seen_ago_ms += d->members_age_ms;
        cJSON *hb = cJSON_Parse(m.info_json);
        cJSON *n = cJSON_CreateObject();
        cJSON_AddStringToObject(n, "node", m.node);
        add_hb_field(n, hb, "state");
        add_hb_field(n, hb, "term");
        add_hb_field(n, hb, "pid");
        add_hb_field(n, hb, "version");
        add_hb_field(n, hb, "since");
        add_hb_field(n, hb, "host");
        cJSON_AddNumberToObject(n, "seen_ms_ago", (double)m.seen_ago_ms);
        cJSON_AddBoolToObject(n, "alive", members_alive(&m));
        cJSON_AddBoolToObject(n, "leader", is_leader(d, m.node));
        add_hb_field(n, hb, "jobs_hash");
        add_hb_field(n, hb, "jobs");
        int differs = status_jobs_differ(d->leader, d->members, d->nmembers, &m);
        if (differs < 0)
            cJSON_AddNullToObject(n, "jobs_differ");
        else
            cJSON_AddBoolToObject(n, "jobs_differ", differs == 1);
        add_hb_field(n, hb, "running");
        add_hb_field(n, hb, "capacity");
        add_hb_field(n, hb, "assigned");
        const cJSON *acc = cJSON_GetObjectItemCaseSensitive(hb, "accepting");
        if (cJSON_IsBool(acc))
            cJSON_AddBoolToObject(n, "accepting", cJSON_IsTrue(acc));
        else
            cJSON_AddNullToObject(n, "accepting");
        const cJSON *labels = cJSON_GetObjectItemCaseSensitive(hb, "labels");
        if (cJSON_IsArray(labels))
            cJSON_AddItemToObject(n, "labels", cJSON_Duplicate(labels, true));
        else
            cJSON_AddArrayToObject(n, "labels");
        cJSON_AddItemToArray(nodes, n);
        cJSON_Delete(hb);
    }
    cJSON *drift = cJSON_AddArrayToObject(o, "drift");
    for (size_t i = 0; i < d->nmembers; i++) {
        struct member m = d->members[i];
        m.seen_ago_ms += d->members_age_ms;
        if (members_alive(&m) && status_jobs_differ(d->leader, d->members, d->nmembers, &m) == 1)
            cJSON_AddItemToArray(drift, cJSON_CreateString(m.node));
    }

    cJSON *jobs = cJSON_AddArrayToObject(o, "jobs");
    for (size_t i = 0; i < d->njobs; i++) {
        const struct status_job *j = &d->jobs[i];
        cJSON *jo = cJSON_CreateObject();
        int64_t t;
        char next[CRON_TIME_BUFSZ];
        cJSON_AddStringToObject(jo, "name", j->name);
        cJSON_AddStringToObject(jo, "schedule", j->schedule);
        cJSON_AddStringToObject(jo, "timezone", j->timezone != NULL ? j->timezone : "UTC");
        cJSON_AddBoolToObject(jo, "enabled", j->enabled);
        if (j->last != NULL)
            cJSON_AddItemToObject(jo, "last_run", history_json(j->last));
        else
            cJSON_AddNullToObject(jo, "last_run");
        if (j->enabled && j->expr != NULL && cron_next(j->expr, j->tz, d->now, &t) == 0)
            cJSON_AddStringToObject(jo, "next_run", cron_time_format(t, NULL, next, sizeof next));
        else
            cJSON_AddNullToObject(jo, "next_run");
        if (j->paused != NULL) {
            cJSON *po = cJSON_AddObjectToObject(jo, "paused");
            log_rfc3339_ms(j->paused->since_ms, next, sizeof next);
            cJSON_AddStringToObject(po, "since", next);
            cJSON_AddStringToObject(po, "by", j->paused->by);
            cJSON_AddStringToObject(po, "reason", j->paused->reason);
            cJSON_AddBoolToObject(po, "all", strcmp(j->paused->job, PAUSE_ALL) == 0);
        } else {
            cJSON_AddNullToObject(jo, "paused");
        }
        add_job_runs(cJSON_AddArrayToObject(jo, "running"), &runs, j->name, now_ms);
        cJSON_AddItemToArray(jobs, jo);
    }
    status_runs_free(&runs);
    cJSON *pools = cJSON_AddArrayToObject(o, "pools");
    for (size_t i = 0; i < d->npools; i++) {
        cJSON *po = cJSON_CreateObject();
        cJSON_AddStringToObject(po, "name", d->pools[i].name);
        cJSON_AddNumberToObject(po, "limit", d->pools[i].limit);
        if (d->pools[i].runs >= 0)
            cJSON_AddNumberToObject(po, "running", d->pools[i].runs);
        else
            cJSON_AddNullToObject(po, "running");
        cJSON_AddItemToArray(pools, po);
    }
    add_waiting(cJSON_AddArrayToObject(o, "waiting"), d, now_ms);
    add_offers(cJSON_AddArrayToObject(o, "offers"), d->offers);
    if (d->jobs_error != NULL)
        cJSON_AddStringToObject(o, "jobs_error", d->jobs_error);
    /* cJSON's adders tolerate NULL parents: check once that all held. */
    if (o == NULL || cJSON_GetObjectItemCaseSensitive(o, "jobs") == NULL) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
