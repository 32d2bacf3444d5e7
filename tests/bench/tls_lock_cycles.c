/* tls_lock_cycles.c -- the cost of TLS and of durable grants, printed as
 * JSON. Run by bench_tls.sh, which starts one redis-server listening on a
 * plain TCP port and a TLS port (the same process: the same Redis work),
 * with a replica, and passes both URLs.
 *
 *  1. uncontended lock cycles (acquire + release), THREADS threads each on
 *     its own key through one shared client: over plain TCP and over TLS,
 *     in alternating rounds of the same run (the machine's load drifts).
 *     Target: TLS >= 0.8 x plain.
 *  2. the same, one thread: the latency of a cycle over each.
 *  3. WAIT: the same cycles on the plain URL with min_replicas 1 (every
 *     grant waits for the replica's acknowledgement) next to min_replicas
 *     0; the cost per grant, single-threaded and with THREADS threads.
 * Every thread checks its grants (fences strictly increasing, releases
 * accepted): any error makes the exit status 1.
 *
 * usage: tls_lock_cycles --plain URL --tls URL [--seconds S] [--threads N]
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton.h"
#include "testutil.h"

#define MAX_THREADS 64
#define ROUNDS      4 /* alternating rounds per measure */

static double seconds = 3.0;
static int nthreads = 16;

struct arg {
    struct baton_client *c;
    int id;
    atomic_bool *stop;
    int64_t cycles;
    int errors;
    char errstr[256];
};

static void *cycler(void *p)
{
    struct arg *a = p;
    char key[64];
    uint64_t last = 0;
    snprintf(key, sizeof key, "bench:tls:%d", a->id);
    while (!atomic_load(a->stop)) {
        struct baton_lock *lk = NULL;
        int rc = baton_lock_try(a->c, key, &(struct baton_lock_opts){.ttl_ms = 30000}, &lk);
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
    }
    return NULL;
}

/* n threads on c for secs. Returns cycles/s; adds errors. */
static double run(struct baton_client *c, int n, double secs, int *errors)
{
    pthread_t th[MAX_THREADS];
    struct arg a[MAX_THREADS];
    atomic_bool stop = false;
    for (int i = 0; i < n; i++) {
        a[i] = (struct arg){.c = c, .id = i, .stop = &stop};
        pthread_create(&th[i], NULL, cycler, &a[i]);
    }
    int64_t t0 = tu_now_ns();
    tu_sleep_ms((int64_t)(secs * 1000));
    atomic_store(&stop, true);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        total += a[i].cycles;
        if (a[i].errors > 0) {
            fprintf(stderr, "tls_lock_cycles: thread %d: %s\n", i, a[i].errstr);
            *errors += a[i].errors;
        }
    }
    return (double)total / ((double)(tu_now_ns() - t0) / 1e9);
}

static struct baton_client *client(const char *url, int min_replicas)
{
    struct baton_client_opts o = {.min_replicas = min_replicas};
    struct baton_client *c = NULL;
    if (baton_client_new(url, &o, &c) != BATON_OK) {
        fprintf(stderr, "tls_lock_cycles: %s\n", baton_client_errstr(c));
        exit(1);
    }
    return c;
}

/* Alternates rounds of a and b (ROUNDS each); returns their mean rates. */
static void compare(struct baton_client *a, struct baton_client *b, int n, double *ra, double *rb,
                    int *errors)
{
    double sa = 0, sb = 0, slice = seconds / (2 * ROUNDS);
    run(a, n, slice / 2, errors); /* warm both: connections, scripts */
    run(b, n, slice / 2, errors);
    for (int r = 0; r < ROUNDS; r++) {
        sa += run(a, n, slice, errors);
        sb += run(b, n, slice, errors);
    }
    *ra = sa / ROUNDS;
    *rb = sb / ROUNDS;
}

int main(int argc, char **argv)
{
    const char *plain = NULL, *tls = NULL;
    int errors = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--plain") == 0 && i + 1 < argc)
            plain = argv[++i];
        else if (strcmp(argv[i], "--tls") == 0 && i + 1 < argc)
            tls = argv[++i];
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            nthreads = atoi(argv[++i]); /* bounded below */
        else {
            fprintf(stderr, "usage: tls_lock_cycles --plain URL --tls URL [--seconds S] "
                            "[--threads N]\n");
            return 2;
        }
    }
    if (plain == NULL || tls == NULL || nthreads < 1 || nthreads > MAX_THREADS || seconds <= 0) {
        fprintf(stderr, "tls_lock_cycles: give --plain URL and --tls URL (1..64 threads)\n");
        return 2;
    }
    struct baton_client *cp = client(plain, 0), *ct = client(tls, 0), *cw = client(plain, 1);
    double p_n, t_n, p_1, t_1, w0_1, w1_1, w0_n, w1_n;
    compare(cp, ct, nthreads, &p_n, &t_n, &errors);
    compare(cp, ct, 1, &p_1, &t_1, &errors);
    compare(cp, cw, 1, &w0_1, &w1_1, &errors);
    compare(cp, cw, nthreads, &w0_n, &w1_n, &errors);
    printf("{\"uncontended\":{\"threads\":%d,\"plain_cycles_per_s\":%.0f,\"tls_cycles_per_s\":%.0f,"
           "\"tls_ratio\":%.2f,\"target\":0.8},"
           "\"one_thread\":{\"plain_cycles_per_s\":%.0f,\"tls_cycles_per_s\":%.0f,\"tls_ratio\":%.2f,"
           "\"plain_cycle_us\":%.1f,\"tls_cycle_us\":%.1f},"
           "\"wait_min_replicas_1\":{\"one_thread\":{\"cycles_per_s\":%.0f,\"without_cycles_per_s\":%.0f,"
           "\"wait_cost_us_per_grant\":%.1f},\"threads\":%d,\"cycles_per_s\":%.0f,"
           "\"without_cycles_per_s\":%.0f,\"ratio\":%.2f},\"errors\":%d}\n",
           nthreads, p_n, t_n, t_n / p_n, p_1, t_1, t_1 / p_1, 1e6 / p_1, 1e6 / t_1, w1_1, w0_1,
           1e6 / w1_1 - 1e6 / w0_1, nthreads, w1_n, w0_n, w1_n / w0_n, errors);
    baton_client_free(cp);
    baton_client_free(ct);
    baton_client_free(cw);
    return errors > 0 ? 1 : 0;
}
