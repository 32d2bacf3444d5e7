/* ticklife.c -- see ticklife.h. */
#include "ticklife.h"
#include "rctx.h"
#include "schedule.h"
#include "ticks.h"

static const struct {
    const char *name;
    bool final;
} states[TICK_STATE_COUNT] = {
#define TICK_STATE_ROW_(id, name, final) [TICK_##id] = {name, final},
    TICK_STATES(TICK_STATE_ROW_)
#undef TICK_STATE_ROW_
};

static const struct {
    const char *name, *doc;
} events[TICK_EVENT_COUNT] = {
#define TICK_EVENT_ROW_(id, name, doc) [TICK_EV_##id] = {name, doc},
    TICK_EVENTS(TICK_EVENT_ROW_)
#undef TICK_EVENT_ROW_
};

enum tick_state tick_next_state(enum tick_state s, enum tick_event e)
{
    if ((int)s < 0 || s >= TICK_STATE_COUNT || (int)e < 0 || e >= TICK_EVENT_COUNT)
        return TICK_REFUSED;
#define KEY_(state, event) ((int)(state)*TICK_EVENT_COUNT + (int)(event))
    switch (KEY_(s, e)) {
#define TICK_MOVE_CASE_(state, event, next)                                                        \
    case KEY_(TICK_##state, TICK_EV_##event): return TICK_##next;
        TICK_MOVES(TICK_MOVE_CASE_)
#undef TICK_MOVE_CASE_
    }
#undef KEY_
    return TICK_REFUSED;
}

bool tick_state_final(enum tick_state s)
{
    return (int)s >= 0 && s < TICK_STATE_COUNT && states[s].final;
}

const char *tick_state_name(enum tick_state s)
{
    if (s == TICK_REFUSED)
        return "refused";
    return (int)s >= 0 && s < TICK_STATE_COUNT ? states[s].name : "?";
}

const char *tick_event_name(enum tick_event e)
{
    return (int)e >= 0 && e < TICK_EVENT_COUNT ? events[e].name : "?";
}

const char *tick_event_doc(enum tick_event e)
{
    return (int)e >= 0 && e < TICK_EVENT_COUNT ? events[e].doc : "?";
}

static bool move(const struct rctx *x, const char *job, int64_t at, int64_t until,
                 enum tick_state *s, enum tick_event ev)
{
    struct tick_moved m = {
        .job = job, .at = at, .until = until, .from = *s, .to = tick_next_state(*s, ev), .ev = ev};
    if (x->on_tick != NULL)
        x->on_tick(x->host, &m);
    if (m.to != TICK_REFUSED) {
        *s = m.to;
        return true;
    }
    char when[32];
    log_rfc3339(at, when, sizeof when);
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", job);
    cJSON_AddStringToObject(f, "scheduled_at", when);
    cJSON_AddStringToObject(f, "state", tick_state_name(m.from));
    cJSON_AddStringToObject(f, "because", tick_event_name(ev));
    log_emit(x->log, LE_TICK_MOVE_REFUSED, f);
    return false;
}

bool ticklife_move(const struct rctx *x, const char *job, int64_t at, enum tick_state *s,
                   enum tick_event ev)
{
    return move(x, job, at, at, s, ev);
}

void ticklife_move_range(const struct rctx *x, const char *job, const struct sched_range *r,
                         enum tick_state from, enum tick_event ev)
{
    if (r->count != 0)
        move(x, job, r->first, r->last, &from, ev);
}

void ticklife_forget(const struct rctx *x, const char *job, struct ticks *t)
{
    for (size_t i = 0; i < t->qlen; i++) {
        struct tick_slot *q = ticks_at(t, i);
        ticklife_move(x, job, q->t.at, &q->state, TICK_EV_FORGET);
    }
    ticks_forget(t);
}
