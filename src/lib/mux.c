/* mux.c -- one connection shared by the threads of a pool shard, with
 * requests pipelined on it.
 *
 * A thread writes its command at once (under the shard's mux mutex) and
 * joins the queue of requests awaiting replies; Redis answers in order, so
 * the n-th reply belongs to the n-th request. One of the waiting threads at
 * a time, the reader, waits on the socket and hands every reply that has
 * arrived to its request, waking its thread; a reader whose own reply came
 * passes the role to the first request still waiting. Redis thus reads and
 * writes the commands of several threads per system call, which is where
 * most of its time per command goes (our scripts are short).
 *
 * Failure: when writing fails, or the reader's wait passes the earliest
 * deadline of the queue (the head's, as every request of a client has the
 * same command timeout), the connection is given up and every request
 * still queued on it fails with BATON_EIO; the next request opens a new
 * one. A connection is freed by the thread that gives it up, unless a
 * reader is waiting on it: the reader frees it when it comes back.
 *
 * Only our own scripts travel here: they are short and never block, so no
 * request delays the others by more than Redis's own order. Commands from
 * baton_client_command(), which may block, use a connection of their own
 * from the pool. The one exception is WAIT (min_replicas): a durable
 * request appends it right behind its script, under the lock, so that it
 * waits for the replicas to have that script's writes; it blocks the
 * connection for at most the request's own deadline, and the request
 * takes both replies.
 *
 * TLS: the reader waits on the fd without the lock, so it must not touch
 * the transport's state there. What the transport already holds (TLS
 * records read and decrypted but not consumed) is asked under the lock,
 * before the wait (baton__conn_read_events()); after deliver() nothing is
 * left inside it, as conn.c reads until the transport would block.
 *
 * A stale connection (READONLY seen, or its master replaced: sentinel.c)
 * takes no new request: the next one gives it up and opens another,
 * through the sentinels.
 *
 * Redis Cluster: every master node has muxes of its own (cluster.c); a
 * request redirected by ASK carries ASKING right in front of its command,
 * appended under the lock so that nothing comes between them, and its
 * +OK is dropped. */
#include <stdlib.h>
#include <string.h>

#include "baton_int.h"

struct baton__mreq {
    pthread_cond_t cv;
    struct baton__req *rq;
    int want, got; /* replies: 1, +1 with ASKING, +1 with WAIT */
    bool done;
    int rc;
    struct baton__mreq *next;
};

void baton__mux_init(struct baton__mux *m, struct baton__node *node)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    m->node = node;
}

void baton__mux_clear(struct baton__mux *m)
{
    baton__conn_free(m->cn);
    m->cn = NULL;
    pthread_mutex_destroy(&m->mu);
}

/* Gives up m's connection: every queued request fails with rc and the
 * connection's error. Returns the connection for the caller to free (NULL
 * when a reader is out waiting on it: the reader frees it). Under m->mu. */
static struct baton__conn *give_up(struct baton_client *c, struct baton__mux *m, int rc,
                                   bool i_am_reader)
{
    struct baton__conn *cn = m->cn;
    for (struct baton__mreq *q = m->head; q != NULL; q = q->next) {
        q->done = true;
        q->rc = rc;
        if (q->rq->reply != NULL) { /* the script's reply came, WAIT's did not */
            freeReplyObject(q->rq->reply);
            q->rq->reply = NULL;
        }
        baton__set_error(q->rq->err, q->rq->errlen, "%s: %s", c->url.redacted,
                         cn->err[0] ? cn->err
                         : atomic_load(&cn->stale)
                             ? "the server is no longer the master (failover)"
                             : "connection given up");
        pthread_cond_signal(&q->cv);
    }
    m->head = m->tail = NULL;
    m->cn = NULL;
    return (i_am_reader || !m->reading) ? cn : NULL;
}

/* Hands the replies that have arrived to their requests, in order. Returns
 * 0, or a negative code when the connection failed or Redis answered more
 * than was asked (the caller gives the connection up). Under m->mu. */
static int deliver(struct baton__mux *m, struct baton__conn *cn)
{
    for (;;) {
        redisReply *r = NULL;
        int k = baton__conn_poll_reply(cn, &r);
        if (k <= 0)
            return k;
        struct baton__mreq *q = m->head;
        if (q == NULL) {
            freeReplyObject(r);
            cn->broken = true;
            baton__set_error(cn->err, sizeof cn->err, "a reply nobody asked for");
            return BATON_EPROTO;
        }
        int cmd_at = q->rq->asking ? 1 : 0; /* the command's reply, after ASKING's */
        if (q->got < cmd_at) {
            freeReplyObject(r); /* ASKING's +OK (an error shows in the command's reply) */
        } else if (q->got == cmd_at) {
            q->rq->reply = r;
            memcpy(q->rq->runid, cn->runid, sizeof q->rq->runid);
            q->rq->promoted = cn->promoted;
        } else { /* WAIT's */
            q->rq->acked = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
            freeReplyObject(r);
        }
        if (++q->got < q->want)
            continue;
        m->head = q->next;
        if (m->head == NULL)
            m->tail = NULL;
        q->rc = BATON_OK;
        q->done = true;
        pthread_cond_signal(&q->cv);
    }
}

/* Makes sure m has a connection fit for a new request, opening (or taking
 * from the pool) one by deadline_ns. A stale connection (its server is no
 * master) is dropped: its queued requests fail. Called and returns with
 * m->mu held; drops it to connect. */
static int ensure_conn(struct baton_client *c, struct baton__mux *m, int64_t deadline_ns, char *err,
                       size_t errlen)
{
    if (m->cn != NULL && atomic_load(&m->cn->stale))
        baton__conn_free(give_up(c, m, BATON_EIO, false));
    while (m->cn == NULL) {
        struct baton__conn *cn = NULL;
        pthread_mutex_unlock(&m->mu);
        int rc = baton__client_get(c, m->node, deadline_ns, &cn, err, errlen);
        pthread_mutex_lock(&m->mu);
        if (rc != BATON_OK)
            return rc;
        if (m->cn == NULL)
            m->cn = cn;
        else
            baton__conn_free(cn); /* another thread was quicker */
    }
    return BATON_OK;
}

/* Waits, as the reader, for data on the connection until the earliest
 * deadline of the queue, and delivers what came. Called and returns with
 * m->mu held and m->reading set by the caller. What the transport holds
 * already (TLS) is asked under the lock; the wait itself touches only the
 * fd. */
static void read_once(struct baton_client *c, struct baton__mux *m)
{
    struct baton__conn *cn = m->cn;
    int64_t deadline = m->head->rq->deadline_ns;
    for (struct baton__mreq *q = m->head; q != NULL; q = q->next)
        if (q->rq->deadline_ns < deadline)
            deadline = q->rq->deadline_ns;
    short events = baton__conn_read_events(cn);
    pthread_mutex_unlock(&m->mu);
    int w = events != 0 ? baton__conn_wait(cn, events, deadline) : 1;
    pthread_mutex_lock(&m->mu);
    if (cn != m->cn) { /* given up by a writer meanwhile */
        baton__conn_free(cn);
        return;
    }
    int rc = BATON_EIO;
    if (w > 0)
        rc = deliver(m, cn);
    else
        baton__conn_fail(cn, "read: ", w == 0 ? "timed out waiting for redis" : strerror(-w));
    if (rc < 0)
        baton__conn_free(give_up(c, m, rc == BATON_EPROTO ? rc : BATON_EIO, true));
}

int baton__mux_call(struct baton_client *c, struct baton__mux *m, struct baton__req *rq)
{
    struct baton__mreq q = {.rq = rq,
                            .want = 1 + (rq->asking ? 1 : 0) + (rq->wait_replicas > 0 ? 1 : 0)};
    int rc;

    rq->reply = NULL;
    rq->acked = -1;
    rq->runid[0] = '\0';
    rq->sent_ns = 0; /* 0 until it goes out: a failure before is safe to retry */
    if (baton__cond_init_monotonic(&q.cv) != 0)
        return BATON_ENOMEM;
    pthread_mutex_lock(&m->mu);
    if ((rc = ensure_conn(c, m, rq->deadline_ns, rq->err, rq->errlen)) != BATON_OK)
        goto out;
    struct baton__conn *cn = m->cn;
    size_t olen = cn->olen;
    if (rq->asking) {
        const char *aargv[1] = {"ASKING"};
        size_t alens[1] = {6};
        if ((rc = baton__conn_append(cn, 1, aargv, alens)) != BATON_OK)
            goto out; /* nothing was queued: the connection is intact */
    }
    if ((rc = baton__conn_append(cn, rq->argc, rq->argv, rq->lens)) != BATON_OK) {
        cn->olen = olen; /* ASKING goes right in front of it or not at all */
        goto out;
    }
    if (rq->wait_replicas > 0) {
        char nb[BATON__I64_LEN], mb[BATON__I64_LEN];
        const char *wargv[3] = {"WAIT", baton__i64_str(rq->wait_replicas, nb),
                                baton__i64_str(rq->wait_ms, mb)};
        size_t wlens[3] = {4, strlen(wargv[1]), strlen(wargv[2])};
        if ((rc = baton__conn_append(cn, 3, wargv, wlens)) != BATON_OK) {
            cn->olen = olen; /* take the command back: WAIT goes right behind it or not at all */
            goto out;
        }
    }
    if (m->tail != NULL)
        m->tail->next = &q;
    else
        m->head = &q;
    m->tail = &q;
    rq->sent_ns = baton__now_ns();
    if (baton__conn_flush(cn, rq->deadline_ns) != BATON_OK)
        baton__conn_free(give_up(c, m, BATON_EIO, false));

    while (!q.done) {
        if (!m->reading) {
            m->reading = true;
            read_once(c, m);
            m->reading = false;
        } else {
            /* The reader's wait ends by the earliest deadline of the queue,
             * ours included; waking at ours only guards against a lost
             * signal. */
            if (baton__now_ns() < rq->deadline_ns) {
                struct timespec ts;
                baton__timespec_at(rq->deadline_ns, &ts);
                pthread_cond_timedwait(&q.cv, &m->mu, &ts);
            } else {
                pthread_cond_wait(&q.cv, &m->mu);
            }
        }
    }
    /* Pass the reader's role on to the first request still waiting. */
    if (!m->reading && m->head != NULL)
        pthread_cond_signal(&m->head->cv);
    rc = q.rc;
out:
    pthread_mutex_unlock(&m->mu);
    pthread_cond_destroy(&q.cv);
    return rc;
}
