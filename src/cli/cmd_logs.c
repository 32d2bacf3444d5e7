/* cmd_logs.c -- `baton logs [--color WHEN] [FILE...]`: the supervisor's JSON
 * log lines as readable text, one line per event (logfmt.h), like bunyan's
 * CLI. Reads the files in order, or stdin; a line that is not a log event
 * is written as it is (control characters escaped, as in every line).
 * Every line is written as soon as it is read, so that `baton run | baton
 * logs` and `tail -f log | baton logs` keep pace.
 *
 * Exit: 0; 66 when a FILE cannot be opened (the others are still read);
 * 64 for a bad argument; 1 when the output cannot be written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "logfmt.h"
#include "tools.h"

static int cmd_logs(int argc, char **argv);

static const struct cli_opt opts[] = {
    {TOOL_OPT_COLOR, "color", "WHEN",
     "colour the output: auto (on a terminal, unless NO_COLOR is set; the default), always, "
     "never"},
    {0},
};

static const struct cli_item environment[] = {
    {"NO_COLOR", "when set and not empty, --color auto means never"},
    {NULL, NULL},
};

static const struct cli_section sections[] = {
    {"environment", environment},
    {NULL, NULL},
};

static const struct cli_exit exits[] = {
    {CLI_EXIT_OK, "every input was read"},
    {CLI_EXIT_FAIL, "the output cannot be written"},
    {CLI_EXIT_USAGE, "bad command line"},
    {CLI_EXIT_NOINPUT, "a FILE cannot be opened (the others are still read)"},
    {-1, NULL},
};

const struct cli_cmd cli_cmd_logs = {
    .name = "logs",
    .operands = "[FILE...]",
    .summary = "turn the supervisor's JSON log lines into readable text",
    .description =
        "Reads the JSON lines 'baton run' writes, from the FILEs or stdin, and writes each as "
        "one readable line: time, level, node, event, a short phrase for the common events, "
        "then every other field as key=value. Lines that are not log events pass through as "
        "they are. Control characters (a job's escape sequences, line breaks in a value) are "
        "shown escaped (\\x1b, \\n), so that no line can drive the terminal. It keeps pace "
        "with its input: 'journalctl -u baton -f -o cat | baton "
        "logs'.\n\n"
        "The supervisor writes the same text itself when log.format is text, or auto (the "
        "default) and its stdout is a terminal.",
    .opts = opts,
    .sections = sections,
    .exits = exits,
    .operand = CLI_OPERAND_FILE,
    .run = cmd_logs,
};

/* Copies f to stdout, line by line. Returns 0, or -1 on a write error. */
static int format_stream(FILE *f, bool color)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while (rc == 0) {
        n = getline(&line, &cap, f);
        if (n < 0)
            break;
        if (n > 0 && line[n - 1] == '\n')
            n--;
        char *text = logfmt_line(line, (size_t)n, color);
        if (text == NULL) {
            rc = -1;
            break;
        }
        if (fputs(text, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
            rc = -1;
        free(text);
    }
    free(line);
    return rc;
}

static int cmd_logs(int argc, char **argv)
{
    struct cli_parse p;
    const char *when = "auto";
    bool color = false;
    int id, rc = CLI_EXIT_OK;

    cli_parse_init(&p, &cli_cmd_logs, argc, argv);
    for (;;) {
        id = cli_parse_next(&p);
        if (id < 0)
            break;
        if (id == TOOL_OPT_COLOR)
            when = p.arg;
    }
    cli_parse_end(&p);
    if (id == CLI_OPT_EXIT)
        return p.status;
    if (!cli_color(when, STDOUT_FILENO, &color))
        return cli_usage("logs", "--color \"%s\": expected auto, always or never", when);
    if (p.optind >= argc) {
        if (format_stream(stdin, color) != 0)
            return cli_fail("logs", "cannot write the output: %s", strerror(errno));
        return CLI_EXIT_OK;
    }
    for (int i = p.optind; i < argc; i++) {
        FILE *f = strcmp(argv[i], "-") == 0 ? stdin : fopen(argv[i], "re");
        if (f == NULL) {
            rc = cli_error(CLI_EXIT_NOINPUT, "logs", "%s: %s", argv[i], strerror(errno));
            continue;
        }
        int w = format_stream(f, color);
        if (f != stdin)
            fclose(f);
        if (w != 0)
            return cli_fail("logs", "cannot write the output: %s", strerror(errno));
    }
    return rc;
}
