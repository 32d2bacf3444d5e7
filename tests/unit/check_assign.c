/* check_assign.c -- the choice of the member a tick is offered to
 * (assign_choose, assign.h), a pure function of the members' heartbeats
 * and their load in Redis; and an assignment's value, parsed and written
 * back. No Redis. */
#include <check.h>
#include <stdbool.h>
#include <string.h>

#include "assign.h"
#include "testutil.h"

static const char *const none[] = {NULL};
static const char *const reports[] = {"reports"};
static const char *const reports_ssd[] = {"reports", "ssd"};

#define NODE(name, labels, nl, cap, used, alive)                                                   \
    {                                                                                              \
        name, labels, nl, cap, used, alive, 0                                                      \
    }

/* Room gates the choice: a full member, a dead one, one that takes
 * nothing are never chosen; every one full is said apart from none. */
START_TEST(room_first)
{
    struct assign_node v[] = {
        NODE("a", none, 0, 4, 2, true),
        NODE("b", none, 0, 8, 2, true),
        NODE("c", none, 0, 1, 0, true),
    };
    ck_assert_int_eq(assign_choose(v, 3, NULL, 0, NULL, 1), 1); /* the largest share first */
    v[1].in_use = 8;                                            /* full */
    ck_assert_int_eq(assign_choose(v, 3, NULL, 0, NULL, 1), 0);
    v[0].alive = false;
    ck_assert_int_eq(assign_choose(v, 3, NULL, 0, NULL, 1), 2);
    v[2].in_use = 1;
    ck_assert_int_eq(assign_choose(v, 3, NULL, 0, NULL, 1), ASSIGN_NO_ROOM);
    v[1].alive = v[2].alive = false;
    ck_assert_int_eq(assign_choose(v, 3, NULL, 0, NULL, 1), ASSIGN_NO_MEMBER);
}
END_TEST

START_TEST(capacity_zero_takes_nothing)
{
    struct assign_node v[] = {NODE("a", none, 0, 0, 0, true)};
    ck_assert_int_eq(assign_choose(v, 1, NULL, 0, NULL, 7), ASSIGN_NO_MEMBER);
}
END_TEST

START_TEST(labels_all_required)
{
    const char *const r[] = {"reports"};
    const char *const rs[] = {"ssd", "reports"};
    struct assign_node v[] = {
        NODE("a", none, 0, 4, 0, true),
        NODE("b", r, 1, 4, 4, true),
        NODE("c", rs, 2, 4, 2, true),
    };
    ck_assert_int_eq(assign_choose(v, 3, reports, 1, NULL, 1), 2);
    ck_assert_int_eq(assign_choose(v, 3, reports_ssd, 2, NULL, 1), 2);
    v[2].alive = false;
    ck_assert_int_eq(assign_choose(v, 3, reports, 1, NULL, 1), ASSIGN_NO_ROOM); /* b is full */
    ck_assert_int_eq(assign_choose(v, 3, reports_ssd, 2, NULL, 1), ASSIGN_NO_MEMBER);
    ck_assert(assign_has_labels(&v[0], NULL, 0));
    ck_assert(!assign_has_labels(&v[0], reports, 1));
}
END_TEST

START_TEST(avoid_unless_alone)
{
    struct assign_node v[] = {NODE("a", none, 0, 4, 0, true), NODE("b", none, 0, 4, 3, true)};
    ck_assert_int_eq(assign_choose(v, 2, NULL, 0, "a", 1), 1);
    v[1].alive = false;
    ck_assert_int_eq(assign_choose(v, 2, NULL, 0, "a", 1), 0); /* the only one left */
}
END_TEST

/* Ticks offered one after another (chosen, charged): the shares are in
 * proportion to capacity, exactly over a whole round, however the runs
 * end (here at once) and however late one member accepts (n1's offers
 * stay in its in_use all along: a load read at each tick would send it
 * almost nothing, the spread bench's leader of before). */
START_TEST(shares_follow_capacity)
{
    struct assign_node v[] = {NODE("n1", none, 0, 64, 0, true), NODE("n2", none, 0, 64, 0, true),
                              NODE("n3", none, 0, 64, 0, true), NODE("n4", none, 0, 64, 0, true)};
    int count[4] = {0};
    for (int t = 0; t < 200; t++) {
        uint64_t seed = assign_seed("job", 1700000000 + t, NULL);
        long i = assign_choose(v, 4, NULL, 0, NULL, seed);
        ck_assert_int_ge(i, 0);
        assign_charge(v, 4, NULL, 0, NULL, i);
        count[i]++;
        for (int k = 1; k < 4; k++)
            v[k].in_use = 0; /* their runs ended; n1 has accepted nothing yet */
    }
    for (int k = 0; k < 4; k++)
        ck_assert_int_eq(count[k], 50);
    struct assign_node w[] = {NODE("c1", none, 0, 1, 0, true), NODE("c2", none, 0, 2, 0, true),
                              NODE("c4", none, 0, 4, 0, true), NODE("c8", none, 0, 8, 0, true)};
    int got[4] = {0};
    for (int t = 0; t < 1500; t++) {
        long i = assign_choose(w, 4, NULL, 0, NULL, assign_seed("job", t, NULL));
        ck_assert_int_ge(i, 0);
        assign_charge(w, 4, NULL, 0, NULL, i);
        got[i]++;
        for (int k = 0; k < 4; k++)
            w[k].in_use = 0;
    }
    ck_assert_int_eq(got[0], 100);
    ck_assert_int_eq(got[1], 200);
    ck_assert_int_eq(got[2], 400);
    ck_assert_int_eq(got[3], 800);
}
END_TEST

/* Equal nodes: the ticks spread over all of them, and the same seed
 * gives the same node whatever the order the members were read in. */
START_TEST(ties_spread_and_agree)
{
    struct assign_node v[] = {NODE("n1", none, 0, 2, 0, true), NODE("n2", none, 0, 2, 0, true),
                              NODE("n3", none, 0, 2, 0, true)};
    struct assign_node w[] = {v[2], v[0], v[1]};
    int count[3] = {0};
    for (int t = 1; t <= 300; t++) {
        uint64_t seed = assign_seed("job", 1700000000 + t, NULL);
        long i = assign_choose(v, 3, NULL, 0, NULL, seed);
        ck_assert_int_ge(i, 0);
        count[i]++;
        long k = assign_choose(w, 3, NULL, 0, NULL, seed);
        ck_assert_str_eq(w[k].node, v[i].node);
    }
    for (int i = 0; i < 3; i++)
        ck_assert_int_gt(count[i], 60); /* a fair share is 100 */
    ck_assert(assign_seed("job", 5, NULL) != assign_seed("job", 6, NULL));
    ck_assert(assign_seed("job", 5, NULL) != assign_seed("job", 5, "1"));
}
END_TEST

START_TEST(values_parse_and_format)
{
    struct assign a;
    ck_assert(assign_parse("1700000000", "offered n1 1 1700000000123 1700000000-3-1-7 0", &a));
    ck_assert_int_eq(a.tick, 1700000000);
    ck_assert_int_eq(a.state, ASSIGN_OFFERED);
    ck_assert_str_eq(a.node, "n1");
    ck_assert_int_eq(a.attempt, 1);
    ck_assert_int_eq(a.at_ms, 1700000000123);
    ck_assert_str_eq(a.run_id, "1700000000-3-1-7");
    ck_assert_int_eq(a.moves, 0);
    a.state = ASSIGN_STARTED;
    a.moves = 2;
    ck_assert(assign_format(&a));
    /* no member died before starting it: the 7th part is "-" */
    ck_assert_str_eq(a.value, "started n1 1 1700000000123 1700000000-3-1-7 2 -");
    ck_assert(assign_parse("1700000000/n1", "accepted n1 2 5 r 0", &a));
    ck_assert_str_eq(assign_state_name(a.state), "accepted");
    /* the 7th part: the member that accepted it and died before starting it */
    ck_assert(assign_parse("1700000000", "offered n2 1 5 r 1 d1", &a));
    ck_assert_str_eq(a.died, "d1");
    /* not an assignment's */
    static const char *const bad[][2] = {
        {"1700000000", "offered n1 1 5 r"},
        {"1700000000", "done n1 1 5 r 0"},
        {"1700000000", "offered n1 0 5 r 0"},
        {"x", "offered n1 1 5 r 0"},
        {"1700000000/n2", "offered n1 1 5 r 0"},
        {"1700000000", "offered n1 1 5 r 0 d1 extra"}, /* 7 parts at most */
        {"0", "offered n1 1 5 r 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!assign_parse(bad[i][0], bad[i][1], &a), "%s = %s", bad[i][0], bad[i][1]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("assign");
    TCase *tc = tcase_create("choose");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, room_first);
    tcase_add_test(tc, shares_follow_capacity);
    tcase_add_test(tc, capacity_zero_takes_nothing);
    tcase_add_test(tc, labels_all_required);
    tcase_add_test(tc, avoid_unless_alone);
    tcase_add_test(tc, ties_spread_and_agree);
    tcase_add_test(tc, values_parse_and_format);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
