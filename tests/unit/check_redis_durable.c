/* check_redis_durable.c -- what survives Redis losing data, against a real
 * redis-server (tests/lib/with-redis.sh): fencing tokens of every kind of
 * grant (lock, semaphore permit, multi-lock by one script and key by key,
 * election term) keep increasing across FLUSHALL and track the server's
 * clock; min_replicas refuses grants that no replica acknowledged (this
 * server has none), gives them back, and says so; a master demoted to
 * replica (READONLY) is left, not retried on forever. Restarts and
 * failovers with real replicas: tests/integration/test_fences.sh and
 * test_sentinel.sh. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton.h"
#include "baton_election.h"
#include "baton_redis.h"
#include "lock_int.h"
#include "testutil.h"

static struct baton_client *client_with(int min_replicas)
{
    /* WAIT gets 4/5 of the command timeout; the rest must carry its answer
     * back even on a loaded machine (500 ms left 100 ms: too little). */
    struct baton_client_opts o = {
        .connect_timeout_ms = 1000, .command_timeout_ms = 1000, .min_replicas = min_replicas};
    struct baton_client *c = NULL;
    int rc = baton_client_new(tu_redis_url(), &o, &c);
    ck_assert_msg(rc == BATON_OK, "client: %s", baton_client_errstr(c));
    return c;
}

/* The server's clock in fence units (10 us). */
static uint64_t server_units(void)
{
    char *t = tu_redis("TIME"); /* "s us" as testutil prints arrays */
    unsigned long long s = 0, us = 0;
    ck_assert_msg(sscanf(t, "%llu %llu", &s, &us) == 2, "TIME: [%s]", t);
    free(t);
    return (uint64_t)s * 100000 + us / 10;
}

/* ---- one grant of each kind: returns its fence, released ---- */

static uint64_t grant_lock(struct baton_client *c, const char *name)
{
    struct baton_lock *lk = NULL;
    ck_assert_int_eq(baton_lock_try(c, name, NULL, &lk), BATON_OK);
    uint64_t f = baton_lock_fence(lk);
    ck_assert_int_eq(baton_lock_release(lk), BATON_OK);
    baton_lock_free(lk);
    return f;
}

static uint64_t grant_permit(struct baton_client *c, const char *name)
{
    struct baton_permit *p = NULL;
    ck_assert_int_eq(baton_sem_try(c, name, 3, NULL, &p), BATON_OK);
    uint64_t f = baton_permit_fence(p);
    ck_assert_int_eq(baton_sem_release(p), BATON_OK);
    baton_permit_free(p);
    return f;
}

/* Keys of one slot: the one-script path; the fence of the first key. */
static uint64_t grant_multi_script(struct baton_client *c, const char *name)
{
    char a[64], b[64];
    snprintf(a, sizeof a, "{%s}:a", name);
    snprintf(b, sizeof b, "{%s}:b", name);
    const char *keys[2] = {a, b};
    struct baton_multi *m = NULL;
    ck_assert_int_eq(baton_multi_acquire(c, keys, 2, NULL, &m), BATON_OK);
    uint64_t f = baton_lock_fence(baton_multi_lock(m, 0));
    ck_assert_uint_eq(baton_lock_fence(baton_multi_lock(m, 1)) > 0, 1);
    ck_assert_int_eq(baton_multi_release(m), BATON_OK);
    baton_multi_free(m);
    return f;
}

/* Keys of different slots: one lock at a time. */
static uint64_t grant_multi_keys(struct baton_client *c, const char *name)
{
    char a[64], b[64];
    snprintf(a, sizeof a, "%s:a", name);
    snprintf(b, sizeof b, "%s:b", name);
    const char *keys[2] = {a, b};
    struct baton_multi *m = NULL;
    ck_assert_int_eq(baton_multi_acquire(c, keys, 2, NULL, &m), BATON_OK);
    uint64_t f = baton_lock_fence(baton_multi_lock(m, 1));
    ck_assert_int_eq(baton_multi_release(m), BATON_OK);
    baton_multi_free(m);
    return f;
}

static uint64_t grant_term(struct baton_client *c, const char *name)
{
    struct baton_election *e = NULL;
    ck_assert_int_eq(baton_election_new(c, name, NULL, &e), BATON_OK);
    ck_assert_int_eq(baton_election_campaign(e, NULL), BATON_OK);
    uint64_t f = baton_election_term(e);
    ck_assert_int_eq(baton_election_resign(e), BATON_OK);
    baton_election_free(e);
    return f;
}

static const struct {
    const char *kind;
    uint64_t (*grant)(struct baton_client *c, const char *name);
} kinds[] = {
    {"lock", grant_lock},
    {"semaphore permit", grant_permit},
    {"multi-lock in one script", grant_multi_script},
    {"multi-lock key by key", grant_multi_keys},
    {"election term", grant_term},
};

/* Grant, FLUSHALL, grant: the second fence is above the first, and each
 * is at least the server's clock at the grant (in 10 us units). */
START_TEST(fence_survives_flushall)
{
    struct baton_client *c = client_with(0);
    uint64_t before = server_units();
    uint64_t f1 = kinds[_i].grant(c, "fl");
    uint64_t f1b = kinds[_i].grant(c, "fl");
    ck_assert_msg(f1 >= before, "%s: fence %llu below the server clock %llu", kinds[_i].kind,
                  (unsigned long long)f1, (unsigned long long)before);
    ck_assert_msg(f1b > f1, "%s: %llu then %llu", kinds[_i].kind, (unsigned long long)f1,
                  (unsigned long long)f1b);
    char *ok = tu_redis("FLUSHALL");
    ck_assert_str_eq(ok, "OK");
    free(ok);
    uint64_t f2 = kinds[_i].grant(c, "fl");
    ck_assert_msg(f2 > f1b, "%s: fence %llu after FLUSHALL, %llu before", kinds[_i].kind,
                  (unsigned long long)f2, (unsigned long long)f1b);
    ck_assert_uint_lt(f2, 1000000000000000ull); /* 15 digits: printed as an integer */
    baton_client_free(c);
}
END_TEST

/* Many grants in a row never repeat a fence, even within one clock tick. */
START_TEST(fence_strict_within_a_tick)
{
    struct baton_client *c = client_with(0);
    uint64_t last = 0;
    for (int i = 0; i < 300; i++) {
        uint64_t f = grant_lock(c, "tick");
        ck_assert_uint_gt(f, last);
        last = f;
    }
    baton_client_free(c);
}
END_TEST

/* ---- min_replicas without replicas ---- */

static const char not_durable_tail[] =
    ": not durable: 0 of min_replicas 1 replica(s) acknowledged in time";

static void assert_not_durable_msg(const char *msg)
{
    size_t n = strlen(msg), t = strlen(not_durable_tail);
    ck_assert_msg(n > t && strcmp(msg + n - t, not_durable_tail) == 0, "message: [%s]", msg);
}

START_TEST(min_replicas_refuses_unacknowledged_grants)
{
    struct baton_client *c = client_with(1);
    struct baton_lock *lk = NULL;
    struct baton_permit *p = NULL;
    struct baton_multi *m = NULL;
    struct baton_election *e = NULL;
    struct baton_reply *r = NULL;
    int64_t t0 = tu_now_ms();

    ck_assert_int_eq(baton_lock_try(c, "d:lock", NULL, &lk), BATON_ENOTDURABLE);
    ck_assert_ptr_null(lk);
    assert_not_durable_msg(baton_client_errstr(c));
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{d:lock}"), 0); /* given back */
    ck_assert_int_lt(tu_now_ms() - t0, 2500);                  /* bounded by the timeout */

    ck_assert_int_eq(baton_lock_acquire(c, "d:lock", &(struct baton_lock_opts){.max_wait_ms = 300},
                                        &lk),
                     BATON_ENOTDURABLE);
    ck_assert_int_eq(baton_sem_try(c, "d:sem", 2, NULL, &p), BATON_ENOTDURABLE);
    ck_assert_ptr_null(p);
    int holders = -1;
    ck_assert_int_eq(baton_sem_holders(c, "d:sem", &holders), BATON_OK); /* reads need no WAIT */
    ck_assert_int_eq(holders, 0);
    const char *keys[2] = {"{d}:a", "{d}:b"};
    ck_assert_int_eq(baton_multi_acquire(c, keys, 2,
                                         &(struct baton_lock_opts){.max_wait_ms = BATON_NO_WAIT},
                                         &m),
                     BATON_ENOTDURABLE);
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{{d}:a} baton:{{d}:b}"), 0);
    ck_assert_int_eq(baton_election_new(c, "d-group", NULL, &e), BATON_OK);
    ck_assert_int_eq(baton_election_campaign(e, NULL), BATON_ENOTDURABLE);
    ck_assert(!baton_election_is_leader(e));
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{d-group}:leader"), 0);
    baton_election_free(e);
    struct baton_leader_info info;
    ck_assert_int_eq(baton_election_leader(c, "d-group", &info), BATON_OK);
    ck_assert(!info.has_leader);
    /* Scripts of tools (the supervisor's claims) are held to the same. */
    ck_assert_int_eq(baton_client_eval(c, "return redis.call('set', KEYS[1], 'x')", 1,
                                       (const char *const[]){"d:claim"}, 0, NULL, &r),
                     BATON_ENOTDURABLE);
    ck_assert_ptr_null(r);
    assert_not_durable_msg(baton_client_errstr(c));
    baton_client_free(c);

    /* The same with min_replicas 0 grants at once. */
    c = client_with(0);
    ck_assert_int_eq(baton_lock_try(c, "d:lock", NULL, &lk), BATON_OK);
    ck_assert_int_eq(baton_lock_release(lk), BATON_OK);
    baton_lock_free(lk);
    baton_client_free(c);
}
END_TEST

/* A master demoted to replica answers READONLY: the grant fails with
 * Redis's words, and the connection is not used again, so that the next
 * grant, once the server is a master, succeeds at once. */
START_TEST(readonly_master_is_left)
{
    struct baton_client *c = client_with(0);
    struct baton_lock *lk = NULL;
    char cmd[64];
    ck_assert_int_eq(baton_lock_try(c, "ro:warm", NULL, &lk), BATON_OK); /* a shared connection */
    ck_assert_int_eq(baton_lock_release(lk), BATON_OK);
    baton_lock_free(lk);
    snprintf(cmd, sizeof cmd, "REPLICAOF 127.0.0.1 %d", tu_dead_port());
    free(tu_redis(cmd));
    ck_assert_int_eq(baton_lock_try(c, "ro:k", NULL, &lk), BATON_EREDIS);
    ck_assert_msg(strstr(baton_client_errstr(c), "READONLY") != NULL, "%s",
                  baton_client_errstr(c));
    free(tu_redis("REPLICAOF NO ONE"));
    ck_assert_int_eq(baton_lock_try(c, "ro:k", NULL, &lk), BATON_OK);
    ck_assert_int_eq(baton_lock_release(lk), BATON_OK);
    baton_lock_free(lk);
    baton_client_free(c);
}
END_TEST

static bool campaign_changed(struct baton_client *c)
{
    struct baton_election *e = NULL;
    ck_assert_int_eq(baton_election_new(c, "srv", NULL, &e), BATON_OK);
    ck_assert_int_eq(baton_election_campaign(e, NULL), BATON_OK);
    bool changed = baton_election_server_changed(e);
    ck_assert_int_eq(baton_election_resign(e), BATON_OK);
    baton_election_free(e);
    return changed;
}

/* A term says whether the one before it may have been granted by a master
 * whose last writes this one lacks: no record of the previous term's
 * server, or another server and this one promoted from replica. */
START_TEST(term_knows_a_switched_master)
{
    struct baton_client *c = client_with(0);
    char cmd[64];
    free(tu_redis("DEL baton:{srv}:leader:server"));
    ck_assert(campaign_changed(c));  /* no record: lost with the data, or the first term */
    ck_assert(!campaign_changed(c)); /* granted by this very server */
    free(tu_redis("SET baton:{srv}:leader:server 0123456789abcdef0123456789abcdef01234567"));
    free(tu_redis("REPLICAOF NO ONE"));
    /* Another process, this one never a replica (a plain restart): its
     * persistence decides what it kept; nothing was lost in a promotion. */
    char *info = tu_redis("INFO replication");
    bool promoted_before = strstr(info, "second_repl_offset:-1") == NULL;
    free(info);
    if (!promoted_before)
        ck_assert(!campaign_changed(c));
    /* Promoted from replica since: the previous term's writes may be lost. */
    snprintf(cmd, sizeof cmd, "REPLICAOF 127.0.0.1 %d", tu_dead_port());
    free(tu_redis(cmd));
    free(tu_redis("REPLICAOF NO ONE"));
    free(tu_redis("SET baton:{srv}:leader:server 0123456789abcdef0123456789abcdef01234567"));
    ck_assert(campaign_changed(c));
    ck_assert(!campaign_changed(c));
    baton_client_free(c);
}
END_TEST

/* A renewal answered by a promoted replica that did not grant the lock (a
 * failover) is not trusted without min_replicas: the lock is reported lost,
 * with the reason, and given back there. (A restarted master that is not a
 * promoted replica is trusted: test_fences.sh.) */
START_TEST(grant_not_trusted_across_a_switch)
{
    char cmd[64];
    snprintf(cmd, sizeof cmd, "REPLICAOF 127.0.0.1 %d", tu_dead_port());
    free(tu_redis(cmd));
    free(tu_redis("REPLICAOF NO ONE")); /* this server is now a promoted replica */
    struct baton_client *c = client_with(0);
    struct baton_lock *lk = NULL;
    ck_assert_int_eq(baton_lock_try(c, "sw:k", &(struct baton_lock_opts){.ttl_ms = 5000}, &lk),
                     BATON_OK);
    ck_assert_int_eq(baton_lock_extend(lk, 0), BATON_OK); /* granted here: trusted */
    /* As if another server process had granted it before the failover. */
    baton__lock_granted_by(lk, "0123456789abcdef0123456789abcdef01234567");
    ck_assert_int_eq(baton_lock_extend(lk, 0), BATON_ELOST);
    ck_assert(baton_lock_lost(lk));
    ck_assert_msg(strstr(baton_lock_errstr(lk), "lock sw:k was lost: Redis failed over "
                                                "(granted by server 01234567, extension "
                                                "answered by ") != NULL,
                  "%s", baton_lock_errstr(lk));
    ck_assert_int_eq(tu_redis_int("EXISTS baton:{sw:k}"), 0); /* given back */
    baton_lock_free(lk);
    baton_client_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("redis_durable");
    TCase *tc = tcase_create("fences");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, fence_survives_flushall, 0, sizeof kinds / sizeof kinds[0]);
    tcase_add_test(tc, fence_strict_within_a_tick);
    suite_add_tcase(s, tc);
    tc = tcase_create("durability");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, min_replicas_refuses_unacknowledged_grants);
    tcase_add_test(tc, readonly_master_is_left);
    tcase_add_test(tc, term_knows_a_switched_master);
    tcase_add_test(tc, grant_not_trusted_across_a_switch);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
