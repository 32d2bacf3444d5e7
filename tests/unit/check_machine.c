/* check_machine.c -- the state machine: every cell of MACHINE_TABLE is
 * exercised by the dispatcher, and the table's shape is checked (reachable
 * states, ways back, the final state, no loops without an external event).
 * What each cell should say, rule by rule, is check_daemon.c's. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"
#include "machine_fakes.h"
#include "testutil.h"

/* machine_fakes.h's observer; every change of state is also checked as it
 * is reported: the guard's word is the fake's. */
static void observe(void *ctx, enum machine_state from, enum machine_state to,
                    enum machine_event trigger, enum machine_guard guard, bool held,
                    int64_t in_state_ms, bool quiet)
{
    struct machine_probe *p = ctx;
    if (guard != G_ALWAYS)
        ck_assert(held == p->guard[guard]);
    ck_assert_int_ge(in_state_ms, 0);
    machine_probe_observe(ctx, from, to, trigger, guard, held, in_state_ms, quiet);
}

/* The branch a cell should take when the guards say truth (by hand, not
 * through machine_branch). */
static const struct machine_branch *expected(const struct machine_cell *c, const bool *truth)
{
    if (c->guard == G_ALWAYS || truth[c->guard])
        return &c->then;
    if (c->elif_guard != G_ALWAYS && truth[c->elif_guard])
        return &c->elif;
    return &c->otherwise;
}

/* Every (state, event) pair, and each branch of a guarded pair (under
 * every combination of the guards): the dispatcher goes where the branch
 * says, runs exactly its action (and the exit action of a parent it
 * leaves), and reports the change (or stays silent). */
START_TEST(every_cell)
{
    int decided = 0, ignored = 0, guarded = 0;
    for (int s = 0; s < ST_COUNT; s++)
        for (int e = 0; e < EV_COUNT; e++)
            for (unsigned combo = 0; combo < 1u << G_COUNT; combo++) {
                struct machine_probe p;
                struct machine m;
                const struct machine_cell *c =
                    machine_cell((enum machine_state)s, (enum machine_event)e);
                ck_assert_ptr_nonnull(c);
                if ((combo & 1u) != 0 || (c->guard == G_ALWAYS && combo != 0))
                    continue; /* G_ALWAYS is no fact; one branch only without a guard */
                machine_probe_reset(&p);
                for (int g = 1; g < G_COUNT; g++)
                    p.guard[g] = (combo >> g & 1u) != 0;
                machine_init(&m, machine_fakes, machine_fake_guards, observe, &p);
                m.state = (enum machine_state)s; /* the test places it; only the dispatcher moves it */
                const struct machine_branch *b = expected(c, p.guard);
                ck_assert_ptr_eq(machine_branch(&m, c), b);
                int n = machine_dispatch(&m, (enum machine_event)e);
                if (b->ignored) {
                    ck_assert_int_eq(c->guard, G_ALWAYS); /* a guard picks between two moves */
                    ignored++;
                    ck_assert_int_eq(n, 0);
                    ck_assert_int_eq(m.state, s);
                    ck_assert_int_eq(p.nran, 0);
                    ck_assert_int_eq(p.nexits, 0);
                    ck_assert_int_eq(p.transitions, 0);
                    continue;
                }
                decided++;
                guarded += c->guard != G_ALWAYS;
                ck_assert_int_eq(n, 1);
                ck_assert_int_eq(m.state, b->next);
                if (b->action == ACT_NONE) {
                    ck_assert_int_eq(p.nran, 0);
                } else {
                    ck_assert_int_eq(p.nran, 1);
                    ck_assert_int_eq(p.ran[0], b->action);
                }
                enum machine_action x = machine_exit_action((enum machine_state)s, b->next);
                ck_assert_int_eq(p.nexits, x != ACT_NONE ? 1 : 0);
                if (x != ACT_NONE)
                    ck_assert_int_eq(p.exits[0], x);
                ck_assert_int_eq(p.transitions, (int)s != (int)b->next || !b->quiet ? 1 : 0);
                if (p.transitions == 1) {
                    ck_assert_int_eq(p.from, s);
                    ck_assert_int_eq(p.to, b->next);
                    ck_assert(p.quiet == b->quiet);
                }
            }
    ck_assert_int_ge(decided, 30);
    ck_assert_int_ge(guarded, 6);
    ck_assert_int_ge(ignored, 60);
}
END_TEST

/* Each guard decides somewhere, and no guarded cell ignores its event on
 * either branch. */
START_TEST(guards_used)
{
    bool used[G_COUNT] = {false};
    for (int s = 0; s < ST_COUNT; s++)
        for (int e = 0; e < EV_COUNT; e++) {
            const struct machine_cell *c = machine_cell((enum machine_state)s, (enum machine_event)e);
            used[c->guard] = true;
            used[c->elif_guard] = true;
            if (c->guard != G_ALWAYS)
                ck_assert(!c->then.ignored && !c->otherwise.ignored);
            if (c->elif_guard != G_ALWAYS)
                ck_assert(c->guard != G_ALWAYS && !c->elif.ignored);
        }
    for (int g = 1; g < G_COUNT; g++)
        ck_assert_msg(used[g], "guard %s decides nothing", machine_guard_name((enum machine_guard)g));
    ck_assert_str_eq(machine_guard_name(G_ALWAYS), "always");
    ck_assert_str_eq(machine_guard_name(G_IN_TIME), "in_time");
}
END_TEST

/* Exactly the seven states of PRODUCT.md, with their names, then the
 * final one; working and renewing are leading. */
START_TEST(states_and_names)
{
    static const char *const want[] = {"idle",    "acquiring", "working", "renewing",
                                       "pausing", "releasing", "waiting", "stopped"};
    ck_assert_int_eq(ST_COUNT, 7 + 1);
    ck_assert_int_eq(MACHINE_FINAL, ST_COUNT - 1);
    for (int s = 0; s < ST_COUNT; s++) {
        ck_assert_str_eq(machine_state_name((enum machine_state)s), want[s]);
        ck_assert_int_eq(machine_state_parent((enum machine_state)s),
                         s == ST_WORKING || s == ST_RENEWING ? P_LEADING : P_NONE);
    }
    ck_assert_str_eq(machine_parent_name(P_LEADING), "leading");
    ck_assert_int_eq(machine_parent_exit(P_LEADING), ACT_DISARM);
    ck_assert_int_eq(machine_parent_exit(P_NONE), ACT_NONE);
    for (int e = 0; e < EV_COUNT; e++)
        ck_assert_str_ne(machine_event_name((enum machine_event)e), "none");
    ck_assert_str_eq(machine_event_name(EV_NONE), "none");
    ck_assert_str_eq(machine_action_name(ACT_NONE), "none");
    ck_assert_ptr_null(machine_cell(ST_COUNT, EV_START));
    ck_assert_ptr_null(machine_cell(ST_IDLE, EV_COUNT));
}
END_TEST

/* Every state is reachable from idle, idle is reachable from every state
 * but the final one, and the final one from every state (the machine can
 * always end); no move leaves the final state. */
START_TEST(reachability)
{
    bool from_idle[ST_COUNT] = {[ST_IDLE] = true};
    for (int round = 0; round < ST_COUNT; round++)
        for (int s = 0; s < ST_COUNT; s++)
            for (int e = 0; e < EV_COUNT && from_idle[s]; e++) {
                const struct machine_cell *c = machine_cell((enum machine_state)s, (enum machine_event)e);
                if (!c->then.ignored)
                    from_idle[c->then.next] = true;
                if (c->elif_guard != G_ALWAYS)
                    from_idle[c->elif.next] = true;
                if (c->guard != G_ALWAYS)
                    from_idle[c->otherwise.next] = true;
            }
    bool to_idle[ST_COUNT] = {[ST_IDLE] = true};
    for (int round = 0; round < ST_COUNT; round++)
        for (int s = 0; s < ST_COUNT; s++)
            for (int e = 0; e < EV_COUNT; e++) {
                const struct machine_cell *c = machine_cell((enum machine_state)s, (enum machine_event)e);
                if ((!c->then.ignored && to_idle[c->then.next]) ||
                    (c->elif_guard != G_ALWAYS && to_idle[c->elif.next]) ||
                    (c->guard != G_ALWAYS && to_idle[c->otherwise.next]))
                    to_idle[s] = true;
            }
    bool to_final[ST_COUNT] = {[MACHINE_FINAL] = true};
    for (int round = 0; round < ST_COUNT; round++)
        for (int s = 0; s < ST_COUNT; s++)
            for (int e = 0; e < EV_COUNT; e++) {
                const struct machine_cell *c =
                    machine_cell((enum machine_state)s, (enum machine_event)e);
                if ((!c->then.ignored && to_final[c->then.next]) ||
                    (c->elif_guard != G_ALWAYS && to_final[c->elif.next]) ||
                    (c->guard != G_ALWAYS && to_final[c->otherwise.next]))
                    to_final[s] = true;
            }
    for (int s = 0; s < ST_COUNT; s++) {
        ck_assert_msg(from_idle[s], "%s unreachable", machine_state_name((enum machine_state)s));
        ck_assert_msg(to_idle[s] || s == MACHINE_FINAL, "no way from %s to idle",
                      machine_state_name((enum machine_state)s));
        ck_assert_msg(to_final[s], "no way from %s to the end",
                      machine_state_name((enum machine_state)s));
    }
    for (int e = 0; e < EV_COUNT; e++) {
        const struct machine_cell *c = machine_cell(MACHINE_FINAL, (enum machine_event)e);
        ck_assert(c->then.ignored || (c->guard == G_ALWAYS && c->then.next == MACHINE_FINAL));
    }
}
END_TEST

/* The paths of the product, driven by what the actions return and what
 * the guards say. */
START_TEST(paths)
{
    struct machine_probe p;
    struct machine m;

    /* Win the election. */
    machine_probe_reset(&p);
    p.next[ACT_CAMPAIGN] = EV_ACQUIRED;
    machine_init(&m, machine_fakes, machine_fake_guards, observe, &p);
    ck_assert_int_eq(machine_dispatch(&m, EV_START), 2);
    ck_assert_int_eq(m.state, ST_WORKING);
    ck_assert_int_eq(p.ran[0], ACT_CAMPAIGN);
    ck_assert_int_eq(p.ran[1], ACT_LEAD);

    /* A renewal confirmed in time returns to working. */
    machine_probe_reset(&p);
    p.next[ACT_RENEW] = EV_RENEWED;
    p.guard[G_MAY_BLOCK] = true;
    p.guard[G_IN_TIME] = true;
    m.ctx = &p;
    ck_assert_int_eq(machine_dispatch(&m, EV_RENEW_DUE), 2);
    ck_assert_int_eq(m.state, ST_WORKING);

    /* Confirmed, but after the stop point (a stall): pause. */
    machine_probe_reset(&p);
    p.guard[G_MAY_BLOCK] = true;
    p.next[ACT_RENEW] = EV_RENEWED;
    p.next[ACT_PAUSE] = EV_JOBS_STOPPED;
    m.ctx = &p;
    ck_assert_int_eq(machine_dispatch(&m, EV_RENEW_DUE), 3); /* renew, pause, follow */
    ck_assert_int_eq(m.state, ST_WAITING);
    ck_assert_int_eq(p.ran[1], ACT_PAUSE);
    ck_assert_int_eq(p.ran[2], ACT_FOLLOW);

    /* A follower woken: campaigns, finds the lease taken, waits again. */
    machine_probe_reset(&p);
    p.next[ACT_CAMPAIGN] = EV_TAKEN;
    m.ctx = &p;
    ck_assert_int_eq(machine_dispatch(&m, EV_WAKE), 2);
    ck_assert_int_eq(m.state, ST_WAITING);

    /* Leader stopped: hand over at once, then drain the runs, then finish. */
    machine_probe_reset(&p);
    m.state = ST_WORKING;
    p.guard[G_STOPPING] = true;
    p.next[ACT_HANDOVER] = EV_RELEASED;
    m.ctx = &p;
    ck_assert_int_eq(machine_dispatch(&m, EV_STOP), 2); /* handover, drain */
    ck_assert_int_eq(m.state, ST_RELEASING);
    ck_assert_int_eq(p.ran[0], ACT_HANDOVER);
    ck_assert_int_eq(p.ran[1], ACT_DRAIN);
    ck_assert_int_eq(machine_dispatch(&m, EV_JOBS_STOPPED), 1);
    ck_assert_int_eq(m.state, ST_IDLE);
    ck_assert_int_eq(p.ran[2], ACT_FINISH);

    /* Step-down: hand over, then campaign again after a pause; the runs
     * of the old term finish meanwhile. */
    machine_probe_reset(&p);
    m.state = ST_WORKING;
    p.next[ACT_HANDOVER] = EV_RELEASED;
    m.ctx = &p;
    ck_assert_int_eq(machine_dispatch(&m, EV_STEP_DOWN), 2);
    ck_assert_int_eq(m.state, ST_IDLE);
    ck_assert_int_eq(p.ran[1], ACT_RESTART);
    /* SIGTERM while those runs are still alive: drain them first. */
    p.guard[G_RUNS_LEFT] = true;
    ck_assert_int_eq(machine_dispatch(&m, EV_STOP), 1);
    ck_assert_int_eq(m.state, ST_RELEASING);
    ck_assert_int_eq(p.ran[2], ACT_DRAIN);

    /* SIGTERM while pausing: the pause completes, then the node ends. */
    machine_probe_reset(&p);
    m.state = ST_PAUSING;
    m.ctx = &p;
    ck_assert_int_eq(machine_dispatch(&m, EV_STOP), 0);
    p.guard[G_STOPPING] = true;
    ck_assert_int_eq(machine_dispatch(&m, EV_JOBS_STOPPED), 1);
    ck_assert_int_eq(m.state, ST_IDLE);
    ck_assert_int_eq(p.ran[0], ACT_FINISH);

    /* A deadline or a loss beats everything while leading. */
    enum machine_state leaderish[] = {ST_WORKING, ST_RENEWING};
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(machine_cell(leaderish[i], EV_DEADLINE)->then.next, ST_PAUSING);
        ck_assert_int_eq(machine_cell(leaderish[i], EV_LOST)->then.next, ST_PAUSING);
    }
    /* Only a won campaign leads: no other cell runs lead. */
    for (int s = 0; s < ST_COUNT; s++)
        for (int e = 0; e < EV_COUNT; e++) {
            const struct machine_cell *c = machine_cell((enum machine_state)s, (enum machine_event)e);
            if ((!c->then.ignored && c->then.action == ACT_LEAD) ||
                (c->elif_guard != G_ALWAYS && c->elif.action == ACT_LEAD) ||
                (c->guard != G_ALWAYS && c->otherwise.action == ACT_LEAD))
                ck_assert(s == ST_ACQUIRING && e == EV_ACQUIRED);
            /* An exit action is no move's own action. */
            ck_assert(c->then.ignored || !machine_is_exit_action(c->then.action));
            ck_assert(c->elif_guard == G_ALWAYS || !machine_is_exit_action(c->elif.action));
            ck_assert(c->guard == G_ALWAYS || !machine_is_exit_action(c->otherwise.action));
        }
}
END_TEST

/* An action chain that never ends is cut and reported. */
START_TEST(runaway_chain)
{
    struct machine_probe p;
    struct machine m;
    machine_probe_reset(&p);
    p.guard[G_MAY_BLOCK] = true;
    p.next[ACT_RENEW] = EV_RENEW_DUE; /* renewing -> renewing forever */
    machine_init(&m, machine_fakes, machine_fake_guards, observe, &p);
    m.state = ST_WORKING;
    ck_assert_int_eq(machine_dispatch(&m, EV_RENEW_DUE), -1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("machine");
    TCase *tc = tcase_create("table");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, every_cell);
    tcase_add_test(tc, guards_used);
    tcase_add_test(tc, states_and_names);
    tcase_add_test(tc, reachability);
    tcase_add_test(tc, paths);
    tcase_add_test(tc, runaway_chain);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
