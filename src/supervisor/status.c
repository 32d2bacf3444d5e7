/* status.c -- see status.h. */
#include <string.h>

#include "cron.h"
#include "log.h"
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

cJSON *status_doc_json(const struct status_doc *d)
{
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
        cJSON_AddItemToArray(jobs, jo);
    }
    if (d->jobs_error != NULL)
        cJSON_AddStringToObject(o, "jobs_error", d->jobs_error);
    /* cJSON's adders tolerate NULL parents: check once that all held. */
    if (o == NULL || cJSON_GetObjectItemCaseSensitive(o, "jobs") == NULL) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
