/* cli.h -- the `baton` command: the subcommand table and shared helpers.
 *
 * Each subcommand lives in its own file (cmd_<name>.c) and is one row of the
 * table in main.c, which also produces `baton --help`. A subcommand gets
 * argv with argv[0] set to its name and returns the process exit status.
 *
 * Exit statuses shared by all subcommands:
 *   0 success, 1 runtime failure (message on stderr), 2 usage error (one
 *   line on stderr). `baton lock` adds its own (see cmd_lock.c).
 */
#ifndef BATON_CLI_H
#define BATON_CLI_H

#include <stdbool.h>
#include <stdint.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

struct cli_cmd {
    const char *name;
    const char *args;    /* one-line synopsis after the name */
    const char *summary; /* what it does, for `baton --help` */
    int (*run)(int argc, char **argv);
};

int cmd_check(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_lock(int argc, char **argv);
int cmd_next(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_stepdown(int argc, char **argv);


/* Prints "baton: <cmd>: <message> (see 'baton <cmd> --help')", one line, to
 * stderr. Returns
 * CLI_EXIT_USAGE so callers can `return cli_usage(...)`. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "baton: <cmd>: <message>" to stderr. Returns CLI_EXIT_FAIL. */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses a duration option ("500ms", "10s") into *ms. Returns false after
 * printing a usage error naming the option. zero_ok allows "0s". */
bool cli_duration(const char *cmd, const char *opt, const char *val, bool zero_ok, int64_t *ms);

/* Prints the synopsis of cmd (from the table) followed by its help text. */
void cli_print_usage(const char *cmd);

/* The Redis URL: --url, else $BATON_REDIS_URL, else redis://127.0.0.1:6379/0. */
const char *cli_default_url(void);

#endif /* BATON_CLI_H */
