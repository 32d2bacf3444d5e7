/* qloop.c -- the I/O of a Redlock quorum: one thread, one connection per
 * master, every thread's requests pipelined on them.
 *
 * A request (struct baton__qcall, on its caller's stack) is the same
 * command for every master. Its caller appends it to each master's
 * output buffer and to that master's queue of requests awaiting a reply,
 * under the loop's lock, wakes the loop if it sleeps, and waits on its own
 * condition variable until every master has answered or failed. The loop
 * writes every master's buffer (what all threads queued since the last
 * round: one system call per master for many requests), reads every reply
 * that arrived (Redis answers in order: the n-th reply belongs to the
 * n-th request of the queue), and fails what is late. So a request costs
 * its thread one wake-up, not one per master, and a busy master reads and
 * answers many requests per system call.
 *
 * Deadlines: each master's part of a request has its own (node_timeout
 * from when it was queued, within the call's). The loop sleeps until the
 * earliest of the queue heads', reads what arrived, and only then fails
 * what is late (a loop that ran late itself finds the replies waiting in
 * the socket and takes them). A master whose head is late has its
 * connection given up (a reply stream cannot skip one reply): everything
 * queued on it fails, and the master is left alone for a while
 * (quorum.c). A connection that breaks fails its queue the same way.
 *
 * Connecting is the caller's: a thread that finds a master without a
 * connection connects it (AUTH, SELECT, INFO: blocking, within its
 * deadline) outside the lock, the others waiting for it (within their
 * deadlines), so that the loop never blocks on one master.
 *
 * NOSCRIPT (a restarted master does not know the script): the loop sends
 * EVAL with the source right away on that connection and queues the same
 * part again; its deadline stays. */
#include <errno.h>
#include <poll.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "topology_int.h"

#define WAKE_ID UINT32_MAX

struct qmaster {
    struct baton__conn *cn;          /* NULL: none; installed by a caller, freed by the loop */
    bool connecting;                 /* a caller is connecting it */
    bool out_armed;                  /* EPOLLOUT is registered */
    struct baton__qreq *head, *tail; /* sent, awaiting replies, in order */
    /* The loop's own, used outside the lock: the bytes it is writing (taken
     * from cn's output, which callers append to), the replies read but not
     * yet handed to their requests, and an I/O failure seen there. */
    char *wbuf;
    size_t wlen, wcap;
    redisReply **rep;
    size_t nrep, caprep;
    int failed;
    char why[256];
};

struct baton__qloop {
    struct baton_client *c;
    int n;
    struct baton__node *node[BATON__QUORUM_MAX]; /* the masters (quorum.c's) */
    void (*failed)(struct baton_client *c, int i); /* quorum.c: master i failed */
    pthread_mutex_t mu;
    pthread_cond_t connected; /* a master's connecting ended */
    pthread_t thread;
    bool started, stop, sleeping;
    int epfd, wakefd;
    struct qmaster m[BATON__QUORUM_MAX];
};

int baton__qloop_new(struct baton_client *c, int n, struct baton__node *const *nodes,
                     void (*failed)(struct baton_client *c, int i), struct baton__qloop **out)
{
    struct baton__qloop *l = calloc(1, sizeof *l);
    *out = NULL;
    if (l == NULL)
        return BATON_ENOMEM;
    l->c = c;
    l->n = n;
    for (int i = 0; i < n; i++)
        l->node[i] = nodes[i];
    l->failed = failed;
    l->epfd = l->wakefd = -1;
    pthread_mutex_init(&l->mu, NULL);
    baton__cond_init_monotonic(&l->connected);
    *out = l;
    return BATON_OK;
}

/* One part of a call is over: its caller is woken when it was the last
 * (a semaphore: the caller does not take the loop's lock again to wake). */
static void done(struct baton__qreq *q)
{
    struct baton__qcall *k = q->call;
    if (--k->left == 0)
        sem_post(&k->sem);
}

/* Master i failed (why): every request queued on it fails, its connection
 * goes, and it is left alone for a while (unless it failed with nothing
 * asked: a server that closed an idle connection, as one does when it
 * restarts, is connected to again at the next request). Under l->mu. */
static void fail_master(struct baton__qloop *l, int i, int rc, const char *why)
{
    struct qmaster *m = &l->m[i];
    bool asked = m->head != NULL;
    for (struct baton__qreq *q = m->head; q != NULL;) {
        struct baton__qreq *next = q->next;
        q->rc = rc;
        baton__set_error(q->err, sizeof q->err, "%s", why);
        done(q);
        q = next;
    }
    m->head = m->tail = NULL;
    if (m->cn != NULL) {
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, m->cn->fd, NULL);
        baton__conn_free(m->cn);
        m->cn = NULL;
    }
    m->out_armed = false;
    m->wlen = 0;
    for (size_t k = 0; k < m->nrep; k++)
        freeReplyObject(m->rep[k]);
    m->nrep = 0;
    m->failed = 0;
    if (asked)
        l->failed(l->c, i);
}

static void push(struct qmaster *m, struct baton__qreq *q)
{
    q->next = NULL;
    if (m->tail != NULL)
        m->tail->next = q;
    else
        m->head = q;
    m->tail = q;
}

/* EVAL with the script's source, for a master that answered NOSCRIPT.
 * Returns 0 or ENOMEM. */
static int append_eval(struct baton__conn *cn, const struct baton__qcall *k)
{
    const char **argv = malloc((size_t)k->argc * sizeof *argv);
    size_t *lens = malloc((size_t)k->argc * sizeof *lens);
    int rc = BATON_ENOMEM;
    if (argv != NULL && lens != NULL) {
        memcpy(argv, k->argv, (size_t)k->argc * sizeof *argv);
        memcpy(lens, k->lens, (size_t)k->argc * sizeof *lens);
        argv[0] = "EVAL";
        lens[0] = 4;
        argv[1] = k->src;
        lens[1] = strlen(k->src);
        rc = baton__conn_append(cn, k->argc, argv, lens);
    }
    free(argv);
    free(lens);
    return rc;
}

/* Hands master i's replies read (m->rep) to their requests, in order
 * (Redis answers in order), then its I/O failure if there was one. Under
 * l->mu. */
static void deliver(struct baton__qloop *l, int i)
{
    struct qmaster *m = &l->m[i];
    size_t k = 0;
    for (; k < m->nrep && m->cn != NULL; k++) {
        redisReply *r = m->rep[k];
        struct baton__qreq *q = m->head;
        if (q == NULL) {
            m->rep[k] = NULL;
            freeReplyObject(r);
            fail_master(l, i, BATON_EPROTO, "a reply nobody asked for");
            break;
        }
        m->head = q->next;
        if (m->head == NULL)
            m->tail = NULL;
        const struct baton__qcall *call = q->call;
        if (r->type == REDIS_REPLY_ERROR && call->src != NULL && !q->evaled &&
            strncmp(r->str, "NOSCRIPT", 8) == 0) {
            m->rep[k] = NULL;
            freeReplyObject(r);
            q->evaled = true;
            if (append_eval(m->cn, call) == BATON_OK) {
                push(m, q); /* its deadline stays */
                continue;
            }
            q->rc = BATON_ENOMEM;
            baton__set_error(q->err, sizeof q->err, "out of memory");
            done(q);
            continue;
        }
        m->rep[k] = NULL; /* the request's now */
        q->reply = r;
        q->rc = BATON_OK;
        memcpy(q->runid, m->cn->runid, sizeof q->runid);
        q->uptime_s = m->cn->uptime_s;
        done(q);
    }
    for (; k < m->nrep; k++) /* the connection went meanwhile */
        if (m->rep[k] != NULL)
            freeReplyObject(m->rep[k]);
    m->nrep = 0;
    if (m->failed != 0 && m->cn != NULL)
        fail_master(l, i, m->failed, m->why);
    m->failed = 0;
}

/* Outside the lock: writes what master i's loop buffer holds (without
 * waiting), and, when readable, reads every reply that arrived into
 * m->rep. A failure is kept in m->failed, for deliver(). */
static void io(struct qmaster *m, struct baton__conn *cn, bool readable)
{
    size_t off = 0;
    while (off < m->wlen && m->failed == 0) {
        ssize_t n = cn->tp->write(cn, m->wbuf + off, m->wlen - off);
        if (n < 0) {
            m->failed = BATON_EIO;
            baton__set_error(m->why, sizeof m->why, "%s", cn->err[0] ? cn->err : "write failed");
        } else if (n == 0) {
            break; /* it would block: EPOLLOUT is armed for the rest */
        } else {
            off += (size_t)n;
        }
    }
    memmove(m->wbuf, m->wbuf + off, m->wlen - off);
    m->wlen -= off;
    if (m->wlen == 0 && cn->want == POLLOUT)
        cn->want = POLLIN;
    if (!readable || m->failed != 0)
        return;
    redisReply *r = NULL;
    int k;
    while ((k = baton__conn_poll_reply(cn, &r)) == 1) {
        if (m->nrep == m->caprep) {
            size_t cap = m->caprep ? 2 * m->caprep : 64;
            redisReply **grown = realloc(m->rep, cap * sizeof *grown);
            if (grown == NULL) {
                freeReplyObject(r);
                baton__conn_fail(cn, "out of memory reading replies", "");
                k = BATON_ENOMEM;
                break;
            }
            m->rep = grown;
            m->caprep = cap;
        }
        m->rep[m->nrep++] = r;
    }
    if (k < 0) {
        m->failed = k == BATON_EPROTO ? BATON_EPROTO : BATON_EIO;
        baton__set_error(m->why, sizeof m->why, "%s",
                         cn->err[0] != '\0' ? cn->err : "connection lost");
    }
}

/* Moves what callers appended to master i's connection into the loop's
 * buffer. Returns 0 or ENOMEM. Under l->mu. */
static int take_output(struct qmaster *m)
{
    struct baton__conn *cn = m->cn;
    if (cn->olen == 0)
        return BATON_OK;
    if (m->wlen == 0) { /* swap the buffers: no copy */
        char *b = m->wbuf;
        size_t cap = m->wcap;
        m->wbuf = cn->obuf;
        m->wcap = cn->ocap;
        m->wlen = cn->olen;
        cn->obuf = b;
        cn->ocap = cap;
        cn->olen = 0;
        return BATON_OK;
    }
    if (m->wlen + cn->olen > m->wcap) {
        size_t cap = m->wcap ? m->wcap : 256;
        while (cap < m->wlen + cn->olen)
            cap *= 2;
        char *grown = realloc(m->wbuf, cap);
        if (grown == NULL)
            return BATON_ENOMEM;
        m->wbuf = grown;
        m->wcap = cap;
    }
    memcpy(m->wbuf + m->wlen, cn->obuf, cn->olen);
    m->wlen += cn->olen;
    cn->olen = 0;
    return BATON_OK;
}

/* The epoll events master i waits for: replies, and room to write when
 * output is left (or TLS wants to write to read). Under l->mu. */
static void arm(struct baton__qloop *l, int i)
{
    struct qmaster *m = &l->m[i];
    bool out = m->wlen > 0 || m->cn->want == POLLOUT;
    if (out == m->out_armed)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0), .data.u32 = (uint32_t)i};
    if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, m->cn->fd, &ev) == 0)
        m->out_armed = out;
}

/* The loop: under the lock, takes what callers queued and fails what is
 * late; outside it, writes, waits and reads; under it again, hands the
 * replies over. Only the loop frees a connection, so the ones it saw
 * under the lock stay valid outside it (callers only append to their
 * output buffers, under the lock). */
static void *loop_main(void *arg)
{
    struct baton__qloop *l = arg;
    struct epoll_event evs[BATON__QUORUM_MAX + 1];
    struct baton__conn *cn[BATON__QUORUM_MAX];
    bool ready[BATON__QUORUM_MAX];
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        int64_t now = baton__now_ns(), next = 0;
        bool writes = false;
        for (int i = 0; i < l->n; i++) {
            struct qmaster *m = &l->m[i];
            cn[i] = NULL;
            ready[i] = false;
            if (m->cn == NULL)
                continue;
            if (take_output(m) != BATON_OK) {
                fail_master(l, i, BATON_ENOMEM, "out of memory");
                continue;
            }
            cn[i] = m->cn;
            if (m->head != NULL && (next == 0 || m->head->deadline_ns < next))
                next = m->head->deadline_ns;
            /* Bytes a TLS transport decrypted already: poll cannot see them */
            ready[i] = m->head != NULL && baton__conn_read_events(m->cn) == 0;
            writes |= m->wlen > 0;
            arm(l, i);
        }
        int timeout = -1;
        if (next != 0) {
            int64_t ms = (next - now + 999999) / 1000000;
            timeout = ms > 0 ? (ms > 60000 ? 60000 : (int)ms) : 0;
        }
        l->sleeping = true;
        pthread_mutex_unlock(&l->mu);
        for (int i = 0; i < l->n; i++)
            if (cn[i] != NULL && (l->m[i].wlen > 0 || ready[i]))
                io(&l->m[i], cn[i], ready[i]);
        int k = epoll_wait(l->epfd, evs, BATON__QUORUM_MAX + 1, writes ? 0 : timeout);
        for (int e = 0; e < k; e++) {
            uint32_t id = evs[e].data.u32;
            if (id == WAKE_ID) {
                uint64_t v;
                ssize_t got = read(l->wakefd, &v, sizeof v);
                (void)got;
            } else if (id < (uint32_t)l->n && cn[id] != NULL) {
                io(&l->m[id], cn[id], (evs[e].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0);
            }
        }
        pthread_mutex_lock(&l->mu);
        l->sleeping = false;
        for (int i = 0; i < l->n; i++)
            if (cn[i] != NULL && (l->m[i].nrep > 0 || l->m[i].failed != 0))
                deliver(l, i);
        /* Late only once what arrived is read: a loop that ran late itself
         * (a starved or stopped process) finds the replies waiting. */
        now = baton__now_ns();
        for (int i = 0; i < l->n; i++)
            if (l->m[i].cn != NULL && l->m[i].head != NULL && l->m[i].head->deadline_ns <= now)
                fail_master(l, i, BATON_EIO, "no answer in time");
    }
    for (int i = 0; i < l->n; i++)
        fail_master(l, i, BATON_EIO, "the client was freed");
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* Starts the loop's thread (and its descriptors) on first use. Under
 * l->mu. Returns 0, or a code with the reason in err. */
static int start(struct baton__qloop *l, char *err, size_t errlen)
{
    if (l->started)
        return BATON_OK;
    if (l->epfd < 0 && (l->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        goto fail;
    if (l->wakefd < 0) {
        if ((l->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
            goto fail;
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = WAKE_ID};
        if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wakefd, &ev) != 0)
            goto fail;
    }
    if (pthread_create(&l->thread, NULL, loop_main, l) != 0) {
        baton__set_error(err, errlen, "cannot start the quorum's I/O thread");
        return BATON_ENOMEM;
    }
    l->started = true;
    return BATON_OK;
fail:
    baton__set_error(err, errlen, "cannot start the quorum's I/O loop: %s", strerror(errno));
    return BATON_EIO;
}

/* Makes sure master i has a connection, connecting it (outside the lock,
 * by q's deadline) or waiting for the thread that does. Called and
 * returns with l->mu held. Returns 0, or a code with the reason in q->err
 * (nothing was sent). */
static int ensure_conn(struct baton__qloop *l, int i, struct baton__qreq *q)
{
    struct qmaster *m = &l->m[i];
    while (m->cn == NULL && m->connecting) {
        struct timespec ts;
        if (baton__now_ns() >= q->deadline_ns) {
            baton__set_error(q->err, sizeof q->err,
                             "no connection in time (another thread "
                             "is connecting)");
            return BATON_EIO;
        }
        baton__timespec_at(q->deadline_ns, &ts);
        pthread_cond_timedwait(&l->connected, &l->mu, &ts);
    }
    if (m->cn != NULL)
        return BATON_OK;
    m->connecting = true;
    pthread_mutex_unlock(&l->mu);
    struct baton__conn *cn = NULL;
    int rc = baton__client_connect(l->c, l->node[i], q->deadline_ns, &cn, q->err,
                                   sizeof q->err);
    pthread_mutex_lock(&l->mu);
    m->connecting = false;
    pthread_cond_broadcast(&l->connected);
    if (rc != BATON_OK)
        return rc;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (l->stop || epoll_ctl(l->epfd, EPOLL_CTL_ADD, cn->fd, &ev) != 0) {
        baton__set_error(q->err, sizeof q->err, "%s",
                         l->stop ? "the client was freed" : "epoll_ctl failed");
        baton__conn_free(cn);
        return BATON_EIO;
    }
    m->cn = cn;
    m->out_armed = false;
    return BATON_OK;
}

/* Wakes the loop, if it sleeps. Under l->mu. */
static void wake(struct baton__qloop *l)
{
    if (!l->sleeping)
        return;
    uint64_t one = 1;
    ssize_t w = write(l->wakefd, &one, sizeof one);
    (void)w;
    l->sleeping = false; /* one wake-up is enough */
}

/* Queues part q of k on master i, connected. Under l->mu. */
static void queue(struct baton__qloop *l, int i, struct baton__qcall *k, struct baton__qreq *q)
{
    if (baton__conn_append_raw(l->m[i].cn, k->cmd, k->cmdlen) != BATON_OK) {
        q->rc = BATON_ENOMEM;
        baton__set_error(q->err, sizeof q->err, "out of memory");
        return;
    }
    q->sent = true;
    push(&l->m[i], q);
    k->left++;
}

void baton__qloop_call(struct baton__qloop *l, struct baton__qcall *k)
{
    char err[BATON__ERRLEN];
    bool queued = false, unconnected = false;
    int busy = 0;
    sem_init(&k->sem, 0, 0);
    /* One for this thread while it queues: connecting a master drops the
     * lock, and the loop may finish the parts queued so far meanwhile; the
     * call must not look done before every part is queued. */
    k->left = 1;
    pthread_mutex_lock(&l->mu);
    /* Masters with requests in flight: their replies will wake the loop,
     * which then sends ours too (see below). */
    for (int i = 0; i < l->n; i++)
        busy += l->m[i].head != NULL;
    int rc = l->stop ? BATON_EINVAL : start(l, err, sizeof err);
    /* First the masters connected already: nothing here blocks. */
    for (int i = 0; i < l->n; i++) {
        struct baton__qreq *q = &k->r[i];
        if (q->skip)
            continue; /* its rc and err set by the caller */
        q->call = k;
        if (rc != BATON_OK) {
            q->rc = rc;
            baton__set_error(q->err, sizeof q->err, "%s",
                             rc == BATON_EINVAL ? "the client was freed" : err);
            q->skip = true;
        } else if (l->m[i].cn != NULL) {
            queue(l, i, k, q);
            queued = true;
            q->skip = true; /* dealt with */
        } else {
            unconnected = true;
        }
    }
    /* The loop sleeps until a reply comes or a deadline passes. A reply is
     * near when a majority of the masters have requests in flight (they
     * cannot all be stopped, or there is no quorum anyway): then ours go
     * out with the next round, and many threads' requests share one
     * wake-up and one write per master. Else (or before this thread may
     * block, connecting another master) the loop is woken now. */
    if (queued && (busy < l->n / 2 + 1 || unconnected))
        wake(l);
    /* Then the others, connecting each (outside the lock, within the
     * part's deadline) or waiting for the thread that does. */
    for (int i = 0; unconnected && i < l->n; i++) {
        struct baton__qreq *q = &k->r[i];
        if (q->skip)
            continue;
        int crc = ensure_conn(l, i, q);
        if (crc == BATON_OK && l->stop)
            crc = BATON_EINVAL;
        if (crc != BATON_OK) {
            q->rc = crc;
            if (crc == BATON_EIO)
                l->failed(l->c, i); /* could not connect */
            continue;
        }
        queue(l, i, k, q);
        wake(l);
    }
    bool wait = --k->left > 0; /* the parts still out (this thread's own one gone) */
    pthread_mutex_unlock(&l->mu);
    while (wait && sem_wait(&k->sem) != 0 && errno == EINTR)
        ;
    sem_destroy(&k->sem);
}

void baton__qloop_stop(struct baton__qloop *l)
{
    if (l == NULL)
        return;
    pthread_mutex_lock(&l->mu);
    bool started = l->started;
    l->stop = true;
    if (started && l->wakefd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(l->wakefd, &one, sizeof one);
        (void)w;
    }
    pthread_mutex_unlock(&l->mu);
    if (started)
        pthread_join(l->thread, NULL);
    pthread_mutex_lock(&l->mu);
    l->started = false;
    for (int i = 0; i < l->n; i++)
        if (l->m[i].cn != NULL) {
            baton__conn_free(l->m[i].cn);
            l->m[i].cn = NULL;
        }
    pthread_mutex_unlock(&l->mu);
}

void baton__qloop_free(struct baton__qloop *l)
{
    if (l == NULL)
        return;
    baton__qloop_stop(l);
    for (int i = 0; i < l->n; i++) {
        free(l->m[i].wbuf);
        free(l->m[i].rep);
    }
    if (l->epfd >= 0)
        close(l->epfd);
    if (l->wakefd >= 0)
        close(l->wakefd);
    pthread_cond_destroy(&l->connected);
    pthread_mutex_destroy(&l->mu);
    free(l);
}
