/* bench_sem.c -- semaphore throughput, printed as one JSON object.
 *
 * 50 threads share one client and cycle baton_sem_acquire() +
 * baton_sem_release() on one semaphore of limit 5 (zero hold time, so 45
 * threads wait at any moment and every cycle is a handoff through the
 * queue and the wake-up channel). Next to it, the ceiling measured in the
 * same run: the same 50 threads on the same transport (our connection
 * code, one connection per thread) sending the raw commands of the
 * equivalent work, `ZADD key score member` + `ZREM key member` pairs on
 * one key, with no limit and no waiting. Target: >= 0.7 x the ceiling.
 * The holders seen inside at once are counted, and must never exceed 5.
 *
 * For context, the same 50 threads with limit 50 (nobody ever waits): what
 * one acquire script + one release script cost against two plain
 * commands, without the handoffs; and the ceiling at the semaphore's own
 * concurrency: the same raw pairs by the same 50 threads, but only by the
 * holder of one of 5 in-process tokens, handed first come, first served
 * from thread to thread (a limit of 5 allows no more round trips in flight,
 * and every cycle waits for a handoff between threads).
 *
 * usage: bench_sem [--url URL] [--seconds S] [--smoke]
 * (URL defaults to $BATON_TEST_URL; tests/lib/with-redis.sh provides one.)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton.h"
#include "baton_int.h"
#include "testutil.h"

#define THREADS 50
#define LIMIT   5

static const char *url;
static double seconds = 5.0;

struct arg {
    int id;
    int limit;
    struct baton_client *c;
    atomic_bool *stop;
    atomic_int *inside, *max_inside;
    int64_t cycles;
    int errors;
};

static void *raw_main(void *p)
{
    struct arg *a = p;
    char member[64];
    snprintf(member, sizeof member, "0123456789abcdef0123456789abcdef01234567%08d", a->id);
    const char *zadd[4] = {"ZADD", "bench:sem:raw", "1700000000000", member};
    const char *zrem[3] = {"ZREM", "bench:sem:raw", member};
    a->cycles = tu_raw_pairs(url, 4, zadd, 3, zrem, a->stop);
    if (a->cycles < 0) {
        a->cycles = 0;
        a->errors++;
    }
    return NULL;
}

/* The semaphore's concurrency without the semaphore: LIMIT in-process
 * tokens, handed first come, first served. */
static struct tu_tokens tokens = TU_TOKENS(LIMIT);

static void *chain_main(void *p)
{
    struct arg *a = p;
    char member[64];
    snprintf(member, sizeof member, "0123456789abcdef0123456789abcdef01234567%08d", a->id);
    const char *zadd[4] = {"ZADD", "bench:sem:chain", "1700000000000", member};
    const char *zrem[3] = {"ZREM", "bench:sem:chain", member};
    struct baton__conn *cn = tu_raw_open(url);
    if (cn == NULL)
        a->errors++;
    while (cn != NULL && !atomic_load(a->stop)) {
        tu_tokens_take(&tokens);
        if (!tu_raw_cmd(cn, 4, zadd) || !tu_raw_cmd(cn, 3, zrem))
            a->errors++;
        else
            a->cycles++;
        tu_tokens_give(&tokens);
    }
    tu_raw_close(cn);
    return NULL;
}

static void *lib_main(void *p)
{
    struct arg *a = p;
    struct baton_sem_opts o = {.ttl_ms = 30000, .max_wait_ms = 30000};
    while (!atomic_load(a->stop)) {
        struct baton_permit *pm = NULL;
        if (baton_sem_acquire(a->c, a->limit == LIMIT ? "bench:sem" : "bench:sem:wide", a->limit,
                              &o, &pm) != BATON_OK) {
            a->errors++;
            break;
        }
        int now = atomic_fetch_add(a->inside, 1) + 1;
        int seen = atomic_load(a->max_inside);
        while (now > seen && !atomic_compare_exchange_weak(a->max_inside, &seen, now))
            ;
        atomic_fetch_sub(a->inside, 1);
        if (baton_sem_release(pm) != BATON_OK)
            a->errors++;
        baton_permit_free(pm);
        a->cycles++;
    }
    return NULL;
}

/* Runs THREADS threads of fn for the configured time. Returns cycles/s. */
static double run(void *(*fn)(void *), struct baton_client *c, int limit, int *errors,
                  int *max_inside)
{
    pthread_t th[THREADS];
    struct arg a[THREADS];
    atomic_bool stop = false;
    atomic_int inside = 0, maxi = 0;
    for (int i = 0; i < THREADS; i++) {
        a[i] = (struct arg){
            .id = i, .limit = limit, .c = c, .stop = &stop, .inside = &inside, .max_inside = &maxi};
        pthread_create(&th[i], NULL, fn, &a[i]);
    }
    int64_t t0 = tu_now_ns();
    tu_sleep_ms((int64_t)(seconds * 1000));
    atomic_store(&stop, true);
    int64_t total = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        total += a[i].cycles;
        *errors += a[i].errors;
    }
    *max_inside = atomic_load(&maxi);
    return (double)total / ((double)(tu_now_ns() - t0) / 1e9);
}

int main(int argc, char **argv)
{
    url = getenv("BATON_TEST_URL");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0) {
            seconds = 0.3;
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            char *end = NULL;
            seconds = strtod(argv[++i], &end);
            if (end == argv[i] || *end != '\0')
                seconds = -1;
        } else if (strcmp(argv[i], "--url") == 0 && i + 1 < argc) {
            url = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_sem [--url URL] [--seconds S] [--smoke]\n");
            return 2;
        }
    }
    if (url == NULL || !(seconds > 0 && seconds <= 600)) {
        fprintf(stderr, "bench_sem: need --url or BATON_TEST_URL, and 0 < seconds <= 600\n");
        return 2;
    }
    struct baton_client *c = NULL;
    if (baton_client_new(url, NULL, &c) != BATON_OK) {
        fprintf(stderr, "bench_sem: %s\n", baton_client_errstr(c));
        baton_client_free(c);
        return 1;
    }
    int errors = 0, max_raw = 0, max_lib = 0, max_wide = 0;
    double ceiling = run(raw_main, NULL, 0, &errors, &max_raw);
    double chain = run(chain_main, NULL, LIMIT, &errors, &max_raw);
    double lib = run(lib_main, c, LIMIT, &errors, &max_lib);
    double wide = run(lib_main, c, THREADS, &errors, &max_wide);
    baton_client_free(c);
    double ratio = ceiling > 0 ? lib / ceiling : 0;
    bool ok = errors == 0 && max_lib <= LIMIT && ratio >= 0.7;
    printf("{\"bench\":\"sem\",\"seconds\":%.1f,\"threads\":%d,"
           "\"ceiling_raw_zadd_zrem_per_sec\":%.0f,\n"
           " \"limit_%d\":{\"baton_acquire_release_per_sec\":%.0f,\"ratio\":%.3f,"
           "\"target_ratio\":0.7,\"max_holders_seen\":%d},\n"
           " \"limit_%d_nobody_waits\":{\"baton_acquire_release_per_sec\":%.0f,\"ratio\":%.3f},\n"
           " \"ceiling_at_concurrency_%d\":{\"raw_pairs_by_5_token_holders_per_sec\":%.0f,"
           "\"baton_limit_%d_ratio\":%.3f},\n"
           " \"errors\":%d,\"ok\":%s}\n",
           seconds, THREADS, ceiling, LIMIT, lib, ratio, max_lib, THREADS, wide,
           ceiling > 0 ? wide / ceiling : 0, LIMIT, chain, LIMIT, chain > 0 ? lib / chain : 0,
           errors, ok ? "true" : "false");
    return errors == 0 && max_lib <= LIMIT ? 0 : 1;
}
