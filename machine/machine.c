/* machine.c -- the table of machine.h as an array, and the dispatcher: the
 * only code that assigns a state. */
#include <stddef.h>
#include <time.h>

#include "machine.h"

#define B_IGN_                                                                                     \
    {                                                                                              \
        .ignored = true                                                                            \
    }
#define B_GO_(s, a)                                                                                \
    {                                                                                              \
        .next = ST_##s, .action = ACT_##a                                                          \
    }
#define B_QGO_(s, a)                                                                               \
    {                                                                                              \
        .quiet = true, .next = ST_##s, .action = ACT_##a                                           \
    }
/* A plain cell is its branch under G_ALWAYS; IF picks one of two. */
/* (no top-level comma: IGN_ is expanded before ROW_ splits its arguments;
 * .guard defaults to G_ALWAYS, which is 0) */
#define IGN_      {.then = B_IGN_}
#define GO_(s, a) {.guard = G_ALWAYS, .then = B_GO_(s, a)}
#define QGO_(s, a) {.guard = G_ALWAYS, .then = B_QGO_(s, a)}
#define IF_(g, x, y) {.guard = G_##g, .then = BRANCH_##x, .otherwise = BRANCH_##y}
#define BRANCH_GO_(s, a)  B_GO_(s, a)
#define BRANCH_QGO_(s, a) B_QGO_(s, a)
#define ROW_(ev, c0, c1, c2, c3, c4, c5, c6) [EV_##ev] = {c0, c1, c2, c3, c4, c5, c6},

/* cells[event][state] */
static const struct machine_cell cells[EV_COUNT][ST_COUNT] = {
    MACHINE_TABLE(ROW_, IGN_, GO_, QGO_, IF_)};

/* The table has a cell for every state: a new state without its column
 * fails to compile here. */
_Static_assert(ST_COUNT == 7, "MACHINE_TABLE rows have one cell per state");
_Static_assert(G_ALWAYS == 0, "a cell without a guard defaults to G_ALWAYS");

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
static const char *const guard_names[] = {"always",
#define NAME_(id, name) #name,
                                          MACHINE_GUARDS(NAME_)
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

const char *machine_guard_name(enum machine_guard g)
{
    return ((int)g >= 0 && g < G_COUNT) ? guard_names[g] : "?";
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void machine_init(struct machine *m, const machine_action_fn *actions,
                  const machine_guard_fn *guards, machine_observer_fn observer, void *ctx)
{
    m->state = ST_IDLE;
    m->entered_ns = now_ns();
    m->actions = actions;
    m->guards = guards;
    m->observer = observer;
    m->ctx = ctx;
}

const struct machine_branch *machine_branch(const struct machine *m, const struct machine_cell *c)
{
    if (c->guard == G_ALWAYS)
        return &c->then;
    machine_guard_fn g = m->guards != NULL ? m->guards[c->guard] : NULL;
    return (g != NULL && g(m->ctx)) ? &c->then : &c->otherwise;
}

int machine_dispatch(struct machine *m, enum machine_event ev)
{
    int steps = 0;
    while (ev != EV_NONE) {
        const struct machine_cell *c = machine_cell(m->state, ev);
        if (c == NULL)
            return steps;
        const struct machine_branch *b = machine_branch(m, c);
        if (b->ignored)
            return steps;
        if (++steps > 64)
            return -1;
        enum machine_state from = m->state;
        int64_t t = now_ns();
        int64_t in_state_ms = (t - m->entered_ns) / 1000000;
        m->state = b->next;
        if (from != b->next)
            m->entered_ns = t;
        if (m->observer != NULL && (from != b->next || !b->quiet))
            m->observer(m->ctx, from, b->next, ev, c->guard, b == &c->then, in_state_ms,
                        b->quiet);
        machine_action_fn fn = m->actions != NULL ? m->actions[b->action] : NULL;
        ev = fn != NULL ? fn(m->ctx) : EV_NONE;
    }
    return steps;
}
