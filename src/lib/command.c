/* command.c -- baton_client_command() and baton_client_eval(): Redis
 * commands and scripts over the client's connections, for tools built on
 * libbaton. Replies are copied into struct baton_reply so that baton.h
 * does not expose hiredis. */
#include <stdlib.h>
#include <string.h>

#include "baton_int.h"

void baton_reply_free(struct baton_reply *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->elements; i++)
        baton_reply_free(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}

/* Deep copy of a non-error reply. Returns NULL on ENOMEM. */
static struct baton_reply *convert(const redisReply *in, int depth)
{
    struct baton_reply *r = calloc(1, sizeof *r);
    if (r == NULL || depth > 16)
        goto fail;
    switch (in->type) {
    case REDIS_REPLY_INTEGER:
        r->type = BATON_REPLY_INTEGER;
        r->integer = in->integer;
        break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
        r->type = BATON_REPLY_STRING;
        if ((r->str = malloc(in->len + 1)) == NULL)
            goto fail;
        memcpy(r->str, in->str, in->len);
        r->str[in->len] = '\0';
        r->len = in->len;
        break;
    case REDIS_REPLY_ARRAY:
        r->type = BATON_REPLY_ARRAY;
        if (in->elements > 0 && (r->element = calloc(in->elements, sizeof *r->element)) == NULL)
            goto fail;
        for (size_t i = 0; i < in->elements; i++) {
            if ((r->element[i] = convert(in->element[i], depth + 1)) == NULL)
                goto fail;
            r->elements = i + 1;
        }
        break;
    default: r->type = BATON_REPLY_NIL;
    }
    return r;
fail:
    baton_reply_free(r);
    return NULL;
}

/* Turns a hiredis reply (consumed) into *out. */
static int finish(struct baton_client *c, redisReply *r, struct baton_reply **out)
{
    int rc = BATON_OK;
    if (r->type == REDIS_REPLY_ERROR) {
        char err[BATON__ERRLEN];
        baton__set_error(err, sizeof err, "%s: redis error: %.200s", c->url.redacted, r->str);
        baton__client_error(c, err);
        rc = BATON_EREDIS;
    } else if ((*out = convert(r, 0)) == NULL) {
        rc = BATON_ENOMEM;
    }
    freeReplyObject(r);
    return rc;
}

int baton_client_command(struct baton_client *c, int argc, const char *const *argv,
                         const size_t *lens, struct baton_reply **out)
{
    struct baton__conn *cn = NULL;
    redisReply *r = NULL;
    char err[BATON__ERRLEN];
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
    int64_t deadline = baton__client_deadline(c); /* connecting included */
    for (int attempt = 0; attempt < 2; attempt++) {
        if ((rc = baton__client_get(c, deadline, &cn, err, sizeof err)) != BATON_OK) {
            baton__client_error(c, err);
            goto out;
        }
        rc = baton__conn_command(cn, argc, (const char **)argv, lens != NULL ? lens : own, &r,
                                 deadline);
        if (rc != BATON_OK) {
            baton__set_error(err, sizeof err, "%s: %s", c->url.redacted, cn->err);
            baton__client_error(c, err);
            baton__client_put(c, cn);
            goto out;
        }
        baton__client_put(c, cn); /* a stale one (READONLY) is freed */
        /* READONLY: a demoted master did not run it; once more, on a new
         * connection (through the sentinels). */
        if (!baton__reply_readonly(r) || attempt == 1 || baton__now_ns() >= deadline)
            break;
        freeReplyObject(r);
        r = NULL;
    }
    rc = finish(c, r, out);
out:
    free(own);
    return rc;
}

int baton__client_eval(struct baton_client *c, const char *script, int nkeys,
                       const char *const *keys, int nargs, const char *const *args, bool durable,
                       struct baton_reply **out)
{
    struct baton__conn *cn = NULL;
    redisReply *r = NULL;
    char err[BATON__ERRLEN], sha[41];
    int rc;

    if (out == NULL)
        return BATON_EINVAL;
    *out = NULL;
    if (c == NULL || script == NULL)
        return BATON_EINVAL;
    baton__sha1_hex(script, strlen(script), sha);
    int64_t deadline = baton__client_deadline(c); /* connecting included */
    for (int attempt = 0; attempt < 2; attempt++) {
        if ((rc = baton__client_get(c, deadline, &cn, err, sizeof err)) != BATON_OK) {
            baton__client_error(c, err);
            return rc;
        }
        rc = baton__eval(c, cn, sha, script, nkeys, keys, nargs, args,
                         durable ? c->min_replicas : 0, &r, deadline, err, sizeof err);
        bool again = rc == BATON_EREDIS && atomic_load(&cn->stale) && attempt == 0 &&
                     baton__now_ns() < deadline;
        baton__client_put(c, cn);
        if (!again)
            break;
    }
    if (rc != BATON_OK) {
        baton__client_error(c, err);
        return rc;
    }
    return finish(c, r, out);
}

int baton_client_eval(struct baton_client *c, const char *script, int nkeys,
                      const char *const *keys, int nargs, const char *const *args,
                      struct baton_reply **out)
{
    return baton__client_eval(c, script, nkeys, keys, nargs, args, true, out);
}
