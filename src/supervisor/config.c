/* config.c -- baton.yaml: one options table, read by everything else.
 *
 * The table `options[]` below holds every option: its dotted key, type,
 * field, default (written as it would be in the file, and parsed by the same
 * code as a value from the file), bounds, extra check and documentation.
 * Sections (`lease:`, `log:`) are implied by the dotted keys. The walker,
 * the defaults, the reference and the effective configuration loop over the
 * table; the only per-option code is in the `check` and `def_fn` hooks and in
 * the relations between options (`relations[]`).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton.h"
#include "config.h"
#include "cron.h"
#include "yamlx.h"

_Static_assert(sizeof(enum log_level) == sizeof(int), "enum options are stored as int");

#define MS_SECOND INT64_C(1000)
#define MS_MINUTE (60 * MS_SECOND)
#define MS_HOUR   (60 * MS_MINUTE)

/* ------------------------------------------------------------------------ */
/* Checks and computed defaults (the hooks of the table) */

static bool in_charset(const char *s, const char *extra)
{
    for (; *s != '\0'; s++) {
        char ch = *s;

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              strchr(extra, ch) != NULL))
            return false;
    }
    return true;
}

static int check_node(const char *s, char *msg, size_t msglen)
{
    char q[96];

    if (!in_charset(s, "_.:-")) {
        snprintf(msg, msglen, "%s: may contain only letters, digits and _ . : -",
                 yamlx_quote(s, q, sizeof q));
        return -1;
    }
    return 0;
}

static int check_group(const char *s, char *msg, size_t msglen)
{
    char q[96];

    if (!in_charset(s, "_.-")) {
        snprintf(msg, msglen, "%s: may contain only letters, digits and _ . -",
                 yamlx_quote(s, q, sizeof q));
        return -1;
    }
    return 0;
}

static int check_timezone(const char *s, char *msg, size_t msglen)
{
    struct cron_tz *tz = NULL;

    if (cron_tz_load(s, &tz, msg, msglen) != 0)
        return -1;
    cron_tz_free(tz);
    return 0;
}

/* The library's parser is the one grammar of Redis URLs: `baton check`,
 * `baton run` and `baton lock` give the same verdict on every URL. Its
 * messages never echo a password. */
static int check_redis_url(const char *s, char *msg, size_t msglen)
{
    return baton_url_check(s, NULL, 0, msg, msglen) == BATON_OK ? 0 : -1;
}

/* A password file: an absolute path (read at start, by secrets.c), or
 * "none". */
static int check_secret_path(const char *s, char *msg, size_t msglen)
{
    if (*s == '/' || strcmp(s, "none") == 0)
        return 0;
    snprintf(msg, msglen, "must be an absolute path, or none");
    return -1;
}

static int default_node(struct config *c, char *msg, size_t msglen)
{
    char host[256], buf[160];

    if (gethostname(host, sizeof host) != 0) {
        snprintf(msg, msglen, "cannot get the host name: %s", strerror(errno));
        return -1;
    }
    host[sizeof host - 1] = '\0';
    /* Keep the default valid whatever the host is called. */
    for (char *p = host; *p != '\0'; p++)
        if (!in_charset((char[]){*p, '\0'}, "_.-"))
            *p = '-';
    snprintf(buf, sizeof buf, "%.100s:%ld", host, (long)getpid());
    c->node = strdup(buf);
    if (c->node == NULL) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    return 0;
}

static int default_renew(struct config *c, char *msg, size_t msglen)
{
    (void)msg;
    (void)msglen;
    c->lease_renew_ms = c->lease_ttl_ms / 3;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The table */

static const char *const log_level_names[] = {"debug", "info", "warn", "error", NULL};

#define OFF(f) offsetof(struct config, f)

/* clang-format off */
static const struct config_option options[] = {
    {.key = "node", .type = CONFIG_STRING, .offset = OFF(node),
     .def_doc = "hostname:pid", .def_fn = default_node, .min = 1, .max = 128,
     .check = check_node, .bounds_doc = "letters, digits, _ . : -; 1-128 chars",
     .doc = "This node's name in logs, `baton status` and the leader key; unique in the group."},
    {.key = "redis", .type = CONFIG_STRING, .offset = OFF(redis),
     .def = "redis://127.0.0.1:6379/0", .min = 1, .max = 4096, .check = check_redis_url,
     .secret = true,
     .bounds_doc = "redis://[[user]:pass@]host[:port][/db], rediss://...[?ca=&cert=&key=&sni=&"
                   "verify=], unix:///path[?db=N&user=U&password=P], "
                   "redis-sentinel://h1:26379,h2:26379[/db]?master=NAME (rediss-sentinel:// for "
                   "TLS)",
     .doc = "The Redis server holding the leader lease, tick claims and run history."},
    {.key = "group", .type = CONFIG_STRING, .offset = OFF(group),
     .def = "default", .min = 1, .max = 64, .check = check_group,
     .bounds_doc = "letters, digits, _ . -; 1-64 chars",
     .doc = "Nodes with the same group elect one leader and run one jobs.yaml."},
    {.key = "lease.ttl", .type = CONFIG_DURATION, .offset = OFF(lease_ttl_ms),
     .def = "10s", .min = 100, .max = 10 * MS_MINUTE,
     .doc = "Lifetime of the leader lease: a crashed leader is replaced after at most this long."},
    {.key = "lease.renew", .type = CONFIG_DURATION, .offset = OFF(lease_renew_ms),
     .def_doc = "lease.ttl / 3", .def_fn = default_renew, .min = 10, .max = 5 * MS_MINUTE,
     .doc = "How often the leader extends its lease."},
    {.key = "poll", .type = CONFIG_DURATION, .offset = OFF(poll_ms),
     .def = "5s", .min = MS_SECOND, .max = MS_HOUR,
     .doc = "Followers' safety-net check of the lease (they are woken at once on release and "
            "at the lease's expiry anyway)."},
    {.key = "shutdown_grace", .type = CONFIG_DURATION, .offset = OFF(shutdown_grace_ms),
     .def = "30s", .min = 0, .max = MS_HOUR,
     .doc = "On SIGTERM, how long running jobs may go on before they get SIGTERM, then SIGKILL."},
    {.key = "redis_timeout", .type = CONFIG_DURATION, .offset = OFF(redis_timeout_ms),
     .def = "1s", .min = 10, .max = MS_MINUTE,
     .doc = "Timeout of a Redis connect and of each Redis command."},
    {.key = "jobs", .type = CONFIG_PATH, .offset = OFF(jobs_path),
     .def = "jobs.yaml", .min = 1, .max = 4096,
     .doc = "Path of jobs.yaml; a relative path is relative to this file's directory."},
    {.key = "timezone", .type = CONFIG_STRING, .offset = OFF(timezone),
     .def = "UTC", .min = 1, .max = 255, .check = check_timezone,
     .bounds_doc = "an IANA zone name",
     .doc = "Time zone of the jobs that do not set their own."},
    {.key = "log.level", .type = CONFIG_ENUM, .offset = OFF(log_level),
     .def = "info", .names = log_level_names,
     .doc = "Least severe log lines written."},
    {.key = "history", .type = CONFIG_INT, .offset = OFF(history_len),
     .def = "100", .min = 1, .max = 100000,
     .doc = "Runs kept per job in Redis for `baton history` and `baton status`."},
    {.key = "password_file", .type = CONFIG_STRING, .offset = OFF(password_file),
     .def = "none", .min = 1, .max = 4096, .check = check_secret_path,
     .bounds_doc = "an absolute path, or none",
     .doc = "File whose first line is the Redis password (mode 0600, else a warning); wins over "
            "BATON_REDIS_PASSWORD, which wins over the URL's."},
    {.key = "sentinel_password_file", .type = CONFIG_STRING, .offset = OFF(sentinel_password_file),
     .def = "none", .min = 1, .max = 4096, .check = check_secret_path,
     .bounds_doc = "an absolute path, or none",
     .doc = "redis-sentinel:// URLs: file whose first line is the sentinels' own password; wins "
            "over BATON_SENTINEL_PASSWORD, which wins over the URL's sentinel_password=."},
    {.key = "min_replicas", .type = CONFIG_INT, .offset = OFF(min_replicas),
     .def = "0", .min = 0, .max = 16,
     .doc = "Leader lease and tick claims count only once WAIT says this many replicas have "
            "them, within the lease's deadline (0: off). Keeps them across a Sentinel failover."},
};
/* clang-format on */

#define NOPTS (sizeof options / sizeof options[0])

const struct config_option *config_options(size_t *n)
{
    *n = NOPTS;
    return options;
}

static const char *type_name(enum config_type t)
{
    switch (t) {
    case CONFIG_STRING: return "string";
    case CONFIG_PATH: return "path";
    case CONFIG_DURATION: return "duration";
    case CONFIG_INT: return "integer";
    case CONFIG_ENUM: return "enum";
    }
    return "?";
}

/* ------------------------------------------------------------------------ */
/* Relations between options, checked once every option has its value. The
 * error points at the first of keys[] that the file sets. */

static int check_lease(const struct config *c, char *msg, size_t msglen)
{
    char ttl[32], renew[32], to[32], need[32];
    int64_t min_ttl = 2 * c->lease_renew_ms + c->redis_timeout_ms;

    if (c->lease_ttl_ms >= min_ttl)
        return 0;
    snprintf(msg, msglen,
             "lease.ttl (%s) must be at least 2 x lease.renew (%s) + redis_timeout (%s) = %s, "
             "so that a renewal that times out can be retried before the lease runs out",
             yamlx_format_duration(c->lease_ttl_ms, ttl, sizeof ttl),
             yamlx_format_duration(c->lease_renew_ms, renew, sizeof renew),
             yamlx_format_duration(c->redis_timeout_ms, to, sizeof to),
             yamlx_format_duration(min_ttl, need, sizeof need));
    return -1;
}

static int check_poll(const struct config *c, char *msg, size_t msglen)
{
    char poll[32], to[32];

    if (c->poll_ms >= c->redis_timeout_ms)
        return 0;
    snprintf(msg, msglen, "poll (%s) must be at least redis_timeout (%s)",
             yamlx_format_duration(c->poll_ms, poll, sizeof poll),
             yamlx_format_duration(c->redis_timeout_ms, to, sizeof to));
    return -1;
}

static const struct relation {
    const char *keys[3];
    int (*check)(const struct config *c, char *msg, size_t msglen);
    const char *doc;
} relations[] = {
    {{"lease.renew", "lease.ttl", "redis_timeout"},
     check_lease,
     "`lease.ttl` >= 2 x `lease.renew` + `redis_timeout`: a renewal that times out still "
     "leaves time for one more before the lease runs out."},
    {{"poll", "redis_timeout", NULL},
     check_poll,
     "`poll` >= `redis_timeout`: safety-net polls never overlap."},
};

/* ------------------------------------------------------------------------ */
/* Parsing */

struct parse {
    struct config *c;
    const struct yamlx_diag *d;
    const char *dir;                    /* of the file, "" for none */
    const struct yamlx_node *at[NOPTS]; /* where each option was set */
};

static const struct config_option *find_option(const char *key)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (strcmp(options[i].key, key) == 0)
            return &options[i];
    return NULL;
}

/* True when key is a section: the prefix of some option's key. */
static bool is_section(const char *key)
{
    size_t n = strlen(key);

    for (size_t i = 0; i < NOPTS; i++)
        if (strncmp(options[i].key, key, n) == 0 && options[i].key[n] == '.')
            return true;
    return false;
}

/* The distinct names one level below prefix ("" for the top), into names
 * (each a NUL-terminated copy in store). Returns how many. */
static size_t child_names(const char *prefix, char store[NOPTS][64], const char *names[NOPTS])
{
    size_t plen = strlen(prefix), n = 0;

    for (size_t i = 0; i < NOPTS; i++) {
        const char *k = options[i].key, *rest, *dot;
        bool seen = false;

        if (plen > 0 && !(strncmp(k, prefix, plen) == 0 && k[plen] == '.'))
            continue;
        rest = plen > 0 ? k + plen + 1 : k;
        dot = strchr(rest, '.');
        snprintf(store[n], sizeof store[n], "%.*s",
                 (int)(dot != NULL ? (size_t)(dot - rest) : strlen(rest)), rest);
        for (size_t j = 0; j < n; j++)
            seen = seen || strcmp(names[j], store[n]) == 0;
        if (!seen) {
            names[n] = store[n];
            n++;
        }
    }
    return n;
}

static char *join_path(const char *dir, const char *rel)
{
    size_t dl = strlen(dir), rl = strlen(rel);
    char *p;

    if (rel[0] == '/' || dl == 0)
        return strdup(rel);
    p = malloc(dl + rl + 2);
    if (p == NULL)
        return NULL;
    memcpy(p, dir, dl);
    if (dir[dl - 1] != '/')
        p[dl++] = '/';
    memcpy(p + dl, rel, rl + 1);
    return p;
}

/* Converts text to option o's type, checks it and stores it in the config.
 * The one path for values from the file and for defaults. Returns 0, or -1
 * with a message (without the key) in msg. */
static int set_value(struct parse *p, const struct config_option *o, const char *text, char *msg,
                     size_t msglen)
{
    void *field = (char *)p->c + o->offset;

    switch (o->type) {
    case CONFIG_STRING:
    case CONFIG_PATH: {
        size_t n = strlen(text);
        char *v;

        if ((int64_t)n < o->min) {
            snprintf(msg, msglen, "must not be empty");
            return -1;
        }
        if ((int64_t)n > o->max) {
            snprintf(msg, msglen, "too long (at most %" PRId64 " characters)", o->max);
            return -1;
        }
        if (o->check != NULL && o->check(text, msg, msglen) != 0)
            return -1;
        v = o->type == CONFIG_PATH ? join_path(p->dir, text) : strdup(text);
        if (v == NULL) {
            snprintf(msg, msglen, "out of memory");
            return -1;
        }
        free(*(char **)field);
        *(char **)field = v;
        return 0;
    }
    case CONFIG_DURATION:
        return yamlx_duration_in(text, o->min, o->max, (int64_t *)field, msg, msglen);
    case CONFIG_INT: return yamlx_int_in(text, o->min, o->max, (int64_t *)field, msg, msglen);
    case CONFIG_ENUM: {
        char q[96], all[128];

        for (int i = 0; o->names[i] != NULL; i++) {
            if (strcmp(o->names[i], text) == 0) {
                *(int *)field = i;
                return 0;
            }
        }
        yamlx_list_names(o->names, SIZE_MAX, all, sizeof all);
        snprintf(msg, msglen, "expected one of %s, got %s", all, yamlx_quote(text, q, sizeof q));
        return -1;
    }
    }
    snprintf(msg, msglen, "unknown option type");
    return -1;
}

static const char *expected_text(const struct config_option *o)
{
    switch (o->type) {
    case CONFIG_DURATION: return "a duration like 500ms, 10s, 1h30m";
    case CONFIG_INT: return "an integer";
    case CONFIG_ENUM: return "one of its names";
    default: return "a string";
    }
}

static int set_from_node(struct parse *p, const struct config_option *o, const struct yamlx_node *n)
{
    char msg[512];

    if (yamlx_expect_scalar(p->d, n, o->key, expected_text(o)) != 0)
        return -1;
    if (set_value(p, o, n->str, msg, sizeof msg) != 0)
        return yamlx_errorf(p->d, n, "%s: %s", o->key, msg);
    p->at[o - options] = n;
    return 0;
}

/* Rejects key k found under prefix, suggesting what was probably meant. */
static int unknown_key(struct parse *p, const struct yamlx_node *k, const char *prefix,
                       const char *full)
{
    char store[NOPTS][64], all[512], q[96];
    const char *names[NOPTS], *best;
    size_t n = child_names(prefix, store, names);

    if (strchr(k->str, '.') != NULL && (find_option(full) != NULL || is_section(full)))
        return yamlx_errorf(p->d, k,
                            "unknown key %s (nest it: write each part of the dotted name as its "
                            "own mapping level)",
                            yamlx_quote(k->str, q, sizeof q));
    best = yamlx_suggest(k->str, names, n);
    if (best != NULL)
        return yamlx_errorf(p->d, k, "unknown key %s (did you mean \"%s\"?)",
                            yamlx_quote(k->str, q, sizeof q), best);
    yamlx_list_names(names, n, all, sizeof all);
    return yamlx_errorf(p->d, k, "unknown key %s (known keys: %s)",
                        yamlx_quote(k->str, q, sizeof q), all);
}

static int walk_map(struct parse *p, const struct yamlx_node *map, const char *prefix)
{
    for (size_t i = 0; i < map->npairs; i++) {
        const struct yamlx_node *k = map->pairs[i].key, *v = map->pairs[i].value;
        bool dotted = strchr(k->str, '.') != NULL;
        const struct config_option *o = NULL;
        char full[160];

        if (prefix[0] != '\0')
            snprintf(full, sizeof full, "%s.%s", prefix, k->str);
        else
            snprintf(full, sizeof full, "%s", k->str);
        if (!dotted)
            o = find_option(full);
        if (o != NULL) {
            if (set_from_node(p, o, v) != 0)
                return -1;
        } else if (!dotted && is_section(full)) {
            if (v->kind == YAMLX_SCALAR && v->null)
                continue; /* `lease:` with everything commented out */
            if (v->kind != YAMLX_MAP)
                return yamlx_errorf(p->d, v, "%s: expected a mapping, got %s", full,
                                    yamlx_kind_name(v));
            if (walk_map(p, v, full) != 0)
                return -1;
        } else {
            return unknown_key(p, k, prefix, full);
        }
    }
    return 0;
}

static int apply_defaults(struct parse *p)
{
    for (size_t i = 0; i < NOPTS; i++) {
        const struct config_option *o = &options[i];
        char msg[256];
        int r;

        if (p->at[i] != NULL)
            continue;
        r = o->def != NULL ? set_value(p, o, o->def, msg, sizeof msg)
                           : o->def_fn(p->c, msg, sizeof msg);
        if (r != 0)
            return yamlx_errorf(p->d, NULL, "%s: default: %s", o->key, msg);
    }
    return 0;
}

static int check_relations(struct parse *p)
{
    for (size_t i = 0; i < sizeof relations / sizeof relations[0]; i++) {
        const struct relation *r = &relations[i];
        const struct yamlx_node *at = NULL;
        char msg[512];

        if (r->check(p->c, msg, sizeof msg) == 0)
            continue;
        for (size_t k = 0; k < 3 && r->keys[k] != NULL && at == NULL; k++) {
            const struct config_option *o = find_option(r->keys[k]);

            if (o != NULL)
                at = p->at[o - options];
        }
        return yamlx_errorf(p->d, at, "%s", msg);
    }
    return 0;
}

int config_load_buffer(const char *name, const char *buf, size_t len, struct config **out,
                       char *err, size_t errlen)
{
    struct yamlx_diag d = {name, err, errlen};
    struct parse p = {.d = &d};
    struct yamlx_node *root = NULL;
    const char *slash = strrchr(name, '/');
    char *dir = NULL;
    int rc = -1;

    *out = NULL;
    if (errlen > 0)
        err[0] = '\0';
    p.c = calloc(1, sizeof *p.c);
    dir = slash != NULL ? strndup(name, slash == name ? 1 : (size_t)(slash - name)) : strdup("");
    if (p.c != NULL)
        p.c->path = strdup(name);
    if (p.c == NULL || dir == NULL || p.c->path == NULL) {
        yamlx_errorf(&d, NULL, "out of memory");
        goto out_free;
    }
    p.dir = dir;
    if (yamlx_parse(buf, len, &d, &root) != 0)
        goto out_free;
    if (root != NULL && root->kind != YAMLX_MAP) {
        yamlx_errorf(&d, root, "expected a mapping of options (key: value), got %s",
                     yamlx_kind_name(root));
        goto out_free;
    }
    if (root != NULL && walk_map(&p, root, "") != 0)
        goto out_free;
    if (apply_defaults(&p) != 0 || check_relations(&p) != 0)
        goto out_free;
    *out = p.c;
    p.c = NULL;
    rc = 0;
out_free:
    yamlx_free(root);
    free(dir);
    config_free(p.c);
    return rc;
}

int config_load(const char *path, struct config **out, char *err, size_t errlen)
{
    struct yamlx_diag d = {path, err, errlen};
    char *buf = NULL;
    size_t len = 0;
    int rc;

    *out = NULL;
    if (yamlx_read_file(path, &buf, &len, &d) != 0)
        return -1;
    rc = config_load_buffer(path, buf, len, out, err, errlen);
    free(buf);
    return rc;
}

void config_free(struct config *c)
{
    if (c == NULL)
        return;
    free(c->path);
    for (size_t i = 0; i < NOPTS; i++)
        if (options[i].type == CONFIG_STRING || options[i].type == CONFIG_PATH)
            free(*(char **)((char *)c + options[i].offset));
    free(c);
}

const char *config_default_path(void)
{
    static const char *const paths[] = {"baton.yaml", "/etc/baton/baton.yaml"};

    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (access(paths[i], F_OK) == 0)
            return paths[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Output */

static void write_bounds(const struct config_option *o, FILE *out)
{
    char lo[32], hi[32], all[128];

    switch (o->type) {
    case CONFIG_DURATION:
        fprintf(out, "%s..%s", yamlx_format_duration(o->min, lo, sizeof lo),
                yamlx_format_duration(o->max, hi, sizeof hi));
        break;
    case CONFIG_INT: fprintf(out, "%" PRId64 "..%" PRId64, o->min, o->max); break;
    case CONFIG_ENUM:
        yamlx_list_names(o->names, SIZE_MAX, all, sizeof all);
        fputs(all, out);
        break;
    case CONFIG_STRING:
    case CONFIG_PATH:
        if (o->bounds_doc != NULL)
            fputs(o->bounds_doc, out);
        else
            fprintf(out, "%" PRId64 "-%" PRId64 " chars", o->min, o->max);
        break;
    }
}

void config_write_reference(FILE *out)
{
    fputs("| key | type | default | bounds | meaning |\n", out);
    fputs("|---|---|---|---|---|\n", out);
    for (size_t i = 0; i < NOPTS; i++) {
        const struct config_option *o = &options[i];

        fprintf(out, "| `%s` | %s | ", o->key, type_name(o->type));
        if (o->def != NULL)
            fprintf(out, "`%s`", o->def);
        else
            fputs(o->def_doc, out);
        fputs(" | ", out);
        write_bounds(o, out);
        fprintf(out, " | %s |\n", o->doc);
    }
    fputs("\nAlso checked at load:\n\n", out);
    for (size_t i = 0; i < sizeof relations / sizeof relations[0]; i++)
        fprintf(out, "- %s\n", relations[i].doc);
}

/* Writes a Redis URL as the library shows it: without its password. */
static void write_masked_url(const char *url, FILE *out)
{
    char red[4200];

    if (baton_url_check(url, red, sizeof red, NULL, 0) == BATON_OK)
        fputs(red, out);
    else
        fputs("(invalid URL)", out);
}

static void write_string(const char *s, FILE *out)
{
    char q[512];

    for (const char *p = s; *p != '\0'; p++) {
        if ((unsigned char)*p < 0x20 || *p == '"' || *p == '#') {
            fputs(yamlx_quote(s, q, sizeof q), out);
            return;
        }
    }
    fputs(s, out);
}

void config_write_effective(const struct config *c, FILE *out)
{
    for (size_t i = 0; i < NOPTS; i++) {
        const struct config_option *o = &options[i];
        const void *field = (const char *)c + o->offset;
        char buf[32];

        fprintf(out, "%s: ", o->key);
        switch (o->type) {
        case CONFIG_STRING:
        case CONFIG_PATH:
            if (o->secret)
                write_masked_url(*(char *const *)field, out);
            else
                write_string(*(char *const *)field, out);
            break;
        case CONFIG_DURATION:
            fputs(yamlx_format_duration(*(const int64_t *)field, buf, sizeof buf), out);
            break;
        case CONFIG_INT: fprintf(out, "%" PRId64, *(const int64_t *)field); break;
        case CONFIG_ENUM: fputs(o->names[*(const int *)field], out); break;
        }
        fputc('\n', out);
    }
}
