/* daemon_int.h -- the state of `baton run`, shared by its three files:
 * presence.c (the node in its group: Redis reachable or not, heartbeats,
 * config drift, the subscription), actions.c (the machine's actions and
 * the facts its guards read) and daemon.c (the wiring: the event sources,
 * dispatch, reload, start and stop). Calls go daemon.c -> actions.c ->
 * presence.c, never back up. Not a public interface: nothing outside
 * these three files includes it. */
#ifndef BATON_DAEMON_INT_H
#define BATON_DAEMON_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton.h"
#include "baton_election.h"
#include "config.h"
#include "drift.h"
#include "facts.h"
#include "guards.h"
#include "hook.h"
#include "jobs.h"
#include "log.h"
#include "loop.h"
#include "machine.h"
#include "ops.h"
#include "reload.h"
#include "runner.h"

/* Timers, in priority order: when several are due, the lowest fires first. */
enum {
    T_DEADLINE,  /* the lease's stop point */
    T_RENEW,     /* renew the lease */
    T_JOBS,      /* the runner's own timer (it arms it itself) */
    T_DRAIN,     /* shutdown_grace is over */
    T_WAKE,      /* the leader's lease runs out: campaign */
    T_POLL,      /* followers' safety-net poll */
    T_BACKOFF,   /* Redis unreachable: try again */
    T_RESTART,   /* the pause after a step-down is over */
    T_HEARTBEAT, /* write our heartbeat (and, leading, look for config drift) */
    T_HOOKS,     /* the hooks' own timer (they arm it themselves) */
    T_OPS,       /* ops.c's own timer: liveness, systemd's watchdog, the HTTP view */
};

#define STEP_DOWN_PAUSE_MS 1000
#define BACKOFF_MIN_MS     100
#define KILL_MARGIN_MS     50 /* jobs are dead this long before the deadline */
#define RUNS_TELL_MS       250 /* a run started or ended: the heartbeat that says so, after */
#define HEARTBEAT_RUNS_MAX 50  /* runs a heartbeat lists (its "running" counts them all) */
/* Ticks waiting for a limit a heartbeat lists, the first served first. */
#define HEARTBEAT_WAITS_MAX 50
/* At a lease's end the followers campaign in the order of their names,
 * STAGGER_MS apart (the first STAGGER_RANKS; the rest together after
 * them): the first alive wins at once, without a hundred campaigns queued
 * in Redis and a hundred processes for the CPU ahead of its own. */
#define STAGGER_MS    1
#define STAGGER_RANKS 100

struct daemon {
    struct config *cfg;
    char *config_path;
    struct log *log;
    struct baton_client *client;
    struct baton_election *election;
    struct runner *runner;
    struct hooks *hooks;
    struct drift *drift;
    char jobs_hash[JOBS_HASH_HEX]; /* of the jobs running: heartbeats carry it */
    size_t njobs;
    int64_t drain_until; /* CLOCK_MONOTONIC: the end of shutdown_grace, once draining */
    struct ops *ops;     /* HTTP endpoint and systemd notifications (ops.h) */
    struct machine m;
    struct loop loop;
    struct loop_watch sig_watch;
    struct loop_watch sub_watch; /* its cb and ctx set at start: presence_watch sets the fd */
    bool sub_added;
    char *ended_chan; /* baton:{G}:ended (keys.h) */
    bool ended_heard; /* listened to on the subscription */
    bool announce;    /* a change of role the group has not been told yet */
    bool runs_told;   /* a run started or ended: a heartbeat says so soon (RUNS_TELL_MS) */
    struct reloader rl; /* a SIGHUP's reading (reload.h) */

    struct guards guards; /* the machine's guards, on the facts below (guards.h) */
    uint64_t term;    /* of our current (or last) leadership */
    int64_t guard_ns; /* the stop point's distance from the deadline */
    struct baton_leader_info holder; /* the leader, as the last campaign saw it */
    uint64_t following_term;         /* the term we announced following */
    int64_t rank; /* members named before us: the claim at start, then each heartbeat */
    int64_t backoff_ms;
    bool outage; /* Redis unreachable since outage_since */
    int64_t outage_since;
    bool redis_seen; /* we have talked to Redis at least once */
    uint64_t rng;
    char since[40]; /* when we started, for the heartbeat */
};

/* ---- presence.c ---- */

/* ms, give or take pct percent (the daemon's xorshift). */
int64_t presence_jitter_ms(struct daemon *d, int64_t ms, int pct);

/* The one gate of blocking Redis calls on this loop (guards.h); ctx is
 * the daemon (a host's may_block). */
bool presence_may_block(void *ctx);

/* Redis answered: ends an outage (logged once), or says the first
 * connection; resets the backoff. */
void presence_redis_ok(struct daemon *d);

/* Redis did not answer `what` (detail: why): the first failure of an
 * outage is logged, with retry_ms when >= 0; the rest are not. */
void presence_redis_failed(struct daemon *d, enum log_during what, const char *detail,
                           int64_t retry_ms);

/* The jobs now running: their hash and count for the heartbeats. */
void presence_set_jobs(struct daemon *d, const struct jobs *jobs);

/* Writes our heartbeat (state, term, runs, jobs' hash) through the gate and
 * arms the next; leading, looks for config drift. */
void presence_heartbeat(struct daemon *d);

/* Subscribes to the group's events if we are not (or, over a quorum, not
 * on every master); a failure is tried again at the next call. */
void presence_watch(struct daemon *d);

/* ---- actions.c ---- */

/* The machine's actions (MACHINE_ACTIONS), one per ACT_. */
extern const machine_action_fn daemon_actions[ACT_COUNT];

/* Where the guards read their facts (guards.h): d's loop clock, lease and
 * runner. */
struct guards_host daemon_guards_host(struct daemon *d);

#endif
