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
/* A plain cell is its branch under G_ALWAYS; IF picks one of two, and its
 * else may be one more IF (ELSE_IF_): IF in any other place, or deeper,
 * does not compile (BRANCH_IF_ and ELSE_IF_'s own IF are not defined). */
/* (no top-level comma: IGN_ is expanded before ROW_ splits its arguments;
 * .guard and .elif_guard default to G_ALWAYS, which is 0) */
#define IGN_      {.then = B_IGN_}
#define GO_(s, a) {.guard = G_ALWAYS, .then = B_GO_(s, a)}
#define QGO_(s, a) {.guard = G_ALWAYS, .then = B_QGO_(s, a)}
#define IF_(g, x, y) {.guard = G_##g, .then = BRANCH_##x, ELSE_##y}
#define BRANCH_GO_(s, a)  B_GO_(s, a)
#define BRANCH_QGO_(s, a) B_QGO_(s, a)
#define ELSE_GO_(s, a)    .otherwise = B_GO_(s, a)
#define ELSE_QGO_(s, a)   .otherwise = B_QGO_(s, a)
#define ELSE_IF_(g, x, y) .elif_guard = G_##g, .elif = BRANCH_##x, .otherwise = BRANCH_##y
#define ROW_(ev, c0, c1, c2, c3, c4, c5, c6, c7) [EV_##ev] = {c0, c1, c2, c3, c4, c5, c6, c7},

/* cells[event][state] */
static const struct machine_cell cells[EV_COUNT][ST_COUNT] = {
    MACHINE_TABLE(ROW_, IGN_, GO_, QGO_, IF_)};

/* The table has a cell for every state: a new state without its column
 * fails to compile here. */
_Static_assert(ST_COUNT == 8, "MACHINE_TABLE rows have one cell per state");
_Static_assert(G_ALWAYS == 0, "a cell without a guard defaults to G_ALWAYS");

static const char *const state_names[] = {
#define NAME_(id, name, parent) #name,
    MACHINE_STATES(NAME_)
#undef NAME_
};
static const enum machine_parent state_parents[] = {
#define PARENT_(id, name, parent) P_##parent,
    MACHINE_STATES(PARENT_)
#undef PARENT_
};
static const char *const parent_names[] = {"none",
#define NAME_(id, name, exit) #name,
                                           MACHINE_PARENTS(NAME_)
#undef NAME_
};
static const enum machine_action parent_exits[] = {ACT_NONE,
#define EXIT_(id, name, exit) ACT_##exit,
                                                   MACHINE_PARENTS(EXIT_)
#undef EXIT_
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

const char *machine_parent_name(enum machine_parent p)
{
    return ((int)p >= 0 && p < P_COUNT) ? parent_names[p] : "?";
}

enum machine_parent machine_state_parent(enum machine_state s)
{
    return ((int)s >= 0 && s < ST_COUNT) ? state_parents[s] : P_NONE;
}

enum machine_action machine_parent_exit(enum machine_parent p)
{
    return ((int)p >= 0 && p < P_COUNT) ? parent_exits[p] : ACT_NONE;
}

enum machine_action machine_exit_action(enum machine_state from, enum machine_state to)
{
    enum machine_parent p = machine_state_parent(from);
    return p != machine_state_parent(to) ? machine_parent_exit(p) : ACT_NONE;
}

bool machine_in(const struct machine *m, enum machine_parent p)
{
    return p != P_NONE && machine_state_parent(m->state) == p;
}

bool machine_done(const struct machine *m)
{
    return m->state == MACHINE_FINAL;
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
    m->guard_ctx = ctx;
}

static bool holds(const struct machine *m, enum machine_guard g)
{
    machine_guard_fn fn = m->guards != NULL ? m->guards[g] : NULL;
    return fn != NULL && fn(m->guard_ctx);
}

/* The branch c takes, and the last guard it asked with what it said. */
static const struct machine_branch *decide(const struct machine *m, const struct machine_cell *c,
                                           enum machine_guard *guard, bool *held)
{
    *guard = c->guard;
    *held = true;
    if (c->guard == G_ALWAYS || holds(m, c->guard))
        return &c->then;
    *held = false;
    if (c->elif_guard == G_ALWAYS)
        return &c->otherwise;
    *guard = c->elif_guard;
    *held = holds(m, c->elif_guard);
    return *held ? &c->elif : &c->otherwise;
}

const struct machine_branch *machine_branch(const struct machine *m, const struct machine_cell *c)
{
    enum machine_guard g;
    bool held;
    return decide(m, c, &g, &held);
}

int machine_dispatch(struct machine *m, enum machine_event ev)
{
    int steps = 0;
    while (ev != EV_NONE) {
        const struct machine_cell *c = machine_cell(m->state, ev);
        if (c == NULL)
            return steps;
        enum machine_guard guard;
        bool held;
        const struct machine_branch *b = decide(m, c, &guard, &held);
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
            m->observer(m->ctx, from, b->next, ev, guard, held, in_state_ms, b->quiet);
        /* Leaving a parent: its exit action, before the move's own. */
        enum machine_action exit = machine_exit_action(from, b->next);
        machine_action_fn xfn = m->actions != NULL ? m->actions[exit] : NULL;
        if (exit != ACT_NONE && xfn != NULL)
            (void)xfn(m->ctx);
        machine_action_fn fn = m->actions != NULL ? m->actions[b->action] : NULL;
        ev = fn != NULL ? fn(m->ctx) : EV_NONE;
    }
    return steps;
}
