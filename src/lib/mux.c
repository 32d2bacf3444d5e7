/* mux.c -- a pipe: the one connection to one server on which the client's
 * loop keeps every script call in flight.
 *
 * A request submitted during a turn is formatted and appended to the
 * connection's output; at the end of the turn the loop writes the output
 * of every pipe that got requests with one write() (over TLS: one
 * SSL_write, so one record for up to 16 KB of requests), and every
 * request appended before it takes that moment as its send time. When the
 * connection is readable, everything that has arrived is read (one read()
 * while the socket has no more) and the replies are handed out in order:
 * Redis answers in order, so the n-th reply belongs to the n-th request.
 * Few connections per server: Redis runs one command at a time, and one
 * connection batches best (measured: tests/bench/RESULTS.md). But a single
 * pipe takes turns with Redis: its next batch is written once Redis has
 * answered the last, and Redis waits meanwhile. So ordinary calls have two
 * pipes per server, lanes chosen by the hash slot of the call's keys
 * (call.c): while Redis runs one lane's batch the loop answers the other's
 * and writes its next (measured, 50 asynchronous lock cycles in flight:
 * Redis busy 0.78 -> 0.95 of its core, +25-30 % cycles/s). Calls on one
 * lock (one slot) stay on one lane, so they keep their order.
 *
 * Connecting blocks (DNS, TCP, TLS, AUTH, Sentinel), so it runs on the
 * loop's helper thread; requests submitted meanwhile wait in the pipe and
 * go out, in order, when the connection arrives. When the attempt fails,
 * the requests that were waiting when it started fail with its error, and
 * those that came while it ran get an attempt of their own (a request
 * never fails with the error of an attempt older than itself: one that
 * started while Redis was frozen, say).
 * A stale connection (READONLY seen, or its master replaced: sentinel.c)
 * takes no new request: the next one gives it up and opens another.
 *
 * Failure: when writing or reading fails, or a request in flight passes
 * its deadline (Redis frozen, a black hole), the connection is given up and
 * every request in flight on it fails with BATON_EIO, a send time of 0
 * telling those that never left (safe to send again). A request waiting
 * for a connection fails alone at its deadline. Every request completes
 * exactly once: by its replies, by the failure of its connection, by its
 * deadline, or when the client is freed (fail_all, when the loop stops).
 *
 * TLS: Redis reads a TLS connection one record at a time (two reads: the
 * header, then the body) and answers each separately, where over plain TCP
 * one read takes every batch the socket holds. So that records stay few
 * and full, a TLS pipe keeps at most TLS_BATCHES written batches
 * unanswered: requests submitted meanwhile wait in the output, corked, and
 * leave in one record when an answer comes (measured, 50 threads: Redis's
 * system calls per lock cycle 1.2 -> 0.47; tests/bench/RESULTS.md).
 *
 * Only our own scripts travel here: they are short and never block, so no
 * request delays the others by more than Redis's own order. The exception
 * is WAIT (min_replicas): the durable requests of one turn are followed by
 * one WAIT, written with them, whose answer counts the replicas that have
 * every write of the connection up to it, so it answers for each of them
 * (a WAIT per request would hold the connection once per request). Its
 * timeout is the shortest the requests asked for; it holds the connection
 * for at most that long, and each request completes with its answer (an
 * error reply, which wrote nothing, completes at once). Redis Cluster:
 * every master node has a pipe of its own (cluster.c); a request
 * redirected by ASK carries ASKING right in front of its command, and its
 * +OK is dropped. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "loop_int.h"

enum { Q_NONE, Q_PENDING, Q_FLIGHT, Q_WAITING /* replied, its WAIT not yet */ };

/* A WAIT that answers for the durable requests of one turn: in flight as a
 * request of its own (q), its members linked through gnext. */
struct baton__wait {
    struct baton__mreq q;
    struct baton__req rq;
    int replicas;
    int64_t wait_ms;
    struct baton__mreq *members;
    char err[8];
};

/* A pipe: a pipelined connection to one server (the URL's, or a cluster
 * node's) on which the loop keeps script calls in flight: two lanes and a
 * durable pipe per server (BATON__PIPE_*), made on first use
 * (baton__mux_of) and kept until the client is freed. Loop thread only. */
struct baton__mux {
    struct baton_client *c;
    struct baton__node *node;             /* where it connects (NULL: the URL's server) */
    struct baton__conn *cn;               /* NULL: none open */
    struct baton__io io;                  /* cn's registration with the loop */
    struct baton__mreq *pend, *pend_tail; /* waiting for a connection */
    struct baton__mreq *head, *tail;      /* in cn's output or sent, replies awaited in order */
    struct baton__mreq *unstamped;        /* the first in flight without a send time */
    bool connecting;                      /* a connection is being opened (the helper) */
    unsigned cgen;                        /* that attempt's number */
    bool reading;                         /* in its ready(): cn is freed after */
    struct baton__conn *doomed;           /* given up while reading: freed after */
    struct baton__job cjob;               /* the connect job and its result */
    struct baton__task ctask;
    int64_t cdeadline;
    struct baton__conn *ccn;
    int crc;
    char cerr[BATON__ERRLEN];
    struct baton__mux *lnext; /* the client's list of pipes (c->pipes) */
    struct baton__wait *open; /* the WAIT for this turn's durable requests */
    int batches;              /* written and not yet answered */
};

static const char freed_msg[] = "the client was freed (baton_client_free) before this call";

static bool busy(struct baton_client *c);
static void fail_all(struct baton_client *c);
static void close_all(struct baton_client *c);

/* The loop's hooks on the pipes, set with the first one. */
static const struct baton__loop_conns pipe_conns = {busy, fail_all, close_all};

struct baton__mux *baton__mux_of(struct baton_client *c, struct baton__node *node, int pipe)
{
    struct baton__mux **slot = node != NULL ? &node->pipe[pipe] : &c->pipe[pipe];
    struct baton__mux *m = *slot;
    if (m != NULL)
        return m;
    if ((m = calloc(1, sizeof *m)) == NULL)
        return NULL;
    m->c = c; /* from here on the helper reads it */
    m->node = node;
    m->io.fd = -1;
    if (c->pipes == NULL)
        baton__loop_set_conns(c->loop, &pipe_conns);
    m->lnext = c->pipes;
    c->pipes = m;
    *slot = m;
    return m;
}

void baton__mux_free_all(struct baton_client *c)
{
    for (struct baton__mux *m = c->pipes, *next; m != NULL; m = next) {
        next = m->lnext;
        baton__conn_free(m->cn);
        free(m);
    }
    c->pipes = NULL;
}

static struct baton__mux *io_mux(struct baton__io *io)
{
    return BATON__OWNER(io, struct baton__mux, io);
}

/* ---- the lists ---- */

static void link_tail(struct baton__mreq **head, struct baton__mreq **tail, struct baton__mreq *q)
{
    q->next = NULL;
    q->prev = *tail;
    if (*tail != NULL)
        (*tail)->next = q;
    else
        *head = q;
    *tail = q;
}

static void unlink_q(struct baton__mux *m, struct baton__mreq *q)
{
    struct baton__mreq **head = q->where == Q_PENDING ? &m->pend : &m->head;
    struct baton__mreq **tail = q->where == Q_PENDING ? &m->pend_tail : &m->tail;
    if (q->prev != NULL)
        q->prev->next = q->next;
    else
        *head = q->next;
    if (q->next != NULL)
        q->next->prev = q->prev;
    else
        *tail = q->prev;
    if (m->unstamped == q)
        m->unstamped = q->next;
    q->next = q->prev = NULL;
    q->where = Q_NONE;
}

static void leave_group(struct baton__mreq *q)
{
    struct baton__wait *g = q->group;
    if (g == NULL)
        return;
    if (q->gprev != NULL)
        q->gprev->gnext = q->gnext;
    else
        g->members = q->gnext;
    if (q->gnext != NULL)
        q->gnext->gprev = q->gprev;
    q->gnext = q->gprev = NULL;
    q->group = NULL;
}

/* Completes q with rc (detail already in rq->err): out of its list, its
 * timer disarmed, a partial reply dropped, then q->done. */
static void complete(struct baton__mux *m, struct baton__mreq *q, int rc)
{
    struct baton__loop *l = m->c->loop;
    leave_group(q);
    if (q->where == Q_PENDING || q->where == Q_FLIGHT)
        unlink_q(m, q);
    q->where = Q_NONE;
    baton__timer_disarm(l, &q->timer);
    free(q->cmd);
    q->cmd = NULL;
    q->rc = rc;
    if (rc != BATON_OK && q->rq->reply != NULL) { /* the script's reply came, WAIT's did not */
        freeReplyObject(q->rq->reply);
        q->rq->reply = NULL;
    }
    q->done(q);
}

static void fail_q(struct baton__mux *m, struct baton__mreq *q, int rc, const char *why)
{
    baton__set_error(q->rq->err, q->rq->errlen, "%s: %s", m->c->url.redacted, why);
    complete(m, q, rc);
}

static void failed_later(struct baton__task *t)
{
    struct baton__mreq *q = BATON__OWNER(t, struct baton__mreq, task);
    complete(q->m, q, q->rc);
}

/* Fails q later in this turn (never inside baton__mux_submit). */
static void fail_later(struct baton__mux *m, struct baton__mreq *q, int rc, const char *why)
{
    baton__set_error(q->rq->err, q->rq->errlen, "%s: %s", m->c->url.redacted, why);
    q->rc = rc;
    q->task.run = failed_later;
    baton__loop_defer(m->c->loop, &q->task);
}

/* ---- giving a connection up ---- */

/* Fails every request in flight on m with rc and the connection's error,
 * and closes the connection (after its ready() when inside it). */
static void give_up(struct baton__mux *m, int rc)
{
    struct baton__conn *cn = m->cn;
    if (cn == NULL)
        return;
    const char *why = cn->err[0]                ? cn->err
                      : atomic_load(&cn->stale) ? "the server is no longer the master (failover)"
                                                : "connection given up";
    char reason[BATON__ERRLEN];
    baton__set_error(reason, sizeof reason, "%s", why);
    baton__io_unwatch(m->c->loop, &m->io);
    m->cn = NULL;
    if (m->reading)
        m->doomed = cn;
    else
        baton__conn_free(cn);
    /* Callbacks may submit again: to a pipe without a connection. */
    struct baton__mreq *list = m->head;
    struct baton__wait *open = m->open;
    m->head = m->tail = m->unstamped = NULL;
    m->open = NULL;
    m->batches = 0;
    while (list != NULL) {
        struct baton__mreq *q = list;
        list = q->next;
        q->next = q->prev = NULL;
        q->where = Q_NONE;
        if (q->rq == NULL) { /* a WAIT: its requests fail with it */
            struct baton__wait *g = (struct baton__wait *)(void *)q;
            while (g->members != NULL)
                fail_q(m, g->members, rc, reason);
            free(g);
            continue;
        }
        fail_q(m, q, rc, reason);
    }
    free(open); /* its requests were in flight: failed above */
}

/* ---- output ---- */

static const char asking[] = "*1\r\n$6\r\nASKING\r\n";

/* q, its command now in the connection's output, in flight. */
static void in_flight(struct baton__mux *m, struct baton__mreq *q)
{
    q->where = Q_FLIGHT;
    link_tail(&m->head, &m->tail, q);
    if (m->unstamped == NULL)
        m->unstamped = q;
    if (q->rq->wait_replicas > 0) {
        struct baton__wait *g = m->open;
        if (g == NULL && (g = m->open = calloc(1, sizeof *g)) != NULL)
            g->wait_ms = q->rq->wait_ms;
        if (g == NULL) {
            give_up(m, BATON_ENOMEM);
            return;
        }
        if (q->rq->wait_replicas > g->replicas)
            g->replicas = q->rq->wait_replicas;
        if (q->rq->wait_ms < g->wait_ms)
            g->wait_ms = q->rq->wait_ms;
        q->group = g;
        q->gprev = NULL;
        q->gnext = g->members;
        if (g->members != NULL)
            g->members->gprev = q;
        g->members = q;
    }
    if (baton__io_dirty(m->c->loop, &m->io) != BATON_OK)
        give_up(m, BATON_ENOMEM);
}

/* A request that waited for the connection: its command, formatted when
 * it was submitted (format), into the output. */
static void append(struct baton__mux *m, struct baton__mreq *q)
{
    if (baton__conn_append_raw(m->cn, q->cmd, q->len) != BATON_OK) {
        fail_q(m, q, BATON_ENOMEM, "out of memory");
        return;
    }
    free(q->cmd);
    q->cmd = NULL;
    in_flight(m, q);
}

/* Writes the turn's WAIT behind its durable requests. */
static int close_group(struct baton__mux *m)
{
    struct baton__wait *g = m->open;
    char nb[BATON__I64_LEN], mb[BATON__I64_LEN];
    const char *wargv[3] = {"WAIT", baton__i64_str(g->replicas, nb),
                            baton__i64_str(g->wait_ms, mb)};
    size_t wlens[3] = {4, strlen(wargv[1]), strlen(wargv[2])};
    m->open = NULL;
    if (baton__conn_append(m->cn, 3, wargv, wlens) != BATON_OK) {
        free(g);
        return BATON_ENOMEM;
    }
    g->rq.err = g->err;
    g->rq.errlen = sizeof g->err;
    g->q.want = 1;
    g->q.where = Q_FLIGHT;
    link_tail(&m->head, &m->tail, &g->q); /* q.rq stays NULL: how a WAIT is told */
    if (m->unstamped == NULL)
        m->unstamped = &g->q;
    return BATON_OK;
}

/* Batches written and unanswered at most on a connection (see above). */
#define TLS_BATCHES 2

static int batch_limit(const struct baton__conn *cn)
{
    return cn->tp == &baton__tls_transport ? TLS_BATCHES : INT32_MAX;
}

static void mux_flush(struct baton__io *io)
{
    struct baton__mux *m = io_mux(io);
    struct baton__conn *cn = m->cn;
    if (cn == NULL)
        return;
    if (m->unstamped != NULL && m->batches >= batch_limit(cn))
        return; /* corked: written when a batch's answers come (deliver) */
    if (m->open != NULL && close_group(m) != BATON_OK) {
        baton__conn_fail(cn, "out of memory", "");
        give_up(m, BATON_ENOMEM);
        return;
    }
    int64_t now = baton__now_ns();
    for (struct baton__mreq *q = m->unstamped; q != NULL; q = q->next)
        if (q->rq != NULL)
            q->rq->sent_ns = now;
    if (m->unstamped != NULL) {
        m->tail->batch_end = true;
        m->batches++;
    }
    m->unstamped = NULL;
    int w = baton__conn_write_some(cn);
    if (w < 0) {
        give_up(m, BATON_EIO);
        return;
    }
    uint32_t ev = EPOLLIN | (w == 1 || cn->want == POLLOUT ? EPOLLOUT : 0);
    if (baton__io_watch(m->c->loop, &m->io, cn->fd, ev) != BATON_OK) {
        baton__conn_fail(cn, "epoll: ", "cannot watch the connection");
        give_up(m, BATON_EIO);
    }
}

/* ---- input ---- */

/* Hands the replies that have arrived to their requests, in order, while
 * cn is still m's (a callback may give it up). Returns 0 or a negative
 * code (protocol error, or more replies than requests). */
static int deliver(struct baton__mux *m, struct baton__conn *cn)
{
    while (m->cn == cn) {
        redisReply *r = NULL;
        int k = baton__conn_next_reply(cn, &r);
        if (k <= 0)
            return k;
        struct baton__mreq *q = m->head;
        if (q == NULL) {
            freeReplyObject(r);
            baton__conn_fail(cn, "a reply nobody asked for", "");
            return BATON_EPROTO;
        }
        if (q->batch_end) { /* its batch is answered: the corked one may go */
            q->batch_end = false;
            m->batches--;
            (void)baton__io_dirty(m->c->loop, &m->io);
        }
        if (q->rq == NULL) { /* a WAIT: it answers for its requests */
            struct baton__wait *g = (struct baton__wait *)(void *)q;
            long long acked = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
            freeReplyObject(r);
            unlink_q(m, q);
            g->q.where = Q_NONE;
            while (g->members != NULL) { /* answered, even if a callback gives cn up */
                struct baton__mreq *w = g->members;
                w->rq->acked = acked;
                complete(m, w, BATON_OK);
            }
            free(g);
            continue;
        }
        struct baton__req *rq = q->rq;
        int cmd_at = rq->asking ? 1 : 0; /* the command's reply, after ASKING's */
        if (q->got < cmd_at) {
            freeReplyObject(r); /* ASKING's +OK (an error shows in the command's reply) */
        } else {
            rq->reply = r;
            memcpy(rq->runid, cn->runid, sizeof rq->runid);
            rq->promoted = cn->promoted;
        }
        if (++q->got < q->want)
            continue;
        if (q->group != NULL && rq->reply->type != REDIS_REPLY_ERROR) {
            unlink_q(m, q); /* replied: now its WAIT's answer */
            q->where = Q_WAITING;
            continue;
        }
        complete(m, q, BATON_OK);
    }
    return 0;
}

static void mux_ready(struct baton__io *io, uint32_t events)
{
    struct baton__mux *m = io_mux(io);
    struct baton__conn *cn = m->cn;
    if (cn == NULL)
        return;
    m->reading = true;
    cn->want = POLLIN;            /* a TLS read may want to write first: fill() says so */
    int f = baton__conn_fill(cn); /* what came before a failure is still answered */
    int d = deliver(m, cn);
    if (m->cn == cn && (f < 0 || d < 0))
        give_up(m, d < 0 ? d : BATON_EIO);
    m->reading = false;
    if (m->doomed != NULL) {
        baton__conn_free(m->doomed);
        m->doomed = NULL;
    }
    if (m->cn == cn && ((events & EPOLLOUT) != 0 || cn->want == POLLOUT))
        (void)baton__io_dirty(m->c->loop, &m->io);
}

/* ---- connecting, on the helper thread ---- */

static void start_connect(struct baton__mux *m, int64_t deadline_ns);

static void connected(struct baton__task *t)
{
    struct baton__mux *m = BATON__OWNER(t, struct baton__mux, ctask);
    struct baton__loop *l = m->c->loop;
    baton__loop_offload_done(l);
    m->connecting = false;
    if (m->crc == BATON_OK && baton__loop_stopping(l)) {
        baton__conn_free(m->ccn);
        m->ccn = NULL;
        m->crc = BATON_EINVAL;
        baton__set_error(m->cerr, sizeof m->cerr, "%s: %s", m->c->url.redacted, freed_msg);
    }
    if (m->crc != BATON_OK) {
        /* The requests that waited for this attempt fail with its error;
         * those that came while it ran get an attempt of their own. */
        unsigned gen = m->cgen;
        while (m->pend != NULL && m->pend->gen == gen) {
            struct baton__mreq *q = m->pend;
            baton__set_error(q->rq->err, q->rq->errlen, "%s", m->cerr);
            complete(m, q, m->crc);
        }
        /* Their callbacks may have submitted again, and so started the
         * next attempt already: never a second one (its job would be
         * queued twice on the helper, and the jobs behind it lost). */
        if (m->pend != NULL && !m->connecting && !baton__loop_stopping(l))
            start_connect(m, m->pend->rq->deadline_ns);
        return;
    }
    m->cn = m->ccn;
    m->ccn = NULL;
    m->io.ready = mux_ready;
    m->io.flush = mux_flush;
    if (baton__io_watch(l, &m->io, m->cn->fd, EPOLLIN) != BATON_OK) {
        baton__conn_fail(m->cn, "epoll: ", "cannot watch the connection");
        give_up(m, BATON_EIO);
    }
    while (m->pend != NULL && m->cn != NULL) {
        struct baton__mreq *q = m->pend;
        unlink_q(m, q);
        append(m, q);
    }
}

static void connect_job(struct baton__job *j)
{
    struct baton__mux *m = BATON__OWNER(j, struct baton__mux, cjob);
    m->ccn = NULL;
    m->crc = baton__client_get(m->c, m->node, m->cdeadline, &m->ccn, m->cerr, sizeof m->cerr);
    m->ctask.run = connected;
    if (!baton__loop_post(m->c->loop, &m->ctask)) {
        baton__conn_free(m->ccn); /* the loop has stopped */
        m->ccn = NULL;
    }
}

/* Starts an attempt for the requests waiting in m->pend. Only one at a
 * time: the caller has checked that none is under way. */
static void start_connect(struct baton__mux *m, int64_t deadline_ns)
{
    m->connecting = true;
    m->cgen++;
    m->cdeadline = deadline_ns;
    m->cjob.run = connect_job;
    int rc = baton__loop_offload(m->c->loop, &m->cjob);
    if (rc == BATON_EINVAL)
        return; /* its job is queued still (the caller's check failed): that attempt serves */
    if (rc != BATON_OK) {
        m->connecting = false;
        while (m->pend != NULL)
            fail_q(m, m->pend, BATON_ENOMEM, "cannot start the helper thread");
    }
}

/* ---- requests ---- */

static void expired(struct baton__timer *t)
{
    struct baton__mreq *q = BATON__OWNER(t, struct baton__mreq, timer);
    struct baton__mux *m = q->m;
    if (q->where == Q_PENDING) {
        fail_q(m, q, BATON_EIO, "timed out connecting to redis");
    } else if ((q->where == Q_FLIGHT || q->where == Q_WAITING) && m->cn != NULL) {
        baton__conn_fail(m->cn, "read: ", "timed out waiting for redis");
        give_up(m, BATON_EIO);
    }
}

/* Formats q's commands (ASKING, the command) into q->cmd: a request that
 * waits for a connection (its arguments are the caller's until submit
 * returns). */
static int format(struct baton__mreq *q)
{
    struct baton__req *rq = q->rq;
    size_t pre = rq->asking ? sizeof asking - 1 : 0;
    if (baton__resp_format(&q->cmd, pre, rq->argc, rq->argv, rq->lens, &q->len) != BATON_OK)
        return BATON_ENOMEM;
    memcpy(q->cmd, asking, pre);
    return BATON_OK;
}

void baton__mux_submit(struct baton_client *c, struct baton__mux *m, struct baton__mreq *q)
{
    struct baton__loop *l = c->loop;
    struct baton__req *rq = q->rq;

    rq->reply = NULL;
    rq->acked = -1;
    rq->runid[0] = '\0';
    rq->promoted = false;
    rq->sent_ns = 0; /* 0 until it goes out: a failure before is safe to retry */
    q->m = m;
    q->got = 0;
    q->rc = BATON_OK;
    q->cmd = NULL;
    q->where = Q_NONE;
    q->next = q->prev = NULL;
    q->group = NULL;
    q->gnext = q->gprev = NULL;
    q->batch_end = false;
    q->timer.fire = expired;
    if (baton__loop_stopping(l)) {
        fail_later(m, q, BATON_EINVAL, freed_msg);
        return;
    }
    q->want = rq->asking ? 2 : 1;
    if (baton__timer_arm(l, &q->timer, rq->deadline_ns) != BATON_OK) {
        fail_later(m, q, BATON_ENOMEM, "out of memory");
        return;
    }
    if (m->cn != NULL && atomic_load(&m->cn->stale))
        give_up(m, BATON_EIO); /* its server is no master: the next connection finds the one */
    if (m->cn != NULL) {
        /* Formatted straight into the connection's output: no copy of its
         * own to allocate, fill, copy and free (every call's path). */
        if (baton__conn_append_cmd(m->cn, asking, rq->asking ? sizeof asking - 1 : 0, rq->argc,
                                   rq->argv, rq->lens) != BATON_OK) {
            fail_later(m, q, BATON_ENOMEM, "out of memory");
            return;
        }
        in_flight(m, q);
        return;
    }
    if (format(q) != BATON_OK) {
        fail_later(m, q, BATON_ENOMEM, "out of memory");
        return;
    }
    /* It waits for the next attempt: the one started now, or after the one
     * under way (which started before it). */
    q->gen = m->cgen + 1;
    q->where = Q_PENDING;
    link_tail(&m->pend, &m->pend_tail, q);
    if (!m->connecting)
        start_connect(m, rq->deadline_ns);
}

/* ---- the client's pipes, when the loop stops ---- */

static void fail_all(struct baton_client *c)
{
    for (struct baton__mux *m = c->pipes; m != NULL; m = m->lnext) {
        while (m->pend != NULL)
            fail_q(m, m->pend, BATON_EINVAL, freed_msg);
        if (m->cn != NULL && m->head != NULL) {
            baton__conn_fail(m->cn, "the client was freed while this call was in flight", "");
            give_up(m, BATON_EIO);
        }
    }
}

static bool busy(struct baton_client *c)
{
    for (struct baton__mux *m = c->pipes; m != NULL; m = m->lnext)
        if (m->pend != NULL || m->head != NULL)
            return true;
    return false;
}

static void close_all(struct baton_client *c)
{
    for (struct baton__mux *m = c->pipes; m != NULL; m = m->lnext) {
        if (m->cn != NULL)
            baton__io_unwatch(c->loop, &m->io);
        baton__conn_free(m->cn);
        m->cn = NULL;
    }
}
