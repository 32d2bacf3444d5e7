/* tools.c -- see tools.h: helpers of `baton check`, `status`, `history` and
 * `step-down`. */
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "jobs.h"
#include "keys.h"
#include "members.h"
#include "secrets.h"
#include "tools.h"
#include "utf8.h"


const char *tool_config_path(const char *cmd, const char *given, int *rc)
{
    const char *path = given != NULL ? given : config_default_path();
    if (path == NULL) {
        *rc = cli_error(CLI_EXIT_CONFIG, cmd,
                        "no configuration: give -c FILE, or create ./baton.yaml or %s",
                        config_sys_path());
        return NULL;
    }
    if (*path == '\0') {
        *rc = cli_usage(cmd, "-c: the file name must not be empty");
        return NULL;
    }
    *rc = 0;
    return path;
}

int tool_load_config(const char *cmd, const char *path, struct config **out)
{
    char err[1024];
    if (config_load(path, out, err, sizeof err) != 0)
        return cli_error(CLI_EXIT_CONFIG, cmd, "%s", err);
    return 0;
}

int tool_connect_quiet(const char *cmd, const struct config *cfg, struct baton_client **out,
                       char *why, size_t len)
{
    struct secrets sec;
    *out = NULL;
    if (secrets_load(cfg->password_file, cfg->sentinel_password_file, &sec, why, len) != 0) {
        secrets_clear(&sec);
        return CLI_EXIT_FAIL;
    }
    for (int i = 0; i < sec.nwarnings; i++)
        fprintf(stderr, "baton: %s: warning: %s\n", cmd, sec.warning[i]);
    struct baton_client_opts o = {.connect_timeout_ms = cfg->redis_timeout_ms,
                                  .command_timeout_ms = cfg->redis_timeout_ms,
                                  .password = sec.password,
                                  .sentinel_password = sec.sentinel_password};
    struct baton_client *c = NULL;
    int rc = cli_client_new(cmd, cfg->redis, &o, &c);
    secrets_clear(&sec);
    if (rc != BATON_OK) {
        const char *e = c != NULL ? baton_client_errstr(c) : "";
        snprintf(why, len, "%s", e[0] != '\0' ? e : baton_strerror(rc));
        baton_client_free(c);
        return CLI_EXIT_UNAVAILABLE;
    }
    *out = c;
    return 0;
}

int tool_connect(const char *cmd, const struct config *cfg, struct baton_client **out)
{
    char why[512];
    int rc = tool_connect_quiet(cmd, cfg, out, why, sizeof why);
    return rc == 0 ? 0 : cli_error(rc, cmd, "%s", why);
}

int tool_redis_error(const char *cmd, struct baton_client *c, int rc, const char *what)
{
    /* The client's detail starts with the (redacted) URL; a reply we could
     * not make sense of leaves no detail there. */
    const char *why = baton_client_errstr(c);
    if (rc == BATON_EPROTO || rc == BATON_ENOMEM || why[0] == '\0')
        return cli_error(CLI_EXIT_UNAVAILABLE, cmd, "%s: %s (while %s)", baton_client_url(c),
                         baton_strerror(rc), what);
    return cli_error(CLI_EXIT_UNAVAILABLE, cmd, "%s (while %s)", why, what);
}

int tool_open(const char *cmd, const char *given, struct config **cfg,
              struct baton_client **client)
{
    int rc;
    *cfg = NULL;
    *client = NULL;
    const char *path = tool_config_path(cmd, given, &rc);
    if (path == NULL)
        return rc;
    rc = tool_load_config(cmd, path, cfg);
    if (rc == 0 && (rc = tool_connect(cmd, *cfg, client)) != 0) {
        config_free(*cfg);
        *cfg = NULL;
    }
    return rc;
}

int tool_check_job(const char *cmd, const struct config *cfg, const char *job)
{
    struct jobs *jobs = NULL;
    char err[1024];
    if (jobs_load(cfg->jobs_path, cfg->timezone, &jobs, err, sizeof err) != 0) {
        fprintf(stderr, "baton: %s: warning: %s (the leader checks the job)\n", cmd, err);
        return 0;
    }
    int rc = jobs_find(jobs, job) != NULL
                 ? 0
                 : cli_fail(cmd, "no job \"%s\" in %s", job, jobs->path);
    jobs_free(jobs);
    return rc;
}

const char *tool_who(char *buf, size_t len)
{
    const struct passwd *pw = getpwuid(geteuid());
    if (pw != NULL)
        snprintf(buf, len, "%s@%s", pw->pw_name, members_host());
    else
        snprintf(buf, len, "uid %u@%s", (unsigned)geteuid(), members_host());
    return buf;
}

/* ---- formatting ---- */

const char *tool_format_ms(int64_t ms, char *buf, size_t len)
{
    if (ms < 0)
        ms = 0;
    if (ms < 1000)
        snprintf(buf, len, "%" PRId64 "ms", ms);
    else if (ms < 60000)
        snprintf(buf, len, "%" PRId64 ".%" PRId64 "s", ms / 1000, ms % 1000 / 100);
    else if (ms < 3600000)
        snprintf(buf, len, "%" PRId64 "m%02" PRId64 "s", ms / 60000, ms % 60000 / 1000);
    else if (ms < 86400000)
        snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m", ms / 3600000, ms % 3600000 / 60000);
    else
        snprintf(buf, len, "%" PRId64 "d%02" PRId64 "h", ms / 86400000, ms % 86400000 / 3600000);
    return buf;
}

/* Writes s as one shell word: as is when it is plain, else single-quoted. */
static void write_word(const char *s, FILE *out)
{
    static const char plain[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                "0123456789_./:=@%+,-";
    if (s[0] != '\0' && strspn(s, plain) == strlen(s)) {
        fputs(s, out);
        return;
    }
    fputc('\'', out);
    for (; *s != '\0'; s++) {
        if (*s == '\'')
            fputs("'\\''", out);
        else
            fputc(*s, out);
    }
    fputc('\'', out);
}

char *tool_job_command(const struct job *j)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    if (j->argv != NULL) {
        for (size_t i = 0; j->argv[i] != NULL; i++) {
            if (i > 0)
                fputc(' ', f);
            write_word(j->argv[i], f);
        }
    } else {
        fputs("sh -c ", f);
        write_word(j->shell != NULL ? j->shell : "", f);
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

int tool_print_json(const char *cmd, cJSON *item)
{
    char *s = item != NULL ? cJSON_PrintUnformatted(item) : NULL;
    cJSON_Delete(item);
    if (s == NULL)
        return cli_fail(cmd, "out of memory");
    puts(s);
    free(s);
    return tool_flush(cmd);
}

int tool_flush(const char *cmd)
{
    if (fflush(stdout) != 0 || ferror(stdout))
        return cli_fail(cmd, "cannot write the output: %s", strerror(errno));
    return 0;
}

int tool_write_text(FILE *out, const char *s, size_t n)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n;) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t len = nl != NULL ? (size_t)(nl - (s + i)) : n - i;
        size_t need = utf8_term_escape(s + i, len, NULL, 0);
        char *line = malloc(need + 1);
        if (line == NULL)
            return -1;
        utf8_term_escape(s + i, len, line, need + 1);
        if (fputs(line, out) == EOF || (nl != NULL && fputc('\n', out) == EOF))
            rc = -1;
        free(line);
        i += len + (nl != NULL);
    }
    return rc;
}

/* ---- aligned tables ---- */

void tool_table_init(struct tool_table *t, size_t ncols)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
}

void tool_table_add(struct tool_table *t, const char *const *cells)
{
    if (t->oom)
        return;
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8;
        char **p = realloc(t->cells, cap * t->ncols * sizeof *p);
        if (p == NULL) {
            t->oom = true;
            return;
        }
        t->cells = p;
        t->cap = cap;
    }
    char **row = t->cells + t->nrows * t->ncols;
    for (size_t i = 0; i < t->ncols; i++) {
        row[i] = utf8_term_dup(cells[i] != NULL ? cells[i] : "-");
        if (row[i] == NULL) {
            for (size_t k = 0; k < i; k++)
                free(row[k]);
            t->oom = true;
            return;
        }
    }
    t->nrows++;
}

void tool_table_print(const struct tool_table *t, const char *indent, FILE *out)
{
    size_t width[16] = {0};
    size_t ncols = t->ncols < 16 ? t->ncols : 16;
    for (size_t r = 0; r < t->nrows; r++) {
        size_t end = ncols; /* the cells that count */
        while (t->loose_last && end > 0 && t->cells[r * t->ncols + end - 1][0] == '\0')
            end--;
        if (t->loose_last && end > 0)
            end--;
        for (size_t c = 0; c < end; c++) {
            size_t w = strlen(t->cells[r * t->ncols + c]);
            if (w > width[c])
                width[c] = w;
        }
    }
    for (size_t r = 0; r < t->nrows; r++) {
        /* The last non-empty cell ends the line: no trailing blanks. */
        size_t last = ncols;
        while (last > 0 && t->cells[r * t->ncols + last - 1][0] == '\0')
            last--;
        fputs(indent, out);
        for (size_t c = 0; c < last; c++) {
            const char *cell = t->cells[r * t->ncols + c];
            if (c + 1 < last)
                fprintf(out, "%-*s  ", (int)width[c], cell);
            else
                fputs(cell, out);
        }
        fputc('\n', out);
    }
    if (t->oom)
        fprintf(out, "%s(out of memory: rows are missing)\n", indent);
}

void tool_table_free(struct tool_table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
