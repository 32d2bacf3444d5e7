/* cmd_check.c -- `baton check [-c FILE] [--json] [--reference]`: validate
 * baton.yaml and its jobs.yaml, like `nginx -t`. Needs no Redis: only when
 * a job runs on members carrying labels (run_on {labels}) does it read the
 * group's last heartbeats, when Redis answers, to warn of a label that no
 * node carries (see label_warnings).
 *
 * On success prints the effective configuration (every option, defaults
 * included, passwords masked), then each job of jobs.yaml with its schedule,
 * zone, whether it is enabled, its command and its next three runs from now
 * (RFC 3339 UTC, followed by the wall time in the job's zone when that zone
 * is not UTC), and a last line saying the files are valid. Exit 0.
 *
 *   # /etc/baton/baton.yaml
 *   node: web-1
 *   ...
 *
 *   # jobs: /etc/baton/jobs.yaml (2 jobs, hash 9f2c41d07be3a511)
 *   job daily-report
 *     schedule: 0 7 * * MON-FRI
 *     zone:     Europe/Berlin
 *     enabled:  yes
 *     command:  /usr/local/bin/report --daily
 *     on_failure: /usr/local/bin/notify   (hooks, when the job has them)
 *     next:     2026-01-05T06:00:00Z  2026-01-05T07:00:00+01:00
 *               ...
 *   (with `jitter`, each next run is followed by "starts 2026-01-05T06:00:12.345Z",
 *   when its run begins: the tick and its delay)
 *
 *   ok: /etc/baton/baton.yaml and /etc/baton/jobs.yaml are valid (2 jobs)
 *
 * Beyond the files, what an enabled job needs on this machine is checked:
 * its program (and its hooks' programs) is found and executable (as the
 * runner will look for it, in baton's PATH), its workdir is a directory
 * baton can enter; with http.control, http.tokens_file is read as `baton
 * run` reads it (a missing file, a mode wider than 0640 and a line that
 * does not parse, with the file's line and column, are problems), and so
 * are http.tls's certificate and key. Each problem is
 * one line on stderr, "jobs.yaml:LINE:COL: job "NAME": workdir "/srv/app":
 * No such file or directory" (the job's position), after the listing.
 *
 * With --json, one object on stdout:
 *   {"valid": true|false, "config": PATH, "settings": {"node": "web-1",
 *    "lease.ttl": "10s", ..., "history": 100}, "jobs_file": PATH,
 *    "jobs_hash": "9f2c41d07be3a511" (as heartbeats carry it: jobs.h),
 *    "jobs": [{"name", "schedule", "timezone", "enabled", "command": [argv]
 *              | null, "shell": "..." | null, "workdir": PATH | null,
 *              "on_failure", "on_success": [argv] | {"shell": "..."} | null,
 *              "hook_timeout_ms": 30000,
 *              "jitter_ms": 0, "next_runs": ["2026-01-05T06:00:00Z", ...],
 *              "next_starts": ["2026-01-05T06:00:00.000Z", ...] (when each
 *              run begins: the tick and its jitter delay)}],
 *    "problems": ["..."], "warnings": ["..."] (labels no node carries,
 *    or that they could not be checked), "error": "file:line:col:
 *    message" (when a file is invalid: then the rest may be missing)}
 *
 * Exit: 0 valid; 78 invalid or a job's program/workdir missing (messages on
 * stderr); 64 bad argument.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "members.h"
#include "cron.h"
#include "docs.h"
#include "events.h"
#include "hook.h"
#include "jobs.h"
#include "proc.h"
#include "rfc3339.h"
#include "schedule.h"
#include "tlsfiles.h"
#include "tokens.h"
#include "tools.h"
#include "utf8.h"

#define CHECK_NEXT_RUNS 3

static int cmd_check(int argc, char **argv);

static const struct cli_opt opts[] = {
    TOOL_OPT_CONFIG,
    TOOL_OPT_JSON_ROW("print one JSON object: valid, config, settings, jobs_file, jobs "
                      "(with their next runs), problems"),
    {TOOL_OPT_REFERENCE, "reference", NULL,
     "print the reference of every baton.yaml and jobs.yaml key, every log event and the "
     "variables a job and a hook get (Markdown), and exit"},
    {0},
};

static const struct cli_exit exits[] = {
    {CLI_EXIT_OK, "the files are valid and every enabled job's program and workdir exist"},
    {CLI_EXIT_USAGE, "bad command line"},
    {CLI_EXIT_CONFIG,
     "a file is missing or invalid (\"file:line:col: message\"), or a job's program or "
     "workdir is missing (one line each)"},
    {-1, NULL},
};

const struct cli_cmd cli_cmd_check = {
    .name = "check",
    .operands = "",
    .summary = "validate baton.yaml and jobs.yaml, print each job's next runs",
    .description =
        "Validates baton.yaml and the jobs.yaml it names without contacting Redis, like "
        "'nginx -t', then prints the effective configuration (defaults included, passwords "
        "masked) and every job with its next three runs (UTC, and local time when the job's "
        "zone is not UTC).\n\n"
        "It also checks what each enabled job needs on this machine: its program is found "
        "in baton's PATH and is executable, its workdir is a directory. Each problem is one "
        "line, \"jobs.yaml:LINE:COL: job NAME: workdir /srv/app: No such file or directory\".\n\n"
        "With http.control on, it reads http.tokens_file as `baton run` does: a missing file, "
        "a mode other than 0600 or 0640 and a line that does not parse "
        "(\"tokens:LINE:COL: message\") are problems; so are http.tls's certificate and key "
        "(unreadable, or a key that does not match the certificate).\n\n"
        "When a job runs on members carrying labels (run_on: {labels: [...]}), it reads the "
        "group's last heartbeats from Redis and warns (exit status unchanged) of each label no "
        "node carries, alive or seen in the last minutes, nor this node's own labels; when "
        "Redis does not answer, a warning says the labels could not be checked.",
    .opts = opts,
    .exits = exits,
    .run = cmd_check,
};

static bool is_utc(const struct job *j)
{
    const char *z = j->timezone != NULL ? j->timezone : "UTC";
    return strcmp(z, "UTC") == 0 || strcmp(z, "Etc/UTC") == 0;
}

/* ---- what a job needs on this machine ---- */

/* Appends one problem of job j ("file:line:col: job "x": ...") to list. */
static void add_problem(cJSON *list, const struct jobs *js, const struct job *j, const char *what)
{
    char buf[5200];
    snprintf(buf, sizeof buf, "%s:%d:%d: job \"%s\": %s", js->path, j->line, j->col, j->name, what);
    cJSON_AddItemToArray(list, cJSON_CreateString(buf));
}

/* Checks that prog (the program of key: command, on_failure...) is found
 * and executable, the way the runner will look for it. */
static void check_program(cJSON *list, const struct jobs *js, const struct job *j, const char *key,
                          const char *prog)
{
    char what[4400], path[4096];
    int err = proc_resolve(prog, path, sizeof path);
    if (err == ENOENT && strchr(prog, '/') == NULL) {
        const char *p = getenv("PATH");
        snprintf(what, sizeof what, "%s \"%s\": not found in PATH (%s)", key, prog,
                 p != NULL && *p != '\0' ? p : "/usr/local/bin:/usr/bin:/bin");
        add_problem(list, js, j, what);
    } else if (err == EACCES) {
        snprintf(what, sizeof what, "%s \"%s\": not executable", key, path);
        add_problem(list, js, j, what);
    } else if (err != 0) {
        snprintf(what, sizeof what, "%s \"%s\": %s", key, prog, strerror(err));
        add_problem(list, js, j, what);
    }
}

/* Checks the program, hooks and workdir of every enabled job, the way the
 * runner will use them. Returns: a JSON array of messages (owned). */
static cJSON *job_problems(const struct jobs *js)
{
    cJSON *list = cJSON_CreateArray();
    char what[4400];
    for (size_t i = 0; list != NULL && i < js->n; i++) {
        const struct job *j = &js->v[i];
        if (!j->enabled)
            continue;
        if (j->workdir != NULL) {
            struct stat st;
            int err = 0;
            if (stat(j->workdir, &st) != 0)
                err = errno;
            else if (!S_ISDIR(st.st_mode))
                err = ENOTDIR;
            else if (j->user == NULL && access(j->workdir, X_OK) != 0)
                err = errno;
            if (err != 0) {
                snprintf(what, sizeof what, "workdir \"%s\": %s", j->workdir, strerror(err));
                add_problem(list, js, j, what);
            }
        }
        check_program(list, js, j, "command", j->argv != NULL ? j->argv[0] : "/bin/sh");
        if (job_cmd_set(&j->on_failure))
            check_program(list, js, j, "on_failure",
                          j->on_failure.argv != NULL ? j->on_failure.argv[0] : "/bin/sh");
        if (job_cmd_set(&j->on_success))
            check_program(list, js, j, "on_success",
                          j->on_success.argv != NULL ? j->on_success.argv[0] : "/bin/sh");
    }
    return list;
}

/* ---- the files of http ---- */

/* Reads http.tokens_file and http.tls's files as `baton run` does when it
 * starts its endpoint (tokens_load, tls_files_load: the same code, so the
 * same refusals: a missing file, a mode wider than 0640, a tokens line
 * that does not parse, with its file:line:col; a key that does not match
 * its certificate). Adds each error to list. */
static void http_problems(cJSON *list, const struct config *cfg)
{
    char err[1024], what[1200];
    if (strcmp(cfg->http_listen, "off") == 0)
        return;
    if (cfg->http_control) {
        struct token_set set = {0};
        if (tokens_load(cfg->http_tokens_file, &set, err, sizeof err) != 0) {
            snprintf(what, sizeof what, "%s (http.tokens_file of %s)", err, cfg->path);
            cJSON_AddItemToArray(list, cJSON_CreateString(what));
        }
        tokens_free(&set);
    }
    if (http_tls_on(cfg)) {
        struct tls_files tls = {0};
        if (tls_files_load(cfg->http_tls_cert, cfg->http_tls_key, &tls, err, sizeof err) != 0) {
            snprintf(what, sizeof what, "%s (http.tls of %s)", err, cfg->path);
            cJSON_AddItemToArray(list, cJSON_CreateString(what));
        }
        tls_files_free(&tls);
    }
}

/* ---- the labels of run_on {labels} ---- */

/* True when label is one of the node's labels (its heartbeat hb). */
static bool hb_has_label(const cJSON *hb, const char *label)
{
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(hb, "labels"))
    {
        if (cJSON_IsString(l) && strcmp(l->valuestring, label) == 0)
            return true;
    }
    return false;
}

/* True when label is carried by a node of m[0..n) (hb: their heartbeats),
 * or by this node's own baton.yaml (it carries them once it runs). */
static bool label_carried(const struct config *cfg, cJSON **hb, size_t n, const char *label)
{
    for (size_t i = 0; cfg->labels != NULL && cfg->labels[i] != NULL; i++)
        if (strcmp(cfg->labels[i], label) == 0)
            return true;
    for (size_t i = 0; i < n; i++)
        if (hb_has_label(hb[i], label))
            return true;
    return false;
}

/* Warnings (a JSON array, owned) for the labels of the enabled jobs with
 * run_on {labels} that no node carries: not this node's baton.yaml, nor
 * any node of the group's last heartbeats (alive, or seen within the
 * minutes a node stays listed: members.h). A tick of such a job is recorded
 * not run. When Redis cannot be read, one warning says the labels could not
 * be checked. None when no job has labels (Redis is not contacted). */
static cJSON *label_warnings(const struct config *cfg, const struct jobs *js)
{
    cJSON *list = cJSON_CreateArray();
    struct baton_client *c = NULL;
    struct member *m = NULL;
    size_t n = 0;
    char why[600], what[4400];
    bool any = false;
    for (size_t i = 0; i < js->n && !any; i++)
        any = js->v[i].enabled && job_run_on(&js->v[i], NULL) == JOB_RUN_ON_LABELS;
    if (!any || list == NULL)
        return list;
    int rc = tool_connect_quiet("check", cfg, &c, why, sizeof why);
    if (rc == 0 && (rc = members_read(c, cfg->group, &m, &n)) != BATON_OK)
        snprintf(why, sizeof why, "%s", baton_client_errstr(c));
    if (rc != 0) {
        snprintf(what, sizeof what,
                 "the labels of run_on could not be checked against the group's nodes: Redis "
                 "(%s) did not answer: %s",
                 cfg->redis, why);
        cJSON_AddItemToArray(list, cJSON_CreateString(what));
        baton_client_free(c);
        return list;
    }
    cJSON **hb = calloc(n + 1, sizeof *hb);
    for (size_t i = 0; hb != NULL && i < n; i++)
        hb[i] = cJSON_Parse(m[i].info_json);
    for (size_t i = 0; hb != NULL && i < js->n; i++) {
        const struct job *j = &js->v[i];
        char *const *labels = NULL;
        if (!j->enabled || job_run_on(j, &labels) != JOB_RUN_ON_LABELS)
            continue;
        for (size_t k = 0; labels != NULL && labels[k] != NULL; k++) {
            if (label_carried(cfg, hb, n, labels[k]))
                continue;
            snprintf(what, sizeof what,
                     "run_on label \"%s\": no node of group %s carries it (%zu node%s seen, nor "
                     "this node's labels): its ticks are recorded not run until one does",
                     labels[k], cfg->group, n, n == 1 ? "" : "s");
            snprintf(why, sizeof why, "%s:%d:%d: job \"%s\": ", js->path, j->line, j->col, j->name);
            char line[5200];
            snprintf(line, sizeof line, "%s%s", why, what);
            cJSON_AddItemToArray(list, cJSON_CreateString(line));
        }
    }
    for (size_t i = 0; hb != NULL && i < n; i++)
        cJSON_Delete(hb[i]);
    free(hb);
    members_free(m, n);
    baton_client_free(c);
    return list;
}

/* ---- the listing ----
 * Every text from the files goes through utf8.h's escape (put_term): a
 * command may hold an escape sequence, a YAML string a line break. */

/* Prints label, s escaped (NULL: out of memory) and a newline. */
static void put_term(const char *label, const char *s)
{
    char *safe = s != NULL ? utf8_term_dup(s) : NULL;
    printf("%s%s\n", label, safe != NULL ? safe : "(out of memory)");
    free(safe);
}

static void print_job(const struct job *j, int64_t now)
{
    char utc[CRON_TIME_BUFSZ], local[CRON_TIME_BUFSZ];
    char *cmd = tool_job_command(j);

    put_term("job ", j->name);
    put_term("  schedule: ", j->schedule);
    put_term("  zone:     ", j->timezone != NULL ? j->timezone : "UTC");
    printf("  enabled:  %s\n", j->enabled ? "yes" : "no (disabled)");
    put_term("  command:  ", cmd);
    free(cmd);
    const struct job_cmd *hooks[2] = {&j->on_failure, &j->on_success};
    const char *names[2] = {"on_failure", "on_success"};
    for (int i = 0; i < 2; i++) {
        if (!job_cmd_set(hooks[i]))
            continue;
        struct job as_job = {.argv = hooks[i]->argv, .shell = hooks[i]->shell};
        char *h = tool_job_command(&as_job), label[32];
        snprintf(label, sizeof label, "  %s: ", names[i]);
        put_term(label, h);
        free(h);
    }
    if (!j->enabled) {
        printf("  next:     disabled\n");
        return;
    }
    int64_t t = now;
    for (int i = 0; i < CHECK_NEXT_RUNS; i++) {
        const char *label = i == 0 ? "  next:     " : "            ";
        if (cron_next(j->expr, j->tz, t, &t) != 0) {
            printf("%s%s\n", label, i == 0 ? "none (the schedule never fires again)" : "no more");
            break;
        }
        cron_time_format(t, NULL, utc, sizeof utc);
        if (is_utc(j))
            printf("%s%s", label, utc);
        else
            printf("%s%s  %s", label, utc, cron_time_format(t, j->tz, local, sizeof local));
        if (j->jitter_ms > 0) { /* when its run begins: the tick, delayed */
            char start[40];
            log_rfc3339_ms(sched_start_ms(j, t), start, sizeof start);
            printf("  starts %s", start);
        }
        putchar('\n');
    }
}

static void print_human(const struct config *cfg, const struct jobs *jobs, const cJSON *problems)
{
    size_t disabled = 0;
    for (size_t i = 0; i < jobs->n; i++)
        disabled += !jobs->v[i].enabled;
    char *text = NULL, cpath[2048], jpath[2048];
    size_t len = 0;
    utf8_term(cfg->path, cpath, sizeof cpath);
    utf8_term(jobs->path, jpath, sizeof jpath);
    printf("# %s\n", cpath);
    FILE *m = open_memstream(&text, &len); /* YAML, escaped line by line */
    if (m != NULL) {
        config_write_effective(cfg, m);
        if (fclose(m) == 0)
            tool_write_text(stdout, text, len);
    }
    free(text);
    char hash[JOBS_HASH_HEX];
    printf("\n# jobs: %s (%zu job%s, hash %s)\n", jpath, jobs->n, jobs->n == 1 ? "" : "s",
           jobs_hash_hex(jobs, hash, sizeof hash));
    int64_t now = (int64_t)time(NULL);
    for (size_t i = 0; i < jobs->n; i++)
        print_job(&jobs->v[i], now);
    int np = cJSON_GetArraySize(problems);
    if (np > 0) {
        printf("\ninvalid: %d problem%s (on stderr)\n", np, np == 1 ? "" : "s");
        return;
    }
    printf("\nok: %s and %s are valid (%zu job%s", cpath, jpath, jobs->n, jobs->n == 1 ? "" : "s");
    if (disabled > 0)
        printf(", %zu disabled", disabled);
    printf(")\n");
}

/* ---- JSON ---- */

/* The effective configuration as {"key": value}: integers as numbers, the
 * rest as the strings `baton check` prints. */
static cJSON *settings_json(const struct config *cfg)
{
    char *text = NULL;
    size_t len = 0;
    cJSON *o = cJSON_CreateObject();
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return o;
    config_write_effective(cfg, f);
    if (fclose(f) != 0) {
        free(text);
        return o;
    }
    struct docs_ref ref = {0};
    bool have_ref = docs_ref_load(DOCS_REF_CONFIG, &ref) == 0;
    for (char *line = text, *next; line != NULL && *line != '\0'; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        char *sep = strstr(line, ": ");
        if (sep == NULL)
            continue;
        *sep = '\0';
        const char *val = sep + 2;
        const char *type = have_ref ? docs_ref_type(&ref, line) : NULL;
        char *end = NULL;
        errno = 0;
        long long n = strtoll(val, &end, 10);
        if (type != NULL && strcmp(type, "integer") == 0 && errno == 0 && *end == '\0' &&
            end != val)
            cJSON_AddNumberToObject(o, line, (double)n);
        else
            cJSON_AddStringToObject(o, line, val);
    }
    docs_ref_free(&ref);
    free(text);
    return o;
}

/* A hook command: [argv], {"shell": "..."}, or null for none. */
static cJSON *cmd_json(const struct job_cmd *c)
{
    if (c->shell != NULL) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "shell", c->shell);
        return o;
    }
    if (c->argv == NULL)
        return cJSON_CreateNull();
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; c->argv[i] != NULL; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(c->argv[i]));
    return a;
}

static cJSON *job_json(const struct job *j, int64_t now)
{
    char when[CRON_TIME_BUFSZ];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", j->name);
    cJSON_AddStringToObject(o, "schedule", j->schedule);
    cJSON_AddStringToObject(o, "timezone", j->timezone != NULL ? j->timezone : "UTC");
    cJSON_AddBoolToObject(o, "enabled", j->enabled);
    if (j->argv != NULL) {
        cJSON *a = cJSON_AddArrayToObject(o, "command");
        for (size_t i = 0; j->argv[i] != NULL; i++)
            cJSON_AddItemToArray(a, cJSON_CreateString(j->argv[i]));
        cJSON_AddNullToObject(o, "shell");
    } else {
        cJSON_AddNullToObject(o, "command");
        cJSON_AddStringToObject(o, "shell", j->shell != NULL ? j->shell : "");
    }
    if (j->workdir != NULL)
        cJSON_AddStringToObject(o, "workdir", j->workdir);
    else
        cJSON_AddNullToObject(o, "workdir");
    cJSON_AddItemToObject(o, "on_failure", cmd_json(&j->on_failure));
    cJSON_AddItemToObject(o, "on_success", cmd_json(&j->on_success));
    cJSON_AddNumberToObject(o, "hook_timeout_ms", (double)j->hook_timeout_ms);
    cJSON_AddNumberToObject(o, "jitter_ms", (double)j->jitter_ms);
    cJSON *next = cJSON_AddArrayToObject(o, "next_runs");
    cJSON *starts = cJSON_AddArrayToObject(o, "next_starts");
    int64_t t = now;
    for (int i = 0; j->enabled && i < CHECK_NEXT_RUNS && cron_next(j->expr, j->tz, t, &t) == 0;
         i++) {
        char start[40];
        log_rfc3339_ms(sched_start_ms(j, t), start, sizeof start);
        cJSON_AddItemToArray(next,
                             cJSON_CreateString(cron_time_format(t, NULL, when, sizeof when)));
        cJSON_AddItemToArray(starts, cJSON_CreateString(start));
    }
    return o;
}

static cJSON *check_json(const struct config *cfg, const struct jobs *jobs, cJSON *problems,
                         cJSON *warnings, const char *error)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "valid", error == NULL && cJSON_GetArraySize(problems) == 0);
    if (cfg != NULL) {
        cJSON_AddStringToObject(o, "config", cfg->path);
        cJSON_AddItemToObject(o, "settings", settings_json(cfg));
        cJSON_AddStringToObject(o, "jobs_file", cfg->jobs_path);
    }
    if (jobs != NULL) {
        char hash[JOBS_HASH_HEX];
        cJSON_AddStringToObject(o, "jobs_hash", jobs_hash_hex(jobs, hash, sizeof hash));
    }
    cJSON *list = cJSON_AddArrayToObject(o, "jobs");
    int64_t now = (int64_t)time(NULL);
    for (size_t i = 0; jobs != NULL && i < jobs->n; i++)
        cJSON_AddItemToArray(list, job_json(&jobs->v[i], now));
    cJSON_AddItemToObject(o, "problems", problems != NULL ? problems : cJSON_CreateArray());
    cJSON_AddItemToObject(o, "warnings", warnings != NULL ? warnings : cJSON_CreateArray());
    if (error != NULL)
        cJSON_AddStringToObject(o, "error", error);
    return o;
}

/* ---- the command ---- */

static int write_reference(void)
{
    printf("### baton.yaml\n\n");
    config_write_reference(stdout);
    printf("\n### jobs.yaml\n\n");
    jobs_write_reference(stdout);
    printf("\n### Log events\n\n");
    log_events_write_reference(stdout);
    printf("\n### The environment of a job's run\n\nBesides the job's `env`:\n\n"
           "| variable | meaning |\n|---|---|\n");
    for (int i = 0; i < RUN_ENV_COUNT; i++)
        printf("| `%s` | %s |\n", run_env_name((enum run_env_var)i),
               run_env_doc((enum run_env_var)i));
    printf("\n### The environment of a hook\n\nBesides the job's `env`, each when it "
           "applies:\n\n| variable | meaning |\n|---|---|\n");
    for (int i = 0; i < HOOK_ENV_COUNT; i++)
        printf("| `%s` | %s |\n", hook_env_name((enum hook_env_var)i),
               hook_env_doc((enum hook_env_var)i));
    return tool_flush("check");
}

static int cmd_check(int argc, char **argv)
{
    struct cli_parse p;
    const char *given = NULL;
    bool reference = false, json = false;
    struct config *cfg = NULL;
    struct jobs *jobs = NULL;
    cJSON *problems = NULL;
    char err[1024];
    int id, rc;

    cli_parse_init(&p, &cli_cmd_check, argc, argv);
    for (;;) {
        id = cli_parse_next(&p);
        if (id < 0)
            break;
        switch (id) {
        case 'c': given = p.arg; break;
        case TOOL_OPT_JSON: json = true; break;
        case TOOL_OPT_REFERENCE: reference = true; break;
        default: break;
        }
    }
    cli_parse_end(&p);
    if (id == CLI_OPT_EXIT)
        return p.status;
    if (p.optind < argc)
        return cli_usage("check", "unexpected argument \"%s\"", argv[p.optind]);
    if (reference)
        return write_reference();
    const char *path = tool_config_path("check", given, &rc);
    if (path == NULL)
        return rc;
    if (config_load(path, &cfg, err, sizeof err) != 0) {
        rc = cli_error(CLI_EXIT_CONFIG, "check", "%s", err);
        if (json && tool_print_json("check", check_json(NULL, NULL, NULL, NULL, err)) != 0)
            rc = CLI_EXIT_FAIL;
        return rc;
    }
    if (config_load_jobs(cfg, &jobs, err, sizeof err) != 0) {
        rc = cli_error(CLI_EXIT_CONFIG, "check", "%s", err);
        if (json && tool_print_json("check", check_json(cfg, NULL, NULL, NULL, err)) != 0)
            rc = CLI_EXIT_FAIL;
        goto out_free_config;
    }
    problems = job_problems(jobs);
    if (problems != NULL)
        http_problems(problems, cfg);
    cJSON *warnings = label_warnings(cfg, jobs);
    int np = cJSON_GetArraySize(problems);
    for (int i = 0; i < np; i++)
        cli_error(0, "check", "%s", cJSON_GetArrayItem(problems, i)->valuestring);
    for (int i = 0; i < cJSON_GetArraySize(warnings); i++)
        fprintf(stderr, "baton: check: warning: %s\n",
                cJSON_GetArrayItem(warnings, i)->valuestring);
    if (json) {
        rc = tool_print_json("check", check_json(cfg, jobs, problems, warnings, NULL));
        problems = warnings = NULL;
    } else {
        print_human(cfg, jobs, problems);
        rc = tool_flush("check");
    }
    if (rc == 0 && np > 0)
        rc = CLI_EXIT_CONFIG;
    cJSON_Delete(problems);
    cJSON_Delete(warnings);
    jobs_free(jobs);
out_free_config:
    config_free(cfg);
    return rc;
}
