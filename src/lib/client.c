/* client.c -- the client: URL and options, a pool of connections shared by
 * all threads, and script calls by SHA with the NOSCRIPT fallback. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton_int.h"

#define SHARD_MAX_IDLE  16
#define SCRIPT_MAX_ARGS 64 /* the multi-lock script: 3 per key + 4 */

int64_t baton__client_deadline(const struct baton_client *c)
{
    return baton__now_ns() + c->command_timeout_ms * 1000000;
}

int baton__client_open(struct baton_client *c, struct baton__conn **out, char *err, size_t errlen)
{
    int64_t deadline = baton__now_ns() + c->connect_timeout_ms * 1000000;
    return baton__conn_open(&c->url, deadline, out, err, errlen);
}

static struct baton__shard *my_shard(struct baton_client *c)
{
    uint64_t h = (uint64_t)pthread_self();
    h ^= h >> 17;
    h *= 0x9e3779b97f4a7c15u;
    return &c->shard[(h >> 32) % BATON__SHARDS];
}

int baton__client_get(struct baton_client *c, int64_t deadline_ns, struct baton__conn **out,
                      char *err, size_t errlen)
{
    struct baton__shard *s = my_shard(c);
    pthread_mutex_lock(&s->mu);
    struct baton__conn *cn = s->idle;
    if (cn != NULL) {
        s->idle = cn->next;
        s->nidle--;
        cn->next = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    if (cn != NULL) {
        *out = cn;
        return BATON_OK;
    }
    /* A new connection counts against the operation's deadline: connecting
     * and the command together never take longer than command_timeout. */
    int64_t connect_by = baton__now_ns() + c->connect_timeout_ms * 1000000;
    return baton__conn_open(&c->url, connect_by < deadline_ns ? connect_by : deadline_ns, out, err,
                            errlen);
}

void baton__client_put(struct baton_client *c, struct baton__conn *cn)
{
    if (cn == NULL)
        return;
    if (!cn->broken && cn->olen == 0) {
        struct baton__shard *s = my_shard(c);
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

static int build_argv(const char *verb, const char *script, int nkeys, const char *const *keys,
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

/* Turns an error reply into BATON_EREDIS with its text in err (and frees
 * it); else hands r to *reply. */
static int take_reply(struct baton_client *c, redisReply *r, redisReply **reply, char *err,
                      size_t errlen)
{
    if (r->type == REDIS_REPLY_ERROR) {
        baton__set_error(err, errlen, "%s: redis error: %.200s", c->url.redacted, r->str);
        freeReplyObject(r);
        return BATON_EREDIS;
    }
    *reply = r;
    return BATON_OK;
}

static bool is_noscript(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

int baton__eval(struct baton_client *c, struct baton__conn *cn, const char *sha, const char *src,
                int nkeys, const char *const *keys, int nargs, const char *const *args,
                redisReply **reply, int64_t deadline, int64_t *sent_ns, char *err, size_t errlen)
{
    const char *argv[SCRIPT_MAX_ARGS];
    size_t lens[SCRIPT_MAX_ARGS];
    char nk[BATON__I64_LEN];
    redisReply *r = NULL;
    int rc;

    *reply = NULL;
    int argc = build_argv("EVALSHA", sha, nkeys, keys, nargs, args, argv, lens, nk);
    if (argc < 0)
        return BATON_EINVAL;
    if ((rc = baton__conn_append(cn, argc, argv, lens)) != BATON_OK)
        return rc;
    if (sent_ns != NULL)
        *sent_ns = baton__now_ns();
    if ((rc = baton__conn_flush(cn, deadline)) != BATON_OK ||
        (rc = baton__conn_read(cn, &r, deadline)) != BATON_OK)
        return io_error(c, cn, rc, err, errlen);
    if (is_noscript(r)) {
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
    return take_reply(c, r, reply, err, errlen);
}

int baton__script_call(struct baton_client *c, enum baton__script_id id, int nkeys,
                       const char **keys, int nargs, const char **args, redisReply **reply,
                       int64_t deadline, int64_t *sent_ns, char *err, size_t errlen)
{
    const char *argv[SCRIPT_MAX_ARGS];
    size_t lens[SCRIPT_MAX_ARGS];
    char nk[BATON__I64_LEN];
    redisReply *r = NULL;
    struct baton__mux *m = &my_shard(c)->mux;
    int rc;

    *reply = NULL;
    int argc = build_argv("EVALSHA", c->sha[id], nkeys, keys, nargs, args, argv, lens, nk);
    if (argc < 0)
        return BATON_EINVAL;
    if ((rc = baton__mux_call(c, m, argc, argv, lens, &r, deadline, sent_ns, err, errlen)) !=
        BATON_OK)
        return rc;
    if (is_noscript(r)) {
        /* A restarted or flushed server: EVAL runs the script and loads it.
         * The send time stays the first one's: the earlier, the safer. */
        freeReplyObject(r);
        r = NULL;
        argv[0] = "EVAL";
        argv[1] = baton__script_source(id);
        lens[0] = 4;
        lens[1] = strlen(argv[1]);
        if ((rc = baton__mux_call(c, m, argc, argv, lens, &r, deadline, NULL, err, errlen)) !=
            BATON_OK)
            return rc;
    }
    return take_reply(c, r, reply, err, errlen);
}

void baton__client_error(struct baton_client *c, const char *msg)
{
    pthread_mutex_lock(&c->mu);
    baton__set_error(c->errstr, sizeof c->errstr, "%s", msg);
    pthread_mutex_unlock(&c->mu);
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
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        return BATON_ENOMEM;
    }
    for (int i = 0; i < BATON__SHARDS; i++) {
        pthread_mutex_init(&c->shard[i].mu, NULL);
        baton__mux_init(&c->shard[i].mux);
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
    if (o.lazy)
        return BATON_OK;
    if ((rc = baton__client_open(c, &cn, err, sizeof err)) != BATON_OK) {
        baton__client_error(c, err);
        return rc;
    }
    baton__client_put(c, cn);
    return BATON_OK;
}

void baton_client_free(struct baton_client *c)
{
    if (c == NULL)
        return;
    baton__waiters_stop(c);
    baton__renew_stop(c);
    for (int i = 0; i < BATON__SHARDS; i++) {
        struct baton__shard *s = &c->shard[i];
        while (s->idle != NULL) {
            struct baton__conn *cn = s->idle;
            s->idle = cn->next;
            baton__conn_free(cn);
        }
        baton__mux_clear(&s->mux);
        pthread_mutex_destroy(&s->mu);
    }
    baton__url_clear(&c->url);
    baton__stats_free(c->stats);
    free(c->prefix);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

const char *baton_client_errstr(const struct baton_client *c)
{
    return c != NULL ? c->errstr : "";
}

const char *baton_client_url(const struct baton_client *c)
{
    return (c != NULL && c->url.redacted != NULL) ? c->url.redacted : "";
}
