/* command.c -- baton_client_command() and baton_client_eval(): Redis
 * commands and scripts over the client's connections, for tools built on
 * libbaton. Replies are copied into struct baton_reply so that baton.h
 * does not expose hiredis. */
#include <stdlib.h>
#include <string.h>

#include "loop_int.h"

/* Turns a hiredis reply (consumed) into *out. */
static int finish(struct baton_client *c, redisReply *r, struct baton_reply **out)
{
    int rc = BATON_OK;
    if (r->type == REDIS_REPLY_ERROR) {
        char err[BATON__ERRLEN];
        baton__set_error(err, sizeof err, "%s: redis error: %.200s", c->url.redacted, r->str);
        baton__client_error(c, err);
        rc = BATON_EREDIS;
    } else if ((*out = baton__reply_convert(r)) == NULL) {
        rc = BATON_ENOMEM;
    }
    freeReplyObject(r);
    return rc;
}

/* What runs on the connection: a command, or a script (EVALSHA, EVAL on
 * NOSCRIPT, WAIT when durable). */
struct op {
    int argc;
    const char *const *argv;
    const size_t *lens;
    /* a script when script != NULL */
    const char *script, *sha;
    int nkeys, nargs;
    const char *const *keys, *const *args;
    bool durable;
};

static int op_run(struct baton_client *c, struct baton__conn *cn, const struct op *op,
                  redisReply **r, int64_t deadline, char *err, size_t errlen)
{
    if (op->script != NULL)
        return baton__eval(c, cn, op->sha, op->script, op->nkeys, op->keys, op->nargs, op->args,
                           op->durable ? c->min_replicas : 0, r, deadline, err, errlen);
    int rc = baton__conn_command(cn, op->argc, (const char **)op->argv, op->lens, r, deadline);
    if (rc != BATON_OK)
        baton__set_error(err, errlen, "%s: %s", c->url.redacted, cn->err);
    return rc;
}

/* ASKING on cn, before the command an ASK redirection sent there. */
static int asking(struct baton_client *c, struct baton__conn *cn, int64_t deadline, char *err,
                  size_t errlen)
{
    const char *argv[1] = {"ASKING"};
    size_t lens[1] = {6};
    redisReply *r = NULL;
    int rc = baton__conn_command(cn, 1, argv, lens, &r, deadline);
    if (rc != BATON_OK) {
        baton__set_error(err, errlen, "%s: %s", c->url.redacted, cn->err);
        return rc;
    }
    freeReplyObject(r); /* +OK; an error shows in the command's reply */
    return BATON_OK;
}

#define MAX_HOPS   16 /* MOVED and ASK in a row; a wait (TRYAGAIN, CLUSTERDOWN) starts the count again */
#define MAX_UNSENT 2  /* retries of a command that could not be sent */

/* Runs op on a pooled connection of its own, within the command timeout
 * (connecting included): to the URL's server, or on a cluster to the
 * master of slot (any master when slot < 0), following MOVED, ASK,
 * TRYAGAIN and CLUSTERDOWN. A READONLY answer (a demoted master: the
 * command did not run) is retried once on a new connection. Returns 0
 * with *out (an error reply: BATON_EREDIS), or a negative code with
 * detail on the client. */
static int run(struct baton_client *c, int slot, const struct op *op, struct baton_reply **out)
{
    char err[BATON__ERRLEN];
    struct baton__node *node = NULL, *ask = NULL;
    redisReply *r = NULL;
    bool readonly_retried = false;
    int hops = 0, unsent = 0, rc = BATON_OK;

    int64_t deadline = baton__client_deadline(c); /* connecting included */
    for (;;) {
        struct baton__conn *cn = NULL;
        if (ask != NULL)
            node = ask;
        else if (c->url.cluster && slot >= 0)
            rc = baton__cluster_route(c, (unsigned)slot, deadline, &node, err, sizeof err);
        else if (c->url.cluster)
            rc = baton__cluster_any(c, deadline, &node, err, sizeof err);
        if (rc != BATON_OK)
            goto out_error;
        if ((rc = baton__client_get(c, node, deadline, &cn, err, sizeof err)) != BATON_OK) {
            if (node == NULL)
                goto out_error;
            /* Nothing was sent: after a look at the map, elsewhere. */
            baton__cluster_suspect(c, node);
            ask = NULL;
            if (rc != BATON_EIO || ++unsent > MAX_UNSENT || baton__now_ns() >= deadline)
                goto out_error;
            rc = BATON_OK;
            continue;
        }
        rc = ask != NULL ? asking(c, cn, deadline, err, sizeof err) : BATON_OK;
        ask = NULL;
        if (rc == BATON_OK)
            rc = op_run(c, cn, op, &r, deadline, err, sizeof err);
        if (rc != BATON_OK && node != NULL && cn->broken)
            baton__cluster_suspect(c, node);
        baton__client_put(c, cn); /* a broken or stale one (READONLY) is freed */
        if (rc != BATON_OK)
            goto out_error;
        if (baton__reply_readonly(r) && !readonly_retried && baton__now_ns() < deadline) {
            /* A demoted master did not run it: once more, on a new
             * connection (through the sentinels, or the map read again). */
            readonly_retried = true;
            if (node != NULL)
                baton__cluster_suspect(c, node);
            freeReplyObject(r);
            r = NULL;
            continue;
        }
        if (!c->url.cluster)
            break;
        struct baton__node *to = NULL;
        enum baton__redirect kind = baton__cluster_redirect(c, r, &to);
        if (kind == BATON__REDIR_NONE)
            break;
        if (kind == BATON__REDIR_TRYAGAIN || kind == BATON__REDIR_DOWN)
            hops = 0; /* waited: an ASK then TRYAGAIN again is no loop */
        else if (++hops > MAX_HOPS)
            break; /* a loop of redirections: the last one is the answer */
        if (!baton__cluster_follow(c, kind, slot >= 0 ? (unsigned)slot : 0, to, deadline))
            break; /* no time left: the redirection is the answer */
        freeReplyObject(r);
        r = NULL;
        if (kind == BATON__REDIR_ASK)
            ask = to;
    }
    return finish(c, r, out);
out_error:
    baton__client_error(c, err);
    return rc;
}

int baton_client_command(struct baton_client *c, int argc, const char *const *argv,
                         const size_t *lens, struct baton_reply **out)
{
    size_t *own = NULL;
    int rc;

    if (out == NULL)
        return BATON_EINVAL;
    *out = NULL;
    if (c == NULL || argc < 1 || argv == NULL)
        return BATON_EINVAL;
    if (lens == NULL) {
        if ((own = calloc((size_t)argc, sizeof *own)) == NULL)
            return BATON_ENOMEM;
        for (int i = 0; i < argc; i++)
            own[i] = strlen(argv[i]);
    }
    struct op op = {.argc = argc, .argv = argv, .lens = lens != NULL ? lens : own};
    int slot = c->url.cluster ? baton__cluster_command_slot(argc, argv, op.lens) : -1;
    rc = run(c, slot, &op, out);
    free(own);
    return rc;
}

int baton__client_eval(struct baton_client *c, const char *script, int nkeys,
                       const char *const *keys, int nargs, const char *const *args, bool durable,
                       struct baton_reply **out)
{
    char sha[41];

    if (out == NULL)
        return BATON_EINVAL;
    *out = NULL;
    if (c == NULL || script == NULL || nkeys < 0 || (nkeys > 0 && keys == NULL))
        return BATON_EINVAL;
    baton__sha1_hex(script, strlen(script), sha);
    struct op op = {.script = script,
                    .sha = sha,
                    .nkeys = nkeys,
                    .keys = keys,
                    .nargs = nargs,
                    .args = args,
                    .durable = durable};
    int slot = c->url.cluster && nkeys > 0 ? (int)baton__key_slot(keys[0], strlen(keys[0])) : -1;
    return run(c, slot, &op, out);
}

int baton_client_eval(struct baton_client *c, const char *script, int nkeys,
                      const char *const *keys, int nargs, const char *const *args,
                      struct baton_reply **out)
{
    return baton__client_eval(c, script, nkeys, keys, nargs, args, true, out);
}

/* ---- every master ---- */

static struct baton_answers *answers_new(int n)
{
    struct baton_answers *a = calloc(1, sizeof *a + (size_t)n * sizeof a->v[0]);
    if (a != NULL)
        a->n = n;
    return a;
}

void baton_answers_free(struct baton_answers *a)
{
    if (a == NULL)
        return;
    for (int i = 0; i < a->n; i++)
        baton_reply_free(a->v[i].reply);
    free(a);
}

int baton_client_quorum(const struct baton_client *c)
{
    return c != NULL ? baton__quorum_masters(c) : 0;
}

const char *baton_answers_describe(const struct baton_answers *a, char *buf, size_t len)
{
    if (len == 0)
        return buf;
    buf[0] = '\0';
    if (a == NULL)
        return buf;
    int w =
        snprintf(buf, len, "%d of %d masters answered (%d needed)", a->answered, a->n, a->majority);
    size_t o = w > 0 ? (size_t)w : 0;
    const char *sep = ": ";
    for (int i = 0; i < a->n && o < len; i++) {
        const struct baton_answer *v = &a->v[i];
        if (v->err[0] == '\0')
            continue;
        w = snprintf(buf + o, len - o, "%s%s%s%s", sep, v->master, v->master[0] ? ": " : "",
                     v->err);
        if (w < 0)
            break;
        o += (size_t)w;
        sep = "; ";
    }
    return buf;
}

/* The single-server form: one call, reported as one answer. */
static int one_answer(struct baton_client *c, int rc, struct baton_reply *r,
                      struct baton_answers **out)
{
    struct baton_answers *a = answers_new(1);
    if (a == NULL) {
        baton_reply_free(r);
        return BATON_ENOMEM;
    }
    a->majority = 1;
    a->v[0].counts = true;
    a->v[0].rc = rc;
    a->v[0].reply = r;
    if (rc != BATON_OK)
        baton__set_error(a->v[0].err, sizeof a->v[0].err, "%s", c->errstr);
    a->answered = rc == BATON_OK || rc == BATON_EREDIS || rc == BATON_ENOTDURABLE;
    *out = a;
    return a->answered ? BATON_OK : rc == BATON_ENOMEM || rc == BATON_EINVAL ? rc : BATON_EIO;
}

/* The quorum form: argv on every master. */
static int all_answers(struct baton_client *c, int argc, const char **argv, const size_t *lens,
                       const char *src, struct baton_answers **out)
{
    struct baton_answers *a = answers_new(baton__quorum_masters(c));
    if (a == NULL)
        return BATON_ENOMEM;
    int rc = baton__quorum_all(c, argc, argv, lens, src, a);
    if (rc != BATON_OK) {
        baton_answers_free(a);
        return rc;
    }
    *out = a;
    if (a->answered >= a->majority)
        return BATON_OK;
    char why[BATON__ERRLEN - 160], msg[BATON__ERRLEN];
    baton_answers_describe(a, why, sizeof why);
    baton__set_error(msg, sizeof msg, "%s: no quorum: %s", c->url.redacted, why);
    baton__client_error(c, msg);
    return BATON_EIO;
}

int baton_client_command_all(struct baton_client *c, int argc, const char *const *argv,
                             const size_t *lens, struct baton_answers **out)
{
    if (out == NULL)
        return BATON_EINVAL;
    *out = NULL;
    if (c == NULL || argc < 1 || argv == NULL)
        return BATON_EINVAL;
    if (c->quorum == NULL) {
        struct baton_reply *r = NULL;
        int rc = baton_client_command(c, argc, argv, lens, &r);
        return one_answer(c, rc, r, out);
    }
    size_t *own = malloc((size_t)argc * sizeof *own);
    if (own == NULL)
        return BATON_ENOMEM;
    for (int i = 0; i < argc; i++)
        own[i] = lens != NULL ? lens[i] : strlen(argv[i]);
    int rc = all_answers(c, argc, (const char **)argv, own, NULL, out);
    free(own);
    return rc;
}

int baton_client_eval_all(struct baton_client *c, const char *script, int nkeys,
                          const char *const *keys, int nargs, const char *const *args,
                          struct baton_answers **out)
{
    char sha[41], nk[BATON__I64_LEN];
    if (out == NULL)
        return BATON_EINVAL;
    *out = NULL;
    if (c == NULL || script == NULL || nkeys < 0 || nargs < 0 || (nkeys > 0 && keys == NULL) ||
        (nargs > 0 && args == NULL))
        return BATON_EINVAL;
    if (c->quorum == NULL) {
        struct baton_reply *r = NULL;
        int rc = baton_client_eval(c, script, nkeys, keys, nargs, args, &r);
        return one_answer(c, rc, r, out);
    }
    int argc = 3 + nkeys + nargs;
    const char **argv = malloc((size_t)argc * sizeof *argv);
    size_t *lens = malloc((size_t)argc * sizeof *lens);
    int rc = BATON_ENOMEM;
    if (argv != NULL && lens != NULL) {
        baton__sha1_hex(script, strlen(script), sha);
        argv[0] = "EVALSHA";
        argv[1] = sha;
        argv[2] = baton__i64_str(nkeys, nk);
        for (int i = 0; i < nkeys; i++)
            argv[3 + i] = keys[i];
        for (int i = 0; i < nargs; i++)
            argv[3 + nkeys + i] = args[i];
        for (int i = 0; i < argc; i++)
            lens[i] = strlen(argv[i]);
        rc = all_answers(c, argc, argv, lens, script, out);
    }
    free(argv);
    free(lens);
    return rc;
}

int baton_answers_check(struct baton_client *c, const struct baton_answers *a)
{
    int ok = 0, notdurable = 0, errors = 0;
    if (c == NULL || a == NULL)
        return BATON_EINVAL;
    for (int i = 0; i < a->n; i++) {
        const struct baton_answer *v = &a->v[i];
        if (!v->counts)
            continue;
        ok += v->rc == BATON_OK || v->rc == BATON_ENOTDURABLE;
        notdurable += v->rc == BATON_ENOTDURABLE;
        errors += v->rc == BATON_EREDIS;
    }
    if (ok >= a->majority)
        return notdurable > 0 ? BATON_ENOTDURABLE : BATON_OK;
    char why[BATON__ERRLEN - 160], msg[BATON__ERRLEN];
    baton_answers_describe(a, why, sizeof why);
    if (a->n == 1) /* the one server's own words */
        baton__set_error(msg, sizeof msg, "%s", a->v[0].err);
    else
        baton__set_error(msg, sizeof msg, "%s: applied by %d of %d masters (%d needed): %s",
                         c->url.redacted, ok, a->n, a->majority, why);
    baton__client_error(c, msg);
    return errors > 0 ? BATON_EREDIS : BATON_EIO;
}
