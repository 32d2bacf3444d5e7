/* conn.c -- one connection to Redis: our own transport (TCP or Unix socket,
 * non-blocking, every wait bounded by a deadline) carrying RESP, which
 * hiredis formats (redisFormatCommandArgv) and parses (redisReader). */
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

#include "baton_int.h"

#define READ_CHUNK 16384

static int ms_until(int64_t deadline_ns)
{
    int64_t left = deadline_ns - baton__now_ns();
    if (left <= 0)
        return 0;
    int64_t ms = (left + 999999) / 1000000;
    return ms > 60000 ? 60000 : (int)ms;
}

/* Waits for events on fd until deadline_ns. Returns 1 ready, 0 timed out,
 * -1 error (errno set). */
static int wait_fd(int fd, short events, int64_t deadline_ns)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int ms = ms_until(deadline_ns);
        int n = poll(&p, 1, ms);
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

/* Marks cn broken with the message what + detail. */
static void conn_fail(struct baton__conn *cn, const char *what, const char *detail)
{
    cn->broken = true;
    baton__set_error(cn->err, sizeof cn->err, "%s%s", what, detail);
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
        int r = wait_fd(fd, POLLOUT, deadline_ns);
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

static int open_socket(const struct baton__url *u, int64_t deadline_ns, const char **why)
{
    if (u->transport == BATON__UNIX) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(u->path) >= sizeof sa.sun_path) {
            *why = "socket path too long";
            return -1;
        }
        memcpy(sa.sun_path, u->path, strlen(u->path) + 1);
        return connect_addr(AF_UNIX, (struct sockaddr *)&sa, sizeof sa, deadline_ns, why);
    }

    char port[8];
    snprintf(port, sizeof port, "%d", u->port);
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gr = getaddrinfo(u->host, port, &hints, &res);
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

void baton__conn_free(struct baton__conn *cn)
{
    if (cn == NULL)
        return;
    if (cn->fd >= 0)
        close(cn->fd);
    if (cn->reader != NULL)
        redisReaderFree(cn->reader);
    free(cn->obuf);
    free(cn);
}

/* AUTH and SELECT. */
static int handshake(struct baton__conn *cn, const struct baton__url *u, int64_t deadline_ns)
{
    const char *argv[3];
    size_t lens[3];
    int argc = 0;
    redisReply *r = NULL;
    int rc;

    if (u->pass != NULL) {
        argv[argc++] = "AUTH";
        if (u->user != NULL)
            argv[argc++] = u->user;
        argv[argc++] = u->pass;
        for (int i = 0; i < argc; i++)
            lens[i] = strlen(argv[i]);
        if ((rc = baton__conn_command(cn, argc, argv, lens, &r, deadline_ns)) != BATON_OK)
            return rc;
        if (r->type == REDIS_REPLY_ERROR) {
            baton__set_error(cn->err, sizeof cn->err, "authentication failed: %.200s", r->str);
            freeReplyObject(r);
            return BATON_EAUTH;
        }
        freeReplyObject(r);
    }
    if (u->db != 0) {
        char db[16];
        snprintf(db, sizeof db, "%d", u->db);
        argv[0] = "SELECT";
        argv[1] = db;
        lens[0] = 6;
        lens[1] = strlen(db);
        if ((rc = baton__conn_command(cn, 2, argv, lens, &r, deadline_ns)) != BATON_OK)
            return rc;
        if (r->type == REDIS_REPLY_ERROR) {
            baton__set_error(cn->err, sizeof cn->err, "SELECT %d: %.200s", u->db, r->str);
            freeReplyObject(r);
            return BATON_EREDIS;
        }
        freeReplyObject(r);
    }
    return BATON_OK;
}

int baton__conn_open(const struct baton__url *u, int64_t deadline_ns, struct baton__conn **out,
                     char *err, size_t errlen)
{
    const char *why = "unknown error";
    int rc;
    struct baton__conn *cn = calloc(1, sizeof *cn);

    *out = NULL;
    if (cn == NULL)
        return BATON_ENOMEM;
    cn->fd = -1;
    if ((cn->reader = redisReaderCreate()) == NULL) {
        rc = BATON_ENOMEM;
        goto out_free;
    }
    if ((cn->fd = open_socket(u, deadline_ns, &why)) < 0) {
        baton__set_error(err, errlen, "%s: cannot connect: %s", u->redacted, why);
        rc = BATON_EIO;
        goto out_free;
    }
    if ((rc = handshake(cn, u, deadline_ns)) != BATON_OK) {
        baton__set_error(err, errlen, "%s: %s", u->redacted, cn->err);
        goto out_free;
    }
    *out = cn;
    return BATON_OK;
out_free:
    baton__conn_free(cn);
    return rc;
}

int baton__conn_append(struct baton__conn *cn, int argc, const char **argv, const size_t *lens)
{
    char *cmd = NULL;
    int n = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (n < 0)
        return BATON_ENOMEM;
    if (cn->olen + (size_t)n > cn->ocap) {
        size_t cap = cn->ocap ? cn->ocap : 256;
        while (cap < cn->olen + (size_t)n)
            cap *= 2;
        char *grown = realloc(cn->obuf, cap);
        if (grown == NULL) {
            redisFreeCommand(cmd);
            return BATON_ENOMEM;
        }
        cn->obuf = grown;
        cn->ocap = cap;
    }
    memcpy(cn->obuf + cn->olen, cmd, (size_t)n);
    cn->olen += (size_t)n;
    redisFreeCommand(cmd);
    return BATON_OK;
}

int baton__conn_flush(struct baton__conn *cn, int64_t deadline_ns)
{
    size_t off = 0;
    if (cn->broken)
        return BATON_EIO;
    while (off < cn->olen) {
        ssize_t n = send(cn->fd, cn->obuf + off, cn->olen - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = wait_fd(cn->fd, POLLOUT, deadline_ns);
            if (r > 0)
                continue;
            conn_fail(cn, "write: ", r == 0 ? "timed out" : strerror(errno));
            return BATON_EIO;
        }
        conn_fail(cn, "write: ", strerror(errno));
        return BATON_EIO;
    }
    cn->olen = 0;
    return BATON_OK;
}

/* Reads what is available into the reader. Returns 1 on data, 0 on
 * EAGAIN, or a negative code (conn broken). */
static int fill(struct baton__conn *cn)
{
    char buf[READ_CHUNK];
    for (;;) {
        ssize_t n = recv(cn->fd, buf, sizeof buf, 0);
        if (n > 0) {
            if (redisReaderFeed(cn->reader, buf, (size_t)n) != REDIS_OK) {
                conn_fail(cn, "out of memory reading a reply", "");
                return BATON_ENOMEM;
            }
            return 1;
        }
        if (n == 0) {
            conn_fail(cn, "connection closed by the server", "");
            return BATON_EIO;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        conn_fail(cn, "read: ", strerror(errno));
        return BATON_EIO;
    }
}

int baton__conn_poll_reply(struct baton__conn *cn, redisReply **reply)
{
    void *r = NULL;
    *reply = NULL;
    if (cn->broken)
        return BATON_EIO;
    for (;;) {
        if (redisReaderGetReply(cn->reader, &r) != REDIS_OK) {
            conn_fail(cn, "protocol error: ", cn->reader->errstr);
            return BATON_EPROTO;
        }
        if (r != NULL) {
            *reply = r;
            return 1;
        }
        int f = fill(cn);
        if (f <= 0)
            return f;
    }
}

int baton__conn_wait_readable(const struct baton__conn *cn, int64_t deadline_ns)
{
    int w = wait_fd(cn->fd, POLLIN, deadline_ns);
    return w > 0 ? 1 : w == 0 ? 0 : -errno;
}

void baton__conn_fail(struct baton__conn *cn, const char *what, const char *detail)
{
    conn_fail(cn, what, detail);
}

int baton__conn_read(struct baton__conn *cn, redisReply **reply, int64_t deadline_ns)
{
    void *r = NULL;
    *reply = NULL;
    if (cn->broken)
        return BATON_EIO;
    /* Parse what has arrived; otherwise wait first, then read: a reply is
     * rarely there the moment after a request went out, so trying recv()
     * first would mostly cost a syscall. */
    for (;;) {
        if (redisReaderGetReply(cn->reader, &r) != REDIS_OK) {
            conn_fail(cn, "protocol error: ", cn->reader->errstr);
            return BATON_EPROTO;
        }
        if (r != NULL) {
            *reply = r;
            return BATON_OK;
        }
        int w = wait_fd(cn->fd, POLLIN, deadline_ns);
        if (w <= 0) {
            conn_fail(cn, "read: ", w == 0 ? "timed out waiting for redis" : strerror(errno));
            return BATON_EIO;
        }
        int f = fill(cn);
        if (f < 0)
            return f;
    }
}

int baton__conn_command(struct baton__conn *cn, int argc, const char **argv, const size_t *lens,
                        redisReply **reply, int64_t deadline_ns)
{
    int rc;
    *reply = NULL;
    if ((rc = baton__conn_append(cn, argc, argv, lens)) != BATON_OK)
        return rc;
    if ((rc = baton__conn_flush(cn, deadline_ns)) != BATON_OK)
        return rc;
    return baton__conn_read(cn, reply, deadline_ns);
}
