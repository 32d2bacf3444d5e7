/* long_task.c -- a task that outlives its lock's TTL is
 * kept alive by auto-renewal; a task whose lock is taken away sees the
 * loss and stops.
 *
 *   1. "report:monthly", TTL 1 s, work 3 s. baton_with_lock() renews the
 *      lock every TTL/3 in the background; the task checks
 *      baton_lock_lost() between steps and never sees it.
 *   2. "report:weekly", TTL 1 s, work 10 steps of 100 ms. After 0.5 s
 *      another node takes the lock (here: its lease is deleted, as if it
 *      had run out during a network partition, and the other node acquires
 *      it, with a higher fencing token). The next renewal finds the lock
 *      no longer ours: on_lost is called from the renewal thread, the task
 *      sees baton_lock_lost() at its next step and stops, and
 *      baton_with_lock() returns BATON_ELOST instead of the task's result.
 * A real task would also hand baton_lock_fence() to what it writes, so
 * that a write from a stale holder is refused there.
 *
 * usage: long_task [REDIS_URL]   (else $BATON_REDIS_URL, else localhost)
 * Exit status 0 when task 1 kept its lock and task 2 saw its loss. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "baton.h"
#include "baton_redis.h" /* baton_client_command(): the example's own data in Redis */

struct task {
    const char *name;
    int steps, done;
    int64_t min_left_ms; /* the least validity left seen between steps */
    bool saw_loss;
    uint64_t fence;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The work: steps of 100 ms, checking the lock between them. */
static int work(struct baton_lock *lk, void *arg)
{
    struct task *t = arg;
    t->fence = baton_lock_fence(lk);
    t->min_left_ms = baton_lock_remaining_ms(lk);
    for (t->done = 0; t->done < t->steps; t->done++) {
        if (baton_lock_lost(lk)) {
            t->saw_loss = true;
            printf("  %s: lock lost (%s): stopping after step %d of %d\n", t->name,
                   baton_lock_errstr(lk), t->done, t->steps);
            return 1;
        }
        int64_t left = baton_lock_remaining_ms(lk);
        if (left < t->min_left_ms)
            t->min_left_ms = left;
        usleep(100000);
    }
    return 0;
}

static void on_lost(struct baton_lock *lk, void *arg)
{
    (void)arg;
    printf("  renewal thread: %s\n", baton_lock_errstr(lk));
}

struct thief {
    const char *url;
    uint64_t fence;
    int rc;
};

/* Another node, 0.5 s later: the lease is gone and it takes the lock. */
static void *steal(void *arg)
{
    struct thief *th = arg;
    struct baton_client *c = NULL;
    struct baton_lock *lk = NULL;
    usleep(500000);
    th->rc = baton_client_new(th->url, NULL, &c);
    if (th->rc == BATON_OK) {
        const char *del[2] = {"DEL", "baton:{report:weekly}"};
        struct baton_reply *r = NULL;
        baton_client_command(c, 2, del, NULL, &r);
        baton_reply_free(r);
        th->rc = baton_lock_try(c, "report:weekly", NULL, &lk);
    }
    if (th->rc == BATON_OK) {
        th->fence = baton_lock_fence(lk);
        printf("  another node: took report:weekly (fence %llu)\n", (unsigned long long)th->fence);
        usleep(300000); /* it works a while, then releases */
        baton_lock_release(lk);
    }
    baton_lock_free(lk);
    baton_client_free(c);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : getenv("BATON_REDIS_URL");
    if (url == NULL)
        url = "redis://127.0.0.1:6379/0";
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct baton_client *c = NULL;
    if (baton_client_new(url, NULL, &c) != BATON_OK) {
        fprintf(stderr, "long_task: %s\n", baton_client_errstr(c));
        baton_client_free(c);
        return 2;
    }
    struct baton_lock_opts o = {.ttl_ms = 1000, .max_wait_ms = 5000, .on_lost = on_lost};

    printf("task 1: report:monthly, lease 1.0 s, 3.0 s of work\n");
    struct task t1 = {.name = "task 1", .steps = 30};
    double t0 = now_s();
    int rc1 = baton_with_lock(c, "report:monthly", &o, work, &t1);
    printf("task 1: finished %d of %d steps in %.1f s under a 1.0 s lease, never lost "
           "(at least %lld ms of validity left at every step): %s\n",
           t1.done, t1.steps, now_s() - t0, (long long)t1.min_left_ms,
           rc1 == 0 && !t1.saw_loss ? "kept alive by auto-renewal" : "WRONG");

    printf("task 2: report:weekly, lease 1.0 s, 10 steps of 0.1 s\n");
    struct task t2 = {.name = "task 2", .steps = 10};
    struct thief th = {.url = url};
    pthread_t tt;
    pthread_create(&tt, NULL, steal, &th);
    t0 = now_s();
    int rc2 = baton_with_lock(c, "report:weekly", &o, work, &t2);
    double took = now_s() - t0;
    pthread_join(tt, NULL);
    printf("task 2: stopped after %.1f s at step %d of %d; baton_with_lock returned %s; "
           "the other node's fence %llu > ours %llu: %s\n",
           took, t2.done, t2.steps, rc2 < 0 ? baton_errname(rc2) : "the task's result",
           (unsigned long long)th.fence, (unsigned long long)t2.fence,
           rc2 == BATON_ELOST && t2.saw_loss && th.fence > t2.fence ? "saw the loss and stopped"
                                                                    : "WRONG");
    baton_client_free(c);
    return rc1 == 0 && !t1.saw_loss && rc2 == BATON_ELOST && t2.saw_loss && th.rc == BATON_OK &&
                   th.fence > t2.fence
               ? 0
               : 1;
}
