/* baton_redis.h -- libbaton's raw Redis calls, for tools built on it that
 * keep their own data next to the locks: one command or Lua script on the
 * client's connections, or on every master of a Redlock quorum with each
 * master's answer to reduce. The baton supervisor and command keep their
 * claims, heartbeats, history, pauses and requests with them.
 *
 * Installed beside baton.h, which it includes: the conventions, errors and
 * the client are baton.h's. */
#ifndef BATON_REDIS_H
#define BATON_REDIS_H

#include "baton.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 * args are NUL-terminated strings. Same contract as baton_client_command();
 * and with min_replicas, the script is followed by WAIT as a grant is:
 * BATON_ENOTDURABLE when its writes were not acknowledged in time (the
 * script did run on the master). */
BATON_API int baton_client_eval(struct baton_client *c, const char *script, int nkeys,
                                const char *const *keys, int nargs, const char *const *args,
                                struct baton_reply **out);
BATON_API void baton_reply_free(struct baton_reply *r);

/* ------------------------------------------------------------------------ */
/* Every master: for tools whose data must hold over a Redlock quorum (the
 * baton supervisor's claims, heartbeats, history, pauses and requests).
 * baton_client_command() and _eval() refuse a quorum client (one master's
 * answer is no answer there); these send the command or script to every
 * master at once and report each master's answer, for the caller to
 * reduce as its data requires (a claim holds when a majority claimed it; a
 * read of a mark takes the value a majority reached...). On a single
 * server, Sentinel or a Cluster they make the one call of
 * baton_client_command()/_eval() and report it as one answer (n = 1,
 * majority = 1), so that a tool has one code path for every topology.
 * Thread-safe. (BATON_QUORUM_MAX, the most masters, is in baton.h.) */

struct baton_answer {
    /* BATON_OK: reply set. BATON_EREDIS: the master answered with an error
     * (its text in err). BATON_ENOTDURABLE (min_replicas, never over a
     * quorum): the script ran but its writes were not acknowledged in time
     * (no reply). Any other code: no answer (why in err). */
    int rc;
    /* Counts toward a majority: false for a quorum's master quarantined
     * after a restart (see baton_client_new()); true otherwise. */
    bool counts;
    struct baton_reply *reply; /* owned by the answers */
    char master[80];           /* "host:port"; "" for the one answer of a single server */
    char err[256];
};

struct baton_answers {
    int n;        /* masters asked: the quorum's N, else 1 */
    int majority; /* n / 2 + 1 */
    int answered; /* counted masters that answered, error replies included */
    struct baton_answer v[];
};

/* Runs the command on every master (argv and lens as for
 * baton_client_command()), each bounded as a quorum's lock requests are
 * (node_timeout), all by the command timeout. Returns 0 and *out when a
 * majority of counted masters answered (error replies included: look at
 * each rc); BATON_EIO when fewer did, *out still set, and the detail ("no
 * quorum: 2 of 5 masters answered (3 needed): h1:6379: connection
 * refused; ...") in baton_client_errstr(); ENOMEM, EINVAL (*out NULL).
 * A command with a blocking wait must not be sent this way. *out: owned;
 * free with baton_answers_free(). */
BATON_API int baton_client_command_all(struct baton_client *c, int argc, const char *const *argv,
                                       const size_t *lens, struct baton_answers **out);
/* The same for a Lua script (by SHA, loaded where a master does not know
 * it), as baton_client_eval(): with min_replicas (never over a quorum) an
 * answer whose writes were not acknowledged has rc BATON_ENOTDURABLE. */
BATON_API int baton_client_eval_all(struct baton_client *c, const char *script, int nkeys,
                                    const char *const *keys, int nargs, const char *const *args,
                                    struct baton_answers **out);
/* For a write: 0 when a majority of the n masters answered without an
 * error reply (the write holds); else the detail on the client
 * (baton_client_errstr(), naming each master that failed and why) and
 * BATON_EREDIS when a master answered with an error, BATON_EIO when too
 * few answered. BATON_ENOTDURABLE when the write holds but was not
 * acknowledged by min_replicas replicas. a may be NULL (EINVAL). */
BATON_API int baton_answers_check(struct baton_client *c, const struct baton_answers *a);
/* Writes "2 of 5 masters answered (3 needed): h1:6379: connection
 * refused; h2:6380: no answer within node_timeout 50 ms" into buf (the
 * masters that failed, answered with an error, or are quarantined).
 * Returns buf. */
BATON_API const char *baton_answers_describe(const struct baton_answers *a, char *buf, size_t len);
/* NULL is a no-op. */
BATON_API void baton_answers_free(struct baton_answers *a);

/* The quorum's size of a client: N for redis-quorum:// (its masters), 0
 * for every other URL. */
BATON_API int baton_client_quorum(const struct baton_client *c);

/* What a URL says of its quorum, without connecting: *masters N (0 when
 * it is not a quorum URL), *max_ttl_ms and *node_timeout_ms (the defaults
 * when the URL does not set them). Returns 0, or BATON_EINVAL with the
 * message of baton_url_check() in err. For tools that check their own
 * settings against the quorum's (a lease above max_ttl is refused). */
BATON_API int baton_url_quorum(const char *url, int *masters, int64_t *max_ttl_ms,
                               int64_t *node_timeout_ms, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* BATON_REDIS_H */
