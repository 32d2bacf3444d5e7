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
#include "machine_fakes.h"
#include "testutil.h"

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
    struct machine_probe p;
    struct machine m;
    machine_probe_reset(&p);
    for (int g = 1; g < G_COUNT; g++)
        p.guard[g] = (combo >> g & 1u) != 0;
    machine_init(&m, machine_fakes, machine_fake_guards, machine_probe_observe, &p);
    m.state = r->from; /* placed by the test; only the dispatcher moves it */
    int n = machine_dispatch(&m, r->ev);
    ck_assert_msg(m.state == r->to, "%s: in %s, not %s", r->name, machine_state_name(m.state),
                  machine_state_name(r->to));
    int want = 0;
    while (want < 3 && r->act[want] != ACT_NONE)
        want++;
    ck_assert_msg(p.nall == want, "%s: %d actions ran, not %d", r->name, p.nall, want);
    for (int i = 0; i < want; i++)
        ck_assert_msg(p.all[i] == r->act[i], "%s: action %d is %s, not %s", r->name, i,
                      machine_action_name(p.all[i]), machine_action_name(r->act[i]));
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
                struct machine_probe p;
                struct machine m;
                machine_probe_reset(&p);
                for (int g = 1; g < G_COUNT; g++)
                    p.guard[g] = (combo >> g & 1u) != 0;
                machine_init(&m, machine_fakes, machine_fake_guards, machine_probe_observe, &p);
                m.state = (enum machine_state)s;
                machine_dispatch(&m, (enum machine_event)e);
                int disarms = 0;
                for (int k = 0; k < p.nall; k++)
                    disarms += p.all[k] == ACT_DISARM;
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
 * answers (handover: released; pause, drain and hurry: jobs_stopped;
 * finish: finished; renew: renewed, after renew_ns) ---- */

/* One event of a path: the facts when it comes, where the machine goes,
 * the actions that run, and a guard one of its logged moves names, as the
 * log says it (NULL: none asked for). */
struct step {
    enum machine_event ev;
    struct facts f;
    bool stopping;
    enum machine_state to;
    const char *ran;
    const char *guard;
};

/* clang-format off */
static const struct path {
    const char *name;
    enum machine_state from;
    int64_t renew_ns; /* how long a renewal takes: the fake moves the clock */
    struct step steps[4];
} paths[] = {
    {"SIGTERM while leading with runs left drains, then stops when they end", ST_WORKING, 0, {
        {EV_STOP, {1 * S, 10 * S, 0, 2}, true, ST_RELEASING, "disarm handover drain", NULL},
        {EV_JOBS_STOPPED, {2 * S, 0, 0, 0}, true, ST_STOPPED, "finish sign_off", "not runs_left"},
        {EV_STOP, {3 * S, 0, 0, 0}, true, ST_STOPPED, "hurry", NULL}}},
    {"SIGTERM while leading with no run ends at once", ST_RENEWING, 0, {
        {EV_STOP, {1 * S, 10 * S, 0, 0}, true, ST_STOPPED, "disarm handover drain finish sign_off",
         NULL}}},
    {"a step-down campaigns again, its runs alive; SIGTERM then drains and hurries them",
     ST_WORKING, 0, {
        {EV_STEP_DOWN, {1 * S, 10 * S, 0, 1}, false, ST_IDLE, "disarm handover restart",
         "not stopping"},
        {EV_STOP, {2 * S, 0, 0, 1}, true, ST_RELEASING, "drain", "runs_left"},
        {EV_DRAIN_TIMEOUT, {3 * S, 0, 0, 1}, true, ST_RELEASING, "hurry", NULL},
        {EV_JOBS_STOPPED, {4 * S, 0, 0, 0}, true, ST_STOPPED, "finish sign_off", NULL}}},
    {"a renewal past the runs' stop point pauses without calling Redis", ST_WORKING, 0, {
        {EV_RENEW_DUE, {1 * S, 10 * S, 1 * S, 1}, false, ST_PAUSING, "disarm pause",
         "not may_block"},
        {EV_JOBS_STOPPED, {2 * S, 0, 0, 0}, false, ST_WAITING, "follow", "not stopping"}}},
    {"a renewal in time confirms the runs' cover", ST_WORKING, 0, {
        {EV_RENEW_DUE, {8 * S, 10 * S, 0, 1}, false, ST_WORKING, "renew confirm", "in_time"}}},
    {"a renewal answered after the stop point pauses, and follows with no run", ST_WORKING,
     3 * S / 2, {
        {EV_RENEW_DUE, {8 * S, 10 * S, 0, 0}, false, ST_WAITING, "renew disarm pause follow",
         "not stopping"}}},
    {"SIGTERM during a pause ends the node once its runs are dead", ST_WORKING, 0, {
        {EV_LOST, {1 * S, 10 * S, 0, 1}, false, ST_PAUSING, "disarm pause", NULL},
        {EV_STOP, {2 * S, 10 * S, 0, 1}, true, ST_PAUSING, "", NULL},
        {EV_JOBS_STOPPED, {3 * S, 0, 0, 0}, true, ST_STOPPED, "finish sign_off", NULL}}},
    {"SIGTERM to a follower with no run ends at once", ST_WAITING, 0, {
        {EV_STOP, {1 * S, 0, 0, 0}, true, ST_STOPPED, "finish sign_off", "not runs_left"}}},
};
/* clang-format on */

struct world {
    struct machine_probe p; /* first: the fake actions' ctx is the world too */
    struct facts f;
    struct guards g;
    struct machine m;
    int64_t renew_ns;
    char said[128]; /* the guards the moves of this step named, "g;not h;" */
};

static void world_observe(void *ctx, enum machine_state from, enum machine_state to,
                          enum machine_event trigger, enum machine_guard guard, bool held,
                          int64_t in_state_ms, bool quiet)
{
    struct world *w = ctx;
    machine_probe_observe(ctx, from, to, trigger, guard, held, in_state_ms, quiet);
    size_t n = strlen(w->said);
    if (guard != G_ALWAYS)
        snprintf(w->said + n, sizeof w->said - n, "%s%s;", held ? "" : "not ",
                 machine_guard_name(guard));
}

/* A renewal that takes w->renew_ns. */
static enum machine_event timed_renew(void *ctx)
{
    struct world *w = ctx;
    machine_fakes[ACT_RENEW](ctx);
    w->f.now += w->renew_ns;
    return EV_RENEWED;
}

/* The actions that ran, as "a b c". */
static const char *ran(const struct machine_probe *p, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->nall && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? " " : "",
                              machine_action_name(p->all[i]));
    return buf;
}

START_TEST(path_holds)
{
    const struct path *path = &paths[_i];
    struct world w = {.renew_ns = path->renew_ns};
    machine_action_fn acts[ACT_COUNT];
    memcpy(acts, machine_fakes, sizeof acts);
    acts[ACT_RENEW] = timed_renew;
    machine_probe_reset(&w.p);
    w.p.next[ACT_HANDOVER] = EV_RELEASED;
    w.p.next[ACT_PAUSE] = w.p.next[ACT_DRAIN] = w.p.next[ACT_HURRY] = EV_JOBS_STOPPED;
    w.p.next[ACT_FINISH] = EV_FINISHED;
    machine_init(&w.m, acts, guards_table, world_observe, &w.p);
    guards_on(&w.g, &w.f, &w.m);
    w.m.guard_ctx = &w.g;
    w.m.state = path->from;
    for (int i = 0; i < 4 && path->steps[i].ran != NULL; i++) {
        const struct step *st = &path->steps[i];
        char buf[256];
        w.f = st->f;
        w.g.stopping = st->stopping; /* as on_signal sets it */
        w.p.nall = 0;
        w.said[0] = '\0';
        machine_dispatch(&w.m, st->ev);
        ck_assert_msg(w.m.state == st->to, "%s, step %d: in %s, not %s", path->name, i + 1,
                      machine_state_name(w.m.state), machine_state_name(st->to));
        ck_assert_msg(strcmp(ran(&w.p, buf, sizeof buf), st->ran) == 0,
                      "%s, step %d: ran \"%s\", not \"%s\"", path->name, i + 1, buf, st->ran);
        if (st->guard != NULL) {
            char all[sizeof w.said + 1];
            snprintf(all, sizeof all, ";%s", w.said);
            snprintf(buf, sizeof buf, ";%s;", st->guard);
            ck_assert_msg(strstr(all, buf) != NULL, "%s, step %d: the log names \"%s\", not %s",
                          path->name, i + 1, w.said, st->guard);
        }
        ck_assert(machine_done(&w.m) == (st->to == MACHINE_FINAL));
    }
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
    tcase_add_loop_test(tc, path_holds, 0, (int)(sizeof paths / sizeof paths[0]));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
