/* quorum.c -- requests over a Redlock quorum of N independent masters
 * (redis-quorum://h1,h2,h3...): the masters, which of them count, and any
 * command or script sent to every master: quorum_lock.c's locks, and
 * baton_client_eval_all() and baton_client_command_all(), which the
 * supervisor and the elections over a quorum are built on.
 *
 * Every request goes to all masters at once, through the quorum's I/O loop
 * (qloop.c): one thread and one connection per master, on which the
 * requests of every thread are pipelined; the caller is woken once every
 * master answered or failed. Each master is bounded by node_timeout from
 * the request, and the whole request by the command timeout. A master
 * that timed out or broke is left alone for 2 node_timeouts, doubled for
 * each failure in a row up to 10 node_timeouts (at least 500 ms), so a
 * stopped master costs one request per window, not every one, and a brief
 * stall of every master costs little more than itself. Pipelining matters: Redis's time per request
 * goes mostly to reading and writing, which one system call then does for many requests of many
 * threads, on each of the N masters; and a request costs its thread one
 * wake-up, not one per master.
 *
 * Locks over the quorum, their fences and split votes are quorum_lock.c's,
 * on the requests of this file (baton__quorum_fanout).
 *
 * Restarted masters: a master seen with a new run id, or up for less
 * than max_ttl, does not count toward a majority until max_ttl after it
 * came back (the Redlock paper's delayed restart), as it may have lost
 * locks it granted. It still receives every request. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology_int.h"

#define DEFAULT_MAX_TTL_MS      BATON__QUORUM_MAX_TTL_MS
#define DEFAULT_NODE_TIMEOUT_MS BATON__QUORUM_NODE_TIMEOUT_MS
#define DOWN_FIRST_TIMEOUTS     2   /* a master that failed is left alone this many */
                                    /* node_timeouts, doubled for each failure in a row, */
#define DOWN_MIN_MS             500 /* up to this long, */
#define DOWN_TIMEOUTS           10  /* or this many node_timeouts if longer */
#define HINTS                   4096 /* fence hints, by hash of the fence key */


struct qnode {
    struct baton__node node; /* its pool and muxes */
    char runid[41];          /* under q->mu: the run id last seen, "" none yet */
    /* Read without the lock on every answer (written under it): the hash
     * of runid, until when it is quarantined, whether another master has
     * its run id, and until when it is left alone after a failure. */
    _Atomic uint64_t runid_hash;
    _Atomic int64_t counts_from_ns;
    _Atomic bool dup;
    _Atomic int64_t down_until_ns;
    _Atomic int fails; /* failures in a row (0 once it answers) */
};

struct baton__quorum {
    pthread_mutex_t mu;
    struct baton__qloop *loop; /* the I/O of every request */
    int n;
    int64_t max_ttl_ms, node_timeout_ms;
    _Atomic uint64_t hint[HINTS]; /* the last fence granted or seen, by key hash */
    struct qnode nodes[BATON__QUORUM_MAX];
};


int baton__quorum_new(struct baton_client *c)
{
    struct baton__quorum *q = calloc(1, sizeof *q);
    if (q == NULL)
        return BATON_ENOMEM;
    pthread_mutex_init(&q->mu, NULL);
    q->n = c->url.nseeds;
    q->max_ttl_ms = c->url.max_ttl_ms > 0 ? c->url.max_ttl_ms : DEFAULT_MAX_TTL_MS;
    q->node_timeout_ms =
        c->url.node_timeout_ms > 0 ? c->url.node_timeout_ms : DEFAULT_NODE_TIMEOUT_MS;
    c->quorum = q;
    struct baton__node *nodes[BATON__QUORUM_MAX];
    for (int i = 0; i < q->n; i++)
        nodes[i] = &q->nodes[i].node;
    if (baton__qloop_new(c, q->n, nodes, baton__quorum_failed, &q->loop) != BATON_OK)
        return BATON_ENOMEM;
    for (int i = 0; i < q->n; i++) {
        struct baton__node *nd = &q->nodes[i].node;
        for (int j = 0; j < BATON__SHARDS; j++)
            pthread_mutex_init(&nd->shard[j].mu, NULL);
        nd->port = c->url.seeds[i].port;
        if ((nd->host = strdup(c->url.seeds[i].host)) == NULL)
            return BATON_ENOMEM; /* baton__quorum_free() frees the rest */
        snprintf(nd->addr, sizeof nd->addr, "%s:%d", nd->host, nd->port);
    }
    return BATON_OK;
}

void baton__quorum_close(struct baton_client *c)
{
    struct baton__quorum *q = c->quorum;
    if (q == NULL)
        return;
    baton__qloop_stop(q->loop);
    for (int i = 0; i < q->n; i++)
        baton__shards_close(q->nodes[i].node.shard, BATON__SHARDS);
}

void baton__quorum_free(struct baton_client *c)
{
    struct baton__quorum *q = c->quorum;
    if (q == NULL)
        return;
    baton__quorum_close(c);
    baton__qloop_free(q->loop);
    for (int i = 0; i < q->n; i++) {
        for (int j = 0; j < BATON__SHARDS; j++)
            pthread_mutex_destroy(&q->nodes[i].node.shard[j].mu);
        free(q->nodes[i].node.host);
    }
    pthread_mutex_destroy(&q->mu);
    free(q);
    c->quorum = NULL;
}

int baton__quorum_masters(const struct baton_client *c)
{
    return c->quorum != NULL ? c->quorum->n : 0;
}

struct baton__node *baton__quorum_node(struct baton_client *c, int i)
{
    return &c->quorum->nodes[i].node;
}

int64_t baton__quorum_node_timeout_ms(const struct baton_client *c)
{
    return c->quorum->node_timeout_ms;
}

static int majority(const struct baton__quorum *q)
{
    return q->n / 2 + 1;
}

int baton__quorum_majority(const struct baton_client *c)
{
    return majority(c->quorum);
}

int64_t baton__quorum_max_ttl_ms(const struct baton_client *c)
{
    return c->quorum->max_ttl_ms;
}

static uint64_t runid_hash(const char *runid)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a; never 0 for a run id */
    for (const unsigned char *p = (const unsigned char *)runid; *p != '\0'; p++)
        h = (h ^ *p) * 1099511628211u;
    return h != 0 ? h : 1;
}

/* Whether master i counts toward a majority, from what the connection that
 * answered says of the server (run id, uptime when it connected): a new
 * run id or a short uptime quarantines it until max_ttl after it came
 * back. The run id seen before is the common case: no lock. */
static bool node_counts(struct baton__quorum *q, int i, const char *runid, int64_t uptime_s)
{
    struct qnode *qn = &q->nodes[i];
    int64_t now = baton__now_ns();
    int64_t max_ttl_ns = q->max_ttl_ms * 1000000;
    if (runid[0] == '\0')
        return false; /* INFO refused: it cannot be told from a restarted one */
    uint64_t h = runid_hash(runid);
    if (h == atomic_load(&qn->runid_hash))
        return !atomic_load(&qn->dup) && now >= atomic_load(&qn->counts_from_ns);
    pthread_mutex_lock(&q->mu);
    if (strcmp(qn->runid, runid) != 0) {
        int64_t from = now + max_ttl_ns; /* restarted (or unknown): a full max_ttl */
        /* Redis's uptime_in_seconds is the difference of two whole-second
         * clock readings: up to 1 s more than the time it has really been
         * up; and it was read when the connection was made, which is no
         * later than now. One second less is safe. */
        if (qn->runid[0] == '\0' && uptime_s >= 1)
            from = now + max_ttl_ns - (uptime_s - 1) * 1000000000;
        memcpy(qn->runid, runid, sizeof qn->runid);
        if (from > atomic_load(&qn->counts_from_ns))
            atomic_store(&qn->counts_from_ns, from);
        /* One server under two addresses would vote twice */
        for (int j = 0; j < q->n; j++) {
            bool dup = false;
            for (int k = 0; k < q->n && !dup; k++)
                dup = k != j && q->nodes[j].runid[0] != '\0' &&
                      strcmp(q->nodes[j].runid, q->nodes[k].runid) == 0;
            atomic_store(&q->nodes[j].dup, dup);
        }
        atomic_store(&qn->runid_hash, h);
    }
    bool ok = !atomic_load(&qn->dup) && now >= atomic_load(&qn->counts_from_ns);
    pthread_mutex_unlock(&q->mu);
    return ok;
}

void baton__quorum_slots_clear(struct baton__qslot *s, int n)
{
    for (int i = 0; i < n; i++) {
        if (s[i].reply != NULL)
            freeReplyObject(s[i].reply);
        s[i].reply = NULL;
    }
}

/* How long master i is still left alone after a failure (0: ask it). */
static int64_t down_left_ms(struct baton__quorum *q, int i)
{
    int64_t until = atomic_load(&q->nodes[i].down_until_ns);
    if (until == 0)
        return 0;
    int64_t left = (until - baton__now_ns()) / 1000000;
    return left > 0 ? left : 0;
}

/* Master i did not answer in time, or could not be reached: the next
 * requests do not wait for it for a while (a stopped master would cost
 * every acquire a node_timeout): 2 node_timeouts after a first failure,
 * doubling with each failure in a row up to 10 node_timeouts (at least
 * 500 ms). A stall of every master at once (a disk's fsync, a network
 * blip) thus costs a few hundred ms, not a lease. */
static void mark_down(struct baton__quorum *q, int i)
{
    int f = atomic_fetch_add(&q->nodes[i].fails, 1);
    int64_t cap = q->node_timeout_ms * DOWN_TIMEOUTS;
    if (cap < DOWN_MIN_MS)
        cap = DOWN_MIN_MS;
    int64_t ms = q->node_timeout_ms * DOWN_FIRST_TIMEOUTS;
    for (int k = 0; k < f && ms < cap; k++)
        ms *= 2;
    if (ms > cap)
        ms = cap;
    atomic_store(&q->nodes[i].down_until_ns, baton__now_ns() + ms * 1000000);
}

void baton__quorum_failed(struct baton_client *c, int i)
{
    mark_down(c->quorum, i);
}

bool baton__quorum_down(struct baton_client *c, int i)
{
    return down_left_ms(c->quorum, i) > 0;
}

/* The reason in an error detail, without the URL and master that
 * describe() puts in front of it. */
static void strip_prefix(struct baton_client *c, const struct baton__node *node, char *err)
{
    const char *p = err;
    size_t ul = strlen(c->url.redacted);
    char needle[96];
    if (strncmp(p, c->url.redacted, ul) == 0 && strncmp(p + ul, ": ", 2) == 0)
        p += ul + 2;
    snprintf(needle, sizeof needle, "node %s: ", node->addr);
    if (strncmp(p, needle, strlen(needle)) == 0)
        p += strlen(needle);
    if (p != err)
        memmove(err, p, strlen(p) + 1);
}

/* Sends argv to every master (the loop of qloop.c: pipelined with every
 * other thread's requests) and waits for the answers, each master bounded
 * by node_timeout and all by deadline_ns. src: the script's source when
 * argv is an EVALSHA (resent as EVAL on NOSCRIPT). *sent_ns: a time
 * before the first byte left. Fills s[0..n-1]; free the replies with
 * baton__quorum_slots_clear(). */
void baton__quorum_fanout(struct baton_client *c, int argc, const char **argv, const size_t *lens,
                   const char *src, struct baton__qslot *s, int64_t *sent_ns, int64_t deadline_ns)
{
    struct baton__quorum *q = c->quorum;
    struct baton__qcall k;
    char *cmd = NULL;
    size_t len = 0;
    /* conn.c's formatter: hiredis's bytes without its sprintf */
    int cmdlen = baton__resp_format(&cmd, 0, argc, argv, lens, &len) == BATON_OK ? (int)len : -1;

    memset(&k, 0, sizeof k);
    k.cmd = cmd;
    k.cmdlen = cmdlen > 0 ? (size_t)cmdlen : 0;
    k.src = src;
    k.argc = argc;
    k.argv = argv;
    k.lens = lens;
    *sent_ns = baton__now_ns();
    int64_t by = *sent_ns + q->node_timeout_ms * 1000000;
    for (int i = 0; i < q->n; i++) {
        struct baton__qreq *r = &k.r[i];
        /* Each master its own node_timeout to connect, take the request
         * and answer: a stopped one does not eat the others' time. */
        r->deadline_ns = by < deadline_ns ? by : deadline_ns;
        int64_t down_ms = down_left_ms(q, i);
        if (cmdlen < 0 || down_ms > 0) {
            /* Skipping it only takes a vote away: safe */
            r->skip = true;
            r->rc = cmdlen < 0 ? BATON_ENOMEM : BATON_EIO;
            if (cmdlen < 0)
                baton__set_error(r->err, sizeof r->err, "out of memory");
            else
                baton__set_error(r->err, sizeof r->err,
                                 "unreachable: not asked for another %lld ms after it failed",
                                 (long long)down_ms);
        }
    }
    baton__qloop_call(q->loop, &k);
    free(cmd);
    for (int i = 0; i < q->n; i++) {
        struct baton__qreq *r = &k.r[i];
        struct baton__qslot *t = &s[i];
        memset(t, 0, sizeof *t);
        t->rc = r->rc;
        t->sent = r->sent;
        t->reply = r->reply;
        if (r->rc != BATON_OK) {
            if (r->rc == BATON_EIO && strcmp(r->err, "no answer in time") == 0)
                baton__set_error(t->err, sizeof t->err, "no answer within node_timeout %lld ms",
                                 (long long)q->node_timeout_ms);
            else
                baton__set_error(t->err, sizeof t->err, "%s", r->err);
            strip_prefix(c, &q->nodes[i].node, t->err);
            continue;
        }
        if (atomic_load_explicit(&q->nodes[i].fails, memory_order_relaxed) != 0)
            atomic_store(&q->nodes[i].fails, 0);
        t->counts = node_counts(q, i, r->runid, r->uptime_s);
        if (t->reply->type == REDIS_REPLY_ERROR) {
            baton__set_error(t->err, sizeof t->err, "redis error: %.200s", t->reply->str);
            t->rc = BATON_EREDIS;
        }
    }
}

/* "h1:6379: connection refused; h2:6380: ..." for the masters that did not
 * answer, and the quarantined ones. */
void baton__quorum_describe(const struct baton_client *c, const struct baton__qslot *s, char *buf,
                            size_t len)
{
    const struct baton__quorum *q = c->quorum;
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < q->n && o < len; i++) {
        const char *why = s[i].rc != BATON_OK ? s[i].err
                          : !s[i].counts      ? "restarted (or up for less than max_ttl): "
                                                "quarantined (or the same server as another "
                                                "master)"
                                              : NULL;
        if (why == NULL)
            continue;
        int w =
            snprintf(buf + o, len - o, "%s%s: %s", o > 0 ? "; " : "", q->nodes[i].node.addr, why);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

/* The slot of key's fence hint. */
_Atomic uint64_t *baton__quorum_hint(struct baton_client *c, const char *key)
{
    struct baton__quorum *q = c->quorum;
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++)
        h = (h ^ *p) * 1099511628211u;
    return &q->hint[h % HINTS];
}

int baton__quorum_ping(struct baton_client *c, char *err, size_t errlen)
{
    struct baton__quorum *q = c->quorum;
    struct baton__qslot s[BATON__QUORUM_MAX];
    const char *argv[1] = {"PING"};
    size_t lens[1] = {4};
    char why[BATON__ERRLEN / 2];
    int64_t sent;
    int answered = 0;
    baton__quorum_fanout(c, 1, argv, lens, NULL, s, &sent, baton__now_ns() + c->connect_timeout_ms * 1000000);
    for (int i = 0; i < q->n; i++)
        answered += s[i].rc == BATON_OK;
    baton__quorum_describe(c, s, why, sizeof why);
    baton__quorum_slots_clear(s, q->n);
    if (answered >= majority(q))
        return BATON_OK;
    baton__set_error(err, errlen, "%s: no quorum: %d of %d masters answered (%d needed): %s",
                     c->url.redacted, answered, q->n, majority(q), why);
    return BATON_EIO;
}

int baton__quorum_all(struct baton_client *c, int argc, const char **argv, const size_t *lens,
                      const char *src, struct baton_answers *a)
{
    struct baton__quorum *q = c->quorum;
    struct baton__qslot s[BATON__QUORUM_MAX];
    int64_t sent;
    int rc = BATON_OK;

    baton__quorum_fanout(c, argc, argv, lens, src, s, &sent, baton__client_deadline(c));
    a->n = q->n;
    a->majority = majority(q);
    a->answered = 0;
    for (int i = 0; i < q->n; i++) {
        struct baton_answer *v = &a->v[i];
        snprintf(v->master, sizeof v->master, "%s", q->nodes[i].node.addr);
        v->counts = s[i].counts;
        v->rc = s[i].rc;
        if (s[i].rc == BATON_OK && (v->reply = baton__reply_convert(s[i].reply)) == NULL)
            rc = BATON_ENOMEM;
        if (s[i].rc == BATON_OK || s[i].rc == BATON_EREDIS)
            a->answered += s[i].counts;
        if (s[i].rc != BATON_OK)
            snprintf(v->err, sizeof v->err, "%s", s[i].err);
        else if (!s[i].counts)
            snprintf(v->err, sizeof v->err,
                     "restarted (or up for less than max_ttl): quarantined (or the same server "
                     "as another master)");
    }
    baton__quorum_slots_clear(s, q->n);
    return rc;
}
