/* config.c -- baton.yaml: one options table, read by the schema engine.
 *
 * The table `options[]` below holds every option: its dotted key, type,
 * field, default (written as it would be in the file, and parsed by the same
 * code as a value from the file), bounds, extra check and documentation.
 * Sections (`lease:`, `log:`) are implied by the dotted keys. Reading,
 * defaults, the reference and the effective configuration are schema.c's,
 * shared with jobs.yaml; the only per-option code here is in the `check`
 * and `def_fn` hooks and in the relations between options (`relations[]`).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "baton.h"
#include "baton_redis.h" /* baton_url_quorum() */
#include "clock.h"
#include "config.h"
#include "cron.h"
#include "dynlib.h"
#include "jobcmd.h"
#include "labels.h"
#include "listen.h"
#include "schema.h"
#include "yamlx.h"

_Static_assert(sizeof(enum log_level) == sizeof(int), "enum options are stored as int");
_Static_assert(sizeof(enum log_format) == sizeof(int), "enum options are stored as int");

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
    char red[512];
    return baton_url_check(s, red, sizeof red, msg, msglen) != BATON_OK ? -1 : 0;
}

/* `redis:` as a YAML list: the masters of a Redlock quorum, each a
 * redis:// or rediss:// URL, sharing scheme, credentials, database and
 * TLS parameters; the library joins them into one redis-quorum:// URL
 * (baton_url_join), so that everything after reads one URL. A list of one
 * is that URL. */
static int set_redis_list(void *obj, struct schema_ctx *ctx, const struct yamlx_node *n,
                          const char *what)
{
    struct config *c = obj;
    const char *urls[BATON_QUORUM_MAX];
    char msg[512], *joined = NULL;
    int bad = -1;

    if (n->kind != YAMLX_SEQ)
        return yamlx_errorf(ctx->d, n,
                            "%s: expected a URL, or a list of the URLs of a quorum's masters, "
                            "got a mapping",
                            what);
    if (n->nitems == 0 || n->nitems > BATON_QUORUM_MAX)
        return yamlx_errorf(ctx->d, n,
                            "%s: a list is a Redlock quorum of 3 to %d masters (an odd number); "
                            "this one has %zu",
                            what, BATON_QUORUM_MAX, n->nitems);
    for (size_t i = 0; i < n->nitems; i++) {
        if (yamlx_expect_scalar(ctx->d, n->items[i], what, "a redis:// URL") != 0)
            return -1;
        urls[i] = n->items[i]->str;
    }
    int rc = baton_url_join(urls, (int)n->nitems, &joined, &bad, msg, sizeof msg);
    if (rc != BATON_OK)
        return yamlx_errorf(ctx->d, bad >= 0 ? n->items[bad] : n, "%s: %s", what,
                            rc == BATON_ENOMEM ? "out of memory" : msg);
    free(c->redis);
    c->redis = joined;
    return 0;
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

/* http.listen: "off", or an address this build can serve on. */
static int check_http_listen(const char *s, char *msg, size_t msglen)
{
    struct http_listen l;

    if (strcmp(s, "off") == 0)
        return 0;
    if (http_listen_parse(s, &l, msg, msglen) != 0)
        return -1;
    return dynlib_mhd_open(NULL, 0, msg, msglen);
}

/* http.allowed_hosts: a host name or a list of them, kept comma-separated
 * ("" for none), which is what http_start() takes. */
static int set_allowed_hosts(void *obj, struct schema_ctx *ctx, const struct yamlx_node *n,
                             const char *what)
{
    struct config *c = obj;
    const struct yamlx_node *one = n;
    const struct yamlx_node *const *items =
        n->kind == YAMLX_SEQ ? (const struct yamlx_node *const *)n->items : &one;
    size_t count = n->kind == YAMLX_SEQ ? n->nitems : 1, len = 0;
    char joined[HTTP_MAX_HOSTS + 1] = "", msg[512], q[96];

    for (size_t i = 0; i < count; i++) {
        if (yamlx_expect_scalar(ctx->d, items[i], what, "a host name, or a list of them") != 0)
            return -1;
        if (http_allowed_name_check(items[i]->str, msg, sizeof msg) != 0)
            return yamlx_errorf(ctx->d, items[i], "%s: %s: %s", what,
                                yamlx_quote(items[i]->str, q, sizeof q), msg);
        int w =
            snprintf(joined + len, sizeof joined - len, "%s%s", i > 0 ? "," : "", items[i]->str);
        if (w < 0 || (size_t)w >= sizeof joined - len)
            return yamlx_errorf(ctx->d, items[i], "%s: at most %d characters of names", what,
                                HTTP_MAX_HOSTS);
        len += (size_t)w;
    }
    char *copy = strdup(joined);
    if (copy == NULL)
        return yamlx_errorf(ctx->d, n, "out of memory");
    free(c->http_allowed_hosts);
    c->http_allowed_hosts = copy;
    return 0;
}

static int default_allowed_hosts(void *obj, struct schema_ctx *ctx, char *msg, size_t msglen)
{
    struct config *c = obj;
    (void)ctx;
    c->http_allowed_hosts = strdup("");
    if (c->http_allowed_hosts == NULL) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    return 0;
}

static int set_labels(void *obj, struct schema_ctx *ctx, const struct yamlx_node *n,
                      const char *what)
{
    struct config *c = obj;
    char **v = NULL;

    if (labels_read(ctx->d, n, what, &v) != 0)
        return -1;
    job_strv_free(c->labels);
    c->labels = v;
    return 0;
}

static int default_labels(void *obj, struct schema_ctx *ctx, char *msg, size_t msglen)
{
    struct config *c = obj;
    (void)ctx;
    c->labels = calloc(1, sizeof *c->labels);
    if (c->labels == NULL) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    return 0;
}

static int default_node(void *obj, struct schema_ctx *ctx, char *msg, size_t msglen)
{
    struct config *c = obj;
    char host[256], buf[160];

    (void)ctx;
    if (gethostname(host, sizeof host) != 0) {
        snprintf(msg, msglen, "cannot get the host name: %s", strerror(errno));
        return -1;
    }
    host[sizeof host - 1] = '\0';
    /* Keep the default valid whatever the host is called. */
    for (char *p = host; *p != '\0'; p++)
        if (!in_charset((char[]){*p, '\0'}, "_.-"))
            *p = '-';
    /* The host name alone: stable across restarts, so that a node keeps
     * its name (and its row in `baton status`) when it comes back. */
    snprintf(buf, sizeof buf, "%.128s", host);
    c->node = strdup(buf);
    if (c->node == NULL) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    return 0;
}

static int default_renew(void *obj, struct schema_ctx *ctx, char *msg, size_t msglen)
{
    struct config *c = obj;
    (void)ctx;
    (void)msg;
    (void)msglen;
    c->lease_renew_ms = c->lease_ttl_ms / 3;
    return 0;
}

static int set_hook_failure(void *obj, struct schema_ctx *ctx, const struct yamlx_node *n,
                            const char *what)
{
    return job_cmd_read(ctx->d, n, what, &((struct config *)obj)->hook_on_failure);
}

static int set_hook_success(void *obj, struct schema_ctx *ctx, const struct yamlx_node *n,
                            const char *what)
{
    return job_cmd_read(ctx->d, n, what, &((struct config *)obj)->hook_on_success);
}

/* ------------------------------------------------------------------------ */
/* The table */

const char *const log_level_names[] = {"debug", "info", "warn", "error", NULL};
const char *const log_format_names[] = {"auto", "json", "text", NULL};

#define OFF(f) offsetof(struct config, f)

/* clang-format off */
static const struct schema_field options[] = {
    {.key = "node", .type = SCHEMA_STRING, .offset = OFF(node),
     .def_doc = "the host name", .def_fn = default_node, .min = 1, .max = 128,
     .check = check_node, .bounds_doc = "letters, digits, _ . : -; 1-128 chars",
     .doc = "This node's name in logs, `baton status` and the leader key; unique in the group."},
    {.key = "redis", .type = SCHEMA_STRING, .offset = OFF(redis),
     .def = "redis://127.0.0.1:6379/0", .min = 1, .max = 4096, .check = check_redis_url,
     .set_node = set_redis_list, .flags = SCHEMA_SECRET, .type_doc = "string or list",
     .bounds_doc = "redis://[[user]:pass@]host[:port][/db], rediss://...[?ca=&cert=&key=&sni=&"
                   "verify=], unix:///path[?db=N&user=U&password=P], "
                   "redis-sentinel://h1:26379,h2:26379[/db]?master=NAME (rediss-sentinel:// for "
                   "TLS), redis-cluster://h1:7000,h2:7001 (seed nodes; rediss-cluster:// for TLS), "
                   "redis-quorum://h1,h2,h3[/db][?max_ttl=MS&node_timeout=MS] (rediss-quorum:// "
                   "for TLS), or a list of 3, 5, 7 or 9 redis:// (rediss://) URLs: the same quorum",
     .doc = "The Redis server holding the leader lease, tick claims and run history (with "
            "Redis Cluster, the group's keys share the hash tag {group}: one slot; with a "
            "Redlock quorum, every master holds them and a majority decides)."},
    {.key = "group", .type = SCHEMA_STRING, .offset = OFF(group),
     .def = "default", .min = 1, .max = 64, .check = check_group,
     .bounds_doc = "letters, digits, _ . -; 1-64 chars",
     .doc = "Nodes with the same group elect one leader and run one jobs.yaml."},
    {.key = "lease.ttl", .type = SCHEMA_DURATION, .offset = OFF(lease_ttl_ms),
     .def = "10s", .min = 100, .max = 10 * MS_MINUTE,
     .doc = "Lifetime of the leader lease: a crashed leader is replaced after at most this long."},
    {.key = "lease.renew", .type = SCHEMA_DURATION, .offset = OFF(lease_renew_ms),
     .def_doc = "lease.ttl / 3", .def_fn = default_renew, .min = 10, .max = 5 * MS_MINUTE,
     .doc = "How often the leader extends its lease."},
    {.key = "poll", .type = SCHEMA_DURATION, .offset = OFF(poll_ms),
     .def = "5s", .min = MS_SECOND, .max = MS_HOUR,
     .doc = "Followers' safety-net check of the lease (they are woken at once on release and "
            "at the lease's expiry anyway)."},
    {.key = "shutdown_grace", .type = SCHEMA_DURATION, .offset = OFF(shutdown_grace_ms),
     .def = "30s", .min = 0, .max = MS_HOUR,
     .doc = "On SIGTERM, how long running jobs may go on before they get SIGTERM, then SIGKILL."},
    {.key = "redis_timeout", .type = SCHEMA_DURATION, .offset = OFF(redis_timeout_ms),
     .def = "1s", .min = 10, .max = MS_MINUTE,
     .doc = "Timeout of a Redis connect and of each Redis command."},
    {.key = "jobs", .type = SCHEMA_PATH, .offset = OFF(jobs_path),
     .def = "jobs.yaml", .min = 1, .max = 4096,
     .doc = "Path of jobs.yaml; a relative path is relative to this file's directory."},
    {.key = "timezone", .type = SCHEMA_STRING, .offset = OFF(timezone),
     .def = "UTC", .min = 1, .max = 255, .check = check_timezone,
     .bounds_doc = "an IANA zone name",
     .doc = "Time zone of the jobs that do not set their own."},
    {.key = "log.level", .type = SCHEMA_ENUM, .offset = OFF(log_level),
     .def = "info", .names = log_level_names,
     .doc = "Least severe log lines written."},
    {.key = "log.format", .type = SCHEMA_ENUM, .offset = OFF(log_format),
     .def = "auto", .names = log_format_names,
     .doc = "Log lines as JSON (for machines) or text (one readable line per event, as "
            "`baton logs` prints); auto: text when stdout is a terminal, else JSON."},
    {.key = "history.runs", .type = SCHEMA_INT, .offset = OFF(history_len),
     .def = "100", .min = 1, .max = 100000, .flags = SCHEMA_SHORTHAND,
     .doc = "Runs kept per job in Redis for `baton history` and `baton status` (Redis trims "
            "whole blocks of the stream, so a few more may stay)."},
    {.key = "history.output_bytes", .type = SCHEMA_INT, .offset = OFF(output_bytes),
     .def = "16384", .min = 0, .max = 1048576,
     .doc = "The last bytes of each run's output (stdout and stderr, in arrival order) kept "
            "with its record, for `baton history --output` and hooks; 0 keeps none. Output "
            "costs Redis about (history.runs + 1) x output_bytes per job, and the supervisor "
            "output_bytes per run alive."},
    {.key = "hooks.on_failure", .type = SCHEMA_NODE, .offset = OFF(hook_on_failure),
     .set_node = set_hook_failure, .def_doc = "none", .type_doc = "command",
     .doc = "Every job's on_failure hook, unless the job or jobs.yaml's defaults: set one: "
            "[\"prog\", \"arg\"] or {shell: \"...\"}."},
    {.key = "hooks.on_success", .type = SCHEMA_NODE, .offset = OFF(hook_on_success),
     .set_node = set_hook_success, .def_doc = "none", .type_doc = "command",
     .doc = "Every job's on_success hook, likewise."},
    {.key = "hooks.timeout", .type = SCHEMA_DURATION, .offset = OFF(hook_timeout_ms),
     .def = "30s", .min = 100, .max = MS_HOUR,
     .doc = "Every job's hook_timeout, unless the job or defaults: set one."},
    {.key = "password_file", .type = SCHEMA_STRING, .offset = OFF(password_file),
     .def = "none", .min = 1, .max = 4096, .check = check_secret_path,
     .bounds_doc = "an absolute path, or none",
     .doc = "File whose first line is the Redis password (mode 0600, else a warning); wins over "
            "BATON_REDIS_PASSWORD, which wins over the URL's."},
    {.key = "sentinel_password_file", .type = SCHEMA_STRING, .offset = OFF(sentinel_password_file),
     .def = "none", .min = 1, .max = 4096, .check = check_secret_path,
     .bounds_doc = "an absolute path, or none",
     .doc = "redis-sentinel:// URLs: file whose first line is the sentinels' own password; wins "
            "over BATON_SENTINEL_PASSWORD, which wins over the URL's sentinel_password=."},
    {.key = "min_replicas", .type = SCHEMA_INT, .offset = OFF(min_replicas),
     .def = "0", .min = 0, .max = 16,
     .doc = "Leader lease and tick claims count only once WAIT says this many replicas have "
            "them, within the lease's deadline (0: off). Keeps them across a Sentinel or Cluster failover."},
    {.key = "http.listen", .type = SCHEMA_STRING, .offset = OFF(http_listen),
     .def = "off", .min = 1, .max = 255, .check = check_http_listen,
     .bounds_doc = "off, host:port, [address]:port or unix:/path",
     .doc = "Where `baton run` serves /metrics (Prometheus), /healthz, /readyz, /status (JSON) "
            "and / (a status page); off: no HTTP server. Read-only unless http.control; keep "
            "it on a private address (127.0.0.1:9746), or serve it over http.tls."},
    {.key = "http.allowed_hosts", .type = SCHEMA_NODE, .offset = OFF(http_allowed_hosts),
     .set_node = set_allowed_hosts, .def_fn = default_allowed_hosts, .def_doc = "none",
     .type_doc = "list of names",
     .bounds_doc = "host names; `*.example.com` for every name under it",
     .doc = "Host names the HTTP endpoint answers to besides IP addresses, localhost, the "
            "machine's host name and http.listen's host; a request naming another Host gets "
            "421 (DNS rebinding). The port is not checked; a Unix socket answers any Host."},
    {.key = "http.control", .type = SCHEMA_BOOL, .offset = OFF(http_control), .def = "false",
     .doc = "Serve the control API beside the read-only paths: POST /jobs/JOB/trigger, "
            "/jobs/JOB/pause, /jobs/JOB/resume, /pause-all, /resume-all, /step-down, and GET "
            "/jobs/JOB/runs, /runs/ID/output; every path but /healthz and /readyz then needs a "
            "bearer token of http.tokens_file."},
    {.key = "http.tokens_file", .type = SCHEMA_STRING, .offset = OFF(http_tokens_file),
     .def = "none", .min = 1, .max = 4096, .check = check_secret_path,
     .bounds_doc = "an absolute path, or none",
     .doc = "The control API's tokens (`baton token new`): names, roles (read, operate) and "
            "SHA-256 hashes; mode 0600 or 0640, else refused; read again on SIGHUP."},
    {.key = "http.public_read", .type = SCHEMA_BOOL, .offset = OFF(http_public_read),
     .def = "false",
     .doc = "With http.control: /, /status and /metrics answer without a token (the control "
            "paths still need one)."},
    {.key = "http.insecure", .type = SCHEMA_BOOL, .offset = OFF(http_insecure), .def = "false",
     .doc = "Allow http.control on a plain-HTTP listener that is not a loopback address or a "
            "Unix socket (tokens then cross the network in the clear)."},
    {.key = "http.tls.cert", .type = SCHEMA_STRING, .offset = OFF(http_tls_cert), .def = "none",
     .min = 1, .max = 4096, .check = check_secret_path,
     .bounds_doc = "an absolute path, or none",
     .doc = "Serve the HTTP endpoint over TLS (libmicrohttpd's GnuTLS) with this PEM certificate "
            "(the server's first, then its chain); with http.tls.key. Read again on SIGHUP: new "
            "connections get the new certificate."},
    {.key = "http.tls.key", .type = SCHEMA_STRING, .offset = OFF(http_tls_key), .def = "none",
     .min = 1, .max = 4096, .check = check_secret_path,
     .bounds_doc = "an absolute path, or none",
     .doc = "The PEM private key of http.tls.cert, without a passphrase; mode 0640 at most, "
            "else refused."},
    {.key = "labels", .type = SCHEMA_NODE, .offset = OFF(labels), .set_node = set_labels,
     .def_fn = default_labels, .def_doc = "none", .type_doc = "list of labels",
     .bounds_doc = "at most 16, each 1-64 letters, digits, _ . -",
     .doc = "This node's labels, published in its heartbeat and shown by `baton status` "
            "(for jobs' run_on: {labels: [...]})."},
    {.key = "capacity", .type = SCHEMA_INT, .offset = OFF(capacity), .def = "4",
     .min = 0, .max = 1000000,
     .doc = "The most runs this node takes at once from the fleet (jobs whose run_on is not "
            "leader; the leader's own jobs do not count), published in its heartbeat. A SIGHUP "
            "applies a new value (and new labels) at once; runs taken beyond a lowered one "
            "finish."},
};
/* clang-format on */

#define NOPTS (sizeof options / sizeof options[0])

static const struct schema config_schema_ = {.fields = options, .n = NOPTS};

const struct schema *config_schema(void)
{
    return &config_schema_;
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

/* Over a quorum: the lease is a lock, which a quorum grants for at most
 * max_ttl (a restarted master is kept out that long). */
static int check_quorum_ttl(const struct config *c, char *msg, size_t msglen)
{
    int masters = 0;
    int64_t max_ttl = 0, node_timeout = 0;
    char ttl[32], mt[32];
    if (baton_url_quorum(c->redis, &masters, &max_ttl, &node_timeout, NULL, 0) != BATON_OK ||
        masters == 0 || c->lease_ttl_ms <= max_ttl)
        return 0;
    snprintf(msg, msglen,
             "lease.ttl (%s) must be at most the quorum's max_ttl (%s): a quorum keeps a "
             "restarted master out for max_ttl, which must cover every lease (raise max_ttl= in "
             "a redis-quorum:// URL)",
             yamlx_format_duration(c->lease_ttl_ms, ttl, sizeof ttl),
             yamlx_format_duration(max_ttl, mt, sizeof mt));
    return -1;
}

/* Over a quorum: each master is given node_timeout to connect and
 * node_timeout to answer; a call as a whole ends by redis_timeout. */
static int check_quorum_timeout(const struct config *c, char *msg, size_t msglen)
{
    int masters = 0;
    int64_t max_ttl = 0, node_timeout = 0;
    char to[32], nt[32];
    if (baton_url_quorum(c->redis, &masters, &max_ttl, &node_timeout, NULL, 0) != BATON_OK ||
        masters == 0 || c->redis_timeout_ms >= 2 * node_timeout)
        return 0;
    snprintf(msg, msglen,
             "redis_timeout (%s) must be at least 2 x the quorum's node_timeout (%s): a master "
             "is given node_timeout to connect and node_timeout to answer, within redis_timeout",
             yamlx_format_duration(c->redis_timeout_ms, to, sizeof to),
             yamlx_format_duration(node_timeout, nt, sizeof nt));
    return -1;
}

bool http_tls_on(const struct config *c)
{
    return strcmp(c->http_tls_cert, "none") != 0 && strcmp(c->http_tls_key, "none") != 0;
}

/* http.tls: both files, or neither; and a libmicrohttpd with TLS. */
static int check_http_tls(const struct config *c, char *msg, size_t msglen)
{
    bool cert = strcmp(c->http_tls_cert, "none") != 0, key = strcmp(c->http_tls_key, "none") != 0;
    if (cert != key) {
        snprintf(msg, msglen, "http.tls needs both cert and key (%s is missing)",
                 cert ? "key" : "cert");
        return -1;
    }
    if (!cert || strcmp(c->http_listen, "off") == 0)
        return 0;
    return dynlib_mhd_tls(msg, msglen);
}

/* http.control needs its tokens, and keeps them off the network in the
 * clear unless told (TLS, or http.insecure). */
static int check_http_control(const struct config *c, char *msg, size_t msglen)
{
    struct http_listen l;
    char why[256];
    if (!c->http_control)
        return 0;
    if (strcmp(c->http_tokens_file, "none") == 0) {
        snprintf(msg, msglen,
                 "http.control needs http.tokens_file (make one with 'baton token "
                 "new NAME --role operate --file FILE')");
        return -1;
    }
    if (strcmp(c->http_listen, "off") == 0 || c->http_insecure || http_tls_on(c) ||
        http_listen_parse(c->http_listen, &l, why, sizeof why) != 0 || l.unix_socket ||
        http_listen_loopback(&l))
        return 0;
    snprintf(msg, msglen,
             "http.control on a plain-HTTP listener that is not loopback (%s) sends tokens in the "
             "clear: give it http.tls: {cert, key}, listen on 127.0.0.1 or a Unix socket, or "
             "write http.insecure: true",
             c->http_listen);
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
    {{"lease.ttl", "redis", NULL},
     check_quorum_ttl,
     "Over a Redlock quorum, `lease.ttl` <= its `max_ttl`: a restarted master is kept out of "
     "the majority for max_ttl, which must cover every lease."},
    {{"redis_timeout", "redis", NULL},
     check_quorum_timeout,
     "Over a Redlock quorum, `redis_timeout` >= 2 x its `node_timeout`: each master is given "
     "node_timeout to connect and node_timeout to answer, within redis_timeout."},
    {{"http.tls.cert", "http.tls.key", "http.listen"},
     check_http_tls,
     "`http.tls` needs both `cert` and `key`, and a libmicrohttpd built with TLS."},
    {{"http.control", "http.listen", "http.tokens_file"},
     check_http_control,
     "`http.control` needs `http.tokens_file`, and `http.tls`, a loopback or Unix-socket "
     "`http.listen` or `http.insecure: true`."},
};

/* ------------------------------------------------------------------------ */
/* Parsing */

struct parse {
    struct config *c;
    struct schema_ctx ctx;
    schema_at at[NOPTS]; /* where each option was set */
};

static int check_relations(struct parse *p)
{
    for (size_t i = 0; i < sizeof relations / sizeof relations[0]; i++) {
        const struct relation *r = &relations[i];
        const struct yamlx_node *at = NULL;
        char msg[512];

        if (r->check(p->c, msg, sizeof msg) == 0)
            continue;
        for (size_t k = 0; k < 3 && r->keys[k] != NULL && at == NULL; k++) {
            int fi = schema_find(&config_schema_, r->keys[k]);

            if (fi >= 0)
                at = p->at[fi];
        }
        return yamlx_errorf(p->ctx.d, at, "%s", msg);
    }
    return 0;
}

int config_load_buffer(const char *name, const char *buf, size_t len, struct config **out,
                       char *err, size_t errlen)
{
    struct yamlx_diag d = {name, err, errlen};
    struct parse p = {.ctx.d = &d};
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
    p.ctx.dir = dir;
    if (yamlx_parse(buf, len, &d, &root) != 0)
        goto out_free;
    if (root != NULL && root->kind != YAMLX_MAP) {
        yamlx_errorf(&d, root, "expected a mapping of options (key: value), got %s",
                     yamlx_kind_name(root));
        goto out_free;
    }
    if (root != NULL && schema_read_map(&config_schema_, &p.ctx, root, p.c, p.at, "", false) != 0)
        goto out_free;
    if (schema_apply_defaults(&config_schema_, &p.ctx, p.c, p.at, NULL, "") != 0 ||
        check_relations(&p) != 0)
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
    schema_free_strings(&config_schema_, c);
    job_cmd_clear(&c->hook_on_failure);
    job_cmd_clear(&c->hook_on_success);
    free(c->http_allowed_hosts);
    job_strv_free(c->labels);
    free(c);
}

#ifndef BATON_SYSCONFDIR
#define BATON_SYSCONFDIR "/etc"
#endif

const char *config_sys_path(void)
{
    return BATON_SYSCONFDIR "/baton/baton.yaml";
}

const char *config_default_path(void)
{
    /* The install's own directory first (/etc/baton for the package and a
     * build configured for the prefix /usr, /usr/local/etc/baton for the
     * default prefix), then /etc/baton, where `cmake --install --prefix
     * /usr` puts the samples of a build configured for another prefix. */
    static const char *const paths[] = {"baton.yaml", BATON_SYSCONFDIR "/baton/baton.yaml",
                                        "/etc/baton/baton.yaml"};

    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        /* A file behind a directory this user cannot search (/etc/baton is
         * 0750 root:baton) may exist: opening it says why it cannot be
         * read, rather than "no configuration". (A working directory that
         * cannot be searched, after su, is no reason to stop looking.) */
        if (access(paths[i], F_OK) == 0 || (errno == EACCES && paths[i][0] == '/'))
            return paths[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Output */

void config_write_reference(FILE *out)
{
    schema_write_reference(&config_schema_, out);
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

/* A hook command as YAML on one line, in JSON's syntax (a subset of
 * YAML's): ["a", "b c"], {shell: "..."} or [] for none. */
static void write_cmd(const char *key, const struct job_cmd *cmd, FILE *out)
{
    cJSON *v = NULL;
    char *text;

    if (cmd->shell != NULL) {
        v = cJSON_CreateString(cmd->shell);
    } else {
        v = cJSON_CreateArray();
        for (size_t i = 0; v != NULL && cmd->argv != NULL && cmd->argv[i] != NULL; i++)
            cJSON_AddItemToArray(v, cJSON_CreateString(cmd->argv[i]));
    }
    text = v != NULL ? cJSON_PrintUnformatted(v) : NULL;
    if (text == NULL)
        fprintf(out, "%s: (out of memory)\n", key);
    else if (cmd->shell != NULL)
        fprintf(out, "%s: {shell: %s}\n", key, text);
    else
        fprintf(out, "%s: %s\n", key, text);
    free(text);
    cJSON_Delete(v);
}

/* names, comma-separated, as a YAML flow list of strings. */
static void write_names(const char *key, const char *names, FILE *out)
{
    fprintf(out, "%s: [", key);
    for (const char *p = names; p != NULL && *p != '\0';) {
        const char *end = strchr(p, ',');
        int len = end != NULL ? (int)(end - p) : (int)strlen(p);
        fprintf(out, "%s\"%.*s\"", p == names ? "" : ", ", len, p);
        p = end != NULL ? end + 1 : NULL;
    }
    fputs("]\n", out);
}

void config_write_effective(const struct config *c, FILE *out)
{
    schema_write_values(&config_schema_, c, out, write_masked_url);
    write_cmd("hooks.on_failure", &c->hook_on_failure, out);
    write_cmd("hooks.on_success", &c->hook_on_success, out);
    write_names("http.allowed_hosts", c->http_allowed_hosts, out);
    fputs("labels: [", out);
    for (size_t i = 0; c->labels != NULL && c->labels[i] != NULL; i++)
        fprintf(out, "%s\"%s\"", i > 0 ? ", " : "", c->labels[i]);
    fputs("]\n", out);
}

int config_load_jobs(const struct config *c, struct jobs **out, char *err, size_t errlen)
{
    struct jobs_base base = {.timezone = c->timezone,
                             .on_failure = &c->hook_on_failure,
                             .on_success = &c->hook_on_success,
                             .hook_timeout_ms = c->hook_timeout_ms,
                             .group = c->group};
    int masters = 0;
    int64_t max_ttl, node_timeout;

    base.quorum = baton_url_quorum(c->redis, &masters, &max_ttl, &node_timeout, NULL, 0) ==
                      BATON_OK &&
                  masters > 0;
    return jobs_load_base(c->jobs_path, &base, out, err, errlen);
}
