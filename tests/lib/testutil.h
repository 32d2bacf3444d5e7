/* testutil.h -- helpers for the C test suites and benchmarks. */
#ifndef BATON_TESTUTIL_H
#define BATON_TESTUTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct Suite;
/* Runs a Check suite in fork mode (a crash fails one test, not the run).
 * Returns the process exit status: 0 when every test passed. */
int tu_run(struct Suite *s);

/* The URL of the throwaway redis-server that tests/lib/with-redis.sh started
 * (BATON_TEST_URL). Aborts the test, failing it, when unset: suites that need
 * Redis never skip. */
const char *tu_redis_url(void);
/* Its port (BATON_TEST_REDIS_PORT). */
int tu_redis_port(void);

/* CLOCK_MONOTONIC in ns / ms. */
int64_t tu_now_ns(void);
int64_t tu_now_ms(void);
void tu_sleep_ms(int64_t ms);

/* Runs one Redis command given as a space-separated string (no quoting) on
 * a fresh connection to the test server and returns the reply as text
 * ("(nil)", "OK", "42", "-ERR ..."). Returns: owned; free with free(). */
char *tu_redis(const char *cmd);

/* A client of the test server with connect and command timeouts of
 * timeout_ms; fails the test when it cannot connect. Owned; free with
 * baton_client_free(). */
struct baton_client *tu_client(int64_t timeout_ms);
/* tu_redis() whose reply must be an integer. */
long long tu_redis_int(const char *cmd);

/* A benchmark's ceiling: on a connection of its own to url (libbaton's
 * transport), sends command a then command b, as raw commands, until *stop.
 * Returns the number of pairs, or -1 when a connection or command fails. */
int64_t tu_raw_pairs(const char *url, int na, const char *const *a, int nb, const char *const *b,
                     atomic_bool *stop);

/* A raw connection to url on libbaton's transport, or NULL. Free it with
 * tu_raw_close(). */
struct baton__conn *tu_raw_open(const char *url);
void tu_raw_close(struct baton__conn *cn);
/* Sends one raw command (argc <= 16) and reads its reply. Returns false
 * when it fails. */
bool tu_raw_cmd(struct baton__conn *cn, int argc, const char *const *argv);

/* An in-process counting semaphore that hands its tokens to waiting
 * threads in arrival order: the ideal local handoff, for the ceilings of
 * contended benchmarks. Initialize with TU_TOKENS(n). */
struct tu_tnode;
struct tu_tokens {
    pthread_mutex_t mu;
    int free;
    struct tu_tnode *head, *tail;
};
#define TU_TOKENS(n)                                                                               \
    {                                                                                              \
        .mu = PTHREAD_MUTEX_INITIALIZER, .free = (n)                                               \
    }
void tu_tokens_take(struct tu_tokens *t);
void tu_tokens_give(struct tu_tokens *t);

/* The context switches of this process so far, all its threads, voluntary
 * and not (getrusage): benchmarks report them per cycle. */
int64_t tu_ctx_switches(void);

/* A loopback port nothing listens on (for "Redis unreachable" tests). */
int tu_dead_port(void);

#endif
