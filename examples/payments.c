/* payments.c -- the double payment: two payment workers deduct from
 * one account at the same time.
 *
 * The account's balance lives in Redis (standing in for the database).
 * Each worker takes payments of 10 while "balance >= 10": it reads the
 * balance, charges the card (2 ms), then deducts. Run twice:
 *   1. without a lock: both workers read the same balance, both charge,
 *      both deduct -- more is charged than the account held, and the
 *      balance goes negative;
 *   2. with baton_with_lock("account:123", ...): the read-check-deduct of
 *      one worker excludes the other's -- exactly 100 is charged and the
 *      balance ends at 0.
 *
 * usage: payments [REDIS_URL]   (else $BATON_REDIS_URL, else localhost)
 * Exit status 0 when the locked run is exact. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton.h"
#include "baton_redis.h" /* baton_client_command(): the example's own data in Redis */

#define START_BALANCE 100
#define AMOUNT        10
#define ATTEMPTS      10 /* per worker: together they try to take 200 */

struct worker {
    const char *url;
    bool use_lock;
    int charged; /* money taken from the customer's card */
    int failed;
};

/* Reads the balance. Returns it, or -1000000 on error. */
static long long balance(struct baton_client *c)
{
    const char *argv[2] = {"GET", "account:123:balance"};
    struct baton_reply *r = NULL;
    long long v = -1000000;
    if (baton_client_command(c, 2, argv, NULL, &r) == BATON_OK && r->type == BATON_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    baton_reply_free(r);
    return v;
}

static int deduct(struct baton_client *c, int amount)
{
    char by[16];
    snprintf(by, sizeof by, "%d", amount);
    const char *argv[3] = {"DECRBY", "account:123:balance", by};
    struct baton_reply *r = NULL;
    int rc = baton_client_command(c, 3, argv, NULL, &r);
    baton_reply_free(r);
    return rc;
}

/* One payment: check, charge, deduct. Racy unless the caller holds the
 * account's lock. */
static int pay(struct baton_client *c, struct worker *w)
{
    if (balance(c) < AMOUNT)
        return 0; /* declined: insufficient funds */
    usleep(2000); /* the card network */
    w->charged += AMOUNT;
    return deduct(c, AMOUNT);
}

struct locked_pay {
    struct baton_client *c;
    struct worker *w;
};

static int pay_locked(struct baton_lock *lk, void *arg)
{
    struct locked_pay *p = arg;
    (void)lk; /* a real system would also pass baton_lock_fence(lk) to the database */
    return pay(p->c, p->w);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct baton_client *c = NULL; /* each worker is its own "server" */
    if (baton_client_new(w->url, NULL, &c) != BATON_OK) {
        fprintf(stderr, "payments: %s\n", baton_client_errstr(c));
        w->failed++;
        baton_client_free(c);
        return NULL;
    }
    struct baton_lock_opts o = {.ttl_ms = 5000, .max_wait_ms = 10000};
    struct locked_pay lp = {c, w};
    for (int i = 0; i < ATTEMPTS; i++) {
        int rc = w->use_lock ? baton_with_lock(c, "account:123", &o, pay_locked, &lp) : pay(c, w);
        if (rc != 0) {
            fprintf(stderr, "payments: %s\n", baton_strerror(rc));
            w->failed++;
        }
    }
    baton_client_free(c);
    return NULL;
}

/* Runs both workers. Returns true when the books balance. */
static bool run(const char *url, bool use_lock)
{
    struct baton_client *c = NULL;
    if (baton_client_new(url, NULL, &c) != BATON_OK) {
        fprintf(stderr, "payments: %s\n", baton_client_errstr(c));
        baton_client_free(c);
        return false;
    }
    const char *set[3] = {"SET", "account:123:balance", "100"};
    struct baton_reply *r = NULL;
    baton_client_command(c, 3, set, NULL, &r);
    baton_reply_free(r);

    struct worker w[2] = {{url, use_lock, 0, 0}, {url, use_lock, 0, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    long long end = balance(c);
    baton_client_free(c);

    int charged = w[0].charged + w[1].charged;
    long long dropped = START_BALANCE - end;
    bool exact = w[0].failed + w[1].failed == 0 && end >= 0 && charged == dropped &&
                 charged == START_BALANCE;
    printf("%-38s charged %3d in %2d payments, balance %4lld (dropped by %lld): %s\n",
           use_lock ? "with baton_with_lock(\"account:123\"):" : "without a lock:", charged,
           charged / AMOUNT, end, dropped, exact ? "exact" : "WRONG");
    return exact;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : getenv("BATON_REDIS_URL");
    if (url == NULL)
        url = "redis://127.0.0.1:6379/0";
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("account:123 starts at %d; two workers each try %d payments of %d\n", START_BALANCE,
           ATTEMPTS, AMOUNT);
    run(url, false); /* the race: usually WRONG */
    return run(url, true) ? 0 : 1;
}
