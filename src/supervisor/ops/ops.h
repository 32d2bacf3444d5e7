/* ops.h -- the supervisor seen from outside: its HTTP endpoint and
 * systemd's notifications.
 *
 *   GET /metrics  Prometheus text (metrics.h), and libbaton's lock stats
 *   GET /healthz  200 while the event loop turns (it did within the last
 *                 OPS_LIVE_S + 3 x redis_timeout), else 503
 *   GET /readyz   200 while Redis answers and the node is a member of its
 *                 group, leader or follower; else 503 saying why
 *   GET /status   the status document (status.h) from this node's view,
 *                 plus a "view" object (this node's state, the age of the
 *                 node list, its recent transitions)
 *   GET /         the same as a small HTML page that refreshes itself
 *   and, with http.control, the control API (api.h): POST calls that act
 *   on the group (trigger, pause, resume, step down) and GET of runs and
 *   their output, every path but the probes behind a bearer token
 *
 * ops follows the supervisor through its log (log_set_observer: every
 * event, on the loop's thread, with the typed facts its emitter gave,
 * facts.h): the machine's state, the leader it follows, Redis outages,
 * transitions, runs and reloads, so the metrics, the page and systemd's
 * STATUS= say what the log says, without reading a line back. It owns one timer of the
 * loop (host->timer_id; it arms it itself): every second it marks the loop
 * alive, pings systemd's watchdog when one is set, and refreshes what only
 * Redis knows (the leader's lease, the node list, each job's last run)
 * through host->may_block(), the daemon's one gate for Redis calls. The
 * HTTP thread (http.h) serves what the loop published, under a mutex held
 * for copies and pointer swaps only: no request waits for the loop or
 * reaches Redis, and the loop never waits for a request.
 *
 * Redis reads for the view: the leader and the node list every `poll`
 * (every OPS_WATCHED_MS while someone has fetched /status or / within the
 * last OPS_WATCH_S), and each job's last run once at start, then again
 * when it ran here, and while someone watches, when it ran elsewhere, and a
 * few others in turn: at most OPS_HISTORY_BUDGET reads, and none started
 * OPS_REFRESH_BUDGET_MS into a refresh, so that the loop is never held up
 * long. None while Redis is unreachable. Without http.listen, none at all. */
#ifndef BATON_OPS_H
#define BATON_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton_election.h"
#include "jobs.h"
#include "log.h"
#include "loop.h"
#include "runner.h"

#define OPS_LIVE_S         5
#define OPS_TICK_MS        1000
#define OPS_WATCHED_MS     2000
#define OPS_WATCH_S        60
#define OPS_HISTORY_BUDGET 32 /* last-run reads per refresh, at most... */
#define OPS_REFRESH_BUDGET_MS 5 /* ... and no new one after this long */
#define OPS_TRANSITIONS    20
#define OPS_STOP_MARGIN_MS 10000 /* releasing the lease, writing the last records */

struct ops;
struct ops_defs;

struct ops_host { /* node, group and listen are copied; the rest is borrowed */
    struct log *log;
    struct loop *loop;
    int timer_id; /* the loop timer ops owns */
    struct baton_client *client;
    struct baton_election *election;
    struct runner *runner;
    const char *node;
    const char *group;
    const char *listen; /* http.listen: "off", host:port or unix:/path */
    const char *allowed_hosts; /* http.allowed_hosts: names, comma-separated */
    /* The control API (api.h), with listen not "off": http.control,
     * http.tokens_file, http.public_read; and how its workers reach Redis
     * (the configured URL and the daemon's client options, copied). */
    bool control;
    const char *tokens_file;
    bool public_read;
    int64_t history_len; /* history.runs: a pause's records kept (pauselog.h) */
    /* http.tls: the certificate's and key's paths, or NULL (or "none")
     * for plain HTTP. */
    const char *tls_cert, *tls_key;
    const char *redis_url;
    const struct baton_client_opts *client_opts;
    int64_t poll_ms;
    int64_t redis_timeout_ms;
    /* True when a blocking Redis call (up to redis_timeout) may start now. */
    bool (*may_block)(void *ctx);
    void *ctx;
};

/* Reads systemd's environment, starts the HTTP server when listen is not
 * "off" (logging `http_listening`), and observes host->log from now on.
 * Call it with the signals the daemon handles blocked. Returns 0 and *out
 * (owned; free with ops_free), or -1 with a message in msg: the address
 * cannot be bound, or NOTIFY_SOCKET is set in a build without libsystemd. */
int ops_new(const struct ops_host *host, struct ops **out, char *msg, size_t msglen);
/* Stops the HTTP server and the observer; frees o. NULL is a no-op. */
void ops_free(struct ops *o);

/* A copy of what the view needs of jobs (names, schedules parsed again,
 * zones loaded again), reference-counted: built on the thread that read a
 * reload, so that the loop only swaps it in (10,000 schedules take tens of
 * milliseconds to parse). Touches nothing shared: any thread. Returns:
 * owned (ops_defs_unref; ops_set_jobs takes it), or NULL on ENOMEM. */
struct ops_defs *ops_defs_new(const struct jobs *jobs);
/* Drops a reference; the last frees it. NULL is a no-op. */
void ops_defs_unref(struct ops_defs *d);

/* The jobs now running the show and shutdown_grace (at start and after
 * each reload): ops keeps defs (taken; NULL: built here from jobs) for the
 * view, and the drain's budget it tells systemd at STOPPING=1:
 * shutdown_grace + the longest kill_grace + OPS_STOP_MARGIN_MS. */
void ops_set_jobs(struct ops *o, const struct jobs *jobs, struct ops_defs *defs,
                  int64_t shutdown_grace_ms);

/* Reads http.tokens_file again (SIGHUP), when the control API is on;
 * logs api_tokens_reload_failed when it cannot (the old tokens stay). */
void ops_reload_tokens(struct ops *o);

/* Reads http.tls's files again (SIGHUP; cert and key: the paths now
 * configured), when the endpoint serves TLS: a changed pair serves the
 * connections accepted from now on (http_tls_reloaded); a pair that
 * cannot be read or used keeps the old one (http_tls_reload_failed). */
void ops_reload_tls(struct ops *o, const char *cert, const char *key);

/* The timer host->timer_id fired. */
void ops_on_timer(struct ops *o);
/* A message on the group's channel: "ended <job>" marks the job's last run
 * as changed. */
void ops_on_message(struct ops *o, const char *msg, size_t len);

#endif /* BATON_OPS_H */
