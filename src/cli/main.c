/* main.c -- `baton`: dispatches to the subcommand table. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef BATON_VERSION_STRING
#define BATON_VERSION_STRING "unknown"
#endif

/* The subcommand table: also the source of `baton --help`. */
static const struct cli_cmd commands[] = {
    {"run", "[-c baton.yaml]", "the supervisor: elect a leader, run the jobs of jobs.yaml",
     cmd_run},
    {"lock", "[--url URL] [--ttl D] [--wait D] KEY -- CMD [ARG...]",
     "run a command while holding a lock, renewed while it runs", cmd_lock},
    {"next", "[--tz ZONE] [--from RFC3339] [--count N] [--local] EXPR",
     "print the next fire times of a cron expression", cmd_next},
    {"check", "[-c baton.yaml] [--reference]",
     "validate baton.yaml and jobs.yaml, print each job's next runs", cmd_check},
    {"status", "[-c baton.yaml] [--json]",
     "leader, term, lease left, nodes seen, each job's last and next run", cmd_status},
    {"history", "[-c baton.yaml] [--json] [--count N] JOB", "the recent runs of a job",
     cmd_history},
    {"step-down", "[-c baton.yaml] [--wait D]", "ask the leader to hand over gracefully",
     cmd_stepdown},
};
static const size_t ncommands = sizeof(commands) / sizeof(commands[0]);

static const struct cli_cmd *find_command(const char *name)
{
    for (size_t i = 0; i < ncommands; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

void cli_print_usage(const char *cmd)
{
    const struct cli_cmd *c = find_command(cmd);
    if (c != NULL)
        printf("usage: baton %s %s\n%s\n", c->name, c->args, c->summary);
}

static void print_help(FILE *out)
{
    fprintf(out, "usage: baton [--version] [--help] COMMAND [ARGS]\n\n"
                 "Distributed locks and exactly-once cron over Redis.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < ncommands; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'baton COMMAND --help' describes a command.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return print_help(stderr), CLI_EXIT_USAGE;
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        if (argc > 2 && find_command(argv[2]) != NULL) {
            cli_print_usage(argv[2]);
            return CLI_EXIT_OK;
        }
        print_help(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("baton %s\n", BATON_VERSION_STRING);
        return CLI_EXIT_OK;
    }
    const struct cli_cmd *c = find_command(argv[1]);
    if (c == NULL) {
        fprintf(stderr, "baton: unknown command '%s'; see 'baton --help'\n", argv[1]);
        return CLI_EXIT_USAGE;
    }
    return c->run(argc - 1, argv + 1);
}
