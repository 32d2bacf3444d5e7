/* answers.c -- see answers.h. */
#include "answers.h"

int answers_arrays(const struct baton_answers *a, size_t *total)
{
    *total = 0;
    for (int i = 0; i < a->n; i++) {
        if (a->v[i].rc != BATON_OK)
            continue;
        if (a->v[i].reply->type != BATON_REPLY_ARRAY)
            return BATON_EPROTO;
        *total += a->v[i].reply->elements;
    }
    return BATON_OK;
}
