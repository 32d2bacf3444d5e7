/* stamp.c -- prints the wall clock (CLOCK_REALTIME, ns) at the first
 * instruction of main(), then executes its arguments, if any:
 *
 *   stamp [COMMAND [ARG...]]    prints "stamp <ns>", then execvp(COMMAND)
 *
 * bench_jobs.sh builds it static (no dynamic loader: main() runs tens of
 * microseconds after the exec) and runs it as the job of baton and of the
 * naive loop it is compared with, so that both are measured to the exec of
 * the job, and then to a `date` inside it. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    printf("stamp %lld%09ld\n", (long long)ts.tv_sec, ts.tv_nsec);
    fflush(stdout);
    if (argc > 1) {
        execvp(argv[1], argv + 1);
        perror(argv[1]);
        return 127;
    }
    return 0;
}
