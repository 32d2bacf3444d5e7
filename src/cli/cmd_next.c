/* cmd_next.c -- `baton next`: print the next fire times of a cron expression.
 *
 *   baton next [--tz ZONE] [--from RFC3339] [--count N] [--local] [--json] EXPR
 *
 * Prints the next N (default 5, at most 10000) fire times strictly after
 * --from (default: now), one per line, as RFC 3339 in UTC
 * (2026-01-02T07:00:00Z), or with --local as wall time in the zone with its
 * offset (2026-01-02T08:00:00+01:00). The zone defaults to UTC. EXPR may be
 * given as one argument or as several (they are joined with spaces, so
 * `baton next @every 90s` works unquoted). With --json: one array of
 * {"utc": "...Z", "local": "...+01:00", "unix": N}.
 *
 * Exit: 0; 1 when the expression stops firing before N times were found
 * (e.g. only in a DST gap) or output fails; 64 for a usage error, an invalid
 * expression (`baton: next: field 2 (hour) "25": ...`) or an unknown zone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "clock.h"
#include "cron.h"
#include "tools.h"

#define NEXT_COUNT_DEFAULT 5
#define NEXT_COUNT_MAX 10000
#define NEXT_EXPR_MAX 1024

static int cmd_next(int argc, char **argv);

static const struct cli_opt opts[] = {
    {TOOL_OPT_TZ, "tz", "ZONE", "IANA time zone of the schedule (default UTC)"},
    {TOOL_OPT_FROM, "from", "TIME",
     "start after this RFC 3339 time, e.g. 2026-01-02T07:00:00Z or 2026-01-02T08:00:00+01:00 "
     "(default: now)"},
    {'n', "count", "N", "how many fire times to print, 1-10000 (default 5)"},
    {TOOL_OPT_LOCAL, "local", NULL, "print wall times in ZONE with their offset instead of UTC"},
    TOOL_OPT_JSON_ROW("print one JSON array of {\"utc\", \"local\", \"unix\"} objects"),
    {0},
};

static const struct cli_exit exits[] = {
    {CLI_EXIT_OK, "N fire times printed"},
    {CLI_EXIT_FAIL, "the expression stops firing before N times (those found are printed)"},
    {CLI_EXIT_USAGE, "bad command line, an invalid expression or an unknown zone"},
    {-1, NULL},
};

const struct cli_cmd cli_cmd_next = {
    .name = "next",
    .operands = "EXPR",
    .summary = "print the next fire times of a cron expression",
    .description =
        "Prints the next N fire times of the cron expression EXPR strictly after --from, one "
        "per line, as RFC 3339 in UTC (2026-01-02T07:00:00Z), or with --local as wall time in "
        "ZONE with its offset. Daylight saving time is handled as cronie does.\n\n"
        "EXPR: 5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, "
        "@yearly @monthly @weekly @daily @hourly, or @every DURATION. It may be given as "
        "several words: they are joined with spaces.",
    .opts = opts,
    .exits = exits,
    .operand = CLI_OPERAND_CRON,
    .run = cmd_next,
};

/* Joins args with single spaces into buf. Returns false when too long. */
static bool join_args(int n, char **args, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t a = strlen(args[i]);
        if (used + (i > 0) + a + 1 > len)
            return false;
        if (i > 0)
            buf[used++] = ' ';
        memcpy(buf + used, args[i], a + 1);
        used += a;
    }
    return true;
}

static int cmd_next(int argc, char **argv)
{
    const char *zone = "UTC", *from_text = NULL;
    char text[NEXT_EXPR_MAX], err[256], msg[512], when[CRON_TIME_BUFSZ], wall[CRON_TIME_BUFSZ];
    struct cron_tz *tz = NULL;
    struct cron_expr *expr = NULL;
    struct cron_error cerr;
    struct cli_parse p;
    long count = NEXT_COUNT_DEFAULT;
    int printed = 0, id = 0, rc = CLI_EXIT_USAGE;
    bool local = false, json = false, bad = false;
    int64_t t;

    cli_parse_init(&p, &cli_cmd_next, argc, argv);
    while (!bad) {
        id = cli_parse_next(&p);
        if (id < 0)
            break;
        switch (id) {
        case TOOL_OPT_TZ: zone = p.arg; break;
        case TOOL_OPT_FROM: from_text = p.arg; break;
        case 'n': bad = !cli_count("next", "--count", p.arg, NEXT_COUNT_MAX, &count); break;
        case TOOL_OPT_LOCAL: local = true; break;
        case TOOL_OPT_JSON: json = true; break;
        default: break;
        }
    }
    cli_parse_end(&p);
    if (bad)
        return CLI_EXIT_USAGE;
    if (id == CLI_OPT_EXIT)
        return p.status;
    int first = p.optind;
    if (first >= argc)
        return cli_usage("next", "missing cron expression");
    if (!join_args(argc - first, argv + first, text, sizeof text))
        return cli_usage("next", "cron expression too long (at most %d bytes)", NEXT_EXPR_MAX - 1);
    if (from_text != NULL) {
        if (cron_time_parse(from_text, &t, err, sizeof err) != 0)
            return cli_usage("next", "--from \"%s\": %s", from_text, err);
    } else {
        t = wall_ms() / 1000;
    }
    if (cron_parse(text, &expr, &cerr) != 0) {
        cli_usage("next", "%s", cron_error_format(&cerr, msg, sizeof msg));
        goto out;
    }
    if (cron_tz_load(zone, &tz, err, sizeof err) != 0) {
        cli_usage("next", "--tz: %s", err);
        goto out_free_expr;
    }
    cJSON *list = json ? cJSON_CreateArray() : NULL;
    for (printed = 0; printed < count; printed++) {
        if (cron_next(expr, tz, t, &t) != 0)
            break;
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "utc", cron_time_format(t, NULL, when, sizeof when));
            cJSON_AddStringToObject(o, "local", cron_time_format(t, tz, wall, sizeof wall));
            cJSON_AddNumberToObject(o, "unix", (double)t);
            cJSON_AddItemToArray(list, o);
        } else {
            puts(cron_time_format(t, local ? tz : NULL, when, sizeof when));
        }
    }
    rc = json ? tool_print_json("next", list) : tool_flush("next");
    if (rc != 0)
        goto out_free_tz;
    if (printed < count) {
        rc = cli_fail("next", "\"%s\" has no %sfire time in %s within 400 years after %s", text,
                      printed > 0 ? "further " : "", cron_tz_name(tz),
                      cron_time_format(t, NULL, when, sizeof when));
        goto out_free_tz;
    }
    rc = CLI_EXIT_OK;
out_free_tz:
    cron_tz_free(tz);
out_free_expr:
    cron_free(expr);
out:
    return rc;
}
