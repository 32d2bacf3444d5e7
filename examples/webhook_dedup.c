/* webhook_dedup.c -- webhook deduplication: the payment provider
 * delivers the same webhook (id evt_<pid>) five times at once, to five
 * servers, and once more after it was handled.
 *
 * Each delivery calls baton_once(client, "webhook:evt_...", 24 h, handle):
 *   processed          this delivery ran handle() and it succeeded
 *   duplicate          another delivery is running handle() right now
 *   already_processed  a marker (kept 24 h) says it was handled
 * handle() records its side effect (an INCR in Redis, standing in for
 * "credit the order"), so the result a reader looks for is: one effect.
 *
 * usage: webhook_dedup [REDIS_URL]   (else $BATON_REDIS_URL, else localhost)
 * Exit status 0 when the webhook had exactly one effect. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton.h"
#include "baton_redis.h" /* baton_client_command(): the example's own data in Redis */

#define DELIVERIES 5

struct delivery {
    const char *url;
    const char *id;
    int n;
    int result;
};

/* The handler: takes a while, and has a side effect that must happen once. */
static int handle(struct baton_lock *lk, void *arg)
{
    struct delivery *d = arg;
    struct baton_client *c = NULL;
    char effects[128];
    snprintf(effects, sizeof effects, "%s:effects", d->id);
    usleep(100000); /* talk to the database, send the e-mail... */
    if (baton_client_new(d->url, NULL, &c) != BATON_OK) {
        baton_client_free(c);
        return -1;
    }
    const char *argv[2] = {"INCR", effects};
    struct baton_reply *r = NULL;
    int rc = baton_client_command(c, 2, argv, NULL, &r);
    baton_reply_free(r);
    baton_client_free(c);
    printf("  delivery %d: handled %s (fence %llu)\n", d->n, d->id,
           (unsigned long long)baton_lock_fence(lk));
    return rc;
}

static void *deliver(void *arg)
{
    struct delivery *d = arg;
    struct baton_client *c = NULL; /* each delivery lands on its own server */
    d->result = baton_client_new(d->url, NULL, &c);
    if (d->result == BATON_OK)
        d->result = baton_once(c, d->id, 24 * 3600 * 1000, handle, d);
    else
        fprintf(stderr, "webhook_dedup: %s\n", baton_client_errstr(c));
    baton_client_free(c);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : getenv("BATON_REDIS_URL");
    if (url == NULL)
        url = "redis://127.0.0.1:6379/0";
    setvbuf(stdout, NULL, _IOLBF, 0);
    char id[64];
    snprintf(id, sizeof id, "webhook:evt_%ld", (long)getpid());

    printf("%s delivered %d times at once:\n", id, DELIVERIES);
    struct delivery d[DELIVERIES + 1];
    pthread_t t[DELIVERIES];
    for (int i = 0; i < DELIVERIES; i++) {
        d[i] = (struct delivery){.url = url, .id = id, .n = i + 1};
        pthread_create(&t[i], NULL, deliver, &d[i]);
    }
    int count[3] = {0, 0, 0};
    for (int i = 0; i < DELIVERIES; i++) {
        pthread_join(t[i], NULL);
        printf("  delivery %d: %s\n", d[i].n, baton_once_result_name(d[i].result));
        if (d[i].result >= 0 && d[i].result <= 2)
            count[d[i].result]++;
    }
    /* The provider retries later: the marker answers. */
    d[DELIVERIES] = (struct delivery){.url = url, .id = id, .n = DELIVERIES + 1};
    deliver(&d[DELIVERIES]);
    printf("delivered again later:\n  delivery %d: %s\n", DELIVERIES + 1,
           baton_once_result_name(d[DELIVERIES].result));

    struct baton_client *c = NULL;
    long long effects = -1;
    char key[128];
    snprintf(key, sizeof key, "%s:effects", id);
    const char *get[2] = {"GET", key};
    struct baton_reply *r = NULL;
    if (baton_client_new(url, NULL, &c) == BATON_OK &&
        baton_client_command(c, 2, get, NULL, &r) == BATON_OK && r->type == BATON_REPLY_STRING)
        effects = strtoll(r->str, NULL, 10);
    baton_reply_free(r);
    baton_client_free(c);

    printf("processed %d, duplicate %d, already_processed %d; side effects: %lld\n",
           count[BATON_ONCE_PROCESSED], count[BATON_ONCE_DUPLICATE],
           count[BATON_ONCE_ALREADY_PROCESSED] +
               (d[DELIVERIES].result == BATON_ONCE_ALREADY_PROCESSED),
           effects);
    return effects == 1 && count[BATON_ONCE_PROCESSED] == 1 &&
                   d[DELIVERIES].result == BATON_ONCE_ALREADY_PROCESSED
               ? 0
               : 1;
}
