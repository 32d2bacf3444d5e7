/* commands.c -- the subcommand table (git's `commands[]`), the exit status
 * table, and `baton help`. Each row points at the descriptor its cmd_*.c
 * file defines; --help, the man page and the completions loop over it. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef BATON_VERSION_STRING
#define BATON_VERSION_STRING "unknown"
#endif

static const struct cli_cmd *const commands[] = {
    &cli_cmd_run,     &cli_cmd_lock,    &cli_cmd_next,   &cli_cmd_check,
    &cli_cmd_status,  &cli_cmd_history, &cli_cmd_trigger, &cli_cmd_pause,
    &cli_cmd_resume,  &cli_cmd_stepdown, &cli_cmd_logs,  &cli_cmd_token,
    &cli_cmd_help,
};

const struct cli_cmd *const *cli_commands(size_t *n)
{
    *n = sizeof commands / sizeof commands[0];
    return commands;
}

const struct cli_cmd *cli_find(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

const char *cli_version(void)
{
    return BATON_VERSION_STRING;
}

static const struct cli_exit_info exit_codes[] = {
#define CLI_EXIT_ROW(name, code, sysexit, text) {code, #name, sysexit, text},
    CLI_EXIT_MAP(CLI_EXIT_ROW)
#undef CLI_EXIT_ROW
};

const struct cli_exit_info *cli_exit_codes(size_t *n)
{
    *n = sizeof exit_codes / sizeof exit_codes[0];
    return exit_codes;
}

/* ---- baton help [COMMAND | exit-codes] ---- */

static int cmd_help(int argc, char **argv);

static const struct cli_exit help_exits[] = {
    {CLI_EXIT_OK, "the help was printed"},
    {CLI_EXIT_USAGE, "no such command or topic"},
    {-1, NULL},
};

const struct cli_cmd cli_cmd_help = {
    .name = "help",
    .operands = "[COMMAND | exit-codes]",
    .summary = "describe a command, or the exit statuses of all",
    .description = "Prints the help of COMMAND (the same as 'baton COMMAND --help'), the table "
                   "of exit statuses shared by every command ('baton help exit-codes'), or, "
                   "without an argument, the list of commands.",
    .exits = help_exits,
    .operand = CLI_OPERAND_COMMAND,
    .run = cmd_help,
};

static void write_exit_codes(FILE *out)
{
    size_t n;
    const struct cli_exit_info *e = cli_exit_codes(&n);
    fputs("Exit statuses of every baton command (128+N: the command baton lock ran was\n"
          "killed by signal N):\n\n",
          out);
    for (size_t i = 0; i < n; i++) {
        char text[512];
        int w = fprintf(out, "  %d", e[i].code);
        fprintf(out, "%*s", 8 - w, "");
        if (e[i].sysexit[0] != '\0')
            snprintf(text, sizeof text, "%s (%s)", e[i].text, e[i].sysexit);
        else
            snprintf(text, sizeof text, "%s", e[i].text);
        cli_wrap(out, text, 8, 8);
    }
}

static int cmd_help(int argc, char **argv)
{
    struct cli_parse p;
    int id;
    cli_parse_init(&p, &cli_cmd_help, argc, argv);
    do
        id = cli_parse_next(&p);
    while (id >= 0);
    cli_parse_end(&p);
    if (id == CLI_OPT_EXIT)
        return p.status;
    if (p.optind + 1 < argc)
        return cli_usage("help", "unexpected argument \"%s\"", argv[p.optind + 1]);
    if (p.optind >= argc) {
        cli_write_main_help(stdout);
    } else if (strcmp(argv[p.optind], "exit-codes") == 0) {
        write_exit_codes(stdout);
    } else {
        const struct cli_cmd *c = cli_find(argv[p.optind]);
        if (c == NULL)
            return cli_usage("help", "no command or topic \"%s\"", argv[p.optind]);
        cli_write_help(c, stdout);
    }
    return fflush(stdout) == 0 ? CLI_EXIT_OK : cli_fail("help", "cannot write the output");
}
