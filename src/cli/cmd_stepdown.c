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
 * Exit: 0 handed over; 1 no leader, nobody listening (no supervisor is
 * subscribed), the leader still leads after --wait (default 5s), or Redis
 * unreachable; 2 for a bad argument.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "config.h"
#include "tools.h"

#define POLL_MS            50
#define WAIT_DEFAULT_MS    5000
#define WAIT_MAX_MS        3600000
#define NEW_LEADER_WAIT_MS 2000

static const char help_text[] =
    "\n"
    "Asks the leader of the group to hand over gracefully: it stops scheduling,\n"
    "lets running jobs finish (up to shutdown_grace), releases the lease and\n"
    "wakes the followers; one of them leads next. The old leader keeps running\n"
    "as a follower.\n"
    "\n"
    "options:\n"
    "  -c, --config FILE  baton.yaml (default ./baton.yaml, then /etc/baton/baton.yaml)\n"
    "  -w, --wait D       wait at most D for the handover (default 5s, at most 1h)\n"
    "\n"
    "exit status: 0 handed over; 1 no leader, no supervisor listening, not\n"
    "handed over within --wait, or Redis unreachable; 2 usage.\n";

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static const char *format_wait(int64_t ms, char *buf, size_t len)
{
    if (ms % 1000 == 0)
        snprintf(buf, len, "%" PRId64 "s", ms / 1000);
    else
        snprintf(buf, len, "%" PRId64 "ms", ms);
    return buf;
}

/* Reads the leader; on failure prints why. Returns 0 or CLI_EXIT_FAIL. */
static int read_leader(struct baton_client *c, const char *group, struct baton_leader_info *info)
{
    int rc = baton_election_leader(c, group, info);
    if (rc == BATON_OK)
        return 0;
    return tool_redis_error("step-down", c, rc, "reading the leader");
}

static int step_down(struct baton_client *client, const char *group, int64_t wait_ms)
{
    struct baton_leader_info old, now;
    char wait[32];
    int receivers = 0;
    int rc = read_leader(client, group, &old);
    if (rc != 0)
        return rc;
    if (!old.has_leader)
        return cli_fail("step-down", "no leader in group %s", group);
    rc = baton_election_request_step_down(client, group, old.term, &receivers);
    if (rc != BATON_OK)
        return tool_redis_error("step-down", client, rc, "sending the request");
    if (receivers == 0)
        return cli_fail("step-down",
                        "no supervisor is listening on group %s (leader %s, term %" PRIu64 ")",
                        group, old.identity, old.term);

    int64_t deadline = now_ms() + wait_ms;
    int64_t gone_at = -1; /* when we saw no leader */
    for (;;) {
        int64_t left = deadline - now_ms();
        sleep_ms(left < POLL_MS ? (left > 0 ? left : 0) : POLL_MS);
        rc = read_leader(client, group, &now);
        if (rc != 0)
            return rc;
        if (now.has_leader && now.term != old.term) {
            printf("leader %s (term %" PRIu64 ") stepped down; %s leads now (term %" PRIu64 ")\n",
                   old.identity, old.term, now.identity, now.term);
            return tool_flush("step-down");
        }
        int64_t t = now_ms();
        if (!now.has_leader && gone_at < 0)
            gone_at = t;
        if (gone_at >= 0 && (t >= deadline || t - gone_at >= NEW_LEADER_WAIT_MS)) {
            printf("leader %s (term %" PRIu64 ") stepped down; no leader yet\n", old.identity,
                   old.term);
            return tool_flush("step-down");
        }
        if (t >= deadline)
            return cli_fail("step-down",
                            "leader %s (term %" PRIu64 ") did not step down within %s (it lets "
                            "running jobs finish first, up to shutdown_grace: try a longer --wait)",
                            old.identity, old.term, format_wait(wait_ms, wait, sizeof wait));
    }
}

int cmd_stepdown(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"wait", required_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *given = NULL;
    struct config *cfg = NULL;
    struct baton_client *client = NULL;
    int64_t wait_ms = WAIT_DEFAULT_MS;
    int c, rc;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:w:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': given = optarg; break;
        case 'w':
            if (!cli_duration("step-down", "--wait", optarg, false, &wait_ms))
                return CLI_EXIT_USAGE;
            if (wait_ms > WAIT_MAX_MS)
                return cli_usage("step-down", "--wait \"%s\": at most 1h", optarg);
            break;
        case 'h':
            cli_print_usage("step-down");
            fputs(help_text, stdout);
            return CLI_EXIT_OK;
        default: return tool_opt_error("step-down", c, argv, opts);
        }
    }
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
