/* cmd_next.c -- `baton next`: print the next fire times of a cron expression.
 *
 *   baton next [--tz ZONE] [--from RFC3339] [--count N] [--local] EXPR
 *
 * Prints the next N (default 5, at most 10000) fire times strictly after
 * --from (default: now), one per line, as RFC 3339 in UTC
 * (2026-01-02T07:00:00Z), or with --local as wall time in the zone with its
 * offset (2026-01-02T08:00:00+01:00). The zone defaults to UTC. EXPR may be
 * given as one argument or as several (they are joined with spaces, so
 * `baton next @every 90s` works unquoted).
 *
 * Exit: 0; 1 when the expression stops firing before N times were found
 * (e.g. only in a DST gap) or output fails; 2 for a usage error, an invalid
 * expression (`baton: cron: field 2 (hour) "25": ...`) or an unknown zone.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cron.h"

#define NEXT_COUNT_DEFAULT 5
#define NEXT_COUNT_MAX 10000
#define NEXT_EXPR_MAX 1024

static const char next_options[] =
    "\n"
    "options:\n"
    "  --tz ZONE        IANA time zone of the schedule (default UTC)\n"
    "  --from TIME      start after this RFC 3339 time, e.g. 2026-01-02T07:00:00Z\n"
    "                   or 2026-01-02T08:00:00+01:00 (default: now)\n"
    "  -n, --count N    how many fire times to print, 1-10000 (default 5)\n"
    "  --local          print wall times in ZONE with their offset instead of UTC\n"
    "\n"
    "EXPR: 5 fields (minute hour day-of-month month day-of-week), 6 with seconds\n"
    "first, @yearly @monthly @weekly @daily @hourly, or @every DURATION.\n";

/* Parses --count: digits only, 1..NEXT_COUNT_MAX. */
static bool parse_count(const char *s, int *out)
{
    char *end = NULL;
    long v;

    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 1 || v > NEXT_COUNT_MAX)
        return false;
    *out = (int)v;
    return true;
}

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

int cmd_next(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"tz", required_argument, NULL, 'z'},
        {"from", required_argument, NULL, 'f'},
        {"count", required_argument, NULL, 'n'},
        {"local", no_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *zone = "UTC", *from_text = NULL;
    char text[NEXT_EXPR_MAX], err[256], msg[320], when[CRON_TIME_BUFSZ];
    struct cron_tz *tz = NULL;
    struct cron_expr *expr = NULL;
    struct cron_error cerr;
    int count = NEXT_COUNT_DEFAULT, printed = 0, opt, rc = CLI_EXIT_USAGE;
    bool local = false;
    int64_t t;

    optind = 1;
    opterr = 0;
    for (;;) {
        opt = getopt_long(argc, argv, ":hn:", longopts, NULL);
        if (opt == -1)
            break;
        switch (opt) {
        case 'z':
            zone = optarg;
            break;
        case 'f':
            from_text = optarg;
            break;
        case 'n':
            if (!parse_count(optarg, &count))
                return cli_usage("next", "--count \"%s\": expected a whole number from 1 to %d",
                                 optarg, NEXT_COUNT_MAX);
            break;
        case 'l':
            local = true;
            break;
        case 'h':
            cli_print_usage("next");
            fputs(next_options, stdout);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage("next", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage("next", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage("next", "missing cron expression");
    if (!join_args(argc - optind, argv + optind, text, sizeof text))
        return cli_usage("next", "cron expression too long (at most %d bytes)", NEXT_EXPR_MAX - 1);
    if (from_text != NULL) {
        if (cron_time_parse(from_text, &t, err, sizeof err) != 0)
            return cli_usage("next", "--from \"%s\": %s", from_text, err);
    } else {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        t = (int64_t)now.tv_sec;
    }
    if (cron_parse(text, &expr, &cerr) != 0) {
        fprintf(stderr, "baton: cron: %s\n", cron_error_format(&cerr, msg, sizeof msg));
        goto out;
    }
    if (cron_tz_load(zone, &tz, err, sizeof err) != 0) {
        cli_usage("next", "--tz: %s", err);
        goto out_free_expr;
    }
    for (printed = 0; printed < count; printed++) {
        if (cron_next(expr, tz, t, &t) != 0)
            break;
        puts(cron_time_format(t, local ? tz : NULL, when, sizeof when));
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        rc = cli_fail("next", "cannot write the output: %s", strerror(errno));
        goto out_free_tz;
    }
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
