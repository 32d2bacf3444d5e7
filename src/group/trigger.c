/* trigger.c -- see trigger.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "answers.h"
#include "rfc3339.h"
#include "keys.h"
#include "trigger.h"

/* The server's time in ms, as every script here computes it. */
#define NOW_MS                                                                                     \
    "local t = redis.call('time')\n"                                                               \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

/* KEYS: trigger:<id>, triggers. ARGV: id, job, by, queue max, channel.
 * Returns {0, hash, receivers} created; {1, hash} exists; {2, hash} exists
 * for another job; {3} the queue is full. */
static const char request_src[] =
    "local h = redis.call('hgetall', KEYS[1])\n"
    "if #h > 0 then\n"
    "  if redis.call('hget', KEYS[1], 'job') ~= ARGV[2] then return {2, h} end\n"
    "  return {1, h}\n"
    "end\n"
    "if redis.call('zcard', KEYS[2]) >= tonumber(ARGV[4]) then return {3} end\n" NOW_MS
    "redis.call('hset', KEYS[1], 'id', ARGV[1], 'job', ARGV[2], 'by', ARGV[3],\n"
    "           'state', 'pending', 'attempt', '1', 'requested', tostring(now))\n"
    "redis.call('zadd', KEYS[2], now, ARGV[1])\n"
    "local n = redis.call('publish', ARGV[5], 'trigger ' .. ARGV[1])\n"
    "return {0, redis.call('hgetall', KEYS[1]), n}\n";

/* KEYS: leader, trigger:<id>, busy:J. ARGV: token, mode, member, run_id,
 * node, term, attempt. Replies as claim.c's claim script: {-1} not the
 * leader, {0} taken, {1, busy} claimed, {2, busy} busy, {4} ours (claimed
 * by an earlier attempt of this very claim, whose answer was lost: its
 * registration is made again if it expired meanwhile). */
static const char claim_src[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return {-1} end\n"
    "local st = redis.call('hmget', KEYS[2], 'state', 'run_id', 'attempt')\n" NOW_MS
    "if st[1] == 'claimed' and st[2] == ARGV[4] then\n"
    "  if not redis.call('zscore', KEYS[3], ARGV[3]) then\n"
    "    local left = redis.call('pttl', KEYS[1])\n"
    "    redis.call('zadd', KEYS[3], now + left, ARGV[3])\n"
    "    redis.call('pexpire', KEYS[3], left + 3600000)\n"
    "  end\n"
    "  return {4}\n"
    "end\n"
    "if st[1] ~= 'pending' or st[3] ~= ARGV[7] then return {0} end\n"
    "redis.call('zremrangebyscore', KEYS[3], '-inf', now)\n"
    "local busy = redis.call('zrange', KEYS[3], 0, 31)\n"
    "if #busy > 0 and ARGV[2] == 'wait' then return {2, busy} end\n"
    "redis.call('hset', KEYS[2], 'state', 'claimed', 'run_id', ARGV[4], 'node', ARGV[5],\n"
    "           'term', ARGV[6], 'claimed', tostring(now))\n"
    "local left = redis.call('pttl', KEYS[1])\n"
    "redis.call('zadd', KEYS[3], now + left, ARGV[3])\n"
    "redis.call('pexpire', KEYS[3], left + 3600000)\n"
    "return {1, busy}\n";

/* KEYS: trigger:<id>. ARGV: run_id. */
static const char started_src[] =
    "local st = redis.call('hmget', KEYS[1], 'state', 'run_id')\n"
    "if st[1] ~= 'claimed' or st[2] ~= ARGV[1] then return 0 end\n" NOW_MS
    "redis.call('hset', KEYS[1], 'state', 'running', 'started', tostring(now))\n"
    "return 1\n";

/* KEYS: trigger:<id>, busy:J, triggers. ARGV: run_id, member, id, reason,
 * channel, keep s, lease ttl ms. Returns 0 (nothing to do), 1 (requeued),
 * 2 (done: lost). A run lost this way is done killed, presumed (its node
 * may only have been stalled: its own report replaces the verdict,
 * finish_src), and its end is when it was last known alive: its
 * registration's last renewal (the score less the ttl). */
static const char recover_src[] =
    "local st = redis.call('hmget', KEYS[1], 'state', 'run_id', 'attempt')\n"
    "if st[2] ~= ARGV[1] or (st[1] ~= 'claimed' and st[1] ~= 'running') then return 0 end\n" NOW_MS
    "local s = redis.call('zscore', KEYS[2], ARGV[2])\n"
    "if s and tonumber(s) > now then return 0 end\n"
    "redis.call('zrem', KEYS[2], ARGV[2])\n"
    "if st[1] == 'claimed' then\n"
    "  redis.call('hset', KEYS[1], 'state', 'pending', 'attempt',\n"
    "             tostring(tonumber(st[3] or '1') + 1), 'lost_run', ARGV[1])\n"
    "  redis.call('hdel', KEYS[1], 'run_id', 'node', 'term', 'claimed')\n"
    "  return 1\n"
    "end\n"
    "local seen = s and (tonumber(s) - tonumber(ARGV[7])) or now\n"
    "if seen > now then seen = now end\n"
    "redis.call('hset', KEYS[1], 'state', 'done', 'outcome', 'killed', 'reason', ARGV[4],\n"
    "           'ended', tostring(seen), 'presumed', '1')\n"
    "redis.call('expire', KEYS[1], ARGV[6])\n"
    "redis.call('zrem', KEYS[3], ARGV[3])\n"
    "redis.call('publish', ARGV[5], 'done ' .. ARGV[3])\n"
    "return 2\n";

/* KEYS: busy:J, trigger:<id>, triggers. ARGV: member, channel, job, id,
 * run_id, outcome, exit_code, signal, reason, keep s, ended channel, ended
 * (Unix ms, the command's end). A presumed verdict (recover_src) of the
 * same run is replaced: this is what happened. */
static const char finish_src[] =
    "redis.call('zrem', KEYS[1], ARGV[1])\n"
    "redis.call('publish', ARGV[11], 'ended ' .. ARGV[3])\n"
    "local st = redis.call('hmget', KEYS[2], 'state', 'run_id', 'presumed')\n"
    "if st[2] ~= ARGV[5] then return 0 end\n"
    "if st[1] ~= 'claimed' and st[1] ~= 'running' and not (st[1] == 'done' and st[3] == '1') then\n"
    "  return 0\n"
    "end\n" NOW_MS "local ended = tonumber(ARGV[12])\n"
    "if not ended or ended <= 0 or ended > now then ended = now end\n"
    "redis.call('hdel', KEYS[2], 'presumed')\n"
    "redis.call('hset', KEYS[2], 'state', 'done', 'outcome', ARGV[6], 'exit_code', ARGV[7],\n"
    "           'signal', ARGV[8], 'reason', ARGV[9], 'ended', tostring(ended))\n"
    "redis.call('expire', KEYS[2], ARGV[10])\n"
    "redis.call('zrem', KEYS[3], ARGV[4])\n"
    "redis.call('publish', ARGV[2], 'done ' .. ARGV[4])\n"
    "return 1\n";

/* KEYS: trigger:<id>, triggers. ARGV: id, reason, channel, keep s. */
static const char reject_src[] =
    "if redis.call('hget', KEYS[1], 'state') ~= 'pending' then return 0 end\n" NOW_MS
    "redis.call('hset', KEYS[1], 'state', 'done', 'outcome', 'rejected', 'reason', ARGV[2],\n"
    "           'ended', tostring(now))\n"
    "redis.call('expire', KEYS[1], ARGV[4])\n"
    "redis.call('zrem', KEYS[2], ARGV[1])\n"
    "redis.call('publish', ARGV[3], 'done ' .. ARGV[1])\n"
    "return 1\n";

const char *trigger_state_name(enum trigger_state s)
{
    static const char *const names[] = {"pending", "claimed", "running", "done"};
    return (size_t)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

bool trigger_id_ok(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > TRIGGER_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = id[i];
        bool alnum =
            (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        if (!alnum && (i == 0 || strchr("_.:-", ch) == NULL))
            return false;
    }
    return true;
}

int trigger_make_id(char *buf, size_t len)
{
    uint32_t rnd;
    struct tm tm;
    time_t now = time(NULL);
    char when[32];
    if (getrandom(&rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd || gmtime_r(&now, &tm) == NULL)
        return -1;
    strftime(when, sizeof when, "%Y%m%dT%H%M%S", &tm);
    snprintf(buf, len, "%s-%08" PRIx32, when, rnd);
    return 0;
}

void trigger_run_id(const char *id, int attempt, char *buf, size_t len)
{
    if (attempt <= 1)
        snprintf(buf, len, "%s", id);
    else
        snprintf(buf, len, "%s.%d", id, attempt);
}

void trigger_reply_free(struct trigger_reply *r)
{
    baton_answers_free(r->answers);
    free(r->v);
    memset(r, 0, sizeof *r);
}

static int64_t num(const char *s, int64_t dflt)
{
    char *end;
    if (s == NULL || *s == '\0')
        return dflt;
    long long v = strtoll(s, &end, 10);
    return *end == '\0' ? v : dflt;
}

/* Fills t from a flat [field, value, ...] array (HGETALL). Returns false
 * when h is not one, or holds no request. */
static bool parse_hash(const struct baton_reply *h, struct trigger *t)
{
    static const char *const states[] = {"pending", "claimed", "running", "done"};
    const char *state = NULL;
    if (h == NULL || h->type != BATON_REPLY_ARRAY || h->elements == 0 || h->elements % 2 != 0)
        return false;
    *t = (struct trigger){.id = "",
                          .job = "",
                          .by = "",
                          .node = "",
                          .run_id = "",
                          .outcome = "",
                          .signal = "",
                          .reason = "",
                          .exit_code = -1,
                          .attempt = 1};
    for (size_t i = 0; i + 1 < h->elements; i += 2) {
        const struct baton_reply *k = h->element[i], *v = h->element[i + 1];
        if (k->type != BATON_REPLY_STRING || v->type != BATON_REPLY_STRING)
            return false;
        const char *key = k->str, *val = v->str;
        if (strcmp(key, "id") == 0)
            t->id = val;
        else if (strcmp(key, "job") == 0)
            t->job = val;
        else if (strcmp(key, "by") == 0)
            t->by = val;
        else if (strcmp(key, "state") == 0)
            state = val;
        else if (strcmp(key, "attempt") == 0)
            t->attempt = (int)num(val, 1);
        else if (strcmp(key, "requested") == 0)
            t->requested_ms = num(val, 0);
        else if (strcmp(key, "node") == 0)
            t->node = val;
        else if (strcmp(key, "run_id") == 0)
            t->run_id = val;
        else if (strcmp(key, "term") == 0)
            t->term = (uint64_t)num(val, 0);
        else if (strcmp(key, "started") == 0)
            t->started_ms = num(val, 0);
        else if (strcmp(key, "ended") == 0)
            t->ended_ms = num(val, 0);
        else if (strcmp(key, "outcome") == 0)
            t->outcome = val;
        else if (strcmp(key, "exit_code") == 0)
            t->exit_code = (int)num(val, -1);
        else if (strcmp(key, "signal") == 0)
            t->signal = val;
        else if (strcmp(key, "reason") == 0)
            t->reason = val;
        else if (strcmp(key, "presumed") == 0)
            t->presumed = strcmp(val, "1") == 0;
    }
    if (state == NULL || t->id[0] == '\0' || t->job[0] == '\0')
        return false;
    for (size_t s = 0; s < sizeof states / sizeof states[0]; s++)
        if (strcmp(state, states[s]) == 0) {
            t->state = (enum trigger_state)s;
            return true;
        }
    return false;
}

/* How far a copy of a request has gone: its attempt, then its state. */
static int64_t progress(const struct trigger *t)
{
    return (int64_t)t->attempt * 4 + (int64_t)t->state;
}

/* Fills out->v[0] with the most advanced of the hashes hs[0..n) (NULL or
 * empty: the master has none). Returns 0 or ENOMEM/EPROTO. */
static int take_best(const struct baton_reply *const *hs, int n, struct trigger_reply *out)
{
    struct trigger t, best;
    bool have = false;
    for (int i = 0; i < n; i++) {
        if (hs[i] == NULL || hs[i]->type != BATON_REPLY_ARRAY || hs[i]->elements == 0)
            continue;
        if (!parse_hash(hs[i], &t))
            return BATON_EPROTO;
        if (!have || progress(&t) > progress(&best))
            best = t;
        have = true;
    }
    if (!have)
        return BATON_OK;
    if ((out->v = calloc(1, sizeof *out->v)) == NULL)
        return BATON_ENOMEM;
    out->v[0] = best;
    out->n = 1;
    return BATON_OK;
}

/* The keys of request id and the group's queue and channel (owned). */
struct keys {
    char *trigger, *queue, *chan;
};

static int keys_make(const char *group, const char *id, struct keys *k)
{
    k->trigger = group_key(group, "trigger:%s", id);
    k->queue = group_key(group, "triggers");
    k->chan = group_key(group, "events");
    return k->trigger != NULL && k->queue != NULL && k->chan != NULL ? BATON_OK : BATON_ENOMEM;
}

static void keys_free(struct keys *k)
{
    free(k->trigger);
    free(k->queue);
    free(k->chan);
}

int trigger_request(struct baton_client *c, const char *group, const char *job, const char *id,
                    const char *by, enum trigger_request_result *result, int *receivers,
                    struct trigger_reply *out)
{
    struct keys k;
    char max[16];
    const struct baton_reply *hs[BATON_QUORUM_MAX];
    int count[4] = {0}, nh = 0;
    memset(out, 0, sizeof *out);
    *receivers = 0;
    int rc = keys_make(group, id, &k);
    if (rc == BATON_OK) {
        snprintf(max, sizeof max, "%d", TRIGGER_QUEUE_MAX);
        const char *keys[2] = {k.trigger, k.queue};
        const char *args[5] = {id, job, by, max, k.chan};
        rc = baton_client_eval_all(c, request_src, 2, keys, 5, args, &out->answers);
    }
    keys_free(&k);
    if (rc != BATON_OK)
        goto fail;
    const struct baton_answers *a = out->answers;
    /* Each master: {0, hash, receivers} made, {1, hash} there, {2, hash}
     * there for another job, {3} its queue is full. */
    for (int i = 0; i < a->n && nh < BATON_QUORUM_MAX; i++) {
        const struct baton_reply *r = a->v[i].reply;
        if (a->v[i].rc != BATON_OK || !a->v[i].counts)
            continue;
        if (r->type != BATON_REPLY_ARRAY || r->elements < 1 ||
            r->element[0]->type != BATON_REPLY_INTEGER || r->element[0]->integer < 0 ||
            r->element[0]->integer > 3 || (r->element[0]->integer < 3 && r->elements < 2)) {
            rc = BATON_EPROTO;
            goto fail;
        }
        int code = (int)r->element[0]->integer;
        count[code]++;
        if (code < 3)
            hs[nh++] = r->element[1];
        if (code == 0 && r->elements > 2 && r->element[2]->type == BATON_REPLY_INTEGER &&
            r->element[2]->integer > *receivers)
            *receivers = (int)r->element[2]->integer;
    }
    if (count[2] > 0)
        *result = TRIGGER_OTHER_JOB;
    else if (count[0] + count[1] >= a->majority)
        *result = count[1] > 0 ? TRIGGER_EXISTS : TRIGGER_CREATED;
    else if (count[3] > 0)
        *result = TRIGGER_FULL;
    else {
        /* It reached a minority: not made (a leader ends it as incomplete).
         * The detail names each master that did not take it. */
        rc = baton_answers_check(c, a);
        if (rc == BATON_OK)
            rc = BATON_EIO;
        goto fail;
    }
    if (*result != TRIGGER_FULL) {
        if (count[2] > 0) { /* show the other job's copy */
            nh = 0;
            for (int i = 0; i < a->n; i++)
                if (a->v[i].rc == BATON_OK && a->v[i].counts &&
                    a->v[i].reply->element[0]->integer == 2)
                    hs[nh++] = a->v[i].reply->element[1];
        }
        if ((rc = take_best(hs, nh, out)) == BATON_OK && out->n == 0)
            rc = BATON_EPROTO;
        if (rc != BATON_OK)
            goto fail;
    }
    return BATON_OK;
fail:
    trigger_reply_free(out);
    return rc;
}

int trigger_get(struct baton_client *c, const char *group, const char *id,
                struct trigger_reply *out)
{
    char *key = group_key(group, "trigger:%s", id);
    const struct baton_reply *hs[BATON_QUORUM_MAX];
    int nh = 0, present = 0, valid = 0;
    memset(out, 0, sizeof *out);
    if (key == NULL)
        return BATON_ENOMEM;
    const char *argv[2] = {"HGETALL", key};
    int rc = baton_client_command_all(c, 2, argv, NULL, &out->answers);
    free(key);
    if (rc != BATON_OK)
        goto fail;
    const struct baton_answers *a = out->answers;
    for (int i = 0; i < a->n && nh < BATON_QUORUM_MAX; i++) {
        const struct baton_reply *r = a->v[i].reply;
        if (a->v[i].rc != BATON_OK)
            continue;
        if (r->type != BATON_REPLY_ARRAY) {
            rc = BATON_EPROTO;
            goto fail;
        }
        hs[nh++] = r;
        if (a->v[i].counts) {
            valid++;
            present += r->elements > 0;
        }
    }
    out->incomplete = present > 0 && present + (a->n - valid) < a->majority;
    if ((rc = take_best(hs, nh, out)) != BATON_OK)
        goto fail;
    return BATON_OK;
fail:
    trigger_reply_free(out);
    return rc;
}

int trigger_list(struct baton_client *c, const char *group, size_t max, struct trigger_reply *out)
{
    char *key = group_key(group, "triggers");
    char stop[24];
    memset(out, 0, sizeof *out);
    if (key == NULL)
        return BATON_ENOMEM;
    snprintf(stop, sizeof stop, "%zu", max > 0 ? max - 1 : 0);
    const char *argv[4] = {"ZRANGE", key, "0", stop};
    int rc = baton_client_command_all(c, 4, argv, NULL, &out->answers);
    free(key);
    if (rc != BATON_OK)
        goto fail;
    const struct baton_answers *a = out->answers;
    size_t total = 0;
    if ((rc = answers_arrays(c, a, &total)) != BATON_OK)
        goto fail;
    if (total > 0 && (out->v = calloc(total, sizeof *out->v)) == NULL) {
        rc = BATON_ENOMEM;
        goto fail;
    }
    /* Only the ids, each once (the union of the masters' queues): the
     * leader reads each request it does not know. */
    for (int i = 0; i < a->n; i++) {
        const struct baton_reply *r = a->v[i].reply;
        if (a->v[i].rc != BATON_OK)
            continue;
        for (size_t j = 0; j < r->elements; j++) {
            if (r->element[j]->type != BATON_REPLY_STRING)
                continue;
            bool seen = false; /* one server: each id once already */
            for (size_t k = 0; a->n > 1 && k < out->n && !seen; k++)
                seen = strcmp(out->v[k].id, r->element[j]->str) == 0;
            if (!seen)
                out->v[out->n++] = (struct trigger){.id = r->element[j]->str};
        }
    }
    return BATON_OK;
fail:
    trigger_reply_free(out);
    return rc;
}

enum claim_result trigger_claim(struct baton_client *c, const char *group, const char *job,
                                const char *leader_key, const char *token, const char *id,
                                int attempt, enum claim_mode mode, const char *member,
                                const char *node, uint64_t term, struct claim_reply *out)
{
    char *tkey = group_key(group, "trigger:%s", id), *busy = group_key(group, "busy:%s", job);
    char run_id[TRIGGER_ID_MAX + 16], termbuf[24], attbuf[16];
    enum claim_result res = CLAIM_ERROR;

    memset(out, 0, sizeof *out);
    if (tkey != NULL && busy != NULL) {
        trigger_run_id(id, attempt, run_id, sizeof run_id);
        snprintf(termbuf, sizeof termbuf, "%" PRIu64, term);
        snprintf(attbuf, sizeof attbuf, "%d", attempt);
        const char *keys[3] = {leader_key, tkey, busy};
        const char *args[7] = {
            token, mode == CLAIM_RUN_OR_WAIT ? "wait" : "run", member, run_id, node, termbuf,
            attbuf};
        int rc = baton_client_eval_all(c, claim_src, 3, keys, 7, args, &out->answers);
        if (out->answers != NULL)
            res = claim_reduce(out, mode == CLAIM_RUN_OR_WAIT ? mode : CLAIM_RUN);
        if (res == CLAIM_ERROR && out->why[0] == '\0')
            snprintf(out->why, sizeof out->why, "%s", baton_client_errstr(c));
        (void)rc;
    }
    free(tkey);
    free(busy);
    return res;
}

/* Runs script on every master; a write that holds when a majority applied
 * it. *result (may be NULL): the integer reply a majority of the counted
 * masters gave, or -1 when none did. */
static int eval_int(struct baton_client *c, const char *src, int nkeys, const char *const *keys,
                    int nargs, const char *const *args, long long *result)
{
    struct baton_answers *a = NULL;
    int rc = baton_client_eval_all(c, src, nkeys, keys, nargs, args, &a);
    if (rc == BATON_OK)
        rc = baton_answers_check(c, a);
    if (rc == BATON_OK || rc == BATON_ENOTDURABLE) {
        rc = BATON_OK;
        for (int i = 0; i < a->n; i++)
            if (a->v[i].rc == BATON_OK && a->v[i].reply->type != BATON_REPLY_INTEGER)
                rc = BATON_EPROTO;
    }
    if (rc == BATON_OK && result != NULL) {
        *result = -1;
        for (int i = 0; i < a->n && *result == -1; i++) {
            if (a->v[i].rc != BATON_OK || !a->v[i].counts)
                continue;
            int same = 0;
            for (int j = 0; j < a->n; j++)
                same += a->v[j].rc == BATON_OK && a->v[j].counts &&
                        a->v[j].reply->integer == a->v[i].reply->integer;
            if (same >= a->majority)
                *result = a->v[i].reply->integer;
        }
    }
    baton_answers_free(a);
    return rc;
}

int trigger_started(struct baton_client *c, const char *group, const char *id, const char *run_id)
{
    char *key = group_key(group, "trigger:%s", id);
    if (key == NULL)
        return BATON_ENOMEM;
    const char *keys[1] = {key};
    const char *args[1] = {run_id};
    int rc = eval_int(c, started_src, 1, keys, 1, args, NULL);
    free(key);
    return rc;
}

#define STR_(x) #x
#define STR(x)  STR_(x)
static const char keep_s[] = STR(TRIGGER_KEEP_S);

int trigger_recover(struct baton_client *c, const char *group, const char *job, const char *id,
                    const char *run_id, const char *member, int64_t lease_ttl_ms, bool *requeued,
                    bool *lost)
{
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%" PRId64, lease_ttl_ms);
    struct keys k;
    char *busy = group_key(group, "busy:%s", job);
    long long r = 0;
    int rc = keys_make(group, id, &k);
    *requeued = *lost = false;
    if (rc == BATON_OK && busy == NULL)
        rc = BATON_ENOMEM;
    if (rc == BATON_OK) {
        const char *keys[3] = {k.trigger, busy, k.queue};
        const char *args[7] = {run_id,
                               member,
                               id,
                               "its node stopped answering while it ran (it died, or was stalled "
                               "past its lease): the run ended with it; presumed killed unless "
                               "the node reports how it ended",
                               k.chan,
                               keep_s,
                               ttl};
        rc = eval_int(c, recover_src, 3, keys, 7, args, &r);
    }
    keys_free(&k);
    free(busy);
    *requeued = r == 1;
    *lost = r == 2;
    return rc;
}

int trigger_finish(struct baton_client *c, const char *group, const char *job, const char *member,
                   const char *id, const struct history_rec *rec)
{
    struct keys k;
    char *busy = group_key(group, "busy:%s", job), *ended = group_key(group, "ended");
    char code[16] = "", end_ms[24];
    int rc = keys_make(group, id, &k);
    if (rc == BATON_OK && (busy == NULL || ended == NULL))
        rc = BATON_ENOMEM;
    if (rc == BATON_OK) {
        if (rec->exit_code >= 0)
            snprintf(code, sizeof code, "%d", rec->exit_code);
        snprintf(end_ms, sizeof end_ms, "%" PRId64,
                 rec->started_ms > 0 ? rec->started_ms + rec->duration_ms : 0);
        const char *keys[3] = {busy, k.trigger, k.queue};
        const char *args[12] = {member,
                                k.chan,
                                job,
                                id,
                                rec->run_id,
                                history_outcome_name(rec->outcome),
                                code,
                                rec->signal != NULL ? rec->signal : "",
                                rec->reason != NULL ? rec->reason : "",
                                keep_s,
                                ended,
                                end_ms};
        rc = eval_int(c, finish_src, 3, keys, 12, args, NULL);
    }
    keys_free(&k);
    free(busy);
    free(ended);
    return rc;
}

int trigger_reject(struct baton_client *c, const char *group, const char *id, const char *reason)
{
    struct keys k;
    int rc = keys_make(group, id, &k);
    if (rc == BATON_OK) {
        const char *keys[2] = {k.trigger, k.queue};
        const char *args[4] = {id, reason, k.chan, keep_s};
        rc = eval_int(c, reject_src, 2, keys, 4, args, NULL);
    }
    keys_free(&k);
    return rc;
}

int trigger_forget(struct baton_client *c, const char *group, const char *id)
{
    char *key = group_key(group, "triggers");
    struct baton_answers *a = NULL;
    if (key == NULL)
        return BATON_ENOMEM;
    const char *argv[3] = {"ZREM", key, id};
    int rc = baton_client_command_all(c, 3, argv, NULL, &a);
    if (rc == BATON_OK)
        rc = baton_answers_check(c, a);
    baton_answers_free(a);
    free(key);
    return rc;
}

cJSON *trigger_json(const struct trigger *t)
{
    char when[40];
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "id", t->id);
    cJSON_AddStringToObject(o, "job", t->job);
    cJSON_AddStringToObject(o, "state", trigger_state_name(t->state));
    cJSON_AddStringToObject(o, "by", t->by);
    cJSON_AddNumberToObject(o, "attempt", t->attempt);
    log_rfc3339_ms(t->requested_ms, when, sizeof when);
    cJSON_AddStringToObject(o, "requested", when);
#define OPT_STR(name, v)                                                                           \
    do {                                                                                           \
        if ((v)[0] != '\0')                                                                        \
            cJSON_AddStringToObject(o, name, v);                                                   \
        else                                                                                       \
            cJSON_AddNullToObject(o, name);                                                        \
    } while (0)
    OPT_STR("node", t->node);
    OPT_STR("run_id", t->run_id);
    if (t->started_ms > 0) {
        log_rfc3339_ms(t->started_ms, when, sizeof when);
        cJSON_AddStringToObject(o, "started", when);
    } else {
        cJSON_AddNullToObject(o, "started");
    }
    if (t->ended_ms > 0) {
        log_rfc3339_ms(t->ended_ms, when, sizeof when);
        cJSON_AddStringToObject(o, "ended", when);
    } else {
        cJSON_AddNullToObject(o, "ended");
    }
    OPT_STR("outcome", t->outcome);
    if (t->exit_code >= 0)
        cJSON_AddNumberToObject(o, "exit_code", t->exit_code);
    else
        cJSON_AddNullToObject(o, "exit_code");
    OPT_STR("signal", t->signal);
    OPT_STR("reason", t->reason);
#undef OPT_STR
    return o;
}
