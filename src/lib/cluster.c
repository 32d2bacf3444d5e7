/* cluster.c -- Redis Cluster: the layer above the transport that decides
 * which node a command goes to, and follows the cluster when that changes
 * (as sentinel.c does for a Sentinel group). hiredis 0.14 has no cluster
 * support; the design follows hiredis-cluster's and ioredis's.
 *
 * The map: for each of the 16384 hash slots, its master, read with
 * CLUSTER SLOTS from a node that answers (the known masters first, then
 * the URL's seeds). Every master has a connection pool of its own, with
 * its pipe (a struct baton__node; mux.c): our scripts go to the master of
 * the slot of their first key (every key of one script shares a hash tag,
 * so one slot), pipelined there as on a single server. The loop (call.c)
 * routes without waiting when the map can be used as it is
 * (baton__cluster_lookup) and has it read on its helper thread otherwise.
 *
 * Following changes:
 *   MOVED slot addr   the slot has a new master (resharding, failover):
 *                     the slot points there at once, the request goes
 *                     there, and the whole map is read again before the
 *                     next route.
 *   ASK slot addr     the slot is being migrated and the keys are not here:
 *                     the request goes once to that node, right behind an
 *                     ASKING; the map is unchanged.
 *   TRYAGAIN          a migration has split the keys of one request
 *                     between two nodes: retried after a short wait.
 *   CLUSTERDOWN       no master for the slot yet (a failover under way):
 *                     retried after a wait, the map read again.
 *   a failed connection or a timeout: the map is read again before the
 *                     next route (a failover moves the slots of a dead
 *                     master to its promoted replica). A request that never
 *                     left is retried at once; one that may have run is not.
 * Every retry stays within the operation's own deadline.
 *
 * Lifetime: a node struct is made the first time an address is seen and
 * kept until the client is freed, so that a thread may keep using one
 * while the map changes (an address dropped from the map just stops being
 * routed to; its connections fail or are redirected). The number of
 * addresses is bounded (BATON__NODES_MAX). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "topology_int.h"

#define NSLOTS           16384
#define NODES_MAX        256
#define REFRESH_MIN_NS   (INT64_C(50) * 1000000) /* at most 20 map reads a second */
#define SLICE_MIN_NS     (INT64_C(200) * 1000000) /* each node asked gets this long at least */
#define TRYAGAIN_WAIT_MS 20
#define DOWN_WAIT_MS     100

struct baton__cluster {
    pthread_mutex_t mu; /* guards everything below but refresh_mu */
    struct baton__node *nodes;
    int nnodes;
    struct baton__node *slots[NSLOTS];
    uint64_t epoch;         /* bumped by every map read */
    bool stale;             /* read the map before the next route */
    int64_t refreshed_ns;   /* when the map was last read (or tried) */
    unsigned next_any;      /* round robin of baton__cluster_any() */
    pthread_mutex_t refresh_mu; /* one map read at a time */
};

/* ---- hash slots ---- */

/* CRC-16/XMODEM (polynomial 0x1021, initial value 0), which Redis Cluster
 * uses for key slots, a byte at a time: crc16_table[b] is the CRC of the
 * one byte b, i.e. b << 8 shifted through the polynomial eight times (check_lib's crc16_table_matches_bitwise holds it
 * to that definition). Every script call computes its key's slot (call.c:
 * the cluster's route, and the pipe lane on one server), so this is on
 * every lock cycle's path: the bitwise form took a tenth of the client's
 * CPU with 50 asynchronous cycles in flight. Eight to a row, as generated. */
/* clang-format off */
static const uint16_t crc16_table[256] = {
    0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5, 0x60c6, 0x70e7,
    0x8108, 0x9129, 0xa14a, 0xb16b, 0xc18c, 0xd1ad, 0xe1ce, 0xf1ef,
    0x1231, 0x0210, 0x3273, 0x2252, 0x52b5, 0x4294, 0x72f7, 0x62d6,
    0x9339, 0x8318, 0xb37b, 0xa35a, 0xd3bd, 0xc39c, 0xf3ff, 0xe3de,
    0x2462, 0x3443, 0x0420, 0x1401, 0x64e6, 0x74c7, 0x44a4, 0x5485,
    0xa56a, 0xb54b, 0x8528, 0x9509, 0xe5ee, 0xf5cf, 0xc5ac, 0xd58d,
    0x3653, 0x2672, 0x1611, 0x0630, 0x76d7, 0x66f6, 0x5695, 0x46b4,
    0xb75b, 0xa77a, 0x9719, 0x8738, 0xf7df, 0xe7fe, 0xd79d, 0xc7bc,
    0x48c4, 0x58e5, 0x6886, 0x78a7, 0x0840, 0x1861, 0x2802, 0x3823,
    0xc9cc, 0xd9ed, 0xe98e, 0xf9af, 0x8948, 0x9969, 0xa90a, 0xb92b,
    0x5af5, 0x4ad4, 0x7ab7, 0x6a96, 0x1a71, 0x0a50, 0x3a33, 0x2a12,
    0xdbfd, 0xcbdc, 0xfbbf, 0xeb9e, 0x9b79, 0x8b58, 0xbb3b, 0xab1a,
    0x6ca6, 0x7c87, 0x4ce4, 0x5cc5, 0x2c22, 0x3c03, 0x0c60, 0x1c41,
    0xedae, 0xfd8f, 0xcdec, 0xddcd, 0xad2a, 0xbd0b, 0x8d68, 0x9d49,
    0x7e97, 0x6eb6, 0x5ed5, 0x4ef4, 0x3e13, 0x2e32, 0x1e51, 0x0e70,
    0xff9f, 0xefbe, 0xdfdd, 0xcffc, 0xbf1b, 0xaf3a, 0x9f59, 0x8f78,
    0x9188, 0x81a9, 0xb1ca, 0xa1eb, 0xd10c, 0xc12d, 0xf14e, 0xe16f,
    0x1080, 0x00a1, 0x30c2, 0x20e3, 0x5004, 0x4025, 0x7046, 0x6067,
    0x83b9, 0x9398, 0xa3fb, 0xb3da, 0xc33d, 0xd31c, 0xe37f, 0xf35e,
    0x02b1, 0x1290, 0x22f3, 0x32d2, 0x4235, 0x5214, 0x6277, 0x7256,
    0xb5ea, 0xa5cb, 0x95a8, 0x8589, 0xf56e, 0xe54f, 0xd52c, 0xc50d,
    0x34e2, 0x24c3, 0x14a0, 0x0481, 0x7466, 0x6447, 0x5424, 0x4405,
    0xa7db, 0xb7fa, 0x8799, 0x97b8, 0xe75f, 0xf77e, 0xc71d, 0xd73c,
    0x26d3, 0x36f2, 0x0691, 0x16b0, 0x6657, 0x7676, 0x4615, 0x5634,
    0xd94c, 0xc96d, 0xf90e, 0xe92f, 0x99c8, 0x89e9, 0xb98a, 0xa9ab,
    0x5844, 0x4865, 0x7806, 0x6827, 0x18c0, 0x08e1, 0x3882, 0x28a3,
    0xcb7d, 0xdb5c, 0xeb3f, 0xfb1e, 0x8bf9, 0x9bd8, 0xabbb, 0xbb9a,
    0x4a75, 0x5a54, 0x6a37, 0x7a16, 0x0af1, 0x1ad0, 0x2ab3, 0x3a92,
    0xfd2e, 0xed0f, 0xdd6c, 0xcd4d, 0xbdaa, 0xad8b, 0x9de8, 0x8dc9,
    0x7c26, 0x6c07, 0x5c64, 0x4c45, 0x3ca2, 0x2c83, 0x1ce0, 0x0cc1,
    0xef1f, 0xff3e, 0xcf5d, 0xdf7c, 0xaf9b, 0xbfba, 0x8fd9, 0x9ff8,
    0x6e17, 0x7e36, 0x4e55, 0x5e74, 0x2e93, 0x3eb2, 0x0ed1, 0x1ef0,
};
/* clang-format on */

static uint16_t crc16(const unsigned char *p, size_t n)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++)
        crc = (uint16_t)((crc << 8) ^ crc16_table[((crc >> 8) ^ p[i]) & 0xff]);
    return crc;
}

unsigned baton__key_slot(const char *rkey, size_t len)
{
    /* The hash tag: between the first '{' and the first '}' after it, when
     * that is not empty; else the whole key. */
    const char *open = memchr(rkey, '{', len);
    if (open != NULL) {
        size_t rest = len - (size_t)(open - rkey) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close != NULL && close > open + 1)
            return crc16((const unsigned char *)open + 1, (size_t)(close - open - 1)) & 16383;
    }
    return crc16((const unsigned char *)rkey, len) & 16383;
}

/* ---- the map ---- */

int baton__cluster_new(struct baton_client *c)
{
    struct baton__cluster *cl = calloc(1, sizeof *cl);
    if (cl == NULL)
        return BATON_ENOMEM;
    pthread_mutex_init(&cl->mu, NULL);
    pthread_mutex_init(&cl->refresh_mu, NULL);
    cl->stale = true;
    c->cluster = cl;
    return BATON_OK;
}

void baton__cluster_close(struct baton_client *c)
{
    struct baton__cluster *cl = c->cluster;
    if (cl == NULL)
        return;
    pthread_mutex_lock(&cl->mu);
    struct baton__node *nodes = cl->nodes;
    pthread_mutex_unlock(&cl->mu);
    /* Nodes are only ever prepended: the list from here on is stable. */
    for (struct baton__node *n = nodes; n != NULL; n = n->next)
        baton__shards_close(n->shard, BATON__SHARDS);
}

void baton__cluster_free(struct baton_client *c)
{
    struct baton__cluster *cl = c->cluster;
    if (cl == NULL)
        return;
    baton__cluster_close(c);
    for (struct baton__node *n = cl->nodes, *next; n != NULL; n = next) {
        next = n->next;
        for (int i = 0; i < BATON__SHARDS; i++)
            pthread_mutex_destroy(&n->shard[i].mu);
        free(n->host);
        free(n);
    }
    pthread_mutex_destroy(&cl->refresh_mu);
    pthread_mutex_destroy(&cl->mu);
    free(cl);
    c->cluster = NULL;
}

/* The node of host:port, made when new. NULL on ENOMEM or when there are
 * too many. Under cl->mu. */
static struct baton__node *node_of(struct baton__cluster *cl, const char *host, size_t hostlen,
                                   int port)
{
    for (struct baton__node *n = cl->nodes; n != NULL; n = n->next)
        if (n->port == port && strlen(n->host) == hostlen && memcmp(n->host, host, hostlen) == 0)
            return n;
    if (cl->nnodes >= NODES_MAX || hostlen == 0 || hostlen > 255)
        return NULL;
    struct baton__node *n = calloc(1, sizeof *n);
    if (n == NULL || (n->host = strndup(host, hostlen)) == NULL) {
        free(n);
        return NULL;
    }
    n->port = port;
    if (memchr(n->host, ':', hostlen) != NULL)
        baton__set_error(n->addr, sizeof n->addr, "[%s]:%d", n->host, port);
    else
        baton__set_error(n->addr, sizeof n->addr, "%s:%d", n->host, port);
    for (int i = 0; i < BATON__SHARDS; i++)
        pthread_mutex_init(&n->shard[i].mu, NULL);
    n->next = cl->nodes;
    cl->nodes = n;
    cl->nnodes++;
    return n;
}

/* ---- reading the map ---- */


static bool as_int(const redisReply *r, long long lo, long long hi, long long *v)
{
    if (r->type != REDIS_REPLY_INTEGER || r->integer < lo || r->integer > hi)
        return false;
    *v = r->integer;
    return true;
}

/* Fills map from a CLUSTER SLOTS reply given by node asked. Returns 0, or
 * BATON_EPROTO / BATON_EREDIS / BATON_ENOMEM with the reason in why. */
static int parse_slots(struct baton__cluster *cl, struct baton__node *asked, const redisReply *r,
                       struct baton__node **map, char *why, size_t whylen)
{
    if (r->type == REDIS_REPLY_ERROR) {
        bool off = strstr(r->str, "cluster support disabled") != NULL;
        baton__set_error(why, whylen, "%.200s%s", r->str,
                         off ? " (a redis-cluster:// URL needs a server with cluster-enabled yes)"
                             : "");
        return BATON_EREDIS;
    }
    if (r->type != REDIS_REPLY_ARRAY) {
        baton__set_error(why, whylen, "unexpected reply to CLUSTER SLOTS");
        return BATON_EPROTO;
    }
    int rc = BATON_OK;
    pthread_mutex_lock(&cl->mu);
    for (size_t i = 0; i < r->elements && rc == BATON_OK; i++) {
        const redisReply *e = r->element[i];
        long long from, to, port;
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            !as_int(e->element[0], 0, NSLOTS - 1, &from) ||
            !as_int(e->element[1], from, NSLOTS - 1, &to) ||
            e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2 ||
            e->element[2]->element[0]->type != REDIS_REPLY_STRING ||
            !as_int(e->element[2]->element[1], 1, 65535, &port)) {
            baton__set_error(why, whylen, "unexpected reply to CLUSTER SLOTS");
            rc = BATON_EPROTO;
            break;
        }
        const redisReply *h = e->element[2]->element[0];
        /* "" or "?": the node does not know its own address; the one we
         * asked it on is the one to use. */
        const char *host = h->str;
        size_t hostlen = h->len;
        if (hostlen == 0 || (hostlen == 1 && host[0] == '?')) {
            host = asked->host;
            hostlen = strlen(asked->host);
        }
        struct baton__node *n = node_of(cl, host, hostlen, (int)port);
        if (n == NULL) {
            baton__set_error(why, whylen, "more than %d cluster nodes, or out of memory",
                             NODES_MAX);
            rc = BATON_ENOMEM;
            break;
        }
        for (long long s = from; s <= to; s++)
            map[s] = n;
    }
    pthread_mutex_unlock(&cl->mu);
    return rc;
}

/* Asks node for the map by deadline_ns. Returns 0 with map filled, or a
 * code with the reason in why. */
static int ask_slots(struct baton_client *c, struct baton__node *node, int64_t deadline_ns,
                     struct baton__node **map, char *why, size_t whylen)
{
    const char *argv[2] = {"CLUSTER", "SLOTS"};
    size_t lens[2] = {7, 5};
    struct baton__conn *cn = NULL;
    redisReply *r = NULL;
    char err[BATON__ERRLEN];
    int rc = baton__client_get(c, node, deadline_ns, &cn, err, sizeof err);
    if (rc != BATON_OK) {
        /* err is "URL: node ADDR: reason": keep the reason */
        const char *p = strstr(err, node->addr);
        baton__set_error(why, whylen, "%s", p != NULL ? p + strlen(node->addr) + 2 : err);
        return rc;
    }
    rc = baton__conn_command(cn, 2, argv, lens, &r, deadline_ns);
    if (rc != BATON_OK) {
        baton__set_error(why, whylen, "%s", cn->err);
    } else {
        rc = parse_slots(c->cluster, node, r, map, why, whylen);
        freeReplyObject(r);
    }
    baton__client_put(c, cn);
    return rc;
}

/* The nodes to ask, in order: the masters of the map from the one after
 * the last asked, then the seeds. Returns the count (at most max). */
static int candidates(struct baton_client *c, struct baton__node **out, int max)
{
    struct baton__cluster *cl = c->cluster;
    int n = 0;
    pthread_mutex_lock(&cl->mu);
    for (int s = 0; s < NSLOTS && n < max; s++) {
        struct baton__node *m = cl->slots[s];
        bool dup = m == NULL;
        for (int i = 0; i < n && !dup; i++)
            dup = out[i] == m;
        if (!dup)
            out[n++] = m;
    }
    /* Start elsewhere each time: a dead master is not always asked first. */
    if (n > 1) {
        unsigned k = cl->next_any++ % (unsigned)n;
        for (unsigned i = 0; i < k; i++) {
            struct baton__node *first = out[0];
            memmove(out, out + 1, (size_t)(n - 1) * sizeof *out);
            out[n - 1] = first;
        }
    }
    for (int i = 0; i < c->url.nseeds && n < max; i++) {
        const struct baton__hostport *sd = &c->url.seeds[i];
        struct baton__node *m = node_of(cl, sd->host, strlen(sd->host), sd->port);
        bool dup = m == NULL;
        for (int j = 0; j < n && !dup; j++)
            dup = out[j] == m;
        if (!dup)
            out[n++] = m;
    }
    pthread_mutex_unlock(&cl->mu);
    return n;
}

/* Reads the map unless another thread did since `seen`. */
static int refresh_since(struct baton_client *c, uint64_t seen, int64_t deadline_ns, char *err,
                         size_t errlen)
{
    struct baton__cluster *cl = c->cluster;
    struct baton__node *ask[NODES_MAX];
    char detail[BATON__ERRLEN * 2] = "";
    int rc = BATON_EIO;

    pthread_mutex_lock(&cl->refresh_mu);
    pthread_mutex_lock(&cl->mu);
    bool done = cl->epoch != seen;
    pthread_mutex_unlock(&cl->mu);
    if (done) {
        pthread_mutex_unlock(&cl->refresh_mu);
        return BATON_OK;
    }
    struct baton__node **map = calloc(NSLOTS, sizeof *map);
    if (map == NULL) {
        pthread_mutex_unlock(&cl->refresh_mu);
        return BATON_ENOMEM;
    }
    int n = candidates(c, ask, NODES_MAX);
    for (int a = 0; a < n; a++) {
        char why[BATON__ERRLEN];
        int64_t now = baton__now_ns();
        if (now >= deadline_ns) {
            baton__append_detail(detail, sizeof detail, "no time left to ask the other nodes");
            rc = BATON_EIO;
            break;
        }
        int64_t slice = (deadline_ns - now) / (n - a);
        if (slice < SLICE_MIN_NS)
            slice = SLICE_MIN_NS;
        int64_t by = now + slice < deadline_ns ? now + slice : deadline_ns;
        memset(map, 0, NSLOTS * sizeof *map);
        rc = ask_slots(c, ask[a], by, map, why, sizeof why);
        if (rc == BATON_OK)
            break;
        baton__append_detail(detail, sizeof detail, "node %s: %s", ask[a]->addr, why);
        if (rc == BATON_EAUTH || rc == BATON_ETLS)
            break; /* the same credentials and certificates for every node */
    }
    pthread_mutex_lock(&cl->mu);
    if (rc == BATON_OK) {
        memcpy(cl->slots, map, NSLOTS * sizeof *map);
        cl->stale = false;
    }
    cl->epoch++;
    cl->refreshed_ns = baton__now_ns();
    pthread_mutex_unlock(&cl->mu);
    pthread_mutex_unlock(&cl->refresh_mu);
    free(map);
    if (rc != BATON_OK)
        baton__set_error(err, errlen, "%s: cannot read the cluster's slot map: %s",
                         c->url.redacted, n > 0 ? detail : "no node to ask");
    return rc;
}

int baton__cluster_refresh(struct baton_client *c, int64_t deadline_ns, char *err, size_t errlen)
{
    struct baton__cluster *cl = c->cluster;
    pthread_mutex_lock(&cl->mu);
    uint64_t seen = cl->epoch;
    pthread_mutex_unlock(&cl->mu);
    return refresh_since(c, seen, deadline_ns, err, errlen);
}

/* Reads the map when it is stale and the last read is not too recent (or
 * when must). Errors are the caller's to report only if it has no route. */
static int maybe_refresh(struct baton_client *c, bool must, int64_t deadline_ns, char *err,
                         size_t errlen)
{
    struct baton__cluster *cl = c->cluster;
    pthread_mutex_lock(&cl->mu);
    uint64_t seen = cl->epoch;
    bool go = (cl->stale || must) &&
              (cl->epoch == 0 || baton__now_ns() - cl->refreshed_ns >= REFRESH_MIN_NS);
    pthread_mutex_unlock(&cl->mu);
    return go ? refresh_since(c, seen, deadline_ns, err, errlen) : BATON_OK;
}

int baton__cluster_route(struct baton_client *c, unsigned slot, int64_t deadline_ns,
                         struct baton__node **out, char *err, size_t errlen)
{
    struct baton__cluster *cl = c->cluster;
    char why[BATON__ERRLEN] = "";
    *out = NULL;
    pthread_mutex_lock(&cl->mu);
    bool known = cl->slots[slot & (NSLOTS - 1)] != NULL;
    pthread_mutex_unlock(&cl->mu);
    int rc = maybe_refresh(c, !known, deadline_ns, why, sizeof why);
    pthread_mutex_lock(&cl->mu);
    *out = cl->slots[slot & (NSLOTS - 1)];
    pthread_mutex_unlock(&cl->mu);
    if (*out != NULL)
        return BATON_OK; /* a failed read leaves the map as it was: use it */
    if (rc != BATON_OK) {
        baton__set_error(err, errlen, "%s", why);
        return rc;
    }
    baton__set_error(err, errlen,
                     "%s: slot %u has no master in the cluster's map (the cluster is down, or "
                     "its slots are not all assigned)",
                     c->url.redacted, slot);
    return BATON_EREDIS;
}

bool baton__cluster_lookup(struct baton_client *c, unsigned slot, struct baton__node **out)
{
    struct baton__cluster *cl = c->cluster;
    pthread_mutex_lock(&cl->mu);
    struct baton__node *n = cl->slots[slot & (NSLOTS - 1)];
    /* As baton__cluster_route(): a read is due when the slot is unknown,
     * or the map is stale and was not read in the last REFRESH_MIN_NS. */
    bool read = (cl->stale || n == NULL) &&
                (cl->epoch == 0 || baton__now_ns() - cl->refreshed_ns >= REFRESH_MIN_NS);
    pthread_mutex_unlock(&cl->mu);
    *out = n;
    return n != NULL && !read;
}

void baton__cluster_moved(struct baton_client *c, unsigned slot, struct baton__node *to)
{
    struct baton__cluster *cl = c->cluster;
    pthread_mutex_lock(&cl->mu);
    cl->slots[slot & (NSLOTS - 1)] = to;
    cl->stale = true; /* other slots have likely moved too */
    pthread_mutex_unlock(&cl->mu);
}

int baton__cluster_wait_ms(enum baton__redirect kind)
{
    return kind == BATON__REDIR_TRYAGAIN ? TRYAGAIN_WAIT_MS
           : kind == BATON__REDIR_DOWN   ? DOWN_WAIT_MS
                                         : 0;
}

int baton__cluster_any(struct baton_client *c, int64_t deadline_ns, struct baton__node **out,
                       char *err, size_t errlen)
{
    struct baton__cluster *cl = c->cluster;
    struct baton__node *ask[NODES_MAX];
    char why[BATON__ERRLEN] = "";
    *out = NULL;
    int rc = maybe_refresh(c, false, deadline_ns, why, sizeof why);
    int n = candidates(c, ask, NODES_MAX); /* masters first, rotated, then seeds */
    if (n > 0) {
        *out = ask[0];
        return BATON_OK;
    }
    (void)cl;
    baton__set_error(err, errlen, "%s", why[0] ? why : "no cluster node known");
    return rc != BATON_OK ? rc : BATON_EIO;
}

void baton__cluster_suspect(struct baton_client *c, struct baton__node *node)
{
    struct baton__cluster *cl = c->cluster;
    (void)node;
    if (cl == NULL)
        return;
    pthread_mutex_lock(&cl->mu);
    cl->stale = true;
    pthread_mutex_unlock(&cl->mu);
}

/* ---- redirections ---- */

enum baton__redirect baton__cluster_redirect(struct baton_client *c, const redisReply *r,
                                             struct baton__node **to)
{
    static const struct {
        const char *prefix;
        enum baton__redirect kind;
    } kinds[] = {{"MOVED ", BATON__REDIR_MOVED},
                 {"ASK ", BATON__REDIR_ASK},
                 {"TRYAGAIN", BATON__REDIR_TRYAGAIN},
                 {"CLUSTERDOWN", BATON__REDIR_DOWN}};
    *to = NULL;
    if (r == NULL || r->type != REDIS_REPLY_ERROR || c->cluster == NULL)
        return BATON__REDIR_NONE;
    size_t k = 0;
    while (k < sizeof kinds / sizeof kinds[0] &&
           strncmp(r->str, kinds[k].prefix, strlen(kinds[k].prefix)) != 0)
        k++;
    if (k == sizeof kinds / sizeof kinds[0])
        return BATON__REDIR_NONE;
    if (kinds[k].kind != BATON__REDIR_MOVED && kinds[k].kind != BATON__REDIR_ASK)
        return kinds[k].kind;
    /* "MOVED 3999 127.0.0.1:6381": the address after the slot, the port
     * after its last ':' (an IPv6 address has colons of its own). */
    const char *addr = strchr(r->str + strlen(kinds[k].prefix), ' ');
    const char *colon = addr != NULL ? strrchr(addr, ':') : NULL;
    int port = 0;
    if (colon == NULL || colon == addr + 1)
        return BATON__REDIR_NONE;
    for (const char *p = colon + 1; *p != '\0'; p++) {
        if (*p < '0' || *p > '9' || port > 65535)
            return BATON__REDIR_NONE;
        port = port * 10 + (*p - '0');
    }
    if (port < 1 || port > 65535)
        return BATON__REDIR_NONE;
    const char *host = addr + 1;
    size_t hostlen = (size_t)(colon - host);
    if (hostlen >= 2 && host[0] == '[' && host[hostlen - 1] == ']') {
        host++;
        hostlen -= 2;
    }
    pthread_mutex_lock(&c->cluster->mu);
    *to = node_of(c->cluster, host, hostlen, port);
    pthread_mutex_unlock(&c->cluster->mu);
    return *to != NULL ? kinds[k].kind : BATON__REDIR_NONE;
}

/* Sleeps ms, never past deadline_ns. */
static void nap(int ms, int64_t deadline_ns)
{
    int64_t until = baton__now_ns() + (int64_t)ms * 1000000;
    if (until > deadline_ns)
        until = deadline_ns;
    int64_t d = until - baton__now_ns();
    if (d <= 0)
        return;
    struct timespec ts = {.tv_sec = d / 1000000000, .tv_nsec = d % 1000000000};
    nanosleep(&ts, NULL);
}

bool baton__cluster_follow(struct baton_client *c, enum baton__redirect kind, unsigned slot,
                           struct baton__node *to, int64_t deadline_ns)
{
    switch (kind) {
    case BATON__REDIR_MOVED: baton__cluster_moved(c, slot, to); break;
    case BATON__REDIR_TRYAGAIN: nap(baton__cluster_wait_ms(kind), deadline_ns); break;
    case BATON__REDIR_DOWN:
        baton__cluster_suspect(c, NULL);
        nap(baton__cluster_wait_ms(kind), deadline_ns);
        break;
    case BATON__REDIR_ASK:
    case BATON__REDIR_NONE: break;
    }
    return baton__now_ns() < deadline_ns;
}

/* ---- the key of a command ---- */

static bool is(const char *s, size_t len, const char *name)
{
    return strlen(name) == len && strncasecmp(s, name, len) == 0;
}

int baton__cluster_command_slot(int argc, const char *const *argv, const size_t *lens)
{
    /* Commands without a key (any master answers them; a wrong guess only
     * costs a MOVED). PUBLISH's channel is no key: every node delivers it. */
    static const char *const keyless[] = {
        "PING",    "ECHO",   "INFO",     "TIME",   "CLUSTER", "CONFIG",  "CLIENT", "COMMAND",
        "SCRIPT",  "FUNCTION", "DBSIZE", "FLUSHALL", "FLUSHDB", "ACL",   "AUTH",   "HELLO",
        "WAIT",    "LATENCY", "SLOWLOG", "ROLE",   "LASTSAVE", "SAVE",   "BGSAVE", "SHUTDOWN",
        "RANDOMKEY", "SCAN",  "KEYS",    "DEBUG",  "PUBLISH", "PUBSUB", "SUBSCRIBE",
        "PSUBSCRIBE", "READONLY", "READWRITE", "MULTI", "EXEC", "DISCARD", "UNWATCH",
    };
    if (argc < 1)
        return -1;
    for (size_t i = 0; i < sizeof keyless / sizeof keyless[0]; i++)
        if (is(argv[0], lens[0], keyless[i]))
            return -1;
    int at = 1;
    if (is(argv[0], lens[0], "EVAL") || is(argv[0], lens[0], "EVALSHA") ||
        is(argv[0], lens[0], "EVAL_RO") || is(argv[0], lens[0], "EVALSHA_RO") ||
        is(argv[0], lens[0], "FCALL") || is(argv[0], lens[0], "FCALL_RO")) {
        if (argc < 4 || lens[2] == 0 || lens[2] > 9 || strspn(argv[2], "0123456789") < lens[2] ||
            argv[2][0] == '0')
            return -1; /* no keys */
        at = 3;
    } else if (is(argv[0], lens[0], "XREAD") || is(argv[0], lens[0], "XREADGROUP")) {
        at = -1;
        for (int i = 1; i + 1 < argc && at < 0; i++)
            if (is(argv[i], lens[i], "STREAMS"))
                at = i + 1;
        if (at < 0)
            return -1;
    } else if (is(argv[0], lens[0], "OBJECT") || is(argv[0], lens[0], "MEMORY") ||
               is(argv[0], lens[0], "XINFO")) {
        at = 2;
    }
    if (at >= argc)
        return -1;
    return (int)baton__key_slot(argv[at], lens[at]);
}

/* ---- a connection outside the pools (subscribers) ---- */

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
