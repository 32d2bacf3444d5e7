/* presence.c -- the node in its group (daemon_int.h): whether Redis answers
 * (one line per state of an outage), the heartbeats that say what the node
 * is and runs, config drift seen by the leader, and the subscription to the
 * group's events. Called by the actions and the wiring; calls neither. */
#include <stdlib.h>
#include <unistd.h>

#include "clock.h"
#include "daemon_int.h"
#include "members.h"

#ifndef BATON_VERSION_STRING
#define BATON_VERSION_STRING "unknown"
#endif

int64_t presence_jitter_ms(struct daemon *d, int64_t ms, int pct)
{
    d->rng ^= d->rng << 13;
    d->rng ^= d->rng >> 7;
    d->rng ^= d->rng << 17;
    int64_t span = ms * pct / 100;
    if (span <= 0)
        return ms;
    return ms - span + (int64_t)(d->rng % (uint64_t)(2 * span + 1));
}

bool presence_may_block(void *ctx)
{
    struct daemon *d = ctx;
    return guards_may_block(&d->guards);
}

/* One line per state of an outage, not one per attempt. */
void presence_redis_ok(struct daemon *d)
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

void presence_redis_failed(struct daemon *d, enum log_during what, const char *detail,
                           int64_t retry_ms)
{
    if (d->outage)
        return;
    d->outage = true;
    d->outage_since = loop_now();
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "during", log_during_name(what));
    cJSON_AddStringToObject(f, "error", detail);
    if (retry_ms >= 0)
        cJSON_AddNumberToObject(f, "retry_in_ms", (double)retry_ms);
    log_emit_facts(d->log, LE_REDIS_UNREACHABLE, f,
                   &(struct log_facts){.during = what, .error = detail});
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
    if (!presence_may_block(d) || members_read(d->client, d->cfg->group, &m, &n) != BATON_OK)
        return; /* the next heartbeat looks again */
    drift_check(d->drift, d->log, d->cfg->node, d->jobs_hash, (long)d->njobs, m, n);
    members_free(m, n);
}

void presence_set_jobs(struct daemon *d, const struct jobs *jobs)
{
    jobs_hash_hex(jobs, d->jobs_hash, sizeof d->jobs_hash);
    d->njobs = jobs->n;
}

void presence_heartbeat(struct daemon *d)
{
    d->announce = false;
    d->runs_told = false;
    loop_arm_in(&d->loop, T_HEARTBEAT, presence_jitter_ms(d, d->cfg->poll_ms, 10));
    if (!presence_may_block(d))
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
    cJSON_AddItemToObject(o, "waiting", runner_waiting_json(d->runner, HEARTBEAT_WAITS_MAX));
    cJSON_AddStringToObject(o, "jobs_hash", d->jobs_hash);
    cJSON_AddNumberToObject(o, "jobs", (double)d->njobs);
    cJSON *labels = cJSON_AddArrayToObject(o, "labels");
    for (size_t i = 0; labels != NULL && d->cfg->labels != NULL && d->cfg->labels[i] != NULL; i++)
        cJSON_AddItemToArray(labels, cJSON_CreateString(d->cfg->labels[i]));
    cJSON_AddNumberToObject(o, "capacity", (double)d->cfg->capacity);
    cJSON_AddNumberToObject(o, "assigned", (double)runner_assigned(d->runner));
    cJSON_AddBoolToObject(o, "accepting", runner_accepting(d->runner));
    char *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (json != NULL && members_heartbeat(d->client, d->cfg->group, d->cfg->node, json,
                                          members_forget_ms(d->cfg->poll_ms, machine_done(&d->m)),
                                          &d->rank) == BATON_OK)
        presence_redis_ok(d);
    free(json);
    check_drift(d);
}

void presence_watch(struct daemon *d)
{
    /* Over a quorum, a master whose subscription is missing (down, or
     * back) is tried again here; the descriptor stays the same. */
    if (d->sub_added && baton_election_watch_complete(d->election))
        return;
    if (baton_election_watch(d->election) != BATON_OK)
        return; /* campaigns and polls keep working; we retry next time */
    if (d->sub_added) {
        /* Made again: what was published meanwhile is read. */
        runner_control_changed(d->runner);
        return;
    }
    d->sub_watch.fd = baton_election_watch_fd(d->election); /* cb and ctx: daemon.c's */
    if (loop_add(&d->loop, &d->sub_watch) == 0) {
        d->sub_added = true;
        /* Requests and pauses published while we were not subscribed. */
        runner_control_changed(d->runner);
    }
}
