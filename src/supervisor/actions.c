/* actions.c -- the machine's actions (MACHINE_ACTIONS in machine.h) and the
 * facts its guards read (daemon_int.h). An action does what its state
 * asks and returns the next event; it never chooses that event from a fact
 * of the daemon: the guards decide (guards.c), on the facts given here. */
#include <stdio.h>

#include "clock.h"
#include "daemon_int.h"

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
    presence_watch(d);
    int rc = baton_election_campaign(d->election, &d->holder);
    if (rc == BATON_OK || rc == BATON_ETAKEN)
        presence_redis_ok(d);
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
    presence_redis_failed(d, DURING_CAMPAIGN, baton_election_errstr(d->election), d->backoff_ms);
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
    presence_watch(d);
    int64_t turn_ms = STAGGER_MS * (d->rank < STAGGER_RANKS ? d->rank : STAGGER_RANKS);
    if (d->holder.term != d->following_term) {
        d->following_term = d->holder.term;
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "leader", d->holder.identity);
        cJSON_AddNumberToObject(f, "term", (double)d->holder.term);
        cJSON_AddNumberToObject(f, "lease_left_ms", (double)d->holder.ttl_ms);
        cJSON_AddNumberToObject(f, "turn_ms", (double)turn_ms);
        log_emit_facts(d->log, LE_FOLLOWING, f,
                       &(struct log_facts){.leader = d->holder.identity,
                                           .term = d->holder.term,
                                           .lease_left_ms = d->holder.ttl_ms});
    }
    /* Wake when the leader's lease can have run out (a crashed leader),
     * in our turn, and poll as a safety net; a resignation that names us
     * wakes us at once. */
    if (d->holder.ttl_ms >= 0)
        loop_arm_in(&d->loop, T_WAKE, d->holder.ttl_ms + 1 + turn_ms);
    else
        loop_arm_in(&d->loop, T_WAKE, 1); /* no lease seen: campaign now */
    loop_arm_in(&d->loop, T_POLL, presence_jitter_ms(d, d->cfg->poll_ms, 10));
    d->holder.ttl_ms = -1;
    return EV_NONE;
}

static enum machine_event act_backoff(void *ctx)
{
    struct daemon *d = ctx;
    loop_disarm(&d->loop, T_WAKE);
    loop_disarm(&d->loop, T_POLL);
    loop_arm_in(&d->loop, T_BACKOFF, presence_jitter_ms(d, d->backoff_ms, 25));
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
        presence_redis_ok(d);
        arm_stop_point(d);
        if (presence_may_block(d))
            presence_watch(d); /* a leader that lost its subscription makes it again */
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
        presence_redis_ok(d);
        return EV_LOST;
    }
    presence_redis_failed(d, DURING_RENEW, baton_election_errstr(d->election), -1);
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
    loop_arm_in(&d->loop, T_RENEW, presence_jitter_ms(d, ms < 10 ? 10 : ms, 25));
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
    rc = presence_may_block(d) ? baton_election_resign(d->election) : BATON_ETIMEDOUT;
    if (rc == BATON_OK) {
        presence_redis_ok(d);
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
    presence_heartbeat(ctx); /* "stopped": status shows it at once */
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

const machine_action_fn daemon_actions[ACT_COUNT] = {
    [ACT_CAMPAIGN] = act_campaign, [ACT_LEAD] = act_lead,         [ACT_FOLLOW] = act_follow,
    [ACT_BACKOFF] = act_backoff,   [ACT_RENEW] = act_renew,       [ACT_CONFIRM] = act_confirm,
    [ACT_RETRY] = act_retry,       [ACT_PAUSE] = act_pause,       [ACT_HANDOVER] = act_handover,
    [ACT_DRAIN] = act_drain,       [ACT_HURRY] = act_hurry,       [ACT_RESTART] = act_restart,
    [ACT_FINISH] = act_finish,     [ACT_SIGN_OFF] = act_sign_off, [ACT_DISARM] = act_disarm,
};

struct guards_host daemon_guards_host(struct daemon *d)
{
    return (struct guards_host){.now = fact_now,
                                .lease_deadline = fact_lease_deadline,
                                .runs_stop_point = fact_runs_stop_point,
                                .running = fact_running,
                                .ctx = d};
}
