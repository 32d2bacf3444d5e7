/* members.c -- see members.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "members.h"

#define FORGET_MS "3600000"

static const char heartbeat_src[] =
    "local t = redis.call('time')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "redis.call('hset', KEYS[1], ARGV[1], ARGV[2])\n"
    "redis.call('hset', KEYS[2], ARGV[1], now)\n"
    "local seen = redis.call('hgetall', KEYS[2])\n"
    "for i = 1, #seen, 2 do\n"
    "  if now - tonumber(seen[i + 1]) > tonumber(ARGV[3]) then\n"
    "    redis.call('hdel', KEYS[1], seen[i]); redis.call('hdel', KEYS[2], seen[i])\n"
    "  end\n"
    "end\n"
    "return 1\n";

static const char read_src[] =
    "local t = redis.call('time')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "return {now, redis.call('hgetall', KEYS[1]), "
    "redis.call('hgetall', KEYS[2])}\n";

static int make_keys(const char *group, char **nodes, char **seen)
{
    *nodes = group_key(group, "nodes");
    *seen = group_key(group, "seen");
    if (*nodes != NULL && *seen != NULL)
        return BATON_OK;
    free(*nodes);
    free(*seen);
    return BATON_ENOMEM;
}

int members_heartbeat(struct baton_client *c, const char *group, const char *node,
                      const char *info_json)
{
    char *keys[2];
    struct baton_reply *r = NULL;
    int rc = make_keys(group, &keys[0], &keys[1]);
    if (rc != BATON_OK)
        return rc;
    const char *args[3] = {node, info_json, FORGET_MS};
    rc = baton_client_eval(c, heartbeat_src, 2, (const char *const *)keys, 3, args, &r);
    baton_reply_free(r);
    free(keys[0]);
    free(keys[1]);
    return rc;
}

void members_free(struct member *m, size_t n)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        free(m[i].node);
        free(m[i].info_json);
    }
    free(m);
}

static int by_seen(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    return x->seen_ago_ms < y->seen_ago_ms ? -1 : x->seen_ago_ms > y->seen_ago_ms;
}

int members_read(struct baton_client *c, const char *group, struct member **out, size_t *n)
{
    char *keys[2];
    struct baton_reply *r = NULL;
    struct member *m = NULL;
    size_t count = 0;
    *out = NULL;
    *n = 0;
    int rc = make_keys(group, &keys[0], &keys[1]);
    if (rc != BATON_OK)
        return rc;
    rc = baton_client_eval(c, read_src, 2, (const char *const *)keys, 0, NULL, &r);
    if (rc != BATON_OK)
        goto out;
    rc = BATON_EPROTO;
    if (r->type != BATON_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != BATON_REPLY_INTEGER || r->element[1]->type != BATON_REPLY_ARRAY ||
        r->element[2]->type != BATON_REPLY_ARRAY)
        goto out;
    long long now = r->element[0]->integer;
    const struct baton_reply *info = r->element[1], *seen = r->element[2];
    rc = BATON_ENOMEM;
    if (seen->elements / 2 > 0 && (m = calloc(seen->elements / 2, sizeof *m)) == NULL)
        goto out;
    for (size_t i = 0; i + 1 < seen->elements; i += 2) {
        const struct baton_reply *name = seen->element[i], *ms = seen->element[i + 1];
        if (name->type != BATON_REPLY_STRING || ms->type != BATON_REPLY_STRING)
            continue;
        char *end = NULL;
        errno = 0;
        long long seen_ms = strtoll(ms->str, &end, 10);
        if (errno != 0 || end == ms->str || *end != '\0' || seen_ms > now)
            continue; /* not written by a heartbeat: ignore it */
        const char *json = "{}";
        for (size_t k = 0; k + 1 < info->elements; k += 2)
            if (info->element[k]->type == BATON_REPLY_STRING &&
                info->element[k + 1]->type == BATON_REPLY_STRING &&
                strcmp(info->element[k]->str, name->str) == 0)
                json = info->element[k + 1]->str;
        m[count].node = strdup(name->str);
        m[count].info_json = strdup(json);
        m[count].seen_ago_ms = now - seen_ms;
        count++;
        if (m[count - 1].node == NULL || m[count - 1].info_json == NULL)
            goto out;
    }
    qsort(m, count, sizeof *m, by_seen);
    *out = m;
    *n = count;
    m = NULL;
    rc = BATON_OK;
out:
    members_free(m, count);
    baton_reply_free(r);
    free(keys[0]);
    free(keys[1]);
    return rc;
}
