/* metrics.c -- see metrics.h.
 *
 * The counters are plain integers in one struct with a flat array of jobs,
 * so that metrics_dup() is two allocations and two copies: the HTTP thread
 * copies under its lock and formats outside it. Jobs are found by a linear
 * search: a handful of events per run, against at most a few thousand
 * names. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "facts.h"
#include "history.h"
#include "jobs.h"
#include "machine.h"
#include "metrics.h"
#include "pause.h"
#include "runlimits.h"

/* Histogram bounds, seconds: run durations, and start lateness (a catch-up
 * run starts late by design: it has its own trigger label). */
#define NBUCKETS 13
static const double duration_le[NBUCKETS] = {0.01, 0.05, 0.1, 0.5,  1,    5,    10,
                                             30,   60,   300, 900, 3600, 10800};
static const double lateness_le[NBUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                             0.25,  0.5,    1,     5,    30,    300};

/* Run triggers (run.h) with a start lateness: all but manual, which has no
 * tick to be late for. */
#define NTRIGGERS RUN_TRIGGER_MANUAL

struct histo {
    uint64_t n[NBUCKETS + 1]; /* per bucket, not cumulative; last: above all */
    uint64_t count;
    double sum;
};

/* What became of `baton trigger` requests: one per trigger_* event. */
static const char *const trigger_outcomes[] = {"received", "rejected", "left", "lost"};
enum { TRIGGER_RECEIVED, TRIGGER_REJECTED, TRIGGER_LEFT, TRIGGER_LOST, NTRIGGER_OUTCOMES };

#define NOTRUN_SLOTS 8 /* (outcome, reason) pairs per job; more fold into the last */

struct mjob {
    char name[JOB_NAME_MAX + 1];
    uint64_t runs[HO_COUNT]; /* job_end, by outcome */
    uint64_t retries;        /* job_retry */
    uint64_t hooks_ok, hooks_failed; /* hook_end, by outcome */
    uint64_t triggers[NTRIGGER_OUTCOMES]; /* trigger_*, by outcome */
    bool paused;             /* its own pause (job_paused, or metrics_set_pauses) */
    bool limit_pool, limit_max; /* it has a pool, a max_running (metrics_job_limits) */
    bool waiting_pool;          /* its ticks wait for its pool (else its max_running) */
    uint64_t waiting;           /* its ticks waiting for a limit (metrics_set_waiting) */
    bool fleet;                 /* it runs on members (metrics_job_fleet) */
    uint64_t reassigned, lost;  /* reassigned, lost (the leader's) */
    struct histo dispatch;      /* job_start of its dispatched ticks (the member's) */
    double last_run_s, last_success_s;
    struct histo duration;
    struct {
        uint8_t outcome, reason;
        uint64_t ticks;
    } notrun[NOTRUN_SLOTS];
    size_t nnotrun;
};

struct metrics {
    uint64_t events[LE_COUNT]; /* every event, by kind */
    uint64_t transitions[ST_COUNT][ST_COUNT][EV_COUNT];
    struct histo lateness[NTRIGGERS]; /* by enum run_trigger */
    uint64_t redis_errors[DURING_COUNT];
    char reasons[METRICS_MAX_REASONS][160];
    size_t nreasons;
    bool all_paused; /* `baton pause --all` */
    uint64_t reloads_ok, reloads_failed;
    bool last_reload_ok;
    int64_t drifting;     /* config_drift minus config_drift_resolved: nodes now */
    struct mjob *jobs; /* METRICS_MAX_JOBS at most, then "other" */
    size_t njobs, capjobs;
    /* The jobs by name (job_slot): open addressing, slot i + 1 of jobs (0:
     * empty), index_cap a power of two at least twice njobs; NULL in a copy
     * until it needs one. Every log line of a job looks its slot up, and a
     * reload of 10,000 jobs adds them all: a linear search made that
     * O(jobs) per line and O(jobs^2) per reload (95 ms on the loop). */
    uint32_t *index;
    size_t index_cap;
    struct mjob other;
    struct mpool {
        char name[JOB_NAME_MAX + 1];
        int limit, runs; /* runs < 0: not read */
    } * pools;           /* metrics_set_pools */
    size_t npools;
    struct metrics_node *nodes; /* metrics_set_fleet; node names owned */
    size_t nnodes;
};

static void nodes_free(struct metrics_node *v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        free((char *)v[i].node);
    free(v);
}

/* A copy of v[0..n) with its names (NULL on ENOMEM, or when n is 0). */
static struct metrics_node *nodes_dup(const struct metrics_node *v, size_t n)
{
    struct metrics_node *c = n > 0 ? calloc(n, sizeof *c) : NULL;
    for (size_t i = 0; c != NULL && i < n; i++) {
        c[i] = v[i];
        if ((c[i].node = strdup(v[i].node != NULL ? v[i].node : "")) == NULL) {
            nodes_free(c, i);
            return NULL;
        }
    }
    return c;
}

struct metrics *metrics_new(void)
{
    struct metrics *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    m->last_reload_ok = true;
    snprintf(m->other.name, sizeof m->other.name, "other");
    return m;
}

void metrics_free(struct metrics *m)
{
    if (m == NULL)
        return;
    free(m->jobs);
    free(m->index);
    free(m->pools);
    nodes_free(m->nodes, m->nnodes);
    free(m);
}

struct metrics *metrics_dup(const struct metrics *m)
{
    struct metrics *c = malloc(sizeof *c);
    if (c == NULL)
        return NULL;
    *c = *m;
    c->jobs = NULL;
    c->capjobs = m->njobs;
    c->index = NULL;
    c->index_cap = 0;
    c->pools = NULL;
    c->npools = 0;
    c->nodes = nodes_dup(m->nodes, m->nnodes);
    c->nnodes = c->nodes != NULL ? m->nnodes : 0; /* out of memory: written without them */
    if (m->npools > 0 && (c->pools = malloc(m->npools * sizeof *c->pools)) != NULL) {
        memcpy(c->pools, m->pools, m->npools * sizeof *c->pools);
        c->npools = m->npools; /* out of memory: written without its pools */
    }
    if (m->njobs > 0) {
        c->jobs = malloc(m->njobs * sizeof *c->jobs);
        if (c->jobs == NULL) {
            free(c->pools);
            nodes_free(c->nodes, c->nnodes);
            free(c);
            return NULL;
        }
        memcpy(c->jobs, m->jobs, m->njobs * sizeof *c->jobs);
    }
    return c;
}

/* ---- counting ---- */

static void histo_add(struct histo *h, const double *le, double v)
{
    size_t b = 0;
    while (b < NBUCKETS && v > le[b])
        b++;
    h->n[b]++;
    h->count++;
    h->sum += v;
}

/* FNV-1a. */
static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Rebuilds m->index for at least `want` jobs. Returns false on ENOMEM (the
 * old index, if any, stays). */
static bool index_build(struct metrics *m, size_t want)
{
    size_t cap = 64;
    while (cap < 2 * want)
        cap *= 2;
    uint32_t *ix = calloc(cap, sizeof *ix);
    if (ix == NULL)
        return false;
    for (size_t i = 0; i < m->njobs; i++) {
        size_t h = name_hash(m->jobs[i].name) & (cap - 1);
        while (ix[h] != 0)
            h = (h + 1) & (cap - 1);
        ix[h] = (uint32_t)(i + 1);
    }
    free(m->index);
    m->index = ix;
    m->index_cap = cap;
    return true;
}

/* The slot of job name, made when new. */
static struct mjob *job_slot(struct metrics *m, const char *name)
{
    if (name == NULL || name[0] == '\0' || strlen(name) > JOB_NAME_MAX)
        return &m->other;
    size_t want = m->njobs < METRICS_MAX_JOBS ? m->njobs + 1 : m->njobs;
    if (m->index_cap < 2 * want && !index_build(m, want))
        return &m->other;
    size_t mask = m->index_cap - 1, h = name_hash(name) & mask;
    for (; m->index[h] != 0; h = (h + 1) & mask)
        if (strcmp(m->jobs[m->index[h] - 1].name, name) == 0)
            return &m->jobs[m->index[h] - 1];
    if (m->njobs == METRICS_MAX_JOBS)
        return &m->other;
    if (m->njobs == m->capjobs) {
        size_t cap = m->capjobs == 0 ? 16 : 2 * m->capjobs;
        if (cap > METRICS_MAX_JOBS)
            cap = METRICS_MAX_JOBS;
        struct mjob *v = realloc(m->jobs, cap * sizeof *v);
        if (v == NULL)
            return &m->other;
        m->jobs = v;
        m->capjobs = cap;
    }
    struct mjob *j = &m->jobs[m->njobs++];
    memset(j, 0, sizeof *j);
    snprintf(j->name, sizeof j->name, "%s", name);
    m->index[h] = (uint32_t)m->njobs;
    return j;
}

/* The index of s in table (n used of cap, each len bytes), added when new;
 * the last slot takes everything once the table is full. */
static size_t intern(char *table, size_t len, size_t *n, size_t cap, const char *s)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(table + i * len, s) == 0)
            return i;
    if (*n == cap)
        return cap - 1;
    if (*n == cap - 1)
        s = "other";
    snprintf(table + *n * len, len, "%s", s);
    return (*n)++;
}

void metrics_add_job(struct metrics *m, const char *job)
{
    (void)job_slot(m, job);
}

/* The facts the rows read are the emitter's own values: an enum out of
 * its range (a bug) counts nothing rather than out of bounds. */
static void count_transition(struct metrics *m, const struct log_facts *f, int64_t now_ms)
{
    (void)now_ms;
    if ((unsigned)f->from < ST_COUNT && (unsigned)f->to < ST_COUNT &&
        (unsigned)f->trigger < EV_COUNT)
        m->transitions[f->from][f->to][f->trigger]++;
}

static void count_start(struct metrics *m, const struct log_facts *f, int64_t now_ms)
{
    (void)now_ms;
    double late = f->lateness_ms < 0 ? 0 : (double)f->lateness_ms / 1000.0;
    if ((unsigned)f->run_trigger < NTRIGGERS) /* manual: no tick to be late for */
        histo_add(&m->lateness[f->run_trigger], lateness_le, late);
    if (f->dispatched) /* started on the member that accepted it */
        histo_add(&job_slot(m, f->job)->dispatch, lateness_le, late);
}

static void count_end(struct metrics *m, const struct log_facts *f, int64_t now_ms)
{
    enum history_outcome o = f->outcome;
    if ((unsigned)o >= HO_COUNT)
        return;
    struct mjob *j = job_slot(m, f->job);
    j->runs[o]++;
    j->last_run_s = (double)now_ms / 1000.0;
    if (o == HO_OK)
        j->last_success_s = j->last_run_s;
    if (history_outcome_ran(o))
        histo_add(&j->duration, duration_le,
                  f->duration_ms < 0 ? 0 : (double)f->duration_ms / 1000.0);
}

static void count_not_run(struct metrics *m, const struct log_facts *f, int64_t now_ms)
{
    enum history_outcome o = f->outcome;
    (void)now_ms;
    if ((unsigned)o >= HO_COUNT)
        return;
    /* A range too long to count ("ticks": null) counts once. */
    int64_t ticks = f->ticks < 1 ? 1 : f->ticks;
    size_t r = intern(&m->reasons[0][0], sizeof m->reasons[0], &m->nreasons, METRICS_MAX_REASONS,
                      f->reason != NULL ? f->reason : "");
    struct mjob *j = job_slot(m, f->job);
    size_t k = 0;
    while (k < j->nnotrun && !(j->notrun[k].outcome == o && j->notrun[k].reason == r))
        k++;
    if (k == NOTRUN_SLOTS) {
        k = NOTRUN_SLOTS - 1; /* full: the last pair takes the rest */
    } else if (k == j->nnotrun) {
        j->notrun[k].outcome = (uint8_t)o;
        j->notrun[k].reason = (uint8_t)r;
        j->nnotrun++;
    }
    j->notrun[k].ticks += (uint64_t)ticks;
}

static void count_redis_error(struct metrics *m, const struct log_facts *f, int64_t now_ms)
{
    (void)now_ms;
    if ((unsigned)f->during < DURING_COUNT)
        m->redis_errors[f->during]++;
}

/* A failure the event names by itself: the label is fixed by the row. */
#define REDIS_FAILURE(fn, what)                                                                    \
    static void fn(struct metrics *m, const struct log_facts *f, int64_t now_ms)                   \
    {                                                                                              \
        (void)f;                                                                                   \
        (void)now_ms;                                                                              \
        m->redis_errors[what]++;                                                                   \
    }
REDIS_FAILURE(count_claim_failed, DURING_CLAIM)
REDIS_FAILURE(count_history_failed, DURING_HISTORY)
REDIS_FAILURE(count_handover_failed, DURING_HANDOVER)
REDIS_FAILURE(count_release_failed, DURING_RELEASE)
#undef REDIS_FAILURE

static void count_reloaded(struct metrics *m, const struct log_facts *f, int64_t now_ms)
{
    (void)f;
    (void)now_ms;
    m->reloads_ok++;
    m->last_reload_ok = true;
}

static void count_reload_failed(struct metrics *m, const struct log_facts *f, int64_t now_ms)
{
    (void)f;
    (void)now_ms;
    m->reloads_failed++;
    m->last_reload_ok = false;
}

static void count_hook_end(struct metrics *m, const struct log_facts *f, int64_t now_ms)
{
    (void)now_ms;
    struct mjob *j = job_slot(m, f->job);
    if (f->outcome == HO_OK)
        j->hooks_ok++;
    else
        j->hooks_failed++;
}

static void count_drift(struct metrics *m, const struct log_facts *f, int64_t now_ms)
{
    (void)f;
    (void)now_ms;
    m->drifting++;
}

static void count_drift_resolved(struct metrics *m, const struct log_facts *f, int64_t now_ms)
{
    (void)f;
    (void)now_ms;
    if (m->drifting > 0)
        m->drifting--;
}

static void count_retry(struct metrics *m, const struct log_facts *f, int64_t now_ms)
{
    (void)now_ms;
    job_slot(m, f->job)->retries++;
}

static void count_reassigned(struct metrics *m, const struct log_facts *f, int64_t now_ms)
{
    (void)now_ms;
    job_slot(m, f->job)->reassigned++;
}

static void count_lost(struct metrics *m, const struct log_facts *f, int64_t now_ms)
{
    (void)now_ms;
    job_slot(m, f->job)->lost++;
}

/* A trigger_* event: its job's count for outcome. */
#define TRIGGER_OUTCOME(fn, outcome)                                                               \
    static void fn(struct metrics *m, const struct log_facts *f, int64_t now_ms)                   \
    {                                                                                              \
        (void)now_ms;                                                                              \
        job_slot(m, f->job)->triggers[outcome]++;                                                  \
    }
TRIGGER_OUTCOME(count_trigger_received, TRIGGER_RECEIVED)
TRIGGER_OUTCOME(count_trigger_rejected, TRIGGER_REJECTED)
TRIGGER_OUTCOME(count_trigger_left, TRIGGER_LEFT)
TRIGGER_OUTCOME(count_trigger_lost, TRIGGER_LOST)
#undef TRIGGER_OUTCOME

/* job_paused / job_resumed: the leader saw a change; job "*" is every job. */
static void set_paused(struct metrics *m, const struct log_facts *f, bool paused)
{
    const char *job = f->job;
    if (job == NULL)
        return;
    if (strcmp(job, PAUSE_ALL) == 0)
        m->all_paused = paused;
    else
        job_slot(m, job)->paused = paused;
}

static void count_paused(struct metrics *m, const struct log_facts *f, int64_t now_ms)
{
    (void)now_ms;
    set_paused(m, f, true);
}

static void count_resumed(struct metrics *m, const struct log_facts *f, int64_t now_ms)
{
    (void)now_ms;
    set_paused(m, f, false);
}

void metrics_set_pauses(struct metrics *m, const struct pause_list *l)
{
    const struct pause_entry *all = pause_find(l, PAUSE_ALL);
    m->all_paused = all != NULL && !all->resumed;
    for (size_t i = 0; i < m->njobs; i++) {
        const struct pause_entry *e = pause_find(l, m->jobs[i].name);
        m->jobs[i].paused = e != NULL && !e->resumed;
    }
}

void metrics_job_limits(struct metrics *m, const char *job, bool pool, bool max_running)
{
    struct mjob *j = job_slot(m, job);
    if (j == &m->other)
        return; /* no series of its own: none for its waits either */
    j->limit_pool = pool;
    j->limit_max = max_running;
}

void metrics_job_fleet(struct metrics *m, const char *job, bool fleet)
{
    struct mjob *j = job_slot(m, job);
    if (j != &m->other)
        j->fleet = fleet;
}

void metrics_set_fleet(struct metrics *m, const struct metrics_node *v, size_t n)
{
    struct metrics_node *c = nodes_dup(v, n);
    if (n > 0 && c == NULL)
        return; /* out of memory: the last ones stay */
    nodes_free(m->nodes, m->nnodes);
    m->nodes = c;
    m->nnodes = n;
}

void metrics_set_pools(struct metrics *m, const struct limits_pool *v, size_t n)
{
    struct mpool *p = n > 0 ? calloc(n, sizeof *p) : NULL;
    if (n > 0 && p == NULL)
        return; /* out of memory: the last ones stay */
    for (size_t i = 0; i < n; i++) {
        snprintf(p[i].name, sizeof p[i].name, "%s", v[i].name);
        p[i].limit = v[i].limit;
        p[i].runs = v[i].runs;
    }
    free(m->pools);
    m->pools = p;
    m->npools = n;
}

void metrics_set_waiting(struct metrics *m, const struct metrics_wait *w, size_t n)
{
    for (size_t i = 0; i < m->njobs; i++)
        m->jobs[i].waiting = 0;
    for (size_t i = 0; i < n; i++) {
        struct mjob *j = job_slot(m, w[i].job);
        j->waiting = w[i].ticks;
        j->waiting_pool = w[i].pool;
    }
}

/* What each event kind counts, one row per kind: every event counts in
 * baton_events_total; fn counts what it says besides (NULL: nothing else,
 * and `counts` says why). A kind without a row is a bug that
 * check_metrics finds (metrics_event_counts() returns NULL for it). */
typedef void (*count_fn)(struct metrics *m, const struct log_facts *f, int64_t now_ms);
static const struct {
    count_fn fn;
    const char *counts;
} event_rows[LE_COUNT] = {
    [LE_STARTED] = {NULL, "only events: process_start_time_seconds tells a restart"},
    [LE_STOPPED] = {NULL, "only events: nobody scrapes a stopped process"},
    [LE_TRANSITION] = {count_transition, "transitions_total (the state is a gauge)"},
    [LE_MACHINE_LOOP] = {NULL, "only events (a table bug: alert on any)"},
    [LE_FOLLOWING] = {NULL, "only events: the term is a gauge"},
    [LE_LEASE_RENEWED] = {NULL, "only events (at debug level only): transitions_total counts "
                                "each renewal"},
    [LE_LEASE_DEADLINE_MISSED] = {NULL, "only events (the node was stalled: alert on any)"},
    [LE_LEASE_RELEASED] = {NULL, "only events: transitions_total counts the release"},
    [LE_LEASE_RELEASE_FAILED] = {count_release_failed, "redis_errors_total{during=release}"},
    [LE_STALE_LEASE_RELEASED] = {NULL, "only events"},
    [LE_REDIS_CONNECTED] = {NULL, "only events: redis_up is a gauge"},
    [LE_SECRET_FILE_MODE] = {NULL, "only events (a warning at start: alert on any)"},
    [LE_TLS_VERIFY_OFF] = {NULL, "only events (a warning at start: alert on any)"},
    [LE_REDIS_UNREACHABLE] = {count_redis_error, "redis_errors_total{during} (the first failure "
                                                 "of an outage)"},
    [LE_REDIS_REACHABLE] = {NULL, "only events: redis_up is a gauge"},
    [LE_WATCH_LOST] = {NULL, "only events (at debug level only)"},
    [LE_HTTP_LISTENING] = {NULL, "only events: whoever scrapes knows"},
    [LE_HTTP_TLS_RELOADED] = {NULL, "only events: a certificate's renewal"},
    [LE_HTTP_TLS_RELOAD_FAILED] = {NULL, "only events (the old certificate stays: alert on any)"},
    [LE_SYSTEMD_NOTIFY] = {NULL, "only events"},
    [LE_SIGNAL_RECEIVED] = {NULL, "only events"},
    [LE_STEP_DOWN_REQUESTED] = {NULL, "only events: transitions_total counts the step-down"},
    [LE_HANDOVER] = {NULL, "only events: transitions_total counts the handover"},
    [LE_HANDOVER_FAILED] = {count_handover_failed, "redis_errors_total{during=handover}"},
    [LE_DRAINING] = {NULL, "only events: jobs_running is a gauge"},
    [LE_DRAIN_TIMEOUT] = {NULL, "only events: job_runs_total counts the runs killed"},
    [LE_RELOADED] = {count_reloaded, "reloads_total{result=ok}, config_last_reload_successful"},
    [LE_RELOAD_FAILED] = {count_reload_failed,
                          "reloads_total{result=failed}, config_last_reload_successful"},
    [LE_CATCH_UP] = {NULL, "only events: job_start_lateness_seconds{trigger=catchup} counts "
                           "the runs, ticks_not_run_total the rest"},
    [LE_CATCH_UP_SKIPPED] = {NULL, "only events: ticks_not_run_total counts the ticks it "
                                   "leaves"},
    [LE_CLAIM_AHEAD] = {NULL, "only events: job_start_lateness_seconds shows what it cures"},
    [LE_NO_HIGH_WATER_MARK] = {NULL, "only events"},
    [LE_TICK_SKIPPED] = {count_not_run, "ticks_not_run_total{job_name,outcome,reason}"},
    [LE_TICK_MOVE_REFUSED] = {NULL, "only events (a table bug: alert on any)"},
    [LE_CLAIM_REFUSED] = {NULL, "only events (another leader: alert on any)"},
    [LE_LIMIT_WAIT] = {NULL, "only events: ticks_waiting is a gauge (the leader's runner)"},
    [LE_LIMIT_WAITED] = {NULL, "only events: ticks_waiting is a gauge (the leader's runner)"},
    [LE_ASSIGNED] = {NULL, "only events: the run is counted where it ends (job_runs_total)"},
    [LE_ACCEPTED] = {NULL, "only events: the run is counted where it ends (job_runs_total)"},
    [LE_REASSIGNED] = {count_reassigned, "offers_reassigned_total{job_name} (an offer moved: a "
                                         "member slow or gone)"},
    [LE_LOST] = {count_lost, "runs_lost_total{job_name} (the run's history record says lost, "
                             "with its member)"},
    [LE_HANDED_BACK] = {NULL, "only events: the tick is counted where it ends"},
    [LE_API_CALL] = {NULL, "only events: the audit trail of the control API"},
    [LE_API_TOKENS_RELOAD_FAILED] = {NULL, "only events (the old tokens stay: alert on any)"},
    [LE_CLAIM_FAILED] = {count_claim_failed, "redis_errors_total{during=claim}"},
    [LE_CLAIM_FAILURES_ENDED] = {NULL, "only events: each failure is counted as it happens "
                                       "(redis_errors_total{during=claim})"},
    [LE_CLAIM_RECOVERED] = {NULL, "only events: the tick is counted where it ends (job_runs_total, "
                                  "ticks_not_run_total)"},
    [LE_JOB_START] = {count_start, "job_start_lateness_seconds{trigger}"},
    [LE_JOB_OUTPUT] = {NULL, "only events: the lines a job wrote"},
    [LE_JOB_END] = {count_end, "job_runs_total{job_name,outcome}, job_run_duration_seconds, "
                               "job_last_run_timestamp_seconds, "
                               "job_last_success_timestamp_seconds"},
    [LE_RUN_STATE] = {NULL, "only events (at debug level only)"},
    [LE_JOB_RETRY] = {count_retry, "job_retries_total{job_name}"},
    [LE_JOB_TIMEOUT] = {NULL, "only events: job_runs_total{outcome=timeout} counts the run "
                              "when it ends"},
    [LE_RUN_LOST] = {NULL, "only events: job_runs_total counts the run when it ends"},
    [LE_HISTORY_WRITE_FAILED] = {count_history_failed, "redis_errors_total{during=history}"},
    [LE_TRIGGER_RECEIVED] = {count_trigger_received, "triggers_total{job_name,outcome=received}"},
    [LE_TRIGGER_REJECTED] = {count_trigger_rejected, "triggers_total{job_name,outcome=rejected}"},
    [LE_TRIGGER_LEFT] = {count_trigger_left, "triggers_total{job_name,outcome=left}"},
    [LE_TRIGGER_LOST] = {count_trigger_lost, "triggers_total{job_name,outcome=lost}"},
    [LE_LOG_LINES_DROPPED] = {NULL, "only events: log_lines_dropped_total is the log's count, "
                                    "made at each drop (a gauge of metrics_write)"},
    [LE_HOOK_START] = {NULL, "only events: hook_runs_total counts the hook when it ends"},
    [LE_HOOK_OUTPUT] = {NULL, "only events: the lines a hook wrote"},
    [LE_HOOK_END] = {count_hook_end, "hook_runs_total{job_name,outcome}"},
    [LE_CONFIG_DRIFT] = {count_drift, "config_drift_nodes up by one"},
    [LE_CONFIG_DRIFT_RESOLVED] = {count_drift_resolved, "config_drift_nodes down by one"},
    [LE_JOB_PAUSED] = {count_paused, "job_paused{job_name} to 1 (job *: every job)"},
    [LE_JOB_RESUMED] = {count_resumed, "job_paused{job_name} to 0 (job *: every job)"},
};

const char *metrics_event_counts(enum log_event ev)
{
    return ev >= 0 && ev < LE_COUNT ? event_rows[ev].counts : NULL;
}

void metrics_observe(struct metrics *m, enum log_event ev, const struct log_facts *facts,
                     int64_t now_unix_ms)
{
    if (ev < 0 || ev >= LE_COUNT)
        return;
    m->events[ev]++;
    /* The rows of the events that carry facts read them; the others count
     * by their kind alone (given NULL). */
    if (event_rows[ev].fn != NULL && (facts != NULL || !log_facts_carried(ev)))
        event_rows[ev].fn(m, facts, now_unix_ms);
}

/* ---- writing ---- */

static void family(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Writes s as a label value: backslash, double quote and newline escaped. */
static void label(FILE *out, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\' || *s == '"')
            fputc('\\', out);
        if (*s == '\n')
            fputs("\\n", out);
        else
            fputc(*s, out);
    }
}

/* Writes a histogram's series; lbl is its other labels ("job_name=\"x\","
 * or ""), written raw. */
static void histo_write(FILE *out, const char *name, const char *lbl, const struct histo *h,
                        const double *le)
{
    uint64_t cum = 0;
    for (size_t b = 0; b <= NBUCKETS; b++) {
        cum += h->n[b];
        if (b < NBUCKETS)
            fprintf(out, "%s_bucket{%sle=\"%g\"} %llu\n", name, lbl, le[b],
                    (unsigned long long)cum);
        else
            fprintf(out, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, lbl, (unsigned long long)cum);
    }
    /* Strip the trailing comma for the _sum and _count label sets. */
    size_t n = strlen(lbl);
    fprintf(out, "%s_sum{%.*s} %.6f\n", name, (int)(n > 0 ? n - 1 : 0), lbl, h->sum);
    fprintf(out, "%s_count{%.*s} %llu\n", name, (int)(n > 0 ? n - 1 : 0), lbl,
            (unsigned long long)h->count);
}

/* How many jobs to write: those with their own series, and "other" when
 * it was used. */
static size_t job_count(const struct metrics *m)
{
    const struct mjob *o = &m->other;
    bool used = o->duration.count > 0 || o->nnotrun > 0 || o->last_run_s > 0 || o->retries > 0 ||
                o->hooks_ok > 0 || o->hooks_failed > 0 || o->dispatch.count > 0 ||
                o->reassigned > 0 || o->lost > 0;
    for (int t = 0; t < NTRIGGER_OUTCOMES; t++)
        used = used || o->triggers[t] > 0;
    return m->njobs + (used ? 1 : 0);
}

static const struct mjob *job_at(const struct metrics *m, size_t i)
{
    return i < m->njobs ? &m->jobs[i] : &m->other;
}

/* The jobs that run on members (run_on other than leader): what the
 * leader moved or lost of them, and how long their ticks took to reach
 * their member's exec; then each node's capacity and its use. */
static void write_dispatch(const struct metrics *m, FILE *out)
{
    size_t n = job_count(m);
    static const char *const counters[2][2] = {
        {"baton_offers_reassigned_total",
         "Ticks of a job with run_on other than leader that this node, as leader, offered again "
         "(reassigned): an offer not accepted in time, or a run accepted by a member lost before "
         "it started it."},
        {"baton_runs_lost_total",
         "Runs of a job with run_on other than leader that this node, as leader, recorded lost: "
         "their member's registration lapsed while they ran (the member cut off, frozen or "
         "killed)."},
    };
    for (int c = 0; c < 2; c++) {
        family(out, counters[c][0], "counter", counters[c][1]);
        for (size_t i = 0; i < n; i++) {
            const struct mjob *j = job_at(m, i);
            uint64_t v = c == 0 ? j->reassigned : j->lost;
            if (!j->fleet && v == 0)
                continue;
            fprintf(out, "%s{job_name=\"", counters[c][0]);
            label(out, j->name);
            fprintf(out, "\"} %llu\n", (unsigned long long)v);
        }
    }
    family(out, "baton_dispatch_seconds", "histogram",
           "From a dispatched tick's instant (its tick, plus its jitter) to its command's exec on "
           "this node, the member that accepted it, by job (run_on other than leader).");
    for (size_t i = 0; i < n; i++) {
        const struct mjob *j = job_at(m, i);
        if (j->dispatch.count == 0)
            continue;
        char lbl[JOB_NAME_MAX + 32];
        snprintf(lbl, sizeof lbl, "job_name=\"%s\",", j->name); /* names need no escaping */
        histo_write(out, "baton_dispatch_seconds", lbl, &j->dispatch, lateness_le);
    }
    static const char *const gauges[3][2] = {
        {"baton_fleet_capacity",
         "Each node's capacity (baton.yaml): the most runs of members' ticks it takes at once, "
         "from its last heartbeat as this node last read them."},
        {"baton_fleet_runs",
         "Each node's capacity in use: the runs of ticks offered to it that it accepted and has "
         "not ended, from its last heartbeat as this node last read them."},
        {"baton_fleet_offers",
         "Ticks offered to each node and not yet accepted nor past their deadline, counted in "
         "Redis at this node's last read."},
    };
    for (int g = 0; g < 3; g++) {
        family(out, gauges[g][0], "gauge", gauges[g][1]);
        for (size_t i = 0; i < m->nnodes; i++) {
            const struct metrics_node *d = &m->nodes[i];
            int64_t v = g == 0 ? d->capacity : g == 1 ? d->runs : d->offers;
            if (v < 0)
                continue; /* not known (an older node's heartbeat, a failed read) */
            fprintf(out, "%s{node=\"", gauges[g][0]);
            label(out, d->node);
            fprintf(out, "\"} %lld\n", (long long)v);
        }
    }
}

static void write_jobs(const struct metrics *m, FILE *out)
{
    size_t n = job_count(m);
    family(out, "baton_job_runs_total", "counter",
           "Runs that ended on this node, by job and outcome (ok, failed, timeout, killed, "
           "failed_to_start).");
    for (size_t i = 0; i < n; i++) {
        const struct mjob *j = job_at(m, i);
        for (int o = 0; o < HO_COUNT; o++) {
            if (j->runs[o] == 0 && o != HO_OK && o != HO_FAILED)
                continue; /* ok and failed always, so that rate() works from the start */
            fputs("baton_job_runs_total{job_name=\"", out);
            label(out, j->name);
            fprintf(out, "\",outcome=\"%s\"} %llu\n", history_outcome_name((enum history_outcome)o),
                    (unsigned long long)j->runs[o]);
        }
    }
    family(out, "baton_job_last_run_timestamp_seconds", "gauge",
           "When the job's last run on this node ended (Unix time).");
    for (size_t i = 0; i < n; i++) {
        const struct mjob *j = job_at(m, i);
        if (j->last_run_s <= 0)
            continue;
        fputs("baton_job_last_run_timestamp_seconds{job_name=\"", out);
        label(out, j->name);
        fprintf(out, "\"} %.3f\n", j->last_run_s);
    }
    family(out, "baton_job_last_success_timestamp_seconds", "gauge",
           "When the job's last successful run on this node ended (Unix time).");
    for (size_t i = 0; i < n; i++) {
        const struct mjob *j = job_at(m, i);
        if (j->last_success_s <= 0)
            continue;
        fputs("baton_job_last_success_timestamp_seconds{job_name=\"", out);
        label(out, j->name);
        fprintf(out, "\"} %.3f\n", j->last_success_s);
    }
    family(out, "baton_job_retries_total", "counter",
           "Failed runs tried again on this node (job_retry), by job.");
    for (size_t i = 0; i < n; i++) {
        const struct mjob *j = job_at(m, i);
        fputs("baton_job_retries_total{job_name=\"", out);
        label(out, j->name);
        fprintf(out, "\"} %llu\n", (unsigned long long)j->retries);
    }
    family(out, "baton_hook_runs_total", "counter",
           "Hooks (on_failure, on_success) this node ran, by job and outcome (ok, or failed: "
           "a non-zero exit, a timeout, a signal, or no start).");
    for (size_t i = 0; i < n; i++) {
        const struct mjob *j = job_at(m, i);
        if (j->hooks_ok + j->hooks_failed == 0)
            continue;
        fputs("baton_hook_runs_total{job_name=\"", out);
        label(out, j->name);
        fprintf(out, "\",outcome=\"ok\"} %llu\n", (unsigned long long)j->hooks_ok);
        fputs("baton_hook_runs_total{job_name=\"", out);
        label(out, j->name);
        fprintf(out, "\",outcome=\"failed\"} %llu\n", (unsigned long long)j->hooks_failed);
    }
    family(out, "baton_triggers_total", "counter",
           "`baton trigger` requests this node handled as leader, by job and outcome: received "
           "(taken to run), rejected (no such job here), left (claimed too late to start: the "
           "next leader runs it), lost (its node stopped answering while it ran).");
    for (size_t i = 0; i < n; i++) {
        const struct mjob *j = job_at(m, i);
        for (int t = 0; t < NTRIGGER_OUTCOMES; t++) {
            if (j->triggers[t] == 0 && t != TRIGGER_RECEIVED)
                continue; /* received always, so that rate() works from the start */
            fputs("baton_triggers_total{job_name=\"", out);
            label(out, j->name);
            fprintf(out, "\",outcome=\"%s\"} %llu\n", trigger_outcomes[t],
                    (unsigned long long)j->triggers[t]);
        }
    }
    family(out, "baton_job_paused", "gauge",
           "1 while the job is paused for the group (`baton pause`, its own or --all), else 0.");
    for (size_t i = 0; i < m->njobs; i++) {
        fputs("baton_job_paused{job_name=\"", out);
        label(out, m->jobs[i].name);
        fprintf(out, "\"} %d\n", m->jobs[i].paused || m->all_paused);
    }
    family(out, "baton_ticks_waiting", "gauge",
           "Ticks of the job waiting, unclaimed, for a slot of a fleet-wide limit, by reason "
           "(pool: its pool is full; max_running: its own runs are at the limit): the leader's "
           "count, 0 on the other nodes.");
    for (size_t i = 0; i < m->njobs; i++) {
        const struct mjob *j = &m->jobs[i];
        for (int pool = 1; pool >= 0; pool--) {
            if (!(pool ? j->limit_pool : j->limit_max))
                continue;
            fputs("baton_ticks_waiting{job_name=\"", out);
            label(out, j->name);
            fprintf(out, "\",reason=\"%s\"} %llu\n", pool ? "pool" : "max_running",
                    (unsigned long long)(j->waiting_pool == (pool != 0) ? j->waiting : 0));
        }
    }
    write_dispatch(m, out);
    family(out, "baton_job_run_duration_seconds", "histogram",
           "How long the runs that ended on this node took, by job.");
    for (size_t i = 0; i < n; i++) {
        const struct mjob *j = job_at(m, i);
        if (j->duration.count == 0)
            continue;
        char lbl[JOB_NAME_MAX + 32];
        snprintf(lbl, sizeof lbl, "job_name=\"%s\",", j->name); /* names need no escaping */
        histo_write(out, "baton_job_run_duration_seconds", lbl, &j->duration, duration_le);
    }
    family(out, "baton_ticks_not_run_total", "counter",
           "Ticks this node decided not to run, by job, outcome (skipped, superseded, missed) "
           "and reason.");
    for (size_t i = 0; i < n; i++) {
        const struct mjob *j = job_at(m, i);
        for (size_t k = 0; k < j->nnotrun; k++) {
            fputs("baton_ticks_not_run_total{job_name=\"", out);
            label(out, j->name);
            fprintf(out, "\",outcome=\"%s\",reason=\"",
                    history_outcome_name((enum history_outcome)j->notrun[k].outcome));
            label(out, m->reasons[j->notrun[k].reason]);
            fprintf(out, "\"} %llu\n", (unsigned long long)j->notrun[k].ticks);
        }
    }
}

static void write_process(FILE *out, double start_time_s)
{
    long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "re");
    size_t n = f != NULL ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f != NULL)
        fclose(f);
    buf[n] = '\0';
    /* Fields after the command name (which may hold spaces): state is 3,
     * utime 14, stime 15, vsize 23, rss 24. */
    const char *p = strrchr(buf, ')');
    unsigned long long v[24] = {0};
    for (int field = 3; p != NULL && field <= 24; field++) {
        p = strchr(p + 1, ' ');
        if (p == NULL)
            break;
        if (field >= 14)
            v[field - 1] = strtoull(p + 1, NULL, 10);
    }
    if (tick > 0) {
        family(out, "process_cpu_seconds_total", "counter",
               "User and system CPU time spent by baton run (not its jobs).");
        fprintf(out, "process_cpu_seconds_total %.2f\n", (double)(v[13] + v[14]) / (double)tick);
    }
    family(out, "process_resident_memory_bytes", "gauge", "Resident memory size.");
    fprintf(out, "process_resident_memory_bytes %llu\n", v[23] * (unsigned long long)page);
    family(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size.");
    fprintf(out, "process_virtual_memory_bytes %llu\n", v[22]);
    family(out, "process_start_time_seconds", "gauge", "When the process started (Unix time).");
    fprintf(out, "process_start_time_seconds %.3f\n", start_time_s);
    size_t fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d != NULL) {
        for (struct dirent *e = readdir(d); e != NULL; e = readdir(d))
            if (e->d_name[0] != '.')
                fds++;
        closedir(d);
        family(out, "process_open_fds", "gauge", "Open file descriptors.");
        fprintf(out, "process_open_fds %zu\n", fds > 0 ? fds - 1 : 0); /* not the DIR's own */
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        family(out, "process_max_fds", "gauge", "Limit of open file descriptors.");
        fprintf(out, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
    }
}

int metrics_write(const struct metrics *m, const struct metrics_gauges *g, FILE *out)
{
    family(out, "baton_build_info", "gauge",
           "Always 1: baton run's version, its group and its node name, to join on.");
    fputs("baton_build_info{version=\"", out);
    label(out, g->version != NULL ? g->version : "unknown");
    fputs("\",group=\"", out);
    label(out, g->group != NULL ? g->group : "");
    fputs("\",node=\"", out);
    label(out, g->node != NULL ? g->node : "");
    fputs("\"} 1\n", out);
    family(out, "baton_state", "gauge",
           "The supervisor's state: 1 for the current one, 0 for the others.");
    for (int s = 0; s < ST_COUNT; s++)
        fprintf(out, "baton_state{state=\"%s\"} %d\n", machine_state_name((enum machine_state)s),
                s == g->state);
    family(out, "baton_is_leader", "gauge", "1 while this node leads its group, else 0.");
    fprintf(out, "baton_is_leader %d\n", g->is_leader);
    family(out, "baton_term", "gauge",
           "The term this node leads or follows (the group's fencing token; 0: none seen yet).");
    fprintf(out, "baton_term %llu\n", (unsigned long long)g->term);
    family(out, "baton_lease_remaining_seconds", "gauge",
           "Time left before this node's lease runs out unless renewed (0 when not leading).");
    fprintf(out, "baton_lease_remaining_seconds %.3f\n", g->lease_left_s > 0 ? g->lease_left_s : 0);
    family(out, "baton_jobs_running", "gauge", "Runs alive on this node.");
    fprintf(out, "baton_jobs_running %zu\n", g->running);
    family(out, "baton_claim_ahead_seconds", "gauge",
           "How far ahead of its instant the leader claims a live tick and prepares its run: "
           "25 ms, doubled up to 250 ms when one instant's runs outgrow it, shrunk back as they "
           "fit (0 when not leading).");
    fprintf(out, "baton_claim_ahead_seconds %.3f\n", g->claim_ahead_s > 0 ? g->claim_ahead_s : 0);
    family(out, "baton_redis_up", "gauge",
           "0 while Redis is unreachable (from the first failure of an outage to the next "
           "success), else 1.");
    fprintf(out, "baton_redis_up %d\n", g->redis_up);

    family(out, "baton_events_total", "counter",
           "Events the supervisor logged, by kind, whatever log.level writes (baton(1), LOG "
           "EVENTS, lists them).");
    for (int e = 0; e < LE_COUNT; e++)
        if (m->events[e] != 0)
            fprintf(out, "baton_events_total{event=\"%s\"} %llu\n",
                    log_event_name((enum log_event)e), (unsigned long long)m->events[e]);
    family(out, "baton_transitions_total", "counter",
           "State transitions, by from, to and trigger (routine renewals and polls included).");
    for (int f = 0; f < ST_COUNT; f++)
        for (int t = 0; t < ST_COUNT; t++)
            for (int e = 0; e < EV_COUNT; e++)
                if (m->transitions[f][t][e] != 0)
                    fprintf(out, "baton_transitions_total{from=\"%s\",to=\"%s\",trigger=\"%s\"} %llu\n",
                            machine_state_name((enum machine_state)f),
                            machine_state_name((enum machine_state)t),
                            machine_event_name((enum machine_event)e),
                            (unsigned long long)m->transitions[f][t][e]);
    family(out, "baton_redis_errors_total", "counter",
           "Redis failures the log reports, by what was being done: the first failure of each "
           "outage (campaign, renew...), and every failed claim, history write, handover and "
           "release.");
    for (int d = 0; d < DURING_COUNT; d++)
        if (m->redis_errors[d] != 0)
            fprintf(out, "baton_redis_errors_total{during=\"%s\"} %llu\n",
                    log_during_name((enum log_during)d), (unsigned long long)m->redis_errors[d]);
    family(out, "baton_reloads_total", "counter", "SIGHUP reloads, by result (ok, failed).");
    fprintf(out, "baton_reloads_total{result=\"ok\"} %llu\n", (unsigned long long)m->reloads_ok);
    fprintf(out, "baton_reloads_total{result=\"failed\"} %llu\n",
            (unsigned long long)m->reloads_failed);
    family(out, "baton_log_lines_dropped_total", "counter",
           "Log lines dropped because the log's reader (stdout) fell behind: job and hook output "
           "beyond 4 MiB waiting, other lines beyond 5 MiB; counted at each drop.");
    fprintf(out, "baton_log_lines_dropped_total %llu\n", (unsigned long long)g->log_lines_dropped);
    family(out, "baton_config_drift_nodes", "gauge",
           "Nodes whose effective jobs differ from this leader's (config_drift), as this node "
           "last saw as leader.");
    fprintf(out, "baton_config_drift_nodes %lld\n", (long long)m->drifting);
    family(out, "baton_config_last_reload_successful", "gauge",
           "0 when the last reload was refused (the running configuration stayed), else 1.");
    fprintf(out, "baton_config_last_reload_successful %d\n", m->last_reload_ok);
    family(out, "baton_job_start_lateness_seconds", "histogram",
           "From a run's scheduled instant to its start, by trigger (schedule, catchup, retry).");
    for (size_t t = 0; t < NTRIGGERS; t++) {
        if (m->lateness[t].count == 0 && t > 0)
            continue;
        char lbl[48];
        snprintf(lbl, sizeof lbl, "trigger=\"%s\",", run_trigger_name((enum run_trigger)t));
        histo_write(out, "baton_job_start_lateness_seconds", lbl, &m->lateness[t], lateness_le);
    }
    family(out, "baton_pool_limit", "gauge",
           "The most runs of a pool's jobs alive at once across the group (jobs.yaml's pools:).");
    for (size_t i = 0; i < m->npools; i++)
        fprintf(out, "baton_pool_limit{pool=\"%s\"} %d\n", m->pools[i].name, m->pools[i].limit);
    family(out, "baton_pool_runs", "gauge",
           "Runs of a pool's jobs alive across the group, as counted in Redis (every node's, and "
           "an earlier leader's) at this node's last read (every poll; every 2 s while watched).");
    for (size_t i = 0; i < m->npools; i++)
        if (m->pools[i].runs >= 0)
            fprintf(out, "baton_pool_runs{pool=\"%s\"} %d\n", m->pools[i].name, m->pools[i].runs);
    write_jobs(m, out);
    write_process(out, g->start_time_s);
    return fflush(out) != 0 || ferror(out) ? -1 : 0;
}
