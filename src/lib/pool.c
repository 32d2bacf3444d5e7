/* pool.c -- where a client's connections go: connecting to the right
 * server (the URL's, through the sentinels, or a cluster or quorum node;
 * AUTH, SELECT, the run id), the pool of idle connections shared by all
 * threads (sharded by thread), and the client's references. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology_int.h"

#define SHARD_MAX_IDLE 16

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

void baton__client_error(struct baton_client *c, const char *msg)
{
    pthread_mutex_lock(&c->mu);
    baton__set_error(c->errstr, sizeof c->errstr, "%s", msg);
    pthread_mutex_unlock(&c->mu);
}

void baton__client_ref(struct baton_client *c)
{
    atomic_fetch_add(&c->refs, 1);
}

/* The last reference frees the client, by what baton_client_new() set
 * (client.c: everything the layers above made). */
void baton__client_unref(struct baton_client *c)
{
    if (atomic_fetch_sub(&c->refs, 1) == 1)
        c->destroy(c);
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
