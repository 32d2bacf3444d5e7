/* slowloris.c -- a slow HTTP client, for the integration tests: opens N
 * connections from source address SRC to HOST:PORT (or to a Unix socket),
 * sends the start of a request, then one more header byte on each every
 * 500 ms and never ends the header block. Prints "open N" once all are
 * connected, then, when every connection has been closed by the server or
 * after SECONDS, "held H cut C max_ms M": H connections were held open by
 * the server for more than a second, C were closed, the longest lived M
 * ms.
 *
 *   slowloris [--hold] [--refill] HOST PORT SRC N SECONDS
 *   slowloris [--hold] [--refill] unix:PATH N SECONDS
 *
 * --hold: send "GET /healthz HTTP/1.1\r\nHost: x\r\n" once and nothing
 *   more (an idle client with half a request), instead of trickling.
 * --refill: open a new connection in place of each one the server closes,
 *   until SECONDS (the server stays at its limit); the last line then ends
 *   with " reopened R", and the counts cover every connection opened.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAXCONN 256

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* s as a decimal number, or -1 when it is not one. */
static long number(const char *s)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    return errno != 0 || end == s || *end != '\0' ? -1 : v;
}

struct target {
    bool unix_socket;
    struct sockaddr_un un;
    struct sockaddr_in dst, src;
};

/* A connected, non-blocking socket to t, or -1 (at once when a Unix
 * socket's backlog is full, within a second when a TCP one's is). */
static int dial(const struct target *t)
{
    int fd = socket(t->unix_socket ? AF_UNIX : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {.tv_sec = 1};
    if (fd < 0)
        goto fail;
    if (t->unix_socket) {
        fcntl(fd, F_SETFL, O_NONBLOCK);
        if (connect(fd, (const struct sockaddr *)&t->un, sizeof t->un) != 0)
            goto fail;
        return fd;
    }
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
        bind(fd, (const struct sockaddr *)&t->src, sizeof t->src) != 0 ||
        connect(fd, (const struct sockaddr *)&t->dst, sizeof t->dst) != 0)
        goto fail;
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
fail:
    if (fd >= 0)
        close(fd);
    return -1;
}

struct totals {
    int held, cut;
    long long max;
};

/* Counts a connection that lived from opened to now. */
static void count(struct totals *t, long long opened, bool cut)
{
    long long lived = mono_ms() - opened;
    if (lived > 1000)
        t->held++;
    if (lived > t->max)
        t->max = lived;
    if (cut)
        t->cut++;
}

int main(int argc, char **argv)
{
    bool hold = false, refill = false;
    int a = 1;
    for (; a < argc && strncmp(argv[a], "--", 2) == 0; a++) {
        if (strcmp(argv[a], "--hold") == 0)
            hold = true;
        else if (strcmp(argv[a], "--refill") == 0)
            refill = true;
        else
            break;
    }
    struct target t = {.dst.sin_family = AF_INET, .src.sin_family = AF_INET};
    t.unix_socket = a < argc && strncmp(argv[a], "unix:", 5) == 0;
    if (argc - a != (t.unix_socket ? 3 : 5)) {
        fprintf(stderr, "usage: slowloris [--hold] [--refill] HOST PORT SRC N SECONDS\n"
                        "       slowloris [--hold] [--refill] unix:PATH N SECONDS\n");
        return 64;
    }
    long n = number(argv[argc - 2]), secs = number(argv[argc - 1]), port = 1;
    if (t.unix_socket) {
        t.un.sun_family = AF_UNIX;
        if (strlen(argv[a] + 5) >= sizeof t.un.sun_path) {
            fprintf(stderr, "slowloris: the socket's path is too long\n");
            return 64;
        }
        memcpy(t.un.sun_path, argv[a] + 5, strlen(argv[a] + 5) + 1);
    } else {
        port = number(argv[a + 1]);
        t.dst.sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, argv[a], &t.dst.sin_addr) != 1 ||
            inet_pton(AF_INET, argv[a + 2], &t.src.sin_addr) != 1) {
            fprintf(stderr, "slowloris: bad address\n");
            return 64;
        }
    }
    if (n < 1 || n > MAXCONN || secs < 1 || port < 1 || port > 65535) {
        fprintf(stderr, "slowloris: N is 1..%d, SECONDS >= 1, PORT 1..65535\n", MAXCONN);
        return 64;
    }
    long long end = mono_ms() + secs * 1000;
    int fd[MAXCONN];
    long long opened[MAXCONN];
    struct totals tot = {0, 0, 0};
    long reopened = 0;
    static const char trickle[] = "GET /metrics HTTP/1.1\r\nHost: slow\r\nX-Slow: ";
    static const char half[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
    const char *start = hold ? half : trickle;
    size_t start_len = hold ? sizeof half - 1 : sizeof trickle - 1;
    for (int i = 0; i < n; i++) {
        fd[i] = dial(&t);
        /* A Unix socket's backlog full: the server accepts in a moment. */
        for (long long give_up = mono_ms() + 2000;
             fd[i] < 0 && errno == EAGAIN && mono_ms() < give_up;) {
            usleep(1000);
            fd[i] = dial(&t);
        }
        if (fd[i] < 0) {
            fprintf(stderr, "slowloris: connect: %s\n", strerror(errno));
            return 1;
        }
        opened[i] = mono_ms();
        if (send(fd[i], start, start_len, MSG_NOSIGNAL) < 0) {
            count(&tot, opened[i], true);
            close(fd[i]);
            fd[i] = -1;
        }
    }
    printf("open %ld\n", n);
    fflush(stdout);
    long left = 0;
    for (int i = 0; i < n; i++)
        left += fd[i] >= 0;
    while ((left > 0 || refill) && mono_ms() < end) {
        bool room = refill; /* no new connection after one that could not connect */
        for (int i = 0; i < n; i++) {
            if (fd[i] < 0) {
                if (!room)
                    continue;
                fd[i] = dial(&t); /* in place of one the server closed */
                room = fd[i] >= 0;
                if (fd[i] < 0)
                    continue;
                opened[i] = mono_ms();
                reopened++;
                left++;
                if (send(fd[i], start, start_len, MSG_NOSIGNAL) >= 0)
                    continue;
            }
            char b[512];
            ssize_t r = recv(fd[i], b, sizeof b, 0);
            bool gone = r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
            if (!gone && !hold && send(fd[i], "x", 1, MSG_NOSIGNAL) < 0 && errno != EAGAIN)
                gone = true;
            if (gone || r > 0) { /* an answer (an error page) also ends it */
                count(&tot, opened[i], true);
                close(fd[i]);
                fd[i] = -1;
                left--;
            }
        }
        usleep((refill ? 100 : 500) * 1000);
    }
    for (int i = 0; i < n; i++) {
        if (fd[i] < 0)
            continue;
        count(&tot, opened[i], false);
        close(fd[i]);
    }
    printf("held %d cut %d max_ms %lld", tot.held, tot.cut, tot.max);
    if (refill)
        printf(" reopened %ld", reopened);
    printf("\n");
    return 0;
}
