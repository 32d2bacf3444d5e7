/* runlimits.c -- see runlimits.h. */
#include <stdlib.h>

#include "keys.h"
#include "runlimits.h"

/* KEYS: busy keys. Returns the live members in all of them. */
static const char occupancy_src[] =
    "local t = redis.call('time')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local n = 0\n"
    "for i = 1, #KEYS do n = n + redis.call('zcount', KEYS[i], '(' .. now, '+inf') end\n"
    "return n\n";

int limits_occupancy(struct baton_client *c, const char *group, const char *const *jobs, size_t n,
                     int *live)
{
    const char *argv[LIMITS_POOL_MAX + 3];
    char *keys[LIMITS_POOL_MAX], nkeys[24];
    struct baton_answers *a = NULL;
    size_t made = 0;
    int rc = BATON_OK;

    *live = 0;
    if (n > LIMITS_POOL_MAX)
        return BATON_EINVAL;
    snprintf(nkeys, sizeof nkeys, "%zu", n);
    argv[0] = "EVAL";
    argv[1] = occupancy_src;
    argv[2] = nkeys;
    for (; made < n; made++) {
        if ((keys[made] = group_key(group, "busy:%s", jobs[made])) == NULL) {
            rc = BATON_ENOMEM;
            goto out;
        }
        argv[made + 3] = keys[made];
    }
    /* A read: no WAIT for replicas */
    rc = baton_client_command_all(c, (int)n + 3, argv, NULL, &a);
    if (rc != BATON_OK)
        goto out;
    rc = BATON_EIO;
    for (int i = 0; i < a->n; i++) {
        const struct baton_reply *r = a->v[i].reply;
        if (a->v[i].rc != BATON_OK || !a->v[i].counts || r->type != BATON_REPLY_INTEGER)
            continue;
        if (r->integer > *live)
            *live = (int)r->integer;
        rc = BATON_OK;
    }
out:
    baton_answers_free(a);
    for (size_t i = 0; i < made; i++)
        free(keys[i]);
    return rc;
}
