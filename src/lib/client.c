/* client.c -- the client: URL and options, a pool of connections shared by
 * all threads (connecting, AUTH, SELECT, the run id), and what script calls
 * share (call.c runs ours on the loop; baton__eval runs a tool's on a
 * pooled connection). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton_int.h"

#define SHARD_MAX_IDLE  16
#define SCRIPT_MAX_ARGS BATON__SCRIPT_MAX_ARGS

int64_t baton__client_deadline(const struct baton_client *c)
{
    return baton__now_ns() + c->command_timeout_ms * 1000000;
}

/* With min_replicas, our scripts are loaded on every new connection: a
 * durable call pipelines WAIT behind its EVALSHA, and a NOSCRIPT answer
 * would spend a WAIT for nothing. (A new master after a failover does not
 * have them: script caches are not replicated.) Failures are ignored: the
 * NOSCRIPT fallback remains. */
static int load_scripts(struct baton_client *c, struct baton__conn *cn, int64_t deadline_ns)
{
    int rc;
    for (int i = 0; i < BATON__S_COUNT; i++) {
        const char *argv[3] = {"SCRIPT", "LOAD", baton__script_source((enum baton__script_id)i)};
        size_t lens[3] = {6, 4, strlen(argv[2])};
        if ((rc = baton__conn_append(cn, 3, argv, lens)) != BATON_OK)
            return rc;
    }
    if ((rc = baton__conn_flush(cn, deadline_ns)) != BATON_OK)
        return rc;
    for (int i = 0; i < BATON__S_COUNT; i++) {
        redisReply *r = NULL;
        if ((rc = baton__conn_read(cn, &r, deadline_ns)) != BATON_OK)
            return rc;
        freeReplyObject(r);
    }
    (void)c;
    return BATON_OK;
}

int baton__client_connect(struct baton_client *c, struct baton__node *node, int64_t deadline_ns,
                          struct baton__conn **out, char *err, size_t errlen)
{
    struct baton__conn *cn = NULL;
    char why[BATON__ERRLEN];
    int rc;

    *out = NULL;
    if (atomic_load(&c->closed)) {
        snprintf(err, errlen, "the client was freed (baton_client_free) before this call");
        return BATON_EINVAL;
    }
    if (node == NULL && c->url.cluster) {
        snprintf(err, errlen, "%s: no cluster node given (a bug)", c->url.redacted);
        return BATON_EINVAL;
    }
    if (node == NULL && c->url.quorum) {
        /* Everything that needs one master comes here without one */
        snprintf(err, errlen,
                 "%s: not supported over a Redlock quorum: semaphores, multi-locks, once, "
                 "waiting for wake-ups and baton_client_command/eval need one master (locks, "
                 "elections and baton_client_command_all/eval_all run on every master)",
                 c->url.redacted);
        return BATON_EINVAL;
    }
    if (c->url.master != NULL) {
        if ((rc = baton__sentinel_connect(c, deadline_ns, &cn, err, errlen)) != BATON_OK)
            return rc;
    } else {
        /* The URL's server, or a cluster node (database 0) */
        struct baton__endpoint ep = {.host = node != NULL ? node->host : c->url.host,
                                     .port = node != NULL ? node->port : c->url.port,
                                     .path = node != NULL ? NULL : c->url.path,
                                     .tls = c->tls};
        if ((rc = baton__conn_open(&ep, deadline_ns, &cn, why, sizeof why)) != BATON_OK) {
            if (node != NULL)
                baton__set_error(err, errlen, "%s: node %s: %s", c->url.redacted, node->addr,
                                 why);
            else
                baton__set_error(err, errlen, "%s: %s", c->url.redacted, why);
            return rc;
        }
        if ((rc = baton__conn_hello(cn, c->user, c->pass, c->url.db, false, deadline_ns)) !=
            BATON_OK) {
            if (node != NULL)
                baton__set_error(err, errlen, "%s: node %s: %s", c->url.redacted, node->addr,
                                 cn->err);
            else
                baton__set_error(err, errlen, "%s: %s", c->url.redacted, cn->err);
            baton__conn_free(cn);
            return rc;
        }
        cn->node = node;
    }
    if (c->min_replicas > 0 && (rc = load_scripts(c, cn, deadline_ns)) != BATON_OK) {
        baton__set_error(err, errlen, "%s: %s", c->url.redacted, cn->err);
        baton__conn_free(cn);
        return rc;
    }
    *out = cn;
    return BATON_OK;
}

int baton__client_open(struct baton_client *c, struct baton__conn **out, char *err, size_t errlen)
{
    int64_t deadline = baton__now_ns() + c->connect_timeout_ms * 1000000;
    struct baton__node *node = NULL;
    int rc;
    *out = NULL;
    if (c->url.cluster && (rc = baton__cluster_any(c, deadline, &node, err, errlen)) != BATON_OK)
        return rc;
    rc = baton__client_connect(c, node, deadline, out, err, errlen);
    if (rc != BATON_OK && node != NULL)
        baton__cluster_suspect(c, node);
    return rc;
}

int64_t baton__client_grant_deadline(const struct baton_client *c, int64_t ttl_ms)
{
    int64_t now = baton__now_ns();
    int64_t cmd = now + c->command_timeout_ms * 1000000;
    int64_t valid = now + (ttl_ms - ttl_ms / 100 - 2) * 1000000;
    return valid < cmd ? valid : cmd;
}

unsigned baton__shard_index(void)
{
    uint64_t h = (uint64_t)pthread_self();
    h ^= h >> 17;
    h *= 0x9e3779b97f4a7c15u;
    return (unsigned)((h >> 32) % BATON__SHARDS);
}

static struct baton__shard *my_shard(struct baton_client *c)
{
    return &c->shard[baton__shard_index()];
}

/* The calling thread's shard of node's pool (NULL: the URL's server). */
static struct baton__shard *pool_shard(struct baton_client *c, struct baton__node *node)
{
    return node != NULL ? &node->shard[baton__shard_index()] : my_shard(c);
}

int baton__client_get(struct baton_client *c, struct baton__node *node, int64_t deadline_ns,
                      struct baton__conn **out, char *err, size_t errlen)
{
    struct baton__shard *s = pool_shard(c, node);
    for (;;) {
        pthread_mutex_lock(&s->mu);
        struct baton__conn *cn = s->idle;
        if (cn != NULL) {
            s->idle = cn->next;
            s->nidle--;
            cn->next = NULL;
        }
        pthread_mutex_unlock(&s->mu);
        if (cn == NULL)
            break;
        if (!atomic_load(&cn->stale)) {
            *out = cn;
            return BATON_OK;
        }
        baton__conn_free(cn); /* its server was replaced */
    }
    /* A new connection counts against the operation's deadline: connecting
     * and the command together never take longer than command_timeout. */
    int64_t connect_by = baton__now_ns() + c->connect_timeout_ms * 1000000;
    return baton__client_connect(c, node, connect_by < deadline_ns ? connect_by : deadline_ns, out,
                                 err, errlen);
}

void baton__client_put(struct baton_client *c, struct baton__conn *cn)
{
    if (cn == NULL)
        return;
    if (!cn->broken && !atomic_load(&cn->stale) && cn->olen == 0 && !atomic_load(&c->closed)) {
        struct baton__shard *s = pool_shard(c, cn->node);
        pthread_mutex_lock(&s->mu);
        if (s->nidle < SHARD_MAX_IDLE) {
            cn->next = s->idle;
            s->idle = cn;
            s->nidle++;
            cn = NULL;
        }
        pthread_mutex_unlock(&s->mu);
    }
    baton__conn_free(cn);
}

int baton__client_random(struct baton_client *c, void *buf, size_t len)
{
    struct baton__shard *s = my_shard(c);
    int rc = BATON_OK;
    if (len > 64)
        return BATON_EINVAL;
    pthread_mutex_lock(&s->mu);
    if (s->rnd_used + len > sizeof s->rnd) {
        rc = baton__random(s->rnd, sizeof s->rnd);
        s->rnd_used = 0;
    }
    if (rc == BATON_OK) {
        memcpy(buf, s->rnd + s->rnd_used, len);
        memset(s->rnd + s->rnd_used, 0, len); /* never handed out twice */
        s->rnd_used += len;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int baton__script_argv(const char *verb, const char *script, int nkeys, const char *const *keys,
                       int nargs, const char *const *args, const char **argv, size_t *lens,
                       char nkeys_buf[BATON__I64_LEN])
{
    int argc = 0;
    if (nkeys < 0 || nargs < 0 || nkeys + nargs + 3 > SCRIPT_MAX_ARGS)
        return -1;
    baton__i64_str(nkeys, nkeys_buf);
    argv[argc++] = verb;
    argv[argc++] = script;
    argv[argc++] = nkeys_buf;
    for (int i = 0; i < nkeys; i++)
        argv[argc++] = keys[i];
    for (int i = 0; i < nargs; i++)
        argv[argc++] = args[i];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    return argc;
}

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
    const char *argv[SCRIPT_MAX_ARGS];
    size_t lens[SCRIPT_MAX_ARGS];
    char nk[BATON__I64_LEN];
    redisReply *r = NULL;
    long long acked = -1;
    int rc;

    *reply = NULL;
    int argc = baton__script_argv("EVALSHA", sha, nkeys, keys, nargs, args, argv, lens, nk);
    if (argc < 0)
        return BATON_EINVAL;
    if ((rc = baton__conn_command(cn, argc, argv, lens, &r, deadline)) != BATON_OK)
        return io_error(c, cn, rc, err, errlen);
    if (baton__is_noscript(r)) {
        /* A restarted or flushed server: EVAL runs the script and loads it. */
        freeReplyObject(r);
        r = NULL;
        argv[0] = "EVAL";
        argv[1] = src;
        lens[0] = 4;
        lens[1] = strlen(src);
        if ((rc = baton__conn_command(cn, argc, argv, lens, &r, deadline)) != BATON_OK)
            return io_error(c, cn, rc, err, errlen);
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
            return io_error(c, cn, rc, err, errlen);
        }
        if (w->type == REDIS_REPLY_INTEGER)
            acked = w->integer;
        freeReplyObject(w);
    }
    if (r->type != REDIS_REPLY_ERROR && wait_replicas > 0 && acked < wait_replicas) {
        freeReplyObject(r);
        return baton__not_durable(c, acked, err, errlen);
    }
    *reply = r; /* an error reply too: the caller looks for redirections */
    return BATON_OK;
}

void baton__client_error(struct baton_client *c, const char *msg)
{
    pthread_mutex_lock(&c->mu);
    baton__set_error(c->errstr, sizeof c->errstr, "%s", msg);
    pthread_mutex_unlock(&c->mu);
}

/* Copies the credentials to use: the options' where given, else the
 * URL's. A user or password of "" in the options means none. */
static int set_credentials(struct baton_client *c, const struct baton_client_opts *o)
{
    const char *from[4][2] = {{o->user, c->url.user},
                              {o->password, c->url.pass},
                              {o->sentinel_user, c->url.sentinel_user},
                              {o->sentinel_password, c->url.sentinel_pass}};
    char **to[4] = {&c->user, &c->pass, &c->sentinel_user, &c->sentinel_pass};
    for (int i = 0; i < 4; i++) {
        const char *v = from[i][0] != NULL ? from[i][0] : from[i][1];
        if (v == NULL || *v == '\0')
            continue;
        if ((*to[i] = strdup(v)) == NULL)
            return BATON_ENOMEM;
    }
    return BATON_OK;
}

static void wipe(char *s)
{
    if (s != NULL) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

int baton_client_new(const char *url, const struct baton_client_opts *opts,
                     struct baton_client **out)
{
    struct baton_client_opts o = {0};
    char err[BATON__ERRLEN] = "";
    struct baton__conn *cn = NULL;
    unsigned char id[BATON__CID_LEN / 2];
    int rc;

    if (out == NULL)
        return BATON_EINVAL;
    *out = NULL;
    if (opts != NULL)
        o = *opts;
    struct baton_client *c = calloc(1, sizeof *c);
    if (c == NULL)
        return BATON_ENOMEM;
    atomic_init(&c->refs, 1); /* the caller's, dropped by baton_client_free() */
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        return BATON_ENOMEM;
    }
    if (pthread_mutex_init(&c->live_mu, NULL) != 0) {
        pthread_mutex_destroy(&c->mu);
        free(c);
        return BATON_ENOMEM;
    }
    for (int i = 0; i < BATON__SHARDS; i++) {
        pthread_mutex_init(&c->shard[i].mu, NULL);
        baton__mux_init(&c->shard[i].mux, NULL);
        c->shard[i].rnd_used = sizeof c->shard[i].rnd; /* empty: filled on first use */
    }
    *out = c;
    if ((c->stats = baton__stats_new()) == NULL)
        return BATON_ENOMEM;
    c->connect_timeout_ms = o.connect_timeout_ms > 0 ? o.connect_timeout_ms : 2000;
    c->command_timeout_ms = o.command_timeout_ms > 0 ? o.command_timeout_ms : 2000;
    c->max_waiters = o.max_waiters_per_key != 0 ? o.max_waiters_per_key : 1000;
    c->prefix = strdup(o.key_prefix != NULL ? o.key_prefix : "baton:");
    if (c->prefix == NULL)
        return BATON_ENOMEM;
    if (strpbrk(c->prefix, "{}") != NULL || strlen(c->prefix) > 128) {
        baton__client_error(c, "key_prefix must not contain braces and is at most 128 bytes");
        return BATON_EINVAL;
    }
    /* The client id is appended by the scripts, from the token. */
    snprintf(c->wake_chan, sizeof c->wake_chan, "%swake:", c->prefix);
    if ((rc = baton__random(id, sizeof id)) != BATON_OK) {
        baton__client_error(c, "getrandom failed");
        return rc;
    }
    baton__hex(id, sizeof id, c->cid);
    for (int i = 0; i < BATON__S_COUNT; i++) {
        const char *src = baton__script_source((enum baton__script_id)i);
        baton__sha1_hex(src, strlen(src), c->sha[i]);
    }
    if (url == NULL) {
        baton__client_error(c, "no URL given");
        return BATON_EINVAL;
    }
    if ((rc = baton__url_parse(url, &c->url, err, sizeof err)) != BATON_OK) {
        baton__client_error(c, err);
        return rc;
    }
    if (o.min_replicas < 0 || o.min_replicas > 16) {
        baton__client_error(c, "min_replicas must be 0..16");
        return BATON_EINVAL;
    }
    c->min_replicas = o.min_replicas;
    if ((rc = set_credentials(c, &o)) != BATON_OK)
        return rc;
    if (c->url.tls && (rc = baton__tls_new(&c->url, &c->tls, err, sizeof err)) != BATON_OK) {
        char msg[BATON__ERRLEN];
        baton__set_error(msg, sizeof msg, "%s: %s", c->url.redacted, err);
        baton__client_error(c, msg);
        return rc;
    }
    if (c->url.master != NULL && (rc = baton__sentinel_watch_start(c)) != BATON_OK) {
        baton__client_error(c, "cannot start the sentinel subscriber thread");
        return rc;
    }
    if (c->url.cluster && (rc = baton__cluster_new(c)) != BATON_OK)
        return rc;
    if (c->url.quorum && (rc = baton__quorum_new(c)) != BATON_OK)
        return rc;
    if (c->url.quorum && c->min_replicas > 0) {
        baton__client_error(c, "min_replicas does not apply to a Redlock quorum (its masters "
                               "are the redundancy): leave it 0");
        return BATON_EINVAL;
    }
    if (o.lazy)
        return BATON_OK;
    if (c->url.quorum) {
        if ((rc = baton__quorum_ping(c, err, sizeof err)) != BATON_OK)
            baton__client_error(c, err);
        return rc;
    }
    if (c->url.cluster &&
        (rc = baton__cluster_refresh(c, baton__now_ns() + c->connect_timeout_ms * 1000000, err,
                                     sizeof err)) != BATON_OK) {
        baton__client_error(c, err);
        return rc;
    }
    if ((rc = baton__client_open(c, &cn, err, sizeof err)) != BATON_OK) {
        baton__client_error(c, err);
        return rc;
    }
    baton__client_put(c, cn);
    return BATON_OK;
}

void baton__client_ref(struct baton_client *c)
{
    atomic_fetch_add(&c->refs, 1);
}

/* The last reference: what baton_client_free() left for the handles. */
void baton__client_unref(struct baton_client *c)
{
    if (atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    for (int i = 0; i < BATON__SHARDS; i++) {
        baton__mux_clear(&c->shard[i].mux);
        pthread_mutex_destroy(&c->shard[i].mu);
    }
    baton__loop_free(c);
    baton__cluster_free(c);
    baton__quorum_free(c);
    baton__url_clear(&c->url);
    baton__tls_free(c->tls);
    baton__stats_free(c->stats);
    free(c->prefix);
    pthread_mutex_destroy(&c->live_mu);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
void baton__shards_close(struct baton__shard *shards, int n)
{
    for (int i = 0; i < n; i++) {
        struct baton__shard *s = &shards[i];
        pthread_mutex_lock(&s->mu);
        struct baton__conn *idle = s->idle;
        s->idle = NULL;
        s->nidle = 0;
        pthread_mutex_unlock(&s->mu);
        while (idle != NULL) {
            struct baton__conn *cn = idle;
            idle = cn->next;
            baton__conn_free(cn);
        }
    }
}


void baton_client_free(struct baton_client *c)
{
    if (c == NULL)
        return;
    /* Closed first: from here no thread starts and no connection opens. */
    pthread_mutex_lock(&c->mu);
    atomic_store(&c->closed, true);
    pthread_mutex_unlock(&c->mu);
    baton__sentinel_watch_stop(c);
    baton__loop_stop(c); /* fails what is in flight: the threads below get their answers */
    baton__waiters_stop(c);
    baton__renew_stop(c);
    baton__shards_close(c->shard, BATON__SHARDS);
    baton__cluster_close(c);
    baton__quorum_close(c);
    wipe(c->user);
    wipe(c->pass);
    wipe(c->sentinel_user);
    wipe(c->sentinel_pass);
    c->user = c->pass = c->sentinel_user = c->sentinel_pass = NULL;
    baton__client_unref(c);
}

const char *baton_client_errstr(const struct baton_client *c)
{
    return c != NULL ? c->errstr : "";
}

const char *baton_client_url(const struct baton_client *c)
{
    return (c != NULL && c->url.redacted != NULL) ? c->url.redacted : "";
}

bool baton_client_tls_insecure(const struct baton_client *c)
{
    return c != NULL && c->url.tls && !c->url.tls_verify;
}
