/* check_runner.c -- the runner (src/supervisor/runner/) driven through its
 * host interface (runner.h), without Redis, processes or real time: the
 * link replaces (ld --wrap, tests/CMakeLists.txt) what it calls below it
 *   - the group's data in Redis (claim.h, trigger.h, pause.h, history.h's
 *     write, the election's token) by a model kept here: each job's mark
 *     and live runs, the requests, the pauses, the records written;
 *   - the processes (proc_spawn, proc_signal_group, waitpid) by fake ones
 *     that end after a set time, or when signalled;
 *   - the clocks and timers (loop.h) by a clock this file moves (advance()),
 *     firing the runner's timer as the loop would.
 * Everything else is the real code: the run state machine (run.c), the
 * schedule's rules, the claim step table, the life of a tick
 * (ticklife.h), the records. The runner tells this file each move of a
 * tick's life (runner_host.on_tick): a case asserts the life its scenario
 * gives a tick, and no case may make a move the table refuses.
 *
 * Each case is named after the rule it checks. */
#include <check.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "assign.h"
#include "claim.h"
#include "history.h"
#include "jitter.h"
#include "jobs.h"
#include "log.h"
#include "loop.h"
#include "members.h"
#include "pause.h"
#include "proc.h"
#include "run.h"
#include "rtime.h"
#include "runlimits.h"
#include "runner.h"
#include "testutil.h"
#include "ticklife.h"
#include "trigger.h"

#define MSEC MS
#define T0   INT64_C(1767225600) /* 2026-01-01T00:00:00Z */

/* ---- the clock and the runner's timer ---- */

static int64_t mono = 1000 * 1000 * MSEC, fake_wall_ns;
static int64_t armed, armed_wall; /* the runner's timer (0: none), its wall go */

int64_t __wrap_loop_now(void);
int64_t __wrap_loop_wall_ns(void);
void __wrap_loop_arm(struct loop *l, int id, int64_t at);
void __wrap_loop_disarm(struct loop *l, int id);
int __wrap_loop_arm_wall(struct loop *l, int id, int64_t at);
void __wrap_loop_disarm_wall(struct loop *l);

int64_t __wrap_loop_now(void)
{
    return mono;
}

int64_t __wrap_loop_wall_ns(void)
{
    return fake_wall_ns;
}

void __wrap_loop_arm(struct loop *l, int id, int64_t at)
{
    (void)l;
    (void)id;
    armed = at;
}

void __wrap_loop_disarm(struct loop *l, int id)
{
    (void)l;
    (void)id;
    armed = 0;
}

int __wrap_loop_arm_wall(struct loop *l, int id, int64_t at)
{
    (void)l;
    (void)id;
    armed_wall = at;
    return 0;
}

void __wrap_loop_disarm_wall(struct loop *l)
{
    (void)l;
    armed_wall = 0;
}

/* ---- processes ---- */

#define NPROC 256
struct fproc {
    pid_t pgid;
    char job[JOB_NAME_MAX + 1];
    char trigger[16];
    int64_t tick; /* BATON_SCHEDULED_AT */
    int go_fd;    /* a prepared one's go pipe (read end), -1 once it went */
    bool alive, reaped;
    bool ran;        /* its command ran (a prepared one: it was told to go) */
    int64_t end;     /* CLOCK_MONOTONIC, once it runs */
    int64_t went_ms; /* the wall clock (ms) when its command ran */
    char jitter[24]; /* BATON_JITTER_MS */
    int status;
};
static struct fproc procs[NPROC];
static int nprocs;
static int64_t duration_ms = 100; /* how long a run's command takes */
static int exit_code;             /* and how it ends */

int __wrap_proc_spawn(const struct proc_spec *spec, pid_t *pid);
int __wrap_proc_signal_group(pid_t pgid, int sig);
pid_t __wrap_waitpid(pid_t pid, int *status, int options);
pid_t __real_waitpid(pid_t pid, int *status, int options);

static const char *env_of(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (; *envp != NULL; envp++)
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return *envp + n + 1;
    return "";
}

int __wrap_proc_spawn(const struct proc_spec *spec, pid_t *pid)
{
    ck_assert_int_lt(nprocs, NPROC);
    struct fproc *p = &procs[nprocs++];
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    memset(p, 0, sizeof *p);
    p->pgid = 7000000 + nprocs; /* never signalled for real: proc_signal_group is ours */
    snprintf(p->job, sizeof p->job, "%s", env_of(spec->envp, "BATON_JOB"));
    snprintf(p->trigger, sizeof p->trigger, "%s", env_of(spec->envp, "BATON_TRIGGER"));
    snprintf(p->jitter, sizeof p->jitter, "%s", env_of(spec->envp, "BATON_JITTER_MS"));
    if (strptime(env_of(spec->envp, "BATON_SCHEDULED_AT"), "%Y-%m-%dT%H:%M:%SZ", &tm) != NULL)
        p->tick = (int64_t)timegm(&tm);
    p->alive = true;
    p->status = exit_code << 8;
    p->go_fd = spec->prepared ? dup(spec->go_fd) : -1;
    if (p->go_fd < 0) {
        p->end = mono + duration_ms * MSEC;
        p->ran = true;
        p->went_ms = fake_wall_ns / MSEC;
    }
    *pid = p->pgid;
    return 0;
}

int __wrap_proc_signal_group(pid_t pgid, int sig)
{
    for (int i = 0; i < nprocs; i++)
        if (procs[i].pgid == pgid && procs[i].alive && (sig == SIGTERM || sig == SIGKILL)) {
            procs[i].end = mono;
            procs[i].status = sig; /* killed by it */
        }
    return 0;
}

/* The runner's reaping (any child, not waiting) sees the fake processes;
 * any other waitpid (Check's own, for its forked cases) is the real one. */
pid_t __wrap_waitpid(pid_t pid, int *status, int options)
{
    if (pid != -1 || !(options & WNOHANG))
        return __real_waitpid(pid, status, options);
    for (int i = 0; i < nprocs; i++)
        if (!procs[i].alive && !procs[i].reaped) {
            procs[i].reaped = true;
            *status = procs[i].status;
            return procs[i].pgid;
        }
    return 0;
}

/* The processes' side of now: a go byte starts a prepared one's time; one
 * whose time is up ends. Returns true when one ended. */
static bool procs_now(void)
{
    bool ended = false;
    for (int i = 0; i < nprocs; i++) {
        struct fproc *p = &procs[i];
        if (p->go_fd >= 0) {
            struct pollfd pf = {.fd = p->go_fd, .events = POLLIN};
            if (poll(&pf, 1, 0) == 1) {
                close(p->go_fd);
                p->go_fd = -1;
                if (pf.revents & POLLIN) {
                    p->end = mono + duration_ms * MSEC;
                    p->ran = true;
                    p->went_ms = fake_wall_ns / MSEC;
                } else { /* never told to go */
                    p->end = mono;
                    p->status = SIGKILL;
                }
            }
        }
        if (p->alive && p->end != 0 && p->end <= mono) {
            p->alive = false;
            ended = true;
        }
    }
    return ended;
}

/* ---- the group's data in Redis ---- */

#define NJOBS 8
struct fjob {
    char name[JOB_NAME_MAX + 1];
    bool has_mark;
    int64_t mark;
    /* members: node/run_id, or node/run_id/wait (struct assign's parts) */
    char busy[8][sizeof((struct assign *)0)->node + sizeof((struct assign *)0)->run_id + 8];
    int nbusy;
    char skipped_by[RUN_ID_MAX + 160]; /* the member of the last claim as skipped */
    int claims;                        /* claim_tick() calls */
};
static struct fjob fjobs[NJOBS];
static bool leading_token = true, server_changed;
static bool refuse_claims; /* the token looks held, but every claim answers not the leader */
static int fail_claims;    /* the next claims fail (Redis unreachable) ... */
static bool fail_applies;  /* ... after applying them (their answer lost) */
static bool fail_writes;   /* history records and releases fail (Redis unreachable) */
static int refreshes_handover;

struct record {
    char job[JOB_NAME_MAX + 1], outcome[24], trigger[16], reason[200], node[160];
    int64_t at, until, jitter_ms;
};
static struct record records[256];
static int nrecords;

static struct fjob *fjob(const char *name)
{
    for (int i = 0; i < NJOBS; i++)
        if (strcmp(fjobs[i].name, name) == 0)
            return &fjobs[i];
    for (int i = 0; i < NJOBS; i++)
        if (fjobs[i].name[0] == '\0') {
            snprintf(fjobs[i].name, sizeof fjobs[i].name, "%s", name);
            return &fjobs[i];
        }
    ck_abort_msg("too many jobs");
    abort();
}

static bool registered(const struct fjob *j, const char *member)
{
    for (int i = 0; i < j->nbusy; i++)
        if (strcmp(j->busy[i], member) == 0)
            return true;
    return false;
}

static void enroll(struct fjob *j, const char *member)
{
    if (!registered(j, member) && j->nbusy < 8)
        snprintf(j->busy[j->nbusy++], sizeof j->busy[0], "%s", member);
}

static void unenroll(struct fjob *j, const char *member)
{
    for (int i = 0; i < j->nbusy; i++)
        if (strcmp(j->busy[i], member) == 0) {
            memmove(j->busy[i], j->busy[i + 1], (size_t)(j->nbusy - i - 1) * sizeof j->busy[0]);
            j->nbusy--;
            return;
        }
}

/* Fills out->busy with j's live runs other than member. */
static void busy_of(struct fjob *j, const char *member, struct claim_reply *out)
{
    for (int i = 0; i < j->nbusy && out->nbusy < 32; i++)
        if (strcmp(j->busy[i], member) != 0)
            out->busy[out->nbusy++] = j->busy[i];
}

enum claim_result __wrap_claim_tick(struct baton_client *c, const char *group, const char *job,
                                    const char *leader_key, const char *token, int64_t tick,
                                    enum claim_mode mode, const char *member,
                                    const struct claim_limits *lim, struct claim_reply *out);

/* The dispatch's model (below): the claim of a job run on members writes
 * its marker. */
struct fassign;
static int64_t server_ms(void);
static struct fassign *fassign_put(const char *job, int64_t tick, enum assign_state st,
                                   const char *node, int attempt, int64_t at_ms, const char *run_id,
                                   int moves, const char *died);

/* The live runs of the jobs of a pool (the script counts them in Redis). */
static int pool_live(const struct claim_limits *lim)
{
    int n = 0;
    for (size_t i = 0; i < lim->npool; i++)
        n += fjob(lim->pool_jobs[i])->nbusy;
    return n;
}

enum claim_result __wrap_claim_tick(struct baton_client *c, const char *group, const char *job,
                                    const char *leader_key, const char *token, int64_t tick,
                                    enum claim_mode mode, const char *member,
                                    const struct claim_limits *lim, struct claim_reply *out)
{
    (void)c, (void)group, (void)leader_key;
    memset(out, 0, sizeof *out);
    out->majority = 1;
    struct fjob *j = fjob(job);
    j->claims++;
    if (token == NULL || !leading_token || refuse_claims)
        return CLAIM_NOT_LEADER;
    if (fail_claims > 0 && !fail_applies) {
        fail_claims--;
        snprintf(out->why, sizeof out->why, "Redis down (test)");
        return CLAIM_ERROR;
    }
    /* A claim that registers a run within the limits (runlimits.h) */
    bool registers = mode != CLAIM_SKIP && !(j->has_mark && tick <= j->mark);
    if (registers && lim != NULL && lim->max_running > 0 && j->nbusy >= lim->max_running)
        return CLAIM_FULL;
    if (registers && lim != NULL && lim->pool_limit > 0 && pool_live(lim) >= lim->pool_limit) {
        out->pool_full = true;
        return CLAIM_FULL;
    }
    if (mode == CLAIM_REGISTER) {
        enroll(j, member);
        return CLAIM_OK;
    }
    enum claim_result res;
    if (j->has_mark && tick <= j->mark) {
        res = registered(j, member)                ? CLAIM_OURS
              : strcmp(j->skipped_by, member) == 0 ? CLAIM_OURS_SKIPPED
                                                   : CLAIM_TAKEN;
    } else {
        busy_of(j, member, out);
        if (out->nbusy > 0 && mode == CLAIM_RUN_OR_WAIT)
            return CLAIM_BUSY;
        j->has_mark = true;
        j->mark = tick;
        if (mode == CLAIM_SKIP || (out->nbusy > 0 && mode == CLAIM_RUN_OR_SKIP)) {
            snprintf(j->skipped_by, sizeof j->skipped_by, "%s", member);
            res = CLAIM_SKIPPED;
        } else {
            enroll(j, member);
            res = CLAIM_OK;
            if (lim != NULL && lim->dispatch) { /* the marker, in the same script */
                char node[160];
                const char *slash = strrchr(member, '/');
                snprintf(node, sizeof node, "%.*s", (int)(slash - member), member);
                fassign_put(job, tick, ASSIGN_CLAIMED, node, 1, server_ms(), slash + 1, 0, "");
            }
        }
    }
    if (fail_claims > 0) { /* applied, but its answer is lost */
        fail_claims--;
        snprintf(out->why, sizeof out->why, "read: timed out (test)");
        return CLAIM_ERROR;
    }
    return res;
}

enum claim_result __wrap_claim_lookup(struct baton_client *c, const char *group, const char *job,
                                      int64_t tick, const char *member);
enum claim_result __wrap_claim_lookup(struct baton_client *c, const char *group, const char *job,
                                      int64_t tick, const char *member)
{
    (void)c, (void)group;
    struct fjob *j = fjob(job);
    if (registered(j, member)) /* as the script: its registration first, whatever the mark */
        return CLAIM_OURS;
    if (!j->has_mark || j->mark != tick)
        return CLAIM_TAKEN;
    return strcmp(j->skipped_by, member) == 0 ? CLAIM_OURS_SKIPPED : CLAIM_TAKEN;
}

int __wrap_claim_release(struct baton_client *c, const char *group, const char *job,
                         const char *member);
int __wrap_claim_release(struct baton_client *c, const char *group, const char *job,
                         const char *member)
{
    (void)c, (void)group;
    if (fail_writes)
        return BATON_EIO;
    unenroll(fjob(job), member);
    return 0;
}

int __wrap_claim_refresh(struct baton_client *c, const char *group, const char *leader_key,
                         const char *token, enum claim_refresh_mode mode, int64_t ttl_ms,
                         const struct claim_entry *runs, size_t n, bool *lost);
int __wrap_claim_refresh(struct baton_client *c, const char *group, const char *leader_key,
                         const char *token, enum claim_refresh_mode mode, int64_t ttl_ms,
                         const struct claim_entry *runs, size_t n, bool *lost)
{
    (void)c, (void)group, (void)leader_key, (void)token, (void)ttl_ms, (void)runs;
    if (mode == REFRESH_HANDOVER)
        refreshes_handover += (int)n;
    memset(lost, 0, n * sizeof *lost);
    return 0;
}

int __wrap_claim_start_marks(struct baton_client *c, const char *group, const char *leader_key,
                             const char *token, const char *const *jobs, const int64_t *marks,
                             size_t n);
int __wrap_claim_start_marks(struct baton_client *c, const char *group, const char *leader_key,
                             const char *token, const char *const *jobs, const int64_t *marks,
                             size_t n)
{
    (void)c, (void)group, (void)leader_key, (void)token;
    for (size_t i = 0; i < n; i++) {
        struct fjob *j = fjob(jobs[i]);
        if (!j->has_mark) {
            j->has_mark = true;
            j->mark = marks[i];
        }
    }
    return 0;
}

int __wrap_claim_read_marks(struct baton_client *c, const char *group, const char *const *jobs,
                            size_t n, int64_t now_s, bool *has, int64_t *v);
int __wrap_claim_read_marks(struct baton_client *c, const char *group, const char *const *jobs,
                            size_t n, int64_t now_s, bool *has, int64_t *v)
{
    (void)c, (void)group, (void)now_s;
    for (size_t i = 0; i < n; i++) {
        struct fjob *j = fjob(jobs[i]);
        has[i] = j->has_mark;
        v[i] = j->mark;
    }
    return 0;
}

int __wrap_claim_request_stop(struct baton_client *c, const char *group, const char *member);
int __wrap_claim_request_stop(struct baton_client *c, const char *group, const char *member)
{
    (void)c, (void)group, (void)member;
    return 0;
}

/* A record: the fields of the XADD history_command() made. */
int __wrap_history_write(struct baton_client *c, const struct history_command *cmd);
int __wrap_history_write(struct baton_client *c, const struct history_command *cmd)
{
    (void)c;
    if (fail_writes)
        return BATON_EIO;
    ck_assert_int_lt(nrecords, 256);
    struct record *r = &records[nrecords++];
    memset(r, 0, sizeof *r);
    const char *key = cmd->argv[1], *colon = strrchr(key, ':');
    snprintf(r->job, sizeof r->job, "%s", colon != NULL ? colon + 1 : key);
    for (int i = 0; i + 1 < cmd->argc; i++) {
        const char *k = cmd->argv[i], *v = cmd->argv[i + 1];
        struct tm tm;
        memset(&tm, 0, sizeof tm);
        if (strcmp(k, "outcome") == 0)
            snprintf(r->outcome, sizeof r->outcome, "%s", v);
        else if (strcmp(k, "trigger") == 0)
            snprintf(r->trigger, sizeof r->trigger, "%s", v);
        else if (strcmp(k, "reason") == 0)
            snprintf(r->reason, sizeof r->reason, "%s", v);
        else if (strcmp(k, "node") == 0)
            snprintf(r->node, sizeof r->node, "%s", v);
        else if (strcmp(k, "scheduled_at") == 0 && strptime(v, "%Y-%m-%dT%H:%M:%SZ", &tm))
            r->at = (int64_t)timegm(&tm);
        else if (strcmp(k, "until") == 0 && strptime(v, "%Y-%m-%dT%H:%M:%SZ", &tm))
            r->until = (int64_t)timegm(&tm);
        else if (strcmp(k, "jitter_ms") == 0)
            r->jitter_ms = strtoll(v, NULL, 10);
    }
    return 0;
}

/* The requests of baton trigger, and the pauses. */
#define NTRIG 16
static struct trigger ftrig[NTRIG];
static char ftrig_ids[NTRIG][TRIGGER_ID_MAX + 1], ftrig_jobs[NTRIG][JOB_NAME_MAX + 1];
static int ntrig;
static struct pause_entry fpause[4];
static int npause;

int __wrap_trigger_list(struct baton_client *c, const char *group, size_t max,
                        struct trigger_reply *out);
int __wrap_trigger_list(struct baton_client *c, const char *group, size_t max,
                        struct trigger_reply *out)
{
    (void)c, (void)group, (void)max;
    memset(out, 0, sizeof *out);
    out->v = calloc(NTRIG, sizeof *out->v);
    for (int i = 0; i < ntrig; i++)
        if (ftrig[i].state != TRIGGER_DONE)
            out->v[out->n++] = (struct trigger){.id = ftrig[i].id};
    return 0;
}

int __wrap_trigger_get(struct baton_client *c, const char *group, const char *id,
                       struct trigger_reply *out);
int __wrap_trigger_get(struct baton_client *c, const char *group, const char *id,
                       struct trigger_reply *out)
{
    (void)c, (void)group;
    memset(out, 0, sizeof *out);
    out->v = calloc(1, sizeof *out->v);
    for (int i = 0; i < ntrig; i++)
        if (strcmp(ftrig[i].id, id) == 0)
            out->v[out->n++] = ftrig[i];
    return 0;
}

enum claim_result __wrap_trigger_claim(struct baton_client *c, const char *group, const char *job,
                                       const char *leader_key, const char *token, const char *id,
                                       int attempt, enum claim_mode mode, const char *member,
                                       const char *node, uint64_t term, struct claim_reply *out);
enum claim_result __wrap_trigger_claim(struct baton_client *c, const char *group, const char *job,
                                       const char *leader_key, const char *token, const char *id,
                                       int attempt, enum claim_mode mode, const char *member,
                                       const char *node, uint64_t term, struct claim_reply *out)
{
    (void)c, (void)group, (void)leader_key, (void)token, (void)attempt, (void)node, (void)term;
    memset(out, 0, sizeof *out);
    out->majority = 1;
    struct fjob *j = fjob(job);
    j->claims++;
    for (int i = 0; i < ntrig; i++) {
        if (strcmp(ftrig[i].id, id) != 0)
            continue;
        if (ftrig[i].state != TRIGGER_PENDING)
            return CLAIM_TAKEN;
        busy_of(j, member, out);
        if (out->nbusy > 0 && mode == CLAIM_RUN_OR_WAIT)
            return CLAIM_BUSY;
        ftrig[i].state = TRIGGER_CLAIMED;
        enroll(j, member);
        return CLAIM_OK;
    }
    return CLAIM_TAKEN;
}

int __wrap_trigger_started(struct baton_client *c, const char *group, const char *id,
                           const char *run_id);
int __wrap_trigger_started(struct baton_client *c, const char *group, const char *id,
                           const char *run_id)
{
    (void)c, (void)group, (void)run_id;
    for (int i = 0; i < ntrig; i++)
        if (strcmp(ftrig[i].id, id) == 0)
            ftrig[i].state = TRIGGER_RUNNING;
    return 0;
}

int __wrap_trigger_finish(struct baton_client *c, const char *group, const char *job,
                          const char *member, const char *id, const struct history_rec *rec);
int __wrap_trigger_finish(struct baton_client *c, const char *group, const char *job,
                          const char *member, const char *id, const struct history_rec *rec)
{
    (void)c, (void)group, (void)rec;
    unenroll(fjob(job), member);
    for (int i = 0; i < ntrig; i++)
        if (strcmp(ftrig[i].id, id) == 0)
            ftrig[i].state = TRIGGER_DONE;
    return 0;
}

int __wrap_trigger_recover(struct baton_client *c, const char *group, const char *job,
                           const char *id, const char *run_id, const char *member,
                           int64_t lease_ttl_ms, bool *requeued, bool *lost);
int __wrap_trigger_recover(struct baton_client *c, const char *group, const char *job,
                           const char *id, const char *run_id, const char *member,
                           int64_t lease_ttl_ms, bool *requeued, bool *lost)
{
    (void)c, (void)group, (void)job, (void)id, (void)run_id, (void)member, (void)lease_ttl_ms;
    *requeued = *lost = false;
    return 0;
}

int __wrap_trigger_reject(struct baton_client *c, const char *group, const char *id,
                          const char *reason);
int __wrap_trigger_reject(struct baton_client *c, const char *group, const char *id,
                          const char *reason)
{
    (void)c, (void)group, (void)reason;
    for (int i = 0; i < ntrig; i++)
        if (strcmp(ftrig[i].id, id) == 0)
            ftrig[i].state = TRIGGER_DONE;
    return 0;
}

int __wrap_trigger_forget(struct baton_client *c, const char *group, const char *id);
int __wrap_trigger_forget(struct baton_client *c, const char *group, const char *id)
{
    (void)c, (void)group, (void)id;
    return 0;
}

int __wrap_pause_read(struct baton_client *c, const char *group, struct pause_list *out);
int __wrap_pause_read(struct baton_client *c, const char *group, struct pause_list *out)
{
    (void)c, (void)group;
    memset(out, 0, sizeof *out);
    out->v = calloc(4, sizeof *out->v);
    for (int i = 0; i < npause; i++)
        out->v[out->n++] = fpause[i];
    return 0;
}

int __wrap_pause_done(struct baton_client *c, const char *group, const char *job, const char *raw);
int __wrap_pause_done(struct baton_client *c, const char *group, const char *job, const char *raw)
{
    (void)c, (void)group, (void)raw;
    for (int i = 0; i < npause; i++)
        if (strcmp(fpause[i].job, job) == 0) {
            fpause[i] = fpause[--npause];
            return 0;
        }
    return 0;
}

/* ---- the dispatch's data in Redis (assign.h, members.h) ---- */

/* The members' heartbeats: node, capacity, labels (a JSON array). */
struct fmember {
    const char *node;
    int capacity;
    const char *labels;
    bool gone; /* its heartbeats stopped long ago */
};
static struct fmember fmembers[4] = {{"n", 0, "[]", false}};
static int nmembers = 1;

/* assign:J of every job: one entry a field. reg: its registration is
 * alive (a member that dies drops it). */
#define NASSIGN 64
struct fassign {
    bool used;
    char job[JOB_NAME_MAX + 1];
    struct assign a;
    bool reg;
};
static struct fassign fassigns[NASSIGN];
static int list_calls;      /* assign_list_all() calls */
static int held_in_backoff; /* retries held by assign_hold() before they were due */

static int64_t server_ms(void)
{
    return fake_wall_ns / MSEC;
}

static struct fassign *fassign_find(const char *job, const char *field)
{
    for (int i = 0; i < NASSIGN; i++)
        if (fassigns[i].used && strcmp(fassigns[i].job, job) == 0 &&
            strcmp(fassigns[i].a.field, field) == 0)
            return &fassigns[i];
    return NULL;
}

/* Puts job's assignment (state, node, attempt, at_ms, run_id; died: "" or
 * a node) into the model, as a script would write it. */
static struct fassign *fassign_put(const char *job, int64_t tick, enum assign_state st,
                                   const char *node, int attempt, int64_t at_ms, const char *run_id,
                                   int moves, const char *died)
{
    char field[32];
    snprintf(field, sizeof field, "%" PRId64, tick);
    struct fassign *f = fassign_find(job, field);
    for (int i = 0; f == NULL && i < NASSIGN; i++)
        if (!fassigns[i].used)
            f = &fassigns[i];
    ck_assert_ptr_nonnull(f);
    memset(f, 0, sizeof *f);
    f->used = true;
    f->reg = st != ASSIGN_RETRY;
    snprintf(f->job, sizeof f->job, "%s", job);
    struct assign *a = &f->a;
    snprintf(a->field, sizeof a->field, "%s", field);
    a->tick = tick;
    a->state = st;
    snprintf(a->node, sizeof a->node, "%s", node);
    a->attempt = attempt;
    a->at_ms = at_ms;
    snprintf(a->run_id, sizeof a->run_id, "%s", run_id);
    a->moves = moves;
    snprintf(a->died, sizeof a->died, "%s", died);
    ck_assert(assign_format(a));
    return f;
}

/* What assign.c's reofferable() says of f now. */
static bool freofferable(const struct fassign *f)
{
    switch (f->a.state) {
    case ASSIGN_CLAIMED: return true;
    case ASSIGN_OFFERED:
    case ASSIGN_RETRY: return f->a.at_ms <= server_ms();
    default: return !f->reg;
    }
}

int __wrap_members_read(struct baton_client *c, const char *group, struct member **out, size_t *n);
int __wrap_members_read(struct baton_client *c, const char *group, struct member **out, size_t *n)
{
    (void)c, (void)group;
    *out = calloc((size_t)nmembers + 1, sizeof **out);
    *n = (size_t)nmembers;
    for (int i = 0; i < nmembers; i++) {
        char info[256];
        snprintf(info, sizeof info,
                 "{\"state\":\"working\",\"poll_ms\":1000,\"capacity\":%d,"
                 "\"labels\":%s}",
                 fmembers[i].capacity, fmembers[i].labels);
        (*out)[i].node = strdup(fmembers[i].node);
        (*out)[i].info_json = strdup(info);
        (*out)[i].seen_ago_ms = fmembers[i].gone ? 3600000 : 100;
    }
    return 0;
}

int __wrap_assign_loads(struct baton_client *c, const char *group, const char *const *nodes,
                        size_t n, int64_t *in_use);
int __wrap_assign_loads(struct baton_client *c, const char *group, const char *const *nodes,
                        size_t n, int64_t *in_use)
{
    (void)c, (void)group;
    for (size_t i = 0; i < n; i++) {
        in_use[i] = 0;
        for (int k = 0; k < NASSIGN; k++) {
            const struct fassign *f = &fassigns[k];
            in_use[i] += f->used && strcmp(f->a.node, nodes[i]) == 0 &&
                         (f->a.state == ASSIGN_OFFERED || f->a.state == ASSIGN_ACCEPTED ||
                          f->a.state == ASSIGN_STARTED) &&
                         !freofferable(f);
        }
    }
    return 0;
}

int __wrap_assign_offer(struct baton_client *c, const char *group, const char *job,
                        const char *leader_key, const char *token, const char *from,
                        const char *expect, struct assign *a, int64_t offer_ms);
int __wrap_assign_offer(struct baton_client *c, const char *group, const char *job,
                        const char *leader_key, const char *token, const char *from,
                        const char *expect, struct assign *a, int64_t offer_ms)
{
    (void)c, (void)group, (void)leader_key;
    if (token == NULL || !leading_token)
        return BATON_ELOST;
    struct fassign *f = fassign_find(job, a->field);
    if (expect == NULL ? f != NULL
        : strcmp(expect, "claimed") == 0
            ? f == NULL || f->a.state != ASSIGN_CLAIMED || strcmp(f->a.run_id, a->run_id) != 0
            : f == NULL || strcmp(f->a.value, expect) != 0 || !freofferable(f))
        return 0;
    if (f != NULL || from != NULL) { /* the registration replaced, and a hold */
        char member[sizeof f->a.node + sizeof f->a.run_id + 8];
        if (f != NULL)
            snprintf(member, sizeof member, "%s/%s", f->a.node, f->a.run_id);
        unenroll(fjob(job), from != NULL ? from : member);
        if (f != NULL) {
            snprintf(member, sizeof member, "%s/%s/wait", f->a.node, f->a.run_id);
            unenroll(fjob(job), member);
        }
    }
    f = fassign_put(job, a->tick, ASSIGN_OFFERED, a->node, a->attempt, server_ms() + offer_ms,
                    a->run_id, a->moves, a->died);
    *a = f->a;
    return 1;
}

/* As the script: a marker or an offer held by its own registration, the
 * next attempt of a run lost or failed by "<node>/<run_id>/wait" (kept
 * in the model by the job: the offer or drop of the tick removes it). */
int __wrap_assign_hold(struct baton_client *c, const char *group, const char *leader_key,
                       const char *token, const struct assign *const *w, size_t n, int64_t ttl_ms);
int __wrap_assign_hold(struct baton_client *c, const char *group, const char *leader_key,
                       const char *token, const struct assign *const *w, size_t n, int64_t ttl_ms)
{
    (void)c, (void)group, (void)leader_key, (void)ttl_ms;
    if (token == NULL || !leading_token)
        return BATON_ELOST;
    for (size_t i = 0; i < n; i++) {
        struct fassign *f = fassign_find(w[i]->job, w[i]->field);
        char member[sizeof f->a.node + sizeof f->a.run_id + 8];
        if (f == NULL || strcmp(f->a.value, w[i]->value) != 0)
            continue;
        snprintf(member, sizeof member, "%s/%s%s", f->a.node, f->a.run_id,
                 f->a.state == ASSIGN_CLAIMED || f->a.state == ASSIGN_OFFERED ? "" : "/wait");
        enroll(fjob(w[i]->job), member);
        held_in_backoff += f->a.state == ASSIGN_RETRY && f->a.at_ms > server_ms();
    }
    return 0;
}

int __wrap_assign_drop(struct baton_client *c, const char *group, const char *job,
                       const char *leader_key, const char *token, const char *expect,
                       const struct assign *a);
int __wrap_assign_drop(struct baton_client *c, const char *group, const char *job,
                       const char *leader_key, const char *token, const char *expect,
                       const struct assign *a)
{
    (void)c, (void)group, (void)leader_key;
    if (token == NULL || !leading_token)
        return BATON_ELOST;
    struct fassign *f = fassign_find(job, a->field);
    if (f == NULL || (strcmp(expect, "claimed") == 0
                          ? f->a.state != ASSIGN_CLAIMED || strcmp(f->a.run_id, a->run_id) != 0
                          : strcmp(f->a.value, expect) != 0 || !freofferable(f)))
        return 0;
    char member[sizeof f->a.node + sizeof f->a.run_id + 8];
    snprintf(member, sizeof member, "%s/%s", f->a.node, f->a.run_id);
    unenroll(fjob(job), member);
    snprintf(member, sizeof member, "%s/%s/wait", f->a.node, f->a.run_id);
    unenroll(fjob(job), member);
    f->used = false;
    return 1;
}

enum assign_answer __wrap_assign_accept(struct baton_client *c, const char *group, const char *job,
                                        const char *field, const char *node, int64_t capacity,
                                        int64_t ttl_ms, struct assign *a);
enum assign_answer __wrap_assign_accept(struct baton_client *c, const char *group, const char *job,
                                        const char *field, const char *node, int64_t capacity,
                                        int64_t ttl_ms, struct assign *a)
{
    (void)c, (void)group, (void)capacity, (void)ttl_ms;
    struct fassign *f = fassign_find(job, field);
    if (f == NULL || f->a.state != ASSIGN_OFFERED || strcmp(f->a.node, node) != 0 ||
        f->a.at_ms <= server_ms())
        return ASSIGN_GONE;
    struct assign was = f->a; /* fassign_put() rewrites f */
    f = fassign_put(job, was.tick, ASSIGN_ACCEPTED, node, was.attempt, server_ms(), was.run_id,
                    was.moves, was.died);
    *a = f->a;
    return ASSIGN_OK;
}

int __wrap_assign_started(struct baton_client *c, const char *group, const char *job,
                          const struct assign *a);
int __wrap_assign_started(struct baton_client *c, const char *group, const char *job,
                          const struct assign *a)
{
    (void)c, (void)group;
    struct fassign *f = fassign_find(job, a->field);
    if (f == NULL || strcmp(f->a.value, a->value) != 0 || !f->reg)
        return BATON_ELOST;
    struct assign was = f->a;        /* fassign_put() rewrites f */
    for (int i = 0; i < npause; i++) /* paused: handed back as the claim's marker */
        if ((strcmp(fpause[i].job, job) == 0 || strcmp(fpause[i].job, "*") == 0) &&
            (!fpause[i].resumed || fpause[i].resumed_at >= was.tick)) {
            fassign_put(job, was.tick, ASSIGN_CLAIMED, was.node, was.attempt, server_ms(),
                        was.run_id, was.moves, was.died);
            return ASSIGN_PAUSED;
        }
    fassign_put(job, was.tick, ASSIGN_STARTED, was.node, was.attempt, was.at_ms, was.run_id,
                was.moves, was.died);
    return 0;
}

int __wrap_assign_end(struct baton_client *c, const char *group, const char *job, const char *field,
                      const char *node, const char *run_id, int64_t retry_ms);
int __wrap_assign_end(struct baton_client *c, const char *group, const char *job, const char *field,
                      const char *node, const char *run_id, int64_t retry_ms)
{
    (void)c, (void)group;
    struct fassign *f = fassign_find(job, field);
    if (f == NULL || strcmp(f->a.node, node) != 0 || strcmp(f->a.run_id, run_id) != 0)
        return 0;
    struct assign was = f->a; /* fassign_put() rewrites f */
    char member[sizeof was.node + sizeof was.run_id + 8];
    snprintf(member, sizeof member, "%s/%s", node, run_id);
    unenroll(fjob(job), member);
    if (retry_ms >= 0) { /* held busy through its backoff */
        fassign_put(job, was.tick, ASSIGN_RETRY, was.node, was.attempt, server_ms() + retry_ms,
                    was.run_id, was.moves, was.died);
        snprintf(member, sizeof member, "%s/%s/wait", node, run_id);
        enroll(fjob(job), member);
    } else {
        f->used = false;
    }
    return 0;
}

int __wrap_assign_list_all(struct baton_client *c, const char *group, struct assign *v, bool *alive,
                           size_t max, bool due_only, size_t *n, int64_t *now_ms);
int __wrap_assign_list_all(struct baton_client *c, const char *group, struct assign *v, bool *alive,
                           size_t max, bool due_only, size_t *n, int64_t *now_ms)
{
    (void)c, (void)group;
    list_calls++;
    *n = 0;
    *now_ms = server_ms();
    for (int i = 0; i < NASSIGN && *n < max; i++)
        if (fassigns[i].used &&
            (!due_only || freofferable(&fassigns[i]) || fassigns[i].a.state == ASSIGN_RETRY)) {
            v[*n] = fassigns[i].a;
            snprintf(v[*n].job, sizeof v[*n].job, "%s", fassigns[i].job);
            alive[(*n)++] = !freofferable(&fassigns[i]);
        }
    return 0;
}

int __wrap_assign_offers(struct baton_client *c, const char *group, const char *node, char **jobs,
                         char **fields, size_t max, size_t *n);
int __wrap_assign_offers(struct baton_client *c, const char *group, const char *node, char **jobs,
                         char **fields, size_t max, size_t *n)
{
    (void)c, (void)group;
    *n = 0;
    for (int i = 0; i < NASSIGN && *n < max; i++) {
        const struct fassign *f = &fassigns[i];
        if (f->used && f->a.state == ASSIGN_OFFERED && strcmp(f->a.node, node) == 0 &&
            f->a.at_ms > server_ms()) {
            jobs[*n] = strdup(f->job);
            fields[(*n)++] = strdup(f->a.field);
        }
    }
    return 0;
}

const char *__wrap_baton_election_token(const struct baton_election *e);
const char *__wrap_baton_election_token(const struct baton_election *e)
{
    (void)e;
    return leading_token ? "token" : NULL;
}

const char *__wrap_baton_election_key(const struct baton_election *e);
const char *__wrap_baton_election_key(const struct baton_election *e)
{
    (void)e;
    return "baton:{g}:leader";
}

int64_t __wrap_baton_election_deadline_ns(const struct baton_election *e);
int64_t __wrap_baton_election_deadline_ns(const struct baton_election *e)
{
    (void)e;
    return mono + 10000 * MSEC; /* the lease is renewed all along */
}

bool __wrap_baton_election_server_changed(const struct baton_election *e);
bool __wrap_baton_election_server_changed(const struct baton_election *e)
{
    (void)e;
    return server_changed;
}

const char *__wrap_baton_client_errstr(const struct baton_client *c);
const char *__wrap_baton_client_errstr(const struct baton_client *c)
{
    (void)c;
    return "Redis down (test)";
}

/* ---- the life of each tick ---- */

#define NMOVES 4096
static struct tick_moved moves[NMOVES];
static char move_jobs[NMOVES][JOB_NAME_MAX + 1];
static int nmoves;

static void on_tick(void *ctx, const struct tick_moved *m)
{
    (void)ctx;
    ck_assert_int_lt(nmoves, NMOVES);
    moves[nmoves] = *m;
    snprintf(move_jobs[nmoves], sizeof move_jobs[0], "%s", m->job);
    moves[nmoves].job = move_jobs[nmoves];
    nmoves++;
}

/* The life of job's tick T0 + s as its states, the first one's, then the
 * state after each move ("due queued claiming ..."); a move from another
 * state than the last starts a new life after " / " (the tick came due
 * again). A range's move counts for each tick in it. Static. */
static const char *life(const char *job, int64_t s)
{
    static char buf[2048];
    size_t n = 0;
    enum tick_state last = TICK_REFUSED;
    buf[0] = '\0';
    for (int i = 0; i < nmoves && n < sizeof buf - 64; i++) {
        const struct tick_moved *m = &moves[i];
        if (strcmp(m->job, job) != 0 || T0 + s < m->at || T0 + s > m->until)
            continue;
        if (m->from != last)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", n > 0 ? " / " : "",
                                  tick_state_name(m->from));
        n += (size_t)snprintf(buf + n, sizeof buf - n, " %s", tick_state_name(m->to));
        last = m->to;
    }
    return buf;
}

static void expect_life(const char *job, int64_t s, const char *want)
{
    ck_assert_msg(strcmp(life(job, s), want) == 0,
                  "the life of %s's tick T0%+" PRId64 ": [%s], not [%s]", job, s, life(job, s),
                  want);
}

/* Every move the cases made is one the table allows. */
static void expect_no_refused_move(void)
{
    for (int i = 0; i < nmoves; i++)
        ck_assert_msg(moves[i].to != TICK_REFUSED,
                      "%s's tick %" PRId64 ": the table refused %s in state %s", moves[i].job,
                      moves[i].at - T0, tick_event_name(moves[i].ev),
                      tick_state_name(moves[i].from));
}

/* ---- driving the runner ---- */

static bool block_ok(void *ctx)
{
    (void)ctx;
    return true;
}

static struct loop loop;
static struct log *lg;

/* A runner of group g on node n with jobs (jobs.yaml text), leading term
 * from now (a new leader, after another). */
static struct runner *lead(const char *yaml, uint64_t term)
{
    char err[512];
    struct jobs *jobs = NULL;
    struct runner_host h = {.log = lg,
                            .loop = &loop,
                            .timer_id = 1,
                            .node = "n",
                            .group = "g",
                            .history_len = 100,
                            .lease_ttl_ms = 3000,
                            .refresh_ms = 1000,
                            .guard_ns = 500 * MSEC,
                            .control_poll_ms = 1000,
                            .kill_margin_ns = 50 * MSEC,
                            .may_block = block_ok,
                            .on_tick = on_tick};
    struct runner *r = runner_new(&h);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(
        jobs_load_buffer("jobs.yaml", yaml, strlen(yaml), "UTC", &jobs, err, sizeof err) == 0, "%s",
        err);
    ck_assert_int_eq(runner_set_jobs(r, jobs), 0);
    runner_lead(r, term, mono + 3000 * MSEC);
    return r;
}

/* A runner of group g on node n with jobs (jobs.yaml text), leading term 7
 * from wall time T0 + 0.5 s. */
static struct runner *start(const char *yaml)
{
    fake_wall_ns = (T0 * 1000 + 500) * MSEC;
    ck_assert_int_eq(loop_init(&loop, NULL, NULL), 0);
    lg = log_new(open("/dev/null", O_WRONLY | O_CLOEXEC), LOG_DEBUG, "n", "g");
    ck_assert_ptr_nonnull(lg);
    return lead(yaml, 7);
}

/* Moves the clock ms on, as the loop would: the runner's timer fires when
 * due, and processes end when their time is up (SIGCHLD). */
static void advance(struct runner *r, int64_t ms)
{
    int64_t target = mono + ms * MSEC;
    for (int turns = 0;; turns++) {
        ck_assert_int_lt(turns, 100000);
        if (procs_now()) {
            runner_on_sigchld(r);
            continue;
        }
        int64_t next = 0;
        rtime_earliest(&next, armed);
        if (armed_wall != 0)
            rtime_earliest(&next,
                           mono + (armed_wall > fake_wall_ns ? armed_wall - fake_wall_ns : 0));
        for (int i = 0; i < nprocs; i++)
            if (procs[i].alive && procs[i].end != 0)
                rtime_earliest(&next, procs[i].end);
        if (next == 0 || next > target)
            break;
        if (next > mono) {
            fake_wall_ns += next - mono;
            mono = next;
        }
        if (procs_now()) {
            runner_on_sigchld(r);
            continue;
        }
        if ((armed != 0 && armed <= mono) || (armed_wall != 0 && armed_wall <= fake_wall_ns)) {
            armed = armed_wall = 0;
            runner_on_timer(r);
        }
    }
    if (target > mono) {
        fake_wall_ns += target - mono;
        mono = target;
    }
}

static void stop(struct runner *r)
{
    expect_no_refused_move();
    runner_free(r);
    log_free(lg);
    loop_close(&loop);
}

/* The processes started for job's tick at (T0 + s) that ran their command. */
static int ran(const char *job, int64_t s)
{
    int n = 0;
    for (int i = 0; i < nprocs; i++)
        n += strcmp(procs[i].job, job) == 0 && procs[i].tick == T0 + s && procs[i].ran;
    return n;
}

/* A process of job for T0 + s, or NULL. */
static const struct fproc *proc_of(const char *job, int64_t s)
{
    for (int i = 0; i < nprocs; i++)
        if (strcmp(procs[i].job, job) == 0 && procs[i].tick == T0 + s)
            return &procs[i];
    return NULL;
}

/* The record of job covering T0 + s, or NULL. */
static const struct record *record_of(const char *job, int64_t s)
{
    for (int i = 0; i < nrecords; i++)
        if (strcmp(records[i].job, job) == 0 && records[i].at <= T0 + s &&
            (records[i].until != 0 ? records[i].until : records[i].at) >= T0 + s)
            return &records[i];
    return NULL;
}

/* How many records of job cover T0 + s. */
static int records_of(const char *job, int64_t s)
{
    int n = 0;
    for (int i = 0; i < nrecords; i++)
        n += strcmp(records[i].job, job) == 0 && records[i].at <= T0 + s &&
             (records[i].until != 0 ? records[i].until : records[i].at) >= T0 + s;
    return n;
}

static void expect_record(const char *job, int64_t s, const char *outcome)
{
    const struct record *rec = record_of(job, s);
    ck_assert_msg(rec != NULL, "no record of %s at T0%+" PRId64 " (%d records)", job, s, nrecords);
    ck_assert_msg(records_of(job, s) == 1, "%d records of %s at T0%+" PRId64, records_of(job, s),
                  job, s);
    ck_assert_msg(strcmp(rec->outcome, outcome) == 0, "%s at T0%+" PRId64 ": %s (%s), not %s", job,
                  s, rec->outcome, rec->reason, outcome);
}

/* ---- the cases ---- */

#define EVERY_SECOND(name, extra)                                                                  \
    "jobs:\n  - {name: " name ", schedule: '* * * * * *', command: ['true']" extra "}\n"

START_TEST(a_live_tick_runs_once_at_its_instant)
{
    struct runner *r = start(EVERY_SECOND("tick", ""));
    advance(r, 2200);
    ck_assert_int_eq(ran("tick", 1), 1);
    ck_assert_int_eq(ran("tick", 2), 1);
    ck_assert_str_eq(proc_of("tick", 1)->trigger, "schedule");
    expect_record("tick", 1, "ok");
    expect_record("tick", 2, "ok");
    expect_life("tick", 1, "due queued claiming claimed running recorded");
    stop(r);
}
END_TEST

/* The runs of jobs whose names start with prefix whose command runs now. */
static int running_now(const char *prefix)
{
    int n = 0;
    for (int i = 0; i < nprocs; i++)
        n += strncmp(procs[i].job, prefix, strlen(prefix)) == 0 && procs[i].alive && procs[i].ran;
    return n;
}

START_TEST(a_pool_runs_at_most_its_limit_first_come_first_served)
{
    duration_ms = 1500; /* each tick's run outlives the next instant */
    struct runner *r = start("pools: {p: 1}\n"
                             "defaults: {concurrency: allow, catchup: 1h, pool: p}\n"
                             "jobs:\n"
                             "  - {name: pa, schedule: '* * * * * *', command: ['true']}\n"
                             "  - {name: pb, schedule: '* * * * * *', command: ['true']}\n");
    for (int i = 0; i < 140; i++) { /* 7 s */
        advance(r, 50);
        ck_assert_int_le(running_now("p"), 1);
    }
    /* One slot, 1.5 s a run: the two runs of T0+1, then those of T0+2
     * (procs[] is in the order of the claims), each once, a tick that
     * waited late rather than skipped. */
    ck_assert_int_eq(ran("pa", 1), 1);
    ck_assert_int_eq(ran("pb", 1), 1);
    ck_assert_int_eq(ran("pa", 2), 1);
    ck_assert(proc_of("pa", 1) < proc_of("pa", 2) && proc_of("pb", 1) < proc_of("pa", 2));
    ck_assert_ptr_null(record_of("pa", 3)); /* waiting, not skipped */
    expect_record("pa", 1, "ok");
    expect_record("pb", 1, "ok");
    stop(r); /* no move of a tick's life refused */
}
END_TEST

START_TEST(max_running_bounds_a_job_across_the_group)
{
    duration_ms = 2500;
    struct runner *r =
        start(EVERY_SECOND("mr", ", concurrency: allow, catchup: 1h, max_running: 2"));
    for (int i = 0; i < 100; i++) { /* 5 s */
        advance(r, 50);
        ck_assert_int_le(running_now("mr"), 2);
    }
    for (int s = 1; s <= 3; s++)
        ck_assert_int_eq(ran("mr", s), 1);
    ck_assert_ptr_null(record_of("mr", 5)); /* waiting, not skipped */
    stop(r);
}
END_TEST

START_TEST(a_live_tick_is_claimed_ahead_and_goes_at_its_instant)
{
    struct runner *r = start(EVERY_SECOND("tick", ""));
    advance(r, 490); /* 10 ms before the instant: prepared, waiting */
    const struct fproc *p = proc_of("tick", 1);
    ck_assert_msg(p != NULL && !p->ran, "the run of T0+1 is not prepared ahead");
    advance(r, 20);
    ck_assert(proc_of("tick", 1)->ran);
    stop(r);
}
END_TEST

START_TEST(forbid_skips_a_tick_that_fires_while_its_run_is_alive)
{
    duration_ms = 1500;
    struct runner *r = start(EVERY_SECOND("slow", ""));
    advance(r, 1700);
    ck_assert_int_eq(ran("slow", 1), 1);
    ck_assert_int_eq(ran("slow", 2), 0);
    expect_record("slow", 2, "skipped");
    expect_life("slow", 2, "due queued claiming skipped"); /* claimed as skipped */
    stop(r);
}
END_TEST

START_TEST(allow_overlaps_runs)
{
    duration_ms = 1500;
    struct runner *r = start(EVERY_SECOND("par", ", concurrency: allow"));
    advance(r, 1700);
    ck_assert_int_eq(ran("par", 1), 1);
    ck_assert_int_eq(ran("par", 2), 1);
    ck_assert(proc_of("par", 1)->alive); /* both at once */
    stop(r);
}
END_TEST

START_TEST(replace_stops_the_run_alive_then_runs_the_new_tick)
{
    duration_ms = 5000;
    struct runner *r = start(EVERY_SECOND("rep", ", concurrency: replace"));
    advance(r, 1700);
    const struct fproc *old = proc_of("rep", 1);
    ck_assert_msg(old != NULL && !old->alive && WIFSIGNALED(old->status),
                  "the run of T0+1 was not stopped");
    ck_assert_int_eq(ran("rep", 2), 1);
    expect_record("rep", 1, "killed");
    expect_life("rep", 1, "due queued claiming claimed running recorded");
    expect_life("rep", 2, "due queued claiming claimed running");
    stop(r);
}
END_TEST

START_TEST(catchup_window_runs_the_missed_ticks_in_order)
{
    fjob("late")->has_mark = true;
    fjob("late")->mark = T0 - 5;
    struct runner *r = start(EVERY_SECOND("late", ", catchup: 1h"));
    advance(r, 400); /* T0 + 0.9: T0 itself is live (within a second), the others missed */
    int64_t last = 0;
    ck_assert_int_eq(ran("late", 0), 1);
    for (int64_t s = -4; s < 0; s++) {
        ck_assert_msg(ran("late", s) == 1, "missed tick T0%+" PRId64 " ran %d times", s,
                      ran("late", s));
        ck_assert_str_eq(proc_of("late", s)->trigger, "catchup");
        /* forbid: one after another */
        ck_assert(proc_of("late", s)->end - duration_ms * MSEC >= last);
        last = proc_of("late", s)->end;
    }
    stop(r);
}
END_TEST

START_TEST(catchup_zero_records_the_missed_ticks_missed)
{
    fjob("zero")->has_mark = true;
    fjob("zero")->mark = T0 - 5;
    struct runner *r = start(EVERY_SECOND("zero", ", catchup: 0"));
    advance(r, 300);
    for (int64_t s = -4; s < 0; s++)
        ck_assert_int_eq(ran("zero", s), 0);
    expect_record("zero", -4, "missed");
    expect_record("zero", -1, "missed");
    ck_assert_int_eq(ran("zero", 0), 1); /* live */
    expect_life("zero", -4, "due missed");
    expect_life("zero", -1, "due missed");
    stop(r);
}
END_TEST

START_TEST(catchup_last_runs_the_newest_and_supersedes_the_rest)
{
    fjob("last")->has_mark = true;
    fjob("last")->mark = T0 - 5;
    struct runner *r = start(EVERY_SECOND("last", ""));
    advance(r, 300);
    ck_assert_int_eq(ran("last", -1), 1); /* the newest missed */
    ck_assert_str_eq(proc_of("last", -1)->trigger, "catchup");
    ck_assert_int_eq(ran("last", 0), 1); /* live */
    for (int64_t s = -4; s < -1; s++)
        ck_assert_int_eq(ran("last", s), 0);
    expect_record("last", -4, "superseded");
    expect_record("last", -2, "superseded");
    /* concurrency forbid (the default): the older missed ticks never queue */
    expect_life("last", -4, "due superseded");
    expect_life("last", -2, "due superseded");
    expect_life("last", -1, "due queued claiming claimed running recorded");
    stop(r);
}
END_TEST

START_TEST(a_claim_whose_answer_was_lost_runs_its_tick_once)
{
    fail_claims = 1;
    fail_applies = true; /* applied in Redis, the answer lost */
    struct runner *r = start(EVERY_SECOND("lost", ""));
    advance(r, 1800);
    ck_assert_int_eq(ran("lost", 1), 1);
    expect_record("lost", 1, "ok");
    /* claimed again with the same id: the second answer says it is ours */
    expect_life("lost", 1, "due queued claiming claiming claiming claimed running recorded");
    stop(r);
}
END_TEST

START_TEST(a_claim_refused_as_not_the_leader_does_not_run)
{
    struct runner *r = start(EVERY_SECOND("gone", ""));
    leading_token = false;
    advance(r, 1800);
    ck_assert_int_eq(ran("gone", 1), 0);
    ck_assert_ptr_null(record_of("gone", 1)); /* the next leader's */
    runner_unlead(r);
    expect_life("gone", 1, "due queued left");
    stop(r);
}
END_TEST

/* Pauses the job at T0 + 0.99 s: after its run of T0 + 1 was prepared. */
static void pause_after_prepare(struct runner *r, const char *job)
{
    advance(r, 490);
    ck_assert_msg(proc_of(job, 1) != NULL && !proc_of(job, 1)->ran, "not prepared ahead");
    fpause[npause++] = (struct pause_entry){
        .job = job, .raw = "{\"state\":\"paused\"}", .since_ms = T0 * 1000 + 990};
    runner_control_changed(r);
    advance(r, 200); /* past the instant */
    ck_assert_int_eq(ran(job, 1), 0);
}

START_TEST(a_pause_after_a_claim_holds_the_tick_and_resume_catchup_runs_it)
{
    struct runner *r = start(EVERY_SECOND("p", ", catchup: 1h"));
    pause_after_prepare(r, "p");
    ck_assert_ptr_null(record_of("p", 1)); /* held: not recorded yet */
    npause = 0;                            /* resume --catchup: the entry is gone */
    runner_control_changed(r);
    advance(r, 200);
    ck_assert_int_eq(ran("p", 1), 1);
    expect_record("p", 1, "ok");
    expect_life("p", 1, "due queued claiming claimed held claimed running recorded");
    stop(r);
}
END_TEST

START_TEST(a_pause_after_a_claim_then_a_plain_resume_records_the_tick_skipped)
{
    struct runner *r = start(EVERY_SECOND("q", ", catchup: 1h"));
    pause_after_prepare(r, "q");
    fpause[0] = (struct pause_entry){
        .job = "q", .raw = "{\"state\":\"resumed\"}", .resumed = true, .resumed_at = T0 + 1};
    runner_control_changed(r);
    advance(r, 200);
    ck_assert_int_eq(ran("q", 1), 0);
    expect_record("q", 1, "skipped");
    ck_assert_str_eq(record_of("q", 1)->reason, "paused (baton pause)");
    expect_life("q", 1, "due queued claiming claimed held skipped");
    stop(r);
}
END_TEST

/* baton trigger JOB at requested_ms (Unix ms): request "req-1", and the
 * message that tells the leader. */
static void request(struct runner *r, const char *job, int64_t requested_ms)
{
    snprintf(ftrig_ids[0], sizeof ftrig_ids[0], "req-1");
    snprintf(ftrig_jobs[0], sizeof ftrig_jobs[0], "%s", job);
    ftrig[ntrig++] = (struct trigger){.id = ftrig_ids[0],
                                      .job = ftrig_jobs[0],
                                      .by = "op@host",
                                      .state = TRIGGER_PENDING,
                                      .attempt = 1,
                                      .requested_ms = requested_ms};
    runner_control_changed(r);
}

START_TEST(a_manual_run_of_a_forbid_job_waits_for_its_run)
{
    duration_ms = 1500;
    struct runner *r = start(EVERY_SECOND("m", ""));
    advance(r, 700); /* T0 + 1.2: the tick's run is alive */
    request(r, "m", T0 * 1000 + 1200);
    advance(r, 200);
    int manual = -1;
    for (int i = 0; i < nprocs; i++)
        if (strcmp(procs[i].trigger, "manual") == 0)
            manual = i;
    ck_assert_int_eq(manual, -1); /* waits */
    advance(r, 1500);
    for (int i = 0; i < nprocs; i++)
        if (strcmp(procs[i].trigger, "manual") == 0)
            manual = i;
    ck_assert_msg(manual >= 0, "the manual run did not start once the run ended");
    ck_assert(procs[manual].end - duration_ms * MSEC >= proc_of("m", 1)->end);
    stop(r);
}
END_TEST

START_TEST(a_handover_registers_the_runs_alive_on_their_own)
{
    duration_ms = 5000;
    struct runner *r = start(EVERY_SECOND("h", ""));
    advance(r, 700);
    runner_stop_scheduling(r);
    ck_assert_int_eq(runner_handover(r, mono + 3000 * MSEC), 0);
    ck_assert_int_eq(refreshes_handover, 1);
    runner_unlead(r);
    ck_assert_int_eq(runner_running(r), 1); /* it finishes on its own */
    advance(r, 5000);
    ck_assert_int_eq(runner_running(r), 0);
    expect_record("h", 1, "ok");
    expect_life("h", 1, "due queued claiming claimed running recorded");
    stop(r);
}
END_TEST

START_TEST(replace_supersedes_every_queued_tick_but_the_newest)
{
    fjob("newest")->has_mark = true;
    fjob("newest")->mark = T0 - 5;
    struct runner *r = start(EVERY_SECOND("newest", ", concurrency: replace, catchup: 1h"));
    advance(r, 400);
    for (int64_t s = -4; s < 0; s++) {
        ck_assert_int_eq(ran("newest", s), 0);
        expect_record("newest", s, "superseded");
        expect_life("newest", s, "due queued superseded"); /* queued, then decided */
    }
    expect_life("newest", 0, "due queued claiming claimed running recorded");
    stop(r);
}
END_TEST

START_TEST(a_missed_tick_waits_queued_while_a_run_is_alive_elsewhere)
{
    fjob("elsewhere")->has_mark = true;
    fjob("elsewhere")->mark = T0 - 2;
    enroll(fjob("elsewhere"), "other/1"); /* a run of the job on another node */
    struct runner *r = start(EVERY_SECOND("elsewhere", ""));
    advance(r, 300);
    ck_assert_int_eq(ran("elsewhere", -1), 0);
    unenroll(fjob("elsewhere"), "other/1");
    advance(r, 500);
    ck_assert_int_eq(ran("elsewhere", -1), 1);
    expect_life("elsewhere", -1, "due queued claiming queued claiming claimed running recorded");
    stop(r);
}
END_TEST

START_TEST(a_failed_run_is_retried_as_the_same_tick)
{
    exit_code = 1;
    struct runner *r = start(EVERY_SECOND("again", ", retries: 1, retry_backoff: 100ms"));
    advance(r, 1000);
    ck_assert_int_eq(ran("again", 1), 2);
    expect_life("again", 1, "due queued claiming claimed running retrying running recorded");
    stop(r);
}
END_TEST

/* A failed run's retry keeps its job busy through the backoff, as a
 * fleet run's does (its run's registration kept, refreshed with the
 * lease): a forbid job's ticks that come meanwhile are skipped as busy,
 * and max_running counts it; the retry then runs and the registration
 * goes. */
START_TEST(a_retry_in_its_backoff_keeps_a_forbid_job_busy)
{
    exit_code = 1;
    struct runner *r = start(EVERY_SECOND("again", ", concurrency: forbid, retries: 1, "
                                                   "retry_backoff: 3s"));
    advance(r, 1000); /* T0 + 1 runs and fails at T0 + 1.1: its retry due at T0 + 4.1 */
    ck_assert_int_eq(ran("again", 1), 1);
    char held[sizeof fjob("again")->busy[0]] = "";
    int nheld = fjob("again")->nbusy; /* the failed run's registration, kept */
    if (nheld > 0)
        snprintf(held, sizeof held, "%s", fjob("again")->busy[0]);
    advance(r, 2400);
    ck_assert_int_eq(ran("again", 2), 0);
    ck_assert_int_eq(ran("again", 3), 0);
    expect_record("again", 2, "skipped");
    ck_assert_msg(strstr(record_of("again", 2)->reason, "still alive") != NULL, "%s",
                  record_of("again", 2)->reason);
    ck_assert_int_eq(nheld, 1);
    ck_assert_msg(strncmp(held, "n/1767225601-", 13) == 0, "%s", held);
    advance(r, 1000);
    ck_assert_int_eq(ran("again", 1), 2);
    ck_assert(!registered(fjob("again"), held));
    stop(r);
}
END_TEST

/* The leader stops leading during a retry's backoff: the retry is let go
 * (its tick was recorded), and so is the registration it held. */
START_TEST(a_retry_let_go_releases_what_it_held)
{
    exit_code = 1;
    struct runner *r = start(EVERY_SECOND("gone", ", concurrency: forbid, retries: 1, "
                                                  "retry_backoff: 3s"));
    advance(r, 1000);
    ck_assert_int_eq(ran("gone", 1), 1);
    ck_assert_int_eq(fjob("gone")->nbusy, 1);
    runner_unlead(r);
    advance(r, 100);
    ck_assert_int_eq(fjob("gone")->nbusy, 0);
    stop(r);
}
END_TEST

START_TEST(a_retry_in_its_backoff_counts_for_max_running)
{
    exit_code = 1;
    struct runner *r = start(EVERY_SECOND("cap", ", concurrency: allow, max_running: 1, "
                                                 "retries: 1, retry_backoff: 3s"));
    advance(r, 1000);
    ck_assert_int_eq(ran("cap", 1), 1);
    advance(r, 2400);
    ck_assert_int_eq(ran("cap", 2), 0); /* waits for the slot its retry holds */
    advance(r, 1000);
    ck_assert_int_eq(ran("cap", 1), 2);
    stop(r);
}
END_TEST

START_TEST(a_lost_claim_is_settled_once_this_node_stops_leading)
{
    fail_claims = 1000;
    fail_applies = true; /* every claim applied, every answer lost */
    struct runner *r = start(EVERY_SECOND("unsure", ""));
    advance(r, 700);
    ck_assert_int_eq(ran("unsure", 1), 0);
    fail_claims = 0;
    runner_unlead(r); /* the follower looks the claim up: ours */
    advance(r, 100);
    expect_record("unsure", 1, "failed_to_start");
    const char *l = life("unsure", 1), *end = "claiming claiming not_started";
    ck_assert_msg(strncmp(l, "due queued claiming claiming", 28) == 0 &&
                      strcmp(l + strlen(l) - strlen(end), end) == 0,
                  "the life of the lost claim's tick: [%s]", l);
    stop(r);
}
END_TEST

/* job paused from its leader's start, whatever comes due meanwhile. */
static struct runner *start_paused(const char *job, const char *yaml)
{
    fpause[npause++] =
        (struct pause_entry){.job = job, .raw = "{\"state\":\"paused\"}", .since_ms = T0 * 1000};
    struct runner *r = start(yaml);
    advance(r, 2700); /* T0 + 3.2: ticks 1 to 3 came due, paused */
    ck_assert_int_eq(nprocs, 0);
    return r;
}

START_TEST(a_tick_missed_while_paused_runs_when_resumed_with_catchup)
{
    struct runner *r = start_paused("w", EVERY_SECOND("w", ", catchup: 1h"));
    npause = 0; /* resume --catchup */
    runner_control_changed(r);
    advance(r, 1000);
    ck_assert_int_eq(ran("w", 1), 1);
    ck_assert_str_eq(proc_of("w", 1)->trigger, "catchup");
    expect_life("w", 1, "due queued claiming claimed running recorded");
    stop(r);
}
END_TEST

START_TEST(a_tick_that_came_due_while_paused_is_recorded_skipped_at_a_plain_resume)
{
    struct runner *r = start_paused("v", EVERY_SECOND("v", ", catchup: 1h"));
    fpause[0] = (struct pause_entry){
        .job = "v", .raw = "{\"state\":\"resumed\"}", .resumed = true, .resumed_at = T0 + 3};
    runner_control_changed(r);
    advance(r, 300);
    ck_assert_int_eq(ran("v", 2), 0);
    expect_record("v", 2, "skipped");
    expect_life("v", 2, "due skipped");
    stop(r);
}
END_TEST

/* The life of job's tick T0 + s begins with `head` and ends with `tail`. */
static void expect_life_ends(const char *job, int64_t s, const char *head, const char *tail)
{
    const char *l = life(job, s);
    size_t n = strlen(l), t = strlen(tail);
    ck_assert_msg(strncmp(l, head, strlen(head)) == 0 && n >= t && strcmp(l + n - t, tail) == 0,
                  "the life of %s's tick T0%+" PRId64 ": [%s], not [%s ... %s]", job, s, l, head,
                  tail);
}

START_TEST(a_tick_whose_claim_is_unsettled_is_decided_once_by_its_claim)
{
    fail_claims = 1000;
    fail_applies = true; /* T0+1's claim applied at 0.975, its answers lost ... */
    struct runner *r = start(EVERY_SECOND("stall", ", catchup: 0"));
    advance(r, 1600); /* ... until T0 + 2.1: it aged out (catchup: 0) meanwhile */
    ck_assert_ptr_null(record_of("stall", 1));
    fail_claims = 0;
    advance(r, 1200);
    /* once: its claim, answered at last (ours), and the policy (missed) */
    ck_assert_int_eq(ran("stall", 1), 0);
    expect_record("stall", 1, "missed");
    ck_assert_str_eq(record_of("stall", 1)->reason, "missed, and catchup is 0");
    expect_life_ends("stall", 1, "due queued claiming claiming", "claiming claimed missed");
    /* the next tick is claimed as any: its registration released, not busy */
    ck_assert_int_eq(ran("stall", 2), 1);
    expect_record("stall", 2, "ok");
    expect_life("stall", 2, "due queued claiming claimed running recorded");
    stop(r);
}
END_TEST

START_TEST(a_tick_whose_claim_is_unsettled_runs_once_answered_within_its_window)
{
    fail_claims = 1000;
    fail_applies = true;
    struct runner *r = start(EVERY_SECOND("window", ", catchup: 1h"));
    advance(r, 1600);
    fail_claims = 0;
    advance(r, 1200);
    ck_assert_int_eq(ran("window", 1), 1);
    ck_assert_str_eq(proc_of("window", 1)->trigger, "catchup");
    expect_record("window", 1, "ok");
    ck_assert_int_eq(ran("window", 2), 1);
    expect_record("window", 2, "ok");
    stop(r);
}
END_TEST

START_TEST(a_pause_waits_for_the_settlement_of_a_tick_whose_claim_is_unsettled)
{
    fail_claims = 1000;
    fail_applies = true; /* T0+1's claim applied, its answer lost */
    struct runner *r = start(EVERY_SECOND("pz", ", catchup: 1h"));
    advance(r, 700);
    fpause[npause++] = (struct pause_entry){
        .job = "pz", .raw = "{\"state\":\"paused\"}", .since_ms = T0 * 1000 + 1200};
    runner_control_changed(r);
    advance(r, 300);
    fail_claims = 0;
    advance(r, 500); /* answered: ours, claimed before the pause: held */
    ck_assert_ptr_null(record_of("pz", 1));
    fpause[0] = (struct pause_entry){
        .job = "pz", .raw = "{\"state\":\"resumed\"}", .resumed = true, .resumed_at = T0 + 2};
    runner_control_changed(r);
    advance(r, 300);
    ck_assert_int_eq(ran("pz", 1), 0);
    expect_record("pz", 1, "skipped");
    ck_assert_str_eq(record_of("pz", 1)->reason, "paused (baton pause)");
    expect_life_ends("pz", 1, "due queued claiming claiming", "claiming claimed held skipped");
    stop(r);
}
END_TEST

START_TEST(a_release_held_in_the_outbox_does_not_make_the_next_tick_busy)
{
    fail_writes = true; /* the end of T0+1's run cannot be written ... */
    struct runner *r = start(EVERY_SECOND("held", ""));
    advance(r, 700);
    ck_assert_int_eq(ran("held", 1), 1);
    fail_writes = false; /* ... and waits in the outbox for a second after the failure */
    advance(r, 1200);
    ck_assert_int_eq(ran("held", 2), 1);
    expect_record("held", 2, "ok");
    expect_record("held", 1, "ok");
    stop(r);
}
END_TEST

START_TEST(a_tick_released_by_resume_catchup_then_let_go_is_recorded_not_started)
{
    struct runner *r = start(EVERY_SECOND("rc", ", catchup: 1h"));
    pause_after_prepare(r, "rc"); /* T0+1 held */
    leading_token = false;        /* the token lost ... */
    npause = 0;                   /* ... as resume --catchup releases the tick */
    runner_control_changed(r);
    advance(r, 200);
    ck_assert_ptr_null(record_of("rc", 1));
    runner_unlead(r);
    advance(r, 100);
    ck_assert_int_eq(ran("rc", 1), 0);
    expect_record("rc", 1, "failed_to_start");
    expect_life("rc", 1, "due queued claiming claimed held claimed not_started");
    stop(r);
}
END_TEST

START_TEST(a_tick_released_by_resume_catchup_whose_run_is_refused_is_recorded_not_started)
{
    struct runner *r = start(EVERY_SECOND("rf", ", catchup: 1h"));
    pause_after_prepare(r, "rf");
    refuse_claims = true; /* the lease is another's: its run cannot register */
    npause = 0;
    runner_control_changed(r);
    advance(r, 200);
    ck_assert_int_eq(ran("rf", 1), 0);
    expect_record("rf", 1, "failed_to_start");
    expect_life("rf", 1, "due queued claiming claimed held claimed not_started");
    stop(r);
}
END_TEST

/* jitter: jobs are loaded without a group here (""): the delay of tick T0 + s
 * of job is jitter_delay_ms("", job, T0 + s, jitter), whose value check_jitter
 * checks against sha1sum. */
static int64_t delay_of(const char *job, int64_t s, int64_t jitter)
{
    return jitter_delay_ms("", job, T0 + s, jitter);
}

START_TEST(a_jittered_tick_is_claimed_ahead_of_its_delayed_instant_and_goes_then)
{
    int64_t d1 = delay_of("jit", 1, 800);
    ck_assert_int_gt(d1, 100); /* the case needs a delay to look inside */
    struct runner *r = start(EVERY_SECOND("jit", ", jitter: 800ms"));
    advance(r, 500 + d1 - 40); /* the tick is past, its instant 40 ms ahead */
    ck_assert_ptr_null(proc_of("jit", 1));
    ck_assert_int_eq(fjob("jit")->mark, T0); /* not claimed: a new leader would run it */
    advance(r, 30);                          /* within the claim-ahead window: claimed, prepared */
    ck_assert_int_eq(fjob("jit")->mark, T0 + 1);
    ck_assert_msg(proc_of("jit", 1) != NULL && !proc_of("jit", 1)->ran,
                  "the run of T0+1 is not prepared ahead of its instant");
    advance(r, 3000); /* to T0 + 4.5 */
    for (int64_t s = 1; s <= 3; s++) {
        int64_t d = delay_of("jit", s, 800);
        char want[24];
        snprintf(want, sizeof want, "%" PRId64, d);
        ck_assert_int_eq(ran("jit", s), 1);
        const struct fproc *p = proc_of("jit", s);
        ck_assert_int_eq(p->went_ms, (T0 + s) * 1000 + d); /* BATON_SCHEDULED_AT stays T0+s */
        ck_assert_str_eq(p->jitter, want);
        ck_assert_str_eq(p->trigger, "schedule");
        expect_record("jit", s, "ok");
        ck_assert_int_eq(record_of("jit", s)->jitter_ms, d);
        expect_life("jit", s, "due queued claiming claimed running recorded");
    }
    stop(r);
}
END_TEST

START_TEST(a_new_leader_starts_a_jittered_tick_at_the_same_instant_once)
{
    int64_t d1 = delay_of("jf", 1, 900);
    ck_assert_int_gt(d1, 500);
    struct runner *a = start(EVERY_SECOND("jf", ", jitter: 900ms"));
    advance(a, 500 + d1 / 2); /* between the tick and its instant */
    ck_assert_ptr_null(proc_of("jf", 1));
    runner_free(a); /* the leader dies: SIGKILL, no goodbye */
    struct runner *b = lead(EVERY_SECOND("jf", ", jitter: 900ms"), 8);
    advance(b, 2000);
    for (int64_t s = 1; s <= 2; s++) {
        ck_assert_int_eq(ran("jf", s), 1);
        ck_assert_int_eq(proc_of("jf", s)->went_ms, (T0 + s) * 1000 + delay_of("jf", s, 900));
        ck_assert_str_eq(proc_of("jf", s)->trigger, "schedule");
        expect_record("jf", s, "ok");
    }
    stop(b);
}
END_TEST

START_TEST(a_manual_run_of_a_jittered_job_starts_at_once_without_a_delay)
{
    struct runner *r = start("jobs:\n  - {name: jm, schedule: '@yearly', command: ['true'], "
                             "jitter: 1h}\n");
    request(r, "jm", T0 * 1000 + 500);
    advance(r, 50);
    ck_assert_int_eq(nprocs, 1);
    ck_assert_str_eq(procs[0].trigger, "manual");
    ck_assert_str_eq(procs[0].jitter, "0");
    ck_assert_int_le(procs[0].went_ms, T0 * 1000 + 500 + 50);
    stop(r);
}
END_TEST

START_TEST(a_missed_jittered_tick_is_late_from_its_delayed_instant)
{
    /* A new leader at T0 + 0.5 with the mark at T0 - 3. T0 - 2 began over a
     * second ago (missed: caught up); T0 - 1 is 1.5 s old, but its run was
     * to begin less than a second ago (on time: no catch-up); T0's begins
     * later, at its instant. */
    ck_assert_int_gt(delay_of("lj", -1, 900), 500);
    ck_assert_int_gt(delay_of("lj", 0, 900), 500);
    fjob("lj")->has_mark = true;
    fjob("lj")->mark = T0 - 3;
    struct runner *r = start(EVERY_SECOND("lj", ", jitter: 900ms, catchup: 1h"));
    advance(r, 1000);
    for (int64_t s = -2; s <= 0; s++)
        ck_assert_int_eq(ran("lj", s), 1);
    ck_assert_str_eq(proc_of("lj", -2)->trigger, "catchup");
    ck_assert_str_eq(proc_of("lj", -1)->trigger, "schedule");
    ck_assert_str_eq(proc_of("lj", 0)->trigger, "schedule");
    ck_assert_int_eq(proc_of("lj", 0)->went_ms, T0 * 1000 + delay_of("lj", 0, 900));
    stop(r);
}
END_TEST

/* ---- run_on other than leader (dispatch.h, assign.h) ---- */

#define DISPATCHED(name, extra)                                                                    \
    "jobs:\n  - {name: " name ", schedule: '* * * * * *', run_on: any, command: ['true']" extra    \
    "}\n"
#define DISPATCHED_YEARLY(name)                                                                    \
    "  - {name: " name ", schedule: '0 0 0 1 1 *', run_on: any, command: ['true']}\n"

static void members_are(const char *a, const char *b)
{
    fmembers[0] = (struct fmember){"n", 0, "[]", false};
    fmembers[1] = (struct fmember){a, 4, "[]", false};
    nmembers = 2;
    if (b != NULL)
        fmembers[nmembers++] = (struct fmember){b, 4, "[]", false};
}

/* job's mark at T0: a leader before claimed its ticks up to T0. */
static void claimed_up_to_t0(const char *job)
{
    fjob(job)->has_mark = true;
    fjob(job)->mark = T0;
}

START_TEST(a_claimed_tick_of_a_dispatched_job_is_offered_to_a_member)
{
    members_are("m1", NULL);
    struct runner *r = start(DISPATCHED("d", ""));
    advance(r, 700); /* claimed ahead of T0 + 1, offered at once */
    struct fassign *f = fassign_find("d", "1767225601");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->a.state, ASSIGN_OFFERED);
    ck_assert_str_eq(f->a.node, "m1");
    ck_assert_int_eq(ran("d", 1), 0);
    ck_assert(!registered(fjob("d"), "n/1767225601-7-1-1")); /* the offer's now */
    expect_life("d", 1, "due queued claiming claimed assigned");
    stop(r);
}
END_TEST

/* The exactly-once hole: a leader that dies between a tick's claim and
 * its offer leaves the claim's marker (written by the claim itself), and
 * the next leader offers it, once. */
START_TEST(a_marker_left_by_a_leader_that_died_is_offered_once_by_the_next)
{
    members_are("m1", NULL);
    claimed_up_to_t0("d");
    enroll(fjob("d"), "old/1767225600-6-1-3");
    fassign_put("d", T0, ASSIGN_CLAIMED, "old", 1, T0 * 1000 - 200, "1767225600-6-1-3", 0, "");
    struct runner *r = start("jobs:\n" DISPATCHED_YEARLY("d"));
    advance(r, 600);
    struct fassign *f = fassign_find("d", "1767225600");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->a.state, ASSIGN_OFFERED);
    ck_assert_str_eq(f->a.node, "m1");
    ck_assert_str_eq(f->a.run_id, "1767225600-6-1-3");
    ck_assert(!registered(fjob("d"), "old/1767225600-6-1-3"));
    ck_assert_ptr_null(record_of("d", 0));
    stop(r);
}
END_TEST

START_TEST(a_member_lost_before_starting_a_tick_moves_it_once_naming_the_member)
{
    members_are("m1", "m2");
    claimed_up_to_t0("d");
    fassign_put("d", T0, ASSIGN_ACCEPTED, "m1", 1, T0 * 1000, "1767225600-6-1-3", 0, "")->reg =
        false;
    struct runner *r = start("jobs:\n" DISPATCHED_YEARLY("d"));
    advance(r, 600);
    struct fassign *f = fassign_find("d", "1767225600");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->a.state, ASSIGN_OFFERED);
    ck_assert_str_eq(f->a.node, "m2");
    ck_assert_str_eq(f->a.died, "m1");
    /* m2 accepts it and is lost before starting it too: recorded, naming both */
    f = fassign_put("d", T0, ASSIGN_ACCEPTED, "m2", 1, T0 * 1000 + 700, "1767225600-6-1-3", 1,
                    "m1");
    f->reg = false;
    advance(r, 600);
    ck_assert_ptr_null(fassign_find("d", "1767225600"));
    expect_record("d", 0, "failed_to_start");
    ck_assert_msg(strstr(record_of("d", 0)->reason, "m1, then m2") != NULL, "%s",
                  record_of("d", 0)->reason);
    stop(r);
}
END_TEST

START_TEST(a_failed_run_handed_back_is_offered_again_to_another_member)
{
    members_are("m1", "m2");
    claimed_up_to_t0("d");
    fassign_put("d", T0, ASSIGN_RETRY, "m1", 1, T0 * 1000 + 800, "1767225600-6-1-3", 0, "");
    struct runner *r = start("jobs:\n  - {name: d, schedule: '0 0 0 1 1 *', run_on: any, "
                             "retries: 1, command: ['true']}\n");
    advance(r, 200); /* not yet due */
    ck_assert_int_eq(fassign_find("d", "1767225600")->a.state, ASSIGN_RETRY);
    advance(r, 400);
    struct fassign *f = fassign_find("d", "1767225600");
    ck_assert_int_eq(f->a.state, ASSIGN_OFFERED);
    ck_assert_str_eq(f->a.node, "m2");
    ck_assert_int_eq(f->a.attempt, 2);
    ck_assert_str_ne(f->a.run_id, "1767225600-6-1-3");
    stop(r);
}
END_TEST

/* A run lost after its start whose next attempt finds no member with
 * room: held alive while it waits (forbid: the job's next tick is
 * skipped, not run beside it once room comes). */
START_TEST(a_lost_run_waiting_for_room_keeps_a_forbid_job_busy)
{
    members_are("m1", NULL);
    fmembers[1].capacity = 1;
    claimed_up_to_t0("d");
    fassign_put("x", T0, ASSIGN_STARTED, "m1", 1, T0 * 1000, "1767225600-6-1-9", 0, "");
    fassign_put("d", T0, ASSIGN_STARTED, "m1", 1, T0 * 1000, "1767225600-6-1-3", 0, "")->reg =
        false;
    struct runner *r = start("jobs:\n  - {name: d, schedule: '* * * * * *', run_on: any, "
                             "retries: 1, command: ['true']}\n" DISPATCHED_YEARLY("x"));
    advance(r, 1500);
    ck_assert_int_eq(fassign_find("d", "1767225600")->a.state, ASSIGN_STARTED); /* waits */
    ck_assert(registered(fjob("d"), "m1/1767225600-6-1-3/wait"));
    struct fassign *next = fassign_find("d", "1767225601");
    ck_assert_msg(next == NULL, "the next tick: %s", next != NULL ? next->a.value : "");
    stop(r);
}
END_TEST

/* A forbid job's missed tick claimed while members are full: its marker
 * waits held, registered under the leader's own name; the next missed
 * tick (forbid's backlog: run or wait) finds it alive and looks again at
 * BUSY_POLL_MS, not every GATE_RETRY_MS as if it were one of the leader's
 * ended runs. */
START_TEST(a_marker_waiting_for_room_is_not_taken_for_an_ended_run_of_the_leader)
{
    members_are("m1", NULL);
    fmembers[1].capacity = 1;
    fjob("d")->has_mark = true;
    fjob("d")->mark = T0 - 3;
    fassign_put("x", T0, ASSIGN_STARTED, "m1", 1, T0 * 1000, "1767225600-6-1-9", 0, "");
    struct runner *r =
        start("jobs:\n  - {name: d, schedule: '* * * * * *', run_on: any, concurrency: forbid, "
              "catchup: 1h, command: ['true']}\n" DISPATCHED_YEARLY("x"));
    advance(r, 300);
    struct fassign *m = fassign_find("d", "1767225598");
    ck_assert_msg(m != NULL && m->a.state == ASSIGN_CLAIMED, "T0 - 2: %s",
                  m != NULL ? m->a.value : "-");
    ck_assert_ptr_null(fassign_find("d", "1767225599"));
    int before = fjob("d")->claims;
    advance(r, 1000);
    int claims = fjob("d")->claims - before;
    ck_assert_msg(claims <= 4, "%d claims of T0 - 1 in a second", claims);
    ck_assert_ptr_null(fassign_find("d", "1767225599")); /* still waits behind it */
    stop(r);
}
END_TEST

/* run_on: all: a node's own assignment of a tick that is not run there
 * (handed back by the node, which is no longer live; or its offer not
 * accepted in time) is recorded not started under that node's name, as
 * its run would have been. */
static struct fassign *node_own(const char *job, enum assign_state st, const char *node,
                                int64_t at_ms)
{
    char run_id[64];
    snprintf(run_id, sizeof run_id, "1767225600-6-1-3.%s", node);
    struct fassign *f = fassign_put(job, T0, st, node, 1, at_ms, run_id, 0, "");
    snprintf(f->a.field, sizeof f->a.field, "%" PRId64 "/%s", T0, node);
    return f;
}

START_TEST(an_all_tick_not_run_on_its_node_is_recorded_under_that_node)
{
    members_are("m1", NULL);
    fmembers[1].gone = true;
    claimed_up_to_t0("h");
    claimed_up_to_t0("o");
    node_own("h", ASSIGN_CLAIMED, "m1", T0 * 1000 - 100); /* handed back (a pause) */
    node_own("o", ASSIGN_OFFERED, "m1", T0 * 1000 + 100); /* its deadline passes */
    struct runner *r =
        start("jobs:\n"
              "  - {name: h, schedule: '0 0 0 1 1 *', run_on: all, command: ['true']}\n"
              "  - {name: o, schedule: '0 0 0 1 1 *', run_on: all, command: ['true']}\n");
    advance(r, 600);
    ck_assert_ptr_null(fassign_find("h", "1767225600/m1"));
    expect_record("h", 0, "failed_to_start");
    ck_assert_msg(strstr(record_of("h", 0)->reason, "m1 handed it back") != NULL, "%s",
                  record_of("h", 0)->reason);
    ck_assert_str_eq(record_of("h", 0)->node, "m1");
    expect_record("o", 0, "failed_to_start");
    ck_assert_str_eq(record_of("o", 0)->node, "m1");
    stop(r);
}
END_TEST

/* The leader is the only member: it accepts its own offer; its run fails
 * and is handed back as a retry, offered again after the backoff, and the
 * second attempt runs; no third (retries: 1). */
START_TEST(a_dispatched_run_that_fails_is_retried_per_retries)
{
    fmembers[0] = (struct fmember){"n", 2, "[]", false};
    nmembers = 1;
    exit_code = 1;
    struct runner *r = start("jobs:\n  - {name: d, schedule: '1 0 0 1 1 *', run_on: any, "
                             "retries: 1, retry_backoff: 1s, catchup: 0, command: ['true']}\n");
    advance(r, 4000);
    struct fassign *f = fassign_find("d", "1767225601");
    ck_assert_msg(ran("d", 1) == 2, "ran %d, %d procs; %s; life %s; %s", ran("d", 1), nprocs,
                  f != NULL ? f->a.value : "-", life("d", 1),
                  nrecords > 0 ? records[0].reason : "");
    ck_assert_str_eq(procs[1].trigger, "retry");
    ck_assert_ptr_null(fassign_find("d", "1767225601"));
    ck_assert_int_eq(records_of("d", 1), 2);
    stop(r);
}
END_TEST

/* A dispatched run that fails, with retries left: its retry keeps a
 * forbid job busy through the backoff (held in Redis, assign_end), so the
 * ticks that come meanwhile are skipped as busy, not run beside it; the
 * retry then runs. */
START_TEST(a_dispatched_retry_in_its_backoff_keeps_a_forbid_job_busy)
{
    fmembers[0] = (struct fmember){"n", 2, "[]", false};
    nmembers = 1;
    exit_code = 1;
    struct runner *r = start("jobs:\n  - {name: d, schedule: '* * * * * *', run_on: any, "
                             "concurrency: forbid, retries: 1, retry_backoff: 3s, "
                             "command: ['true']}\n");
    advance(r, 1000); /* T0 + 1 runs and fails at T0 + 1.1: its retry due at T0 + 4.1 */
    ck_assert_int_eq(ran("d", 1), 1);
    advance(r, 2400); /* T0 + 2, T0 + 3 come in the backoff */
    ck_assert_int_eq(ran("d", 2), 0);
    ck_assert_int_eq(ran("d", 3), 0);
    expect_record("d", 2, "skipped");
    ck_assert_msg(strstr(record_of("d", 2)->reason, "still alive") != NULL, "%s",
                  record_of("d", 2)->reason);
    ck_assert_int_gt(held_in_backoff, 0); /* the tend keeps it held (a long backoff) */
    advance(r, 1000);                     /* the retry, offered after its backoff, runs */
    ck_assert_int_eq(ran("d", 1), 2);
    stop(r);
}
END_TEST

/* A pause that comes after a dispatched tick's claim and acceptance: the
 * member hands the tick back at its go (it does not run), the leader
 * holds its marker while the pause lasts, and a resume without catch-up
 * records it skipped; with catch-up it runs. */
static struct runner *dispatched_paused_after_accept(void)
{
    fmembers[0] = (struct fmember){"n", 2, "[]", false};
    nmembers = 1;
    struct runner *r = start(DISPATCHED("d", ", catchup: 1h"));
    advance(r, 480); /* claimed ahead and offered to n */
    runner_on_message(r, "offer n", 7);
    advance(r, 10);
    struct fassign *f = fassign_find("d", "1767225601");
    ck_assert_msg(f != NULL && f->a.state == ASSIGN_ACCEPTED, "not accepted ahead");
    fpause[npause++] = (struct pause_entry){
        .job = "d", .raw = "{\"state\":\"paused\"}", .since_ms = T0 * 1000 + 990};
    runner_control_changed(r);
    advance(r, 600); /* past the instant, and a tend or two */
    ck_assert_int_eq(ran("d", 1), 0);
    f = fassign_find("d", "1767225601");
    ck_assert_msg(f != NULL && f->a.state == ASSIGN_CLAIMED, "not handed back: %s",
                  f != NULL ? f->a.value : "-");
    ck_assert_ptr_null(record_of("d", 1));
    return r;
}

START_TEST(a_pause_after_a_dispatched_claim_is_honoured_then_a_plain_resume_records_it)
{
    struct runner *r = dispatched_paused_after_accept();
    fpause[0] = (struct pause_entry){
        .job = "d", .raw = "{\"state\":\"resumed\"}", .resumed = true, .resumed_at = T0 + 1};
    runner_control_changed(r);
    advance(r, 300);
    ck_assert_int_eq(ran("d", 1), 0);
    expect_record("d", 1, "skipped");
    ck_assert_ptr_null(fassign_find("d", "1767225601"));
    stop(r);
}
END_TEST

START_TEST(a_pause_after_a_dispatched_claim_then_resume_catchup_runs_it)
{
    struct runner *r = dispatched_paused_after_accept();
    npause = 0; /* resume --catchup: the entry is gone */
    runner_control_changed(r);
    advance(r, 1500);
    ck_assert_int_eq(ran("d", 1), 1);
    expect_record("d", 1, "ok");
    stop(r);
}
END_TEST

START_TEST(the_leader_reads_what_is_outstanding_in_one_call_a_pass)
{
    members_are("m1", NULL);
    char yaml[4096] = "jobs:\n";
    for (int i = 0; i < 6; i++) {
        size_t n = strlen(yaml);
        snprintf(yaml + n, sizeof yaml - n,
                 "  - {name: d%d, schedule: '0 0 0 1 1 *', run_on: any, command: ['true']}\n", i);
    }
    struct runner *r = start(yaml);
    advance(r, 1000);
    ck_assert_int_ge(list_calls, 3);
    ck_assert_int_le(list_calls, 5); /* one a pass (250 ms), not one a job (24) */
    stop(r);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("runner");
    TCase *tc = tcase_create("runner");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, a_live_tick_runs_once_at_its_instant);
    tcase_add_test(tc, a_live_tick_is_claimed_ahead_and_goes_at_its_instant);
    tcase_add_test(tc, a_pool_runs_at_most_its_limit_first_come_first_served);
    tcase_add_test(tc, max_running_bounds_a_job_across_the_group);
    tcase_add_test(tc, forbid_skips_a_tick_that_fires_while_its_run_is_alive);
    tcase_add_test(tc, allow_overlaps_runs);
    tcase_add_test(tc, replace_stops_the_run_alive_then_runs_the_new_tick);
    tcase_add_test(tc, catchup_window_runs_the_missed_ticks_in_order);
    tcase_add_test(tc, catchup_zero_records_the_missed_ticks_missed);
    tcase_add_test(tc, catchup_last_runs_the_newest_and_supersedes_the_rest);
    tcase_add_test(tc, a_claim_whose_answer_was_lost_runs_its_tick_once);
    tcase_add_test(tc, a_claim_refused_as_not_the_leader_does_not_run);
    tcase_add_test(tc, a_pause_after_a_claim_holds_the_tick_and_resume_catchup_runs_it);
    tcase_add_test(tc, a_pause_after_a_claim_then_a_plain_resume_records_the_tick_skipped);
    tcase_add_test(tc, a_manual_run_of_a_forbid_job_waits_for_its_run);
    tcase_add_test(tc, a_handover_registers_the_runs_alive_on_their_own);
    tcase_add_test(tc, replace_supersedes_every_queued_tick_but_the_newest);
    tcase_add_test(tc, a_missed_tick_waits_queued_while_a_run_is_alive_elsewhere);
    tcase_add_test(tc, a_failed_run_is_retried_as_the_same_tick);
    tcase_add_test(tc, a_retry_in_its_backoff_keeps_a_forbid_job_busy);
    tcase_add_test(tc, a_retry_in_its_backoff_counts_for_max_running);
    tcase_add_test(tc, a_retry_let_go_releases_what_it_held);
    tcase_add_test(tc, a_lost_claim_is_settled_once_this_node_stops_leading);
    tcase_add_test(tc, a_tick_missed_while_paused_runs_when_resumed_with_catchup);
    tcase_add_test(tc, a_tick_that_came_due_while_paused_is_recorded_skipped_at_a_plain_resume);
    tcase_add_test(tc, a_tick_whose_claim_is_unsettled_is_decided_once_by_its_claim);
    tcase_add_test(tc, a_tick_whose_claim_is_unsettled_runs_once_answered_within_its_window);
    tcase_add_test(tc, a_pause_waits_for_the_settlement_of_a_tick_whose_claim_is_unsettled);
    tcase_add_test(tc, a_release_held_in_the_outbox_does_not_make_the_next_tick_busy);
    tcase_add_test(tc, a_tick_released_by_resume_catchup_then_let_go_is_recorded_not_started);
    tcase_add_test(tc,
                   a_tick_released_by_resume_catchup_whose_run_is_refused_is_recorded_not_started);
    tcase_add_test(tc, a_jittered_tick_is_claimed_ahead_of_its_delayed_instant_and_goes_then);
    tcase_add_test(tc, a_new_leader_starts_a_jittered_tick_at_the_same_instant_once);
    tcase_add_test(tc, a_manual_run_of_a_jittered_job_starts_at_once_without_a_delay);
    tcase_add_test(tc, a_missed_jittered_tick_is_late_from_its_delayed_instant);
    tcase_add_test(tc, a_claimed_tick_of_a_dispatched_job_is_offered_to_a_member);
    tcase_add_test(tc, a_marker_left_by_a_leader_that_died_is_offered_once_by_the_next);
    tcase_add_test(tc, a_member_lost_before_starting_a_tick_moves_it_once_naming_the_member);
    tcase_add_test(tc, a_failed_run_handed_back_is_offered_again_to_another_member);
    tcase_add_test(tc, a_dispatched_run_that_fails_is_retried_per_retries);
    tcase_add_test(tc, a_lost_run_waiting_for_room_keeps_a_forbid_job_busy);
    tcase_add_test(tc, an_all_tick_not_run_on_its_node_is_recorded_under_that_node);
    tcase_add_test(tc, a_marker_waiting_for_room_is_not_taken_for_an_ended_run_of_the_leader);
    tcase_add_test(tc, a_dispatched_retry_in_its_backoff_keeps_a_forbid_job_busy);
    tcase_add_test(tc, the_leader_reads_what_is_outstanding_in_one_call_a_pass);
    tcase_add_test(tc, a_pause_after_a_dispatched_claim_is_honoured_then_a_plain_resume_records_it);
    tcase_add_test(tc, a_pause_after_a_dispatched_claim_then_resume_catchup_runs_it);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
