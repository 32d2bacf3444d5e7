/* cmd_logs.c -- `baton logs [--color WHEN] [FILE...]`: the supervisor's JSON
 * log lines as readable text, one line per event (logfmt.h), like bunyan's
 * CLI. Reads stdin, or merges the FILEs by time: the logs of several nodes
 * read as one story. The merge streams: it holds one line of each FILE,
 * and writes the earliest (by its ts; the first FILE's on a tie; a line
 * without a time follows the line before it in its FILE). A line that is
 * not a log event is written as it is (control characters escaped, as in
 * every line). Every line is written as soon as it can be, so that `baton
 * run | baton logs` and `tail -f log | baton logs` keep pace.
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
        "then every other field as key=value. Several FILEs (the logs of several nodes) are "
        "merged by time, the time of each line (its ts), as they are read: the first FILE's "
        "line comes first when two have the same time, and a line without a time stays after "
        "the line before it in its FILE. Lines that are not log events pass through as "
        "they are. Control characters (a job's escape sequences, line breaks in a value) are "
        "shown escaped (\\x1b, \\n), so that no line can drive the terminal. It keeps pace "
        "with its input: 'journalctl -u baton -f -o cat | baton logs'.\n\n"
        "The supervisor writes the same text itself when log.format is text, or auto (the "
        "default) and its stdout is a terminal.",
    .opts = opts,
    .sections = sections,
    .exits = exits,
    .operand = CLI_OPERAND_FILE,
    .run = cmd_logs,
};

/* One input of the merge: the line read ahead, and its time. */
struct input {
    FILE *f;
    char *line; /* without its newline; owned */
    size_t cap;
    ssize_t len;  /* of line; -1 once f is read to its end */
    char key[24]; /* line's time (line_time), else the time of the line before */
};

/* Copies the time at s (RFC 3339, UTC: 2026-11-22T02:30:23.573Z, the
 * fraction optional) into key as YYYY-MM-DDTHH:MM:SS.mmm, which sorts as
 * time does. False when s does not start with such a time. */
static bool time_key(const char *s, size_t n, char key[24])
{
    static const char shape[] = "dddd-dd-ddTdd:dd:dd";
    size_t i;
    for (i = 0; shape[i] != '\0'; i++) {
        bool digit = i < n && s[i] >= '0' && s[i] <= '9';
        if (i >= n || (shape[i] == 'd' ? !digit : s[i] != shape[i]))
            return false;
    }
    memcpy(key, s, 19);
    memcpy(key + 19, ".000", 5);
    if (i < n && s[i] == '.')
        for (size_t k = 0, at = ++i; i < n && s[i] >= '0' && s[i] <= '9'; i++, k++)
            if (k < 3)
                key[20 + k] = s[at + k];
    return i < n && s[i] == 'Z';
}

/* The time of a log line into key: the ts of a JSON line, or the time a
 * text line starts with (log.format text). False when it has none. */
static bool line_time(const char *line, size_t n, char key[24])
{
    static const char ts[] = "{\"ts\":\"";
    if (n > sizeof ts - 1 && memcmp(line, ts, sizeof ts - 1) == 0) /* as baton writes it */
        return time_key(line + sizeof ts - 1, n - (sizeof ts - 1), key);
    if (n > 0 && line[0] == '{') { /* JSON, the members in any order */
        cJSON *o = cJSON_ParseWithLength(line, n);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "ts");
        bool ok = cJSON_IsString(v) && time_key(v->valuestring, strlen(v->valuestring), key);
        cJSON_Delete(o);
        return ok;
    }
    return time_key(line, n, key);
}

/* Reads in's next line. False at the end of its input (or a read error). */
static bool input_next(struct input *in)
{
    in->len = getline(&in->line, &in->cap, in->f);
    if (in->len < 0)
        return false;
    if (in->len > 0 && in->line[in->len - 1] == '\n')
        in->line[--in->len] = '\0';
    char key[24];
    if (line_time(in->line, (size_t)in->len, key))
        memcpy(in->key, key, sizeof key);
    return true;
}

/* Writes the lines of the n inputs to stdout as text, the earliest first
 * (the first input's on a tie), each as soon as it is known to be next.
 * Returns 0, or -1 on a write error or ENOMEM. */
static int merge(struct input *in, size_t n, bool color)
{
    for (size_t i = 0; i < n; i++)
        input_next(&in[i]);
    for (;;) {
        struct input *next = NULL;
        for (size_t i = 0; i < n; i++)
            if (in[i].len >= 0 && (next == NULL || strcmp(in[i].key, next->key) < 0))
                next = &in[i];
        if (next == NULL)
            return 0;
        char *text = logfmt_line(next->line, (size_t)next->len, color);
        if (text == NULL)
            return -1;
        int rc = fputs(text, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) != 0;
        free(text);
        if (rc != 0)
            return -1;
        input_next(next);
    }
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
    size_t nfiles = p.optind < argc ? (size_t)(argc - p.optind) : 1, n = 0;
    struct input *in = calloc(nfiles, sizeof *in);
    if (in == NULL)
        return cli_fail("logs", "out of memory");
    for (int i = p.optind; i < argc; i++) {
        FILE *f = strcmp(argv[i], "-") == 0 ? stdin : fopen(argv[i], "re");
        if (f == NULL)
            rc = cli_error(CLI_EXIT_NOINPUT, "logs", "%s: %s", argv[i], strerror(errno));
        else
            in[n++].f = f;
    }
    if (p.optind >= argc)
        in[n++].f = stdin;
    if (merge(in, n, color) != 0)
        rc = cli_fail("logs", "cannot write the output: %s", strerror(errno));
    for (size_t i = 0; i < n; i++) {
        if (in[i].f != stdin)
            fclose(in[i].f);
        free(in[i].line);
    }
    free(in);
    return rc;
}
