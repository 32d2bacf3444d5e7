/* waiters.c -- waiting for a lock: per-key flood control, and the one
 * subscription per client that turns release notifications into wake-ups.
 *
 * A release publishes the token of the first live waiter on that waiter's
 * client channel (scripts.c). The client keeps one connection subscribed
 * to its channel, driven by its loop (loop.c) like the pipes: the loop
 * reads the messages, finds the waiter by token and wakes it: every waiter
 * is an asynchronous operation of lock_async.c (a blocking call waits for
 * one), woken by a task that sends its next attempt in the same turn. One
 * connection per process, however many waiters: no subscription storms.
 * Connecting and SUBSCRIBE run on the loop's helper thread; a lost
 * connection is opened again after a back-off (50 ms doubling to 2 s), and
 * when it is back every waiter is woken, as wake-ups may have been lost
 * meanwhile (so is every waiter that came before the first subscription).
 * A lost message costs a waiter one retry delay, never correctness:
 * waiters always retry the lock before sleeping, and sleep no longer than
 * the holder's remaining lease or the retry delay. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "lock_int.h"

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000

struct baton__waiters {
    struct baton_client *c;
    pthread_mutex_t mu; /* guards head (the rest is the loop's) */
    struct baton__waiter *head;
    /* the loop's */
    struct baton__io io;
    struct baton__conn *cn; /* subscribed, watched */
    bool connecting, reading;
    struct baton__conn *doomed;
    int backoff_ms;
    struct baton__timer retry;
    struct baton__task start_task, done_task;
    struct baton__job job; /* connect + SUBSCRIBE on the helper */
    struct baton__conn *jcn;
    int jrc;
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
        w->wake(w);
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
        w->wake(w);
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

/* Subscribed (again): wake-ups may have been lost while we were away. */
static void subscribed(struct baton__waiters *ws)
{
    pthread_mutex_lock(&ws->mu);
    wake_locked(ws, NULL, 0);
    pthread_mutex_unlock(&ws->mu);
}

static void start_connect(struct baton__waiters *ws);

/* The connection failed: closed (after its ready() when inside it), and
 * opened again after the back-off. */
static void lost(struct baton__waiters *ws)
{
    struct baton__loop *l = atomic_load(&ws->c->loop);
    if (ws->cn != NULL) {
        baton__io_unwatch(l, &ws->io);
        if (ws->reading)
            ws->doomed = ws->cn;
        else
            baton__conn_free(ws->cn);
        ws->cn = NULL;
    }
    if (baton__loop_stopping(l))
        return;
    if (baton__timer_arm(l, &ws->retry, baton__now_ns() + (int64_t)ws->backoff_ms * 1000000) !=
        BATON_OK)
        start_connect(ws);
    ws->backoff_ms = ws->backoff_ms < BACKOFF_MAX_MS / 2 ? ws->backoff_ms * 2 : BACKOFF_MAX_MS;
}

static void sub_ready(struct baton__io *io, uint32_t events)
{
    struct baton__waiters *ws = BATON__OWNER(io, struct baton__waiters, io);
    struct baton__conn *cn = ws->cn;
    redisReply *r = NULL;
    int k;
    (void)events;
    if (cn == NULL)
        return;
    ws->reading = true;
    cn->want = POLLIN;
    int f = baton__conn_fill(cn);
    while ((k = baton__conn_next_reply(cn, &r)) == 1) {
        handle_message(ws, r);
        freeReplyObject(r);
    }
    if (f < 0 || k < 0)
        lost(ws);
    ws->reading = false;
    if (ws->doomed != NULL) {
        baton__conn_free(ws->doomed);
        ws->doomed = NULL;
    }
}

static void sub_flush(struct baton__io *io)
{
    (void)io; /* nothing is written after SUBSCRIBE */
}

/* The helper's result: a subscribed connection, or a failure. */
static void connected(struct baton__task *t)
{
    struct baton__waiters *ws = BATON__OWNER(t, struct baton__waiters, done_task);
    struct baton__loop *l = atomic_load(&ws->c->loop);
    baton__loop_offload_done(l);
    ws->connecting = false;
    struct baton__conn *cn = ws->jcn;
    ws->jcn = NULL;
    if (ws->jrc != BATON_OK || baton__loop_stopping(l)) {
        baton__conn_free(cn);
        if (!baton__loop_stopping(l))
            lost(ws);
        return;
    }
    ws->cn = cn;
    ws->io.ready = sub_ready;
    ws->io.flush = sub_flush;
    if (baton__io_watch(l, &ws->io, cn->fd, EPOLLIN) != BATON_OK) {
        lost(ws);
        return;
    }
    ws->backoff_ms = BACKOFF_MIN_MS;
    subscribed(ws);
    sub_ready(&ws->io, EPOLLIN); /* messages that came with the confirmation */
}

static void subscribe_job(struct baton__job *j)
{
    struct baton__waiters *ws = BATON__OWNER(j, struct baton__waiters, job);
    struct baton_client *c = ws->c;
    char chan[200];
    snprintf(chan, sizeof chan, "%s%s", c->wake_chan, c->cid);
    const char *argv[2] = {"SUBSCRIBE", chan};
    size_t lens[2] = {9, strlen(chan)};
    redisReply *r = NULL;
    ws->jcn = NULL;
    ws->jrc = baton__client_open(c, &ws->jcn, ws->err, sizeof ws->err);
    if (ws->jrc == BATON_OK) {
        ws->jrc = baton__conn_command(ws->jcn, 2, argv, lens, &r, baton__client_deadline(c));
        if (ws->jrc == BATON_OK && r->type != REDIS_REPLY_ARRAY)
            ws->jrc = BATON_EREDIS;
        if (r != NULL)
            freeReplyObject(r);
    }
    ws->done_task.run = connected;
    if (!baton__loop_post(atomic_load(&c->loop), &ws->done_task)) {
        baton__conn_free(ws->jcn); /* the loop has stopped */
        ws->jcn = NULL;
    }
}

static void start_connect(struct baton__waiters *ws)
{
    struct baton__loop *l = atomic_load(&ws->c->loop);
    if (ws->connecting || ws->cn != NULL || baton__loop_stopping(l))
        return;
    ws->job.run = subscribe_job;
    if (baton__loop_offload(l, &ws->job) == BATON_OK)
        ws->connecting = true;
}

static void retry_due(struct baton__timer *t)
{
    start_connect(BATON__OWNER(t, struct baton__waiters, retry));
}

static void start_on_loop(struct baton__task *t)
{
    start_connect(BATON__OWNER(t, struct baton__waiters, start_task));
}

/* Returns the client's waiters, starting the subscription on first use. */
static struct baton__waiters *get_waiters(struct baton_client *c)
{
    struct baton__loop *l = baton__loop_of(c);
    pthread_mutex_lock(&c->mu);
    struct baton__waiters *ws = c->waiters;
    if (ws != NULL || l == NULL || atomic_load(&c->closed))
        goto out;
    if ((ws = calloc(1, sizeof *ws)) == NULL)
        goto out;
    ws->c = c;
    ws->io.fd = -1;
    ws->backoff_ms = BACKOFF_MIN_MS;
    ws->retry.fire = retry_due;
    if (pthread_mutex_init(&ws->mu, NULL) != 0)
        goto out_free;
    ws->start_task.run = start_on_loop;
    if (!baton__loop_post(l, &ws->start_task))
        goto out_mutex;
    c->waiters = ws;
    goto out;
out_mutex:
    pthread_mutex_destroy(&ws->mu);
out_free:
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
    pthread_mutex_lock(&ws->mu);
    if (c->max_waiters >= 0) {
        int n = 0;
        for (struct baton__waiter *o = ws->head; o != NULL; o = o->next)
            n += strcmp(o->key, w->key) == 0;
        if (n >= c->max_waiters) {
            pthread_mutex_unlock(&ws->mu);
            return BATON_EQUEUEFULL;
        }
    }
    w->woken = false;
    w->prev = NULL;
    w->next = ws->head;
    if (ws->head != NULL)
        ws->head->prev = w;
    ws->head = w;
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

bool baton__waiters_take_wake(struct baton_client *c, struct baton__waiter *w)
{
    struct baton__waiters *ws = c->waiters;
    pthread_mutex_lock(&ws->mu);
    bool woken = w->woken;
    w->woken = false;
    pthread_mutex_unlock(&ws->mu);
    return woken;
}

void baton__waiters_stop(struct baton_client *c)
{
    /* The loop has stopped: its connection is ours to close. */
    struct baton__waiters *ws = c->waiters;
    if (ws == NULL)
        return;
    baton__conn_free(ws->cn);
    pthread_mutex_destroy(&ws->mu);
    free(ws);
    c->waiters = NULL;
}
