/* transfer.c -- a transfer between two accounts, in both
 * directions at once, with the multi-lock.
 *
 * One worker moves money alice -> bob and locks {alice, bob}; the other
 * moves it bob -> alice and locks {bob, alice}. Taking two plain locks in
 * the order of the transfer would deadlock (each holds one and waits for
 * the other). baton_with_locks() sorts the keys first, so both take
 * account:alice then account:bob: no deadlock, by construction. A
 * watchdog (alarm) would end the program if it ever hung.
 *
 * The result a reader looks for: all transfers done, quickly, and the
 * total money unchanged.
 *
 * usage: transfer [REDIS_URL]   (else $BATON_REDIS_URL, else localhost)
 * Exit status 0 when every transfer succeeded and the total is conserved. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "baton.h"
#include "baton_redis.h" /* baton_client_command(): the example's own data in Redis */

#define TRANSFERS 150 /* per direction */

struct mover {
    const char *url;
    const char *from, *to;
    struct baton_client *c;
    int done, failed;
};

static long long get_balance(struct baton_client *c, const char *account)
{
    char key[64];
    snprintf(key, sizeof key, "%s:balance", account);
    const char *argv[2] = {"GET", key};
    struct baton_reply *r = NULL;
    long long v = -1;
    if (baton_client_command(c, 2, argv, NULL, &r) == BATON_OK && r->type == BATON_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    baton_reply_free(r);
    return v;
}

static int set_balance(struct baton_client *c, const char *account, long long v)
{
    char key[64], val[32];
    snprintf(key, sizeof key, "%s:balance", account);
    snprintf(val, sizeof val, "%lld", v);
    const char *argv[3] = {"SET", key, val};
    struct baton_reply *r = NULL;
    int rc = baton_client_command(c, 3, argv, NULL, &r);
    baton_reply_free(r);
    return rc;
}

/* Runs with both accounts locked: read both, move 1, write both. */
static int move_one(struct baton_multi *m, void *arg)
{
    struct mover *mv = arg;
    (void)m;
    long long a = get_balance(mv->c, mv->from), b = get_balance(mv->c, mv->to);
    if (a < 1 || b < 0)
        return -1;
    usleep(200); /* fraud checks, ledger entries... */
    int rc = set_balance(mv->c, mv->from, a - 1);
    return rc != BATON_OK ? rc : set_balance(mv->c, mv->to, b + 1);
}

static void *mover_main(void *arg)
{
    struct mover *mv = arg;
    if (baton_client_new(mv->url, NULL, &mv->c) != BATON_OK) {
        fprintf(stderr, "transfer: %s\n", baton_client_errstr(mv->c));
        mv->failed = TRANSFERS;
        return NULL;
    }
    /* Listed in the order of the transfer: {from, to}. */
    const char *keys[2] = {mv->from, mv->to};
    struct baton_lock_opts o = {.ttl_ms = 5000, .max_wait_ms = 10000};
    for (int i = 0; i < TRANSFERS; i++) {
        int rc = baton_with_locks(mv->c, keys, 2, &o, move_one, mv);
        if (rc == 0) {
            mv->done++;
        } else {
            fprintf(stderr, "transfer %s -> %s: %s\n", mv->from, mv->to, baton_strerror(rc));
            mv->failed++;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : getenv("BATON_REDIS_URL");
    if (url == NULL)
        url = "redis://127.0.0.1:6379/0";
    setvbuf(stdout, NULL, _IOLBF, 0);
    alarm(60); /* a deadlock would end here, with SIGALRM */

    struct baton_client *c = NULL;
    if (baton_client_new(url, NULL, &c) != BATON_OK) {
        fprintf(stderr, "transfer: %s\n", baton_client_errstr(c));
        baton_client_free(c);
        return 2;
    }
    set_balance(c, "account:alice", 1000);
    set_balance(c, "account:bob", 1000);
    printf("alice 1000, bob 1000; %d transfers of 1 each way, at the same time\n", TRANSFERS);

    struct mover mv[2] = {{.url = url, .from = "account:alice", .to = "account:bob"},
                          {.url = url, .from = "account:bob", .to = "account:alice"}};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, mover_main, &mv[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

    long long a = get_balance(c, "account:alice"), b = get_balance(c, "account:bob");
    int done = mv[0].done + mv[1].done, failed = mv[0].failed + mv[1].failed;
    printf("%d transfers done (%d failed) in %.2f s: no deadlock\n", done, failed, secs);
    printf("alice %lld + bob %lld = %lld: %s\n", a, b, a + b,
           a + b == 2000 && a == 1000 ? "conserved" : "WRONG");
    for (int i = 0; i < 2; i++)
        baton_client_free(mv[i].c);
    baton_client_free(c);
    return failed == 0 && done == 2 * TRANSFERS && a == 1000 && b == 1000 ? 0 : 1;
}
