/* metrics_write.c -- the metrics in Prometheus's text format 0.0.4
 * (metrics_write, metrics.h): the gauges the caller passes, then the
 * counts of metrics.c (metrics_int.h) family by family, each with its HELP
 * and TYPE, then the process's own (process_*, from /proc/self). It reads
 * the counts and changes nothing: the HTTP thread writes a copy made by
 * metrics_dup(), outside its lock. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "metrics_int.h"

/* The labels of the trigger outcomes (metrics_int.h), in their order. */
static const char *const trigger_outcomes[] = {"received", "rejected", "left", "lost"};

/* Writes a family's HELP and TYPE lines (name and help written raw). */
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

/* Job i of the job_count(m) to write: m's own, then "other". Borrowed
 * from m. */
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

/* The per-job families (runs, last runs, retries, hooks, triggers, pauses,
 * waits, write_dispatch's, durations, ticks not run). */
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
           "Ticks of the job waiting, by reason (pool: unclaimed, its pool is full; max_running: "
           "unclaimed, its own runs are at the limit; room: claimed, for a member with room, "
           "run_on other than leader): the leader's count, 0 on the other nodes.");
    static const char *const reasons[METRICS_WAIT_REASONS] = {
        [METRICS_WAIT_POOL] = "pool",
        [METRICS_WAIT_MAX_RUNNING] = "max_running",
        [METRICS_WAIT_ROOM] = "room"};
    for (size_t i = 0; i < m->njobs; i++) {
        const struct mjob *j = &m->jobs[i];
        const bool has[METRICS_WAIT_REASONS] = {j->limit_pool, j->limit_max, j->fleet};
        for (int r = 0; r < METRICS_WAIT_REASONS; r++) {
            if (!has[r])
                continue;
            fputs("baton_ticks_waiting{job_name=\"", out);
            label(out, j->name);
            fprintf(out, "\",reason=\"%s\"} %llu\n", reasons[r],
                    (unsigned long long)j->waiting[r]);
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

/* The process_* families, read from /proc/self (a family it cannot read
 * is left out); start_time_s: when the process started (Unix time). */
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
                    fprintf(out,
                            "baton_transitions_total{from=\"%s\",to=\"%s\",trigger=\"%s\"} %llu\n",
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
