/* notify_listen.c -- a stand-in for systemd's notification socket, for the
 * integration tests: binds a datagram Unix socket at PATH, prints "ready",
 * then prints one line per datagram received, "<ms> <message>", where ms is
 * CLOCK_MONOTONIC in milliseconds and the message's newlines are written as
 * '|'. Exits on SIGTERM or SIGINT, or after SECONDS (default 120), removing
 * PATH.
 *
 *   notify_listen PATH [SECONDS]
 *   NOTIFY_SOCKET=PATH baton run ...
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char buf[4096];
    if (argc < 2 || strlen(argv[1]) >= sizeof sa.sun_path) {
        fprintf(stderr, "usage: notify_listen PATH [SECONDS]\n");
        return 64;
    }
    long secs = 120;
    if (argc > 2) {
        char *end = NULL;
        errno = 0;
        secs = strtol(argv[2], &end, 10);
        if (errno != 0 || end == argv[2] || *end != '\0' || secs < 1 || secs > 86400) {
            fprintf(stderr, "notify_listen: SECONDS must be 1..86400\n");
            return 64;
        }
    }
    memcpy(sa.sun_path, argv[1], strlen(argv[1]) + 1);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    unlink(argv[1]);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        fprintf(stderr, "notify_listen: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    /* SIGTERM and SIGINT are read from a signalfd: no handler, no flag. */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
    if (sfd < 0) {
        fprintf(stderr, "notify_listen: signalfd: %s\n", strerror(errno));
        return 1;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("ready\n");
    long long end = mono_ms() + secs * 1000;
    for (;;) {
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        long long left = end - mono_ms();
        if (left <= 0)
            break;
        if (poll(p, 2, left < 1000 ? (int)left : 1000) <= 0)
            continue;
        if (p[1].revents != 0)
            break; /* SIGTERM or SIGINT */
        if (p[0].revents == 0)
            continue;
        ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
        if (n < 0)
            continue;
        buf[n] = '\0';
        for (ssize_t i = 0; i < n; i++)
            if (buf[i] == '\n')
                buf[i] = '|';
        printf("%lld %s\n", mono_ms(), buf);
    }
    close(sfd);
    close(fd);
    unlink(argv[1]);
    return 0;
}
