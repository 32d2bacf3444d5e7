/* tools.c -- see tools.h: helpers of `baton check`, `status`, `history` and
 * `step-down`. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "jobs.h"
#include "keys.h"
#include "secrets.h"
#include "tools.h"

#define JOB_NAME_MAX 128

int tool_opt_error(const char *cmd, int c, char **argv, const struct option *opts)
{
    if (c == ':')
        return cli_usage(cmd, "%s: missing its value", argv[optind - 1]);
    /* A flag given a value (--json=1): getopt_long reports its code. */
    for (const struct option *o = opts; optopt != 0 && o->name != NULL; o++)
        if (o->val == optopt && o->has_arg == no_argument && argv[optind - 1][0] == '-' &&
            argv[optind - 1][1] == '-')
            return cli_usage(cmd, "--%s: takes no value", o->name);
    if (optopt != 0 && optopt < 256)
        return cli_usage(cmd, "-%c: unknown option", optopt);
    /* An abbreviation of several long options (--co: --config, --count). */
    const char *arg = argv[optind - 1];
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

const char *tool_config_path(const char *cmd, const char *given, int *rc)
{
    const char *path = given != NULL ? given : config_default_path();
    if (path == NULL) {
        *rc = cli_fail(cmd, "no configuration: give -c FILE, or create ./baton.yaml or "
                            "/etc/baton/baton.yaml");
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
        return cli_fail(cmd, "%s", err);
    return 0;
}

int tool_connect(const char *cmd, const struct config *cfg, struct baton_client **out)
{
    struct secrets sec;
    char err[512];
    if (secrets_load(cfg->password_file, cfg->sentinel_password_file, &sec, err, sizeof err) != 0) {
        secrets_clear(&sec);
        *out = NULL;
        return cli_fail(cmd, "%s", err);
    }
    for (int i = 0; i < sec.nwarnings; i++)
        fprintf(stderr, "baton: %s: warning: %s\n", cmd, sec.warning[i]);
    struct baton_client_opts o = {.connect_timeout_ms = cfg->redis_timeout_ms,
                                  .command_timeout_ms = cfg->redis_timeout_ms,
                                  .password = sec.password,
                                  .sentinel_password = sec.sentinel_password};
    struct baton_client *c = NULL;
    int rc = baton_client_new(cfg->redis, &o, &c);
    secrets_clear(&sec);
    if (rc != BATON_OK) {
        const char *why = c != NULL ? baton_client_errstr(c) : "";
        cli_fail(cmd, "%s", why[0] != '\0' ? why : baton_strerror(rc));
        baton_client_free(c);
        *out = NULL;
        return CLI_EXIT_FAIL;
    }
    *out = c;
    return 0;
}

int tool_redis_error(const char *cmd, struct baton_client *c, int rc, const char *what)
{
    /* The client's detail starts with the (redacted) URL; a reply we could
     * not make sense of leaves no detail there. */
    const char *why = baton_client_errstr(c);
    if (rc == BATON_EPROTO || rc == BATON_ENOMEM || why[0] == '\0')
        return cli_fail(cmd, "%s: %s (while %s)", baton_client_url(c), baton_strerror(rc), what);
    return cli_fail(cmd, "%s (while %s)", why, what);
}

bool tool_job_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > JOB_NAME_MAX)
        return false;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

/* ---- run history ---- */

static const char empty[] = "";

/* Fills r from a flat [field, value, ...] array; unknown fields are ignored
 * (a newer supervisor may add some). Returns false on a malformed array. */
static bool parse_fields(const struct baton_reply *f, struct tool_run *r)
{
    static const struct {
        const char *name;
        size_t offset;
    } known[] = {
        {"run_id", offsetof(struct tool_run, run_id)},
        {"node", offsetof(struct tool_run, node)},
        {"term", offsetof(struct tool_run, term)},
        {"scheduled_at", offsetof(struct tool_run, scheduled_at)},
        {"started", offsetof(struct tool_run, started)},
        {"duration_ms", offsetof(struct tool_run, duration_ms)},
        {"outcome", offsetof(struct tool_run, outcome)},
        {"result", offsetof(struct tool_run, result)},
        {"attempt", offsetof(struct tool_run, attempt)},
    };
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
        *(const char **)((char *)r + known[k].offset) = empty;
    if (f->type == BATON_REPLY_NIL) /* a deleted entry */
        return true;
    if (f->type != BATON_REPLY_ARRAY || f->elements % 2 != 0)
        return false;
    for (size_t i = 0; i < f->elements; i += 2) {
        const struct baton_reply *name = f->element[i], *val = f->element[i + 1];
        if (name->type != BATON_REPLY_STRING || val->type != BATON_REPLY_STRING)
            return false;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            if (strcmp(name->str, known[k].name) == 0)
                *(const char **)((char *)r + known[k].offset) = val->str;
    }
    return true;
}

int tool_runs_read(struct baton_client *c, const char *group, const char *job, long count,
                   struct tool_runs *out)
{
    char cnt[24];
    int rc;
    memset(out, 0, sizeof *out);
    char *key = group_key(group, "runs:%s", job);
    if (key == NULL)
        return BATON_ENOMEM;
    snprintf(cnt, sizeof cnt, "%ld", count);
    const char *argv[] = {"XREVRANGE", key, "+", "-", "COUNT", cnt};
    rc = baton_client_command(c, 6, argv, NULL, &out->reply);
    free(key);
    if (rc != BATON_OK)
        goto out_free;
    const struct baton_reply *r = out->reply;
    rc = BATON_EPROTO;
    if (r->type != BATON_REPLY_ARRAY)
        goto out_free;
    if (r->elements > 0) {
        out->v = calloc(r->elements, sizeof *out->v);
        if (out->v == NULL) {
            rc = BATON_ENOMEM;
            goto out_free;
        }
    }
    for (size_t i = 0; i < r->elements; i++) {
        const struct baton_reply *e = r->element[i];
        if (e->type != BATON_REPLY_ARRAY || e->elements != 2 ||
            e->element[0]->type != BATON_REPLY_STRING)
            goto out_free;
        out->v[i].id = e->element[0]->str;
        if (!parse_fields(e->element[1], &out->v[i]))
            goto out_free;
    }
    out->n = r->elements;
    return BATON_OK;
out_free:
    tool_runs_free(out);
    return rc;
}

void tool_runs_free(struct tool_runs *r)
{
    baton_reply_free(r->reply);
    free(r->v);
    memset(r, 0, sizeof *r);
}

/* Adds name: s as a number when s is a whole decimal number, else null. */
static void add_number(cJSON *o, const char *name, const char *s)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (s[0] == '\0' || errno != 0 || *end != '\0' || (s[0] != '-' && (s[0] < '0' || s[0] > '9')))
        cJSON_AddNullToObject(o, name);
    else
        cJSON_AddNumberToObject(o, name, (double)v);
}

cJSON *tool_run_json(const struct tool_run *r)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "run_id", r->run_id);
    cJSON_AddStringToObject(o, "node", r->node);
    add_number(o, "term", r->term);
    cJSON_AddStringToObject(o, "scheduled_at", r->scheduled_at);
    if (r->started[0] != '\0')
        cJSON_AddStringToObject(o, "started", r->started);
    else
        cJSON_AddNullToObject(o, "started");
    add_number(o, "duration_ms", r->duration_ms);
    cJSON_AddStringToObject(o, "outcome", r->outcome);
    cJSON_AddStringToObject(o, "result", r->result);
    add_number(o, "attempt", r->attempt);
    return o;
}

const char *tool_run_outcome(const struct tool_run *r, char *buf, size_t len)
{
    const char *outcome = r->outcome[0] != '\0' ? r->outcome : "?";
    if (r->result[0] != '\0')
        snprintf(buf, len, "%s (%s)", outcome, r->result);
    else
        snprintf(buf, len, "%s", outcome);
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
        row[i] = strdup(cells[i] != NULL ? cells[i] : "-");
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
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < ncols; c++) {
            size_t w = strlen(t->cells[r * t->ncols + c]);
            if (w > width[c])
                width[c] = w;
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
