/* slowloris.c -- a slow HTTP client, for the integration tests: opens N
 * connections from source address SRC to HOST:PORT, sends the start of a
 * request, then one more header byte on each every 500 ms and never ends
 * the header block. Prints "open N" once all are connected, then, when
 * every connection has been closed by the server or after SECONDS,
 * "held H cut C max_ms M": H connections were held open by the server for
 * more than a second, C were closed, the longest lived M ms.
 *
 *   slowloris HOST PORT SRC N SECONDS
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

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: slowloris HOST PORT SRC N SECONDS\n");
        return 64;
    }
    long n = number(argv[4]), secs = number(argv[5]), port = number(argv[2]);
    if (n < 1 || n > MAXCONN || secs < 1 || port < 1 || port > 65535) {
        fprintf(stderr, "slowloris: N is 1..%d, SECONDS >= 1, PORT 1..65535\n", MAXCONN);
        return 64;
    }
    long long end = mono_ms() + secs * 1000;
    int fd[MAXCONN];
    long long opened[MAXCONN], closed_at[MAXCONN];
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in src = {.sin_family = AF_INET};
    if (inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1 ||
        inet_pton(AF_INET, argv[3], &src.sin_addr) != 1) {
        fprintf(stderr, "slowloris: bad address\n");
        return 64;
    }
    static const char start[] = "GET /metrics HTTP/1.1\r\nHost: slow\r\nX-Slow: ";
    for (int i = 0; i < n; i++) {
        fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd[i] < 0 || bind(fd[i], (struct sockaddr *)&src, sizeof src) != 0 ||
            connect(fd[i], (struct sockaddr *)&dst, sizeof dst) != 0) {
            fprintf(stderr, "slowloris: connect: %s\n", strerror(errno));
            return 1;
        }
        fcntl(fd[i], F_SETFL, O_NONBLOCK);
        opened[i] = mono_ms();
        closed_at[i] = 0;
        if (send(fd[i], start, sizeof start - 1, MSG_NOSIGNAL) < 0)
            closed_at[i] = mono_ms();
    }
    printf("open %ld\n", n);
    fflush(stdout);
    long left = n;
    while (left > 0 && mono_ms() < end) {
        for (int i = 0; i < n; i++) {
            if (closed_at[i] != 0)
                continue;
            char b[512];
            ssize_t r = recv(fd[i], b, sizeof b, 0);
            bool gone = r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
            if (!gone && send(fd[i], "x", 1, MSG_NOSIGNAL) < 0 && errno != EAGAIN)
                gone = true;
            if (gone || r > 0) { /* an answer (an error page) also ends it */
                closed_at[i] = mono_ms();
                close(fd[i]);
                left--;
            }
        }
        usleep(500 * 1000);
    }
    int held = 0, cut = 0;
    long long max = 0;
    for (int i = 0; i < n; i++) {
        long long t = (closed_at[i] != 0 ? closed_at[i] : mono_ms()) - opened[i];
        if (closed_at[i] != 0)
            cut++;
        else
            close(fd[i]);
        if (t > 1000)
            held++;
        if (t > max)
            max = t;
    }
    printf("held %d cut %d max_ms %lld\n", held, cut, max);
    return 0;
}
