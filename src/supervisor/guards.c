/* guards.c -- see guards.h. Each guard is one fact, read now. */
#include "guards.h"

static bool in_time(const void *ctx)
{
    const struct guards *g = ctx;
    int64_t deadline = g->h.lease_deadline(g->h.ctx);
    return deadline != 0 && g->h.now(g->h.ctx) < deadline - g->guard_ns;
}

static bool stopping(const void *ctx)
{
    const struct guards *g = ctx;
    return g->stopping;
}

static bool runs_left(const void *ctx)
{
    const struct guards *g = ctx;
    return g->h.running(g->h.ctx) > 0;
}

bool guards_may_block(const struct guards *g)
{
    if (g->m->state == ST_PAUSING)
        return false;
    int64_t stop = 0;
    int64_t deadline = g->h.lease_deadline(g->h.ctx);
    if (deadline != 0)
        stop = deadline - g->guard_ns;
    int64_t runs = g->h.runs_stop_point(g->h.ctx);
    if (runs != 0 && (stop == 0 || runs < stop))
        stop = runs;
    return stop == 0 || g->h.now(g->h.ctx) < stop;
}

static bool may_block(const void *ctx)
{
    return guards_may_block(ctx);
}

const machine_guard_fn guards_table[G_COUNT] = {
    [G_IN_TIME] = in_time,
    [G_STOPPING] = stopping,
    [G_RUNS_LEFT] = runs_left,
    [G_MAY_BLOCK] = may_block,
};
