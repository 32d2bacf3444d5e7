/* check_ticklife.c -- the table of a tick's life (ticklife.h) on its own:
 * the lives it allows from due to each end, the moves it refuses, and its
 * agreement with the claim step table (steps.h). check_runner drives the
 * runner through the lives of its scenarios; this suite reads the table.
 *
 * Each case is named after the rule it checks. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "steps.h"
#include "testutil.h"
#include "ticklife.h"

/* Every life from due to an end that visits no state twice, as states.
 * The table's loops (a claim again, a wait, a hold, a retry) are in
 * loop_moves[] below. */
static const char *const lives[] = {
    /* it ran */
    "due queued claiming claimed running recorded",
    "due queued claiming claimed running retrying recorded",
    /* claimed, its run never went (or its retry did not) */
    "due queued claiming not_started",
    "due queued claiming claimed not_started",
    "due queued claiming claimed running retrying not_started",
    /* not to run */
    "due skipped",
    "due queued skipped",
    "due queued claiming skipped",
    "due queued claiming claimed skipped",
    "due queued claiming claimed held skipped",
    "due superseded",
    "due queued superseded",
    "due queued claiming claimed superseded", /* its claim answered after it aged */
    "due queued claiming claimed held superseded",
    "due missed",
    "due queued missed",
    "due queued claiming claimed missed", /* the same */
    "due queued claiming claimed held missed",
    /* run on a member (dispatch.h): on the leader, and on the member */
    "due queued claiming claimed assigned recorded", /* lost while it ran */
    "due queued claiming claimed assigned not_started",
    "due queued claiming claimed assigned skipped",    /* all, forbid: its node still ran */
    "due queued claiming claimed assigned superseded", /* all, replace: a newer tick there */
    "due queued claiming claimed assigned accepted running recorded",
    "due queued claiming claimed assigned accepted running retrying recorded",
    "due queued claiming claimed assigned accepted running retrying not_started",
    "due queued claiming claimed assigned accepted not_started",
    "due queued claiming claimed assigned accepted left", /* paused: handed back */
    /* not this node's */
    "due queued claiming taken",
    "due queued left",
};
#define NLIVES (sizeof lives / sizeof lives[0])

/* The moves that come back to a state the tick was in. */
static const struct {
    enum tick_state from;
    enum tick_event ev;
} loop_moves[] = {
    {TICK_QUEUED, TICK_EV_CLAIM},       {TICK_CLAIMING, TICK_EV_CLAIM},
    {TICK_CLAIMING, TICK_EV_NO_ANSWER}, {TICK_CLAIMING, TICK_EV_FORGET},
    {TICK_CLAIMING, TICK_EV_BUSY},      {TICK_CLAIMING, TICK_EV_REFUSED},
    {TICK_CLAIMING, TICK_EV_FULL},
    {TICK_CLAIMED, TICK_EV_HOLD},       {TICK_HELD, TICK_EV_RESUME},
    {TICK_RUNNING, TICK_EV_RETRY},      {TICK_RETRYING, TICK_EV_START},
    {TICK_ASSIGNED, TICK_EV_REASSIGN},  {TICK_ASSIGNED, TICK_EV_RETRY},
};

/* True when to can be reached from from (in no move or more). */
static bool reaches(enum tick_state from, enum tick_state to)
{
    bool seen[TICK_STATE_COUNT] = {false};
    enum tick_state stack[TICK_STATE_COUNT];
    int n = 0;
    stack[n++] = from;
    seen[from] = true;
    while (n > 0) {
        enum tick_state s = stack[--n];
        if (s == to)
            return true;
        for (int e = 0; e < TICK_EVENT_COUNT; e++) {
            enum tick_state t = tick_next_state(s, (enum tick_event)e);
            if (t != TICK_REFUSED && !seen[t]) {
                seen[t] = true;
                stack[n++] = t;
            }
        }
    }
    return false;
}

/* ---- the lives ---- */

static char found[64][256];
static int nfound;

static void walk(enum tick_state s, bool *on_path, char *life, size_t len)
{
    if (tick_state_final(s)) {
        ck_assert_int_lt(nfound, 64);
        snprintf(found[nfound++], sizeof found[0], "%s", life);
        return;
    }
    for (int e = 0; e < TICK_EVENT_COUNT; e++) {
        enum tick_state t = tick_next_state(s, (enum tick_event)e);
        if (t == TICK_REFUSED || on_path[t])
            continue;
        on_path[t] = true;
        snprintf(life + len, 256 - len, " %s", tick_state_name(t));
        walk(t, on_path, life, strlen(life));
        life[len] = '\0';
        on_path[t] = false;
    }
}

START_TEST(the_lives_from_due_are_the_listed_ones)
{
    bool on_path[TICK_STATE_COUNT] = {false};
    char life[256] = "due";
    nfound = 0;
    on_path[TICK_DUE] = true;
    walk(TICK_DUE, on_path, life, strlen(life));
    for (int i = 0; i < nfound; i++) {
        bool listed = false;
        for (size_t j = 0; j < NLIVES; j++)
            listed |= strcmp(found[i], lives[j]) == 0;
        ck_assert_msg(listed, "the table allows a life not listed: %s", found[i]);
    }
    for (size_t j = 0; j < NLIVES; j++) {
        bool allowed = false;
        for (int i = 0; i < nfound; i++)
            allowed |= strcmp(found[i], lives[j]) == 0;
        ck_assert_msg(allowed, "the table does not allow: %s", lives[j]);
    }
    ck_assert_int_eq(nfound, (int)NLIVES); /* each once */
}
END_TEST

START_TEST(every_end_is_the_end_of_a_listed_life)
{
    for (int s = 0; s < TICK_STATE_COUNT; s++) {
        if (!tick_state_final((enum tick_state)s))
            continue;
        bool ends = false;
        for (size_t j = 0; j < NLIVES; j++) {
            const char *sp = strrchr(lives[j], ' ');
            ends |= strcmp(sp + 1, tick_state_name((enum tick_state)s)) == 0;
        }
        ck_assert_msg(ends, "no life ends %s", tick_state_name((enum tick_state)s));
    }
}
END_TEST

START_TEST(the_loops_are_the_listed_ones)
{
    size_t nloops = sizeof loop_moves / sizeof loop_moves[0];
    for (int s = 0; s < TICK_STATE_COUNT; s++)
        for (int e = 0; e < TICK_EVENT_COUNT; e++) {
            enum tick_state t = tick_next_state((enum tick_state)s, (enum tick_event)e);
            bool loop = t != TICK_REFUSED && reaches(t, (enum tick_state)s), listed = false;
            for (size_t i = 0; i < nloops; i++)
                listed |= loop_moves[i].from == (enum tick_state)s &&
                          loop_moves[i].ev == (enum tick_event)e;
            ck_assert_msg(loop == listed, "%s by %s: %s", tick_state_name((enum tick_state)s),
                          tick_event_name((enum tick_event)e),
                          loop ? "comes back, unlisted" : "listed as a loop, is none");
        }
}
END_TEST

/* ---- the shape of the table ---- */

START_TEST(every_state_is_reached_from_due)
{
    for (int s = 0; s < TICK_STATE_COUNT; s++)
        ck_assert_msg(reaches(TICK_DUE, (enum tick_state)s), "%s is never reached",
                      tick_state_name((enum tick_state)s));
}
END_TEST

START_TEST(a_state_has_a_way_out_unless_it_is_an_end)
{
    for (int s = 0; s < TICK_STATE_COUNT; s++) {
        int out = 0;
        for (int e = 0; e < TICK_EVENT_COUNT; e++)
            out += tick_next_state((enum tick_state)s, (enum tick_event)e) != TICK_REFUSED;
        if (tick_state_final((enum tick_state)s))
            ck_assert_msg(out == 0, "the end %s has %d moves", tick_state_name((enum tick_state)s),
                          out);
        else
            ck_assert_msg(out > 0, "%s has no way out", tick_state_name((enum tick_state)s));
    }
}
END_TEST

START_TEST(every_state_can_still_end)
{
    for (int s = 0; s < TICK_STATE_COUNT; s++) {
        bool ends = false;
        for (int f = 0; f < TICK_STATE_COUNT; f++)
            ends |= tick_state_final((enum tick_state)f) &&
                    reaches((enum tick_state)s, (enum tick_state)f);
        ck_assert_msg(ends, "a tick %s can never end", tick_state_name((enum tick_state)s));
    }
}
END_TEST

START_TEST(every_event_moves_some_tick)
{
    for (int e = 0; e < TICK_EVENT_COUNT; e++) {
        bool used = false;
        for (int s = 0; s < TICK_STATE_COUNT; s++)
            used |= tick_next_state((enum tick_state)s, (enum tick_event)e) != TICK_REFUSED;
        ck_assert_msg(used, "no tick moves by %s", tick_event_name((enum tick_event)e));
    }
}
END_TEST

/* ---- the moves refused ---- */

static const struct {
    enum tick_state from;
    enum tick_event ev;
    const char *rule;
} refused[] = {
    {TICK_DUE, TICK_EV_CLAIM, "a tick is claimed from its queue, in order"},
    {TICK_QUEUED, TICK_EV_START, "an unclaimed tick never runs"},
    {TICK_QUEUED, TICK_EV_WON, "an answer comes to a claim only"},
    {TICK_CLAIMING, TICK_EV_START, "a claim is answered before its run starts"},
    {TICK_CLAIMING, TICK_EV_DROP, "a tick whose claim may be ours is settled, not recorded missed"},
    {TICK_CLAIMING, TICK_EV_SUPERSEDE, "the same, superseded"},
    {TICK_CLAIMING, TICK_EV_SKIP, "the same, skipped (paused)"},
    {TICK_CLAIMING, TICK_EV_HOLD, "a pause holds a tick whose claim is answered ours"},
    {TICK_CLAIMED, TICK_EV_FORGET, "a claimed tick is recorded, never let go"},
    {TICK_CLAIMED, TICK_EV_CLAIM, "a tick is claimed once"},
    {TICK_RUNNING, TICK_EV_FORGET, "a run ends recorded, whoever leads"},
    {TICK_RUNNING, TICK_EV_START, "a run starts once per attempt"},
    {TICK_RUNNING, TICK_EV_SKIP, "a tick that ran is not skipped"},
    {TICK_HELD, TICK_EV_FORGET, "a held tick is recorded skipped when let go"},
    {TICK_HELD, TICK_EV_START, "a held tick starts once its pause ends"},
    {TICK_RETRYING, TICK_EV_END, "a retry ends after its run"},
};

START_TEST(the_moves_that_break_a_rule_are_refused)
{
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        ck_assert_msg(tick_next_state(refused[i].from, refused[i].ev) == TICK_REFUSED,
                      "%s by %s is allowed: %s", tick_state_name(refused[i].from),
                      tick_event_name(refused[i].ev), refused[i].rule);
}
END_TEST

START_TEST(an_end_refuses_every_event)
{
    for (int s = 0; s < TICK_STATE_COUNT; s++)
        for (int e = 0; tick_state_final((enum tick_state)s) && e < TICK_EVENT_COUNT; e++)
            ck_assert(tick_next_state((enum tick_state)s, (enum tick_event)e) == TICK_REFUSED);
    ck_assert(tick_state_final(TICK_RECORDED) && tick_state_final(TICK_LEFT));
    ck_assert(!tick_state_final(TICK_HELD) && !tick_state_final(TICK_REFUSED));
}
END_TEST

START_TEST(out_of_range_is_refused_and_named_so)
{
    ck_assert(tick_next_state(TICK_REFUSED, TICK_EV_QUEUE) == TICK_REFUSED);
    int below = -1;
    ck_assert(tick_next_state((enum tick_state)below, TICK_EV_QUEUE) == TICK_REFUSED);
    ck_assert(tick_next_state(TICK_DUE, TICK_EVENT_COUNT) == TICK_REFUSED);
    ck_assert_str_eq(tick_state_name(TICK_REFUSED), "refused");
    ck_assert_str_eq(tick_state_name((enum tick_state)99), "?");
    ck_assert_str_eq(tick_event_name(TICK_EVENT_COUNT), "?");
}
END_TEST

START_TEST(every_state_and_event_has_its_own_name)
{
    for (int a = 0; a < TICK_STATE_COUNT; a++) {
        ck_assert(tick_state_name((enum tick_state)a)[0] != '\0');
        for (int b = a + 1; b < TICK_STATE_COUNT; b++)
            ck_assert_str_ne(tick_state_name((enum tick_state)a),
                             tick_state_name((enum tick_state)b));
    }
    for (int a = 0; a < TICK_EVENT_COUNT; a++) {
        ck_assert(tick_event_name((enum tick_event)a)[0] != '\0');
        ck_assert(tick_event_doc((enum tick_event)a)[0] != '\0');
        for (int b = a + 1; b < TICK_EVENT_COUNT; b++)
            ck_assert_str_ne(tick_event_name((enum tick_event)a),
                             tick_event_name((enum tick_event)b));
    }
}
END_TEST

/* ---- with the claim step table ---- */

/* A tick's claim answered res: its move leaves it where the step says. */
START_TEST(each_claim_answer_moves_the_tick_where_its_step_goes)
{
    static const enum claim_result results[] = {
#define RESULT_(r, tick, req, done, why_tick, why_req, move) r,
        CLAIM_STEPS(RESULT_)
#undef RESULT_
    };
    for (size_t i = 0; i < sizeof results / sizeof results[0]; i++) {
        struct claim_next n = claim_step_of(results[i], false);
        enum tick_state to = tick_next_state(TICK_CLAIMING, n.tick);
        enum tick_state want = n.step == STEP_START         ? TICK_CLAIMED
                               : n.step == STEP_SKIPPED     ? TICK_SKIPPED
                               : n.step == STEP_NOT_STARTED ? TICK_NOT_STARTED
                               : n.step == STEP_DROP        ? TICK_TAKEN
                               : n.step == STEP_WAIT        ? TICK_QUEUED
                                                            : to;
        ck_assert_msg(to != TICK_REFUSED && to == want, "result %d: step %s, the tick %s", (int)i,
                      claim_step_name(n.step), tick_state_name(to));
        /* out of its queue exactly when the claim is decided */
        ck_assert_int_eq(n.done, to != TICK_QUEUED && to != TICK_CLAIMING);
    }
    /* a retry: lost (it may be ours: still claiming), or refused (queued) */
    ck_assert(tick_next_state(TICK_CLAIMING, claim_step_of(CLAIM_ERROR, false).tick) ==
              TICK_CLAIMING);
    ck_assert(tick_next_state(TICK_CLAIMING, claim_step_of(CLAIM_NOT_LEADER, false).tick) ==
              TICK_QUEUED);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ticklife");
    TCase *tc = tcase_create("ticklife");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, the_lives_from_due_are_the_listed_ones);
    tcase_add_test(tc, every_end_is_the_end_of_a_listed_life);
    tcase_add_test(tc, the_loops_are_the_listed_ones);
    tcase_add_test(tc, every_state_is_reached_from_due);
    tcase_add_test(tc, a_state_has_a_way_out_unless_it_is_an_end);
    tcase_add_test(tc, every_state_can_still_end);
    tcase_add_test(tc, every_event_moves_some_tick);
    tcase_add_test(tc, the_moves_that_break_a_rule_are_refused);
    tcase_add_test(tc, an_end_refuses_every_event);
    tcase_add_test(tc, out_of_range_is_refused_and_named_so);
    tcase_add_test(tc, every_state_and_event_has_its_own_name);
    tcase_add_test(tc, each_claim_answer_moves_the_tick_where_its_step_goes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
