/* baton.h -- libbaton, distributed locks over Redis.
 *
 * The only installed header. Everything here is the public, stable API; the
 * rest of src/lib is private (names starting with baton__).
 *
 * Model:
 *   struct baton_client  one per process (or per Redis deployment). Owns a
 *                        small pool of connections, and, started on first
 *                        need, one subscriber thread (wake-ups of waiters)
 *                        and one renewal thread (auto-renewed locks).
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
    X(EQUEUEFULL, -10, "too many waiters for this key in this process")

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
 * Every operation takes a pooled connection for its duration. */

struct baton_client;

struct baton_client_opts {
    int64_t connect_timeout_ms; /* default 2000 */
    int64_t command_timeout_ms; /* default 2000: bound on each round trip */
    int max_waiters_per_key;    /* default 1000; -1: unbounded. Flood control:
                                   waiters of one key in this process beyond
                                   it get BATON_EQUEUEFULL at once. */
    const char *key_prefix;     /* default "baton:"; must not contain '{' */
    bool lazy;                  /* do not connect in baton_client_new(): the
                                   first operation connects (for daemons that
                                   start before Redis) */
};

/* Parses url, connects one connection (to validate URL, credentials and
 * reachability) and returns the client in *out.
 *   url: redis://[[user]:pass@]host[:port][/db]  (default port 6379, db 0)
 *        unix:///path/to/socket[?db=N&password=P&user=U]
 * Returns: 0, or a negative code; then *out is still set (unless ENOMEM or
 * EINVAL on a NULL argument) so that baton_client_errstr() tells why; free it
 * with baton_client_free(). Owned; free with baton_client_free(). */
BATON_API int baton_client_new(const char *url, const struct baton_client_opts *opts,
                               struct baton_client **out);

/* Stops the client's threads and closes its connections. Locks obtained from
 * the client must have been released or freed first. NULL is a no-op. */
BATON_API void baton_client_free(struct baton_client *c);

/* Returns: the detail of the client's last failure ("" if none), such as
 * "redis://127.0.0.1:6390/0: connection refused" (never the password).
 * Borrowed; valid until the next call on c from any thread. Meant for
 * single-threaded set-up; per-operation detail is on the lock. */
BATON_API const char *baton_client_errstr(const struct baton_client *c);

/* Returns: the URL the client was made with, password removed. Borrowed;
 * valid until baton_client_free(c). */
BATON_API const char *baton_client_url(const struct baton_client *c);

/* ------------------------------------------------------------------------ */
/* Locks. A struct baton_lock belongs to one thread at a time; the queries
 * baton_lock_lost(), baton_lock_fence(), baton_lock_deadline_ns() and
 * baton_lock_remaining_ms() may be called from any thread. */

struct baton_lock;

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
                               short; it must not free or release lk. */
    void *on_lost_arg;
};

/* Tries once to take key. Returns: 0 and the lock in *out; BATON_ETAKEN when
 * another owner holds it (or waiters are queued before us); EIO/EPROTO/EREDIS.
 * On success *out is owned: release with baton_lock_release() and free with
 * baton_lock_free(). On failure *out is NULL. */
BATON_API int baton_lock_try(struct baton_client *c, const char *key,
                             const struct baton_lock_opts *opts, struct baton_lock **out);

/* Takes key, waiting up to opts->max_wait_ms. Waiters of a key are served
 * first come, first served across all processes, and woken at once when the
 * holder releases, or when the holder's TTL runs out.
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
 * moves the validity deadline. Returns: 0; BATON_ELOST; EIO/EPROTO/EREDIS. */
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
 * it to the resource you write so that it can reject a stale holder. */
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
/* Leader election: one leader per name, with a term that strictly increases
 * with every leadership (it is the fencing token of the name's lock).
 *
 * These are the primitives, each one bounded Redis call, for a caller that
 * drives the campaign from its own event loop (the baton supervisor does):
 * campaign, renew and resign; followers watch a subscription (poll its fd)
 * that says at once when the leader resigns, and sleep until the leader's
 * lease runs out (campaign reports it). A struct baton_election belongs to
 * one thread; baton_election_is_leader() and baton_election_term() may be
 * called from any. */

struct baton_election;

struct baton_election_opts {
    int64_t ttl_ms;       /* leadership lease; default 10000 */
    const char *identity; /* who we are, shown by baton_election_leader();
                             default "" */
};

/* Returns: 0 and *out (owned; free with baton_election_free()), or
 * BATON_EINVAL (empty name, name with braces, or longer than 200 bytes) or
 * BATON_ENOMEM. No Redis I/O. */
BATON_API int baton_election_new(struct baton_client *c, const char *name,
                                 const struct baton_election_opts *opts,
                                 struct baton_election **out);
/* Frees e (closing its subscription). Does not resign. NULL is a no-op. */
BATON_API void baton_election_free(struct baton_election *e);

struct baton_leader_info {
    bool has_leader;
    char identity[256]; /* the leader's identity, truncated */
    uint64_t term;      /* its term; when there is no leader, the last term */
    int64_t ttl_ms;     /* its remaining lease (-1 unknown) */
};

/* Tries once to become the leader. Returns 0 when we lead (already did, or
 * now do: a new term); BATON_ETAKEN when another leads, described in
 * *holder (may be NULL); EIO/EPROTO/EREDIS. */
BATON_API int baton_election_campaign(struct baton_election *e, struct baton_leader_info *holder);
/* Extends the lease. Returns 0; BATON_ELOST (not the leader any more: the
 * lease was lost or taken); EIO... (leadership unconfirmed: the caller
 * watches baton_election_deadline_ns()). */
BATON_API int baton_election_renew(struct baton_election *e);
/* Gives up leadership if still ours and wakes every follower. Returns 0,
 * BATON_ELOST (it was not ours any more) or EIO... (then the lease expires). */
BATON_API int baton_election_resign(struct baton_election *e);

/* True while we lead: campaign succeeded, no loss seen, deadline not past. */
BATON_API bool baton_election_is_leader(const struct baton_election *e);
/* The term of our current (or last) leadership; 0 before the first. */
BATON_API uint64_t baton_election_term(const struct baton_election *e);
/* Validity deadline of our leadership (CLOCK_MONOTONIC ns), 0 if none. */
BATON_API int64_t baton_election_deadline_ns(const struct baton_election *e);
/* Detail of the last failure on e ("" if none). Borrowed; valid until the
 * next call on e. */
BATON_API const char *baton_election_errstr(const struct baton_election *e);
/* The Redis key of the leadership (prefix{name}:leader), and the value it
 * holds while we lead (NULL when we do not): a script that must act only for
 * the current leader compares the two (GET key == token) in the same atomic
 * step as its write. Keys of the form prefix{name}:... share its cluster
 * slot. Borrowed; valid until the next campaign/resign or free. */
BATON_API const char *baton_election_key(const struct baton_election *e);
BATON_API const char *baton_election_token(const struct baton_election *e);

/* The subscription: (re)connects and subscribes to the name's events.
 * Returns 0 or EIO... Bounded by the client's timeouts. */
BATON_API int baton_election_watch(struct baton_election *e);
/* Its file descriptor (poll it for POLLIN), or -1 when not subscribed. */
BATON_API int baton_election_watch_fd(const struct baton_election *e);

#define BATON_EVENT_RESIGNED  1u /* the leader resigned: campaign now */
#define BATON_EVENT_STEP_DOWN 2u /* someone asked the leader of this term to step down */

/* Reads what has arrived, without blocking; ORs BATON_EVENT_* into *events.
 * A step-down request counts only when it names our current term. Returns 0,
 * or EIO/EPROTO when the subscription broke (it is closed: call
 * baton_election_watch() again). */
BATON_API int baton_election_watch_read(struct baton_election *e, unsigned *events);

/* Who leads name now. Returns 0 and *info, or EIO... */
BATON_API int baton_election_leader(struct baton_client *c, const char *name,
                                    struct baton_leader_info *info);
/* Asks the leader of name, whose term is term, to resign. *receivers (may be
 * NULL) gets how many subscribers heard it. Returns 0 or EIO... */
BATON_API int baton_election_request_step_down(struct baton_client *c, const char *name,
                                               uint64_t term, int *receivers);

/* ------------------------------------------------------------------------ */
/* Commands: for tools built on libbaton that keep their own data next to
 * the locks (the baton supervisor's claims, heartbeats and history). The
 * same connections, timeouts and credentials as the locks. */

enum baton_reply_type {
    BATON_REPLY_NIL,
    BATON_REPLY_INTEGER,
    BATON_REPLY_STRING, /* bulk or status */
    BATON_REPLY_ARRAY,
};

struct baton_reply {
    enum baton_reply_type type;
    long long integer;
    char *str; /* NUL-terminated (binary-safe with len) */
    size_t len;
    struct baton_reply **element;
    size_t elements;
};

/* Runs one command. Error replies become BATON_EREDIS with the text in
 * baton_client_errstr(). Returns 0 and *out (owned; free with
 * baton_reply_free()), or a negative code. */
BATON_API int baton_client_command(struct baton_client *c, int argc, const char *const *argv,
                                   const size_t *lens, struct baton_reply **out);
/* Runs a Lua script by SHA, loading it when Redis does not know it. Keys and
 * args are NUL-terminated strings. Same contract as baton_client_command(). */
BATON_API int baton_client_eval(struct baton_client *c, const char *script, int nkeys,
                                const char *const *keys, int nargs, const char *const *args,
                                struct baton_reply **out);
BATON_API void baton_reply_free(struct baton_reply *r);

#ifdef __cplusplus
}
#endif
#endif /* BATON_H */
