/* hook.c -- see hook.h.
 *
 * Data: a list of hooks alive (started, not yet reaped) and a list of
 * deferred ones (an on_failure waiting for a retry's fate). A hook is
 * prepared once, when its run ends: everything it needs is copied then
 * (command, environment, output), so it owns no pointer into the job set
 * and can start later (deferred) or never. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "facts.h"
#include "hook.h"
#include "proc.h"

extern char **environ;

static const struct {
    const char *name, *doc;
} env_vars[HOOK_ENV_COUNT] = {
#define HOOK_ENV_ROW_(id, name, doc) [HOOK_ENV_##id] = {name, doc},
    HOOK_ENV_VARS(HOOK_ENV_ROW_)
#undef HOOK_ENV_ROW_
};

const char *hook_env_name(enum hook_env_var v)
{
    return ((int)v >= 0 && v < HOOK_ENV_COUNT) ? env_vars[v].name : "?";
}

const char *hook_env_doc(enum hook_env_var v)
{
    return ((int)v >= 0 && v < HOOK_ENV_COUNT) ? env_vars[v].doc : "?";
}

/* Every variable a hook or a run may get: inherited copies of them are
 * removed, so that a hook never sees one that is not about its run (a
 * BATON_SIGNAL left in baton's own environment, for a run that exited; a
 * BATON_FENCE: a hook is not fenced). */
static bool is_var(const char *kv, const char *name)
{
    size_t n = strlen(name);
    return strncmp(kv, name, n) == 0 && kv[n] == '=';
}

static bool is_hook_var(const char *kv)
{
    for (int i = 0; i < HOOK_ENV_COUNT; i++)
        if (is_var(kv, hook_env_name((enum hook_env_var)i)))
            return true;
    for (int i = 0; i < RUN_ENV_COUNT; i++)
        if (is_var(kv, run_env_name((enum run_env_var)i)))
            return true;
    return false;
}

/* baton's environment without the hook's own variables, plus vars.
 * Returns: owned (proc_env_free), or NULL on ENOMEM. */
static char **hook_env(char *const *vars, size_t nvars)
{
    size_t n = 0, k = 0;
    while (environ[n] != NULL)
        n++;
    char **base = calloc(n + 1, sizeof *base);
    if (base == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!is_hook_var(environ[i]))
            base[k++] = environ[i];
    char **env = proc_env_build(base, vars, nvars);
    free(base);
    return env;
}

enum hook_stop { HOOK_STOP_NONE, HOOK_STOP_TIMEOUT, HOOK_STOP_SHUTDOWN };
enum hook_state { HOOK_WAITING, HOOK_RUNNING, HOOK_TERMINATING, HOOK_KILLING };

struct hook {
    char job[JOB_NAME_MAX + 1];
    char run_id[RUN_ID_MAX];
    const char *which;   /* "on_failure" | "on_success" */
    const char *outcome; /* the run's (static) */
    int64_t tick;
    int attempt;
    struct job_cmd cmd; /* owned copy */
    char **vars;        /* "NAME=value": the job's env, then BATON_*; owned */
    size_t nvars, capvars;
    char *workdir, *user;
    int64_t timeout_ms, kill_grace_ms;
    char *output; /* the run's output tail (owned; NULL: none) */
    size_t output_len;
    /* alive */
    enum hook_state state;
    enum hook_stop stop;
    pid_t pgid;
    char file[PATH_MAX]; /* BATON_OUTPUT_FILE ("": none yet) */
    int64_t started_ns, term_at, kill_at;
    struct output_labels labels;
    struct output_stream out, err;
    struct hook *next;
};

struct hooks {
    struct hooks_host h;
    char *node, *group;
    struct hook *alive, *deferred;
    size_t nalive, ndeferred;
    bool hurry;
};

/* ---- a hook's own memory ---- */

static void hook_free(struct hook *k)
{
    if (k == NULL)
        return;
    job_cmd_clear(&k->cmd);
    for (size_t i = 0; i < k->nvars; i++)
        free(k->vars[i]);
    free(k->vars);
    free(k->workdir);
    free(k->user);
    free(k->output);
    free(k);
}

static int add_var(struct hook *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends one "NAME=value" to k's environment. Returns 0 or -1 (ENOMEM). */
static int add_var(struct hook *k, const char *fmt, ...)
{
    va_list ap;
    char *v = NULL;
    int n;

    if (k->nvars + 1 >= k->capvars) {
        size_t cap = k->capvars ? k->capvars * 2 : 32;
        char **nv = realloc(k->vars, cap * sizeof *nv);
        if (nv == NULL)
            return -1;
        k->vars = nv;
        k->capvars = cap;
    }
    va_start(ap, fmt);
    n = vasprintf(&v, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    k->vars[k->nvars++] = v;
    k->vars[k->nvars] = NULL;
    return 0;
}

static int set_var(struct hook *k, enum hook_env_var v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends variable v of HOOK_ENV_VARS, valued fmt, to k's environment.
 * Returns 0 or -1 (ENOMEM). */
static int set_var(struct hook *k, enum hook_env_var v, const char *fmt, ...)
{
    va_list ap;
    char *value = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&value, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    int rc = add_var(k, "%s=%s", hook_env_name(v), value);
    free(value);
    return rc;
}

static char *dup_or_null(const char *s, bool *oom)
{
    char *d = s != NULL ? strdup(s) : NULL;
    if (s != NULL && d == NULL)
        *oom = true;
    return d;
}

/* Prepares the hook cmd (which) for run: everything it will need. Returns
 * owned, or NULL on ENOMEM. */
static struct hook *prepare(struct hooks *h, const struct run *run, const struct job_cmd *cmd,
                            const char *which)
{
    struct hook *k = calloc(1, sizeof *k);
    const struct job *job = run->job;
    char when[40];
    int exit_code;
    const char *signal;
    int64_t duration_ms;
    bool oom = false;

    if (k == NULL)
        return NULL;
    snprintf(k->job, sizeof k->job, "%s", job->name);
    snprintf(k->run_id, sizeof k->run_id, "%s", run->id);
    k->which = which;
    k->outcome = history_outcome_name(run->outcome);
    k->tick = run->tick;
    k->attempt = run->attempt;
    k->timeout_ms = job->hook_timeout_ms;
    k->kill_grace_ms = job->kill_grace_ms;
    k->out = k->err = OUTPUT_STREAM_CLOSED;
    k->workdir = dup_or_null(job->workdir, &oom);
    k->user = dup_or_null(job->user, &oom);
    if (run->output != NULL) {
        k->output = malloc(run->output_len + 1);
        if (k->output == NULL)
            oom = true;
        else
            memcpy(k->output, run->output, run->output_len + 1);
        k->output_len = run->output_len;
    }
    if (oom || job_cmd_copy(&k->cmd, cmd) != 0)
        goto fail;
    for (size_t i = 0; job->env != NULL && job->env[i] != NULL; i++)
        if (add_var(k, "%s", job->env[i]) != 0)
            goto fail;
    run_result(run, &exit_code, &signal, &duration_ms);
    log_rfc3339(run->tick, when, sizeof when);
    if (set_var(k, HOOK_ENV_JOB, "%s", job->name) != 0 ||
        set_var(k, HOOK_ENV_RUN_ID, "%s", run->id) != 0 ||
        set_var(k, HOOK_ENV_NODE, "%s", h->node) != 0 ||
        set_var(k, HOOK_ENV_GROUP, "%s", h->group) != 0 ||
        set_var(k, HOOK_ENV_HOOK, "%s", which) != 0 ||
        set_var(k, HOOK_ENV_OUTCOME, "%s", k->outcome) != 0 ||
        set_var(k, HOOK_ENV_DURATION_MS, "%" PRId64, duration_ms) != 0 ||
        set_var(k, HOOK_ENV_ATTEMPT, "%d", run->attempt) != 0 ||
        set_var(k, HOOK_ENV_TRIGGER, "%s", run_trigger_name(run->trigger)) != 0 ||
        set_var(k, HOOK_ENV_SCHEDULED_AT, "%s", when) != 0 ||
        set_var(k, HOOK_ENV_OUTPUT_DROPPED, "%" PRId64,
                run->output != NULL ? run->output_dropped : INT64_C(0)) != 0)
        goto fail;
    if (exit_code >= 0 && set_var(k, HOOK_ENV_EXIT_CODE, "%d", exit_code) != 0)
        goto fail;
    if (signal[0] != '\0' && set_var(k, HOOK_ENV_SIGNAL, "%s", signal) != 0)
        goto fail;
    const char *reason = run->outcome == HO_FAILED_TO_START ? run->error
                         : run->stop != RUN_STOP_NONE       ? run_stop_name(run->stop)
                                                            : "";
    if (reason[0] != '\0' && set_var(k, HOOK_ENV_REASON, "%s", reason) != 0)
        goto fail;
    if (run->outcome != HO_FAILED_TO_START && run->started_wall_ms > 0) {
        log_rfc3339_ms(run->started_wall_ms, when, sizeof when);
        if (set_var(k, HOOK_ENV_STARTED_AT, "%s", when) != 0)
            goto fail;
    }
    return k;
fail:
    hook_free(k);
    return NULL;
}

/* ---- logging ---- */

static cJSON *hook_fields(const struct hook *k)
{
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", k->job);
    cJSON_AddStringToObject(f, "run_id", k->run_id);
    cJSON_AddStringToObject(f, "hook", k->which);
    return f;
}

/* The hook could not start: hook_end says why. Frees k. */
static void fail_start(struct hooks *h, struct hook *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail_start(struct hooks *h, struct hook *k, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    cJSON *f = hook_fields(k);
    cJSON_AddNumberToObject(f, "duration_ms", 0);
    cJSON_AddStringToObject(f, "outcome", "failed_to_start");
    cJSON_AddStringToObject(f, "error", why);
    log_emit_facts_at(h->h.log, LOG_ERROR, LE_HOOK_END, f,
                      &(struct log_facts){.job = k->job, .outcome = HO_FAILED_TO_START});
    if (k->file[0] != '\0')
        unlink(k->file);
    hook_free(k);
}

/* ---- the timer ---- */

static void rearm(struct hooks *h)
{
    int64_t next = 0;
    for (const struct hook *k = h->alive; k != NULL; k = k->next) {
        int64_t t = k->state == HOOK_RUNNING       ? k->term_at
                    : k->state == HOOK_TERMINATING ? k->kill_at
                                                   : 0;
        if (t > 0 && (next == 0 || t < next))
            next = t;
    }
    if (next == 0) {
        loop_disarm(h->h.loop, h->h.timer_id);
        return;
    }
    if (next < loop_now() + MS)
        next = loop_now() + MS; /* never a time in the past: the loop would spin */
    loop_arm(h->h.loop, h->h.timer_id, next);
}

/* SIGTERM now, SIGKILL after its kill_grace. */
static void terminate(struct hook *k, enum hook_stop why, int64_t now)
{
    if (k->state != HOOK_RUNNING)
        return;
    proc_signal_group(k->pgid, SIGTERM);
    k->stop = why;
    k->state = HOOK_TERMINATING;
    k->kill_at = now + k->kill_grace_ms * MS;
}

void hooks_on_timer(struct hooks *h)
{
    int64_t now = loop_now();
    for (struct hook *k = h->alive; k != NULL; k = k->next) {
        if (k->state == HOOK_RUNNING && now >= k->term_at)
            terminate(k, HOOK_STOP_TIMEOUT, now);
        if (k->state == HOOK_TERMINATING && now >= k->kill_at) {
            proc_signal_group(k->pgid, SIGKILL);
            k->state = HOOK_KILLING;
        }
    }
    rearm(h);
}

void hooks_hurry(struct hooks *h)
{
    if (h == NULL)
        return;
    int64_t now = loop_now();
    h->hurry = true;
    for (struct hook *k = h->alive; k != NULL; k = k->next)
        terminate(k, HOOK_STOP_SHUTDOWN, now);
    hooks_on_timer(h); /* a kill_grace of 0 kills at once */
}

/* ---- starting ---- */

/* Writes the output file of k (mode 0600, owned by uid when set_ids).
 * Returns 0 or an errno value. */
static int write_output_file(struct hook *k, bool set_ids, uid_t uid, gid_t gid)
{
    const char *dir = getenv("TMPDIR");
    int fd, e = 0;

    if (dir == NULL || dir[0] != '/')
        dir = "/tmp";
    if (snprintf(k->file, sizeof k->file, "%s/baton-hook-XXXXXX", dir) >= (int)sizeof k->file) {
        k->file[0] = '\0';
        return ENAMETOOLONG;
    }
    fd = mkostemp(k->file, O_CLOEXEC); /* 0600 */
    if (fd < 0) {
        e = errno;
        k->file[0] = '\0';
        return e;
    }
    for (size_t off = 0; e == 0 && off < k->output_len;) {
        ssize_t n = write(fd, k->output + off, k->output_len - off);
        if (n > 0)
            off += (size_t)n;
        else if (n < 0 && errno != EINTR)
            e = errno;
    }
    if (e == 0 && set_ids && fchown(fd, uid, gid) != 0)
        e = errno;
    if (close(fd) != 0 && e == 0)
        e = errno;
    free(k->output); /* it is in the file now */
    k->output = NULL;
    return e;
}

/* Starts k (prepared), or logs why it cannot and frees it. */
static void start(struct hooks *h, struct hook *k)
{
    char path[4096];
    char *shell_argv[4] = {"/bin/sh", "-c", k->cmd.shell, NULL};
    char *const *argv = k->cmd.argv != NULL ? k->cmd.argv : shell_argv;
    int outp[2] = {-1, -1}, errp[2] = {-1, -1}, e;
    char **envp = NULL;
    struct proc_spec spec = {.argv = argv, .workdir = k->workdir, .stdin_fd = -1};

    if (h->nalive >= HOOKS_ALIVE_MAX) {
        fail_start(h, k, "too many hooks running (%d): not started", HOOKS_ALIVE_MAX);
        return;
    }
    e = proc_resolve(argv[0], path, sizeof path);
    if (e != 0) {
        fail_start(h, k, "%s: %s", argv[0], e == ENOENT ? "command not found" : strerror(e));
        return;
    }
    spec.path = path;
    if (k->user != NULL) {
        struct passwd *pw = getpwnam(k->user);
        if (pw == NULL) {
            fail_start(h, k, "unknown user \"%s\"", k->user);
            return;
        }
        spec.set_ids = true;
        spec.uid = pw->pw_uid;
        spec.gid = pw->pw_gid;
        spec.user = k->user;
    }
    if (k->workdir != NULL && access(k->workdir, X_OK) != 0) {
        fail_start(h, k, "workdir %s: %s", k->workdir, strerror(errno));
        return;
    }
    e = write_output_file(k, spec.set_ids, spec.uid, spec.gid);
    if (e != 0) {
        fail_start(h, k, "cannot write the output file in %s: %s",
                   getenv("TMPDIR") != NULL && getenv("TMPDIR")[0] == '/' ? getenv("TMPDIR")
                                                                          : "/tmp",
                   strerror(e));
        return;
    }
    if (set_var(k, HOOK_ENV_OUTPUT_FILE, "%s", k->file) == 0)
        envp = hook_env(k->vars, k->nvars);
    if (envp == NULL) {
        fail_start(h, k, "out of memory building the environment");
        return;
    }
    if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
        e = errno;
        goto fail_pipes;
    }
    spec.envp = envp;
    spec.stdout_fd = outp[1];
    spec.stderr_fd = errp[1];
    e = proc_spawn(&spec, &k->pgid);
    close(outp[1]);
    close(errp[1]);
    outp[1] = errp[1] = -1;
    if (e != 0)
        goto fail_pipes;
    proc_env_free(envp);

    int64_t now = loop_now();
    int64_t limit = k->timeout_ms;
    if (h->hurry && k->kill_grace_ms < limit)
        limit = k->kill_grace_ms;
    k->started_ns = now;
    k->term_at = now + limit * MS;
    k->state = HOOK_RUNNING;
    k->labels = (struct output_labels){
        .event = LE_HOOK_OUTPUT, .job = k->job, .run_id = k->run_id, .hook = k->which};
    cJSON *f = hook_fields(k);
    cJSON_AddNumberToObject(f, "attempt", k->attempt);
    cJSON_AddStringToObject(f, "run_outcome", k->outcome);
    cJSON_AddNumberToObject(f, "timeout_ms", (double)limit);
    cJSON_AddNumberToObject(f, "pid", (double)k->pgid);
    log_emit(h->h.log, LE_HOOK_START, f);
    output_open(&k->out, h->h.log, h->h.loop, &k->labels, "stdout", NULL, outp[0]);
    output_open(&k->err, h->h.log, h->h.loop, &k->labels, "stderr", NULL, errp[0]);
    k->next = h->alive;
    h->alive = k;
    h->nalive++;
    rearm(h);
    return;
fail_pipes:
    for (int i = 0; i < 2; i++) {
        if (outp[i] >= 0)
            close(outp[i]);
        if (errp[i] >= 0)
            close(errp[i]);
    }
    proc_env_free(envp);
    fail_start(h, k, "cannot start the process: %s", strerror(e));
}

/* ---- the hooks ---- */

struct hooks *hooks_new(const struct hooks_host *host)
{
    struct hooks *h = calloc(1, sizeof *h);
    if (h == NULL)
        return NULL;
    h->h = *host;
    h->h.node = h->node = strdup(host->node);
    h->h.group = h->group = strdup(host->group);
    if (h->node == NULL || h->group == NULL) {
        hooks_free(h);
        return NULL;
    }
    return h;
}

void hooks_free(struct hooks *h)
{
    if (h == NULL)
        return;
    while (h->alive != NULL) {
        struct hook *k = h->alive;
        h->alive = k->next;
        proc_signal_group(k->pgid, SIGKILL);
        output_abandon(&k->out);
        output_abandon(&k->err);
        if (k->file[0] != '\0')
            unlink(k->file);
        hook_free(k);
    }
    while (h->deferred != NULL) {
        struct hook *k = h->deferred;
        h->deferred = k->next;
        hook_free(k);
    }
    free(h->node);
    free(h->group);
    free(h);
}

size_t hooks_running(const struct hooks *h)
{
    return h != NULL ? h->nalive : 0;
}

/* Takes the deferred hook of job's tick out of the list: returns it, or
 * NULL. */
static struct hook *take_deferred(struct hooks *h, const char *job, int64_t tick)
{
    for (struct hook **p = &h->deferred; *p != NULL; p = &(*p)->next)
        if ((*p)->tick == tick && strcmp((*p)->job, job) == 0) {
            struct hook *k = *p;
            *p = k->next;
            k->next = NULL;
            h->ndeferred--;
            return k;
        }
    return NULL;
}

void hooks_run_ended(struct hooks *h, const struct run *run, bool retry_follows)
{
    if (h == NULL)
        return;
    /* An earlier attempt's deferred report: this attempt's end replaces it.
     * A manual run (baton trigger) is no attempt of a tick: its tick is the
     * request's time, which may equal a scheduled tick's, and it is never
     * retried, so it neither replaces nor waits. */
    if (run->trigger != RUN_TRIGGER_MANUAL)
        hook_free(take_deferred(h, run->job->name, run->tick));
    const struct job_cmd *cmd = NULL;
    const char *which = NULL;
    switch (run->outcome) {
    case HO_OK:
        cmd = &run->job->on_success;
        which = "on_success";
        break;
    case HO_FAILED:
    case HO_TIMEOUT:
    case HO_KILLED:
    case HO_FAILED_TO_START:
        cmd = &run->job->on_failure;
        which = "on_failure";
        break;
    default: return; /* ticks that did not run have no hook */
    }
    if (!job_cmd_set(cmd))
        return;
    struct hook *k = prepare(h, run, cmd, which);
    if (k == NULL) {
        struct hook stub = {.which = which};
        snprintf(stub.job, sizeof stub.job, "%s", run->job->name);
        snprintf(stub.run_id, sizeof stub.run_id, "%s", run->id);
        cJSON *f = hook_fields(&stub);
        cJSON_AddNumberToObject(f, "duration_ms", 0);
        cJSON_AddStringToObject(f, "outcome", "failed_to_start");
        cJSON_AddStringToObject(f, "error", "out of memory");
        log_emit_facts_at(h->h.log, LOG_ERROR, LE_HOOK_END, f,
                          &(struct log_facts){.job = stub.job, .outcome = HO_FAILED_TO_START});
        return;
    }
    if (retry_follows && run->outcome != HO_OK && h->ndeferred < HOOKS_DEFERRED_MAX) {
        k->next = h->deferred;
        h->deferred = k;
        h->ndeferred++;
        return;
    }
    start(h, k);
}

void hooks_retry_dropped(struct hooks *h, const char *job, int64_t tick)
{
    if (h == NULL)
        return;
    struct hook *k = take_deferred(h, job, tick);
    if (k != NULL)
        start(h, k);
}

bool hooks_reaped(struct hooks *h, pid_t pid, int wstatus)
{
    if (h == NULL)
        return false;
    struct hook **p = &h->alive;
    while (*p != NULL && (*p)->pgid != pid)
        p = &(*p)->next;
    if (*p == NULL)
        return false;
    struct hook *k = *p;
    *p = k->next;
    h->nalive--;
    /* What its group left behind goes with it. */
    proc_signal_group(k->pgid, SIGKILL);
    output_close(&k->out);
    output_close(&k->err);
    if (k->file[0] != '\0')
        unlink(k->file);
    enum history_outcome outcome = k->stop == HOOK_STOP_TIMEOUT                      ? HO_TIMEOUT
                                   : k->stop == HOOK_STOP_SHUTDOWN                   ? HO_KILLED
                                   : WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 ? HO_OK
                                                                                     : HO_FAILED;
    cJSON *f = hook_fields(k);
    cJSON_AddNumberToObject(f, "duration_ms", (double)((loop_now() - k->started_ns) / MS));
    if (WIFEXITED(wstatus))
        cJSON_AddNumberToObject(f, "exit_code", WEXITSTATUS(wstatus));
    else
        cJSON_AddStringToObject(
            f, "signal", sigabbrev_np(WTERMSIG(wstatus)) ? sigabbrev_np(WTERMSIG(wstatus)) : "?");
    cJSON_AddStringToObject(f, "outcome", history_outcome_name(outcome));
    log_emit_facts_at(h->h.log, outcome == HO_OK ? LOG_INFO : LOG_WARN, LE_HOOK_END, f,
                      &(struct log_facts){.job = k->job, .outcome = outcome});
    hook_free(k);
    rearm(h);
    return true;
}
