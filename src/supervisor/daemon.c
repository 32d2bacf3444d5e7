/* daemon.c -- `baton run`: the machine's actions and guards, and the event
 * loop that turns timers, signals and Redis notifications into the
 * machine's events.
 *
 * One thread. State changes only through machine_dispatch(); the actions
 * below return the next event (never chosen from a fact of the daemon:
 * that is a guard's job), and the guards (guards.c, on the facts given
 * here) are the only reads of the daemon's state that decide a move.
 *
 * The stop point. While we lead, the lease's local validity deadline is
 * guarded by a stop point, deadline - (redis_timeout + 2 x KILL_MARGIN):
 * the timer T_DEADLINE fires there, before any other timer, and no
 * blocking Redis call starts after it (may_block(), guards.h: the one gate
 * every call on this loop goes through, the runner's included; a renewal
 * that may not block pauses instead, by the table). So even a call
 * that waits the whole redis_timeout ends before we must pause, and pausing
 * (which makes no Redis call) TERMs the jobs and KILLs them KILL_MARGIN
 * before the deadline. A node that was stopped or starved past its stop
 * point pauses before it could act as leader. The runner applies the same
 * rule to the runs it keeps registered on their own after a handover.
 *
 * Hooks (hook.h) are not runs: the machine does not wait for them (a node
 * that pauses goes on to follow while they report). Only the exit does:
 * once the machine is stopped (its final state), the loop goes on until
 * the hooks end, within what is left of shutdown_grace (then they are
 * stopped, TERM then KILL: the table's hurry in stopped). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "baton.h"
#include "baton_election.h"
#include "clock.h"
#include "config.h"
#include "daemon.h"
#include "drift.h"
#include "guards.h"
#include "hook.h"
#include "jobs.h"
#include "keys.h"
#include "log.h"
#include "loop.h"
#include "machine.h"
#include "members.h"
#include "ops.h"
#include "proc.h"
#include "runner.h"
#include "secrets.h"

#ifndef BATON_VERSION_STRING
#define BATON_VERSION_STRING "unknown"
#endif

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
/* At a lease's end the followers campaign in the order of their names,
 * STAGGER_MS apart (the first STAGGER_RANKS; the rest together after
 * them): the first alive wins at once, without a hundred campaigns queued
 * in Redis and a hundred processes for the CPU ahead of its own. */
#define STAGGER_MS    1
#define STAGGER_RANKS 100

/* A SIGHUP's reading of baton.yaml and jobs.yaml, on a thread of its own:
 * parsing 10,000 jobs takes the loop's whole CPU for a few hundred ms, and
 * the loop has ticks to start meanwhile. The loop applies the result when
 * the thread says it is done (a byte on pipe[1]). */
struct reloader {
    bool running; /* a thread reads; `again`: another SIGHUP came meanwhile */
    bool again;
    pthread_t thread;
    int pipe[2];
    struct loop_watch watch;
    const char *path;   /* borrowed: the daemon's config_path */
    struct config *cfg; /* the thread's results, taken by the loop */
    struct jobs *jobs;
    struct ops_defs *defs; /* the view's copy of jobs, made by the thread too */
    char err[1024];
};

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
    struct loop_watch sub_watch;
    bool sub_added;
    char *ended_chan; /* baton:{G}:ended (keys.h) */
    bool ended_heard; /* listened to on the subscription */
    bool announce;    /* a change of role the group has not been told yet */
    bool runs_told;   /* a run started or ended: a heartbeat says so soon (RUNS_TELL_MS) */
    struct reloader rl;

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

/* ---- helpers ---- */

static int64_t jitter_ms(struct daemon *d, int64_t ms, int pct)
{
    d->rng ^= d->rng << 13;
    d->rng ^= d->rng >> 7;
    d->rng ^= d->rng << 17;
    int64_t span = ms * pct / 100;
    if (span <= 0)
        return ms;
    return ms - span + (int64_t)(d->rng % (uint64_t)(2 * span + 1));
}

/* The one gate of blocking Redis calls on this loop (guards.h). */
static bool may_block(void *ctx)
{
    struct daemon *d = ctx;
    return guards_may_block(&d->guards);
}

/* Logs the first failure of an outage and the first success after it:
 * one line per state of the outage, not one per attempt. */
static void redis_ok(struct daemon *d)
{
    if (d->outage) {
        cJSON *f = log_fields();
        cJSON_AddNumberToObject(f, "outage_ms", (double)((loop_now() - d->outage_since) / MS));
        log_emit(d->log, LE_REDIS_REACHABLE, f);
        d->outage = false;
    } else if (!d->redis_seen) {
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "url", baton_client_url(d->client));
        log_emit(d->log, LE_REDIS_CONNECTED, f);
    }
    d->redis_seen = true;
    d->backoff_ms = BACKOFF_MIN_MS;
}

static void redis_failed(struct daemon *d, const char *what, const char *detail, int64_t retry_ms)
{
    if (d->outage)
        return;
    d->outage = true;
    d->outage_since = loop_now();
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "during", what);
    cJSON_AddStringToObject(f, "error", detail);
    if (retry_ms >= 0)
        cJSON_AddNumberToObject(f, "retry_in_ms", (double)retry_ms);
    log_emit(d->log, LE_REDIS_UNREACHABLE, f);
}

/* Leading: compares the nodes' jobs with ours (one read of the group's
 * heartbeats, through the gate). Not leading: forgets what was reported. */
static void check_drift(struct daemon *d)
{
    struct member *m = NULL;
    size_t n = 0;
    if (!machine_in(&d->m, P_LEADING)) {
        drift_reset(d->drift);
        return;
    }
    if (!may_block(d) || members_read(d->client, d->cfg->group, &m, &n) != BATON_OK)
        return; /* the next heartbeat looks again */
    drift_check(d->drift, d->log, d->cfg->node, d->jobs_hash, (long)d->njobs, m, n);
    members_free(m, n);
}

/* The jobs now running: their hash for the heartbeats. */
static void set_jobs_hash(struct daemon *d, const struct jobs *jobs)
{
    jobs_hash_hex(jobs, d->jobs_hash, sizeof d->jobs_hash);
    d->njobs = jobs->n;
}

static void heartbeat(struct daemon *d)
{
    d->announce = false;
    d->runs_told = false;
    loop_arm_in(&d->loop, T_HEARTBEAT, jitter_ms(d, d->cfg->poll_ms, 10));
    if (!may_block(d))
        return; /* the next one */
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "state", machine_state_name(d->m.state)); /* at the end: stopped */
    /* A follower shows the term it follows; a leader its own. */
    cJSON_AddNumberToObject(o, "term",
                            (double)(d->following_term != 0 ? d->following_term : d->term));
    cJSON_AddNumberToObject(o, "pid", (double)getpid());
    cJSON_AddStringToObject(o, "host", members_host());
    cJSON_AddNumberToObject(o, "poll_ms", (double)d->cfg->poll_ms);
    cJSON_AddStringToObject(o, "version", BATON_VERSION_STRING);
    cJSON_AddStringToObject(o, "since", d->since);
    cJSON_AddNumberToObject(o, "running", (double)runner_running(d->runner));
    cJSON_AddItemToObject(o, "runs", runner_runs_json(d->runner, HEARTBEAT_RUNS_MAX));
    cJSON_AddStringToObject(o, "jobs_hash", d->jobs_hash);
    cJSON_AddNumberToObject(o, "jobs", (double)d->njobs);
    char *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (json != NULL && members_heartbeat(d->client, d->cfg->group, d->cfg->node, json,
                                          members_forget_ms(d->cfg->poll_ms, machine_done(&d->m)),
                                          &d->rank) == BATON_OK)
        redis_ok(d);
    free(json);
    check_drift(d);
}

/* Subscribes to the group's events if we are not subscribed. */
static void ensure_watch(struct daemon *d);

static void disarm_follower_timers(struct daemon *d)
{
    loop_disarm(&d->loop, T_WAKE);
    loop_disarm(&d->loop, T_POLL);
    loop_disarm(&d->loop, T_BACKOFF);
}

static void arm_stop_point(struct daemon *d)
{
    loop_arm(&d->loop, T_DEADLINE, baton_election_deadline_ns(d->election) - d->guard_ns);
}

/* ---- the facts the guards read (guards.h) ---- */

static int64_t fact_now(void *ctx)
{
    (void)ctx;
    return loop_now();
}

static int64_t fact_lease_deadline(void *ctx)
{
    struct daemon *d = ctx;
    return baton_election_deadline_ns(d->election);
}

static int64_t fact_runs_stop_point(void *ctx)
{
    struct daemon *d = ctx;
    return runner_stop_point(d->runner);
}

static size_t fact_running(void *ctx)
{
    struct daemon *d = ctx;
    return runner_running(d->runner);
}

/* ---- the actions (MACHINE_ACTIONS) ---- */

static enum machine_event act_campaign(void *ctx)
{
    struct daemon *d = ctx;
    uint64_t old_term = d->term;
    ensure_watch(d);
    int rc = baton_election_campaign(d->election, &d->holder);
    if (rc == BATON_OK || rc == BATON_ETAKEN)
        redis_ok(d);
    if (baton_election_released_stale(d->election)) {
        cJSON *f = log_fields();
        cJSON_AddNumberToObject(f, "term", (double)old_term);
        log_emit(d->log, LE_STALE_LEASE_RELEASED, f);
    }
    if (rc == BATON_OK) {
        d->term = baton_election_term(d->election);
        return EV_ACQUIRED;
    }
    if (rc == BATON_ETAKEN)
        return EV_TAKEN;
    redis_failed(d, "campaign", baton_election_errstr(d->election), d->backoff_ms);
    return EV_REDIS_ERROR;
}

static enum machine_event act_lead(void *ctx)
{
    struct daemon *d = ctx;
    d->following_term = 0;
    disarm_follower_timers(d);
    arm_stop_point(d);
    loop_arm_in(&d->loop, T_RENEW, d->cfg->lease_renew_ms);
    runner_lead(d->runner, d->term, baton_election_deadline_ns(d->election));
    return EV_NONE;
}

static enum machine_event act_follow(void *ctx)
{
    struct daemon *d = ctx;
    runner_flush(d->runner); /* what pausing held back */
    ensure_watch(d);
    int64_t turn_ms = STAGGER_MS * (d->rank < STAGGER_RANKS ? d->rank : STAGGER_RANKS);
    if (d->holder.term != d->following_term) {
        d->following_term = d->holder.term;
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "leader", d->holder.identity);
        cJSON_AddNumberToObject(f, "term", (double)d->holder.term);
        cJSON_AddNumberToObject(f, "lease_left_ms", (double)d->holder.ttl_ms);
        cJSON_AddNumberToObject(f, "turn_ms", (double)turn_ms);
        log_emit(d->log, LE_FOLLOWING, f);
    }
    /* Wake when the leader's lease can have run out (a crashed leader),
     * in our turn, and poll as a safety net; a resignation that names us
     * wakes us at once. */
    if (d->holder.ttl_ms >= 0)
        loop_arm_in(&d->loop, T_WAKE, d->holder.ttl_ms + 1 + turn_ms);
    else
        loop_arm_in(&d->loop, T_WAKE, 1); /* no lease seen: campaign now */
    loop_arm_in(&d->loop, T_POLL, jitter_ms(d, d->cfg->poll_ms, 10));
    d->holder.ttl_ms = -1;
    return EV_NONE;
}

static enum machine_event act_backoff(void *ctx)
{
    struct daemon *d = ctx;
    loop_disarm(&d->loop, T_WAKE);
    loop_disarm(&d->loop, T_POLL);
    loop_arm_in(&d->loop, T_BACKOFF, jitter_ms(d, d->backoff_ms, 25));
    d->backoff_ms *= 2;
    if (d->backoff_ms > d->cfg->poll_ms)
        d->backoff_ms = d->cfg->poll_ms;
    return EV_NONE;
}

/* Entered only when a blocking call may start (the guard may_block). */
static enum machine_event act_renew(void *ctx)
{
    struct daemon *d = ctx;
    int rc = baton_election_renew(d->election);
    if (rc == BATON_OK) {
        redis_ok(d);
        arm_stop_point(d);
        if (may_block(d))
            ensure_watch(d); /* a leader that lost its subscription makes it again */
        loop_arm_in(&d->loop, T_RENEW, d->cfg->lease_renew_ms);
        if (log_enabled(d->log, LOG_DEBUG)) {
            cJSON *f = log_fields();
            cJSON_AddNumberToObject(f, "term", (double)d->term);
            cJSON_AddNumberToObject(f, "ttl_ms", (double)d->cfg->lease_ttl_ms);
            log_emit(d->log, LE_LEASE_RENEWED, f);
        }
        return EV_RENEWED; /* the guard in_time decides: confirmed in time, or a stall */
    }
    if (rc == BATON_ELOST) {
        redis_ok(d);
        return EV_LOST;
    }
    redis_failed(d, "renew", baton_election_errstr(d->election), -1);
    return EV_REDIS_ERROR;
}

static enum machine_event act_confirm(void *ctx)
{
    struct daemon *d = ctx;
    runner_lease_renewed(d->runner, baton_election_deadline_ns(d->election));
    return EV_NONE;
}

static enum machine_event act_retry(void *ctx)
{
    struct daemon *d = ctx;
    /* Keep trying until the stop point: it, not the backoff, decides when
     * we stop leading. */
    int64_t ms = d->cfg->lease_renew_ms / 4;
    if (ms > 500)
        ms = 500;
    loop_arm_in(&d->loop, T_RENEW, jitter_ms(d, ms < 10 ? 10 : ms, 25));
    return EV_NONE;
}

static enum machine_event act_pause(void *ctx)
{
    struct daemon *d = ctx;
    int64_t deadline = baton_election_deadline_ns(d->election);
    /* Leaving working drops local leadership: only a new grant from Redis
     * makes us lead again (the next campaign first releases this lease). */
    baton_election_abandon(d->election);
    runner_unlead(d->runner);
    if (deadline == 0 || loop_now() >= deadline - d->guard_ns) {
        cJSON *f = log_fields();
        cJSON_AddNumberToObject(f, "term", (double)d->term);
        log_emit(d->log, LE_LEASE_DEADLINE_MISSED, f);
    }
    /* Jobs must be dead before the lease could be granted to another node:
     * that cannot happen before our local deadline. */
    int64_t kill_by = deadline - KILL_MARGIN_MS * MS;
    runner_terminate(d->runner, false, kill_by > loop_now() ? kill_by : 1);
    return EV_JOBS_STOPPED; /* the guard runs_left decides: wait, or go on */
}

static enum machine_event act_handover(void *ctx)
{
    struct daemon *d = ctx;
    int64_t deadline = baton_election_deadline_ns(d->election);
    size_t running = runner_running(d->runner);
    runner_stop_scheduling(d->runner);
    /* The runs still going are registered on their own, then the lease is
     * given up at once: the next leader schedules while they finish; and
     * only then do we leave the jobs' state (a few ms for 10,000 jobs). */
    int rc = runner_handover(d->runner, deadline);
    cJSON *f = log_fields();
    cJSON_AddNumberToObject(f, "term", (double)d->term);
    if (rc == BATON_OK) {
        cJSON_AddNumberToObject(f, "running", (double)running);
        log_emit(d->log, LE_HANDOVER, f);
    } else {
        cJSON_AddStringToObject(f, "error", baton_client_errstr(d->client));
        cJSON_AddStringToObject(f, "then", "the runs are stopped before the lease ends");
        log_emit(d->log, LE_HANDOVER_FAILED, f);
    }
    f = log_fields();
    cJSON_AddNumberToObject(f, "term", (double)d->term);
    rc = may_block(d) ? baton_election_resign(d->election) : BATON_ETIMEDOUT;
    if (rc == BATON_OK) {
        redis_ok(d);
        log_emit(d->log, LE_LEASE_RELEASED, f);
    } else {
        baton_election_abandon(d->election);
        cJSON_AddStringToObject(f, "error", rc == BATON_ETIMEDOUT
                                                ? "past the stop point"
                                                : baton_election_errstr(d->election));
        cJSON_AddStringToObject(f, "then", "the lease expires on its own");
        log_emit(d->log, LE_LEASE_RELEASE_FAILED, f);
    }
    runner_unlead(d->runner);
    return EV_RELEASED;
}

/* Runs alive get up to shutdown_grace (none: nothing to wait for). */
static enum machine_event act_drain(void *ctx)
{
    struct daemon *d = ctx;
    size_t n = runner_running(d->runner);
    if (n > 0) {
        cJSON *f = log_fields();
        cJSON_AddNumberToObject(f, "running", (double)n);
        cJSON_AddNumberToObject(f, "grace_ms", (double)d->cfg->shutdown_grace_ms);
        log_emit(d->log, LE_DRAINING, f);
        d->drain_until = loop_now() + d->cfg->shutdown_grace_ms * MS;
        loop_arm(&d->loop, T_DRAIN, d->drain_until);
    }
    return EV_JOBS_STOPPED; /* the guard runs_left decides: wait, or finish */
}

static enum machine_event act_hurry(void *ctx)
{
    struct daemon *d = ctx;
    runner_terminate(d->runner, true, 0);
    hooks_hurry(d->hooks);
    return EV_JOBS_STOPPED; /* the guard runs_left decides (stopped: ignored) */
}

static enum machine_event act_restart(void *ctx)
{
    struct daemon *d = ctx;
    disarm_follower_timers(d);
    /* Give the followers, woken by our resignation, a head start. */
    loop_arm_in(&d->loop, T_RESTART, STEP_DOWN_PAUSE_MS);
    return EV_NONE;
}

static enum machine_event act_finish(void *ctx)
{
    struct daemon *d = ctx;
    disarm_follower_timers(d);
    loop_disarm(&d->loop, T_DRAIN);
    loop_disarm(&d->loop, T_RESTART);
    runner_flush(d->runner);
    return EV_FINISHED;
}

static enum machine_event act_sign_off(void *ctx)
{
    heartbeat(ctx); /* "stopped": status shows it at once */
    return EV_NONE;
}

/* The exit action of leading: its timers end with it. */
static enum machine_event act_disarm(void *ctx)
{
    struct daemon *d = ctx;
    loop_disarm(&d->loop, T_RENEW);
    loop_disarm(&d->loop, T_DEADLINE);
    return EV_NONE;
}

static const machine_action_fn actions[ACT_COUNT] = {
    [ACT_CAMPAIGN] = act_campaign, [ACT_LEAD] = act_lead,         [ACT_FOLLOW] = act_follow,
    [ACT_BACKOFF] = act_backoff,   [ACT_RENEW] = act_renew,       [ACT_CONFIRM] = act_confirm,
    [ACT_RETRY] = act_retry,       [ACT_PAUSE] = act_pause,       [ACT_HANDOVER] = act_handover,
    [ACT_DRAIN] = act_drain,       [ACT_HURRY] = act_hurry,       [ACT_RESTART] = act_restart,
    [ACT_FINISH] = act_finish,     [ACT_SIGN_OFF] = act_sign_off, [ACT_DISARM] = act_disarm,
};

/* Logs every change of state. */
static void on_transition(void *ctx, enum machine_state from, enum machine_state to,
                          enum machine_event trigger, enum machine_guard guard, bool held,
                          int64_t in_state_ms, bool quiet)
{
    struct daemon *d = ctx;
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "from", machine_state_name(from));
    cJSON_AddStringToObject(f, "to", machine_state_name(to));
    cJSON_AddStringToObject(f, "trigger", machine_event_name(trigger));
    if (guard != G_ALWAYS) {
        char g[64];
        snprintf(g, sizeof g, "%s%s", held ? "" : "not ", machine_guard_name(guard));
        cJSON_AddStringToObject(f, "guard", g);
    }
    cJSON_AddNumberToObject(f, "term", (double)d->term);
    cJSON_AddNumberToObject(f, "fence", (double)d->term);
    cJSON_AddNumberToObject(f, "in_state_ms", (double)in_state_ms);
    log_emit_at(d->log, quiet ? LOG_DEBUG : LOG_INFO, LE_TRANSITION, f);
    /* Others see a change of role at once, not at the next heartbeat: once
     * the actions of this event have run (dispatch), so that the heartbeat's
     * round trips never delay a release or the start of leading. */
    if (!quiet && to != ST_ACQUIRING && to != ST_PAUSING && to != ST_IDLE)
        d->announce = true;
}

/* Hears runs' "ended" messages (keys.h) while we lead, for jobs that wait
 * for their runs, or always with an HTTP view, which shows their ends:
 * not every follower of a fleet at every run's end. A subscription that
 * cannot be told is broken: watching again subscribes as wanted then. */
static void listen_ended(struct daemon *d)
{
    bool want = machine_in(&d->m, P_LEADING) || strcmp(d->cfg->http_listen, "off") != 0;
    if (want == d->ended_heard)
        return;
    d->ended_heard = want;
    (void)baton_election_listen(d->election, want ? d->ended_chan : NULL);
}

static void dispatch(struct daemon *d, enum machine_event ev)
{
    if (machine_dispatch(&d->m, ev) < 0)
        log_emit(d->log, LE_MACHINE_LOOP, NULL);
    listen_ended(d);
    if (d->announce)
        heartbeat(d); /* the state the event left us in */
}

/* The runner's last run ended. */
static void on_runs_idle(void *ctx)
{
    dispatch(ctx, EV_JOBS_STOPPED);
}

/* A run started or ended: the group hears it with a heartbeat RUNS_TELL_MS
 * later (one for every change in between), so that `baton status` shows
 * what runs now without a write per run. */
static void on_runs_changed(void *ctx)
{
    struct daemon *d = ctx;
    if (d->runs_told)
        return;
    d->runs_told = true;
    loop_arm_in(&d->loop, T_HEARTBEAT, RUNS_TELL_MS);
}

/* ---- event sources ---- */

static void on_timer(void *ctx, int id)
{
    struct daemon *d = ctx;
    switch (id) {
    case T_DEADLINE: dispatch(d, EV_DEADLINE); break;
    case T_RENEW: dispatch(d, EV_RENEW_DUE); break;
    case T_JOBS: runner_on_timer(d->runner); break;
    case T_DRAIN: {
        cJSON *f = log_fields();
        cJSON_AddNumberToObject(f, "running", (double)(runner_running(d->runner) +
                                                       hooks_running(d->hooks)));
        log_emit(d->log, LE_DRAIN_TIMEOUT, f);
        dispatch(d, EV_DRAIN_TIMEOUT); /* stopped: only hooks are left */
        break;
    }
    case T_WAKE:
    case T_POLL:
    case T_BACKOFF: dispatch(d, EV_WAKE); break;
    case T_RESTART: dispatch(d, EV_START); break;
    case T_HEARTBEAT: heartbeat(d); break;
    case T_HOOKS: hooks_on_timer(d->hooks); break;
    case T_OPS: ops_on_timer(d->ops); break;
    default: break;
    }
}

static void on_message(void *ctx, const char *msg, size_t len)
{
    struct daemon *d = ctx;
    runner_on_message(d->runner, msg, len);
    ops_on_message(d->ops, msg, len);
}

static void on_sub(void *ctx, struct loop_watch *w, uint32_t events)
{
    struct daemon *d = ctx;
    (void)w;
    (void)events;
    unsigned ev = 0;
    if (baton_election_watch_read_msgs(d->election, &ev, on_message, d) != BATON_OK) {
        loop_del(&d->loop, &d->sub_watch);
        d->sub_added = false;
        if (log_enabled(d->log, LOG_DEBUG)) {
            cJSON *f = log_fields();
            cJSON_AddStringToObject(f, "error", baton_election_errstr(d->election));
            log_emit(d->log, LE_WATCH_LOST, f);
        }
    }
    if (ev & BATON_EVENT_STEP_DOWN) {
        log_emit(d->log, LE_STEP_DOWN_REQUESTED, NULL);
        dispatch(d, EV_STEP_DOWN);
    }
    if (ev & (BATON_EVENT_RESIGNED | BATON_EVENT_SWITCHED))
        dispatch(d, EV_WAKE); /* a switched Redis: do not wait out the old master's ttl */
}

static void ensure_watch(struct daemon *d)
{
    /* Over a quorum, a master whose subscription is missing (down, or
     * back) is tried again here; the descriptor stays the same. */
    if (d->sub_added && baton_election_watch_complete(d->election))
        return;
    if (baton_election_watch(d->election) != BATON_OK)
        return; /* campaigns and polls keep working; we retry next time */
    if (d->sub_added)
        return;
    d->sub_watch =
        (struct loop_watch){.fd = baton_election_watch_fd(d->election), .cb = on_sub, .ctx = d};
    if (loop_add(&d->loop, &d->sub_watch) == 0) {
        d->sub_added = true;
        /* Requests and pauses published while we were not subscribed. */
        runner_control_changed(d->runner);
    }
}

static void reload(struct daemon *d);

static void on_signal(void *ctx, struct loop_watch *w, uint32_t events)
{
    struct daemon *d = ctx;
    struct signalfd_siginfo si;
    (void)events;
    if (read(w->fd, &si, sizeof si) != (ssize_t)sizeof si)
        return;
    int sig = (int)si.ssi_signo;
    if (sig == SIGCHLD) {
        runner_on_sigchld(d->runner);
        return;
    }
    /* A stop while we run: the lease is released first and the lines of
     * this turn are written just after, so that the log's writer does not
     * take the core the client's loop needs for the release (log_hold). */
    bool handing_over = sig != SIGHUP && !machine_done(&d->m);
    if (handing_over)
        log_hold(d->log);
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "signal", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
    log_emit(d->log, LE_SIGNAL_RECEIVED, f);
    if (sig == SIGHUP) {
        if (!machine_done(&d->m)) /* stopped: nothing to apply it to */
            reload(d);
        return;
    }
    d->guards.stopping = true;
    dispatch(d, EV_STOP); /* stopped: only hooks are left, hurried */
    if (handing_over)
        log_release(d->log);
}

/* ---- set-up and reload ---- */

/* Loads the jobs file of cfg. Returns NULL with a message in err. */
static struct jobs *load_jobs(const struct config *cfg, char *err, size_t errlen)
{
    struct jobs *j = NULL;
    if (access(cfg->jobs_path, F_OK) != 0) {
        snprintf(err, errlen, "%s: %s", cfg->jobs_path, strerror(errno));
        return NULL;
    }
    if (config_load_jobs(cfg, &j, err, errlen) != 0)
        return NULL;
    return j;
}

/* Reads the configuration at path and its jobs: *cfg and *jobs (owned),
 * or NULL in both with the message in err. */
static void read_config(const char *path, struct config **cfg, struct jobs **jobs, char *err,
                        size_t len)
{
    *cfg = NULL;
    *jobs = NULL;
    if (config_load(path, cfg, err, len) == 0)
        *jobs = load_jobs(*cfg, err, len);
    if (*jobs == NULL) {
        config_free(*cfg);
        *cfg = NULL;
    }
}

/* Applies what a SIGHUP read (cfg and jobs owned, or NULL with err). */
static void reload_apply(struct daemon *d, struct config *cfg, struct jobs *jobs,
                         struct ops_defs *defs, const char *err)
{
    cJSON *f = log_fields();
    if (cfg == NULL || jobs == NULL) {
        ops_defs_unref(defs);
        cJSON_AddStringToObject(f, "error", err);
        cJSON_AddStringToObject(f, "then", "keeping the running configuration");
        log_emit(d->log, LE_RELOAD_FAILED, f);
        config_free(cfg);
        return;
    }
    /* What needs a new process (identity, Redis, lease of the running
     * election, the HTTP server's socket) is reported and kept; the rest
     * applies now. */
    static const char *const fixed[] = {"node",          "redis",
                                        "group",         "password_file",
                                        "sentinel_password_file", "http.listen",
                                        "http.allowed_hosts",
                                        "lease.ttl",     "lease.renew",
                                        "min_replicas"};
    enum { NSTRINGS = 7, NFIXED = sizeof fixed / sizeof fixed[0] };
    char **mine[NSTRINGS] = {&cfg->node,          &cfg->redis,
                             &cfg->group,         &cfg->password_file,
                             &cfg->sentinel_password_file, &cfg->http_listen,
                             &cfg->http_allowed_hosts};
    char **running[NSTRINGS] = {&d->cfg->node,          &d->cfg->redis,
                                &d->cfg->group,         &d->cfg->password_file,
                                &d->cfg->sentinel_password_file, &d->cfg->http_listen,
                                &d->cfg->http_allowed_hosts};
    bool differs[NFIXED] = {false};
    for (int i = 0; i < NSTRINGS; i++)
        differs[i] = strcmp(*mine[i], *running[i]) != 0;
    differs[NSTRINGS] = cfg->lease_ttl_ms != d->cfg->lease_ttl_ms;
    differs[NSTRINGS + 1] = cfg->lease_renew_ms != d->cfg->lease_renew_ms;
    differs[NSTRINGS + 2] = cfg->min_replicas != d->cfg->min_replicas;
    cJSON *kept = cJSON_CreateArray();
    for (int i = 0; i < NFIXED; i++)
        if (differs[i])
            cJSON_AddItemToArray(kept, cJSON_CreateString(fixed[i]));
    if (cJSON_GetArraySize(kept) > 0) {
        cJSON_AddItemToObject(f, "restart_needed_for", kept);
        /* Keep the running values: move them over (no allocation to fail). */
        for (int i = 0; i < NSTRINGS; i++) {
            free(*mine[i]);
            *mine[i] = *running[i];
            *running[i] = NULL;
        }
        cfg->lease_ttl_ms = d->cfg->lease_ttl_ms;
        cfg->lease_renew_ms = d->cfg->lease_renew_ms;
        cfg->min_replicas = d->cfg->min_replicas;
    } else {
        cJSON_Delete(kept);
    }
    size_t njobs = jobs->n;
    char hash[JOBS_HASH_HEX];
    jobs_hash_hex(jobs, hash, sizeof hash);
    if (runner_set_jobs(d->runner, jobs) != BATON_OK) {
        cJSON_Delete(f);
        f = log_fields();
        cJSON_AddStringToObject(f, "error", "out of memory");
        cJSON_AddStringToObject(f, "then", "keeping the running configuration");
        log_emit(d->log, LE_RELOAD_FAILED, f);
        config_free(cfg);
        ops_defs_unref(defs);
        return;
    }
    /* The runner owns the jobs; the view has its copy (defs). */
    ops_set_jobs(d->ops, jobs, defs, cfg->shutdown_grace_ms);
    cJSON_AddNumberToObject(f, "jobs", (double)njobs);
    cJSON_AddStringToObject(f, "jobs_hash", hash);
    memcpy(d->jobs_hash, hash, sizeof hash);
    d->njobs = njobs;
    config_free(d->cfg);
    d->cfg = cfg;
    log_set_level(d->log, cfg->log_level);
    log_set_format(d->log, cfg->log_format);
    log_emit(d->log, LE_RELOADED, f);
    heartbeat(d); /* the group sees the new jobs' hash now, not at the next poll */
}

static void *reload_thread(void *arg)
{
    struct reloader *rl = arg;
    read_config(rl->path, &rl->cfg, &rl->jobs, rl->err, sizeof rl->err);
    rl->defs = rl->jobs != NULL ? ops_defs_new(rl->jobs) : NULL;
    ssize_t n = write(rl->pipe[1], "r", 1); /* the loop takes it from here */
    (void)n;
    return NULL;
}

/* Waits for the reading thread, if any, and closes its pipe. */
static void reload_join(struct daemon *d)
{
    struct reloader *rl = &d->rl;
    if (!rl->running)
        return;
    pthread_join(rl->thread, NULL);
    loop_del(&d->loop, &rl->watch);
    close(rl->pipe[0]);
    close(rl->pipe[1]);
    rl->running = false;
}

/* The thread has read the files: apply, and read again if another SIGHUP
 * came meanwhile. */
static void on_reloaded(void *ctx, struct loop_watch *w, uint32_t events)
{
    struct daemon *d = ctx;
    (void)w;
    (void)events;
    reload_join(d);
    struct config *cfg = d->rl.cfg;
    struct jobs *jobs = d->rl.jobs;
    struct ops_defs *defs = d->rl.defs;
    d->rl.cfg = NULL;
    d->rl.jobs = NULL;
    d->rl.defs = NULL;
    reload_apply(d, cfg, jobs, defs, d->rl.err);
    if (d->rl.again && !machine_done(&d->m)) {
        d->rl.again = false;
        reload(d);
    }
}

/* SIGHUP: reads the files on a thread (on the loop itself when no thread
 * can be had), then applies them on the loop (on_reloaded). */
static void reload(struct daemon *d)
{
    struct reloader *rl = &d->rl;
    if (rl->running) {
        rl->again = true; /* read once more when this one is applied */
        return;
    }
    rl->path = d->config_path;
    rl->cfg = NULL;
    rl->jobs = NULL;
    rl->defs = NULL;
    if (pipe2(rl->pipe, O_CLOEXEC) == 0) {
        rl->watch = (struct loop_watch){.fd = rl->pipe[0], .cb = on_reloaded, .ctx = d};
        if (loop_add(&d->loop, &rl->watch) == 0) {
            /* Signals stay blocked in the thread: it inherits the mask. */
            if (pthread_create(&rl->thread, NULL, reload_thread, rl) == 0) {
                rl->running = true;
                return;
            }
            loop_del(&d->loop, &rl->watch);
        }
        close(rl->pipe[0]);
        close(rl->pipe[1]);
    }
    struct config *cfg;
    struct jobs *jobs;
    read_config(d->config_path, &cfg, &jobs, rl->err, sizeof rl->err);
    reload_apply(d, cfg, jobs, NULL, rl->err);
}

/* After the machine is done: waits for the hooks still alive, until the end
 * of shutdown_grace (from the SIGTERM's drain, or from now), then stops
 * them (T_DRAIN). */
static void drain_hooks(struct daemon *d)
{
    size_t n = hooks_running(d->hooks);
    if (n == 0)
        return;
    if (d->drain_until == 0)
        d->drain_until = loop_now() + d->cfg->shutdown_grace_ms * MS;
    cJSON *f = log_fields();
    cJSON_AddNumberToObject(f, "running", (double)n);
    cJSON_AddNumberToObject(f, "grace_ms",
                            (double)((d->drain_until > loop_now() ? d->drain_until - loop_now()
                                                                  : 0) /
                                     MS));
    log_emit(d->log, LE_DRAINING, f);
    loop_arm(&d->loop, T_DRAIN, d->drain_until);
    while (hooks_running(d->hooks) > 0)
        loop_once(&d->loop);
    loop_disarm(&d->loop, T_DRAIN);
}

static void free_daemon(struct daemon *d)
{
    reload_join(d); /* a SIGHUP's reading still going: its results are not applied */
    config_free(d->rl.cfg);
    jobs_free(d->rl.jobs);
    ops_defs_unref(d->rl.defs);
    ops_free(d->ops); /* first: its HTTP thread reads the client's stats */
    runner_free(d->runner);
    hooks_free(d->hooks);
    drift_free(d->drift);
    baton_election_free(d->election);
    free(d->ended_chan);
    baton_client_free(d->client);
    loop_close(&d->loop);
    if (d->sig_watch.fd >= 0)
        close(d->sig_watch.fd);
    log_free(d->log);
    config_free(d->cfg);
    free(d->config_path);
}

int daemon_run(const char *config_path)
{
    struct daemon d = {.sig_watch.fd = -1, .backoff_ms = BACKOFF_MIN_MS};
    char err[1024];
    int rc = 1;
    struct jobs *jobs = NULL;

    if ((d.config_path = strdup(config_path)) == NULL)
        return 1;
    if (config_load(config_path, &d.cfg, err, sizeof err) != 0 ||
        (jobs = load_jobs(d.cfg, err, sizeof err)) == NULL) {
        fprintf(stderr, "baton: run: %s\n", err);
        rc = DAEMON_ECONFIG;
        goto out;
    }
    if (proc_shim_check(err, sizeof err) != 0) {
        fprintf(stderr, "baton: run: %s\n", err);
        jobs_free(jobs);
        goto out;
    }
    if (getrandom(&d.rng, sizeof d.rng, 0) != sizeof d.rng || d.rng == 0)
        d.rng = (uint64_t)getpid() * 0x9e3779b97f4a7c15u;
    log_rfc3339(time(NULL), d.since, sizeof d.since);

    /* Signals arrive on a signalfd; block them before libbaton could start
     * a thread (it does not here: no auto-renewed locks, no blocking waits). */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGCHLD);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* Credentials from the password files or the environment, which jobs
     * do not inherit. */
    struct secrets sec;
    int srv = secrets_load(d.cfg->password_file, d.cfg->sentinel_password_file, &sec, err,
                           sizeof err);
    secrets_scrub_env();
    /* A password stays in memory (for AUTH on a reconnection): jobs, of the
     * same user, may not read it there (secrets.h). */
    if (srv == 0 && secrets_held(&sec, d.cfg->redis) && secrets_hide_process() != 0)
        fprintf(stderr, "baton: run: warning: cannot make this process non-dumpable: %s\n",
                strerror(errno));
    struct baton_client_opts co = {.connect_timeout_ms = d.cfg->redis_timeout_ms,
                                   .command_timeout_ms = d.cfg->redis_timeout_ms,
                                   .lazy = true,
                                   .password = sec.password,
                                   .sentinel_password = sec.sentinel_password,
                                   .min_replicas = (int)d.cfg->min_replicas};
    struct baton_election_opts eo = {.ttl_ms = d.cfg->lease_ttl_ms, .identity = d.cfg->node};
    if (srv != 0 ||
        (d.log = log_new(STDOUT_FILENO, d.cfg->log_level, d.cfg->node, d.cfg->group)) == NULL ||
        baton_client_new(d.cfg->redis, &co, &d.client) != BATON_OK ||
        baton_election_new(d.client, d.cfg->group, &eo, &d.election) != BATON_OK ||
        (d.ended_chan = group_key(d.cfg->group, "ended")) == NULL ||
        loop_init(&d.loop, on_timer, &d) != 0) {
        fprintf(stderr, "baton: run: cannot set up: %s\n",
                srv != 0 ? err : d.client ? baton_client_errstr(d.client) : strerror(errno));
        secrets_clear(&sec);
        jobs_free(jobs);
        goto out;
    }
    log_set_format(d.log, d.cfg->log_format);
    secrets_clear(&sec); /* the warnings stay, for below */
    d.guard_ns = (d.cfg->redis_timeout_ms + 2 * KILL_MARGIN_MS) * MS;
    const char *fault = getenv("BATON_TEST_FAULT");
    struct runner_host host = {.log = d.log,
                               .loop = &d.loop,
                               .timer_id = T_JOBS,
                               .client = d.client,
                               .election = d.election,
                               .node = d.cfg->node,
                               .group = d.cfg->group,
                               .history_len = d.cfg->history_len,
                               .output_bytes = (size_t)d.cfg->output_bytes,
                               .lease_ttl_ms = d.cfg->lease_ttl_ms,
                               .refresh_ms = d.cfg->lease_renew_ms,
                               .guard_ns = d.guard_ns,
                               .control_poll_ms = d.cfg->poll_ms,
                               .kill_margin_ns = KILL_MARGIN_MS * MS,
                               .may_block = may_block,
                               .on_idle = on_runs_idle,
                               .on_runs_changed = on_runs_changed,
                               .ctx = &d,
                               .fault_start = fault != NULL && strcmp(fault, "start") == 0,
                               .fault_stop_after_claim =
                                   fault != NULL && strcmp(fault, "stop-after-claim") == 0,
                               .fault_stop_after_preclaim =
                                   fault != NULL && strcmp(fault, "stop-after-preclaim") == 0,
                               .fault_slow_prepare =
                                   fault != NULL && strcmp(fault, "slow-prepare") == 0};
    struct hooks_host hh = {.log = d.log,
                            .loop = &d.loop,
                            .timer_id = T_HOOKS,
                            .node = d.cfg->node,
                            .group = d.cfg->group};
    machine_init(&d.m, actions, guards_table, on_transition, &d);
    d.guards = (struct guards){.h = {.now = fact_now,
                                     .lease_deadline = fact_lease_deadline,
                                     .runs_stop_point = fact_runs_stop_point,
                                     .running = fact_running,
                                     .ctx = &d},
                               .m = &d.m,
                               .guard_ns = d.guard_ns};
    d.m.guard_ctx = &d.guards;
    set_jobs_hash(&d, jobs);
    d.hooks = hooks_new(&hh);
    d.drift = drift_new();
    if (d.hooks == NULL || d.drift == NULL) {
        fprintf(stderr, "baton: run: out of memory\n");
        jobs_free(jobs);
        goto out;
    }
    host.hooks = d.hooks;
    if ((d.runner = runner_new(&host)) == NULL || runner_set_jobs(d.runner, jobs) != BATON_OK) {
        fprintf(stderr, "baton: run: out of memory\n");
        if (d.runner == NULL)
            jobs_free(jobs);
        goto out;
    }
    struct ops_host oh = {.log = d.log,
                          .loop = &d.loop,
                          .timer_id = T_OPS,
                          .client = d.client,
                          .election = d.election,
                          .runner = d.runner,
                          .node = d.cfg->node,
                          .group = d.cfg->group,
                          .listen = d.cfg->http_listen,
                          .allowed_hosts = d.cfg->http_allowed_hosts,
                          .poll_ms = d.cfg->poll_ms,
                          .redis_timeout_ms = d.cfg->redis_timeout_ms,
                          .may_block = may_block,
                          .ctx = &d};
    if (ops_new(&oh, &d.ops, err, sizeof err) != 0) {
        fprintf(stderr, "baton: run: %s\n", err);
        goto out;
    }
    ops_set_jobs(d.ops, jobs, NULL, d.cfg->shutdown_grace_ms);
    /* Warnings about the setup, once ops observes the log (it counts them). */
    for (int i = 0; i < sec.nwarnings; i++) {
        cJSON *w = log_fields();
        cJSON_AddStringToObject(w, "warning", sec.warning[i]);
        log_emit(d.log, LE_SECRET_FILE_MODE, w);
    }
    if (baton_client_tls_insecure(d.client)) {
        cJSON *w = log_fields();
        cJSON_AddStringToObject(w, "warning", "TLS certificate verification is off (verify=none): "
                                              "anyone on the network path can pose as Redis");
        log_emit(d.log, LE_TLS_VERIFY_OFF, w);
    }
    d.sig_watch = (struct loop_watch){
        .fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK), .cb = on_signal, .ctx = &d};
    if (d.sig_watch.fd < 0 || loop_add(&d.loop, &d.sig_watch) != 0) {
        fprintf(stderr, "baton: run: signalfd: %s\n", strerror(errno));
        goto out;
    }

    /* Two live supervisors must not share a name (an unreachable Redis
     * cannot tell: then the heartbeats go on as usual). */
    if (members_claim(d.client, d.cfg->group, d.cfg->node, d.cfg->poll_ms, &d.rank, err,
                      sizeof err) == BATON_ETAKEN) {
        fprintf(stderr, "baton: run: %s\n", err);
        rc = DAEMON_ENAME_TAKEN;
        goto out;
    }
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "version", BATON_VERSION_STRING);
    cJSON_AddNumberToObject(f, "pid", (double)getpid());
    cJSON_AddStringToObject(f, "config", d.cfg->path);
    cJSON_AddStringToObject(f, "redis", baton_client_url(d.client));
    cJSON_AddNumberToObject(f, "jobs", (double)jobs->n);
    cJSON_AddNumberToObject(f, "lease_ttl_ms", (double)d.cfg->lease_ttl_ms);
    log_emit(d.log, LE_STARTED, f);

    loop_arm_in(&d.loop, T_HEARTBEAT, 0);
    dispatch(&d, EV_START);
    while (!machine_done(&d.m))
        loop_once(&d.loop);
    drain_hooks(&d);
    log_emit(d.log, LE_STOPPED, NULL);
    rc = 0;
out:
    free_daemon(&d);
    return rc;
}
