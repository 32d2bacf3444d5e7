/* cluster_check.c -- libbaton's primitives against a Redis Cluster, for
 * tests/integration/test_cluster.sh:
 *   cluster_check URL basic     locks (fences, exclusion, a waiter woken
 *                               across nodes), semaphores, multi-locks
 *                               (one slot: one script; across slots: one by
 *                               one), an election; prints one line per check,
 *                               exits 1 at the first that fails
 *   cluster_check URL load SECS lock cycles on 16 keys spread over the slots
 *                               from 4 threads for SECS seconds; prints
 *                               {"cycles":N,"errors":E,"first_error":"..."}
 *                               and checks each key's fences increase */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "baton.h"
#include "baton_election.h"
#include "baton_redis.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (cond) {                                                                                \
            printf("ok   ");                                                                       \
        } else {                                                                                   \
            printf("FAIL ");                                                                       \
            failures++;                                                                            \
        }                                                                                          \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
        if (!(cond))                                                                               \
            return 1;                                                                              \
    } while (0)

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct waiter {
    struct baton_client *c;
    const char *key;
    int rc;
    int64_t waited_ms;
};

static void *wait_for(void *arg)
{
    struct waiter *w = arg;
    struct baton_lock_opts o = {.ttl_ms = 10000, .max_wait_ms = 8000, .retry_delay_ms = 5000};
    struct baton_lock *lk = NULL;
    int64_t t0 = now_ms();
    w->rc = baton_lock_acquire(w->c, w->key, &o, &lk);
    w->waited_ms = now_ms() - t0;
    if (lk != NULL) {
        baton_lock_release(lk);
        baton_lock_free(lk);
    }
    return NULL;
}

static int basic(const char *url)
{
    struct baton_client *c = NULL, *c2 = NULL;
    int rc = baton_client_new(url, NULL, &c);
    CHECK(rc == 0, "client on %s: %s", url, rc ? baton_client_errstr(c) : "connected");
    rc = baton_client_new(url, NULL, &c2);
    CHECK(rc == 0, "second client: %s", rc ? baton_client_errstr(c2) : "connected");

    /* Locks on keys of every master: fences strictly increase per key,
     * a second owner is refused. */
    const char *keys[] = {"acct:1", "acct:2", "acct:3", "acct:4", "acct:5", "acct:6"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        uint64_t last = 0;
        for (int round = 0; round < 3; round++) {
            struct baton_lock *lk = NULL, *other = NULL;
            struct baton_lock_opts o = {.ttl_ms = 5000, .max_wait_ms = BATON_NO_WAIT};
            rc = baton_lock_try(c, keys[i], &o, &lk);
            CHECK(rc == 0, "lock %s round %d: %s", keys[i], round,
                  rc ? baton_client_errstr(c) : "granted");
            uint64_t f = baton_lock_fence(lk);
            CHECK(f > last, "lock %s fence %llu > %llu", keys[i], (unsigned long long)f,
                  (unsigned long long)last);
            last = f;
            rc = baton_lock_try(c2, keys[i], &o, &other);
            CHECK(rc == BATON_ETAKEN, "lock %s held: the other client gets %s", keys[i],
                  baton_errname(rc));
            rc = baton_lock_extend(lk, 5000);
            CHECK(rc == 0, "lock %s extended: %s", keys[i], baton_errname(rc));
            rc = baton_lock_release(lk);
            CHECK(rc == 0, "lock %s released: %s", keys[i], baton_errname(rc));
            baton_lock_free(lk);
        }
    }

    /* A waiter is woken by the release (pub/sub crosses the nodes): it
     * waits far less than its 5 s retry delay. */
    {
        struct baton_lock *lk = NULL;
        struct baton_lock_opts o = {.ttl_ms = 10000, .max_wait_ms = BATON_NO_WAIT};
        rc = baton_lock_try(c, "wake:me", &o, &lk);
        CHECK(rc == 0, "lock wake:me: %s", baton_errname(rc));
        struct waiter w = {.c = c2, .key = "wake:me"};
        pthread_t t;
        pthread_create(&t, NULL, wait_for, &w);
        struct timespec ts = {0, 300 * 1000000};
        nanosleep(&ts, NULL);
        int64_t released = now_ms();
        baton_lock_release(lk);
        baton_lock_free(lk);
        pthread_join(t, NULL);
        int64_t after = now_ms() - released;
        CHECK(w.rc == 0 && after < 2000, "waiter of wake:me woken %lld ms after the release (%s)",
              (long long)after, baton_errname(w.rc));
    }

    /* Semaphore: at most 2 holders. */
    {
        struct baton_permit *p[3] = {NULL, NULL, NULL};
        struct baton_sem_opts o = {.ttl_ms = 5000, .max_wait_ms = BATON_NO_WAIT};
        rc = baton_sem_try(c, "pool", 2, &o, &p[0]);
        CHECK(rc == 0, "permit 1 of pool: %s", baton_errname(rc));
        rc = baton_sem_try(c2, "pool", 2, &o, &p[1]);
        CHECK(rc == 0, "permit 2 of pool: %s", baton_errname(rc));
        CHECK(baton_permit_fence(p[1]) > baton_permit_fence(p[0]), "permit fences increase");
        rc = baton_sem_try(c2, "pool", 2, &o, &p[2]);
        CHECK(rc == BATON_ETAKEN, "permit 3 of 2 refused: %s", baton_errname(rc));
        int holders = -1;
        rc = baton_sem_holders(c, "pool", &holders);
        CHECK(rc == 0 && holders == 2, "pool has %d holders", holders);
        rc = baton_sem_release(p[0]);
        CHECK(rc == 0, "permit 1 released: %s", baton_errname(rc));
        rc = baton_sem_try(c2, "pool", 2, &o, &p[2]);
        CHECK(rc == 0, "permit 3 after a release: %s", baton_errname(rc));
        for (int i = 0; i < 3; i++) {
            if (i > 0)
                baton_sem_release(p[i]);
            baton_permit_free(p[i]);
        }
    }

    /* Multi-lock, keys of one slot ({acct} is the hash tag of both):
     * one script; keys of different slots: one by one, all or nothing. */
    {
        const char *same[] = {"{acct}:1", "{acct}:2"};
        const char *spread[] = {"acct:1", "acct:2", "acct:3", "acct:4"};
        struct baton_lock_opts o = {.ttl_ms = 5000, .max_wait_ms = BATON_NO_WAIT};
        struct baton_multi *m = NULL, *m2 = NULL;
        rc = baton_multi_acquire(c, same, 2, &o, &m);
        CHECK(rc == 0, "multi-lock of one slot: %s %s", baton_errname(rc),
              rc ? baton_client_errstr(c) : "");
        CHECK(baton_lock_fence(baton_multi_lock(m, 0)) > 0 &&
                  baton_lock_fence(baton_multi_lock(m, 1)) > 0,
              "multi-lock of one slot: fences %llu %llu",
              (unsigned long long)baton_lock_fence(baton_multi_lock(m, 0)),
              (unsigned long long)baton_lock_fence(baton_multi_lock(m, 1)));
        rc = baton_multi_acquire(c2, same, 2, &o, &m2);
        CHECK(rc == BATON_ETAKEN, "multi-lock of one slot held: the other gets %s",
              baton_errname(rc));
        baton_multi_release(m);
        baton_multi_free(m);
        m = NULL;
        rc = baton_multi_acquire(c, spread, 4, &o, &m);
        CHECK(rc == 0, "multi-lock across slots (and masters): %s %s", baton_errname(rc),
              rc ? baton_client_errstr(c) : "");
        struct baton_lock *one = NULL;
        rc = baton_lock_try(c2, "acct:3", &o, &one);
        CHECK(rc == BATON_ETAKEN, "a key of the multi-lock is held: %s", baton_errname(rc));
        baton_multi_release(m);
        baton_multi_free(m);
        /* all or nothing: acct:3 held elsewhere, the multi-lock takes none */
        rc = baton_lock_try(c2, "acct:3", &o, &one);
        CHECK(rc == 0, "acct:3 taken by the other client: %s", baton_errname(rc));
        m = NULL;
        rc = baton_multi_acquire(c, spread, 4, &o, &m);
        CHECK(rc == BATON_ETAKEN && m == NULL, "multi-lock with a key held: %s",
              baton_errname(rc));
        struct baton_lock *free1 = NULL;
        rc = baton_lock_try(c2, "acct:1", &o, &free1);
        CHECK(rc == 0, "... and it left acct:1 free: %s", baton_errname(rc));
        baton_lock_release(free1);
        baton_lock_free(free1);
        baton_lock_release(one);
        baton_lock_free(one);
    }

    /* Election: one leader; its resignation lets the other lead, in a
     * higher term. */
    {
        struct baton_election *e1 = NULL, *e2 = NULL;
        struct baton_election_opts o1 = {.ttl_ms = 5000, .identity = "one"};
        struct baton_election_opts o2 = {.ttl_ms = 5000, .identity = "two"};
        struct baton_leader_info h;
        baton_election_new(c, "grp", &o1, &e1);
        baton_election_new(c2, "grp", &o2, &e2);
        rc = baton_election_campaign(e1, &h);
        CHECK(rc == 0, "election: one leads: %s", baton_errname(rc));
        uint64_t t1 = baton_election_term(e1);
        rc = baton_election_campaign(e2, &h);
        CHECK(rc == BATON_ETAKEN && h.has_leader && strcmp(h.identity, "one") == 0,
              "election: two sees leader %s in term %llu", h.identity,
              (unsigned long long)h.term);
        rc = baton_election_renew(e1);
        CHECK(rc == 0, "election: one renews: %s", baton_errname(rc));
        rc = baton_election_resign(e1);
        CHECK(rc == 0, "election: one resigns: %s", baton_errname(rc));
        rc = baton_election_campaign(e2, &h);
        CHECK(rc == 0 && baton_election_term(e2) > t1, "election: two leads in term %llu > %llu",
              (unsigned long long)baton_election_term(e2), (unsigned long long)t1);
        baton_election_resign(e2);
        baton_election_free(e1);
        baton_election_free(e2);
    }

    /* A command with a key goes to its slot's master; keyless ones to any. */
    {
        const char *set[] = {"SET", "plain:key", "v"};
        const char *get[] = {"GET", "plain:key"};
        const char *ping[] = {"PING"};
        struct baton_reply *r = NULL;
        rc = baton_client_command(c, 3, set, NULL, &r);
        baton_reply_free(r);
        CHECK(rc == 0, "SET through the cluster: %s", rc ? baton_client_errstr(c) : "OK");
        r = NULL;
        rc = baton_client_command(c2, 2, get, NULL, &r);
        CHECK(rc == 0 && r->type == BATON_REPLY_STRING && strcmp(r->str, "v") == 0,
              "GET through the cluster: %s", rc ? baton_client_errstr(c2) : r->str);
        baton_reply_free(r);
        r = NULL;
        rc = baton_client_command(c, 1, ping, NULL, &r);
        CHECK(rc == 0, "PING to any node: %s", rc ? baton_client_errstr(c) : r->str);
        baton_reply_free(r);
    }
    baton_client_free(c2);
    baton_client_free(c);
    return failures > 0;
}

/* ---- load ---- */

#define LOAD_KEYS    16
#define LOAD_THREADS 4

struct load {
    struct baton_client *c;
    int64_t until_ms;
    pthread_mutex_t mu;
    uint64_t last_fence[LOAD_KEYS];
    atomic_long cycles, errors, backwards;
    char first_error[512];
    int id;
};

static void *load_main(void *arg)
{
    struct load *ld = arg;
    unsigned seed = (unsigned)(uintptr_t)&seed;
    while (now_ms() < ld->until_ms) {
        int k = (int)(rand_r(&seed) % LOAD_KEYS);
        char key[32];
        snprintf(key, sizeof key, "load:%d", k);
        struct baton_lock_opts o = {.ttl_ms = 3000, .max_wait_ms = 2000};
        struct baton_lock *lk = NULL;
        int rc = baton_lock_acquire(ld->c, key, &o, &lk);
        if (rc == 0) {
            uint64_t f = baton_lock_fence(lk);
            pthread_mutex_lock(&ld->mu);
            if (f <= ld->last_fence[k])
                atomic_fetch_add(&ld->backwards, 1);
            ld->last_fence[k] = f;
            pthread_mutex_unlock(&ld->mu);
            rc = baton_lock_release(lk);
            if (rc == 0)
                atomic_fetch_add(&ld->cycles, 1);
        }
        if (rc != 0 && rc != BATON_ETIMEDOUT) {
            atomic_fetch_add(&ld->errors, 1);
            pthread_mutex_lock(&ld->mu);
            if (ld->first_error[0] == '\0')
                snprintf(ld->first_error, sizeof ld->first_error, "%s: %s", baton_errname(rc),
                         lk != NULL ? baton_lock_errstr(lk) : baton_client_errstr(ld->c));
            pthread_mutex_unlock(&ld->mu);
            struct timespec ts = {0, 50 * 1000000};
            nanosleep(&ts, NULL);
        }
        baton_lock_free(lk);
    }
    return NULL;
}

static int load(const char *url, int secs)
{
    struct load ld = {.until_ms = now_ms() + (int64_t)secs * 1000};
    struct baton_client_opts co = {.command_timeout_ms = 1000, .connect_timeout_ms = 500};
    pthread_t t[LOAD_THREADS];
    pthread_mutex_init(&ld.mu, NULL);
    if (baton_client_new(url, &co, &ld.c) != 0) {
        fprintf(stderr, "client: %s\n", baton_client_errstr(ld.c));
        baton_client_free(ld.c);
        return 1;
    }
    for (int i = 0; i < LOAD_THREADS; i++)
        pthread_create(&t[i], NULL, load_main, &ld);
    for (int i = 0; i < LOAD_THREADS; i++)
        pthread_join(t[i], NULL);
    char esc[512];
    size_t o = 0;
    for (const char *p = ld.first_error; *p != '\0' && o + 2 < sizeof esc; p++)
        if (*p != '"' && *p != '\\')
            esc[o++] = *p;
    esc[o] = '\0';
    printf("{\"cycles\":%ld,\"errors\":%ld,\"fences_backwards\":%ld,\"first_error\":\"%s\"}\n",
           atomic_load(&ld.cycles), atomic_load(&ld.errors), atomic_load(&ld.backwards), esc);
    baton_client_free(ld.c);
    pthread_mutex_destroy(&ld.mu);
    return atomic_load(&ld.backwards) > 0 || atomic_load(&ld.cycles) == 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[2], "basic") == 0)
        return basic(argv[1]);
    if (argc >= 4 && strcmp(argv[2], "load") == 0) {
        char *end = NULL;
        long secs = strtol(argv[3], &end, 10);
        if (end != argv[3] && *end == '\0' && secs > 0 && secs <= 3600)
            return load(argv[1], (int)secs);
    }
    fprintf(stderr, "usage: cluster_check URL basic | URL load SECS\n");
    return 2;
}
