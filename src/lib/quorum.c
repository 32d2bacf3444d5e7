/* quorum.c -- requests over a Redlock quorum of N independent masters
 * (redis-quorum://h1,h2,h3...): locks, and any command or script sent to
 * every master (baton_client_eval_all() and baton_client_command_all(),
 * which the supervisor and the elections over a quorum are built on).
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
 * Locks: a grant holds when a majority of the masters that count granted
 * it, with validity ttl - elapsed - drift from the send time (lock.c's
 * baton__lock_confirm).
 *
 * Fences: a master grants with fence F only when the lock is free there
 * and its own counter is below F, and then stores F. Any two grants'
 * majorities share a master, which saw both in order: the later grant's
 * fence is higher. The fence asked for is the highest counter a majority
 * reported (a first round of GETs), or, when this client granted or saw
 * the key's counter before, that value + 1 (a hint kept per key hash: a
 * stale hint only costs a second round, with the highest counter the
 * masters reported, as any master whose counter is not below F refuses).
 *
 * Split votes: when no holder has a majority (several acquirers took
 * masters at the same instant), each gives back what it got and the holder
 * reported is none, with a short random wait (1 to 4 node_timeouts) before
 * the next attempt, so that the next round rarely splits again.
 *
 * Restarted masters: a master seen with a new run id, or up for less
 * than max_ttl, does not count toward a majority until max_ttl after it
 * came back (the Redlock paper's delayed restart), as it may have lost
 * locks it granted. It still receives every request.
 *
 * Elections (election.c): the leadership is such a lock, whose renewal
 * also takes the key again on a master where it is free (a master that
 * restarted empty, or missed the grant) if that master's counter is not
 * above the term: the lease heals as masters come back, instead of
 * shrinking to a bare majority. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton_int.h"

#define DEFAULT_MAX_TTL_MS      BATON__QUORUM_MAX_TTL_MS
#define DEFAULT_NODE_TIMEOUT_MS BATON__QUORUM_NODE_TIMEOUT_MS
#define FENCE_ROUNDS            3   /* rounds again when a master had a higher fence */
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

/* One master's part of a request, as the rest of this file reads it. */
struct qslot {
    redisReply *reply; /* owned */
    int rc;            /* 0 answered, else why not (detail in err) */
    bool sent;         /* it left (it may have been applied) */
    bool counts;       /* not quarantined */
    char err[256];
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
    if (baton__qloop_new(c, q->n, &q->loop) != BATON_OK)
        return BATON_ENOMEM;
    for (int i = 0; i < q->n; i++) {
        struct baton__node *nd = &q->nodes[i].node;
        for (int j = 0; j < BATON__SHARDS; j++) {
            pthread_mutex_init(&nd->shard[j].mu, NULL);
            baton__mux_init(&nd->shard[j].mux, nd);
        }
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
        for (int j = 0; j < BATON__SHARDS; j++) {
            baton__mux_clear(&q->nodes[i].node.shard[j].mux);
            pthread_mutex_destroy(&q->nodes[i].node.shard[j].mu);
        }
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

static void slots_clear(struct qslot *s, int n)
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
 * slots_clear(). */
static void fanout(struct baton_client *c, int argc, const char **argv, const size_t *lens,
                   const char *src, struct qslot *s, int64_t *sent_ns, int64_t deadline_ns)
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
        struct qslot *t = &s[i];
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
static void describe(const struct baton__quorum *q, const struct qslot *s, char *buf, size_t len)
{
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

/* argv of EVALSHA of our script id. */
static int script_argv(const struct baton_client *c, enum baton__script_id id, int nkeys,
                       const char *const *keys, int nargs, const char *const *args,
                       const char **argv, size_t *lens, char nk[BATON__I64_LEN])
{
    return baton__script_argv("EVALSHA", c->sha[id], nkeys, keys, nargs, args, argv, lens, nk);
}

static bool reply_u64(const redisReply *r, uint64_t *v)
{
    if (r->type == REDIS_REPLY_INTEGER && r->integer >= 0) {
        *v = (uint64_t)r->integer;
        return true;
    }
    if (r->type == REDIS_REPLY_STRING) {
        char *end = NULL;
        errno = 0;
        unsigned long long x = strtoull(r->str, &end, 10);
        if (errno == 0 && end != r->str && *end == '\0') {
            *v = x;
            return true;
        }
    }
    if (r->type == REDIS_REPLY_NIL) {
        *v = 0;
        return true;
    }
    return false;
}

/* The slot of key's fence hint. */
static _Atomic uint64_t *hint_of(struct baton__quorum *q, const char *key)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++)
        h = (h ^ *p) * 1099511628211u;
    return &q->hint[h % HINTS];
}

static void hint_raise(_Atomic uint64_t *h, uint64_t v)
{
    uint64_t old = atomic_load(h);
    while (old < v && !atomic_compare_exchange_weak(h, &old, v))
        ;
}

/* Best effort, by deadline_ns: the release script on every master (a
 * failed acquire gives back what it got; a release). chan: the release
 * channel of an election ("resigned" is published there), or "". Returns
 * how many released it, and in *answered how many counting masters
 * answered. */
static int release_all(struct baton_lock *lk, const char *chan, int64_t deadline_ns, int *answered)
{
    struct baton_client *c = lk->c;
    struct baton__quorum *q = c->quorum;
    struct qslot s[BATON__QUORUM_MAX];
    const char *argv[16];
    size_t lens[16];
    char nk[BATON__I64_LEN];
    int64_t sent;
    int released = 0;
    const char *keys[1] = {lk->rkeys[0]};
    const char *args[2] = {lk->token, chan};
    int argc = script_argv(c, BATON__S_QUORUM_RELEASE, 1, keys, 2, args, argv, lens, nk);
    fanout(c, argc, argv, lens, baton__script_source(BATON__S_QUORUM_RELEASE), s, &sent,
           deadline_ns);
    *answered = 0;
    for (int i = 0; i < q->n; i++) {
        if (s[i].rc != BATON_OK)
            continue;
        if (s[i].counts)
            (*answered)++;
        if (s[i].reply->type == REDIS_REPLY_INTEGER && s[i].reply->integer == 1)
            released++;
    }
    slots_clear(s, q->n);
    return released;
}

/* Phase 1: the highest fence counter of the masters that answered, a
 * majority of counting masters among them. */
static int read_fence(struct baton_lock *lk, uint64_t *max, int64_t deadline_ns)
{
    struct baton_client *c = lk->c;
    struct baton__quorum *q = c->quorum;
    struct qslot s[BATON__QUORUM_MAX];
    const char *argv[2] = {"GET", lk->rkeys[1]};
    size_t lens[2] = {3, strlen(lk->rkeys[1])};
    char why[BATON__ERRLEN / 2];
    int64_t sent;
    int answered = 0, rc = BATON_OK;

    *max = 0;
    fanout(c, 2, argv, lens, NULL, s, &sent, deadline_ns);
    for (int i = 0; i < q->n; i++) {
        uint64_t v;
        if (s[i].rc != BATON_OK)
            continue;
        if (!reply_u64(s[i].reply, &v)) {
            baton__set_error(s[i].err, sizeof s[i].err, "unexpected reply to GET of the fence");
            s[i].rc = BATON_EPROTO;
            continue;
        }
        if (v > *max)
            *max = v; /* a quarantined master's too: higher is only safer */
        if (s[i].counts)
            answered++;
    }
    if (answered < majority(q)) {
        describe(q, s, why, sizeof why);
        baton__set_error(
            lk->errstr, sizeof lk->errstr,
            "%s: no quorum: %d of %d masters counted in the fence read (%d needed): %s",
            c->url.redacted, answered, q->n, majority(q), why);
        rc = BATON_EIO;
    }
    slots_clear(s, q->n);
    return rc;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* What the refusals of one round say of the holder: the value a majority
 * of the counted masters hold, and when its grant stops holding a
 * majority (the (held - majority + 1)-th expiry among them); or, when no
 * holder has a majority (a split vote), none and a short random wait. */
static void holder_of(struct baton__quorum *q, const struct qslot *s, struct baton__holder *h)
{
    int best = -1, best_n = 0;
    uint64_t fence = 0;
    for (int i = 0; i < q->n; i++) {
        const redisReply *r = s[i].reply;
        uint64_t v;
        if (s[i].rc != BATON_OK || r->element[0]->integer != 0 || r->elements != 4)
            continue;
        if (reply_u64(r->element[3], &v) && v > fence)
            fence = v;
        if (!s[i].counts || r->element[2]->type != REDIS_REPLY_STRING)
            continue;
        int n = 0;
        for (int j = 0; j < q->n; j++)
            if (s[j].rc == BATON_OK && s[j].counts && s[j].reply->element[0]->integer == 0 &&
                s[j].reply->elements == 4 && s[j].reply->element[2]->type == REDIS_REPLY_STRING &&
                strcmp(s[j].reply->element[2]->str, r->element[2]->str) == 0)
                n++;
        if (n > best_n) {
            best_n = n;
            best = i;
        }
    }
    h->fence = fence;
    h->value[0] = '\0';
    if (best < 0 || best_n < majority(q)) {
        uint64_t rnd = 0;
        baton__random(&rnd, sizeof rnd);
        h->pttl_ms = q->node_timeout_ms + (int64_t)(rnd % (uint64_t)(3 * q->node_timeout_ms + 1));
        return;
    }
    const char *value = s[best].reply->element[2]->str;
    int64_t pttl[BATON__QUORUM_MAX];
    int k = 0;
    for (int j = 0; j < q->n; j++)
        if (s[j].rc == BATON_OK && s[j].counts && s[j].reply->element[0]->integer == 0 &&
            s[j].reply->elements == 4 && s[j].reply->element[2]->type == REDIS_REPLY_STRING &&
            strcmp(s[j].reply->element[2]->str, value) == 0)
            pttl[k++] = s[j].reply->element[1]->type == REDIS_REPLY_INTEGER
                            ? s[j].reply->element[1]->integer
                            : -1;
    qsort(pttl, (size_t)k, sizeof pttl[0], cmp_i64);
    h->pttl_ms = pttl[k - majority(q)];
    snprintf(h->value, sizeof h->value, "%s", value);
}

int baton__quorum_try(struct baton_lock *lk, struct baton__holder *h)
{
    struct baton_client *c = lk->c;
    struct baton__quorum *q = c->quorum;
    struct qslot s[BATON__QUORUM_MAX];
    const char *argv[16];
    size_t lens[16];
    char nk[BATON__I64_LEN], ttl[BATON__I64_LEN], fb[BATON__I64_LEN];
    char why[BATON__ERRLEN / 2];
    uint64_t fence;
    int rc;

    int64_t deadline = baton__client_deadline(c);
    if (lk->ttl_ms > q->max_ttl_ms) {
        baton__set_error(lk->errstr, sizeof lk->errstr,
                         "%s: ttl %lld ms exceeds the quorum's max_ttl %lld ms (a restarted "
                         "master is kept out for max_ttl: raise max_ttl= in the URL)",
                         c->url.redacted, (long long)lk->ttl_ms, (long long)q->max_ttl_ms);
        return BATON_EINVAL;
    }
    _Atomic uint64_t *hint = hint_of(q, lk->rkeys[1]);
    fence = atomic_load(hint);
    if (fence == 0 && (rc = read_fence(lk, &fence, deadline)) != BATON_OK)
        return rc;
    for (int round = 0; round < FENCE_ROUNDS; round++) {
        const char *keys[2] = {lk->rkeys[0], lk->rkeys[1]};
        const char *args[3] = {lk->token, baton__i64_str(lk->ttl_ms, ttl),
                               baton__i64_str((int64_t)(fence + 1), fb)};
        int argc = script_argv(c, BATON__S_QUORUM_ACQUIRE, 2, keys, 3, args, argv, lens, nk);
        int64_t sent;
        int granted = 0, taken = 0, behind = 0, answered = 0;
        uint64_t higher = fence;

        fanout(c, argc, argv, lens, baton__script_source(BATON__S_QUORUM_ACQUIRE), s, &sent,
               deadline);
        for (int i = 0; i < q->n; i++) {
            redisReply *r = s[i].reply;
            if (s[i].rc != BATON_OK)
                continue;
            if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
                r->element[0]->type != REDIS_REPLY_INTEGER ||
                (r->element[0]->integer == 0 && r->elements != 4)) {
                baton__set_error(s[i].err, sizeof s[i].err,
                                 "unexpected reply to the quorum acquire script");
                s[i].rc = BATON_EPROTO;
                continue;
            }
            long long kind = r->element[0]->integer;
            uint64_t v = 0;
            if (kind == -1 && reply_u64(r->element[1], &v) && v > higher)
                higher = v;
            if (!s[i].counts)
                continue;
            answered++;
            granted += kind == 1;
            taken += kind == 0;
            behind += kind == -1;
        }
        int64_t elapsed_ms = (baton__now_ns() - sent) / 1000000;
        int64_t validity = lk->ttl_ms - elapsed_ms - (lk->ttl_ms / 100 + 2);
        if (granted >= majority(q) && validity > 0) {
            slots_clear(s, q->n);
            hint_raise(hint, fence + 1);
            atomic_store(&lk->fence, fence + 1);
            baton__lock_confirm(lk, sent, lk->ttl_ms);
            return BATON_OK;
        }
        if (taken > 0 && h != NULL)
            holder_of(q, s, h);
        describe(q, s, why, sizeof why);
        slots_clear(s, q->n);
        if (higher > fence)
            hint_raise(hint, higher);
        int dummy;
        if (granted > 0 || answered < q->n) /* give back what we got (or may have got) */
            release_all(lk, "", baton__client_deadline(c), &dummy);
        if (granted >= majority(q)) {
            baton__set_error(lk->errstr, sizeof lk->errstr,
                             "%s: granted by a majority but too late: %lld ms of ttl %lld ms "
                             "elapsed (given back)",
                             c->url.redacted, (long long)elapsed_ms, (long long)lk->ttl_ms);
            return BATON_ETIMEDOUT;
        }
        if (taken > 0 && answered >= majority(q))
            return BATON_ETAKEN;
        if (behind > 0 && higher > fence && answered >= majority(q) && baton__now_ns() < deadline) {
            fence = higher; /* a master had a higher counter than read or hinted */
            continue;
        }
        baton__set_error(lk->errstr, sizeof lk->errstr,
                         "%s: no quorum: %d of %d masters granted (%d needed), %d answered "
                         "and counted: %s",
                         c->url.redacted, granted, q->n, majority(q), answered, why);
        return BATON_EIO;
    }
    baton__set_error(lk->errstr, sizeof lk->errstr,
                     "%s: no quorum: the fence moved %d times during the acquire", c->url.redacted,
                     FENCE_ROUNDS);
    return BATON_EIO;
}

int baton__quorum_acquire(struct baton_lock *lk, const struct baton_lock_opts *o)
{
    uint64_t rng = 0;
    int rc;
    baton__random(&rng, sizeof rng);
    int64_t deadline = o->max_wait_ms < 0 ? INT64_MAX : baton__now_ns() + o->max_wait_ms * 1000000;
    for (;;) {
        struct baton__holder h = {.pttl_ms = -1};
        rc = baton__quorum_try(lk, &h);
        if (rc != BATON_ETAKEN)
            return rc;
        int64_t now = baton__now_ns();
        if (now >= deadline)
            return BATON_ETIMEDOUT;
        int64_t until = now + baton__jitter(o->retry_delay_ms, &rng) * 1000000;
        if (h.pttl_ms > 0 && now + (h.pttl_ms + 1) * 1000000 < until)
            until = now + (h.pttl_ms + 1) * 1000000;
        if (until > deadline)
            until = deadline;
        struct timespec ts;
        int64_t d = until - now;
        ts.tv_sec = d / 1000000000;
        ts.tv_nsec = d % 1000000000;
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
}

int baton__quorum_extend(struct baton_lock *lk, int64_t ttl_ms, int64_t deadline_ns, bool renewal,
                         char *err, size_t errlen)
{
    struct baton_client *c = lk->c;
    struct baton__quorum *q = c->quorum;
    struct qslot s[BATON__QUORUM_MAX];
    const char *argv[16];
    size_t lens[16];
    char nk[BATON__I64_LEN], ttl[BATON__I64_LEN], fb[BATON__I64_LEN];
    char why[BATON__ERRLEN / 2];
    int64_t sent;
    int ok = 0, notours = 0, answered = 0, argc;

    if (ttl_ms > q->max_ttl_ms) {
        baton__set_error(err, errlen, "%s: ttl %lld ms exceeds the quorum's max_ttl %lld ms",
                         c->url.redacted, (long long)ttl_ms, (long long)q->max_ttl_ms);
        return BATON_EINVAL;
    }
    if (lk->extend_script == BATON__S_QUORUM_EXTEND) {
        /* An election: extend, or take again where free (see the top) */
        const char *keys[2] = {lk->rkeys[0], lk->rkeys[1]};
        const char *args[3] = {lk->token, baton__i64_str(ttl_ms, ttl),
                               baton__i64_str((int64_t)atomic_load(&lk->fence), fb)};
        argc = script_argv(c, BATON__S_QUORUM_EXTEND, 2, keys, 3, args, argv, lens, nk);
    } else {
        const char *keys[1] = {lk->rkeys[0]};
        const char *args[2] = {lk->token, baton__i64_str(ttl_ms, ttl)};
        argc = script_argv(c, BATON__S_EXTEND, 1, keys, 2, args, argv, lens, nk);
    }
    int64_t by = baton__client_deadline(c);
    fanout(c, argc, argv, lens, baton__script_source(lk->extend_script), s, &sent,
           deadline_ns < by ? deadline_ns : by);
    for (int i = 0; i < q->n; i++) {
        if (s[i].rc != BATON_OK || !s[i].counts)
            continue;
        answered++;
        if (s[i].reply->type == REDIS_REPLY_INTEGER && s[i].reply->integer >= 1)
            ok++;
        else
            notours++;
    }
    describe(q, s, why, sizeof why);
    slots_clear(s, q->n);
    int64_t elapsed_ms = (baton__now_ns() - sent) / 1000000;
    /* Valid only when the old grant was still valid when the extension
     * reached a majority: else another may have taken it in between. */
    if (ok >= majority(q) && baton__now_ns() < atomic_load(&lk->deadline_ns) &&
        ttl_ms - elapsed_ms - (ttl_ms / 100 + 2) > 0) {
        baton__lock_confirm(lk, sent, ttl_ms);
        return BATON_OK;
    }
    if (notours > q->n - majority(q) || baton__now_ns() >= atomic_load(&lk->deadline_ns)) {
        baton__set_error(err, errlen,
                         "lock %s was lost: %s reached only %d of %d masters in time (%d "
                         "needed)%s%s",
                         lk->key, renewal ? "renewal" : "extension", ok, q->n, majority(q),
                         why[0] != '\0' ? ": " : "", why);
        int dummy;
        release_all(lk, "", baton__client_deadline(c), &dummy);
        baton__lock_mark_lost(lk, err);
        return BATON_ELOST;
    }
    baton__set_error(err, errlen,
                     "%s: no quorum for the %s of lock %s: %d of %d masters extended it (%d "
                     "needed): %s",
                     c->url.redacted, renewal ? "renewal" : "extension", lk->key, ok, q->n,
                     majority(q), why);
    return BATON_EIO;
}

int baton__quorum_release(struct baton_lock *lk)
{
    struct baton_client *c = lk->c;
    struct baton__quorum *q = c->quorum;
    int answered = 0;
    int released = release_all(lk, lk->release_chan != NULL ? lk->release_chan : "",
                               baton__client_deadline(c), &answered);
    if (released > 0 && atomic_load(&lk->deadline_ns) > baton__now_ns()) {
        atomic_store(&lk->released, true);
        baton__stats_released(lk);
        return BATON_OK;
    }
    if (answered >= majority(q) || released > 0) {
        baton__set_error(lk->errstr, sizeof lk->errstr,
                         "lock %s was no longer held by this owner at release", lk->key);
        baton__lock_mark_lost(lk, lk->errstr);
        atomic_store(&lk->released, true);
        return BATON_ELOST;
    }
    baton__set_error(lk->errstr, sizeof lk->errstr,
                     "%s: release reached %d of %d masters; the rest expire with the ttl",
                     c->url.redacted, answered, q->n);
    return BATON_EIO;
}

int baton__quorum_ping(struct baton_client *c, char *err, size_t errlen)
{
    struct baton__quorum *q = c->quorum;
    struct qslot s[BATON__QUORUM_MAX];
    const char *argv[1] = {"PING"};
    size_t lens[1] = {4};
    char why[BATON__ERRLEN / 2];
    int64_t sent;
    int answered = 0;
    fanout(c, 1, argv, lens, NULL, s, &sent, baton__now_ns() + c->connect_timeout_ms * 1000000);
    for (int i = 0; i < q->n; i++)
        answered += s[i].rc == BATON_OK;
    describe(q, s, why, sizeof why);
    slots_clear(s, q->n);
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
    struct qslot s[BATON__QUORUM_MAX];
    int64_t sent;
    int rc = BATON_OK;

    fanout(c, argc, argv, lens, src, s, &sent, baton__client_deadline(c));
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
    slots_clear(s, q->n);
    return rc;
}
