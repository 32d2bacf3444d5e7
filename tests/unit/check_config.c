/* check_config.c -- baton.yaml (src/conf/config.c) and the YAML layer
 * under both config files (yamlx.c).
 *
 * Table-driven where there is a table: every row of the options table
 * (default applied, wrong types, bounds), and every bad file in
 * tests/data/bad/config_*.yaml with its exact "file:line:col: message".
 * Needs BATON_TESTS_DIR and BATON_SOURCE_DIR (set by ctest).
 */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "schema.h"
#include "yamlx.h"
#include "testutil.h"

static const char *env_dir(const char *var)
{
    const char *d = getenv(var);

    ck_assert_msg(d != NULL && *d != '\0', "%s is not set (run the suite through ctest)", var);
    return d;
}

/* Loads yaml as "t.yaml"; returns the config or NULL with the error in err. */
static struct config *load(const char *yaml, char *err, size_t errlen)
{
    struct config *c = NULL;
    int r = config_load_buffer("t.yaml", yaml, strlen(yaml), &c, err, errlen);

    ck_assert_int_eq(r == 0, c != NULL);
    if (r != 0)
        ck_assert_msg(strncmp(err, "t.yaml:", 7) == 0, "error without the file name: %s", err);
    return c;
}

static struct config *load_ok(const char *yaml)
{
    char err[512];
    struct config *c = load(yaml, err, sizeof err);

    ck_assert_msg(c != NULL, "unexpected error for <<%s>>: %s", yaml, err);
    return c;
}

/* Asserts that yaml is rejected with exactly `expected`. */
static void load_err(const char *yaml, const char *expected)
{
    char err[512];
    struct config *c = load(yaml, err, sizeof err);

    ck_assert_msg(c == NULL, "accepted <<%s>>", yaml);
    ck_assert_str_eq(err, expected);
}

/* ------------------------------------------------------------------------ */
/* Defaults and empty files */

static void assert_defaults(const struct config *c)
{
    char host[256], prefix[300];

    ck_assert_str_eq(c->path, "t.yaml");
    ck_assert_int_eq(gethostname(host, sizeof host), 0);
    /* The host name alone (stable across restarts), with any character a
     * node name may not hold replaced by '-'. */
    snprintf(prefix, sizeof prefix, "%.128s", host);
    for (char *p = prefix; *p != '\0'; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("_.-", *p) != NULL))
            *p = '-';
    ck_assert_str_eq(c->node, prefix);
    ck_assert_str_eq(c->redis, "redis://127.0.0.1:6379/0");
    ck_assert_str_eq(c->group, "default");
    ck_assert_int_eq(c->lease_ttl_ms, 10000);
    ck_assert_int_eq(c->lease_renew_ms, 3333);
    ck_assert_int_eq(c->poll_ms, 5000);
    ck_assert_int_eq(c->shutdown_grace_ms, 30000);
    ck_assert_int_eq(c->redis_timeout_ms, 1000);
    ck_assert_str_eq(c->jobs_path, "jobs.yaml");
    ck_assert_str_eq(c->timezone, "UTC");
    ck_assert_int_eq(c->log_level, LOG_INFO);
    ck_assert_int_eq(c->log_format, LOG_FORMAT_AUTO);
    ck_assert_int_eq(c->history_len, 100);
    ck_assert_int_eq(c->output_bytes, 16384);
    ck_assert(!job_cmd_set(&c->hook_on_failure));
    ck_assert(!job_cmd_set(&c->hook_on_success));
    ck_assert_int_eq(c->hook_timeout_ms, 30000);
}

/* An empty file, only comments, a lone `---` or a null document: all
 * defaults. */
START_TEST(empty_files_mean_defaults)
{
    static const char *const empties[] = {
        "",        "\n\n",   "# nothing here\n", "---\n",
        "--- ~\n", "null\n", "---\n...\n",       "\xef\xbb\xbf# BOM\n"};

    for (size_t i = 0; i < sizeof empties / sizeof empties[0]; i++) {
        struct config *c = load_ok(empties[i]);

        assert_defaults(c);
        config_free(c);
    }
}
END_TEST

/* Sections left empty (everything commented out) are allowed. */
START_TEST(empty_sections)
{
    struct config *c = load_ok("lease:\n  # ttl: 5s\nlog:\n");

    ck_assert_int_eq(c->lease_ttl_ms, 10000);
    ck_assert_int_eq(c->log_level, LOG_INFO);
    config_free(c);
}
END_TEST

START_TEST(all_keys_set)
{
    struct config *c = load_ok("node: web-1\n"
                               "redis: \"redis://:pw@cache.internal:6380/2\"\n"
                               "group: payments.eu-1\n"
                               "lease: {ttl: 30s, renew: 5s}\n"
                               "poll: 2s\n"
                               "shutdown_grace: 1m30s\n"
                               "redis_timeout: 250ms\n"
                               "jobs: /etc/baton/payments-jobs.yaml\n"
                               "timezone: UTC\n"
                               "log:\n  level: debug\n"
                               "history: 500\n");

    ck_assert_str_eq(c->node, "web-1");
    ck_assert_str_eq(c->redis, "redis://:pw@cache.internal:6380/2");
    ck_assert_str_eq(c->group, "payments.eu-1");
    ck_assert_int_eq(c->lease_ttl_ms, 30000);
    ck_assert_int_eq(c->lease_renew_ms, 5000);
    ck_assert_int_eq(c->poll_ms, 2000);
    ck_assert_int_eq(c->shutdown_grace_ms, 90000);
    ck_assert_int_eq(c->redis_timeout_ms, 250);
    ck_assert_str_eq(c->jobs_path, "/etc/baton/payments-jobs.yaml");
    ck_assert_int_eq(c->log_level, LOG_DEBUG);
    ck_assert_int_eq(c->history_len, 500);
    config_free(c);
}
END_TEST

/* lease.renew defaults to a third of whatever ttl is. */
START_TEST(renew_follows_ttl)
{
    struct config *c = load_ok("lease:\n  ttl: 3s\nredis_timeout: 500ms\n");

    ck_assert_int_eq(c->lease_renew_ms, 1000);
    config_free(c);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The options table, row by row */

/* Writes `key: value` nested as the dotted key says into buf; returns the
 * expected 1-based line and column of the value. */
static void nested_yaml(const char *key, const char *value, char *buf, size_t len, int *line,
                        int *col)
{
    size_t o = 0;
    int depth = 0;
    const char *seg = key;

    buf[0] = '\0';
    for (;;) {
        const char *dot = strchr(seg, '.');
        int n = dot != NULL ? (int)(dot - seg) : (int)strlen(seg);

        o += (size_t)snprintf(buf + o, len - o, "%*s%.*s:", 2 * depth, "", n, seg);
        if (dot == NULL) {
            *line = depth + 1;
            *col = 2 * depth + n + 3;
            snprintf(buf + o, len - o, " %s\n", value);
            return;
        }
        o += (size_t)snprintf(buf + o, len - o, "\n");
        depth++;
        seg = dot + 1;
    }
}

/* Sets one option to value; returns the error (or "" when accepted) and, when
 * accepted and out != NULL, the config. */
static void try_option(const struct schema_field *o, const char *value, char *err, size_t errlen,
                       struct config **out, int *line, int *col)
{
    char yaml[8192];
    struct config *c;

    nested_yaml(o->key, value, yaml, sizeof yaml, line, col);
    c = load(yaml, err, errlen);
    if (c != NULL)
        err[0] = '\0';
    if (out != NULL)
        *out = c;
    else
        config_free(c);
}

static void assert_error_at(const char *err, int line, int col, const char *key,
                            const char *contains)
{
    char prefix[128];

    snprintf(prefix, sizeof prefix, "t.yaml:%d:%d: %s", line, col, key);
    ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0, "expected <%s...>, got <%s>", prefix,
                  err);
    ck_assert_msg(strstr(err, contains) != NULL, "expected <%s> in <%s>", contains, err);
}

START_TEST(option_row)
{
    const struct schema_field *o = &config_schema()->fields[_i];
    void *field;
    struct config *c = load_ok("");
    char err[512], val[8300];
    int line, col;

    ck_assert_ptr_nonnull(o->key);
    ck_assert_ptr_nonnull(o->doc);
    ck_assert_msg(o->def != NULL || (o->def_fn != NULL && o->def_doc != NULL) ||
                      (o->type == SCHEMA_NODE && o->def_doc != NULL),
                  "%s: no default", o->key);
    if (o->type == SCHEMA_NODE) { /* hook commands: their own test below */
        config_free(c);
        return;
    }

    /* 1. Absent: the default applies (as the text of the table says). */
    field = (char *)c + o->offset;
    if (o->def != NULL) {
        int64_t v;
        char msg[256];

        switch (o->type) {
        case SCHEMA_STRING:
        case SCHEMA_PATH: ck_assert_str_eq(*(char **)field, o->def); break;
        case SCHEMA_DURATION:
            ck_assert_int_eq(yamlx_parse_duration(o->def, &v, msg, sizeof msg), 0);
            ck_assert_int_eq(*(int64_t *)field, v);
            break;
        case SCHEMA_INT:
            ck_assert_int_eq(yamlx_parse_int(o->def, &v, msg, sizeof msg), 0);
            ck_assert_int_eq(*(int64_t *)field, v);
            break;
        case SCHEMA_ENUM: ck_assert_str_eq(o->names[*(int *)field], o->def); break;
        case SCHEMA_BOOL: ck_assert(*(bool *)field == (strcmp(o->def, "true") == 0)); break;
        default: ck_abort_msg("%s: baton.yaml has no option of this type", o->key);
        }
    }
    config_free(c);

    /* 2. Wrong types: a mapping, a sequence, nothing. */
    try_option(o, "{a: 1}", err, sizeof err, NULL, &line, &col);
    assert_error_at(err, line, col, o->key, ": expected ");
    ck_assert_ptr_nonnull(strstr(err, "got a mapping"));
    if (o->set_node == NULL) { /* redis: a list is a quorum (redis_urls below) */
        try_option(o, "[1, 2]", err, sizeof err, NULL, &line, &col);
        assert_error_at(err, line, col, o->key, "got a sequence");
    }
    /* An empty value sits right after the colon. */
    try_option(o, "", err, sizeof err, NULL, &line, &col);
    assert_error_at(err, line, col - 1, o->key, "missing value");

    /* 3. Bounds. */
    switch (o->type) {
    case SCHEMA_DURATION:
    case SCHEMA_INT: {
        const char *unit = o->type == SCHEMA_DURATION ? "ms" : "";
        int64_t edges[2] = {o->min, o->max};

        ck_assert_int_le(o->min, o->max);
        /* Just outside: rejected at the value (below 0 is not even a
         * duration, which is fine as long as it is rejected there). */
        snprintf(val, sizeof val, "%" PRId64 "%s", o->min - 1, unit);
        try_option(o, val, err, sizeof err, NULL, &line, &col);
        assert_error_at(err, line, col, o->key, o->min - 1 < 0 && *unit ? "" : "is out of range");
        snprintf(val, sizeof val, "%" PRId64 "%s", o->max + 1, unit);
        try_option(o, val, err, sizeof err, NULL, &line, &col);
        assert_error_at(err, line, col, o->key, "is out of range");
        /* On the edges: no range error (a relation between options may still
         * object, and says so in its own words). */
        for (int e = 0; e < 2; e++) {
            snprintf(val, sizeof val, "%" PRId64 "%s", edges[e], unit);
            try_option(o, val, err, sizeof err, &c, &line, &col);
            ck_assert_msg(strstr(err, "out of range") == NULL, "%s: %s", val, err);
            if (c != NULL)
                ck_assert_int_eq(*(int64_t *)((char *)c + o->offset), edges[e]);
            config_free(c);
        }
        /* Not a number at all. */
        try_option(o, "many", err, sizeof err, NULL, &line, &col);
        assert_error_at(err, line, col, o->key, "\"many\"");
        /* Lenient forms that hide a mistake: an integer in quotes (a
         * string in YAML) or with a leading zero (octal in YAML 1.1), a
         * duration that repeats a unit or puts a smaller one first. */
        if (o->type == SCHEMA_INT) {
            char want[300], num[64];

            snprintf(num, sizeof num, "\"%" PRId64 "\"", o->max);
            try_option(o, num, err, sizeof err, NULL, &line, &col);
            snprintf(want, sizeof want, ": expected %s, got the string %s (remove the quotes)",
                     o->expected != NULL ? o->expected : "an integer", num);
            assert_error_at(err, line, col, o->key, want);
            snprintf(num, sizeof num, "0%" PRId64, o->max);
            try_option(o, num, err, sizeof err, NULL, &line, &col);
            snprintf(want, sizeof want,
                     ": \"%s\" has a leading zero (YAML 1.1 reads it as octal): write %" PRId64,
                     num, o->max);
            assert_error_at(err, line, col, o->key, want);
        } else {
            try_option(o, "1s1s", err, sizeof err, NULL, &line, &col);
            assert_error_at(err, line, col, o->key,
                            ": \"1s1s\": unit \"s\" repeated at \"1s\" (write each unit once, "
                            "largest first: 1h30m)");
            try_option(o, "500ms1s", err, sizeof err, NULL, &line, &col);
            assert_error_at(err, line, col, o->key,
                            ": \"500ms1s\": unit \"s\" after a smaller one at \"1s\" (write each "
                            "unit once, largest first: 1h30m)");
        }
        break;
    }
    case SCHEMA_STRING:
    case SCHEMA_PATH: {
        size_t big = (size_t)o->max + 1;

        ck_assert_int_ge(o->min, 1);
        try_option(o, "\"\"", err, sizeof err, NULL, &line, &col);
        assert_error_at(err, line, col, o->key, "must not be empty");
        ck_assert_uint_lt(big + 2, sizeof val);
        memset(val, 'a', big);
        val[big] = '\0';
        try_option(o, val, err, sizeof err, NULL, &line, &col);
        assert_error_at(err, line, col, o->key, "too long");
        break;
    }
    case SCHEMA_ENUM:
        for (int i = 0; o->names[i] != NULL; i++) {
            try_option(o, o->names[i], err, sizeof err, &c, &line, &col);
            ck_assert_msg(c != NULL, "%s", err);
            ck_assert_int_eq(*(int *)((char *)c + o->offset), i);
            config_free(c);
        }
        try_option(o, "bogus", err, sizeof err, NULL, &line, &col);
        assert_error_at(err, line, col, o->key, "expected one of");
        break;
    case SCHEMA_BOOL: /* true alone may break a relation (http.control: its tokens) */
        try_option(o, "false", err, sizeof err, &c, &line, &col);
        ck_assert_msg(c != NULL, "%s", err);
        ck_assert(!*(bool *)((char *)c + o->offset));
        config_free(c);
        try_option(o, "bogus", err, sizeof err, NULL, &line, &col);
        assert_error_at(err, line, col, o->key, "\"bogus\"");
        break;
    default: ck_abort_msg("%s: baton.yaml has no option of this type", o->key);
    }

    /* 4. The reference and the effective configuration show the row. */
    {
        char *text = NULL, needle[128];
        size_t tlen = 0;
        FILE *f = open_memstream(&text, &tlen);

        config_write_reference(f);
        fclose(f);
        snprintf(needle, sizeof needle, "| `%s` | ", o->key);
        ck_assert_ptr_nonnull(strstr(text, needle));
        free(text);
        c = load_ok("");
        f = open_memstream(&text, &tlen);
        config_write_effective(c, f);
        fclose(f);
        snprintf(needle, sizeof needle, "\n%s: ", o->key);
        ck_assert_msg(strstr(text, needle) != NULL ||
                          strncmp(text, needle + 1, strlen(needle + 1)) == 0,
                      "%s missing from the effective configuration", o->key);
        free(text);
        config_free(c);
    }
}
END_TEST

/* history: N is short for history: {runs: N}; the section holds both. */
START_TEST(history_section)
{
    struct config *c = load_ok("history: 7\n");
    char err[512];
    int line, col;

    ck_assert_int_eq(c->history_len, 7);
    ck_assert_int_eq(c->output_bytes, 16384);
    config_free(c);
    c = load_ok("history:\n  runs: 9\n  output_bytes: 0\n");
    ck_assert_int_eq(c->history_len, 9);
    ck_assert_int_eq(c->output_bytes, 0);
    config_free(c);
    c = load_ok("history: {output_bytes: 1048576}\n");
    ck_assert_int_eq(c->history_len, 100);
    ck_assert_int_eq(c->output_bytes, 1048576);
    config_free(c);
    /* The shorthand's errors name the section as written. */
    c = load("history: lots\n", err, sizeof err);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(err, "t.yaml:1:10: history: expected an integer, got \"lots\"");
    c = load("history: {runs: 0}\n", err, sizeof err);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(err, "t.yaml:1:17: history.runs: \"0\" is out of range (1..100000)");
    c = load("history: {run: 3}\n", err, sizeof err);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(err, "t.yaml:1:11: unknown key \"run\" (did you mean \"runs\"?)");
    /* A section without a shorthand still wants a mapping. */
    c = load("hooks: x\n", err, sizeof err);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(err, "t.yaml:1:8: hooks: expected a mapping, got a string");
    (void)line;
    (void)col;
}
END_TEST

/* hooks.on_failure / on_success: a command, as in jobs.yaml. */
START_TEST(hook_commands)
{
    struct config *c = load_ok("hooks:\n"
                               "  on_failure: [/usr/local/bin/notify, \"--to\", \"ops team\"]\n"
                               "  on_success: {shell: \"echo \\\"done\\\" $BATON_JOB\"}\n"
                               "  timeout: 5s\n");
    char *text = NULL, err[512];
    size_t len = 0;
    FILE *f;

    ck_assert_str_eq(c->hook_on_failure.argv[2], "ops team");
    ck_assert_str_eq(c->hook_on_success.shell, "echo \"done\" $BATON_JOB");
    ck_assert_int_eq(c->hook_timeout_ms, 5000);
    f = open_memstream(&text, &len);
    config_write_effective(c, f);
    fclose(f);
    ck_assert_msg(strstr(text, "\nhooks.on_failure: [\"/usr/local/bin/notify\",\"--to\",\"ops "
                               "team\"]\n") != NULL,
                  "%s", text);
    ck_assert_msg(strstr(text, "\nhooks.on_success: {shell: \"echo \\\"done\\\" $BATON_JOB\"}\n") !=
                      NULL,
                  "%s", text);
    ck_assert_msg(strstr(text, "\nhooks.timeout: 5s\n") != NULL, "%s", text);
    free(text);
    /* What the effective configuration says is read back the same. */
    {
        char *again = NULL;
        f = open_memstream(&again, &len);
        fprintf(f, "hooks:\n  on_failure: [\"/usr/local/bin/notify\",\"--to\",\"ops team\"]\n");
        fclose(f);
        struct config *d = load_ok(again);
        ck_assert_str_eq(d->hook_on_failure.argv[2], "ops team");
        config_free(d);
        free(again);
    }
    config_free(c);
    c = load("hooks: {on_success: \"notify\"}\n", err, sizeof err);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(err,
                     "t.yaml:1:21: hooks.on_success: expected a command like "
                     "[\"/usr/local/bin/notify\", \"--job\"] or {shell: \"...\"} ([] for none), "
                     "got a string");
    c = load("hooks: {on_failure: [], on_success: []}\n", err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    ck_assert(!job_cmd_set(&c->hook_on_failure));
    config_free(c);
}
END_TEST

/* labels and capacity: a node's for the fleet (labels.h); the effective
 * configuration shows the labels; bad ones at their place. */
START_TEST(labels_and_capacity)
{
    struct config *c = load_ok("");
    ck_assert_ptr_nonnull(c->labels);
    ck_assert_ptr_null(c->labels[0]);
    ck_assert_int_eq(c->capacity, 4);
    config_free(c);
    c = load_ok("labels: [reports, ssd.fast]\ncapacity: 0\n");
    ck_assert_str_eq(c->labels[0], "reports");
    ck_assert_str_eq(c->labels[1], "ssd.fast");
    ck_assert_ptr_null(c->labels[2]);
    ck_assert_int_eq(c->capacity, 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    config_write_effective(c, f);
    fclose(f);
    ck_assert_msg(strstr(text, "\nlabels: [\"reports\", \"ssd.fast\"]\n") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "\ncapacity: 0\n") != NULL, "%s", text);
    free(text);
    config_free(c);
    load_err("labels: reports\n",
             "t.yaml:1:9: labels: expected a sequence of labels like [reports, ssd], got a string");
    load_err("labels: [a, \"b c\"]\n",
             "t.yaml:1:13: labels[1]: a label is 1-64 letters, digits, '_', '.' or '-'");
    load_err("labels: [a, a]\n", "t.yaml:1:13: labels[1]: \"a\" is given twice");
    load_err("capacity: -1\n", "t.yaml:1:11: capacity: \"-1\" is out of range (0..1000000)");
}
END_TEST

/* http.allowed_hosts: a name or a list, kept comma-separated; the
 * effective configuration reads back the same; bad names at their place. */
START_TEST(http_allowed_hosts)
{
    struct config *c = load_ok("");
    char *text = NULL, err[512];
    size_t len = 0;
    FILE *f;

    ck_assert_str_eq(c->http_allowed_hosts, "");
    config_free(c);
    c = load_ok("http: {allowed_hosts: baton.example}\n");
    ck_assert_str_eq(c->http_allowed_hosts, "baton.example");
    config_free(c);
    c = load_ok("http:\n  allowed_hosts: [baton.example, \"*.corp.example\"]\n");
    ck_assert_str_eq(c->http_allowed_hosts, "baton.example,*.corp.example");
    f = open_memstream(&text, &len);
    config_write_effective(c, f);
    fclose(f);
    const char *line =
        strstr(text, "\nhttp.allowed_hosts: [\"baton.example\", \"*.corp.example\"]\n");
    ck_assert_msg(line != NULL, "%s", text);
    char again[128]; /* read back */
    snprintf(again, sizeof again, "http: {allowed_hosts: %.*s}\n", (int)strcspn(line + 21, "\n"),
             line + 21);
    config_free(c);
    c = load_ok(again);
    ck_assert_str_eq(c->http_allowed_hosts, "baton.example,*.corp.example");
    config_free(c);
    free(text);
    c = load_ok("http: {allowed_hosts: []}\n");
    ck_assert_str_eq(c->http_allowed_hosts, "");
    config_free(c);
    c = load("http:\n  allowed_hosts: [a.example, \"b.example:80\"]\n", err, sizeof err);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(err, "t.yaml:2:30: http.allowed_hosts: \"b.example:80\": a host name "
                              "without a port") == err,
                  "%s", err);
    c = load("http: {allowed_hosts: {a: 1}}\n", err, sizeof err);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(err, "t.yaml:1:23: http.allowed_hosts: expected a host name") == err, "%s",
                  err);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Lease arithmetic and other relations */

START_TEST(lease_relations)
{
    struct config *c;

    /* The boundary: ttl == 2 x renew + redis_timeout is accepted... */
    c = load_ok("lease: {ttl: 3s, renew: 1s}\nredis_timeout: 1s\n");
    config_free(c);
    /* ...one millisecond less is not, and the error points at renew. */
    load_err("lease: {ttl: 2999ms, renew: 1s}\nredis_timeout: 1s\n",
             "t.yaml:1:29: lease.ttl (2s999ms) must be at least 2 x lease.renew (1s) + "
             "redis_timeout (1s) = 3s, so that a renewal that times out can be retried before "
             "the lease runs out");
    /* renew equal to ttl can never work. */
    load_err("lease:\n  ttl: 1s\n  renew: 1s\n",
             "t.yaml:3:10: lease.ttl (1s) must be at least 2 x lease.renew (1s) + "
             "redis_timeout (1s) = 3s, so that a renewal that times out can be retried before "
             "the lease runs out");
    /* Only ttl set: the default renew (ttl/3) is too long with a 1s timeout. */
    load_err("lease:\n  ttl: 1s\n",
             "t.yaml:2:8: lease.ttl (1s) must be at least 2 x lease.renew (333ms) + "
             "redis_timeout (1s) = 1s666ms, so that a renewal that times out can be retried "
             "before the lease runs out");
    /* ...which a shorter timeout fixes. */
    c = load_ok("lease:\n  ttl: 1s\nredis_timeout: 300ms\n");
    ck_assert_int_eq(c->lease_renew_ms, 333);
    config_free(c);
    /* Only redis_timeout set: the error points at it. */
    load_err("redis_timeout: 5s\n",
             "t.yaml:1:16: lease.ttl (10s) must be at least 2 x lease.renew (3s333ms) + "
             "redis_timeout (5s) = 11s666ms, so that a renewal that times out can be retried "
             "before the lease runs out");
    /* renew 0 is below its bound. */
    load_err("lease:\n  renew: 0\n", "t.yaml:2:10: lease.renew: \"0\" is out of range (10ms..5m)");
    /* poll must be at least the Redis timeout... */
    load_err("poll: 1s\nredis_timeout: 1500ms\nlease: {ttl: 1m}\n",
             "t.yaml:1:7: poll (1s) must be at least redis_timeout (1s500ms)");
    c = load_ok("poll: 1500ms\nredis_timeout: 1500ms\nlease: {ttl: 1m}\n");
    config_free(c);
    /* ...and at least 1s whatever the timeout. */
    load_err("poll: 999ms\nredis_timeout: 100ms\n",
             "t.yaml:1:7: poll: \"999ms\" is out of range (1s..1h)");
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Values with their own grammar */

/* redis: as a list of plain URLs is one redis-quorum:// URL: credentials
 * (escaped again), database and TLS parameters come along once. */
START_TEST(redis_list)
{
    struct config *c = load_ok("redis:\n  - \"redis://u:p%40ss@a:7001/2\"\n"
                               "  - \"redis://u:p%40ss@b:7002/2\"\n"
                               "  - \"redis://u:p%40ss@c/2\"\n");
    ck_assert_str_eq(c->redis, "redis-quorum://u:p%40ss@a:7001,b:7002,c:6379/2");
    config_free(c);
    c = load_ok("redis: [\"rediss://a?ca=/etc/x%20y.pem\", \"rediss://b?ca=/etc/x%20y.pem\", "
                "\"rediss://[::1]:7000?ca=/etc/x%20y.pem\"]\n");
    ck_assert_str_eq(c->redis, "rediss-quorum://a:6379,b:6379,[::1]:7000/0?ca=/etc/x%20y.pem");
    config_free(c);
    /* a user without a password keeps its colon ("u@" is a password) */
    c = load_ok("redis: [\"redis://u:@a\", \"redis://u:@b\", \"redis://u:@c\"]\n");
    ck_assert_str_eq(c->redis, "redis-quorum://u:@a:6379,b:6379,c:6379/0");
    config_free(c);
    c = load_ok("redis: [redis://only:7000/1]\n"); /* one: that server */
    ck_assert_str_eq(c->redis, "redis://only:7000/1");
    config_free(c);
    load_err("redis: []\n", "t.yaml:1:8: redis: a list is a Redlock quorum of 3 to 9 masters (an "
                            "odd number); this one has 0");
    load_err("redis: [redis://a, [redis://b], redis://c]\n",
             "t.yaml:1:20: redis: expected a redis:// URL, got a sequence");
    load_err("redis: [redis://a, \"redis://:x@b\", redis://c]\n",
             "t.yaml:1:20: redis: redis://:***@b:6379/0: not the same credentials as the first "
             "master (redis://a:6379/0): the masters of a quorum share scheme, credentials, "
             "database and TLS parameters");
}
END_TEST

START_TEST(redis_urls)
{
    static const char *const good[] = {
        "redis://127.0.0.1:6379/0",
        "redis://localhost",
        "redis://h:7000/3",
        "\"redis://:s3cret@h:1/0\"",
        "redis://s3cret@h",
        "\"redis://alice:p%40ss@h:6380/2\"",
        "\"redis://[::1]:6390/1\"",
        "\"redis://u:p:q@h\"",
        "redis://h/",
        "unix:///run/redis.sock",
        "\"unix:///tmp/r.sock?db=4&user=bob&password=x%26y\"",
    };
    static const struct {
        const char *url, *msg;
    } bad[] = {
        {"http://h", "unsupported scheme \"http://\" (use redis://, rediss://, unix://, "
                     "redis-sentinel://, rediss-sentinel://, redis-cluster://, rediss-cluster://, "
                     "redis-quorum:// or rediss-quorum://)"},
        {"h:6379", "expected a URL like redis://host:6379/0 or unix:///run/redis/redis.sock"},
        {"redis://", "missing host (redis://host:6379/0)"},
        {"\"redis://:pw@\"", "missing host (redis://host:6379/0)"},
        {"redis://h:0", "invalid port (1..65535)"},
        {"redis://h:65536", "invalid port (1..65535)"},
        {"redis://h:x", "invalid port (1..65535)"},
        {"redis://h/x", "invalid database number after the host (redis://host:6379/0)"},
        {"\"redis://h/1?a=b\"", "redis:// URLs take no query (use /DB for the database; TLS "
                                "parameters need rediss://)"},
        {"\"redis://[::1\"", "invalid IPv6 address (write redis://[::1]:6379)"},
        {"\"redis://[::g]\"", "invalid IPv6 address (write redis://[::1]:6379)"},
        {"\"redis://u:p%zz@h\"", "bad percent-escape in the user or password"},
        {"\"redis://u%00@h\"", "bad percent-escape in the user or password"},
        {"\"redis://h o\"", "invalid character in the host name"},
        {"unix://relative.sock", "the socket path must be absolute (unix:///run/redis/redis.sock)"},
        {"\"unix:///s?bogus=1\"", "unknown URL parameter \"bogus\" (use db=, user=, password=)"},
        {"\"unix:///s?db=x\"", "invalid database number in ?db="},
        {"\"unix:///run/redis.sock?password=%zz\"", "bad percent-escape"},
    };
    char yaml[256], want[512];

    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        struct config *c;

        snprintf(yaml, sizeof yaml, "redis: %s\n", good[i]);
        c = load_ok(yaml);
        config_free(c);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(yaml, sizeof yaml, "redis: %s\n", bad[i].url);
        snprintf(want, sizeof want, "t.yaml:1:8: redis: invalid URL: %s", bad[i].msg);
        load_err(yaml, want);
    }
}
END_TEST

/* A password in the URL never appears in an error or in `baton check`. */
START_TEST(redis_password_hidden)
{
    char err[512], *text = NULL;
    size_t len = 0;
    struct config *c = load("redis: \"redis://u:hunter2@h:99999\"\n", err, sizeof err);
    FILE *f;

    ck_assert_ptr_null(c);
    ck_assert_ptr_null(strstr(err, "hunter2"));
    c = load_ok("redis: \"redis://u:hunter2@h:1/0\"\n");
    f = open_memstream(&text, &len);
    config_write_effective(c, f);
    fclose(f);
    ck_assert_ptr_null(strstr(text, "hunter2"));
    ck_assert_ptr_nonnull(strstr(text, "redis: redis://u:***@h:1/0\n"));
    free(text);
    config_free(c);
    c = load_ok("redis: \"unix:///run/r.sock?db=2&password=hunter2&user=u\"\n");
    f = open_memstream(&text, &len);
    config_write_effective(c, f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(text, "redis: unix:///run/r.sock?db=2&user=u&password=***\n"));
    free(text);
    config_free(c);
}
END_TEST

START_TEST(names)
{
    static const char *const good_groups[] = {"a", "payments", "eu-1.pay_ments", "A9"};
    static const char *const bad_groups[] = {"\"a b\"", "\"a{b}\"", "\"a:b\"", "\"caf\xc3\xa9\""};
    char yaml[128];

    for (size_t i = 0; i < sizeof good_groups / sizeof good_groups[0]; i++) {
        struct config *c;

        snprintf(yaml, sizeof yaml, "group: %s\n", good_groups[i]);
        c = load_ok(yaml);
        config_free(c);
    }
    for (size_t i = 0; i < sizeof bad_groups / sizeof bad_groups[0]; i++) {
        char err[512];
        struct config *c;

        snprintf(yaml, sizeof yaml, "group: %s\n", bad_groups[i]);
        c = load(yaml, err, sizeof err);
        ck_assert_ptr_null(c);
        ck_assert_msg(strstr(err, "may contain only letters, digits and _ . -") != NULL, "%s", err);
    }
    load_err("node: \"web 1\"\n",
             "t.yaml:1:7: node: \"web 1\": may contain only letters, digits and _ . : -");
}
END_TEST

/* `jobs:` is relative to the config file's directory. */
START_TEST(jobs_path_resolution)
{
    static const struct {
        const char *name, *yaml, *want;
    } rows[] = {
        {"baton.yaml", "", "jobs.yaml"},
        {"/etc/baton/baton.yaml", "", "/etc/baton/jobs.yaml"},
        {"conf/baton.yaml", "", "conf/jobs.yaml"},
        {"/baton.yaml", "", "/jobs.yaml"},
        {"/etc/baton/baton.yaml", "jobs: sub/j.yaml\n", "/etc/baton/sub/j.yaml"},
        {"/etc/baton/baton.yaml", "jobs: /srv/jobs.yaml\n", "/srv/jobs.yaml"},
        {"/etc/baton/baton.yaml", "jobs: ../j.yaml\n", "/etc/baton/../j.yaml"},
    };

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct config *c = NULL;
        char err[512];

        ck_assert_int_eq(config_load_buffer(rows[i].name, rows[i].yaml, strlen(rows[i].yaml), &c,
                                            err, sizeof err),
                         0);
        ck_assert_str_eq(c->jobs_path, rows[i].want);
        ck_assert_str_eq(c->path, rows[i].name);
        config_free(c);
    }
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Files */

START_TEST(sample_loads)
{
    char path[4096], want[4096], err[512];
    struct config *c = NULL;

    snprintf(path, sizeof path, "%s/config/baton.yaml", env_dir("BATON_SOURCE_DIR"));
    ck_assert_msg(config_load(path, &c, err, sizeof err) == 0, "%s", err);
    snprintf(want, sizeof want, "%s/config/jobs.yaml", env_dir("BATON_SOURCE_DIR"));
    ck_assert_str_eq(c->jobs_path, want);
    ck_assert_str_eq(c->path, path);
    config_free(c);
}
END_TEST

START_TEST(unreadable_files)
{
    char err[512];
    struct config *c = (struct config *)&err; /* must be reset to NULL */
    char dir[] = "/tmp/check_config.XXXXXX";

    ck_assert_int_eq(config_load("/nonexistent/baton.yaml", &c, err, sizeof err), -1);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(err, "/nonexistent/baton.yaml: cannot open: No such file or directory");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(config_load(dir, &c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, ": cannot read: is a directory") != NULL, "%s", err);
    rmdir(dir);
}
END_TEST

START_TEST(default_path)
{
    char dir[] = "/tmp/check_config.XXXXXX";
    FILE *f;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(chdir(dir), 0);
    /* Without ./baton.yaml: the install's own (SYSCONFDIR/baton), then
     * /etc/baton, whichever this machine has. */
    if (access(config_sys_path(), F_OK) == 0)
        ck_assert_str_eq(config_default_path(), config_sys_path());
    else if (access("/etc/baton/baton.yaml", F_OK) == 0)
        ck_assert_str_eq(config_default_path(), "/etc/baton/baton.yaml");
    else
        ck_assert_ptr_null(config_default_path());
    f = fopen("baton.yaml", "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_str_eq(config_default_path(), "baton.yaml");
    unlink("baton.yaml");
    ck_assert_int_eq(chdir("/"), 0);
    rmdir(dir);
}
END_TEST

/* Every bad file holds exactly one defect and gets exactly this error. */
static const struct {
    const char *file, *error;
} bad_files[] = {
    {"config_alias.yaml", "config_alias.yaml:1:8: YAML aliases (*g) are not supported"},
    {"config_anchor.yaml", "config_anchor.yaml:1:8: YAML anchors (&l) are not supported"},
    {"config_bad_duration.yaml",
     "config_bad_duration.yaml:1:7: poll: \"fast\": expected a number at \"fast\" (durations "
     "look like 500ms, 10s, 1h30m)"},
    {"config_bad_utf8.yaml",
     "config_bad_utf8.yaml:2:6: invalid YAML: the text is not UTF-8 (incomplete UTF-8 octet "
     "sequence)"},
    {"config_complex_key.yaml",
     "config_complex_key.yaml:1:3: a mapping key must be a string, not a sequence"},
    {"config_dotted_key.yaml",
     "config_dotted_key.yaml:1:1: unknown key \"lease.ttl\" (nest it: write each part of the "
     "dotted name as its own mapping level)"},
    {"config_dup_key.yaml", "config_dup_key.yaml:3:1: duplicate key \"group\" (first at line 1)"},
    {"config_empty_string.yaml", "config_empty_string.yaml:1:8: group: must not be empty"},
    {"config_group_chars.yaml",
     "config_group_chars.yaml:1:8: group: \"pay ments\": may contain only letters, digits and "
     "_ . -"},
    {"config_group_long.yaml",
     "config_group_long.yaml:1:8: group: too long (at most 64 characters)"},
    {"config_int_garbage.yaml",
     "config_int_garbage.yaml:1:10: history: expected an integer, got \"1e3\""},
    {"config_hooks_argv_item.yaml",
     "config_hooks_argv_item.yaml:2:31: hooks.on_failure[1]: expected a string, got a mapping"},
    {"config_history_output_range.yaml",
     "config_history_output_range.yaml:3:17: history.output_bytes: \"2000000\" is out of range "
     "(0..1048576)"},
    {"config_jobs_empty.yaml", "config_jobs_empty.yaml:1:7: jobs: must not be empty"},
    {"config_lease_margin.yaml",
     "config_lease_margin.yaml:2:8: lease.ttl (2s) must be at least 2 x lease.renew (666ms) + "
     "redis_timeout (1s) = 2s332ms, so that a renewal that times out can be retried before the "
     "lease runs out"},
    {"config_history_leading_zero.yaml",
     "config_history_leading_zero.yaml:2:9: history.runs: \"0500\" has a leading zero (YAML 1.1 "
     "reads it as octal): write 500"},
    {"config_log_level.yaml",
     "config_log_level.yaml:2:10: log.level: expected one of debug, info, warn, error, got "
     "\"verbose\""},
    {"config_mapping_for_scalar.yaml",
     "config_mapping_for_scalar.yaml:2:3: group: expected a string, got a mapping"},
    {"config_min_replicas_quoted.yaml",
     "config_min_replicas_quoted.yaml:2:15: min_replicas: expected an integer, got the string "
     "\"1\" (remove the quotes)"},
    {"config_multi_doc.yaml",
     "config_multi_doc.yaml:2:1: a second YAML document; the file must hold only one"},
    {"config_negative_duration.yaml",
     "config_negative_duration.yaml:1:17: shutdown_grace: \"-5s\": expected a number at \"-5s\" "
     "(durations look like 500ms, 10s, 1h30m)"},
    {"config_no_unit.yaml",
     "config_no_unit.yaml:1:17: shutdown_grace: \"30\" has no unit (durations look like 500ms, "
     "10s, 1h30m)"},
    {"config_node_chars.yaml",
     "config_node_chars.yaml:1:7: node: \"web/1\": may contain only letters, digits and _ . : -"},
    {"config_not_mapping.yaml",
     "config_not_mapping.yaml:1:1: expected a mapping of options (key: value), got a sequence"},
    {"config_nul.yaml", "config_nul.yaml:1:8: a string may not contain a NUL character"},
    {"config_null_value.yaml",
     "config_null_value.yaml:1:6: poll: missing value (expected a duration like 500ms, 10s, "
     "1h30m)"},
    {"config_out_of_range.yaml",
     "config_out_of_range.yaml:1:10: history: \"0\" is out of range (1..100000)"},
    {"config_poll_short.yaml",
     "config_poll_short.yaml:1:7: poll (2s) must be at least redis_timeout (3s)"},
    {"config_reserved_char.yaml",
     "config_reserved_char.yaml:2:7: invalid YAML: found character that cannot start any token "
     "(while scanning for the next token that starts at line 2); a value that starts with ` "
     "must be quoted (YAML reserves it): node: \"`hostname`\""},
    {"config_redis_db.yaml",
     "config_redis_db.yaml:1:8: redis: invalid URL: invalid database number after the host "
     "(redis://host:6379/0)"},
    {"config_redis_host.yaml",
     "config_redis_host.yaml:1:8: redis: invalid URL: missing host (redis://host:6379/0)"},
    {"config_redis_not_url.yaml",
     "config_redis_not_url.yaml:1:8: redis: invalid URL: expected a URL like "
     "redis://host:6379/0 or "
     "unix:///run/redis/redis.sock"},
    {"config_redis_port.yaml",
     "config_redis_port.yaml:1:8: redis: invalid URL: invalid port (1..65535)"},
    {"config_redis_scheme.yaml",
     "config_redis_scheme.yaml:1:8: redis: invalid URL: unsupported scheme \"memcache://\" "
     "(use redis://, rediss://, unix://, redis-sentinel://, rediss-sentinel://, "
     "redis-cluster://, rediss-cluster://, redis-quorum:// or rediss-quorum://)"},
    {"config_renew_margin.yaml",
     "config_renew_margin.yaml:3:10: lease.ttl (10s) must be at least 2 x lease.renew (5s) + "
     "redis_timeout (1s) = 11s, so that a renewal that times out can be retried before the "
     "lease runs out"},
    {"config_renew_zero.yaml",
     "config_renew_zero.yaml:2:10: lease.renew: \"0\" is out of range (10ms..5m)"},
    {"config_scalar_root.yaml",
     "config_scalar_root.yaml:1:1: expected a mapping of options (key: value), got a string"},
    {"config_section_scalar.yaml",
     "config_section_scalar.yaml:1:8: lease: expected a mapping, got a string"},
    {"config_sequence_for_scalar.yaml",
     "config_sequence_for_scalar.yaml:1:8: group: expected a string, got a sequence"},
    {"config_redis_list_even.yaml",
     "config_redis_list_even.yaml:2:3: redis: invalid URL: a quorum has an odd number of "
     "masters, 3 to 9 (this one names 4): redis-quorum://h1:6379,h2:6380,h3:6381"},
    {"config_redis_list_mixed.yaml",
     "config_redis_list_mixed.yaml:4:5: redis: redis://b:6379/1: not the same database as the "
     "first master (redis://a:6379/0): the masters of a quorum share scheme, credentials, "
     "database and TLS parameters"},
    {"config_redis_list_item.yaml",
     "config_redis_list_item.yaml:3:5: redis: redis-cluster://b:6379/0: the masters of a quorum "
     "are each a redis:// or rediss:// URL (one server each)"},
    {"config_quorum_ttl.yaml",
     "config_quorum_ttl.yaml:2:14: lease.ttl (20s) must be at most the quorum's max_ttl (15s): "
     "a quorum keeps a restarted master out for max_ttl, which must cover every lease (raise "
     "max_ttl= in a redis-quorum:// URL)"},
    {"config_quorum_timeout.yaml",
     "config_quorum_timeout.yaml:2:16: redis_timeout (100ms) must be at least 2 x the quorum's "
     "node_timeout (80ms): a master is given node_timeout to connect and node_timeout to "
     "answer, within redis_timeout"},
    {"config_syntax.yaml",
     "config_syntax.yaml:4:8: invalid YAML: did not find expected ',' or ']' (while parsing a "
     "flow sequence that starts at line 3)"},
    {"config_tab_indent.yaml",
     "config_tab_indent.yaml:2:1: invalid YAML: found character that cannot start any token "
     "(while scanning for the next token that starts at line 2)"},
    {"config_tag.yaml",
     "config_tag.yaml:1:10: YAML tags (!!int) are not supported; quote the value instead"},
    {"config_timeout_margin.yaml",
     "config_timeout_margin.yaml:1:16: lease.ttl (10s) must be at least 2 x lease.renew "
     "(3s333ms) + redis_timeout (9s) = 15s666ms, so that a renewal that times out can be "
     "retried before the lease runs out"},
    {"config_timezone.yaml",
     "config_timezone.yaml:1:11: timezone: unknown time zone \"Mars/Base\""},
    {"config_ttl_range.yaml",
     "config_ttl_range.yaml:2:8: lease.ttl: \"20m\" is out of range (100ms..10m)"},
    {"config_ttl_unit_twice.yaml",
     "config_ttl_unit_twice.yaml:2:8: lease.ttl: \"10s10s\": unit \"s\" repeated at \"10s\" "
     "(write each unit once, largest first: 1h30m)"},
    {"config_unix_param.yaml",
     "config_unix_param.yaml:1:8: redis: invalid URL: unknown URL parameter \"timeout\" (use "
     "db=, user=, password=)"},
    {"config_unix_relative.yaml",
     "config_unix_relative.yaml:1:8: redis: invalid URL: the socket path must be absolute "
     "(unix:///run/redis/redis.sock)"},
    {"config_unknown_far.yaml",
     "config_unknown_far.yaml:1:1: unknown key \"color\" (known keys: node, redis, group, "
     "lease, poll, shutdown_grace, redis_timeout, jobs, timezone, log, history, hooks, "
     "password_file, sentinel_password_file, min_replicas, http, labels, capacity)"},
    {"config_unknown_key.yaml",
     "config_unknown_key.yaml:3:3: unknown key \"tll\" (did you mean \"ttl\"?)"},
    {"config_unknown_top.yaml",
     "config_unknown_top.yaml:1:1: unknown key \"grop\" (did you mean \"group\"?)"},
};

START_TEST(bad_file)
{
    char dir[4096], err[1024];
    struct config *c = NULL;

    snprintf(dir, sizeof dir, "%s/data/bad", env_dir("BATON_TESTS_DIR"));
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_int_eq(config_load(bad_files[_i].file, &c, err, sizeof err), -1);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(err, bad_files[_i].error);
}
END_TEST

/* Every config_*.yaml in tests/data/bad has its row above. */
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

        if (strncmp(e->d_name, "config_", 7) != 0)
            continue;
        for (size_t i = 0; i < sizeof bad_files / sizeof bad_files[0]; i++)
            listed = listed || strcmp(bad_files[i].file, e->d_name) == 0;
        ck_assert_msg(listed, "%s has no expected error in check_config.c", e->d_name);
        seen++;
    }
    closedir(d);
    ck_assert_uint_eq(seen, sizeof bad_files / sizeof bad_files[0]);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The YAML layer */

START_TEST(yaml_positions)
{
    /* Syntax errors carry libyaml's position. */
    load_err("a: b: c\n",
             "t.yaml:1:5: invalid YAML: mapping values are not allowed in this context");
    load_err("lease:\n  ttl: 1s\n ttl: 2s\n",
             "t.yaml:3:2: invalid YAML: did not find expected key (while parsing a block mapping "
             "that starts at line 1)");
    /* Flow collections and quoted keys report positions too. */
    load_err("{group: a, \"group\": b}\n",
             "t.yaml:1:12: duplicate key \"group\" (first at line 1)");
    /* Raw control characters are refused by the reader. */
    load_err("group: a\x01\n",
             "t.yaml:1:9: invalid YAML: control characters are not allowed (byte 0x01)");
}
END_TEST

START_TEST(yaml_depth_and_size)
{
    char *deep = malloc(100000), *wide;
    size_t o = 0;
    char err[512];
    struct config *c;

    /* 5000 nested sequences: refused at level 65, no stack overflow. */
    o += (size_t)snprintf(deep, 100000, "group: ");
    for (int i = 0; i < 5000; i++)
        deep[o++] = '[';
    for (int i = 0; i < 5000; i++)
        deep[o++] = ']';
    deep[o] = '\0';
    c = load(deep, err, sizeof err);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(err, "t.yaml:1:71: nested more than 64 levels deep");
    free(deep);

    /* 200,000 distinct keys: duplicate detection stays fast, the first
     * unknown key is reported. */
    wide = malloc(200000 * 16);
    o = 0;
    for (int i = 0; i < 200000; i++)
        o += (size_t)snprintf(wide + o, 16, "k%d: 1\n", i);
    c = load(wide, err, sizeof err);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(err, "t.yaml:1:1: unknown key \"k0\" (known keys: node, redis, group, lease, "
                          "poll, shutdown_grace, redis_timeout, jobs, timezone, log, history, "
                          "hooks, password_file, sentinel_password_file, min_replicas, http, labels, "
                          "capacity)");
    free(wide);
}
END_TEST

START_TEST(yaml_helpers)
{
    static const char *const cands[] = {"ttl", "renew", "schedule", "timeout", "retries"};
    char buf[128], msg[256];
    int64_t v;
    bool b;

    ck_assert_str_eq(yamlx_suggest("tll", cands, 5), "ttl");
    ck_assert_str_eq(yamlx_suggest("shedule", cands, 5), "schedule");
    ck_assert_str_eq(yamlx_suggest("timout", cands, 5), "timeout");
    ck_assert_str_eq(yamlx_suggest("renwe", cands, 5), "renew");
    ck_assert_ptr_null(yamlx_suggest("x", cands, 5));
    ck_assert_ptr_null(yamlx_suggest("color", cands, 5));
    ck_assert_ptr_null(yamlx_suggest("", cands, 5));

    ck_assert_str_eq(yamlx_quote("a\"b\\c\n\x01", buf, sizeof buf), "\"a\\\"b\\\\c\\n\\x01\"");
    memset(msg, 'x', 200);
    msg[200] = '\0';
    yamlx_quote(msg, buf, sizeof buf);
    ck_assert_uint_le(strlen(buf), 64 + 5);
    ck_assert_ptr_nonnull(strstr(buf, "...\""));

    static const struct {
        int64_t ms;
        const char *text;
    } durations[] = {{0, "0"},
                     {1, "1ms"},
                     {1000, "1s"},
                     {90000, "1m30s"},
                     {3333, "3s333ms"},
                     {86400000, "1d"},
                     {90061001, "1d1h1m1s1ms"}};
    for (size_t i = 0; i < sizeof durations / sizeof durations[0]; i++) {
        ck_assert_str_eq(yamlx_format_duration(durations[i].ms, buf, sizeof buf),
                         durations[i].text);
        ck_assert_int_eq(yamlx_parse_duration(durations[i].text, &v, msg, sizeof msg), 0);
        ck_assert_int_eq(v, durations[i].ms);
    }
    ck_assert_int_eq(yamlx_parse_int("-9223372036854775808", &v, msg, sizeof msg), 0);
    ck_assert_int_eq(v, INT64_MIN);
    ck_assert_int_eq(yamlx_parse_int("9223372036854775807", &v, msg, sizeof msg), 0);
    ck_assert_int_eq(v, INT64_MAX);
    ck_assert_int_eq(yamlx_parse_int("9223372036854775808", &v, msg, sizeof msg), -1);
    ck_assert_int_eq(yamlx_parse_int("+1", &v, msg, sizeof msg), -1);
    ck_assert_int_eq(yamlx_parse_int(" 1", &v, msg, sizeof msg), -1);
    ck_assert_int_eq(yamlx_parse_int("0x10", &v, msg, sizeof msg), -1);
    ck_assert_int_eq(yamlx_parse_int("-", &v, msg, sizeof msg), -1);
    ck_assert_int_eq(yamlx_parse_bool("yes", &b, msg, sizeof msg), 0);
    ck_assert(b);
    ck_assert_int_eq(yamlx_parse_bool("Off", &b, msg, sizeof msg), 0);
    ck_assert(!b);
    ck_assert_int_eq(yamlx_parse_bool("1", &b, msg, sizeof msg), -1);
}
END_TEST

/* The column of a character inside a scalar, for errors that point into a
 * value (cron expressions). */
START_TEST(yaml_scalar_columns)
{
    static const struct {
        const char *yaml;
        size_t offset;
        int col;
    } rows[] = {
        {"k: 0 25 * * *\n", 2, 6},         /* plain */
        {"k: \"0 25 * * *\"\n", 2, 7},     /* double-quoted: +1 */
        {"k: '0 25 * * *'\n", 2, 7},       /* single-quoted: +1 */
        {"k: \"0\\t25 * * *\"\n", 2, 4},   /* an escape: unknown, the scalar's column */
        {"k: 'it''s 25'\n", 5, 4},         /* '' escape: the same */
        {"k: |\n  0 25 * * *\n", 2, 4},    /* block scalar: the scalar's column */
        {"k: \"caf\xc3\xa9 25\"\n", 5, 4}, /* non-ASCII: the scalar's column */
    };

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct yamlx_node *root = NULL;
        char err[256];
        struct yamlx_diag d = {"t", err, sizeof err};

        ck_assert_int_eq(yamlx_parse(rows[i].yaml, strlen(rows[i].yaml), &d, &root), 0);
        ck_assert_int_eq(yamlx_scalar_col(root->pairs[0].value, rows[i].offset), rows[i].col);
        yamlx_free(root);
    }
}
END_TEST

/* http.control needs its tokens, and a loopback or Unix listener unless
 * http.insecure says otherwise. */
START_TEST(http_control_relation)
{
    static const struct {
        const char *yaml, *err; /* err NULL: accepted */
    } cases[] = {
        {"http: {listen: \"127.0.0.1:1\", control: true}\n",
         "t.yaml:1:40: http.control needs http.tokens_file"},
        {"http: {listen: \"0.0.0.0:1\", control: true, tokens_file: /t}\n",
         "t.yaml:1:38: http.control on a plain-HTTP listener that is not loopback (0.0.0.0:1)"},
        {"http: {listen: \"[::]:1\", control: true, tokens_file: /t}\n",
         "t.yaml:1:35: http.control on a plain-HTTP listener"},
        {"http: {listen: \"0.0.0.0:1\", control: true, tokens_file: /t, insecure: true}\n", NULL},
        {"http: {listen: \"127.0.0.9:1\", control: true, tokens_file: /t}\n", NULL},
        {"http: {listen: \"[::1]:1\", control: true, tokens_file: /t}\n", NULL},
        {"http: {listen: \"localhost:1\", control: true, tokens_file: /t}\n", NULL},
        {"http: {listen: \"unix:/run/b.sock\", control: true, tokens_file: /t}\n", NULL},
        {"http: {listen: \"0.0.0.0:1\", tokens_file: /t}\n", NULL},
        {"http: {tokens_file: t}\n", "t.yaml:1:21: http.tokens_file: must be an absolute path"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[512] = "";
        struct config *c = load(cases[i].yaml, err, sizeof err);
        if (cases[i].err == NULL) {
            ck_assert_msg(c != NULL, "%s: %s", cases[i].yaml, err);
        } else {
            ck_assert_msg(c == NULL, "%s: accepted", cases[i].yaml);
            ck_assert_msg(strncmp(err, cases[i].err, strlen(cases[i].err)) == 0,
                          "%s: expected <%s...>, got <%s>", cases[i].yaml, cases[i].err, err);
        }
        config_free(c);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    size_t nopts = config_schema()->n;

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, empty_files_mean_defaults);
    tcase_add_test(tc, empty_sections);
    tcase_add_test(tc, all_keys_set);
    tcase_add_test(tc, renew_follows_ttl);
    tcase_add_test(tc, redis_list);
    tcase_add_loop_test(tc, option_row, 0, (int)nopts);
    tcase_add_test(tc, history_section);
    tcase_add_test(tc, hook_commands);
    tcase_add_test(tc, http_allowed_hosts);
    tcase_add_test(tc, http_control_relation);
    tcase_add_test(tc, labels_and_capacity);
    tcase_add_test(tc, lease_relations);
    tcase_add_test(tc, redis_urls);
    tcase_add_test(tc, redis_password_hidden);
    tcase_add_test(tc, names);
    tcase_add_test(tc, jobs_path_resolution);
    tcase_add_test(tc, sample_loads);
    tcase_add_test(tc, unreadable_files);
    tcase_add_test(tc, default_path);
    tcase_add_loop_test(tc, bad_file, 0, (int)(sizeof bad_files / sizeof bad_files[0]));
    tcase_add_test(tc, bad_files_all_listed);
    tcase_add_test(tc, yaml_positions);
    tcase_add_test(tc, yaml_depth_and_size);
    tcase_add_test(tc, yaml_helpers);
    tcase_add_test(tc, yaml_scalar_columns);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
