/* cmd_run.c -- `baton run [-c FILE]`: the supervisor (daemon.c). */
#include <stdio.h>

#include "cli.h"
#include "daemon.h"
#include "tools.h"

static int cmd_run(int argc, char **argv);

static const struct cli_opt opts[] = {
    {'c', "config", "FILE", "baton.yaml (default ./baton.yaml, then /etc/baton/baton.yaml)"},
    {0},
};

static const struct cli_item signals[] = {
    {"TERM, INT",
     "hand leadership over and exit 0: stop scheduling, let running jobs finish up to "
     "shutdown_grace (then TERM, then KILL), release the lease and wake the followers, one of "
     "which leads within milliseconds"},
    {"second TERM", "shorten the drain: running jobs get TERM now"},
    {"HUP",
     "reload baton.yaml and jobs.yaml after validating both; on an error the running "
     "configuration stays and one error line says file:line:col, whatever log.level (node, "
     "redis, group, lease.* and http.* need a restart)"},
    {NULL, NULL},
};

static const struct cli_item files[] = {
    {"baton.yaml", "the configuration: ./baton.yaml, then /etc/baton/baton.yaml; see baton.yaml(5)"},
    {"jobs.yaml", "the jobs, named by the configuration's `jobs`; see jobs.yaml(5)"},
    {NULL, NULL},
};

static const struct cli_item environment[] = {
    {"NOTIFY_SOCKET",
     "set by systemd for a Type=notify unit: READY=1 once the node leads or follows, STATUS= "
     "with its state and term, RELOADING=1 and READY=1 around a reload, STOPPING=1 with "
     "EXTEND_TIMEOUT_USEC= shutdown_grace + the longest kill_grace + 10 s; jobs do not "
     "inherit it"},
    {"WATCHDOG_USEC",
     "set by systemd's WatchdogSec=: WATCHDOG=1 every half of it from the event loop, so that "
     "a hung supervisor is restarted; jobs do not inherit it, nor WATCHDOG_PID"},
    {NULL, NULL},
};

static const struct cli_section sections[] = {
    {"signals", signals},
    {"environment", environment},
    {"files", files},
    {NULL, NULL},
};

static const struct cli_exit exits[] = {
    {CLI_EXIT_OK, "stopped gracefully (after TERM or INT)"},
    {CLI_EXIT_FAIL,
     "could not set up (out of memory, descriptors; http.listen cannot be bound; NOTIFY_SOCKET "
     "set in a build without libsystemd)"},
    {CLI_EXIT_USAGE, "bad command line"},
    {CLI_EXIT_TEMPFAIL,
     "another running supervisor of the group uses this node name (the message names its host "
     "and pid)"},
    {CLI_EXIT_CONFIG, "baton.yaml or jobs.yaml missing or invalid (\"file:line:col: message\")"},
    {-1, NULL},
};

const struct cli_cmd cli_cmd_run = {
    .name = "run",
    .operands = "",
    .summary = "the supervisor: elect a leader, run the jobs of jobs.yaml",
    .description =
        "Runs the supervisor, one per server. The supervisors of a group elect a leader "
        "through a lease in Redis; the leader runs the jobs of jobs.yaml on their schedules, "
        "each tick exactly once across the group, while the others wait to take over: at once "
        "when the leader hands over, when its lease runs out if it crashed.\n\n"
        "It logs one line per event on stdout: state transitions, job starts and ends, and "
        "every line a job writes. The lines are JSON, or readable text when log.format is "
        "text, or auto (the default) and stdout is a terminal; 'baton logs' turns JSON lines "
        "into the same text.\n\n"
        "With http.listen set, it serves /metrics (Prometheus), /healthz, /readyz, /status "
        "(the JSON of 'baton status --json', from its own view) and / (a status page that "
        "refreshes itself), read-only, from a thread that never waits on Redis; over TCP, to "
        "a Host that is an IP address, localhost, its host name or one of "
        "http.allowed_hosts (421 otherwise).",
    .opts = opts,
    .sections = sections,
    .exits = exits,
    .flags = CLI_CONFIG_KEYS,
    .run = cmd_run,
};

static int cmd_run(int argc, char **argv)
{
    struct cli_parse p;
    const char *given = NULL;
    int id, rc;

    cli_parse_init(&p, &cli_cmd_run, argc, argv);
    for (;;) {
        id = cli_parse_next(&p);
        if (id < 0)
            break;
        if (id == 'c')
            given = p.arg;
    }
    cli_parse_end(&p);
    if (id == CLI_OPT_EXIT)
        return p.status;
    if (p.optind < argc)
        return cli_usage("run", "unexpected argument \"%s\"", argv[p.optind]);
    const char *path = tool_config_path("run", given, &rc);
    if (path == NULL)
        return rc;
    switch (daemon_run(path)) {
    case DAEMON_OK: return CLI_EXIT_OK;
    case DAEMON_ECONFIG: return CLI_EXIT_CONFIG;
    case DAEMON_ENAME_TAKEN: return CLI_EXIT_TEMPFAIL;
    default: return CLI_EXIT_FAIL;
    }
}
