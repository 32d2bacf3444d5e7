/* machine.c -- the table of machine.h as an array, and the dispatcher: the
 * only code that assigns a state. */
#include <stddef.h>
#include <time.h>

#include "machine.h"

#define IGN_                                                                                       \
    {                                                                                              \
        .ignored = true                                                                            \
    }
#define GO_(s, a)                                                                                  \
    {                                                                                              \
        .next = ST_##s, .action = ACT_##a                                                          \
    }
#define QGO_(s, a)                                                                                 \
    {                                                                                              \
        .quiet = true, .next = ST_##s, .action = ACT_##a                                           \
    }
#define ROW_(ev, c0, c1, c2, c3, c4, c5, c6) [EV_##ev] = {c0, c1, c2, c3, c4, c5, c6},

/* cells[event][state] */
static const struct machine_cell cells[EV_COUNT][ST_COUNT] = {MACHINE_TABLE(ROW_, IGN_, GO_, QGO_)};

/* The table has a cell for every state: a new state without its column
 * fails to compile here. */
_Static_assert(ST_COUNT == 7, "MACHINE_TABLE rows have one cell per state");

static const char *const state_names[] = {
#define NAME_(id, name) #name,
    MACHINE_STATES(NAME_)
#undef NAME_
};
static const char *const event_names[] = {
#define NAME_(id, name) #name,
    MACHINE_EVENTS(NAME_)
#undef NAME_
};
static const char *const action_names[] = {"none",
#define NAME_(id, name) #name,
                                           MACHINE_ACTIONS(NAME_)
#undef NAME_
};

const struct machine_cell *machine_cell(enum machine_state s, enum machine_event e)
{
    if ((int)s < 0 || s >= ST_COUNT || (int)e < 0 || e >= EV_COUNT)
        return NULL;
    return &cells[e][s];
}

const char *machine_state_name(enum machine_state s)
{
    return ((int)s >= 0 && s < ST_COUNT) ? state_names[s] : "?";
}

const char *machine_event_name(enum machine_event e)
{
    return ((int)e >= 0 && e < EV_COUNT) ? event_names[e] : "none";
}

const char *machine_action_name(enum machine_action a)
{
    return ((int)a >= 0 && a < ACT_COUNT) ? action_names[a] : "?";
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void machine_init(struct machine *m, const machine_action_fn *actions, machine_observer_fn observer,
                  void *ctx)
{
    m->state = ST_IDLE;
    m->entered_ns = now_ns();
    m->actions = actions;
    m->observer = observer;
    m->ctx = ctx;
}

int machine_dispatch(struct machine *m, enum machine_event ev)
{
    int steps = 0;
    while (ev != EV_NONE) {
        const struct machine_cell *c = machine_cell(m->state, ev);
        if (c == NULL || c->ignored)
            return steps;
        if (++steps > 64)
            return -1;
        enum machine_state from = m->state;
        int64_t t = now_ns();
        int64_t in_state_ms = (t - m->entered_ns) / 1000000;
        m->state = c->next;
        if (from != c->next)
            m->entered_ns = t;
        if (m->observer != NULL && (from != c->next || !c->quiet))
            m->observer(m->ctx, from, c->next, ev, in_state_ms, c->quiet);
        machine_action_fn fn = m->actions != NULL ? m->actions[c->action] : NULL;
        ev = fn != NULL ? fn(m->ctx) : EV_NONE;
    }
    return steps;
}
