/* runner.c -- see runner.h.
 *
 * Exactly once: the tick T of job J is claimed with one script that checks
 * the leader key still holds our token and then moves J's high-water mark
 * baton:{G}:last:J from below T to T. Ticks of a job are claimed in
 * increasing order, so a tick can be claimed once, by the leader of the
 * moment, and never again: a paused ex-leader that wakes up cannot claim
 * (the token check), and a new leader catches up only ticks above the mark.
 * No claim, no run; and a claim whose local lease deadline has passed by
 * the time it returns is not run either.
 *
 * Children run under proc.h's shim in their own process group; their
 * output is read line by line into job_output log lines (lines longer than
 * LINE_MAX are cut into several, marked partial). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cron.h"
#include "keys.h"
#include "proc.h"
#include "runner.h"

#define LINE_MAX_BYTES  4096
#define HIST_ARGC       24   /* arguments of a history XADD */
#define HIST_QUEUE_MAX  1000 /* deferred history entries kept, at most */
#define CATCHUP_MAX     1000 /* missed ticks run per job and leadership, at most */
#define CLAIM_RETRY_MS  100  /* a claim that failed (Redis unreachable) is retried this often */
#define CLAIM_MARGIN_MS 20   /* do not claim this close to the lease deadline */

static const char claim_src[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return -1 end\n"
    "local last = redis.call('get', KEYS[2])\n"
    "if last and tonumber(last) >= tonumber(ARGV[2]) then return 0 end\n"
    "redis.call('set', KEYS[2], ARGV[2])\n"
    "return 1\n";

/* A jobs.yaml generation, kept while a run or a job state uses it. */
struct jobset {
    struct jobs *jobs;
    int refs;
    struct jobset *next;
};

struct jobstate;

struct stream {
    struct loop_watch w;
    struct run *run;
    const char *name; /* "stdout" | "stderr" */
    char buf[LINE_MAX_BYTES];
    size_t len;
};

struct run {
    struct runner *r;
    struct jobstate *js; /* NULL once its job is gone from jobs.yaml */
    const struct job *job;
    struct jobset *set;
    char id[64];
    int64_t tick;
    int attempt;
    uint64_t term;
    pid_t pgid;
    int64_t started_ns;
    int64_t timeout_at, kill_at; /* CLOCK_MONOTONIC; 0: none */
    const char *stop_reason;     /* why we signalled it: timeout|stopped|replaced */
    bool exited;
    int status;
    struct stream out, err;
    struct run *next;
};

/* A start to make: a tick already claimed (catch-up, retry, replacement). */
struct pending {
    struct jobstate *js;
    int64_t tick;
    int attempt;
    int64_t at_ns;  /* not before */
    bool wait_idle; /* replace: once the job's previous runs are gone */
    struct pending *next;
};

struct jobstate {
    const struct job *job;
    struct jobset *set;
    int64_t next_tick;      /* Unix s; 0: none */
    int64_t claim_retry_at; /* next_tick's claim failed: retry then (monotonic) */
    int running;
    struct jobstate *next;
};

struct runner {
    struct runner_host h;
    struct jobset *sets;    /* every generation still in use */
    struct jobset *current; /* the newest: the runner holds one reference */
    struct jobstate *states;
    struct run *runs;
    struct pending *pending;
    bool leading;
    uint64_t term;
    uint64_t seq;
    char *node, *group; /* owned copies behind h.node, h.group */
    bool defer_history; /* no blocking call now: queue history entries */
    struct histrec *hist;
    size_t nhist;
};

/* ---- clocks ---- */

static int64_t mono_ns(void)
{
    return loop_now();
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic time at which the wall clock shows unix_s. */
static int64_t mono_at_wall(int64_t unix_s)
{
    return mono_ns() + (unix_s * 1000 - wall_ms()) * INT64_C(1000000);
}

/* ---- job sets and states ---- */

static void set_unref(struct runner *r, struct jobset *s)
{
    if (s == NULL || --s->refs > 0)
        return;
    for (struct jobset **p = &r->sets; *p != NULL; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    jobs_free(s->jobs);
    free(s);
}

static void drop_pending_of(struct runner *r, struct jobstate *js)
{
    for (struct pending **p = &r->pending; *p != NULL;) {
        if (js == NULL || (*p)->js == js) {
            struct pending *dead = *p;
            *p = dead->next;
            free(dead);
        } else {
            p = &(*p)->next;
        }
    }
}

static int64_t next_tick_after(const struct job *job, int64_t after)
{
    int64_t t = 0;
    if (!job->enabled || cron_next(job->expr, job->tz, after, &t) != 0)
        return 0;
    return t;
}

struct runner *runner_new(const struct runner_host *host)
{
    struct runner *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->h = *host;
    /* Our own copies: a reload frees the configuration they came from. */
    r->h.node = r->node = strdup(host->node);
    r->h.group = r->group = strdup(host->group);
    if (r->node == NULL || r->group == NULL) {
        runner_free(r);
        return NULL;
    }
    return r;
}

void runner_set_jobs(struct runner *r, struct jobs *jobs)
{
    struct jobset *set = calloc(1, sizeof *set);
    if (set == NULL) {
        jobs_free(jobs);
        return;
    }
    set->jobs = jobs;
    set->refs = 1; /* the runner's */
    set->next = r->sets;
    r->sets = set;

    struct jobstate *old = r->states, *fresh = NULL, **tail = &fresh;
    r->states = NULL;
    int64_t now_s = wall_ms() / 1000;
    for (size_t i = 0; i < jobs->n; i++) {
        const struct job *job = &jobs->v[i];
        struct jobstate *js = NULL;
        for (struct jobstate **p = &old; *p != NULL; p = &(*p)->next)
            if (strcmp((*p)->job->name, job->name) == 0) {
                js = *p;
                *p = js->next;
                break;
            }
        if (js == NULL && (js = calloc(1, sizeof *js)) == NULL)
            continue;
        bool same = js->job != NULL && js->job->fingerprint == job->fingerprint;
        set_unref(r, js->set);
        js->job = job;
        js->set = set;
        set->refs++;
        if (!same) /* new or changed: its schedule starts now */
            js->next_tick = r->leading ? next_tick_after(job, now_s) : 0;
        js->next = NULL;
        *tail = js;
        tail = &js->next;
    }
    /* Jobs gone from the file: their runs finish under their old definition. */
    while (old != NULL) {
        struct jobstate *js = old;
        old = js->next;
        drop_pending_of(r, js);
        for (struct run *run = r->runs; run != NULL; run = run->next)
            if (run->js == js)
                run->js = NULL;
        set_unref(r, js->set);
        free(js);
    }
    r->states = fresh;
    struct jobset *previous = r->current;
    r->current = set;
    set_unref(r, previous);
}

/* ---- history and logs ---- */

static void add_tick_fields(cJSON *f, const struct run *run)
{
    char when[32];
    log_rfc3339(run->tick, when, sizeof when);
    cJSON_AddStringToObject(f, "job", run->job->name);
    cJSON_AddStringToObject(f, "run_id", run->id);
    cJSON_AddStringToObject(f, "scheduled_at", when);
    cJSON_AddNumberToObject(f, "attempt", run->attempt);
}

/* A history entry: the XADD's arguments, owned. */
struct histrec {
    char *argv[HIST_ARGC];
    struct histrec *next;
};

static void histrec_free(struct histrec *h)
{
    for (int i = 0; h != NULL && i < HIST_ARGC; i++)
        free(h->argv[i]);
    free(h);
}

static void history_send(struct runner *r, struct histrec *h)
{
    struct baton_reply *rep = NULL;
    int rc = baton_client_command(r->h.client, HIST_ARGC, (const char *const *)h->argv, NULL, &rep);
    baton_reply_free(rep);
    if (rc != BATON_OK) {
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "key", h->argv[1]);
        cJSON_AddStringToObject(f, "run_id", h->argv[7]);
        cJSON_AddStringToObject(f, "error", baton_client_errstr(r->h.client));
        log_emit(r->h.log, LOG_WARN, "history_write_failed", f);
    }
    histrec_free(h);
}

/* Records a run in the job's stream: now, or, while the runner must make no
 * blocking call (jobs being stopped against a deadline), at the next
 * runner_flush_history(). */
static void record_history(struct runner *r, const char *job, const char *run_id, int64_t tick,
                           uint64_t term, int64_t started_ms, int64_t duration_ms,
                           const char *outcome, const char *result, int attempt)
{
    char maxlen[24], sched[32], started[40], dur[24], termbuf[24], att[16];
    snprintf(maxlen, sizeof maxlen, "%" PRId64, r->h.history_len);
    log_rfc3339(tick, sched, sizeof sched);
    if (started_ms > 0)
        log_rfc3339_ms(started_ms, started, sizeof started);
    else
        started[0] = '\0';
    snprintf(dur, sizeof dur, "%" PRId64, duration_ms);
    snprintf(termbuf, sizeof termbuf, "%" PRIu64, term);
    snprintf(att, sizeof att, "%d", attempt);
    const char *argv[HIST_ARGC] = {
        "XADD",        NULL,      "MAXLEN",  "~",     maxlen,         "*",    "run_id",  run_id,
        "node",        r->h.node, "term",    termbuf, "scheduled_at", sched,  "started", started,
        "duration_ms", dur,       "outcome", outcome, "result",       result, "attempt", att};
    struct histrec *h = calloc(1, sizeof *h);
    if (h == NULL || (h->argv[1] = group_key(r->h.group, "runs:%s", job)) == NULL) {
        histrec_free(h);
        return;
    }
    for (int i = 0; i < HIST_ARGC; i++)
        if (i != 1 && (h->argv[i] = strdup(argv[i])) == NULL) {
            histrec_free(h);
            return;
        }
    if (!r->defer_history) {
        history_send(r, h);
        return;
    }
    if (r->nhist == HIST_QUEUE_MAX) { /* bounded: the oldest goes */
        struct histrec *old = r->hist;
        r->hist = old->next;
        histrec_free(old);
        r->nhist--;
    }
    struct histrec **tail = &r->hist;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = h;
    r->nhist++;
}

void runner_flush_history(struct runner *r)
{
    r->defer_history = false;
    while (r->hist != NULL) {
        struct histrec *h = r->hist;
        r->hist = h->next;
        r->nhist--;
        history_send(r, h);
    }
}

/* ---- output ---- */

static void emit_line(struct stream *s, const char *line, size_t n, bool partial)
{
    struct run *run = s->run;
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", run->job->name);
    cJSON_AddStringToObject(f, "run_id", run->id);
    cJSON_AddStringToObject(f, "stream", s->name);
    char *copy = strndup(line, n);
    cJSON_AddStringToObject(f, "line", copy != NULL ? copy : "");
    free(copy);
    if (partial)
        cJSON_AddBoolToObject(f, "partial", true);
    log_emit(run->r->h.log, LOG_INFO, "job_output", f);
}

/* Emits the complete lines in the buffer (and a full buffer as a partial
 * line); keeps the rest. */
static void flush_lines(struct stream *s, bool eof)
{
    size_t start = 0;
    for (size_t i = 0; i < s->len; i++)
        if (s->buf[i] == '\n') {
            emit_line(s, s->buf + start, i - start, false);
            start = i + 1;
        }
    if (start < s->len && (eof || (start == 0 && s->len == sizeof s->buf))) {
        emit_line(s, s->buf + start, s->len - start, !eof);
        start = s->len;
    }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
}

static void close_stream(struct stream *s)
{
    if (s->w.fd < 0)
        return;
    flush_lines(s, true);
    loop_del(s->run->r->h.loop, &s->w);
    close(s->w.fd);
    s->w.fd = -1;
}

/* Reads what is there; returns false at EOF or error. */
static bool read_stream(struct stream *s)
{
    for (;;) {
        ssize_t n = read(s->w.fd, s->buf + s->len, sizeof s->buf - s->len);
        if (n > 0) {
            s->len += (size_t)n;
            flush_lines(s, false);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
}

static void on_output(void *ctx, struct loop_watch *w, uint32_t events)
{
    struct stream *s = ctx;
    (void)w;
    (void)events;
    if (!read_stream(s))
        close_stream(s);
}

/* ---- runs ---- */

static void signal_run(struct run *run, int sig)
{
    proc_signal_group(run->pgid, sig);
}

/* TERM now, KILL at kill_by (monotonic) or after the job's grace. */
static void stop_run(struct run *run, const char *reason, int64_t kill_by)
{
    if (run->exited)
        return;
    int64_t now = mono_ns();
    if (run->stop_reason == NULL || strcmp(run->stop_reason, "timeout") != 0)
        run->stop_reason = reason;
    if (run->kill_at == 0) {
        signal_run(run, SIGTERM);
        run->kill_at = now + run->job->kill_grace_ms * INT64_C(1000000);
    }
    if (kill_by > 0 && kill_by < run->kill_at)
        run->kill_at = kill_by;
    if (run->kill_at <= now) {
        signal_run(run, SIGKILL);
        run->kill_at = 0;
    }
}

static void add_pending(struct runner *r, struct jobstate *js, int64_t tick, int attempt,
                        int64_t at_ns, bool wait_idle)
{
    struct pending *p = calloc(1, sizeof *p);
    if (p == NULL)
        return;
    *p = (struct pending){
        .js = js, .tick = tick, .attempt = attempt, .at_ns = at_ns, .wait_idle = wait_idle};
    struct pending **tail = &r->pending;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = p;
}

static int open_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) != 0)
        return errno;
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    return 0;
}

/* Logs a start that failed before any process ran, as a failed run. */
static void fail_start(struct runner *r, struct jobstate *js, int64_t tick, int attempt,
                       const char *id, const char *why, int code)
{
    char when[32];
    log_rfc3339(tick, when, sizeof when);
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", js->job->name);
    cJSON_AddStringToObject(f, "run_id", id);
    cJSON_AddStringToObject(f, "scheduled_at", when);
    cJSON_AddNumberToObject(f, "attempt", attempt);
    cJSON_AddNumberToObject(f, "duration_ms", 0);
    cJSON_AddNumberToObject(f, "exit_code", code);
    cJSON_AddStringToObject(f, "outcome", "failed");
    cJSON_AddStringToObject(f, "error", why);
    log_emit(r->h.log, LOG_ERROR, "job_end", f);
    char result[32];
    snprintf(result, sizeof result, "exit %d", code);
    record_history(r, js->job->name, id, tick, r->term, 0, 0, "failed", result, attempt);
}

static void start_run(struct runner *r, struct jobstate *js, int64_t tick, int attempt)
{
    const struct job *job = js->job;
    char path[4096], sched[32], idvar[96], jobvar[200], schedvar[64], fencevar[48], nodevar[200];
    int outp[2] = {-1, -1}, errp[2] = {-1, -1};
    char **env = NULL;
    struct run *run = NULL;
    char id[64];

    r->seq++;
    snprintf(id, sizeof id, "%" PRId64 "-%" PRIu64 "-%d-%" PRIu64, tick, r->term, attempt, r->seq);
    char *shell_argv[4] = {"/bin/sh", "-c", job->shell, NULL};
    char *const *argv = job->argv != NULL ? job->argv : shell_argv;
    int perr = proc_resolve(argv[0], path, sizeof path);
    if (perr != 0) {
        char why[4200];
        snprintf(why, sizeof why, "%s: %s", argv[0],
                 perr == ENOENT ? "command not found" : strerror(perr));
        fail_start(r, js, tick, attempt, id, why, perr == ENOENT ? 127 : 126);
        return;
    }
    struct proc_spec spec = {.path = path, .argv = argv, .workdir = job->workdir, .stdin_fd = -1};
    if (job->user != NULL) {
        struct passwd *pw = getpwnam(job->user);
        if (pw == NULL) {
            fail_start(r, js, tick, attempt, id, "unknown user", 126);
            return;
        }
        spec.set_ids = true;
        spec.uid = pw->pw_uid;
        spec.gid = pw->pw_gid;
        spec.user = job->user;
    }

    log_rfc3339(tick, sched, sizeof sched);
    snprintf(jobvar, sizeof jobvar, "BATON_JOB=%s", job->name);
    snprintf(idvar, sizeof idvar, "BATON_RUN_ID=%s", id);
    snprintf(schedvar, sizeof schedvar, "BATON_SCHEDULED_AT=%s", sched);
    snprintf(fencevar, sizeof fencevar, "BATON_FENCE=%" PRIu64, r->term);
    snprintf(nodevar, sizeof nodevar, "BATON_NODE=%s", r->h.node);
    size_t nenv = 0;
    while (job->env != NULL && job->env[nenv] != NULL)
        nenv++;
    char **extra = calloc(nenv + 5, sizeof *extra);
    if (extra == NULL)
        return;
    for (size_t i = 0; i < nenv; i++)
        extra[i] = job->env[i];
    extra[nenv] = jobvar;
    extra[nenv + 1] = idvar;
    extra[nenv + 2] = schedvar;
    extra[nenv + 3] = fencevar;
    extra[nenv + 4] = nodevar;
    env = proc_env_build(NULL, extra, nenv + 5);
    free(extra);
    if (env == NULL || (run = calloc(1, sizeof *run)) == NULL || open_pipe(outp) != 0 ||
        open_pipe(errp) != 0) {
        fail_start(r, js, tick, attempt, id, "out of resources (memory or descriptors)", 126);
        goto fail;
    }
    spec.envp = env;
    spec.stdout_fd = outp[1];
    spec.stderr_fd = errp[1];
    int64_t wall = wall_ms();
    int64_t lateness = wall - tick * 1000;
    int err = proc_spawn(&spec, &run->pgid);
    close(outp[1]);
    close(errp[1]);
    outp[1] = errp[1] = -1;
    if (err != 0) {
        fail_start(r, js, tick, attempt, id, strerror(err), 126);
        goto fail;
    }
    run->r = r;
    run->js = js;
    run->job = job;
    run->set = js->set;
    js->set->refs++;
    snprintf(run->id, sizeof run->id, "%s", id);
    run->tick = tick;
    run->attempt = attempt;
    run->term = r->term;
    run->started_ns = mono_ns();
    if (job->timeout_ms > 0)
        run->timeout_at = run->started_ns + job->timeout_ms * INT64_C(1000000);
    run->out = (struct stream){.w = {.fd = outp[0], .cb = on_output}, .run = run, .name = "stdout"};
    run->err = (struct stream){.w = {.fd = errp[0], .cb = on_output}, .run = run, .name = "stderr"};
    run->out.w.ctx = &run->out;
    run->err.w.ctx = &run->err;
    loop_add(r->h.loop, &run->out.w);
    loop_add(r->h.loop, &run->err.w);
    run->next = r->runs;
    r->runs = run;
    js->running++;
    proc_env_free(env);

    cJSON *f = log_fields();
    add_tick_fields(f, run);
    cJSON_AddNumberToObject(f, "lateness_ms", (double)lateness);
    cJSON_AddNumberToObject(f, "term", (double)r->term);
    cJSON_AddNumberToObject(f, "pid", (double)run->pgid);
    log_emit(r->h.log, LOG_INFO, "job_start", f);
    return;
fail:
    for (int i = 0; i < 2; i++) {
        if (outp[i] >= 0)
            close(outp[i]);
        if (errp[i] >= 0)
            close(errp[i]);
    }
    free(run);
    proc_env_free(env);
}

static int64_t retry_delay_ms(const struct job *job, int attempt)
{
    int64_t d = job->retry_backoff_ms;
    for (int i = 1; i < attempt && d < INT64_C(3600000); i++)
        d *= 2;
    return d > INT64_C(3600000) ? INT64_C(3600000) : d;
}

static void finish_run(struct runner *r, struct run *run)
{
    int64_t duration = (mono_ns() - run->started_ns) / 1000000;
    const char *outcome;
    char result[32];
    int st = run->status;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && run->stop_reason == NULL)
        outcome = "ok";
    else if (run->stop_reason != NULL && strcmp(run->stop_reason, "timeout") == 0)
        outcome = "timeout";
    else if (run->stop_reason != NULL)
        outcome = "killed";
    else
        outcome = "failed";
    if (WIFEXITED(st))
        snprintf(result, sizeof result, "exit %d", WEXITSTATUS(st));
    else
        snprintf(result, sizeof result, "signal %s",
                 sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");

    cJSON *f = log_fields();
    add_tick_fields(f, run);
    cJSON_AddNumberToObject(f, "duration_ms", (double)duration);
    if (WIFEXITED(st))
        cJSON_AddNumberToObject(f, "exit_code", WEXITSTATUS(st));
    else
        cJSON_AddStringToObject(f, "signal",
                                sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
    cJSON_AddStringToObject(f, "outcome", outcome);
    if (run->stop_reason != NULL)
        cJSON_AddStringToObject(f, "stopped_because", run->stop_reason);
    log_emit(r->h.log, strcmp(outcome, "ok") == 0 ? LOG_INFO : LOG_WARN, "job_end", f);
    int64_t started_ms = wall_ms() - duration;
    record_history(r, run->job->name, run->id, run->tick, run->term, started_ms, duration, outcome,
                   result, run->attempt);

    struct jobstate *js = run->js;
    bool retry = (strcmp(outcome, "failed") == 0 || strcmp(outcome, "timeout") == 0) &&
                 js != NULL && r->leading && run->attempt <= js->job->retries &&
                 js->job == run->job;
    if (retry) {
        int64_t delay = retry_delay_ms(run->job, run->attempt);
        cJSON *g = log_fields();
        add_tick_fields(g, run);
        cJSON_AddNumberToObject(g, "next_attempt", run->attempt + 1);
        cJSON_AddNumberToObject(g, "retry_in_ms", (double)delay);
        log_emit(r->h.log, LOG_INFO, "job_retry", g);
        add_pending(r, js, run->tick, run->attempt + 1, mono_ns() + delay * INT64_C(1000000),
                    false);
    }
    if (js != NULL)
        js->running--;
    for (struct run **p = &r->runs; *p != NULL; p = &(*p)->next)
        if (*p == run) {
            *p = run->next;
            break;
        }
    set_unref(r, run->set);
    free(run);
}

void runner_on_sigchld(struct runner *r)
{
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0)
            break;
        for (struct run *run = r->runs; run != NULL; run = run->next)
            if (run->pgid == pid) {
                run->exited = true;
                run->status = st;
                /* What the group left behind goes with it. */
                proc_signal_group(run->pgid, SIGKILL);
                if (read_stream(&run->out))
                    flush_lines(&run->out, false);
                if (read_stream(&run->err))
                    flush_lines(&run->err, false);
                close_stream(&run->out);
                close_stream(&run->err);
                finish_run(r, run);
                break;
            }
    }
}

/* ---- claims ---- */

/* Returns 1 claimed, 0 already claimed, -1 not the leader, -2 failure. */
static int claim(struct runner *r, const struct job *job, int64_t tick)
{
    const char *token = baton_election_token(r->h.election);
    int64_t deadline = baton_election_deadline_ns(r->h.election);
    if (token == NULL || mono_ns() >= deadline - r->h.guard_ns)
        return -1; /* the call could end past the point where we must stop */
    char *last = group_key(r->h.group, "last:%s", job->name);
    char tickbuf[24];
    snprintf(tickbuf, sizeof tickbuf, "%" PRId64, tick);
    const char *keys[2] = {baton_election_key(r->h.election), last};
    const char *args[2] = {token, tickbuf};
    struct baton_reply *rep = NULL;
    int rc = last != NULL ? baton_client_eval(r->h.client, claim_src, 2, keys, 2, args, &rep)
                          : BATON_ENOMEM;
    int res = -2;
    if (rc == BATON_OK && rep->type == BATON_REPLY_INTEGER)
        res = (int)rep->integer;
    baton_reply_free(rep);
    free(last);
    /* The claim's reply may come after our deadline (a stall): then the
     * tick is not ours to run. */
    if (res == 1 && mono_ns() >= baton_election_deadline_ns(r->h.election) - r->h.guard_ns)
        res = -1;
    if (res == -2 || res == -1) {
        char when[32];
        log_rfc3339(tick, when, sizeof when);
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "job", job->name);
        cJSON_AddStringToObject(f, "scheduled_at", when);
        if (res == -2)
            cJSON_AddStringToObject(f, "error", baton_client_errstr(r->h.client));
        cJSON_AddStringToObject(f, "then", "not run");
        log_emit(r->h.log, LOG_WARN, res == -2 ? "claim_failed" : "claim_refused", f);
    }
    return res;
}

/* A due tick: claim it, then start, skip or replace as the job says.
 * Returns the claim's result (see claim()). */
static int fire(struct runner *r, struct jobstate *js, int64_t tick)
{
    const struct job *job = js->job;
    int c = claim(r, job, tick);
    if (c != 1)
        return c;
    if (js->running > 0 && job->concurrency == JOB_FORBID) {
        char when[32];
        log_rfc3339(tick, when, sizeof when);
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "job", job->name);
        cJSON_AddStringToObject(f, "scheduled_at", when);
        cJSON_AddStringToObject(f, "reason",
                                "the previous run is still running (concurrency: forbid)");
        log_emit(r->h.log, LOG_INFO, "job_skipped", f);
        char id[64];
        snprintf(id, sizeof id, "%" PRId64 "-%" PRIu64 "-skip", tick, r->term);
        record_history(r, job->name, id, tick, r->term, 0, 0, "skipped", "", 0);
        return c;
    }
    if (js->running > 0 && job->concurrency == JOB_REPLACE) {
        for (struct run *run = r->runs; run != NULL; run = run->next)
            if (run->js == js)
                stop_run(run, "replaced", 0);
        add_pending(r, js, tick, 1, 0, true);
        return c;
    }
    start_run(r, js, tick, 1);
    return c;
}

/* Whether a tick whose claim failed is still worth claiming now: within
 * the catch-up window, or (catchup: last or 0) while no later tick is due. */
static bool still_wanted(const struct job *job, int64_t tick, int64_t after, int64_t now_s)
{
    if (job->catchup_ms > 0)
        return (now_s - tick) * 1000 <= job->catchup_ms;
    return after == 0 || after > now_s;
}

/* Reads the jobs' last claimed ticks and runs what a failover missed. */
static void catch_up(struct runner *r, struct jobstate *js, int64_t now_s)
{
    const struct job *job = js->job;
    js->next_tick = next_tick_after(job, now_s);
    if (!job->enabled || job->catchup_ms == 0)
        return;
    char *key = group_key(r->h.group, "last:%s", job->name);
    struct baton_reply *rep = NULL;
    const char *argv[2] = {"GET", key};
    int rc = key != NULL ? baton_client_command(r->h.client, 2, argv, NULL, &rep) : BATON_ENOMEM;
    free(key);
    if (rc != BATON_OK || rep->type != BATON_REPLY_STRING) {
        baton_reply_free(rep); /* never claimed: a new job starts at its next tick */
        return;
    }
    int64_t last = strtoll(rep->str, NULL, 10);
    baton_reply_free(rep);

    int64_t missed[CATCHUP_MAX];
    size_t n = 0, skipped = 0;
    for (int64_t t = next_tick_after(job, last); t != 0 && t <= now_s;
         t = next_tick_after(job, t)) {
        if (job->catchup_ms > 0 && (now_s - t) * 1000 > job->catchup_ms) {
            skipped++;
            continue; /* older than the window */
        }
        if (job->catchup_ms == JOB_CATCHUP_LAST)
            n = 0; /* only the most recent */
        if (n == CATCHUP_MAX) {
            memmove(missed, missed + 1, (CATCHUP_MAX - 1) * sizeof missed[0]);
            n--;
            skipped++;
        }
        missed[n++] = t;
        if (skipped > 10 * CATCHUP_MAX)
            break;
    }
    if (n == 0)
        return;
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", job->name);
    cJSON_AddNumberToObject(f, "missed_ticks", (double)n);
    if (skipped > 0)
        cJSON_AddNumberToObject(f, "outside_window", (double)skipped);
    log_emit(r->h.log, LOG_INFO, "catch_up", f);
    for (size_t i = 0; i < n && r->leading; i++)
        if (fire(r, js, missed[i]) == -2) { /* retried in order by the tick loop */
            js->next_tick = missed[i];
            js->claim_retry_at = mono_ns() + CLAIM_RETRY_MS * INT64_C(1000000);
            break;
        }
}

void runner_lead(struct runner *r, uint64_t term)
{
    runner_flush_history(r);
    r->leading = true;
    r->term = term;
    int64_t now_s = wall_ms() / 1000;
    for (struct jobstate *js = r->states; js != NULL; js = js->next)
        catch_up(r, js, now_s);
}

void runner_unlead(struct runner *r)
{
    r->leading = false;
    drop_pending_of(r, NULL);
    for (struct jobstate *js = r->states; js != NULL; js = js->next) {
        js->next_tick = 0;
        js->claim_retry_at = 0;
    }
}

size_t runner_running(const struct runner *r)
{
    size_t n = 0;
    for (const struct run *run = r->runs; run != NULL; run = run->next)
        n++;
    return n;
}

void runner_terminate(struct runner *r, int64_t kill_by_ns)
{
    if (kill_by_ns != 0)
        r->defer_history = true; /* racing a deadline: no blocking call */
    for (struct run *run = r->runs; run != NULL; run = run->next)
        stop_run(run, "stopped", kill_by_ns);
}

int64_t runner_next_ns(const struct runner *r)
{
    int64_t next = 0;
#define CONSIDER(t)                                                                                \
    do {                                                                                           \
        int64_t t_ = (t);                                                                          \
        if (t_ > 0 && (next == 0 || t_ < next))                                                    \
            next = t_;                                                                             \
    } while (0)
    for (const struct run *run = r->runs; run != NULL; run = run->next) {
        if (run->kill_at == 0)
            CONSIDER(run->timeout_at);
        CONSIDER(run->kill_at);
    }
    for (const struct pending *p = r->pending; p != NULL; p = p->next)
        if (!p->wait_idle || p->js->running == 0)
            CONSIDER(p->at_ns > 0 ? p->at_ns : 1);
    if (r->leading)
        for (const struct jobstate *js = r->states; js != NULL; js = js->next)
            if (js->next_tick != 0) {
                int64_t at = mono_at_wall(js->next_tick);
                CONSIDER(js->claim_retry_at > at ? js->claim_retry_at : at);
            }
#undef CONSIDER
    return next;
}

void runner_on_timer(struct runner *r)
{
    int64_t now = mono_ns();
    for (struct run *run = r->runs; run != NULL; run = run->next) {
        if (run->kill_at != 0 && now >= run->kill_at) {
            signal_run(run, SIGKILL);
            run->kill_at = 0;
        } else if (run->timeout_at != 0 && now >= run->timeout_at && run->kill_at == 0) {
            cJSON *f = log_fields();
            add_tick_fields(f, run);
            cJSON_AddNumberToObject(f, "timeout_ms", (double)run->job->timeout_ms);
            log_emit(r->h.log, LOG_WARN, "job_timeout", f);
            run->timeout_at = 0;
            run->stop_reason = "timeout";
            stop_run(run, "timeout", 0);
        }
    }
    if (!r->leading)
        return;
    /* Starts that were waiting (retries, replacements). */
    for (struct pending **p = &r->pending; *p != NULL && r->leading;) {
        struct pending *pd = *p;
        if ((pd->wait_idle && pd->js->running > 0) || pd->at_ns > mono_ns()) {
            p = &pd->next;
            continue;
        }
        *p = pd->next;
        start_run(r, pd->js, pd->tick, pd->attempt);
        free(pd);
    }
    /* Ticks, in order per job. A tick whose claim failed (Redis briefly
     * unreachable) stays next and is retried: a later tick claimed first
     * would make it unclaimable. */
    int64_t now_s = wall_ms() / 1000;
    for (struct jobstate *js = r->states; js != NULL && r->leading; js = js->next)
        while (js->next_tick != 0 && js->next_tick <= now_s && r->leading) {
            if (js->claim_retry_at != 0 && mono_ns() < js->claim_retry_at)
                break;
            int64_t tick = js->next_tick;
            int64_t after = next_tick_after(js->job, tick);
            if (js->claim_retry_at != 0 && !still_wanted(js->job, tick, after, now_s)) {
                char when[32];
                log_rfc3339(tick, when, sizeof when);
                cJSON *f = log_fields();
                cJSON_AddStringToObject(f, "job", js->job->name);
                cJSON_AddStringToObject(f, "scheduled_at", when);
                cJSON_AddStringToObject(f, "reason",
                                        "could not be claimed within its catch-up window");
                log_emit(r->h.log, LOG_WARN, "tick_dropped", f);
                js->claim_retry_at = 0;
                js->next_tick = after;
                continue;
            }
            if (fire(r, js, tick) == -2) {
                js->claim_retry_at = mono_ns() + CLAIM_RETRY_MS * INT64_C(1000000);
                break;
            }
            js->claim_retry_at = 0;
            js->next_tick = after;
        }
}

void runner_free(struct runner *r)
{
    if (r == NULL)
        return;
    for (struct run *run = r->runs; run != NULL;) {
        struct run *next = run->next;
        signal_run(run, SIGKILL);
        close_stream(&run->out);
        close_stream(&run->err);
        set_unref(r, run->set);
        free(run);
        run = next;
    }
    drop_pending_of(r, NULL);
    while (r->states != NULL) {
        struct jobstate *js = r->states;
        r->states = js->next;
        set_unref(r, js->set);
        free(js);
    }
    while (r->sets != NULL) {
        struct jobset *s = r->sets;
        r->sets = s->next;
        jobs_free(s->jobs);
        free(s);
    }
    while (r->hist != NULL) {
        struct histrec *h = r->hist;
        r->hist = h->next;
        histrec_free(h);
    }
    free(r->node);
    free(r->group);
    free(r);
}
