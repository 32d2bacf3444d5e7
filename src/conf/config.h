/* config.h -- baton.yaml: the supervisor's configuration.
 *
 * Every option is one row of a table (config.c, `options[]`): key, type,
 * field, default, bounds and documentation, read by the schema engine
 * (schema.h) that jobs.yaml shares. Parsing, defaults, validation, the
 * options reference (`config_write_reference`) and the effective
 * configuration (`config_write_effective`) all read that table, so adding an
 * option is adding a row. The table is exposed read-only through
 * config_schema() so that tests can loop over it.
 *
 * Errors are "file:line:col: message" (1-based, pointing at the offending key
 * or value) and reject the file whole: on error nothing is returned.
 *
 * Choices (see also config/baton.yaml):
 *   - An empty file (or one holding only comments, or `---`) means "all
 *     defaults". A missing file is an error.
 *   - YAML anchors, aliases and tags are rejected: a config file should read
 *     the same to a human as to baton. Only one document per file.
 *   - Lease arithmetic: lease.ttl >= 2 x lease.renew + redis_timeout, i.e. a
 *     renewal that times out after the full redis_timeout still leaves room
 *     for one more renewal before the lease runs out (one lost renewal never
 *     costs the leadership). poll >= redis_timeout, so that safety-net polls
 *     never overlap.
 */
#ifndef BATON_CONFIG_H
#define BATON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jobs.h"      /* struct job_cmd, struct jobs_base */
#include "log_level.h" /* enum log_level, enum log_format */

struct config {
    char *path;                /* the file it came from (owned) */
    char *node;                /* default: the host name; [A-Za-z0-9_.:-]{1,128} */
    char *redis;               /* Redis URL; default redis://127.0.0.1:6379/0 */
    char *group;               /* default "default"; [A-Za-z0-9_.-]{1,64} */
    int64_t lease_ttl_ms;      /* lease.ttl, default 10s */
    int64_t lease_renew_ms;    /* lease.renew, default ttl/3 */
    int64_t poll_ms;           /* poll, default 5s: follower safety-net poll */
    int64_t shutdown_grace_ms; /* default 30s */
    int64_t redis_timeout_ms;  /* redis_timeout (connect+command), default 1s */
    char *jobs_path;           /* jobs: path to jobs.yaml, resolved relative to the
                                  config file's directory; default "jobs.yaml"
                                  beside it */
    char *timezone;            /* default zone for jobs; default "UTC" (checked
                                  with cron_tz_load at load) */
    enum log_level log_level;  /* log.level: debug|info|warn|error, default info */
    enum log_format log_format; /* log.format: auto|json|text, default auto */
    int64_t history_len;       /* history.runs (or `history: N`): runs kept per job
                                  in Redis, default 100 (1..100000) */
    int64_t output_bytes;      /* history.output_bytes: the tail of each run's
                                  output kept with its record, default 16384
                                  (0: none; at most 1 MiB) */
    struct job_cmd hook_on_failure; /* hooks.on_failure: every job's, unless it or
                                       defaults: sets its own */
    struct job_cmd hook_on_success; /* hooks.on_success */
    int64_t hook_timeout_ms;        /* hooks.timeout, default 30s */
    char *password_file;          /* the data nodes' password, first line; "none" */
    char *sentinel_password_file; /* the sentinels' password, first line; "none" */
    int64_t min_replicas;         /* WAIT for this many replicas (0..16), default 0 */
    char *http_listen;         /* http.listen: "off" (default), host:port,
                                  [v6]:port or unix:/path (http.h) */
    char *http_allowed_hosts;  /* http.allowed_hosts: names, comma-separated;
                                  "" (default) for none */
    bool http_control;         /* http.control: the control API (off) */
    char *http_tokens_file;    /* http.tokens_file: tokens.h; "none" (default) */
    bool http_public_read;     /* http.public_read: read paths without a token */
    bool http_insecure;        /* http.insecure: control over plain HTTP off loopback */
    char *http_tls_cert;       /* http.tls.cert: PEM chain (tlsfiles.h); "none" (default) */
    char *http_tls_key;        /* http.tls.key: its PEM private key; "none" (default) */
    char **labels;             /* this node's labels (labels.h), NULL-terminated;
                                  empty by default */
    int64_t capacity;          /* the most runs this node takes at once from the
                                  fleet (run_on other than leader), default 4 */
};

/* Loads path. Returns 0 and *out (owned; free with config_free), or -1 with
 * err = "path:line:col: message" (or "path: message" when the file cannot be
 * read) and *out NULL: the file is rejected whole. err is always
 * NUL-terminated when errlen > 0. */
int config_load(const char *path, struct config **out, char *err, size_t errlen);

/* Same from memory (buf need not be NUL-terminated); name is used in messages
 * and as config->path, and its directory resolves a relative `jobs:`. */
int config_load_buffer(const char *name, const char *buf, size_t len, struct config **out,
                       char *err, size_t errlen);

/* Frees c and everything it owns. NULL is a no-op. */
void config_free(struct config *c);

/* True when http.tls is set (its cert and key). */
bool http_tls_on(const struct config *c);

/* Loads c's jobs.yaml with what c gives every job (timezone, hooks:): the
 * jobs as `baton run` runs them. Same contract as jobs_load(). */
int config_load_jobs(const struct config *c, struct jobs **out, char *err, size_t errlen);

/* Without -c: "baton.yaml" (in the working directory), then config_sys_path(),
 * then "/etc/baton/baton.yaml". Returns: the first that exists, or that this
 * user cannot tell exists (a directory on its path is not searchable: its
 * load then says so); a static string; or NULL. */
const char *config_default_path(void);

/* The install's baton.yaml: SYSCONFDIR/baton/baton.yaml, SYSCONFDIR being
 * CMake's CMAKE_INSTALL_FULL_SYSCONFDIR (/etc for the prefix /usr,
 * /usr/local/etc for /usr/local). Returns: a static string. */
const char *config_sys_path(void);

/* Writes the options reference, a Markdown table (key, type, default, bounds,
 * meaning), and the relations checked at load: for the docs and `baton
 * check`. */
void config_write_reference(FILE *out);

/* Writes the effective configuration, one `key: value` per line in table
 * order, dotted keys (`lease.ttl: 10s`); the Redis URL as the library
 * redacts it (its password as "***"). For `baton check`. */
void config_write_effective(const struct config *c, FILE *out);

/* Returns: the options table (schema.h; borrowed, static), for tests and
 * tools. */
struct schema;
const struct schema *config_schema(void);

#endif /* BATON_CONFIG_H */
