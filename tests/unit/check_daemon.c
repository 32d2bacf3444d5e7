/* check_daemon.c -- the daemon's decisions, without Redis, processes or a
 * clock: the rules of `baton run` written here a second time, one named
 * case each, and checked against MACHINE_TABLE through the dispatcher
 * with fake guards and fake actions (a table that says something else
 * fails the rule it breaks); every (state, event, guards) that no rule
 * names is ignored; the exit action of leading runs exactly when a move
 * leaves it; the real guards (guards.c) on fake facts; and the paths of
 * the product with those guards, the actions faked as daemon.c's answer. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guards.h"
#include "machine.h"
#include "testutil.h"

#define MAXRAN 8

/* What the fake actions record and answer, what the fake guards say. */
struct probe {
    enum machine_action ran[MAXRAN]; /* in order, exit actions included */
    int nran;
    enum machine_event next[ACT_COUNT]; /* what each action returns */
    bool guard[G_COUNT];                /* the fake guards */
    int transitions;                    /* observer calls */
    enum machine_guard said;            /* the last one's guard, and what it held */
    bool held, quiet;
};

#define FAKE(id, name)                                                                             \
    static enum machine_event fake_##name(void *ctx)                                               \
    {                                                                                              \
        struct probe *p = ctx;                                                                     \
        if (p->nran < MAXRAN)                                                                      \
            p->ran[p->nran++] = ACT_##id;                                                          \
        return p->next[ACT_##id];                                                                  \
    }
MACHINE_ACTIONS(FAKE)
#undef FAKE

static const machine_action_fn fakes[ACT_COUNT] = {
#define FAKE_ROW(id, name) [ACT_##id] = fake_##name,
    MACHINE_ACTIONS(FAKE_ROW)
#undef FAKE_ROW
};

#define FAKE_GUARD(id, name)                                                                       \
    static bool fake_guard_##name(const void *ctx)                                                 \
    {                                                                                              \
        const struct probe *p = ctx;                                                               \
        return p->guard[G_##id];                                                                   \
    }
MACHINE_GUARDS(FAKE_GUARD)
#undef FAKE_GUARD

static const machine_guard_fn fake_guards[G_COUNT] = {
#define FAKE_GUARD_ROW(id, name) [G_##id] = fake_guard_##name,
    MACHINE_GUARDS(FAKE_GUARD_ROW)
#undef FAKE_GUARD_ROW
};

static void observe(void *ctx, enum machine_state from, enum machine_state to,
                    enum machine_event trigger, enum machine_guard guard, bool held,
                    int64_t in_state_ms, bool quiet)
{
    struct probe *p = ctx;
    (void)from, (void)to, (void)trigger, (void)in_state_ms;
    p->transitions++;
    p->said = guard;
    p->held = held;
    p->quiet = quiet;
}

static void reset(struct probe *p)
{
    memset(p, 0, sizeof *p);
    for (int a = 0; a < ACT_COUNT; a++)
        p->next[a] = EV_NONE;
}

/* ---- the rules ---- */

enum kind {
    LOGGED,  /* a transition logged at info */
    QUIET,   /* at debug (the routine); a stay in the same state is not logged */
    IGNORED, /* nothing moves, nothing runs, nothing is logged */
};

#define Y(g) (1u << G_##g)

/* clang-format off */
static const struct rule {
    const char *name;
    enum machine_state from;
    enum machine_event ev;
    unsigned yes, no; /* the guards that hold, that do not; the others do not matter */
    enum kind kind;
    enum machine_state to;
    enum machine_action act[3]; /* run in this order (until ACT_NONE) */
} rules[] = {
    /* Starting and electing. */
    {"an idle node campaigns at start", ST_IDLE, EV_START, 0, 0, LOGGED, ST_ACQUIRING,
     {ACT_CAMPAIGN}},
    {"a won campaign leads", ST_ACQUIRING, EV_ACQUIRED, 0, 0, LOGGED, ST_WORKING, {ACT_LEAD}},
    {"a lost campaign follows the leader", ST_ACQUIRING, EV_TAKEN, 0, 0, QUIET, ST_WAITING,
     {ACT_FOLLOW}},
    {"a campaign that cannot reach Redis backs off", ST_ACQUIRING, EV_REDIS_ERROR, 0, 0, QUIET,
     ST_WAITING, {ACT_BACKOFF}},
    {"a woken follower campaigns", ST_WAITING, EV_WAKE, 0, 0, QUIET, ST_ACQUIRING,
     {ACT_CAMPAIGN}},

    /* Renewing. */
    {"a due renewal that may block renews", ST_WORKING, EV_RENEW_DUE, Y(MAY_BLOCK), 0, QUIET,
     ST_RENEWING, {ACT_RENEW}},
    {"a renewal that may not block ends in pausing", ST_WORKING, EV_RENEW_DUE, 0, Y(MAY_BLOCK),
     LOGGED, ST_PAUSING, {ACT_DISARM, ACT_PAUSE}},
    {"a renewal retried that may block renews", ST_RENEWING, EV_RENEW_DUE, Y(MAY_BLOCK), 0,
     QUIET, ST_RENEWING, {ACT_RENEW}},
    {"a renewal retried that may not block ends in pausing", ST_RENEWING, EV_RENEW_DUE, 0,
     Y(MAY_BLOCK), LOGGED, ST_PAUSING, {ACT_DISARM, ACT_PAUSE}},
    {"a renewal confirmed in time goes back to work", ST_RENEWING, EV_RENEWED, Y(IN_TIME), 0,
     QUIET, ST_WORKING, {ACT_CONFIRM}},
    {"a renewal confirmed after the stop point pauses (a stall)", ST_RENEWING, EV_RENEWED, 0,
     Y(IN_TIME), LOGGED, ST_PAUSING, {ACT_DISARM, ACT_PAUSE}},
    {"a failed renewal retries until the stop point", ST_RENEWING, EV_REDIS_ERROR, 0, 0, QUIET,
     ST_RENEWING, {ACT_RETRY}},

    /* Losing the lease. */
    {"a leader whose lease is lost pauses", ST_WORKING, EV_LOST, 0, 0, LOGGED, ST_PAUSING,
     {ACT_DISARM, ACT_PAUSE}},
    {"a renewal that finds the lease lost pauses", ST_RENEWING, EV_LOST, 0, 0, LOGGED,
     ST_PAUSING, {ACT_DISARM, ACT_PAUSE}},
    {"a leader at its stop point pauses", ST_WORKING, EV_DEADLINE, 0, 0, LOGGED, ST_PAUSING,
     {ACT_DISARM, ACT_PAUSE}},
    {"a renewal unconfirmed at the stop point pauses", ST_RENEWING, EV_DEADLINE, 0, 0, LOGGED,
     ST_PAUSING, {ACT_DISARM, ACT_PAUSE}},
    {"a pause waits for its runs to end", ST_PAUSING, EV_JOBS_STOPPED, Y(RUNS_LEFT), 0, QUIET,
     ST_PAUSING, {ACT_NONE}},
    {"a pause with no run left follows", ST_PAUSING, EV_JOBS_STOPPED, 0, Y(RUNS_LEFT) | Y(STOPPING),
     LOGGED, ST_WAITING, {ACT_FOLLOW}},
    {"a pause with no run left during a shutdown finishes", ST_PAUSING, EV_JOBS_STOPPED,
     Y(STOPPING), Y(RUNS_LEFT), LOGGED, ST_IDLE, {ACT_FINISH}},
    {"SIGTERM during a pause does not cut it short", ST_PAUSING, EV_STOP, 0, 0, IGNORED,
     ST_PAUSING, {ACT_NONE}},

    /* Stopping and stepping down. */
    {"SIGTERM while working hands the lease over", ST_WORKING, EV_STOP, 0, 0, LOGGED,
     ST_RELEASING, {ACT_DISARM, ACT_HANDOVER}},
    {"SIGTERM while renewing hands the lease over", ST_RENEWING, EV_STOP, 0, 0, LOGGED,
     ST_RELEASING, {ACT_DISARM, ACT_HANDOVER}},
    {"a step-down while working hands the lease over", ST_WORKING, EV_STEP_DOWN, 0, 0, LOGGED,
     ST_RELEASING, {ACT_DISARM, ACT_HANDOVER}},
    {"a step-down while renewing hands the lease over", ST_RENEWING, EV_STEP_DOWN, 0, 0,
     LOGGED, ST_RELEASING, {ACT_DISARM, ACT_HANDOVER}},
    {"a step-down asked of a follower is ignored", ST_WAITING, EV_STEP_DOWN, 0, 0, IGNORED,
     ST_WAITING, {ACT_NONE}},
    {"a handover on SIGTERM lets the runs finish", ST_RELEASING, EV_RELEASED, Y(STOPPING), 0,
     QUIET, ST_RELEASING, {ACT_DRAIN}},
    {"a step-down's handover campaigns again after a pause", ST_RELEASING, EV_RELEASED, 0,
     Y(STOPPING), LOGGED, ST_IDLE, {ACT_RESTART}},
    {"a drain waits for its runs to end", ST_RELEASING, EV_JOBS_STOPPED, Y(RUNS_LEFT), 0, QUIET,
     ST_RELEASING, {ACT_NONE}},
    {"a drain with no run left finishes", ST_RELEASING, EV_JOBS_STOPPED, 0, Y(RUNS_LEFT), LOGGED,
     ST_IDLE, {ACT_FINISH}},
    {"the end of shutdown_grace hurries the runs", ST_RELEASING, EV_DRAIN_TIMEOUT, 0, 0, QUIET,
     ST_RELEASING, {ACT_HURRY}},
    {"a second SIGTERM hurries the runs", ST_RELEASING, EV_STOP, 0, 0, QUIET, ST_RELEASING,
     {ACT_HURRY}},
    {"SIGTERM when idle with runs left drains them", ST_IDLE, EV_STOP, Y(RUNS_LEFT), 0, LOGGED,
     ST_RELEASING, {ACT_DRAIN}},
    {"SIGTERM when idle with no run left finishes", ST_IDLE, EV_STOP, 0, Y(RUNS_LEFT), LOGGED,
     ST_IDLE, {ACT_FINISH}},
    {"SIGTERM while campaigning with runs left drains them", ST_ACQUIRING, EV_STOP,
     Y(RUNS_LEFT), 0, LOGGED, ST_RELEASING, {ACT_DRAIN}},
    {"SIGTERM while campaigning with no run left finishes", ST_ACQUIRING, EV_STOP, 0,
     Y(RUNS_LEFT), LOGGED, ST_IDLE, {ACT_FINISH}},
    {"SIGTERM to a follower with runs left drains them", ST_WAITING, EV_STOP, Y(RUNS_LEFT), 0,
     LOGGED, ST_RELEASING, {ACT_DRAIN}},
    {"SIGTERM to a follower with no run left finishes", ST_WAITING, EV_STOP, 0, Y(RUNS_LEFT),
     LOGGED, ST_IDLE, {ACT_FINISH}},
    {"a run's end while leading changes nothing", ST_WORKING, EV_JOBS_STOPPED, 0, 0, IGNORED,
     ST_WORKING, {ACT_NONE}},

    /* The end. */
    {"the end of the work stops the machine for good", ST_IDLE, EV_FINISHED, 0, 0, QUIET,
     ST_STOPPED, {ACT_SIGN_OFF}},
    {"once stopped, a stop signal hurries the hooks", ST_STOPPED, EV_STOP, 0, 0, QUIET,
     ST_STOPPED, {ACT_HURRY}},
    {"once stopped, the end of shutdown_grace hurries the hooks", ST_STOPPED, EV_DRAIN_TIMEOUT,
     0, 0, QUIET, ST_STOPPED, {ACT_HURRY}},
    {"once stopped, the runs' end changes nothing", ST_STOPPED, EV_JOBS_STOPPED, 0, 0, IGNORED,
     ST_STOPPED, {ACT_NONE}},
    {"a stopped machine never campaigns again", ST_STOPPED, EV_START, 0, 0, IGNORED, ST_STOPPED,
     {ACT_NONE}},
    {"a stopped machine is not woken", ST_STOPPED, EV_WAKE, 0, 0, IGNORED, ST_STOPPED,
     {ACT_NONE}},
};
/* clang-format on */

#define NRULES ((int)(sizeof rules / sizeof rules[0]))

/* True when rule r is about (s, e) under the guards of combo. */
static bool matches(const struct rule *r, int s, int e, unsigned combo)
{
    return (int)r->from == s && (int)r->ev == e && (combo & r->yes) == r->yes &&
           (combo & r->no) == 0;
}

/* Dispatches r's event in r's state under the guards of combo; checks what
 * r says. */
static void check_rule(const struct rule *r, unsigned combo)
{
    struct probe p;
    struct machine m;
    reset(&p);
    for (int g = 1; g < G_COUNT; g++)
        p.guard[g] = (combo >> g & 1u) != 0;
    machine_init(&m, fakes, fake_guards, observe, &p);
    m.state = r->from; /* placed by the test; only the dispatcher moves it */
    int n = machine_dispatch(&m, r->ev);
    ck_assert_msg(m.state == r->to, "%s: in %s, not %s", r->name, machine_state_name(m.state),
                  machine_state_name(r->to));
    int want = 0;
    while (want < 3 && r->act[want] != ACT_NONE)
        want++;
    ck_assert_msg(p.nran == want, "%s: %d actions ran, not %d", r->name, p.nran, want);
    for (int i = 0; i < want; i++)
        ck_assert_msg(p.ran[i] == r->act[i], "%s: action %d is %s, not %s", r->name, i,
                      machine_action_name(p.ran[i]), machine_action_name(r->act[i]));
    if (r->kind == IGNORED) {
        ck_assert_msg(n == 0 && p.transitions == 0, "%s: not ignored", r->name);
        return;
    }
    ck_assert_msg(n == 1, "%s: %d moves", r->name, n);
    bool told = r->kind == LOGGED || r->from != r->to;
    ck_assert_msg(p.transitions == (told ? 1 : 0), "%s: observed %d times", r->name, p.transitions);
    if (!told)
        return;
    ck_assert_msg(p.quiet == (r->kind == QUIET), "%s: logged at %s", r->name,
                  p.quiet ? "debug" : "info");
    /* The log names the guard that decided, and what it said. */
    if (r->yes == 0 && r->no == 0) {
        ck_assert_msg(p.said == G_ALWAYS, "%s: decided by %s", r->name, machine_guard_name(p.said));
    } else {
        ck_assert_msg(p.said != G_ALWAYS && ((r->yes | r->no) & 1u << p.said) != 0,
                      "%s: decided by %s", r->name, machine_guard_name(p.said));
        ck_assert_msg(p.held == ((r->yes & 1u << p.said) != 0), "%s: %s said %d", r->name,
                      machine_guard_name(p.said), p.held);
    }
}

/* Each rule holds, whatever the guards it does not name say. */
START_TEST(rule_holds)
{
    const struct rule *r = &rules[_i];
    for (unsigned combo = 0; combo < 1u << G_COUNT; combo += 2) /* bit 0: G_ALWAYS */
        if (matches(r, r->from, r->ev, combo))
            check_rule(r, combo);
}
END_TEST

/* Every (state, event, guards) is named by one rule at most, and what no
 * rule names is ignored. */
START_TEST(everything_else_is_ignored)
{
    enum machine_state s = (enum machine_state)_i;
    for (int e = 0; e < EV_COUNT; e++)
        for (unsigned combo = 0; combo < 1u << G_COUNT; combo += 2) {
            const struct rule *hit = NULL;
            for (int i = 0; i < NRULES; i++)
                if (matches(&rules[i], s, e, combo)) {
                    ck_assert_msg(hit == NULL, "\"%s\" and \"%s\" overlap", hit ? hit->name : "",
                                  rules[i].name);
                    hit = &rules[i];
                }
            if (hit != NULL)
                continue;
            struct rule ignored = {"ignored", s,         (enum machine_event)e, 0, 0, IGNORED,
                                   s,         {ACT_NONE}};
            char name[128];
            snprintf(name, sizeof name, "%s ignores %s", machine_state_name(s),
                     machine_event_name((enum machine_event)e));
            ignored.name = name;
            check_rule(&ignored, combo);
        }
}
END_TEST

/* Leaving leading (working, renewing) disarms its timers, first, exactly
 * once; no other move does. Over every rule and every guard. */
START_TEST(leaving_leading_disarms)
{
    int leaving = 0;
    for (int i = 0; i < NRULES; i++) {
        const struct rule *r = &rules[i];
        bool was = r->from == ST_WORKING || r->from == ST_RENEWING;
        bool is = r->to == ST_WORKING || r->to == ST_RENEWING;
        int disarms = 0;
        for (int k = 0; k < 3; k++)
            disarms += r->act[k] == ACT_DISARM;
        ck_assert_msg(disarms == (was && !is ? 1 : 0), "%s: disarms %d times", r->name, disarms);
        ck_assert_msg(disarms == 0 || r->act[0] == ACT_DISARM, "%s: disarms after its action",
                      r->name);
        leaving += was && !is;
    }
    ck_assert_int_eq(leaving, 11);
    /* And through the dispatcher, over every cell: the exit action runs iff
     * the move leaves leading. */
    for (int s = 0; s < ST_COUNT; s++)
        for (int e = 0; e < EV_COUNT; e++)
            for (unsigned combo = 0; combo < 1u << G_COUNT; combo += 2) {
                struct probe p;
                struct machine m;
                reset(&p);
                for (int g = 1; g < G_COUNT; g++)
                    p.guard[g] = (combo >> g & 1u) != 0;
                machine_init(&m, fakes, fake_guards, observe, &p);
                m.state = (enum machine_state)s;
                machine_dispatch(&m, (enum machine_event)e);
                int disarms = 0;
                for (int k = 0; k < p.nran; k++)
                    disarms += p.ran[k] == ACT_DISARM;
                bool was = s == ST_WORKING || s == ST_RENEWING;
                bool is = m.state == ST_WORKING || m.state == ST_RENEWING;
                ck_assert_msg(disarms == (was && !is ? 1 : 0), "%s on %s: %d disarms",
                              machine_state_name((enum machine_state)s),
                              machine_event_name((enum machine_event)e), disarms);
                ck_assert(machine_in(&m, P_LEADING) == is);
            }
}
END_TEST

/* ---- the real guards (guards.c) on fake facts ---- */

#define S INT64_C(1000000000)

struct facts {
    int64_t now, deadline, runs_stop;
    size_t running;
};

static int64_t f_now(void *ctx)
{
    return ((struct facts *)ctx)->now;
}
static int64_t f_deadline(void *ctx)
{
    return ((struct facts *)ctx)->deadline;
}
static int64_t f_runs_stop(void *ctx)
{
    return ((struct facts *)ctx)->runs_stop;
}
static size_t f_running(void *ctx)
{
    return ((struct facts *)ctx)->running;
}

static void guards_on(struct guards *g, struct facts *f, const struct machine *m)
{
    *g = (struct guards){.h = {.now = f_now,
                               .lease_deadline = f_deadline,
                               .runs_stop_point = f_runs_stop,
                               .running = f_running,
                               .ctx = f},
                         .m = m,
                         .guard_ns = 1 * S};
}

/* clang-format off */
static const struct fact_case {
    const char *name;
    enum machine_state state;
    struct facts f;
    bool stopping;
    bool in_time, runs_left, may_block;
} fact_cases[] = {
    {"a renewal confirmed before the stop point is in time", ST_RENEWING, {8 * S, 10 * S, 0, 0},
     false, true, false, true},
    {"a renewal confirmed at the stop point is late", ST_RENEWING, {9 * S, 10 * S, 0, 0}, false,
     false, false, false},
    {"without a lease no renewal is in time", ST_RENEWING, {1 * S, 0, 0, 0}, false, false, false,
     true},
    {"a run alive is a run left, of any term", ST_IDLE, {1 * S, 0, 0, 1}, false, false, true,
     true},
    {"SIGTERM or SIGINT received is stopping", ST_WAITING, {1 * S, 0, 0, 0}, true, false, false,
     true},
    {"before the lease's stop point Redis may be called", ST_WORKING, {8 * S, 10 * S, 0, 3},
     false, true, true, true},
    {"past the lease's stop point no call starts", ST_WORKING, {9 * S + 1, 10 * S, 0, 0}, false,
     false, false, false},
    {"the runs' stop point counts when earlier than the lease's", ST_WORKING,
     {5 * S, 10 * S, 4 * S, 1}, false, true, true, false},
    {"the lease's stop point counts when earlier than the runs'", ST_WORKING,
     {8 * S, 10 * S, 20 * S, 1}, false, true, true, true},
    {"the runs' stop point alone counts without a lease", ST_IDLE, {5 * S, 0, 4 * S, 2}, false,
     false, true, false},
    {"no call starts while pausing, whatever the clock", ST_PAUSING, {1 * S, 10 * S, 0, 1},
     false, true, true, false},
};
/* clang-format on */

START_TEST(guard_reads_its_fact)
{
    const struct fact_case *c = &fact_cases[_i];
    struct facts f = c->f;
    struct machine m;
    struct guards g;
    machine_init(&m, NULL, NULL, NULL, NULL);
    m.state = c->state;
    guards_on(&g, &f, &m);
    g.stopping = c->stopping;
    ck_assert_msg(guards_table[G_IN_TIME](&g) == c->in_time, "%s: in_time", c->name);
    ck_assert_msg(guards_table[G_RUNS_LEFT](&g) == c->runs_left, "%s: runs_left", c->name);
    ck_assert_msg(guards_table[G_STOPPING](&g) == c->stopping, "%s: stopping", c->name);
    ck_assert_msg(guards_table[G_MAY_BLOCK](&g) == c->may_block, "%s: may_block", c->name);
    ck_assert_msg(guards_may_block(&g) == c->may_block, "%s: the gate", c->name);
    for (int k = 1; k < G_COUNT; k++)
        ck_assert_msg(guards_table[k] != NULL, "guard %s has no function",
                      machine_guard_name((enum machine_guard)k));
}
END_TEST

/* ---- the paths, with the real guards and the actions faked as daemon.c
 * answers (pause, drain and hurry: jobs_stopped; finish: finished) ---- */

struct world {
    struct probe p; /* first: the fake actions' ctx is the world too */
    struct facts f;
    struct guards g;
    struct machine m;
};

static void world_init(struct world *w, enum machine_state at)
{
    reset(&w->p);
    w->f = (struct facts){.now = 1 * S};
    machine_init(&w->m, fakes, guards_table, observe, &w->p);
    guards_on(&w->g, &w->f, &w->m);
    w->m.guard_ctx = &w->g;
    w->m.state = at;
    w->p.next[ACT_PAUSE] = EV_JOBS_STOPPED;
    w->p.next[ACT_DRAIN] = EV_JOBS_STOPPED;
    w->p.next[ACT_HURRY] = EV_JOBS_STOPPED;
    w->p.next[ACT_FINISH] = EV_FINISHED;
}

/* The actions that ran, as "a b c", then forgets them. */
static const char *ran(struct world *w)
{
    static char buf[256];
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < w->p.nran; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? " " : "",
                              machine_action_name(w->p.ran[i]));
    w->p.nran = 0;
    return buf;
}

START_TEST(sigterm_while_leading_with_runs_left_drains)
{
    struct world w;
    world_init(&w, ST_WORKING);
    w.f.deadline = 10 * S;
    w.f.running = 2;
    w.p.next[ACT_HANDOVER] = EV_RELEASED;
    w.g.stopping = true; /* as on_signal does */
    machine_dispatch(&w.m, EV_STOP);
    ck_assert_int_eq(w.m.state, ST_RELEASING);
    ck_assert_str_eq(ran(&w), "disarm handover drain");
    /* The runs end: the node finishes and stops for good. */
    w.f.running = 0;
    machine_dispatch(&w.m, EV_JOBS_STOPPED);
    ck_assert_int_eq(w.m.state, ST_STOPPED);
    ck_assert_str_eq(ran(&w), "finish sign_off");
    ck_assert(machine_done(&w.m));
    /* Only hooks are left: a second signal hurries them, the machine stays. */
    machine_dispatch(&w.m, EV_STOP);
    ck_assert_int_eq(w.m.state, ST_STOPPED);
    ck_assert_str_eq(ran(&w), "hurry");
}
END_TEST

START_TEST(sigterm_while_leading_with_no_run_ends_at_once)
{
    struct world w;
    world_init(&w, ST_RENEWING);
    w.f.deadline = 10 * S;
    w.p.next[ACT_HANDOVER] = EV_RELEASED;
    w.g.stopping = true;
    machine_dispatch(&w.m, EV_STOP);
    ck_assert_int_eq(w.m.state, ST_STOPPED);
    ck_assert_str_eq(ran(&w), "disarm handover drain finish sign_off");
}
END_TEST

START_TEST(a_step_down_campaigns_again_with_its_runs_alive)
{
    struct world w;
    world_init(&w, ST_WORKING);
    w.f.deadline = 10 * S;
    w.f.running = 1;
    w.p.next[ACT_HANDOVER] = EV_RELEASED;
    machine_dispatch(&w.m, EV_STEP_DOWN);
    ck_assert_int_eq(w.m.state, ST_IDLE);
    ck_assert_str_eq(ran(&w), "disarm handover restart");
    /* SIGTERM before the restart, the old term's run still alive: drain it. */
    w.g.stopping = true;
    machine_dispatch(&w.m, EV_STOP);
    ck_assert_int_eq(w.m.state, ST_RELEASING);
    ck_assert_str_eq(ran(&w), "drain");
    /* shutdown_grace is over: hurried; the run dies; the end. */
    machine_dispatch(&w.m, EV_DRAIN_TIMEOUT);
    ck_assert_int_eq(w.m.state, ST_RELEASING);
    ck_assert_str_eq(ran(&w), "hurry");
    w.f.running = 0;
    machine_dispatch(&w.m, EV_JOBS_STOPPED);
    ck_assert_int_eq(w.m.state, ST_STOPPED);
    ck_assert_str_eq(ran(&w), "finish sign_off");
}
END_TEST

START_TEST(a_renewal_past_the_runs_stop_point_pauses_without_calling_redis)
{
    struct world w;
    world_init(&w, ST_WORKING);
    w.f.deadline = 10 * S;
    w.f.runs_stop = w.f.now; /* a run kept registered on its own is at its stop point */
    w.f.running = 1;
    machine_dispatch(&w.m, EV_RENEW_DUE);
    ck_assert_int_eq(w.m.state, ST_PAUSING);
    ck_assert_str_eq(ran(&w), "disarm pause"); /* no renew: no Redis call */
    ck_assert_int_eq(w.p.said, G_MAY_BLOCK);
    ck_assert(!w.p.held);
    /* Its run dies: the node follows. */
    w.f.running = 0;
    w.f.runs_stop = 0;
    machine_dispatch(&w.m, EV_JOBS_STOPPED);
    ck_assert_int_eq(w.m.state, ST_WAITING);
    ck_assert_str_eq(ran(&w), "follow");
}
END_TEST

/* A renewal whose answer takes 1.5 s (the process stalled while it
 * waited): the world is the probe's container. */
static enum machine_event slow_renew(void *ctx)
{
    struct world *w = ctx;
    fake_renew(ctx);
    w->f.now += 3 * S / 2;
    return EV_RENEWED;
}

START_TEST(a_renewal_in_time_confirms_a_late_one_pauses)
{
    struct world w;
    world_init(&w, ST_WORKING);
    w.f.deadline = 10 * S; /* the stop point: 9 s */
    w.p.next[ACT_RENEW] = EV_RENEWED;
    machine_dispatch(&w.m, EV_RENEW_DUE);
    ck_assert_int_eq(w.m.state, ST_WORKING);
    ck_assert_str_eq(ran(&w), "renew confirm");
    /* Started at 8 s, answered at 9.5 s: never confirmed to the runs; the
     * node pauses and, with no run, follows at once. */
    machine_action_fn slow[ACT_COUNT];
    memcpy(slow, fakes, sizeof slow);
    slow[ACT_RENEW] = slow_renew;
    w.m.actions = slow;
    w.f.now = 8 * S;
    machine_dispatch(&w.m, EV_RENEW_DUE);
    ck_assert_int_eq(w.m.state, ST_WAITING);
    ck_assert_str_eq(ran(&w), "renew disarm pause follow");
}
END_TEST

START_TEST(sigterm_during_a_pause_ends_the_node_once_its_runs_are_dead)
{
    struct world w;
    world_init(&w, ST_WORKING);
    w.f.deadline = 10 * S;
    w.f.running = 1;
    machine_dispatch(&w.m, EV_LOST);
    ck_assert_int_eq(w.m.state, ST_PAUSING);
    ck_assert_str_eq(ran(&w), "disarm pause");
    w.g.stopping = true;
    ck_assert_int_eq(machine_dispatch(&w.m, EV_STOP), 0);
    w.f.running = 0;
    machine_dispatch(&w.m, EV_JOBS_STOPPED);
    ck_assert_int_eq(w.m.state, ST_STOPPED);
    ck_assert_str_eq(ran(&w), "finish sign_off");
}
END_TEST

START_TEST(sigterm_to_a_follower_with_no_run_ends_at_once)
{
    struct world w;
    world_init(&w, ST_WAITING);
    w.g.stopping = true;
    machine_dispatch(&w.m, EV_STOP);
    ck_assert_int_eq(w.m.state, ST_STOPPED);
    ck_assert_str_eq(ran(&w), "finish sign_off");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("daemon");
    TCase *tc = tcase_create("rules");
    tcase_set_timeout(tc, 20);
    tcase_add_loop_test(tc, rule_holds, 0, NRULES);
    tcase_add_loop_test(tc, everything_else_is_ignored, 0, ST_COUNT);
    tcase_add_test(tc, leaving_leading_disarms);
    suite_add_tcase(s, tc);
    tc = tcase_create("guards");
    tcase_set_timeout(tc, 10);
    tcase_add_loop_test(tc, guard_reads_its_fact, 0,
                        (int)(sizeof fact_cases / sizeof fact_cases[0]));
    suite_add_tcase(s, tc);
    tc = tcase_create("paths");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, sigterm_while_leading_with_runs_left_drains);
    tcase_add_test(tc, sigterm_while_leading_with_no_run_ends_at_once);
    tcase_add_test(tc, a_step_down_campaigns_again_with_its_runs_alive);
    tcase_add_test(tc, a_renewal_past_the_runs_stop_point_pauses_without_calling_redis);
    tcase_add_test(tc, a_renewal_in_time_confirms_a_late_one_pauses);
    tcase_add_test(tc, sigterm_during_a_pause_ends_the_node_once_its_runs_are_dead);
    tcase_add_test(tc, sigterm_to_a_follower_with_no_run_ends_at_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
