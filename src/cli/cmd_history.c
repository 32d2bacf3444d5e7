/* cmd_history.c -- `baton history JOB [-c FILE] [--json] [--count N]`: the
 * recent runs of a job, newest first, from its history stream in Redis
 * (baton:{G}:runs:JOB, written by the leader's runner at the end of every
 * run; capped by the config's `history`).
 *
 *   job tick is paused since 2026-01-02T07:12:00.000Z by ops@web-1: migration
 *   job tick: the last 3 runs, newest first
 *   SCHEDULED_AT          NODE   TERM  TRIGGER               STARTED                   DURATION
 * OUTCOME      ATTEMPT  RUN_ID 2026-01-02T07:10:04Z  web-1  7     schedule 2026-01-02T07:10:04.002Z
 * 3ms       ok (exit 0)  1        1767337804-7-1-12 2026-01-02T07:09:58Z  web-1  7     manual by
 * ops@web-1   2026-01-02T07:09:58.120Z  1.2s      ok (exit 0)  1        20260102T070958-3f9a0c2d
 *   ...
 * TRIGGER is what started the run: schedule, catch-up (a tick missed, run
 * late), retry, or manual (baton trigger, with who asked). A run of a job
 * with jitter shows its tick's delay after STARTED: "...04.805Z (jitter
 * 803ms)" (the run was to begin at SCHEDULED_AT + 803ms).
 *
 * The pauses and resumes of the job, and those of every job, are rows among
 * the runs, by time (pauselog.h), the row ending with what happened:
 *   2026-01-02T07:09:12Z  -  -  -  -  -  paused by ops-bot (token) from 10.0.0.7: freeze
 *   2026-01-02T07:11:40Z  -  -  -  -  -  resumed every job by alice@web-1 (catch-up)
 * They are not runs: they are kept in streams of their own (capped at
 * history.runs as well), and --count counts them with the runs.
 *
 * A job that is not in jobs.yaml (removed, or another node's file) is still
 * looked up; the header says "(not in jobs.yaml)". No runs: "no runs recorded
 * for JOB". With --json: a JSON array of runs, newest first, each
 *   {"id": "1767337804123-0", "run_id": "...", "node": "web-1", "term": 7,
 *    "scheduled_at": "2026-01-02T07:10:04Z", "started": "...Z" | null,
 *    "jitter_ms": 803 (only for a run of a job with jitter),
 *    "duration_ms": 3, "outcome": "ok|failed|timeout|killed|skipped",
 *    "result": "exit 0" | "signal TERM" | "", "attempt": 1}
 * (numbers are null when the entry lacks them); a pause or resume among them
 * is told by its "kind": {"kind": "pause" | "resume", "id", "at": "...Z",
 *  "job": JOB | null (every job), "by", "all", "reason" | "catchup"}.
 *
 * With --output [RUN_ID]: the output tail kept with the record of RUN_ID
 * (default: the newest run that started), raw on stdout, nothing else
 * (history.h: UTF-8 text, at most history.output_bytes, starting at a line
 * when the start was dropped). With --json too: that one record as a JSON
 * object, "output" included.
 *
 * Exit: 0; 1 for a job that is neither in jobs.yaml nor has runs recorded
 * ("no job ..."), and with --output for a run that is not in the history,
 * or whose record holds no output (it never started, history.output_bytes
 * was 0, or an older baton wrote it); 69 when Redis cannot be reached or
 * answers oddly; 78 for an invalid baton.yaml; 64 for a bad argument
 * (RUN_ID without --output). jobs.yaml is only read for the "(not in
 * jobs.yaml)" note: when it cannot be loaded, a warning goes to stderr and
 * the history is printed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "history.h"
#include "jobs.h"
#include "log.h"
#include "pause.h"
#include "pauselog.h"
#include "tools.h"
#include "utf8.h"

#define HISTORY_COUNT_DEFAULT 20
#define HISTORY_COUNT_MAX     10000

enum { OPT_OUTPUT = CLI_OPT_LONG + 64 }; /* beyond tools.h's codes */

static int cmd_history(int argc, char **argv);

static const struct cli_opt opts[] = {
    TOOL_OPT_CONFIG,
    {'n', "count", "N", "how many records (runs and pauses), 1-10000 (default 20)"},
    {OPT_OUTPUT, "output", NULL,
     "print the output kept of the newest run, or of RUN_ID, raw (with --json: its record "
     "with \"output\")"},
    TOOL_OPT_JSON_ROW("print a JSON array of runs (and pauses, with a \"kind\"), newest first"),
    {0},
};

static const struct cli_exit exits[] = {
    {CLI_EXIT_OK, "the runs were printed (none recorded yet for a job of jobs.yaml)"},
    {CLI_EXIT_FAIL, "no such job: not in jobs.yaml, and no runs recorded; with --output, no "
                    "such run in the history, or no output kept with it"},
    {CLI_EXIT_USAGE, "bad command line"},
    {CLI_EXIT_UNAVAILABLE, "Redis unreachable or failing"},
    {CLI_EXIT_CONFIG, "baton.yaml missing or invalid"},
    {-1, NULL},
};

const struct cli_cmd cli_cmd_history = {
    .name = "history",
    .operands = "JOB [RUN_ID]",
    .summary = "the recent runs of a job, or the output of one",
    .description =
        "Prints the recent runs of JOB, newest first: scheduled time, node, term, what "
        "started it (schedule, catch-up, retry, or manual by whom), start (with the tick's "
        "delay for a job with `jitter`, and for a run on a member of a job with run_on other "
        "than leader the time from the tick to its start there, dispatched), duration, "
        "outcome, attempt and run id. The leader records every run in Redis, up "
        "to `history.runs` per job. A job no longer in jobs.yaml is still shown while runs "
        "of it are recorded.\n\n"
        "Among the runs, by time, are the pauses and resumes of the job and of every job "
        "(`baton pause`, `resume`, and the control API's), each saying who, and why: "
        "\"paused by ops-bot (token) from 10.0.0.7: month-end freeze\", \"resumed by "
        "alice@web-1 (catch-up)\". They are not runs (with --json they have a \"kind\": "
        "pause or resume); up to `history.runs` of them are kept per job, and as many of "
        "every job's.\n\n"
        "With --output, prints instead what the newest run that started (or run RUN_ID) "
        "wrote on stdout and stderr, as it was kept with its record: the last "
        "`history.output_bytes` of it (16 KiB by default), in the order it came, starting at "
        "a line when earlier output was dropped; invalid UTF-8 and NUL bytes are shown as "
        "U+FFFD; on a terminal, control characters are shown escaped (\\x1b), line breaks "
        "kept. It is read from Redis, so it does not matter which node ran it, nor whether "
        "that node is still up.",
    .opts = opts,
    .exits = exits,
    .operand = CLI_OPERAND_JOB,
    .run = cmd_history,
};

/* The stream id's time (ms) of a run's record: when it was recorded. */
static int64_t rec_ms(const struct history_rec *r)
{
    return r->id != NULL ? (int64_t)strtoull(r->id, NULL, 10) : 0;
}

/* Walks the runs and the pause records together, newest first, at most
 * count in all: *i and *k are the next of each; returns false at the end,
 * else true with *is_pause saying which comes next. */
static bool next_row(const struct history_list *runs, const struct pause_rec_list *pauses,
                     long count, size_t i, size_t k, bool *is_pause)
{
    if ((long)(i + k) >= count || (i >= runs->n && k >= pauses->n))
        return false;
    *is_pause = i >= runs->n || (k < pauses->n && pauses->v[k].at_ms >= rec_ms(&runs->v[i]));
    return true;
}

/* One pause record as a row: its time, and what happened in OUTCOME (the
 * row's last cell: it does not widen the column, tool_table.loose_last). */
static void add_pause_row(struct tool_table *t, const struct pause_rec *p)
{
    char at[40], what[1200];
    log_rfc3339(p->at_ms / 1000, at, sizeof at);
    const char *row[9] = {at, "-", "-", "-", "-", "-", pause_rec_describe(p, what, sizeof what),
                          "", ""};
    tool_table_add(t, row);
}

static void print_human(const char *job, bool known, const struct history_list *runs,
                        const struct pause_rec_list *pauses, long count,
                        const struct pause_entry *paused)
{
    struct tool_table t;
    char name[1024], safe[2048]; /* what Redis and the command line say, escaped (utf8.h) */
    job = utf8_term(job, name, sizeof name);
    if (paused != NULL) {
        char text[512];
        printf("job %s is paused %s\n", job,
               utf8_term(pause_describe(paused, text, sizeof text), safe, sizeof safe));
    }
    if (runs->n == 0 && pauses->n == 0) {
        printf("no runs recorded for %s%s\n", job, known ? "" : " (not in jobs.yaml)");
        return;
    }
    size_t shown = runs->n + pauses->n < (size_t)count ? runs->n + pauses->n : (size_t)count;
    printf("job %s%s: the last %zu record%s, newest first\n", job,
           known ? "" : " (not in jobs.yaml)", shown, shown == 1 ? "" : "s");
    tool_table_init(&t, 9);
    t.loose_last = true;
    tool_table_add(&t, (const char *const[]){"SCHEDULED_AT", "NODE", "TERM", "TRIGGER", "STARTED",
                                             "DURATION", "OUTCOME", "ATTEMPT", "RUN_ID"});
    size_t i = 0, k = 0;
    bool is_pause;
    while (next_row(runs, pauses, count, i, k, &is_pause)) {
        if (is_pause) {
            add_pause_row(&t, &pauses->v[k++]);
            continue;
        }
        const struct history_rec *r = &runs->v[i++];
        char sched[64], until[32], started[80], term[24], dur[32], outcome[256], attempt[16],
            trigger[200], jit[32];
        log_rfc3339(r->scheduled_at, sched, sizeof sched);
        if (r->until > r->scheduled_at) { /* a range of ticks that did not run */
            log_rfc3339(r->until, until, sizeof until);
            snprintf(sched + strlen(sched), sizeof sched - strlen(sched), "..%s", until + 11);
        }
        if (r->started_ms > 0)
            log_rfc3339_ms(r->started_ms, started, sizeof started);
        if (r->started_ms > 0 && r->jitter_ms > 0) /* it was to begin at the tick + this */
            snprintf(started + strlen(started), sizeof started - strlen(started), " (jitter %s)",
                     tool_format_ms(r->jitter_ms, jit, sizeof jit));
        if (r->started_ms > 0 && r->dispatched) /* from the tick's instant to its exec */
            snprintf(started + strlen(started), sizeof started - strlen(started),
                     " (dispatched %s)", tool_format_ms(r->dispatch_ms, jit, sizeof jit));
        snprintf(term, sizeof term, "%" PRIu64, r->term);
        snprintf(attempt, sizeof attempt, "%d", r->attempt);
        const char *t_name = strcmp(r->trigger, "catchup") == 0 ? "catch-up"
                             : r->trigger[0] != '\0'            ? r->trigger
                                                                : "-";
        if (r->by != NULL && r->by[0] != '\0')
            snprintf(trigger, sizeof trigger, "%s by %s", t_name, r->by);
        else
            snprintf(trigger, sizeof trigger, "%s", t_name);
        const char *row[9] = {
            sched,
            r->node[0] ? r->node : "-",
            r->term > 0 ? term : "-",
            trigger,
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

static int print_json(const struct history_list *runs, const struct pause_rec_list *pauses,
                      long count)
{
    cJSON *a = cJSON_CreateArray();
    size_t i = 0, k = 0;
    bool is_pause;
    while (a != NULL && next_row(runs, pauses, count, i, k, &is_pause)) {
        cJSON *o = is_pause ? pause_rec_json(&pauses->v[k++]) : history_json(&runs->v[i++]);
        if (o == NULL || !cJSON_AddItemToArray(a, o)) {
            cJSON_Delete(o);
            cJSON_Delete(a);
            a = NULL;
        }
    }
    return tool_print_json("history", a);
}

/* --output: the output of run_id (NULL: the newest run that started). */
static int print_output(struct baton_client *client, const struct config *cfg, const char *job,
                        const char *run_id, bool json)
{
    struct history_list found = {0};
    int rc = 0, brc = history_find(client, cfg->group, job, run_id, &found);
    if (brc != BATON_OK) {
        char what[200];
        snprintf(what, sizeof what, "reading the history of job %s", job);
        return tool_redis_error("history", client, brc, what);
    }
    if (found.n == 0) {
        if (run_id != NULL)
            rc = cli_fail("history", "no run \"%s\" in the history of job %s", run_id, job);
        else
            rc = cli_fail("history", "no run of job %s recorded", job);
        goto out;
    }
    const struct history_rec *r = &found.v[0];
    if (!r->has_output) {
        if (!history_outcome_ran(r->outcome) || r->started_ms == 0)
            rc = cli_fail("history", "run %s of job %s never started (%s): it has no output",
                          r->run_id, job, r->outcome_name);
        else if (r->version < 3)
            rc = cli_fail("history",
                          "run %s of job %s was recorded without its output (by a baton older "
                          "than record version 3)",
                          r->run_id, job);
        else
            rc = cli_fail("history",
                          "run %s of job %s was recorded without its output "
                          "(history.output_bytes was 0)",
                          r->run_id, job);
        goto out;
    }
    if (json) {
        rc = tool_print_json("history", history_json_opts(r, HISTORY_JSON_OUTPUT));
        goto out;
    }
    /* Raw into a pipe or a file; escaped on a terminal, as every text shown. */
    bool ok = isatty(STDOUT_FILENO) ? tool_write_text(stdout, r->output, r->output_len) == 0
                                    : fwrite(r->output, 1, r->output_len, stdout) == r->output_len;
    if (r->output_len > 0 && !ok) {
        rc = cli_fail("history", "cannot write the output");
        goto out;
    }
    rc = tool_flush("history");
out:
    history_list_free(&found);
    return rc;
}

static int cmd_history(int argc, char **argv)
{
    const char *given = NULL;
    struct config *cfg = NULL;
    struct jobs *jobs = NULL;
    struct baton_client *client = NULL;
    struct history_list runs = {0};
    struct pause_list pauses = {0};
    struct pause_rec_list records = {0};
    struct cli_parse p;
    long count = HISTORY_COUNT_DEFAULT;
    char err[1024];
    bool json = false, bad = false, output = false;
    int id = 0, rc;

    cli_parse_init(&p, &cli_cmd_history, argc, argv);
    while (!bad) {
        id = cli_parse_next(&p);
        if (id < 0)
            break;
        switch (id) {
        case 'c': given = p.arg; break;
        case 'n': bad = !cli_count("history", "--count", p.arg, HISTORY_COUNT_MAX, &count); break;
        case OPT_OUTPUT: output = true; break;
        case TOOL_OPT_JSON: json = true; break;
        default: break;
        }
    }
    cli_parse_end(&p);
    if (bad)
        return CLI_EXIT_USAGE;
    if (id == CLI_OPT_EXIT)
        return p.status;
    int optind = p.optind;
    if (optind >= argc)
        return cli_usage("history", "missing JOB");
    const char *job = argv[optind];
    const char *run_id = optind + 1 < argc ? argv[optind + 1] : NULL;
    if (run_id != NULL && !output)
        return cli_usage("history", "unexpected argument \"%s\" (a RUN_ID goes with --output)",
                         run_id);
    if (optind + 2 < argc)
        return cli_usage("history", "unexpected argument \"%s\"", argv[optind + 2]);
    if (!job_name_ok(job))
        return cli_usage("history",
                         "JOB \"%s\": a job name is 1-128 letters, digits, '_', '.' or '-'", job);
    if (run_id != NULL && (run_id[0] == '\0' || strlen(run_id) > 64))
        return cli_usage("history", "RUN_ID \"%s\": expected a run id as `baton history` shows it",
                         run_id);
    const char *path = tool_config_path("history", given, &rc);
    if (path == NULL)
        return rc;
    rc = tool_load_config("history", path, &cfg);
    if (rc != 0)
        return rc;
    if (!output && jobs_load(cfg->jobs_path, cfg->timezone, &jobs, err, sizeof err) != 0) {
        fprintf(stderr, "baton: history: warning: %s\n", err);
        jobs = NULL;
    }
    rc = tool_connect("history", cfg, &client);
    if (rc != 0)
        goto out;
    if (output) {
        rc = print_output(client, cfg, job, run_id, json);
        goto out;
    }
    int brc = history_read(client, cfg->group, job, count, &runs);
    if (brc != BATON_OK) {
        char what[200];
        snprintf(what, sizeof what, "reading the history of job %s", job);
        rc = tool_redis_error("history", client, brc, what);
        goto out;
    }
    brc = pause_rec_read(client, cfg->group, job, count, &records);
    if (brc != BATON_OK) {
        rc = tool_redis_error("history", client, brc, "reading the pauses of the job");
        goto out;
    }
    if (!json) {
        brc = pause_read(client, cfg->group, &pauses);
        if (brc != BATON_OK) {
            rc = tool_redis_error("history", client, brc, "reading the paused jobs");
            goto out;
        }
    }
    /* Without a readable jobs.yaml, do not claim the job is unknown. */
    bool known = jobs == NULL || jobs_find(jobs, job) != NULL;
    if (!known && runs.n == 0) {
        rc = cli_fail("history", "no job \"%s\": not in %s, and no runs recorded", job, jobs->path);
    } else if (json) {
        rc = print_json(&runs, &records, count);
    } else {
        print_human(job, known, &runs, &records, count, pause_holding(&pauses, job));
        rc = tool_flush("history");
    }
out:
    pause_rec_list_free(&records);
    pause_list_free(&pauses);
    history_list_free(&runs);
    baton_client_free(client);
    jobs_free(jobs);
    config_free(cfg);
    return rc;
}
