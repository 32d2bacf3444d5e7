/* cli.h -- the `baton` command: the exit status table, the subcommand table
 * and the option parser that every subcommand shares.
 *
 * Each subcommand lives in its own file (cmd_<name>.c) and describes itself
 * in one `struct cli_cmd`: synopsis, description, options, extra sections
 * (signals, environment...), exit statuses and the function that runs it.
 * commands.c lists them in `commands[]` (git's table). `--help`, the usage
 * line, the option parser, the man pages and the shell completions are all
 * generated from those descriptors, so an option cannot exist without being
 * documented, nor be documented without existing.
 *
 * A subcommand gets argv with argv[0] set to its name and returns the process
 * exit status: one of CLI_EXIT_* below (or, for `baton lock`, the command's).
 */
#ifndef BATON_CLI_H
#define BATON_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* The exit statuses of every subcommand (sysexits(3) where one fits). One
 * list: it makes the enum, the table behind `--help` and `baton help
 * exit-codes`, and baton(1)'s EXIT STATUS. */
#define CLI_EXIT_MAP(X)                                                                           \
    X(OK, 0, "", "success")                                                                       \
    X(FAIL, 1, "",                                                                                \
      "failure, said in one line on stderr: an unknown job, a step-down that did not happen, "  \
      "a cron expression that stops firing, a run or its output not in the history, output "     \
      "that cannot be written")                                                                   \
    X(NO_LEADER, 3, "", "the group has no leader (`status`, `step-down`)")                        \
    X(USAGE, 64, "EX_USAGE",                                                                      \
      "bad command line: unknown option, missing or invalid argument or value")                  \
    X(NOINPUT, 66, "EX_NOINPUT", "an input file cannot be read (`logs`; a password file)")                       \
    X(UNAVAILABLE, 69, "EX_UNAVAILABLE", "Redis unreachable, or it failed a command")             \
    X(LOST, 70, "EX_SOFTWARE",                                                                    \
      "the lock was lost while the command ran; it was stopped (`lock`); the run's node died "    \
      "while it ran (`trigger --wait`)")                                                          \
    X(TEMPFAIL, 75, "EX_TEMPFAIL",                                                                \
      "busy or not yet: the lock is held by another owner (`lock`), the node name is in use in "  \
      "the group (`run`), the run did not end within --timeout (`trigger --wait`)")               \
    X(CONFIG, 78, "EX_CONFIG",                                                                    \
      "configuration missing or invalid: baton.yaml, jobs.yaml, or what a job needs (its "        \
      "program, its workdir)")                                                                    \
    X(JOB_TIMEOUT, 124, "", "the job ran out of its timeout (`trigger --wait`, as timeout(1))")    \
    X(NOEXEC, 126, "",                                                                            \
      "the command cannot be executed (`lock`); the job could not start (`trigger --wait`)")      \
    X(NOTFOUND, 127, "", "the command was not found (`lock`)")

enum cli_exit_code {
#define CLI_EXIT_ENUM(name, code, sysexit, text) CLI_EXIT_##name = code,
    CLI_EXIT_MAP(CLI_EXIT_ENUM)
#undef CLI_EXIT_ENUM
};

struct cli_exit_info {
    int code;
    const char *name;    /* "USAGE" */
    const char *sysexit; /* "EX_USAGE", or "" */
    const char *text;    /* the general meaning */
};

/* Returns: the exit status table (static) and its length in *n. */
const struct cli_exit_info *cli_exit_codes(size_t *n);

/* ---- the subcommand descriptors ---- */

/* An option. id is its short letter, or a code >= CLI_OPT_LONG for a long
 * option without one. -h/--help and -V/--version are added to every command. */
struct cli_opt {
    int id;
    const char *name; /* the long name, without "--" */
    const char *arg;  /* the value's name ("FILE", "D"); NULL: a flag */
    const char *help; /* what it does, one sentence */
};

enum { CLI_OPT_LONG = 256 };

/* A term and its explanation: a signal, a variable, a file. */
struct cli_item {
    const char *term;
    const char *text;
};

/* An extra section of the help and the man page ("signals"). */
struct cli_section {
    const char *title;
    const struct cli_item *items; /* ends with {NULL, NULL} */
};

/* An exit status of one command and what it means there. */
struct cli_exit {
    int code; /* a CLI_EXIT_* value; -1 ends the list */
    const char *text;
};

/* What the operands are, for the shell completions. */
enum cli_operand {
    CLI_OPERAND_NONE,
    CLI_OPERAND_JOB,     /* a job name of jobs.yaml */
    CLI_OPERAND_KEY_CMD, /* KEY -- CMD [ARG...] */
    CLI_OPERAND_FILE,    /* files */
    CLI_OPERAND_COMMAND, /* a subcommand name */
    CLI_OPERAND_CRON,    /* a cron expression */
};

enum {
    CLI_STOP_AT_OPERAND = 1 << 0, /* options end at the first operand (lock) */
    CLI_CONFIG_KEYS = 1 << 1,     /* the help lists the baton.yaml keys (run) */
};

struct cli_cmd {
    const char *name;
    const char *operands;    /* synopsis after the options ("KEY -- CMD [ARG...]") */
    const char *summary;     /* one line for `baton --help` */
    const char *description; /* paragraphs, separated by a blank line */
    const struct cli_opt *opts;         /* ends with {0}; may be NULL */
    const struct cli_section *sections; /* ends with {NULL}; may be NULL */
    const struct cli_exit *exits;       /* ends with {-1} */
    enum cli_operand operand;
    unsigned flags;
    int (*run)(int argc, char **argv);
};

/* The table (commands.c), in the order of `baton --help`. */
const struct cli_cmd *const *cli_commands(size_t *n);
/* Returns: the command called name, or NULL. */
const struct cli_cmd *cli_find(const char *name);
/* The options every command has (-h/--help, -V/--version); ends with {0}. */
extern const struct cli_opt cli_common_opts[];

extern const struct cli_cmd cli_cmd_run, cli_cmd_lock, cli_cmd_next, cli_cmd_check,
    cli_cmd_status, cli_cmd_history, cli_cmd_trigger, cli_cmd_pause, cli_cmd_resume,
    cli_cmd_stepdown, cli_cmd_logs, cli_cmd_token, cli_cmd_help;

/* The version, "0.1.0". */
const char *cli_version(void);

/* ---- help ---- */

/* Writes "usage: baton NAME [options...] OPERANDS" (one line, wrapped). */
void cli_write_usage(const struct cli_cmd *c, FILE *out);
/* Writes the full help of a command: usage, description, options, sections,
 * exit statuses. */
void cli_write_help(const struct cli_cmd *c, FILE *out);
/* Writes `baton --help`: the commands and where to read more. */
void cli_write_main_help(FILE *out);
/* Writes text wrapped at 79 columns: the first line continues at column col,
 * the next ones are indented by indent. Blank lines separate paragraphs;
 * Markdown code marks (`) are left out. */
void cli_wrap(FILE *out, const char *text, int col, int indent);

/* ---- parsing ---- */

enum {
    CLI_OPT_DONE = -1, /* no more options: operands start at p->optind */
    CLI_OPT_EXIT = -2, /* stop and return p->status (help or version printed,
                          or a usage error reported) */
};

struct cli_parse {
    const struct cli_cmd *cmd;
    int argc;
    char **argv;
    int optind;      /* after CLI_OPT_DONE: the first operand */
    const char *arg; /* the value of the option just returned */
    int status;      /* with CLI_OPT_EXIT */
    char shorts[64];
    void *longs; /* struct option[], owned */
};

/* Starts parsing argv (argv[0] is the command's name) for command c. */
void cli_parse_init(struct cli_parse *p, const struct cli_cmd *c, int argc, char **argv);
/* Returns the next option's id (its value in p->arg), CLI_OPT_DONE, or
 * CLI_OPT_EXIT. Handles --help and --version, and reports every bad option
 * as one usage line. */
int cli_parse_next(struct cli_parse *p);
/* Frees what cli_parse_init allocated. */
void cli_parse_end(struct cli_parse *p);

/* ---- messages ---- */

/* Every message is one line: what a terminal would act on in it (an
 * escape sequence, a line break from a value) is escaped (utf8.h). */

/* Prints "baton: <cmd>: <message> (see 'baton <cmd> --help')", one line, to
 * stderr. Returns CLI_EXIT_USAGE so callers can `return cli_usage(...)`. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "baton: <cmd>: <message>" to stderr. Returns CLI_EXIT_FAIL. */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, returning status. */
int cli_error(int status, const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Parses a duration option ("500ms", "10s") into *ms. Returns false after
 * printing a usage error naming the option. zero_ok allows "0s". */
bool cli_duration(const char *cmd, const char *opt, const char *val, bool zero_ok, int64_t *ms);
/* Parses a count: digits only, 1..max. Returns false after a usage error. */
bool cli_count(const char *cmd, const char *opt, const char *val, long max, long *out);

/* The one way the commands connect: baton_client_new(url, o, out), and a
 * warning line on stderr ("baton: CMD: warning: ...") when the URL turns
 * TLS certificate verification off (verify=none), as `baton run` logs
 * tls_verify_off. Returns baton_client_new's result; *out as it leaves it. */
struct baton_client;
struct baton_client_opts;
int cli_client_new(const char *cmd, const char *url, const struct baton_client_opts *o,
                   struct baton_client **out);

/* The Redis URL: --url, else $BATON_REDIS_URL, else redis://127.0.0.1:6379/0. */
const char *cli_default_url(void);

/* Colour for output to fd: "auto" (a terminal and NO_COLOR unset), "always"
 * or "never". Returns false for another word. */
bool cli_color(const char *when, int fd, bool *color);

#endif /* BATON_CLI_H */
