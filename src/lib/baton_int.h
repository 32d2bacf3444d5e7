/* baton_int.h -- libbaton internals shared between the files of src/lib.
 *
 * Layers, bottom up:
 *   util.c     clock, randomness, hex, the one error-detail writer
 *   url.c      redis://, rediss://, unix://, redis(s)-sentinel://,
 *              redis(s)-cluster:// URLs
 *   sock.c     transport: TCP and Unix sockets, non-blocking
 *   tls.c      transport: TLS (OpenSSL) over TCP
 *   conn.c     one connection: a transport carrying RESP, which hiredis
 *              formats and parses (redisFormatCommandArgv, redisReader)
 *   sentinel.c the layer above the transport that finds the master through
 *              the sentinels, and follows +switch-master
 *   cluster.c  the layer above the transport for Redis Cluster: the slot
 *              map (CLUSTER SLOTS), a connection pool per master node,
 *              MOVED / ASK / TRYAGAIN followed
 *   client.c   the client: URL, options, credentials, connecting (AUTH,
 *              SELECT, run id, role), the pool, EVAL for tools, WAIT
 *   loop.c     the client's event loop thread: posted tasks, timers,
 *              epoll, the helper thread for what blocks (connecting)
 *   mux.c      a pipe: a connection to a server that the loop keeps many
 *              requests in flight on, written and read in batches (two
 *              lanes per server, and one for durable calls)
 *   call.c     a script call as a state machine on the loop (NOSCRIPT,
 *              READONLY, cluster redirections, WAIT); the blocking form
 *              posts it and sleeps until it completes
 *   scripts.c  the Lua scripts (acquire, release, extend, cancel)
 *   waiters.c  waiting: flood control, the shared subscriber thread
 *   renew.c    auto-renewal: the shared renewal thread
 *   lock.c     the lock API
 *   lock_async.c the asynchronous lock API, run on the loop
 *   with_lock.c baton_with_lock()
 *   stats.c    per-client counters by key class (Prometheus text output)
 *   sem.c      semaphores: N holders, each permit a lease (a struct baton_lock)
 *   multi.c    several locks, all or nothing, in sorted order
 *   once.c     baton_once(): process an id at most once
 *   leader.c   leader election for embedding: a thread on election.c
 */
#ifndef BATON_INT_H
#define BATON_INT_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton.h"
#include "baton_election.h"
#include "baton_redis.h"

/* The struct of type that holds member field at p (a task, a timer, a job
 * embedded in the object it works on). */
#define BATON__OWNER(p, type, field) ((type *)(void *)((char *)(p)-offsetof(type, field)))

#define BATON__ERRLEN    1024 /* room for a TLS URL with its file paths and the reason */
#define BATON__CID_LEN   16 /* hex chars of the client id */
#define BATON__TOKEN_LEN 48 /* client id + 32 hex chars (128 random bits) */
#define BATON__KEY_MAX   BATON_KEY_MAX

/* ---- util.c ---- */

int64_t baton__now_ns(void);
/* Fills buf with len bytes from getrandom(2). Returns 0 or BATON_EIO. */
int baton__random(void *buf, size_t len);
/* Writes v in decimal (no printf: this is on every acquire's path).
 * Returns buf. */
#define BATON__I64_LEN 24
char *baton__i64_str(int64_t v, char buf[BATON__I64_LEN]);
/* Writes 2n hex chars and a NUL into out. */
void baton__hex(const unsigned char *in, size_t n, char *out);
/* The one writer of error detail: bounded, always NUL-terminated. */
void baton__set_error(char *dst, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends "; " (when detail is not empty) and the formatted text to the
 * NUL-terminated detail of len bytes, truncating. */
void baton__append_detail(char *detail, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A small PRNG for jitter (xorshift64*); seed it from baton__random. */
uint64_t baton__rand_next(uint64_t *state);
/* d +/- 25%, uniformly. */
int64_t baton__jitter(int64_t d, uint64_t *state);
/* Absolute CLOCK_MONOTONIC deadline for pthread_cond_timedwait. */
void baton__timespec_at(int64_t ns, struct timespec *ts);
/* A condition variable that waits on CLOCK_MONOTONIC. */
int baton__cond_init_monotonic(pthread_cond_t *cv);

/* ---- url.c ---- */

enum baton__family { BATON__TCP, BATON__UNIX };

#define BATON__SENTINELS_MAX 16
#define BATON__SEEDS_MAX     16
#define BATON__QUORUM_MAX             BATON_QUORUM_MAX
#define BATON__QUORUM_MAX_TTL_MS      60000 /* max_ttl= when the URL does not say */
#define BATON__QUORUM_NODE_TIMEOUT_MS 50    /* node_timeout= when the URL does not say */

struct baton__hostport {
    char *host;
    int port;
};

struct baton__url {
    enum baton__family transport;
    bool tls;   /* rediss://, rediss-sentinel:// */
    char *host; /* TCP without Sentinel */
    int port;
    char *path; /* UNIX */
    int db;
    char *user; /* NULL: no ACL user */
    char *pass; /* NULL: no AUTH */
    /* Sentinel: the master group's name (NULL: no Sentinel) and the
     * sentinels to ask, with their own credentials. */
    char *master;
    struct baton__hostport *sentinels;
    int nsentinels;
    char *sentinel_user, *sentinel_pass;
    /* Redis Cluster: the seed nodes (redis-cluster://, rediss-cluster://) */
    bool cluster;
    struct baton__hostport *seeds;
    int nseeds;
    /* Redlock quorum (redis-quorum://): the masters are in seeds; the
     * longest lock ttl allowed and each master's time to answer, in ms
     * (0: not given, the defaults of quorum.c) */
    bool quorum;
    int max_ttl_ms, node_timeout_ms;
    /* TLS: files, SNI name, verification (default on) */
    char *tls_ca, *tls_capath, *tls_cert, *tls_key, *tls_sni;
    bool tls_verify;
    char *redacted; /* the URL without its passwords, for messages */
};

/* Parses text into *u. Returns 0, or BATON_EINVAL/ENOMEM with detail in err
 * (the text is not echoed in full, as it may hold a password). On failure u
 * is cleared. Free the fields with baton__url_clear(). */
int baton__url_parse(const char *text, struct baton__url *u, char *err, size_t errlen);
void baton__url_clear(struct baton__url *u);

/* ---- transports: sock.c, tls.c ----
 *
 * A transport moves bytes for a connection: connect, read, write, pending,
 * close, behind one table of functions (as hiredis's redisContextFuncs do
 * for its SSL module). conn.c frames RESP on top and never knows which
 * transport it uses. Sentinel is a layer above: it decides which endpoint
 * to connect to. */

struct baton__conn;
struct baton__node;
struct baton__tls; /* tls.c: a client's TLS settings, shared by its connections */

/* Where to connect: a TCP host and port, or a Unix socket path; over TLS
 * when tls is set (the certificate must then be for the SNI name of the
 * settings, else for host). */
struct baton__endpoint {
    const char *host;
    int port;
    const char *path;
    struct baton__tls *tls;
};

struct baton__transport {
    const char *name;
    /* Connects cn (whose fd is -1) to ep before deadline_ns. Returns 0, or
     * a negative code with the reason in cn->err ("connection refused",
     * "certificate verify failed: ..."). close() is called either way. */
    int (*connect)(struct baton__conn *cn, const struct baton__endpoint *ep, int64_t deadline_ns);
    /* Move up to len bytes. Return the count (> 0); 0 when the transport
     * would block, with cn->want set to the poll event it waits for (a TLS
     * read may need POLLOUT); or a negative code with cn marked broken and
     * the reason in cn->err. */
    ssize_t (*read)(struct baton__conn *cn, char *buf, size_t len);
    ssize_t (*write)(struct baton__conn *cn, const char *buf, size_t len);
    /* True when bytes already received sit inside the transport, where
     * poll() on the fd cannot see them (decrypted TLS records). */
    bool (*pending)(const struct baton__conn *cn);
    /* Frees the transport's state and closes the fd. */
    void (*close)(struct baton__conn *cn);
};

extern const struct baton__transport baton__sock_transport;
extern const struct baton__transport baton__tls_transport;

/* sock.c: opens a non-blocking, close-on-exec socket connected to ep's host
 * and port (or path) before deadline_ns. Returns the fd, or -1 with a
 * static reason in *why. */
int baton__sock_dial(const struct baton__endpoint *ep, int64_t deadline_ns, const char **why);
/* Waits for events on fd until deadline_ns. Returns 1 ready, 0 timed out,
 * -1 error (errno set). */
int baton__wait_fd(int fd, short events, int64_t deadline_ns);

/* tls.c: the TLS settings of u (CA, client certificate, SNI, verify) made
 * into an OpenSSL context. Returns 0 and *out (owned; baton__tls_free), or
 * BATON_EINVAL/ENOMEM with the reason in err ("cannot read the CA file
 * /etc/x.pem: No such file or directory"). */
int baton__tls_new(const struct baton__url *u, struct baton__tls **out, char *err, size_t errlen);
void baton__tls_free(struct baton__tls *t);

/* ---- conn.c ---- */

struct baton__conn {
    int fd;
    const struct baton__transport *tp;
    void *tls;  /* tls.c's per-connection state */
    short want; /* the poll event the transport waits for */
    redisReader *reader;
    char *obuf; /* pending output */
    size_t olen, ocap;
    bool broken; /* an I/O error or timeout: never reuse */
    /* Do not start new requests on it: it answered READONLY (no master
     * any more), or a sentinel announced that its server was replaced.
     * Set from other threads (sentinel.c), hence atomic. */
    _Atomic bool stale;
    char addr[80];  /* host:port (or path) it is connected to */
    char runid[41]; /* the server process's run id; "" when unknown */
    int64_t uptime_s; /* the server's uptime_in_seconds at connection (-1 unknown) */
    bool promoted;  /* the server is a replica promoted to master (INFO replication
                       second_repl_offset set): it may lack its old master's last writes */
    struct baton__node *node;          /* cluster.c: the node whose pool it belongs to
                                          (NULL: the URL's server) */
    struct baton__conn *next;          /* pool link */
    struct baton_client *listed;       /* in this client's live list (sentinel.c) */
    struct baton__conn *lprev, *lnext; /* that list's links */
    /* Set by whoever listed it (sentinel.c, a layer above): called by
     * baton__conn_free() first, to take it out. */
    void (*unlist)(struct baton__conn *cn);
    char err[BATON__ERRLEN];
};

/* Connects to ep (transport chosen by ep->tls) before deadline_ns: no
 * Redis command yet. Returns 0 and *out (owned; baton__conn_free), or a
 * negative code with the reason in err. */
int baton__conn_open(const struct baton__endpoint *ep, int64_t deadline_ns,
                     struct baton__conn **out, char *err, size_t errlen);
void baton__conn_free(struct baton__conn *cn);
/* Queues one command. Returns 0 or BATON_ENOMEM. */
int baton__conn_append(struct baton__conn *cn, int argc, const char **argv, const size_t *lens);
/* Queues one command already in RESP (redisFormatCommandArgv's output).
 * Returns 0 or BATON_ENOMEM. */
int baton__conn_append_raw(struct baton__conn *cn, const char *cmd, size_t len);
/* Writes all queued output. Returns 0 or BATON_EIO (conn broken). */
int baton__conn_flush(struct baton__conn *cn, int64_t deadline_ns);
/* Reads one reply. Returns 0 and *reply (owned; freeReplyObject), or
 * BATON_EIO / BATON_EPROTO with the conn marked broken. An error reply
 * READONLY marks the conn stale. */
int baton__conn_read(struct baton__conn *cn, redisReply **reply, int64_t deadline_ns);
/* The poll events to wait for before the next read, or 0 when a reply can
 * be read at once (bytes buffered in the transport). */
short baton__conn_read_events(const struct baton__conn *cn);
/* Marks cn broken with the message what + detail: for the transports
 * (sock.c, tls.c) as for conn.c, hence here and inline. */
static inline void baton__conn_fail(struct baton__conn *cn, const char *what, const char *detail)
{
    cn->broken = true;
    baton__set_error(cn->err, sizeof cn->err, "%s%s", what, detail);
}
/* Parses one reply from what has arrived, without blocking. Returns 1 and
 * *reply, 0 when none is complete yet (then nothing is left buffered in
 * the transport: poll the fd), or a negative code. */
int baton__conn_poll_reply(struct baton__conn *cn, redisReply **reply);
/* The loop's I/O (mux.c), none of which waits: appends formatted bytes to
 * the output (0 or BATON_ENOMEM); writes what it can (0 all written, 1 the
 * transport would block: wait for cn->want; a negative code: broken);
 * reads what has arrived into the reply parser (1 some came, 0 none, a
 * negative code: broken; bytes read before a failure stay parsable); takes
 * one parsed reply without reading (1 and *reply, 0 none complete, or
 * BATON_EPROTO). */
int baton__conn_append_raw(struct baton__conn *cn, const char *buf, size_t len);
/* Formats one command in RESP into a new buffer of *len bytes, after
 * prefix bytes left for the caller (ASKING). The same bytes as hiredis's
 * redisFormatCommandArgv, without its sprintf (measured: 15% of the
 * loop's time with 50 calls in flight). Returns 0 and *out (owned; free()),
 * or BATON_ENOMEM. */
int baton__resp_format(char **out, size_t prefix, int argc, const char *const *argv,
                       const size_t *lens, size_t *len);
int baton__conn_write_some(struct baton__conn *cn);
int baton__conn_fill(struct baton__conn *cn);
int baton__conn_next_reply(struct baton__conn *cn, redisReply **reply);
/* append + flush + read. */
int baton__conn_command(struct baton__conn *cn, int argc, const char **argv, const size_t *lens,
                        redisReply **reply, int64_t deadline_ns);
/* True for an error reply that says the server is not a master. */
bool baton__reply_readonly(const redisReply *r);

/* ---- scripts.c ---- */

enum baton__script_id {
    BATON__S_ACQUIRE,
    BATON__S_RELEASE,
    BATON__S_EXTEND,
    BATON__S_CANCEL,
    BATON__S_SEM_ACQUIRE,
    BATON__S_SEM_RELEASE,
    BATON__S_SEM_EXTEND,
    BATON__S_SEM_CANCEL,
    BATON__S_MULTI_ACQUIRE,
    BATON__S_CAMPAIGN,
    BATON__S_QUORUM_ACQUIRE,
    BATON__S_QUORUM_EXTEND,
    BATON__S_QUORUM_RELEASE,
    BATON__S_COUNT
};

/* The Lua source of a script. Static. */
const char *baton__script_source(enum baton__script_id id);

/* ---- sha1.c ---- */

/* Writes the 40 hex chars + NUL of SHA-1(data) into out. */
void baton__sha1_hex(const void *data, size_t len, char out[41]);

/* ---- client.c ---- */

struct baton__waiters;
struct baton__renewer;
struct baton__stats;

/* One shard of the connection pool. Threads pick a shard by thread id, so
 * that fifty threads do not convoy on one mutex. */
#define BATON__SHARDS 8

/* ---- loop.c ----
 *
 * The client's event loop (see loop.c): every function below but
 * baton__loop_of/post/here/stop/free runs on the loop thread only. */
struct baton__loop;

/* A closure run on the loop thread. Embedded in the object it works on. */
struct baton__task {
    void (*run)(struct baton__task *t);
    struct baton__task *next;
};

/* A timer of the loop; zero-initialized is disarmed. */
struct baton__timer {
    int64_t at; /* CLOCK_MONOTONIC ns */
    void (*fire)(struct baton__timer *t);
    int idx; /* position in the loop's heap, 0 when disarmed */
};

/* A job for the helper thread: blocking work (connecting, reading the
 * cluster's map). run() does it and posts its result back to the loop as a
 * task that calls baton__loop_offload_done(); when that post is refused
 * (the loop has stopped), run() cleans up itself. */
struct baton__job {
    void (*run)(struct baton__job *j);
    struct baton__job *next;
    bool queued; /* on the helper's list (under the loop's mutex) */
};

/* A connection watched by the loop: ready() gets epoll's events, flush()
 * writes what the turn queued. fd is -1 while not watched. */
struct baton__io {
    int fd;
    uint32_t events;
    bool dirty;
    void (*ready)(struct baton__io *io, uint32_t events);
    void (*flush)(struct baton__io *io);
};

/* The client's loop, started on first use. Returns NULL when the client
 * is closed (or ENOMEM: then c->closed is false). Any thread. */
struct baton__loop *baton__loop_of(struct baton_client *c);
/* Queues t to run on the loop thread (from the loop thread itself: later
 * in this turn, never inside the call). Returns false when the loop has
 * stopped: t will not run. Any thread. */
bool baton__loop_post(struct baton__loop *l, struct baton__task *t);
/* True on l's thread. Any thread. */
bool baton__loop_here(const struct baton__loop *l);
/* Stops the loop (failing what is pending, see loop.c) and the helper, and
 * waits for both. baton_client_free() only. */
void baton__loop_stop(struct baton_client *c);
void baton__loop_free(struct baton_client *c);
/* Loop thread only: */
void baton__loop_defer(struct baton__loop *l, struct baton__task *t);
bool baton__loop_stopping(const struct baton__loop *l);
int baton__timer_arm(struct baton__loop *l, struct baton__timer *t, int64_t at);
void baton__timer_disarm(struct baton__loop *l, struct baton__timer *t);
int baton__io_watch(struct baton__loop *l, struct baton__io *io, int fd, uint32_t events);
void baton__io_unwatch(struct baton__loop *l, struct baton__io *io);
/* Marks io to be flushed at the end of this turn. */
int baton__io_dirty(struct baton__loop *l, struct baton__io *io);
/* Runs j on the helper thread (started on first use). Returns 0; BATON_ENOMEM
 * (j will not run); BATON_EINVAL when j is still queued from an earlier
 * call (it runs once, for that call: a job on the list twice would cut off
 * the jobs queued behind it). */
int baton__loop_offload(struct baton__loop *l, struct baton__job *j);
/* A job's result has come back (its task runs). */
void baton__loop_offload_done(struct baton__loop *l);
/* What the loop does with the requests on its connections when it stops,
 * told by their owner (mux.c, above this file) with the first of them:
 * whether any is pending or in flight; fail every one; close every
 * connection (the loop's last act). */
struct baton__loop_conns {
    bool (*busy)(struct baton_client *c);
    void (*fail_all)(struct baton_client *c);
    void (*close_all)(struct baton_client *c);
};
/* Loop thread only. */
void baton__loop_set_conns(struct baton__loop *l, const struct baton__loop_conns *conns);

/* ---- mux.c ---- */

/* One request: a command, and optionally ASKING in front of it; a durable
 * one is answered by a WAIT behind it on the same connection. */
struct baton__wait;
struct baton__req {
    int argc;
    const char **argv; /* read only while baton__mux_submit() runs */
    const size_t *lens;
    int64_t deadline_ns;
    int wait_replicas; /* > 0: then WAIT wait_replicas wait_ms */
    int64_t wait_ms;
    bool asking; /* Redis Cluster: ASKING right before the command (an ASK
                    redirection), its +OK dropped */
    /* results */
    redisReply *reply; /* the command's (owned by the caller) */
    long long acked;   /* WAIT's answer (-1: no answer) */
    int64_t sent_ns;   /* a time before the command left; 0: it never did */
    char runid[41];    /* the run id of the server that answered, or "" */
    bool promoted;     /* and whether it is a promoted replica */
    char *err;         /* detail of a failure, prefixed by the redacted URL */
    size_t errlen;
};

/* A request in a pipe. The submitter sets rq and done; the rest is
 * mux.c's. */
struct baton__mreq {
    struct baton__req *rq;
    /* Called once, on the loop thread, with rc set; q may be freed inside. */
    void (*done)(struct baton__mreq *q);
    int rc;
    /* mux.c's */
    struct baton__mux *m;
    char *cmd; /* the formatted commands until they are in the connection's output */
    size_t len;
    int want, got;             /* replies: 1, +1 with ASKING */
    int where;                 /* not queued, waiting for a connection, or in flight */
    struct baton__timer timer; /* rq->deadline_ns */
    struct baton__task task;   /* a failure reported later in the turn */
    struct baton__mreq *next, *prev;
    struct baton__wait *group; /* durable: the WAIT that answers for it */
    struct baton__mreq *gnext, *gprev;
    bool batch_end; /* the last of the requests written by one write */
    unsigned gen;   /* waiting for a connection: the attempt it waits for */
};

/* The pipe of c (pipe: a BATON__PIPE_*) to node (NULL: the URL's server),
 * made on first use. Returns NULL on ENOMEM. Loop thread only. */
struct baton__mux *baton__mux_of(struct baton_client *c, struct baton__node *node, int pipe);
/* Frees every pipe of c: its last reference, the loop has stopped. */
void baton__mux_free_all(struct baton_client *c);
/* Sends q->rq's commands on m's connection, opening one (on the helper)
 * if there is none or it is stale, and calls q->done once the replies came
 * (rc 0, rq->reply owned by the submitter, rq->acked), or on failure (a
 * negative rc, detail in rq->err): the connection failed or was given up
 * (BATON_EIO, BATON_EPROTO: every request in flight on it fails), the
 * deadline passed (in flight: the connection is given up; waiting for one:
 * only q fails), or the client is being freed. Never calls q->done inside
 * the call. Loop thread only. */
void baton__mux_submit(struct baton_client *c, struct baton__mux *m, struct baton__mreq *q);

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
/* Opens a connection outside the pool (subscriber); with Redis Cluster to
 * any master (classic pub/sub reaches every node). Same contract. */
int baton__client_open(struct baton_client *c, struct baton__conn **out, char *err, size_t errlen);
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

/* Runs a script by SHA on cn, falling back to EVAL on NOSCRIPT (a
 * restarted or flushed server), all before deadline_ns; with wait_replicas
 * > 0, WAIT follows it. Returns 0 with *reply (owned), an error reply
 * included (MOVED, READONLY...: the caller decides); I/O failures carry
 * the redacted URL; fewer acknowledgements than wait_replicas:
 * BATON_ENOTDURABLE (the reply is freed). */
int baton__eval(struct baton_client *c, struct baton__conn *cn, const char *sha, const char *src,
                int nkeys, const char *const *keys, int nargs, const char *const *args,
                int wait_replicas, redisReply **reply, int64_t deadline_ns, char *err,
                size_t errlen);
/* baton_client_eval() on a pooled connection, durable (WAIT for
 * min_replicas) or not (reads). */
int baton__client_eval(struct baton_client *c, const char *script, int nkeys,
                       const char *const *keys, int nargs, const char *const *args, bool durable,
                       struct baton_reply **out);

/* One call of one of our scripts, run on the loop (call.c): to the
 * server's pipe, or on a cluster to the pipe of the master of its keys'
 * slot. */
struct baton__call {
    enum baton__script_id id;
    int nkeys;
    const char *const *keys; /* keys and args: valid until done() runs */
    int nargs;
    const char *const *args;
    int64_t deadline_ns;
    /* A grant or an extension: with min_replicas, WAIT for them, the
     * acknowledgement due by deadline_ns (set it no later than the grant's
     * own validity deadline). */
    bool durable;
    /* Always through the loop, never on the calling thread (renewals: a
     * client being freed fails them at once there; baton__script_call). */
    bool via_loop;
    /* results */
    redisReply *reply; /* owned by the caller */
    int64_t sent_ns;
    char runid[41];
    bool promoted;
    char *err;
    size_t errlen;
    int rc;
    /* baton__call_start(): called once on the loop thread with the result
     * (k may be freed inside); arg is the caller's. */
    void (*done)(struct baton__call *k);
    void *arg;
    /* call.c's */
    struct baton_client *c;
    struct baton__req rq;
    struct baton__mreq q;
    struct baton__task task;
    struct baton__timer nap;
    struct baton__job job;
    struct baton__node *node, *ask;
    unsigned slot;
    int hops, unsent, route_rc;
    bool evaled, readonly_retried;
    int64_t round_sent, keep_sent;
    redisReply *held; /* a redirection kept as the answer if time runs out */
};
/* Runs k's script by SHA (EVAL on NOSCRIPT; once more on a new connection
 * when the server answered READONLY, within the deadline; on a cluster,
 * following MOVED, ASK, TRYAGAIN and CLUSTERDOWN). Returns 0 with
 * k->reply; BATON_ENOTDURABLE with k->reply too (the script ran; the
 * caller undoes a grant); or a negative code with detail in k->err (error
 * replies: BATON_EREDIS). Blocks the calling thread until the call is
 * done: on that thread, on a pooled connection, when no other call of c
 * is in flight (one server, not durable, not k->via_loop), else on the
 * loop; on the loop thread itself it refuses (BATON_EINVAL). */
int baton__script_call(struct baton_client *c, struct baton__call *k);
/* Starts k on the loop: k->done(k) runs there with k->rc as
 * baton__script_call() would return it (never inside this call). Returns
 * false when the loop is gone (the client was freed): k->done will not
 * run, k->rc and k->err say why. Any thread. */
bool baton__call_start(struct baton_client *c, struct baton__call *k);
/* What client.c shares with call.c: argv of a script call; WAIT's timeout
 * for a call due by deadline_ns; the ENOTDURABLE detail; NOSCRIPT. */
#define BATON__SCRIPT_MAX_ARGS 64 /* the multi-lock script: 3 per key + 4 */
int baton__script_argv(const char *verb, const char *script, int nkeys, const char *const *keys,
                       int nargs, const char *const *args, const char **argv, size_t *lens,
                       char nkeys_buf[BATON__I64_LEN]);
int64_t baton__wait_ms_until(int64_t deadline_ns);
int baton__not_durable(struct baton_client *c, long long acked, char *err, size_t errlen);
bool baton__is_noscript(const redisReply *r);
/* The deadline of a durable call made now for a lease of ttl_ms: the
 * command timeout, and no later than the lease's validity deadline. */
int64_t baton__client_grant_deadline(const struct baton_client *c, int64_t ttl_ms);
/* Sets the client's error detail (under its mutex). */
void baton__client_error(struct baton_client *c, const char *msg);

/* ---- lock.c (shared with renew.c and waiters.c) ---- */

struct baton_lock {
    struct baton_client *c;
    char *key;                 /* the user's key (one allocation with rkeys) */
#define BATON__RKEYS 5
    char *rkeys[BATON__RKEYS]; /* lock, fence counter, queue, queue expiries, queue leases */
    _Atomic bool ever_renewed; /* registered with the renewer at some time */
    char *token;               /* 48 hex chars [+ ":" + identity] (same allocation) */
    const char *release_chan;  /* elections: published to on release; else NULL */
    const char *release_self;  /* elections: our own successor channel, or NULL */
    /* BATON__S_EXTEND; semaphore permits: BATON__S_SEM_EXTEND */
    enum baton__script_id extend_script;
    /* Semaphore permits: the semaphore's limit, and the prep and read
     * functions below run sem.c's scripts; 0 for a lock. */
    int sem_limit;
    /* Semaphore permits: our entry in the waiters' queue as the last
     * acquire attempt wrote it ("" none); the acquire's, on the loop */
#define BATON__QENTRY_LEN (2 * BATON__I64_LEN + BATON__TOKEN_LEN + 8)
    char qentry[BATON__QENTRY_LEN];
    int64_t ttl_ms;
    int64_t renew_ms;
    baton_lost_fn on_lost;
    void *on_lost_arg;

    pthread_mutex_t mu; /* orders confirmations and the loss report */
    _Atomic uint64_t fence;
    _Atomic int64_t deadline_ns;
    _Atomic bool lost;
    _Atomic bool released;
    int64_t confirmed_sent_ns;    /* under mu: send time of the last confirmation */
    char runid[41];               /* under mu: the server that granted it ("" unknown) */
    char lost_why[BATON__ERRLEN]; /* under mu; written once, before lost is set */
    char errstr[BATON__ERRLEN];   /* owner thread's last failure */

    /* stats.c's: set while a grant is counted as held in class stats_class */
    _Atomic bool stats_held;
    int stats_class;

    /* renew.c's, under the renewer's mutex */
    bool renewing;
    int busy; /* the renewal thread is using it */
    int64_t next_renew_ns;
    struct baton_lock *rnext, *rprev; /* the renewer's list */
    struct baton_lock *bnext;         /* the renewer's current batch */
    bool batch_expired;               /* in the batch because its deadline passed */
    _Atomic bool free_pending;        /* freed by the renewal thread when not busy */
};
/* What baton_lock_free() does once no renewal uses lk any more. */
void baton__lock_destroy(struct baton_lock *lk);

/* Makes a lock object (no Redis I/O) on the Redis key base (its companions
 * are base + ":fence", ":q", ":qx", ":qt"). name is shown in messages; identity,
 * when not NULL, is appended to the token after a ':'. o must be
 * normalized. Returns 0 and *out, or BATON_ENOMEM/EIO. */
int baton__lock_new(struct baton_client *c, const char *base, const char *name,
                    const char *identity, const struct baton_lock_opts *o, struct baton_lock **out);
/* The lock object of the user's key (the Redis key prefix{key}); key
 * checked by the caller. Same contract. */
int baton__lock_new_user(struct baton_client *c, const char *key, const struct baton_lock_opts *o,
                         struct baton_lock **out);
/* lock_async.c: the asynchronous try (wait false) or acquire of lk, a
 * lock object made and not yet used (a semaphore's permit too), counted
 * in the stats under stats_key (which outlives the operation); o
 * normalized; not on a quorum. On failure lk is freed before cb gets
 * NULL. Returns 0 (cb will run on the loop thread), or EINVAL/ENOMEM
 * (lk not freed, cb never runs). */
int baton__lock_start(struct baton_client *c, struct baton_lock *lk, const char *stats_key,
                      const struct baton_lock_opts *o, bool wait, baton_lock_cb cb, void *arg);
/* The same, its thread asleep until the result: 0 and *out = lk, or the
 * error (lk freed, *out NULL). Refused on the loop thread (EINVAL). */
int baton__lock_start_wait(struct baton_client *c, struct baton_lock *lk, const char *stats_key,
                           const struct baton_lock_opts *o, bool wait, struct baton_lock **out);
/* Fills *o from in with defaults applied. Returns 0 or BATON_EINVAL. */
int baton__lock_opts(const struct baton_lock_opts *in, struct baton_lock_opts *o);
/* What an acquire attempt saw of the holder when it was refused. */
struct baton__holder {
    int64_t pttl_ms; /* remaining lease, -1 unknown */
    char value[320]; /* the lock's value (truncated) */
    uint64_t fence;  /* the last fence granted */
};

/* A lock script call and what its arguments point to, prepared by
 * baton__lock_prep_*() for either form (the blocking functions of lock.c,
 * lock_async.c), its result read by the matching function below, which
 * frees the reply. */
struct baton__lock_call {
    struct baton__call k;
    const char *keys[5];
    const char *args[7];
    char n1[BATON__I64_LEN], n2[BATON__I64_LEN], n3[BATON__I64_LEN];
    char err[BATON__ERRLEN]; /* the detail of best-effort calls (drop, cancel) */
};
/* The acquire script (lk->errstr gets the detail); wait: join (or stay
 * in) the queue; queued: lk may be in it already. */
void baton__lock_prep_acquire(struct baton_lock *lk, bool wait, bool queued, int64_t entry_ttl_ms,
                              struct baton__lock_call *lc);
/* The release script, also used to drop a grant we will not use. */
void baton__lock_prep_release(struct baton_lock *lk, struct baton__lock_call *lc, char *err,
                              size_t errlen);
/* The cancel script (leave the queue), detail in lc->err. */
void baton__lock_prep_cancel(struct baton_lock *lk, struct baton__lock_call *lc);
/* The extend script (lk->extend_script) to ttl_ms, due by deadline_ns and
 * by the grant's validity. */
void baton__lock_prep_extend(struct baton_lock *lk, int64_t ttl_ms, int64_t deadline_ns,
                             struct baton__lock_call *lc, char *err, size_t errlen);
/* The acquire's result rc: 0 granted (fence, deadline, server set);
 * BATON_ETAKEN with *h; BATON_ENOTDURABLE (with *drop: granted on the
 * master only, to be given back by a release call); or the error. */
int baton__lock_took(struct baton_lock *lk, struct baton__call *k, int rc, struct baton__holder *h,
                     bool *drop);
/* The release's result: 0 (released, counted), BATON_ELOST (not ours:
 * marked lost), BATON_EPROTO, or the error. */
int baton__lock_released(struct baton_lock *lk, struct baton__call *k, int rc);
/* The end of a best-effort call (k->rc set: a grant dropped, a queue left):
 * its reply, if any, freed; a permit's give-back first hands a slot it
 * granted to a waiter of this client over. */
void baton__lock_discard(struct baton_lock *lk, struct baton__call *k);

/* sem.c: the scripts of a permit (lk->sem_limit > 0), prepared and read
 * for the functions above, which hand a permit's calls over to these. */
void baton__sem_prep_acquire(struct baton_lock *lk, bool wait, bool queued, int64_t entry_ttl_ms,
                             struct baton__lock_call *lc);
/* As baton__lock_took(); *h gets the time until the earliest lease ends
 * (pttl_ms) and the last fence, its value "". */
int baton__sem_took(struct baton_lock *lk, struct baton__call *k, int rc, struct baton__holder *h,
                    bool *drop);
/* The release (id BATON__S_SEM_RELEASE) or cancel (BATON__S_SEM_CANCEL:
 * entry, the waiter's queue entry or NULL, is taken out of the queue) of
 * token on the semaphore's keys rkeys (holders, fence, q). */
void baton__sem_prep_give_back(struct baton_client *c, char *const *rkeys, enum baton__script_id id,
                               const char *token, const char *entry, struct baton__lock_call *lc,
                               char *err, size_t errlen);
/* Its result: 0 with *held (1 released or passed on, 0 not held), or an
 * error. A slot granted to a waiter of this client is handed to it here. */
int baton__sem_gave_back(struct baton_client *c, struct baton__call *k, int rc, long long *held);
/* The extension's result: as baton__lock_extend_call(); *drop: a failover
 * answered, the grant to be given back by a release call. */
int baton__lock_extended(struct baton_lock *lk, struct baton__call *k, int rc, int64_t ttl_ms,
                         bool renewal, char *err, size_t errlen, bool *drop);
/* Marks lk lost with a reason (first reason wins) and calls on_lost once.
 * Safe from any thread. */
void baton__lock_mark_lost(struct baton_lock *lk, const char *why);
/* Records a confirmed grant or extension sent at sent_ns. */
void baton__lock_confirm(struct baton_lock *lk, int64_t sent_ns, int64_t ttl_ms);
/* Records the server that granted lk. */
void baton__lock_granted_by(struct baton_lock *lk, const char *runid);
/* One extension of lk to ttl_ms by deadline_ns, by its extend script.
 * Returns 0 (confirmed: deadline moved); BATON_ELOST (marked lost: not ours
 * any more, or answered by another server than the one that granted it,
 * without min_replicas: then it is released there); BATON_ENOTDURABLE
 * (not acknowledged: deadline kept); or an error. Detail in err. */
int baton__lock_extend_call(struct baton_lock *lk, int64_t ttl_ms, int64_t deadline_ns,
                            bool renewal, char *err, size_t errlen);

/* ---- waiters.c ---- */

struct baton__waiter {
    const char *key;
    const char *token;
    bool woken;
    /* Wakes it: called under the waiters' lock, from the subscriber (or a
     * releasing) thread; it only posts a task to the loop. */
    void (*wake)(struct baton__waiter *w);
    struct baton__waiter *next, *prev;
    /* A semaphore grant handed over by baton__waiters_grant() (a release
     * in this process: grant_sent_ns is its send time) or by the
     * subscriber (a grant published by a release elsewhere: grant_sent_ns
     * 0). The fields are written, under the waiters' lock, before granted
     * is set; a second grant of the token (after the first ran out) may
     * rewrite them, and sem.c only trusts a fence above what it last saw. */
    _Atomic bool granted;
    uint64_t grant_fence;
    int64_t grant_sent_ns;
};

/* Registers w (w->wake set) as a waiter of w->key. Returns 0;
 * BATON_EQUEUEFULL when the process already has max_waiters_per_key
 * waiters for it. Starts the subscriber on first use (it wakes every
 * waiter once subscribed). */
int baton__waiters_enter(struct baton_client *c, struct baton__waiter *w);
void baton__waiters_leave(struct baton_client *c, struct baton__waiter *w);
/* Whether w was woken since the last look (the flag is cleared). */
bool baton__waiters_take_wake(struct baton_client *c, struct baton__waiter *w);
/* Hands a grant to this client's waiter of token (a semaphore release
 * that gave its slot to a waiter of the same process) and wakes it: fence,
 * and the send time of the request that granted it (not 0). Returns false when no
 * such waiter waits any more (it then finds the grant in Redis, or its
 * cancel passes it on). */
bool baton__waiters_grant(struct baton_client *c, const char *token, uint64_t fence,
                          int64_t sent_ns);
/* The prefix of the channels on which waiters are woken (the scripts
 * append a client id). */
const char *baton__waiters_channel(const struct baton_client *c);
void baton__waiters_stop(struct baton_client *c);

/* ---- renew.c ---- */

int baton__renew_add(struct baton_lock *lk, int64_t renew_ms);
/* Stops renewing lk; waits for a renewal of lk in flight to finish. On the
 * loop thread (which that renewal may be waiting for) it does not wait:
 * with free_after, lk is then left for the renewal thread to free once its
 * renewal is done, and true is returned. */
bool baton__renew_remove(struct baton_lock *lk, bool free_after);
/* Stops renewing lk without waiting (again: a no-op). Returns true while a
 * renewal of lk is still in flight. */
bool baton__renew_unlink(struct baton_lock *lk);
void baton__renew_stop(struct baton_client *c);

/* ---- stats.c ---- */

/* Returns: owned; free with baton__stats_free(). NULL on ENOMEM. */
struct baton__stats *baton__stats_new(void);
void baton__stats_free(struct baton__stats *st);
/* The hooks. key is the user's key (its class is the part before the first
 * ':'). A grant marks lk held; released/lost/dropped unmark it, and the
 * first of them to do so counts (a lock is held at most once). */
void baton__stats_granted(struct baton_lock *lk, const char *key, int64_t wait_ns, bool contended);
/* An acquire found key held: contention; timed_out: it then gave up. */
void baton__stats_refused(struct baton_client *c, const char *key, bool timed_out);
void baton__stats_released(struct baton_lock *lk);
void baton__stats_lost(struct baton_lock *lk);
/* Freed while still counted as held (never released). */
void baton__stats_dropped(struct baton_lock *lk);

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
/* Connection set-up shared with client.c: AUTH [user] pass, SELECT db,
 * INFO server (the run id), INFO replication (promoted or not), and with
 * check_role ROLE, pipelined. Returns 0,
 * BATON_EAUTH, BATON_EREDIS, or an I/O error, with detail in cn->err. */
int baton__conn_hello(struct baton__conn *cn, const char *user, const char *pass, int db,
                      bool check_role, int64_t deadline_ns);

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

/* ---- quorum.c ----
 *
 * A Redlock quorum: N independent masters, each with its own connection
 * pool and muxes (a struct baton__node, as a cluster node). A request goes
 * to every master at once (pipelined on the calling thread's shard's mux
 * of each, answers awaited in turn, each bounded by node_timeout) and
 * holds when a majority of the masters that count granted it. A master
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
/* The lock calls over the quorum, with lock.c's contracts. An election's
 * lock (extend_script BATON__S_QUORUM_EXTEND) is taken again, on renewal,
 * where it is free and the master's counter is not above its term. */
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
int baton__quorum_try(struct baton_lock *lk, struct baton__holder *h);
int baton__quorum_acquire(struct baton_lock *lk, const struct baton_lock_opts *o);
int baton__quorum_extend(struct baton_lock *lk, int64_t ttl_ms, int64_t deadline_ns,
                         bool renewal, char *err, size_t errlen);
int baton__quorum_release(struct baton_lock *lk);
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

/* ---- command.c ---- */

/* A deep copy of a hiredis reply (an error reply becomes a string).
 * Returns: owned (baton_reply_free), or NULL on ENOMEM. */
struct baton_reply *baton__reply_convert(const redisReply *r);

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
/* Makes l for n masters (no thread yet, no I/O). Returns 0 or ENOMEM. */
int baton__qloop_new(struct baton_client *c, int n, struct baton__qloop **out);
/* Sends k to every master whose part is not skip, each bounded by its
 * deadline_ns (set them first), and returns once each has its reply or
 * its failure. Starts the thread on first use. Thread-safe. */
void baton__qloop_call(struct baton__qloop *l, struct baton__qcall *k);
/* Stops the thread and closes the connections; calls made after fail. */
void baton__qloop_stop(struct baton__qloop *l);
/* Stops and frees l. NULL is a no-op. */
void baton__qloop_free(struct baton__qloop *l);

/* ---- multi.c ---- */

/* The Redis Cluster hash slot of a Redis key (CRC16/XMODEM of its hash tag,
 * mod 16384). */
unsigned baton__key_slot(const char *rkey, size_t len);

#endif /* BATON_INT_H */
