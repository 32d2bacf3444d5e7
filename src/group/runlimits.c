/* runlimits.c -- see runlimits.h. */
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "runlimits.h"

/* KEYS: busy keys. Returns the live members in all of them. */
static const char occupancy_src[] =
    "local t = redis.call('time')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local n = 0\n"
    "for i = 1, #KEYS do n = n + redis.call('zcount', KEYS[i], '(' .. now, '+inf') end\n"
    "return n\n";

int limits_occupancy(struct baton_client *c, const char *group, const char *const *jobs, size_t n,
                     int *live)
{
    const char *argv[LIMITS_POOL_MAX + 3];
    char *keys[LIMITS_POOL_MAX], nkeys[24];
    struct baton_answers *a = NULL;
    size_t made = 0;
    int rc = BATON_OK;

    *live = 0;
    if (n > LIMITS_POOL_MAX)
        return BATON_EINVAL;
    snprintf(nkeys, sizeof nkeys, "%zu", n);
    argv[0] = "EVAL";
    argv[1] = occupancy_src;
    argv[2] = nkeys;
    for (; made < n; made++) {
        if ((keys[made] = group_key(group, "busy:%s", jobs[made])) == NULL) {
            rc = BATON_ENOMEM;
            goto out;
        }
        argv[made + 3] = keys[made];
    }
    /* A read: no WAIT for replicas */
    rc = baton_client_command_all(c, (int)n + 3, argv, NULL, &a);
    if (rc != BATON_OK)
        goto out;
    rc = BATON_EIO;
    for (int i = 0; i < a->n; i++) {
        const struct baton_reply *r = a->v[i].reply;
        if (a->v[i].rc != BATON_OK || !a->v[i].counts || r->type != BATON_REPLY_INTEGER)
            continue;
        if (r->integer > *live)
            *live = (int)r->integer;
        rc = BATON_OK;
    }
out:
    baton_answers_free(a);
    for (size_t i = 0; i < made; i++)
        free(keys[i]);
    return rc;
}

void limits_pools_free(struct limits_pool *v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++) {
        for (size_t k = 0; k < v[i].njobs; k++)
            free(v[i].jobs[k]);
        free(v[i].jobs);
        free(v[i].name);
    }
    free(v);
}

/* Fills p (zeroed) with name, limit and a copy of jobs[0..njobs). */
static bool pool_set(struct limits_pool *p, const char *name, int limit, int runs)
{
    p->name = strdup(name);
    p->limit = limit;
    p->runs = runs;
    return p->name != NULL;
}

static bool pool_add_job(struct limits_pool *p, const char *job, size_t cap)
{
    if (p->jobs == NULL && (p->jobs = calloc(cap, sizeof *p->jobs)) == NULL)
        return false;
    return (p->jobs[p->njobs++] = strdup(job)) != NULL;
}

int limits_pools_new(const struct jobs *jobs, struct limits_pool **out, size_t *n)
{
    struct limits_pool *v = jobs->npools > 0 ? calloc(jobs->npools, sizeof *v) : NULL;
    *out = NULL;
    *n = 0;
    if (jobs->npools == 0)
        return BATON_OK;
    if (v == NULL)
        return BATON_ENOMEM;
    for (size_t i = 0; i < jobs->npools; i++) {
        const struct job_pool *jp = &jobs->pools[i];
        bool ok = pool_set(&v[i], jp->name, jp->limit, -1);
        for (size_t k = 0; ok && k < jobs->n; k++)
            if (jobs->v[k].pool != NULL && strcmp(jobs->v[k].pool, jp->name) == 0)
                ok = pool_add_job(&v[i], jobs->v[k].name, jp->njobs);
        if (!ok) {
            limits_pools_free(v, i + 1);
            return BATON_ENOMEM;
        }
    }
    *out = v;
    *n = jobs->npools;
    return BATON_OK;
}

struct limits_pool *limits_pools_dup(const struct limits_pool *v, size_t n)
{
    struct limits_pool *c = n > 0 ? calloc(n, sizeof *c) : NULL;
    for (size_t i = 0; c != NULL && i < n; i++) {
        bool ok = pool_set(&c[i], v[i].name, v[i].limit, v[i].runs);
        for (size_t k = 0; ok && k < v[i].njobs; k++)
            ok = pool_add_job(&c[i], v[i].jobs[k], v[i].njobs);
        if (!ok) {
            limits_pools_free(c, i + 1);
            return NULL;
        }
    }
    return c;
}

int limits_pools_read(struct baton_client *c, const char *group, struct limits_pool *v, size_t n)
{
    int first = BATON_OK;
    for (size_t i = 0; i < n; i++) {
        int rc = limits_occupancy(c, group, (const char *const *)v[i].jobs, v[i].njobs, &v[i].runs);
        if (rc != BATON_OK) {
            v[i].runs = -1;
            if (first == BATON_OK)
                first = rc;
        }
    }
    return first;
}
