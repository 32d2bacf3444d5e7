/* call.c -- one call of one of our scripts, run by the client's loop as a
 * state machine, so that a thread (or a callback) can have thousands in
 * flight and a blocking caller only sleeps.
 *
 *   route   the server's pipe; on a cluster the pipe of the master of the
 *           slot of the first key, from the map when it can be used as it
 *           is, else after reading it on the helper thread
 *   send    EVALSHA (+ ASKING in front after an ASK), on the pipe; a
 *           durable call (min_replicas) on the server's second pipe, where
 *           one WAIT behind each batch answers for it (mux.c)
 *   replied NOSCRIPT: EVAL once, on the same pipe (a restarted or flushed
 *           server; the send time stays the EVALSHA's, the earlier)
 *           cluster: MOVED points the slot at the node named and routes
 *           again; ASK sends once to that node after ASKING; TRYAGAIN and
 *           CLUSTERDOWN route again after a short wait (a timer); 16
 *           redirections in a row, or no time left, make the last one the
 *           answer. A failure before anything was sent routes again (up
 *           to twice, the map read first); one after may have run and is
 *           the answer.
 *           READONLY (a master demoted by a failover: the script did not
 *           run; the connection is stale): once more from the route, on a
 *           new connection (through the sentinels), within the deadline.
 *           Fewer WAIT acknowledgements than min_replicas: ENOTDURABLE,
 *           the reply kept for the caller to undo a grant. Any other error
 *           reply: BATON_EREDIS.
 *
 * The blocking form, baton__script_call(), posts the call to the loop and
 * sleeps on a semaphore until its done() runs there: the same machine,
 * the same guarantees, whoever waits. Except when nothing else of the
 * client is in flight: then there is nothing to batch with, and the call
 * runs on the calling thread, on a pooled connection (direct(), below).
 * The request leaves from the caller and its reply wakes the caller: no
 * hop to the loop thread and back, two thread wake-ups that cost 35-45 us
 * on this project's 2-vCPU machine when the threads sit on different CPUs
 * (tests/bench/RESULTS.md), about what Redis needs for the round trip
 * itself. The direct path keeps the loop's guarantees on one server
 * (plain, TLS, Unix socket, Sentinel): EVAL on NOSCRIPT, READONLY retried
 * once on a new connection with the first send time kept, the send time
 * as the base of the validity, the server's run id. A cluster (routing)
 * and durable calls (one WAIT answers for a batch) always take the loop. */
#include <errno.h>
#include <limits.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop_int.h"

/* MOVED and ASK in a row (a wait, TRYAGAIN or CLUSTERDOWN, starts the
 * count again); retries of a request that could not be sent. */
#define MAX_REDIRECTS 16
#define MAX_UNSENT    2

static const char freed_msg[] = "the client was freed (baton_client_free) before this call";

static void route(struct baton__call *k);

static void finish(struct baton__call *k, int rc)
{
    if (rc == BATON_OK || rc == BATON_ENOTDURABLE) {
        if (k->keep_sent != 0)
            k->sent_ns = k->keep_sent; /* READONLY retried: the first send, the earlier */
    } else if (k->reply != NULL) {
        freeReplyObject(k->reply);
        k->reply = NULL;
    }
    if (k->held != NULL) {
        freeReplyObject(k->held);
        k->held = NULL;
    }
    k->rc = rc;
    atomic_fetch_sub(&k->c->calls, 1); /* before done(), which may free k */
    k->done(k);
}

/* Takes r, the answer of k's last round, as the call's result: an error
 * reply is BATON_EREDIS with its text in k->err (r freed); anything else
 * goes to k->reply (BATON_OK). */
static int take_answer(struct baton__call *k, redisReply *r)
{
    struct baton_client *c = k->c;
    if (r->type == REDIS_REPLY_ERROR) {
        /* READONLY still (after the retry on a fresh connection, when
         * there was time for it) from a plain URL's server: a replica, not
         * a master in the middle of a failover. Said so, with what to do. */
        bool replica = baton__reply_readonly(r) && c->url.nsentinels == 0 && !c->url.cluster;
        baton__set_error(k->err, k->errlen, "%s: redis error: %.200s%s", c->url.redacted, r->str,
                         replica ? " (this server is a read-only replica: give the master's "
                                   "address, or a redis-sentinel:// URL)"
                                 : "");
        freeReplyObject(r);
        return BATON_EREDIS;
    }
    k->reply = r;
    return BATON_OK;
}

/* The round's reply r is the answer (no redirection to follow): READONLY,
 * WAIT's count, error replies. */
static void answer(struct baton__call *k, redisReply *r)
{
    struct baton_client *c = k->c;
    if (baton__reply_readonly(r) && !k->readonly_retried && baton__now_ns() < k->deadline_ns) {
        /* A master demoted to replica (a failover): the script did not run.
         * The connection is stale; once more on a new one, through the
         * sentinels if any. */
        freeReplyObject(r);
        k->readonly_retried = true;
        k->keep_sent = k->sent_ns;
        if (k->node != NULL)
            baton__cluster_suspect(c, k->node);
        route(k);
        return;
    }
    if (r->type != REDIS_REPLY_ERROR && k->durable && c->min_replicas > 0 &&
        k->rq.acked < c->min_replicas) {
        k->reply = r;
        finish(k, baton__not_durable(c, k->rq.acked, k->err, k->errlen));
        return;
    }
    finish(k, take_answer(k, r));
}

/* After a TRYAGAIN or CLUSTERDOWN wait. */
static void napped(struct baton__timer *t)
{
    struct baton__call *k = BATON__OWNER(t, struct baton__call, nap);
    redisReply *r = k->held;
    k->held = NULL;
    if (baton__now_ns() >= k->deadline_ns && !baton__loop_stopping(k->c->loop)) {
        answer(k, r); /* no time left: the redirection is the answer */
        return;
    }
    freeReplyObject(r);
    route(k);
}

static void replied(struct baton__mreq *q)
{
    struct baton__call *k = BATON__OWNER(q, struct baton__call, q);
    struct baton_client *c = k->c;
    struct baton__node *asked = k->ask;
    int rc = q->rc;

    k->ask = NULL;
    if (!k->evaled)
        k->round_sent = k->rq.sent_ns;
    if (rc != BATON_OK) {
        if (k->node != NULL && (rc == BATON_EIO || rc == BATON_EPROTO))
            baton__cluster_suspect(c, k->node);
        if (c->url.cluster && k->rq.sent_ns == 0 && k->round_sent == 0 && rc == BATON_EIO &&
            ++k->unsent <= MAX_UNSENT && baton__now_ns() < k->deadline_ns) {
            k->evaled = false;
            route(k); /* it never left: to the slot's master as the map says now */
            return;
        }
        finish(k, rc);
        return;
    }
    redisReply *r = k->rq.reply;
    k->rq.reply = NULL;
    if (baton__is_noscript(r) && !k->evaled) {
        /* A restarted or flushed server (or a cluster node that never ran
         * it): EVAL runs the script and loads it, on the same node. */
        freeReplyObject(r);
        k->evaled = true;
        k->ask = asked;
        route(k);
        return;
    }
    k->evaled = false;
    k->sent_ns = k->round_sent;
    memcpy(k->runid, k->rq.runid, sizeof k->runid);
    k->promoted = k->rq.promoted;
    if (!c->url.cluster) {
        answer(k, r);
        return;
    }
    struct baton__node *to = NULL;
    enum baton__redirect kind = baton__cluster_redirect(c, r, &to);
    if (kind == BATON__REDIR_NONE) {
        answer(k, r);
        return;
    }
    if (kind == BATON__REDIR_TRYAGAIN || kind == BATON__REDIR_DOWN)
        k->hops = 0; /* waited: an ASK then TRYAGAIN again is no loop */
    else if (++k->hops > MAX_REDIRECTS) {
        answer(k, r); /* a loop of redirections: the last one is the answer */
        return;
    }
    int64_t now = baton__now_ns();
    if (kind == BATON__REDIR_MOVED)
        baton__cluster_moved(c, k->slot, to);
    if (kind == BATON__REDIR_DOWN)
        baton__cluster_suspect(c, NULL);
    int wait_ms = baton__cluster_wait_ms(kind);
    if (wait_ms > 0) {
        int64_t at = now + (int64_t)wait_ms * 1000000;
        k->held = r;
        k->nap.fire = napped;
        if (baton__timer_arm(c->loop, &k->nap, at < k->deadline_ns ? at : k->deadline_ns) !=
            BATON_OK) {
            k->held = NULL;
            answer(k, r);
        }
        return;
    }
    if (now >= k->deadline_ns) {
        answer(k, r); /* no time left: the redirection is the answer */
        return;
    }
    freeReplyObject(r);
    if (kind == BATON__REDIR_ASK)
        k->ask = to;
    route(k);
}

static void send(struct baton__call *k)
{
    struct baton_client *c = k->c;
    const char *argv[BATON__SCRIPT_MAX_ARGS];
    size_t lens[BATON__SCRIPT_MAX_ARGS];
    char nk[BATON__I64_LEN];
    const char *src = baton__script_source(k->id);
    int argc = baton__script_argv(k->evaled ? "EVAL" : "EVALSHA", k->evaled ? src : c->sha[k->id],
                                  k->nkeys, k->keys, k->nargs, k->args, argv, lens, nk,
                                  BATON__SCRIPT_MAX_ARGS);
    k->rq = (struct baton__req){.argc = argc,
                                .argv = argv,
                                .lens = lens,
                                .deadline_ns = k->deadline_ns,
                                .wait_replicas = k->durable ? c->min_replicas : 0,
                                .asking = k->ask != NULL,
                                .err = k->err,
                                .errlen = k->errlen};
    if (k->rq.wait_replicas > 0)
        k->rq.wait_ms = baton__wait_ms_until(k->deadline_ns);
    k->q = (struct baton__mreq){.rq = &k->rq, .done = replied};
    /* Durable requests have a pipe of their own: its WAITs do not hold
     * the other requests (releases) back. The others take the lane of
     * their slot: measured with 50 asynchronous lock cycles in flight, one
     * pipe left Redis idle a quarter of the time (its batch and the loop's
     * answer to it took turns) where two lanes kept it busy, +40-50 %
     * cycles/s (tests/bench/RESULTS.md). */
    struct baton__node *node = k->ask != NULL ? k->ask : k->node;
    int pipe = k->rq.wait_replicas > 0 ? BATON__PIPE_DURABLE
               : (k->slot & 1)         ? BATON__PIPE_LANE1
                                       : BATON__PIPE_LANE0;
    struct baton__mux *m = baton__mux_of(c, node, pipe);
    if (m == NULL) {
        baton__set_error(k->err, k->errlen, "%s: out of memory", c->url.redacted);
        finish(k, BATON_ENOMEM);
        return;
    }
    baton__mux_submit(c, m, &k->q);
}

/* The map read on the helper thread; its result comes back as a task. */
static void routed(struct baton__task *t)
{
    struct baton__call *k = BATON__OWNER(t, struct baton__call, task);
    baton__loop_offload_done(k->c->loop);
    if (k->route_rc != BATON_OK) {
        finish(k, k->route_rc);
        return;
    }
    send(k);
}

static void route_job(struct baton__job *j)
{
    struct baton__call *k = BATON__OWNER(j, struct baton__call, job);
    k->route_rc = baton__cluster_route(k->c, k->slot, k->deadline_ns, &k->node, k->err, k->errlen);
    k->task.run = routed;
    /* Refused only once the loop has stopped, which it does not while a
     * job's result is due. */
    (void)baton__loop_post(k->c->loop, &k->task);
}

static void route(struct baton__call *k)
{
    struct baton_client *c = k->c;
    if (baton__loop_stopping(c->loop)) {
        baton__set_error(k->err, k->errlen, "%s: %s", c->url.redacted, freed_msg);
        finish(k, BATON_EINVAL);
        return;
    }
    if (!c->url.cluster || k->ask != NULL) {
        send(k);
        return;
    }
    if (baton__cluster_lookup(c, k->slot, &k->node)) {
        send(k);
        return;
    }
    k->job.run = route_job;
    if (baton__loop_offload(c->loop, &k->job) != BATON_OK) {
        baton__set_error(k->err, k->errlen, "%s: cannot start the helper thread", c->url.redacted);
        finish(k, BATON_ENOMEM);
    }
}

static void started(struct baton__task *t)
{
    route(BATON__OWNER(t, struct baton__call, task));
}

bool baton__call_start(struct baton_client *c, struct baton__call *k)
{
    k->c = c;
    k->reply = NULL;
    k->held = NULL;
    k->runid[0] = '\0';
    k->sent_ns = k->round_sent = k->keep_sent = 0;
    k->node = k->ask = NULL;
    k->hops = k->unsent = 0;
    k->evaled = k->readonly_retried = false;
    k->nap = (struct baton__timer){0};
    k->slot = k->nkeys > 0 ? baton__key_slot(k->keys[0], strlen(k->keys[0])) : 0;
    k->task.run = started;
    struct baton__loop *l = baton__loop_of(c);
    atomic_fetch_add(&c->calls, 1); /* finish() takes it back */
    if (l == NULL || !baton__loop_post(l, &k->task)) {
        atomic_fetch_sub(&c->calls, 1);
        bool closed = l != NULL || atomic_load(&c->closed);
        baton__set_error(k->err, k->errlen, "%s: %s", c->url.redacted,
                         closed ? freed_msg : "cannot start the client's loop thread");
        k->rc = closed ? BATON_EINVAL : BATON_ENOMEM;
        return false;
    }
    return true;
}

static void wake(struct baton__call *k)
{
    sem_post(k->arg);
}

/* ---- the direct path: the calling thread does the I/O ---- */

static bool direct_ok(const struct baton_client *c, const struct baton__call *k)
{
    return !k->via_loop && !c->url.cluster && !c->url.quorum &&
           !(k->durable && c->min_replicas > 0);
}

/* Runs k on the calling thread, on a pooled connection to the server (or
 * the master the sentinels name), as the loop would: NOSCRIPT runs EVAL
 * (baton__eval); READONLY (a master demoted by a failover: the script did
 * not run, and the connection went stale) once more on a new connection,
 * through the sentinels, within the deadline, the first send time kept.
 * Returns as baton__script_call(). */
static int direct(struct baton_client *c, struct baton__call *k)
{
    k->c = c;
    k->reply = NULL;
    k->runid[0] = '\0';
    k->promoted = false;
    k->sent_ns = 0;
    if (atomic_load(&c->closed)) {
        baton__set_error(k->err, k->errlen, "%s: %s", c->url.redacted, freed_msg);
        return BATON_EINVAL;
    }
    for (bool again = false;; again = true) {
        struct baton__conn *cn = NULL;
        redisReply *r = NULL;
        /* The retry on a connection of its own: another idle one may be
         * to the demoted master too. */
        int rc = again ? baton__client_connect(c, NULL, k->deadline_ns, &cn, k->err, k->errlen)
                       : baton__client_get(c, NULL, k->deadline_ns, &cn, k->err, k->errlen);
        if (rc != BATON_OK)
            return rc;
        int64_t sent = baton__now_ns(); /* no later than the request leaves */
        rc = baton__eval(c, cn, c->sha[k->id], baton__script_source(k->id), k->nkeys, k->keys,
                         k->nargs, k->args, 0, &r, k->deadline_ns, k->err, k->errlen);
        if (rc == BATON_OK) {
            memcpy(k->runid, cn->runid, sizeof k->runid);
            k->promoted = cn->promoted;
        }
        baton__client_put(c, cn); /* freed when broken or stale (READONLY) */
        if (rc != BATON_OK)
            return rc;
        if (!again)
            k->sent_ns = sent; /* a retry keeps the first send, the earlier */
        if (!again && baton__reply_readonly(r) && baton__now_ns() < k->deadline_ns) {
            freeReplyObject(r);
            continue;
        }
        return take_answer(k, r);
    }
}

int baton__script_call(struct baton_client *c, struct baton__call *k)
{
    sem_t done;
    struct baton__loop *l = atomic_load(&c->loop); /* not started: not on its thread */
    if (l != NULL && baton__loop_here(l)) {
        baton__set_error(k->err, k->errlen,
                         "a blocking call on the client's loop thread (inside a callback of an "
                         "asynchronous call): use the _async calls there");
        return BATON_EINVAL;
    }
    if (direct_ok(c, k)) {
        /* Alone: nothing to batch with. The count stays up while it runs,
         * so that calls made meanwhile go to the loop and batch there. */
        if (atomic_fetch_add(&c->calls, 1) == 0) {
            k->rc = direct(c, k);
            atomic_fetch_sub(&c->calls, 1);
            return k->rc;
        }
        atomic_fetch_sub(&c->calls, 1);
    }
    if (sem_init(&done, 0, 0) != 0)
        return BATON_ENOMEM;
    k->done = wake;
    k->arg = &done;
    if (baton__call_start(c, k))
        while (sem_wait(&done) != 0 && errno == EINTR)
            ;
    sem_destroy(&done);
    return k->rc;
}

/* ---- a script on one connection (tools' scripts, and call.c's own on a
 * caller's thread) ---- */

static int io_error(struct baton_client *c, struct baton__conn *cn, int rc, char *err,
                    size_t errlen)
{
    baton__set_error(err, errlen, "%s: %s", c->url.redacted, cn->err);
    return rc;
}

bool baton__is_noscript(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

/* WAIT's timeout for a call due by deadline_ns: most of the time left, so
 * that its answer still arrives in time. At least 1 ms (0 would block
 * forever). */
int64_t baton__wait_ms_until(int64_t deadline_ns)
{
    int64_t left = (deadline_ns - baton__now_ns()) / 1000000;
    left = left * 4 / 5;
    return left >= 1 ? left : 1;
}

static void wait_argv(int replicas, int64_t ms, char nbuf[BATON__I64_LEN],
                      char msbuf[BATON__I64_LEN], const char *argv[3], size_t lens[3])
{
    argv[0] = "WAIT";
    argv[1] = baton__i64_str(replicas, nbuf);
    argv[2] = baton__i64_str(ms, msbuf);
    for (int i = 0; i < 3; i++)
        lens[i] = strlen(argv[i]);
}

int baton__not_durable(struct baton_client *c, long long acked, char *err, size_t errlen)
{
    baton__set_error(err, errlen,
                     "%s: not durable: %lld of min_replicas %d replica(s) acknowledged in time",
                     c->url.redacted, acked < 0 ? 0 : acked, c->min_replicas);
    return BATON_ENOTDURABLE;
}

int baton__eval(struct baton_client *c, struct baton__conn *cn, const char *sha, const char *src,
                int nkeys, const char *const *keys, int nargs, const char *const *args,
                int wait_replicas, redisReply **reply, int64_t deadline, char *err, size_t errlen)
{
    /* The library's own scripts fit the stack's room; a caller's script
     * (baton_client_eval: a dispatch naming every member) may need more. */
    const char *argv_room[BATON__SCRIPT_MAX_ARGS], **argv = argv_room;
    size_t lens_room[BATON__SCRIPT_MAX_ARGS], *lens = lens_room;
    char nk[BATON__I64_LEN];
    redisReply *r = NULL;
    long long acked = -1;
    int rc;

    *reply = NULL;
    if (nkeys < 0 || nargs < 0 || nkeys > INT_MAX - 3 - nargs)
        return BATON_EINVAL;
    size_t room = (size_t)nkeys + (size_t)nargs + 3;
    if (room > BATON__SCRIPT_MAX_ARGS) {
        argv = malloc(room * sizeof *argv);
        lens = malloc(room * sizeof *lens);
        if (argv == NULL || lens == NULL) {
            rc = BATON_ENOMEM;
            baton__set_error(err, errlen, "%s: out of memory", c->url.redacted);
            goto out;
        }
    }
    int argc = baton__script_argv("EVALSHA", sha, nkeys, keys, nargs, args, argv, lens, nk, room);
    if (argc < 0) {
        rc = BATON_EINVAL;
        goto out;
    }
    if ((rc = baton__conn_command(cn, argc, argv, lens, &r, deadline)) != BATON_OK) {
        rc = io_error(c, cn, rc, err, errlen);
        goto out;
    }
    if (baton__is_noscript(r)) {
        /* A restarted or flushed server: EVAL runs the script and loads it. */
        freeReplyObject(r);
        r = NULL;
        argv[0] = "EVAL";
        argv[1] = src;
        lens[0] = 4;
        lens[1] = strlen(src);
        if ((rc = baton__conn_command(cn, argc, argv, lens, &r, deadline)) != BATON_OK) {
            rc = io_error(c, cn, rc, err, errlen);
            goto out;
        }
    }
    /* WAIT on the same connection, right after the script (a script of a
     * tool is seldom known to the server yet: WAIT is not pipelined behind
     * an EVALSHA that may come back NOSCRIPT). */
    if (r->type != REDIS_REPLY_ERROR && wait_replicas > 0) {
        char nb[BATON__I64_LEN], mb[BATON__I64_LEN];
        const char *wargv[3];
        size_t wlens[3];
        redisReply *w = NULL;
        wait_argv(wait_replicas, baton__wait_ms_until(deadline), nb, mb, wargv, wlens);
        if ((rc = baton__conn_command(cn, 3, wargv, wlens, &w, deadline)) != BATON_OK) {
            freeReplyObject(r);
            rc = io_error(c, cn, rc, err, errlen);
            goto out;
        }
        if (w->type == REDIS_REPLY_INTEGER)
            acked = w->integer;
        freeReplyObject(w);
    }
    if (r->type != REDIS_REPLY_ERROR && wait_replicas > 0 && acked < wait_replicas) {
        freeReplyObject(r);
        rc = baton__not_durable(c, acked, err, errlen);
        goto out;
    }
    *reply = r; /* an error reply too: the caller looks for redirections */
    rc = BATON_OK;
out:
    if (argv != argv_room)
        free(argv);
    if (lens != lens_room)
        free(lens);
    return rc;
}
