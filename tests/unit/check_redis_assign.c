/* check_redis_assign.c -- the dispatch scripts (assign.h) against a real
 * redis-server: an offer is accepted once; an offer past its deadline is
 * offered again and can no longer be accepted, one accepted is never
 * offered again while its registration lives; capacity counted in Redis;
 * the leader's token guards offers; started, end, and the reads. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign.h"
#include "baton.h"
#include "claim.h"
#include "runlimits.h"
#include "testutil.h"

#define G      "ga"
#define LEADER "baton:{" G "}:leader"

static struct baton_client *setup(void)
{
    free(tu_redis("FLUSHALL"));
    free(tu_redis("SET " LEADER " tok PX 60000"));
    return tu_client(1000);
}

static struct assign first(const char *field, const char *node, const char *run)
{
    struct assign a = {.attempt = 1};
    snprintf(a.field, sizeof a.field, "%s", field);
    snprintf(a.node, sizeof a.node, "%s", node);
    snprintf(a.run_id, sizeof a.run_id, "%s", run);
    return a;
}

START_TEST(offer_accept_once)
{
    struct baton_client *c = setup();
    struct assign a = first("100", "n1", "100-1-1-1"), got;
    free(tu_redis("ZADD baton:{" G "}:busy:j 99999999999999 lead/100-1-1-1"));
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", "lead/100-1-1-1", NULL, &a, 5000), 1);
    ck_assert_int_eq(a.state, ASSIGN_OFFERED);
    /* the claim's registration became the offer's */
    ck_assert_int_eq(tu_redis_int("ZCARD baton:{" G "}:busy:j"), 1);
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{" G "}:busy:j"), 1);
    char *s = tu_redis("ZSCORE baton:{" G "}:busy:j n1/100-1-1-1");
    ck_assert_str_ne(s, "(nil)");
    free(s);
    /* a first offer of a tick already offered: refused */
    struct assign b = first("100", "n2", "100-1-1-1");
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, NULL, &b, 5000), 0);
    /* not to another node; then once */
    ck_assert_int_eq(assign_accept(c, G, "j", "100", "n2", 4, 5000, &got), ASSIGN_GONE);
    char *jobs[4], *fields[4];
    size_t n = 0;
    ck_assert_int_eq(assign_offers(c, G, "n1", jobs, fields, 4, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(jobs[0], "j");
    ck_assert_str_eq(fields[0], "100");
    free(jobs[0]);
    free(fields[0]);
    ck_assert_int_eq(assign_accept(c, G, "j", "100", "n1", 4, 5000, &got), ASSIGN_OK);
    ck_assert_int_eq(got.state, ASSIGN_ACCEPTED);
    ck_assert_int_eq(assign_accept(c, G, "j", "100", "n1", 4, 5000, &got), ASSIGN_GONE);
    ck_assert_int_eq(assign_offers(c, G, "n1", jobs, fields, 4, &n), 0);
    ck_assert_uint_eq(n, 0);
    /* not leader */
    free(tu_redis("SET " LEADER " other PX 60000"));
    struct assign d = first("101", "n1", "101-1-1-1");
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, NULL, &d, 5000), BATON_ELOST);
    baton_client_free(c);
}
END_TEST

/* Exactly one of accept and re-offer wins: before the deadline the
 * re-offer is refused, after it the accept. */
START_TEST(expired_offer_moves_once)
{
    struct baton_client *c = setup();
    struct assign a = first("200", "n1", "200-1-1-1"), got;
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, NULL, &a, 300), 1);
    char expect[ASSIGN_VALUE_MAX];
    snprintf(expect, sizeof expect, "%s", a.value);
    struct assign b = first("200", "n2", "200-1-1-1");
    b.moves = 1;
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, expect, &b, 5000), 0);
    struct assign late = first("201", "n1", "201-1-1-1");
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, NULL, &late, 300), 1);
    tu_sleep_ms(400);
    /* past its deadline, not yet moved: too late to accept all the same */
    ck_assert_int_eq(assign_accept(c, G, "j", "201", "n1", 4, 5000, &got), ASSIGN_GONE);
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, expect, &b, 5000), 1);
    ck_assert_int_eq(assign_accept(c, G, "j", "200", "n1", 4, 5000, &got), ASSIGN_GONE);
    /* the old offer's registration is gone, the new one's is there */
    char *old = tu_redis("ZSCORE baton:{" G "}:busy:j n1/200-1-1-1"),
         *now = tu_redis("ZSCORE baton:{" G "}:busy:j n2/200-1-1-1");
    ck_assert_str_eq(old, "(nil)");
    ck_assert_str_ne(now, "(nil)");
    free(old);
    free(now);
    /* a second move with the stale value: refused */
    struct assign d = first("200", "n3", "200-1-1-1");
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, expect, &d, 5000), 0);
    ck_assert_int_eq(assign_accept(c, G, "j", "200", "n2", 4, 5000, &got), ASSIGN_OK);
    ck_assert_int_eq(got.moves, 1);
    /* accepted and registered: never moved, nor dropped */
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, got.value, &d, 5000), 0);
    ck_assert_int_eq(assign_drop(c, G, "j", LEADER, "tok", got.value, &got), 0);
    baton_client_free(c);
}
END_TEST

/* A run whose member stopped refreshing its registration is lost: it may
 * be moved (or dropped) then, and its member can no longer mark it
 * started. */
START_TEST(lost_registration_moves)
{
    struct baton_client *c = setup();
    struct assign a = first("300", "n1", "300-1-1-1"), got;
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, NULL, &a, 5000), 1);
    ck_assert_int_eq(assign_accept(c, G, "j", "300", "n1", 4, 300, &got), ASSIGN_OK);
    struct assign v[4];
    bool alive[4];
    size_t n = 0;
    int64_t now = 0;
    ck_assert_int_eq(assign_list_all(c, G, v, alive, 4, false, &n, &now), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert(alive[0]);
    ck_assert_int_gt(now, 0);
    ck_assert_int_eq(assign_list_all(c, G, v, alive, 4, true, &n, &now), 0);
    ck_assert_uint_eq(n, 0); /* nothing due: nothing read */
    tu_sleep_ms(400);
    ck_assert_int_eq(assign_list_all(c, G, v, alive, 4, true, &n, &now), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert(!alive[0]);
    ck_assert_int_eq(assign_started(c, G, "j", &got), BATON_ELOST);
    ck_assert_int_eq(assign_drop(c, G, "j", LEADER, "tok", got.value, &got), 1);
    ck_assert_int_eq(assign_list_all(c, G, v, alive, 4, false, &n, &now), 0);
    ck_assert_uint_eq(n, 0);
    baton_client_free(c);
}
END_TEST

/* capacity 1: a second run is not accepted while the first is
 * registered; its end frees the room; a run whose registration expired
 * does not count. */
START_TEST(capacity_in_redis)
{
    struct baton_client *c = setup();
    struct assign a = first("400", "n1", "400-1-1-1"), b = first("401", "n1", "401-1-1-1"), got,
                  got2;
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, NULL, &a, 5000), 1);
    ck_assert_int_eq(assign_offer(c, G, "k", LEADER, "tok", NULL, NULL, &b, 5000), 1);
    const char *nodes[2] = {"n1", "n2"};
    int64_t used[2];
    ck_assert_int_eq(assign_loads(c, G, nodes, 2, used), 0);
    ck_assert_int_eq(used[0], 2); /* two offers open */
    ck_assert_int_eq(used[1], 0);
    ck_assert_int_eq(assign_accept(c, G, "j", "400", "n1", 1, 5000, &got), ASSIGN_OK);
    ck_assert_int_eq(assign_started(c, G, "j", &got), 0);
    ck_assert_int_eq(assign_accept(c, G, "k", "401", "n1", 1, 5000, &got2), ASSIGN_FULL);
    ck_assert_int_eq(assign_loads(c, G, nodes, 2, used), 0);
    ck_assert_int_eq(used[0], 2); /* one run, one offer */
    ck_assert_int_eq(assign_end(c, G, "j", "400", "n1", got.run_id, -1), 0);
    ck_assert_int_eq(tu_redis_int("HLEN baton:{" G "}:assign:j"), 0);
    ck_assert_int_eq(assign_accept(c, G, "k", "401", "n1", 1, 300, &got2), ASSIGN_OK);
    tu_sleep_ms(400); /* its member vanished */
    struct assign d = first("402", "n1", "402-1-1-1");
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, NULL, &d, 5000), 1);
    ck_assert_int_eq(assign_accept(c, G, "j", "402", "n1", 1, 5000, &got), ASSIGN_OK);
    baton_client_free(c);
}
END_TEST

/* run_on: all: one field per (tick, node). */
START_TEST(all_per_node)
{
    struct baton_client *c = setup();
    struct assign a = first("500/n1", "n1", "500-1-1-1"), b = first("500/n2", "n2", "500-1-1-2"),
                  got;
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, NULL, &a, 5000), 1);
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, NULL, &b, 5000), 1);
    ck_assert_int_eq(assign_accept(c, G, "j", "500/n1", "n1", 1, 5000, &got), ASSIGN_OK);
    ck_assert_int_eq(assign_accept(c, G, "j", "500/n2", "n2", 1, 5000, &got), ASSIGN_OK);
    ck_assert_int_eq(assign_accept(c, G, "j", "500/n2", "n1", 1, 5000, &got), ASSIGN_GONE);
    ck_assert_int_eq(tu_redis_int("ZCARD baton:{" G "}:busy:j"), 2);
    baton_client_free(c);
}
END_TEST

/* The claim of a tick of a job run on members writes its marker in the
 * same script: the first offer takes the marker (once: a second, or
 * another leader's, finds it gone); a marker dropped is gone with the
 * claim's registration; one read lists every job's assignments. */
/* The leader "lead" claims job's tick to run, dispatched (its marker
 * written). */
static void claim_marked(struct baton_client *c, const char *job, int64_t tick)
{
    struct claim_limits lim = {.dispatch = true};
    struct claim_reply r;
    char member[64];
    snprintf(member, sizeof member, "lead/%lld-1-1-1", (long long)tick);
    ck_assert_int_eq(claim_tick(c, G, job, LEADER, "tok", tick, CLAIM_RUN, member, &lim, &r),
                     CLAIM_OK);
    claim_reply_free(&r);
}

/* A fleet of more members than a script call of the library's own takes
 * (64 arguments): the loads of 200 nodes are read in one call, and an
 * all tick is offered to 100 nodes in one (before, both calls were
 * refused by the client: the leader of 60 members or more never offered
 * a tick on any, nor one on all beyond 28). */
START_TEST(a_fleet_of_many_members)
{
    enum { NN = 200, NALL = 100 };
    struct baton_client *c = setup();
    static char names[NN][16], ids[NALL][32];
    const char *nodes[NN], *run_ids[NALL];
    int64_t used[NN];
    bool skipped[NALL];
    size_t made = 0, gave = 0;
    for (int i = 0; i < NN; i++) {
        snprintf(names[i], sizeof names[i], "n%d", i);
        nodes[i] = names[i];
    }
    struct assign a = first("450", "n150", "450-1-1-1");
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, NULL, &a, 5000), 1);
    ck_assert_int_eq(assign_loads(c, G, nodes, NN, used), 0);
    for (int i = 0; i < NN; i++)
        ck_assert_int_eq(used[i], i == 150 ? 1 : 0);
    claim_marked(c, "k", 451);
    for (int i = 0; i < NALL; i++) {
        snprintf(ids[i], sizeof ids[i], "451-1-1-1.%d", i);
        run_ids[i] = ids[i];
    }
    struct assign m = first("451", "lead", "451-1-1-1");
    ck_assert_int_eq(assign_offer_all(c, G, "k", LEADER, "tok", &m, nodes, run_ids, NALL,
                                      ASSIGN_NODE_FORBID, 5000, &made, skipped, &gave),
                     1);
    ck_assert_uint_eq(made, NALL);
    ck_assert_int_eq(tu_redis_int("HLEN baton:{" G "}:assign:k"), NALL);
    baton_client_free(c);
}
END_TEST

START_TEST(claim_writes_marker)
{
    struct baton_client *c = setup();
    struct claim_reply r;
    claim_marked(c, "j", 600);
    claim_marked(c, "k", 601);
    /* a job run on the leader: no marker */
    ck_assert_int_eq(
        claim_tick(c, G, "l", LEADER, "tok", 602, CLAIM_RUN, "lead/602-1-1-1", NULL, &r), CLAIM_OK);
    claim_reply_free(&r);
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{" G "}:assign:l"), 0);
    struct assign v[8];
    bool alive[8];
    size_t n = 0;
    int64_t now = 0;
    ck_assert_int_eq(assign_list_all(c, G, v, alive, 8, false, &n, &now), 0);
    ck_assert_uint_eq(n, 2);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(v[i].state, ASSIGN_CLAIMED);
        ck_assert_str_eq(v[i].node, "lead");
        ck_assert(!alive[i]); /* a marker waits for its offer */
    }
    struct assign a = first("600", "n1", "600-1-1-1");
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, "claimed", &a, 5000), 1);
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, "claimed", &a, 5000), 0);
    /* the claim's registration became the offer's */
    char *s = tu_redis("ZSCORE baton:{" G "}:busy:j lead/600-1-1-1");
    ck_assert_str_eq(s, "(nil)");
    free(s);
    struct assign m = first("601", "lead", "601-1-1-1");
    ck_assert_int_eq(assign_drop(c, G, "k", LEADER, "tok", "claimed", &m), 1);
    ck_assert_int_eq(tu_redis_int("ZCARD baton:{" G "}:busy:k"), 0);
    ck_assert_int_eq(assign_list_all(c, G, v, alive, 8, false, &n, &now), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(v[0].job, "j");
    ck_assert(alive[0]);
    ck_assert_int_eq(tu_redis_int("SISMEMBER baton:{" G "}:assigned k"), 0);
    baton_client_free(c);
}
END_TEST

/* run_on: all with forbid applies per node (assign_offer_all): a node with
 * a live registration of the job (an earlier tick's offer not yet
 * accepted, or its run) is not offered the tick but left "skipped" for the
 * leader to record (listed due, dropped once); a node whose only
 * registration is another tick's marker (it named the leader that claimed
 * it) is offered; without forbid every node is offered. */
START_TEST(all_forbid_per_node)
{
    struct baton_client *c = setup();
    const char *nodes[3] = {"n1", "n2", "n3"};
    const char *ids700[3] = {"700-1-1-1.1", "700-1-1-1.2", "700-1-1-1.3"};
    const char *ids702[3] = {"702-1-1-1.1", "702-1-1-1.2", "702-1-1-1.3"};
    const char *ids703[3] = {"703-1-1-1.1", "703-1-1-1.2", "703-1-1-1.3"};
    bool skipped[3];
    size_t made = 0, gave = 0;
    struct assign got;
    struct claim_reply r;
    struct claim_limits lim = {.dispatch = true};

    claim_marked(c, "j", 700);
    struct assign m = first("700", "lead", "700-1-1-1");
    ck_assert_int_eq(assign_offer_all(c, G, "j", LEADER, "tok", &m, nodes, ids700, 3,
                                      ASSIGN_NODE_FORBID, 5000, &made, skipped, &gave),
                     1);
    ck_assert_uint_eq(made, 3); /* nobody busy: every node offered */
    ck_assert(!skipped[0] && !skipped[1] && !skipped[2]);
    ck_assert_int_eq(assign_accept(c, G, "j", "700/n2", "n2", 1, 5000, &got), ASSIGN_OK);
    ck_assert_int_eq(assign_accept(c, G, "j", "700/n3", "n3", 1, 5000, &got), ASSIGN_OK);
    assign_end(c, G, "j", "700/n3", "n3", "700-1-1-1.3", -1); /* n3's run ended */
    /* a marker of tick 701 claimed by n3 as leader, waiting (never offered) */
    ck_assert_int_eq(claim_tick(c, G, "j", LEADER, "tok", 701, CLAIM_RUN, "n3/701-1-1-1", &lim, &r),
                     CLAIM_OK);
    claim_reply_free(&r);
    claim_marked(c, "j", 702);
    m = first("702", "lead", "702-1-1-1");
    ck_assert_int_eq(assign_offer_all(c, G, "j", LEADER, "tok", &m, nodes, ids702, 3,
                                      ASSIGN_NODE_FORBID, 5000, &made, skipped, &gave),
                     1);
    ck_assert_uint_eq(made, 1);
    ck_assert(skipped[0] && skipped[1] && !skipped[2]); /* n1 offered 700, n2 runs it */
    ck_assert_int_eq(assign_accept(c, G, "j", "702/n1", "n1", 4, 5000, &got), ASSIGN_GONE);
    ck_assert_int_eq(assign_accept(c, G, "j", "702/n3", "n3", 4, 5000, &got), ASSIGN_OK);
    /* the skipped ones are due for the leader, once */
    struct assign v[16];
    bool alive[16];
    size_t n = 0, nskipped = 0;
    int64_t now = 0;
    ck_assert_int_eq(assign_list_all(c, G, v, alive, 16, true, &n, &now), 0);
    for (size_t i = 0; i < n; i++) {
        if (v[i].state != ASSIGN_SKIPPED)
            continue;
        nskipped++;
        ck_assert(!alive[i]);
        ck_assert_int_eq(v[i].tick, 702);
        ck_assert(strcmp(v[i].node, "n1") == 0 || strcmp(v[i].node, "n2") == 0);
        ck_assert_str_eq(v[i].run_id, strcmp(v[i].node, "n1") == 0 ? ids702[0] : ids702[1]);
        ck_assert_int_eq(assign_drop(c, G, "j", LEADER, "tok", v[i].value, &v[i]), 1);
        ck_assert_int_eq(assign_drop(c, G, "j", LEADER, "tok", v[i].value, &v[i]), 0);
    }
    ck_assert_uint_eq(nskipped, 2);
    ck_assert_int_eq(tu_redis_int("HEXISTS baton:{" G "}:assign:j 702/n1"), 0);
    /* without forbid (allow, replace): every node is offered, busy or not */
    claim_marked(c, "j", 703);
    m = first("703", "lead", "703-1-1-1");
    ck_assert_int_eq(assign_offer_all(c, G, "j", LEADER, "tok", &m, nodes, ids703, 3,
                                      ASSIGN_NODE_ALLOW, 5000, &made, skipped, &gave),
                     1);
    ck_assert_uint_eq(made, 3);
    ck_assert(!skipped[0] && !skipped[1] && !skipped[2]);
    ck_assert_uint_eq(gave, 0);
    baton_client_free(c);
}
END_TEST

/* run_on: all with replace: every node is offered each tick, busy or not;
 * a node's offer of an older tick not yet accepted gives way to the newer
 * one (left "skipped", due for the leader to record superseded, its
 * registration and offer gone: it can no longer be accepted); one already
 * accepted is the node's to stop, left as it is. */
START_TEST(all_replace_per_node)
{
    struct baton_client *c = setup();
    const char *nodes[3] = {"n1", "n2", "n3"};
    const char *ids704[3] = {"704-1-1-1.1", "704-1-1-1.2", "704-1-1-1.3"};
    const char *ids705[3] = {"705-1-1-1.1", "705-1-1-1.2", "705-1-1-1.3"};
    bool skipped[3];
    size_t made = 0, gave = 0;
    struct assign got;

    claim_marked(c, "r", 704);
    struct assign m = first("704", "lead", "704-1-1-1");
    ck_assert_int_eq(assign_offer_all(c, G, "r", LEADER, "tok", &m, nodes, ids704, 3,
                                      ASSIGN_NODE_REPLACE, 5000, &made, skipped, &gave),
                     1);
    ck_assert_uint_eq(made, 3);
    ck_assert_uint_eq(gave, 0);
    ck_assert_int_eq(assign_accept(c, G, "r", "704/n2", "n2", 4, 5000, &got), ASSIGN_OK);
    claim_marked(c, "r", 705);
    m = first("705", "lead", "705-1-1-1");
    ck_assert_int_eq(assign_offer_all(c, G, "r", LEADER, "tok", &m, nodes, ids705, 3,
                                      ASSIGN_NODE_REPLACE, 5000, &made, skipped, &gave),
                     1);
    ck_assert_uint_eq(made, 3); /* n2 too, its run of 704 alive */
    ck_assert(!skipped[0] && !skipped[1] && !skipped[2]);
    ck_assert_uint_eq(gave, 2); /* 704 on n1 and n3, never accepted */
    ck_assert_int_eq(assign_accept(c, G, "r", "704/n1", "n1", 4, 5000, &got), ASSIGN_GONE);
    ck_assert_int_eq(assign_accept(c, G, "r", "705/n1", "n1", 4, 5000, &got), ASSIGN_OK);
    char *s = tu_redis("ZSCORE baton:{" G "}:busy:r n3/704-1-1-1.3");
    ck_assert_str_eq(s, "(nil)");
    free(s);
    struct assign v[16];
    bool alive[16];
    size_t n = 0, gone = 0;
    int64_t now = 0;
    ck_assert_int_eq(assign_list_all(c, G, v, alive, 16, true, &n, &now), 0);
    for (size_t i = 0; i < n; i++) {
        if (v[i].state != ASSIGN_SKIPPED)
            continue;
        gone++;
        ck_assert_int_eq(v[i].tick, 704);
        ck_assert(strcmp(v[i].node, "n2") != 0);
    }
    ck_assert_uint_eq(gone, 2);
    ck_assert_int_eq(tu_redis_int("HEXISTS baton:{" G "}:assign:r 704/n2"), 1);
    baton_client_free(c);
}
END_TEST

/* A marker waiting for room keeps its registration alive (held), as an
 * offer does; one whose value changed since it was read is left alone;
 * only the leader holds. */
START_TEST(waiting_marker_held)
{
    struct baton_client *c = setup();
    claim_marked(c, "j", 700);
    claim_marked(c, "k", 701);
    /* the markers as the leader reads them (at_ms: their claim, the
     * server's time) */
    struct assign v[2];
    const char *jobs[2] = {"j", "k"}, *fields[2] = {"700", "701"};
    for (int i = 0; i < 2; i++) {
        char cmd[64];
        snprintf(cmd, sizeof cmd, "HGET baton:{" G "}:assign:%s %s", jobs[i], fields[i]);
        char *val = tu_redis(cmd);
        ck_assert(assign_parse(fields[i], val, &v[i]));
        snprintf(v[i].job, sizeof v[i].job, "%s", jobs[i]);
        free(val);
    }
    /* the registrations lapse soon (as a lease would) */
    free(tu_redis("ZADD baton:{" G "}:busy:j 1 lead/700-1-1-1"));
    free(tu_redis("ZADD baton:{" G "}:busy:k 1 lead/701-1-1-1"));
    /* k's marker is offered meanwhile: its value changed */
    struct assign moved = first("701", "n1", "701-1-1-1");
    ck_assert_int_eq(assign_offer(c, G, "k", LEADER, "tok", NULL, "claimed", &moved, 5000), 1);
    const struct assign *w[2] = {&v[0], &v[1]};
    char *s;
    ck_assert_int_eq(assign_hold(c, G, LEADER, "tok", w, 2, 60000), 0);
    s = tu_redis("ZSCORE baton:{" G "}:busy:j lead/700-1-1-1");
    ck_assert_int_gt(strtoll(s, NULL, 10), v[0].at_ms + 50000);
    free(s);
    s = tu_redis("ZSCORE baton:{" G "}:busy:k lead/701-1-1-1");
    ck_assert_str_eq(s, "(nil)");
    free(s);
    free(tu_redis("SET " LEADER " other PX 60000"));
    ck_assert_int_eq(assign_hold(c, G, LEADER, "tok", w, 2, 60000), BATON_ELOST);
    baton_client_free(c);
}
END_TEST

/* The next attempt of a run lost after its start, or of a failed run's
 * retry, that waits for a member with room is held as "<node>/<run>/wait"
 * (its own registration is gone): a forbid job's next tick finds the job
 * busy, max_running counts it; the attempt's offer, or the drop, removes
 * it. */
static bool next_claim_busy(struct baton_client *c, int64_t tick)
{
    struct claim_limits lim = {.dispatch = true};
    struct claim_reply r;
    char member[64];
    snprintf(member, sizeof member, "lead/%lld-1-1-1", (long long)tick);
    enum claim_result res =
        claim_tick(c, G, "j", LEADER, "tok", tick, CLAIM_RUN_OR_WAIT, member, &lim, &r);
    claim_reply_free(&r);
    ck_assert(res == CLAIM_BUSY || res == CLAIM_OK);
    return res == CLAIM_BUSY;
}

/* The one assignment of j, as the leader's tend reads it (due). */
static struct assign due_one(struct baton_client *c)
{
    struct assign v[4];
    bool alive[4];
    size_t n = 0;
    int64_t now = 0;
    ck_assert_int_eq(assign_list_all(c, G, v, alive, 4, true, &n, &now), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert(!alive[0]);
    return v[0];
}

START_TEST(waiting_next_attempt_held)
{
    struct baton_client *c = setup();
    struct assign a = first("900", "n1", "900-1-1-1"), got;
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, NULL, &a, 5000), 1);
    ck_assert_int_eq(assign_accept(c, G, "j", "900", "n1", 4, 5000, &got), ASSIGN_OK);
    ck_assert_int_eq(assign_started(c, G, "j", &got), 0);
    /* n1 is lost: its registration lapsed */
    free(tu_redis("ZADD baton:{" G "}:busy:j 1 n1/900-1-1-1"));
    struct assign lost = due_one(c);
    ck_assert_int_eq(lost.state, ASSIGN_STARTED);
    const struct assign *w[1] = {&lost};
    ck_assert_int_eq(assign_hold(c, G, LEADER, "tok", w, 1, 60000), 0);
    ck_assert(next_claim_busy(c, 901));
    /* max_running 1 (allow) counts it too */
    struct claim_limits one = {.max_running = 1, .dispatch = true};
    struct claim_reply cr;
    ck_assert_int_eq(
        claim_tick(c, G, "j", LEADER, "tok", 901, CLAIM_RUN, "lead/901-1-1-1", &one, &cr),
        CLAIM_FULL);
    claim_reply_free(&cr);
    /* the listing still finds it lost (its own registration is gone) */
    struct assign again = due_one(c);
    ck_assert_str_eq(again.value, lost.value);
    /* its next attempt offered: the hold is gone, the offer registered */
    struct assign b = first("900", "n2", "900-1-2-2");
    b.attempt = 2;
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, lost.value, &b, 5000), 1);
    char *s = tu_redis("ZSCORE baton:{" G "}:busy:j n1/900-1-1-1/wait");
    ck_assert_str_eq(s, "(nil)");
    free(s);
    ck_assert_int_eq(assign_accept(c, G, "j", "900", "n2", 4, 5000, &got), ASSIGN_OK);
    ck_assert_int_eq(assign_started(c, G, "j", &got), 0);
    /* it fails and is handed back as a retry, due now, that waits: held
     * by the end itself until the leader's hold takes over */
    ck_assert_int_eq(assign_end(c, G, "j", "900", "n2", got.run_id, 0), 0);
    tu_sleep_ms(5);
    struct assign r = due_one(c);
    ck_assert_int_eq(r.state, ASSIGN_RETRY);
    ck_assert(next_claim_busy(c, 902));
    w[0] = &r;
    ck_assert_int_eq(assign_hold(c, G, LEADER, "tok", w, 1, 60000), 0);
    ck_assert(next_claim_busy(c, 903));
    /* dropped: the hold goes with it */
    ck_assert_int_eq(assign_drop(c, G, "j", LEADER, "tok", r.value, &r), 1);
    ck_assert_int_eq(tu_redis_int("ZCARD baton:{" G "}:busy:j"), 0);
    baton_client_free(c);
}
END_TEST

/* A failed run handed back as a retry: due after its delay, not before
 * (alive until then); the member that died before starting a tick is
 * carried by its value. */
START_TEST(retry_and_died)
{
    struct baton_client *c = setup();
    struct assign a = first("700", "n1", "700-1-1-1"), got;
    snprintf(a.died, sizeof a.died, "n0");
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, NULL, &a, 5000), 1);
    ck_assert_str_eq(a.died, "n0");
    ck_assert_int_eq(assign_accept(c, G, "j", "700", "n1", 4, 5000, &got), ASSIGN_OK);
    ck_assert_str_eq(got.died, "n0");
    ck_assert_int_eq(assign_started(c, G, "j", &got), 0);
    ck_assert_int_eq(assign_end(c, G, "j", "700", "n1", got.run_id, 300), 0);
    struct assign v[4];
    bool alive[4];
    size_t n = 0;
    int64_t now = 0;
    ck_assert_int_eq(assign_list_all(c, G, v, alive, 4, false, &n, &now), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(v[0].state, ASSIGN_RETRY);
    ck_assert(alive[0]);
    ck_assert_int_eq(tu_redis_int("ZCARD baton:{" G "}:busy:j"), 1); /* its backoff's hold */
    tu_sleep_ms(400);
    ck_assert_int_eq(assign_list_all(c, G, v, alive, 4, false, &n, &now), 0);
    ck_assert(!alive[0]);
    struct assign b = first("700", "n2", "700-1-2-9");
    b.attempt = 2;
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, v[0].value, &b, 5000), 1);
    ck_assert_int_eq(b.died[0], '\0');
    char *s = tu_redis("ZSCORE baton:{" G "}:busy:j n1/700-1-1-1/wait"); /* the hold went */
    ck_assert_str_eq(s, "(nil)");
    free(s);
    baton_client_free(c);
}
END_TEST

/* A failed run's retry keeps the job busy through its backoff, as its
 * run did: held as "<node>/<run>/wait" by the end itself until the retry
 * is due plus what was left of the run's registration, listed for the
 * leader's hold (a new leader's too: it is all in Redis), and gone with
 * the retry's offer or drop; a forbid job's next tick finds the job busy, and
 * max_running counts it. */
START_TEST(retry_held_through_backoff)
{
    struct baton_client *c = setup();
    struct assign a = first("950", "n1", "950-1-1-1"), got;
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, NULL, &a, 5000), 1);
    ck_assert_int_eq(assign_accept(c, G, "j", "950", "n1", 4, 5000, &got), ASSIGN_OK);
    ck_assert_int_eq(assign_started(c, G, "j", &got), 0);
    ck_assert_int_eq(assign_end(c, G, "j", "950", "n1", got.run_id, 60000), 0);
    char *s = tu_redis("ZSCORE baton:{" G "}:busy:j n1/950-1-1-1/wait");
    ck_assert_str_ne(s, "(nil)");
    int64_t held = strtoll(s, NULL, 10);
    free(s);
    ck_assert_str_eq((s = tu_redis("ZSCORE baton:{" G "}:busy:j n1/950-1-1-1")), "(nil)");
    free(s);
    /* listed (due or not) for the leader's hold, alive */
    struct assign v[4];
    bool alive[4];
    size_t n = 0;
    int64_t now = 0;
    ck_assert_int_eq(assign_list_all(c, G, v, alive, 4, true, &n, &now), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(v[0].state, ASSIGN_RETRY);
    ck_assert(alive[0]);
    /* due in a minute, held past it by the run's registration left (~5 s) */
    ck_assert_int_ge(held, v[0].at_ms + 4000);
    ck_assert_int_le(held, v[0].at_ms + 5000);
    ck_assert(next_claim_busy(c, 951)); /* forbid: the next tick is busy */
    struct claim_limits one = {.max_running = 1, .dispatch = true};
    struct claim_reply cr;
    ck_assert_int_eq(
        claim_tick(c, G, "j", LEADER, "tok", 951, CLAIM_RUN, "lead/951-1-1-1", &one, &cr),
        CLAIM_FULL);
    claim_reply_free(&cr);
    /* a new leader (another token) holds it on from what it lists */
    free(tu_redis("SET " LEADER " tok2 PX 60000"));
    const struct assign *w[1] = {&v[0]};
    ck_assert_int_eq(assign_hold(c, G, LEADER, "tok2", w, 1, 600000), 0);
    s = tu_redis("ZSCORE baton:{" G "}:busy:j n1/950-1-1-1/wait");
    ck_assert_int_gt(strtoll(s, NULL, 10), held + 500000);
    free(s);
    /* dropped (or offered: retry_and_died): the hold goes with it */
    free(tu_redis("SET " LEADER " tok PX 60000"));
    ck_assert_int_eq(assign_drop(c, G, "j", LEADER, "tok", v[0].value, &v[0]), 0); /* not due */
    ck_assert_int_eq(tu_redis_int("ZCARD baton:{" G "}:busy:j"), 1);
    baton_client_free(c);
}
END_TEST

/* A member's start of a paused job's tick hands it back as the claim's
 * marker (its registration and capacity freed); a resume without
 * catch-up before the tick does not hold it. */
START_TEST(started_when_paused_hands_back)
{
    struct baton_client *c = setup();
    struct assign a = first("800", "n1", "800-1-1-1"), got;
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, NULL, &a, 5000), 1);
    ck_assert_int_eq(assign_accept(c, G, "j", "800", "n1", 4, 5000, &got), ASSIGN_OK);
    free(tu_redis("HSET baton:{" G "}:paused j {\"state\":\"paused\",\"since\":1,\"v\":1}"));
    ck_assert_int_eq(assign_started(c, G, "j", &got), ASSIGN_PAUSED);
    char *v = tu_redis("HGET baton:{" G "}:assign:j 800");
    ck_assert_msg(strncmp(v, "claimed n1 1 ", 13) == 0, "%s", v);
    free(v);
    ck_assert_int_eq(tu_redis_int("ZCARD baton:{" G "}:busy:j"), 0);
    ck_assert_int_eq(tu_redis_int("ZCARD baton:{" G "}:load:n1"), 0);
    /* resumed without catch-up up to 799: tick 800 runs */
    free(tu_redis("HSET baton:{" G "}:paused j {\"state\":\"resumed\",\"at\":799,\"v\":2}"));
    struct assign b = first("800", "n1", "800-1-1-1");
    ck_assert_int_eq(assign_offer(c, G, "j", LEADER, "tok", NULL, "claimed", &b, 5000), 1);
    ck_assert_int_eq(assign_accept(c, G, "j", "800", "n1", 4, 5000, &got), ASSIGN_OK);
    ck_assert_int_eq(assign_started(c, G, "j", &got), 0);
    baton_client_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("redis_assign");
    TCase *tc = tcase_create("assign");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, offer_accept_once);
    tcase_add_test(tc, expired_offer_moves_once);
    tcase_add_test(tc, lost_registration_moves);
    tcase_add_test(tc, capacity_in_redis);
    tcase_add_test(tc, all_per_node);
    tcase_add_test(tc, a_fleet_of_many_members);
    tcase_add_test(tc, claim_writes_marker);
    tcase_add_test(tc, all_forbid_per_node);
    tcase_add_test(tc, all_replace_per_node);
    tcase_add_test(tc, waiting_marker_held);
    tcase_add_test(tc, retry_and_died);
    tcase_add_test(tc, waiting_next_attempt_held);
    tcase_add_test(tc, retry_held_through_backoff);
    tcase_add_test(tc, started_when_paused_hands_back);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
