/* check_redis_leader.c -- leader election for embedding against a real
 * redis-server: callbacks and their order, one leader among three,
 * handover on resign (woken, not polled; two successors named, not the
 * whole group), loss when the lease is taken,
 * loss reported before the validity deadline while Redis is frozen,
 * step-down requests, and the argument checks. */
#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton.h"
#include "baton_election.h"
#include "testutil.h"

static struct baton_client *client_with(int64_t timeout_ms)
{
    struct baton_client *c = NULL;
    struct baton_client_opts o = {.command_timeout_ms = timeout_ms,
                                  .connect_timeout_ms = timeout_ms};
    int rc = baton_client_new(tu_redis_url(), &o, &c);
    ck_assert_msg(rc == BATON_OK, "connect: %s", baton_client_errstr(c));
    return c;
}

static struct baton_client *client(void)
{
    return client_with(300);
}

/* What the callbacks saw, per campaign. */
struct seen {
    pthread_mutex_t mu;
    int gained, lost;
    uint64_t gained_term, lost_term;
    int lost_reason;
    int64_t gained_ns, lost_ns;
    bool key_held_in_on_lost; /* the lease still ours in Redis when told */
    const char *name;
    char order[64]; /* "g" and "l", in call order */
    bool resign_in_callback_refused;
    bool check_key; /* on_lost asks Redis whether the lease is still held */
};

static void seen_init(struct seen *s, const char *name)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->name = name;
}

static void on_gained(struct baton_leader *l, uint64_t term, int reason, void *arg)
{
    struct seen *s = arg;
    ck_assert_int_eq(reason, 0);
    ck_assert(baton_leader_is_leader(l));
    ck_assert_uint_eq(baton_leader_term(l), term);
    pthread_mutex_lock(&s->mu);
    s->gained++;
    s->gained_term = term;
    s->gained_ns = tu_now_ns();
    strncat(s->order, "g", sizeof s->order - strlen(s->order) - 1);
    s->resign_in_callback_refused = baton_leader_resign(l) == BATON_EINVAL;
    pthread_mutex_unlock(&s->mu);
}

static void on_lost(struct baton_leader *l, uint64_t term, int reason, void *arg)
{
    struct seen *s = arg;
    int64_t now = tu_now_ns();
    ck_assert(!baton_leader_is_leader(l));
    pthread_mutex_lock(&s->mu);
    s->lost_term = term;
    s->lost_reason = reason;
    s->lost_ns = now;
    strncat(s->order, "l", sizeof s->order - strlen(s->order) - 1);
    bool check = s->check_key;
    if (!check)
        s->lost++;
    pthread_mutex_unlock(&s->mu);
    if (!check)
        return;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "PTTL baton:{%s}:leader", s->name);
    char *pttl = tu_redis(cmd);
    bool held = strtoll(pttl, NULL, 10) > 0;
    free(pttl);
    pthread_mutex_lock(&s->mu);
    s->key_held_in_on_lost = held;
    s->lost++;
    pthread_mutex_unlock(&s->mu);
}

static int count(struct seen *s, bool gained)
{
    pthread_mutex_lock(&s->mu);
    int n = gained ? s->gained : s->lost;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static void wait_count(struct seen *s, bool gained, int n, int64_t max_ms)
{
    int64_t until = tu_now_ns() + max_ms * 1000000;
    while (count(s, gained) < n && tu_now_ns() < until)
        tu_sleep_ms(2);
    ck_assert_int_ge(count(s, gained), n);
}

static struct baton_leader_opts opts(struct seen *s, int64_t ttl_ms)
{
    return (struct baton_leader_opts){.ttl_ms = ttl_ms,
                                      .identity = "node",
                                      .retry_ms = 5000,
                                      .on_gained = on_gained,
                                      .on_lost = on_lost,
                                      .arg = s};
}

/* Gained, then resign: on_lost comes while the lease is still held (so
 * the work stops first), then the lease is released. */
START_TEST(gain_and_resign)
{
    struct baton_client *c = client();
    struct seen s;
    seen_init(&s, "L:one");
    s.check_key = true;
    struct baton_leader_opts o = opts(&s, 2000);
    struct baton_leader *l = NULL;
    ck_assert_int_eq(baton_leader_campaign(c, "L:one", &o, &l), BATON_OK);
    wait_count(&s, true, 1, 2000);
    ck_assert(baton_leader_is_leader(l));
    ck_assert_uint_ge(baton_leader_term(l), 1);
    ck_assert(s.resign_in_callback_refused);
    int64_t left = baton_leader_deadline_ns(l) - tu_now_ns();
    ck_assert_int_gt(left, INT64_C(1500000000));
    ck_assert_int_le(left, INT64_C(2000000000) - INT64_C(200000000)); /* ttl - margin */
    struct baton_leader_info info;
    ck_assert_int_eq(baton_election_leader(c, "L:one", &info), BATON_OK);
    ck_assert(info.has_leader);
    ck_assert_str_eq(info.identity, "node");
    ck_assert_uint_eq(info.term, baton_leader_term(l));
    tu_sleep_ms(1500); /* renewals keep it past most of a ttl */
    ck_assert(baton_leader_is_leader(l));
    ck_assert_int_eq(count(&s, false), 0);
    ck_assert_int_eq(baton_leader_resign(l), BATON_OK);
    ck_assert_int_eq(baton_leader_resign(l), BATON_OK); /* the same answer again */
    ck_assert_int_eq(s.lost, 1);
    ck_assert_int_eq(s.lost_reason, 0);
    ck_assert(s.key_held_in_on_lost);
    ck_assert_str_eq(s.order, "gl");
    ck_assert(!baton_leader_is_leader(l));
    ck_assert_int_eq(baton_leader_deadline_ns(l), 0);
    ck_assert_int_eq(baton_election_leader(c, "L:one", &info), BATON_OK);
    ck_assert(!info.has_leader);
    baton_leader_free(l);
    baton_client_free(c);
}
END_TEST

/* Three campaigns: one leader at a time; when it resigns another takes
 * over at once (the resign wakes followers: their safety-net poll is 5 s),
 * with a higher term. */
START_TEST(three_nodes_handover)
{
    enum { N = 3 };
    struct baton_client *cs[N];
    struct seen s[N];
    struct baton_leader *l[N];
    const char *name = "L:three";
    for (int i = 0; i < N; i++) {
        cs[i] = client();
        seen_init(&s[i], name);
        struct baton_leader_opts o = opts(&s[i], 2000);
        ck_assert_int_eq(baton_leader_campaign(cs[i], name, &o, &l[i]), BATON_OK);
    }
    int leader = -1;
    for (int round = 0; round < 2; round++) {
        int64_t until = tu_now_ns() + INT64_C(3000000000);
        int first = -1;
        while (first < 0 && tu_now_ns() < until) {
            for (int i = 0; i < N; i++)
                if (i != leader && l[i] != NULL && baton_leader_is_leader(l[i]))
                    first = i;
            tu_sleep_ms(1);
        }
        ck_assert_int_ge(first, 0);
        /* Exactly one, for a while. */
        for (int k = 0; k < 100; k++) {
            int n = 0;
            for (int i = 0; i < N; i++)
                n += l[i] != NULL && baton_leader_is_leader(l[i]);
            ck_assert_int_eq(n, 1);
            tu_sleep_ms(3);
        }
        uint64_t term = baton_leader_term(l[first]);
        int64_t resigned = tu_now_ns();
        ck_assert_int_eq(baton_leader_resign(l[first]), BATON_OK);
        baton_leader_free(l[first]);
        l[first] = NULL;
        leader = first;
        /* The next one, woken by the resignation. */
        int64_t took = -1;
        until = tu_now_ns() + INT64_C(3000000000);
        while (took < 0 && tu_now_ns() < until) {
            for (int i = 0; i < N; i++)
                if (l[i] != NULL && baton_leader_is_leader(l[i])) {
                    took = tu_now_ns() - resigned;
                    ck_assert_uint_gt(baton_leader_term(l[i]), term);
                }
            tu_sleep_ms(1);
        }
        ck_assert_msg(took >= 0 && took < INT64_C(500000000), "handover took %lld ms",
                      (long long)(took / 1000000));
    }
    for (int i = 0; i < N; i++) {
        baton_leader_free(l[i]);
        baton_client_free(cs[i]);
    }
}
END_TEST

/* The events each follower's subscription got within ms (0: none). */
static unsigned events_within(struct baton_election *f, int64_t ms)
{
    unsigned ev = 0;
    int64_t until = tu_now_ns() + ms * 1000000;
    while (ev == 0 && tu_now_ns() < until) {
        struct pollfd p = {.fd = baton_election_watch_fd(f), .events = POLLIN};
        if (poll(&p, 1, 5) == 1)
            ck_assert_int_eq(baton_election_watch_read(f, &ev), BATON_OK);
    }
    return ev;
}

/* A resignation wakes at most two followers, on their own channels, not
 * the whole group; and one of them takes over at once. Followers without
 * an identity, or with the resigner's own, are all woken (the group's
 * channel), as are those of an older baton. */
START_TEST(resign_names_successors)
{
    enum { N = 4 };
    static const char *const idents[][N + 1] = {
        {"lead", "f0", "f1", "f2", "f3"}, /* named: two of four */
        {"lead", "", "", "", ""},         /* no identities: all */
        {"lead", "lead", "lead", "lead", "lead"}, /* the resigner's own: all */
    };
    static const int woken_want[] = {2, N, N};
    for (size_t k = 0; k < sizeof idents / sizeof idents[0]; k++) {
        struct baton_client *c[N + 1];
        struct baton_election *e[N + 1];
        for (int i = 0; i <= N; i++) {
            c[i] = client();
            struct baton_election_opts o = {.ttl_ms = 5000, .identity = idents[k][i]};
            ck_assert_int_eq(baton_election_new(c[i], "L:succ", &o, &e[i]), BATON_OK);
        }
        ck_assert_int_eq(baton_election_campaign(e[0], NULL), BATON_OK);
        for (int i = 1; i <= N; i++) {
            struct baton_leader_info h;
            ck_assert_int_eq(baton_election_campaign(e[i], &h), BATON_ETAKEN);
            ck_assert_int_eq(baton_election_watch(e[i]), BATON_OK);
        }
        ck_assert_int_eq(baton_election_watch(e[0]), BATON_OK); /* the leader listens too */
        ck_assert_int_eq(baton_election_resign(e[0]), BATON_OK);
        int woken = 0, first = -1;
        for (int i = 1; i <= N; i++) {
            unsigned ev = events_within(e[i], woken == woken_want[k] ? 50 : 500);
            if (ev & BATON_EVENT_RESIGNED) {
                woken++;
                first = first < 0 ? i : first;
            }
        }
        ck_assert_msg(woken == woken_want[k], "case %zu: %d followers woken, want %d", k, woken,
                      woken_want[k]);
        if (woken_want[k] < N) /* named ones: never the resigner (a broadcast reaches it) */
            ck_assert_int_eq(events_within(e[0], 50), 0);
        ck_assert_int_eq(baton_election_campaign(e[first], NULL), BATON_OK);
        ck_assert_int_eq(baton_election_resign(e[first]), BATON_OK);
        for (int i = 0; i <= N; i++) {
            baton_election_free(e[i]);
            baton_client_free(c[i]);
        }
    }
}
END_TEST

/* The lease taken behind the leader's back: the next renewal reports it. */
START_TEST(lost_when_taken)
{
    struct baton_client *c = client();
    struct seen s;
    seen_init(&s, "L:taken");
    struct baton_leader_opts o = opts(&s, 1500);
    struct baton_leader *l = NULL;
    ck_assert_int_eq(baton_leader_campaign(c, "L:taken", &o, &l), BATON_OK);
    wait_count(&s, true, 1, 2000);
    free(tu_redis("SET baton:{L:taken}:leader someone-else PX 60000"));
    int64_t t0 = tu_now_ns();
    wait_count(&s, false, 1, 2000);
    ck_assert_int_lt(s.lost_ns - t0, INT64_C(600000000)); /* within a renew period */
    ck_assert_int_eq(s.lost_reason, BATON_ELOST);
    ck_assert_uint_eq(s.lost_term, s.gained_term);
    ck_assert(!baton_leader_is_leader(l));
    char *v = tu_redis("GET baton:{L:taken}:leader");
    ck_assert_str_eq(v, "someone-else"); /* not released by a non-owner */
    free(v);
    ck_assert_int_eq(baton_leader_resign(l), BATON_OK);
    ck_assert_int_eq(s.lost, 1); /* no second on_lost */
    baton_leader_free(l);
    baton_client_free(c);
}
END_TEST

static void redis_signal(int sig)
{
    const char *p = getenv("BATON_TEST_REDIS_PID");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(kill((pid_t)strtol(p, NULL, 10), sig), 0);
}

/* Redis frozen: no renewal is confirmed, and on_lost comes before the
 * validity deadline (deadline - margin), not after it. */
START_TEST(loss_before_deadline_when_frozen)
{
    struct baton_client *c = client_with(200); /* calls bounded by 400 ms */
    struct seen s;
    seen_init(&s, "L:frozen");
    struct baton_leader_opts o = opts(&s, 2000);
    o.renew_ms = 400;
    o.loss_margin_ms = 300;
    struct baton_leader *l = NULL;
    ck_assert_int_eq(baton_leader_campaign(c, "L:frozen", &o, &l), BATON_OK);
    wait_count(&s, true, 1, 2000);
    tu_sleep_ms(500);
    redis_signal(SIGSTOP);
    int64_t lose_at = 0;
    int64_t until = tu_now_ns() + INT64_C(4000000000);
    while (count(&s, false) == 0 && tu_now_ns() < until) {
        int64_t d = baton_leader_deadline_ns(l);
        if (d != 0)
            lose_at = d;
        tu_sleep_ms(1);
    }
    redis_signal(SIGCONT);
    ck_assert_int_eq(count(&s, false), 1);
    ck_assert_int_eq(s.lost_reason, BATON_EIO);
    int64_t validity = lose_at + 300 * INT64_C(1000000);
    ck_assert_msg(s.lost_ns < validity, "reported %lld ms after the validity deadline",
                  (long long)((s.lost_ns - validity) / 1000000));
    ck_assert_msg(s.lost_ns >= lose_at - INT64_C(2000000), "reported %lld ms early",
                  (long long)((lose_at - s.lost_ns) / 1000000));
    baton_leader_free(l);
    baton_client_free(c);
}
END_TEST

/* A step-down request naming the leader's term: it resigns; with no one
 * else campaigning, it wins again later, with a new term. */
START_TEST(step_down_request)
{
    struct baton_client *c = client();
    struct seen s;
    seen_init(&s, "L:step");
    struct baton_leader_opts o = opts(&s, 2000);
    o.retry_ms = 300;
    struct baton_leader *l = NULL;
    ck_assert_int_eq(baton_leader_campaign(c, "L:step", &o, &l), BATON_OK);
    wait_count(&s, true, 1, 2000);
    uint64_t term = baton_leader_term(l);
    tu_sleep_ms(100); /* the leader's subscription is up */
    int receivers = 0;
    ck_assert_int_eq(baton_election_request_step_down(c, "L:step", term + 7, &receivers), BATON_OK);
    tu_sleep_ms(200);
    ck_assert_int_eq(count(&s, false), 0); /* another term's request is ignored */
    ck_assert_int_eq(baton_election_request_step_down(c, "L:step", term, &receivers), BATON_OK);
    ck_assert_int_ge(receivers, 1);
    wait_count(&s, false, 1, 1000);
    ck_assert_int_eq(s.lost_reason, 0);
    wait_count(&s, true, 2, 3000);
    ck_assert_uint_gt(baton_leader_term(l), term);
    ck_assert_str_eq(s.order, "glg");
    baton_leader_free(l); /* resigns: the fourth callback */
    ck_assert_str_eq(s.order, "glgl");
    baton_client_free(c);
}
END_TEST

/* Redis unreachable: the campaign runs (and backs off) without a leader,
 * and resign returns promptly. */
START_TEST(unreachable)
{
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", tu_dead_port());
    struct baton_client *c = NULL;
    struct baton_client_opts co = {
        .lazy = true, .connect_timeout_ms = 200, .command_timeout_ms = 200};
    ck_assert_int_eq(baton_client_new(url, &co, &c), BATON_OK);
    struct seen s;
    seen_init(&s, "L:dead");
    struct baton_leader_opts o = opts(&s, 2000);
    o.retry_ms = 200;
    struct baton_leader *l = NULL;
    ck_assert_int_eq(baton_leader_campaign(c, "L:dead", &o, &l), BATON_OK);
    tu_sleep_ms(500);
    ck_assert(!baton_leader_is_leader(l));
    int64_t t0 = tu_now_ns();
    ck_assert_int_eq(baton_leader_resign(l), BATON_OK);
    ck_assert_int_lt(tu_now_ns() - t0, INT64_C(1000000000));
    ck_assert_int_eq(s.gained + s.lost, 0);
    baton_leader_free(l);
    baton_client_free(c);
}
END_TEST

START_TEST(bad_arguments)
{
    struct baton_client *c = client(); /* calls bounded by 600 ms */
    struct baton_leader *l = NULL;
    /* renew + calls + margin must fit in ttl - drift. */
    struct baton_leader_opts o = {.ttl_ms = 1000};
    ck_assert_int_eq(baton_leader_campaign(c, "L:bad", &o, &l), BATON_EINVAL);
    o = (struct baton_leader_opts){.ttl_ms = 2000, .renew_ms = 1200};
    ck_assert_int_eq(baton_leader_campaign(c, "L:bad", &o, &l), BATON_EINVAL);
    o = (struct baton_leader_opts){.ttl_ms = 2000};
    ck_assert_int_eq(baton_leader_campaign(c, "", &o, &l), BATON_EINVAL);
    ck_assert_int_eq(baton_leader_campaign(c, "a{b}", &o, &l), BATON_EINVAL);
    ck_assert_int_eq(baton_leader_campaign(NULL, "L:bad", &o, &l), BATON_EINVAL);
    ck_assert_int_eq(baton_leader_campaign(c, "L:bad", &o, NULL), BATON_EINVAL);
    ck_assert_ptr_null(l);
    ck_assert_int_eq(baton_leader_resign(NULL), BATON_EINVAL);
    ck_assert(!baton_leader_is_leader(NULL));
    ck_assert_uint_eq(baton_leader_term(NULL), 0);
    baton_leader_free(NULL);
    /* Defaults (ttl 10 s) fit the default client timeouts. */
    struct baton_client *d = NULL;
    ck_assert_int_eq(baton_client_new(tu_redis_url(), NULL, &d), BATON_OK);
    ck_assert_int_eq(baton_leader_campaign(d, "L:defaults", NULL, &l), BATON_OK);
    baton_leader_free(l);
    baton_client_free(d);
    baton_client_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("redis_leader");
    TCase *tc = tcase_create("leader");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, gain_and_resign);
    tcase_add_test(tc, three_nodes_handover);
    tcase_add_test(tc, resign_names_successors);
    tcase_add_test(tc, lost_when_taken);
    tcase_add_test(tc, loss_before_deadline_when_frozen);
    tcase_add_test(tc, step_down_request);
    tcase_add_test(tc, unreachable);
    tcase_add_test(tc, bad_arguments);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
