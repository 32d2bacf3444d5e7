/* http_conns.c -- the HTTP server's connections (http_int.h): our thread
 * accepts every connection and hands it over to libmicrohttpd
 * (MHD_add_connection), so it decides which connection makes room for a
 * new one (http.h: HTTP_MAX_CONNS, HTTP_MAX_PER_IP, the oldest not yet
 * answered first), and it enforces a lifetime on each (libmicrohttpd's own
 * timeout only counts idle time): it shuts down the connection's socket
 * and lets the next MHD_run() close it. The listening socket is watched
 * only while accept() may run (not at libmicrohttpd's limit, not while out
 * of descriptors), so that its readiness never spins the loop. Everything
 * here runs on the server's thread. */
#ifdef BATON_HAVE_MHD

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "http_int.h"

void http_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode code)
{
    struct http *h = cls;
    (void)c;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        struct conn *k = h->adding; /* only admit() hands connections over */
        h->adding = NULL;
        *socket_context = k;
        if (k == NULL)
            return;
        k->prev = h->newest;
        if (h->newest != NULL)
            h->newest->next = k;
        else
            h->oldest = k;
        h->newest = k;
        h->nconns++;
        h->nlive++;
        return;
    }
    struct conn *k = *socket_context;
    if (k == NULL)
        return;
    if (k->prev != NULL)
        k->prev->next = k->next;
    else
        h->oldest = k->next;
    if (k->next != NULL)
        k->next->prev = k->prev;
    else
        h->newest = k->prev;
    h->nconns--;
    if (!k->shut)
        h->nlive--;
    free(k);
    *socket_context = NULL;
}

/* Shuts k down: libmicrohttpd sees it closed by the peer on its next run,
 * and closes it. */
static void shut(struct http *h, struct conn *k)
{
    shutdown(k->fd, SHUT_RDWR);
    k->shut = true;
    h->nlive--;
}

/* Shuts down the connections past their lifetime. Returns the time to the
 * next deadline in ms (-1: none). */
int http_expire(struct http *h)
{
    int64_t now = mono_ns(), next = -1;
    for (struct conn *k = h->oldest; k != NULL; k = k->next) {
        if (k->shut)
            continue;
        if (now >= k->deadline_ns)
            shut(h, k);
        else if (next < 0 || k->deadline_ns - now < next)
            next = k->deadline_ns - now;
    }
    return next < 0 ? -1 : (int)(next / 1000000 + 1);
}

static bool same_peer(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return false;
    if (a->ss_family == AF_INET)
        return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
                      &((const struct sockaddr_in *)b)->sin_addr, sizeof(struct in_addr)) == 0;
    return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                  &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
}

/* Makes room for one more connection from peer (NULL: from anywhere):
 * shuts down the oldest open connection (of peer) that has not had a
 * request answered, else the oldest open one, when there are `limit`. */
static void make_room(struct http *h, const struct sockaddr_storage *peer, int limit)
{
    struct conn *idle = NULL, *any = NULL;
    int n = 0;
    for (struct conn *k = h->oldest; k != NULL; k = k->next) {
        if (k->shut || (peer != NULL && !same_peer(&k->peer, peer)))
            continue;
        n++;
        if (any == NULL)
            any = k;
        if (idle == NULL && !k->served)
            idle = k;
    }
    if (n >= limit && any != NULL)
        shut(h, idle != NULL ? idle : any);
}

/* Hands an accepted connection to libmicrohttpd, making room for it. */
static void admit(struct http *h, int fd, const struct sockaddr_storage *ss, socklen_t sl)
{
    struct conn *k = calloc(1, sizeof *k);
    if (k == NULL) {
        close(fd);
        return;
    }
    k->fd = fd;
    k->deadline_ns = mono_ns() + (int64_t)HTTP_LIFETIME_MS * 1000000;
    k->has_peer = !h->unix_socket && (ss->ss_family == AF_INET || ss->ss_family == AF_INET6);
    if (k->has_peer) {
        k->peer = *ss;
        make_room(h, &k->peer, HTTP_MAX_PER_IP);
    }
    make_room(h, NULL, HTTP_MAX_CONNS);
    h->adding = k;
    /* It closes fd when it refuses it (out of memory). */
    k->d = h->cur.d;
    h->mhd.add_connection(h->cur.d, fd, (const struct sockaddr *)ss, sl);
    if (h->adding != NULL) { /* refused before it was started */
        h->adding = NULL;
        free(k);
    }
}

/* Whether accept() may run now; -1, or the ms until it may. */
static int accept_wait(const struct http *h)
{
    if (h->nconns >= MHD_LIMIT)
        return LOOK_AGAIN_MS; /* shut down, not closed yet: after the next run */
    if (h->accept_again_ns == 0)
        return -1;
    int64_t left = h->accept_again_ns - mono_ns();
    return left <= 0 ? -1 : (int)(left / 1000000 + 1);
}

/* Watches the listening socket only while accept() may run, so that its
 * readiness never spins the loop. Returns the ms until it may (-1: now). */
int http_arm_listen(struct http *h)
{
    int wait = accept_wait(h);
    bool want = wait < 0;
    if (want == h->listen_armed)
        return wait;
    struct epoll_event e = {.events = want ? EPOLLIN : 0, .data.fd = h->listen_fd};
    if (epoll_ctl(h->ep, EPOLL_CTL_MOD, h->listen_fd, &e) == 0)
        h->listen_armed = want;
    return wait;
}

/* Accepts what is waiting, at most ACCEPT_BATCH. */
void http_accept_some(struct http *h)
{
    h->accept_again_ns = 0;
    for (int i = 0; i < ACCEPT_BATCH && h->nconns < MHD_LIMIT; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        memset(&ss, 0, sizeof ss);
        int fd = accept4(h->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            admit(h, fd, &ss, sl);
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            /* The connection waits in the backlog: try again soon. */
            h->accept_again_ns = mono_ns() + (int64_t)ACCEPT_PAUSE_MS * 1000000;
            return;
        }
        /* EINTR, ECONNABORTED, a network error of that connection: next */
    }
}

#endif /* BATON_HAVE_MHD */
