/* jobs.c -- jobs.yaml: the jobs the leader runs (see jobs.h).
 *
 * The keys of a job are one table (jobkeys.c) that the schema engine
 * (schema.h, shared with baton.yaml) reads; this file reads the file: its
 * top level, pools:, defaults:, and each job in three layers: the keys the
 * job sets, then the keys `defaults:` sets (re-read from the defaults node,
 * which was validated once up front, so one code path reads every value),
 * then the table defaults (written as they would be in the file and read by
 * the same code). `env` merges: defaults first, the job's own over them.
 * Then the checks that read several keys: command or shell, the jitter
 * against the schedule, the pool and max_running, what exec takes.
 *
 * Zones are loaded once per distinct name and shared by the jobs (a leader
 * with 1,000 jobs in one zone holds one copy).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cron.h"
#include "jitter.h"
#include "jobcmd.h"
#include "jobs_int.h"

#define JOBS_MAX 10000 /* jobs in one file */

static const char *const top_keys[] = {"jobs", "defaults", "pools"};

/* ------------------------------------------------------------------------ */
/* Small helpers */

/* Frees what j owns (a half-read job too) and zeroes it. */
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

int job_str_set(char **field, const char *s, char *msg, size_t msglen)
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

int jobs_zone_get(struct jobs *set, const char *name, struct cron_tz **out, char *msg,
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
/* The names read so far (struct jparse) */

#define NAMES_FREE ((size_t)-1)

/* FNV-1a. */
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
    const struct schema *keys = jobs_schema();
    struct job scratch;
    schema_at at[JOB_KEYS_MAX] = {0};
    int rc;

    memset(&scratch, 0, sizeof scratch);
    rc = schema_read_map(keys, &p->ctx, defaults, &scratch, at, "defaults: ", true);
    job_clear(&scratch);
    return rc;
}

/* Gives j what p->base sets for the keys neither the job nor defaults: set
 * (at[] NULL), marking them set (at m, the job). Returns 0 or -1. */
static int apply_base(struct jparse *p, struct job *j, schema_at *at, const struct yamlx_node *m)
{
    const struct schema *keys = jobs_schema();
    const struct jobs_base *b = p->base;
    int ki_fail = schema_find(keys, "on_failure"), ki_ok = schema_find(keys, "on_success"),
        ki_to = schema_find(keys, "hook_timeout");

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
 * set by defaults:, it applies to the allow jobs only. A run_on: all job
 * runs each tick on every node at once, so no fleet-wide limit can hold
 * for it: a pool, or its own max_running, is refused (max_running from
 * defaults: does not apply to it). */
static int check_limits(struct jparse *p, struct job *j, const struct yamlx_node *pool_at,
                        const struct yamlx_node *own_max, const char *prefix)
{
    char q[96];
    bool all = job_run_on(j, NULL) == JOB_RUN_ON_ALL;

    if (all && j->pool != NULL)
        return yamlx_errorf(p->d, pool_at,
                            "%spool: a run_on: all job runs each tick on every node at once, so "
                            "a pool's limit across the group cannot hold for it (concurrency: "
                            "forbid keeps one run per node); drop pool: here",
                            prefix);
    if (all && j->max_running > 0) {
        if (own_max != NULL)
            return yamlx_errorf(p->d, own_max,
                                "%smax_running: a run_on: all job runs each tick on every node at "
                                "once, so a limit across the group cannot hold for it "
                                "(concurrency: forbid keeps one run per node)",
                                prefix);
        j->max_running = 0;
    }
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
    const struct schema *keys = jobs_schema();
    schema_at at[JOB_KEYS_MAX] = {0};
    const struct yamlx_node *name_node, *own_env, *own_max;
    char prefix[200], what[240], msg[320], q[96];
    int ki_name = schema_find(keys, "name"), ki_cmd = schema_find(keys, "command"),
        ki_shell = schema_find(keys, "shell"), ki_tz = schema_find(keys, "timezone"),
        ki_env = schema_find(keys, "env"), ki_jitter = schema_find(keys, "jitter"),
        ki_pool = schema_find(keys, "pool"), ki_max = schema_find(keys, "max_running");

    snprintf(prefix, sizeof prefix, "job %zu: ", idx + 1);
    if (m->kind != YAMLX_MAP)
        return yamlx_errorf(p->d, m,
                            "job %zu: expected a mapping (name:, schedule:, command:), got %s",
                            idx + 1, yamlx_kind_name(m));
    j->line = m->line;
    j->col = m->col;
    j->group = p->set->group;

    /* The name first, so that every other message can say which job. */
    name_node = yamlx_map_get(m, "name");
    if (name_node != NULL) {
        snprintf(what, sizeof what, "%sname", prefix);
        if (schema_read_field(&keys->fields[ki_name], &p->ctx, name_node, j, what) != 0)
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
    if (schema_read_map(keys, &p->ctx, m, j, at, prefix, false) != 0)
        return -1;
    own_max = at[ki_max];

    /* Required keys, and exactly one of command and shell. */
    for (size_t i = 0; i < keys->n; i++)
        if ((keys->fields[i].flags & SCHEMA_REQUIRED) && at[i] == NULL)
            return yamlx_errorf(p->d, m, "%smissing required key \"%s\"", prefix,
                                keys->fields[i].key);
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
        if (schema_read_map(keys, &p->ctx, defaults, j, at, "defaults: ", true) != 0) {
            job_strv_free(own);
            return -1;
        }
        if (own_env != NULL) {
            job_strv_free(own);
            snprintf(what, sizeof what, "%senv", prefix);
            if (schema_read_field(&keys->fields[ki_env], &p->ctx, own_env, j, what) != 0)
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
    int ki_run_on = schema_find(keys, "run_on");
    if (p->base->quorum && at[ki_run_on] != NULL && job_run_on(j, NULL) != JOB_RUN_ON_LEADER)
        return yamlx_errorf(p->d, at[ki_run_on],
                            "%srun_on: %s is not supported over a Redlock quorum (redis: with "
                            "several masters): runs are dispatched to members on one server "
                            "only (one Redis, Sentinel or Cluster); write run_on: leader",
                            prefix, j->run_on[0]);

    /* 4. The table defaults; the zone defaults to the config's. */
    if (schema_apply_defaults(keys, &p->ctx, j, at, m, prefix) != 0)
        return -1;
    if (at[ki_tz] == NULL) {
        if (jobs_zone_get(p->set, p->default_tz, &j->tz, msg, sizeof msg) != 0)
            return yamlx_errorf(p->d, m, "%stimezone %s (the config's default): %s", prefix,
                                yamlx_quote(p->default_tz, q, sizeof q), msg);
        if (job_str_set(&j->timezone, p->default_tz, msg, sizeof msg) != 0)
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
            const char *best =
                yamlx_suggest(k->str, top_keys, sizeof top_keys / sizeof top_keys[0]);
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
                          const struct jobs_base *base, struct jobs **out, char *err, size_t errlen)
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
