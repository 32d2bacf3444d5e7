/* jobkeys.c -- the keys of a job in jobs.yaml (see jobs.h): one table,
 * `job_keys[]`, lists every key a job may have with its type, field,
 * default and bounds; the schema engine (schema.h, shared with baton.yaml)
 * reads it for parsing, defaults and the reference. The keys whose values
 * take more than the engine's types are read by hooks here, which check
 * the value alone: a job name's rule, the cron expression (its error at
 * the column in the file), the zone, the user, run_on, env. What depends on
 * several keys (command or shell, jitter against the schedule, pools,
 * max_running, exec's limits) is checked by jobs.c once the job is read
 * (jobs_int.h is what the two share). */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "cron.h"
#include "jobcmd.h"
#include "jobs_int.h"
#include "labels.h"

_Static_assert(sizeof(enum job_concurrency) == sizeof(int), "enum keys are stored as int");

static const char *const concurrency_names[] = {"forbid", "allow", "replace", NULL};

#define OFF(f) offsetof(struct job, f)

/* ------------------------------------------------------------------------ */
/* Names */

/* Whether ch is an ASCII letter or digit, or one of extra. */
static bool name_char(char ch, const char *extra)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch != '\0' && strchr(extra, ch) != NULL);
}

bool job_name_ok(const char *s)
{
    size_t n = strlen(s);
    bool ok = n >= 1 && n <= JOB_NAME_MAX;

    for (size_t i = 0; ok && i < n; i++)
        ok = name_char(s[i], "_.-");
    return ok;
}

const char *job_name_rule(void)
{
    return "1-128 letters, digits, '_', '.' or '-'";
}

/* ------------------------------------------------------------------------ */
/* Reading one value */

/* Whether a job may run as user name: it exists, and baton runs as root
 * or as that user. Returns 0, or -1 with msg set. */
static int check_user(const char *name, char *msg, size_t msglen)
{
    struct passwd pw, *res = NULL;
    char q[96], *buf = NULL;
    size_t cap = 1024;
    int r, rc = -1;

    for (;;) {
        char *nb = realloc(buf, cap);

        if (nb == NULL) {
            snprintf(msg, msglen, "out of memory");
            goto out_free;
        }
        buf = nb;
        r = getpwnam_r(name, &pw, buf, cap, &res);
        if (r != ERANGE || cap >= (1u << 20))
            break;
        cap *= 2;
    }
    if (res == NULL) {
        /* getpwnam_r(3): these mean "no such user" on some systems. */
        if (r != 0 && r != ENOENT && r != ESRCH && r != EBADF && r != EPERM)
            snprintf(msg, msglen, "cannot look up user %s: %s", yamlx_quote(name, q, sizeof q),
                     strerror(r));
        else
            snprintf(msg, msglen, "unknown user %s", yamlx_quote(name, q, sizeof q));
        goto out_free;
    }
    if (geteuid() != 0 && pw.pw_uid != geteuid()) {
        snprintf(msg, msglen, "running a job as %s needs baton to run as root",
                 yamlx_quote(name, q, sizeof q));
        goto out_free;
    }
    rc = 0;
out_free:
    free(buf);
    return rc;
}

/* ---- the hooks of the table ----
 *
 * Each reads one key's value into the job obj (ctx->user: the struct
 * jparse of the file, jobs_int.h), with the contract of its slot in struct
 * schema_field (schema.h): set_text hooks return 0, or -1 with a message
 * in msg; set_node hooks report their own errors through ctx->d and
 * return 0 or -1; def_fn hooks compute a default. A value replaces what
 * an earlier layer stored (env merges instead). */

/* Scalar keys, read by set_text. */

/* Stores text at *field when it follows the job-name rule (a job's name,
 * a pool's). Returns 0, or -1 with msg set. */
static int set_rule_name(char **field, const char *text, char *msg, size_t msglen)
{
    char q[96];

    if (!job_name_ok(text)) {
        snprintf(msg, msglen, "%s: use %s", yamlx_quote(text, q, sizeof q), job_name_rule());
        return -1;
    }
    return job_str_set(field, text, msg, msglen);
}

static int set_name(void *obj, struct schema_ctx *ctx, const char *text, char *msg, size_t msglen)
{
    (void)ctx;
    return set_rule_name(&((struct job *)obj)->name, text, msg, msglen);
}

static int set_pool(void *obj, struct schema_ctx *ctx, const char *text, char *msg, size_t msglen)
{
    (void)ctx;
    return set_rule_name(&((struct job *)obj)->pool, text, msg, msglen);
}

static int set_timezone(void *obj, struct schema_ctx *ctx, const char *text, char *msg,
                        size_t msglen)
{
    struct job *j = obj;
    struct jparse *p = ctx->user;

    if (jobs_zone_get(p->set, text, &j->tz, msg, msglen) != 0)
        return -1;
    return job_str_set(&j->timezone, text, msg, msglen);
}

static int set_user(void *obj, struct schema_ctx *ctx, const char *text, char *msg, size_t msglen)
{
    struct job *j = obj;

    (void)ctx;
    if (check_user(text, msg, msglen) != 0)
        return -1;
    return job_str_set(&j->user, text, msg, msglen);
}

/* cron_error_format() ends in " (column N)"; the file position already says
 * where, so that part is dropped. */
static void strip_column_suffix(char *s)
{
    char *p = strstr(s, " (column ");
    char *last = NULL;

    while (p != NULL) {
        last = p;
        p = strstr(p + 1, " (column ");
    }
    if (last == NULL)
        return;
    p = last + 9;
    if (*p < '0' || *p > '9')
        return;
    while (*p >= '0' && *p <= '9')
        p++;
    if (strcmp(p, ")") == 0)
        *last = '\0';
}

static int set_schedule(void *obj, struct schema_ctx *ctx, const struct yamlx_node *n,
                        const char *what)
{
    struct jparse *p = ctx->user;
    struct job *j = obj;
    struct cron_error ce;
    struct cron_expr *e = NULL;
    char msg[512];

    if (yamlx_expect_scalar(p->d, n, what, "a cron expression like \"0 7 * * MON-FRI\"") != 0)
        return -1;
    memset(&ce, 0, sizeof ce);
    if (cron_parse(n->str, &e, &ce) != 0) {
        int col = ce.column >= 1 ? yamlx_scalar_col(n, (size_t)ce.column - 1) : n->col;

        cron_error_format(&ce, msg, sizeof msg);
        strip_column_suffix(msg);
        return yamlx_errorf_at(p->d, n->line, col, "%s: %s", what, msg);
    }
    if (job_str_set(&j->schedule, n->str, msg, sizeof msg) != 0) {
        cron_free(e);
        return yamlx_errorf(p->d, NULL, "%s", msg);
    }
    cron_free(j->expr);
    j->expr = e;
    return 0;
}

static int set_argv(void *obj, struct schema_ctx *ctx, const struct yamlx_node *n, const char *what)
{
    struct jparse *p = ctx->user;
    struct job *j = obj;
    char **v;

    if (n->kind != YAMLX_SEQ)
        return yamlx_errorf(p->d, n,
                            "%s: expected a sequence like [\"/usr/bin/prog\", \"arg\"], got %s "
                            "(use shell: for a command line)",
                            what, yamlx_kind_name(n));
    if (job_argv_read(p->d, n, what, false, &v) != 0)
        return -1;
    job_strv_free(j->argv);
    j->argv = v;
    return 0;
}

static int set_on_failure(void *obj, struct schema_ctx *ctx, const struct yamlx_node *n,
                          const char *what)
{
    return job_cmd_read(ctx->d, n, what, &((struct job *)obj)->on_failure);
}

static int set_on_success(void *obj, struct schema_ctx *ctx, const struct yamlx_node *n,
                          const char *what)
{
    return job_cmd_read(ctx->d, n, what, &((struct job *)obj)->on_success);
}

/* run_on: leader, any, all, {labels: [...]} or {labels: [...], all: true},
 * normalized into a string vector (jobs.h): its word ("leader", "any",
 * "all", "labels"), then the labels. */
static int set_run_on(void *obj, struct schema_ctx *ctx, const struct yamlx_node *n,
                      const char *what)
{
    struct job *j = obj;
    char **v = NULL;

    if (n->kind == YAMLX_SCALAR) {
        static const char *const words[] = {"leader", "any", "all"};
        const char *word = NULL;

        for (size_t i = 0; i < 3; i++)
            if (strcmp(n->str, words[i]) == 0)
                word = words[i];
        if (word == NULL)
            return yamlx_errorf(ctx->d, n,
                                "%s: expected leader, any, all or {labels: [...]}, got \"%s\"",
                                what, n->str);
        if ((v = calloc(2, sizeof *v)) == NULL || (v[0] = strdup(word)) == NULL) {
            free(v);
            return yamlx_errorf(ctx->d, NULL, "out of memory");
        }
    } else if (n->kind == YAMLX_MAP) {
        const struct yamlx_node *l = yamlx_map_get(n, "labels"), *all = yamlx_map_get(n, "all");
        char w[256], **labels = NULL;
        bool every = false;

        if (l == NULL || n->npairs != 1 + (all != NULL))
            return yamlx_errorf(ctx->d, n->npairs > 0 ? n->pairs[0].key : n,
                                "%s: expected {labels: [...]} or {labels: [...], all: true}", what);
        if (all != NULL) {
            if (all->kind != YAMLX_SCALAR ||
                (strcmp(all->str, "true") != 0 && strcmp(all->str, "false") != 0))
                return yamlx_errorf(ctx->d, all, "%s.all: expected true or false", what);
            every = strcmp(all->str, "true") == 0;
        }
        snprintf(w, sizeof w, "%s.labels", what);
        if (labels_read(ctx->d, l, w, &labels) != 0)
            return -1;
        size_t nl = job_strv_len(labels);
        if (nl == 0) {
            job_strv_free(labels);
            return yamlx_errorf(ctx->d, l, "%s: empty (give at least one label, or run_on: any)",
                                w);
        }
        if ((v = calloc(nl + 2, sizeof *v)) == NULL ||
            (v[0] = strdup(every ? "all" : "labels")) == NULL) {
            free(v);
            job_strv_free(labels);
            return yamlx_errorf(ctx->d, NULL, "out of memory");
        }
        memcpy(v + 1, labels, nl * sizeof *v);
        free(labels); /* the strings are v's now */
    } else
        return yamlx_errorf(ctx->d, n, "%s: expected leader, any, all or {labels: [...]}, got %s",
                            what, yamlx_kind_name(n));
    job_strv_free(j->run_on);
    j->run_on = v;
    return 0;
}

static int default_run_on(void *obj, struct schema_ctx *ctx, char *msg, size_t msglen)
{
    struct job *j = obj;
    char **v = calloc(2, sizeof *v);

    (void)ctx;
    if (v == NULL || (v[0] = strdup("leader")) == NULL) {
        free(v);
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    job_strv_free(j->run_on);
    j->run_on = v;
    return 0;
}

/* Appends NAME=value to the NULL-terminated list *env, which has room for
 * it (env_reserve). A name given twice (defaults: then the job) stays
 * twice until env_finish. */
static int env_put(char ***env, size_t *n, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    char *kv = malloc(nl + vl + 2);

    if (kv == NULL)
        return -1;
    memcpy(kv, name, nl);
    kv[nl] = '=';
    memcpy(kv + nl + 1, value, vl + 1);
    (*env)[(*n)++] = kv;
    (*env)[*n] = NULL;
    return 0;
}

/* Makes room in *env for more entries, at once: linear in what is added.
 * Returns 0 or -1 (ENOMEM); *n is the current count. */
static int env_reserve(char ***env, size_t *n, size_t more)
{
    char **nv;

    *n = job_strv_len(*env);
    nv = realloc(*env, (*n + more + 1) * sizeof *nv);
    if (nv == NULL)
        return -1;
    nv[*n] = NULL;
    *env = nv;
    return 0;
}

/* Merges the mapping n into j->env. */
static int set_env(void *obj, struct schema_ctx *ctx, const struct yamlx_node *n, const char *what)
{
    struct jparse *p = ctx->user;
    struct job *j = obj;
    char q[96];

    if (n->kind == YAMLX_SCALAR && n->null)
        return 0;
    size_t count;

    if (n->kind != YAMLX_MAP)
        return yamlx_errorf(p->d, n, "%s: expected a mapping of NAME: value, got %s", what,
                            yamlx_kind_name(n));
    if (env_reserve(&j->env, &count, n->npairs) != 0)
        return yamlx_errorf(p->d, NULL, "out of memory");
    for (size_t i = 0; i < n->npairs; i++) {
        const struct yamlx_node *k = n->pairs[i].key, *v = n->pairs[i].value;
        bool ok = k->len > 0 && !(k->str[0] >= '0' && k->str[0] <= '9');
        char w[256];

        for (size_t c = 0; ok && c < k->len; c++)
            ok = name_char(k->str[c], "_");
        if (!ok)
            return yamlx_errorf(p->d, k,
                                "%s: invalid variable name %s (letters, digits and _, not "
                                "starting with a digit)",
                                what, yamlx_quote(k->str, q, sizeof q));
        if (strncmp(k->str, "BATON_", 6) == 0)
            return yamlx_errorf(p->d, k,
                                "%s: %s: names starting with BATON_ are reserved for the "
                                "variables baton sets",
                                what, yamlx_quote(k->str, q, sizeof q));
        snprintf(w, sizeof w, "%s.%s", what, k->str);
        if (v->kind == YAMLX_SCALAR && v->null)
            return yamlx_errorf(p->d, v, "%s: missing value (write \"\" for an empty string)", w);
        if (yamlx_expect_scalar(p->d, v, w, "a string") != 0)
            return -1;
        if (k->len + 1 + v->len >= JOB_ARG_STRLEN)
            return yamlx_errorf(p->d, v,
                                "%s: NAME=value is %zu bytes; exec takes at most %d bytes in one "
                                "variable (MAX_ARG_STRLEN)",
                                w, k->len + 1 + v->len, JOB_ARG_STRLEN - 1);
        if (env_put(&j->env, &count, k->str, v->str) != 0)
            return yamlx_errorf(p->d, NULL, "out of memory");
    }
    return 0;
}

/* The table */

/* clang-format off */
static const struct schema_field job_keys[] = {
    {.key = "name", .type = SCHEMA_TEXT, .offset = OFF(name), .set_text = set_name, .def_doc = "(required)",
     .flags = SCHEMA_REQUIRED | SCHEMA_NO_DEFAULTS,
     .doc = "Unique name: letters, digits, _ . - (1-128); it goes into Redis keys and logs."},
    {.key = "schedule", .type = SCHEMA_NODE, .offset = OFF(schedule), .set_node = set_schedule, .type_doc = "cron",
     .def_doc = "(required)", .flags = SCHEMA_REQUIRED | SCHEMA_NO_DEFAULTS,
     .doc = "Cron expression: 5 fields, 6 with seconds first, @hourly..., or @every 90s."},
    {.key = "timezone", .type = SCHEMA_TEXT, .offset = OFF(timezone), .set_text = set_timezone, .type_doc = "zone",
     .def_doc = "the config's `timezone`",
     .doc = "IANA zone the schedule is read in."},
    {.key = "command", .type = SCHEMA_NODE, .offset = OFF(argv), .set_node = set_argv, .type_doc = "list of strings",
     .def_doc = "(command or shell)", .flags = SCHEMA_NO_DEFAULTS,
     .doc = "Program and arguments as a sequence, run without a shell."},
    {.key = "shell", .type = SCHEMA_STRING, .offset = OFF(shell), .min = 1, .check = job_shell_check,
     .def_doc = "(command or shell)", .flags = SCHEMA_NO_DEFAULTS,
     .doc = "A command line run as /bin/sh -c \"...\" (one argument of exec: under 128 KiB)."},
    {.key = "timeout", .type = SCHEMA_DURATION, .offset = OFF(timeout_ms), .def = "0",
     .def_doc = "`0` (none)", .min = 0, .max = 30 * MS_DAY,
     .doc = "A run still going after this long gets SIGTERM, then SIGKILL after kill_grace."},
    {.key = "kill_grace", .type = SCHEMA_DURATION, .offset = OFF(kill_grace_ms), .def = "5s",
     .min = 0, .max = MS_HOUR,
     .doc = "Time between SIGTERM and SIGKILL when a run is stopped (timeout, replace, stop)."},
    {.key = "concurrency", .type = SCHEMA_ENUM, .offset = OFF(concurrency), .def = "forbid",
     .names = concurrency_names, .expected = "forbid, allow or replace",
     .doc = "When a tick comes while a run of the job is alive anywhere in the group: forbid "
            "skips the tick, allow overlaps, replace stops the old run first. Ticks missed "
            "during a failover run one after another (forbid), together (allow), or only the "
            "newest (replace). With `run_on: all` forbid and replace apply per node: a node "
            "whose own run of an earlier tick is still alive skips the tick (recorded skipped "
            "naming it) or stops that run and then runs the tick, while the other nodes run it; "
            "missed ticks still wait for every node's runs to end."},
    {.key = "run_on", .type = SCHEMA_NODE, .offset = OFF(run_on), .set_node = set_run_on,
     .def_fn = default_run_on, .def_doc = "`leader`",
     .type_doc = "leader, any, all or {labels: [...]}",
     .doc = "Where the job's runs go: `leader` (the leader's own node), `any` (one live member "
            "per tick with room, in proportion to its `capacity`, chosen by the leader; with "
            "none, the tick waits, oldest first), "
            "`{labels: [...]}` (one live member carrying every label), `all` (every live member "
            "runs each tick once, recorded per node) or `{labels: [...], all: true}` (every live "
            "member carrying the labels). A run on a member is covered by its own registration "
            "and shim; a member lost while it runs is recorded `lost` and retried elsewhere per "
            "`retries`, as is a run that fails; a member that accepted a tick and was lost "
            "before starting it moves the tick once. Under `all` a node's run is never moved to "
            "another node. `baton trigger` runs the job on the leader (refused when the leader "
            "lacks its labels). Over a Redlock quorum only `leader` is accepted."},
    {.key = "catchup", .type = SCHEMA_DURATION, .offset = OFF(catchup_ms), .def = "last",
     .word = "last", .word_value = JOB_CATCHUP_LAST, .min = 0, .max = 7 * MS_DAY,
     .type_doc = "duration or `last`", .expected = "a duration, 0 or last",
     .doc = "After a failover, missed ticks younger than this run; `last` runs the most "
            "recent missed tick once; `0` runs none."},
    {.key = "jitter", .type = SCHEMA_DURATION, .offset = OFF(jitter_ms), .def = "0",
     .def_doc = "`0` (none)", .min = 0, .max = MS_DAY,
     .doc = "Each tick's run begins a delay in [0, jitter) after the tick, the same on every "
            "leader (a hash of group, job and tick); shorter than the schedule's shortest "
            "interval. `BATON_SCHEDULED_AT` stays the tick. See Jitter."},
    {.key = "retries", .type = SCHEMA_INT, .offset = OFF(retries), .width = sizeof(int),
     .def = "0", .min = 0, .max = 100,
     .doc = "Extra attempts after a run that fails (non-zero exit)."},
    {.key = "retry_backoff", .type = SCHEMA_DURATION, .offset = OFF(retry_backoff_ms),
     .def = "10s", .min = 0, .max = MS_DAY,
     .doc = "Wait before the first retry; it doubles with each attempt."},
    {.key = "env", .type = SCHEMA_NODE, .offset = OFF(env), .set_node = set_env, .type_doc = "mapping",
     .def_doc = "none",
     .doc = "Extra environment, NAME: value (NAME not starting with BATON_); defaults: env "
            "merges under the job's. Each NAME=value under 128 KiB; the command and env "
            "together at most 1 MiB, and within what exec takes on this machine."},
    {.key = "workdir", .type = SCHEMA_PATH, .offset = OFF(workdir), .flags = SCHEMA_ABSOLUTE,
     .def_doc = "baton's", .doc = "Absolute directory the job runs in."},
    {.key = "user", .type = SCHEMA_TEXT, .offset = OFF(user), .set_text = set_user, .def_doc = "baton's",
     .doc = "Run as this user (must exist; needs baton to run as root unless it is baton's "
            "own user)."},
    {.key = "enabled", .type = SCHEMA_BOOL, .offset = OFF(enabled), .def = "true",
     .doc = "false keeps the job defined and checked but never runs it."},
    {.key = "on_failure", .type = SCHEMA_NODE, .offset = OFF(on_failure), .set_node = set_on_failure,
     .type_doc = "command", .def_doc = "baton.yaml's `hooks.on_failure`",
     .doc = "Run after a run that failed, timed out, was killed or could not start, once no "
            "retry follows: [\"prog\", \"arg\"] or {shell: \"...\"}; [] for none. See Hooks."},
    {.key = "on_success", .type = SCHEMA_NODE, .offset = OFF(on_success), .set_node = set_on_success,
     .type_doc = "command", .def_doc = "baton.yaml's `hooks.on_success`",
     .doc = "Run after a run that exited 0, like on_failure."},
    {.key = "hook_timeout", .type = SCHEMA_DURATION, .offset = OFF(hook_timeout_ms), .def = "30s",
     .def_doc = "baton.yaml's `hooks.timeout` (`30s`)", .min = 100, .max = MS_HOUR,
     .doc = "A hook still going after this long gets SIGTERM, then SIGKILL after kill_grace."},
    {.key = "pool", .type = SCHEMA_TEXT, .offset = OFF(pool), .set_text = set_pool, .type_doc = "name",
     .def_doc = "none",
     .doc = "A pool of the top-level `pools:`: at most its limit of runs of its jobs at once "
            "across the group; a tick that finds it full waits for a run to end (first come, "
            "first served). An error with `run_on: all`."},
    {.key = "max_running", .type = SCHEMA_INT, .offset = OFF(max_running), .width = sizeof(int),
     .def_doc = "none", .min = 1, .max = 10000,
     .doc = "With `concurrency: allow`: at most this many runs of the job at once across the "
            "group; a tick waits for one to end. An error with forbid or replace (they keep one); "
            "from defaults: it applies to allow jobs only. An error with `run_on: all` (each "
            "tick runs on every node at once: no limit across the group can hold)."},
};
/* clang-format on */

#define NKEYS (sizeof job_keys / sizeof job_keys[0])
_Static_assert(NKEYS <= JOB_KEYS_MAX, "jobs.c sizes its arrays by JOB_KEYS_MAX");

static const struct schema jobs_schema_ = {
    .fields = job_keys, .n = NKEYS, .has_defaults_section = true};

const struct schema *jobs_schema(void)
{
    return &jobs_schema_;
}

enum job_run_on job_run_on(const struct job *j, char *const **labels)
{
    const char *w = j->run_on != NULL ? j->run_on[0] : NULL;
    if (labels != NULL)
        *labels = NULL;
    if (w == NULL || strcmp(w, "leader") == 0)
        return JOB_RUN_ON_LEADER;
    if (strcmp(w, "any") == 0)
        return JOB_RUN_ON_ANY;
    if (labels != NULL && j->run_on[1] != NULL)
        *labels = j->run_on + 1;
    return strcmp(w, "all") == 0 ? JOB_RUN_ON_ALL : JOB_RUN_ON_LABELS;
}

const char *job_concurrency_name(enum job_concurrency c)
{
    if ((int)c < 0 || (int)c > JOB_REPLACE)
        return "?";
    return concurrency_names[c];
}

/* ------------------------------------------------------------------------ */
/* Reference */

void jobs_write_reference(FILE *out)
{
    schema_write_reference(&jobs_schema_, out);
}
