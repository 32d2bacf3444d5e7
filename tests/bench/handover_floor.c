/* handover_floor.c -- the floor of a graceful leadership handover on this
 * machine, printed as JSON, for tests/bench/bench_fleet.sh (which runs it
 * beside its fleet, on the same redis-server, in the same run).
 *
 * The protocol steps of baton's graceful handover, done by minimal C
 * processes: no threads, no logging, no library but hiredis (blocking API).
 *
 *  - A persistent SUCCESSOR process S holds two connections: one SUBSCRIBEd
 *    to bench:floor:ended, one for commands. On every message it sends at
 *    once `SET bench:floor:leader S NX PX 3000` and, when that is answered
 *    OK, writes its CLOCK_MONOTONIC (ns) to a pipe to the driver.
 *  - Each round, the driver DELs the key and forks a LEADER process L,
 *    which blocks SIGTERM, waits for it on a signalfd, holds the key
 *    (`SET bench:floor:leader L PX 3000`) and on SIGTERM runs one script:
 *    if the key is still its own, DEL it and PUBLISH bench:floor:ended.
 *  - The driver lets the machine calm down (--pause-ms), takes t0
 *    (CLOCK_MONOTONIC), sends SIGTERM to L and waits (5 s at most) for S's
 *    time t1. A round's sample is t1 - t0; a round without one (timeout, S's
 *    SET NX refused, L failing) is a failure.
 *
 * Prints
 * {"bench":"handover_floor","rounds":N,"failures":F,
 *  "handover_ms":{"p50":..,"p99":..,"max":..,"min":..},"measured":"..."}
 * (ms, 3 decimals; percentile: sorted, index (size_t)(p*(n-1)+0.5); null
 * when no round succeeded). Exit 0 when every round succeeded, 1 when one
 * failed or the run could not be set up, 2 on bad arguments. Every child is
 * killed by pid and reaped; each also dies with the driver (PDEATHSIG).
 *
 * usage: handover_floor --port P [--rounds N] [--pause-ms MS]
 *        (defaults: 50 rounds, 200 ms; host 127.0.0.1)
 */
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char HOST[] = "127.0.0.1";
static const char KEY[] = "bench:floor:leader";
static const char CHANNEL[] = "bench:floor:ended";
static const char SCRIPT[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]); "
    "redis.call('publish', KEYS[2], 'released'); return 1 end return 0";
static const char MEASURED[] =
    "kill -TERM to a process waiting on a signalfd -> its script DEL + PUBLISH -> a subscribed "
    "process's SET NX answered OK (CLOCK_MONOTONIC, two processes, no threads, no logging)";
static const char USAGE[] = "usage: handover_floor --port P [--rounds N] [--pause-ms MS]\n";
static const int WAIT_MS = 5000;   /* bound of every wait on a child */
static const int64_t READY = 0;    /* S's first word: subscribed */
static const int64_t REFUSED = -1; /* S's word when its SET NX was not OK */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Parses a decimal integer in [lo, hi]; 0 on success. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* A blocking connection with a 5 s bound on connect and on every command,
 * or NULL after a message naming WHO. */
static redisContext *connect_to(int port, const char *who)
{
    struct timeval tv = {.tv_sec = WAIT_MS / 1000, .tv_usec = 0};
    redisContext *c = redisConnectWithTimeout(HOST, port, tv);
    if (c == NULL) {
        fprintf(stderr, "handover_floor: %s: connect to %s:%d: out of memory\n", who, HOST, port);
        return NULL;
    }
    if (c->err) {
        fprintf(stderr, "handover_floor: %s: connect to %s:%d: %s\n", who, HOST, port, c->errstr);
        redisFree(c);
        return NULL;
    }
    if (redisSetTimeout(c, tv) != REDIS_OK) {
        fprintf(stderr, "handover_floor: %s: set the socket timeout: %s\n", who, c->errstr);
        redisFree(c);
        return NULL;
    }
    return c;
}

/* Writes all of LEN bytes; 0 on success, -1 with errno set. */
static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads exactly LEN bytes within TIMEOUT_MS: 0 on success, 1 on timeout,
 * 2 on end of file, -1 on error (errno set). */
static int read_within(int fd, void *buf, size_t len, int timeout_ms)
{
    char *p = buf;
    int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
    while (len > 0) {
        int64_t left_ms = (deadline - now_ns() + 999999) / 1000000;
        if (left_ms <= 0)
            return 1;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int rc = poll(&pfd, 1, (int)left_ms);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0)
            return -1;
        if (rc == 0)
            return 1;
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return 2;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* In a child right after fork: die with the driver (and do not start when
 * it is already gone). */
static void bind_to_driver(pid_t driver)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
        fprintf(stderr, "handover_floor: prctl(PR_SET_PDEATHSIG): %s\n", strerror(errno));
        exit(1);
    }
    if (getppid() != driver)
        exit(1);
}

/* The successor: its words to the driver on OUT (int64: READY, then per
 * message its time or REFUSED). Returns its exit status. */
static int successor(int port, int out, pid_t driver)
{
    char me[32];
    snprintf(me, sizeof me, "S%ld", (long)getpid());
    /* The driver gone (its end of the pipe closed): write fails, S ends. */
    signal(SIGPIPE, SIG_IGN);
    redisContext *sub = connect_to(port, "successor (subscription)");
    if (sub == NULL)
        return 1;
    redisContext *cmd = connect_to(port, "successor (commands)");
    if (cmd == NULL) {
        redisFree(sub);
        return 1;
    }
    int status = 1;
    redisReply *r = redisCommand(sub, "SUBSCRIBE %s", CHANNEL);
    if (r == NULL) {
        fprintf(stderr, "handover_floor: successor: SUBSCRIBE %s: %s\n", CHANNEL, sub->errstr);
        goto out;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || strcmp(r->element[0]->str, "subscribe") != 0) {
        fprintf(stderr, "handover_floor: successor: SUBSCRIBE %s: unexpected reply (type %d)\n",
                CHANNEL, r->type);
        freeReplyObject(r);
        goto out;
    }
    freeReplyObject(r);
    /* Messages may be far apart: no read timeout on the subscription. */
    if (redisSetTimeout(sub, (struct timeval){0, 0}) != REDIS_OK) {
        fprintf(stderr, "handover_floor: successor: clear the socket timeout: %s\n", sub->errstr);
        goto out;
    }
    if (write_all(out, &READY, sizeof READY) != 0) {
        fprintf(stderr, "handover_floor: successor: write to the driver: %s\n", strerror(errno));
        goto out;
    }
    for (;;) {
        redisReply *msg = NULL;
        if (redisGetReply(sub, (void **)&msg) != REDIS_OK) {
            fprintf(stderr, "handover_floor: successor: subscription connection: %s\n",
                    sub->errstr[0] ? sub->errstr : "failed");
            goto out;
        }
        if (msg->type != REDIS_REPLY_ARRAY || msg->elements != 3 ||
            msg->element[0]->type != REDIS_REPLY_STRING ||
            strcmp(msg->element[0]->str, "message") != 0) {
            freeReplyObject(msg);
            continue;
        }
        redisReply *set = redisCommand(cmd, "SET %s %s NX PX 3000", KEY, me);
        int64_t t1 = now_ns();
        freeReplyObject(msg);
        if (set == NULL) {
            fprintf(stderr, "handover_floor: successor: SET %s NX: %s\n", KEY, cmd->errstr);
            goto out;
        }
        int ok = set->type == REDIS_REPLY_STATUS && strcmp(set->str, "OK") == 0;
        if (!ok)
            fprintf(stderr,
                    "handover_floor: successor: SET %s NX: not granted (reply type %d%s%s)\n", KEY,
                    set->type, set->type == REDIS_REPLY_ERROR ? ": " : "",
                    set->type == REDIS_REPLY_ERROR ? set->str : "");
        freeReplyObject(set);
        int64_t word = ok ? t1 : REFUSED;
        if (getppid() != driver || write_all(out, &word, sizeof word) != 0) {
            status = 0; /* the driver is gone: nothing left to do */
            goto out;
        }
    }
out:
    redisFree(cmd);
    redisFree(sub);
    return status;
}

/* The leader: holds the key, tells the driver on READY_FD, waits for
 * SIGTERM on a signalfd, then releases by one script. Returns its exit
 * status. */
static int leader(int port, int ready_fd)
{
    char me[32];
    snprintf(me, sizeof me, "L%ld", (long)getpid());
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
        fprintf(stderr, "handover_floor: leader: sigprocmask: %s\n", strerror(errno));
        return 1;
    }
    int sfd = signalfd(-1, &set, SFD_CLOEXEC);
    if (sfd < 0) {
        fprintf(stderr, "handover_floor: leader: signalfd: %s\n", strerror(errno));
        return 1;
    }
    int status = 1;
    redisContext *c = connect_to(port, "leader");
    if (c == NULL)
        goto out_fd;
    redisReply *r = redisCommand(c, "SET %s %s PX 3000", KEY, me);
    if (r == NULL) {
        fprintf(stderr, "handover_floor: leader: SET %s: %s\n", KEY, c->errstr);
        goto out;
    }
    int ok = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
    if (!ok)
        fprintf(stderr, "handover_floor: leader: SET %s: unexpected reply (type %d%s%s)\n", KEY,
                r->type, r->type == REDIS_REPLY_ERROR ? ": " : "",
                r->type == REDIS_REPLY_ERROR ? r->str : "");
    freeReplyObject(r);
    if (!ok)
        goto out;
    char byte = 'r';
    if (write_all(ready_fd, &byte, 1) != 0) {
        fprintf(stderr, "handover_floor: leader: write to the driver: %s\n", strerror(errno));
        goto out;
    }
    struct signalfd_siginfo si;
    for (;;) {
        ssize_t n = read(sfd, &si, sizeof si);
        if (n == (ssize_t)sizeof si)
            break;
        if (n < 0 && errno == EINTR)
            continue;
        fprintf(stderr, "handover_floor: leader: read the signalfd: %s\n",
                n < 0 ? strerror(errno) : "short read");
        goto out;
    }
    r = redisCommand(c, "EVAL %s 2 %s %s %s", SCRIPT, KEY, CHANNEL, me);
    if (r == NULL) {
        fprintf(stderr, "handover_floor: leader: EVAL (release): %s\n", c->errstr);
        goto out;
    }
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 1)
        status = 0;
    else if (r->type == REDIS_REPLY_ERROR)
        fprintf(stderr, "handover_floor: leader: EVAL (release): %s\n", r->str);
    else
        fprintf(stderr, "handover_floor: leader: EVAL (release): the key was no longer %s\n", me);
    freeReplyObject(r);
out:
    redisFree(c);
out_fd:
    close(sfd);
    return status;
}

/* Kills PID (when SIG is not 0) and reaps it within WAIT_MS, then with
 * SIGKILL. Returns its wait status, or -1 when it could not be reaped. */
static int stop_child(pid_t pid, int sig, const char *who)
{
    if (sig != 0 && kill(pid, sig) != 0 && errno != ESRCH)
        fprintf(stderr, "handover_floor: kill %s (pid %ld): %s\n", who, (long)pid, strerror(errno));
    int64_t deadline = now_ns() + (int64_t)WAIT_MS * 1000000;
    for (;;) {
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return st;
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            fprintf(stderr, "handover_floor: waitpid %s (pid %ld): %s\n", who, (long)pid,
                    strerror(errno));
            return -1;
        }
        if (now_ns() >= deadline) {
            fprintf(stderr, "handover_floor: %s (pid %ld) did not exit within %d ms: SIGKILL\n",
                    who, (long)pid, WAIT_MS);
            kill(pid, SIGKILL);
            while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
                ;
            return w == pid ? st : -1;
        }
        nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 1000000}, NULL);
    }
}

/* Reports a child's wait status when it is not what WANT_SIG (0: exit 0)
 * says; 0 when it is. */
static int check_status(int st, int want_sig, const char *who)
{
    if (st == -1)
        return -1;
    if (want_sig != 0 && WIFSIGNALED(st) && WTERMSIG(st) == want_sig)
        return 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFEXITED(st))
        fprintf(stderr, "handover_floor: %s exited with status %d\n", who, WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        fprintf(stderr, "handover_floor: %s was killed by signal %d\n", who, WTERMSIG(st));
    return -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print_ms(const double *sorted, size_t n, double p)
{
    if (n == 0)
        fputs("null", stdout);
    else
        printf("%.3f", sorted[(size_t)(p * (double)(n - 1) + 0.5)]);
}

/* One round: a leader forked, SIGTERM, the successor's time. Returns the
 * sample (ms) in *MS and 0, or -1 for a failed round (said on stderr), or
 * -2 when the run cannot go on (the successor is gone). */
static int round_once(int round, int port, long pause_ms, redisContext *drv, int s_in,
                      double *samples, double *ms)
{
    redisReply *r = redisCommand(drv, "DEL %s", KEY);
    if (r == NULL) {
        fprintf(stderr, "handover_floor: round %d: DEL %s: %s\n", round, KEY, drv->errstr);
        return -2;
    }
    freeReplyObject(r);
    /* A late word of a failed round must not count for this one. */
    for (;;) {
        struct pollfd pfd = {.fd = s_in, .events = POLLIN};
        int64_t stale;
        if (poll(&pfd, 1, 0) != 1)
            break;
        int rc = read_within(s_in, &stale, sizeof stale, WAIT_MS);
        if (rc != 0) {
            fprintf(stderr, "handover_floor: round %d: the successor's pipe: %s\n", round,
                    rc == 2   ? "closed (the successor is gone)"
                    : rc == 1 ? "partial word"
                              : strerror(errno));
            return -2;
        }
    }
    int lp[2];
    if (pipe2(lp, O_CLOEXEC) != 0) {
        fprintf(stderr, "handover_floor: round %d: pipe: %s\n", round, strerror(errno));
        return -2;
    }
    pid_t driver = getpid();
    pid_t l = fork();
    if (l < 0) {
        fprintf(stderr, "handover_floor: round %d: fork the leader: %s\n", round, strerror(errno));
        close(lp[0]);
        close(lp[1]);
        return -2;
    }
    if (l == 0) {
        bind_to_driver(driver);
        close(lp[0]);
        close(s_in);
        redisFree(drv);
        free(samples);
        exit(leader(port, lp[1]));
    }
    close(lp[1]);
    int failed = 0;
    char byte;
    int rc = read_within(lp[0], &byte, 1, WAIT_MS);
    close(lp[0]);
    if (rc != 0) {
        fprintf(stderr, "handover_floor: round %d: the leader (pid %ld) %s\n", round, (long)l,
                rc == 1   ? "was not ready within 5 s"
                : rc == 2 ? "exited before it was ready"
                          : strerror(errno));
        check_status(stop_child(l, SIGKILL, "the leader"), SIGKILL, "the leader");
        return -1;
    }
    nanosleep(&(struct timespec){.tv_sec = pause_ms / 1000, .tv_nsec = (pause_ms % 1000) * 1000000},
              NULL);
    int64_t t0 = now_ns();
    if (kill(l, SIGTERM) != 0) {
        fprintf(stderr, "handover_floor: round %d: kill -TERM the leader (pid %ld): %s\n", round,
                (long)l, strerror(errno));
        check_status(stop_child(l, SIGKILL, "the leader"), SIGKILL, "the leader");
        return -1;
    }
    int64_t t1;
    rc = read_within(s_in, &t1, sizeof t1, WAIT_MS);
    if (rc == 0 && t1 == REFUSED) {
        fprintf(stderr, "handover_floor: round %d: the successor's SET NX was refused\n", round);
        failed = -1;
    } else if (rc == 0) {
        *ms = (double)(t1 - t0) / 1e6;
    } else {
        fprintf(stderr, "handover_floor: round %d: no takeover by the successor: %s\n", round,
                rc == 1   ? "none within 5 s"
                : rc == 2 ? "its pipe closed (it is gone)"
                          : strerror(errno));
        failed = rc == 1 ? -1 : -2;
    }
    /* The leader exits by itself after its script; SIGKILL only if it hangs. */
    char who[64];
    snprintf(who, sizeof who, "round %d: the leader (pid %ld)", round, (long)l);
    if (check_status(stop_child(l, 0, who), 0, who) != 0 && failed == 0)
        failed = -1;
    return failed;
}

int main(int argc, char **argv)
{
    long port = -1, rounds = 50, pause_ms = 200;
    for (int i = 1; i < argc; i++) {
        long *dst = NULL, lo = 0, hi = 0;
        if (strcmp(argv[i], "--port") == 0)
            dst = &port, lo = 1, hi = 65535;
        else if (strcmp(argv[i], "--rounds") == 0)
            dst = &rounds, lo = 1, hi = 1000000;
        else if (strcmp(argv[i], "--pause-ms") == 0)
            dst = &pause_ms, lo = 0, hi = 3600000;
        if (dst == NULL || i + 1 >= argc || parse_long(argv[i + 1], lo, hi, dst) != 0) {
            if (dst == NULL)
                fprintf(stderr, "handover_floor: unknown argument: %s\n", argv[i]);
            else if (i + 1 >= argc)
                fprintf(stderr, "handover_floor: %s needs a value\n", argv[i]);
            else
                fprintf(stderr,
                        "handover_floor: %s: expected an integer from %ld to %ld, got '%s'\n",
                        argv[i], lo, hi, argv[i + 1]);
            fputs(USAGE, stderr);
            return 2;
        }
        i++;
    }
    if (port < 0) {
        fputs("handover_floor: --port is required\n", stderr);
        fputs(USAGE, stderr);
        return 2;
    }

    fflush(NULL); /* nothing of the driver's buffered output in the children */
    int sp[2];
    if (pipe2(sp, O_CLOEXEC) != 0) {
        fprintf(stderr, "handover_floor: pipe: %s\n", strerror(errno));
        return 1;
    }
    pid_t driver = getpid();
    pid_t s = fork();
    if (s < 0) {
        fprintf(stderr, "handover_floor: fork the successor: %s\n", strerror(errno));
        close(sp[0]);
        close(sp[1]);
        return 1;
    }
    if (s == 0) {
        bind_to_driver(driver);
        close(sp[0]);
        exit(successor((int)port, sp[1], driver));
    }
    close(sp[1]);
    int s_in = sp[0];

    int status = 1;
    redisContext *drv = NULL;
    double *samples = NULL;
    size_t n = 0;
    long failures = 0;
    int64_t word;
    int rc = read_within(s_in, &word, sizeof word, WAIT_MS);
    if (rc != 0 || word != READY) {
        fprintf(stderr, "handover_floor: the successor (pid %ld) %s\n", (long)s,
                rc == 0   ? "sent an unexpected first word"
                : rc == 1 ? "did not subscribe within 5 s"
                : rc == 2 ? "exited before it subscribed"
                          : strerror(errno));
        goto out;
    }
    drv = connect_to((int)port, "driver");
    if (drv == NULL)
        goto out;
    samples = calloc((size_t)rounds, sizeof *samples);
    if (samples == NULL) {
        fprintf(stderr, "handover_floor: out of memory for %ld samples\n", rounds);
        goto out;
    }
    for (long i = 0; i < rounds; i++) {
        double ms = 0;
        int r = round_once((int)i + 1, (int)port, pause_ms, drv, s_in, samples, &ms);
        if (r == 0) {
            samples[n++] = ms;
        } else if (r == -1) {
            failures++;
        } else {
            failures += rounds - i; /* this round and the ones not run */
            break;
        }
    }
    qsort(samples, n, sizeof *samples, cmp_double);
    printf(
        "{\"bench\":\"handover_floor\",\"rounds\":%ld,\"failures\":%ld,\"handover_ms\":{\"p50\":",
        rounds, failures);
    print_ms(samples, n, 0.50);
    fputs(",\"p99\":", stdout);
    print_ms(samples, n, 0.99);
    fputs(",\"max\":", stdout);
    print_ms(samples, n, 1.0);
    fputs(",\"min\":", stdout);
    print_ms(samples, n, 0.0);
    printf("},\"measured\":\"%s\"}\n", MEASURED);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "handover_floor: write the result: %s\n", strerror(errno));
        failures++;
    }
    status = failures == 0 ? 0 : 1;
out:
    if (check_status(stop_child(s, SIGTERM, "the successor"), SIGTERM, "the successor") != 0)
        status = 1;
    close(s_in);
    free(samples);
    if (drv != NULL)
        redisFree(drv);
    return status;
}
