/* cmd_check.c -- `baton check [-c FILE]`: validate baton.yaml and its
 * jobs.yaml, like `nginx -t`. Needs no Redis.
 *
 * On success prints the effective configuration (every option, defaults
 * included, passwords masked), then each job of jobs.yaml with its schedule,
 * zone, whether it is enabled, its command and its next three runs from now
 * (RFC 3339 UTC, followed by the wall time in the job's zone when that zone
 * is not UTC), and a last line saying the files are valid. Exit 0.
 *
 *   # /etc/baton/baton.yaml
 *   node: web-1
 *   ...
 *
 *   # jobs: /etc/baton/jobs.yaml (2 jobs)
 *   job daily-report
 *     schedule: 0 7 * * MON-FRI
 *     zone:     Europe/Berlin
 *     enabled:  yes
 *     command:  /usr/local/bin/report --daily
 *     next:     2026-01-05T06:00:00Z  2026-01-05T07:00:00+01:00
 *               ...
 *
 *   ok: /etc/baton/baton.yaml and /etc/baton/jobs.yaml are valid (2 jobs)
 *
 * On error prints one line on stderr, "baton: check: file:line:col: message",
 * and exits 1 (2 for a bad argument).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "config.h"
#include "events.h"
#include "cron.h"
#include "jobs.h"
#include "tools.h"

#define CHECK_NEXT_RUNS 3

static const char help_text[] =
    "\n"
    "Validates baton.yaml and the jobs.yaml it names, without contacting Redis,\n"
    "then prints the effective configuration and every job with its next three\n"
    "runs (UTC, and local time when the job's zone is not UTC).\n"
    "\n"
    "options:\n"
    "  -c, --config FILE  baton.yaml (default ./baton.yaml, then /etc/baton/baton.yaml)\n"
    "  --reference        print the reference of every baton.yaml and jobs.yaml key\n"
    "                     (Markdown, as in the README) and exit\n"
    "\n"
    "exit status: 0 valid; 1 invalid (\"baton: check: file:line:col: message\" on\n"
    "stderr); 2 usage.\n";

static bool is_utc(const struct job *j)
{
    const char *z = j->timezone != NULL ? j->timezone : "UTC";
    return strcmp(z, "UTC") == 0 || strcmp(z, "Etc/UTC") == 0;
}

static void print_job(const struct job *j, int64_t now)
{
    char utc[CRON_TIME_BUFSZ], local[CRON_TIME_BUFSZ];
    char *cmd = tool_job_command(j);

    printf("job %s\n", j->name);
    printf("  schedule: %s\n", j->schedule);
    printf("  zone:     %s\n", j->timezone != NULL ? j->timezone : "UTC");
    printf("  enabled:  %s\n", j->enabled ? "yes" : "no (disabled)");
    printf("  command:  %s\n", cmd != NULL ? cmd : "(out of memory)");
    free(cmd);
    if (!j->enabled) {
        printf("  next:     disabled\n");
        return;
    }
    int64_t t = now;
    for (int i = 0; i < CHECK_NEXT_RUNS; i++) {
        const char *label = i == 0 ? "  next:     " : "            ";
        if (cron_next(j->expr, j->tz, t, &t) != 0) {
            printf("%s%s\n", label, i == 0 ? "none (the schedule never fires again)" : "no more");
            break;
        }
        cron_time_format(t, NULL, utc, sizeof utc);
        if (is_utc(j))
            printf("%s%s\n", label, utc);
        else
            printf("%s%s  %s\n", label, utc, cron_time_format(t, j->tz, local, sizeof local));
    }
}

int cmd_check(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {"reference", no_argument, NULL, 'r'},
        {NULL, 0, NULL, 0},
    };
    const char *given = NULL;
    bool reference = false;
    struct config *cfg = NULL;
    struct jobs *jobs = NULL;
    char err[1024];
    int c, rc;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': given = optarg; break;
        case 'r': reference = true; break;
        case 'h':
            cli_print_usage("check");
            fputs(help_text, stdout);
            return CLI_EXIT_OK;
        default: return tool_opt_error("check", c, argv, opts);
        }
    }
    if (optind < argc)
        return cli_usage("check", "unexpected argument \"%s\"", argv[optind]);
    if (reference) {
        printf("### baton.yaml\n\n");
        config_write_reference(stdout);
        printf("\n### jobs.yaml\n\n");
        jobs_write_reference(stdout);
        printf("\n### Log events\n\n");
        log_events_write_reference(stdout);
        return tool_flush("check");
    }
    const char *path = tool_config_path("check", given, &rc);
    if (path == NULL)
        return rc;
    rc = tool_load_config("check", path, &cfg);
    if (rc != 0)
        return rc;
    if (jobs_load(cfg->jobs_path, cfg->timezone, &jobs, err, sizeof err) != 0) {
        rc = cli_fail("check", "%s", err);
        goto out_free_config;
    }

    size_t disabled = 0;
    for (size_t i = 0; i < jobs->n; i++)
        disabled += !jobs->v[i].enabled;
    printf("# %s\n", cfg->path);
    config_write_effective(cfg, stdout);
    printf("\n# jobs: %s (%zu job%s)\n", jobs->path, jobs->n, jobs->n == 1 ? "" : "s");
    int64_t now = (int64_t)time(NULL);
    for (size_t i = 0; i < jobs->n; i++)
        print_job(&jobs->v[i], now);
    printf("\nok: %s and %s are valid (%zu job%s", cfg->path, jobs->path, jobs->n,
           jobs->n == 1 ? "" : "s");
    if (disabled > 0)
        printf(", %zu disabled", disabled);
    printf(")\n");
    rc = tool_flush("check");

    jobs_free(jobs);
out_free_config:
    config_free(cfg);
    return rc;
}
