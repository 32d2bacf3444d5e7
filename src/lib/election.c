/* election.c -- leader election primitives on the lock core.
 *
 * The leadership of name N is a lock at prefix{N}:leader whose value is
 * "<token>:<identity>", so that anyone can read who leads; its fencing
 * counter (prefix{N}:leader:fence) is the term. Followers (and the
 * leader, for step-down requests "step-down <term>") are subscribed to
 * prefix{N}:events, and each with an identity also to
 * prefix{N}:events:<identity>. Resigning wakes successors with "resigned":
 * at most two named followers on their own channels when any listens, so
 * that a fleet hands over with one or two campaigns and no herd; else
 * every follower on prefix{N}:events (scripts.c). Each primitive is one
 * bounded Redis call; the caller's event loop decides when to call it.
 *
 * Over a Redlock quorum (quorum.c) the leadership is a quorum lock: granted
 * by a majority of the masters, valid from the send time, its term the
 * quorum's fence (strictly increasing across terms: any two grants'
 * majorities share a master, which grants only above its counter). A
 * renewal holds when a majority extended it within its validity, and takes
 * the key again on masters where it is free and no later term was granted
 * (the lease heals as restarted masters come back); a resignation releases
 * it on every master, publishing "resigned" on each. Followers subscribe on
 * every master they can reach (one connection each, behind one epoll
 * descriptor), so a resignation reaches them through any master that both
 * the leader and they reach; the lease's expiry (the time a majority of
 * the holder's keys keep it) and the caller's poll are the safety nets. A
 * split vote (no candidate with a majority) reports no leader and a short
 * random wait, so that the candidates do not collide again at once. */
#include <errno.h>
#include <inttypes.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton_election.h"
#include "lock_int.h"

struct baton_election {
    struct baton_client *c;
    char *name;
    char *base;   /* prefix{name}:leader */
    char *events; /* prefix{name}:events */
    char *succ;   /* events:identity, where a resignation may name us; NULL: no identity */
    char *extra;  /* the caller's channel heard too (baton_election_listen), or NULL */
    char *server; /* prefix{name}:leader:server, the run id that granted the term */
    char *identity;
    int64_t ttl_ms;
    struct baton_lock *lk; /* our leadership, while we may have it */
    _Atomic bool leading;
    _Atomic uint64_t term;
    _Atomic bool server_changed; /* of the current term: see baton.h */
    _Atomic int64_t deadline_ns;
    struct baton__conn *sub; /* the subscription, or NULL */
    /* Over a quorum: a subscription per master (NULL: none), behind epfd */
    struct baton__conn *qsub[BATON__QUORUM_MAX];
    int epfd;
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
    e->epfd = -1;
    baton__client_ref(c);
    e->ttl_ms = ttl;
    if ((e->name = strdup(name)) == NULL || (e->identity = strdup(identity)) == NULL ||
        asprintf(&e->base, "%s{%s}:leader", c->prefix, name) < 0 ||
        asprintf(&e->events, "%s{%s}:events", c->prefix, name) < 0 ||
        asprintf(&e->server, "%s{%s}:leader:server", c->prefix, name) < 0 ||
        (*identity != '\0' && asprintf(&e->succ, "%s:%s", e->events, identity) < 0)) {
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
    for (int i = 0; i < BATON__QUORUM_MAX; i++)
        baton__conn_free(e->qsub[i]);
    if (e->epfd >= 0)
        close(e->epfd);
    free(e->name);
    free(e->identity);
    free(e->base);
    free(e->events);
    free(e->succ);
    free(e->extra);
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
    lk->release_self = e->c->quorum == NULL ? e->succ : NULL; /* a quorum wakes all */
    if (e->c->quorum != NULL) {
        /* The quorum's grant; its renewals heal the lease (quorum.c). A
         * quorum has no promoted replicas: catch-up is decided by the
         * majority reads of the caller's data. */
        lk->extend_script = BATON__S_QUORUM_EXTEND;
        rc = baton__quorum_try(lk, &h);
        atomic_store(&e->server_changed, false);
    } else {
        rc = campaign_once(e, lk, &h);
    }
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

/* Over a quorum: subscribes on every master not subscribed yet (skipping
 * those left alone after a failure), each bounded by node_timeout. Returns
 * 0 when at least one is subscribed. */
static int quorum_watch(struct baton_election *e)
{
    struct baton_client *c = e->c;
    int n = baton__quorum_masters(c), subscribed = 0;
    char why[BATON__ERRLEN];
    if (e->epfd < 0 && (e->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        baton__set_error(e->errstr, sizeof e->errstr, "%s: epoll_create1: %s", c->url.redacted,
                         strerror(errno));
        return BATON_EIO;
    }
    e->errstr[0] = '\0';
    int64_t all_by = baton__client_deadline(c); /* the whole call, as any other */
    for (int i = 0; i < n; i++) {
        struct baton__node *node = baton__quorum_node(c, i);
        struct baton__conn *cn = NULL;
        redisReply *r = NULL;
        if (e->qsub[i] != NULL)
            continue;
        if (baton__quorum_down(c, i))
            continue;
        int64_t deadline = baton__now_ns() + baton__quorum_node_timeout_ms(c) * 1000000;
        if (deadline > all_by)
            deadline = all_by;
        if (deadline <= baton__now_ns())
            break;
        int rc = baton__client_connect(c, node, deadline, &cn, why, sizeof why);
        if (rc == BATON_OK) {
            /* The other confirmation (extra's) is read later, and passed over. */
            const char *argv[3] = {"SUBSCRIBE", e->events, e->extra};
            size_t lens[3] = {9, strlen(e->events), e->extra != NULL ? strlen(e->extra) : 0};
            rc = baton__conn_command(cn, e->extra != NULL ? 3 : 2, argv, lens, &r, deadline);
            if (rc != BATON_OK)
                baton__set_error(why, sizeof why, "%s: node %s: %s", c->url.redacted, node->addr,
                                 cn->err);
            else if (r->type != REDIS_REPLY_ARRAY || r->elements != 3)
                rc = BATON_EPROTO;
            freeReplyObject(r);
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if (rc == BATON_OK && epoll_ctl(e->epfd, EPOLL_CTL_ADD, cn->fd, &ev) != 0)
            rc = BATON_EIO;
        if (rc != BATON_OK) {
            if (rc == BATON_EIO)
                baton__quorum_failed(c, i);
            baton__set_error(e->errstr, sizeof e->errstr, "%s", why);
            baton__conn_free(cn);
            continue;
        }
        e->qsub[i] = cn;
    }
    for (int i = 0; i < n; i++)
        subscribed += e->qsub[i] != NULL;
    return subscribed > 0 ? BATON_OK : BATON_EIO;
}

/* One SUBSCRIBE of the events channel, ours (succ) and the caller's
 * (extra) on cn: no message can come before the first confirmation, which
 * is read here; the others are read later with the messages, and passed
 * over. Returns 0, or an error described in e->errstr. */
static int subscribe(struct baton_election *e, struct baton__conn *cn)
{
    const char *argv[4] = {"SUBSCRIBE", e->events};
    size_t lens[4] = {9, strlen(e->events)};
    int argc = 2;
    redisReply *r = NULL;
    if (e->succ != NULL) {
        lens[argc] = strlen(e->succ);
        argv[argc++] = e->succ;
    }
    if (e->extra != NULL) {
        lens[argc] = strlen(e->extra);
        argv[argc++] = e->extra;
    }
    int rc = baton__conn_command(cn, argc, argv, lens, &r, baton__client_deadline(e->c));
    if (rc != BATON_OK) {
        baton__set_error(e->errstr, sizeof e->errstr, "%s: %s", e->c->url.redacted, cn->err);
        return rc;
    }
    bool ok = r->type == REDIS_REPLY_ARRAY && r->elements == 3;
    freeReplyObject(r);
    if (!ok) {
        baton__set_error(e->errstr, sizeof e->errstr, "%s: unexpected reply to SUBSCRIBE",
                         e->c->url.redacted);
        return BATON_EPROTO;
    }
    return BATON_OK;
}

int baton_election_watch(struct baton_election *e)
{
    int rc;
    if (e == NULL)
        return BATON_EINVAL;
    if (e->c->quorum != NULL)
        return quorum_watch(e);
    baton__conn_free(e->sub);
    e->sub = NULL;
    struct baton__conn *cn = NULL;
    if ((rc = baton__client_open(e->c, &cn, e->errstr, sizeof e->errstr)) != BATON_OK)
        return rc;
    if ((rc = subscribe(e, cn)) != BATON_OK) {
        baton__conn_free(cn);
        return rc;
    }
    e->sub = cn;
    return BATON_OK;
}

/* Sends (UN)SUBSCRIBE chan on cn without waiting: its confirmation comes
 * with the messages, and is passed over. */
static int send_sub(struct baton_election *e, struct baton__conn *cn, bool on, const char *chan)
{
    const char *argv[2] = {on ? "SUBSCRIBE" : "UNSUBSCRIBE", chan};
    size_t lens[2] = {on ? 9 : 11, strlen(chan)};
    int rc = baton__conn_append(cn, 2, argv, lens);
    return rc == BATON_OK ? baton__conn_flush(cn, baton__client_deadline(e->c)) : rc;
}

int baton_election_listen(struct baton_election *e, const char *channel)
{
    if (e == NULL || (channel != NULL && *channel == '\0'))
        return BATON_EINVAL;
    if (channel == NULL ? e->extra == NULL : e->extra != NULL && strcmp(channel, e->extra) == 0)
        return BATON_OK;
    char *want = NULL;
    if (channel != NULL && (want = strdup(channel)) == NULL)
        return BATON_ENOMEM;
    char *old = e->extra;
    e->extra = want;
    int rc = BATON_OK;
    for (int i = -1; i < BATON__QUORUM_MAX; i++) {
        struct baton__conn *cn = i < 0 ? e->sub : e->qsub[i];
        if (cn == NULL)
            continue;
        int r = old != NULL ? send_sub(e, cn, false, old) : BATON_OK;
        if (r == BATON_OK && want != NULL)
            r = send_sub(e, cn, true, want);
        if (r != BATON_OK) {
            /* The connection is broken: the next read says so, and the
             * next watch subscribes again, to what is wanted then. */
            baton__set_error(e->errstr, sizeof e->errstr, "%s: %s", e->c->url.redacted, cn->err);
            rc = r;
        }
    }
    free(old);
    return rc;
}

int baton_election_watch_fd(const struct baton_election *e)
{
    if (e != NULL && e->c->quorum != NULL) {
        for (int i = 0; i < BATON__QUORUM_MAX; i++)
            if (e->qsub[i] != NULL)
                return e->epfd;
        return -1;
    }
    return (e != NULL && e->sub != NULL) ? e->sub->fd : -1;
}

bool baton_election_watch_complete(const struct baton_election *e)
{
    if (e == NULL)
        return false;
    if (e->c->quorum == NULL)
        return e->sub != NULL;
    for (int i = 0; i < baton__quorum_masters(e->c); i++)
        if (e->qsub[i] == NULL)
            return false;
    return true;
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

/* Reads what has arrived on cn. Returns 0, or the code of a broken
 * subscription (cn is then the caller's to free). */
static int read_sub(struct baton_election *e, struct baton__conn *cn, unsigned *events,
                    baton_election_msg_fn on_msg, void *arg)
{
    redisReply *r = NULL;
    int n;
    while ((n = baton__conn_poll_reply(cn, &r)) == 1) {
        unsigned ev = parse_event(e, r);
        *events |= ev;
        if (ev == 0 && on_msg != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
            r->element[0]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[0]->str, "message") == 0 &&
            r->element[2]->type == REDIS_REPLY_STRING)
            on_msg(arg, r->element[2]->str, r->element[2]->len);
        freeReplyObject(r);
    }
    return n < 0 ? n : BATON_OK;
}

int baton_election_watch_read_msgs(struct baton_election *e, unsigned *events,
                                   baton_election_msg_fn on_msg, void *arg)
{
    int n;
    if (e == NULL || events == NULL)
        return BATON_EINVAL;
    if (e->c->quorum != NULL) {
        /* Every master's subscription; one that broke is dropped (the others
         * go on; baton_election_watch() subscribes it again). Not a switch:
         * a master going away says nothing of the lease. */
        int rc = BATON_OK;
        bool any = false;
        for (int i = 0; i < BATON__QUORUM_MAX; i++) {
            if (e->qsub[i] == NULL)
                continue;
            any = true;
            if ((n = read_sub(e, e->qsub[i], events, on_msg, arg)) == BATON_OK)
                continue;
            baton__set_error(e->errstr, sizeof e->errstr, "%s: node %s: %s", e->c->url.redacted,
                             baton__quorum_node(e->c, i)->addr, e->qsub[i]->err);
            epoll_ctl(e->epfd, EPOLL_CTL_DEL, e->qsub[i]->fd, NULL);
            baton__conn_free(e->qsub[i]);
            e->qsub[i] = NULL;
            rc = n;
        }
        return any ? rc : BATON_EIO;
    }
    if (e->sub == NULL)
        return BATON_EIO;
    if ((n = read_sub(e, e->sub, events, on_msg, arg)) != BATON_OK) {
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

static const char leader_script[] =
    "local v = redis.call('get', KEYS[1])\n"
    "return {v or '', redis.call('pttl', KEYS[1]), redis.call('get', KEYS[2]) or '0'}\n";

static bool leader_reply(const struct baton_reply *r)
{
    return r != NULL && r->type == BATON_REPLY_ARRAY && r->elements == 3 &&
           r->element[0]->type == BATON_REPLY_STRING &&
           r->element[1]->type == BATON_REPLY_INTEGER && r->element[2]->type == BATON_REPLY_STRING;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/* Over a quorum: the leader is the value a majority of the counted masters
 * hold; its lease left is the time it keeps that majority; the term the
 * highest counter seen. */
static int quorum_leader(struct baton_client *c, const struct baton_answers *a,
                         struct baton_leader_info *info)
{
    uint64_t term = 0;
    int best = -1, best_n = 0;
    for (int i = 0; i < a->n; i++) {
        const struct baton_reply *r = a->v[i].reply;
        if (a->v[i].rc != BATON_OK)
            continue;
        if (!leader_reply(r)) {
            baton__client_error(c, "unexpected reply to the leader read");
            return BATON_EPROTO;
        }
        uint64_t t = strtoull(r->element[2]->str, NULL, 10);
        if (t > term)
            term = t;
        if (!a->v[i].counts || r->element[0]->len == 0)
            continue;
        int k = 0;
        for (int j = 0; j < a->n; j++)
            k += a->v[j].rc == BATON_OK && a->v[j].counts && leader_reply(a->v[j].reply) &&
                 strcmp(a->v[j].reply->element[0]->str, r->element[0]->str) == 0;
        if (k > best_n) {
            best_n = k;
            best = i;
        }
    }
    if (best < 0 || best_n < a->majority) {
        describe(info, "", -1, term);
        return BATON_OK;
    }
    const char *value = a->v[best].reply->element[0]->str;
    long long pttl[BATON__QUORUM_MAX];
    int k = 0;
    for (int j = 0; j < a->n; j++)
        if (a->v[j].rc == BATON_OK && a->v[j].counts && leader_reply(a->v[j].reply) &&
            strcmp(a->v[j].reply->element[0]->str, value) == 0)
            pttl[k++] = a->v[j].reply->element[1]->integer;
    qsort(pttl, (size_t)k, sizeof pttl[0], cmp_ll);
    describe(info, value, pttl[k - a->majority], term);
    return BATON_OK;
}

int baton_election_leader(struct baton_client *c, const char *name, struct baton_leader_info *info)
{
    char *keys[2] = {NULL, NULL};
    struct baton_reply *r = NULL;
    struct baton_answers *a = NULL;
    int rc = BATON_ENOMEM;

    if (c == NULL || name == NULL || info == NULL)
        return BATON_EINVAL;
    memset(info, 0, sizeof *info);
    if (asprintf(&keys[0], "%s{%s}:leader", c->prefix, name) < 0 ||
        asprintf(&keys[1], "%s{%s}:leader:fence", c->prefix, name) < 0)
        goto out;
    if (c->quorum != NULL) {
        rc = baton_client_eval_all(c, leader_script, 2, (const char *const *)keys, 0, NULL, &a);
        if (rc == BATON_OK)
            rc = quorum_leader(c, a, info);
        goto out;
    }
    rc = baton__client_eval(c, leader_script, 2, (const char *const *)keys, 0, NULL, false, &r);
    if (rc != BATON_OK)
        goto out;
    if (!leader_reply(r)) {
        rc = BATON_EPROTO;
        goto out;
    }
    describe(info, r->element[0]->str, r->element[1]->integer,
             strtoull(r->element[2]->str, NULL, 10));
out:
    baton_answers_free(a);
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
    if (c->quorum != NULL) {
        /* On every master: the leader listens on each it reaches. The
         * receivers are at least the most any one master had. */
        struct baton_answers *a = NULL;
        int rc = baton_client_command_all(c, 3, argv, NULL, &a);
        if (rc == BATON_OK && receivers != NULL) {
            *receivers = 0;
            for (int i = 0; i < a->n; i++)
                if (a->v[i].rc == BATON_OK && a->v[i].reply->type == BATON_REPLY_INTEGER &&
                    a->v[i].reply->integer > *receivers)
                    *receivers = (int)a->v[i].reply->integer;
        }
        baton_answers_free(a);
        free(chan);
        return rc;
    }
    int rc = baton_client_command(c, 3, argv, NULL, &r);
    if (rc == BATON_OK && receivers != NULL)
        *receivers = r->type == BATON_REPLY_INTEGER ? (int)r->integer : 0;
    baton_reply_free(r);
    free(chan);
    return rc;
}
