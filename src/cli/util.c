/* util.c -- what the subcommands share: the option parser built from their
 * descriptors, one-line messages, and option values. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton.h"
#include "cli.h"
#include "cron.h"
#include "utf8.h"

/* ---- messages ---- */

/* Writes "baton: CMD: message" and a newline on stderr, the message made
 * of fmt and ap with what a terminal would act on escaped (utf8.h): one
 * line, whatever the values in it hold. usage: with the pointer to --help. */
__attribute__((format(printf, 3, 0))) static void vmessage(const char *cmd, bool usage,
                                                           const char *fmt, va_list ap)
{
    char *text = NULL, *safe = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (m != NULL) {
        vfprintf(m, fmt, ap);
        if (fclose(m) == 0)
            safe = utf8_term_dup(text);
    }
    fprintf(stderr, "baton: %s: %s", cmd, safe != NULL ? safe : "(out of memory)");
    if (usage)
        fprintf(stderr, " (see 'baton %s --help')", cmd);
    fputc('\n', stderr);
    free(safe);
    free(text);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(cmd, true, fmt, ap);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

int cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(cmd, false, fmt, ap);
    va_end(ap);
    return CLI_EXIT_FAIL;
}

int cli_error(int status, const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(cmd, false, fmt, ap);
    va_end(ap);
    return status;
}

/* ---- values ---- */

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

bool cli_count(const char *cmd, const char *opt, const char *val, long max, long *out)
{
    char *end = NULL;
    long v = 0;
    bool ok = *val >= '0' && *val <= '9';
    if (ok) {
        errno = 0;
        v = strtol(val, &end, 10);
        ok = errno == 0 && *end == '\0' && v >= 1 && v <= max;
    }
    if (!ok) {
        cli_usage(cmd, "%s \"%s\": expected a whole number from 1 to %ld", opt, val, max);
        return false;
    }
    *out = v;
    return true;
}

int cli_client_new(const char *cmd, const char *url, const struct baton_client_opts *o,
                   struct baton_client **out)
{
    int rc = baton_client_new(url, o, out);
    /* Said before a failure too: the URL was read, and it is what the
     * operator has to change. */
    if (baton_client_tls_insecure(*out))
        fprintf(stderr,
                "baton: %s: warning: TLS certificate verification is off (verify=none): anyone "
                "on the network path can pose as Redis\n",
                cmd);
    return rc;
}

const char *cli_default_url(void)
{
    const char *u = getenv("BATON_REDIS_URL");
    return (u != NULL && *u != '\0') ? u : "redis://127.0.0.1:6379/0";
}

bool cli_color(const char *when, int fd, bool *color)
{
    if (strcmp(when, "always") == 0)
        *color = true;
    else if (strcmp(when, "never") == 0)
        *color = false;
    else if (strcmp(when, "auto") == 0) {
        const char *no = getenv("NO_COLOR");
        *color = isatty(fd) && (no == NULL || *no == '\0');
    } else
        return false;
    return true;
}

/* ---- the option parser ---- */

const struct cli_opt cli_common_opts[] = {
    {'h', "help", NULL, "show this help and exit"},
    {'V', "version", NULL, "print baton's version and exit"},
    {0},
};

static size_t count_opts(const struct cli_opt *o)
{
    size_t n = 0;
    while (o != NULL && o[n].name != NULL)
        n++;
    return n;
}

void cli_parse_init(struct cli_parse *p, const struct cli_cmd *c, int argc, char **argv)
{
    size_t nown = count_opts(c->opts), ncommon = count_opts(cli_common_opts), k = 0, s = 0;
    memset(p, 0, sizeof *p);
    p->cmd = c;
    p->argc = argc;
    p->argv = argv;
    p->optind = 1;
    struct option *l = calloc(nown + ncommon + 1, sizeof *l);
    p->longs = l;
    if (c->flags & CLI_STOP_AT_OPERAND)
        p->shorts[s++] = '+';
    p->shorts[s++] = ':';
    for (size_t pass = 0; pass < 2; pass++) {
        const struct cli_opt *o = pass == 0 ? c->opts : cli_common_opts;
        size_t n = pass == 0 ? nown : ncommon;
        for (size_t i = 0; i < n; i++) {
            if (l != NULL)
                l[k++] = (struct option){o[i].name, o[i].arg ? required_argument : no_argument,
                                         NULL, o[i].id};
            if (o[i].id < CLI_OPT_LONG && s + 3 < sizeof p->shorts) {
                p->shorts[s++] = (char)o[i].id;
                if (o[i].arg != NULL)
                    p->shorts[s++] = ':';
            }
        }
    }
    p->shorts[s] = '\0';
    optind = 1;
    opterr = 0;
}

void cli_parse_end(struct cli_parse *p)
{
    free(p->longs);
    p->longs = NULL;
}

/* Reports what getopt_long returned for a bad option (c is ':' or '?'):
 * a missing value, an unknown or ambiguous option, a value given to a flag. */
static int opt_error(const char *cmd, int c, char **argv, const struct option *opts)
{
    const char *arg = argv[optind - 1];
    if (c == ':')
        return cli_usage(cmd, "%s: missing its value", arg);
    /* A flag given a value (--json=1): getopt_long reports its code. */
    for (const struct option *o = opts; optopt != 0 && o->name != NULL; o++)
        if (o->val == optopt && o->has_arg == no_argument && arg[0] == '-' && arg[1] == '-')
            return cli_usage(cmd, "--%s: takes no value", o->name);
    if (optopt != 0 && optopt < CLI_OPT_LONG)
        return cli_usage(cmd, "-%c: unknown option", optopt);
    /* An abbreviation of several long options (--co: --config, --count). */
    if (arg[0] == '-' && arg[1] == '-') {
        size_t n = strcspn(arg + 2, "=");
        const char *first = NULL, *second = NULL;
        for (const struct option *o = opts; n > 0 && o->name != NULL; o++)
            if (strncmp(o->name, arg + 2, n) == 0) {
                if (first == NULL)
                    first = o->name;
                else if (second == NULL)
                    second = o->name;
            }
        if (second != NULL)
            return cli_usage(cmd, "%.*s: ambiguous option (--%s, --%s)", (int)n + 2, arg, first,
                             second);
    }
    return cli_usage(cmd, "%.*s: unknown option", (int)strcspn(arg, "="), arg);
}

int cli_parse_next(struct cli_parse *p)
{
    const struct option *longs = p->longs;
    if (longs == NULL) {
        p->status = cli_fail(p->cmd->name, "out of memory");
        return CLI_OPT_EXIT;
    }
    int c = getopt_long(p->argc, p->argv, p->shorts, longs, NULL);
    p->optind = optind;
    p->arg = optarg;
    switch (c) {
    case -1: return CLI_OPT_DONE;
    case 'h':
        cli_write_help(p->cmd, stdout);
        p->status = fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        return CLI_OPT_EXIT;
    case 'V':
        printf("baton %s\n", cli_version());
        p->status = fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        return CLI_OPT_EXIT;
    case ':':
    case '?': p->status = opt_error(p->cmd->name, c, p->argv, longs); return CLI_OPT_EXIT;
    default: return c;
    }
}
