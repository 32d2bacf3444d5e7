/* ops_int.h -- what the two sides of ops share (ops.h says what ops is):
 * ops.c, the loop's side (the log observer, the timer, the refreshes from
 * Redis, ops_set_jobs), which writes, and ops_http.c, the HTTP server's
 * side (the handlers and the view they answer with), which reads. What
 * they share is under ops.mu: a small header copied by value (struct head),
 * the metrics (copied with metrics_dup), and two immutable,
 * reference-counted snapshots swapped by pointer: the node list (struct
 * roster) and the jobs with their last runs (struct lasts over struct
 * ops_defs). Nothing else includes this file. */
#ifndef BATON_OPS_INT_H
#define BATON_OPS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "api.h"
#include "cron.h"
#include "history.h"
#include "http.h"
#include "members.h"
#include "metrics.h"
#include "notify.h"
#include "ops.h"
#include "pause.h"
#include "runlimits.h"
#include "status.h"
#include "tlsfiles.h"

/* Why a job's last run needs reading again: it ended here (read at the
 * next refresh), or elsewhere ("ended" on the group's channel: read while
 * someone watches). */
enum { DIRTY_NO, DIRTY_REMOTE, DIRTY_LOCAL };

struct lastrun { /* one job's last record, as read */
    atomic_int refs;
    int64_t read_ns;
    struct history_list l; /* l.n == 0: the job has no record */
};

struct def {
    char *name, *schedule, *timezone;
    bool enabled;
    struct cron_expr *expr; /* NULL: no next run */
    const struct cron_tz *tz;
};

struct ops_defs { /* the jobs of one configuration */
    atomic_int refs;
    struct def *v;
    size_t n;
    struct def **by_name; /* v sorted by name: def_index() is a binary search */
    struct cron_tz **zones;
    size_t nzones;
    struct limits_pool *pools; /* jobs.yaml's pools: (runs -1) */
    size_t npools;
};

struct lasts { /* defs and each job's last run (NULL: not read yet) */
    atomic_int refs;
    struct ops_defs *defs;
    struct lastrun **v;
};

struct roster { /* the node list and the paused jobs, as last read */
    atomic_int refs;
    struct member *v;
    size_t n;
    struct pause_list paused;
    struct limits_pool *pools; /* the pools, their runs as read (limits_pools_read) */
    size_t npools;
    struct status_offers offers; /* the ticks offered to the nodes (status_offers_read) */
    int64_t read_ns;
};

struct trans {
    int64_t ts_ms;
    int from, to, trigger;
    uint64_t term;
    char guard[32];
};

/* What the log said, and the loop saw: copied whole by the handlers. */
struct head {
    int state;    /* enum machine_state */
    bool decided; /* reached working or waiting once */
    bool stopping;
    uint64_t term;             /* of our current or last leadership */
    int64_t lease_deadline_ns; /* while leading, else 0 */
    bool leader_known;
    char leader[256];
    uint64_t leader_term;
    int64_t leader_lease_end_ns; /* 0: unknown */
    bool outage;
    int64_t outage_since_ns;
    char outage_what[240];
    int64_t last_turn_ns;
    size_t running;
    int64_t claim_ahead_ms; /* runner_claim_ahead_ms() */
    bool reload_failed;
    struct trans trans[OPS_TRANSITIONS]; /* a ring: the newest is (ntrans - 1) % N */
    size_t ntrans;
};

struct ops {
    struct ops_host h; /* node, group, listen: the copies below */
    char *node, *group, *redis_url;
    pthread_mutex_t mu;
    struct head head;        /* written by the loop under mu */
    struct metrics *metrics; /* under mu */
    struct lasts *lasts;     /* swapped under mu by the loop */
    struct roster *roster;   /* likewise; NULL before the first read */
    atomic_llong watched_ns; /* the last request for /status or / */
    int64_t live_limit_ns;
    double start_time_s;
    /* The loop's alone: */
    struct api *api; /* http.control; NULL: off */
    struct http *http;
    struct tls_files tls; /* http.tls's certificate and key, as served; empty: plain HTTP */
    struct notify notify;
    char status[300];       /* the last STATUS= sent */
    int64_t stop_budget_ms; /* what a drain may take (ops_set_jobs) */
    unsigned char *dirty;   /* per job of lasts->defs: DIRTY_* */
    size_t rr;
    int64_t next_tick_ns, next_ping_ns, next_refresh_ns;
    bool watched;
};

/* Drop a reference; the last frees. NULL is a no-op. */
void ops_lasts_unref(struct lasts *l);
void ops_roster_unref(struct roster *r);
/* True for the states in which this node leads (enum machine_state). */
bool ops_leading_state(int s);

/* The server's routes (ops_http.c): /, /status, /metrics, /healthz,
 * /readyz; their handlers' ctx is the struct ops. */
extern const struct http_route ops_routes[];

#endif /* BATON_OPS_INT_H */
