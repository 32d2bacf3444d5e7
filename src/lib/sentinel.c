/* sentinel.c -- Redis Sentinel: the layer above the transport that decides
 * where a data connection goes, and notices when that changes.
 *
 * Finding the master: every new data connection asks the sentinels in
 * turn, from the last that answered, SENTINEL get-master-addr-by-name,
 * connects to the address given (transport as the URL says: TLS for
 * rediss-sentinel://), authenticates with the data nodes' credentials and
 * checks with ROLE that the server is a master; a sentinel that is down,
 * does not know the group, or names a replica (its view is stale) makes us
 * ask the next. Each sentinel gets a fair share of the time left, so one
 * that hangs cannot use up the operation's deadline alone.
 *
 * Following a failover: one thread per client keeps a subscription to
 * +switch-master on one sentinel (the next one when it fails; on every
 * subscription it also asks for the current master, in case a switch
 * happened while it was away). A switch of our group marks every open
 * data connection to the old master stale and shuts its socket down, so
 * that a reader blocked on it wakes at once, pooled connections are not
 * reused, and the next operation connects through the sentinels. A
 * READONLY answer (a master demoted to replica) and a failed connection
 * lead there too without the thread's help. Shutting a socket down from
 * this thread is safe because a connection leaves the list (under
 * live_mu) before its fd is closed. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "topology_int.h"

#define SLICE_MIN_MS 200 /* each sentinel gets at least this long */

struct baton__sentinel_watch {
    struct baton_client *c;
    pthread_t thread;
    int efd; /* written to stop the thread */
    _Atomic bool stop;
};

/* ---- the list of live data connections ---- */

/* cn->unlist: baton__conn_free() takes it out of the list. */
static void unlist(struct baton__conn *cn);

void baton__sentinel_list(struct baton_client *c, struct baton__conn *cn)
{
    pthread_mutex_lock(&c->live_mu);
    cn->listed = c;
    cn->unlist = unlist;
    cn->lprev = NULL;
    cn->lnext = c->live;
    if (c->live != NULL)
        c->live->lprev = cn;
    c->live = cn;
    pthread_mutex_unlock(&c->live_mu);
}

static void unlist(struct baton__conn *cn)
{
    struct baton_client *c = cn->listed;
    pthread_mutex_lock(&c->live_mu);
    if (cn->lprev != NULL)
        cn->lprev->lnext = cn->lnext;
    else
        c->live = cn->lnext;
    if (cn->lnext != NULL)
        cn->lnext->lprev = cn->lprev;
    cn->listed = NULL;
    cn->unlist = NULL;
    cn->lprev = cn->lnext = NULL;
    pthread_mutex_unlock(&c->live_mu);
}

void baton__sentinel_switched(struct baton_client *c, const char *addr)
{
    pthread_mutex_lock(&c->live_mu);
    for (struct baton__conn *cn = c->live; cn != NULL; cn = cn->lnext) {
        if (strcmp(cn->addr, addr) != 0)
            continue;
        atomic_store(&cn->stale, true);
        shutdown(cn->fd, SHUT_RDWR);
    }
    if (strcmp(c->master_addr, addr) == 0)
        c->master_addr[0] = '\0';
    pthread_mutex_unlock(&c->live_mu);
}

/* Records addr as the master; a different one known before was replaced
 * (a switch we may not have heard of): its connections go stale. */
static void master_is(struct baton_client *c, const char *addr)
{
    char old[sizeof c->master_addr];
    pthread_mutex_lock(&c->live_mu);
    baton__set_error(old, sizeof old, "%s", c->master_addr);
    baton__set_error(c->master_addr, sizeof c->master_addr, "%s", addr);
    pthread_mutex_unlock(&c->live_mu);
    if (old[0] != '\0' && strcmp(old, addr) != 0)
        baton__sentinel_switched(c, old); /* leaves master_addr, now addr, alone */
}

/* ---- asking a sentinel ---- */

/* Opens a connection to sentinel k, authenticated with the sentinels'
 * credentials. Returns 0 and *out, or a code with the reason in why. */
static int open_sentinel(struct baton_client *c, int k, int64_t deadline_ns,
                         struct baton__conn **out, char *why, size_t whylen)
{
    const struct baton__hostport *s = &c->url.sentinels[k];
    struct baton__endpoint ep = {.host = s->host, .port = s->port, .tls = c->tls};
    struct baton__conn *cn = NULL;
    redisReply *r = NULL;
    int rc;

    *out = NULL;
    if ((rc = baton__conn_open(&ep, deadline_ns, &cn, why, whylen)) != BATON_OK)
        return rc;
    if (c->sentinel_pass != NULL) {
        const char *argv[3];
        size_t lens[3];
        int argc = 0;
        argv[argc++] = "AUTH";
        if (c->sentinel_user != NULL)
            argv[argc++] = c->sentinel_user;
        argv[argc++] = c->sentinel_pass;
        for (int i = 0; i < argc; i++)
            lens[i] = strlen(argv[i]);
        if ((rc = baton__conn_command(cn, argc, argv, lens, &r, deadline_ns)) != BATON_OK) {
            baton__set_error(why, whylen, "%s", cn->err);
            baton__conn_free(cn);
            return rc;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            baton__set_error(why, whylen, "authentication failed: %.160s", r->str);
            freeReplyObject(r);
            baton__conn_free(cn);
            return BATON_EAUTH;
        }
        freeReplyObject(r);
    }
    *out = cn;
    return BATON_OK;
}

/* SENTINEL get-master-addr-by-name on cn. Returns 0 with host and port, or
 * a code with the reason in why. */
static int ask_master(struct baton_client *c, struct baton__conn *cn, int64_t deadline_ns,
                      char *host, size_t hostlen, int *port, char *why, size_t whylen)
{
    const char *argv[3] = {"SENTINEL", "get-master-addr-by-name", c->url.master};
    size_t lens[3] = {8, 23, strlen(c->url.master)};
    redisReply *r = NULL;
    int rc = baton__conn_command(cn, 3, argv, lens, &r, deadline_ns);
    if (rc != BATON_OK) {
        baton__set_error(why, whylen, "%s", cn->err);
        return rc;
    }
    rc = BATON_EPROTO;
    if (r->type == REDIS_REPLY_ERROR) {
        bool noauth = strncmp(r->str, "NOAUTH", 6) == 0;
        baton__set_error(why, whylen, "%.160s%s", r->str,
                         noauth ? " (give the sentinels' password: the URL's sentinel_password=, "
                                  "BATON_SENTINEL_PASSWORD or sentinel_password_file)"
                                : "");
        rc = noauth ? BATON_EAUTH : BATON_EREDIS;
    } else if (r->type == REDIS_REPLY_NIL) {
        baton__set_error(why, whylen, "does not know a master named %.100s", c->url.master);
        rc = BATON_EREDIS;
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
               r->element[0]->type == REDIS_REPLY_STRING &&
               r->element[1]->type == REDIS_REPLY_STRING && r->element[0]->len < hostlen) {
        const redisReply *pr = r->element[1];
        int p = 0;
        for (size_t i = 0; i < pr->len && i < 6 && pr->str[i] >= '0' && pr->str[i] <= '9'; i++)
            p = p * 10 + (pr->str[i] - '0');
        if (p > 0 && p < 65536 && pr->len <= 5 && strspn(pr->str, "0123456789") == pr->len) {
            memcpy(host, r->element[0]->str, r->element[0]->len + 1);
            *port = p;
            rc = BATON_OK;
        }
    }
    if (rc == BATON_EPROTO)
        baton__set_error(why, whylen, "unexpected reply to SENTINEL get-master-addr-by-name");
    freeReplyObject(r);
    return rc;
}


int baton__sentinel_connect(struct baton_client *c, int64_t deadline_ns, struct baton__conn **out,
                            char *err, size_t errlen)
{
    const int n = c->url.nsentinels;
    int start = atomic_load(&c->sentinel_next);
    char detail[BATON__ERRLEN * 2] = "", first_why[BATON__ERRLEN] = "", addrs[BATON__ERRLEN] = "";
    int rc = BATON_EIO, same = 0;

    *out = NULL;
    for (int a = 0; a < n; a++) {
        int k = (start + a) % n;
        const struct baton__hostport *s = &c->url.sentinels[k];
        struct baton__conn *sc = NULL, *cn = NULL;
        char why[BATON__ERRLEN], host[64];
        int port = 0;
        int64_t now = baton__now_ns();
        if (now >= deadline_ns) {
            baton__append_detail(detail, sizeof detail, "no time left to ask the other sentinels");
            break;
        }
        int64_t slice = (deadline_ns - now) / (n - a);
        if (slice < SLICE_MIN_MS * INT64_C(1000000))
            slice = SLICE_MIN_MS * INT64_C(1000000);
        int64_t by = now + slice < deadline_ns ? now + slice : deadline_ns;

        rc = open_sentinel(c, k, by, &sc, why, sizeof why);
        if (rc == BATON_OK)
            rc = ask_master(c, sc, by, host, sizeof host, &port, why, sizeof why);
        baton__conn_free(sc);
        if (rc != BATON_OK) {
            baton__append_detail(detail, sizeof detail, "sentinel %s:%d: %s", s->host, s->port, why);
            /* Every sentinel saying the same is said once. */
            if (a == 0 || strcmp(why, first_why) == 0) {
                same++;
                baton__set_error(first_why, sizeof first_why, "%s", why);
                size_t o = strlen(addrs);
                snprintf(addrs + o, sizeof addrs - o, "%s%s:%d", o > 0 ? ", " : "", s->host,
                         s->port);
            }
            continue;
        }
        struct baton__endpoint ep = {.host = host, .port = port, .tls = c->tls};
        int64_t connect_by = baton__now_ns() + c->connect_timeout_ms * 1000000;
        rc = baton__conn_open(&ep, connect_by < deadline_ns ? connect_by : deadline_ns, &cn, why,
                              sizeof why);
        if (rc == BATON_OK &&
            (rc = baton__conn_hello(cn, c->user, c->pass, c->url.db, true, deadline_ns)) !=
                BATON_OK)
            baton__set_error(why, sizeof why, "%s", cn->err);
        if (rc != BATON_OK) {
            baton__conn_free(cn);
            baton__append_detail(detail, sizeof detail, "master %s:%d (named by sentinel %s:%d): %s", host, port,
                 s->host, s->port, why);
            if (rc == BATON_EAUTH || rc == BATON_ETLS)
                break; /* the same credentials and certificates for every node */
            continue;
        }
        atomic_store(&c->sentinel_next, k);
        master_is(c, cn->addr);
        baton__sentinel_list(c, cn);
        *out = cn;
        return BATON_OK;
    }
    if (same == n && n > 1)
        baton__set_error(err, errlen, "%s: no master for %s: sentinels %s: %s", c->url.redacted,
                         c->url.master, addrs, first_why);
    else
        baton__set_error(err, errlen, "%s: no master for %s: %s", c->url.redacted,
                         c->url.master, detail);
    return rc;
}

/* ---- the +switch-master subscription ---- */

/* Sleeps ms, or until stopped. Returns false when stopping. */
static bool pause_ms(struct baton__sentinel_watch *w, int ms)
{
    struct pollfd p = {.fd = w->efd, .events = POLLIN};
    (void)poll(&p, 1, ms);
    return !atomic_load(&w->stop);
}

/* A +switch-master message: "<name> <old-ip> <old-port> <new-ip> <new-port>". */
static void on_message(struct baton_client *c, const redisReply *r)
{
    char name[256], oldip[64], newip[64];
    int oldport, newport;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || strcmp(r->element[0]->str, "message") != 0 ||
        r->element[2]->type != REDIS_REPLY_STRING)
        return;
    if (sscanf(r->element[2]->str, "%255s %63s %d %63s %d", name, oldip, &oldport, newip,
               &newport) != 5 ||
        strcmp(name, c->url.master) != 0)
        return;
    char oldaddr[80], newaddr[80];
    snprintf(oldaddr, sizeof oldaddr, "%s:%d", oldip, oldport);
    snprintf(newaddr, sizeof newaddr, "%s:%d", newip, newport);
    baton__sentinel_switched(c, oldaddr);
    master_is(c, newaddr);
}

/* One subscription's life on sentinel k. Returns when it breaks or on stop. */
static void serve(struct baton__sentinel_watch *w, int k)
{
    struct baton_client *c = w->c;
    struct baton__conn *cn = NULL;
    char why[BATON__ERRLEN], host[64];
    int port;
    int64_t deadline = baton__now_ns() + c->connect_timeout_ms * 1000000;

    if (open_sentinel(c, k, deadline, &cn, why, sizeof why) != BATON_OK)
        return;
    /* A switch while we were not listening: compare with what we knew. */
    if (ask_master(c, cn, deadline, host, sizeof host, &port, why, sizeof why) == BATON_OK) {
        char addr[80];
        snprintf(addr, sizeof addr, "%s:%d", host, port);
        pthread_mutex_lock(&c->live_mu);
        bool known = c->master_addr[0] != '\0';
        pthread_mutex_unlock(&c->live_mu);
        if (known)
            master_is(c, addr);
    }
    const char *argv[2] = {"SUBSCRIBE", "+switch-master"};
    size_t lens[2] = {9, 14};
    redisReply *r = NULL;
    if (baton__conn_command(cn, 2, argv, lens, &r, deadline) != BATON_OK)
        goto out;
    bool ok = r->type == REDIS_REPLY_ARRAY;
    freeReplyObject(r);
    while (ok && !atomic_load(&w->stop)) {
        struct pollfd p[2] = {{.fd = cn->fd, .events = baton__conn_read_events(cn)},
                              {.fd = w->efd, .events = POLLIN}};
        if (p[0].events != 0 && poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents != 0)
            break;
        int got;
        while ((got = baton__conn_poll_reply(cn, &r)) == 1) {
            on_message(c, r);
            freeReplyObject(r);
        }
        ok = got == 0;
    }
out:
    baton__conn_free(cn);
}

static void *watch_main(void *arg)
{
    struct baton__sentinel_watch *w = arg;
    int k = atomic_load(&w->c->sentinel_next), backoff = 100;
    while (!atomic_load(&w->stop)) {
        int64_t t0 = baton__now_ns();
        serve(w, k);
        if (baton__now_ns() - t0 > INT64_C(5000000000))
            backoff = 100; /* it served a while: a fresh failure */
        k = (k + 1) % w->c->url.nsentinels;
        if (!pause_ms(w, backoff))
            break;
        backoff = backoff < 1000 ? backoff * 2 : 2000;
    }
    return NULL;
}

int baton__sentinel_watch_start(struct baton_client *c)
{
    struct baton__sentinel_watch *w = calloc(1, sizeof *w);
    if (w == NULL)
        return BATON_ENOMEM;
    w->c = c;
    if ((w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        free(w);
        return BATON_EIO;
    }
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        close(w->efd);
        free(w);
        return BATON_ENOMEM;
    }
    c->swatch = w;
    return BATON_OK;
}

void baton__sentinel_watch_stop(struct baton_client *c)
{
    struct baton__sentinel_watch *w = c->swatch;
    if (w == NULL)
        return;
    atomic_store(&w->stop, true);
    uint64_t one = 1;
    ssize_t n = write(w->efd, &one, sizeof one);
    (void)n;
    pthread_join(w->thread, NULL);
    close(w->efd);
    free(w);
    c->swatch = NULL;
}
