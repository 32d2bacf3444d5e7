/* metrics.c -- the counting half of the metrics (metrics.h): the event
 * table that says what each log event counts, the state the caller sets
 * (pauses, limits, pools, the fleet), and the jobs' slots; metrics_write.c
 * writes the counts out (metrics_int.h is what the two share).
 *
 * The counters are plain integers in one struct with a flat array of jobs,
 * so that metrics_dup() is a few allocations and copies: the HTTP thread
 * copies under its lock and formats outside it. Jobs are found by name
 * through an open-addressing index (job_slot): every log line of a job
 * looks its slot up. */
#include <stdlib.h>
#include <string.h>

#include "metrics_int.h"
#include "pause.h"
#include "runlimits.h"

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
        memset(m->jobs[i].waiting, 0, sizeof m->jobs[i].waiting);
    for (size_t i = 0; i < n; i++)
        job_slot(m, w[i].job)->waiting[w[i].reason] += w[i].ticks;
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
