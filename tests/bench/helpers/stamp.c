/* stamp.c -- prints the wall clock (CLOCK_REALTIME, ns) at the first
 * instruction of main(), then executes its arguments, if any:
 *
 *   stamp [COMMAND [ARG...]]    prints "stamp <ns>", then execvp(COMMAND)
 *   stamp --floor N             N times: posix_spawn() itself (a vfork,
 *                               the cheapest start there is) and print the
 *                               ms from just before the spawn to the
 *                               child's stamp: the floor of starting any
 *                               process on this machine
 *   stamp --timed N OFFSET_MS   N times: sleep to OFFSET_MS past the next
 *                               whole second (clock_nanosleep, absolute
 *                               CLOCK_REALTIME, no timer slack), then
 *                               posix_spawn() itself; print the ms from that
 *                               instant to the child's stamp: the cheapest
 *                               scheduler there is (one wake-up at the
 *                               instant and a spawn), the floor under the
 *                               lateness of any that sleeps until its tick
 *
 * bench_jobs.sh builds it static (no dynamic loader: main() runs tens of
 * microseconds after the exec) and runs it as the job of baton and of the
 * naive loop it is compared with, so that both are measured to the exec of
 * the job, and then to a `date` inside it. */
#include <errno.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One start of self, measured: ms from `from` (ns; 0: just before
 * posix_spawn) to the child's stamp, or -1. */
static double one_start(char *self, long long from)
{
    int p[2];
    char buf[64] = {0}, *argv[] = {self, NULL};
    posix_spawn_file_actions_t fa;
    pid_t pid;
    if (pipe(p) != 0)
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    long long t0 = from != 0 ? from : now_ns();
    int e = posix_spawn(&pid, self, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    ssize_t n = e == 0 ? read(p[0], buf, sizeof buf - 1) : -1;
    close(p[0]);
    if (e == 0)
        waitpid(pid, NULL, 0);
    if (n < 7 || strncmp(buf, "stamp ", 6) != 0)
        return -1;
    return (strtoll(buf + 6, NULL, 10) - t0) / 1e6;
}

int main(int argc, char **argv)
{
    long long t = now_ns();
    if (argc == 3 && strcmp(argv[1], "--floor") == 0) {
        long n = strtol(argv[2], NULL, 10);
        for (long i = 0; i < n; i++) {
            double ms = one_start(argv[0], 0);
            if (ms >= 0)
                printf("%.3f\n", ms);
            usleep(20000);
        }
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "--timed") == 0) {
        long n = strtol(argv[2], NULL, 10);
        long long offset = strtoll(argv[3], NULL, 10) * 1000000;
        prctl(PR_SET_TIMERSLACK, 1UL);
        for (long i = 0; i < n; i++) {
            long long at = (now_ns() - offset) / 1000000000 * 1000000000 + 1000000000 + offset;
            struct timespec ts = {.tv_sec = at / 1000000000, .tv_nsec = at % 1000000000};
            int e;
            while ((e = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL)) == EINTR)
                ;
            if (e != 0) {
                fprintf(stderr, "stamp: clock_nanosleep: %s\n", strerror(e));
                return 1;
            }
            double ms = one_start(argv[0], at);
            if (ms >= 0)
                printf("%.3f\n", ms);
            fflush(stdout);
        }
        return 0;
    }
    printf("stamp %lld\n", t);
    fflush(stdout);
    if (argc > 1) {
        execvp(argv[1], argv + 1);
        perror(argv[1]);
        return 127;
    }
    return 0;
}
