/* run.c -- see run.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "facts.h"
#include "proc.h"
#include "run.h"
#include "schedule.h"

/* ---- names and the state table ---- */

static const char *const state_names[] = {
#define NAME_(id, name) name,
    RUN_STATES(NAME_)
#undef NAME_
};
static const char *const stop_names[] = {
#define NAME_(id, name) name,
    RUN_STOPS(NAME_)
#undef NAME_
};

const char *run_state_name(enum run_state s)
{
    return ((int)s >= 0 && s < RUN_STATE_COUNT) ? state_names[s] : "?";
}

const char *run_stop_name(enum run_stop s)
{
    return ((int)s >= 0 && s < RUN_STOP_COUNT) ? stop_names[s] : "?";
}

const char *run_trigger_name(enum run_trigger t)
{
    static const char *const names[] = {"schedule", "catchup", "retry", "manual"};
    return ((int)t >= 0 && (size_t)t < sizeof names / sizeof names[0]) ? names[t] : "?";
}

static const struct {
    const char *name, *doc;
} env_vars[RUN_ENV_COUNT] = {
#define RUN_ENV_ROW_(id, name, doc) [RUN_ENV_##id] = {name, doc},
    RUN_ENV_VARS(RUN_ENV_ROW_)
#undef RUN_ENV_ROW_
};

const char *run_env_name(enum run_env_var v)
{
    return ((int)v >= 0 && v < RUN_ENV_COUNT) ? env_vars[v].name : "?";
}

const char *run_env_doc(enum run_env_var v)
{
    return ((int)v >= 0 && v < RUN_ENV_COUNT) ? env_vars[v].doc : "?";
}

#define X_ RUN_STATE_COUNT /* no move: the event is ignored */
/* next[state][event] */
static const enum run_state next_states[RUN_STATE_COUNT][5] = {
    /*               spawned      spawn_failed  term              kill          reaped */
    [RUN_STARTING] = {RUN_RUNNING, RUN_EXITED, X_, X_, RUN_EXITED},
    [RUN_RUNNING] = {X_, X_, RUN_TERMINATING, RUN_KILLING, RUN_EXITED},
    [RUN_TERMINATING] = {X_, X_, X_, RUN_KILLING, RUN_EXITED},
    [RUN_KILLING] = {X_, X_, X_, X_, RUN_EXITED},
    [RUN_EXITED] = {X_, X_, X_, X_, X_},
};

enum run_state run_next_state(enum run_state s, enum run_event e)
{
    if ((int)s < 0 || s >= RUN_STATE_COUNT || (int)e < 0 || e > RUN_EV_REAPED)
        return s;
    enum run_state n = next_states[s][e];
    return n == X_ ? s : n;
}
#undef X_

/* ---- clocks ---- */

static int64_t wall_ms(void)
{
    return loop_wall_ns() / 1000000; /* the loop's: the runner's clock */
}

/* ---- logging ---- */

static void add_tick_fields(cJSON *f, const struct run *run)
{
    char when[32];
    log_rfc3339(run->tick, when, sizeof when);
    cJSON_AddStringToObject(f, "job", run->job->name);
    cJSON_AddStringToObject(f, "run_id", run->id);
    cJSON_AddStringToObject(f, "scheduled_at", when);
    cJSON_AddNumberToObject(f, "attempt", run->attempt);
}

static void log_start(const struct run *run)
{
    /* A tick of a job that runs on members was dispatched here (a manual
     * run starts where it was asked): its lateness is its dispatch delay. */
    struct log_facts lf = {.job = run->job->name,
                           .run_trigger = run->trigger,
                           .lateness_ms = run->started_wall_ms - run_start_ms(run),
                           .dispatched = run->trigger != RUN_TRIGGER_MANUAL &&
                                         job_run_on(run->job, NULL) != JOB_RUN_ON_LEADER};
    cJSON *f = log_fields();
    add_tick_fields(f, run);
    cJSON_AddStringToObject(f, "trigger", run_trigger_name(run->trigger));
    if (run->trigger != RUN_TRIGGER_MANUAL) /* a manual run has no tick to be late for */
        cJSON_AddNumberToObject(f, "lateness_ms", (double)lf.lateness_ms);
    cJSON_AddNumberToObject(f, "term", (double)run->term);
    cJSON_AddNumberToObject(f, "pid", (double)run->pgid);
    log_emit_facts(run->env->log, LE_JOB_START, f, &lf);
}

static void log_end(const struct run *run)
{
    if (run->outcome == HO_SKIPPED) /* never started: its runner logs tick_skipped */
        return;
    struct log_facts lf = {.job = run->job->name, .outcome = run->outcome};
    cJSON *f = log_fields();
    add_tick_fields(f, run);
    enum log_level lvl = LOG_WARN;
    if (run->outcome == HO_FAILED_TO_START) {
        lvl = LOG_ERROR;
        cJSON_AddNumberToObject(f, "duration_ms", 0);
        cJSON_AddStringToObject(f, "outcome", history_outcome_name(run->outcome));
        cJSON_AddStringToObject(f, "error", run->error);
    } else {
        int st = run->wstatus;
        int64_t ended = run->ended_ns != 0 ? run->ended_ns : loop_now();
        lf.duration_ms = (ended - run->started_ns) / 1000000;
        cJSON_AddNumberToObject(f, "duration_ms", (double)lf.duration_ms);
        if (WIFEXITED(st))
            cJSON_AddNumberToObject(f, "exit_code", WEXITSTATUS(st));
        else
            cJSON_AddStringToObject(f, "signal",
                                    sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
        cJSON_AddStringToObject(f, "outcome", history_outcome_name(run->outcome));
        if (run->stop != RUN_STOP_NONE)
            cJSON_AddStringToObject(f, "stopped_because", run_stop_name(run->stop));
        if (run->outcome == HO_OK)
            lvl = LOG_INFO;
    }
    log_emit_facts_at(run->env->log, lvl, LE_JOB_END, f, &lf);
}

/* The one place a run changes state: the table decides, this logs. */
static void run_transition(struct run *run, enum run_event ev)
{
    enum run_state from = run->state, to = run_next_state(from, ev);
    if (to == from)
        return;
    run->state = to;
    if (to == RUN_RUNNING) {
        log_start(run);
    } else if (to == RUN_EXITED) {
        log_end(run);
    } else if (log_enabled(run->env->log, LOG_DEBUG)) {
        cJSON *f = log_fields();
        add_tick_fields(f, run);
        cJSON_AddStringToObject(f, "from", run_state_name(from));
        cJSON_AddStringToObject(f, "to", run_state_name(to));
        cJSON_AddStringToObject(f, "because", run_stop_name(run->stop));
        log_emit(run->env->log, LE_RUN_STATE, f);
    }
}

/* ---- starting ---- */

static bool fail_start(struct run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool fail_start(struct run *run, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(run->error, sizeof run->error, fmt, ap);
    va_end(ap);
    run->outcome = HO_FAILED_TO_START;
    run->started_ns = loop_now();
    run_transition(run, RUN_EV_SPAWN_FAILED);
    return false;
}

static int open_pipe(int fds[2])
{
    return pipe2(fds, O_CLOEXEC) != 0 ? errno : 0;
}

/* The job's environment plus BATON_* (RUN_ENV_VARS, each set here):
 * owned (proc_env_free), or NULL. */
static char **build_env(const struct run *run)
{
    /* One "NAME=value" per row of RUN_ENV_VARS; a row left unset would be
     * passed empty, which test_jobs catches (it compares a job's BATON_*
     * with `baton check --reference`). */
    char vars[RUN_ENV_COUNT][JOB_NAME_MAX + 128] = {{0}}, sched[32];
    char *mine[RUN_ENV_COUNT];
#define SET_(id, fmt, ...)                                                                         \
    snprintf(vars[RUN_ENV_##id], sizeof vars[0], "%s=" fmt, run_env_name(RUN_ENV_##id), __VA_ARGS__)
    log_rfc3339(run->tick, sched, sizeof sched);
    SET_(JOB, "%s", run->job->name);
    SET_(RUN_ID, "%s", run->id);
    SET_(SCHEDULED_AT, "%s", sched);
    SET_(FENCE, "%" PRIu64, run->term);
    SET_(NODE, "%s", run->env->node);
    SET_(TRIGGER, "%s", run_trigger_name(run->trigger));
    SET_(ATTEMPT, "%d", run->attempt);
    SET_(JITTER_MS, "%" PRId64, run->jitter_ms);
#undef SET_
    for (int i = 0; i < RUN_ENV_COUNT; i++)
        mine[i] = vars[i];
    size_t nmine = sizeof mine / sizeof mine[0], njob = 0;
    while (run->job->env != NULL && run->job->env[njob] != NULL)
        njob++;
    /* systemd's variables are baton run's own: a job never notifies
     * baton's unit, nor takes its watchdog for its own. */
    static const char *const systemd_vars[] = {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"};
    size_t nsystemd = sizeof systemd_vars / sizeof systemd_vars[0];
    char **extra = calloc(njob + nmine + nsystemd, sizeof *extra);
    if (extra == NULL)
        return NULL;
    for (size_t i = 0; i < njob; i++)
        extra[i] = run->job->env[i];
    for (size_t i = 0; i < nmine; i++)
        extra[njob + i] = mine[i];
    for (size_t i = 0; i < nsystemd; i++)
        extra[njob + nmine + i] = (char *)systemd_vars[i];
    char **env = proc_env_build(NULL, extra, njob + nmine + nsystemd);
    free(extra);
    return env;
}

bool run_start(struct run *run, const struct run_env *env, const struct job *job, const char *id,
               int64_t tick, int attempt, uint64_t term, enum run_trigger trigger, int64_t term_at,
               int64_t kill_at, bool prepared)
{
    char path[4096];
    int outp[2] = {-1, -1}, errp[2] = {-1, -1}, fencep[2] = {-1, -1}, gop[2] = {-1, -1};
    char **envp = NULL;
    bool ok = false;

    run->env = env;
    run->job = job;
    snprintf(run->id, sizeof run->id, "%s", id);
    snprintf(run->member, sizeof run->member, "%s/%s", env->node, id);
    run->tick = tick;
    /* A manual run has no tick to delay: its "tick" is its request's time. */
    run->jitter_ms = trigger == RUN_TRIGGER_MANUAL ? 0 : sched_jitter_ms(job, tick);
    run->attempt = attempt;
    run->term = term;
    run->trigger = trigger;
    run->state = RUN_STARTING;
    run->labels =
        (struct output_labels){.event = LE_JOB_OUTPUT, .job = job->name, .run_id = run->id};
    run->out = run->err = OUTPUT_STREAM_CLOSED;
    output_tail_init(&run->tail, env->output_bytes);
    run->fence_fd = -1;
    run->go_fd = -1;
    run->started_wall_ms = wall_ms();

    if (env->fault_start)
        return fail_start(run, "could not start: injected fault (BATON_TEST_FAULT=start)");
    char *shell_argv[4] = {"/bin/sh", "-c", job->shell, NULL};
    char *const *argv = job->argv != NULL ? job->argv : shell_argv;
    int perr = proc_resolve(argv[0], path, sizeof path);
    if (perr != 0)
        return fail_start(run, "%s: %s", argv[0],
                          perr == ENOENT ? "command not found" : strerror(perr));
    struct proc_spec spec = {.path = path, .argv = argv, .workdir = job->workdir, .stdin_fd = -1};
    if (job->user != NULL) {
        struct passwd *pw = getpwnam(job->user);
        if (pw == NULL)
            return fail_start(run, "unknown user \"%s\"", job->user);
        spec.set_ids = true;
        spec.uid = pw->pw_uid;
        spec.gid = pw->pw_gid;
        spec.user = job->user;
    }
    if (job->workdir != NULL && access(job->workdir, X_OK) != 0)
        return fail_start(run, "workdir %s: %s", job->workdir, strerror(errno));
    if ((envp = build_env(run)) == NULL) {
        fail_start(run, "out of memory building the environment");
        goto out;
    }
    int e = open_pipe(outp);
    if (e == 0)
        e = open_pipe(errp);
    if (e == 0)
        e = proc_fence_pipe(fencep);
    if (e == 0 && prepared)
        e = proc_go_pipe(gop);
    if (e != 0) {
        fail_start(run, "cannot make the pipes of a run: %s", strerror(e));
        goto out;
    }
    /* The first fence is in the pipe before the shim exists: it is never
     * unfenced. */
    proc_fence_send(fencep[1], term_at, kill_at);
    spec.envp = envp;
    spec.stdout_fd = outp[1];
    spec.stderr_fd = errp[1];
    spec.fenced = true;
    spec.fence_fd = fencep[0];
    spec.prepared = prepared;
    spec.go_fd = gop[0];
    run->started_wall_ms = wall_ms();
    e = proc_spawn(&spec, &run->pgid);
    close(outp[1]);
    close(errp[1]);
    close(fencep[0]);
    outp[1] = errp[1] = fencep[0] = -1;
    if (gop[0] >= 0)
        close(gop[0]);
    gop[0] = -1;
    if (e != 0) {
        fail_start(run, "cannot start the process: %s", strerror(e));
        goto out;
    }
    run->started_ns = loop_now();
    run->fence_fd = fencep[1];
    /* The streams own the read ends from here, even when watching fails. */
    output_open(&run->out, env->log, env->loop, &run->labels, "stdout", &run->tail, outp[0]);
    output_open(&run->err, env->log, env->loop, &run->labels, "stderr", &run->tail, errp[0]);
    outp[0] = errp[0] = fencep[1] = -1;
    ok = true;
    if (prepared) { /* it waits for run_go() */
        run->go_fd = gop[1];
        run->prepared = true;
        gop[1] = -1;
        goto out;
    }
    if (job->timeout_ms > 0)
        run->timeout_at = run->started_ns + job->timeout_ms * INT64_C(1000000);
    run_transition(run, RUN_EV_SPAWNED);
out:
    for (int i = 0; i < 2; i++) {
        if (gop[i] >= 0)
            close(gop[i]);
        if (outp[i] >= 0)
            close(outp[i]);
        if (errp[i] >= 0)
            close(errp[i]);
        if (fencep[i] >= 0)
            close(fencep[i]);
    }
    proc_env_free(envp);
    return ok;
}

bool run_go(struct run *run)
{
    if (!run->prepared || run->state != RUN_STARTING)
        return false;
    int e = proc_go(run->go_fd);
    close(run->go_fd);
    run->go_fd = -1;
    run->prepared = false;
    if (e != 0) { /* the shim is gone: its reaping records why */
        snprintf(run->error, sizeof run->error,
                 "its process ended before the tick's instant (%s): not run", strerror(e));
        return false;
    }
    run->started_ns = loop_now();
    run->started_wall_ms = wall_ms();
    if (run->job->timeout_ms > 0)
        run->timeout_at = run->started_ns + run->job->timeout_ms * INT64_C(1000000);
    run_transition(run, RUN_EV_SPAWNED);
    return true;
}

void run_cancel(struct run *run, enum history_outcome outcome, const char *why)
{
    if (run->state != RUN_STARTING || !run->prepared)
        return;
    /* The shim exits on the end of its go pipe; the KILL makes sure. */
    snprintf(run->error, sizeof run->error, "%s", why);
    run->cancel_outcome = outcome;
    close(run->go_fd);
    run->go_fd = -1;
    run->prepared = false;
    proc_signal_group(run->pgid, SIGKILL);
}

void run_fence(struct run *run, int64_t term_at, int64_t kill_at)
{
    if (run->fence_fd >= 0 && run->state != RUN_EXITED)
        proc_fence_send(run->fence_fd, term_at, kill_at);
}

/* ---- stopping and reaping ---- */

void run_stop(struct run *run, enum run_stop why, int64_t kill_by_ns)
{
    if (run->state == RUN_STARTING && run->prepared) {
        char why_s[96];
        snprintf(why_s, sizeof why_s, "stopped before the tick's instant (%s): not run",
                 run_stop_name(why));
        run_cancel(run, HO_FAILED_TO_START, why_s);
        return;
    }
    if (run->state == RUN_EXITED || run->state == RUN_STARTING)
        return;
    int64_t now = loop_now();
    if (run->stop != RUN_STOP_TIMEOUT)
        run->stop = why;
    if (run->stop_ns == 0)
        run->stop_ns = now;
    if (run->state == RUN_RUNNING) {
        proc_signal_group(run->pgid, SIGTERM);
        run->kill_at = now + run->job->kill_grace_ms * INT64_C(1000000);
        run_transition(run, RUN_EV_TERM);
    }
    if (kill_by_ns > 0 && (run->kill_at == 0 || kill_by_ns < run->kill_at))
        run->kill_at = kill_by_ns;
    if (run->state != RUN_KILLING && run->kill_at != 0 && run->kill_at <= now)
        run_tick(run, now);
}

void run_tick(struct run *run, int64_t now_ns)
{
    if (run->state == RUN_EXITED || run->state == RUN_STARTING)
        return;
    if (run->state == RUN_TERMINATING && run->kill_at != 0 && now_ns >= run->kill_at) {
        proc_signal_group(run->pgid, SIGKILL);
        run->kill_at = 0;
        run_transition(run, RUN_EV_KILL);
        return;
    }
    if (run->state == RUN_RUNNING && run->timeout_at != 0 && now_ns >= run->timeout_at) {
        cJSON *f = log_fields();
        add_tick_fields(f, run);
        cJSON_AddNumberToObject(f, "timeout_ms", (double)run->job->timeout_ms);
        log_emit(run->env->log, LE_JOB_TIMEOUT, f);
        run->timeout_at = 0;
        run->stop = RUN_STOP_TIMEOUT;
        run_stop(run, RUN_STOP_TIMEOUT, 0);
    }
}

int64_t run_next_ns(const struct run *run)
{
    if (run->state == RUN_RUNNING)
        return run->timeout_at;
    if (run->state == RUN_TERMINATING)
        return run->kill_at;
    return 0;
}

void run_reaped(struct run *run, int wstatus)
{
    if (run->state == RUN_EXITED)
        return;
    run->wstatus = wstatus;
    run->ended_ns = loop_now();
    /* The shim's word on how and when the command ended (proc.h): a stop
     * that came after the end did not end it; a fence's TERM before it
     * did. */
    struct proc_exit_report rep;
    if (run->state != RUN_STARTING && run->fence_fd >= 0 &&
        proc_exit_report_read(run->fence_fd, &rep) == 0 && rep.ended_at <= run->ended_ns &&
        rep.ended_at >= run->started_ns) {
        run->ended_ns = rep.ended_at;
        if (run->stop != RUN_STOP_NONE && run->stop_ns > rep.ended_at)
            run->stop = RUN_STOP_NONE; /* ended on its own before baton stopped it */
        if (run->stop == RUN_STOP_NONE && rep.termed_at != 0 && rep.termed_at <= rep.ended_at)
            run->stop = RUN_STOP_PAUSED; /* its cover ended: the shim's fence stopped it */
    }
    /* What the group left behind goes with it. */
    proc_signal_group(run->pgid, SIGKILL);
    output_close(&run->out);
    output_close(&run->err);
    run->output = output_tail_take(&run->tail, &run->output_len, &run->output_dropped);
    if (run->state == RUN_STARTING) { /* prepared, never told to go */
        run->outcome = run->cancel_outcome == HO_SKIPPED ? HO_SKIPPED : HO_FAILED_TO_START;
        if (run->error[0] == '\0')
            snprintf(run->error, sizeof run->error,
                     "its process ended before the tick's instant (the fence of its lease: "
                     "the leader was stalled): not run");
        if (run->go_fd >= 0)
            close(run->go_fd);
        run->go_fd = -1;
        run->prepared = false;
    } else if (run->stop == RUN_STOP_TIMEOUT)
        run->outcome = HO_TIMEOUT;
    else if (run->stop != RUN_STOP_NONE)
        run->outcome = HO_KILLED;
    else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
        run->outcome = HO_OK;
    else
        run->outcome = HO_FAILED;
    run_transition(run, RUN_EV_REAPED);
}

void run_dispose(struct run *run)
{
    if (run->state != RUN_EXITED && (run->state != RUN_STARTING || run->pgid > 0))
        proc_signal_group(run->pgid, SIGKILL);
    if (run->go_fd >= 0) {
        close(run->go_fd);
        run->go_fd = -1;
    }
    if (run->fence_fd >= 0) {
        close(run->fence_fd);
        run->fence_fd = -1;
    }
    output_abandon(&run->out);
    output_abandon(&run->err);
    output_tail_free(&run->tail);
    free(run->output);
    run->output = NULL;
}

void run_record(const struct run *run, const char *node, struct history_rec *out)
{
    memset(out, 0, sizeof *out);
    out->run_id = run->id;
    out->node = node;
    out->term = run->term;
    out->scheduled_at = out->until = run->tick;
    out->ticks = 1;
    out->trigger = run_trigger_name(run->trigger);
    out->by = run->by;
    out->attempt = run->attempt;
    out->outcome = run->outcome;
    out->exit_code = -1;
    out->signal = "";
    out->reason = "";
    if (!history_outcome_ran(run->outcome)) { /* failed_to_start, or cancelled: skipped */
        out->reason = run->error;
        return;
    }
    out->started_ms = run->started_wall_ms;
    out->jitter_ms = run->jitter_ms;
    run_result(run, &out->exit_code, &out->signal, &out->duration_ms);
    if (run->stop != RUN_STOP_NONE)
        out->reason = run_stop_name(run->stop);
    if (run->output != NULL) {
        out->output = run->output;
        out->output_len = run->output_len;
        out->output_dropped = run->output_dropped;
        out->has_output = true;
    }
}

void run_result(const struct run *run, int *exit_code, const char **signal, int64_t *duration_ms)
{
    *exit_code = -1;
    *signal = "";
    *duration_ms = 0;
    if (!history_outcome_ran(run->outcome) || run->state != RUN_EXITED)
        return;
    *duration_ms = ((run->ended_ns != 0 ? run->ended_ns : loop_now()) - run->started_ns) / 1000000;
    if (WIFEXITED(run->wstatus))
        *exit_code = WEXITSTATUS(run->wstatus);
    else
        *signal = sigabbrev_np(WTERMSIG(run->wstatus)) ? sigabbrev_np(WTERMSIG(run->wstatus)) : "?";
}
