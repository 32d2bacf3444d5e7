/* cmd_pause.c -- `baton pause [-c FILE] [--reason TEXT] JOB|--all` and
 * `baton resume [-c FILE] [--catchup] JOB|--all`: stop and start a job's
 * schedule for the whole group (pause.h), surviving failovers and
 * restarts.
 *
 *   $ baton pause report --reason "db migration"
 *   paused report: its ticks are skipped until 'baton resume report'
 *   $ baton resume report
 *   resumed report: the ticks that fell while it was paused stay skipped
 *
 * Pausing or resuming twice is not an error: the second says so and exits
 * 0. `resume JOB` while every job is paused (`pause --all`) removes JOB's
 * own pause, says that JOB stays paused, and exits 1. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "jobs.h"
#include "pause.h"
#include "tools.h"

enum { OPT_ALL = TOOL_OPT_COLOR + 1, OPT_REASON, OPT_CATCHUP };

static int cmd_pause(int argc, char **argv);
static int cmd_resume(int argc, char **argv);

static const struct cli_opt pause_opts[] = {
    TOOL_OPT_CONFIG,
    {OPT_ALL, "all", NULL, "pause every job of the group, now and to come"},
    {OPT_REASON, "reason", "TEXT", "why, shown by 'baton status' and in the log"},
    {0},
};

static const struct cli_opt resume_opts[] = {
    TOOL_OPT_CONFIG,
    {OPT_ALL, "all", NULL, "resume every paused job (and lift 'pause --all')"},
    {OPT_CATCHUP, "catchup", NULL,
     "run the ticks that fell while paused, within the job's catch-up window"},
    {0},
};

static const struct cli_exit pause_exits[] = {
    {CLI_EXIT_OK, "paused (or it was already)"},
    {CLI_EXIT_FAIL, "no such job in jobs.yaml"},
    {CLI_EXIT_USAGE, "bad command line"},
    {CLI_EXIT_UNAVAILABLE, "Redis unreachable or failing"},
    {CLI_EXIT_CONFIG, "baton.yaml missing or invalid"},
    {-1, NULL},
};

static const struct cli_exit resume_exits[] = {
    {CLI_EXIT_OK, "resumed (or it was not paused)"},
    {CLI_EXIT_FAIL, "no such job in jobs.yaml, or it stays paused by 'pause --all'"},
    {CLI_EXIT_USAGE, "bad command line"},
    {CLI_EXIT_UNAVAILABLE, "Redis unreachable or failing"},
    {CLI_EXIT_CONFIG, "baton.yaml missing or invalid"},
    {-1, NULL},
};

const struct cli_cmd cli_cmd_pause = {
    .name = "pause",
    .operands = "JOB | --all",
    .summary = "stop a job's schedule for the whole group",
    .description =
        "Pauses JOB (or, with --all, every job) for the whole group: the pause is kept in "
        "Redis, so it holds across failovers and restarts until 'baton resume'. The ticks "
        "that fall meanwhile do not run; the leader records them as skipped (reason "
        "`paused`). A run already going goes on, and its retries with it. A paused job can "
        "still be run by hand with 'baton trigger'. 'baton status' shows who paused it, "
        "when and why.",
    .opts = pause_opts,
    .exits = pause_exits,
    .operand = CLI_OPERAND_JOB,
    .run = cmd_pause,
};

const struct cli_cmd cli_cmd_resume = {
    .name = "resume",
    .operands = "JOB | --all",
    .summary = "start a paused job's schedule again",
    .description =
        "Resumes JOB (or, with --all, every paused job). The ticks that fell while it was "
        "paused stay skipped: the leader records them and moves the job's high-water mark "
        "past them, even if it changes meanwhile. With --catchup they are caught up instead, "
        "as after a failover: within the job's catch-up window, by its concurrency policy.",
    .opts = resume_opts,
    .exits = resume_exits,
    .operand = CLI_OPERAND_JOB,
    .run = cmd_resume,
};

struct args {
    const char *given, *job, *reason;
    bool all, catchup;
};

/* Parses the command line of pause or resume. Returns 0, or the exit
 * status (-1 for help or version, with the status in *status). */
static int parse(const struct cli_cmd *cmd, int argc, char **argv, struct args *a)
{
    struct cli_parse p;
    int opt;
    memset(a, 0, sizeof *a);
    cli_parse_init(&p, cmd, argc, argv);
    while ((opt = cli_parse_next(&p)) >= 0) {
        switch (opt) {
        case 'c': a->given = p.arg; break;
        case OPT_ALL: a->all = true; break;
        case OPT_REASON: a->reason = p.arg; break;
        case OPT_CATCHUP: a->catchup = true; break;
        default: break;
        }
    }
    int optind = p.optind, status = p.status;
    cli_parse_end(&p);
    if (opt == CLI_OPT_EXIT)
        return status;
    if (optind < argc)
        a->job = argv[optind];
    if (optind + 1 < argc)
        return cli_usage(cmd->name, "unexpected argument \"%s\"", argv[optind + 1]);
    if (a->job == NULL && !a->all)
        return cli_usage(cmd->name, "missing JOB (or --all)");
    if (a->job != NULL && a->all)
        return cli_usage(cmd->name, "JOB and --all do not go together");
    if (a->job != NULL && !job_name_ok(a->job))
        return cli_usage(cmd->name,
                         "JOB \"%s\": a job name is 1-128 letters, digits, '_', '.' or '-'",
                         a->job);
    if (a->reason != NULL && strlen(a->reason) > 200)
        return cli_usage(cmd->name, "--reason: at most 200 bytes");
    return -1;
}

/* Opens the configuration and Redis, and checks the job. */
static int open_for(const char *cmd, const struct args *a, struct config **cfg,
                    struct baton_client **client)
{
    int rc = tool_open(cmd, a->given, cfg, client);
    if (rc == 0 && a->job != NULL && (rc = tool_check_job(cmd, *cfg, a->job)) != 0) {
        baton_client_free(*client);
        config_free(*cfg);
        *client = NULL;
        *cfg = NULL;
    }
    return rc;
}

static int cmd_pause(int argc, char **argv)
{
    struct args a;
    struct config *cfg;
    struct baton_client *client;
    char who[256];
    bool was = false;
    int rc = parse(&cli_cmd_pause, argc, argv, &a);
    if (rc >= 0)
        return rc;
    rc = open_for("pause", &a, &cfg, &client);
    if (rc != 0)
        return rc;
    int brc = pause_set(client, cfg->group, a.job, tool_who(who, sizeof who), a.reason,
                        cfg->history_len, &was);
    if (brc != BATON_OK) {
        rc = tool_redis_error("pause", client, brc, "storing the pause");
    } else if (a.job == NULL) {
        printf(was ? "every job of group %s was paused already\n"
                   : "paused every job of group %s: their ticks are skipped until "
                     "'baton resume --all'\n",
               cfg->group);
        rc = tool_flush("pause");
    } else {
        printf(was ? "%s was paused already\n"
                   : "paused %s: its ticks are skipped until 'baton resume %s'\n",
               a.job, a.job);
        rc = tool_flush("pause");
    }
    baton_client_free(client);
    config_free(cfg);
    return rc;
}

static int cmd_resume(int argc, char **argv)
{
    struct args a;
    struct config *cfg;
    struct baton_client *client;
    struct pause_list l = {0};
    char who[256];
    int n = 0;
    int rc = parse(&cli_cmd_resume, argc, argv, &a);
    if (rc >= 0)
        return rc;
    rc = open_for("resume", &a, &cfg, &client);
    if (rc != 0)
        return rc;
    const char *then = a.catchup ? "the ticks that fell while paused are caught up within the "
                                   "catch-up window"
                                 : "the ticks that fell while paused stay skipped";
    int brc = pause_resume(client, cfg->group, a.job, a.catchup, tool_who(who, sizeof who),
                           cfg->history_len, &n);
    if (brc == BATON_OK && a.job != NULL)
        brc = pause_read(client, cfg->group, &l);
    if (brc != BATON_OK) {
        rc = tool_redis_error("resume", client, brc, "resuming");
    } else if (a.job == NULL) {
        if (n == 0)
            printf("no job of group %s was paused\n", cfg->group);
        else
            printf("resumed %d paused entr%s of group %s: %s\n", n, n == 1 ? "y" : "ies",
                   cfg->group, then);
        rc = tool_flush("resume");
    } else {
        const struct pause_entry *all = pause_find(&l, PAUSE_ALL);
        if (n == 0)
            printf("%s was not paused\n", a.job);
        else
            printf("resumed %s: %s\n", a.job, then);
        rc = tool_flush("resume");
        if (rc == 0 && all != NULL && !all->resumed)
            rc = cli_fail("resume", "%s stays paused: every job of group %s is paused "
                                    "('baton resume --all')",
                          a.job, cfg->group);
    }
    pause_list_free(&l);
    baton_client_free(client);
    config_free(cfg);
    return rc;
}
