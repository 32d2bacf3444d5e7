/* baton.h -- libbaton, distributed locks over Redis.
 *
 * libbaton's headers, by audience (as hiredis has hiredis.h, async.h and
 * hiredis_ssl.h), all installed and all public, stable API:
 *   baton.h           this one: for lock users. The client, locks (blocking
 *                     and asynchronous), baton_with_lock(), semaphores,
 *                     multi-locks, once, leaders (a thread that campaigns
 *                     for a daemon), stats and errors.
 *   baton_election.h  the election primitives, one bounded Redis call each,
 *                     for a daemon that drives its campaign from its own
 *                     event loop (the baton supervisor).
 *   baton_redis.h     raw Redis calls for tools that keep their own data
 *                     beside the locks: a command or script, on the
 *                     client's connections or on every master of a quorum.
 * baton.h includes neither of the others; they include it. The rest of
 * src/lib is private (names starting with baton__).
 *
 * Model:
 *   struct baton_client  one per process (or per Redis deployment). Owns
 *                        one event loop thread, started with its first
 *                        operation, which keeps every lock operation of
 *                        the process in flight on two pipelined
 *                        connections per server (lanes by key, so that the
 *                        calls on one lock keep their order; one more for
 *                        durable grants, with min_replicas): it writes all
 *                        the requests of a turn with one write per
 *                        connection and reads all the replies that came
 *                        with one read, and it holds the one
 *                        subscription that wakes waiters. Blocking calls
 *                        post their request to the loop and sleep until it
 *                        completes, except one made while nothing else of
 *                        the client is in flight, on one server: that one
 *                        does its own round trip on a pooled connection
 *                        (no hop to the loop thread and back). The _async
 *                        calls return at once and call back on the loop. Also, started on first
 *                        need: a helper thread that connects (connecting
 *                        blocks: DNS, TLS, Sentinel) and one renewal thread
 *                        (auto-renewed locks).
 *   struct baton_lock    one granted lock. Carries its owner token, its
 *                        fencing token and its validity deadline.
 *
 * Conventions:
 *   - Functions that act return 0 (BATON_OK) or a negative BATON_E* code.
 *     Predicates return bool.
 *   - Durations are milliseconds (int64_t). Deadlines are CLOCK_MONOTONIC
 *     nanoseconds.
 *   - Option structs: a field left 0 takes the documented default, so
 *     `struct baton_lock_opts o = {.ttl_ms = 5000};` is a complete value.
 *   - Thread safety is stated on every object below.
 */
#ifndef BATON_H
#define BATON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h> /* FILE, for baton_stats_write_prometheus() */

#ifdef __cplusplus
extern "C" {
#endif

#define BATON_VERSION_MAJOR 0
#define BATON_VERSION_MINOR 1
#define BATON_VERSION_PATCH 0

#if defined(__GNUC__)
#define BATON_API __attribute__((visibility("default")))
#else
#define BATON_API
#endif

/* ------------------------------------------------------------------------ */
/* Errors: one table, which generates the enum, baton_strerror() and
 * baton_errname(). Contention is a result (BATON_ETAKEN), not a failure. */

#define BATON_ERRNO_MAP(X)                                                                         \
    X(OK, 0, "success")                                                                            \
    X(EINVAL, -1, "invalid argument")                                                              \
    X(ENOMEM, -2, "out of memory")                                                                 \
    X(EIO, -3, "redis unreachable or i/o error")                                                   \
    X(EPROTO, -4, "unexpected reply from redis")                                                   \
    X(EREDIS, -5, "redis answered with an error")                                                  \
    X(EAUTH, -6, "redis refused the credentials")                                                  \
    X(ETAKEN, -7, "held by another owner")                                                         \
    X(ETIMEDOUT, -8, "not acquired within the maximum wait")                                       \
    X(ELOST, -9, "no longer held by this owner")                                                   \
    X(EQUEUEFULL, -10, "too many waiters for this key in this process")                          \
    X(ENOTDURABLE, -11, "not acknowledged by min_replicas replicas in time")                      \
    X(ETLS, -12, "TLS handshake or certificate verification failed")

enum baton_err {
#define BATON_ERR_ENUM_(name, code, msg) BATON_##name = code,
    BATON_ERRNO_MAP(BATON_ERR_ENUM_)
#undef BATON_ERR_ENUM_
};

/* Returns: a static description of code ("unknown error" for codes outside
 * the table). */
BATON_API const char *baton_strerror(int code);
/* Returns: the static name of code without prefix ("ETAKEN"), or "UNKNOWN". */
BATON_API const char *baton_errname(int code);

/* ------------------------------------------------------------------------ */
/* Client. Thread-safe: share one client between all threads of a process.
 * Lock, semaphore, multi-lock, once and election operations travel on the
 * client's pipelined connections (two per server), run by its loop thread
 * (the requests of every thread and callback of a turn written together:
 * Redis then reads and answers many per system call), or, for a blocking
 * call alone in flight, on the caller's thread; when one of them
 * times out, the connection is given up and the requests in flight on it
 * fail with BATON_EIO too (each gets exactly one result), and the next
 * operation opens a new one. Commands of baton_client_command() and
 * _eval() (baton_redis.h), which may block, take a pooled connection of their own for their
 * duration, on the calling thread. */

struct baton_client;

struct baton_client_opts {
    int64_t connect_timeout_ms; /* default 2000; bounds the TLS handshake too */
    int64_t command_timeout_ms; /* default 2000: bound on each operation,
                                   connecting included */
    int max_waiters_per_key;    /* default 1000; -1: unbounded. Flood control:
                                   waiters of one key in this process beyond
                                   it get BATON_EQUEUEFULL at once. */
    const char *key_prefix;     /* default "baton:"; must not contain '{' */
    bool lazy;                  /* do not connect in baton_client_new(): the
                                   first operation connects (for daemons that
                                   start before Redis) */
    /* Credentials of the data nodes. When set, they replace the URL's (a
     * user of "" means none). Copied: the caller may wipe its copy once
     * baton_client_new() returns. Never shown in any message. The library
     * reads no environment variable and no file: the caller does (the
     * baton command reads BATON_REDIS_PASSWORD and --password-file). */
    const char *user;
    const char *password;
    /* Credentials of the sentinels (redis-sentinel:// URLs), separate from
     * the data nodes'. Replace the URL's sentinel_user=/sentinel_password=. */
    const char *sentinel_user;
    const char *sentinel_password;
    /* Durable grants: 0 (default) or N in 1..16. Every grant, extension
     * and renewal of a lock, permit, multi-lock or election, and every
     * script of baton_client_eval(), is followed on the same connection by
     * WAIT N, bounded by the grant's own deadline (and the command
     * timeout); fewer than N replica acknowledgements in time means
     * BATON_ENOTDURABLE: not granted (a grant is then released at once),
     * not renewed (the lock keeps its old deadline), the script's effect
     * not to be relied on. What it buys: a Sentinel failover to a replica
     * that acknowledged keeps the grant, and the holder keeps trusting it.
     * What it does not: WAIT is not consensus; a failover may still pick
     * a replica that did not acknowledge (Sentinel prefers the one with the
     * most data, which has every acknowledged write unless it was itself
     * lagging behind another), and a write that was not acknowledged may
     * still survive. */
    int min_replicas;
};

/* Parses url, connects one connection (to validate URL, credentials and
 * reachability) and returns the client in *out.
 *   url: redis://[[user]:pass@]host[:port][/db]  (default port 6379, db 0)
 *        rediss://[[user]:pass@]host[:port][/db][?TLS]   (default port 6379)
 *        unix:///path/to/socket[?db=N&password=P&user=U]
 *        redis-sentinel://[[user]:pass@]h1[:p1],h2[:p2],...[/db]?master=NAME
 *            [&sentinel_user=U&sentinel_password=P]  (default port 26379)
 *        rediss-sentinel://...  (TLS to the sentinels and to the data nodes;
 *            the same TLS parameters)
 *        redis-cluster://[[user]:pass@]h1[:p1],h2[:p2],...[/0]  (seed nodes of
 *            a Redis Cluster, at most 16, default port 6379; database 0 only)
 *        rediss-cluster://...  (TLS to every node; the same TLS parameters)
 *        redis-quorum://[[user]:pass@]h1[:p1],...,hN[:pN][/db]
 *            [?max_ttl=MS&node_timeout=MS]  (a Redlock quorum of N independent
 *            masters, N odd, 3..9; the same credentials and db on each;
 *            max_ttl: the longest lock ttl, default 60000; node_timeout: each
 *            master's time to answer, default 50)
 *        rediss-quorum://...  (TLS to every master; the same TLS parameters)
 *   TLS parameters: ca=FILE (PEM CA bundle), capath=DIR (hashed CA dir;
 *   without ca/capath the system's default CAs), cert=FILE and key=FILE
 *   (client certificate for mutual TLS: both or neither), sni=NAME (sent
 *   in the handshake and verified instead of the host), verify=peer
 *   (default: the chain and the host name or IP address) or verify=none
 *   (no verification at all: see baton_client_tls_insecure()).
 * Sentinel: each new connection asks the sentinels in turn (starting with
 * the last that answered) for the master's address, connects to it and
 * checks with ROLE that it is a master (a ROLE refused by an ACL is
 * skipped); a connection that fails, a READONLY answer, or a
 * +switch-master published by a sentinel (the client keeps one
 * subscription, on a thread of its own) sends the next operation through
 * the sentinels again; +switch-master also closes every connection to the
 * old master at once.
 * A grant is tied to the Redis server process that made it (its run id,
 * read with INFO at connect; unknown if INFO is refused). Without
 * min_replicas, a renewal answered by another server process that is a
 * promoted replica (a failover) is not trusted: the lock is reported lost
 * at once and released there if it is still ours, so that waiters need
 * not wait out its ttl; the holder re-acquires, with a token from the new
 * master. The same master restarted is trusted (its persistence kept the
 * grant, or the renewal finds nothing). With min_replicas, a renewal that
 * finds the grant on the new master confirms it.
 * Redis Cluster: the slot map is read with CLUSTER SLOTS from a node that
 * answers (when the client is made, unless lazy); each master gets a
 * connection pool of its own. Every operation goes to the master of its
 * keys' slot: all the keys of one lock, semaphore, election or once share
 * the hash tag {name} (prefix{name}..., one slot); baton_client_command()
 * routes by the command's first key (EVAL/EVALSHA: the first of KEYS; no
 * key: any master). MOVED points the slot at the new master and has the
 * map read again, ASK sends the request once more to the node named,
 * after ASKING; TRYAGAIN and CLUSTERDOWN are retried after a short wait; a
 * failed connection has the map read again before the next request. All
 * within the operation's timeout; a request that may have run is never
 * sent twice. A failover to a replica is handled as with Sentinel below.
 * Redlock quorum (redis-quorum://): every request goes to all masters at
 * once, through one I/O thread per client with one connection per master,
 * on which every thread's requests are pipelined; each master is given
 * node_timeout to connect and node_timeout to answer, the whole request the
 * command timeout; a master that failed is left alone for 2 node_timeouts,
 * doubled for each failure in a row up to 10 (at least 500 ms). The client
 * is made when a majority answers PING (unless lazy).
 *   - A lock is granted when a majority of the N masters that count granted
 *     it; its validity is ttl - elapsed - drift (1% of ttl + 2 ms), measured
 *     from the time the requests were sent. A failed acquire releases
 *     whatever it got. Extensions hold when a majority extended in time and
 *     the lock was still valid; else the lock is lost (BATON_ELOST) when a
 *     majority no longer has it, or the extension fails (BATON_EIO) and the
 *     renewal tries again within the validity. Releases go to all masters.
 *     Acquirers that split the masters (none with a majority) give theirs
 *     back; the holder they report is none, with a pttl of 1 to 4
 *     node_timeouts (a short random wait before the next try).
 *   - No majority (masters down, quarantined, or slower than node_timeout):
 *     BATON_EIO, with "no quorum: K of N masters ..." and each master's
 *     reason in the errstr. Contention is BATON_ETAKEN as on one server.
 *   - Fences: a master grants fence F only when the lock is free there and
 *     its own counter is below F, and then stores F; any two majorities
 *     share a master, which saw both grants in order, so the later grant
 *     has the higher fence. F is the highest counter of a majority + 1 (a
 *     first round of reads), or for a key this client granted or saw
 *     before its last fence + 1 (a stale value costs a second round). This
 *     assumes what Redlock assumes (bounded clock drift between client and
 *     masters, a lock used only within its validity), and that a master
 *     that lost its data (restarted without persistence) is not needed to
 *     form the intersection: a fence stays strictly increasing as long as
 *     one master that saw the previous grant of the key still answers when
 *     the next is granted. With appendfsync always on every master this
 *     always holds; without persistence, losing every master that held a
 *     key's latest counter at once can repeat a fence (never a lock: see
 *     the quarantine). A quorum's fences are its own sequence.
 *   - Restarted masters: a master whose run id (INFO) changed, or that has
 *     been up for less than max_ttl when first seen, does not count toward
 *     a majority until max_ttl after it came back (the Redlock paper's
 *     delayed restart): a master that lost its locks cannot help grant one
 *     twice. It still receives every request. A lock ttl above max_ttl is
 *     refused (BATON_EINVAL).
 *   - Over a quorum run: locks (try, acquire, extend, release,
 *     auto-renewal, baton_with_lock), elections and leaders
 *     (baton_election.h, and the leader section below), and the
 *     every-master calls (baton_client_command_all, _eval_all:
 *     baton_redis.h). A waiting acquire retries
 *     every retry_delay_ms, or when the holder's majority expires (no
 *     queue, no wake-ups). Semaphores, multi-locks, once, the _async
 *     lock calls, baton_client_command/eval (one master's answer is no
 *     answer) and min_replicas fail with BATON_EINVAL "not supported over
 *     a Redlock quorum".
 * Returns: 0, or a negative code; then *out is still set (unless ENOMEM or
 * EINVAL on a NULL argument) so that baton_client_errstr() tells why; free it
 * with baton_client_free(). Owned; free with baton_client_free(). */
BATON_API int baton_client_new(const char *url, const struct baton_client_opts *opts,
                               struct baton_client **out);

/* Stops the client's threads and closes its connections. Release and free
 * its locks, permits, multi-locks, elections and leaders first. One still
 * alive keeps the client's memory until it is freed, so the wrong order is
 * safe: its operations then fail with BATON_EINVAL ("the client was freed"),
 * its auto-renewal has stopped (so baton_lock_lost() turns true at its
 * deadline), and freeing it afterwards frees what remained of the client.
 * Not concurrently with other calls on c or its handles. NULL is a no-op. */
BATON_API void baton_client_free(struct baton_client *c);

/* Returns: the detail of the client's last failure ("" if none), such as
 * "redis://127.0.0.1:6390/0: connection refused" (never the password).
 * Borrowed; valid until the next call on c from any thread. Meant for
 * single-threaded set-up; per-operation detail is on the lock. */
BATON_API const char *baton_client_errstr(const struct baton_client *c);

/* Checks url as baton_client_new() would read it, without connecting: the
 * one parser of Redis URLs, for tools that validate a configuration. On
 * success writes the URL with its password removed into redacted (may be
 * NULL; truncated to rlen). Returns 0, BATON_EINVAL with a message in err
 * ("invalid URL: ...", never the password), or BATON_ENOMEM. */
BATON_API int baton_url_check(const char *url, char *redacted, size_t rlen, char *err,
                              size_t errlen);

#define BATON_QUORUM_MAX 9 /* the most masters a quorum has (N odd, 3..9) */

/* The redis-quorum:// (rediss-quorum://) URL of the masters urls[0..n):
 * each a redis:// or rediss:// URL of one server, all with the same
 * scheme, credentials, database and TLS parameters (one URL: that URL).
 * The quorum's defaults apply (max_ttl, node_timeout: spell the
 * redis-quorum:// URL to set them). Returns 0 and *out (owned: free;
 * it holds the password, if any), or BATON_EINVAL with the reason in err
 * (never a password) and in *bad (may be NULL) the index of the URL it is
 * about (-1: the list as a whole, e.g. an even number of masters), or
 * BATON_ENOMEM. */
BATON_API int baton_url_join(const char *const *urls, int n, char **out, int *bad, char *err,
                             size_t errlen);

/* Returns: the URL the client was made with, password removed. Borrowed;
 * valid until baton_client_free(c). */
BATON_API const char *baton_client_url(const struct baton_client *c);

/* True when the client speaks TLS without verifying the server
 * (verify=none): anyone on the path can pretend to be Redis. Callers that
 * log should say so at warn level. */
BATON_API bool baton_client_tls_insecure(const struct baton_client *c);

/* ------------------------------------------------------------------------ */
/* Locks. A struct baton_lock belongs to one thread at a time; the queries
 * baton_lock_lost(), baton_lock_fence(), baton_lock_deadline_ns() and
 * baton_lock_remaining_ms() may be called from any thread. */

struct baton_lock;

#define BATON_KEY_MAX 1024      /* longest key (and name, id) accepted, in bytes */
#define BATON_WAIT_FOREVER (-1) /* max_wait_ms: no limit */
#define BATON_NO_WAIT      (-2) /* max_wait_ms: try once */

typedef void (*baton_lost_fn)(struct baton_lock *lk, void *arg);

struct baton_lock_opts {
    int64_t ttl_ms;         /* lease; default 30000 */
    int64_t max_wait_ms;    /* default 5000; BATON_NO_WAIT, BATON_WAIT_FOREVER */
    int64_t retry_delay_ms; /* safety-net retry while waiting, +/-25% jitter;
                               default 200 (waiters are woken on release) */
    bool auto_renew;        /* renew every renew_ms in the background */
    int64_t renew_ms;       /* default ttl/3 */
    baton_lost_fn on_lost;  /* optional: called once, from the client's
                               renewal thread, when the lock is lost. Keep it
                               short; it must not free or release lk. Not
                               called for a lock already freed. */
    void *on_lost_arg;
};

/* Tries once to take key. Returns: 0 and the lock in *out; BATON_ETAKEN when
 * another owner holds it (or waiters are queued before us); EIO/EPROTO/EREDIS.
 * On success *out is owned: release with baton_lock_release() and free with
 * baton_lock_free(). On failure *out is NULL. */
BATON_API int baton_lock_try(struct baton_client *c, const char *key,
                             const struct baton_lock_opts *opts, struct baton_lock **out);

/* Takes key, waiting up to opts->max_wait_ms. Waiters of a key are served
 * first come, first served across all processes: a release gives the lock
 * to the first waiter (its lease and fence set by the release's script) and
 * tells it at once, so the handoff costs no request of the waiter's (its
 * validity is measured from the send time of its last attempt, which ran
 * before the grant); a waiter also retries when the holder's TTL runs out.
 * Returns: 0 and the lock in *out; BATON_ETIMEDOUT; BATON_EQUEUEFULL (at once,
 * when max_waiters_per_key callers of this process already wait for key);
 * EIO/EPROTO/EREDIS. Ownership as baton_lock_try(). */
BATON_API int baton_lock_acquire(struct baton_client *c, const char *key,
                                 const struct baton_lock_opts *opts, struct baton_lock **out);

/* Releases the lock if this owner still holds it; stops its auto-renewal
 * first. Waiters are woken. Returns: 0; BATON_ELOST if it was no longer ours
 * (nothing is changed in Redis); EIO/EPROTO/EREDIS. lk stays valid; free it
 * with baton_lock_free(). */
BATON_API int baton_lock_release(struct baton_lock *lk);

/* Sets the remaining lease to ttl_ms (0: the lock's ttl) if still ours, and
 * moves the validity deadline. Returns: 0; BATON_ELOST (also after a
 * baton_lock_release() that returned BATON_ELOST); BATON_EINVAL after a
 * release that succeeded, for ttl_ms out of range, or when the client was
 * freed; EIO/EPROTO/EREDIS. */
BATON_API int baton_lock_extend(struct baton_lock *lk, int64_t ttl_ms);

/* Starts auto-renewal (every renew_ms; 0: ttl/3) if not already on. */
BATON_API int baton_lock_auto_renew(struct baton_lock *lk, int64_t renew_ms);

/* Frees lk, stopping its auto-renewal. Does not release it in Redis (its TTL
 * will). NULL is a no-op. */
BATON_API void baton_lock_free(struct baton_lock *lk);

/* True once the lock is known lost: a renewal found another owner, a release
 * or extend said so, or the validity deadline passed without a confirmed
 * renewal, whether or not Redis could be reached. */
BATON_API bool baton_lock_lost(const struct baton_lock *lk);

/* The fencing token: strictly increasing across all grants of this key. Pass
 * it to the resource you write so that it can reject a stale holder.
 * Every grant's token is max(last token + 1, the server's TIME in units
 * of 10 microseconds), computed inside the grant's script, so tokens keep
 * increasing across a FLUSHALL, a restart without persistence and a
 * failover to a replica that missed grants, provided the servers' clocks
 * never step back and differ by less than the time from the last grant on
 * the old master to the first on the new one. Tokens are about 1.8e14
 * today, below 10^15 until 2286: exact in a double, printed without an
 * exponent. The same holds for semaphore permits, multi-locks and
 * election terms. */
BATON_API uint64_t baton_lock_fence(const struct baton_lock *lk);

/* The validity deadline on CLOCK_MONOTONIC, in ns: send time of the last
 * confirmed acquire/extend + ttl - drift (1% of ttl + 2 ms). */
BATON_API int64_t baton_lock_deadline_ns(const struct baton_lock *lk);

/* Milliseconds of validity left (0 when lost or past the deadline). */
BATON_API int64_t baton_lock_remaining_ms(const struct baton_lock *lk);

/* Borrowed; valid until baton_lock_free(lk). */
BATON_API const char *baton_lock_key(const struct baton_lock *lk);
BATON_API const char *baton_lock_token(const struct baton_lock *lk);
/* Detail of the last failure on lk ("" if none). Borrowed, same lifetime. */
BATON_API const char *baton_lock_errstr(const struct baton_lock *lk);

/* Runs fn(lk, arg) while holding key, renewed in the background (auto_renew
 * is forced on). fn can poll baton_lock_lost(lk) to stop early.
 * Returns: fn's result when the lock was held throughout; BATON_ELOST when it
 * was lost while fn ran (fn's result is then discarded); BATON_ETIMEDOUT,
 * BATON_EQUEUEFULL, EIO... when fn was not run. Functions returning negative
 * values that collide with BATON_E* codes cannot be told apart. */
typedef int (*baton_locked_fn)(struct baton_lock *lk, void *arg);
BATON_API int baton_with_lock(struct baton_client *c, const char *key,
                              const struct baton_lock_opts *opts, baton_locked_fn fn, void *arg);

/* ------------------------------------------------------------------------ */
/* Asynchronous locks: many lock operations in flight from one thread.
 *
 * The client runs every Redis operation on its loop thread (started with
 * its first operation): the blocking calls post their request there and
 * sleep until it completes (or, alone in flight, do the round trip
 * themselves). These calls start the same operations and
 * return at once; the result comes to a callback on the loop thread. One
 * thread can so keep thousands of operations in flight, and the loop
 * writes all the requests of one turn with one write on each of the two
 * connections it keeps per server (and reads all the replies that came
 * with one read).
 *
 * Contract, for every _async call:
 *   - Returns 0 when the operation started: cb then runs exactly once, on
 *     the client's loop thread; never inside the call when called from the
 *     loop thread (a callback), possibly before it returns when called from
 *     another. Returns a negative code when it did not start (BATON_EINVAL:
 *     a bad argument, cb NULL, a client freed or over a Redlock quorum;
 *     BATON_ENOMEM): cb never runs.
 *   - cb(lk, rc, why, arg): rc as the blocking call would return it; why is
 *     "" on success, else the detail of the failure (borrowed, valid during
 *     the callback). try/acquire: on success lk is the new lock, owned by
 *     the callback's receiver (release it, then free it with
 *     baton_lock_free(), from any thread); on failure lk is NULL.
 *     release/extend: lk is the lock they were given, still the caller's.
 *   - While an operation on lk runs, lk belongs to it: only the queries
 *     (baton_lock_lost/fence/deadline_ns/remaining_ms/key/token) may be
 *     used meanwhile.
 *   - Callbacks run one at a time and must not block: in them use only
 *     these calls, the queries, baton_lock_free() and the stats; every
 *     blocking call of this header fails there with BATON_EINVAL (it would
 *     wait for the thread it runs on). on_lost callbacks still run on the
 *     renewal thread.
 *   - Every guarantee of the blocking calls holds: validity measured from
 *     the send time, fences, waiting first come first served with
 *     wake-ups, max_waiters_per_key, auto-renewal (opts.auto_renew: the
 *     renewal thread, as for blocking locks), min_replicas, Sentinel
 *     failovers and Redis Cluster redirections. Each operation is bounded
 *     by the command timeout (acquire: by max_wait_ms as well).
 *   - baton_client_free() completes every operation still running before
 *     it returns, each callback run once with an error (BATON_EINVAL when
 *     its request never left, BATON_EIO when it was in flight: it may have
 *     run). It must not be called from a callback.
 *   - When Redis fails (frozen, restarted, the connection lost), every
 *     operation in flight gets its result (BATON_EIO) by its deadline;
 *     none is lost or answered twice. */

typedef void (*baton_lock_cb)(struct baton_lock *lk, int rc, const char *why, void *arg);

/* baton_lock_try() without waiting for the answer. */
BATON_API int baton_lock_try_async(struct baton_client *c, const char *key,
                                   const struct baton_lock_opts *opts, baton_lock_cb cb, void *arg);
/* baton_lock_acquire(): queued first come, first served, woken on release,
 * the retries and the maximum wait run by the loop's timers. */
BATON_API int baton_lock_acquire_async(struct baton_client *c, const char *key,
                                       const struct baton_lock_opts *opts, baton_lock_cb cb,
                                       void *arg);
/* baton_lock_release(): renewal is stopped first (an auto-renewal in
 * flight is waited for, without blocking the loop). */
BATON_API int baton_lock_release_async(struct baton_lock *lk, baton_lock_cb cb, void *arg);
/* baton_lock_extend(). */
BATON_API int baton_lock_extend_async(struct baton_lock *lk, int64_t ttl_ms, baton_lock_cb cb,
                                      void *arg);
/* True on c's loop thread (inside a callback). */
BATON_API bool baton_client_in_loop(const struct baton_client *c);

/* ------------------------------------------------------------------------ */
/* Semaphores: at most `limit` holders of a name at once (for example, at
 * most 5 concurrent calls to a rate-limited API). Each holder gets a permit: its own id, its own
 * lease (extendable, auto-renewable, lost like a lock's), and a fencing
 * token from a counter per name that increases with every grant. Expired
 * permits are reclaimed atomically by every acquire; time is the server's
 * (TIME inside the scripts), never a client's clock. Waiters are served
 * first come, first served across processes and woken when a permit is
 * released (its slot is handed to the longest waiter), or when the
 * earliest lease runs out.
 *
 * Different limits for one name: each acquire checks its own limit against
 * the live holders, so a caller passing 3 waits while 3 or more hold, one
 * passing 5 while 5 or more do; a released permit goes to the longest
 * waiter one for one, so holders never exceed the largest limit in use.
 * Use one limit per name unless that is what you want.
 *
 * Redis keys: prefix{name}:sem (holders), :sem:fence, :sem:q (waiters).
 * A struct baton_permit belongs to one thread at a time; baton_permit_lost(),
 * _fence(), _deadline_ns() and _remaining_ms() may be called from any. */

struct baton_permit;

typedef void (*baton_permit_lost_fn)(struct baton_permit *p, void *arg);

struct baton_sem_opts {
    int64_t ttl_ms;         /* lease of the permit; default 30000 */
    int64_t max_wait_ms;    /* default 5000; BATON_NO_WAIT, BATON_WAIT_FOREVER */
    int64_t retry_delay_ms; /* safety-net retry while waiting, +/-25% jitter;
                               default 200 (waiters are woken on release) */
    bool auto_renew;        /* renew every renew_ms in the background */
    int64_t renew_ms;       /* default ttl/3 */
    /* optional: called once, from the client's renewal thread, when the
     * permit is lost. It must not free or release p. */
    baton_permit_lost_fn on_lost;
    void *on_lost_arg;
};

/* Tries once to take a permit of name (1 <= limit <= 1000000). Returns: 0
 * and the permit in *out; BATON_ETAKEN when limit holders hold, or when
 * the free slots are all owed to waiters queued before us; EINVAL;
 * EIO/EPROTO/EREDIS. On success *out is owned: release with
 * baton_sem_release() and free with baton_permit_free(). On failure *out
 * is NULL. */
BATON_API int baton_sem_try(struct baton_client *c, const char *name, int limit,
                            const struct baton_sem_opts *opts, struct baton_permit **out);

/* Takes a permit, waiting up to opts->max_wait_ms. Returns: 0 and *out;
 * BATON_ETIMEDOUT; BATON_EQUEUEFULL (at once, when max_waiters_per_key
 * callers of this process already wait for name); EINVAL; EIO... Ownership
 * as baton_sem_try(). */
BATON_API int baton_sem_acquire(struct baton_client *c, const char *name, int limit,
                                const struct baton_sem_opts *opts, struct baton_permit **out);

/* Releases the permit if still held (stopping its auto-renewal first); its
 * slot goes to the longest waiter. Returns: 0; BATON_ELOST when it was no
 * longer held (its lease had run out: nothing else is changed);
 * EIO/EPROTO/EREDIS. p stays valid; free it with baton_permit_free(). */
BATON_API int baton_sem_release(struct baton_permit *p);

/* The asynchronous forms, as the _async lock calls (their contract
 * above): each returns at once, 0 when the operation started (cb then runs
 * exactly once, on the client's loop thread) or EINVAL (bad argument, cb
 * NULL, the client freed or over a Redlock quorum) / ENOMEM, when cb never
 * runs. cb gets what the blocking call returns: for try and acquire, the
 * permit (owned by the caller) or NULL with the code and why; for the
 * release, p itself. One thread, the loop's, can keep thousands of
 * acquires waiting and cycling this way: a waiter granted by a release of
 * the same client is called back in the turn that read the release's
 * answer, with no thread woken. While an operation on p runs, p belongs to
 * it: only the queries (baton_permit_lost/fence/deadline_ns/remaining_ms/
 * id/name) may be used meanwhile. */
typedef void (*baton_permit_cb)(struct baton_permit *p, int rc, const char *why, void *arg);
BATON_API int baton_sem_try_async(struct baton_client *c, const char *name, int limit,
                                  const struct baton_sem_opts *opts, baton_permit_cb cb, void *arg);
BATON_API int baton_sem_acquire_async(struct baton_client *c, const char *name, int limit,
                                      const struct baton_sem_opts *opts, baton_permit_cb cb,
                                      void *arg);
BATON_API int baton_sem_release_async(struct baton_permit *p, baton_permit_cb cb, void *arg);

/* Releases the permit whose id is permit_id (baton_permit_id()), for a
 * process that kept only the id. Returns 0; BATON_ELOST when no such
 * permit is held; EINVAL; EIO... A struct baton_permit of that id in this
 * process learns it at its next renewal (it is then lost). */
BATON_API int baton_sem_release_id(struct baton_client *c, const char *name, const char *permit_id);

/* Sets the permit's remaining lease to ttl_ms (0: its ttl) if still held,
 * and moves its validity deadline. Returns 0; BATON_ELOST; EIO... */
BATON_API int baton_sem_extend(struct baton_permit *p, int64_t ttl_ms);

/* Starts auto-renewal (every renew_ms; 0: ttl/3) if not already on. */
BATON_API int baton_sem_auto_renew(struct baton_permit *p, int64_t renew_ms);

/* Live holders of name now (server time). Returns 0 and *holders, or EIO... */
BATON_API int baton_sem_holders(struct baton_client *c, const char *name, int *holders);

/* Frees p, stopping its auto-renewal. Does not release it (its lease
 * will run out). NULL is a no-op. */
BATON_API void baton_permit_free(struct baton_permit *p);

/* As the baton_lock_ queries: lost once known lost or past the validity
 * deadline (send time of the last confirmed grant/extend + ttl - drift). */
BATON_API bool baton_permit_lost(const struct baton_permit *p);
BATON_API uint64_t baton_permit_fence(const struct baton_permit *p);
BATON_API int64_t baton_permit_deadline_ns(const struct baton_permit *p);
BATON_API int64_t baton_permit_remaining_ms(const struct baton_permit *p);
/* The permit id (48 hex chars) and the semaphore's name. Borrowed; valid
 * until baton_permit_free(p). */
BATON_API const char *baton_permit_id(const struct baton_permit *p);
BATON_API const char *baton_permit_name(const struct baton_permit *p);
/* Detail of the last failure on p ("" if none). Borrowed, same lifetime. */
BATON_API const char *baton_permit_errstr(const struct baton_permit *p);

/* ------------------------------------------------------------------------ */
/* Multi-lock: several keys, all or nothing (for example, a transfer between
 * two accounts). Keys are sorted (strcmp) and duplicates dropped, so every
 * caller takes them in one order and two callers locking {A,B} and {B,A}
 * cannot deadlock.
 *   - When every key's Redis key lies in one cluster hash slot (keys with
 *     the same {tag}, e.g. "{acct}:1" and "{acct}:2"), one script takes
 *     them all at once if all are free.
 *   - Otherwise, or when some key is held and the caller may wait, the
 *     keys are acquired one by one in sorted order, each waiting as
 *     baton_lock_acquire() does, within one overall max_wait_ms; on any
 *     failure those already taken are released.
 * On a Redis Cluster the same holds: keys of one slot are taken by one
 * script on its master; keys of different slots are not refused, but taken
 * one by one, each on its own slot's master (all or nothing as above, not
 * in one atomic step).
 * Each key is an ordinary lock (same Redis keys, fencing counter and
 * queue as baton_lock_acquire() on it), so multi-locks and single locks on
 * the same keys exclude each other. A struct baton_multi belongs to one
 * thread at a time; baton_multi_lost() may be called from any. */

struct baton_multi;

#define BATON_MULTI_MAX_KEYS 16

/* Takes keys[0..n) (1 <= n <= BATON_MULTI_MAX_KEYS) with opts applying to
 * each lock (opts->max_wait_ms bounds the whole operation; BATON_NO_WAIT
 * tries once). Returns: 0 and *out (owned: release with
 * baton_multi_release() and free with baton_multi_free()); BATON_ETAKEN
 * (BATON_NO_WAIT and a key held); BATON_ETIMEDOUT; BATON_EQUEUEFULL;
 * EINVAL; EIO... with detail in baton_client_errstr(). On failure *out is
 * NULL and nothing is held. */
BATON_API int baton_multi_acquire(struct baton_client *c, const char *const *keys, size_t n,
                                  const struct baton_lock_opts *opts, struct baton_multi **out);

/* Releases every lock (in reverse order), stopping renewal first. Returns
 * 0; BATON_ELOST when any was no longer held (the others are released
 * anyway); EIO... m stays valid; free it with baton_multi_free(). */
BATON_API int baton_multi_release(struct baton_multi *m);

/* Extends every lock (ttl_ms 0: the ttl). Returns 0, or the first error. */
BATON_API int baton_multi_extend(struct baton_multi *m, int64_t ttl_ms);

/* Frees m and its locks, stopping renewal; does not release. NULL: no-op. */
BATON_API void baton_multi_free(struct baton_multi *m);

/* True when any of the locks is lost. */
BATON_API bool baton_multi_lost(const struct baton_multi *m);
/* The earliest validity deadline of the locks (CLOCK_MONOTONIC ns). */
BATON_API int64_t baton_multi_deadline_ns(const struct baton_multi *m);
/* The number of distinct keys, and the lock of the i-th in sorted order
 * (fence, key, token...). Borrowed; valid until baton_multi_free(m). */
BATON_API size_t baton_multi_count(const struct baton_multi *m);
BATON_API struct baton_lock *baton_multi_lock(const struct baton_multi *m, size_t i);

/* Runs fn(m, arg) while holding every key, renewed in the background.
 * Returns as baton_with_lock(): fn's result, or BATON_ELOST when a lock
 * was lost while fn ran, or the acquire error when fn was not run. */
typedef int (*baton_multi_fn)(struct baton_multi *m, void *arg);
BATON_API int baton_with_locks(struct baton_client *c, const char *const *keys, size_t n,
                               const struct baton_lock_opts *opts, baton_multi_fn fn, void *arg);

/* ------------------------------------------------------------------------ */
/* Once: process an id at most once (a webhook delivered twice is handled
 * once). The id is a lock key; a marker prefix{id}:done, written only after
 * fn succeeded, says "done" for marker_ttl_ms.
 *   1. marker present                      -> BATON_ONCE_ALREADY_PROCESSED
 *   2. lock held by someone (no waiting)   -> BATON_ONCE_DUPLICATE
 *   3. lock taken, marker checked again, fn run under the auto-renewed
 *      lock; fn returned 0: marker written -> BATON_ONCE_PROCESSED
 * A process that dies in fn leaves no marker: the id can be processed
 * again once the lock's lease runs out (lock_ttl_ms). Outcomes are results,
 * not errors: they are >= 0, and errors are the negative BATON_E* codes. */

enum baton_once_result {
    BATON_ONCE_PROCESSED = 0,         /* fn ran and succeeded; marker written */
    BATON_ONCE_DUPLICATE = 1,         /* someone is processing the id now */
    BATON_ONCE_ALREADY_PROCESSED = 2, /* a marker says it was done */
};

struct baton_once_opts {
    int64_t marker_ttl_ms; /* how long "done" is remembered; default 86400000 */
    int64_t lock_ttl_ms;   /* lease of the processing lock (auto-renewed while
                              fn runs): how soon an id whose processor died
                              can be processed again; default 30000 */
};

/* Processes id at most once with marker_ttl_ms = ttl_ms (see above). fn
 * gets the processing lock (baton_lock_lost(), baton_lock_fence()) and
 * returns 0 on success, or a negative value on failure.
 * Returns: a baton_once_result; fn's negative value when it failed (no
 * marker: the id can be processed again at once; values that collide with
 * BATON_E* codes cannot be told apart; a positive value from fn is returned
 * as BATON_EINVAL); BATON_ELOST when fn succeeded but the lock was lost while
 * it ran (the marker is written anyway, as the work was done, but another
 * process may have run fn at the same time); EINVAL; EIO... (if Redis fails
 * after fn succeeded, no marker may have been written). */
BATON_API int baton_once(struct baton_client *c, const char *id, int64_t ttl_ms, baton_locked_fn fn,
                         void *arg);
BATON_API int baton_once_with(struct baton_client *c, const char *id,
                              const struct baton_once_opts *opts, baton_locked_fn fn, void *arg);
/* Returns: "processed", "duplicate", "already_processed", or for a
 * negative code baton_errname(code). Static. */
BATON_API const char *baton_once_result_name(int result);

/* ------------------------------------------------------------------------ */
/* Leader election for embedding in a daemon: a background
 * thread per campaign drives the election primitives of baton_election.h
 * (campaign, renew, resign, watch) and calls back when leadership is gained
 * or lost.
 *
 * Loss is reported before the validity deadline: when renewals cannot be
 * confirmed, on_lost is called loss_margin_ms before the deadline (send
 * time of the last confirmed renewal + ttl - drift), Redis reachable or
 * not, since the thread never starts a Redis call that could outlast that
 * moment. Another node can only be elected after the lease has run out in
 * Redis, which is later still. Followers campaign at once when the leader
 * resigns (a subscription), when its lease runs out, and every retry_ms. A
 * request to step down (baton_election_request_step_down()) naming our
 * term makes us resign, wait retry_ms, and campaign again.
 *
 * Callbacks run on the campaign's thread, one at a time, alternating
 * gained, lost, gained...; on_lost comes before leadership is given up in
 * Redis (on resign too), so the leader's work can stop first. Keep them
 * short; they may call baton_leader_is_leader() and baton_leader_term(),
 * but not baton_leader_resign() or baton_leader_free() on their leader.
 * baton_leader_is_leader() and _term() may be called from any thread;
 * resign and free from one thread. */

struct baton_leader;

/* term: the term gained or lost. reason, for on_lost: 0 (we resigned, or
 * stepped down on request), BATON_ELOST (another node holds the lease), or
 * BATON_EIO (renewals not confirmed in time); 0 for on_gained. */
typedef void (*baton_leader_fn)(struct baton_leader *l, uint64_t term, int reason, void *arg);

struct baton_leader_opts {
    int64_t ttl_ms;         /* leadership lease; default 10000 */
    int64_t renew_ms;       /* default ttl/3 */
    int64_t loss_margin_ms; /* default ttl/10 (at least 1) */
    int64_t retry_ms;       /* followers' safety-net poll; the cap of the
                               back-off when Redis is unreachable; default
                               1000 */
    const char *identity;   /* shown by baton_election_leader() (baton_election.h);
                               default "" */
    baton_leader_fn on_gained;
    baton_leader_fn on_lost;
    void *arg;
};

/* Starts campaigning for name in a new thread. A Redis call may take the
 * client's connect_timeout_ms + command_timeout_ms, and one must fit
 * between a renewal and the loss: renew_ms + connect_timeout_ms +
 * command_timeout_ms + loss_margin_ms < ttl_ms - drift (1% of ttl + 2 ms),
 * or BATON_EINVAL (the defaults fit: 3333 + 2000 + 2000 + 1000 < 9898).
 * Also EINVAL for a name that baton_election_new() refuses; ENOMEM. No
 * Redis I/O in the caller's thread. Returns: 0 and *out (owned; free with
 * baton_leader_free()). */
BATON_API int baton_leader_campaign(struct baton_client *c, const char *name,
                                    const struct baton_leader_opts *opts,
                                    struct baton_leader **out);

/* Stops the campaign: if leading, on_lost(reason 0) is called, then
 * leadership is released and every follower woken. Waits for the thread
 * (at most about one command timeout). Returns 0; BATON_ELOST (leadership
 * was not ours any more); EIO... (not released: it expires with its
 * lease); BATON_EINVAL when called from a callback. A second call returns
 * the first's result. */
BATON_API int baton_leader_resign(struct baton_leader *l);

/* Resigns if still campaigning, and frees l. NULL is a no-op. */
BATON_API void baton_leader_free(struct baton_leader *l);

/* True from just before on_gained until just before on_lost, and never
 * past loss_margin_ms before the validity deadline. */
BATON_API bool baton_leader_is_leader(const struct baton_leader *l);
/* The term of the current (or last) leadership; 0 before the first. */
BATON_API uint64_t baton_leader_term(const struct baton_leader *l);
/* While leading: the moment (CLOCK_MONOTONIC ns) at which leadership is
 * given up unless renewed (the validity deadline - loss_margin_ms); else 0. */
BATON_API int64_t baton_leader_deadline_ns(const struct baton_leader *l);

/* ------------------------------------------------------------------------ */
/* Stats: what one client's locks did, by key class, the first
 * colon-separated segment of the key ("account:123" -> "account"; a key
 * without a colon is its own class). Counted: grants (semaphore permits
 * under their name's class; baton_once() under its id's), releases,
 * acquires that timed out, losses of held locks, contention (acquires that
 * found the key held, whether they then waited or were refused), locks
 * held now, and the wait from the acquire call to the grant. Election
 * leases are not counted.
 *
 * The stats belong to the client (no process-global state: two clients
 * keep separate books; a process exports the union by writing each). The
 * first BATON_STATS_MAX_CLASSES classes get their own series; later ones
 * are counted as "other" (as is a class named "other"), so cardinality is
 * bounded. Bytes outside printable ASCII in a class become '_', and classes
 * are cut at BATON_STATS_CLASS_LEN - 1 bytes. All stats functions are
 * thread-safe; counting takes no lock. */

#define BATON_STATS_MAX_CLASSES 32
#define BATON_STATS_CLASS_LEN   64
/* The histogram's upper bounds, seconds: 0.0005 0.001 0.0025 0.005 0.01
 * 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10 (and +Inf = wait_count). */
#define BATON_STATS_BUCKETS 14

struct baton_stats {
    char key_class[BATON_STATS_CLASS_LEN];
    uint64_t acquired;
    uint64_t released;
    uint64_t acquire_timeouts;
    uint64_t lost;
    uint64_t contention;
    int64_t held;
    uint64_t wait_le[BATON_STATS_BUCKETS]; /* cumulative, as in Prometheus */
    uint64_t wait_count;
    double wait_sum_seconds;
};

/* The stats of one class (all zero if never seen). Returns 0 or EINVAL. */
BATON_API int baton_stats_get(struct baton_client *c, const char *key_class,
                              struct baton_stats *out);
/* Fills out[0..cap) with the classes seen, in order of first sighting,
 * "other" last when used. Returns how many were written, or EINVAL. */
BATON_API int baton_stats_classes(struct baton_client *c, struct baton_stats *out, int cap);

/* Writes the stats in the Prometheus text exposition format (0.0.4):
 *   baton_lock_acquired_total, baton_lock_released_total,
 *   baton_lock_acquire_timeouts_total, baton_lock_lost_total,
 *   baton_lock_contention_total (counters), baton_lock_held (gauge),
 *   baton_lock_acquire_wait_seconds (histogram), labelled key_class.
 * Per client rather than the process-wide baton_stats_write_prometheus(FILE *)
 * first sketched: libbaton keeps no global mutable state.
 * Returns 0, EINVAL, or EIO when writing to f failed. */
BATON_API int baton_stats_write_prometheus(struct baton_client *c, FILE *f);

#ifdef __cplusplus
}
#endif
#endif /* BATON_H */
