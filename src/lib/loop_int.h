/* loop_int.h -- libbaton internals, the loop layer: the client's event
 * loop thread (loop.c), its pipes (mux.c), the script calls run on it
 * (call.c), and the raw calls of baton_redis.h (command.c), which share
 * call.c's script on one connection. base_int.h has the map of the
 * layers. */
#ifndef BATON_LOOP_INT_H
#define BATON_LOOP_INT_H

#include "topology_int.h"

/* ---- loop.c ----
 *
 * The client's event loop (see loop.c): every function below but
 * baton__loop_of/post/here/stop/free runs on the loop thread only. */
struct baton__loop;

/* A closure run on the loop thread. Embedded in the object it works on. */
struct baton__task {
    void (*run)(struct baton__task *t);
    struct baton__task *next;
};

/* A timer of the loop; zero-initialized is disarmed. */
struct baton__timer {
    int64_t at; /* CLOCK_MONOTONIC ns */
    void (*fire)(struct baton__timer *t);
    int idx; /* position in the loop's heap, 0 when disarmed */
};

/* A job for the helper thread: blocking work (connecting, reading the
 * cluster's map). run() does it and posts its result back to the loop as a
 * task that calls baton__loop_offload_done(); when that post is refused
 * (the loop has stopped), run() cleans up itself. */
struct baton__job {
    void (*run)(struct baton__job *j);
    struct baton__job *next;
    bool queued; /* on the helper's list (under the loop's mutex) */
};

/* A connection watched by the loop: ready() gets epoll's events, flush()
 * writes what the turn queued. fd is -1 while not watched. */
struct baton__io {
    int fd;
    uint32_t events;
    bool dirty;
    void (*ready)(struct baton__io *io, uint32_t events);
    void (*flush)(struct baton__io *io);
};

/* The client's loop, started on first use. Returns NULL when the client
 * is closed (or ENOMEM: then c->closed is false). Any thread. */
struct baton__loop *baton__loop_of(struct baton_client *c);
/* Queues t to run on the loop thread (from the loop thread itself: later
 * in this turn, never inside the call). Returns false when the loop has
 * stopped: t will not run. Any thread. */
bool baton__loop_post(struct baton__loop *l, struct baton__task *t);
/* True on l's thread. Any thread. */
bool baton__loop_here(const struct baton__loop *l);
/* For an object of size bytes that is made and freed on the loop thread
 * many times a second (an asynchronous lock operation): on l's thread, a
 * block of that size freed there before (one size is kept: the first
 * given back), zeroed; elsewhere, or none kept, calloc(). Returns owned
 * or NULL; give it back with baton__loop_cfree(l, p, size), from any
 * thread (the loop thread keeps it; another thread frees it). l may be
 * NULL (then calloc() and free()). */
void *baton__loop_calloc(struct baton__loop *l, size_t size);
void baton__loop_cfree(struct baton__loop *l, void *p, size_t size);
/* Stops the loop (failing what is pending, see loop.c) and the helper, and
 * waits for both. baton_client_free() only. */
void baton__loop_stop(struct baton_client *c);
void baton__loop_free(struct baton_client *c);
/* Loop thread only: */
void baton__loop_defer(struct baton__loop *l, struct baton__task *t);
bool baton__loop_stopping(const struct baton__loop *l);
int baton__timer_arm(struct baton__loop *l, struct baton__timer *t, int64_t at);
void baton__timer_disarm(struct baton__loop *l, struct baton__timer *t);
int baton__io_watch(struct baton__loop *l, struct baton__io *io, int fd, uint32_t events);
void baton__io_unwatch(struct baton__loop *l, struct baton__io *io);
/* Marks io to be flushed at the end of this turn. */
int baton__io_dirty(struct baton__loop *l, struct baton__io *io);
/* Runs j on the helper thread (started on first use). Returns 0; BATON_ENOMEM
 * (j will not run); BATON_EINVAL when j is still queued from an earlier
 * call (it runs once, for that call: a job on the list twice would cut off
 * the jobs queued behind it). */
int baton__loop_offload(struct baton__loop *l, struct baton__job *j);
/* A job's result has come back (its task runs). */
void baton__loop_offload_done(struct baton__loop *l);
/* What the loop does with the requests on its connections when it stops,
 * told by their owner (mux.c, above this file) with the first of them:
 * whether any is pending or in flight; fail every one; close every
 * connection (the loop's last act). */
struct baton__loop_conns {
    bool (*busy)(struct baton_client *c);
    void (*fail_all)(struct baton_client *c);
    void (*close_all)(struct baton_client *c);
};
/* Loop thread only. */
void baton__loop_set_conns(struct baton__loop *l, const struct baton__loop_conns *conns);

/* ---- mux.c ---- */

/* One request: a command, and optionally ASKING in front of it; a durable
 * one is answered by a WAIT behind it on the same connection. */
struct baton__wait;
struct baton__req {
    int argc;
    const char **argv; /* read only while baton__mux_submit() runs */
    const size_t *lens;
    int64_t deadline_ns;
    int wait_replicas; /* > 0: then WAIT wait_replicas wait_ms */
    int64_t wait_ms;
    bool asking; /* Redis Cluster: ASKING right before the command (an ASK
                    redirection), its +OK dropped */
    /* results */
    redisReply *reply; /* the command's (owned by the caller) */
    long long acked;   /* WAIT's answer (-1: no answer) */
    int64_t sent_ns;   /* a time before the command left; 0: it never did */
    char runid[41];    /* the run id of the server that answered, or "" */
    bool promoted;     /* and whether it is a promoted replica */
    char *err;         /* detail of a failure, prefixed by the redacted URL */
    size_t errlen;
};

/* A request in a pipe. The submitter sets rq and done; the rest is
 * mux.c's. */
struct baton__mreq {
    struct baton__req *rq;
    /* Called once, on the loop thread, with rc set; q may be freed inside. */
    void (*done)(struct baton__mreq *q);
    int rc;
    /* mux.c's */
    struct baton__mux *m;
    char *cmd; /* the formatted commands until they are in the connection's output */
    size_t len;
    int want, got;             /* replies: 1, +1 with ASKING */
    int where;                 /* not queued, waiting for a connection, or in flight */
    struct baton__timer timer; /* rq->deadline_ns */
    struct baton__task task;   /* a failure reported later in the turn */
    struct baton__mreq *next, *prev;
    struct baton__wait *group; /* durable: the WAIT that answers for it */
    struct baton__mreq *gnext, *gprev;
    bool batch_end; /* the last of the requests written by one write */
    unsigned gen;   /* waiting for a connection: the attempt it waits for */
};

/* The pipe of c (pipe: a BATON__PIPE_*) to node (NULL: the URL's server),
 * made on first use. Returns NULL on ENOMEM. Loop thread only. */
struct baton__mux *baton__mux_of(struct baton_client *c, struct baton__node *node, int pipe);
/* Frees every pipe of c: its last reference, the loop has stopped. */
void baton__mux_free_all(struct baton_client *c);
/* Sends q->rq's commands on m's connection, opening one (on the helper)
 * if there is none or it is stale, and calls q->done once the replies came
 * (rc 0, rq->reply owned by the submitter, rq->acked), or on failure (a
 * negative rc, detail in rq->err): the connection failed or was given up
 * (BATON_EIO, BATON_EPROTO: every request in flight on it fails), the
 * deadline passed (in flight: the connection is given up; waiting for one:
 * only q fails), or the client is being freed. Never calls q->done inside
 * the call. Loop thread only. */
void baton__mux_submit(struct baton_client *c, struct baton__mux *m, struct baton__mreq *q);

/* Runs a script by SHA on cn, falling back to EVAL on NOSCRIPT (a
 * restarted or flushed server), all before deadline_ns; with wait_replicas
 * > 0, WAIT follows it. Returns 0 with *reply (owned), an error reply
 * included (MOVED, READONLY...: the caller decides); I/O failures carry
 * the redacted URL; fewer acknowledgements than wait_replicas:
 * BATON_ENOTDURABLE (the reply is freed). */
int baton__eval(struct baton_client *c, struct baton__conn *cn, const char *sha, const char *src,
                int nkeys, const char *const *keys, int nargs, const char *const *args,
                int wait_replicas, redisReply **reply, int64_t deadline_ns, char *err,
                size_t errlen);
/* baton_client_eval() on a pooled connection, durable (WAIT for
 * min_replicas) or not (reads). */
int baton__client_eval(struct baton_client *c, const char *script, int nkeys,
                       const char *const *keys, int nargs, const char *const *args, bool durable,
                       struct baton_reply **out);

/* One call of one of our scripts, run on the loop (call.c): to the
 * server's pipe, or on a cluster to the pipe of the master of its keys'
 * slot. */
struct baton__call {
    enum baton__script_id id;
    int nkeys;
    const char *const *keys; /* keys and args: valid until done() runs */
    int nargs;
    const char *const *args;
    int64_t deadline_ns;
    /* A grant or an extension: with min_replicas, WAIT for them, the
     * acknowledgement due by deadline_ns (set it no later than the grant's
     * own validity deadline). */
    bool durable;
    /* Always through the loop, never on the calling thread (renewals: a
     * client being freed fails them at once there; baton__script_call). */
    bool via_loop;
    /* results */
    redisReply *reply; /* owned by the caller */
    int64_t sent_ns;
    char runid[41];
    bool promoted;
    char *err;
    size_t errlen;
    int rc;
    /* baton__call_start(): called once on the loop thread with the result
     * (k may be freed inside); arg is the caller's. */
    void (*done)(struct baton__call *k);
    void *arg;
    /* call.c's */
    struct baton_client *c;
    struct baton__req rq;
    struct baton__mreq q;
    struct baton__task task;
    struct baton__timer nap;
    struct baton__job job;
    struct baton__node *node, *ask;
    unsigned slot;
    int hops, unsent, route_rc;
    bool evaled, readonly_retried;
    int64_t round_sent, keep_sent;
    redisReply *held; /* a redirection kept as the answer if time runs out */
};
/* Runs k's script by SHA (EVAL on NOSCRIPT; once more on a new connection
 * when the server answered READONLY, within the deadline; on a cluster,
 * following MOVED, ASK, TRYAGAIN and CLUSTERDOWN). Returns 0 with
 * k->reply; BATON_ENOTDURABLE with k->reply too (the script ran; the
 * caller undoes a grant); or a negative code with detail in k->err (error
 * replies: BATON_EREDIS). Blocks the calling thread until the call is
 * done: on that thread, on a pooled connection, when no other call of c
 * is in flight (one server, not durable, not k->via_loop), else on the
 * loop; on the loop thread itself it refuses (BATON_EINVAL). */
int baton__script_call(struct baton_client *c, struct baton__call *k);
/* Starts k on the loop: k->done(k) runs there with k->rc as
 * baton__script_call() would return it (never inside this call). Returns
 * false when the loop is gone (the client was freed): k->done will not
 * run, k->rc and k->err say why. Any thread. */
bool baton__call_start(struct baton_client *c, struct baton__call *k);

/* What call.c shares with command.c: WAIT's timeout for a call due by
 * deadline_ns; the ENOTDURABLE detail; NOSCRIPT. */
int64_t baton__wait_ms_until(int64_t deadline_ns);
int baton__not_durable(struct baton_client *c, long long acked, char *err, size_t errlen);
bool baton__is_noscript(const redisReply *r);

#endif /* BATON_LOOP_INT_H */
