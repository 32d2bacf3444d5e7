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
 * The limit-5 run also records how long each acquire waited (p50, p99,
 * longest). And the same limit-5 run with a client per thread ("clients"):
 * every handoff then goes from one client to another, as between
 * processes, through the grant the release publishes to the waiter's
 * client (scripts.c).
 *
 * And the 50 clients as the peers run them (bench_peers.sh, "async"): 50
 * cycles of baton_sem_acquire_async() + baton_sem_release_async() in
 * flight on one client, all driven from its loop thread by their
 * callbacks (one thread, one connection), with the same waits recorded.
 *
 * usage: bench_sem [--url URL] [--seconds S] [--smoke]
 *                  [--only raw|chain|lib|clients|wide|async]
 * (--only runs one part and prints its cycles/s: bench_peers.sh reads
 * Redis's CPU around each part.)
 * (URL defaults to $BATON_TEST_URL; tests/lib/with-redis.sh provides one.)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton.h"
#include "transport_int.h"
#include "testutil.h"

#define THREADS 50
#define LIMIT   5

static const char *url;
static double seconds = 5.0;
static const char *only = "";

struct arg {
    int id;
    int limit;
    struct baton_client *c;
    atomic_bool *stop;
    atomic_int *inside, *max_inside;
    int64_t cycles;
    int errors;
    int64_t *waits; /* ns, one per acquire of the limit-LIMIT run */
    size_t nwaits, capwaits;
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
    bool own = a->c == NULL;
    if (own && baton_client_new(url, NULL, &a->c) != BATON_OK) {
        a->errors++;
        baton_client_free(a->c);
        return NULL;
    }
    while (!atomic_load(a->stop)) {
        struct baton_permit *pm = NULL;
        int64_t t0 = tu_now_ns();
        if (baton_sem_acquire(a->c, a->limit == LIMIT ? "bench:sem" : "bench:sem:wide", a->limit,
                              &o, &pm) != BATON_OK) {
            a->errors++;
            break;
        }
        if (a->nwaits < a->capwaits)
            a->waits[a->nwaits++] = tu_now_ns() - t0;
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
    if (own)
        baton_client_free(a->c);
    return NULL;
}

/* ---- the asynchronous cycles: THREADS of them on one client's loop ---- */

struct acycles {
    struct baton_client *c;
    atomic_bool stop;
    atomic_int inside, max_inside, done, errors;
    atomic_llong cycles;
    int64_t *waits; /* ns, one per acquire */
    atomic_size_t nwaits;
    size_t capwaits;
};

struct acycler {
    struct acycles *all;
    int64_t asked_ns;
};

static void a_granted(struct baton_permit *p, int rc, const char *why, void *arg);

static void a_next(struct acycler *w)
{
    static const struct baton_sem_opts o = {.ttl_ms = 30000, .max_wait_ms = 30000};
    struct acycles *all = w->all;
    if (atomic_load(&all->stop)) {
        atomic_fetch_add(&all->done, 1);
        return;
    }
    w->asked_ns = tu_now_ns();
    if (baton_sem_acquire_async(all->c, "bench:sem:async", LIMIT, &o, a_granted, w) != BATON_OK) {
        atomic_fetch_add(&all->errors, 1);
        atomic_fetch_add(&all->done, 1);
    }
}

static void a_released(struct baton_permit *p, int rc, const char *why, void *arg)
{
    struct acycler *w = arg;
    (void)why;
    if (rc != BATON_OK)
        atomic_fetch_add(&w->all->errors, 1);
    baton_permit_free(p);
    atomic_fetch_add(&w->all->cycles, 1);
    a_next(w);
}

static void a_granted(struct baton_permit *p, int rc, const char *why, void *arg)
{
    struct acycler *w = arg;
    struct acycles *all = w->all;
    if (rc != BATON_OK) {
        fprintf(stderr, "bench_sem: acquire_async: %s: %s\n", baton_errname(rc), why);
        atomic_fetch_add(&all->errors, 1);
        atomic_fetch_add(&all->done, 1);
        return;
    }
    size_t k = atomic_fetch_add(&all->nwaits, 1);
    if (k < all->capwaits)
        all->waits[k] = tu_now_ns() - w->asked_ns;
    int now = atomic_fetch_add(&all->inside, 1) + 1;
    int seen = atomic_load(&all->max_inside);
    while (now > seen && !atomic_compare_exchange_weak(&all->max_inside, &seen, now))
        ;
    atomic_fetch_sub(&all->inside, 1);
    if (baton_sem_release_async(p, a_released, w) != BATON_OK) {
        atomic_fetch_add(&all->errors, 1);
        baton_permit_free(p);
        atomic_fetch_add(&all->done, 1);
    }
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

/* Waits of the acquires, in ms. */
struct waits {
    double p50, p99, longest;
    size_t samples;
};

/* Sorts the n waits (ns) and fills *w from them (nothing when n is 0). */
static void summarize(int64_t *v, size_t n, struct waits *w)
{
    if (n == 0)
        return;
    qsort(v, n, sizeof *v, cmp_i64);
    *w = (struct waits){.p50 = (double)v[(size_t)(0.50 * (double)(n - 1) + 0.5)] / 1e6,
                        .p99 = (double)v[(size_t)(0.99 * (double)(n - 1) + 0.5)] / 1e6,
                        .longest = (double)v[n - 1] / 1e6,
                        .samples = n};
}

/* Runs THREADS asynchronous cycles on c for the configured time; fills *w
 * with the waits. Returns cycles/s. */
static double run_async(struct baton_client *c, int *errors, int *max_inside, struct waits *w)
{
    static struct acycles all;
    struct acycler cy[THREADS];
    all = (struct acycles){.c = c, .capwaits = (size_t)(seconds * 100000) + 1000};
    if ((all.waits = calloc(all.capwaits, sizeof(int64_t))) == NULL) {
        (*errors)++;
        return 0;
    }
    int64_t t0 = tu_now_ns();
    for (int i = 0; i < THREADS; i++) {
        cy[i] = (struct acycler){.all = &all};
        a_next(&cy[i]);
    }
    tu_sleep_ms((int64_t)(seconds * 1000));
    atomic_store(&all.stop, true);
    long long cycles = atomic_load(&all.cycles);
    int64_t t1 = tu_now_ns();
    int64_t until = t1 + INT64_C(35000000000); /* above the maximum wait */
    while (atomic_load(&all.done) < THREADS && tu_now_ns() < until)
        tu_sleep_ms(1);
    if (atomic_load(&all.done) < THREADS) {
        fprintf(stderr, "bench_sem: %d asynchronous cycles never ended\n",
                THREADS - atomic_load(&all.done));
        (*errors)++;
        exit(1); /* their callbacks would use the stack of this frame */
    }
    *errors += atomic_load(&all.errors);
    *max_inside = atomic_load(&all.max_inside);
    size_t n = atomic_load(&all.nwaits);
    summarize(all.waits, n < all.capwaits ? n : all.capwaits, w);
    free(all.waits);
    return (double)cycles / ((double)(t1 - t0) / 1e9);
}

/* Runs THREADS threads of fn for the configured time; fills *w (when not
 * NULL) with the waits of the acquires. Returns cycles/s. */
static double run(void *(*fn)(void *), struct baton_client *c, int limit, int *errors,
                  int *max_inside, struct waits *w)
{
    pthread_t th[THREADS];
    struct arg a[THREADS];
    atomic_bool stop = false;
    atomic_int inside = 0, maxi = 0;
    size_t cap = w != NULL ? (size_t)(seconds * 20000) + 1000 : 0;
    for (int i = 0; i < THREADS; i++) {
        a[i] = (struct arg){
            .id = i, .limit = limit, .c = c, .stop = &stop, .inside = &inside, .max_inside = &maxi};
        if (cap > 0 && (a[i].waits = calloc(cap, sizeof(int64_t))) != NULL)
            a[i].capwaits = cap;
        pthread_create(&th[i], NULL, fn, &a[i]);
    }
    int64_t t0 = tu_now_ns();
    tu_sleep_ms((int64_t)(seconds * 1000));
    atomic_store(&stop, true);
    int64_t total = 0;
    size_t nw = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        total += a[i].cycles;
        *errors += a[i].errors;
        nw += a[i].nwaits;
    }
    if (w != NULL) {
        int64_t *all = calloc(nw + 1, sizeof *all);
        size_t k = 0;
        for (int i = 0; i < THREADS && all != NULL; i++) {
            if (a[i].nwaits == 0)
                continue; /* waits may be NULL: memcpy wants a pointer even for 0 bytes */
            memcpy(all + k, a[i].waits, a[i].nwaits * sizeof *all);
            k += a[i].nwaits;
        }
        if (all != NULL)
            summarize(all, k, w);
        free(all);
    }
    for (int i = 0; i < THREADS; i++)
        free(a[i].waits);
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
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_sem [--url URL] [--seconds S] [--smoke] [--only "
                            "raw|chain|lib|clients|wide|async]\n");
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
    int errors = 0, max_raw = 0, max_lib = 0, max_wide = 0, max_own = 0, max_async = 0;
    double ceiling = 0, chain = 0, lib = 0, wide = 0, own = 0, async = 0;
    struct waits w = {0}, wo = {0}, wa = {0};
    bool all = *only == '\0';
    if (all || strcmp(only, "raw") == 0)
        ceiling = run(raw_main, NULL, 0, &errors, &max_raw, NULL);
    if (all || strcmp(only, "chain") == 0)
        chain = run(chain_main, NULL, LIMIT, &errors, &max_raw, NULL);
    if (all || strcmp(only, "lib") == 0)
        lib = run(lib_main, c, LIMIT, &errors, &max_lib, &w);
    if (all || strcmp(only, "clients") == 0)
        own = run(lib_main, NULL, LIMIT, &errors, &max_own, &wo);
    if (all || strcmp(only, "wide") == 0)
        wide = run(lib_main, c, THREADS, &errors, &max_wide, NULL);
    if (all || strcmp(only, "async") == 0)
        async = run_async(c, &errors, &max_async, &wa);
    baton_client_free(c);
    if (max_async > max_lib)
        max_lib = max_async;
    if (!all) {
        struct waits *ws = strcmp(only, "clients") == 0 ? &wo : strcmp(only, "async") == 0 ? &wa : &w;
        printf("{\"bench\":\"sem\",\"only\":\"%s\",\"seconds\":%.1f,\"cycles_per_sec\":%.0f,"
               "\"wait_ms\":{\"p50\":%.3f,\"p99\":%.3f,\"longest\":%.3f,\"samples\":%zu},"
               "\"max_holders_seen\":%d,\"ctx_switches\":%lld,\"errors\":%d}\n",
               only, seconds, ceiling + chain + lib + own + wide + async, ws->p50, ws->p99, ws->longest,
               ws->samples, max_lib > max_own ? max_lib : max_own, (long long)tu_ctx_switches(),
               errors);
        return errors == 0 && max_lib <= LIMIT && max_own <= LIMIT ? 0 : 1;
    }
    double ratio = ceiling > 0 ? lib / ceiling : 0;
    bool ok = errors == 0 && max_lib <= LIMIT && max_own <= LIMIT && ratio >= 0.7;
    printf("{\"bench\":\"sem\",\"seconds\":%.1f,\"threads\":%d,"
           "\"ceiling_raw_zadd_zrem_per_sec\":%.0f,\n"
           " \"limit_%d\":{\"baton_acquire_release_per_sec\":%.0f,\"ratio\":%.3f,"
           "\"target_ratio\":0.7,\"max_holders_seen\":%d,"
           "\"wait_ms\":{\"p50\":%.3f,\"p99\":%.3f,\"longest\":%.3f}},\n"
           " \"limit_%d_async_one_thread\":{\"baton_acquire_release_per_sec\":%.0f,"
           "\"wait_ms\":{\"p50\":%.3f,\"p99\":%.3f,\"longest\":%.3f}},\n"
           " \"limit_%d_a_client_each\":{\"baton_acquire_release_per_sec\":%.0f,"
           "\"max_holders_seen\":%d,\"wait_ms\":{\"p50\":%.3f,\"p99\":%.3f,\"longest\":%.3f}},\n"
           " \"limit_%d_nobody_waits\":{\"baton_acquire_release_per_sec\":%.0f,\"ratio\":%.3f},\n"
           " \"ceiling_at_concurrency_%d\":{\"raw_pairs_by_5_token_holders_per_sec\":%.0f,"
           "\"baton_limit_%d_ratio\":%.3f},\n"
           " \"errors\":%d,\"ok\":%s}\n",
           seconds, THREADS, ceiling, LIMIT, lib, ratio, max_lib, w.p50, w.p99, w.longest, LIMIT,
           async, wa.p50, wa.p99, wa.longest, LIMIT, own, max_own, wo.p50, wo.p99, wo.longest, THREADS, wide,
           ceiling > 0 ? wide / ceiling : 0, LIMIT, chain, LIMIT, chain > 0 ? lib / chain : 0,
           errors, ok ? "true" : "false");
    return errors == 0 && max_lib <= LIMIT && max_own <= LIMIT ? 0 : 1;
}
