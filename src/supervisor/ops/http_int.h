/* http_int.h -- what the files of the HTTP server share (http.h says what
 * it is): http.c (the requests, the thread, start and stop), http_conns.c
 * (accepting connections, making room, their lifetimes) and http_tls.c
 * (libmicrohttpd's daemons: one per certificate, replaced on reload). The
 * server's state is struct http; what the server's thread alone touches
 * is marked. Nothing else includes this file. Only with BATON_HAVE_MHD. */
#ifndef BATON_HTTP_INT_H
#define BATON_HTTP_INT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "dynlib.h"
#include "http.h"

/* libmicrohttpd's own limit: ours, and room for the connections shut down
 * by the last round of accepts, which it closes on its next run. */
#define MHD_LIMIT       (2 * HTTP_MAX_CONNS)
#define ACCEPT_BATCH    16  /* accepts between two runs of libmicrohttpd */
#define LOOK_AGAIN_MS   100 /* while a connection shut down is not closed yet... */
#define ACCEPT_PAUSE_MS 100 /* ... or accept() is out of descriptors */

/* libmicrohttpd's calls, opened when a server starts (dynlib.h says why). */
struct mhd_api {
#define MHD_FIELD_(field, sym) __typeof__(sym) *field;
    DYNLIB_MHD_CALLS(MHD_FIELD_)
#undef MHD_FIELD_
};

/* One libmicrohttpd daemon: the current one, or one draining after a
 * TLS reload. */
struct inst {
    struct MHD_Daemon *d;
    int epoll_fd;     /* its own, in our epoll set; -1 before */
    char *cert, *key; /* TLS: the PEM texts it was given (owned), or NULL */
    size_t key_len;
};

/* A connection, from our accept to libmicrohttpd's "closed". */
struct conn {
    int fd;
    struct MHD_Daemon *d; /* the daemon serving it */
    int64_t deadline_ns;  /* shut down at this point */
    bool shut;            /* shut down: libmicrohttpd closes it on its next run */
    bool served;          /* a request of it was answered */
    bool has_peer;        /* TCP: peer is the client's address */
    struct sockaddr_storage peer;
    struct conn *prev, *next; /* in the order accepted */
};

/* A request of a server with a control hook, from its first call to
 * libmicrohttpd's "completed": its body, and its answer when the hook
 * took it (the struct http_call handed out). */
struct http_call {
    struct http *h;
    struct MHD_Connection *c;
    char *body;
    size_t len;
    bool too_big;
    bool taken;           /* the hook answered HTTP_LATER: suspended */
    atomic_bool answered; /* http_call_answer() filled resp */
    struct http_response resp;
};

struct http {
    struct mhd_api mhd;
    struct inst cur;                         /* serves new connections */
    struct inst draining[HTTP_TLS_DRAINING]; /* the server's thread's; d NULL: free */
    pthread_mutex_t tls_mu;                  /* guards the two below */
    struct inst pending;                     /* a reload's daemon, not yet current */
    int ndraining;                           /* slots in use */
    bool tls;
    const struct http_route *routes;
    void *ctx;
    struct http_control control; /* fn NULL: none */
    pthread_t thread;
    bool started;
    bool unix_socket;
    int listen_fd; /* ours: libmicrohttpd never accepts */
    int ep;        /* ours: the listening socket, libmicrohttpd's epoll fd and wake */
    int wake;      /* eventfd: stop */
    atomic_bool stop;
    /* Touched on the server's thread only: */
    struct conn *oldest, *newest;
    struct conn *adding;     /* accepted, being handed to libmicrohttpd */
    int nconns;              /* in the list, shut or not */
    int nlive;               /* in the list, not shut */
    bool listen_armed;       /* the listening socket is watched */
    int64_t accept_again_ns; /* accept() ran out of descriptors: not before then */
    char *allowed;           /* the names a TCP server answers to (comma-separated) */
    char address[300];
    char unix_path[256]; /* removed at stop */
};

/* ---- http.c: libmicrohttpd's callbacks for requests ---- */

/* MHD_AccessHandlerCallback: every request's calls (cls: the server). */
enum MHD_Result http_on_request(void *cls, struct MHD_Connection *c, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_data_size, void **con_cls);
/* MHD_RequestCompletedCallback: frees a control call (cls: the server). */
void http_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                       enum MHD_RequestTerminationCode toe);

/* ---- http_conns.c: the connections (the server's thread) ---- */

/* MHD_NotifyConnectionCallback: a connection handed over starts (it joins
 * the list) or closes (it leaves it, freed). */
void http_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode code);
/* Shuts down the connections past their lifetime. Returns the time to the
 * next deadline in ms (-1: none). */
int http_expire(struct http *h);
/* Watches the listening socket only while accept() may run. Returns the
 * ms until it may (-1: now). */
int http_arm_listen(struct http *h);
/* Accepts what is waiting (ACCEPT_BATCH at most), making room for each. */
void http_accept_some(struct http *h);

/* ---- http_tls.c: the daemons ---- */

/* Starts a daemon for the connections we hand over (tls NULL: plain
 * HTTP) into in. Returns 0, or -1 with msg (in empty). */
int http_inst_start(struct http *h, const struct http_tls *tls, struct inst *in, char *msg,
                    size_t msglen);
/* Adds in's own epoll fd to ours. Returns 0, or -1 with msg. */
int http_inst_watch(struct http *h, struct inst *in, char *msg, size_t msglen);
/* Stops in's daemon (closing its connections) and frees what it holds; in
 * is empty after. An empty in is a no-op. */
void http_inst_stop(struct http *h, struct inst *in);
/* Server's thread: a reload's daemon becomes the current one, the current
 * one drains. */
void http_take_pending(struct http *h);
/* Server's thread: runs the draining daemons, and stops those whose
 * connections have all closed. */
void http_run_draining(struct http *h);

#endif /* BATON_HTTP_INT_H */
