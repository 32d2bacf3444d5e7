/* quorum_cycles.c -- uncontended lock cycles through libbaton, printed as
 * JSON, for tests/bench/bench_quorum.sh (which starts the masters and runs
 * node-redlock beside it on the same ones).
 *
 * THREADS threads (default 50) share one client, each on its own key,
 * acquire (baton_lock_try) + release, for SECONDS; every thread checks its
 * grants (fences strictly increasing, releases accepted). Prints
 * {"clients":50,"cycles":N,"seconds":S,"cycles_per_sec":R,
 *  "grant_ms":{"p50":..,"p99":..,"max":..,"samples":..},"errors":E,...}
 * with the grant latency (the try, call to return) of every cycle after a
 * 300 ms warm-up. Exit 1 when any thread failed.
 *
 * usage: quorum_cycles --url URL [--seconds S] [--threads N] [--ttl MS] [--prefix P]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton.h"
#include "testutil.h"

#define MAX_THREADS 256
#define WARMUP_MS   300

struct arg {
    struct baton_client *c;
    const char *prefix;
    int64_t ttl_ms;
    int id;
    atomic_bool *stop;
    int64_t warm_at;
    int64_t cycles;
    int errors;
    char errstr[512];
    double *lat; /* grant latencies, ms */
    size_t nlat, caplat;
};

static void record(struct arg *a, double ms)
{
    if (a->nlat == a->caplat) {
        size_t cap = a->caplat ? 2 * a->caplat : 4096;
        double *grown = realloc(a->lat, cap * sizeof *grown);
        if (grown == NULL)
            return;
        a->lat = grown;
        a->caplat = cap;
    }
    a->lat[a->nlat++] = ms;
}

static void *cycler(void *p)
{
    struct arg *a = p;
    char key[96];
    uint64_t last = 0;
    snprintf(key, sizeof key, "%s:%d", a->prefix, a->id);
    while (!atomic_load(a->stop)) {
        struct baton_lock *lk = NULL;
        int64_t t0 = tu_now_ns();
        int rc = baton_lock_try(a->c, key, &(struct baton_lock_opts){.ttl_ms = a->ttl_ms}, &lk);
        int64_t t1 = tu_now_ns();
        if (rc != BATON_OK || baton_lock_fence(lk) <= last || baton_lock_release(lk) != BATON_OK) {
            if (a->errors++ == 0)
                snprintf(a->errstr, sizeof a->errstr, "%s: %s", baton_errname(rc),
                         rc != BATON_OK ? baton_client_errstr(a->c) : baton_lock_errstr(lk));
            baton_lock_free(lk);
            break;
        }
        last = baton_lock_fence(lk);
        baton_lock_free(lk);
        a->cycles++;
        if (t0 >= a->warm_at)
            record(a, (double)(t1 - t0) / 1e6);
    }
    return NULL;
}

/* A whole decimal number in [lo, hi], or exit 2. */
static double number(const char *what, const char *s, double lo, double hi)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= lo && v <= hi)) {
        fprintf(stderr, "quorum_cycles: %s \"%s\": expected %g..%g\n", what, s, lo, hi);
        exit(2);
    }
    return v;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double pct(const double *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

int main(int argc, char **argv)
{
    const char *url = NULL, *prefix = "bench:quorum";
    double seconds = 5;
    int nthreads = 50;
    int64_t ttl_ms = 30000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--url") == 0 && i + 1 < argc)
            url = argv[++i];
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = number("--seconds", argv[++i], 0.01, 600);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            nthreads = (int)number("--threads", argv[++i], 1, MAX_THREADS);
        else if (strcmp(argv[i], "--ttl") == 0 && i + 1 < argc)
            ttl_ms = (int64_t)number("--ttl", argv[++i], 100, 600000);
        else if (strcmp(argv[i], "--prefix") == 0 && i + 1 < argc)
            prefix = argv[++i];
        else {
            fprintf(stderr, "usage: quorum_cycles --url URL [--seconds S] [--threads N] "
                            "[--ttl MS] [--prefix P]\n");
            return 2;
        }
    }
    if (url == NULL) {
        fprintf(stderr, "quorum_cycles: --url is required\n");
        return 2;
    }
    struct baton_client *c = NULL;
    struct baton_client_opts o = {.connect_timeout_ms = 2000, .command_timeout_ms = 2000};
    if (baton_client_new(url, &o, &c) != BATON_OK) {
        fprintf(stderr, "quorum_cycles: %s\n", baton_client_errstr(c));
        baton_client_free(c);
        return 1;
    }
    pthread_t th[MAX_THREADS];
    static struct arg a[MAX_THREADS];
    atomic_bool stop = false;
    int64_t t0 = tu_now_ns();
    for (int i = 0; i < nthreads; i++) {
        a[i] = (struct arg){.c = c,
                            .prefix = prefix,
                            .ttl_ms = ttl_ms,
                            .id = i,
                            .stop = &stop,
                            .warm_at = t0 + (int64_t)WARMUP_MS * 1000000};
        pthread_create(&th[i], NULL, cycler, &a[i]);
    }
    tu_sleep_ms((int64_t)(seconds * 1000));
    atomic_store(&stop, true);
    int64_t cycles = 0, errors = 0;
    size_t n = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        cycles += a[i].cycles;
        errors += a[i].errors;
        n += a[i].nlat;
    }
    double secs = (double)(tu_now_ns() - t0) / 1e9;
    double *all = malloc((n > 0 ? n : 1) * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < nthreads && all != NULL; i++) {
        if (a[i].nlat == 0)
            continue; /* no grant after the warm-up: no samples (lat is NULL) */
        memcpy(all + k, a[i].lat, a[i].nlat * sizeof *all);
        k += a[i].nlat;
    }
    if (all != NULL)
        qsort(all, k, sizeof *all, cmp_double);
    printf("{\"who\":\"baton\",\"url\":\"%s\",\"clients\":%d,\"cycles\":%lld,\"seconds\":%.3f,"
           "\"cycles_per_sec\":%.0f,\"grant_ms\":{\"p50\":%.3f,\"p99\":%.3f,\"max\":%.3f,"
           "\"samples\":%zu},\"errors\":%lld}\n",
           baton_client_url(c), nthreads, (long long)cycles, secs, (double)cycles / secs,
           pct(all, k, 0.5), pct(all, k, 0.99), k > 0 ? all[k - 1] : 0.0, k, (long long)errors);
    for (int i = 0; i < nthreads; i++) {
        if (a[i].errors > 0)
            fprintf(stderr, "quorum_cycles: thread %d: %s\n", i, a[i].errstr);
        free(a[i].lat);
    }
    free(all);
    baton_client_free(c);
    return errors > 0 ? 1 : 0;
}
