/* conn.c -- one connection to Redis: a transport (sock.c or tls.c) that
 * moves bytes, every wait bounded by a deadline, carrying RESP, which
 * hiredis parses (redisReader). Commands are formatted here
 * (baton__resp_format: the bytes of hiredis's redisFormatCommandArgv,
 * which check_lib compares, without the sprintf that cost the loop 15% of
 * its time). This file never knows which transport it drives. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport_int.h"

#define READ_CHUNK 16384 /* one TLS record's plaintext at most */

/* The most array elements one reply may announce, nested arrays counted
 * together. hiredis allocates an array's element pointers when it reads
 * the header ("*330181846\r\n": 2.6 GB before one element has come), so a
 * server, or anything between it and us, could otherwise make a client
 * allocate without bound for a dozen bytes. baton's largest replies (a
 * history page, CLUSTER SLOTS of 16384 ranges) hold a few hundred thousand. */
#define REPLY_MAX_ELEMENTS (1 << 22)

/* hiredis's createArray, bounded: the reader's privdata is the connection,
 * which holds hiredis's own functions and this reply's running count. */
static void *create_array(const redisReadTask *task, int elements)
{
    struct baton__conn *cn = task->privdata;
    if (task->parent == NULL)
        cn->reply_elements = 0;
    if (elements > REPLY_MAX_ELEMENTS - cn->reply_elements) {
        cn->reply_refused = elements;
        return NULL; /* the reader fails the reply */
    }
    cn->reply_elements += elements;
    return cn->reply_dflt->createArray(task, elements);
}

/* A reader error as the connection's reason: a refused array says so
 * (hiredis would call it out of memory). */
static void fail_protocol(struct baton__conn *cn)
{
    char why[96];
    if (cn->reply_refused > 0) {
        snprintf(why, sizeof why, "an array of %d elements (at most %d in one reply)",
                 cn->reply_refused, REPLY_MAX_ELEMENTS);
        baton__conn_fail(cn, "protocol error: ", why);
    } else {
        baton__conn_fail(cn, "protocol error: ", cn->reader->errstr);
    }
}

int baton__conn_open(const struct baton__endpoint *ep, int64_t deadline_ns,
                     struct baton__conn **out, char *err, size_t errlen)
{
    int rc;
    struct baton__conn *cn = calloc(1, sizeof *cn);

    *out = NULL;
    if (cn == NULL)
        return BATON_ENOMEM;
    cn->fd = -1;
    cn->uptime_s = -1;
    cn->tp = ep->tls != NULL ? &baton__tls_transport : &baton__sock_transport;
    if (ep->path != NULL)
        baton__set_error(cn->addr, sizeof cn->addr, "%s", ep->path);
    else
        baton__set_error(cn->addr, sizeof cn->addr, "%s:%d", ep->host, ep->port);
    if ((cn->reader = redisReaderCreate()) == NULL) {
        rc = BATON_ENOMEM;
        goto out_free;
    }
    cn->reply_dflt = cn->reader->fn;
    cn->reply_fn = *cn->reader->fn;
    cn->reply_fn.createArray = create_array;
    cn->reader->fn = &cn->reply_fn;
    redisReaderSetPrivdata(cn->reader, cn);
    if ((rc = cn->tp->connect(cn, ep, deadline_ns)) != BATON_OK) {
        baton__set_error(err, errlen, "%s", cn->err);
        goto out_free;
    }
    *out = cn;
    return BATON_OK;
out_free:
    baton__conn_free(cn);
    return rc;
}

void baton__conn_free(struct baton__conn *cn)
{
    if (cn == NULL)
        return;
    if (cn->unlist != NULL)
        cn->unlist(cn); /* before the fd is closed and reused */
    cn->tp->close(cn);
    if (cn->reader != NULL)
        redisReaderFree(cn->reader);
    free(cn->obuf);
    free(cn);
}

/* Room for len more bytes of output. Returns 0 or BATON_ENOMEM (the
 * output as it was). */
static int reserve(struct baton__conn *cn, size_t len)
{
    if (cn->olen + len > cn->ocap) {
        size_t cap = cn->ocap ? cn->ocap : 256;
        while (cap < cn->olen + len)
            cap *= 2;
        char *grown = realloc(cn->obuf, cap);
        if (grown == NULL)
            return BATON_ENOMEM;
        cn->obuf = grown;
        cn->ocap = cap;
    }
    return BATON_OK;
}

int baton__conn_append_raw(struct baton__conn *cn, const char *buf, size_t len)
{
    if (reserve(cn, len) != BATON_OK)
        return BATON_ENOMEM;
    memcpy(cn->obuf + cn->olen, buf, len);
    cn->olen += len;
    return BATON_OK;
}

/* Writes v in decimal at p. Returns the end. */
static char *put_len(char *p, size_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

static size_t len_digits(size_t v)
{
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* The length of a command in RESP. */
static size_t resp_len(int argc, const size_t *lens)
{
    size_t total = 1 + len_digits((size_t)argc) + 2;
    for (int i = 0; i < argc; i++)
        total += 1 + len_digits(lens[i]) + 2 + lens[i] + 2;
    return total;
}

/* Writes the command in RESP at p (resp_len bytes). */
static void resp_put(char *p, int argc, const char *const *argv, const size_t *lens)
{
    *p++ = '*';
    p = put_len(p, (size_t)argc);
    *p++ = '\r';
    *p++ = '\n';
    for (int i = 0; i < argc; i++) {
        *p++ = '$';
        p = put_len(p, lens[i]);
        *p++ = '\r';
        *p++ = '\n';
        memcpy(p, argv[i], lens[i]);
        p += lens[i];
        *p++ = '\r';
        *p++ = '\n';
    }
}

int baton__resp_format(char **out, size_t prefix, int argc, const char *const *argv,
                       const size_t *lens, size_t *len)
{
    size_t total = prefix + resp_len(argc, lens);
    char *buf = malloc(total);
    if (buf == NULL)
        return BATON_ENOMEM;
    resp_put(buf + prefix, argc, argv, lens);
    *out = buf;
    *len = total;
    return BATON_OK;
}

int baton__conn_append_cmd(struct baton__conn *cn, const char *pre, size_t plen, int argc,
                           const char *const *argv, const size_t *lens)
{
    size_t n = resp_len(argc, lens);
    if (reserve(cn, plen + n) != BATON_OK)
        return BATON_ENOMEM;
    if (plen > 0)
        memcpy(cn->obuf + cn->olen, pre, plen);
    resp_put(cn->obuf + cn->olen + plen, argc, argv, lens);
    cn->olen += plen + n;
    return BATON_OK;
}

int baton__conn_append(struct baton__conn *cn, int argc, const char **argv, const size_t *lens)
{
    return baton__conn_append_cmd(cn, NULL, 0, argc, argv, lens);
}

int baton__conn_write_some(struct baton__conn *cn)
{
    size_t off = 0;
    int rc = 0;
    if (cn->broken)
        return BATON_EIO;
    if (cn->olen == 0)
        return 0; /* cn->want stays what a read asked for */
    while (off < cn->olen) {
        ssize_t n = cn->tp->write(cn, cn->obuf + off, cn->olen - off);
        if (n < 0)
            return BATON_EIO;
        if (n == 0) {
            rc = 1; /* cn->want says what to wait for */
            break;
        }
        off += (size_t)n;
    }
    if (off > 0 && off < cn->olen)
        memmove(cn->obuf, cn->obuf + off, cn->olen - off);
    cn->olen -= off;
    if (rc == 0)
        cn->want = POLLIN;
    return rc;
}

int baton__conn_flush(struct baton__conn *cn, int64_t deadline_ns)
{
    size_t off = 0;
    if (cn->broken)
        return BATON_EIO;
    while (off < cn->olen) {
        ssize_t n = cn->tp->write(cn, cn->obuf + off, cn->olen - off);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0)
            return BATON_EIO;
        int r = baton__wait_fd(cn->fd, cn->want, deadline_ns);
        if (r <= 0) {
            baton__conn_fail(cn, "write: ", r == 0 ? "timed out" : strerror(errno));
            return BATON_EIO;
        }
    }
    cn->olen = 0;
    cn->want = POLLIN;
    return BATON_OK;
}

bool baton__reply_readonly(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && strncmp(r->str, "READONLY", 8) == 0;
}

/* Takes a parsed reply: an answer of a server that is no master any more
 * makes the connection stale. */
static void *took(struct baton__conn *cn, void *r)
{
    if (r != NULL && baton__reply_readonly(r))
        atomic_store(&cn->stale, true);
    return r;
}

/* Reads what the transport has into the reader until it would block.
 * Returns 1 when data came, 0 when none, or a negative code (broken). */
static int fill(struct baton__conn *cn)
{
    char buf[READ_CHUNK];
    int got = 0;
    for (;;) {
        ssize_t n = cn->tp->read(cn, buf, sizeof buf);
        if (n < 0)
            return (int)n;
        if (n == 0)
            return got;
        if (redisReaderFeed(cn->reader, buf, (size_t)n) != REDIS_OK) {
            baton__conn_fail(cn, "out of memory reading a reply", "");
            return BATON_ENOMEM;
        }
        got = 1;
        /* A short read means the socket is drained; but a TLS transport may
         * still hold decrypted bytes, which poll() would not see. */
        if ((size_t)n < sizeof buf && !cn->tp->pending(cn))
            return got;
    }
}

int baton__conn_fill(struct baton__conn *cn)
{
    if (cn->broken)
        return BATON_EIO;
    return fill(cn);
}

int baton__conn_next_reply(struct baton__conn *cn, redisReply **reply)
{
    void *r = NULL;
    *reply = NULL;
    if (redisReaderGetReply(cn->reader, &r) != REDIS_OK) {
        fail_protocol(cn);
        return BATON_EPROTO;
    }
    if (r == NULL)
        return 0;
    *reply = took(cn, r);
    return 1;
}

int baton__conn_poll_reply(struct baton__conn *cn, redisReply **reply)
{
    void *r = NULL;
    *reply = NULL;
    if (cn->broken)
        return BATON_EIO;
    for (;;) {
        if (redisReaderGetReply(cn->reader, &r) != REDIS_OK) {
            fail_protocol(cn);
            return BATON_EPROTO;
        }
        if (r != NULL) {
            *reply = took(cn, r);
            return 1;
        }
        int f = fill(cn);
        if (f <= 0)
            return f;
    }
}

short baton__conn_read_events(const struct baton__conn *cn)
{
    return cn->tp->pending(cn) ? 0 : (cn->want != 0 ? cn->want : POLLIN);
}

int baton__conn_read(struct baton__conn *cn, redisReply **reply, int64_t deadline_ns)
{
    void *r = NULL;
    *reply = NULL;
    if (cn->broken)
        return BATON_EIO;
    /* Parse what has arrived; otherwise wait first, then read: a reply is
     * rarely there the moment after a request went out, so trying to read
     * first would mostly cost a syscall. Bytes the transport holds already
     * are read without waiting. */
    cn->want = POLLIN;
    for (;;) {
        if (redisReaderGetReply(cn->reader, &r) != REDIS_OK) {
            fail_protocol(cn);
            return BATON_EPROTO;
        }
        if (r != NULL) {
            *reply = took(cn, r);
            return BATON_OK;
        }
        short ev = baton__conn_read_events(cn);
        if (ev != 0) {
            int w = baton__wait_fd(cn->fd, ev, deadline_ns);
            if (w <= 0) {
                baton__conn_fail(cn, "read: ",
                                 w == 0 ? "timed out waiting for redis" : strerror(errno));
                return BATON_EIO;
            }
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

/* The run id from an INFO server reply, or "" */
static void take_runid(struct baton__conn *cn, const redisReply *r)
{
    const char *p;
    if (r->type != REDIS_REPLY_STRING)
        return;
    if ((p = strstr(r->str, "uptime_in_seconds:")) != NULL) {
        char *end = NULL;
        long long up = strtoll(p + 18, &end, 10);
        if (end != p + 18 && up >= 0)
            cn->uptime_s = up;
    }
    if ((p = strstr(r->str, "run_id:")) == NULL)
        return;
    p += 7;
    size_t n = strspn(p, "0123456789abcdef");
    if (n == 40) {
        memcpy(cn->runid, p, 40);
        cn->runid[40] = '\0';
    }
}

int baton__conn_hello(struct baton__conn *cn, const char *user, const char *pass, int db,
                      bool check_role, int64_t deadline_ns)
{
    enum { AUTH, SELECT, INFO, REPL, ROLE, N };
    bool sent[N] = {false};
    const char *argv[3];
    size_t lens[3];
    char dbs[16];
    int argc, rc;

    if (pass != NULL) {
        argc = 0;
        argv[argc++] = "AUTH";
        if (user != NULL)
            argv[argc++] = user;
        argv[argc++] = pass;
        for (int i = 0; i < argc; i++)
            lens[i] = strlen(argv[i]);
        if ((rc = baton__conn_append(cn, argc, argv, lens)) != BATON_OK)
            return rc;
        sent[AUTH] = true;
    }
    if (db != 0) {
        snprintf(dbs, sizeof dbs, "%d", db);
        argv[0] = "SELECT";
        argv[1] = dbs;
        lens[0] = 6;
        lens[1] = strlen(dbs);
        if ((rc = baton__conn_append(cn, 2, argv, lens)) != BATON_OK)
            return rc;
        sent[SELECT] = true;
    }
    /* The run id ties grants to the server process that made them. It
     * also makes a TLS server that refuses us say so now, not at the first
     * lock (TLS 1.3 checks a client certificate after the handshake). */
    argv[0] = "INFO";
    argv[1] = "server";
    lens[0] = 4;
    lens[1] = 6;
    if ((rc = baton__conn_append(cn, 2, argv, lens)) != BATON_OK)
        return rc;
    sent[INFO] = true;
    argv[1] = "replication";
    lens[1] = 11;
    if ((rc = baton__conn_append(cn, 2, argv, lens)) != BATON_OK)
        return rc;
    sent[REPL] = true;
    if (check_role) {
        argv[0] = "ROLE";
        lens[0] = 4;
        if ((rc = baton__conn_append(cn, 1, argv, lens)) != BATON_OK)
            return rc;
        sent[ROLE] = true;
    }
    if ((rc = baton__conn_flush(cn, deadline_ns)) != BATON_OK)
        return rc;

    rc = BATON_OK;
    for (int i = 0; i < N; i++) {
        redisReply *r = NULL;
        int rr;
        if (!sent[i])
            continue;
        if ((rr = baton__conn_read(cn, &r, deadline_ns)) != BATON_OK)
            return rr;
        if (rc != BATON_OK) {
            freeReplyObject(r);
            continue; /* an earlier step failed: its message stands */
        }
        bool error = r->type == REDIS_REPLY_ERROR;
        if (i == AUTH && error) {
            baton__set_error(cn->err, sizeof cn->err, "authentication failed: %.200s", r->str);
            rc = BATON_EAUTH;
        } else if (i == SELECT && error) {
            baton__set_error(cn->err, sizeof cn->err, "SELECT %d: %.200s", db, r->str);
            rc = BATON_EREDIS;
        } else if (error && strncmp(r->str, "NOAUTH", 6) == 0) {
            baton__set_error(cn->err, sizeof cn->err,
                             "authentication required: give a password (URL, "
                             "BATON_REDIS_PASSWORD or a password file)");
            rc = BATON_EAUTH;
        } else if (i == INFO && !error) {
            take_runid(cn, r);
        } else if (i == REPL && !error && r->type == REDIS_REPLY_STRING) {
            cn->promoted = strstr(r->str, "second_repl_offset:") != NULL &&
                           strstr(r->str, "second_repl_offset:-1") == NULL;
        } else if (i == ROLE && !error &&
                   (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
                    r->element[0]->type != REDIS_REPLY_STRING ||
                    strcmp(r->element[0]->str, "master") != 0)) {
            const char *role = (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
                                r->element[0]->type == REDIS_REPLY_STRING)
                                   ? r->element[0]->str
                                   : "?";
            baton__set_error(cn->err, sizeof cn->err, "%s is not a master (ROLE says %.40s)",
                             cn->addr, role);
            rc = BATON_EREDIS;
        }
        /* INFO or ROLE refused (an ACL without @dangerous): unknown run id,
         * the sentinel's word on the role. */
        freeReplyObject(r);
    }
    return rc;
}
