/* cmd_stepdown.c -- `baton step-down [-c FILE] [--wait D]`: ask the group's
 * current leader to hand over gracefully, without exiting.
 *
 * Reads who leads (and its term), publishes "step-down <term>" on the
 * group's event channel (the supervisors subscribe to it; only the leader of
 * that term acts on it: it stops scheduling, lets running jobs finish up to
 * shutdown_grace, releases the lease and wakes the followers, then pauses
 * before campaigning again), and polls the leader every 50 ms until the term
 * changes:
 *
 *   leader web-1 (term 7) stepped down; web-2 leads now (term 8)
 *
 * When the old leader is gone but nobody leads yet, it waits a little more
 * (at most 2 s, within --wait) for the new leader, then says "no leader yet".
 *
 * Exit: 0 handed over; 3 no leader; 1 nobody listening (no supervisor is
 * subscribed) or the leader still leads after --wait (default 5s); 69 Redis
 * unreachable; 78 invalid baton.yaml; 64 for a bad argument.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "baton_election.h"
#include "cli.h"
#include "config.h"
#include "stepdown.h"
#include "tools.h"

#define WAIT_DEFAULT_MS 5000
#define WAIT_MAX_MS     3600000

static int cmd_stepdown(int argc, char **argv);

static const struct cli_opt opts[] = {
    TOOL_OPT_CONFIG,
    {'w', "wait", "D", "wait at most D for the handover (default 5s, at most 1h)"},
    {0},
};

static const struct cli_exit exits[] = {
    {CLI_EXIT_OK, "the leader handed over (the new leader is named when there is one)"},
    {CLI_EXIT_FAIL, "no supervisor is listening, or the leader did not hand over within --wait"},
    {CLI_EXIT_NO_LEADER, "the group has no leader"},
    {CLI_EXIT_USAGE, "bad command line"},
    {CLI_EXIT_UNAVAILABLE, "Redis unreachable or failing"},
    {CLI_EXIT_CONFIG, "baton.yaml missing or invalid"},
    {-1, NULL},
};

const struct cli_cmd cli_cmd_stepdown = {
    .name = "step-down",
    .operands = "",
    .summary = "ask the leader to hand over gracefully",
    .description =
        "Asks the leader of the group to hand over gracefully: it stops scheduling, lets "
        "running jobs finish (up to shutdown_grace), releases the lease and wakes the "
        "followers; one of them leads next. The old leader keeps running as a follower and "
        "campaigns again after a second.",
    .opts = opts,
    .exits = exits,
    .run = cmd_stepdown,
};

static const char *format_wait(int64_t ms, char *buf, size_t len)
{
    if (ms % 1000 == 0)
        snprintf(buf, len, "%" PRId64 "s", ms / 1000);
    else
        snprintf(buf, len, "%" PRId64 "ms", ms);
    return buf;
}

/* The protocol is stepdown.h's; this says what came of it. */
static int step_down(struct baton_client *client, const char *group, int64_t wait_ms)
{
    struct baton_leader_info old, now;
    enum stepdown_result res;
    char wait[32];
    int rc = stepdown_run(client, group, wait_ms, &res, &old, &now);
    if (rc != BATON_OK)
        return tool_redis_error("step-down", client, rc, "asking the leader to hand over");
    switch (res) {
    case STEPDOWN_NO_LEADER:
        return cli_error(CLI_EXIT_NO_LEADER, "step-down", "no leader in group %s", group);
    case STEPDOWN_UNHEARD:
        return cli_fail("step-down",
                        "no supervisor is listening on group %s (leader %s, term %" PRIu64 ")",
                        group, old.identity, old.term);
    case STEPDOWN_HANDED_OVER:
        printf("leader %s (term %" PRIu64 ") stepped down; %s leads now (term %" PRIu64 ")\n",
               old.identity, old.term, now.identity, now.term);
        return tool_flush("step-down");
    case STEPDOWN_NO_LEADER_YET:
        printf("leader %s (term %" PRIu64 ") stepped down; no leader yet\n", old.identity,
               old.term);
        return tool_flush("step-down");
    case STEPDOWN_TIMED_OUT: break;
    }
    return cli_fail("step-down",
                    "leader %s (term %" PRIu64 ") did not step down within %s (it lets "
                    "running jobs finish first, up to shutdown_grace: try a longer --wait)",
                    old.identity, old.term, format_wait(wait_ms, wait, sizeof wait));
}

static int cmd_stepdown(int argc, char **argv)
{
    const char *given = NULL;
    struct config *cfg = NULL;
    struct baton_client *client = NULL;
    struct cli_parse p;
    int64_t wait_ms = WAIT_DEFAULT_MS;
    int id = 0, rc = 0;

    cli_parse_init(&p, &cli_cmd_stepdown, argc, argv);
    while (rc == 0) {
        id = cli_parse_next(&p);
        if (id < 0)
            break;
        switch (id) {
        case 'c': given = p.arg; break;
        case 'w':
            if (!cli_duration("step-down", "--wait", p.arg, false, &wait_ms))
                rc = CLI_EXIT_USAGE;
            else if (wait_ms > WAIT_MAX_MS)
                rc = cli_usage("step-down", "--wait \"%s\": at most 1h", p.arg);
            break;
        default: break;
        }
    }
    cli_parse_end(&p);
    if (rc != 0)
        return rc;
    if (id == CLI_OPT_EXIT)
        return p.status;
    int optind = p.optind;
    if (optind < argc)
        return cli_usage("step-down", "unexpected argument \"%s\"", argv[optind]);
    const char *path = tool_config_path("step-down", given, &rc);
    if (path == NULL)
        return rc;
    rc = tool_load_config("step-down", path, &cfg);
    if (rc != 0)
        return rc;
    rc = tool_connect("step-down", cfg, &client);
    if (rc == 0)
        rc = step_down(client, cfg->group, wait_ms);
    baton_client_free(client);
    config_free(cfg);
    return rc;
}
