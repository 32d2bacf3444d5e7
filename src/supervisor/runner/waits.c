/* waits.c -- see waits.h. */
#include <stdlib.h>
#include <string.h>

#include "jobtable.h"
#include "pools.h"
#include "rtime.h"
#include "runlimits.h"
#include "waits.h"

/* A waiter's tick still waits: it is its job's head. */
static bool live(const struct pool_waiter *w)
{
    struct jobstate *js = w->js;
    return ticks_has_head(&js->ticks) && ticks_head(&js->ticks)->t.at == w->tick;
}

/* A slot of pl may be free: its first waiter looks (but not me). */
void waits_wake(const struct rctx *x, struct pool *pl, const struct jobstate *me)
{
    struct jobstate *head = pools_head(pl, live);
    if (head != NULL && head != me)
        jobtable_wake(x->jt, head, x->leading);
}

/* js's head tick at waits behind an earlier tick of its pool (first come,
 * first served): true, and it waits in order; false when it may claim. */
bool waits_behind(struct jobstate *js, const struct tick_intent *in, int64_t now)
{
    if (js->pool == NULL || in->mode == CLAIM_SKIP ||
        pools_first(js->pool, js, js->job->name, in->at, live))
        return false;
    pools_wait(js->pool, js, js->job->name, in->at, rtime_wall_ms());
    js->hold_until = now + LIMITS_POLL_MS * MS;
    return true;
}

/* After a claim of js's head (dealt: it was dealt with): a tick that found
 * its pool full waits in order; one dealt with, or waiting for its own
 * max_running, lets the next waiter of the pool look. */
void waits_after_claim(const struct rctx *x, struct jobstate *js, int64_t at, bool dealt)
{
    if (js->pool == NULL)
        return;
    if (js->claim.full && js->claim.full_pool)
        pools_wait(js->pool, js, js->job->name, at, rtime_wall_ms());
    else if ((dealt || js->claim.full) && pools_leave(js->pool, js))
        waits_wake(x, js->pool, js);
}

void waits_leave(const struct rctx *x, struct jobstate *js)
{
    if (js->pool != NULL && pools_leave(js->pool, js))
        waits_wake(x, js->pool, js);
}

/* The pools of the jobs now (after a reload): the ticks that waited keep
 * their order. */
void waits_rebuild(struct pools *p, struct jobstate *states)
{
    struct pools old = *p;
    *p = (struct pools){0};
    for (struct jobstate *js = states; js != NULL; js = js->next)
        if (js->job->pool != NULL)
            pools_add(p, js->job->name, js->job->pool, js->job->pool_limit);
    for (struct jobstate *js = states; js != NULL; js = js->next)
        js->pool = js->job->pool != NULL ? pools_find(p, js->job->pool) : NULL;
    for (size_t i = 0; i < old.n; i++)
        for (size_t k = 0; k < old.v[i].nw; k++) {
            struct jobstate *js = old.v[i].w[k].js;
            if (js->pool != NULL)
                pools_wait(js->pool, js, js->job->name, old.v[i].w[k].tick, old.v[i].w[k].since_ms);
        }
    pools_clear(&old);
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

struct runner_wait *waits_list(const struct pools *pools, struct jobstate *states, size_t *n)
{
    struct runner_wait *v = NULL;
    size_t cap = 0;
    bool ok = true;
    *n = 0;
    /* Those a claim answered full (max_running, or the pool's limit)... */
    for (struct jobstate *js = states; ok && js != NULL; js = js->next)
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
    for (size_t p = 0; ok && p < pools->n; p++) {
        const struct pool *pl = &pools->v[p];
        for (size_t i = 0; ok && i < pl->nw; i++) {
            struct jobstate *js = pl->w[i].js;
            if (live(&pl->w[i]) && !head_full(js))
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

cJSON *waits_json(const struct runner_wait *w, size_t n, size_t max)
{
    cJSON *a = cJSON_CreateArray();
    char ts[40];
    for (size_t i = 0; a != NULL && i < n && i < max; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "job", w[i].job);
        log_rfc3339(w[i].tick, ts, sizeof ts);
        cJSON_AddStringToObject(o, "scheduled_at", ts);
        log_rfc3339_ms(w[i].since_ms, ts, sizeof ts);
        cJSON_AddStringToObject(o, "since", ts);
        cJSON_AddStringToObject(o, "reason", w[i].room                ? "room"
                                             : w[i].pool != NULL ? "pool"
                                                                 : "max_running");
        if (w[i].pool != NULL)
            cJSON_AddStringToObject(o, "pool", w[i].pool);
        else
            cJSON_AddNullToObject(o, "pool");
        if (w[i].room)
            cJSON_AddNullToObject(o, "limit");
        else
            cJSON_AddNumberToObject(o, "limit", w[i].limit);
        cJSON_AddNumberToObject(o, "queued", (double)w[i].queued);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}
