/* base_int.h -- libbaton internals: the bottom layer (utilities, URLs,
 * SHA-1, the Lua scripts), and the map of the layers.
 *
 * The layers of src/lib, bottom up: each is a header that includes the
 * one below it, and the files of a layer include their layer's header and
 * call only their own layer and those below. What a lower layer must tell
 * a higher one goes through a hook the higher one sets (a connection's
 * unlist, the loop's conns, the client's destroy), never a call up
 * (tests/integration/test_layers.sh checks both).
 *
 *   base_int.h       util.c     clock, randomness, hex, the one error-detail writer
 *                    url.c      redis://, rediss://, unix://, redis(s)-sentinel://,
 *                               redis(s)-cluster://, redis(s)-quorum:// URLs
 *                    sha1.c, scripts.c  the Lua scripts (acquire, release,
 *                               extend, cancel...) and the argv of a call
 *   transport_int.h  sock.c     transport: TCP and Unix sockets, non-blocking
 *                    tls.c      transport: TLS (OpenSSL) over TCP
 *                    conn.c     one connection: a transport carrying RESP, which
 *                               hiredis parses (redisReader)
 *                    reply.c    hiredis's replies made ours (struct baton_reply)
 *   topology_int.h   the client object, and where its connections go:
 *                    pool.c     connecting (AUTH, SELECT, run id, role) and the
 *                               pool of idle connections
 *                    sentinel.c the master found through the sentinels, and
 *                               +switch-master followed
 *                    cluster.c  Redis Cluster: the slot map (CLUSTER SLOTS), a pool
 *                               per master node, MOVED / ASK / TRYAGAIN followed
 *                    quorum.c   a Redlock quorum: its masters, which count, and a
 *                               request to all of them; qloop.c its I/O thread
 *   loop_int.h       loop.c     the client's event loop thread: posted tasks,
 *                               timers, epoll, the helper thread for what blocks
 *                    mux.c      a pipe: a connection to a server that the loop keeps
 *                               many requests in flight on, written and read in
 *                               batches (two lanes per server, one for durable calls)
 *                    call.c     a script call as a state machine on the loop
 *                               (NOSCRIPT, READONLY, cluster redirections, WAIT); a
 *                               script on one connection (baton__eval)
 *                    command.c  the raw calls of baton_redis.h
 *   lock_int.h       waiters.c  waiting: flood control, the shared subscriber thread
 *                    renew.c    auto-renewal: the shared renewal thread
 *                    lock.c, lock_async.c, with_lock.c  the lock API
 *                    stats.c    per-client counters by key class
 *                    sem.c, multi.c, once.c  semaphores, multi-locks, once
 *                    quorum_lock.c  locks over a Redlock quorum
 *                    election.c, leader.c  elections, and leaders on them
 *   client.c         baton_client_new() and _free(): the top, which makes
 *                    and frees what every layer hangs on the client
 */
#ifndef BATON_BASE_INT_H
#define BATON_BASE_INT_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "baton.h"

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

/* argv of a script call (EVALSHA sha or EVAL source, numkeys, keys, args)
 * into argv and lens (room entries each). Returns argc, or -1 when there
 * are more than room. */
#define BATON__SCRIPT_MAX_ARGS 64 /* the library's own scripts (the multi-lock: 3 per key + 4) */
int baton__script_argv(const char *verb, const char *script, int nkeys, const char *const *keys,
                       int nargs, const char *const *args, const char **argv, size_t *lens,
                       char nkeys_buf[BATON__I64_LEN], size_t room);

/* ---- sha1.c ---- */

/* Writes the 40 hex chars + NUL of SHA-1(data) into out. */
void baton__sha1_hex(const void *data, size_t len, char out[41]);

#endif /* BATON_BASE_INT_H */
