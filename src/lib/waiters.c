/* waiters.c -- waiting for a lock: per-key flood control, and the one
 * subscriber thread per client that turns release notifications into
 * wake-ups.
 *
 * A release publishes the token of the first live waiter on that waiter's
 * client channel (scripts.c). The subscriber holds one connection
 * subscribed to this client's channel, finds the waiter by token and
 * signals it. One connection per process, however many waiters: no
 * subscription storms. A lost message costs a waiter one retry delay, never
 * correctness: waiters always retry the lock before sleeping, and sleep no
 * longer than the holder's remaining lease or the retry delay. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "baton_int.h"

struct baton__waiters {
    struct baton_client *c;
    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t ready_cv;
    struct baton__waiter *head;
    bool subscribed;
    bool stop;
    int efd; /* wakes the thread to stop */
    pthread_t thread;
    char err[BATON__ERRLEN];
};

const char *baton__waiters_channel(const struct baton_client *c)
{
    return c->wake_chan;
}

/* Wakes the waiter holding token, or every waiter when token is NULL.
 * Called with ws->mu held. */
static void wake_locked(struct baton__waiters *ws, const char *token, size_t len)
{
    for (struct baton__waiter *w = ws->head; w != NULL; w = w->next) {
        if (token != NULL && (strlen(w->token) != len || memcmp(w->token, token, len) != 0))
            continue;
        w->woken = true;
        pthread_cond_signal(&w->cv);
    }
}

/* Hands a grant to the waiter of token (len bytes) and wakes it. sent_ns
 * is the send time of the release that made it, 0 when it came as a
 * message. Returns whether such a waiter waits. Called with ws->mu held. */
static bool grant_locked(struct baton__waiters *ws, const char *token, size_t len, uint64_t fence,
                         int64_t sent_ns)
{
    for (struct baton__waiter *w = ws->head; w != NULL; w = w->next) {
        if (strlen(w->token) != len || memcmp(w->token, token, len) != 0)
            continue;
        w->grant_fence = fence;
        w->grant_sent_ns = sent_ns;
        atomic_store(&w->granted, true);
        w->woken = true;
        pthread_cond_signal(&w->cv);
        return true;
    }
    return false;
}

/* A message on our channel: "TOKEN", wake that waiter (a lock released,
 * or a semaphore slot reserved for it); or "TOKEN FENCE", a semaphore
 * permit granted to it by a release elsewhere (scripts.c). With
 * min_replicas a grant is only a wake-up: the waiter's next attempt finds
 * it and makes it durable. */
static void handle_message(struct baton__waiters *ws, const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || strcmp(r->element[0]->str, "message") != 0 ||
        r->element[2]->type != REDIS_REPLY_STRING)
        return;
    const char *msg = r->element[2]->str;
    size_t len = r->element[2]->len;
    const char *sp = memchr(msg, ' ', len);
    uint64_t fence = 0;
    if (sp != NULL) {
        char *end = NULL;
        fence = strtoull(sp + 1, &end, 10);
        if (end != msg + len || fence == 0)
            return; /* not ours to read */
        len = (size_t)(sp - msg);
    }
    pthread_mutex_lock(&ws->mu);
    if (sp == NULL || ws->c->min_replicas > 0 || !grant_locked(ws, msg, len, fence, 0))
        wake_locked(ws, msg, len);
    pthread_mutex_unlock(&ws->mu);
}

/* Sleeps up to ms, or until stop. Returns false when stopping. */
static bool pause_ms(struct baton__waiters *ws, int ms)
{
    struct pollfd p = {.fd = ws->efd, .events = POLLIN};
    (void)poll(&p, 1, ms);
    pthread_mutex_lock(&ws->mu);
    bool stop = ws->stop;
    pthread_mutex_unlock(&ws->mu);
    return !stop;
}

static void set_subscribed(struct baton__waiters *ws, bool on)
{
    pthread_mutex_lock(&ws->mu);
    ws->subscribed = on;
    if (on) /* wake-ups may have been lost while we were away */
        wake_locked(ws, NULL, 0);
    pthread_cond_broadcast(&ws->ready_cv);
    pthread_mutex_unlock(&ws->mu);
}

/* One connection's life: subscribe, then dispatch messages until it breaks
 * or we stop. Returns false when stopping. */
static bool serve(struct baton__waiters *ws, struct baton__conn *cn)
{
    char chan[200];
    snprintf(chan, sizeof chan, "%s%s", ws->c->wake_chan, ws->c->cid);
    const char *argv[2] = {"SUBSCRIBE", chan};
    size_t lens[2] = {9, strlen(chan)};
    redisReply *r = NULL;

    if (baton__conn_command(cn, 2, argv, lens, &r, baton__client_deadline(ws->c)) != BATON_OK)
        return true;
    bool ok = r->type == REDIS_REPLY_ARRAY;
    freeReplyObject(r);
    if (!ok)
        return true;
    set_subscribed(ws, true);
    for (;;) {
        struct pollfd p[2] = {{.fd = cn->fd, .events = baton__conn_read_events(cn)},
                              {.fd = ws->efd, .events = POLLIN}};
        if (p[0].events != 0 && poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents != 0)
            return false;
        int n;
        while ((n = baton__conn_poll_reply(cn, &r)) == 1) {
            handle_message(ws, r);
            freeReplyObject(r);
        }
        if (n < 0)
            break;
    }
    set_subscribed(ws, false);
    return true;
}

static void *subscriber_main(void *arg)
{
    struct baton__waiters *ws = arg;
    int backoff = 50;
    for (;;) {
        struct baton__conn *cn = NULL;
        if (baton__client_open(ws->c, &cn, ws->err, sizeof ws->err) == BATON_OK) {
            bool go_on = serve(ws, cn);
            baton__conn_free(cn);
            if (!go_on)
                break;
            backoff = 50;
        }
        set_subscribed(ws, false);
        if (!pause_ms(ws, backoff))
            break;
        backoff = backoff < 1000 ? backoff * 2 : 2000;
    }
    return NULL;
}

/* Returns the client's waiters, starting the subscriber on first use. */
static struct baton__waiters *get_waiters(struct baton_client *c)
{
    pthread_mutex_lock(&c->mu);
    struct baton__waiters *ws = c->waiters;
    if (ws != NULL || atomic_load(&c->closed))
        goto out;
    if ((ws = calloc(1, sizeof *ws)) == NULL)
        goto out;
    ws->c = c;
    ws->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ws->efd < 0 || pthread_mutex_init(&ws->mu, NULL) != 0)
        goto out_free;
    if (baton__cond_init_monotonic(&ws->ready_cv) != BATON_OK)
        goto out_mutex;
    if (pthread_create(&ws->thread, NULL, subscriber_main, ws) != 0)
        goto out_cond;
    c->waiters = ws;
    goto out;
out_cond:
    pthread_cond_destroy(&ws->ready_cv);
out_mutex:
    pthread_mutex_destroy(&ws->mu);
out_free:
    if (ws->efd >= 0)
        close(ws->efd);
    free(ws);
    ws = NULL;
out:
    pthread_mutex_unlock(&c->mu);
    return ws;
}

int baton__waiters_enter(struct baton_client *c, struct baton__waiter *w)
{
    struct baton__waiters *ws = get_waiters(c);
    if (ws == NULL)
        return atomic_load(&c->closed) ? BATON_EINVAL : BATON_ENOMEM;
    if (baton__cond_init_monotonic(&w->cv) != BATON_OK)
        return BATON_ENOMEM;

    pthread_mutex_lock(&ws->mu);
    if (c->max_waiters >= 0) {
        int n = 0;
        for (struct baton__waiter *o = ws->head; o != NULL; o = o->next)
            n += strcmp(o->key, w->key) == 0;
        if (n >= c->max_waiters) {
            pthread_mutex_unlock(&ws->mu);
            pthread_cond_destroy(&w->cv);
            return BATON_EQUEUEFULL;
        }
    }
    w->woken = false;
    w->prev = NULL;
    w->next = ws->head;
    if (ws->head != NULL)
        ws->head->prev = w;
    ws->head = w;
    /* The first waiter gives the subscriber a moment to subscribe, so that
     * the first release is not missed. Bounded by the connect timeout. */
    struct timespec until;
    baton__timespec_at(baton__now_ns() + c->connect_timeout_ms * 1000000, &until);
    while (!ws->subscribed && !ws->stop)
        if (pthread_cond_timedwait(&ws->ready_cv, &ws->mu, &until) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&ws->mu);
    return BATON_OK;
}

void baton__waiters_leave(struct baton_client *c, struct baton__waiter *w)
{
    struct baton__waiters *ws = c->waiters;
    pthread_mutex_lock(&ws->mu);
    if (w->prev != NULL)
        w->prev->next = w->next;
    else
        ws->head = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
    pthread_mutex_unlock(&ws->mu);
    pthread_cond_destroy(&w->cv);
}

bool baton__waiters_grant(struct baton_client *c, const char *token, uint64_t fence,
                          int64_t sent_ns)
{
    pthread_mutex_lock(&c->mu);
    struct baton__waiters *ws = c->waiters;
    pthread_mutex_unlock(&c->mu);
    if (ws == NULL)
        return false;
    pthread_mutex_lock(&ws->mu);
    bool found = grant_locked(ws, token, strlen(token), fence, sent_ns);
    pthread_mutex_unlock(&ws->mu);
    return found;
}

bool baton__waiters_sleep(struct baton_client *c, struct baton__waiter *w, int64_t until_ns)
{
    struct baton__waiters *ws = c->waiters;
    struct timespec until;
    baton__timespec_at(until_ns, &until);
    pthread_mutex_lock(&ws->mu);
    while (!w->woken)
        if (pthread_cond_timedwait(&w->cv, &ws->mu, &until) == ETIMEDOUT)
            break;
    bool woken = w->woken;
    w->woken = false;
    pthread_mutex_unlock(&ws->mu);
    return woken;
}

void baton__waiters_stop(struct baton_client *c)
{
    struct baton__waiters *ws = c->waiters;
    if (ws == NULL)
        return;
    pthread_mutex_lock(&ws->mu);
    ws->stop = true;
    pthread_mutex_unlock(&ws->mu);
    uint64_t one = 1;
    ssize_t n = write(ws->efd, &one, sizeof one);
    (void)n;
    pthread_join(ws->thread, NULL);
    close(ws->efd);
    pthread_cond_destroy(&ws->ready_cv);
    pthread_mutex_destroy(&ws->mu);
    free(ws);
    c->waiters = NULL;
}
