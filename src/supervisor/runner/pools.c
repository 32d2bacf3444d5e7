/* pools.c -- see pools.h. */
#include <stdlib.h>
#include <string.h>

#include "pools.h"

struct pool *pools_find(const struct pools *p, const char *name)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->v[i].name, name) == 0)
            return &p->v[i];
    return NULL;
}

bool pools_add(struct pools *p, const char *job, const char *pool, int limit)
{
    struct pool *pl = pools_find(p, pool);
    if (pl == NULL) {
        struct pool *nv = realloc(p->v, (p->n + 1) * sizeof *nv);
        if (nv == NULL)
            return false;
        p->v = nv;
        pl = &p->v[p->n++];
        *pl = (struct pool){.name = pool, .limit = limit};
    }
    const char **nj = realloc(pl->jobs, (pl->njobs + 1) * sizeof *nj);
    if (nj == NULL)
        return false;
    pl->jobs = nj;
    pl->jobs[pl->njobs++] = job;
    return true;
}

void pools_clear(struct pools *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].jobs);
        free(p->v[i].w);
    }
    free(p->v);
    p->v = NULL;
    p->n = 0;
}

/* a before b: the earlier instant, then the job's name. */
static bool before(int64_t ta, const char *ja, int64_t tb, const char *jb)
{
    return ta != tb ? ta < tb : strcmp(ja, jb) < 0;
}

static void take_out(struct pool *pl, size_t i)
{
    memmove(&pl->w[i], &pl->w[i + 1], (pl->nw - i - 1) * sizeof pl->w[0]);
    pl->nw--;
}

bool pools_first(struct pool *pl, const struct jobstate *js, const char *job, int64_t tick,
                 pools_live_fn live)
{
    for (size_t i = 0; i < pl->nw;) {
        const struct pool_waiter *w = &pl->w[i];
        if (!before(w->tick, w->job, tick, job))
            return true;
        if (w->js != js && live(w))
            return false;
        take_out(pl, i);
    }
    return true;
}

bool pools_wait(struct pool *pl, struct jobstate *js, const char *job, int64_t tick, int64_t now_ms)
{
    for (size_t i = 0; i < pl->nw; i++)
        if (pl->w[i].js == js && pl->w[i].tick == tick)
            now_ms = pl->w[i].since_ms;
    pools_leave(pl, js);
    if (pl->nw == pl->wcap) {
        size_t cap = pl->wcap != 0 ? 2 * pl->wcap : 8;
        struct pool_waiter *nw = realloc(pl->w, cap * sizeof *nw);
        if (nw == NULL)
            return false;
        pl->w = nw;
        pl->wcap = cap;
    }
    size_t at = pl->nw;
    while (at > 0 && before(tick, job, pl->w[at - 1].tick, pl->w[at - 1].job))
        at--;
    memmove(&pl->w[at + 1], &pl->w[at], (pl->nw - at) * sizeof pl->w[0]);
    pl->w[at] = (struct pool_waiter){.js = js, .job = job, .tick = tick, .since_ms = now_ms};
    pl->nw++;
    return true;
}

bool pools_leave(struct pool *pl, const struct jobstate *js)
{
    for (size_t i = 0; i < pl->nw; i++)
        if (pl->w[i].js == js) {
            take_out(pl, i);
            return i == 0;
        }
    return false;
}

struct jobstate *pools_head(struct pool *pl, pools_live_fn live)
{
    while (pl->nw > 0 && !live(&pl->w[0]))
        take_out(pl, 0);
    return pl->nw > 0 ? pl->w[0].js : NULL;
}
