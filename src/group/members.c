/* members.c -- see members.h. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "baton_redis.h"
#include "keys.h"
#include "members.h"

#ifndef BATON_VERSION_STRING
#define BATON_VERSION_STRING "unknown"
#endif

/* KEYS: nodes, seen, forget. ARGV: node, info, forget_ms; for a claim also
 * this host, this pid, and the pid of a dead predecessor on this host ("").
 * A claim returns {0, holder's info, ms since its heartbeat} while another
 * alive supervisor holds the name; otherwise both write and return {1,
 * rank}: the number of members whose names sort before node's (bytewise),
 * which orders the followers' campaigns at a lease's end (daemon.c). */
static const char beat_src[] =
    "local t = redis.call('time')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "if ARGV[4] then\n"
    "  local old = redis.call('hget', KEYS[1], ARGV[1])\n"
    "  local seen = tonumber(redis.call('hget', KEYS[2], ARGV[1]))\n"
    "  if old and seen then\n"
    "    local ok, o = pcall(cjson.decode, old)\n"
    "    if ok and type(o) == 'table' and o.state ~= 'stopped' and\n"
    "       type(o.poll_ms) == 'number' and now - seen <= 2 * o.poll_ms + 2000 then\n"
    "      local same_host = o.host == ARGV[4]\n"
    "      local pid = tostring(o.pid)\n"
    "      if not (same_host and (pid == ARGV[5] or pid == ARGV[6])) then\n"
    "        return {0, old, now - seen}\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "redis.call('hset', KEYS[1], ARGV[1], ARGV[2])\n"
    "redis.call('hset', KEYS[2], ARGV[1], now)\n"
    "redis.call('zadd', KEYS[3], now + tonumber(ARGV[3]), ARGV[1])\n"
    "local gone = redis.call('zrangebyscore', KEYS[3], '-inf', now)\n"
    "for _, n in ipairs(gone) do\n"
    "  redis.call('hdel', KEYS[1], n); redis.call('hdel', KEYS[2], n)\n"
    "  redis.call('zrem', KEYS[3], n)\n"
    "end\n"
    "local rank = 0\n"
    "for _, n in ipairs(redis.call('hkeys', KEYS[1])) do\n"
    "  if n < ARGV[1] then rank = rank + 1 end\n"
    "end\n"
    "return {1, rank}\n";

/* Returns {now, nodes, seen, forgotten}: the last, the nodes whose time has
 * come (a read does not delete them; the next heartbeat does). */
static const char read_src[] =
    "local t = redis.call('time')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "return {now, redis.call('hgetall', KEYS[1]), redis.call('hgetall', KEYS[2]),\n"
    "        redis.call('zrangebyscore', KEYS[3], '-inf', now)}\n";

int64_t members_forget_ms(int64_t poll_ms, bool stopped)
{
    if (stopped)
        return MEMBERS_STOPPED_FORGET_MS;
    return 3 * poll_ms > MEMBERS_FORGET_MIN_MS ? 3 * poll_ms : MEMBERS_FORGET_MIN_MS;
}

int64_t members_alive_ms(int64_t poll_ms)
{
    return 2 * poll_ms + 2000;
}

const char *members_host(void)
{
    static char host[256];
    if (host[0] == '\0' && (gethostname(host, sizeof host) != 0 || host[0] == '\0'))
        snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = '\0';
    return host;
}

static int make_keys(const char *group, char *keys[3])
{
    keys[0] = group_key(group, "nodes");
    keys[1] = group_key(group, "seen");
    keys[2] = group_key(group, "forget");
    if (keys[0] != NULL && keys[1] != NULL && keys[2] != NULL)
        return BATON_OK;
    for (int i = 0; i < 3; i++)
        free(keys[i]);
    return BATON_ENOMEM;
}

static void free_keys(char *keys[3])
{
    for (int i = 0; i < 3; i++)
        free(keys[i]);
}

/* The heartbeat script on every master. Returns 0 with the answers in *a
 * (owned) when a majority answered, or a BATON_E* code. */
static int beat(struct baton_client *c, const char *group, int nargs, const char *const *args,
                struct baton_answers **a)
{
    char *keys[3];
    int rc = make_keys(group, keys);
    if (rc != BATON_OK)
        return rc;
    rc = baton_client_eval_all(c, beat_src, 3, (const char *const *)keys, nargs, args, a);
    free_keys(keys);
    return rc;
}

/* The rank in the answers {1, rank} of a heartbeat or claim: over a
 * quorum the masters may differ by a member, so the lowest. *rank is left
 * as it is when no master said. */
static void lowest_rank(const struct baton_answers *a, int64_t *rank)
{
    int64_t best = -1;
    for (int i = 0; i < a->n; i++) {
        const struct baton_reply *r = a->v[i].rc == BATON_OK ? a->v[i].reply : NULL;
        if (r != NULL && r->type == BATON_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->type == BATON_REPLY_INTEGER &&
            (best < 0 || r->element[1]->integer < best))
            best = r->element[1]->integer;
    }
    if (best >= 0)
        *rank = best;
}

int members_heartbeat(struct baton_client *c, const char *group, const char *node,
                      const char *info_json, int64_t forget_ms, int64_t *rank)
{
    char forget[24];
    struct baton_answers *a = NULL;
    snprintf(forget, sizeof forget, "%" PRId64, forget_ms);
    const char *args[3] = {node, info_json, forget};
    int rc = beat(c, group, 3, args, &a);
    if (rc == BATON_OK)
        rc = baton_answers_check(c, a);
    if (rc == BATON_OK && rank != NULL)
        lowest_rank(a, rank);
    baton_answers_free(a);
    return rc;
}

/* The holder's host and pid from its heartbeat JSON. */
static void holder_of(const char *json, char *host, size_t hostlen, long *pid)
{
    cJSON *o = cJSON_Parse(json);
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "host");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "pid");
    snprintf(host, hostlen, "%s", cJSON_IsString(h) ? h->valuestring : "?");
    *pid = cJSON_IsNumber(p) ? (long)p->valuedouble : 0;
    cJSON_Delete(o);
}

int members_claim(struct baton_client *c, const char *group, const char *node, int64_t poll_ms,
                  int64_t *rank, char *msg, size_t msglen)
{
    char mypid[24], dead[24] = "", forget[24], since[32], host[256];
    struct baton_answers *a = NULL;
    long pid = 0;
    int rc;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(mypid, sizeof mypid, "%ld", (long)getpid());
    snprintf(forget, sizeof forget, "%" PRId64, members_forget_ms(poll_ms, false));
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "state", "idle");
    cJSON_AddNumberToObject(o, "term", 0);
    cJSON_AddNumberToObject(o, "pid", (double)getpid());
    cJSON_AddStringToObject(o, "host", members_host());
    cJSON_AddNumberToObject(o, "poll_ms", (double)poll_ms);
    cJSON_AddStringToObject(o, "version", BATON_VERSION_STRING);
    cJSON_AddStringToObject(o, "since", since);
    char *info = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (info == NULL)
        return BATON_ENOMEM;
    /* At most twice: the second time replacing a dead predecessor. */
    for (int attempt = 0; attempt < 2; attempt++) {
        const char *args[6] = {node, info, forget, members_host(), mypid, dead};
        baton_answers_free(a);
        a = NULL;
        rc = beat(c, group, 6, args, &a);
        if (rc == BATON_OK)
            rc = baton_answers_check(c, a);
        if (rc != BATON_OK)
            goto out;
        /* Each master: {1} written, or {0, holder's info, ms since its
         * heartbeat} while another live supervisor holds the name there.
         * One master that knows a live holder is enough to refuse. */
        const struct baton_reply *r = NULL;
        for (int i = 0; i < a->n; i++) {
            const struct baton_reply *x = a->v[i].reply;
            if (a->v[i].rc != BATON_OK)
                continue;
            rc = BATON_EPROTO;
            if (x->type != BATON_REPLY_ARRAY || x->elements < 1 ||
                x->element[0]->type != BATON_REPLY_INTEGER)
                goto out;
            if (x->element[0]->integer == 1)
                continue;
            if (x->elements != 3 || x->element[1]->type != BATON_REPLY_STRING ||
                x->element[2]->type != BATON_REPLY_INTEGER)
                goto out;
            if (r == NULL || x->element[2]->integer < r->element[2]->integer)
                r = x; /* the freshest heartbeat of a holder */
        }
        rc = BATON_OK;
        if (r == NULL) {
            lowest_rank(a, rank);
            goto out;
        }
        holder_of(r->element[1]->str, host, sizeof host, &pid);
        if (attempt == 0 && pid > 0 && strcmp(host, members_host()) == 0 &&
            kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            snprintf(dead, sizeof dead, "%ld", pid);
            continue;
        }
        snprintf(msg, msglen,
                 "node name \"%s\" is in use in group \"%s\" by pid %ld on host %s (last "
                 "heartbeat %lld ms ago); stop that supervisor, or give this one another name "
                 "(node: in baton.yaml)",
                 node, group, pid, host, r->element[2]->integer);
        rc = BATON_ETAKEN;
        goto out;
    }
out:
    baton_answers_free(a);
    free(info);
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

static bool in_array(const struct baton_reply *a, const char *s)
{
    for (size_t i = 0; i < a->elements; i++)
        if (a->element[i]->type == BATON_REPLY_STRING && strcmp(a->element[i]->str, s) == 0)
            return true;
    return false;
}

/* Adds one master's answer r ({now, nodes, seen, forgotten}) to m[0..*count):
 * each node once, with its freshest heartbeat. Returns 0, EPROTO or
 * ENOMEM. */
static int add_members(const struct baton_reply *r, struct member *m, size_t *count)
{
    if (r->type != BATON_REPLY_ARRAY || r->elements != 4 ||
        r->element[0]->type != BATON_REPLY_INTEGER || r->element[1]->type != BATON_REPLY_ARRAY ||
        r->element[2]->type != BATON_REPLY_ARRAY || r->element[3]->type != BATON_REPLY_ARRAY)
        return BATON_EPROTO;
    long long now = r->element[0]->integer;
    const struct baton_reply *info = r->element[1], *seen = r->element[2], *gone = r->element[3];
    for (size_t i = 0; i + 1 < seen->elements; i += 2) {
        const struct baton_reply *name = seen->element[i], *ms = seen->element[i + 1];
        if (name->type != BATON_REPLY_STRING || ms->type != BATON_REPLY_STRING ||
            in_array(gone, name->str))
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
        size_t at = 0;
        while (at < *count && strcmp(m[at].node, name->str) != 0)
            at++;
        if (at < *count && m[at].seen_ago_ms <= now - seen_ms)
            continue; /* another master saw it more recently */
        char *nj = strdup(json);
        if (nj == NULL)
            return BATON_ENOMEM;
        if (at == *count) {
            if ((m[at].node = strdup(name->str)) == NULL) {
                free(nj);
                return BATON_ENOMEM;
            }
            (*count)++;
        }
        free(m[at].info_json);
        m[at].info_json = nj;
        m[at].seen_ago_ms = now - seen_ms;
    }
    return BATON_OK;
}

int members_read(struct baton_client *c, const char *group, struct member **out, size_t *n)
{
    char *keys[3];
    struct baton_answers *a = NULL;
    struct member *m = NULL;
    size_t count = 0, cap = 0;
    *out = NULL;
    *n = 0;
    int rc = make_keys(group, keys);
    if (rc != BATON_OK)
        return rc;
    rc = baton_client_eval_all(c, read_src, 3, (const char *const *)keys, 0, NULL, &a);
    if (rc != BATON_OK)
        goto out;
    /* Every master's heartbeats; of each node, the freshest */
    for (int i = 0; i < a->n; i++)
        if (a->v[i].rc == BATON_OK && a->v[i].reply->type == BATON_REPLY_ARRAY &&
            a->v[i].reply->elements == 4 && a->v[i].reply->element[2]->type == BATON_REPLY_ARRAY)
            cap += a->v[i].reply->element[2]->elements / 2;
    rc = BATON_ENOMEM;
    if (cap > 0 && (m = calloc(cap, sizeof *m)) == NULL)
        goto out;
    for (int i = 0; i < a->n; i++)
        if (a->v[i].rc == BATON_OK && (rc = add_members(a->v[i].reply, m, &count)) != BATON_OK)
            goto out;
    if (count > 1)
        qsort(m, count, sizeof *m, by_seen);
    *out = m;
    *n = count;
    m = NULL;
    rc = BATON_OK;
out:
    members_free(m, count);
    baton_answers_free(a);
    free_keys(keys);
    return rc;
}

bool members_alive(const struct member *m)
{
    cJSON *o = cJSON_Parse(m->info_json);
    const cJSON *state = cJSON_GetObjectItemCaseSensitive(o, "state");
    const cJSON *poll = cJSON_GetObjectItemCaseSensitive(o, "poll_ms");
    /* A heartbeat without poll_ms: judge it by the default poll (5s). */
    int64_t poll_ms = cJSON_IsNumber(poll) ? (int64_t)poll->valuedouble : 5000;
    bool alive = !(cJSON_IsString(state) && strcmp(state->valuestring, "stopped") == 0) &&
                 m->seen_ago_ms <= members_alive_ms(poll_ms);
    cJSON_Delete(o);
    return alive;
}

bool members_jobs(const struct member *m, char *hash, size_t len, long *njobs)
{
    cJSON *o = cJSON_Parse(m->info_json);
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "jobs_hash");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "jobs");
    bool ok = cJSON_IsString(h) && h->valuestring[0] != '\0';
    if (ok)
        snprintf(hash, len, "%s", h->valuestring);
    *njobs = cJSON_IsNumber(n) ? (long)n->valuedouble : -1;
    cJSON_Delete(o);
    return ok;
}
