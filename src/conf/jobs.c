/* jobs.c -- jobs.yaml: the jobs the leader runs (see jobs.h).
 *
 * One table, `job_keys[]`, lists every key a job may have with its type,
 * field, default and bounds; the schema engine (schema.h, shared with
 * baton.yaml) reads it. A job is read in three layers: the keys the job
 * sets, then the keys `defaults:` sets (re-read from the defaults node,
 * which was validated once up front, so one code path reads every value),
 * then the table defaults (written as they would be in the file and read by
 * the same code). `env` merges: defaults first, the job's own over them.
 *
 * Zones are loaded once per distinct name and shared by the jobs (a leader
 * with 1,000 jobs in one zone holds one copy).
 */
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "cron.h"
#include "jitter.h"
#include "jobcmd.h"
#include "labels.h"
#include "jobs.h"
#include "schema.h"
#include "yamlx.h"

_Static_assert(sizeof(enum job_concurrency) == sizeof(int), "enum keys are stored as int");

#define JOBS_MAX     10000 /* jobs in one file */

static const char *const concurrency_names[] = {"forbid", "allow", "replace", NULL};
static const char *const top_keys[] = {"jobs", "defaults", "pools"};

#define OFF(f) offsetof(struct job, f)

/* ------------------------------------------------------------------------ */
/* Small helpers */

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

static void job_clear(struct job *j)
{
    free(j->name);
    free(j->schedule);
    cron_free(j->expr);
    free(j->timezone);
    job_strv_free(j->argv);
    free(j->shell);
    job_strv_free(j->env);
    free(j->workdir);
    free(j->user);
    job_cmd_clear(&j->on_failure);
    job_cmd_clear(&j->on_success);
    free(j->pool);
    job_strv_free(j->run_on);
    memset(j, 0, sizeof *j);
}

/* Replaces the string field at *field with a copy of s. */
static int set_str(char **field, const char *s, char *msg, size_t msglen)
{
    char *v = strdup(s);

    if (v == NULL) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    free(*field);
    *field = v;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Zones, shared by the jobs of a set */

static int zone_get(struct jobs *set, const char *name, struct cron_tz **out, char *msg,
                    size_t msglen)
{
    struct cron_tz *tz = NULL, **nz;

    for (size_t i = 0; i < set->nzones; i++) {
        if (strcmp(cron_tz_name(set->zones[i]), name) == 0) {
            *out = set->zones[i];
            return 0;
        }
    }
    if (cron_tz_load(name, &tz, msg, msglen) != 0)
        return -1;
    nz = realloc(set->zones, (set->nzones + 1) * sizeof *nz);
    if (nz == NULL) {
        cron_tz_free(tz);
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    set->zones = nz;
    set->zones[set->nzones++] = tz;
    *out = tz;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Reading one value */

/* The state the hooks share: ctx->user of the schema engine. */
struct jparse {
    const struct yamlx_diag *d;
    struct jobs *set;
    const char *default_tz;
    const struct jobs_base *base; /* never NULL */
    struct schema_ctx ctx;
    /* The names read so far: an open-addressing table of indexes into
     * set->v (NAMES_FREE: empty), so that finding a duplicate name is not
     * O(jobs^2) at 10,000 jobs. */
    size_t *names;
    size_t names_mask;
    const struct yamlx_node *pools; /* pools:, a mapping in the order of set->pools */
};

#define NAMES_FREE ((size_t)-1)

static size_t name_hash(const char *s)
{
    size_t h = 14695981039346656037u;
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

/* The slot of name in p->names: where it is, or the free slot where it
 * goes. */
static size_t *name_slot(const struct jparse *p, const char *name)
{
    size_t i = name_hash(name) & p->names_mask;
    while (p->names[i] != NAMES_FREE && strcmp(p->set->v[p->names[i]].name, name) != 0)
        i = (i + 1) & p->names_mask;
    return &p->names[i];
}

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

/* ---- the hooks of the table: scalar keys read by set_text ---- */

static int set_name(void *obj, struct schema_ctx *ctx, const char *text, char *msg, size_t msglen)
{
    struct job *j = obj;
    char q[96];

    (void)ctx;
    if (!job_name_ok(text)) {
        snprintf(msg, msglen, "%s: use %s", yamlx_quote(text, q, sizeof q), job_name_rule());
        return -1;
    }
    return set_str(&j->name, text, msg, msglen);
}

static int set_pool(void *obj, struct schema_ctx *ctx, const char *text, char *msg, size_t msglen)
{
    struct job *j = obj;
    char q[96];

    (void)ctx;
    if (!job_name_ok(text)) {
        snprintf(msg, msglen, "%s: use %s", yamlx_quote(text, q, sizeof q), job_name_rule());
        return -1;
    }
    return set_str(&j->pool, text, msg, msglen);
}

static int set_timezone(void *obj, struct schema_ctx *ctx, const char *text, char *msg,
                        size_t msglen)
{
    struct job *j = obj;
    struct jparse *p = ctx->user;

    if (zone_get(p->set, text, &j->tz, msg, msglen) != 0)
        return -1;
    return set_str(&j->timezone, text, msg, msglen);
}

static int set_user(void *obj, struct schema_ctx *ctx, const char *text, char *msg, size_t msglen)
{
    struct job *j = obj;

    (void)ctx;
    if (check_user(text, msg, msglen) != 0)
        return -1;
    return set_str(&j->user, text, msg, msglen);
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
    if (set_str(&j->schedule, n->str, msg, sizeof msg) != 0) {
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
                                "%s: expected {labels: [...]} or {labels: [...], all: true}",
                                what);
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

/* ------------------------------------------------------------------------ */
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
            "newest (replace)."},
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
            "first served)."},
    {.key = "max_running", .type = SCHEMA_INT, .offset = OFF(max_running), .width = sizeof(int),
     .def_doc = "none", .min = 1, .max = 10000,
     .doc = "With `concurrency: allow`: at most this many runs of the job at once across the "
            "group; a tick waits for one to end. An error with forbid or replace (they keep one); "
            "from defaults: it applies to allow jobs only."},
};
/* clang-format on */

#define NKEYS (sizeof job_keys / sizeof job_keys[0])

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
/* Reading a job */

struct env_ref {
    char *kv;
    size_t pos; /* in the list: defaults: before the job's own */
};

static int env_ref_cmp(const void *a, const void *b)
{
    const struct env_ref *x = a, *y = b;
    size_t xl = strcspn(x->kv, "="), yl = strcspn(y->kv, "=");
    int c = strncmp(x->kv, y->kv, xl < yl ? xl : yl);

    if (c != 0)
        return c;
    if (xl != yl)
        return xl < yl ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Sorts env by NAME and keeps, of a name given twice, the later entry (the
 * job's own over defaults:): O(n log n), not a scan per entry. Returns 0
 * or -1 (ENOMEM). */
static int env_finish(char **env)
{
    size_t n = job_strv_len(env), k = 0;
    struct env_ref *r;

    if (n < 2)
        return 0;
    r = malloc(n * sizeof *r);
    if (r == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        r[i] = (struct env_ref){env[i], i};
    qsort(r, n, sizeof *r, env_ref_cmp);
    for (size_t i = 0; i < n; i++) {
        size_t nl = strcspn(r[i].kv, "=");

        if (i + 1 < n && strncmp(r[i].kv, r[i + 1].kv, nl + 1) == 0) {
            free(r[i].kv); /* the next one names it again, later */
            continue;
        }
        env[k++] = r[i].kv;
    }
    env[k] = NULL;
    free(r);
    return 0;
}

/* Reads the defaults: mapping once, for its errors (keys that cannot have
 * a default are refused), whether or not a job uses them. */
static int check_defaults(struct jparse *p, const struct yamlx_node *defaults)
{
    struct job scratch;
    schema_at at[NKEYS] = {0};
    int rc;

    memset(&scratch, 0, sizeof scratch);
    rc = schema_read_map(&jobs_schema_, &p->ctx, defaults, &scratch, at, "defaults: ", true);
    job_clear(&scratch);
    return rc;
}

/* Gives j what p->base sets for the keys neither the job nor defaults: set
 * (at[] NULL), marking them set (at m, the job). Returns 0 or -1. */
static int apply_base(struct jparse *p, struct job *j, schema_at *at, const struct yamlx_node *m)
{
    const struct jobs_base *b = p->base;
    int ki_fail = schema_find(&jobs_schema_, "on_failure"),
        ki_ok = schema_find(&jobs_schema_, "on_success"),
        ki_to = schema_find(&jobs_schema_, "hook_timeout");

    if (at[ki_fail] == NULL && job_cmd_set(b->on_failure)) {
        if (job_cmd_copy(&j->on_failure, b->on_failure) != 0)
            return yamlx_errorf(p->d, NULL, "out of memory");
        at[ki_fail] = m;
    }
    if (at[ki_ok] == NULL && job_cmd_set(b->on_success)) {
        if (job_cmd_copy(&j->on_success, b->on_success) != 0)
            return yamlx_errorf(p->d, NULL, "out of memory");
        at[ki_ok] = m;
    }
    if (at[ki_to] == NULL && b->hook_timeout_ms > 0) {
        j->hook_timeout_ms = b->hook_timeout_ms;
        at[ki_to] = m;
    }
    return 0;
}

/* A jitter (set at node n) must be shorter than the schedule's shortest
 * interval between ticks, looked for in the next JITTER_PROBE_TICKS ticks
 * from now: each tick's run then begins before the next tick, so ticks
 * still start in their order. (A shorter interval beyond those, such as a
 * DST change makes, is met by the runner: sched_start_ms() never lets a
 * start reach the next tick.) */
static int check_jitter(struct jparse *p, const struct job *j, const struct yamlx_node *n,
                        const char *prefix)
{
    char gap[32], jit[32];
    if (j->jitter_ms == 0)
        return 0;
    int64_t shortest = jitter_shortest_ms(j->expr, j->tz, wall_ms() / 1000, j->jitter_ms, NULL);
    if (shortest == 0 || j->jitter_ms < shortest)
        return 0;
    return yamlx_errorf(p->d, n,
                        "%sjitter%s: %s is not shorter than the schedule's shortest interval "
                        "between ticks (%s): a tick's run would begin after the next tick",
                        prefix, n->line < j->line ? " (from defaults:)" : "",
                        yamlx_format_duration(j->jitter_ms, jit, sizeof jit),
                        yamlx_format_duration(shortest, gap, sizeof gap));
}

/* The fleet-wide limits of j (runlimits.h): its pool is one of pools: (its
 * limit copied), and max_running, set by the job itself (own_max) with
 * forbid or replace, is refused: those keep at most one run of the job in
 * the group already, so a limit there would say something that is not so;
 * set by defaults:, it applies to the allow jobs only. */
static int check_limits(struct jparse *p, struct job *j, const struct yamlx_node *pool_at,
                        const struct yamlx_node *own_max, const char *prefix)
{
    char q[96];

    if (j->pool != NULL) {
        struct job_pool *pl = NULL;
        for (size_t i = 0; i < p->set->npools && pl == NULL; i++)
            if (strcmp(p->set->pools[i].name, j->pool) == 0)
                pl = &p->set->pools[i];
        if (pl == NULL)
            return yamlx_errorf(p->d, pool_at,
                                "%spool: %s is not defined (define it under the "
                                "top-level pools:, e.g. pools: {%s: 2})",
                                prefix, yamlx_quote(j->pool, q, sizeof q), j->pool);
        if (++pl->njobs > JOBS_POOL_MAX) { /* at the pool: where the fix goes */
            char qj[96];
            return yamlx_errorf(p->d, p->pools->pairs[pl - p->set->pools].key,
                                "pools: %s: used by more than %d jobs (job %s is the %zuth); a "
                                "claim counts each job of its pool: split it",
                                yamlx_quote(j->pool, q, sizeof q), JOBS_POOL_MAX,
                                yamlx_quote(j->name, qj, sizeof qj), pl->njobs);
        }
        j->pool_limit = pl->limit;
    }
    if (j->max_running > 0 && j->concurrency != JOB_ALLOW) {
        if (own_max != NULL)
            return yamlx_errorf(p->d, own_max,
                                "%smax_running: needs concurrency: allow (with %s at most one run "
                                "of the job is alive in the group already)",
                                prefix, job_concurrency_name(j->concurrency));
        j->max_running = 0;
    }
    return 0;
}

/* Reads pools: (name: limit) into p->set. */
static int read_pools(struct jparse *p, const struct yamlx_node *n)
{
    static const struct schema_field limit = {
        .key = "pools", .type = SCHEMA_INT, .width = sizeof(int), .min = 1, .max = 10000};
    struct jobs *set = p->set;
    char q[96], what[JOB_NAME_MAX + 16];

    if (n == NULL || (n->kind == YAMLX_SCALAR && n->null))
        return 0;
    if (n->kind != YAMLX_MAP)
        return yamlx_errorf(p->d, n,
                            "pools: expected a mapping of NAME: limit (e.g. exports: 3), got %s",
                            yamlx_kind_name(n));
    p->pools = n;
    set->pools = calloc(n->npairs + 1, sizeof *set->pools);
    if (set->pools == NULL)
        return yamlx_errorf(p->d, NULL, "out of memory");
    for (size_t i = 0; i < n->npairs; i++) {
        const struct yamlx_node *k = n->pairs[i].key, *v = n->pairs[i].value;
        struct job_pool *pl = &set->pools[set->npools];
        if (!job_name_ok(k->str))
            return yamlx_errorf(p->d, k, "pools: %s: use %s", yamlx_quote(k->str, q, sizeof q),
                                job_name_rule());
        for (size_t d = 0; d < set->npools; d++)
            if (strcmp(set->pools[d].name, k->str) == 0)
                return yamlx_errorf(p->d, k, "pools: %s defined twice",
                                    yamlx_quote(k->str, q, sizeof q));
        snprintf(what, sizeof what, "pools.%s", k->str);
        if (schema_read_field(&limit, &p->ctx, v, &pl->limit, what) != 0)
            return -1;
        if ((pl->name = strdup(k->str)) == NULL)
            return yamlx_errorf(p->d, NULL, "out of memory");
        set->npools++;
    }
    return 0;
}

/* Reads job number idx (0-based) from mapping m into j (zeroed). */
static int read_job(struct jparse *p, const struct yamlx_node *m, size_t idx,
                    const struct yamlx_node *defaults, const struct jobs *set, struct job *j)
{
    schema_at at[NKEYS] = {0};
    const struct yamlx_node *name_node, *own_env, *own_max;
    char prefix[200], what[240], msg[320], q[96];
    int ki_name = schema_find(&jobs_schema_, "name"),
        ki_cmd = schema_find(&jobs_schema_, "command"),
        ki_shell = schema_find(&jobs_schema_, "shell"),
        ki_tz = schema_find(&jobs_schema_, "timezone"), ki_env = schema_find(&jobs_schema_, "env"),
        ki_jitter = schema_find(&jobs_schema_, "jitter"), ki_pool = schema_find(&jobs_schema_, "pool"),
        ki_max = schema_find(&jobs_schema_, "max_running");

    snprintf(prefix, sizeof prefix, "job %zu: ", idx + 1);
    if (m->kind != YAMLX_MAP)
        return yamlx_errorf(p->d, m, "job %zu: expected a mapping (name:, schedule:, command:), got %s",
                            idx + 1, yamlx_kind_name(m));
    j->line = m->line;
    j->col = m->col;
    j->group = p->set->group;

    /* The name first, so that every other message can say which job. */
    name_node = yamlx_map_get(m, "name");
    if (name_node != NULL) {
        snprintf(what, sizeof what, "%sname", prefix);
        if (schema_read_field(&job_keys[ki_name], &p->ctx, name_node, j, what) != 0)
            return -1;
        at[ki_name] = name_node;
        snprintf(prefix, sizeof prefix, "job \"%s\": ", j->name);
        size_t *slot = name_slot(p, j->name);
        if (*slot != NAMES_FREE)
            return yamlx_errorf(p->d, name_node, "%sduplicate name (first at line %d)", prefix,
                                set->v[*slot].line);
        *slot = idx;
    }

    /* 1. The job's own keys, in file order. */
    if (schema_read_map(&jobs_schema_, &p->ctx, m, j, at, prefix, false) != 0)
        return -1;
    own_max = at[ki_max];

    /* Required keys, and exactly one of command and shell. */
    for (size_t i = 0; i < NKEYS; i++)
        if ((job_keys[i].flags & SCHEMA_REQUIRED) && at[i] == NULL)
            return yamlx_errorf(p->d, m, "%smissing required key \"%s\"", prefix, job_keys[i].key);
    if (at[ki_cmd] == NULL && at[ki_shell] == NULL)
        return yamlx_errorf(p->d, m, "%smissing \"command\" or \"shell\" (one is required)",
                            prefix);
    if (at[ki_cmd] != NULL && at[ki_shell] != NULL) {
        const struct yamlx_node *second =
            at[ki_cmd]->line > at[ki_shell]->line ||
                    (at[ki_cmd]->line == at[ki_shell]->line && at[ki_cmd]->col > at[ki_shell]->col)
                ? at[ki_cmd]
                : at[ki_shell];

        return yamlx_errorf(p->d, second, "%sboth \"command\" and \"shell\" are set (keep one)",
                            prefix);
    }

    /* 2. What defaults: sets (already checked). env merges: the defaults'
     * first, then the job's own on top. */
    own_env = at[ki_env];
    if (defaults != NULL) {
        char **own = NULL;

        if (own_env != NULL) {
            own = j->env;
            j->env = NULL;
            at[ki_env] = NULL;
        }
        if (schema_read_map(&jobs_schema_, &p->ctx, defaults, j, at, "defaults: ", true) != 0) {
            job_strv_free(own);
            return -1;
        }
        if (own_env != NULL) {
            job_strv_free(own);
            snprintf(what, sizeof what, "%senv", prefix);
            if (schema_read_field(&job_keys[ki_env], &p->ctx, own_env, j, what) != 0)
                return -1;
            at[ki_env] = own_env;
        }
    }

    /* 3. What baton.yaml gives every job (hooks:), under the job's keys and
     * defaults:. */
    if (apply_base(p, j, at, m) != 0)
        return -1;
    /* The dispatch to members (group/assign.h) runs its scripts on one
     * server: over a quorum, only the leader's own runs are exactly once. */
    int ki_run_on = schema_find(&jobs_schema_, "run_on");
    if (p->base->quorum && at[ki_run_on] != NULL && job_run_on(j, NULL) != JOB_RUN_ON_LEADER)
        return yamlx_errorf(p->d, at[ki_run_on],
                            "%srun_on: %s is not supported over a Redlock quorum (redis: with "
                            "several masters): runs are dispatched to members on one server "
                            "only (one Redis, Sentinel or Cluster); write run_on: leader",
                            prefix, j->run_on[0]);

    /* 4. The table defaults; the zone defaults to the config's. */
    if (schema_apply_defaults(&jobs_schema_, &p->ctx, j, at, m, prefix) != 0)
        return -1;
    if (at[ki_tz] == NULL) {
        if (zone_get(p->set, p->default_tz, &j->tz, msg, sizeof msg) != 0)
            return yamlx_errorf(p->d, m, "%stimezone %s (the config's default): %s", prefix,
                                yamlx_quote(p->default_tz, q, sizeof q), msg);
        if (set_str(&j->timezone, p->default_tz, msg, sizeof msg) != 0)
            return yamlx_errorf(p->d, NULL, "%s", msg);
    }
    if (check_jitter(p, j, at[ki_jitter], prefix) != 0)
        return -1;
    if (j->env == NULL) {
        j->env = calloc(1, sizeof *j->env);
        if (j->env == NULL)
            return yamlx_errorf(p->d, NULL, "out of memory");
    }
    if (env_finish(j->env) != 0)
        return yamlx_errorf(p->d, NULL, "out of memory");
    /* Where a command and env too large for exec are refused: the env, or
     * the command when there is no env. */
    const struct yamlx_node *where = at[ki_cmd] != NULL ? at[ki_cmd] : at[ki_shell];
    if (j->env[0] != NULL)
        where = at[ki_env];
    if (job_exec_check(j, msg, sizeof msg) != 0)
        return yamlx_errorf(p->d, where, "%s%s", prefix, msg);
    if (check_limits(p, j, at[ki_pool], own_max, prefix) != 0)
        return -1;
    j->fingerprint = job_fingerprint(j);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Loading */

static int read_jobs(struct jparse *p, const struct yamlx_node *root)
{
    const struct yamlx_node *defaults, *list;
    struct jobs *set = p->set;

    if (root->kind != YAMLX_MAP)
        return yamlx_errorf(p->d, root, "expected a mapping with a \"jobs:\" list, got %s",
                            yamlx_kind_name(root));
    for (size_t i = 0; i < root->npairs; i++) {
        const struct yamlx_node *k = root->pairs[i].key;
        bool known = false;

        for (size_t a = 0; a < sizeof top_keys / sizeof top_keys[0]; a++)
            known = known || strcmp(k->str, top_keys[a]) == 0;
        if (!known) {
            const char *best = yamlx_suggest(k->str, top_keys, sizeof top_keys / sizeof top_keys[0]);
            char q[96];

            if (best != NULL)
                return yamlx_errorf(p->d, k, "unknown key %s (did you mean \"%s\"?)",
                                    yamlx_quote(k->str, q, sizeof q), best);
            return yamlx_errorf(p->d, k, "unknown key %s (known keys: jobs, defaults, pools)",
                                yamlx_quote(k->str, q, sizeof q));
        }
    }
    defaults = yamlx_map_get(root, "defaults");
    if (defaults != NULL && defaults->kind == YAMLX_SCALAR && defaults->null)
        defaults = NULL;
    if (defaults != NULL && defaults->kind != YAMLX_MAP)
        return yamlx_errorf(p->d, defaults, "defaults: expected a mapping, got %s",
                            yamlx_kind_name(defaults));
    if (read_pools(p, yamlx_map_get(root, "pools")) != 0)
        return -1;
    if (defaults != NULL && check_defaults(p, defaults) != 0)
        return -1;
    list = yamlx_map_get(root, "jobs");
    if (list == NULL || (list->kind == YAMLX_SCALAR && list->null))
        return 0;
    if (list->kind != YAMLX_SEQ)
        return yamlx_errorf(p->d, list, "jobs: expected a sequence of jobs (- name: ...), got %s",
                            yamlx_kind_name(list));
    if (list->nitems > JOBS_MAX)
        return yamlx_errorf(p->d, list->items[JOBS_MAX], "jobs: too many jobs (at most %d)",
                            JOBS_MAX);
    set->v = calloc(list->nitems, sizeof *set->v);
    size_t cap = 16;
    while (cap < 2 * list->nitems)
        cap *= 2;
    p->names = malloc(cap * sizeof *p->names);
    if ((set->v == NULL && list->nitems > 0) || p->names == NULL)
        return yamlx_errorf(p->d, NULL, "out of memory");
    memset(p->names, 0xff, cap * sizeof *p->names); /* every slot NAMES_FREE */
    p->names_mask = cap - 1;
    for (size_t i = 0; i < list->nitems; i++) {
        int r = read_job(p, list->items[i], i, defaults, set, &set->v[i]);

        /* Counted even when half-read, so that jobs_free frees it. */
        set->n++;
        if (r != 0)
            return -1;
    }
    return 0;
}

int jobs_load_buffer_base(const char *name, const char *buf, size_t len,
                          const struct jobs_base *base, struct jobs **out, char *err,
                          size_t errlen)
{
    static const struct jobs_base none = {0};
    struct yamlx_diag d = {name, err, errlen};
    struct jparse p = {.d = &d, .base = base != NULL ? base : &none};
    struct yamlx_node *root = NULL;
    int rc = -1;

    p.default_tz = p.base->timezone != NULL ? p.base->timezone : "UTC";
    *out = NULL;
    if (errlen > 0)
        err[0] = '\0';
    p.set = calloc(1, sizeof *p.set);
    if (p.set != NULL) {
        p.set->path = strdup(name);
        p.set->group = strdup(p.base->group != NULL ? p.base->group : "");
    }
    if (p.set == NULL || p.set->path == NULL || p.set->group == NULL) {
        yamlx_errorf(&d, NULL, "out of memory");
        goto out_free;
    }
    p.ctx = (struct schema_ctx){.d = &d, .dir = "", .user = &p};
    if (yamlx_parse(buf, len, &d, &root) != 0)
        goto out_free;
    if (root != NULL && read_jobs(&p, root) != 0)
        goto out_free;
    *out = p.set;
    p.set = NULL;
    rc = 0;
out_free:
    free(p.names);
    yamlx_free(root);
    jobs_free(p.set);
    return rc;
}

int jobs_load_buffer(const char *name, const char *buf, size_t len, const char *default_tz,
                     struct jobs **out, char *err, size_t errlen)
{
    struct jobs_base base = {.timezone = default_tz};

    return jobs_load_buffer_base(name, buf, len, &base, out, err, errlen);
}

int jobs_load_base(const char *path, const struct jobs_base *base, struct jobs **out, char *err,
                   size_t errlen)
{
    struct yamlx_diag d = {path, err, errlen};
    char *buf = NULL;
    size_t len = 0;
    int rc;

    *out = NULL;
    if (yamlx_read_file(path, &buf, &len, &d) != 0)
        return -1;
    rc = jobs_load_buffer_base(path, buf, len, base, out, err, errlen);
    free(buf);
    return rc;
}

int jobs_load(const char *path, const char *default_tz, struct jobs **out, char *err, size_t errlen)
{
    struct jobs_base base = {.timezone = default_tz};

    return jobs_load_base(path, &base, out, err, errlen);
}

void jobs_free(struct jobs *j)
{
    if (j == NULL)
        return;
    for (size_t i = 0; i < j->n; i++)
        job_clear(&j->v[i]);
    free(j->v);
    for (size_t i = 0; i < j->npools; i++)
        free(j->pools[i].name);
    free(j->pools);
    for (size_t i = 0; i < j->nzones; i++)
        cron_tz_free(j->zones[i]);
    free(j->zones);
    free(j->path);
    free(j->group);
    free(j);
}

const struct job *jobs_find(const struct jobs *j, const char *name)
{
    if (j == NULL || name == NULL)
        return NULL;
    for (size_t i = 0; i < j->n; i++)
        if (strcmp(j->v[i].name, name) == 0)
            return &j->v[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Reference */

void jobs_write_reference(FILE *out)
{
    schema_write_reference(&jobs_schema_, out);
}
