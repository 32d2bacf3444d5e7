/* sock.c -- the plain transport: a TCP or Unix stream socket, non-blocking
 * and close-on-exec, every wait bounded by a deadline. tls.c dials through
 * baton__sock_dial() too, then speaks TLS on the socket. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "transport_int.h"

static int ms_until(int64_t deadline_ns)
{
    int64_t left = deadline_ns - baton__now_ns();
    if (left <= 0)
        return 0;
    int64_t ms = (left + 999999) / 1000000;
    return ms > 60000 ? 60000 : (int)ms;
}

int baton__wait_fd(int fd, short events, int64_t deadline_ns)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, ms_until(deadline_ns));
        if (n > 0)
            return 1;
        if (n == 0) {
            if (baton__now_ns() >= deadline_ns)
                return 0;
            continue;
        }
        if (errno != EINTR)
            return -1;
    }
}

/* Connects one socket to addr before the deadline. Returns the fd or -1
 * with *why set to a static description. */
static int connect_addr(int family, const struct sockaddr *addr, socklen_t len, int64_t deadline_ns,
                        const char **why)
{
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *why = strerror(errno);
        return -1;
    }
    if (connect(fd, addr, len) != 0) {
        if (errno != EINPROGRESS && errno != EAGAIN) {
            *why = strerror(errno);
            goto out_close;
        }
        int r = baton__wait_fd(fd, POLLOUT, deadline_ns);
        if (r == 0) {
            *why = "connect timed out";
            goto out_close;
        }
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0) {
            *why = strerror(r < 0 ? errno : soerr ? soerr : EIO);
            goto out_close;
        }
    }
    if (family != AF_UNIX) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
out_close:
    close(fd);
    return -1;
}

int baton__sock_dial(const struct baton__endpoint *ep, int64_t deadline_ns, const char **why)
{
    if (ep->path != NULL) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(ep->path) >= sizeof sa.sun_path) {
            *why = "socket path too long";
            return -1;
        }
        memcpy(sa.sun_path, ep->path, strlen(ep->path) + 1);
        return connect_addr(AF_UNIX, (struct sockaddr *)&sa, sizeof sa, deadline_ns, why);
    }

    char port[8];
    snprintf(port, sizeof port, "%d", ep->port);
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gr = getaddrinfo(ep->host, port, &hints, &res);
    if (gr != 0) {
        *why = gai_strerror(gr);
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *ai = res; ai != NULL && fd < 0; ai = ai->ai_next)
        fd = connect_addr(ai->ai_family, ai->ai_addr, ai->ai_addrlen, deadline_ns, why);
    freeaddrinfo(res);
    return fd;
}

static int sock_connect(struct baton__conn *cn, const struct baton__endpoint *ep,
                        int64_t deadline_ns)
{
    const char *why = "unknown error";
    if ((cn->fd = baton__sock_dial(ep, deadline_ns, &why)) >= 0)
        return BATON_OK;
    baton__set_error(cn->err, sizeof cn->err, "cannot connect: %s", why);
    return BATON_EIO;
}

static ssize_t sock_read(struct baton__conn *cn, char *buf, size_t len)
{
    for (;;) {
        ssize_t n = recv(cn->fd, buf, len, 0);
        if (n > 0)
            return n;
        if (n == 0) {
            baton__conn_fail(cn, "connection closed by the server", "");
            return BATON_EIO;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            cn->want = POLLIN;
            return 0;
        }
        baton__conn_fail(cn, "read: ", strerror(errno));
        return BATON_EIO;
    }
}

static ssize_t sock_write(struct baton__conn *cn, const char *buf, size_t len)
{
    for (;;) {
        ssize_t n = send(cn->fd, buf, len, MSG_NOSIGNAL);
        if (n > 0)
            return n;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            cn->want = POLLOUT;
            return 0;
        }
        baton__conn_fail(cn, "write: ", n < 0 ? strerror(errno) : "no progress");
        return BATON_EIO;
    }
}

static bool sock_pending(const struct baton__conn *cn)
{
    (void)cn;
    return false;
}

static void sock_close(struct baton__conn *cn)
{
    if (cn->fd >= 0)
        close(cn->fd);
    cn->fd = -1;
}

const struct baton__transport baton__sock_transport = {
    .name = "socket",
    .connect = sock_connect,
    .read = sock_read,
    .write = sock_write,
    .pending = sock_pending,
    .close = sock_close,
};
