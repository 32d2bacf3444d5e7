/* check_machine.c -- the state machine: every cell of MACHINE_TABLE is
 * exercised by the dispatcher, and the table's shape is checked (reachable
 * states, ways back, no loops without an external event). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"
#include "testutil.h"

/* Fake actions: record which ran; return what the test says. */
struct probe {
    enum machine_action ran[8];
    int nran;
    enum machine_event next[ACT_COUNT]; /* what each action returns */
    int transitions;
    enum machine_state from, to;
    bool quiet;
};

static struct probe *current;

#define FAKE(id, name)                                                                             \
    static enum machine_event fake_##name(void *ctx)                                               \
    {                                                                                              \
        struct probe *p = ctx;                                                                     \
        if (p->nran < 8)                                                                           \
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

static void observe(void *ctx, enum machine_state from, enum machine_state to,
                    enum machine_event trigger, int64_t in_state_ms, bool quiet)
{
    struct probe *p = ctx;
    (void)trigger;
    ck_assert_int_ge(in_state_ms, 0);
    p->transitions++;
    p->from = from;
    p->to = to;
    p->quiet = quiet;
}

static void reset(struct probe *p)
{
    memset(p, 0, sizeof *p);
    for (int a = 0; a < ACT_COUNT; a++)
        p->next[a] = EV_NONE;
    current = p;
}

/* Every (state, event) pair: the dispatcher goes where the cell says, runs
 * exactly the cell's action, and reports the change (or stays silent). */
START_TEST(every_cell)
{
    int decided = 0, ignored = 0;
    for (int s = 0; s < ST_COUNT; s++)
        for (int e = 0; e < EV_COUNT; e++) {
            struct probe p;
            struct machine m;
            reset(&p);
            machine_init(&m, fakes, observe, &p);
            m.state = (enum machine_state)s; /* the test places it; only the dispatcher moves it */
            const struct machine_cell *c = machine_cell((enum machine_state)s, (enum machine_event)e);
            ck_assert_ptr_nonnull(c);
            int n = machine_dispatch(&m, (enum machine_event)e);
            if (c->ignored) {
                ignored++;
                ck_assert_int_eq(n, 0);
                ck_assert_int_eq(m.state, s);
                ck_assert_int_eq(p.nran, 0);
                ck_assert_int_eq(p.transitions, 0);
                continue;
            }
            decided++;
            ck_assert_int_eq(n, 1);
            ck_assert_int_eq(m.state, c->next);
            if (c->action == ACT_NONE) {
                ck_assert_int_eq(p.nran, 0);
            } else {
                ck_assert_int_eq(p.nran, 1);
                ck_assert_int_eq(p.ran[0], c->action);
            }
            ck_assert_int_eq(p.transitions, (int)s != (int)c->next || !c->quiet ? 1 : 0);
            if (p.transitions == 1) {
                ck_assert_int_eq(p.from, s);
                ck_assert_int_eq(p.to, c->next);
                ck_assert(p.quiet == c->quiet);
            }
        }
    ck_assert_int_eq(decided + ignored, ST_COUNT * EV_COUNT);
    ck_assert_int_ge(decided, 25);
}
END_TEST

/* Exactly the seven states of PRODUCT.md, with their names. */
START_TEST(states_and_names)
{
    static const char *const want[] = {"idle",    "acquiring", "working", "renewing",
                                       "pausing", "releasing", "waiting"};
    ck_assert_int_eq(ST_COUNT, 7);
    for (int s = 0; s < ST_COUNT; s++)
        ck_assert_str_eq(machine_state_name((enum machine_state)s), want[s]);
    for (int e = 0; e < EV_COUNT; e++)
        ck_assert_str_ne(machine_event_name((enum machine_event)e), "none");
    ck_assert_str_eq(machine_event_name(EV_NONE), "none");
    ck_assert_str_eq(machine_action_name(ACT_NONE), "none");
    ck_assert_ptr_null(machine_cell(ST_COUNT, EV_START));
    ck_assert_ptr_null(machine_cell(ST_IDLE, EV_COUNT));
}
END_TEST

/* Every state is reachable from idle, and idle is reachable from every
 * state (the machine can always end). */
START_TEST(reachability)
{
    bool from_idle[ST_COUNT] = {[ST_IDLE] = true};
    for (int round = 0; round < ST_COUNT; round++)
        for (int s = 0; s < ST_COUNT; s++)
            for (int e = 0; e < EV_COUNT && from_idle[s]; e++) {
                const struct machine_cell *c = machine_cell((enum machine_state)s, (enum machine_event)e);
                if (!c->ignored)
                    from_idle[c->next] = true;
            }
    bool to_idle[ST_COUNT] = {[ST_IDLE] = true};
    for (int round = 0; round < ST_COUNT; round++)
        for (int s = 0; s < ST_COUNT; s++)
            for (int e = 0; e < EV_COUNT; e++) {
                const struct machine_cell *c = machine_cell((enum machine_state)s, (enum machine_event)e);
                if (!c->ignored && to_idle[c->next])
                    to_idle[s] = true;
            }
    for (int s = 0; s < ST_COUNT; s++) {
        ck_assert_msg(from_idle[s], "%s unreachable", machine_state_name((enum machine_state)s));
        ck_assert_msg(to_idle[s], "no way from %s to idle", machine_state_name((enum machine_state)s));
    }
}
END_TEST

/* The paths of the product, driven by what the actions return. */
START_TEST(paths)
{
    struct probe p;
    struct machine m;

    /* Win the election. */
    reset(&p);
    p.next[ACT_CAMPAIGN] = EV_ACQUIRED;
    machine_init(&m, fakes, observe, &p);
    ck_assert_int_eq(machine_dispatch(&m, EV_START), 2);
    ck_assert_int_eq(m.state, ST_WORKING);
    ck_assert_int_eq(p.ran[0], ACT_CAMPAIGN);
    ck_assert_int_eq(p.ran[1], ACT_LEAD);

    /* A renewal round trip returns to working. */
    reset(&p);
    p.next[ACT_RENEW] = EV_RENEWED;
    m.ctx = &p;
    ck_assert_int_eq(machine_dispatch(&m, EV_RENEW_DUE), 2);
    ck_assert_int_eq(m.state, ST_WORKING);

    /* A lost lease pauses, and with no job running, waits. */
    reset(&p);
    p.next[ACT_PAUSE] = EV_JOBS_STOPPED;
    m.ctx = &p;
    ck_assert_int_eq(machine_dispatch(&m, EV_LOST), 2);
    ck_assert_int_eq(m.state, ST_WAITING);

    /* A follower woken: campaigns, finds the lease taken, waits again. */
    reset(&p);
    p.next[ACT_CAMPAIGN] = EV_TAKEN;
    m.ctx = &p;
    ck_assert_int_eq(machine_dispatch(&m, EV_WAKE), 2);
    ck_assert_int_eq(m.state, ST_WAITING);

    /* Leader stopped: drain (no jobs), resign, finish. */
    reset(&p);
    m.state = ST_WORKING;
    p.next[ACT_DRAIN] = EV_JOBS_STOPPED;
    p.next[ACT_RESIGN] = EV_RELEASED;
    m.ctx = &p;
    ck_assert_int_eq(machine_dispatch(&m, EV_STOP), 3); /* drain, resign, finish */
    ck_assert_int_eq(m.state, ST_IDLE);
    ck_assert_int_eq(p.ran[1], ACT_RESIGN);
    ck_assert_int_eq(p.ran[2], ACT_FINISH);

    /* A deadline beats everything in working, renewing and releasing. */
    enum machine_state leaderish[] = {ST_WORKING, ST_RENEWING, ST_RELEASING};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(machine_cell(leaderish[i], EV_DEADLINE)->next, ST_PAUSING);
        ck_assert_int_eq(machine_cell(leaderish[i], EV_LOST)->next, ST_PAUSING);
    }
    /* No state but working acts on a job tick: only acquired leads. */
    for (int s = 0; s < ST_COUNT; s++)
        for (int e = 0; e < EV_COUNT; e++) {
            const struct machine_cell *c = machine_cell((enum machine_state)s, (enum machine_event)e);
            if (!c->ignored && c->action == ACT_LEAD)
                ck_assert(s == ST_ACQUIRING && e == EV_ACQUIRED);
        }
}
END_TEST

/* An action chain that never ends is cut and reported. */
START_TEST(runaway_chain)
{
    struct probe p;
    struct machine m;
    reset(&p);
    p.next[ACT_RENEW] = EV_RENEW_DUE; /* renewing -> renewing forever */
    machine_init(&m, fakes, observe, &p);
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
    tcase_add_test(tc, states_and_names);
    tcase_add_test(tc, reachability);
    tcase_add_test(tc, paths);
    tcase_add_test(tc, runaway_chain);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
