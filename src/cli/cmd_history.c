/* cmd_history.c -- `baton history JOB [-c FILE] [--json] [--count N]`: the
 * recent runs of a job, newest first, from its history stream in Redis
 * (baton:{G}:runs:JOB, written by the leader's runner at the end of every
 * run; capped by the config's `history`).
 *
 *   job tick: the last 3 runs, newest first
 *   SCHEDULED_AT          NODE   TERM  STARTED                   DURATION  OUTCOME      ATTEMPT
 * RUN_ID 2026-01-02T07:10:04Z  web-1  7     2026-01-02T07:10:04.002Z  3ms       ok (exit 0)  1
 * 1767337804-7-1-12
 *   ...
 *
 * A job that is not in jobs.yaml (removed, or another node's file) is still
 * looked up; the header says "(not in jobs.yaml)". No runs: "no runs recorded
 * for JOB". With --json: a JSON array of runs, newest first, each
 *   {"id": "1767337804123-0", "run_id": "...", "node": "web-1", "term": 7,
 *    "scheduled_at": "2026-01-02T07:10:04Z", "started": "...Z" | null,
 *    "duration_ms": 3, "outcome": "ok|failed|timeout|killed|skipped",
 *    "result": "exit 0" | "signal TERM" | "", "attempt": 1}
 * (numbers are null when the entry lacks them).
 *
 * Exit: 0; 1 when Redis cannot be reached or answers oddly; 2 for a bad
 * argument. jobs.yaml is only read for the "(not in jobs.yaml)" note: when it
 * cannot be loaded, a warning goes to stderr and the history is printed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "history.h"
#include "jobs.h"
#include "log.h"
#include "tools.h"

#define HISTORY_COUNT_DEFAULT 20
#define HISTORY_COUNT_MAX     10000

static const char help_text[] =
    "\n"
    "Prints the recent runs of JOB, newest first: scheduled time, node, term,\n"
    "start, duration, outcome, attempt and run id.\n"
    "\n"
    "options:\n"
    "  -c, --config FILE  baton.yaml (default ./baton.yaml, then /etc/baton/baton.yaml)\n"
    "  -n, --count N      how many runs, 1-10000 (default 20)\n"
    "  --json             print a JSON array of runs\n"
    "\n"
    "exit status: 0; 1 Redis unreachable; 2 usage.\n";

/* Parses --count: digits only, 1..HISTORY_COUNT_MAX. */
static bool parse_count(const char *s, long *out)
{
    char *end = NULL;
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < 1 || v > HISTORY_COUNT_MAX)
        return false;
    *out = v;
    return true;
}

static void print_human(const char *job, bool known, const struct history_list *runs)
{
    struct tool_table t;
    if (runs->n == 0) {
        printf("no runs recorded for %s%s\n", job, known ? "" : " (not in jobs.yaml)");
        return;
    }
    printf("job %s%s: the last %zu record%s, newest first\n", job,
           known ? "" : " (not in jobs.yaml)", runs->n, runs->n == 1 ? "" : "s");
    tool_table_init(&t, 8);
    tool_table_add(&t, (const char *const[]){"SCHEDULED_AT", "NODE", "TERM", "STARTED", "DURATION",
                                             "OUTCOME", "ATTEMPT", "RUN_ID"});
    for (size_t i = 0; i < runs->n; i++) {
        const struct history_rec *r = &runs->v[i];
        char sched[64], until[32], started[40], term[24], dur[32], outcome[256], attempt[16];
        log_rfc3339(r->scheduled_at, sched, sizeof sched);
        if (r->until > r->scheduled_at) { /* a range of ticks that did not run */
            log_rfc3339(r->until, until, sizeof until);
            snprintf(sched + strlen(sched), sizeof sched - strlen(sched), "..%s", until + 11);
        }
        if (r->started_ms > 0)
            log_rfc3339_ms(r->started_ms, started, sizeof started);
        snprintf(term, sizeof term, "%" PRIu64, r->term);
        snprintf(attempt, sizeof attempt, "%d", r->attempt);
        const char *row[8] = {
            sched,
            r->node[0] ? r->node : "-",
            r->term > 0 ? term : "-",
            r->started_ms > 0 ? started : "-",
            r->started_ms > 0 ? tool_format_ms(r->duration_ms, dur, sizeof dur) : "-",
            history_summary(r, outcome, sizeof outcome),
            r->attempt > 0 ? attempt : "-",
            r->run_id[0] ? r->run_id : "-",
        };
        tool_table_add(&t, row);
    }
    tool_table_print(&t, "", stdout);
    tool_table_free(&t);
}

static int print_json(const struct history_list *runs)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a != NULL && i < runs->n; i++) {
        cJSON *o = history_json(&runs->v[i]);
        if (o == NULL || !cJSON_AddItemToArray(a, o)) {
            cJSON_Delete(o);
            cJSON_Delete(a);
            a = NULL;
        }
    }
    return tool_print_json("history", a);
}

int cmd_history(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"count", required_argument, NULL, 'n'},
        {"json", no_argument, NULL, TOOL_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *given = NULL;
    struct config *cfg = NULL;
    struct jobs *jobs = NULL;
    struct baton_client *client = NULL;
    struct history_list runs = {0};
    long count = HISTORY_COUNT_DEFAULT;
    char err[1024];
    bool json = false;
    int c, rc;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:n:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': given = optarg; break;
        case 'n':
            if (!parse_count(optarg, &count))
                return cli_usage("history", "--count \"%s\": expected a whole number from 1 to %d",
                                 optarg, HISTORY_COUNT_MAX);
            break;
        case TOOL_OPT_JSON: json = true; break;
        case 'h':
            cli_print_usage("history");
            fputs(help_text, stdout);
            return CLI_EXIT_OK;
        default: return tool_opt_error("history", c, argv, opts);
        }
    }
    if (optind >= argc)
        return cli_usage("history", "missing JOB");
    const char *job = argv[optind];
    if (optind + 1 < argc)
        return cli_usage("history", "unexpected argument \"%s\"", argv[optind + 1]);
    if (!job_name_ok(job))
        return cli_usage("history", "JOB \"%s\": a job name is %s", job, job_name_rule());
    const char *path = tool_config_path("history", given, &rc);
    if (path == NULL)
        return rc;
    rc = tool_load_config("history", path, &cfg);
    if (rc != 0)
        return rc;
    if (jobs_load(cfg->jobs_path, cfg->timezone, &jobs, err, sizeof err) != 0) {
        fprintf(stderr, "baton: history: warning: %s\n", err);
        jobs = NULL;
    }
    rc = tool_connect("history", cfg, &client);
    if (rc != 0)
        goto out;
    int brc = history_read(client, cfg->group, job, count, &runs);
    if (brc != BATON_OK) {
        char what[200];
        snprintf(what, sizeof what, "reading the history of job %s", job);
        rc = tool_redis_error("history", client, brc, what);
        goto out;
    }
    if (json) {
        rc = print_json(&runs);
    } else {
        /* Without a readable jobs.yaml, do not claim the job is unknown. */
        print_human(job, jobs == NULL || jobs_find(jobs, job) != NULL, &runs);
        rc = tool_flush("history");
    }
out:
    history_list_free(&runs);
    baton_client_free(client);
    jobs_free(jobs);
    config_free(cfg);
    return rc;
}
