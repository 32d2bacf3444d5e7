/* claim.c -- see claim.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claim.h"
#include "keys.h"
#include "runlimits.h"

#define REFRESH_MAX 256 /* runs refreshed per script call */

#define REC_KEEP "16" /* nodes whose last claim of a job claimed:J keeps */

/* The claim record of a job: claimed:J is a hash, one field per node (the
 * member's part before its last '/'), "<tick> <kind> <member>" (kind 1: to
 * run, 3: as skipped). A node's lost claim is always its last claim of the
 * job (it claims no later tick of the job before resolving it), so another
 * node's later claims cannot replace it. At most REC_KEEP nodes are kept:
 * a new node's record drops the oldest other one. A string left by an
 * older baton (the job's last claim only) is dropped. Defines rec_node()
 * and rec_get(); KEYS[k] is claimed:J. */
#define REC_LUA(k)                                                                                 \
    "local function rec_node(m) return string.match(m, '^(.*)/') or m end\n"                       \
    "local function rec_get(m)\n"                                                                  \
    "  if redis.call('type', KEYS[" k "]).ok == 'string' then\n"                                   \
    "    redis.call('del', KEYS[" k "])\n"                                                         \
    "  end\n"                                                                                      \
    "  return redis.call('hget', KEYS[" k "], rec_node(m))\n"                                      \
    "end\n"

/* KEYS: leader, last:J, busy:J, claimed:J, then the busy keys of J's pool
 * (runlimits.h). ARGV: token, tick, mode, member, max_running, pool limit.
 * Returns {-1} not the leader, {0} taken, {1, busy} claimed and registered,
 * {2, busy} busy (not claimed), {3, busy} claimed as skipped, {4} claimed
 * and registered by an earlier attempt with the same member (its answer
 * was lost), {5} claimed as skipped by such an attempt, {6} claimed to run
 * by such an attempt whose registration has expired, {7} not claimed:
 * max_running runs of J are alive, {8} not claimed: J's pool is full.
 * ARGV[7..9] (a job run on members; assign.h): its assign:J key ('' for
 * the others), the index key, the job: a claim to run writes the tick's
 * marker "claimed <node> 1 <now> <run_id> 0 -" there, so that the tick is
 * offered by whichever leader reads it (one server: such jobs are refused
 * over a quorum, so the keys built here share the slot). */
static const char claim_src[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return {-1} end\n" LIMITS_LUA(
        "3", "5", "5", "6") "if ARGV[3] == 'register' then\n"
    "  local t = redis.call('time')\n"
    "  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "  local full = limits_full(now)\n"
    "  if full ~= 0 then return {full} end\n"
    "  local left = redis.call('pttl', KEYS[1])\n"
    "  redis.call('zadd', KEYS[3], now + left, ARGV[4])\n"
    "  redis.call('pexpire', KEYS[3], left + 3600000)\n"
    "  return {1, {}}\n"
    "end\n" REC_LUA("4") "local last = redis.call('get', KEYS[2])\n"
                         "if last and tonumber(last) >= tonumber(ARGV[2]) then\n"
                         "  if ARGV[4] ~= '' then\n"
                         "    if redis.call('zscore', KEYS[3], ARGV[4]) then return {4} end\n"
                         "    local mine = rec_get(ARGV[4])\n"
                         "    if mine == ARGV[2] .. ' 3 ' .. ARGV[4] then return {5} end\n"
                         "    if mine == ARGV[2] .. ' 1 ' .. ARGV[4] then return {6} end\n"
                         "  end\n"
                         "  return {0}\n"
                         "end\n"
                         "local function record(kind)\n"
                         "  if ARGV[4] == '' then return end\n"
                         "  local node = rec_node(ARGV[4])\n"
                         "  if rec_get(ARGV[4]) then\n"
                         "    redis.call('hset', KEYS[4], node, ARGV[2] .. kind .. ARGV[4])\n"
                         "    return\n"
                         "  end\n"
                         "  if redis.call('hlen', KEYS[4]) >= " REC_KEEP " then\n"
                         "    local all, old, at = redis.call('hgetall', KEYS[4]), nil, nil\n"
                         "    for i = 1, #all, 2 do\n"
                         "      local t = tonumber(string.match(all[i + 1], '^%d+')) or 0\n"
                         "      if at == nil or t < at then old, at = all[i], t end\n"
                         "    end\n"
                         "    redis.call('hdel', KEYS[4], old)\n"
                         "  end\n"
                         "  redis.call('hset', KEYS[4], node, ARGV[2] .. kind .. ARGV[4])\n"
                         "end\n"
                         "local t = redis.call('time')\n"
                         "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
                         "redis.call('zremrangebyscore', KEYS[3], '-inf', now)\n"
                         "local busy = redis.call('zrange', KEYS[3], 0, 31)\n"
                         "local mode = ARGV[3]\n"
                         "if #busy > 0 and mode == 'wait' then return {2, busy} end\n"
                         "local skip = mode == 'skip' or (#busy > 0 and mode == 'skip-if-busy')\n"
                         "if not skip then\n"
                         "  local full = limits_full(now)\n"
                         "  if full ~= 0 then return {full, busy} end\n"
                         "end\n"
                         "redis.call('set', KEYS[2], ARGV[2])\n"
                         "if skip then\n"
                         "  record(' 3 ')\n"
                         "  return {3, busy}\n"
                         "end\n"
                         "record(' 1 ')\n"
                         "local left = redis.call('pttl', KEYS[1])\n"
                         "redis.call('zadd', KEYS[3], now + left, ARGV[4])\n"
                         "redis.call('pexpire', KEYS[3], left + 3600000)\n"
                         "if ARGV[7] ~= '' then\n"
                         "  local node, run = string.match(ARGV[4], '^(.*)/([^/]*)$')\n"
                         "  redis.call('hset', ARGV[7], ARGV[2],\n"
                         "             'claimed ' .. node .. ' 1 ' .. now .. ' ' .. run .. ' 0 -')\n"
                         "  redis.call('sadd', ARGV[8], ARGV[9])\n"
                         "end\n"
                         "return {1, busy}\n";

/* KEYS: busy:J, claimed:J. ARGV: member, tick. The answers of claim_src's
 * retry ({4}, {5}, {6}), or {0} when member made no such claim. */
static const char lookup_src[] =
    "if redis.call('zscore', KEYS[1], ARGV[1]) then return {4} end\n"
    "local function rec_node(m) return string.match(m, '^(.*)/') or m end\n"
    "local mine = redis.call('type', KEYS[2]).ok == 'hash' and\n"
    "             redis.call('hget', KEYS[2], rec_node(ARGV[1]))\n"
    "if mine == ARGV[2] .. ' 3 ' .. ARGV[1] then return {5} end\n"
    "if mine == ARGV[2] .. ' 1 ' .. ARGV[1] then return {6} end\n"
    "return {0}\n";

/* KEYS: leader, busy keys... ARGV: token, ttl ms, mode (lease, handover,
 * own), members... (one per busy key). Returns -1 when token no longer
 * holds the lease, else the 1-based indexes of the members no longer
 * there. */
static const char refresh_src[] =
    "local t = redis.call('time')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local exp = now + tonumber(ARGV[2])\n"
    "if ARGV[3] ~= 'own' then\n"
    "  if redis.call('get', KEYS[1]) ~= ARGV[1] then return -1 end\n"
    "  if ARGV[3] == 'lease' then exp = now + redis.call('pttl', KEYS[1]) end\n"
    "end\n"
    "local lost = {}\n"
    "for i = 2, #KEYS do\n"
    "  local m = ARGV[i + 2]\n"
    "  local s = redis.call('zscore', KEYS[i], m)\n"
    "  if s and tonumber(s) > now then\n"
    "    redis.call('zadd', KEYS[i], exp, m)\n"
    "    redis.call('pexpire', KEYS[i], exp - now + 3600000)\n"
    "  else\n"
    "    redis.call('zrem', KEYS[i], m)\n"
    "    lost[#lost + 1] = i - 1\n"
    "  end\n"
    "end\n"
    "return lost\n";

/* KEYS: busy:J. ARGV: member, ended channel (keys.h), job. */
static const char release_src[] = "redis.call('zrem', KEYS[1], ARGV[1])\n"
                                  "redis.call('publish', ARGV[2], 'ended ' .. ARGV[3])\n"
                                  "return 1\n";

const char *claim_result_name(enum claim_result r)
{
    static const char *const names[] = {"ok",    "skipped", "busy",        "taken",
                                        "not_leader", "error", "ours",    "not_durable",
                                        "ours_skipped", "ours_expired", "full"};
    return ((int)r >= 0 && (size_t)r < sizeof names / sizeof names[0]) ? names[r] : "?";
}

void claim_reply_free(struct claim_reply *r)
{
    baton_answers_free(r->answers);
    memset(r, 0, sizeof *r);
}

/* The code of one master's answer to a claim script ({code} or {code,
 * {members...}}), or -2 when it is not one. */
static int answer_code(const struct baton_reply *r)
{
    if (r == NULL || r->type != BATON_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != BATON_REPLY_INTEGER || r->element[0]->integer < -1 ||
        r->element[0]->integer > 8)
        return -2;
    return (int)r->element[0]->integer;
}

/* Adds the members of element 1 of r to out->busy, once each. */
static void take_busy(struct claim_reply *out, const struct baton_reply *r)
{
    if (r == NULL || r->type != BATON_REPLY_ARRAY || r->elements < 2 ||
        r->element[1]->type != BATON_REPLY_ARRAY)
        return;
    const struct baton_reply *b = r->element[1];
    for (size_t i = 0; i < b->elements && out->nbusy < 32; i++) {
        if (b->element[i]->type != BATON_REPLY_STRING)
            continue;
        bool seen = false;
        for (size_t k = 0; k < out->nbusy && !seen; k++)
            seen = strcmp(out->busy[k], b->element[i]->str) == 0;
        if (!seen)
            out->busy[out->nbusy++] = b->element[i]->str;
    }
}

enum claim_result claim_reduce(struct claim_reply *out, enum claim_mode mode)
{
    const struct baton_answers *a = out->answers;
    /* by code + 1: not leader, taken, ok, busy, skipped, ours, ours
     * skipped, ours expired, max_running reached, pool full */
    int n[10] = {0};
    int unanswered = 0, bad = 0;
    char why[256];

    if (a == NULL)
        return CLAIM_ERROR;
    out->majority = a->majority;
    for (int i = 0; i < a->n; i++) {
        const struct baton_answer *v = &a->v[i];
        if (v->rc == BATON_ENOTDURABLE)
            return CLAIM_NOT_DURABLE; /* min_replicas: one server, never a quorum */
        if (v->rc != BATON_OK || !v->counts) {
            unanswered++;
            continue;
        }
        int code = answer_code(v->reply);
        if (code == -2) {
            bad++;
            continue;
        }
        n[code + 1]++;
        take_busy(out, v->reply);
    }
    int ok = n[2], busy = n[3], skipped = n[4], ours = n[5], ours_skipped = n[6];
    int expired = n[7];
    int claimed = ok + skipped + ours + ours_skipped + expired;
    /* The masters where our member is registered now */
    int registered = ok + ours;
    if (busy > 0 && mode == CLAIM_RUN_OR_WAIT) {
        out->partial = claimed > 0; /* retried with the same member: OURS there */
        return CLAIM_BUSY;
    }
    if (n[8] + n[9] > 0) { /* a limit reached on any master of the answers (runlimits.h) */
        out->partial = claimed > 0;
        out->pool_full = n[9] > 0;
        return CLAIM_FULL;
    }
    if (claimed >= a->majority) {
        if (skipped + ours_skipped > 0 || mode == CLAIM_SKIP) {
            /* forbid: a run alive on any master of a majority is alive */
            out->undo = registered > 0;
            return skipped > 0 || ours_skipped == 0 ? CLAIM_SKIPPED : CLAIM_OURS_SKIPPED;
        }
        if (registered >= a->majority)
            return ok > 0 ? CLAIM_OK : CLAIM_OURS;
        /* Claimed by an earlier attempt whose registration expired on too
         * many masters to hold (one server: {6}): recorded, not run */
        out->undo = registered > 0;
        return CLAIM_OURS_EXPIRED;
    }
    if (n[0] >= a->majority) {
        out->undo = registered > 0;
        return CLAIM_NOT_LEADER;
    }
    if (n[1] >= a->majority) { /* a majority passed the tick: nobody can claim it */
        out->undo = registered > 0;
        return CLAIM_TAKEN;
    }
    /* Undecided: too few answers for either. Retried with the same member,
     * it completes where it applied (OURS) as more masters answer. */
    out->partial = claimed > 0;
    if (a->n == 1) /* one server: the client's error says why (claim_tick) */
        return CLAIM_ERROR;
    baton_answers_describe(a, why, sizeof why);
    snprintf(out->why, sizeof out->why,
             "claim undecided: %d of %d masters claimed it (%d needed), %d had it claimed "
             "already, %d had another leader, %d unanswered or quarantined%s (%s)",
             claimed, a->n, a->majority, n[1], n[0], unanswered,
             bad > 0 ? ", some with an unexpected reply" : "", why);
    return CLAIM_ERROR;
}

enum claim_result claim_tick(struct baton_client *c, const char *group, const char *job,
                             const char *leader_key, const char *token, int64_t tick,
                             enum claim_mode mode, const char *member,
                             const struct claim_limits *lim, struct claim_reply *out)
{
    static const char *const modes[] = {"run", "wait", "skip-if-busy", "skip", "register"};
    char *last = group_key(group, "last:%s", job), *busy = group_key(group, "busy:%s", job);
    char *claimed = group_key(group, "claimed:%s", job), *pool[LIMITS_POOL_MAX];
    char *akey = NULL, *index = NULL;
    char tickbuf[24], maxbuf[24], poolbuf[24];
    const char *keys[4 + LIMITS_POOL_MAX];
    size_t npool = 0;
    enum claim_result res = CLAIM_ERROR;

    memset(out, 0, sizeof *out);
    if (last == NULL || busy == NULL || claimed == NULL)
        goto out;
    if (lim != NULL && lim->pool_limit > 0) {
        if (lim->npool > LIMITS_POOL_MAX) {
            snprintf(out->why, sizeof out->why, "a pool of more than %d jobs", LIMITS_POOL_MAX);
            goto out;
        }
        for (; npool < lim->npool; npool++)
            if ((keys[4 + npool] = pool[npool] = group_key(group, "busy:%s", lim->pool_jobs[npool])) ==
                NULL)
                goto out;
    }
    snprintf(tickbuf, sizeof tickbuf, "%" PRId64, tick);
    snprintf(maxbuf, sizeof maxbuf, "%d", lim != NULL ? lim->max_running : 0);
    snprintf(poolbuf, sizeof poolbuf, "%d", npool > 0 ? lim->pool_limit : 0);
    keys[0] = leader_key;
    keys[1] = last;
    keys[2] = busy;
    keys[3] = claimed;
    bool disp = lim != NULL && lim->dispatch && mode != CLAIM_REGISTER;
    if (disp && ((akey = group_key(group, "assign:%s", job)) == NULL ||
                 (index = group_key(group, "assigned")) == NULL))
        goto out;
    const char *args[9] = {token,  tickbuf, modes[mode],           member != NULL ? member : "",
                           maxbuf, poolbuf, disp ? akey : "", disp ? index : "",
                           job};
    int rc = baton_client_eval_all(c, claim_src, 4 + (int)npool, keys, 9, args, &out->answers);
    if (rc != BATON_OK && out->answers == NULL) {
        snprintf(out->why, sizeof out->why, "%s", baton_client_errstr(c));
        goto out;
    }
    res = claim_reduce(out, mode);
    if (res == CLAIM_ERROR && out->why[0] == '\0')
        snprintf(out->why, sizeof out->why, "%s", baton_client_errstr(c));
out:
    for (size_t i = 0; i < npool; i++)
        free(pool[i]);
    free(last);
    free(busy);
    free(claimed);
    free(akey);
    free(index);
    return res;
}

enum claim_result claim_lookup(struct baton_client *c, const char *group, const char *job,
                               int64_t tick, const char *member)
{
    char *busy = group_key(group, "busy:%s", job), *claimed = group_key(group, "claimed:%s", job);
    char tickbuf[24];
    struct baton_answers *a = NULL;
    enum claim_result res = CLAIM_ERROR;
    if (busy == NULL || claimed == NULL)
        goto out;
    snprintf(tickbuf, sizeof tickbuf, "%" PRId64, tick);
    /* A read: no WAIT for replicas (baton_client_eval_all() would add one) */
    const char *argv[7] = {"EVAL", lookup_src, "2", busy, claimed, member, tickbuf};
    if (baton_client_command_all(c, 7, argv, NULL, &a) != BATON_OK)
        goto out;
    int n[8] = {0}, valid = 0; /* by code + 1, as in claim_reduce() */
    for (int i = 0; i < a->n; i++) {
        int code = a->v[i].rc == BATON_OK && a->v[i].counts ? answer_code(a->v[i].reply) : -2;
        if (code == 0 || (code >= 4 && code <= 6)) {
            n[code + 1]++;
            valid++;
        }
    }
    int yes = n[5] + n[6] + n[7];
    /* Applied on a majority: ours, as a retry of the claim would find it.
     * On so few that even the masters that did not answer cannot make a
     * majority: not applied (the next leader claims the tick). */
    if (yes >= a->majority)
        res = n[6] > 0 ? CLAIM_OURS_SKIPPED : n[5] >= a->majority ? CLAIM_OURS : CLAIM_OURS_EXPIRED;
    else if (yes + (a->n - valid) < a->majority)
        res = CLAIM_TAKEN;
out:
    baton_answers_free(a);
    free(busy);
    free(claimed);
    return res;
}

/* KEYS: leader, last:J... ARGV: token, mark for each last:J. */
static const char start_marks_src[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return -1 end\n"
    "for i = 2, #KEYS do redis.call('set', KEYS[i], ARGV[i], 'NX') end\n"
    "return 0\n";

static int cmp_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x > y ? -1 : x < y;
}

/* The mark the masters' answers to an MGET give for its element elem (see
 * claim_read_marks). Returns true with *v, or false when there is none. */
static bool mark_of(const struct baton_answers *a, size_t elem, int64_t now_s, int64_t *v)
{
    int64_t marks[BATON_QUORUM_MAX];
    int answered = 0, present = 0;
    for (int i = 0; i < a->n; i++) {
        const struct baton_reply *rep = a->v[i].reply;
        if (a->v[i].rc != BATON_OK || !a->v[i].counts)
            continue;
        rep = rep->type == BATON_REPLY_ARRAY && elem < rep->elements ? rep->element[elem] : NULL;
        answered++;
        char *end = NULL;
        long long x =
            rep != NULL && rep->type == BATON_REPLY_STRING ? strtoll(rep->str, &end, 10) : 0;
        if (end == NULL || *end != '\0' || x <= 0 || x > now_s + 86400)
            continue;
        marks[present++] = x;
    }
    if (present == 0)
        return false;
    qsort(marks, (size_t)present, sizeof marks[0], cmp_desc);
    int k = answered - (a->n - a->majority);
    *v = k >= 1 && k <= present ? marks[k - 1] : marks[0];
    return true;
}

int claim_read_marks(struct baton_client *c, const char *group, const char *const *jobs,
                     size_t n, int64_t now_s, bool *has, int64_t *v)
{
    const char *argv[CLAIM_MARKS_MAX + 1];
    char *keys[CLAIM_MARKS_MAX];
    struct baton_answers *a = NULL;
    size_t k = 0;
    int rc = BATON_OK;
    if (n == 0 || n > CLAIM_MARKS_MAX)
        return n == 0 ? BATON_OK : BATON_EINVAL;
    argv[0] = "MGET";
    for (; k < n && rc == BATON_OK; k++) {
        if ((keys[k] = group_key(group, "last:%s", jobs[k])) == NULL)
            rc = BATON_ENOMEM;
        argv[k + 1] = keys[k];
    }
    if (rc == BATON_OK)
        rc = baton_client_command_all(c, (int)n + 1, argv, NULL, &a);
    for (int i = 0; rc == BATON_OK && i < a->n; i++)
        if (a->v[i].rc == BATON_OK &&
            (a->v[i].reply->type != BATON_REPLY_ARRAY || a->v[i].reply->elements != n))
            rc = BATON_EPROTO;
    for (size_t i = 0; rc == BATON_OK && i < n; i++) {
        v[i] = 0;
        has[i] = mark_of(a, i, now_s, &v[i]);
    }
    baton_answers_free(a);
    for (size_t i = 0; i < k; i++)
        free(keys[i]);
    return rc;
}

int claim_start_marks(struct baton_client *c, const char *group, const char *leader_key,
                      const char *token, const char *const *jobs, const int64_t *marks, size_t n)
{
    const char *keys[REFRESH_MAX + 1], *args[REFRESH_MAX + 1];
    char *owned[REFRESH_MAX], vals[REFRESH_MAX][24];
    size_t made = 0;
    int rc = EIO;
    if (n == 0)
        return 0;
    if (n > REFRESH_MAX)
        return EIO;
    keys[0] = leader_key;
    args[0] = token;
    for (; made < n; made++) {
        if ((owned[made] = group_key(group, "last:%s", jobs[made])) == NULL)
            goto out;
        keys[made + 1] = owned[made];
        snprintf(vals[made], sizeof vals[made], "%" PRId64, marks[made]);
        args[made + 1] = vals[made];
    }
    struct baton_answers *a = NULL;
    int e = baton_client_eval_all(c, start_marks_src, (int)n + 1, keys, (int)n + 1, args, &a);
    if (e == BATON_OK)
        e = baton_answers_check(c, a);
    /* Not durable: the mark may be lost with a failover, which is where
     * we were before writing it. Over a quorum: written on a majority. */
    if (e == BATON_OK || e == BATON_ENOTDURABLE)
        rc = 0;
    baton_answers_free(a);
out:
    for (size_t i = 0; i < made; i++)
        free(owned[i]);
    return rc;
}

/* Reduces the masters' answers to a refresh of n runs: a run is confirmed
 * when a majority of the counted masters still had it (and extended it),
 * lost when so few had it that even the masters that did not answer
 * cannot make a majority. Returns 0 (every run confirmed or lost),
 * BATON_ELOST (a majority has another leader), EIO (undecided: retry) or
 * EPROTO. */
static int refresh_reduce(const struct baton_answers *a, size_t n, bool *lost)
{
    int notleader = 0, valid = 0;
    int have[REFRESH_MAX] = {0};
    for (int i = 0; i < a->n; i++) {
        const struct baton_reply *r = a->v[i].reply;
        if (a->v[i].rc != BATON_OK || !a->v[i].counts)
            continue;
        if (r->type == BATON_REPLY_INTEGER && r->integer == -1) {
            notleader++;
            continue;
        }
        if (r->type != BATON_REPLY_ARRAY)
            return BATON_EPROTO;
        bool gone[REFRESH_MAX] = {false};
        for (size_t k = 0; k < r->elements; k++) {
            const struct baton_reply *e = r->element[k];
            if (e->type != BATON_REPLY_INTEGER || e->integer < 1 || (size_t)e->integer > n)
                return BATON_EPROTO;
            gone[e->integer - 1] = true;
        }
        valid++;
        for (size_t k = 0; k < n; k++)
            have[k] += !gone[k];
    }
    if (notleader >= a->majority)
        return BATON_ELOST;
    int unknown = a->n - valid; /* not answered, quarantined, or another leader */
    int rc = BATON_OK;
    for (size_t k = 0; k < n; k++) {
        if (have[k] >= a->majority)
            continue;
        if (have[k] + unknown < a->majority)
            lost[k] = true;
        else
            rc = BATON_EIO;
    }
    return rc;
}

static int refresh_batch(struct baton_client *c, const char *group, const char *leader_key,
                         const char *token, enum claim_refresh_mode mode, int64_t ttl_ms,
                         const struct claim_entry *runs, size_t n, bool *lost)
{
    static const char *const modes[] = {"lease", "handover", "own"};
    const char *keys[REFRESH_MAX + 1], *args[REFRESH_MAX + 3];
    char *owned[REFRESH_MAX];
    char ttl[24];
    struct baton_answers *a = NULL;
    int rc = BATON_ENOMEM;
    size_t made = 0;

    snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms);
    keys[0] = leader_key;
    args[0] = token != NULL ? token : "";
    args[1] = ttl;
    args[2] = modes[mode];
    for (; made < n; made++) {
        if ((owned[made] = group_key(group, "busy:%s", runs[made].job)) == NULL)
            goto out;
        keys[made + 1] = owned[made];
        args[made + 3] = runs[made].member;
    }
    rc = baton_client_eval_all(c, refresh_src, (int)n + 1, keys, (int)n + 3, args, &a);
    if (rc == BATON_OK)
        rc = refresh_reduce(a, n, lost);
out:
    baton_answers_free(a);
    for (size_t i = 0; i < made; i++)
        free(owned[i]);
    return rc;
}

int claim_refresh(struct baton_client *c, const char *group, const char *leader_key,
                  const char *token, enum claim_refresh_mode mode, int64_t ttl_ms,
                  const struct claim_entry *runs, size_t n, bool *lost)
{
    for (size_t i = 0; i < n; i++)
        lost[i] = false;
    for (size_t at = 0; at < n; at += REFRESH_MAX) {
        size_t k = n - at < REFRESH_MAX ? n - at : REFRESH_MAX;
        int rc =
            refresh_batch(c, group, leader_key, token, mode, ttl_ms, runs + at, k, lost + at);
        if (rc != BATON_OK)
            return rc;
    }
    return BATON_OK;
}

int claim_release(struct baton_client *c, const char *group, const char *job, const char *member)
{
    char *busy = group_key(group, "busy:%s", job), *chan = group_key(group, "ended");
    struct baton_answers *a = NULL;
    int rc = BATON_ENOMEM;
    if (busy != NULL && chan != NULL) {
        const char *keys[1] = {busy};
        const char *args[3] = {member, chan, job};
        rc = baton_client_eval_all(c, release_src, 1, keys, 3, args, &a);
        if (rc == BATON_OK)
            rc = baton_answers_check(c, a);
    }
    baton_answers_free(a);
    free(busy);
    free(chan);
    return rc;
}

int claim_request_stop(struct baton_client *c, const char *group, const char *member)
{
    char *chan = group_key(group, "events"), *msg = NULL;
    struct baton_answers *a = NULL;
    int rc = BATON_ENOMEM;
    if (chan != NULL && asprintf(&msg, "stop %s", member) >= 0) {
        const char *argv[3] = {"PUBLISH", chan, msg};
        rc = baton_client_command_all(c, 3, argv, NULL, &a);
    }
    baton_answers_free(a);
    free(msg);
    free(chan);
    return rc;
}
