/* topology_int.h -- libbaton internals, the topology layer: the client
 * object that every layer hangs its part on, and where its connections
 * go (pool.c, sentinel.c, cluster.c, quorum.c, qloop.c). base_int.h has
 * the map of the layers. */
#ifndef BATON_TOPOLOGY_INT_H
#define BATON_TOPOLOGY_INT_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>

#include "transport_int.h"

/* ---- the client, and its pool: pool.c ----
 *
 * The parts of the layers above hang on the client as opaque pointers. */

struct baton__waiters;
struct baton__renewer;
struct baton__stats;

/* One shard of the connection pool. Threads pick a shard by thread id, so
 * that fifty threads do not convoy on one mutex. */
#define BATON__SHARDS 8

/* The pipes of a server (mux.c), BATON__PIPES of them: two lanes
 * for ordinary calls, each call on the lane of its keys' hash slot (so
 * that the calls on one lock keep their order), and one for durable calls
 * (min_replicas). Two lanes, because one pipe's batch and its answer take
 * turns: while Redis runs one lane's batch, the loop can write the other's
 * (call.c). */
#define BATON__PIPE_LANE0   0
#define BATON__PIPE_DURABLE 1
#define BATON__PIPE_LANE1   2
#define BATON__PIPES        3

struct baton__shard {
    pthread_mutex_t mu; /* guards everything in the shard */
    struct baton__conn *idle;
    int nidle;
    unsigned char rnd[1024]; /* getrandom output, handed out in tokens */
    size_t rnd_used;
};

/* Closes and frees the idle connections of n shards (a client's, or a
 * cluster node's pool); the pipes are the loop's, closed when it stops
 * (mux.c). */
void baton__shards_close(struct baton__shard *shards, int n);

struct baton__sentinel_watch;
struct baton__cluster;

struct baton_client {
    struct baton__url url;
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
    int max_waiters;
    int min_replicas;
    char *prefix;
    char cid[BATON__CID_LEN + 1];
    char wake_chan[160];          /* prefix + "wake:" (waiters.c) */
    char sha[BATON__S_COUNT][41]; /* immutable after creation */
    /* The credentials in use: the options', else the URL's. Wiped on free. */
    char *user, *pass, *sentinel_user, *sentinel_pass;
    struct baton__tls *tls; /* rediss: the TLS settings */

    pthread_mutex_t mu; /* guards errstr, waiters, renewer */
    struct baton__shard shard[BATON__SHARDS];
    char errstr[BATON__ERRLEN];
    struct baton__waiters *waiters; /* started on first wait */
    struct baton__renewer *renewer; /* started on first auto-renewal */
    struct baton__stats *stats;     /* stats.c; made with the client */

    /* sentinel.c: the sentinel to ask first, the open data connections
     * (closed at once on +switch-master), the master last found, and the
     * thread subscribed to +switch-master. */
    _Atomic int sentinel_next;
    pthread_mutex_t live_mu; /* guards live, master_addr */
    struct baton__conn *live;
    char master_addr[80];
    struct baton__sentinel_watch *swatch;
    struct baton__cluster *cluster; /* cluster.c: redis(s)-cluster:// only */
    struct baton__quorum *quorum;   /* quorum.c: redis(s)-quorum:// only */
    _Atomic(struct baton__loop *) loop; /* loop.c: started on first use */
    struct baton__mux *pipes;           /* mux.c, loop thread only: every pipe made */
    struct baton__mux *pipe[BATON__PIPES]; /* the URL's server's, made on first use */
    atomic_int calls;                   /* call.c: script calls in flight, on the loop or a
                                           caller's thread */
    /* baton_client_free() closes the client (threads stopped, connections
     * closed, closed set) and drops the owner's reference; every live lock
     * and election holds one more, so a handle freed after its client finds
     * the client's memory still there. The last reference frees it. */
    _Atomic int refs;
    atomic_bool closed;
    /* Frees what the client holds, at its last reference: set by
     * baton_client_new() (client.c), above every layer that it frees. */
    void (*destroy)(struct baton_client *c);
};

/* A handle (lock, election) that keeps c's memory alive until it is freed. */
void baton__client_ref(struct baton_client *c);
void baton__client_unref(struct baton_client *c);

/* Takes an idle pooled connection to node (NULL: the URL's server, or
 * with Sentinel its master) or opens one, connecting by deadline_ns at the
 * latest (the deadline of the operation it is for). Returns 0 and *out,
 * or a negative code with detail in err. Give it back with
 * baton__client_put. */
int baton__client_get(struct baton_client *c, struct baton__node *node, int64_t deadline_ns,
                      struct baton__conn **out, char *err, size_t errlen);
/* Returns cn to its pool (its node's), or frees it when broken, stale or
 * the pool is full. */
void baton__client_put(struct baton_client *c, struct baton__conn *cn);
/* Opens a data connection by deadline_ns: finds the master (Sentinel),
 * connects, authenticates, selects the database, reads the run id (and
 * with Sentinel checks the role). Returns 0 and *out, or a negative code
 * with detail (prefixed by the redacted URL) in err. */
int baton__client_connect(struct baton_client *c, struct baton__node *node, int64_t deadline_ns,
                          struct baton__conn **out, char *err, size_t errlen);
/* The index of the calling thread's pool shard. */
unsigned baton__shard_index(void);
/* Fills buf with len (<= 64) bytes of getrandom output from the client's
 * buffers (one syscall per KiB instead of one per token). */
int baton__client_random(struct baton_client *c, void *buf, size_t len);
/* Deadline of a command sent now. */
int64_t baton__client_deadline(const struct baton_client *c);

/* The deadline of a durable call made now for a lease of ttl_ms: the
 * command timeout, and no later than the lease's validity deadline. */
int64_t baton__client_grant_deadline(const struct baton_client *c, int64_t ttl_ms);
/* Sets the client's error detail (under its mutex). */
void baton__client_error(struct baton_client *c, const char *msg);

/* ---- sentinel.c ---- */

/* Asks the sentinels, from the last that answered on, for the master of
 * the URL's group, connects to it (as baton__client_connect) and checks its
 * role. Returns 0 and *out, or a negative code with every sentinel's answer
 * in err. */
int baton__sentinel_connect(struct baton_client *c, int64_t deadline_ns, struct baton__conn **out,
                            char *err, size_t errlen);
/* Puts cn in c's list of live data connections; baton__conn_free() takes
 * it out (through cn->unlist). */
void baton__sentinel_list(struct baton_client *c, struct baton__conn *cn);
/* The master at addr ("host:port") was replaced: its connections are
 * marked stale and shut down (their readers wake at once). */
void baton__sentinel_switched(struct baton_client *c, const char *addr);
/* Starts the thread subscribed to +switch-master; stops it. */
int baton__sentinel_watch_start(struct baton_client *c);
void baton__sentinel_watch_stop(struct baton_client *c);

/* ---- cluster.c ---- */

/* A master node of a Redis Cluster and its own connection pool: one
 * struct per address ever seen, kept until the client is freed (so a
 * thread may hold one while the map changes under it). */
struct baton__node {
    char *host;
    int port;
    char addr[80]; /* host:port */
    struct baton__shard shard[BATON__SHARDS];
    struct baton__mux *pipe[BATON__PIPES]; /* mux.c's, made on first use */
    struct baton__node *next;              /* the cluster's list */
};

/* Makes and frees c->cluster (no I/O). */
int baton__cluster_new(struct baton_client *c);
void baton__cluster_free(struct baton_client *c);
/* Closes every node's connections (baton_client_free). */
void baton__cluster_close(struct baton_client *c);
/* Reads the slot map (CLUSTER SLOTS) from a known node or a seed, by
 * deadline_ns. Returns 0, or a negative code with every node's answer in
 * err. */
int baton__cluster_refresh(struct baton_client *c, int64_t deadline_ns, char *err,
                           size_t errlen);
/* The master of slot, reading the map first when the slot is not known.
 * Returns 0 and *out (borrowed; valid until the client is freed), or a
 * negative code with detail in err. */
int baton__cluster_route(struct baton_client *c, unsigned slot, int64_t deadline_ns,
                         struct baton__node **out, char *err, size_t errlen);
/* A master for a command without a key (subscribers, PING): the next in
 * turn. Same contract. */
int baton__cluster_any(struct baton_client *c, int64_t deadline_ns, struct baton__node **out,
                       char *err, size_t errlen);
/* The slot a command goes to: its first key (argv[1]; for EVAL, EVALSHA,
 * FCALL the first of KEYS), or -1 for a command without a key. */
int baton__cluster_command_slot(int argc, const char *const *argv, const size_t *lens);

/* What a reply asks a cluster client to do. */
enum baton__redirect {
    BATON__REDIR_NONE,     /* an answer */
    BATON__REDIR_MOVED,    /* the slot has a new master: ask it, and refresh the map */
    BATON__REDIR_ASK,      /* the slot is migrating: ask that node once, after ASKING */
    BATON__REDIR_TRYAGAIN, /* keys split by a migration in progress: retry shortly */
    BATON__REDIR_DOWN,     /* CLUSTERDOWN: no master for the slot (failover): retry */
};
/* Classifies r. For MOVED and ASK, *to is the node named (created if new). */
enum baton__redirect baton__cluster_redirect(struct baton_client *c, const redisReply *r,
                                             struct baton__node **to);
/* Acts on a redirection before a retry by deadline_ns: MOVED points the
 * slot at *to and reads the map again; TRYAGAIN and DOWN wait a little
 * (DOWN reads the map too). Returns true when a retry still fits before
 * the deadline. */
bool baton__cluster_follow(struct baton_client *c, enum baton__redirect kind, unsigned slot,
                           struct baton__node *to, int64_t deadline_ns);
/* Without waiting: the master of slot when the map can be used as it is
 * (true and *out), or false when it must be read first (or has no master
 * for the slot): then baton__cluster_route(), off the loop. */
bool baton__cluster_lookup(struct baton_client *c, unsigned slot, struct baton__node **out);
/* MOVED: points slot at to, and has the map read before the next route. */
void baton__cluster_moved(struct baton_client *c, unsigned slot, struct baton__node *to);
/* How long to wait before retrying after kind (TRYAGAIN, CLUSTERDOWN), ms;
 * 0 for the others. */
int baton__cluster_wait_ms(enum baton__redirect kind);
/* A connection to node failed or timed out: the map is read again before
 * the next command goes there (a failover moves its slots). */
void baton__cluster_suspect(struct baton_client *c, struct baton__node *node);
/* Opens a connection outside the pool (subscriber): to the URL's server,
 * or with Redis Cluster to any master (classic pub/sub reaches every node;
 * hence here). Same contract as baton__client_get(). */
int baton__client_open(struct baton_client *c, struct baton__conn **out, char *err, size_t errlen);

/* The Redis Cluster hash slot of a Redis key (CRC16/XMODEM of its hash tag,
 * mod 16384). */
unsigned baton__key_slot(const char *rkey, size_t len);

/* ---- quorum.c ----
 *
 * A Redlock quorum: N independent masters, each with its own connection
 * pool (a struct baton__node, as a cluster node). A request goes to every
 * master at once (qloop.c: pipelined with every thread's requests, each
 * master bounded by node_timeout) and holds when a majority of the
 * masters that count granted it. A master
 * counts unless it is quarantined: seen with a new run id (restarted), or
 * up for less than max_ttl. Locks, elections (election.c) and the calls of
 * every master (baton_client_eval_all/command_all) run over a quorum;
 * everything else is refused (baton__client_connect). */
struct baton__quorum;
/* Makes and frees c->quorum (no I/O). */
int baton__quorum_new(struct baton_client *c);
void baton__quorum_free(struct baton_client *c);
/* Closes every master's connections (baton_client_free). */
void baton__quorum_close(struct baton_client *c);
/* Connects to every master by the connect timeout. Returns 0 when a
 * majority answered; else BATON_EIO with every master's answer in err. */
int baton__quorum_ping(struct baton_client *c, char *err, size_t errlen);

/* One master's part of a request, as baton__quorum_fanout() returns it. */
struct baton__qslot {
    redisReply *reply; /* owned */
    int rc;            /* 0 answered, else why not (detail in err) */
    bool sent;         /* it left (it may have been applied) */
    bool counts;       /* not quarantined */
    char err[256];
};
/* Sends argv to every master (qloop.c: pipelined with every other
 * thread's requests) and waits for the answers, each master bounded by
 * node_timeout and all by deadline_ns. src: the script's source when argv
 * is an EVALSHA (resent as EVAL on NOSCRIPT). *sent_ns: a time before the
 * first byte left. Fills s[0..N-1]; free the replies with
 * baton__quorum_slots_clear(). */
void baton__quorum_fanout(struct baton_client *c, int argc, const char **argv, const size_t *lens,
                          const char *src, struct baton__qslot *s, int64_t *sent_ns,
                          int64_t deadline_ns);
void baton__quorum_slots_clear(struct baton__qslot *s, int n);
/* "h1:6379: connection refused; h2:6380: ..." for the masters that did not
 * answer, and the quarantined ones, into buf. */
void baton__quorum_describe(const struct baton_client *c, const struct baton__qslot *s, char *buf,
                            size_t len);
/* N / 2 + 1; the longest lock ttl allowed (max_ttl=). */
int baton__quorum_majority(const struct baton_client *c);
int64_t baton__quorum_max_ttl_ms(const struct baton_client *c);
/* The last fence granted or seen for the fence key key (a hint, by hash). */
_Atomic uint64_t *baton__quorum_hint(struct baton_client *c, const char *key);

/* argv (src: the script's source when argv is an EVALSHA) on every master,
 * within the command timeout, into a (a->v: room for N answers): see
 * baton_client_eval_all(). Returns 0 or BATON_ENOMEM. */
int baton__quorum_all(struct baton_client *c, int argc, const char **argv, const size_t *lens,
                      const char *src, struct baton_answers *a);
/* The number of masters (0: not a quorum), master i's node (borrowed, for
 * the life of c), the node_timeout. */
int baton__quorum_masters(const struct baton_client *c);
struct baton__node *baton__quorum_node(struct baton_client *c, int i);
int64_t baton__quorum_node_timeout_ms(const struct baton_client *c);
/* Whether master i is left alone after a failure; a failure of it (it is
 * then left alone for a while). */
bool baton__quorum_down(struct baton_client *c, int i);
void baton__quorum_failed(struct baton_client *c, int i);

/* ---- qloop.c ----
 *
 * The I/O of a quorum: one thread and one connection per master, every
 * thread's requests pipelined on them (see qloop.c). */
struct baton__qloop;
struct baton__qcall;
/* One master's part of a request. */
struct baton__qreq {
    struct baton__qreq *next; /* the master's queue (qloop.c's) */
    struct baton__qcall *call;
    int64_t deadline_ns; /* the caller's: by when it must answer */
    bool skip;           /* the caller decided it (rc, err set): not sent */
    /* results */
    redisReply *reply; /* owned by the caller once the call returns */
    int rc;
    bool sent;   /* it left for the master (it may have been applied) */
    bool evaled; /* NOSCRIPT came: EVAL was sent */
    char runid[41];
    int64_t uptime_s;
    char err[256];
};
/* A request: the same command for every master (on the caller's stack). */
struct baton__qcall {
    const char *cmd; /* in RESP (redisFormatCommandArgv) */
    size_t cmdlen;
    /* a script: its source, and argv as EVALSHA (resent as EVAL on NOSCRIPT) */
    const char *src;
    int argc;
    const char *const *argv;
    const size_t *lens;
    struct baton__qreq r[BATON__QUORUM_MAX];
    int left;  /* qloop.c's: parts not done yet, under its lock */
    sem_t sem; /* posted when none is left */
};
/* Makes l for the n masters nodes[0..n) (borrowed; no thread yet, no I/O):
 * failed(c, i) is told when master i fails (quorum.c leaves it alone for a
 * while). Returns 0 or ENOMEM. */
int baton__qloop_new(struct baton_client *c, int n, struct baton__node *const *nodes,
                     void (*failed)(struct baton_client *c, int i), struct baton__qloop **out);
/* Sends k to every master whose part is not skip, each bounded by its
 * deadline_ns (set them first), and returns once each has its reply or
 * its failure. Starts the thread on first use. Thread-safe. */
void baton__qloop_call(struct baton__qloop *l, struct baton__qcall *k);
/* Stops the thread and closes the connections; calls made after fail. */
void baton__qloop_stop(struct baton__qloop *l);
/* Stops and frees l. NULL is a no-op. */
void baton__qloop_free(struct baton__qloop *l);

#endif /* BATON_TOPOLOGY_INT_H */
