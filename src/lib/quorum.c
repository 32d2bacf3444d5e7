/* quorum.c -- locks over a Redlock quorum of N independent masters
 * (redis-quorum://h1,h2,h3...).
 *
 * Every request goes to all masters at once: one pooled connection per
 * master (a struct baton__node, the shape cluster.c uses), the command
 * appended and flushed on each, then the answers awaited together with
 * poll(), each master bounded by node_timeout. A grant holds when a
 * majority of the masters that count granted it, with validity
 * ttl - elapsed - drift from the send time (lock.c's baton__lock_confirm).
 *
 * Fences: phase 1 reads the fence counter from every master (a majority
 * must answer), phase 2 asks each master to grant with max + 1; a master
 * grants only when its counter is below it (scripts.c). Two grants'
 * majorities share a master, which orders them.
 *
 * Restarted masters: a master seen with a new run id, or up for less
 * than max_ttl, does not count toward a majority until max_ttl after it
 * came back (the Redlock paper's delayed restart), as it may have lost
 * locks it granted. It still receives every request. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton_int.h"

#define DEFAULT_MAX_TTL_MS      60000
#define DEFAULT_NODE_TIMEOUT_MS 50
#define FENCE_ROUNDS            3   /* phase 2 again when a master had a higher fence */
#define DOWN_MIN_MS             500 /* a master that failed is left alone this long, */
#define DOWN_TIMEOUTS           10  /* or this many node_timeouts if longer */

struct qnode {
    struct baton__node node; /* its pool */
    char runid[41];          /* under q->mu: the run id last seen, "" none yet */
    int64_t counts_from_ns;  /* under q->mu: quarantined until then */
    int64_t down_until_ns;   /* under q->mu: after a failure, not asked until then */
};

struct baton__quorum {
    pthread_mutex_t mu;
    int n;
    int64_t max_ttl_ms, node_timeout_ms;
    struct qnode nodes[BATON__QUORUM_MAX];
};

/* One master's part of a request. */
struct qslot {
    struct baton__conn *cn;
    redisReply *reply; /* owned */
    int rc;            /* 0 answered, else why not (detail in err) */
    bool pending;      /* awaiting the reply */
    bool evaled;       /* NOSCRIPT answered: EVAL sent */
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
    for (int i = 0; i < q->n; i++)
        baton__shards_close(q->nodes[i].node.shard, BATON__SHARDS);
}

void baton__quorum_free(struct baton_client *c)
{
    struct baton__quorum *q = c->quorum;
    if (q == NULL)
        return;
    baton__quorum_close(c);
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

static int majority(const struct baton__quorum *q)
{
    return q->n / 2 + 1;
}

/* Whether master i counts toward a majority, from what its connection
 * says of the server: a new run id or a short uptime quarantines it until
 * max_ttl after it came back. */
static bool node_counts(struct baton__quorum *q, int i, const struct baton__conn *cn)
{
    struct qnode *qn = &q->nodes[i];
    int64_t now = baton__now_ns();
    int64_t max_ttl_ns = q->max_ttl_ms * 1000000;
    bool ok;
    pthread_mutex_lock(&q->mu);
    if (cn->runid[0] != '\0' && strcmp(qn->runid, cn->runid) != 0) {
        int64_t from = now + max_ttl_ns; /* restarted (or unknown): a full max_ttl */
        /* Redis's uptime_in_seconds is the difference of two whole-second
         * clock readings: up to 1 s more than the time it has really been
         * up. One second less is safe. */
        if (qn->runid[0] == '\0' && cn->uptime_s >= 1)
            from = now + max_ttl_ns - (cn->uptime_s - 1) * 1000000000;
        memcpy(qn->runid, cn->runid, sizeof qn->runid);
        if (from > qn->counts_from_ns)
            qn->counts_from_ns = from;
    }
    ok = cn->runid[0] != '\0' && now >= qn->counts_from_ns;
    for (int j = 0; j < q->n && ok; j++)
        if (j != i && strcmp(q->nodes[j].runid, cn->runid) == 0)
            ok = false; /* one server under two addresses: it would vote twice */
    pthread_mutex_unlock(&q->mu);
    return ok;
}

static void slots_clear(struct baton_client *c, struct qslot *s, int n)
{
    for (int i = 0; i < n; i++) {
        if (s[i].reply != NULL)
            freeReplyObject(s[i].reply);
        s[i].reply = NULL;
        baton__client_put(c, s[i].cn);
        s[i].cn = NULL;
    }
}

static void slot_fail(struct qslot *s, int rc, const char *why)
{
    s->rc = rc;
    s->pending = false;
    baton__set_error(s->err, sizeof s->err, "%s", why);
}

/* How long master i is still left alone after a failure (0: ask it). */
static int64_t down_left_ms(struct baton__quorum *q, int i)
{
    pthread_mutex_lock(&q->mu);
    int64_t left = (q->nodes[i].down_until_ns - baton__now_ns()) / 1000000;
    pthread_mutex_unlock(&q->mu);
    return left > 0 ? left : 0;
}

/* Master i did not answer in time, or could not be reached: the next
 * requests do not wait for it for a while (a stopped master would cost
 * every acquire two node_timeouts). */
static void mark_down(struct baton__quorum *q, int i)
{
    int64_t ms = q->node_timeout_ms * DOWN_TIMEOUTS;
    if (ms < DOWN_MIN_MS)
        ms = DOWN_MIN_MS;
    pthread_mutex_lock(&q->mu);
    q->nodes[i].down_until_ns = baton__now_ns() + ms * 1000000;
    pthread_mutex_unlock(&q->mu);
}

/* A connection to node by deadline: a pooled one unless its server closed
 * it while it was idle (a restart: readable with nothing asked), else a
 * new one. The detail of a failure leaves out the URL (describe() names
 * the master). */
static int get_conn(struct baton_client *c, struct baton__node *node, int64_t deadline,
                    struct baton__conn **out, char *err, size_t errlen)
{
    char why[BATON__ERRLEN];
    int rc;
    for (int tries = 0;; tries++) {
        rc = baton__client_get(c, node, deadline, out, why, sizeof why);
        if (rc != BATON_OK || tries > 0 || baton__wait_fd((*out)->fd, POLLIN, 0) != 1)
            break;
        baton__conn_fail(*out, "closed while idle", ""); /* freed by put */
        baton__client_put(c, *out);
        *out = NULL;
    }
    if (rc != BATON_OK) {
        char needle[96];
        snprintf(needle, sizeof needle, "node %s: ", node->addr);
        const char *p = strstr(why, needle);
        baton__set_error(err, errlen, "%s", p != NULL ? p + strlen(needle) : why);
    }
    return rc;
}

/* Sends argv to every master and waits for the answers until each one's
 * deadline (node_timeout from now). src: the script's source when argv is
 * an EVALSHA (resent as EVAL on NOSCRIPT). *sent_ns: a time before the
 * first byte left. Fills s[0..n-1]; free with slots_clear(). */
static void fanout(struct baton_client *c, int argc, const char **argv, size_t *lens,
                   const char *src, struct qslot *s, int64_t *sent_ns)
{
    struct baton__quorum *q = c->quorum;
    struct pollfd pfd[BATON__QUORUM_MAX];
    int map[BATON__QUORUM_MAX];
    char why[BATON__ERRLEN];

    int64_t timeout_ns = q->node_timeout_ms * 1000000;
    int64_t deadline;
    const char *sha = src != NULL ? argv[1] : NULL; /* EVALSHA sha ...: argc >= 3 */
    *sent_ns = baton__now_ns();
    for (int i = 0; i < q->n; i++) {
        /* Each master its own node_timeout to connect and take the request:
         * a stopped one does not eat the others' time. */
        deadline = baton__now_ns() + timeout_ns;
        memset(&s[i], 0, sizeof s[i]);
        int64_t down_ms = down_left_ms(q, i);
        if (down_ms > 0) {
            /* Skipping it only takes a vote away: safe */
            baton__set_error(why, sizeof why,
                             "unreachable: not asked for another %lld ms after it failed",
                             (long long)down_ms);
            slot_fail(&s[i], BATON_EIO, why);
            continue;
        }
        int rc = get_conn(c, &q->nodes[i].node, deadline, &s[i].cn, why, sizeof why);
        if (rc != BATON_OK) {
            slot_fail(&s[i], rc, why);
            continue;
        }
        s[i].counts = node_counts(q, i, s[i].cn);
        if ((rc = baton__conn_append(s[i].cn, argc, argv, lens)) != BATON_OK ||
            (rc = baton__conn_flush(s[i].cn, deadline)) != BATON_OK) {
            slot_fail(&s[i], rc, s[i].cn->err);
            continue;
        }
        s[i].pending = true;
    }
    deadline = baton__now_ns() + timeout_ns; /* for every answer */
    for (;;) {
        int np = 0;
        for (int i = 0; i < q->n; i++) {
            if (!s[i].pending)
                continue;
            short ev = baton__conn_read_events(s[i].cn);
            int got = 0;
            redisReply *r = NULL;
            if (ev == 0 && (got = baton__conn_poll_reply(s[i].cn, &r)) < 0) {
                slot_fail(&s[i], got, s[i].cn->err);
                continue;
            }
            if (got == 0) {
                pfd[np] = (struct pollfd){.fd = s[i].cn->fd, .events = ev != 0 ? ev : POLLIN};
                map[np++] = i;
                continue;
            }
            s[i].reply = r; /* handled below, with the polled ones */
            s[i].pending = false;
        }
        /* Replies that were already buffered are taken; NOSCRIPT resends */
        for (int i = 0; i < q->n; i++) {
            redisReply *r = s[i].reply;
            if (r != NULL && src != NULL && !s[i].evaled && r->type == REDIS_REPLY_ERROR &&
                strncmp(r->str, "NOSCRIPT", 8) == 0) {
                freeReplyObject(r);
                s[i].reply = NULL;
                s[i].evaled = true;
                argv[0] = "EVAL";
                argv[1] = src;
                size_t l0 = lens[0], l1 = lens[1];
                lens[0] = 4;
                lens[1] = strlen(src);
                int rc = baton__conn_append(s[i].cn, argc, argv, lens);
                if (rc == BATON_OK)
                    rc = baton__conn_flush(s[i].cn, deadline);
                lens[0] = l0;
                lens[1] = l1;
                argv[0] = "EVALSHA";
                argv[1] = sha; /* as it was, for the next master */
                if (rc != BATON_OK)
                    slot_fail(&s[i], rc, s[i].cn->err);
                else
                    s[i].pending = true;
            }
        }
        if (np == 0) {
            bool more = false;
            for (int i = 0; i < q->n; i++)
                more |= s[i].pending;
            if (!more)
                break;
            continue;
        }
        int64_t left_ms = (deadline - baton__now_ns() + 999999) / 1000000;
        int pr = left_ms > 0 ? poll(pfd, (nfds_t)np, (int)left_ms) : 0;
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) {
            for (int k = 0; k < np; k++) {
                struct qslot *t = &s[map[k]];
                baton__conn_fail(t->cn, "timed out", "");
                baton__set_error(t->err, sizeof t->err, "no answer within node_timeout %lld ms",
                                 (long long)q->node_timeout_ms);
                t->rc = BATON_EIO;
                t->pending = false;
            }
            break;
        }
        for (int k = 0; k < np; k++) {
            struct qslot *t = &s[map[k]];
            redisReply *r = NULL;
            if (pfd[k].revents == 0)
                continue;
            int got = baton__conn_poll_reply(t->cn, &r);
            if (got < 0)
                slot_fail(t, got, t->cn->err);
            else if (got == 1) {
                t->reply = r;
                t->pending = false;
            }
        }
    }
    for (int i = 0; i < q->n; i++) {
        if (s[i].rc == BATON_EIO && s[i].cn != NULL)
            mark_down(q, i); /* timed out or broke (not when skipped: cn is NULL) */
        else if (s[i].rc == BATON_EIO && strncmp(s[i].err, "unreachable: ", 13) != 0)
            mark_down(q, i); /* could not connect */
        if (s[i].rc != BATON_OK || s[i].reply == NULL)
            continue;
        if (s[i].reply->type == REDIS_REPLY_ERROR) {
            baton__set_error(s[i].err, sizeof s[i].err, "redis error: %.200s", s[i].reply->str);
            s[i].rc = BATON_EREDIS;
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

static int script_argv(struct baton_client *c, enum baton__script_id id, int nkeys,
                       const char *const *keys, int nargs, const char *const *args,
                       const char **argv, size_t *lens, char nk[BATON__I64_LEN])
{
    int argc = 0;
    argv[argc++] = "EVALSHA";
    argv[argc++] = c->sha[id];
    argv[argc++] = baton__i64_str(nkeys, nk);
    for (int i = 0; i < nkeys; i++)
        argv[argc++] = keys[i];
    for (int i = 0; i < nargs; i++)
        argv[argc++] = args[i];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    return argc;
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

/* Best effort: the release script on every master (a failed acquire
 * gives back what it got; a release). Returns how many released it, and
 * in *answered how many counting masters answered. */
static int release_all(struct baton_lock *lk, int *answered)
{
    struct baton_client *c = lk->c;
    struct baton__quorum *q = c->quorum;
    struct qslot s[BATON__QUORUM_MAX];
    const char *argv[16];
    size_t lens[16];
    char nk[BATON__I64_LEN];
    int64_t sent;
    int released = 0;
    const char *keys[3] = {lk->rkeys[0], lk->rkeys[2], lk->rkeys[3]};
    const char *args[3] = {lk->token, baton__waiters_channel(c), ""};
    int argc = script_argv(c, BATON__S_RELEASE, 3, keys, 3, args, argv, lens, nk);
    fanout(c, argc, argv, lens, baton__script_source(BATON__S_RELEASE), s, &sent);
    *answered = 0;
    for (int i = 0; i < q->n; i++) {
        if (s[i].rc != BATON_OK)
            continue;
        if (s[i].counts)
            (*answered)++;
        if (s[i].reply->type == REDIS_REPLY_INTEGER && s[i].reply->integer == 1)
            released++;
    }
    slots_clear(c, s, q->n);
    return released;
}

/* Phase 1: the highest fence counter of the masters that answered, a
 * majority of counting masters among them. */
static int read_fence(struct baton_lock *lk, uint64_t *max)
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
    fanout(c, 2, argv, lens, NULL, s, &sent);
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
    slots_clear(c, s, q->n);
    return rc;
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

    if (lk->ttl_ms > q->max_ttl_ms) {
        baton__set_error(lk->errstr, sizeof lk->errstr,
                         "%s: ttl %lld ms exceeds the quorum's max_ttl %lld ms (a restarted "
                         "master is kept out for max_ttl: raise max_ttl= in the URL)",
                         c->url.redacted, (long long)lk->ttl_ms, (long long)q->max_ttl_ms);
        return BATON_EINVAL;
    }
    if ((rc = read_fence(lk, &fence)) != BATON_OK)
        return rc;
    for (int round = 0; round < FENCE_ROUNDS; round++) {
        const char *keys[2] = {lk->rkeys[0], lk->rkeys[1]};
        const char *args[3] = {lk->token, baton__i64_str(lk->ttl_ms, ttl),
                               baton__i64_str((int64_t)(fence + 1), fb)};
        int argc = script_argv(c, BATON__S_QUORUM_ACQUIRE, 2, keys, 3, args, argv, lens, nk);
        int64_t sent;
        int granted = 0, taken = 0, behind = 0, answered = 0;
        uint64_t higher = fence;

        fanout(c, argc, argv, lens, baton__script_source(BATON__S_QUORUM_ACQUIRE), s, &sent);
        for (int i = 0; i < q->n; i++) {
            redisReply *r = s[i].reply;
            if (s[i].rc != BATON_OK)
                continue;
            if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
                r->element[0]->type != REDIS_REPLY_INTEGER) {
                baton__set_error(s[i].err, sizeof s[i].err,
                                 "unexpected reply to the quorum acquire script");
                s[i].rc = BATON_EPROTO;
                continue;
            }
            long long kind = r->element[0]->integer;
            uint64_t v = 0;
            if (kind == -1 && reply_u64(r->element[1], &v) && v > higher)
                higher = v;
            if (kind == 0 && r->elements == 4 && h != NULL) {
                h->pttl_ms =
                    r->element[1]->type == REDIS_REPLY_INTEGER ? r->element[1]->integer : -1;
                if (r->element[2]->type == REDIS_REPLY_STRING)
                    snprintf(h->value, sizeof h->value, "%s", r->element[2]->str);
                if (reply_u64(r->element[3], &v))
                    h->fence = v;
            }
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
            slots_clear(c, s, q->n);
            atomic_store(&lk->fence, fence + 1);
            baton__lock_confirm(lk, sent, lk->ttl_ms);
            return BATON_OK;
        }
        describe(q, s, why, sizeof why);
        slots_clear(c, s, q->n);
        int dummy;
        if (granted > 0 || answered < q->n)
            release_all(lk, &dummy); /* give back what we got (or may have got) */
        if (granted >= majority(q)) {
            baton__set_error(lk->errstr, sizeof lk->errstr,
                             "%s: granted by a majority but too late: %lld ms of ttl %lld ms "
                             "elapsed (given back)",
                             c->url.redacted, (long long)elapsed_ms, (long long)lk->ttl_ms);
            return BATON_ETIMEDOUT;
        }
        if (taken > 0 && answered >= majority(q))
            return BATON_ETAKEN;
        if (behind > 0 && higher > fence && answered >= majority(q)) {
            fence = higher; /* a master outside the read had a higher counter */
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
    char nk[BATON__I64_LEN], ttl[BATON__I64_LEN];
    char why[BATON__ERRLEN / 2];
    int64_t sent;
    int ok = 0, notours = 0, answered = 0;

    (void)deadline_ns; /* each master is bounded by node_timeout */
    if (ttl_ms > q->max_ttl_ms) {
        baton__set_error(err, errlen, "%s: ttl %lld ms exceeds the quorum's max_ttl %lld ms",
                         c->url.redacted, (long long)ttl_ms, (long long)q->max_ttl_ms);
        return BATON_EINVAL;
    }
    const char *keys[1] = {lk->rkeys[0]};
    const char *args[2] = {lk->token, baton__i64_str(ttl_ms, ttl)};
    int argc = script_argv(c, BATON__S_EXTEND, 1, keys, 2, args, argv, lens, nk);
    fanout(c, argc, argv, lens, baton__script_source(BATON__S_EXTEND), s, &sent);
    for (int i = 0; i < q->n; i++) {
        if (s[i].rc != BATON_OK || !s[i].counts)
            continue;
        answered++;
        if (s[i].reply->type == REDIS_REPLY_INTEGER && s[i].reply->integer == 1)
            ok++;
        else
            notours++;
    }
    describe(q, s, why, sizeof why);
    slots_clear(c, s, q->n);
    int64_t elapsed_ms = (baton__now_ns() - sent) / 1000000;
    /* Valid only when the old grant was still valid when the extension
     * reached a majority: else another may have taken it in between. */
    if (ok >= majority(q) && baton__now_ns() < atomic_load(&lk->deadline_ns) &&
        ttl_ms - elapsed_ms - (ttl_ms / 100 + 2) > 0) {
        baton__lock_confirm(lk, sent, ttl_ms);
        return BATON_OK;
    }
    if (notours > answered - majority(q) || baton__now_ns() >= atomic_load(&lk->deadline_ns)) {
        baton__set_error(err, errlen,
                         "lock %s was lost: %s reached only %d of %d masters in time (%d "
                         "needed)%s%s",
                         lk->key, renewal ? "renewal" : "extension", ok, q->n, majority(q),
                         why[0] != '\0' ? ": " : "", why);
        int dummy;
        release_all(lk, &dummy);
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
    int released = release_all(lk, &answered);
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
    fanout(c, 1, argv, lens, NULL, s, &sent);
    for (int i = 0; i < q->n; i++)
        answered += s[i].rc == BATON_OK;
    describe(q, s, why, sizeof why);
    slots_clear(c, s, q->n);
    if (answered >= majority(q))
        return BATON_OK;
    baton__set_error(err, errlen, "%s: no quorum: %d of %d masters answered (%d needed): %s",
                     c->url.redacted, answered, q->n, majority(q), why);
    return BATON_EIO;
}
