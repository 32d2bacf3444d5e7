/* cmd_run.c -- `baton run [-c FILE]`: the supervisor (daemon.c). */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "daemon.h"
#include "tools.h"

static const char help_text[] =
    "\n"
    "Runs the supervisor: one per server. The nodes of a group elect a leader\n"
    "through Redis; the leader runs the jobs of jobs.yaml, each tick exactly\n"
    "once; the others wait to take over. JSON lines on stdout, one per state\n"
    "transition, job start, job end and line of job output.\n"
    "\n"
    "  -c, --config FILE  baton.yaml (default ./baton.yaml, then /etc/baton/baton.yaml)\n"
    "\n"
    "signals: TERM/INT hand leadership over and exit 0 (a second one shortens\n"
    "the drain of running jobs); HUP reloads baton.yaml and jobs.yaml.\n"
    "exit status: 0 after a graceful stop; 1 when the configuration is invalid\n"
    "(\"baton: run: file:line:col: message\" on stderr); 2 usage.\n";

int cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *given = NULL;
    int c, rc;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': given = optarg; break;
        case 'h':
            cli_print_usage("run");
            fputs(help_text, stdout);
            return CLI_EXIT_OK;
        default: return tool_opt_error("run", c, argv, opts);
        }
    }
    if (optind < argc)
        return cli_usage("run", "unexpected argument \"%s\"", argv[optind]);
    const char *path = tool_config_path("run", given, &rc);
    return path == NULL ? rc : daemon_run(path);
}
