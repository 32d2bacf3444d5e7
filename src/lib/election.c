/* election.c -- leader election primitives on the lock core.
 *
 * The leadership of name N is a lock at prefix{N}:leader whose value is
 * "<token>:<identity>", so that anyone can read who leads; its fencing
 * counter (prefix{N}:leader:fence) is the term. Resigning publishes
 * "resigned" on prefix{N}:events, where followers (and the leader, for
 * step-down requests "step-down <term>") are subscribed. Each primitive is
 * one bounded Redis call; the caller's event loop decides when to call it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton_int.h"

struct baton_election {
    struct baton_client *c;
    char *name;
    char *base;   /* prefix{name}:leader */
    char *events; /* prefix{name}:events */
    char *server; /* prefix{name}:leader:server, the run id that granted the term */
    char *identity;
    int64_t ttl_ms;
    struct baton_lock *lk; /* our leadership, while we may have it */
    _Atomic bool leading;
    _Atomic uint64_t term;
    _Atomic bool server_changed; /* of the current term: see baton.h */
    _Atomic int64_t deadline_ns;
    struct baton__conn *sub; /* the subscription, or NULL */
    bool released_stale;     /* the last campaign released a lease of an earlier term */
    char errstr[BATON__ERRLEN];
};

int baton_election_new(struct baton_client *c, const char *name,
                       const struct baton_election_opts *opts, struct baton_election **out)
{
    if (out == NULL)
        return BATON_EINVAL;
    *out = NULL;
    if (c == NULL || name == NULL || *name == '\0' || strlen(name) > 200 ||
        strpbrk(name, "{}") != NULL)
        return BATON_EINVAL;
    const char *identity = (opts != NULL && opts->identity != NULL) ? opts->identity : "";
    int64_t ttl = (opts != NULL && opts->ttl_ms > 0) ? opts->ttl_ms : 10000;
    if (strlen(identity) > 200 || ttl < 10)
        return BATON_EINVAL;

    struct baton_election *e = calloc(1, sizeof *e);
    if (e == NULL)
        return BATON_ENOMEM;
    e->c = c;
    baton__client_ref(c);
    e->ttl_ms = ttl;
    if ((e->name = strdup(name)) == NULL || (e->identity = strdup(identity)) == NULL ||
        asprintf(&e->base, "%s{%s}:leader", c->prefix, name) < 0 ||
        asprintf(&e->events, "%s{%s}:events", c->prefix, name) < 0 ||
        asprintf(&e->server, "%s{%s}:leader:server", c->prefix, name) < 0) {
        baton_election_free(e);
        return BATON_ENOMEM;
    }
    *out = e;
    return BATON_OK;
}

static void drop_lock(struct baton_election *e)
{
    atomic_store(&e->leading, false);
    baton_lock_free(e->lk);
    e->lk = NULL;
}

void baton_election_free(struct baton_election *e)
{
    if (e == NULL)
        return;
    drop_lock(e);
    baton__conn_free(e->sub);
    free(e->name);
    free(e->identity);
    free(e->base);
    free(e->events);
    free(e->server);
    struct baton_client *c = e->c;
    free(e);
    baton__client_unref(c); /* may free a client freed before e */
}

bool baton_election_is_leader(const struct baton_election *e)
{
    return e != NULL && atomic_load(&e->leading) && baton__now_ns() < atomic_load(&e->deadline_ns);
}

uint64_t baton_election_term(const struct baton_election *e)
{
    return e != NULL ? atomic_load(&e->term) : 0;
}

int64_t baton_election_deadline_ns(const struct baton_election *e)
{
    return e != NULL && atomic_load(&e->leading) ? atomic_load(&e->deadline_ns) : 0;
}

const char *baton_election_errstr(const struct baton_election *e)
{
    return e != NULL ? e->errstr : "";
}

const char *baton_election_key(const struct baton_election *e) { return e != NULL ? e->base : ""; }

const char *baton_election_token(const struct baton_election *e)
{
    return (e != NULL && e->lk != NULL && atomic_load(&e->leading)) ? e->lk->token : NULL;
}

/* Fills info from a lock value "<token>:<identity>". */
static void describe(struct baton_leader_info *info, const char *value, int64_t ttl, uint64_t term)
{
    memset(info, 0, sizeof *info);
    info->has_leader = strlen(value) > BATON__TOKEN_LEN;
    if (info->has_leader && value[BATON__TOKEN_LEN] == ':') {
        const char *id = value + BATON__TOKEN_LEN + 1;
        size_t n = strnlen(id, sizeof info->identity - 1);
        memcpy(info->identity, id, n); /* truncated; memset left the NUL */
    }
    info->ttl_ms = ttl;
    info->term = term;
}

bool baton_election_server_changed(const struct baton_election *e)
{
    return e != NULL && atomic_load(&e->server_changed);
}

/* One run of the campaign script. Returns 0 (granted: fence, deadline and
 * server_changed set), BATON_ETAKEN with *h, or an error. */
static int campaign_once(struct baton_election *e, struct baton_lock *lk, struct baton__holder *h)
{
    struct baton_client *c = e->c;
    char ttl[BATON__I64_LEN];
    const char *keys[3] = {lk->rkeys[0], lk->rkeys[1], e->server};
    const char *args[2] = {lk->token, baton__i64_str(lk->ttl_ms, ttl)};
    struct baton__call k = {.id = BATON__S_CAMPAIGN,
                            .nkeys = 3,
                            .keys = keys,
                            .nargs = 2,
                            .args = args,
                            .deadline_ns = baton__client_grant_deadline(c, lk->ttl_ms),
                            .durable = true,
                            .err = lk->errstr,
                            .errlen = sizeof lk->errstr};
    int rc = baton__script_call(c, &k);
    redisReply *r = k.reply;
    if (rc != BATON_OK && rc != BATON_ENOTDURABLE)
        return rc;
    bool granted = r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                   r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer > 0 &&
                   r->element[1]->type == REDIS_REPLY_INTEGER;
    if (granted && rc == BATON_ENOTDURABLE) {
        (void)baton_lock_release(lk); /* granted on the master only: not ours to use */
    } else if (granted) {
        atomic_store(&lk->fence, (uint64_t)r->element[0]->integer);
        atomic_store(&e->server_changed, r->element[1]->integer != 0);
        baton__lock_granted_by(lk, k.runid);
        baton__lock_confirm(lk, k.sent_ns, lk->ttl_ms);
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
               r->element[0]->type == REDIS_REPLY_INTEGER &&
               r->element[1]->type == REDIS_REPLY_STRING &&
               r->element[2]->type == REDIS_REPLY_STRING) {
        h->pttl_ms = r->element[0]->integer;
        snprintf(h->value, sizeof h->value, "%s", r->element[1]->str);
        h->fence = strtoull(r->element[2]->str, NULL, 10);
        rc = BATON_ETAKEN;
    } else {
        baton__set_error(lk->errstr, sizeof lk->errstr,
                         "%s: unexpected reply to the campaign script", c->url.redacted);
        rc = BATON_EPROTO;
    }
    freeReplyObject(r);
    return rc;
}

int baton_election_campaign(struct baton_election *e, struct baton_leader_info *holder)
{
    struct baton_lock_opts o;
    struct baton_lock *lk = NULL;
    struct baton__holder h = {.pttl_ms = -1};
    int rc;

    if (e == NULL)
        return BATON_EINVAL;
    if (holder != NULL)
        describe(holder, "", -1, 0);
    /* Leadership comes only from an answer of Redis to this campaign: a
     * lease we may still hold from an earlier term (abandoned, or renewed
     * without our knowing: a renewal that timed out may have been applied
     * late) is first given up by its token, waking the followers, so that
     * the group does not wait it out; then we campaign for a new term. */
    e->released_stale = false;
    if (e->lk != NULL) {
        atomic_store(&e->leading, false);
        rc = baton_lock_release(e->lk);
        if (rc != BATON_OK && rc != BATON_ELOST) {
            baton__set_error(e->errstr, sizeof e->errstr, "%s", baton_lock_errstr(e->lk));
            return rc; /* not reachable: keep the token for the next campaign */
        }
        e->released_stale = rc == BATON_OK;
        drop_lock(e);
    }
    if ((rc = baton__lock_opts(&(struct baton_lock_opts){.ttl_ms = e->ttl_ms}, &o)) != BATON_OK)
        return rc;
    if ((rc = baton__lock_new(e->c, e->base, e->name, e->identity, &o, &lk)) != BATON_OK)
        return rc;
    lk->release_chan = e->events;
    rc = campaign_once(e, lk, &h);
    if (rc == BATON_OK) {
        e->lk = lk;
        atomic_store(&e->term, baton_lock_fence(lk));
        atomic_store(&e->deadline_ns, baton_lock_deadline_ns(lk));
        atomic_store(&e->leading, true);
        e->errstr[0] = '\0';
        return BATON_OK;
    }
    if (rc == BATON_ETAKEN && holder != NULL)
        describe(holder, h.value, h.pttl_ms, h.fence);
    if (rc != BATON_ETAKEN)
        baton__set_error(e->errstr, sizeof e->errstr, "%s", lk->errstr);
    baton_lock_free(lk);
    return rc;
}

bool baton_election_released_stale(const struct baton_election *e)
{
    return e != NULL && e->released_stale;
}

void baton_election_abandon(struct baton_election *e)
{
    if (e != NULL)
        atomic_store(&e->leading, false); /* the token stays for the next campaign */
}

int baton_election_renew(struct baton_election *e)
{
    if (e == NULL)
        return BATON_EINVAL;
    if (e->lk == NULL || !atomic_load(&e->leading))
        return BATON_ELOST;
    int rc = baton_lock_extend(e->lk, 0);
    if (rc == BATON_OK) {
        atomic_store(&e->deadline_ns, baton_lock_deadline_ns(e->lk));
        return BATON_OK;
    }
    baton__set_error(e->errstr, sizeof e->errstr, "%s", baton_lock_errstr(e->lk));
    if (rc == BATON_ELOST)
        atomic_store(&e->leading, false);
    return rc;
}

int baton_election_resign(struct baton_election *e)
{
    if (e == NULL)
        return BATON_EINVAL;
    if (e->lk == NULL)
        return BATON_OK;
    atomic_store(&e->leading, false);
    int rc = baton_lock_release(e->lk);
    if (rc != BATON_OK)
        baton__set_error(e->errstr, sizeof e->errstr, "%s", baton_lock_errstr(e->lk));
    drop_lock(e);
    return rc;
}

int baton_election_watch(struct baton_election *e)
{
    redisReply *r = NULL;
    int rc;
    if (e == NULL)
        return BATON_EINVAL;
    baton__conn_free(e->sub);
    e->sub = NULL;
    struct baton__conn *cn = NULL;
    if ((rc = baton__client_open(e->c, &cn, e->errstr, sizeof e->errstr)) != BATON_OK)
        return rc;
    const char *argv[2] = {"SUBSCRIBE", e->events};
    size_t lens[2] = {9, strlen(e->events)};
    rc = baton__conn_command(cn, 2, argv, lens, &r, baton__client_deadline(e->c));
    if (rc != BATON_OK) {
        baton__set_error(e->errstr, sizeof e->errstr, "%s: %s", e->c->url.redacted, cn->err);
        baton__conn_free(cn);
        return rc;
    }
    bool ok = r->type == REDIS_REPLY_ARRAY && r->elements == 3;
    freeReplyObject(r);
    if (!ok) {
        baton__set_error(e->errstr, sizeof e->errstr, "%s: unexpected reply to SUBSCRIBE",
                         e->c->url.redacted);
        baton__conn_free(cn);
        return BATON_EPROTO;
    }
    e->sub = cn;
    return BATON_OK;
}

int baton_election_watch_fd(const struct baton_election *e)
{
    return (e != NULL && e->sub != NULL) ? e->sub->fd : -1;
}

static unsigned parse_event(const struct baton_election *e, const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || strcmp(r->element[0]->str, "message") != 0 ||
        r->element[2]->type != REDIS_REPLY_STRING)
        return 0;
    const char *msg = r->element[2]->str;
    if (strcmp(msg, "resigned") == 0)
        return BATON_EVENT_RESIGNED;
    if (strncmp(msg, "step-down ", 10) == 0) {
        char want[32];
        snprintf(want, sizeof want, "%" PRIu64, atomic_load(&e->term));
        if (strcmp(msg + 10, want) == 0 && atomic_load(&e->leading))
            return BATON_EVENT_STEP_DOWN;
    }
    return 0;
}

int baton_election_watch_read(struct baton_election *e, unsigned *events)
{
    return baton_election_watch_read_msgs(e, events, NULL, NULL);
}

int baton_election_watch_read_msgs(struct baton_election *e, unsigned *events,
                                   baton_election_msg_fn on_msg, void *arg)
{
    redisReply *r = NULL;
    int n;
    if (e == NULL || events == NULL)
        return BATON_EINVAL;
    if (e->sub == NULL)
        return BATON_EIO;
    while ((n = baton__conn_poll_reply(e->sub, &r)) == 1) {
        unsigned ev = parse_event(e, r);
        *events |= ev;
        if (ev == 0 && on_msg != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
            r->element[0]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[0]->str, "message") == 0 &&
            r->element[2]->type == REDIS_REPLY_STRING)
            on_msg(arg, r->element[2]->str, r->element[2]->len);
        freeReplyObject(r);
    }
    if (n < 0) {
        /* The server went away or was replaced: what followers know of the
         * lease came from it. */
        *events |= BATON_EVENT_SWITCHED;
        baton__set_error(e->errstr, sizeof e->errstr, "%s: %s", e->c->url.redacted, e->sub->err);
        baton__conn_free(e->sub);
        e->sub = NULL;
        return n;
    }
    return BATON_OK;
}

int baton_election_leader(struct baton_client *c, const char *name, struct baton_leader_info *info)
{
    static const char script[] =
        "local v = redis.call('get', KEYS[1])\n"
        "return {v or '', redis.call('pttl', KEYS[1]), redis.call('get', KEYS[2]) or '0'}\n";
    char *keys[2] = {NULL, NULL};
    struct baton_reply *r = NULL;
    int rc = BATON_ENOMEM;

    if (c == NULL || name == NULL || info == NULL)
        return BATON_EINVAL;
    memset(info, 0, sizeof *info);
    if (asprintf(&keys[0], "%s{%s}:leader", c->prefix, name) < 0 ||
        asprintf(&keys[1], "%s{%s}:leader:fence", c->prefix, name) < 0)
        goto out;
    rc = baton__client_eval(c, script, 2, (const char *const *)keys, 0, NULL, false, &r);
    if (rc != BATON_OK)
        goto out;
    if (r->type != BATON_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != BATON_REPLY_STRING || r->element[1]->type != BATON_REPLY_INTEGER ||
        r->element[2]->type != BATON_REPLY_STRING) {
        rc = BATON_EPROTO;
        goto out;
    }
    describe(info, r->element[0]->str, r->element[1]->integer,
             strtoull(r->element[2]->str, NULL, 10));
out:
    baton_reply_free(r);
    free(keys[0]);
    free(keys[1]);
    return rc;
}

int baton_election_request_step_down(struct baton_client *c, const char *name, uint64_t term,
                                     int *receivers)
{
    char *chan = NULL, msg[40];
    struct baton_reply *r = NULL;
    if (c == NULL || name == NULL)
        return BATON_EINVAL;
    if (asprintf(&chan, "%s{%s}:events", c->prefix, name) < 0)
        return BATON_ENOMEM;
    snprintf(msg, sizeof msg, "step-down %" PRIu64, term);
    const char *argv[3] = {"PUBLISH", chan, msg};
    int rc = baton_client_command(c, 3, argv, NULL, &r);
    if (rc == BATON_OK && receivers != NULL)
        *receivers = r->type == BATON_REPLY_INTEGER ? (int)r->integer : 0;
    baton_reply_free(r);
    free(chan);
    return rc;
}
