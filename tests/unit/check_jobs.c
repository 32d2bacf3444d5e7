/* check_jobs.c -- jobs.yaml (src/conf/jobs.c).
 *
 * Table-driven: every row of the job key table (default, wrong type,
 * defaults:, bounds, fingerprint), and every bad file in
 * tests/data/bad/jobs_*.yaml with its exact "file:line:col: message".
 * Needs BATON_TESTS_DIR and BATON_SOURCE_DIR (set by ctest).
 */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cron.h"
#include "jobs.h"
#include "proc.h"
#include "schema.h"
#include "yamlx.h"
#include "testutil.h"

static const char *env_dir(const char *var)
{
    const char *d = getenv(var);

    ck_assert_msg(d != NULL && *d != '\0', "%s is not set (run the suite through ctest)", var);
    return d;
}

/* Loads yaml as "j.yaml" with default zone UTC. */
static struct jobs *load(const char *yaml, char *err, size_t errlen)
{
    struct jobs *j = NULL;
    int r = jobs_load_buffer("j.yaml", yaml, strlen(yaml), "UTC", &j, err, errlen);

    ck_assert_int_eq(r == 0, j != NULL);
    return j;
}

static struct jobs *load_ok(const char *yaml)
{
    char err[512];
    struct jobs *j = load(yaml, err, sizeof err);

    ck_assert_msg(j != NULL, "unexpected error for <<%s>>: %s", yaml, err);
    return j;
}

static void load_err(const char *yaml, const char *expected)
{
    char err[512];
    struct jobs *j = load(yaml, err, sizeof err);

    ck_assert_msg(j == NULL, "accepted <<%s>>", yaml);
    ck_assert_str_eq(err, expected);
}

static const char *my_user(void)
{
    struct passwd *pw = getpwuid(geteuid());

    ck_assert_ptr_nonnull(pw);
    return pw->pw_name;
}

/* ------------------------------------------------------------------------ */

START_TEST(empty_sets)
{
    static const char *const empties[] = {
        "",      "# no jobs yet\n",           "jobs:\n",           "jobs: []\n",
        "---\n", "defaults: {timeout: 1m}\n", "defaults:\njobs:\n"};

    for (size_t i = 0; i < sizeof empties / sizeof empties[0]; i++) {
        struct jobs *j = load_ok(empties[i]);

        ck_assert_uint_eq(j->n, 0);
        ck_assert_str_eq(j->path, "j.yaml");
        ck_assert_ptr_null(jobs_find(j, "x"));
        jobs_free(j);
    }
}
END_TEST

START_TEST(minimal_job_defaults)
{
    struct jobs *j = load_ok("jobs:\n"
                             "  - name: a\n"
                             "    schedule: \"@hourly\"\n"
                             "    command: [/bin/true]\n");
    const struct job *a = jobs_find(j, "a");

    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(a->line, 2);
    ck_assert_int_eq(a->col, 5);
    ck_assert_str_eq(a->schedule, "@hourly");
    ck_assert_ptr_nonnull(a->expr);
    ck_assert_str_eq(a->timezone, "UTC");
    ck_assert_ptr_nonnull(a->tz);
    ck_assert_str_eq(a->argv[0], "/bin/true");
    ck_assert_ptr_null(a->argv[1]);
    ck_assert_ptr_null(a->shell);
    ck_assert_int_eq(a->timeout_ms, 0);
    ck_assert_int_eq(a->kill_grace_ms, 5000);
    ck_assert_int_eq(a->concurrency, JOB_FORBID);
    ck_assert_int_eq(a->catchup_ms, JOB_CATCHUP_LAST);
    ck_assert_int_eq(a->retries, 0);
    ck_assert_int_eq(a->retry_backoff_ms, 10000);
    ck_assert_ptr_nonnull(a->env);
    ck_assert_ptr_null(a->env[0]);
    ck_assert_ptr_null(a->workdir);
    ck_assert_ptr_null(a->user);
    ck_assert(a->enabled);
    jobs_free(j);
}
END_TEST

START_TEST(full_job)
{
    char yaml[1024];
    struct jobs *j;
    const struct job *a;

    snprintf(yaml, sizeof yaml,
             "jobs:\n"
             "  - name: daily-report\n"
             "    schedule: \"0 7 * * MON-FRI\"\n"
             "    timezone: Etc/UTC\n"
             "    command: [\"/usr/local/bin/report\", \"--daily\", \"\"]\n"
             "    timeout: 10m\n"
             "    kill_grace: 1s\n"
             "    concurrency: replace\n"
             "    catchup: 1h\n"
             "    retries: 2\n"
             "    retry_backoff: 30s\n"
             "    env: {REPORT_FORMAT: pdf, COUNT: 3, _X: \"\"}\n"
             "    workdir: /srv/app\n"
             "    user: %s\n"
             "    enabled: false\n",
             my_user());
    j = load_ok(yaml);
    a = &j->v[0];
    ck_assert_str_eq(a->name, "daily-report");
    ck_assert_str_eq(a->timezone, "Etc/UTC");
    ck_assert_str_eq(a->argv[1], "--daily");
    ck_assert_str_eq(a->argv[2], "");
    ck_assert_ptr_null(a->argv[3]);
    ck_assert_int_eq(a->timeout_ms, 600000);
    ck_assert_int_eq(a->kill_grace_ms, 1000);
    ck_assert_int_eq(a->concurrency, JOB_REPLACE);
    ck_assert_int_eq(a->catchup_ms, 3600000);
    ck_assert_int_eq(a->retries, 2);
    ck_assert_int_eq(a->retry_backoff_ms, 30000);
    /* env sorted by name */
    ck_assert_str_eq(a->env[0], "COUNT=3");
    ck_assert_str_eq(a->env[1], "REPORT_FORMAT=pdf");
    ck_assert_str_eq(a->env[2], "_X=");
    ck_assert_ptr_null(a->env[3]);
    ck_assert_str_eq(a->workdir, "/srv/app");
    ck_assert_str_eq(a->user, my_user());
    ck_assert(!a->enabled);
    ck_assert_str_eq(job_concurrency_name(a->concurrency), "replace");
    jobs_free(j);
}
END_TEST

/* defaults: applies under each job; env merges with the job's winning. */
START_TEST(defaults_section)
{
    struct jobs *j = load_ok("jobs:\n"
                             "  - name: a\n"
                             "    schedule: \"@hourly\"\n"
                             "    shell: echo a\n"
                             "    env: {B: job, C: c}\n"
                             "  - name: b\n"
                             "    schedule: \"@hourly\"\n"
                             "    shell: echo b\n"
                             "    timeout: 5s\n"
                             "    timezone: UTC\n"
                             "defaults:\n"
                             "  timeout: 1m\n"
                             "  timezone: Etc/UTC\n"
                             "  retries: 3\n"
                             "  env: {A: d, B: d}\n");
    const struct job *a = jobs_find(j, "a"), *b = jobs_find(j, "b");

    ck_assert_int_eq(a->timeout_ms, 60000);
    ck_assert_int_eq(b->timeout_ms, 5000);
    ck_assert_str_eq(a->timezone, "Etc/UTC");
    ck_assert_str_eq(b->timezone, "UTC");
    ck_assert_int_eq(a->retries, 3);
    ck_assert_int_eq(b->retries, 3);
    ck_assert_str_eq(a->env[0], "A=d");
    ck_assert_str_eq(a->env[1], "B=job");
    ck_assert_str_eq(a->env[2], "C=c");
    ck_assert_ptr_null(a->env[3]);
    ck_assert_str_eq(b->env[0], "A=d");
    ck_assert_str_eq(b->env[1], "B=d");
    ck_assert_ptr_null(b->env[2]);
    jobs_free(j);
}
END_TEST

/* The config's zone applies when neither the job nor defaults: set one;
 * zones are loaded once and shared. */
START_TEST(zones)
{
    const char *yaml = "jobs:\n"
                       "  - {name: a, schedule: \"@hourly\", shell: x}\n"
                       "  - {name: b, schedule: \"@hourly\", shell: x}\n"
                       "  - {name: c, schedule: \"@hourly\", shell: x, timezone: UTC}\n";
    struct jobs *j = NULL;
    char err[512];

    ck_assert_int_eq(jobs_load_buffer("j.yaml", yaml, strlen(yaml), "Etc/UTC", &j, err, sizeof err),
                     0);
    ck_assert_str_eq(j->v[0].timezone, "Etc/UTC");
    ck_assert_ptr_eq(j->v[0].tz, j->v[1].tz);
    ck_assert_str_eq(j->v[2].timezone, "UTC");
    ck_assert_uint_eq(j->nzones, 2);
    jobs_free(j);
    ck_assert_int_eq(jobs_load_buffer("j.yaml", yaml, strlen(yaml), NULL, &j, err, sizeof err), 0);
    ck_assert_str_eq(j->v[0].timezone, "UTC");
    ck_assert_uint_eq(j->nzones, 1);
    jobs_free(j);
    ck_assert_int_eq(
        jobs_load_buffer("j.yaml", yaml, strlen(yaml), "Mars/Base", &j, err, sizeof err), -1);
    ck_assert_str_eq(err, "j.yaml:2:5: job \"a\": timezone \"Mars/Base\" (the config's default): "
                          "unknown time zone \"Mars/Base\"");
}
END_TEST

/* run_on: leader, any, all, {labels: [...]} and {labels: [...], all:
 * true}; every bad value said at its place. */
START_TEST(run_on_values)
{
    static const struct {
        const char *value, *error; /* error NULL: loads */
        enum job_run_on want;
    } cases[] = {
        {"leader", NULL, JOB_RUN_ON_LEADER},
        {"any", NULL, JOB_RUN_ON_ANY},
        {"{labels: [reports, ssd]}", NULL, JOB_RUN_ON_LABELS},
        {"all", NULL, JOB_RUN_ON_ALL},
        {"{labels: [reports, ssd], all: true}", NULL, JOB_RUN_ON_ALL},
        {"{labels: [reports, ssd], all: false}", NULL, JOB_RUN_ON_LABELS},
        {"{labels: [a], all: yes}", "j.yaml:4:32: job \"j\": run_on.all: expected true or false",
         JOB_RUN_ON_LEADER},
        {"anyone", "j.yaml:4:13: job \"j\": run_on: expected leader, any, all or {labels: [...]}, "
                   "got \"anyone\"", JOB_RUN_ON_LEADER},
        {"{labels: []}", "j.yaml:4:22: job \"j\": run_on.labels: empty (give at least one label, "
                         "or run_on: any)", JOB_RUN_ON_LEADER},
        {"{labels: [a, a]}", "j.yaml:4:26: job \"j\": run_on.labels[1]: \"a\" is given twice", JOB_RUN_ON_LEADER},
        {"{labels: [\"a b\"]}", "j.yaml:4:23: job \"j\": run_on.labels[0]: a label is 1-64 "
                                 "letters, digits, '_', '.' or '-'", JOB_RUN_ON_LEADER},
        {"{label: [a]}", "j.yaml:4:14: job \"j\": run_on: expected {labels: [...]} or {labels: "
                         "[...], all: true}", JOB_RUN_ON_LEADER},
        {"{labels: a}", "j.yaml:4:22: job \"j\": run_on.labels: expected a sequence of labels like "
                        "[reports, ssd], got a string", JOB_RUN_ON_LEADER},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char yaml[512], err[512];
        snprintf(yaml, sizeof yaml,
                 "jobs:\n  - name: j\n    schedule: \"@hourly\"\n    run_on: %s\n    shell: x\n",
                 cases[c].value);
        struct jobs *j = load(yaml, err, sizeof err);
        if (cases[c].error == NULL) {
            ck_assert_msg(j != NULL, "%s: %s", cases[c].value, err);
            char *const *labels;
            ck_assert_int_eq(job_run_on(&j->v[0], &labels), cases[c].want);
            if (strstr(cases[c].value, "labels") != NULL)
                ck_assert(strcmp(labels[0], "reports") == 0 && strcmp(labels[1], "ssd") == 0 &&
                          labels[2] == NULL);
            jobs_free(j);
            continue;
        }
        ck_assert_msg(j == NULL, "%s loaded", cases[c].value);
        ck_assert_msg(strncmp(err, cases[c].error, strlen(cases[c].error)) == 0,
                      "%s: want %s, got %s", cases[c].value, cases[c].error, err);
    }
}
END_TEST

/* Over a Redlock quorum the dispatch's scripts would run on one master
 * only: run_on other than leader is refused where it is written (the job,
 * or defaults:), leader and the default load. */
START_TEST(run_on_over_a_quorum_is_refused_where_it_is_written)
{
    struct jobs_base base = {.quorum = true};
    struct jobs *j = NULL;
    char err[512];
    static const char job_any[] =
        "jobs:\n  - name: j\n    schedule: \"@hourly\"\n    run_on: any\n    shell: x\n";
    static const char defaults_labels[] = "defaults:\n  run_on: {labels: [a]}\njobs:\n  - name: "
                                          "j\n    schedule: \"@hourly\"\n    shell: x\n";
    static const char plain[] = "jobs:\n  - name: j\n    schedule: \"@hourly\"\n    run_on: "
                                "leader\n    shell: x\n  - name: k\n    schedule: \"@hourly\"\n"
                                "    shell: x\n";
    ck_assert_int_eq(
        jobs_load_buffer_base("j.yaml", job_any, strlen(job_any), &base, &j, err, sizeof err), -1);
    ck_assert_str_eq(err, "j.yaml:4:13: job \"j\": run_on: any is not supported over a Redlock "
                          "quorum (redis: with several masters): runs are dispatched to members "
                          "on one server only (one Redis, Sentinel or Cluster); write run_on: "
                          "leader");
    ck_assert_int_eq(jobs_load_buffer_base("j.yaml", defaults_labels, strlen(defaults_labels),
                                           &base, &j, err, sizeof err),
                     -1);
    ck_assert_msg(strncmp(err, "j.yaml:2:11: job \"j\": run_on: labels is not supported", 50) ==
                      0,
                  "%s", err);
    ck_assert_int_eq(
        jobs_load_buffer_base("j.yaml", plain, strlen(plain), &base, &j, err, sizeof err), 0);
    jobs_free(j);
    base.quorum = false; /* one server: any loads */
    ck_assert_int_eq(
        jobs_load_buffer_base("j.yaml", job_any, strlen(job_any), &base, &j, err, sizeof err), 0);
    jobs_free(j);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The job key table, row by row */

/* What kind of value a key takes, for the samples below (the schema's
 * types are coarser: TEXT and NODE keys have hooks of their own). */
enum jk {
    JK_NAME, JK_SCHEDULE, JK_TIMEZONE, JK_ARGV, JK_SHELL, JK_PATH, JK_USER,
    JK_DURATION, JK_CATCHUP, JK_INT, JK_CONCURRENCY, JK_ENV, JK_BOOL, JK_HOOK, JK_POOL,
    JK_RUN_ON,
};

static enum jk kind_of(const struct schema_field *k)
{
    static const struct {
        const char *key;
        enum jk kind;
    } named[] = {{"name", JK_NAME},       {"schedule", JK_SCHEDULE}, {"timezone", JK_TIMEZONE},
                 {"command", JK_ARGV},    {"shell", JK_SHELL},       {"workdir", JK_PATH},
                 {"user", JK_USER},       {"catchup", JK_CATCHUP},   {"concurrency", JK_CONCURRENCY},
                 {"env", JK_ENV},         {"on_failure", JK_HOOK},   {"on_success", JK_HOOK},
                 {"pool", JK_POOL},       {"run_on", JK_RUN_ON}};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (strcmp(named[i].key, k->key) == 0)
            return named[i].kind;
    switch (k->type) {
    case SCHEMA_DURATION: return JK_DURATION;
    case SCHEMA_INT: return JK_INT;
    case SCHEMA_BOOL: return JK_BOOL;
    default: ck_abort_msg("%s: no sample for this key", k->key);
    }
    return JK_BOOL;
}

/* Two valid, different values for a key of type t (b NULL: "absent" is the
 * other value), and one value of a wrong YAML kind. */
static void sample_values(const struct schema_field *k, char *a, char *b, size_t len, const char **wrong,
                          const char **wrong_kind)
{
    *wrong = "{x: 1}";
    *wrong_kind = "got a mapping";
    switch (kind_of(k)) {
    case JK_NAME:
        snprintf(a, len, "first");
        snprintf(b, len, "second");
        break;
    case JK_SCHEDULE:
        snprintf(a, len, "\"@hourly\"");
        snprintf(b, len, "\"*/5 * * * * *\"");
        break;
    case JK_TIMEZONE:
        snprintf(a, len, "UTC");
        snprintf(b, len, "Etc/UTC");
        break;
    case JK_ARGV:
        snprintf(a, len, "[/bin/true]");
        snprintf(b, len, "[/bin/true, x]");
        break;
    case JK_SHELL:
        snprintf(a, len, "\"echo a\"");
        snprintf(b, len, "\"echo b\"");
        break;
    case JK_PATH:
        snprintf(a, len, "/srv/a");
        snprintf(b, len, "/srv/b");
        break;
    case JK_USER:
        snprintf(a, len, "%s", my_user());
        b[0] = '\0';
        break;
    case JK_DURATION:
    case JK_INT:
        snprintf(a, len, "%" PRId64 "%s", k->min, kind_of(k) == JK_DURATION ? "ms" : "");
        snprintf(b, len, "%" PRId64 "%s", k->max, kind_of(k) == JK_DURATION ? "ms" : "");
        break;
    case JK_CATCHUP:
        snprintf(a, len, "last");
        snprintf(b, len, "%" PRId64 "ms", k->max);
        break;
    case JK_CONCURRENCY:
        snprintf(a, len, "allow");
        snprintf(b, len, "replace");
        break;
    case JK_ENV:
        snprintf(a, len, "{A: \"1\"}");
        snprintf(b, len, "{A: \"2\"}");
        *wrong = "[A=1]";
        *wrong_kind = "got a sequence";
        break;
    case JK_BOOL:
        snprintf(a, len, "true");
        snprintf(b, len, "false");
        break;
    case JK_RUN_ON: /* only leader is valid in this version (run_on_values) */
        snprintf(a, len, "leader");
        b[0] = '\0';
        *wrong = "[any]";
        *wrong_kind = "got a sequence";
        break;
    case JK_HOOK:
        snprintf(a, len, "[/bin/true]");
        snprintf(b, len, "{shell: \"echo b\"}");
        *wrong = "\"echo\"";
        *wrong_kind = "got a string";
        break;
    case JK_POOL: /* job_yaml() defines both */
        snprintf(a, len, "p1");
        snprintf(b, len, "p2");
        break;
    }
}

/* A job named j with key set to value (value NULL: key absent), plus what it
 * needs to be complete, optionally with `defaults: {key: defaults}`; returns
 * the line and column of the value. */
static void job_yaml(const struct schema_field *k, const char *value, const char *defaults, char *buf,
                     size_t len, int *line, int *col)
{
    const char *lines[6];
    char own[128], name[128];
    size_t n = 0, o = 0;

    if (kind_of(k) != JK_NAME || value != NULL) {
        snprintf(name, sizeof name, "name: %s", kind_of(k) == JK_NAME ? value : "j");
        lines[n++] = name;
    }
    if (kind_of(k) != JK_SCHEDULE) /* jitter's largest (1d) needs ticks further apart */
        lines[n++] =
            strcmp(k->key, "jitter") == 0 ? "schedule: \"@weekly\"" : "schedule: \"@hourly\"";
    if (kind_of(k) != JK_ARGV && kind_of(k) != JK_SHELL)
        lines[n++] = "shell: echo";
    if (strcmp(k->key, "max_running") == 0) /* allow jobs only */
        lines[n++] = "concurrency: allow";
    if (kind_of(k) != JK_NAME && value != NULL) {
        snprintf(own, sizeof own, "%s: %s", k->key, value);
        lines[n++] = own;
    } else if (value == NULL && (kind_of(k) == JK_ARGV || kind_of(k) == JK_SHELL)) {
        lines[n++] = kind_of(k) == JK_ARGV ? "shell: echo" : "command: [x]";
    }
    if (defaults != NULL)
        o += (size_t)snprintf(buf + o, len - o, "defaults:\n  %s: %s\n", k->key, defaults);
    o += (size_t)snprintf(buf + o, len - o, "jobs:\n");
    *line = defaults != NULL ? 4 : 2;
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s\n", i == 0 ? "  - " : "    ", lines[i]);
    /* The pools a pool: value may name (last: the lines above keep their
     * numbers). */
    snprintf(buf + o, len - o, "pools: {p1: 1, p2: 2}\n");
    /* The key under test is the first line for name, else the last. */
    if (kind_of(k) == JK_NAME) {
        *col = 11;
    } else {
        *line += (int)n - 1;
        *col = 4 + (int)strlen(k->key) + 3;
    }
}

START_TEST(key_row)
{
    const struct schema_field *k = &jobs_schema()->fields[_i];
    char a[64], b[64], yaml[1024], err[512], want[256];
    const char *wrong, *wrong_kind;
    struct jobs *ja, *jb;
    int line, col;

    ck_assert_ptr_nonnull(k->doc);
    sample_values(k, a, b, sizeof a, &wrong, &wrong_kind);

    /* 1. Absent: the default applies (or the key is required). */
    job_yaml(k, NULL, NULL, yaml, sizeof yaml, &line, &col);
    ja = load(yaml, err, sizeof err);
    if ((k->flags & SCHEMA_REQUIRED)) {
        ck_assert_ptr_null(ja);
        snprintf(want, sizeof want, "j.yaml:2:5: job %s: missing required key \"%s\"",
                 kind_of(k) == JK_NAME ? "1" : "\"j\"", k->key);
        ck_assert_str_eq(err, want);
    } else {
        const void *field;
        char msg[256];
        int64_t v;
        bool bv;

        ck_assert_msg(ja != NULL, "%s", err);
        field = (const char *)&ja->v[0] + k->offset;
        if (k->def != NULL) {
            switch (kind_of(k)) {
            case JK_DURATION:
                ck_assert_int_eq(yamlx_parse_duration(k->def, &v, msg, sizeof msg), 0);
                ck_assert_int_eq(*(const int64_t *)field, v);
                break;
            case JK_CATCHUP: ck_assert_int_eq(*(const int64_t *)field, JOB_CATCHUP_LAST); break;
            case JK_INT:
                ck_assert_int_eq(yamlx_parse_int(k->def, &v, msg, sizeof msg), 0);
                ck_assert_int_eq(*(const int *)field, v);
                break;
            case JK_CONCURRENCY:
                ck_assert_str_eq(job_concurrency_name(*(const int *)field), k->def);
                break;
            case JK_BOOL:
                ck_assert_int_eq(yamlx_parse_bool(k->def, &bv, msg, sizeof msg), 0);
                ck_assert_int_eq(*(const bool *)field, bv);
                break;
            default: ck_abort_msg("%s: unexpected default", k->key);
            }
        } else if (kind_of(k) == JK_TIMEZONE) {
            ck_assert_str_eq(ja->v[0].timezone, "UTC");
        } else if (kind_of(k) == JK_ENV) {
            ck_assert_ptr_null(ja->v[0].env[0]);
        } else if (kind_of(k) == JK_INT) {
            ck_assert_int_eq(*(const int *)field, 0); /* none */
        } else if (kind_of(k) == JK_RUN_ON) {
            ck_assert_int_eq(job_run_on(&ja->v[0], NULL), JOB_RUN_ON_LEADER);
        } else {
            ck_assert_ptr_null(*(void *const *)field);
        }
        jobs_free(ja);
    }

    /* 2. A wrong YAML kind is refused at the value. */
    job_yaml(k, wrong, NULL, yaml, sizeof yaml, &line, &col);
    ck_assert_ptr_null(load(yaml, err, sizeof err));
    snprintf(want, sizeof want, "j.yaml:%d:%d: job ", line, col);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "want %s..., got %s", want, err);
    ck_assert_msg(strstr(err, wrong_kind) != NULL, "%s", err);
    snprintf(want, sizeof want, "%s: ", k->key);
    ck_assert_msg(strstr(err, want) != NULL, "%s", err);

    /* 3. Two different valid values give two different fingerprints, and the
     * same definition the same one. */
    job_yaml(k, a, NULL, yaml, sizeof yaml, &line, &col);
    ja = load(yaml, err, sizeof err);
    ck_assert_msg(ja != NULL, "%s: %s", a, err);
    job_yaml(k, b[0] != '\0' ? b : NULL, NULL, yaml, sizeof yaml, &line, &col);
    jb = load(yaml, err, sizeof err);
    ck_assert_msg(jb != NULL, "%s: %s", b, err);
    if (kind_of(k) == JK_RUN_ON) /* one valid value: the default's, written out */
        ck_assert_uint_eq(ja->v[0].fingerprint, jb->v[0].fingerprint);
    else
        ck_assert_msg(ja->v[0].fingerprint != jb->v[0].fingerprint,
                      "%s: %s and %s hash the same", k->key, a, b);
    jobs_free(jb);
    job_yaml(k, a, NULL, yaml, sizeof yaml, &line, &col);
    jb = load(yaml, err, sizeof err);
    ck_assert_uint_eq(ja->v[0].fingerprint, jb->v[0].fingerprint);
    jobs_free(jb);

    /* 4. defaults: gives the same job as setting the key on the job, or
     * refuses the key. */
    job_yaml(k, NULL, a, yaml, sizeof yaml, &line, &col);
    jb = load(yaml, err, sizeof err);
    if (!(k->flags & SCHEMA_NO_DEFAULTS)) {
        ck_assert_msg(jb != NULL, "%s", err);
        ck_assert_uint_eq(ja->v[0].fingerprint, jb->v[0].fingerprint);
        jobs_free(jb);
    } else {
        ck_assert_ptr_null(jb);
        snprintf(want, sizeof want,
                 "j.yaml:2:3: defaults: \"%s\" cannot have a default (set it on each job)", k->key);
        ck_assert_str_eq(err, want);
    }
    jobs_free(ja);

    /* 5. Bounds. */
    if (kind_of(k) == JK_DURATION || kind_of(k) == JK_INT || kind_of(k) == JK_CATCHUP) {
        const char *unit = kind_of(k) == JK_INT ? "" : "ms";

        snprintf(a, sizeof a, "%" PRId64 "%s", k->max + 1, unit);
        job_yaml(k, a, NULL, yaml, sizeof yaml, &line, &col);
        ck_assert_ptr_null(load(yaml, err, sizeof err));
        snprintf(want, sizeof want, "j.yaml:%d:%d: job \"j\": %s: \"%s\" is out of range (", line,
                 col, k->key, a);
        ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "want %s..., got %s", want, err);
        if (k->min > 0 || kind_of(k) == JK_INT) {
            snprintf(a, sizeof a, "%" PRId64 "%s", k->min - 1, unit);
            job_yaml(k, a, NULL, yaml, sizeof yaml, &line, &col);
            ck_assert_ptr_null(load(yaml, err, sizeof err));
            snprintf(want, sizeof want, "j.yaml:%d:%d: job \"j\": %s: ", line, col, k->key);
            ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "want %s..., got %s", want, err);
        }
    }

    /* 6. Lenient forms that hide a mistake are refused at the value: a
     * boolean or an integer in quotes (a string in YAML), an integer with
     * a leading zero (octal in YAML 1.1), a duration that repeats a unit. */
    static const struct {
        enum jk kind, kind2;         /* the kinds of key it applies to */
        const char *value, *message; /* the message after "KEY: " */
    } lenient[] = {
        {JK_BOOL, JK_BOOL, "\"false\"",
         "expected true or false, got the string \"false\" (remove the quotes)"},
        {JK_INT, JK_INT, "\"1\"", "expected an integer, got the string \"1\" (remove the quotes)"},
        {JK_INT, JK_INT, "010", "\"010\" has a leading zero (YAML 1.1 reads it as octal): write 10"},
        {JK_DURATION, JK_CATCHUP, "1h1h",
         "\"1h1h\": unit \"h\" repeated at \"1h\" (write each unit once, largest first: 1h30m)"},
    };
    for (size_t c = 0; c < sizeof lenient / sizeof lenient[0]; c++) {
        if (kind_of(k) != lenient[c].kind && kind_of(k) != lenient[c].kind2)
            continue;
        job_yaml(k, lenient[c].value, NULL, yaml, sizeof yaml, &line, &col);
        ck_assert_ptr_null(load(yaml, err, sizeof err));
        snprintf(want, sizeof want, "j.yaml:%d:%d: job \"j\": %s: %s", line, col, k->key,
                 lenient[c].message);
        ck_assert_str_eq(err, want);
    }

    /* 7. The reference lists the key. */
    {
        char *text = NULL;
        size_t tlen = 0;
        FILE *f = open_memstream(&text, &tlen);

        jobs_write_reference(f);
        fclose(f);
        snprintf(want, sizeof want, "| `%s` | ", k->key);
        ck_assert_ptr_nonnull(strstr(text, want));
        free(text);
    }
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Hooks: the job's own, then defaults:, then baton.yaml's (the base) */

static struct jobs *load_base(const char *yaml, const struct jobs_base *base)
{
    char err[512];
    struct jobs *j = NULL;

    ck_assert_msg(jobs_load_buffer_base("j.yaml", yaml, strlen(yaml), base, &j, err, sizeof err) ==
                      0,
                  "%s", err);
    return j;
}

START_TEST(hook_layers)
{
    char *fail_argv[] = {"/usr/bin/base-fail", NULL};
    struct job_cmd base_fail = {.argv = fail_argv}, base_ok = {.shell = "echo base ok"};
    struct jobs_base base = {.timezone = "UTC", .on_failure = &base_fail, .on_success = &base_ok,
                             .hook_timeout_ms = 5000};
    const char *yaml = "defaults:\n"
                       "  on_success: [/usr/bin/defaults-ok]\n"
                       "jobs:\n"
                       "  - {name: own, schedule: \"@hourly\", shell: x, on_failure: {shell: "
                       "\"own fail\"}, hook_timeout: 2s}\n"
                       "  - {name: inherit, schedule: \"@hourly\", shell: x}\n"
                       "  - {name: off, schedule: \"@hourly\", shell: x, on_failure: [], "
                       "on_success: []}\n";
    struct jobs *j = load_base(yaml, &base);
    const struct job *own = jobs_find(j, "own"), *inh = jobs_find(j, "inherit"),
                     *off = jobs_find(j, "off");

    /* The job's own wins; defaults: over baton.yaml; baton.yaml under both. */
    ck_assert_str_eq(own->on_failure.shell, "own fail");
    ck_assert_ptr_null(own->on_failure.argv);
    ck_assert_str_eq(own->on_success.argv[0], "/usr/bin/defaults-ok");
    ck_assert_int_eq(own->hook_timeout_ms, 2000);
    ck_assert_str_eq(inh->on_failure.argv[0], "/usr/bin/base-fail");
    ck_assert_ptr_null(inh->on_failure.argv[1]);
    ck_assert_str_eq(inh->on_success.argv[0], "/usr/bin/defaults-ok");
    ck_assert_int_eq(inh->hook_timeout_ms, 5000);
    /* [] turns an inherited hook off. */
    ck_assert(!job_cmd_set(&off->on_failure));
    ck_assert(!job_cmd_set(&off->on_success));
    /* baton.yaml's hooks are part of the definition: another base, another
     * fingerprint (and set hash). */
    fail_argv[0] = "/usr/bin/other";
    struct jobs *k = load_base(yaml, &base);
    ck_assert_uint_ne(jobs_find(k, "inherit")->fingerprint, inh->fingerprint);
    ck_assert_uint_eq(jobs_find(k, "own")->fingerprint, own->fingerprint);
    ck_assert_uint_ne(jobs_hash(k), jobs_hash(j));
    jobs_free(k);
    jobs_free(j);
    /* Without a base: no hooks, the table's 30s. */
    j = load_ok("jobs:\n  - {name: a, schedule: \"@hourly\", shell: x}\n");
    ck_assert(!job_cmd_set(&j->v[0].on_failure));
    ck_assert_int_eq(j->v[0].hook_timeout_ms, 30000);
    jobs_free(j);
}
END_TEST

START_TEST(hook_errors)
{
    load_err("jobs:\n  - {name: a, schedule: \"@hourly\", shell: x, on_failure: {shell: \"\"}}\n",
             "j.yaml:2:66: job \"a\": on_failure.shell: must not be empty");
    load_err("jobs:\n  - {name: a, schedule: \"@hourly\", shell: x, on_failure: {}}\n",
             "j.yaml:2:58: job \"a\": on_failure: expected a command like "
             "[\"/usr/local/bin/notify\", \"--job\"] or {shell: \"...\"} ([] for none), got an "
             "empty mapping");
    load_err("jobs:\n  - {name: a, schedule: \"@hourly\", shell: x, on_success: [\"\"]}\n",
             "j.yaml:2:59: job \"a\": on_success[0]: the program must not be empty");
    load_err("jobs:\n  - name: a\n    schedule: \"@hourly\"\n    shell: x\n    on_failure:\n",
             "j.yaml:5:16: job \"a\": on_failure: missing value (expected a command like "
             "[\"/usr/local/bin/notify\", \"--job\"] or {shell: \"...\"} ([] for none))");
    load_err("defaults:\n  on_failure: {shell: [x]}\njobs: []\n",
             "j.yaml:2:23: defaults: on_failure.shell: expected a command line, got a sequence");
}
END_TEST

/* The set's hash: the order of the file does not count, every job does. */
START_TEST(set_hash)
{
    struct jobs *a = load_ok("jobs:\n"
                             "  - {name: x, schedule: \"@hourly\", shell: a}\n"
                             "  - {name: y, schedule: \"@daily\", shell: b}\n");
    struct jobs *b = load_ok("jobs:\n"
                             "  - {name: y, schedule: \"@daily\", shell: b}\n"
                             "  - {name: x, schedule: \"@hourly\", shell: a}\n");
    struct jobs *c = load_ok("jobs:\n"
                             "  - {name: y, schedule: \"@daily\", shell: b}\n"
                             "  - {name: x, schedule: \"@hourly\", shell: a, retries: 1}\n");
    struct jobs *d = load_ok("jobs:\n"
                             "  - {name: y, schedule: \"@daily\", shell: b}\n");
    struct jobs *e = load_ok("jobs: []\n");
    char hex[JOBS_HASH_HEX];

    ck_assert_uint_eq(jobs_hash(a), jobs_hash(b));
    ck_assert_uint_ne(jobs_hash(a), jobs_hash(c));
    ck_assert_uint_ne(jobs_hash(a), jobs_hash(d));
    ck_assert_uint_ne(jobs_hash(d), jobs_hash(e));
    ck_assert_uint_eq(strlen(jobs_hash_hex(a, hex, sizeof hex)), 16);
    jobs_free(a);
    jobs_free(b);
    jobs_free(c);
    jobs_free(d);
    jobs_free(e);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Fingerprints: what is and is not a change */

START_TEST(fingerprint_normalized)
{
    struct jobs *a = load_ok("jobs:\n"
                             "  - name: x\n"
                             "    schedule: \"0 7 * * *\"\n"
                             "    shell: echo\n"
                             "    env: {A: \"1\", B: \"2\"}\n"
                             "  - name: y\n"
                             "    schedule: \"@daily\"\n"
                             "    shell: echo\n");
    /* Moved, keys reordered, blanks in the schedule, env from defaults and
     * in another order, an explicit default, and its neighbour changed. */
    struct jobs *b = load_ok("defaults:\n"
                             "  env: {B: \"2\"}\n"
                             "jobs:\n"
                             "  - name: y\n"
                             "    schedule: \"@hourly\"\n"
                             "    shell: echo\n"
                             "\n"
                             "  - shell: echo\n"
                             "    env: {A: \"1\"}\n"
                             "    schedule: \" 0  7 * *\t*\"\n"
                             "    timeout: 0\n"
                             "    catchup: last\n"
                             "    name: x\n");

    ck_assert_uint_eq(jobs_find(a, "x")->fingerprint, jobs_find(b, "x")->fingerprint);
    ck_assert_uint_ne(jobs_find(a, "y")->fingerprint, jobs_find(b, "y")->fingerprint);
    ck_assert_uint_ne(jobs_find(a, "x")->fingerprint, jobs_find(a, "y")->fingerprint);
    jobs_free(a);
    jobs_free(b);
}
END_TEST

/* command: [a, b] and command: ["a b"] (or shell) are different jobs. */
START_TEST(fingerprint_unambiguous)
{
    struct jobs *a = load_ok("jobs: [{name: x, schedule: \"@daily\", command: [a, b]}]\n");
    struct jobs *b = load_ok("jobs: [{name: x, schedule: \"@daily\", command: [\"a b\"]}]\n");
    struct jobs *c = load_ok("jobs: [{name: x, schedule: \"@daily\", shell: \"a b\"}]\n");
    struct jobs *d =
        load_ok("jobs: [{name: x, schedule: \"@daily\", command: [a], env: {B: b}}]\n");
    struct jobs *e = load_ok("jobs: [{name: x, schedule: \"@daily\", command: [a, B=b]}]\n");

    ck_assert_uint_ne(a->v[0].fingerprint, b->v[0].fingerprint);
    ck_assert_uint_ne(b->v[0].fingerprint, c->v[0].fingerprint);
    ck_assert_uint_ne(d->v[0].fingerprint, e->v[0].fingerprint);
    jobs_free(a);
    jobs_free(b);
    jobs_free(c);
    jobs_free(d);
    jobs_free(e);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Errors that point into a value */

START_TEST(schedule_columns)
{
    /* The column is the schedule's plus the cron error's (-1, +1 for a quote). */
    load_err("jobs:\n  - name: report\n    shell: x\n    schedule: 0 25 * * *\n",
             "j.yaml:4:17: job \"report\": schedule: field 2 (hour) \"25\": value out of range "
             "0-23");
    load_err("jobs:\n  - name: report\n    shell: x\n    schedule: \"0 25 * * *\"\n",
             "j.yaml:4:18: job \"report\": schedule: field 2 (hour) \"25\": value out of range "
             "0-23");
    load_err("jobs:\n  - name: report\n    shell: x\n    schedule: '0 0 25 * * *'\n",
             "j.yaml:4:20: job \"report\": schedule: field 3 (hour) \"25\": value out of range "
             "0-23");
    load_err("jobs: [{name: r, shell: x, schedule: \"0 7 * * MON-FRY\"}]\n",
             "j.yaml:1:51: job \"r\": schedule: field 5 (day-of-week) \"FRY\": unknown name (use "
             "SUN-SAT)");
    /* An escape before the error: the column of the scalar. */
    load_err("jobs:\n  - name: report\n    shell: x\n    schedule: \"0\\t25 * * *\"\n",
             "j.yaml:4:15: job \"report\": schedule: field 2 (hour) \"25\": value out of range "
             "0-23");
}
END_TEST

START_TEST(names_and_duplicates)
{
    char name[200], yaml[512], err[512];

    memset(name, 'n', 128);
    name[128] = '\0';
    snprintf(yaml, sizeof yaml, "jobs: [{name: %s, schedule: \"@daily\", shell: x}]\n", name);
    jobs_free(load_ok(yaml));
    name[128] = 'n';
    name[129] = '\0';
    snprintf(yaml, sizeof yaml, "jobs: [{name: %s, schedule: \"@daily\", shell: x}]\n", name);
    ck_assert_ptr_null(load(yaml, err, sizeof err));
    ck_assert_msg(strncmp(err, "j.yaml:1:15: job 1: name: \"nnnn", 31) == 0, "%s", err);
    ck_assert_ptr_nonnull(strstr(err, "...\": use 1-128 letters, digits, '_', '.' or '-'"));
    jobs_free(load_ok("jobs: [{name: a.b_c-D9, schedule: \"@daily\", shell: x}]\n"));
    /* Names are case-sensitive: two jobs. */
    jobs_free(load_ok("jobs:\n  - {name: a, schedule: \"@daily\", shell: x}\n"
                      "  - {name: A, schedule: \"@daily\", shell: x}\n"));
    /* The second of three is reported, naming the first's line. */
    load_err("jobs:\n  - {name: a, schedule: \"@daily\", shell: x}\n"
             "  - {name: b, schedule: \"@daily\", shell: x}\n"
             "  - {shell: x, schedule: \"@daily\", name: a}\n",
             "j.yaml:4:42: job \"a\": duplicate name (first at line 2)");
}
END_TEST

START_TEST(env_rules)
{
    jobs_free(load_ok("jobs: [{name: a, schedule: \"@daily\", shell: x, env: {_A1: x, a: y, "
                      "BATONX: z}}]\n"));
    load_err("jobs: [{name: a, schedule: \"@daily\", shell: x, env: {BATON_FENCE: \"1\"}}]\n",
             "j.yaml:1:54: job \"a\": env: \"BATON_FENCE\": names starting with BATON_ are "
             "reserved for the variables baton sets");
    load_err("jobs: [{name: a, schedule: \"@daily\", shell: x, env: {\"A=B\": x}}]\n",
             "j.yaml:1:54: job \"a\": env: invalid variable name \"A=B\" (letters, digits and _, "
             "not starting with a digit)");
    load_err("jobs: [{name: a, schedule: \"@daily\", shell: x, env: {\"\": x}}]\n",
             "j.yaml:1:54: job \"a\": env: invalid variable name \"\" (letters, digits and _, not "
             "starting with a digit)");
    load_err("jobs: [{name: a, schedule: \"@daily\", shell: x, env: {A: [1]}}]\n",
             "j.yaml:1:57: job \"a\": env.A: expected a string, got a sequence");
    load_err("defaults: {env: {BATON_JOB: x}}\n",
             "j.yaml:1:18: defaults: env: \"BATON_JOB\": names starting with BATON_ are reserved "
             "for the variables baton sets");
}
END_TEST

START_TEST(users)
{
    char yaml[512];

    snprintf(yaml, sizeof yaml, "jobs: [{name: a, schedule: \"@daily\", shell: x, user: %s}]\n",
             my_user());
    jobs_free(load_ok(yaml));
    load_err("jobs: [{name: a, schedule: \"@daily\", shell: x, user: no-such-user-here}]\n",
             "j.yaml:1:54: job \"a\": user: unknown user \"no-such-user-here\"");
    if (geteuid() != 0) {
        /* Another user needs root. */
        load_err("jobs: [{name: a, schedule: \"@daily\", shell: x, user: root}]\n",
                 "j.yaml:1:54: job \"a\": user: running a job as \"root\" needs baton to run as "
                 "root");
    } else {
        jobs_free(load_ok("jobs: [{name: a, schedule: \"@daily\", shell: x, user: nobody}]\n"));
    }
}
END_TEST

START_TEST(too_many_jobs)
{
    size_t cap = 10001 * 64, o = 0;
    char *yaml = malloc(cap), err[512];

    o += (size_t)snprintf(yaml, cap, "jobs:\n");
    for (int i = 0; i < 10001; i++)
        o += (size_t)snprintf(yaml + o, cap - o, "- {name: j%d, schedule: \"@daily\", shell: x}\n",
                              i);
    ck_assert_ptr_null(load(yaml, err, sizeof err));
    ck_assert_str_eq(err, "j.yaml:10002:3: jobs: too many jobs (at most 10000)");
    free(yaml);
}
END_TEST

/* A jobs.yaml with `n` env entries V000000: x... on job "big", and `ndef`
 * under defaults: (D000000: d..., and V000000: d... for the first `shared`
 * of them, which the job's own must win). Returns: owned. */
static char *big_env_yaml(size_t n, size_t ndef, size_t shared)
{
    size_t cap = (n + ndef) * 32 + 256, o = 0;
    char *y = malloc(cap);

    ck_assert_ptr_nonnull(y);
    if (ndef > 0) {
        o += (size_t)snprintf(y + o, cap - o, "defaults:\n  env:\n");
        for (size_t i = 0; i < ndef; i++)
            o += (size_t)snprintf(y + o, cap - o, "    %c%06zu: d\n", i < shared ? 'V' : 'D', i);
    }
    o += (size_t)snprintf(y + o, cap - o,
                          "jobs:\n  - name: big\n    schedule: \"@hourly\"\n    shell: env\n"
                          "    env:\n");
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(y + o, cap - o, "      V%06zu: x\n", i);
    return y;
}

/* A large env: loads in time linear in its size (it was quadratic: 20,000
 * entries took 1.4 s, 100,000 took 41 s), merges defaults: under the job's
 * own, and is refused whole above what exec takes (1 MiB with the
 * command). */
START_TEST(env_large)
{
    char err[512];
    int64_t t0 = tu_now_ms();
    /* 40,000 of the job's, 20,000 of defaults: (half of them the same
     * names): 50,000 variables, 900 KB for exec. */
    char *yaml = big_env_yaml(40000, 20000, 10000);
    struct jobs *j = load(yaml, err, sizeof err);
    int64_t ms = tu_now_ms() - t0;

    ck_assert_msg(j != NULL, "%s", err);
    ck_assert_msg(ms < 3000, "40,000 + 20,000 env entries took %" PRId64 " ms to load", ms);
    size_t n = 0;
    for (char **e = j->v[0].env; *e != NULL; e++, n++)
        if (n > 0) /* sorted by name, each once */
            ck_assert_msg(strcmp(e[-1], e[0]) < 0, "%s before %s", e[-1], e[0]);
    ck_assert_uint_eq(n, 50000);
    ck_assert_str_eq(j->v[0].env[0], "D010000=d");
    ck_assert_str_eq(j->v[0].env[10000], "V000000=x"); /* the job's own wins */
    ck_assert_str_eq(j->v[0].env[49999], "V039999=x");
    jobs_free(j);
    free(yaml);

    /* 100,000 entries: refused, at once, at the env. */
    yaml = big_env_yaml(100000, 0, 0);
    t0 = tu_now_ms();
    ck_assert_ptr_null(load(yaml, err, sizeof err));
    ms = tu_now_ms() - t0;
    ck_assert_msg(ms < 3000, "100,000 env entries took %" PRId64 " ms to refuse", ms);
    ck_assert_str_eq(err, "j.yaml:6:7: job \"big\": its command and env take 1800039 bytes for "
                          "exec (each string with its NUL and pointer); a job takes at most "
                          "1048576 (1 MiB)");
    free(yaml);
}
END_TEST

/* What exec cannot take is refused at load (`baton check`), with where:
 * one argument or variable of 128 KiB or more (MAX_ARG_STRLEN: "Argument
 * list too long" at every run before), in shell:, command:, env: and the
 * hooks. */
START_TEST(exec_string_limits)
{
    size_t big = 128 * 1024, cap = big + 512;
    char *s = malloc(big + 1), *yaml = malloc(cap);

    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_nonnull(yaml);
    memset(s, 'x', big);
    s[big] = '\0';
    /* One byte under: exec takes it. */
    s[big - 1] = '\0';
    snprintf(yaml, cap, "jobs:\n  - name: a\n    schedule: \"@daily\"\n    shell: \"%s\"\n", s);
    jobs_free(load_ok(yaml));
    s[big - 1] = 'x';
    snprintf(yaml, cap, "jobs:\n  - name: a\n    schedule: \"@daily\"\n    shell: \"%s\"\n", s);
    load_err(yaml, "j.yaml:4:12: job \"a\": shell: 131072 bytes; /bin/sh -c takes the command "
                   "line as one argument of exec, at most 131071 bytes (MAX_ARG_STRLEN): put "
                   "the script in a file and run that");
    snprintf(yaml, cap, "jobs:\n  - name: a\n    schedule: \"@daily\"\n    command: [echo, %s]\n",
             s);
    load_err(yaml, "j.yaml:4:21: job \"a\": command[1]: 131072 bytes; exec takes at most 131071 "
                   "bytes in one argument (MAX_ARG_STRLEN)");
    snprintf(yaml, cap,
             "jobs:\n  - name: a\n    schedule: \"@daily\"\n    shell: x\n    env: {A: %s}\n",
             s + 2);
    load_err(yaml, "j.yaml:5:14: job \"a\": env.A: NAME=value is 131072 bytes; exec takes at "
                   "most 131071 bytes in one variable (MAX_ARG_STRLEN)");
    snprintf(yaml, cap,
             "jobs:\n  - name: a\n    schedule: \"@daily\"\n    shell: x\n"
             "    on_failure: {shell: \"%s\"}\n",
             s);
    load_err(yaml, "j.yaml:5:25: job \"a\": on_failure.shell: 131072 bytes; /bin/sh -c takes the "
                   "command line as one argument of exec, at most 131071 bytes (MAX_ARG_STRLEN): "
                   "put the script in a file and run that");
    free(s);
    free(yaml);
}
END_TEST

/* The command and the env together: within 1 MiB, counting the hooks,
 * which get the job's env too. */
START_TEST(exec_total_limit)
{
    /* The job's command, then a hook with a small command: each followed
     * by eleven arguments of 100 KiB. */
    static const struct {
        const char *head, *error;
    } cases[] = {
        {"jobs:\n  - name: a\n    schedule: \"@daily\"\n    command: [x",
         "j.yaml:4:14: job \"a\": its command and env take 1126509 bytes for exec (each string "
         "with its NUL and pointer); a job takes at most 1048576 (1 MiB)"},
        {"jobs:\n  - name: a\n    schedule: \"@daily\"\n    shell: x\n    env: {A: b}\n"
         "    on_success: [x",
         "j.yaml:5:10: job \"a\": its on_success hook and env take 1126521 bytes for exec (each "
         "string with its NUL and pointer); a job takes at most 1048576 (1 MiB)"},
    };
    size_t part = 100 * 1024, n = 11, cap = n * (part + 64) + 512;
    char *yaml = malloc(cap), *v = malloc(part + 1), err[512];

    ck_assert_ptr_nonnull(yaml);
    ck_assert_ptr_nonnull(v);
    memset(v, 'v', part);
    v[part] = '\0';
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t o = (size_t)snprintf(yaml, cap, "%s", cases[c].head);
        for (size_t i = 0; i < n; i++)
            o += (size_t)snprintf(yaml + o, cap - o, ", %s", v);
        snprintf(yaml + o, cap - o, "]\n");
        ck_assert_ptr_null(load(yaml, err, sizeof err));
        ck_assert_str_eq(err, cases[c].error);
    }
    free(yaml);
    free(v);
}
END_TEST

/* proc_env_build: extra replaces or adds, a bare NAME removes, the later
 * of two wins; in time that does not grow with the product of the two
 * lists (a job with a large env starts as fast as a small one). */
START_TEST(env_build)
{
    char *base[] = {"A=1", "B=2", "C", "KEEP=k", NULL};
    char *extra[] = {"B=3", "A", "D=4", "D=5", "E", "KEEP2=x"};
    char **env = proc_env_build(base, extra, sizeof extra / sizeof extra[0]);
    const char *want[] = {"KEEP=k", "B=3", "D=5", "KEEP2=x"};
    size_t n = 0;

    ck_assert_ptr_nonnull(env);
    for (; env[n] != NULL; n++) {
        ck_assert_uint_lt(n, sizeof want / sizeof want[0]);
        ck_assert_str_eq(env[n], want[n]);
    }
    ck_assert_uint_eq(n, sizeof want / sizeof want[0]);
    proc_env_free(env);

    size_t big = 100000;
    char **many = calloc(big, sizeof *many), buf[32];
    ck_assert_ptr_nonnull(many);
    for (size_t i = 0; i < big; i++) {
        snprintf(buf, sizeof buf, "V%06zu=x", i);
        many[i] = strdup(buf);
    }
    int64_t t0 = tu_now_ms();
    env = proc_env_build(base, many, big);
    int64_t ms = tu_now_ms() - t0;
    ck_assert_ptr_nonnull(env);
    ck_assert_msg(ms < 3000, "an environment of 100,000 variables took %" PRId64 " ms", ms);
    for (n = 0; env[n] != NULL; n++)
        ;
    ck_assert_uint_eq(n, big + 3);
    proc_env_free(env);
    for (size_t i = 0; i < big; i++)
        free(many[i]);
    free(many);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Files */

START_TEST(sample_loads)
{
    char path[4096], err[512];
    struct jobs *j = NULL;
    const struct job *x;
    size_t enabled = 0;

    snprintf(path, sizeof path, "%s/config/jobs.yaml", env_dir("BATON_SOURCE_DIR"));
    ck_assert_msg(jobs_load(path, "UTC", &j, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(j->path, path);
    /* The demo: a few enabled jobs firing every few seconds, one that
     * writes output, one that fails. */
    for (size_t i = 0; i < j->n; i++) {
        enabled += j->v[i].enabled;
        ck_assert_ptr_nonnull(j->v[i].expr);
    }
    ck_assert_uint_ge(enabled, 3);
    x = jobs_find(j, "hello");
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(strstr(x->shell, "echo hello from $BATON_NODE"));
    x = jobs_find(j, "flaky");
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(strstr(x->shell, "exit 1"));
    x = jobs_find(j, "tick");
    ck_assert_ptr_nonnull(x);
    ck_assert(cron_is_every(x->expr));
    ck_assert_int_le(cron_every_seconds(x->expr), 10);
    jobs_free(j);
}
END_TEST

START_TEST(unreadable_file)
{
    char err[512];
    struct jobs *j = (struct jobs *)&err;

    ck_assert_int_eq(jobs_load("/nonexistent/jobs.yaml", "UTC", &j, err, sizeof err), -1);
    ck_assert_ptr_null(j);
    ck_assert_str_eq(err, "/nonexistent/jobs.yaml: cannot open: No such file or directory");
}
END_TEST

static const struct {
    const char *file, *error;
} bad_files[] = {
    {"jobs_alias.yaml", "jobs_alias.yaml:5:10: YAML aliases (*common) are not supported"},
    {"jobs_anchor.yaml", "jobs_anchor.yaml:2:5: YAML anchors (&base) are not supported"},
    {"jobs_argv_empty_prog.yaml",
     "jobs_argv_empty_prog.yaml:4:15: job \"report\": command[0]: the program must not be empty"},
    {"jobs_argv_item_map.yaml",
     "jobs_argv_item_map.yaml:4:34: job \"report\": command[1]: expected a string, got a mapping"},
    {"jobs_argv_string.yaml",
     "jobs_argv_string.yaml:4:14: job \"report\": command: expected a sequence like "
     "[\"/usr/bin/prog\", \"arg\"], got a string (use shell: for a command line)"},
    {"jobs_bad_duration.yaml",
     "jobs_bad_duration.yaml:5:14: job \"report\": timeout: \"soon\": expected a number at "
     "\"soon\" (durations look like 500ms, 10s, 1h30m)"},
    {"jobs_bad_schedule.yaml",
     "jobs_bad_schedule.yaml:4:17: job \"report\": schedule: field 2 (hour) \"25\": value out of "
     "range 0-23"},
    {"jobs_bad_schedule_quoted.yaml",
     "jobs_bad_schedule_quoted.yaml:4:28: job \"report\": schedule: field 5 (day-of-week) "
     "\"FRY\": unknown name (use SUN-SAT)"},
    {"jobs_bad_timezone.yaml",
     "jobs_bad_timezone.yaml:5:15: job \"report\": timezone: unknown time zone \"Europe/Berln\""},
    {"jobs_bad_utf8.yaml",
     "jobs_bad_utf8.yaml:4:22: invalid YAML: the text is not UTF-8 (invalid trailing UTF-8 "
     "octet)"},
    {"jobs_both_command_shell.yaml",
     "jobs_both_command_shell.yaml:5:12: job \"report\": both \"command\" and \"shell\" are set "
     "(keep one)"},
    {"jobs_catchup_range.yaml",
     "jobs_catchup_range.yaml:5:14: job \"report\": catchup: \"8d\" is out of range (0..7d)"},
    {"jobs_catchup_word.yaml",
     "jobs_catchup_word.yaml:5:14: job \"report\": catchup: \"all\": expected a number at \"all\" "
     "(durations look like 500ms, 10s, 1h30m)"},
    {"jobs_concurrency.yaml",
     "jobs_concurrency.yaml:5:18: job \"report\": concurrency: expected one of forbid, allow, "
     "replace, got \"queue\""},
    {"jobs_deep.yaml", "jobs_deep.yaml:1:70: nested more than 64 levels deep"},
    {"jobs_defaults_bad_value.yaml",
     "jobs_defaults_bad_value.yaml:2:12: defaults: retries: \"-1\" is out of range (0..100)"},
    {"jobs_defaults_name.yaml",
     "jobs_defaults_name.yaml:2:3: defaults: \"name\" cannot have a default (set it on each "
     "job)"},
    {"jobs_defaults_scalar.yaml",
     "jobs_defaults_scalar.yaml:1:11: defaults: expected a mapping, got a string"},
    {"jobs_defaults_schedule.yaml",
     "jobs_defaults_schedule.yaml:2:3: defaults: \"schedule\" cannot have a default (set it on "
     "each job)"},
    {"jobs_defaults_unknown.yaml",
     "jobs_defaults_unknown.yaml:2:3: defaults: unknown key \"timout\" (did you mean "
     "\"timeout\"?)"},
    {"jobs_dup_key.yaml", "jobs_dup_key.yaml:5:5: duplicate key \"schedule\" (first at line 3)"},
    {"jobs_dup_name.yaml",
     "jobs_dup_name.yaml:8:11: job \"report\": duplicate name (first at line 2)"},
    {"jobs_empty_argv.yaml",
     "jobs_empty_argv.yaml:4:14: job \"report\": command: empty (give at least the program)"},
    {"jobs_enabled.yaml",
     "jobs_enabled.yaml:5:14: job \"report\": enabled: expected true or false, got \"maybe\""},
    {"jobs_enabled_quoted.yaml",
     "jobs_enabled_quoted.yaml:5:14: job \"report\": enabled: expected true or false, got the "
     "string \"false\" (remove the quotes)"},
    {"jobs_env_key.yaml",
     "jobs_env_key.yaml:6:7: job \"report\": env: invalid variable name \"REPORT-FORMAT\" "
     "(letters, digits and _, not starting with a digit)"},
    {"jobs_env_not_map.yaml",
     "jobs_env_not_map.yaml:5:10: job \"report\": env: expected a mapping of NAME: value, got a "
     "sequence"},
    {"jobs_env_null_value.yaml",
     "jobs_env_null_value.yaml:6:14: job \"report\": env.FORMAT: missing value (write \"\" for "
     "an empty string)"},
    {"jobs_hook_map_key.yaml",
     "jobs_hook_map_key.yaml:5:18: job \"report\": on_failure: unknown key \"command\" (expected "
     "a command like [\"/usr/local/bin/notify\", \"--job\"] or {shell: \"...\"} ([] for none))"},
    {"jobs_hook_scalar.yaml",
     "jobs_hook_scalar.yaml:5:17: job \"report\": on_success: expected a command like "
     "[\"/usr/local/bin/notify\", \"--job\"] or {shell: \"...\"} ([] for none), got a string"},
    {"jobs_hook_timeout_range.yaml",
     "jobs_hook_timeout_range.yaml:3:17: defaults: hook_timeout: \"2h\" is out of range "
     "(100ms..1h)"},
    {"jobs_env_reserved.yaml",
     "jobs_env_reserved.yaml:6:7: job \"report\": env: \"BATON_JOB\": names starting with "
     "BATON_ are reserved for the variables baton sets"},
    {"jobs_jitter_defaults.yaml",
     "jobs_jitter_defaults.yaml:2:11: job \"often\": jitter (from defaults:): 1m30s is not shorter "
     "than the schedule's shortest interval between ticks (30s): a tick's run would begin after "
     "the next tick"},
    {"jobs_jitter_interval.yaml",
     "jobs_jitter_interval.yaml:5:13: job \"sync\": jitter: 5s is not shorter than the "
     "schedule's shortest interval between ticks (5s): a tick's run would begin after the next "
     "tick"},
    {"jobs_jitter_negative.yaml",
     "jobs_jitter_negative.yaml:5:13: job \"sync\": jitter: \"-1s\": expected a number at "
     "\"-1s\" (durations look like 500ms, 10s, 1h30m)"},
    {"jobs_jitter_too_large.yaml",
     "jobs_jitter_too_large.yaml:5:13: job \"sync\": jitter: \"1d1ms\" is out of range (0..1d)"},
    {"jobs_jitter_uneven.yaml",
     "jobs_jitter_uneven.yaml:5:13: job \"edges\": jitter: 1h is not shorter than the schedule's "
     "shortest interval between ticks (1h): a tick's run would begin after the next tick"},
    {"jobs_item_scalar.yaml",
     "jobs_item_scalar.yaml:2:5: job 1: expected a mapping (name:, schedule:, command:), got a "
     "string"},
    {"jobs_missing_command.yaml",
     "jobs_missing_command.yaml:2:5: job \"report\": missing \"command\" or \"shell\" (one is "
     "required)"},
    {"jobs_missing_name.yaml", "jobs_missing_name.yaml:2:5: job 1: missing required key \"name\""},
    {"jobs_missing_schedule.yaml",
     "jobs_missing_schedule.yaml:2:5: job \"report\": missing required key \"schedule\""},
    {"jobs_multi_doc.yaml",
     "jobs_multi_doc.yaml:5:1: a second YAML document; the file must hold only one"},
    {"jobs_name_chars.yaml",
     "jobs_name_chars.yaml:2:11: job 1: name: \"daily report\": use 1-128 letters, digits, "
     "'_', '.' or '-'"},
    {"jobs_name_type.yaml",
     "jobs_name_type.yaml:2:11: job 1: name: expected a string, got a sequence"},
    {"jobs_not_list.yaml",
     "jobs_not_list.yaml:2:3: jobs: expected a sequence of jobs (- name: ...), got a mapping"},
    {"jobs_not_mapping.yaml",
     "jobs_not_mapping.yaml:1:1: expected a mapping with a \"jobs:\" list, got a sequence"},
    {"jobs_retries_range.yaml",
     "jobs_retries_range.yaml:5:14: job \"report\": retries: \"101\" is out of range (0..100)"},
    {"jobs_retries_leading_zero.yaml",
     "jobs_retries_leading_zero.yaml:5:14: job \"report\": retries: \"010\" has a leading zero "
     "(YAML 1.1 reads it as octal): write 10"},
    {"jobs_retries_type.yaml",
     "jobs_retries_type.yaml:5:14: job \"report\": retries: expected an integer, got \"twice\""},
    {"jobs_schedule_macro_unquoted.yaml",
     "jobs_schedule_macro_unquoted.yaml:2:30: invalid YAML: found character that cannot start "
     "any token (while scanning for the next token that starts at line 2); a value that starts "
     "with @ must be quoted (YAML reserves it): schedule: \"@hourly\""},
    {"jobs_schedule_map.yaml",
     "jobs_schedule_map.yaml:4:15: job \"report\": schedule: expected a cron expression like "
     "\"0 7 * * MON-FRI\", got a mapping"},
    {"jobs_schedule_unquoted.yaml",
     "jobs_schedule_unquoted.yaml:4:16: invalid YAML: did not find expected alphabetic or "
     "numeric character (while scanning an alias that starts at line 4); a value that starts "
     "with * must be quoted (* starts a YAML alias): schedule: \"*/5 * * * *\""},
    {"jobs_schedule_year.yaml",
     "jobs_schedule_year.yaml:4:28: job \"report\": schedule: field 6 (day-of-week) \"2026\": "
     "value out of range 0-7; six fields are second minute hour day-of-month month "
     "day-of-week: seconds first, and a year field is not supported"},
    {"jobs_shell_empty.yaml",
     "jobs_shell_empty.yaml:4:12: job \"report\": shell: must not be empty"},
    {"jobs_syntax.yaml",
     "jobs_syntax.yaml:5:1: invalid YAML: found unexpected end of stream (while scanning a quoted "
     "scalar that starts at line 3)"},
    {"jobs_tag.yaml",
     "jobs_tag.yaml:4:12: YAML tags (!!str) are not supported; quote the value instead"},
    {"jobs_timeout_range.yaml",
     "jobs_timeout_range.yaml:5:14: job \"report\": timeout: \"31d\" is out of range (0..30d)"},
    {"jobs_timeout_unit_twice.yaml",
     "jobs_timeout_unit_twice.yaml:5:14: job \"report\": timeout: \"1h1h\": unit \"h\" repeated "
     "at \"1h\" (write each unit once, largest first: 1h30m)"},
    {"jobs_unknown_key.yaml",
     "jobs_unknown_key.yaml:3:5: job \"report\": unknown key \"shedule\" (did you mean "
     "\"schedule\"?)"},
    {"jobs_unknown_top.yaml",
     "jobs_unknown_top.yaml:1:1: unknown key \"job\" (did you mean \"jobs\"?)"},
    {"jobs_user_unknown.yaml",
     "jobs_user_unknown.yaml:5:11: job \"report\": user: unknown user \"no-such-user-here\""},
    {"jobs_workdir_relative.yaml",
     "jobs_workdir_relative.yaml:5:14: job \"report\": workdir: \"srv/app\": must be an absolute "
     "path"},
    {"jobs_pool_undefined.yaml",
     "jobs_pool_undefined.yaml:6:11: job \"report\": pool: \"export\" is not defined (define it "
     "under the top-level pools:, e.g. pools: {export: 2})"},
    {"jobs_pool_zero.yaml", "jobs_pool_zero.yaml:2:12: pools.exports: \"0\" is out of range (1..10000)"},
    {"jobs_pool_bad_name.yaml",
     "jobs_pool_bad_name.yaml:2:3: pools: \"ex ports\": use 1-128 letters, digits, '_', '.' or '-'"},
    {"jobs_max_running_zero.yaml",
     "jobs_max_running_zero.yaml:6:18: job \"report\": max_running: \"0\" is out of range (1..10000)"},
    {"jobs_max_running_forbid.yaml",
     "jobs_max_running_forbid.yaml:5:18: job \"report\": max_running: needs concurrency: allow (with "
     "forbid at most one run of the job is alive in the group already)"},
    {"jobs_all_pool.yaml",
     "jobs_all_pool.yaml:7:11: job \"sweep\": pool: a run_on: all job runs each tick on every node "
     "at once, so a pool's limit across the group cannot hold for it (concurrency: forbid keeps "
     "one run per node); drop pool: here"},
    {"jobs_all_max_running.yaml",
     "jobs_all_max_running.yaml:7:18: job \"sweep\": max_running: a run_on: all job runs each "
     "tick on every node at once, so a limit across the group cannot hold for it (concurrency: "
     "forbid keeps one run per node)"},
    {"jobs_pool_too_many.yaml",
     "jobs_pool_too_many.yaml:1:9: pools: \"exports\": used by more than 256 jobs (job \"j257\" "
     "is the 257th); a claim counts each job of its pool: split it"},
};

START_TEST(bad_file)
{
    char dir[4096], err[1024];
    struct jobs *j = NULL;

    snprintf(dir, sizeof dir, "%s/data/bad", env_dir("BATON_TESTS_DIR"));
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_int_eq(jobs_load(bad_files[_i].file, "UTC", &j, err, sizeof err), -1);
    ck_assert_ptr_null(j);
    ck_assert_str_eq(err, bad_files[_i].error);
}
END_TEST

START_TEST(bad_files_all_listed)
{
    char dir[4096];
    DIR *d;
    struct dirent *e;
    size_t seen = 0;

    snprintf(dir, sizeof dir, "%s/data/bad", env_dir("BATON_TESTS_DIR"));
    d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    for (e = readdir(d); e != NULL; e = readdir(d)) {
        bool listed = false;

        if (strncmp(e->d_name, "jobs_", 5) != 0)
            continue;
        for (size_t i = 0; i < sizeof bad_files / sizeof bad_files[0]; i++)
            listed = listed || strcmp(bad_files[i].file, e->d_name) == 0;
        ck_assert_msg(listed, "%s has no expected error in check_jobs.c", e->d_name);
        seen++;
    }
    closedir(d);
    ck_assert_uint_eq(seen, sizeof bad_files / sizeof bad_files[0]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("jobs");
    TCase *tc = tcase_create("jobs");
    size_t nkeys = jobs_schema()->n;

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, empty_sets);
    tcase_add_test(tc, minimal_job_defaults);
    tcase_add_test(tc, full_job);
    tcase_add_test(tc, defaults_section);
    tcase_add_test(tc, zones);
    tcase_add_test(tc, run_on_values);
    tcase_add_test(tc, run_on_over_a_quorum_is_refused_where_it_is_written);
    tcase_add_loop_test(tc, key_row, 0, (int)nkeys);
    tcase_add_test(tc, hook_layers);
    tcase_add_test(tc, hook_errors);
    tcase_add_test(tc, set_hash);
    tcase_add_test(tc, fingerprint_normalized);
    tcase_add_test(tc, fingerprint_unambiguous);
    tcase_add_test(tc, schedule_columns);
    tcase_add_test(tc, names_and_duplicates);
    tcase_add_test(tc, env_rules);
    tcase_add_test(tc, users);
    tcase_add_test(tc, too_many_jobs);
    tcase_add_test(tc, env_large);
    tcase_add_test(tc, exec_string_limits);
    tcase_add_test(tc, exec_total_limit);
    tcase_add_test(tc, env_build);
    tcase_add_test(tc, sample_loads);
    tcase_add_test(tc, unreadable_file);
    tcase_add_loop_test(tc, bad_file, 0, (int)(sizeof bad_files / sizeof bad_files[0]));
    tcase_add_test(tc, bad_files_all_listed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
