/* cmd_status.c -- `baton status [-c FILE] [--json]`: the state of a group,
 * read from Redis: the leader, the nodes seen (their heartbeats), and for
 * each job of jobs.yaml its last run (from its history stream) and its next
 * run (computed here from the schedule, from now).
 *
 *   group:   default
 *   redis:   redis://127.0.0.1:6379/0
 *   leader:  web-1 (term 7, lease 8.2s left)
 *
 *   NODE   STATE    TERM  SEEN       PID   SINCE                 RUNNING  CAPACITY  LABELS
 *   web-1  working  7     412ms ago  4242  2026-01-02T07:00:00Z  1        4         -
 *   web-2  waiting  7     1.1s ago   4250  2026-01-02T07:00:01Z  0        4         reports
 *   (then JOBS: 3 9f2c41d0 on web-1's line, leader; 4 51aa0e7b differs on web-2's)
 *
 *   config drift: web-2 runs other jobs than the leader (4 jobs, hash
 *   51aa0e7b...; the leader's: 3 jobs, 9f2c41d0...)
 *
 *   JOB     LAST RUN              OUTCOME      NODE   DURATION  NEXT RUN
 *   tick    2026-01-02T07:10:04Z  ok (exit 0)  web-1  3ms       2026-01-02T07:10:05Z
 *   report  never                                               2026-01-05T06:00:00Z
 * (07:00:00+01:00 Europe/Berlin) off     never disabled backup  never paused export  never
 * 2026-01-03T00:00:00Z
 *
 *   running now:
 *   JOB     NODE   TRIGGER             STARTED                   ELAPSED  RUN_ID
 *   export  web-1  manual by ops@web-1  2026-01-02T07:09:51.004Z  13.2s    20260102T070950-3f9a0c2d
 *
 *   paused: backup since 2026-01-02T06:00:00.000Z by ops@web-1: migration
 *
 *   pools (runs alive in the group, counted in Redis):
 *   POOL     RUNNING  LIMIT
 *   exports  3        3
 *
 *   waiting for a slot or a member with room (the leader's, first served first):
 *   JOB     TICK                  WAITS FOR           SINCE                     WAITED  QUEUED
 *   dump    2026-01-02T07:10:04Z  pool exports (3)    2026-01-02T07:10:04.003Z  1.2s    2
 *   resize  2026-01-02T07:10:03Z  a member with room  2026-01-02T07:10:03.001Z  2.2s    1
 *
 *   offered to members, not yet accepted (run_on other than leader):
 *   JOB     TICK                  OFFERED TO
 *   resize  2026-01-02T07:10:04Z  web-2
 *
 * The nodes: the leader first, then by name; a follower's TERM is the term
 * it follows. What runs now comes from the nodes' heartbeats (a run shows a
 * quarter of a second after it starts). Without a leader, NEXT RUN says no
 * run is planned: the times are a leader's to keep.
 *
 * With --json, one JSON object on stdout: the status document of status.h
 * (the supervisor serves the same at GET /status).
 *
 * Exit: 0 with a leader; 3 without one (the rest is printed); 69 when Redis
 * cannot be reached or answers oddly (one line on stderr, nothing on
 * stdout); 78 when baton.yaml is invalid, or jobs.yaml cannot be loaded (the
 * rest is still printed, the error goes to stderr); 64 for a bad argument.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "baton_election.h"
#include "cli.h"
#include "clock.h"
#include "config.h"
#include "cron.h"
#include "history.h"
#include "jobs.h"
#include "log.h"
#include "members.h"
#include "pause.h"
#include "runlimits.h"
#include "status.h"
#include "tools.h"
#include "utf8.h"

static int cmd_status(int argc, char **argv);

static const struct cli_opt opts[] = {
    TOOL_OPT_CONFIG,
    TOOL_OPT_JSON_ROW("print one JSON object: group, redis, leader {node, term, lease_ms} or "
                      "null, term, nodes [...], jobs [...]"),
    {0},
};

static const struct cli_exit exits[] = {
    {CLI_EXIT_OK, "the group has a leader"},
    {CLI_EXIT_NO_LEADER, "the group has no leader (the rest is printed)"},
    {CLI_EXIT_USAGE, "bad command line"},
    {CLI_EXIT_UNAVAILABLE, "Redis unreachable or failing (nothing on stdout)"},
    {CLI_EXIT_CONFIG, "baton.yaml missing or invalid; or jobs.yaml invalid (the rest is printed)"},
    {-1, NULL},
};

const struct cli_cmd cli_cmd_status = {
    .name = "status",
    .operands = "",
    .summary = "leader, term, lease left, nodes, each job's last and next run",
    .description =
        "Shows the group's leader (its term and the time left on its lease), the nodes of "
        "the group (each one's state, the term it leads or follows, its last heartbeat, pid "
        "and start time) and, for each job of jobs.yaml, its last run and its next one.\n\n"
        "The nodes are listed leader first, then by name; RUNNING counts the runs alive on "
        "each; CAPACITY is each node's capacity in use (runs of ticks the leader offered it) / "
        "its baton.yaml `capacity`, and LABELS its `labels`. Under "
        "running now, each run alive in the group: its job, node, trigger (a "
        "manual run says who asked), start, elapsed time and run id. A job's next run is in "
        "UTC and, when the job's zone is another, in that zone beside it; while no node "
        "leads, it is none planned (no leader).\n\n"
        "With fleet-wide limits (jobs.yaml's pools: and max_running:), under pools each "
        "pool's runs alive across the group, counted in Redis where the claims count them, "
        "beside its limit; under waiting for a slot, the leader's ticks that wait, unclaimed, "
        "for a pool or max_running slot (job, tick, what it waits for, since when, the job's "
        "ticks queued), in the order the slots go to them, from the leader's heartbeat.\n\n"
        "With jobs that run on members (run_on any or labels), under offered to members, each "
        "tick offered to a node and not yet accepted (its job, tick and node), read from "
        "Redis; a run accepted shows under running now, on the node that runs it. A tick "
        "claimed while no member that may run it has room waits, oldest first: it is listed "
        "with the ticks waiting, waiting for a member with room.\n\n"
        "Nodes heartbeat every `poll`. One whose heartbeat is overdue (more than 2 x poll + "
        "2s) shows as unresponsive. A node that stopped is listed as stopped for 1 minute, "
        "then removed; one not heard from is removed after 5 minutes (or 3 x its poll, if "
        "longer).\n\n"
        "JOBS shows how many jobs each node runs and the start of the hash of its effective "
        "jobs (every job's definition as it applies, defaults and baton.yaml's hooks "
        "included; the order of jobs.yaml does not count). A node whose jobs differ from the "
        "leader's is marked and named under config drift: after a half-done deploy, it would "
        "run other jobs if it became the leader.",
    .opts = opts,
    .exits = exits,
    .run = cmd_status,
};

/* What status gathered. */
struct status {
    const struct config *cfg;
    const char *url;
    struct baton_leader_info leader;
    struct member *members;
    size_t nmembers;
    const struct jobs *jobs; /* NULL when jobs.yaml could not be loaded */
    const char *jobs_error;
    struct history_list *last; /* one per job: the last record (n 0 or 1) */
    struct pause_list paused;
    struct limits_pool *pools; /* jobs.yaml's, their live runs read from Redis */
    size_t npools;
    struct status_offers offers; /* ticks offered to the nodes, not yet accepted */
    int64_t now;    /* Unix s */
    int64_t now_ms; /* Unix ms */
};

/* ---- human output ----
 * What it shows from Redis or the files (node names, pause reasons, run
 * records) goes through utf8.h's escape: tables escape their cells, the
 * lines below each value (TERM_MAX: room for a value escaped). */
#define TERM_MAX 2048

static void print_leader(const struct status *s)
{
    char left[32], who[TERM_MAX];
    if (!s->leader.has_leader) {
        if (s->leader.term > 0)
            printf("leader:  no leader (last term %llu)\n", (unsigned long long)s->leader.term);
        else
            printf("leader:  no leader\n");
        return;
    }
    printf("leader:  %s (term %llu",
           utf8_term(s->leader.identity[0] ? s->leader.identity : "?", who, sizeof who),
           (unsigned long long)s->leader.term);
    if (s->leader.ttl_ms >= 0)
        printf(", lease %s left", tool_format_ms(s->leader.ttl_ms, left, sizeof left));
    printf(")\n");
}

/* The string field name of a heartbeat, or NULL. */
static const char *hb_string(const cJSON *hb, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(hb, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* v as text in buf. Returns buf. */
static const char *hb_number_of(double v, char *buf, size_t len)
{
    snprintf(buf, len, "%.0f", v);
    return buf;
}

/* The numeric field name of a heartbeat, as text in buf, or NULL. */
static const char *hb_number(const cJSON *hb, const char *name, char *buf, size_t len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(hb, name);
    if (!cJSON_IsNumber(v))
        return NULL;
    snprintf(buf, len, "%.0f", v->valuedouble);
    return buf;
}

/* The labels a heartbeat carries, comma-separated into buf ("-": none;
 * what is not a label's character shows as '?'). Returns buf. */
static const char *hb_labels(const cJSON *hb, char *buf, size_t len)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(hb, "labels"), *l;
    size_t at = 0;
    buf[0] = '\0';
    for (l = cJSON_IsArray(a) ? a->child : NULL; l != NULL; l = l->next) {
        if (!cJSON_IsString(l))
            continue;
        int w = snprintf(buf + at, len - at, "%s%s", at > 0 ? "," : "", l->valuestring);
        if (w < 0 || (size_t)w >= len - at)
            break;
        for (size_t i = at; i < at + (size_t)w; i++)
            if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-,",
                       buf[i]) == NULL)
                buf[i] = '?';
        at += (size_t)w;
    }
    if (at == 0)
        snprintf(buf, len, "-");
    return buf;
}

static bool is_leader(const struct status *s, const char *node)
{
    return s->leader.has_leader && strcmp(s->leader.identity, node) == 0;
}

/* The leader's jobs hash (from its heartbeat) into hash; false when there
 * is no leader or its heartbeat carries none. */
static bool leader_jobs(const struct status *s, char *hash, size_t len, long *njobs)
{
    for (size_t i = 0; i < s->nmembers; i++)
        if (is_leader(s, s->members[i].node))
            return members_jobs(&s->members[i], hash, len, njobs);
    return false;
}

/* Whether m's jobs differ from the leader's: 1, 0, or -1 when unknown. */
static int jobs_differ(const struct status *s, const struct member *m)
{
    return status_jobs_differ(&s->leader, s->members, s->nmembers, m);
}

/* A node in the drift list: alive, and its jobs differ from the leader's. */
static bool drifting(const struct status *s, const struct member *m)
{
    return members_alive(m) && jobs_differ(s, m) == 1;
}

static void print_nodes(const struct status *s)
{
    struct tool_table t;
    if (s->nmembers == 0) {
        printf("\nno nodes\n");
        return;
    }
    tool_table_init(&t, 11);
    tool_table_add(&t, (const char *const[]){"NODE", "STATE", "TERM", "SEEN", "PID", "SINCE",
                                             "RUNNING", "CAPACITY", "LABELS", "JOBS", ""});
    for (size_t i = 0; i < s->nmembers; i++) {
        const struct member *m = &s->members[i];
        cJSON *hb = cJSON_Parse(m->info_json);
        char term[32], pid[32], seen[48], ago[32], jobs[64], hash[JOBS_HASH_HEX], running[32];
        char capacity[32], labels[256], in_use[32], cap_cell[72];
        long njobs;
        snprintf(seen, sizeof seen, "%s ago", tool_format_ms(m->seen_ago_ms, ago, sizeof ago));
        const char *state = hb_string(hb, "state");
        if (!members_alive(m) && (state == NULL || strcmp(state, "stopped") != 0))
            state = "unresponsive";
        int differs = jobs_differ(s, m);
        if (members_jobs(m, hash, sizeof hash, &njobs))
            snprintf(jobs, sizeof jobs, "%ld %.8s%s", njobs, hash, differs == 1 ? " differs" : "");
        else
            snprintf(jobs, sizeof jobs, "?");
        const char *term_s = hb_number(hb, "term", term, sizeof term);
        if (s->leader.has_leader && members_alive(m) && state != NULL &&
            strcmp(state, "waiting") == 0) /* it follows the current leader */
            term_s = hb_number_of((double)s->leader.term, term, sizeof term);
        /* capacity in use (runs members' offers brought it) / capacity */
        const char *cap = hb_number(hb, "capacity", capacity, sizeof capacity);
        if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(hb, "assigned")) && cap != NULL) {
            snprintf(cap_cell, sizeof cap_cell, "%s/%s",
                     hb_number(hb, "assigned", in_use, sizeof in_use), cap);
            cap = cap_cell;
        }
        const char *row[11] = {
            m->node,
            state,
            term_s,
            seen,
            hb_number(hb, "pid", pid, sizeof pid),
            hb_string(hb, "since"),
            hb_number(hb, "running", running, sizeof running),
            cap,
            hb_labels(hb, labels, sizeof labels),
            jobs,
            is_leader(s, m->node) ? "leader" : "",
        };
        tool_table_add(&t, row);
        cJSON_Delete(hb);
    }
    printf("\n");
    tool_table_print(&t, "", stdout);
    tool_table_free(&t);
    char lh[JOBS_HASH_HEX], nh[JOBS_HASH_HEX], node[TERM_MAX], leader[TERM_MAX];
    long ln = 0, nn = 0;
    for (size_t i = 0; i < s->nmembers; i++) {
        const struct member *m = &s->members[i];
        if (!drifting(s, m) || !leader_jobs(s, lh, sizeof lh, &ln) ||
            !members_jobs(m, nh, sizeof nh, &nn))
            continue;
        printf("\nconfig drift: %s runs other jobs than the leader %s (%ld job%s, hash %s; the "
               "leader's: %ld job%s, hash %s)\n",
               utf8_term(m->node, node, sizeof node),
               utf8_term(s->leader.identity, leader, sizeof leader), nn, nn == 1 ? "" : "s", nh, ln,
               ln == 1 ? "" : "s", lh);
    }
}

/* The next run of j after now: UTC, and in the job's own zone beside when
 * it has one; "none planned (no leader)" when nobody leads to run it. */
static void next_run(const struct job *j, int64_t now, bool leader, char *buf, size_t len)
{
    int64_t t;
    char utc[CRON_TIME_BUFSZ], local[CRON_TIME_BUFSZ];
    if (!j->enabled)
        snprintf(buf, len, "disabled");
    else if (cron_next(j->expr, j->tz, now, &t) != 0)
        snprintf(buf, len, "never");
    else if (!leader)
        snprintf(buf, len, "none planned (no leader)");
    else if (j->timezone == NULL || strcmp(j->timezone, "UTC") == 0)
        cron_time_format(t, NULL, buf, len);
    else
        snprintf(buf, len, "%s (%s %s)", cron_time_format(t, NULL, utc, sizeof utc),
                 cron_time_format(t, j->tz, local, sizeof local), j->timezone);
}

/* What runs now, from the nodes' heartbeats: a table, or nothing. */
static void print_running(const struct status *s)
{
    struct status_runs runs;
    struct tool_table t;
    int64_t now_ms = s->now_ms;
    if (status_runs_read(s->members, s->nmembers, &runs) != BATON_OK || runs.n == 0) {
        status_runs_free(&runs);
        return;
    }
    tool_table_init(&t, 6);
    tool_table_add(&t,
                   (const char *const[]){"JOB", "NODE", "TRIGGER", "STARTED", "ELAPSED", "RUN_ID"});
    for (size_t i = 0; i < runs.n; i++) {
        const struct status_run *r = &runs.v[i];
        char trigger[200], elapsed[32];
        if (r->by != NULL)
            snprintf(trigger, sizeof trigger, "%s by %s", r->trigger != NULL ? r->trigger : "?",
                     r->by);
        else
            snprintf(trigger, sizeof trigger, "%s", r->trigger != NULL ? r->trigger : "?");
        const char *row[6] = {
            r->job,
            r->node,
            trigger,
            r->started != NULL ? r->started : "?",
            r->started_ms > 0 ? tool_format_ms(now_ms > r->started_ms ? now_ms - r->started_ms : 0,
                                               elapsed, sizeof elapsed)
                              : "?",
            r->run_id,
        };
        tool_table_add(&t, row);
    }
    printf("\nrunning now:\n");
    tool_table_print(&t, "", stdout);
    tool_table_free(&t);
    status_runs_free(&runs);
}

static void print_jobs(const struct status *s)
{
    struct tool_table t;
    size_t npaused = 0;
    char safe[TERM_MAX];
    if (s->jobs == NULL) {
        printf("\njobs: cannot load: %s\n", utf8_term(s->jobs_error, safe, sizeof safe));
        return;
    }
    if (s->jobs->n == 0) {
        printf("\nno jobs in %s\n", utf8_term(s->jobs->path, safe, sizeof safe));
        return;
    }
    tool_table_init(&t, 6);
    tool_table_add(
        &t, (const char *const[]){"JOB", "LAST RUN", "OUTCOME", "NODE", "DURATION", "NEXT RUN"});
    for (size_t i = 0; i < s->jobs->n; i++) {
        const struct job *j = &s->jobs->v[i];
        char next[3 * CRON_TIME_BUFSZ], outcome[128], dur[32];
        next_run(j, s->now, s->leader.has_leader, next, sizeof next);
        if (pause_holding(&s->paused, j->name) != NULL) {
            snprintf(next, sizeof next, "paused");
            npaused++;
        }
        if (s->last[i].n == 0) {
            tool_table_add(&t, (const char *const[]){j->name, "never", "", "", "", next});
            continue;
        }
        const struct history_rec *r = &s->last[i].v[0];
        char when[32];
        log_rfc3339(r->scheduled_at, when, sizeof when);
        const char *row[6] = {
            j->name,
            when,
            history_summary(r, outcome, sizeof outcome),
            r->node[0] != '\0' ? r->node : "?",
            r->started_ms > 0 ? tool_format_ms(r->duration_ms, dur, sizeof dur) : "-",
            next,
        };
        tool_table_add(&t, row);
    }
    printf("\n");
    tool_table_print(&t, "", stdout);
    tool_table_free(&t);
    print_running(s);
    if (npaused > 0)
        printf("\n");
    for (size_t i = 0; i < s->jobs->n; i++) {
        const struct pause_entry *e = pause_holding(&s->paused, s->jobs->v[i].name);
        char text[512];
        if (e != NULL)
            printf("paused: %s %s\n", s->jobs->v[i].name,
                   utf8_term(pause_describe(e, text, sizeof text), safe, sizeof safe));
    }
}

static cJSON *status_json(const struct status *s);

/* The pools (their runs in Redis) and the ticks waiting for a slot (from
 * the leader's heartbeat), as the document has them: tables, or nothing. */
static void print_limits(const struct status *s)
{
    cJSON *doc = status_json(s), *e;
    const cJSON *pools = cJSON_GetObjectItemCaseSensitive(doc, "pools");
    const cJSON *waiting = cJSON_GetObjectItemCaseSensitive(doc, "waiting");
    struct tool_table t;
    char a[32], b[32], c[32], d[32];
    if (cJSON_GetArraySize(pools) > 0) {
        tool_table_init(&t, 3);
        tool_table_add(&t, (const char *const[]){"POOL", "RUNNING", "LIMIT"});
        cJSON_ArrayForEach(e, pools)
        {
            const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "running");
            snprintf(a, sizeof a, "%.0f",
                     cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "limit")));
            if (cJSON_IsNumber(r))
                snprintf(b, sizeof b, "%.0f", r->valuedouble);
            else
                snprintf(b, sizeof b, "?");
            tool_table_add(&t, (const char *const[]){hb_string(e, "name"), b, a});
        }
        printf("\npools (runs alive in the group, counted in Redis):\n");
        tool_table_print(&t, "", stdout);
        tool_table_free(&t);
    }
    if (cJSON_GetArraySize(waiting) > 0) {
        tool_table_init(&t, 6);
        tool_table_add(
            &t, (const char *const[]){"JOB", "TICK", "WAITS FOR", "SINCE", "WAITED", "QUEUED"});
        cJSON_ArrayForEach(e, waiting)
        {
            const char *pool = hb_string(e, "pool"), *reason = hb_string(e, "reason");
            double limit = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "limit"));
            if (reason != NULL && strcmp(reason, "room") == 0)
                snprintf(c, sizeof c, "a member with room");
            else if (pool != NULL)
                snprintf(c, sizeof c, "pool %.*s (%.0f)", 16, pool, limit);
            else
                snprintf(c, sizeof c, "max_running (%.0f)", limit);
            tool_format_ms(
                (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "waited_ms")), a,
                sizeof a);
            snprintf(d, sizeof d, "%.0f",
                     cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "queued")));
            tool_table_add(&t,
                           (const char *const[]){hb_string(e, "job"), hb_string(e, "scheduled_at"),
                                                 c, hb_string(e, "since"), a, d});
        }
        printf("\nwaiting for a slot or a member with room (the leader's, first served "
               "first):\n");
        tool_table_print(&t, "", stdout);
        tool_table_free(&t);
    }
    const cJSON *offers = cJSON_GetObjectItemCaseSensitive(doc, "offers");
    if (cJSON_GetArraySize(offers) > 0) {
        tool_table_init(&t, 3);
        tool_table_add(&t, (const char *const[]){"JOB", "TICK", "OFFERED TO"});
        cJSON_ArrayForEach(e, offers)
        {
            tool_table_add(&t, (const char *const[]){hb_string(e, "job"),
                                                     hb_string(e, "scheduled_at"),
                                                     hb_string(e, "node")});
        }
        printf("\noffered to members, not yet accepted (run_on other than leader):\n");
        tool_table_print(&t, "", stdout);
        tool_table_free(&t);
    }
    cJSON_Delete(doc);
}

static void print_human(const struct status *s)
{
    char safe[TERM_MAX];
    printf("group:   %s\n", utf8_term(s->cfg->group, safe, sizeof safe));
    printf("redis:   %s\n", utf8_term(s->url, safe, sizeof safe));
    print_leader(s);
    print_nodes(s);
    print_jobs(s);
    print_limits(s);
}

/* ---- JSON output (the document is status.c's) ---- */

static cJSON *status_json(const struct status *s)
{
    size_t n = s->jobs != NULL ? s->jobs->n : 0;
    struct status_job *rows = n > 0 ? calloc(n, sizeof *rows) : NULL;
    if (n > 0 && rows == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        rows[i] = status_job_of(&s->jobs->v[i], s->last[i].n > 0 ? &s->last[i].v[0] : NULL,
                                pause_holding(&s->paused, s->jobs->v[i].name));
    struct status_doc d = {.group = s->cfg->group,
                           .redis = s->url,
                           .leader = &s->leader,
                           .members = s->members,
                           .nmembers = s->nmembers,
                           .jobs = rows,
                           .njobs = n,
                           .pools = s->pools,
                           .npools = s->npools,
                           .offers = &s->offers,
                           .jobs_error = s->jobs == NULL ? s->jobs_error : NULL,
                           .now = s->now,
                           .now_ms = s->now_ms};
    cJSON *o = status_doc_json(&d);
    free(rows);
    return o;
}

/* ---- gathering ---- */

static int cmd_status(int argc, char **argv)
{
    const char *given = NULL;
    struct config *cfg = NULL;
    struct jobs *jobs = NULL;
    struct baton_client *client = NULL;
    struct status s = {0};
    struct cli_parse p;
    char jobs_err[1024];
    bool json = false;
    int id, rc;

    cli_parse_init(&p, &cli_cmd_status, argc, argv);
    for (;;) {
        id = cli_parse_next(&p);
        if (id < 0)
            break;
        if (id == 'c')
            given = p.arg;
        else if (id == TOOL_OPT_JSON)
            json = true;
    }
    cli_parse_end(&p);
    if (id == CLI_OPT_EXIT)
        return p.status;
    if (p.optind < argc)
        return cli_usage("status", "unexpected argument \"%s\"", argv[p.optind]);
    const char *path = tool_config_path("status", given, &rc);
    if (path == NULL)
        return rc;
    rc = tool_load_config("status", path, &cfg);
    if (rc != 0)
        return rc;
    if (jobs_load(cfg->jobs_path, cfg->timezone, &jobs, jobs_err, sizeof jobs_err) != 0)
        jobs = NULL;
    rc = tool_connect("status", cfg, &client);
    if (rc != 0)
        goto out;

    s.cfg = cfg;
    s.url = baton_client_url(client);
    s.jobs = jobs;
    s.jobs_error = jobs_err;
    s.now_ms = wall_ms();
    s.now = s.now_ms / 1000;
    int brc = baton_election_leader(client, cfg->group, &s.leader);
    if (brc != BATON_OK) {
        rc = tool_redis_error("status", client, brc, "reading the leader");
        goto out;
    }
    brc = members_read(client, cfg->group, &s.members, &s.nmembers);
    if (brc != BATON_OK) {
        rc = tool_redis_error("status", client, brc, "reading the nodes");
        goto out;
    }
    status_order_members(s.members, s.nmembers, s.leader.has_leader ? s.leader.identity : NULL);
    brc = pause_read(client, cfg->group, &s.paused);
    if (brc != BATON_OK) {
        rc = tool_redis_error("status", client, brc, "reading the paused jobs");
        goto out;
    }
    if (jobs != NULL && jobs->n > 0) {
        s.last = calloc(jobs->n, sizeof *s.last);
        if (s.last == NULL) {
            rc = cli_fail("status", "out of memory");
            goto out;
        }
        for (size_t i = 0; i < jobs->n; i++) {
            brc = history_read(client, cfg->group, jobs->v[i].name, 1, &s.last[i]);
            if (brc != BATON_OK) {
                char what[200];
                snprintf(what, sizeof what, "reading the history of job %s", jobs->v[i].name);
                rc = tool_redis_error("status", client, brc, what);
                goto out;
            }
        }
    }

    /* The pools' runs: what Redis counts (where the claims check them). */
    if (jobs != NULL && limits_pools_new(jobs, &s.pools, &s.npools) != BATON_OK) {
        rc = cli_fail("status", "out of memory");
        goto out;
    }
    brc = limits_pools_read(client, cfg->group, s.pools, s.npools);
    if (brc != BATON_OK) {
        rc = tool_redis_error("status", client, brc, "reading the pools' runs");
        goto out;
    }

    /* The ticks offered to members (run_on other than leader), not yet
     * accepted: what Redis holds, whoever offered them. */
    brc = status_offers_read(client, cfg->group, s.members, s.nmembers, &s.offers);
    if (brc != BATON_OK) {
        rc = tool_redis_error("status", client, brc, "reading the offers to the nodes");
        goto out;
    }

    if (json) {
        rc = tool_print_json("status", status_json(&s));
    } else {
        print_human(&s);
        rc = tool_flush("status");
    }
    if (rc == 0 && jobs == NULL)
        rc = cli_error(CLI_EXIT_CONFIG, "status", "%s", jobs_err);
    else if (rc == 0 && !s.leader.has_leader)
        rc = CLI_EXIT_NO_LEADER;
out:
    if (s.last != NULL)
        for (size_t i = 0; i < jobs->n; i++)
            history_list_free(&s.last[i]);
    free(s.last);
    pause_list_free(&s.paused);
    limits_pools_free(s.pools, s.npools);
    status_offers_free(&s.offers);
    members_free(s.members, s.nmembers);
    baton_client_free(client);
    jobs_free(jobs);
    config_free(cfg);
    return rc;
}
