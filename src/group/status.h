/* status.h -- the status document: the one owner of the JSON that
 * `baton status --json` prints and that `baton run` serves at GET /status.
 *
 *   {
 *     "group":  "default",
 *     "redis":  "redis://127.0.0.1:6379/0",        (password removed)
 *     "leader": {"node": "web-1", "term": 7, "lease_ms": 8200} | null,
 *     "term":   7,            (the current term, or the last one when no leader)
 *     "nodes":  [{"node": "web-1", "state": "working", "term": 7, "pid": 4242,
 *                 "version": "0.1.0", "since": "2026-01-02T07:00:00Z",
 *                 "host": "web-1", "seen_ms_ago": 412, "alive": true,
 *                 "leader": true, "jobs_hash": "9f2c...", "jobs": 4,
 *                 "jobs_differ": false, "running": 1, "capacity": 4,
 *                 "assigned": 1, "accepting": true, "labels": ["reports"]},
 *                 ...],
 *                (the leader first, then the others by name; running: the
 *                 runs whose command runs on the node now; capacity: the
 *                 most runs of members' ticks it takes at once, assigned:
 *                 those it accepted and runs now (its capacity in use),
 *                 accepting: false once it stops taking offers (SIGTERM);
 *                 null from an older baton)
 *                (jobs_differ: whether the node's effective jobs differ from
 *                 the leader's, null when either hash is unknown)
 *     "drift":  ["web-2"]   (the alive nodes whose jobs differ from the
 *                            leader's; [] when none, or no leader)
 *                (most recently seen first; fields the node did not write are
 *                 null; "lease_ms" is null when Redis did not say)
 *     "jobs":   [{"name": "tick", "schedule": "* * * * * *", "timezone": "UTC",
 *                 "enabled": true,
 *                 "last_run": {"id", "run_id", "node", "term", "scheduled_at",
 *                              "started", "duration_ms", "outcome", "result",
 *                              "attempt"} | null,   (as `baton history --json`)
 *                 "next_run": "2026-01-02T07:10:05Z" | null,
 *                 "paused": {"since", "by", "reason", "all"} | null,
 *                 "running": [{"node", "run_id", "trigger", "scheduled_at",
 *                              "started", "elapsed_ms", "by"}, ...]}, ...]
 *                (running: what runs now, from the alive nodes' heartbeats,
 *                 at most a heartbeat's age late; by: who asked for a
 *                 manual run)
 *                (next_run null when the job is disabled or never fires
 *                 again; paused: `baton pause`, all true for --all)
 *     "pools":  [{"name": "exports", "limit": 3, "running": 2 | null}, ...]
 *                (jobs.yaml's pools: with the live runs of their jobs as
 *                 counted in Redis, where the limits are kept: every node's
 *                 and the runs an earlier leader left, not one leader's
 *                 memory; null when the read failed)
 *     "waiting": [{"job", "scheduled_at", "since", "waited_ms",
 *                  "reason": "pool" | "max_running" | "room", "pool", "limit",
 *                  "queued"}, ...]
 *                (ticks waiting, unclaimed, for a slot of a fleet-wide limit,
 *                 in the order slots go to them, then claimed ticks waiting
 *                 for a member with room, oldest first: limit null; from
 *                 the leader's heartbeat
 *                 (only the leader knows them; at most a heartbeat's age
 *                 late, at most 50); queued: that job's ticks waiting)
 *     "offers": [{"node", "job", "scheduled_at", "tick"}, ...]
 *                (ticks of jobs with run_on other than leader offered to a
 *                 node and not yet accepted nor past their deadline, read
 *                 from Redis, at most STATUS_OFFERS_MAX per node; the runs
 *                 accepted are in their job's "running", on their node)
 *     "jobs_error": "jobs.yaml:3:5: ..."   (only when jobs.yaml cannot be
 *                                          loaded; "jobs" is then [])
 *   }
 *
 * The CLI fills it from what it just read from Redis; the supervisor from
 * what its loop already holds (status_doc.members_age_ms says how old the
 * node list is), and adds a "view" object of its own (ops.c). */
#ifndef BATON_STATUS_H
#define BATON_STATUS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton_election.h"
#include "history.h"
#include "jobs.h"
#include "members.h"
#include "pause.h"
#include "runlimits.h"

/* One job as status shows it. Everything is borrowed. */
struct status_job {
    const char *name, *schedule;
    const char *timezone; /* NULL: "UTC" */
    bool enabled;
    const struct cron_expr *expr; /* NULL: no next run */
    const struct cron_tz *tz;
    const struct history_rec *last; /* NULL: never ran */
    const struct pause_entry *paused; /* NULL: not paused (pause_holding()) */
};

/* A job of jobs.yaml, its last record (NULL when none) and the pause that
 * holds it (NULL when none). */
struct status_job status_job_of(const struct job *j, const struct history_rec *last,
                                const struct pause_entry *paused);

/* A tick offered to a node, not yet accepted (assign.h). */
#define STATUS_OFFERS_MAX 64 /* read per node */
struct status_offer {
    char *node, *job, *field; /* owned */
};
struct status_offers {
    struct status_offer *v;
    size_t n;
    size_t *per_node; /* per member given to status_offers_read, in its order */
};
/* Reads the offers outstanding of the alive members among m[0..n) (one
 * read per node). Returns 0 or BATON_E*; free out with status_offers_free
 * (also after a failure). */
int status_offers_read(struct baton_client *c, const char *group, const struct member *m, size_t n,
                       struct status_offers *out);
void status_offers_free(struct status_offers *o);

struct status_doc { /* everything borrowed */
    const char *group;
    const char *redis; /* as the library shows it: without its password */
    const struct baton_leader_info *leader;
    const struct member *members;
    size_t nmembers;
    int64_t members_age_ms; /* added to each node's seen_ms_ago (a cache's age) */
    const struct status_job *jobs;
    size_t njobs;
    const struct limits_pool *pools; /* runlimits.h; npools */
    size_t npools;
    const struct status_offers *offers; /* NULL: none read ("offers": []) */
    const char *jobs_error; /* NULL, or why jobs.yaml could not be loaded */
    int64_t now;            /* Unix s: next runs are computed from it */
    int64_t now_ms;         /* Unix ms: elapsed times (0: now * 1000) */
};

/* A run whose command runs now on a node, as the node's heartbeat says
 * ("runs": runner_runs_json()). Strings borrowed from the parsed heartbeats
 * a struct status_runs holds. */
struct status_run {
    const char *node, *job, *run_id, *trigger, *scheduled_at, *started;
    const char *by; /* NULL: not a manual run */
    int64_t started_ms; /* Unix ms; 0: unknown */
};
struct status_runs {
    cJSON **hb; /* the heartbeats parsed */
    size_t nhb;
    struct status_run *v; /* node by node, each node's oldest first */
    size_t n;
};
/* Reads the runs of the alive nodes among m[0..n). Returns 0 or
 * BATON_ENOMEM; free out with status_runs_free (also after a failure). */
int status_runs_read(const struct member *m, size_t n, struct status_runs *out);
void status_runs_free(struct status_runs *r);

/* Puts the leader (NULL: none) first, then the other nodes by name. */
void status_order_members(struct member *m, size_t n, const char *leader);

/* Returns: the document (owned; free with cJSON_Delete), or NULL on ENOMEM. */
cJSON *status_doc_json(const struct status_doc *d);

/* Whether m's effective jobs (the hash its heartbeat carries) differ from
 * the leader's among members: 1, 0, or -1 when either is unknown. */
int status_jobs_differ(const struct baton_leader_info *leader, const struct member *members,
                       size_t n, const struct member *m);

#endif /* BATON_STATUS_H */
