/* tools.h -- helpers shared by the operator tools `baton check`, `status`,
 * `history` and `step-down`: option errors, loading the configuration,
 * connecting, aligned tables and formatting. (The run history is
 * history.h's: one module writes and reads it.)
 *
 * Every helper that can fail prints its one-line message itself
 * ("baton: CMD: ...") and returns the exit status, so that callers can
 * `return` it.
 */
#ifndef BATON_CLI_TOOLS_H
#define BATON_CLI_TOOLS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "baton.h"

struct config;
struct job;

/* Option codes for long options without a short form (cli.h). */
enum {
    TOOL_OPT_JSON = 256,
    TOOL_OPT_REFERENCE,
    TOOL_OPT_TZ,
    TOOL_OPT_FROM,
    TOOL_OPT_LOCAL,
    TOOL_OPT_URL,
    TOOL_OPT_TTL,
    TOOL_OPT_KILL_GRACE,
    TOOL_OPT_COLOR,
};

/* The -c option of the tools, one row of their option tables. */
#define TOOL_OPT_CONFIG                                                                               {'c', "config", "FILE", "baton.yaml (default ./baton.yaml, then /etc/baton/baton.yaml)"}
#define TOOL_OPT_JSON_ROW(what) {TOOL_OPT_JSON, "json", NULL, what}

/* The configuration path: given (from -c), else the default one that
 * exists. NULL after printing why (the exit status in *rc: CLI_EXIT_CONFIG
 * when there is none, CLI_EXIT_USAGE for an empty -c). */
const char *tool_config_path(const char *cmd, const char *given, int *rc);

/* Loads baton.yaml. Returns 0 and *out (owned; free with config_free), or
 * CLI_EXIT_CONFIG after printing "baton: CMD: file:line:col: message". */
int tool_load_config(const char *cmd, const char *path, struct config **out);

/* Connects to the configured Redis with redis_timeout for both connect and
 * commands. Returns 0 and *out (owned; free with baton_client_free), or
 * CLI_EXIT_UNAVAILABLE after printing why (one line). */
int tool_connect(const char *cmd, const struct config *cfg, struct baton_client **out);
/* tool_connect without printing: why (len bytes) says what failed.
 * Returns 0, CLI_EXIT_UNAVAILABLE (Redis) or CLI_EXIT_FAIL (the secrets). */
int tool_connect_quiet(const char *cmd, const struct config *cfg, struct baton_client **out,
                       char *why, size_t len);

/* Reports a failed Redis operation (rc a BATON_E* code) as one line,
 * "baton: CMD: redis://host:port/db: <detail> (while <what>)". Returns
 * CLI_EXIT_UNAVAILABLE. */
int tool_redis_error(const char *cmd, struct baton_client *c, int rc, const char *what);

/* tool_config_path, tool_load_config and tool_connect in one. Returns 0
 * with *cfg and *client (owned), or the exit status after a message. */
int tool_open(const char *cmd, const char *given, struct config **cfg,
              struct baton_client **client);

/* Checks that job is in cfg's jobs.yaml. Returns 0 (also when jobs.yaml
 * cannot be loaded: a warning says so, and the leader decides), or
 * CLI_EXIT_FAIL after "no job ...". */
int tool_check_job(const char *cmd, const struct config *cfg, const char *job);

/* "user@host" of this process, for requests that say who made them.
 * Returns buf. */
const char *tool_who(char *buf, size_t len);

/* ---- formatting ---- */

/* A duration for humans: "350ms", "4.2s", "3m05s", "2h07m", "3d04h". */
const char *tool_format_ms(int64_t ms, char *buf, size_t len);

/* The command of a job as a shell would read it: argv joined with spaces
 * and quoted where needed, or `sh -c '...'`. Returns: owned (free()), or
 * NULL on ENOMEM. */
char *tool_job_command(const struct job *j);

/* Writes s[0..n), text of several lines, for a person's terminal: each
 * line with what a terminal would act on escaped (utf8.h), the line breaks
 * kept. Returns 0, or -1 on a write error or ENOMEM. */
int tool_write_text(FILE *out, const char *s, size_t n);

/* Prints cJSON item (on one line) and a newline on stdout, and deletes it.
 * Returns 0, or CLI_EXIT_FAIL (after a message) on ENOMEM or a write error. */
int tool_print_json(const char *cmd, cJSON *item);

/* Flushes stdout. Returns 0, or CLI_EXIT_FAIL after a message. */
int tool_flush(const char *cmd);

/* ---- aligned tables ---- */

struct tool_table {
    size_t ncols, nrows, cap;
    char **cells; /* nrows x ncols, owned */
    bool oom;     /* a row could not be stored */
    /* A row's last non-empty cell (not padded) does not widen its column:
     * a row that ends early with a long note leaves the others aligned. */
    bool loose_last;
};

void tool_table_init(struct tool_table *t, size_t ncols);
/* Appends a row of ncols cells (copied, with what a terminal would act on
 * escaped, utf8_term_dup; NULL is written as "-"). */
void tool_table_add(struct tool_table *t, const char *const *cells);
/* Writes the rows with columns padded to their widest cell, two spaces
 * apart, each line starting with indent. */
void tool_table_print(const struct tool_table *t, const char *indent, FILE *out);
void tool_table_free(struct tool_table *t);

#endif /* BATON_CLI_TOOLS_H */
