/* api_limit.c -- a rate-limited resource: at most 5 concurrent
 * calls to an external API, across every process that calls it.
 *
 * Two processes (fork) of ten worker threads each make three calls apiece
 * (60 calls). Each call holds a permit of the semaphore
 * "api:payments-provider" with limit 5:
 *
 *   baton_sem_acquire(client, "api:payments-provider", 5, &opts, &permit);
 *   ... call the API (50 ms) ...
 *   baton_sem_release(permit);
 *
 * While it holds the permit a call counts itself in Redis (an atomic
 * script keeps the running maximum), so the result a reader looks for is
 * the fleet-wide "at most 5 at once". Each process also prints its lock
 * statistics (baton_stats_get) -- how many calls had to wait, and how long.
 * Threads share their process's client: one subscriber and one renewal
 * thread per process, whatever the number of workers.
 *
 * usage: api_limit [REDIS_URL]   (else $BATON_REDIS_URL, else localhost)
 * Exit status 0 when every call ran and never more than 5 ran at once. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baton.h"
#include "baton_redis.h" /* baton_client_command(): the example's own data in Redis */

#define LIMIT     5
#define PROCESSES 2
#define THREADS   10
#define CALLS     3

/* INCR the in-flight count, keep the maximum: one atomic step. */
static const char enter_script[] =
    "local v = redis.call('incr', KEYS[1])\n"
    "if v > tonumber(redis.call('get', KEYS[2]) or '0') then redis.call('set', KEYS[2], v) end\n"
    "return v\n";

struct worker {
    struct baton_client *c;
    const char *keys[2]; /* in flight, max in flight */
    int ok, failed;
};

static int call_api(struct worker *w)
{
    struct baton_reply *r = NULL;
    int rc = baton_client_eval(w->c, enter_script, 2, w->keys, 0, NULL, &r);
    baton_reply_free(r);
    if (rc != BATON_OK)
        return rc;
    usleep(50000); /* the API call */
    const char *decr[2] = {"DECR", w->keys[0]};
    rc = baton_client_command(w->c, 2, decr, NULL, &r);
    baton_reply_free(r);
    return rc;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct baton_sem_opts o = {.ttl_ms = 10000, .max_wait_ms = 60000};
    for (int i = 0; i < CALLS; i++) {
        struct baton_permit *p = NULL;
        int rc = baton_sem_acquire(w->c, "api:payments-provider", LIMIT, &o, &p);
        if (rc == BATON_OK)
            rc = call_api(w);
        if (rc == BATON_OK)
            rc = baton_sem_release(p);
        baton_permit_free(p);
        if (rc == BATON_OK) {
            w->ok++;
        } else {
            fprintf(stderr, "api_limit: %s\n", baton_strerror(rc));
            w->failed++;
        }
    }
    return NULL;
}

/* One process: THREADS workers on one client. Returns the exit status. */
static int process_main(int n, const char *url, const char *const keys[2])
{
    struct baton_client *c = NULL;
    if (baton_client_new(url, NULL, &c) != BATON_OK) {
        fprintf(stderr, "process %d: %s\n", n, baton_client_errstr(c));
        baton_client_free(c);
        return 2;
    }
    struct worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){.c = c, .keys = {keys[0], keys[1]}};
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    int ok = 0, failed = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ok += w[i].ok;
        failed += w[i].failed;
    }
    struct baton_stats s;
    baton_stats_get(c, "api", &s);
    printf("process %d: %d calls made, %d failed; %llu permits granted, %llu had to wait, "
           "%.2f s waited in all\n",
           n, ok, failed, (unsigned long long)s.acquired, (unsigned long long)s.contention,
           s.wait_sum_seconds);
    baton_client_free(c);
    return failed == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : getenv("BATON_REDIS_URL");
    if (url == NULL)
        url = "redis://127.0.0.1:6379/0";
    setvbuf(stdout, NULL, _IOLBF, 0);
    char inflight[64], max[64];
    snprintf(inflight, sizeof inflight, "api:inflight:%ld", (long)getpid());
    snprintf(max, sizeof max, "api:max-inflight:%ld", (long)getpid());
    const char *keys[2] = {inflight, max};

    printf("%d processes x %d workers x %d calls, limit %d concurrent calls\n", PROCESSES, THREADS,
           CALLS, LIMIT);
    pid_t pid[PROCESSES];
    for (int i = 0; i < PROCESSES; i++) {
        fflush(stdout);
        pid[i] = fork();
        if (pid[i] < 0) {
            perror("fork");
            return 2;
        }
        if (pid[i] == 0) {
            int st = process_main(i + 1, url, keys);
            fflush(stdout);
            _exit(st);
        }
    }
    int bad = 0;
    for (int i = 0; i < PROCESSES; i++) {
        int st = 0;
        if (waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad++;
    }

    struct baton_client *c = NULL;
    long long seen = -1;
    const char *get[2] = {"GET", max};
    struct baton_reply *r = NULL;
    if (baton_client_new(url, NULL, &c) == BATON_OK &&
        baton_client_command(c, 2, get, NULL, &r) == BATON_OK && r->type == BATON_REPLY_STRING)
        seen = strtoll(r->str, NULL, 10);
    baton_reply_free(r);
    baton_client_free(c);
    printf("at most %lld calls were in flight at once (limit %d): %s\n", seen, LIMIT,
           seen >= 1 && seen <= LIMIT ? "respected" : "EXCEEDED");
    return bad == 0 && seen >= 1 && seen <= LIMIT ? 0 : 1;
}
