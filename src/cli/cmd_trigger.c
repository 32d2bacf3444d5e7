/* cmd_trigger.c -- `baton trigger [-c FILE] [--id ID] [--wait] [--timeout D]
 * [--json] JOB`: ask the group's leader to run JOB now, outside its
 * schedule (trigger.h).
 *
 * The request is stored in Redis under its id (the idempotency key: --id,
 * or a new one) and the leader is woken. Asking again with the same id
 * finds the first request: one run, whatever a retrying client does. The
 * run id is printed on stdout (the request's id: the run's BATON_RUN_ID
 * and its run_id in `baton history`), a note on stderr:
 *
 *   20261123T101500-3f9a0c2d
 *   baton: trigger: report: requested (id 20261123T101500-3f9a0c2d); leader web-1 runs it
 *
 * With --wait it follows the request until its run ends (woken by the
 * "done <id>" message, looking again every second in case one is lost),
 * prints the outcome on stderr and exits with the job's exit status: 128+N
 * when a signal N ended it, 124 when its timeout did, 126 when it could
 * not start, 70 when its node stopped answering while it ran and did not
 * report its end within two lease ttls (it died, or stayed stalled), 1 when
 * the leader has no such job, 75 when --timeout ran out first (the run goes
 * on). With --json
 * the request is printed as one JSON object (at the end, with --wait). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "baton_election.h"
#include "cli.h"
#include "clock.h"
#include "config.h"
#include "history.h"
#include "jobs.h"
#include "log.h"
#include "tools.h"
#include "trigger.h"

#define WAIT_POLL_MS 1000 /* --wait looks at the request this often, messages or not */

enum { OPT_ID = TOOL_OPT_COLOR + 1, OPT_TIMEOUT };

static int cmd_trigger(int argc, char **argv);

static const struct cli_opt opts[] = {
    TOOL_OPT_CONFIG,
    {OPT_ID, "id", "ID",
     "the request's id, its idempotency key: asking twice with one id runs the job once "
     "(1-48 letters, digits, '_', '.', ':' or '-'; default: a new one)"},
    {'w', "wait", NULL, "wait for the run to end and exit with its status"},
    {OPT_TIMEOUT, "timeout", "D", "with --wait: give up waiting after D (the run goes on)"},
    TOOL_OPT_JSON_ROW("print the request as a JSON object (with --wait, once it is done)"),
    {0},
};

static const struct cli_exit exits[] = {
    {CLI_EXIT_OK, "the request is stored (with --wait: the run ended with status 0)"},
    {CLI_EXIT_FAIL,
     "no such job (in jobs.yaml here, or on the leader), the id belongs to a request for "
     "another job, or too many requests wait"},
    {CLI_EXIT_USAGE, "bad command line"},
    {CLI_EXIT_UNAVAILABLE, "Redis unreachable or failing"},
    {CLI_EXIT_LOST, "with --wait: the run's node stopped answering while it ran (died, or stalled "
                    "past two lease ttls)"},
    {CLI_EXIT_TEMPFAIL, "with --wait: --timeout ran out before the run ended (it goes on)"},
    {CLI_EXIT_CONFIG, "baton.yaml missing or invalid"},
    {CLI_EXIT_JOB_TIMEOUT, "with --wait: the job ran out of its timeout"},
    {CLI_EXIT_NOEXEC, "with --wait: the job could not start (its program, its workdir)"},
    {-1, NULL},
};

static const struct cli_item wait_items[] = {
    {"N (0-255)", "the job exited with status N"},
    {"128+N", "a signal N ended the job (baton stopped it: replaced, shutdown, lease lost)"},
    {NULL, NULL},
};

static const struct cli_section sections[] = {
    {"exit status with --wait", wait_items},
    {NULL, NULL},
};

const struct cli_cmd cli_cmd_trigger = {
    .name = "trigger",
    .operands = "JOB",
    .summary = "run a job now, once, on the leader",
    .description =
        "Asks the leader of the group to run JOB now, outside its schedule. The request is "
        "kept in Redis, so it runs exactly once even if the leader dies before starting it "
        "(the next leader does) or the request is sent twice with one --id. The run obeys "
        "the job's concurrency (forbid waits for a running run to end; replace stops it), is "
        "not retried, runs even while the job is paused, and is marked `trigger: manual` in "
        "the log, the history and BATON_TRIGGER. The run id is printed on stdout.\n\n"
        "A request waits in Redis while no node leads. Once done it is remembered for 24 "
        "hours: asking again with its id within that time prints its outcome, and runs "
        "nothing.",
    .opts = opts,
    .sections = sections,
    .exits = exits,
    .operand = CLI_OPERAND_JOB,
    .run = cmd_trigger,
};

/* The exit status --wait ends with for done request t (see the top). */
static int wait_status(const struct trigger *t)
{
    enum history_outcome o;
    if (strcmp(t->outcome, "rejected") == 0 || !history_outcome_parse(t->outcome, &o))
        return CLI_EXIT_FAIL;
    if (o == HO_FAILED_TO_START)
        return CLI_EXIT_NOEXEC;
    if (o == HO_TIMEOUT)
        return CLI_EXIT_JOB_TIMEOUT;
    if (t->exit_code >= 0)
        return t->exit_code;
    if (t->signal[0] != '\0') {
        for (int sig = 1; sig < NSIG; sig++) {
            const char *name = sigabbrev_np(sig);
            if (name != NULL && strcmp(name, t->signal) == 0)
                return 128 + sig;
        }
    }
    return CLI_EXIT_LOST; /* killed with its node: no status */
}

/* Says on stderr where request t stands, when that changed since *last
 * (-1 at first). */
static void progress(const struct trigger *t, int *last)
{
    if ((int)t->state == *last)
        return;
    *last = (int)t->state;
    switch (t->state) {
    case TRIGGER_PENDING:
        fprintf(stderr, "baton: trigger: %s: waiting for the leader (attempt %d)\n", t->job,
                t->attempt);
        break;
    case TRIGGER_CLAIMED:
        fprintf(stderr, "baton: trigger: %s: claimed by %s\n", t->job, t->node);
        break;
    case TRIGGER_RUNNING:
        fprintf(stderr, "baton: trigger: %s: running on %s as %s\n", t->job, t->node, t->run_id);
        break;
    case TRIGGER_DONE: break;
    }
}

static void report_done(const struct trigger *t)
{
    char dur[40] = "", took[32];
    if (strcmp(t->outcome, "rejected") == 0) {
        fprintf(stderr, "baton: trigger: %s: not run: %s\n", t->job, t->reason);
        return;
    }
    if (t->started_ms > 0 && t->ended_ms >= t->started_ms)
        snprintf(dur, sizeof dur, " in %s",
                 tool_format_ms(t->ended_ms - t->started_ms, took, sizeof took));
    fprintf(stderr, "baton: trigger: %s: %s", t->job, t->outcome);
    if (t->exit_code >= 0)
        fprintf(stderr, " (exit %d)", t->exit_code);
    else if (t->signal[0] != '\0')
        fprintf(stderr, " (signal %s)", t->signal);
    fprintf(stderr, "%s on %s (run %s)%s%s\n", dur, t->node[0] ? t->node : "?",
            t->run_id[0] ? t->run_id : t->id, t->reason[0] ? ": " : "", t->reason);
}

/* Follows request id until it is done or timeout_ms (0: no limit) passes.
 * The subscription w was made before the request. A run presumed killed
 * with its node (trigger.h) is followed grace_ms more (within timeout_ms):
 * a node that was only stalled reports how the run really ended. Returns
 * the exit status (with json, the request printed as JSON once done). */
static int follow(struct baton_client *client, struct baton_election *w, const char *group,
                  const char *id, int64_t timeout_ms, int64_t grace_ms, bool json)
{
    char want[TRIGGER_ID_MAX + 8], took[32];
    int last = -1;
    int64_t deadline = timeout_ms > 0 ? mono_ms() + timeout_ms : 0, presumed_until = 0;
    bool watching = w != NULL;
    snprintf(want, sizeof want, "done %s", id);
    for (;;) {
        struct trigger_reply r;
        int rc = trigger_get(client, group, id, &r);
        if (rc != BATON_OK)
            return tool_redis_error("trigger", client, rc, "reading the request");
        if (r.n == 0) {
            trigger_reply_free(&r);
            return cli_fail("trigger", "request %s is gone from Redis", id);
        }
        progress(&r.v[0], &last);
        if (r.v[0].state == TRIGGER_DONE && r.v[0].presumed && presumed_until == 0) {
            presumed_until = mono_ms() + grace_ms;
            fprintf(stderr,
                    "baton: trigger: %s: its node (%s) stopped answering while it ran; waiting "
                    "up to %s for its report\n",
                    r.v[0].job, r.v[0].node[0] ? r.v[0].node : "?",
                    tool_format_ms(grace_ms, took, sizeof took));
        }
        if (r.v[0].state == TRIGGER_DONE && (!r.v[0].presumed || mono_ms() >= presumed_until ||
                                             (deadline != 0 && mono_ms() >= deadline))) {
            report_done(&r.v[0]);
            int status = wait_status(&r.v[0]);
            if (json && tool_print_json("trigger", trigger_json(&r.v[0])) != 0)
                status = CLI_EXIT_FAIL;
            trigger_reply_free(&r);
            return status;
        }
        trigger_reply_free(&r);
        /* Sleep until a message (any: "done <id>" ends it), a second, or
         * the deadline. */
        int64_t wait = WAIT_POLL_MS;
        if (presumed_until != 0 && presumed_until - mono_ms() < wait)
            wait = presumed_until - mono_ms() > 0 ? presumed_until - mono_ms() : 1;
        if (deadline != 0) {
            int64_t left = deadline - mono_ms();
            if (left <= 0) {
                fprintf(stderr,
                        "baton: trigger: request %s is not done after --timeout; "
                        "it goes on\n",
                        id);
                return CLI_EXIT_TEMPFAIL;
            }
            if (left < wait)
                wait = left;
        }
        if (!watching) {
            poll(NULL, 0, (int)wait);
            continue;
        }
        struct pollfd pfd = {.fd = baton_election_watch_fd(w), .events = POLLIN};
        if (poll(&pfd, 1, (int)wait) > 0) {
            unsigned ev = 0;
            if (baton_election_watch_read(w, &ev) != BATON_OK)
                watching = false; /* the second-by-second look goes on */
        }
    }
}

static int cmd_trigger(int argc, char **argv)
{
    const char *given = NULL, *id = NULL;
    struct config *cfg = NULL;
    struct baton_client *client = NULL;
    struct baton_election *watch = NULL;
    struct trigger_reply r = {0};
    struct cli_parse p;
    int64_t timeout_ms = 0;
    bool wait = false, json = false, bad = false, timeout_given = false;
    char made[TRIGGER_ID_MAX + 1], who[256];
    int opt = 0, rc;

    cli_parse_init(&p, &cli_cmd_trigger, argc, argv);
    while (!bad) {
        opt = cli_parse_next(&p);
        if (opt < 0)
            break;
        switch (opt) {
        case 'c': given = p.arg; break;
        case OPT_ID: id = p.arg; break;
        case 'w': wait = true; break;
        case OPT_TIMEOUT:
            bad = !cli_duration("trigger", "--timeout", p.arg, false, &timeout_ms);
            timeout_given = true;
            break;
        case TOOL_OPT_JSON: json = true; break;
        default: break;
        }
    }
    cli_parse_end(&p);
    if (bad)
        return CLI_EXIT_USAGE;
    if (opt == CLI_OPT_EXIT)
        return p.status;
    if (p.optind >= argc)
        return cli_usage("trigger", "missing JOB");
    const char *job = argv[p.optind];
    if (p.optind + 1 < argc)
        return cli_usage("trigger", "unexpected argument \"%s\"", argv[p.optind + 1]);
    if (!job_name_ok(job))
        return cli_usage("trigger",
                         "JOB \"%s\": a job name is 1-128 letters, digits, '_', '.' or '-'", job);
    if (id != NULL && !trigger_id_ok(id))
        return cli_usage("trigger",
                         "--id \"%s\": 1-48 letters, digits, '_', '.', ':' or '-', starting "
                         "with a letter or digit",
                         id);
    if (timeout_given && !wait)
        return cli_usage("trigger", "--timeout goes with --wait");
    if (id == NULL) {
        if (trigger_make_id(made, sizeof made) != 0)
            return cli_fail("trigger", "cannot make an id: %s", strerror(errno));
        id = made;
    }
    rc = tool_open("trigger", given, &cfg, &client);
    if (rc != 0)
        return rc;
    rc = tool_check_job("trigger", cfg, job);
    if (rc != 0)
        goto out;
    /* Subscribed before asking: the "done" message cannot come first. */
    if (wait && (baton_election_new(client, cfg->group, NULL, &watch) != BATON_OK ||
                 baton_election_watch(watch) != BATON_OK)) {
        baton_election_free(watch);
        watch = NULL; /* the second-by-second look is enough */
    }
    enum trigger_request_result res;
    int receivers = 0;
    int brc = trigger_request(client, cfg->group, job, id, tool_who(who, sizeof who), &res,
                              &receivers, &r);
    if (brc != BATON_OK) {
        rc = tool_redis_error("trigger", client, brc, "storing the request");
        goto out;
    }
    switch (res) {
    case TRIGGER_FULL:
        rc = cli_fail("trigger", "%d requests wait in group %s already: none is added",
                      TRIGGER_QUEUE_MAX, cfg->group);
        goto out;
    case TRIGGER_OTHER_JOB:
        rc = cli_fail("trigger", "id %s belongs to a request for job %s, not %s", id, r.v[0].job,
                      job);
        goto out;
    case TRIGGER_EXISTS:
        fprintf(stderr, "baton: trigger: %s: request %s exists already (%s): not asked again\n",
                job, id, trigger_state_name(r.v[0].state));
        break;
    case TRIGGER_CREATED:
        if (receivers == 0)
            fprintf(stderr,
                    "baton: trigger: %s: requested (id %s); no supervisor is listening in "
                    "group %s: it runs when one leads\n",
                    job, id, cfg->group);
        else
            fprintf(stderr, "baton: trigger: %s: requested (id %s)\n", job, id);
        break;
    }
    if (!json) { /* the run id, for scripts: id=$(baton trigger JOB) */
        printf("%s\n", id);
        rc = tool_flush("trigger");
        if (rc != 0)
            goto out;
    }
    if (wait)
        rc = follow(client, watch, cfg->group, id, timeout_ms, 2 * cfg->lease_ttl_ms, json);
    else if (json)
        rc = tool_print_json("trigger", trigger_json(&r.v[0]));
out:
    trigger_reply_free(&r);
    baton_election_free(watch);
    baton_client_free(client);
    config_free(cfg);
    return rc;
}
