/* transport_int.h -- libbaton internals, the transport layer: moving
 * bytes to one server (sock.c, tls.c), RESP over them (conn.c) and
 * hiredis's replies made ours (reply.c). base_int.h has the map of the
 * layers. */
#ifndef BATON_TRANSPORT_INT_H
#define BATON_TRANSPORT_INT_H

#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "base_int.h"
#include "baton_redis.h"

/* ---- transports: sock.c, tls.c ----
 *
 * A transport moves bytes for a connection: connect, read, write, pending,
 * close, behind one table of functions (as hiredis's redisContextFuncs do
 * for its SSL module). conn.c frames RESP on top and never knows which
 * transport it uses. Sentinel is a layer above: it decides which endpoint
 * to connect to. */

struct baton__conn;
struct baton__node;
struct baton__tls; /* tls.c: a client's TLS settings, shared by its connections */

/* Where to connect: a TCP host and port, or a Unix socket path; over TLS
 * when tls is set (the certificate must then be for the SNI name of the
 * settings, else for host). */
struct baton__endpoint {
    const char *host;
    int port;
    const char *path;
    struct baton__tls *tls;
};

struct baton__transport {
    const char *name;
    /* Connects cn (whose fd is -1) to ep before deadline_ns. Returns 0, or
     * a negative code with the reason in cn->err ("connection refused",
     * "certificate verify failed: ..."). close() is called either way. */
    int (*connect)(struct baton__conn *cn, const struct baton__endpoint *ep, int64_t deadline_ns);
    /* Move up to len bytes. Return the count (> 0); 0 when the transport
     * would block, with cn->want set to the poll event it waits for (a TLS
     * read may need POLLOUT); or a negative code with cn marked broken and
     * the reason in cn->err. */
    ssize_t (*read)(struct baton__conn *cn, char *buf, size_t len);
    ssize_t (*write)(struct baton__conn *cn, const char *buf, size_t len);
    /* True when bytes already received sit inside the transport, where
     * poll() on the fd cannot see them (decrypted TLS records). */
    bool (*pending)(const struct baton__conn *cn);
    /* Frees the transport's state and closes the fd. */
    void (*close)(struct baton__conn *cn);
};

extern const struct baton__transport baton__sock_transport;
extern const struct baton__transport baton__tls_transport;

/* sock.c: opens a non-blocking, close-on-exec socket connected to ep's host
 * and port (or path) before deadline_ns. Returns the fd, or -1 with a
 * static reason in *why. */
int baton__sock_dial(const struct baton__endpoint *ep, int64_t deadline_ns, const char **why);
/* Waits for events on fd until deadline_ns. Returns 1 ready, 0 timed out,
 * -1 error (errno set). */
int baton__wait_fd(int fd, short events, int64_t deadline_ns);

/* tls.c: the TLS settings of u (CA, client certificate, SNI, verify) made
 * into an OpenSSL context. Returns 0 and *out (owned; baton__tls_free), or
 * BATON_EINVAL/ENOMEM with the reason in err ("cannot read the CA file
 * /etc/x.pem: No such file or directory"). */
int baton__tls_new(const struct baton__url *u, struct baton__tls **out, char *err, size_t errlen);
void baton__tls_free(struct baton__tls *t);

/* ---- conn.c ---- */

struct baton__conn {
    int fd;
    const struct baton__transport *tp;
    void *tls;  /* tls.c's per-connection state */
    short want; /* the poll event the transport waits for */
    redisReader *reader;
    redisReplyObjectFunctions reply_fn;          /* hiredis's, createArray bounded */
    const redisReplyObjectFunctions *reply_dflt; /* hiredis's own */
    int reply_elements; /* array elements of the reply being read */
    int reply_refused;  /* the size of an array refused (0: none) */
    char *obuf; /* pending output */
    size_t olen, ocap;
    bool broken; /* an I/O error or timeout: never reuse */
    /* Do not start new requests on it: it answered READONLY (no master
     * any more), or a sentinel announced that its server was replaced.
     * Set from other threads (sentinel.c), hence atomic. */
    _Atomic bool stale;
    char addr[80];  /* host:port (or path) it is connected to */
    char runid[41]; /* the server process's run id; "" when unknown */
    int64_t uptime_s; /* the server's uptime_in_seconds at connection (-1 unknown) */
    bool promoted;  /* the server is a replica promoted to master (INFO replication
                       second_repl_offset set): it may lack its old master's last writes */
    struct baton__node *node;          /* cluster.c: the node whose pool it belongs to
                                          (NULL: the URL's server) */
    struct baton__conn *next;          /* pool link */
    struct baton_client *listed;       /* in this client's live list (sentinel.c) */
    struct baton__conn *lprev, *lnext; /* that list's links */
    /* Set by whoever listed it (sentinel.c, a layer above): called by
     * baton__conn_free() first, to take it out. */
    void (*unlist)(struct baton__conn *cn);
    char err[BATON__ERRLEN];
};

/* Connects to ep (transport chosen by ep->tls) before deadline_ns: no
 * Redis command yet. Returns 0 and *out (owned; baton__conn_free), or a
 * negative code with the reason in err. */
int baton__conn_open(const struct baton__endpoint *ep, int64_t deadline_ns,
                     struct baton__conn **out, char *err, size_t errlen);
void baton__conn_free(struct baton__conn *cn);
/* Queues one command. Returns 0 or BATON_ENOMEM. */
int baton__conn_append(struct baton__conn *cn, int argc, const char **argv, const size_t *lens);
/* Queues one command already in RESP (redisFormatCommandArgv's output).
 * Returns 0 or BATON_ENOMEM. */
int baton__conn_append_raw(struct baton__conn *cn, const char *cmd, size_t len);
/* Writes all queued output. Returns 0 or BATON_EIO (conn broken). */
int baton__conn_flush(struct baton__conn *cn, int64_t deadline_ns);
/* Reads one reply. Returns 0 and *reply (owned; freeReplyObject), or
 * BATON_EIO / BATON_EPROTO with the conn marked broken. An error reply
 * READONLY marks the conn stale. */
int baton__conn_read(struct baton__conn *cn, redisReply **reply, int64_t deadline_ns);
/* The poll events to wait for before the next read, or 0 when a reply can
 * be read at once (bytes buffered in the transport). */
short baton__conn_read_events(const struct baton__conn *cn);
/* Marks cn broken with the message what + detail: for the transports
 * (sock.c, tls.c) as for conn.c, hence here and inline. */
static inline void baton__conn_fail(struct baton__conn *cn, const char *what, const char *detail)
{
    cn->broken = true;
    baton__set_error(cn->err, sizeof cn->err, "%s%s", what, detail);
}
/* Parses one reply from what has arrived, without blocking. Returns 1 and
 * *reply, 0 when none is complete yet (then nothing is left buffered in
 * the transport: poll the fd), or a negative code. */
int baton__conn_poll_reply(struct baton__conn *cn, redisReply **reply);
/* The loop's I/O (mux.c), none of which waits: appends formatted bytes to
 * the output (0 or BATON_ENOMEM); writes what it can (0 all written, 1 the
 * transport would block: wait for cn->want; a negative code: broken);
 * reads what has arrived into the reply parser (1 some came, 0 none, a
 * negative code: broken; bytes read before a failure stay parsable); takes
 * one parsed reply without reading (1 and *reply, 0 none complete, or
 * BATON_EPROTO). */
int baton__conn_append_raw(struct baton__conn *cn, const char *buf, size_t len);
/* Formats one command in RESP into a new buffer of *len bytes, after
 * prefix bytes left for the caller (ASKING). The same bytes as hiredis's
 * redisFormatCommandArgv, without its sprintf (measured: 15% of the
 * loop's time with 50 calls in flight). Returns 0 and *out (owned; free()),
 * or BATON_ENOMEM. */
int baton__resp_format(char **out, size_t prefix, int argc, const char *const *argv,
                       const size_t *lens, size_t *len);
/* Queues plen bytes of pre (ASKING in RESP, or nothing), then the command
 * formatted as baton__resp_format() does, straight into the output: no
 * copy of its own. Returns 0 or BATON_ENOMEM (the output unchanged). */
int baton__conn_append_cmd(struct baton__conn *cn, const char *pre, size_t plen, int argc,
                           const char *const *argv, const size_t *lens);
int baton__conn_write_some(struct baton__conn *cn);
int baton__conn_fill(struct baton__conn *cn);
int baton__conn_next_reply(struct baton__conn *cn, redisReply **reply);
/* append + flush + read. */
int baton__conn_command(struct baton__conn *cn, int argc, const char **argv, const size_t *lens,
                        redisReply **reply, int64_t deadline_ns);
/* True for an error reply that says the server is not a master. */
bool baton__reply_readonly(const redisReply *r);

/* Connection set-up shared with client.c: AUTH [user] pass, SELECT db,
 * INFO server (the run id), INFO replication (promoted or not), and with
 * check_role ROLE, pipelined. Returns 0,
 * BATON_EAUTH, BATON_EREDIS, or an I/O error, with detail in cn->err. */
int baton__conn_hello(struct baton__conn *cn, const char *user, const char *pass, int db,
                      bool check_role, int64_t deadline_ns);

/* ---- reply.c ---- */

/* A deep copy of a hiredis reply (an error reply becomes a string).
 * Returns: owned (baton_reply_free), or NULL on ENOMEM. */
struct baton_reply *baton__reply_convert(const redisReply *r);

#endif /* BATON_TRANSPORT_INT_H */
