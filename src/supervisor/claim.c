/* claim.c -- see claim.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claim.h"
#include "keys.h"

#define REFRESH_MAX 256 /* runs refreshed per script call */

/* KEYS: leader, last:J, busy:J, claimed:J. ARGV: token, tick, mode, member.
 * Returns {-1} not the leader, {0} taken, {1, busy} claimed and registered,
 * {2, busy} busy (not claimed), {3, busy} claimed as skipped, {4} claimed
 * and registered by an earlier attempt with the same member (its answer
 * was lost), {5} claimed as skipped by such an attempt, {6} claimed to run
 * by such an attempt whose registration has expired. */
static const char claim_src[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return {-1} end\n"
    "if ARGV[3] == 'register' then\n"
    "  local t = redis.call('time')\n"
    "  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "  local left = redis.call('pttl', KEYS[1])\n"
    "  redis.call('zadd', KEYS[3], now + left, ARGV[4])\n"
    "  redis.call('pexpire', KEYS[3], left + 3600000)\n"
    "  return {1, {}}\n"
    "end\n"
    "local last = redis.call('get', KEYS[2])\n"
    "if last and tonumber(last) >= tonumber(ARGV[2]) then\n"
    "  if ARGV[4] ~= '' then\n"
    "    if redis.call('zscore', KEYS[3], ARGV[4]) then return {4} end\n"
    "    local mine = redis.call('get', KEYS[4])\n"
    "    if mine == ARGV[2] .. ' 3 ' .. ARGV[4] then return {5} end\n"
    "    if mine == ARGV[2] .. ' 1 ' .. ARGV[4] then return {6} end\n"
    "  end\n"
    "  return {0}\n"
    "end\n"
    "local t = redis.call('time')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "redis.call('zremrangebyscore', KEYS[3], '-inf', now)\n"
    "local busy = redis.call('zrange', KEYS[3], 0, 31)\n"
    "local mode = ARGV[3]\n"
    "if #busy > 0 and mode == 'wait' then return {2, busy} end\n"
    "redis.call('set', KEYS[2], ARGV[2])\n"
    "if mode == 'skip' or (#busy > 0 and mode == 'skip-if-busy') then\n"
    "  redis.call('set', KEYS[4], ARGV[2] .. ' 3 ' .. ARGV[4])\n"
    "  return {3, busy}\n"
    "end\n"
    "redis.call('set', KEYS[4], ARGV[2] .. ' 1 ' .. ARGV[4])\n"
    "local left = redis.call('pttl', KEYS[1])\n"
    "redis.call('zadd', KEYS[3], now + left, ARGV[4])\n"
    "redis.call('pexpire', KEYS[3], left + 3600000)\n"
    "return {1, busy}\n";

/* KEYS: busy:J, claimed:J. ARGV: member, tick. The answers of claim_src's
 * retry ({4}, {5}, {6}), or {0} when member made no such claim. */
static const char lookup_src[] =
    "if redis.call('zscore', KEYS[1], ARGV[1]) then return {4} end\n"
    "local mine = redis.call('get', KEYS[2])\n"
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

/* KEYS: busy:J. ARGV: member, events channel, job. */
static const char release_src[] = "redis.call('zrem', KEYS[1], ARGV[1])\n"
                                  "redis.call('publish', ARGV[2], 'ended ' .. ARGV[3])\n"
                                  "return 1\n";

/* KEYS: busy:J. ARGV: member to leave out ('' for none). */
static const char busy_src[] =
    "local t = redis.call('time')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "redis.call('zremrangebyscore', KEYS[1], '-inf', now)\n"
    "local out = {}\n"
    "for _, m in ipairs(redis.call('zrange', KEYS[1], 0, 31)) do\n"
    "  if m ~= ARGV[1] then out[#out + 1] = m end\n"
    "end\n"
    "return {1, out}\n";

const char *claim_result_name(enum claim_result r)
{
    static const char *const names[] = {"ok",    "skipped", "busy",        "taken",
                                        "not_leader", "error", "ours",    "not_durable",
                                        "ours_skipped", "ours_expired"};
    return ((int)r >= 0 && (size_t)r < sizeof names / sizeof names[0]) ? names[r] : "?";
}

void claim_reply_free(struct claim_reply *r)
{
    baton_reply_free(r->reply);
    memset(r, 0, sizeof *r);
}

/* Fills out->busy from element 1 of a {code, {members...}} reply. */
static void take_busy(struct claim_reply *out)
{
    const struct baton_reply *r = out->reply;
    if (r->type != BATON_REPLY_ARRAY || r->elements < 2 || r->element[1]->type != BATON_REPLY_ARRAY)
        return;
    const struct baton_reply *b = r->element[1];
    for (size_t i = 0; i < b->elements && out->nbusy < 32; i++)
        if (b->element[i]->type == BATON_REPLY_STRING)
            out->busy[out->nbusy++] = b->element[i]->str;
}

enum claim_result claim_parse(struct claim_reply *out)
{
    const struct baton_reply *r = out->reply;
    enum claim_result res;
    if (r == NULL || r->type != BATON_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != BATON_REPLY_INTEGER)
        return CLAIM_ERROR;
    switch (r->element[0]->integer) {
    case -1: res = CLAIM_NOT_LEADER; break;
    case 0: res = CLAIM_TAKEN; break;
    case 1: res = CLAIM_OK; break;
    case 2: res = CLAIM_BUSY; break;
    case 3: res = CLAIM_SKIPPED; break;
    case 4: res = CLAIM_OURS; break;
    case 5: res = CLAIM_OURS_SKIPPED; break;
    case 6: res = CLAIM_OURS_EXPIRED; break;
    default: return CLAIM_ERROR;
    }
    take_busy(out);
    return res;
}

enum claim_result claim_tick(struct baton_client *c, const char *group, const char *job,
                             const char *leader_key, const char *token, int64_t tick,
                             enum claim_mode mode, const char *member, struct claim_reply *out)
{
    static const char *const modes[] = {"run", "wait", "skip-if-busy", "skip", "register"};
    char *last = group_key(group, "last:%s", job), *busy = group_key(group, "busy:%s", job);
    char *claimed = group_key(group, "claimed:%s", job);
    char tickbuf[24];
    enum claim_result res = CLAIM_ERROR;

    memset(out, 0, sizeof *out);
    if (last == NULL || busy == NULL || claimed == NULL)
        goto out;
    snprintf(tickbuf, sizeof tickbuf, "%" PRId64, tick);
    const char *keys[4] = {leader_key, last, busy, claimed};
    const char *args[4] = {token, tickbuf, modes[mode], member != NULL ? member : ""};
    int rc = baton_client_eval(c, claim_src, 4, keys, 4, args, &out->reply);
    res = rc == BATON_ENOTDURABLE ? CLAIM_NOT_DURABLE : rc == BATON_OK ? claim_parse(out)
                                                                       : CLAIM_ERROR;
out:
    free(last);
    free(busy);
    free(claimed);
    return res;
}

enum claim_result claim_lookup(struct baton_client *c, const char *group, const char *job,
                               int64_t tick, const char *member)
{
    char *busy = group_key(group, "busy:%s", job), *claimed = group_key(group, "claimed:%s", job);
    char tickbuf[24];
    struct claim_reply out = {0};
    enum claim_result res = CLAIM_ERROR;
    if (busy == NULL || claimed == NULL)
        goto out;
    snprintf(tickbuf, sizeof tickbuf, "%" PRId64, tick);
    const char *keys[2] = {busy, claimed};
    const char *args[2] = {member, tickbuf};
    /* A read: no WAIT for replicas (baton_client_eval() would add one). */
    const char *argv[7] = {"EVAL", lookup_src, "2", keys[0], keys[1], args[0], args[1]};
    if (baton_client_command(c, 7, argv, NULL, &out.reply) == BATON_OK)
        res = claim_parse(&out);
out:
    claim_reply_free(&out);
    free(busy);
    free(claimed);
    return res;
}

/* KEYS: leader, last:J... ARGV: token, mark for each last:J. */
static const char start_marks_src[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return -1 end\n"
    "for i = 2, #KEYS do redis.call('set', KEYS[i], ARGV[i], 'NX') end\n"
    "return 0\n";

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
    struct baton_reply *reply = NULL;
    int e = baton_client_eval(c, start_marks_src, (int)n + 1, keys, (int)n + 1, args, &reply);
    /* Not durable: the mark may be lost with a failover, which is where
     * we were before writing it. */
    if (e == BATON_OK || e == BATON_ENOTDURABLE)
        rc = 0;
    baton_reply_free(reply);
out:
    for (size_t i = 0; i < made; i++)
        free(owned[i]);
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
    struct baton_reply *rep = NULL;
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
    rc = baton_client_eval(c, refresh_src, (int)n + 1, keys, (int)n + 3, args, &rep);
    if (rc != BATON_OK)
        goto out;
    if (rep->type == BATON_REPLY_INTEGER && rep->integer == -1) {
        rc = BATON_ELOST;
        goto out;
    }
    rc = BATON_EPROTO;
    if (rep->type != BATON_REPLY_ARRAY)
        goto out;
    for (size_t i = 0; i < rep->elements; i++) {
        const struct baton_reply *e = rep->element[i];
        if (e->type != BATON_REPLY_INTEGER || e->integer < 1 || (size_t)e->integer > n)
            goto out;
        lost[e->integer - 1] = true;
    }
    rc = BATON_OK;
out:
    baton_reply_free(rep);
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
    char *busy = group_key(group, "busy:%s", job), *chan = group_key(group, "events");
    struct baton_reply *rep = NULL;
    int rc = BATON_ENOMEM;
    if (busy != NULL && chan != NULL) {
        const char *keys[1] = {busy};
        const char *args[3] = {member, chan, job};
        rc = baton_client_eval(c, release_src, 1, keys, 3, args, &rep);
    }
    baton_reply_free(rep);
    free(busy);
    free(chan);
    return rc;
}

int claim_busy(struct baton_client *c, const char *group, const char *job, const char *except,
               struct claim_reply *out)
{
    char *busy = group_key(group, "busy:%s", job);
    int rc = BATON_ENOMEM;
    memset(out, 0, sizeof *out);
    if (busy != NULL) {
        const char *keys[1] = {busy};
        const char *args[1] = {except != NULL ? except : ""};
        rc = baton_client_eval(c, busy_src, 1, keys, 1, args, &out->reply);
        if (rc == BATON_OK)
            take_busy(out);
    }
    free(busy);
    return rc;
}

int claim_request_stop(struct baton_client *c, const char *group, const char *member)
{
    char *chan = group_key(group, "events"), *msg = NULL;
    struct baton_reply *rep = NULL;
    int rc = BATON_ENOMEM;
    if (chan != NULL && asprintf(&msg, "stop %s", member) >= 0) {
        const char *argv[3] = {"PUBLISH", chan, msg};
        rc = baton_client_command(c, 3, argv, NULL, &rep);
    }
    baton_reply_free(rep);
    free(msg);
    free(chan);
    return rc;
}
