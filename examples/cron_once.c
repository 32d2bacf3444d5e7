/* cron_once.c -- a cron task deduplicated with the library alone: the same
 * crontab is deployed on three servers, so the "daily-report" task fires on
 * all three for the same tick. Each runs it through baton_once() keyed by
 * the task and its scheduled tick, so it runs once for the fleet:
 *
 *   baton_once(client, "cron:daily-report:<tick>", 48 h, run_report, ...)
 *
 * The three "servers" are three processes (fork), each with its own
 * client, firing a few milliseconds apart as real cron daemons do. The
 * tick is the current minute (UTC), or TICK: run it twice for one tick and
 * the second time every node sees the tick as already done.
 *
 * usage: cron_once [REDIS_URL [TICK]]   (else $BATON_REDIS_URL, else localhost)
 * Exit status 0 when the report ran exactly once for the tick. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "baton.h"
#include "baton_redis.h" /* baton_client_command(): the example's own data in Redis */

#define NODES 3

struct job {
    const char *url;
    const char *tick;
};

/* The task itself: writes the report (here: counts its runs in Redis). */
static int run_report(struct baton_lock *lk, void *arg)
{
    const struct job *j = arg;
    struct baton_client *c = NULL;
    char key[96];
    snprintf(key, sizeof key, "report:daily:%s:runs", j->tick);
    usleep(200000); /* the report takes a while */
    if (baton_client_new(j->url, NULL, &c) != BATON_OK) {
        baton_client_free(c);
        return -1;
    }
    const char *argv[2] = {"INCR", key};
    struct baton_reply *r = NULL;
    int rc = baton_client_command(c, 2, argv, NULL, &r);
    baton_reply_free(r);
    baton_client_free(c);
    (void)lk;
    return rc;
}

/* One server's cron firing. Returns the process exit status. */
static int node_main(int node, const struct job *j)
{
    struct baton_client *c = NULL;
    char id[96];
    snprintf(id, sizeof id, "cron:daily-report:%s", j->tick);
    usleep((useconds_t)(node * 7000)); /* cron daemons do not fire in lockstep */
    if (baton_client_new(j->url, NULL, &c) != BATON_OK) {
        fprintf(stderr, "node %d: %s\n", node, baton_client_errstr(c));
        baton_client_free(c);
        return 2;
    }
    int rc = baton_once(c, id, 48 * 3600 * 1000, run_report, (void *)j);
    if (rc == BATON_ONCE_PROCESSED)
        printf("node %d: ran daily-report for tick %s\n", node, j->tick);
    else
        printf("node %d: skipped daily-report for tick %s: %s\n", node, j->tick,
               baton_once_result_name(rc));
    baton_client_free(c);
    return rc >= 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : getenv("BATON_REDIS_URL");
    if (url == NULL)
        url = "redis://127.0.0.1:6379/0";
    setvbuf(stdout, NULL, _IOLBF, 0);

    char tick[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(tick, sizeof tick, "%Y-%m-%dT%H:%MZ", &tm);
    if (argc > 2)
        snprintf(tick, sizeof tick, "%s", argv[2]);
    struct job j = {url, tick};

    pid_t pid[NODES];
    for (int i = 0; i < NODES; i++) {
        fflush(stdout);
        pid[i] = fork();
        if (pid[i] < 0) {
            perror("fork");
            return 2;
        }
        if (pid[i] == 0) {
            int st = node_main(i + 1, &j);
            fflush(stdout);
            _exit(st);
        }
    }
    int bad = 0;
    for (int i = 0; i < NODES; i++) {
        int st = 0;
        if (waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad++;
    }

    struct baton_client *c = NULL;
    long long runs = -1;
    char key[96];
    snprintf(key, sizeof key, "report:daily:%s:runs", tick);
    const char *get[2] = {"GET", key};
    struct baton_reply *r = NULL;
    if (baton_client_new(url, NULL, &c) == BATON_OK &&
        baton_client_command(c, 2, get, NULL, &r) == BATON_OK && r->type == BATON_REPLY_STRING)
        runs = strtoll(r->str, NULL, 10);
    baton_reply_free(r);
    baton_client_free(c);
    printf("daily-report ran %lld time(s) for tick %s across %d nodes\n", runs, tick, NODES);
    return bad == 0 && runs == 1 ? 0 : 1;
}
