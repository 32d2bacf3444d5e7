/* http_tls.c -- the HTTP server's libmicrohttpd daemons (http_int.h):
 * started without a listening socket of their own (http_conns.c hands
 * them the connections), with TLS when given a certificate and key.
 *
 * A reload (http_tls_replace): libmicrohttpd cannot change a running
 * daemon's certificate, so a new one gets a new daemon. New connections go
 * to it; the old one drains: it serves its connections to their end (their
 * lifetime bounds it: a suspended call's HTTP_CALL_MAX_MS at most), and is
 * stopped once it has none. At most HTTP_TLS_DRAINING drain at once. The
 * loop's thread starts the new daemon and leaves it in h->pending; the
 * server's thread takes it (under tls_mu). */
#ifdef BATON_HAVE_MHD

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "http_int.h"

/* Starts a daemon for the connections we hand over (tls NULL: plain
 * HTTP) into in. Returns 0, or -1 with msg. */
int http_inst_start(struct http *h, const struct http_tls *tls, struct inst *in, char *msg,
                    size_t msglen)
{
    *in = (struct inst){.epoll_fd = -1};
    if (tls != NULL) {
        char tmsg[512];
        if (h->mhd.is_feature_supported(MHD_FEATURE_TLS) != MHD_YES &&
            dynlib_mhd_tls(tmsg, sizeof tmsg) != 0) {
            snprintf(msg, msglen, "%s", tmsg);
            return -1;
        }
        in->cert = strdup(tls->cert);
        in->key = strdup(tls->key);
        in->key_len = in->key != NULL ? strlen(in->key) : 0;
        if (in->cert == NULL || in->key == NULL) {
            snprintf(msg, msglen, "out of memory");
            goto fail;
        }
    }
    struct MHD_OptionItem tls_opts[] = {{MHD_OPTION_HTTPS_MEM_KEY, 0, in->key},
                                        {MHD_OPTION_HTTPS_MEM_CERT, 0, in->cert},
                                        {MHD_OPTION_END, 0, NULL}};
    /* No listening socket of its own: the connections are ours to accept
     * (serve) and to hand over; its limits are above ours, which we keep. */
    unsigned flags = MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET;
    if (h->control.fn != NULL)
        flags |= MHD_ALLOW_SUSPEND_RESUME; /* its wake-up is in the epoll set serve() watches */
    if (tls != NULL)
        flags |= MHD_USE_TLS;
    in->d = h->mhd.start_daemon(
        flags, 0, NULL, NULL, http_on_request, h, MHD_OPTION_CONNECTION_LIMIT, (unsigned)MHD_LIMIT,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)HTTP_MAX_REQUEST, MHD_OPTION_NOTIFY_CONNECTION, http_on_connection, h,
        MHD_OPTION_NOTIFY_COMPLETED, http_on_completed, h, MHD_OPTION_ARRAY,
        tls != NULL ? tls_opts : &tls_opts[2], MHD_OPTION_END);
    if (in->d == NULL) {
        snprintf(msg, msglen,
                 tls != NULL ? "%s: libmicrohttpd could not start with http.tls's certificate and "
                               "key (GnuTLS refused them)"
                             : "%s: libmicrohttpd could not start",
                 h->address);
        goto fail;
    }
    return 0;
fail:
    http_inst_stop(h, in);
    return -1;
}

/* Adds in's own epoll fd to ours. Returns 0, or -1 with msg. */
int http_inst_watch(struct http *h, struct inst *in, char *msg, size_t msglen)
{
    const union MHD_DaemonInfo *di = h->mhd.get_daemon_info(in->d, MHD_DAEMON_INFO_EPOLL_FD);
    struct epoll_event e = {.events = EPOLLIN, .data.fd = di != NULL ? di->epoll_fd : -1};
    if (di == NULL || epoll_ctl(h->ep, EPOLL_CTL_ADD, di->epoll_fd, &e) != 0) {
        snprintf(msg, msglen, "%s: %s", h->address, di == NULL ? "no epoll fd" : strerror(errno));
        return -1;
    }
    in->epoll_fd = di->epoll_fd;
    return 0;
}

/* Stops in's daemon (closing its connections) and frees what it holds;
 * in is empty after. */
void http_inst_stop(struct http *h, struct inst *in)
{
    if (in->epoll_fd >= 0 && h->ep >= 0)
        epoll_ctl(h->ep, EPOLL_CTL_DEL, in->epoll_fd, NULL);
    if (in->d != NULL)
        h->mhd.stop_daemon(in->d);
    if (in->key != NULL)
        explicit_bzero(in->key, in->key_len);
    free(in->key);
    free(in->cert);
    *in = (struct inst){.epoll_fd = -1};
}

/* Server's thread: a reload's daemon becomes the current one, the current
 * one drains. */
void http_take_pending(struct http *h)
{
    pthread_mutex_lock(&h->tls_mu);
    if (h->pending.d == NULL) {
        pthread_mutex_unlock(&h->tls_mu);
        return;
    }
    for (int i = 0; i < HTTP_TLS_DRAINING; i++) {
        if (h->draining[i].d != NULL)
            continue;
        char msg[128];
        h->draining[i] = h->cur;
        h->cur = h->pending;
        h->pending = (struct inst){.epoll_fd = -1};
        h->ndraining++;
        if (http_inst_watch(h, &h->cur, msg, sizeof msg) != 0) { /* keep the old one serving */
            struct inst failed = h->cur;
            h->cur = h->draining[i];
            h->draining[i] = (struct inst){.epoll_fd = -1};
            h->ndraining--;
            http_inst_stop(h, &failed);
        }
        break;
    }
    pthread_mutex_unlock(&h->tls_mu);
}

/* Server's thread: runs the draining daemons, and stops those whose
 * connections have all closed. */
void http_run_draining(struct http *h)
{
    for (int i = 0; i < HTTP_TLS_DRAINING; i++) {
        struct inst *in = &h->draining[i];
        if (in->d == NULL)
            continue;
        h->mhd.run(in->d);
        bool any = false;
        for (const struct conn *k = h->oldest; k != NULL && !any; k = k->next)
            any = k->d == in->d;
        if (any)
            continue;
        pthread_mutex_lock(&h->tls_mu);
        http_inst_stop(h, in);
        h->ndraining--;
        pthread_mutex_unlock(&h->tls_mu);
    }
}

int http_tls_replace(struct http *h, const struct http_tls *tls, char *msg, size_t msglen)
{
    struct inst in;
    if (!h->tls) {
        snprintf(msg, msglen, "the endpoint serves plain HTTP: TLS needs a restart");
        return -1;
    }
    pthread_mutex_lock(&h->tls_mu);
    bool full = h->ndraining + (h->pending.d != NULL) >= HTTP_TLS_DRAINING;
    pthread_mutex_unlock(&h->tls_mu);
    if (full) {
        snprintf(msg, msglen,
                 "%d certificates replaced within %d s still serve their connections: try again "
                 "later",
                 HTTP_TLS_DRAINING, HTTP_CALL_MAX_MS / 1000);
        return -1;
    }
    if (http_inst_start(h, tls, &in, msg, msglen) != 0)
        return -1;
    pthread_mutex_lock(&h->tls_mu);
    struct inst old = h->pending; /* a reload the thread has not taken yet: replaced */
    h->pending = in;
    pthread_mutex_unlock(&h->tls_mu);
    http_inst_stop(h, &old);
    uint64_t one = 1;
    if (write(h->wake, &one, sizeof one) < 0) {
        /* full: readable already */
    }
    return 0;
}

#endif /* BATON_HAVE_MHD */
