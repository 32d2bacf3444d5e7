/* client.c -- the client, the top of the library: its URL, options and
 * credentials, and making and freeing it, which wires the layers below
 * together (the pool, Sentinel, Cluster and quorum, the loop, waiters,
 * renewals and stats). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_int.h"

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

/* The last reference (baton__client_unref): what baton_client_free() left
 * for the handles. */
static void destroy(struct baton_client *c)
{
    baton__mux_free_all(c);
    for (int i = 0; i < BATON__SHARDS; i++)
        pthread_mutex_destroy(&c->shard[i].mu);
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
    c->destroy = destroy;
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
