/* reply.c -- hiredis's replies made ours: struct baton_reply (baton_redis.h)
 * is a deep copy, so that the public headers do not expose hiredis. Part
 * of the transport layer: the quorum's answers and the commands both
 * hand their replies out through it. */
#include <stdlib.h>
#include <string.h>

#include "transport_int.h"

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

/* Deep copy of a reply (an error reply as a string). Returns NULL on
 * ENOMEM. */
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
    case REDIS_REPLY_ERROR:
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

struct baton_reply *baton__reply_convert(const redisReply *r)
{
    return convert(r, 0);
}
