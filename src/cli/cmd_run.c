/* cmd_run.c -- `baton run [-c FILE]`: the supervisor (daemon.c). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "daemon.h"

static const char help_text[] =
    "\n"
    "Runs the supervisor: one per server. The nodes of a group elect a leader\n"
    "through Redis; the leader runs the jobs of jobs.yaml, each tick exactly\n"
    "once; the others wait to take over. JSON lines on stdout, one per state\n"
    "transition, job start, job end and line of job output.\n"
    "\n"
    "  -c, --config FILE  baton.yaml (default ./baton.yaml, then /etc/baton/baton.yaml)\n"
    "\n"
    "signals: TERM/INT hand leadership over and exit (a second one shortens the\n"
    "drain of running jobs); HUP reloads baton.yaml and jobs.yaml.\n";

/* Parses -c; returns the config path, or NULL after printing why (status
 * in *rc). Shared by run, check, status, history and step-down. */
const char *cli_config_path(const char *cmd, int argc, char **argv, int *rc, int *next_arg)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = NULL;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+:c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': path = optarg; break;
        case 'h': *rc = -1; return NULL;
        case ':': *rc = cli_usage(cmd, "%s: missing its value", argv[optind - 1]); return NULL;
        default:
            *rc = optopt ? cli_usage(cmd, "-%c: unknown option", optopt)
                         : cli_usage(cmd, "%s: unknown option", argv[optind - 1]);
            return NULL;
        }
    }
    if (next_arg != NULL)
        *next_arg = optind;
    else if (optind < argc) {
        *rc = cli_usage(cmd, "unexpected argument \"%s\"", argv[optind]);
        return NULL;
    }
    if (path == NULL && (path = config_default_path()) == NULL) {
        *rc = cli_fail(cmd, "no configuration: give -c FILE, or create ./baton.yaml or "
                            "/etc/baton/baton.yaml");
        return NULL;
    }
    *rc = 0;
    return path;
}

int cmd_run(int argc, char **argv)
{
    int rc;
    const char *path = cli_config_path("run", argc, argv, &rc, NULL);
    if (path == NULL) {
        if (rc < 0) {
            cli_print_usage("run");
            fputs(help_text, stdout);
            return CLI_EXIT_OK;
        }
        return rc;
    }
    return daemon_run(path);
}
