/* daemon.c -- `baton run`: the wiring. The event loop that turns timers,
 * signals and Redis notifications into the machine's events, dispatch,
 * reload, start and stop; the machine's actions are in actions.c, the
 * node's presence in its group in presence.c (daemon_int.h).
 *
 * One thread. State changes only through machine_dispatch(); the actions
 * return the next event (never chosen from a fact of the daemon: that is a
 * guard's job), and the guards (guards.c, on the facts actions.c gives)
 * are the only reads of the daemon's state that decide a move.
 *
 * The stop point. While we lead, the lease's local validity deadline is
 * guarded by a stop point, deadline - (redis_timeout + 2 x KILL_MARGIN):
 * the timer T_DEADLINE fires there, before any other timer, and no
 * blocking Redis call starts after it (presence_may_block(), guards.h: the one gate
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "daemon.h"
#include "daemon_int.h"
#include "keys.h"
#include "members.h"
#include "proc.h"
#include "secrets.h"

#ifndef BATON_VERSION_STRING
#define BATON_VERSION_STRING "unknown"
#endif

/* Logs every change of state. */
static void on_transition(void *ctx, enum machine_state from, enum machine_state to,
                          enum machine_event trigger, enum machine_guard guard, bool held,
                          int64_t in_state_ms, bool quiet)
{
    struct daemon *d = ctx;
    struct log_facts lf = {.from = from,
                           .to = to,
                           .trigger = trigger,
                           .guard = guard,
                           .guard_held = held,
                           .term = d->term};
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "from", machine_state_name(from));
    cJSON_AddStringToObject(f, "to", machine_state_name(to));
    cJSON_AddStringToObject(f, "trigger", machine_event_name(trigger));
    if (guard != G_ALWAYS) {
        char g[64];
        log_facts_guard(&lf, g, sizeof g);
        cJSON_AddStringToObject(f, "guard", g);
    }
    cJSON_AddNumberToObject(f, "term", (double)d->term);
    cJSON_AddNumberToObject(f, "fence", (double)d->term);
    cJSON_AddNumberToObject(f, "in_state_ms", (double)in_state_ms);
    log_emit_facts_at(d->log, quiet ? LOG_DEBUG : LOG_INFO, LE_TRANSITION, f, &lf);
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
        presence_heartbeat(d); /* the state the event left us in */
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
        cJSON_AddNumberToObject(f, "running",
                                (double)(runner_running(d->runner) + hooks_running(d->hooks)));
        log_emit(d->log, LE_DRAIN_TIMEOUT, f);
        dispatch(d, EV_DRAIN_TIMEOUT); /* stopped: only hooks are left */
        break;
    }
    case T_WAKE:
    case T_POLL:
    case T_BACKOFF: dispatch(d, EV_WAKE); break;
    case T_RESTART: dispatch(d, EV_START); break;
    case T_HEARTBEAT: presence_heartbeat(d); break;
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
    log_emit_facts(d->log, LE_SIGNAL_RECEIVED, f, &(struct log_facts){.signal = sig});
    if (sig == SIGHUP) {
        if (!machine_done(&d->m)) /* stopped: nothing to apply it to */
            reloader_start(&d->rl);
        return;
    }
    d->guards.stopping = true;
    runner_close(d->runner); /* no more runs from other nodes' offers */
    dispatch(d, EV_STOP); /* stopped: only hooks are left, hurried */
    if (handing_over)
        log_release(d->log);
}

/* ---- reload (the reading: reload.h) ---- */

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
    static const char *const fixed[] = {"node",
                                        "redis",
                                        "group",
                                        "password_file",
                                        "sentinel_password_file",
                                        "http.listen",
                                        "http.allowed_hosts",
                                        "http.tokens_file",
                                        "lease.ttl",
                                        "lease.renew",
                                        "min_replicas",
                                        "http.control",
                                        "http.public_read",
                                        "http.tls"};
    enum { NSTRINGS = 8, NFIXED = sizeof fixed / sizeof fixed[0] };
    char **mine[NSTRINGS] = {&cfg->node,
                             &cfg->redis,
                             &cfg->group,
                             &cfg->password_file,
                             &cfg->sentinel_password_file,
                             &cfg->http_listen,
                             &cfg->http_allowed_hosts,
                             &cfg->http_tokens_file};
    char **running[NSTRINGS] = {&d->cfg->node,
                                &d->cfg->redis,
                                &d->cfg->group,
                                &d->cfg->password_file,
                                &d->cfg->sentinel_password_file,
                                &d->cfg->http_listen,
                                &d->cfg->http_allowed_hosts,
                                &d->cfg->http_tokens_file};
    bool differs[NFIXED] = {false};
    for (int i = 0; i < NSTRINGS; i++)
        differs[i] = strcmp(*mine[i], *running[i]) != 0;
    differs[NSTRINGS] = cfg->lease_ttl_ms != d->cfg->lease_ttl_ms;
    differs[NSTRINGS + 1] = cfg->lease_renew_ms != d->cfg->lease_renew_ms;
    differs[NSTRINGS + 2] = cfg->min_replicas != d->cfg->min_replicas;
    /* The API's workers and checks are made at start; the files of a TLS
     * server are read again below, but plain and TLS are two servers. */
    differs[NSTRINGS + 3] = cfg->http_control != d->cfg->http_control;
    differs[NSTRINGS + 4] = cfg->http_public_read != d->cfg->http_public_read;
    differs[NSTRINGS + 5] = http_tls_on(cfg) != http_tls_on(d->cfg);
    cJSON *kept = cJSON_CreateArray();
    for (int i = 0; i < NFIXED; i++)
        if (differs[i])
            cJSON_AddItemToArray(kept, cJSON_CreateString(fixed[i]));
    bool keep = cJSON_GetArraySize(kept) > 0;
    if (keep)
        cJSON_AddItemToObject(f, "restart_needed_for", kept);
    else
        cJSON_Delete(kept);
    size_t njobs = jobs->n;
    char hash[JOBS_HASH_HEX];
    jobs_hash_hex(jobs, hash, sizeof hash);
    /* capacity and labels first: if the jobs cannot follow, the old ones
     * are put back. */
    bool node_set = runner_set_node(d->runner, cfg->capacity,
                                    (const char *const *)cfg->labels) == BATON_OK;
    if (!node_set || runner_set_jobs(d->runner, jobs) != BATON_OK) {
        if (node_set)
            (void)runner_set_node(d->runner, d->cfg->capacity,
                                  (const char *const *)d->cfg->labels);
        else
            jobs_free(jobs);
        cJSON_Delete(f);
        f = log_fields();
        cJSON_AddStringToObject(f, "error", "out of memory");
        cJSON_AddStringToObject(f, "then", "keeping the running configuration");
        log_emit(d->log, LE_RELOAD_FAILED, f);
        config_free(cfg);
        ops_defs_unref(defs);
        return;
    }
    /* Keep the running values of what needs a restart: moved over (no
     * allocation to fail), only now that nothing can fail, so that a
     * failure above leaves the running configuration whole. */
    if (keep) {
        for (int i = 0; i < NSTRINGS; i++) {
            free(*mine[i]);
            *mine[i] = *running[i];
            *running[i] = NULL;
        }
        cfg->lease_ttl_ms = d->cfg->lease_ttl_ms;
        cfg->lease_renew_ms = d->cfg->lease_renew_ms;
        cfg->min_replicas = d->cfg->min_replicas;
        cfg->http_control = d->cfg->http_control;
        cfg->http_public_read = d->cfg->http_public_read;
        if (differs[NSTRINGS + 5]) { /* the running server's kind stays: its paths too */
            char *c = cfg->http_tls_cert, *k = cfg->http_tls_key;
            cfg->http_tls_cert = d->cfg->http_tls_cert;
            cfg->http_tls_key = d->cfg->http_tls_key;
            d->cfg->http_tls_cert = c;
            d->cfg->http_tls_key = k;
        }
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
    ops_reload_tokens(d->ops); /* http.tokens_file: read again, whatever changed */
    ops_reload_tls(d->ops, cfg->http_tls_cert, cfg->http_tls_key); /* likewise */
    presence_heartbeat(d);     /* the group sees the new jobs' hash now, not at the next poll */
}

/* The reloader's hand-over (reload.h): apply, and read again if asked
 * while the machine is not stopped. */
static bool on_reloaded(void *ctx, struct config *cfg, struct jobs *jobs, struct ops_defs *defs,
                        const char *err)
{
    struct daemon *d = ctx;
    reload_apply(d, cfg, jobs, defs, err);
    return !machine_done(&d->m);
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
    cJSON_AddNumberToObject(
        f, "grace_ms",
        (double)((d->drain_until > loop_now() ? d->drain_until - loop_now() : 0) / MS));
    log_emit(d->log, LE_DRAINING, f);
    loop_arm(&d->loop, T_DRAIN, d->drain_until);
    while (hooks_running(d->hooks) > 0)
        loop_once(&d->loop);
    loop_disarm(&d->loop, T_DRAIN);
}

static void free_daemon(struct daemon *d)
{
    reloader_fini(&d->rl); /* a SIGHUP's reading still going: its results are not applied */
    ops_free(d->ops);      /* first: its HTTP thread reads the client's stats */
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
    struct daemon d = {.sig_watch.fd = -1,
                       .sub_watch = {.fd = -1, .cb = on_sub, .ctx = &d},
                       .backoff_ms = BACKOFF_MIN_MS};
    char err[1024];
    int rc = 1;
    struct jobs *jobs = NULL;

    if ((d.config_path = strdup(config_path)) == NULL)
        return 1;
    reloader_init(&d.rl, &d.loop, d.config_path, on_reloaded, &d);
    reload_read(config_path, &d.cfg, &jobs, err, sizeof err);
    if (jobs == NULL) {
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
    int srv =
        secrets_load(d.cfg->password_file, d.cfg->sentinel_password_file, &sec, err, sizeof err);
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
                srv != 0   ? err
                : d.client ? baton_client_errstr(d.client)
                           : strerror(errno));
        secrets_clear(&sec);
        jobs_free(jobs);
        goto out;
    }
    log_set_format(d.log, d.cfg->log_format);
    /* The passwords are wiped once the control API's clients have them
     * (ops_new), on every way out before. */
    d.guard_ns = (d.cfg->redis_timeout_ms + 2 * KILL_MARGIN_MS) * MS;
    const char *fault = getenv("BATON_TEST_FAULT");
    struct runner_host host = {
        .log = d.log,
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
        .capacity = d.cfg->capacity,
        .labels = (const char *const *)d.cfg->labels,
        .may_block = presence_may_block,
        .on_idle = on_runs_idle,
        .on_runs_changed = on_runs_changed,
        .ctx = &d,
        .fault_start = fault != NULL && strcmp(fault, "start") == 0,
        .fault_stop_after_claim = fault != NULL && strcmp(fault, "stop-after-claim") == 0,
        .fault_stop_after_preclaim = fault != NULL && strcmp(fault, "stop-after-preclaim") == 0,
        .fault_slow_prepare = fault != NULL && strcmp(fault, "slow-prepare") == 0,
        .fault_stop_before_offer = fault != NULL && strcmp(fault, "stop-before-offer") == 0,
        .fault_stop_after_accept = fault != NULL && strcmp(fault, "stop-after-accept") == 0};
    struct hooks_host hh = {.log = d.log,
                            .loop = &d.loop,
                            .timer_id = T_HOOKS,
                            .node = d.cfg->node,
                            .group = d.cfg->group};
    machine_init(&d.m, daemon_actions, guards_table, on_transition, &d);
    d.guards = (struct guards){.h = daemon_guards_host(&d), .m = &d.m, .guard_ns = d.guard_ns};
    d.m.guard_ctx = &d.guards;
    presence_set_jobs(&d, jobs);
    d.hooks = hooks_new(&hh);
    d.drift = drift_new();
    if (d.hooks == NULL || d.drift == NULL) {
        secrets_clear(&sec);
        fprintf(stderr, "baton: run: out of memory\n");
        jobs_free(jobs);
        goto out;
    }
    host.hooks = d.hooks;
    if ((d.runner = runner_new(&host)) == NULL || runner_set_jobs(d.runner, jobs) != BATON_OK) {
        secrets_clear(&sec);
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
                          .control = d.cfg->http_control,
                          .tokens_file = d.cfg->http_tokens_file,
                          .public_read = d.cfg->http_public_read,
                          .history_len = d.cfg->history_len,
                          .tls_cert = d.cfg->http_tls_cert,
                          .tls_key = d.cfg->http_tls_key,
                          .redis_url = d.cfg->redis,
                          .client_opts = &co,
                          .poll_ms = d.cfg->poll_ms,
                          .redis_timeout_ms = d.cfg->redis_timeout_ms,
                          .may_block = presence_may_block,
                          .ctx = &d};
    int orc = ops_new(&oh, &d.ops, err, sizeof err);
    secrets_clear(&sec); /* the warnings stay, for below */
    if (orc != 0) {
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
        cJSON_AddStringToObject(w, "warning",
                                "TLS certificate verification is off (verify=none): "
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
