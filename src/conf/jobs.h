/* jobs.h -- jobs.yaml: the jobs the leader runs.
 *
 *   pools:               # optional: fleet-wide limits, name: at most N runs
 *     exports: 3         #   at once of the jobs with `pool: exports`
 *   defaults:            # optional: applied to every job (not name,
 *     timeout: 10m       # schedule, command or shell); env merges
 *   jobs:
 *     - name: daily-report
 *       schedule: "0 7 * * MON-FRI"
 *       command: ["/usr/local/bin/report", "--daily"]
 *
 * Every job key is one row of a table (jobkeys.c, `job_keys[]`) that the schema
 * engine (schema.h, shared with baton.yaml) reads for parsing, defaults and
 * the reference; it is exposed read-only through jobs_schema() for tests. Errors are "file:line:col: message" pointing at the
 * offending key or value, prefixed with `job "NAME": ` (or `job N: ` before
 * the name is known); the file is rejected whole.
 *
 * Choices: an empty file, or `jobs:` empty, is a valid set of no jobs. YAML
 * anchors, aliases and tags are rejected (use defaults: instead). A disabled
 * job (enabled: false) is still validated and kept in the set.
 */
#ifndef BATON_JOBS_H
#define BATON_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cron_expr;
struct cron_tz;

enum job_concurrency { JOB_FORBID, JOB_ALLOW, JOB_REPLACE };

/* Where a job's runs go (run_on): the leader's own node (the default), one
 * live member chosen by the leader, one carrying every label, or every
 * live member (group/assign.h). */
enum job_run_on { JOB_RUN_ON_LEADER, JOB_RUN_ON_ANY, JOB_RUN_ON_LABELS, JOB_RUN_ON_ALL };

/* A command baton runs beside a job (a hook): an argv, or a shell line, or
 * neither (none: unset, or turned off with `[]`). Owned by what holds it. */
struct job_cmd {
    char **argv;  /* ["prog", "arg"...], NULL-terminated; or NULL */
    char *shell;  /* run as /bin/sh -c "..."; or NULL */
};

/* True when c names a command to run. */
bool job_cmd_set(const struct job_cmd *c);
/* Reads a hook command: a sequence (argv; `[]` is none) or {shell: "..."}.
 * what names it in messages. Returns 0 and *out (its old value freed), or
 * -1 with "file:line:col: WHAT: message" in d. */
struct yamlx_diag;
struct yamlx_node;
int job_cmd_read(const struct yamlx_diag *d, const struct yamlx_node *n, const char *what,
                 struct job_cmd *out);
/* Copies src into dst (dst's old value freed). Returns 0 or -1 (ENOMEM). */
int job_cmd_copy(struct job_cmd *dst, const struct job_cmd *src);
/* Frees what c holds and zeroes it. */
void job_cmd_clear(struct job_cmd *c);

#define JOB_CATCHUP_LAST (-1) /* catchup: last (default) */

struct job {
    char *name;                       /* unique, [A-Za-z0-9_.-]{1,128} (it goes into Redis keys) */
    char *schedule;                   /* as written */
    struct cron_expr *expr;           /* parsed (cron.h); owned by the job */
    char *timezone;                   /* job's zone, else defaults:, else the config's */
    struct cron_tz *tz;               /* loaded; borrowed from the set (zones are shared
                                         between jobs): valid until jobs_free() */
    char **argv;                      /* command: ["prog", "arg"...], NULL-terminated; or
                                         NULL when shell is set */
    char *shell;                      /* shell: "..." run as /bin/sh -c; NULL when argv is
                                         set (exactly one of the two) */
    int64_t timeout_ms;               /* 0: none */
    int64_t kill_grace_ms;            /* SIGTERM->SIGKILL grace on timeout/stop; default 5s */
    enum job_concurrency concurrency; /* default forbid */
    int64_t catchup_ms;               /* JOB_CATCHUP_LAST (-1, default, `catchup: last`):
                                         run the most recent missed tick once; 0 disables;
                                         else the window */
    int64_t jitter_ms;                /* 0: none; else each tick's run begins a delay in
                                         [0, jitter_ms) after it (jitter.h), shorter than
                                         the schedule's shortest interval */
    const char *group;                /* the group that runs it (jobs_base.group; "" when
                                         loaded without one): the jitter's hash takes it.
                                         Borrowed from the set; not a key */
    int retries;                      /* default 0, at most 100 */
    int64_t retry_backoff_ms; /* default 10s; doubling per attempt is the runner's business */
    char **env;               /* "KEY=VALUE" strings sorted by KEY, NULL-terminated
                                 (may be empty); defaults: env merged under the
                                 job's own */
    char *workdir;            /* NULL: inherit; else an absolute path */
    char *user;               /* NULL: same user. Checked at load: the user exists
                                 (getpwnam_r), and baton runs as root unless it
                                 is the current user */
    bool enabled;             /* default true */
    struct job_cmd on_failure; /* run after a run that failed (and no retry follows);
                                  from the job, else defaults:, else baton.yaml's
                                  hooks.on_failure */
    struct job_cmd on_success; /* run after a run that succeeded; same layers */
    int64_t hook_timeout_ms;   /* a hook still going after this long gets SIGTERM,
                                  then SIGKILL after kill_grace; default baton.yaml's
                                  hooks.timeout (30s) */
    char *pool;      /* a name of the file's pools: (fleet-wide limit, runlimits.h); NULL: none */
    int pool_limit;  /* that pool's limit (0: no pool); in the fingerprint */
    int max_running; /* at most this many runs at once across the group (0: no limit);
                        concurrency allow only (forbid and replace keep at most one) */
    char **run_on;            /* normalized, NULL-terminated: {"leader"} (default), {"any"},
                                 {"all"}, or {"labels", label...}; see job_run_on() */
    int line, col;            /* where the job's mapping starts in the file */
    uint64_t fingerprint;     /* hash of the whole normalized definition, every key
                                 of the table as it applies (defaults, baton.yaml's
                                 hooks and timezone included), not the position:
                                 equal fingerprints = unchanged job (SIGHUP reload,
                                 config drift between nodes) */
};

/* One pool of `pools:` (jobs.yaml, top level): at most limit runs of its jobs
 * at once across the group. */
struct job_pool {
    char *name;   /* the job-name rule (job_name_ok) */
    int limit;    /* >= 1 */
    size_t njobs; /* the jobs that use it: at most JOBS_POOL_MAX */
};

struct jobs {
    char *path;    /* the file it came from (owned) */
    struct job *v; /* in file order */
    size_t n;
    struct job_pool *pools; /* in file order (owned) */
    size_t npools;
    struct cron_tz **zones; /* the distinct zones the jobs use (owned) */
    size_t nzones;
    char *group; /* jobs_base.group (owned; "" without one) */
};

/* What baton.yaml gives every job, under its own keys and defaults:
 * (borrowed for the load). */
struct jobs_base {
    const char *timezone;               /* NULL: "UTC" */
    const struct job_cmd *on_failure;   /* hooks.on_failure; NULL: none */
    const struct job_cmd *on_success;   /* hooks.on_success; NULL: none */
    int64_t hook_timeout_ms;            /* hooks.timeout; 0: the table's default */
    const char *group;                  /* the group (job.group); NULL: "" */
    bool quorum; /* redis: is a Redlock quorum: run_on other than leader is refused */
};

/* Loads path over base (NULL: no base). Returns 0 and *out (owned; free with
 * jobs_free), or -1 with err = "path:line:col: message" (or "path: message"
 * when the file cannot be read) and *out NULL. */
int jobs_load_base(const char *path, const struct jobs_base *base, struct jobs **out, char *err,
                   size_t errlen);
/* Same from memory (buf need not be NUL-terminated); name is used in
 * messages and as jobs->path. */
int jobs_load_buffer_base(const char *name, const char *buf, size_t len,
                          const struct jobs_base *base, struct jobs **out, char *err,
                          size_t errlen);
/* The same with a base of only default_tz, the config's timezone (NULL:
 * "UTC"). */
int jobs_load(const char *path, const char *default_tz, struct jobs **out, char *err,
              size_t errlen);
int jobs_load_buffer(const char *name, const char *buf, size_t len, const char *default_tz,
                     struct jobs **out, char *err, size_t errlen);

/* The fingerprint of a job read and normalized (the loaders set
 * job.fingerprint with it): FNV-1a over every key of the table. */
uint64_t job_fingerprint(const struct job *j);
/* A hash of the whole set as it behaves: of the jobs' fingerprints, sorted
 * (so that the order of the file does not count), and their number. Two
 * nodes with equal hashes run the same jobs the same way. */
uint64_t jobs_hash(const struct jobs *j);
#define JOBS_HASH_HEX 17 /* "%016" PRIx64 and its NUL */
/* Writes jobs_hash(j) as 16 hex digits into buf (JOBS_HASH_HEX bytes). */
const char *jobs_hash_hex(const struct jobs *j, char *buf, size_t len);
/* Frees j and everything it owns. NULL is a no-op. */
void jobs_free(struct jobs *j);
/* Returns: the job named name, or NULL. Borrowed; valid until jobs_free(j). */
const struct job *jobs_find(const struct jobs *j, const char *name);

/* Returns: "forbid", "allow" or "replace" (static). */
const char *job_concurrency_name(enum job_concurrency c);
/* Where j's runs go, and (JOB_RUN_ON_LABELS) the labels its node must
 * carry: *labels (NULL-terminated, borrowed from j; may be NULL). */
enum job_run_on job_run_on(const struct job *j, char *const **labels);

/* Writes the jobs.yaml key reference, a Markdown table (key, type, default,
 * bounds, meaning), from the key table. */
void jobs_write_reference(FILE *out);

/* The one job-name rule ([A-Za-z0-9_.-]{1,128}: names go into Redis keys
 * and logs), for the file and for the tools that take a job name. */
#define JOB_NAME_MAX 128
/* Jobs in one pool at most: a claim counts the runs of each of them in its
 * script, one key each (runlimits.h). */
#define JOBS_POOL_MAX 256
bool job_name_ok(const char *s);
/* Returns: the rule in words, for messages. Static. */
const char *job_name_rule(void);

/* Returns: the job key table (schema.h; borrowed, static), for tests and
 * tools. */
struct schema;
const struct schema *jobs_schema(void);

#endif /* BATON_JOBS_H */
