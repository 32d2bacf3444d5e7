/* blackhole.c -- a TCP proxy on loopback that can black-hole its traffic,
 * for tests of a leader cut off from Redis (a partition where packets are
 * dropped, not refused: calls hang until their timeout).
 *
 *   blackhole LISTEN_PORT TARGET_PORT
 *
 * Forwards every connection to 127.0.0.1:TARGET_PORT. SIGUSR1: black-hole
 * (nothing more is forwarded either way, nothing is closed, new
 * connections are left in the listen queue); SIGHUP: hold the answers only
 * (requests reach the server, which acts on them; its replies wait, as when
 * they are lost on the way back); SIGUSR2: heal (what waited flows again,
 * as after a real partition). SIGTERM ends it. Prints "ready" once
 * listening. One thread, poll(2).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAXC 64

struct pair {
    int a, b; /* client, server; -1 when unused */
};

static int listen_on(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 64) != 0)
        return -1;
    return fd;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static void drop(struct pair *p)
{
    close(p->a);
    close(p->b);
    p->a = p->b = -1;
}

/* Copies what is readable on from to to. Returns false at EOF or error. */
static bool pump(int from, int to)
{
    char buf[65536];
    ssize_t n = read(from, buf, sizeof buf);
    if (n <= 0)
        return n < 0 && (errno == EINTR || errno == EAGAIN);
    for (ssize_t off = 0; off < n;) {
        ssize_t w = write(to, buf + off, (size_t)(n - off));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        off += w;
    }
    return true;
}

static int port_arg(const char *s)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    return (end != s && *end == '\0' && v > 0 && v < 65536) ? (int)v : -1;
}

int main(int argc, char **argv)
{
    int lport = argc == 3 ? port_arg(argv[1]) : -1, tport = argc == 3 ? port_arg(argv[2]) : -1;
    if (lport < 0 || tport < 0) {
        fprintf(stderr, "usage: blackhole LISTEN_PORT TARGET_PORT\n");
        return 2;
    }
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGUSR1);
    sigaddset(&mask, SIGUSR2);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
    int lfd = listen_on(lport);
    if (lfd < 0 || sfd < 0) {
        perror("blackhole");
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    struct pair pairs[MAXC];
    for (int i = 0; i < MAXC; i++)
        pairs[i].a = pairs[i].b = -1;
    bool holed = false, mute = false; /* mute: replies held */
    for (;;) {
        struct pollfd p[2 + 2 * MAXC];
        int n = 0;
        p[n++] = (struct pollfd){.fd = sfd, .events = POLLIN};
        p[n++] = (struct pollfd){.fd = holed ? -1 : lfd, .events = POLLIN};
        for (int i = 0; i < MAXC; i++) {
            bool on = !holed && pairs[i].a >= 0;
            p[n++] = (struct pollfd){.fd = on ? pairs[i].a : -1, .events = POLLIN};
            p[n++] = (struct pollfd){.fd = on && !mute ? pairs[i].b : -1, .events = POLLIN};
        }
        if (poll(p, (nfds_t)n, -1) < 0 && errno != EINTR)
            return 1;
        if (p[0].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo == SIGUSR1)
                    holed = true;
                else if (si.ssi_signo == SIGHUP)
                    mute = true;
                else if (si.ssi_signo == SIGUSR2)
                    holed = mute = false;
                else
                    return 0;
            }
            continue;
        }
        if (p[1].revents & POLLIN) {
            int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            int s = c >= 0 ? connect_to(tport) : -1;
            int slot = -1;
            for (int i = 0; i < MAXC && slot < 0; i++)
                if (pairs[i].a < 0)
                    slot = i;
            if (c >= 0 && s >= 0 && slot >= 0) {
                pairs[slot].a = c;
                pairs[slot].b = s;
            } else {
                if (c >= 0)
                    close(c);
                if (s >= 0)
                    close(s);
            }
        }
        for (int i = 0; i < MAXC; i++) {
            if (pairs[i].a < 0)
                continue;
            short ra = p[2 + 2 * i].revents, rb = p[3 + 2 * i].revents;
            if ((ra & (POLLIN | POLLHUP | POLLERR)) && !pump(pairs[i].a, pairs[i].b))
                drop(&pairs[i]);
            else if ((rb & (POLLIN | POLLHUP | POLLERR)) && !pump(pairs[i].b, pairs[i].a))
                drop(&pairs[i]);
        }
    }
}
