/* leader_daemon.c -- leader election embedded in a small daemon:
 * three daemons (processes) campaign for "scheduler"; whoever leads runs
 * the scheduler, the others wait.
 *
 * Each daemon calls baton_leader_campaign() with two callbacks, which run
 * on the campaign's own thread:
 *   on_gained(term)          start the scheduler
 *   on_lost(term, reason)    stop it -- called before leadership is given
 *                            up, and, if renewals fail, before the lease's
 *                            validity deadline
 * The daemon's main thread does its work while baton_leader_is_leader()
 * says so. Here each leader runs three scheduler ticks and is then
 * "deployed" (resigns and exits): the resignation wakes the waiting
 * daemons at once, one of them wins with a higher term, and so on until
 * all three have led. The result a reader looks for: one leader at a time,
 * terms increasing, handovers in milliseconds.
 *
 * usage: leader_daemon [REDIS_URL]   (else $BATON_REDIS_URL, else localhost)
 * Exit status 0 when each daemon led once and exited cleanly. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "baton.h"

#define DAEMONS 3

struct daemon {
    int node;
    struct timespec t0; /* when the program started, for the timestamps */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool leading;
    uint64_t term;
};

/* Milliseconds since the program started (CLOCK_MONOTONIC is shared by
 * the processes of one machine). */
static double since(const struct timespec *t0)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)(ts.tv_sec - t0->tv_sec) * 1000 + (double)(ts.tv_nsec - t0->tv_nsec) / 1e6;
}

static const char *reason_text(int reason)
{
    switch (reason) {
    case 0: return "resigned";
    case BATON_ELOST: return "another node holds the lease";
    case BATON_EIO: return "renewals not confirmed in time";
    default: return baton_strerror(reason);
    }
}

/* Both callbacks run on the campaign's thread: they only flip state and
 * wake the daemon's main thread. */
static void on_gained(struct baton_leader *l, uint64_t term, int reason, void *arg)
{
    struct daemon *d = arg;
    (void)l;
    (void)reason;
    pthread_mutex_lock(&d->mu);
    d->leading = true;
    d->term = term;
    printf("%9.1f ms  node-%d: became leader (term %llu): starting the scheduler\n", since(&d->t0),
           d->node, (unsigned long long)term);
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

static void on_lost(struct baton_leader *l, uint64_t term, int reason, void *arg)
{
    struct daemon *d = arg;
    (void)l;
    pthread_mutex_lock(&d->mu);
    d->leading = false;
    printf("%9.1f ms  node-%d: lost leadership (term %llu, %s): scheduler stopped\n", since(&d->t0),
           d->node, (unsigned long long)term, reason_text(reason));
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

/* One daemon. Returns its exit status. */
static int daemon_main(int node, const char *url, const struct timespec *t0)
{
    struct daemon d = {.node = node, .t0 = *t0};
    struct baton_client *c = NULL;
    struct baton_leader *l = NULL;
    struct baton_leader_opts o = {
        .ttl_ms = 10000, .on_gained = on_gained, .on_lost = on_lost, .arg = &d};
    struct timespec until;
    char identity[32];
    bool led;
    int status = 1;

    pthread_mutex_init(&d.mu, NULL);
    pthread_cond_init(&d.cv, NULL);
    snprintf(identity, sizeof identity, "node-%d", node);
    if (baton_client_new(url, NULL, &c) != BATON_OK) {
        fprintf(stderr, "%s: %s\n", identity, baton_client_errstr(c));
        goto out;
    }
    o.identity = identity;
    if (baton_leader_campaign(c, "scheduler", &o, &l) != BATON_OK)
        goto out;

    /* Wait to lead (bounded, so that a broken setup ends). */
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&d.mu);
    while (!d.leading)
        if (pthread_cond_timedwait(&d.cv, &d.mu, &until) == ETIMEDOUT)
            break;
    led = d.leading;
    pthread_mutex_unlock(&d.mu);
    if (!led) {
        fprintf(stderr, "%s: never became leader\n", identity);
        goto out;
    }

    /* The scheduler, while we lead. */
    for (int tick = 1; tick <= 3 && baton_leader_is_leader(l); tick++) {
        printf("%9.1f ms  node-%d: scheduler tick %d (term %llu)\n", since(&d.t0), node, tick,
               (unsigned long long)baton_leader_term(l));
        usleep(200000);
    }
    printf("%9.1f ms  node-%d: deploying a new version: resigning\n", since(&d.t0), node);
    status = baton_leader_resign(l) == BATON_OK ? 0 : 1; /* on_lost runs first */
out:
    baton_leader_free(l);
    baton_client_free(c);
    pthread_cond_destroy(&d.cv);
    pthread_mutex_destroy(&d.mu);
    return status;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : getenv("BATON_REDIS_URL");
    if (url == NULL)
        url = "redis://127.0.0.1:6379/0";
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    printf("%d daemons campaign for \"scheduler\"\n", DAEMONS);
    pid_t pid[DAEMONS];
    for (int i = 0; i < DAEMONS; i++) {
        fflush(stdout);
        pid[i] = fork();
        if (pid[i] < 0) {
            perror("fork");
            return 2;
        }
        if (pid[i] == 0) {
            int st = daemon_main(i + 1, url, &t0);
            fflush(stdout);
            _exit(st);
        }
    }
    int bad = 0;
    for (int i = 0; i < DAEMONS; i++) {
        int st = 0;
        if (waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad++;
    }
    printf("%d daemons led in turn, %d exited with an error\n", DAEMONS, bad);
    return bad == 0 ? 0 : 1;
}
