/* util.c -- helpers shared by the subcommands: messages and option values. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "cron.h"

__attribute__((format(printf, 2, 0))) static void vmessage(const char *cmd, const char *fmt,
                                                           va_list ap)
{
    fprintf(stderr, "baton: %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "baton: %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'baton %s --help')\n", cmd);
    return CLI_EXIT_USAGE;
}

int cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(cmd, fmt, ap);
    va_end(ap);
    return CLI_EXIT_FAIL;
}

bool cli_duration(const char *cmd, const char *opt, const char *val, bool zero_ok, int64_t *ms)
{
    char err[128];
    if (cron_duration_parse(val, ms, err, sizeof err) != 0) {
        cli_usage(cmd, "%s \"%s\": %s", opt, val, err);
        return false;
    }
    if (*ms == 0 && !zero_ok) {
        cli_usage(cmd, "%s \"%s\": must be greater than 0", opt, val);
        return false;
    }
    return true;
}

const char *cli_default_url(void)
{
    const char *u = getenv("BATON_REDIS_URL");
    return (u != NULL && *u != '\0') ? u : "redis://127.0.0.1:6379/0";
}
