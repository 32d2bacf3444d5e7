/* answers.c -- see answers.h. */
#include "answers.h"

int answers_arrays(struct baton_client *c, const struct baton_answers *a, size_t *total)
{
    *total = 0;
    int rc = baton_answers_check(c, a);
    if (rc != BATON_OK && rc != BATON_ENOTDURABLE)
        return rc;
    for (int i = 0; i < a->n; i++) {
        if (a->v[i].rc != BATON_OK)
            continue;
        if (a->v[i].reply->type != BATON_REPLY_ARRAY)
            return BATON_EPROTO;
        *total += a->v[i].reply->elements;
    }
    return BATON_OK;
}
