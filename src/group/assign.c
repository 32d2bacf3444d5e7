/* assign.c -- see assign.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign.h"
#include "baton.h"
#include "keys.h"

/* ------------------------------------------------------------------------ */
/* The choice */

bool assign_has_labels(const struct assign_node *n, const char *const *labels, size_t nlabels)
{
    for (size_t i = 0; i < nlabels; i++) {
        bool has = false;
        for (size_t k = 0; k < n->nlabels && !has; k++)
            has = strcmp(n->labels[k], labels[i]) == 0;
        if (!has)
            return false;
    }
    return true;
}

/* FNV-1a, 64 bits, over s continuing from h. */
static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s != '\0'; s++) {
        h ^= (unsigned char)*s;
        h *= UINT64_C(1099511628211);
    }
    return h;
}

/* A final mix (splitmix64's), so that seeds one apart spread. */
static uint64_t mix(uint64_t h)
{
    h ^= h >> 30;
    h *= UINT64_C(0xbf58476d1ce4e5b9);
    h ^= h >> 27;
    h *= UINT64_C(0x94d049bb133111eb);
    return h ^ (h >> 31);
}

uint64_t assign_seed(const char *job, int64_t tick, const char *salt)
{
    char t[24];
    snprintf(t, sizeof t, " %" PRId64 " ", tick);
    return mix(fnv(fnv(fnv(UINT64_C(14695981039346656037), job), t), salt != NULL ? salt : ""));
}

/* c may be chosen: alive, taking runs, with room, carrying the labels,
 * and not avoid (NULL: none). */
static bool fits(const struct assign_node *c, const char *const *labels, size_t nlabels,
                 const char *avoid)
{
    return c->alive && c->capacity > 0 && c->in_use < c->capacity &&
           assign_has_labels(c, labels, nlabels) && (avoid == NULL || strcmp(c->node, avoid) != 0);
}

/* The avoid that applies: avoid, unless no other node fits. */
static const char *avoiding(const struct assign_node *v, size_t n, const char *const *labels,
                            size_t nlabels, const char *avoid)
{
    for (size_t i = 0; avoid != NULL && i < n; i++)
        if (fits(&v[i], labels, nlabels, avoid))
            return avoid;
    return NULL;
}

long assign_choose(const struct assign_node *v, size_t n, const char *const *labels, size_t nlabels,
                   const char *avoid, uint64_t seed)
{
    long best = -1;
    uint64_t best_h = 0;
    bool carried = false;
    avoid = avoiding(v, n, labels, nlabels, avoid);
    for (size_t i = 0; i < n; i++) {
        const struct assign_node *c = &v[i];
        carried = carried || (c->alive && c->capacity > 0 && assign_has_labels(c, labels, nlabels));
        if (!fits(c, labels, nlabels, avoid))
            continue;
        /* credits are bounded by the capacities' sum (<= 1e6 a node): no overflow */
        uint64_t h = mix(fnv(seed, c->node));
        int64_t mine = c->credit + c->capacity,
                theirs = best < 0 ? 0 : v[best].credit + v[best].capacity;
        if (best < 0 || mine > theirs ||
            (mine == theirs &&
             (h < best_h || (h == best_h && strcmp(c->node, v[best].node) < 0)))) {
            best = (long)i;
            best_h = h;
        }
    }
    return best >= 0 ? best : carried ? ASSIGN_NO_ROOM : ASSIGN_NO_MEMBER;
}

void assign_charge(struct assign_node *v, size_t n, const char *const *labels, size_t nlabels,
                   const char *avoid, long chosen)
{
    int64_t total = 0;
    avoid = avoiding(v, n, labels, nlabels, avoid);
    for (size_t i = 0; i < n; i++)
        if (fits(&v[i], labels, nlabels, avoid)) {
            v[i].credit += v[i].capacity;
            total += v[i].capacity;
        }
    if (chosen >= 0 && (size_t)chosen < n) {
        v[chosen].credit -= total;
        v[chosen].in_use++;
    }
}

/* ------------------------------------------------------------------------ */
/* Values */

static const char *const state_names[] = {"offered", "accepted", "started",
                                          "claimed", "retry",    "skipped"};

const char *assign_state_name(enum assign_state s)
{
    return (int)s >= 0 && s <= ASSIGN_SKIPPED ? state_names[s] : "?";
}

bool assign_parse(const char *field, const char *value, struct assign *a)
{
    char state[16], node[sizeof a->node], run[sizeof a->run_id], died[sizeof a->died] = "-";
    int attempt, moves, used = 0, used2 = 0;
    int64_t at, tick;
    if (strlen(field) >= sizeof a->field || strlen(value) >= sizeof a->value)
        return false;
    char f[sizeof a->field], v[sizeof a->value]; /* field or value may be a's own */
    snprintf(f, sizeof f, "%s", field);
    snprintf(v, sizeof v, "%s", value);
    field = f;
    value = v;
    memset(a, 0, sizeof *a);
    /* widths: sizeof - 1 of each buffer */
    if (sscanf(value, "%15s %159s %d %" SCNd64 " %95s %d%n", state, node, &attempt, &at, run,
               &moves, &used) != 6 ||
        attempt < 1 || at < 0 || moves < 0)
        return false;
    /* the 7th part (who died before starting it) is absent from an older
     * baton's values */
    if (value[used] != '\0' &&
        (sscanf(value + used, " %159s%n", died, &used2) != 1 || value[used + used2] != '\0'))
        return false;
    int s = -1;
    for (int i = 0; i <= ASSIGN_SKIPPED; i++)
        if (strcmp(state, state_names[i]) == 0)
            s = i;
    char *end = NULL;
    tick = strtoll(field, &end, 10);
    if (s < 0 || end == field || (*end != '\0' && *end != '/') || tick <= 0)
        return false;
    if (*end == '/' && strcmp(end + 1, node) != 0)
        return false; /* run_on: all: the field names its node */
    snprintf(a->field, sizeof a->field, "%s", field);
    snprintf(a->value, sizeof a->value, "%s", value);
    snprintf(a->node, sizeof a->node, "%s", node);
    snprintf(a->run_id, sizeof a->run_id, "%s", run);
    if (strcmp(died, "-") != 0)
        snprintf(a->died, sizeof a->died, "%s", died);
    a->tick = tick;
    a->state = (enum assign_state)s;
    a->attempt = attempt;
    a->at_ms = at;
    a->moves = moves;
    return true;
}

bool assign_format(struct assign *a)
{
    int n = snprintf(a->value, sizeof a->value, "%s %s %d %" PRId64 " %s %d %s",
                     assign_state_name(a->state), a->node, a->attempt, a->at_ms, a->run_id,
                     a->moves, a->died[0] != '\0' ? a->died : "-");
    return n > 0 && (size_t)n < sizeof a->value;
}

/* ------------------------------------------------------------------------ */
/* Scripts. Keys other than KEYS[] are built from ARGV's prefix
 * "baton:{G}:": the same slot ({G}), one server only. */

#define ASSIGN_STR_(x) #x
#define ASSIGN_STR(x)  ASSIGN_STR_(x)
/* ASSIGN_OFFER_MS, for the scripts */
#define OFFER_MS_LUA "local offer_ms = " ASSIGN_STR(ASSIGN_OFFER_MS) "\n"

#define NOW_LUA                                                                                    \
    "local t = redis.call('time')\n"                                                               \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

/* parse(v) -> state, node, attempt, at, run, moves, died (the node that
 * accepted it and died before starting it, or '-'; absent from an older
 * baton's values); reofferable(v, busy): the claim's marker, a node's
 * tick skipped (run_on: all), an offer past its deadline, a retry due, or
 * a run whose registration is gone;
 * unindex(job, akey): job leaves the index once akey is empty. */
#define PARSE_LUA                                                                                  \
    "local function parse(v)\n"                                                                    \
    "  local s, node, att, at, run, moves, rest =\n"                                               \
    "    string.match(v, '^(%S+) (%S+) (%d+) (%d+) (%S+) (%d+)(.*)$')\n"                           \
    "  if not s then return nil end\n"                                                             \
    "  local died = '-'\n"                                                                         \
    "  if rest ~= '' then\n"                                                                       \
    "    died = string.match(rest, '^ (%S+)$')\n"                                                  \
    "    if not died then return nil end\n"                                                        \
    "  end\n"                                                                                      \
    "  return s, node, att, at, run, moves, died\n"                                                \
    "end\n"                                                                                        \
    "local function reofferable(v, busy)\n"                                                        \
    "  local s, node, _, at, run = parse(v)\n"                                                     \
    "  if not s then return false end\n"                                                           \
    "  if s == 'claimed' or s == 'skipped' then return true end\n"                                 \
    "  if s == 'offered' or s == 'retry' then return tonumber(at) <= now end\n"                    \
    "  local sc = redis.call('zscore', busy, node .. '/' .. run)\n"                                \
    "  return not sc or tonumber(sc) <= now\n"                                                     \
    "end\n"                                                                                        \
    "local function unindex(index, job, akey)\n"                                                   \
    "  if redis.call('hlen', akey) == 0 then redis.call('srem', index, job) end\n"                 \
    "end\n"

/* KEYS: leader, busy:J, assign:J. ARGV: token, field, expect ('' none,
 * 'claimed' the claim's marker of run_id, or a value), from ('' none),
 * prefix, job, mode (offer, drop), and for an offer node, attempt, run_id,
 * moves, offer_ms, events channel, died ('-' none). Returns {-1} not the
 * leader, {0} not done, {1, value} done. */
static const char offer_src[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return {-1} end\n" NOW_LUA PARSE_LUA
    "local index = ARGV[5] .. 'assigned'\n"
    "local cur = redis.call('hget', KEYS[3], ARGV[2])\n"
    "if ARGV[3] == '' then\n"
    "  if cur then return {0} end\n"
    "else\n"
    "  if not cur then return {0} end\n"
    "  local s, node, _, _, run = parse(cur)\n"
    "  if not s then return {0} end\n"
    "  if ARGV[3] == 'claimed' then\n"
    "    if s ~= 'claimed' or run ~= ARGV[10] then return {0} end\n"
    "  elseif cur ~= ARGV[3] or not reofferable(cur, KEYS[2]) then\n"
    "    return {0}\n"
    "  end\n"
    "  redis.call('zrem', KEYS[2], node .. '/' .. run)\n"
    "  redis.call('zrem', KEYS[2], node .. '/' .. run .. '/wait')\n"
    "  redis.call('zrem', ARGV[5] .. 'offers:' .. node, ARGV[6] .. ' ' .. ARGV[2])\n"
    "  redis.call('zrem', ARGV[5] .. 'load:' .. node, ARGV[6] .. ' ' .. run)\n"
    "end\n"
    "if ARGV[4] ~= '' then redis.call('zrem', KEYS[2], ARGV[4]) end\n"
    "if ARGV[7] == 'drop' then\n"
    "  redis.call('hdel', KEYS[3], ARGV[2])\n"
    "  unindex(index, ARGV[6], KEYS[3])\n"
    "  return {1, ''}\n"
    "end\n"
    "local dl = now + tonumber(ARGV[12])\n"
    "local v = 'offered ' .. ARGV[8] .. ' ' .. ARGV[9] .. ' ' .. dl .. ' ' .. ARGV[10] ..\n"
    "          ' ' .. ARGV[11] .. ' ' .. ARGV[14]\n"
    "redis.call('hset', KEYS[3], ARGV[2], v)\n"
    "redis.call('sadd', index, ARGV[6])\n"
    "redis.call('zadd', KEYS[2], dl, ARGV[8] .. '/' .. ARGV[10])\n"
    "if redis.call('pttl', KEYS[2]) < tonumber(ARGV[12]) + 3600000 then\n"
    "  redis.call('pexpire', KEYS[2], tonumber(ARGV[12]) + 3600000)\n"
    "end\n"
    "local offers = ARGV[5] .. 'offers:' .. ARGV[8]\n"
    "redis.call('zremrangebyscore', offers, '-inf', now)\n"
    "redis.call('zadd', offers, dl, ARGV[6] .. ' ' .. ARGV[2])\n"
    "redis.call('pexpire', offers, tonumber(ARGV[12]) + 3600000)\n"
    "redis.call('publish', ARGV[13], 'offer ' .. ARGV[8])\n"
    "return {1, v}\n";

/* KEYS: leader, busy:J, assign:J. ARGV: token, tick (the marker's field),
 * run_id (the marker's), prefix, job, offer_ms, events channel, policy
 * ('forbid', 'replace': per node, see assign.h; 'allow': every node is
 * offered), then node, run_id pairs. Returns {-1} not the leader, {0} no
 * such marker, {1, n, {i...}, g}: the marker replaced by n offers
 * "<tick>/<node>" (to the nodes not there yet), fields "skipped" for the
 * pairs i (1-based), and g older offers given way (replace). */
static const char offer_all_src[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return {-1} end\n" NOW_LUA PARSE_LUA
    "local index = ARGV[4] .. 'assigned'\n"
    "local cur = redis.call('hget', KEYS[3], ARGV[2])\n"
    "if not cur then return {0} end\n"
    "local s, node, att, _, run = parse(cur)\n"
    "if s ~= 'claimed' or run ~= ARGV[3] then return {0} end\n"
    "redis.call('zrem', KEYS[2], node .. '/' .. run)\n"
    "redis.call('hdel', KEYS[3], ARGV[2])\n"
    "local busy, older, g = {}, {}, 0\n"
    "if ARGV[8] == 'replace' then\n"
    "  local all = redis.call('hgetall', KEYS[3])\n"
    "  for i = 1, #all, 2 do\n"
    "    local t, on = string.match(all[i], '^(%d+)/(.+)$')\n"
    "    local st = t and tonumber(t) < tonumber(ARGV[2]) and parse(all[i + 1])\n"
    "    if st == 'offered' then\n"
    "      older[on] = older[on] or {}\n"
    "      table.insert(older[on], {all[i], all[i + 1]})\n"
    "    end\n"
    "  end\n"
    "end\n"
    "if ARGV[8] == 'forbid' then\n"
    "  local markers = {}\n"
    "  for _, v in ipairs(redis.call('hvals', KEYS[3])) do\n"
    "    local ms, _, _, _, mr = parse(v)\n"
    "    if ms == 'claimed' then markers[mr] = true end\n"
    "  end\n"
    "  for _, e in ipairs(redis.call('zrangebyscore', KEYS[2], '(' .. now, '+inf')) do\n"
    "    local bn, br = string.match((string.gsub(e, '/wait$', '')), '^(.*)/([^/]*)$')\n"
    "    if bn and not markers[br] then busy[bn] = true end\n"
    "  end\n"
    "end\n"
    "local dl = now + tonumber(ARGV[6])\n"
    "local n, k = 0, {}\n"
    "for i = 9, #ARGV - 1, 2 do\n"
    "  local field = ARGV[2] .. '/' .. ARGV[i]\n"
    "  if redis.call('hexists', KEYS[3], field) == 1 then\n"
    "  elseif busy[ARGV[i]] then\n"
    "    redis.call('hset', KEYS[3], field, 'skipped ' .. ARGV[i] .. ' ' .. att .. ' ' .. now ..\n"
    "               ' ' .. ARGV[i + 1] .. ' 0 -')\n"
    "    k[#k + 1] = (i - 7) / 2\n"
    "  else\n"
    "    for _, o in ipairs(older[ARGV[i]] or {}) do\n"
    "      local _, on, oa, _, orun, om, od = parse(o[2])\n"
    "      redis.call('zrem', KEYS[2], on .. '/' .. orun)\n"
    "      redis.call('zrem', ARGV[4] .. 'offers:' .. on, ARGV[5] .. ' ' .. o[1])\n"
    "      redis.call('hset', KEYS[3], o[1], 'skipped ' .. on .. ' ' .. oa .. ' ' .. now ..\n"
    "                 ' ' .. orun .. ' ' .. om .. ' ' .. od)\n"
    "      g = g + 1\n"
    "    end\n"
    "    redis.call('hset', KEYS[3], field, 'offered ' .. ARGV[i] .. ' ' .. att .. ' ' .. dl ..\n"
    "               ' ' .. ARGV[i + 1] .. ' 0 -')\n"
    "    redis.call('zadd', KEYS[2], dl, ARGV[i] .. '/' .. ARGV[i + 1])\n"
    "    local offers = ARGV[4] .. 'offers:' .. ARGV[i]\n"
    "    redis.call('zremrangebyscore', offers, '-inf', now)\n"
    "    redis.call('zadd', offers, dl, ARGV[5] .. ' ' .. field)\n"
    "    redis.call('pexpire', offers, tonumber(ARGV[6]) + 3600000)\n"
    "    redis.call('publish', ARGV[7], 'offer ' .. ARGV[i])\n"
    "    n = n + 1\n"
    "  end\n"
    "end\n"
    "if n + #k > 0 then redis.call('sadd', index, ARGV[5]) end\n"
    "if redis.call('pttl', KEYS[2]) < tonumber(ARGV[6]) + 3600000 then\n"
    "  redis.call('pexpire', KEYS[2], tonumber(ARGV[6]) + 3600000)\n"
    "end\n"
    "unindex(index, ARGV[5], KEYS[3])\n"
    "return {1, n, k, g}\n";

/* The capacity in use of node: its accepted runs whose registration is
 * alive (the others pruned when prune is true). */
#define LOAD_LUA                                                                                   \
    "local function load(prefix, node, prune)\n"                                                   \
    "  local key = prefix .. 'load:' .. node\n"                                                    \
    "  local n = 0\n"                                                                              \
    "  for _, e in ipairs(redis.call('zrange', key, 0, -1)) do\n"                                  \
    "    local j, r = string.match(e, '^(%S+) (%S+)$')\n"                                          \
    "    local sc = j and redis.call('zscore', prefix .. 'busy:' .. j, node .. '/' .. r)\n"        \
    "    if sc and tonumber(sc) > now then n = n + 1\n"                                            \
    "    elseif prune then redis.call('zrem', key, e) end\n"                                       \
    "  end\n"                                                                                      \
    "  return n\n"                                                                                 \
    "end\n"

/* KEYS: busy:J, assign:J, offers:N, load:N. ARGV: field, node, capacity,
 * ttl_ms, job, prefix. Returns {0} gone, {1, value} accepted, {2} full. */
static const char accept_src[] = NOW_LUA PARSE_LUA LOAD_LUA
    "local offer = ARGV[5] .. ' ' .. ARGV[1]\n"
    "local cur = redis.call('hget', KEYS[2], ARGV[1])\n"
    "local s, node, att, at, run, moves, died\n"
    "if cur then s, node, att, at, run, moves, died = parse(cur) end\n"
    "if not s or s ~= 'offered' or node ~= ARGV[2] or tonumber(at) <= now then\n"
    "  redis.call('zrem', KEYS[3], offer)\n"
    "  return {0}\n"
    "end\n"
    "if load(ARGV[6], ARGV[2], true) >= tonumber(ARGV[3]) then return {2} end\n"
    "redis.call('zrem', KEYS[3], offer)\n"
    "local exp = now + tonumber(ARGV[4])\n"
    "redis.call('zadd', KEYS[1], exp, node .. '/' .. run)\n"
    "if redis.call('pttl', KEYS[1]) < tonumber(ARGV[4]) + 3600000 then\n"
    "  redis.call('pexpire', KEYS[1], tonumber(ARGV[4]) + 3600000)\n"
    "end\n"
    "redis.call('zadd', KEYS[4], now, ARGV[5] .. ' ' .. run)\n"
    "local v = 'accepted ' .. node .. ' ' .. att .. ' ' .. now .. ' ' .. run .. ' ' .. moves ..\n"
    "          ' ' .. died\n"
    "redis.call('hset', KEYS[2], ARGV[1], v)\n"
    "return {1, v}\n";

/* KEYS: leader. ARGV: token, prefix, ttl_ms, then (job, field, value)
 * triples. A marker or an offer is held by its own registration; a run
 * lost, accepted and lost, or a retry (in its backoff, or due), whose
 * next attempt waits, by "<node>/<run_id>/wait" (its own is gone: that is
 * how it was found lost, or the run's end removed it; the offer or drop
 * of the value removes it). Returns -1 not the leader, 1 done. */
static const char hold_src[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return -1 end\n" NOW_LUA PARSE_LUA
    "local ttl = tonumber(ARGV[3])\n"
    "for i = 4, #ARGV - 2, 3 do\n"
    "  local busy = ARGV[2] .. 'busy:' .. ARGV[i]\n"
    "  if redis.call('hget', ARGV[2] .. 'assign:' .. ARGV[i], ARGV[i + 1]) == ARGV[i + 2] then\n"
    "    local s, node, _, _, run = parse(ARGV[i + 2])\n"
    "    if s then\n"
    "      local m = node .. '/' .. run\n"
    "      if s ~= 'claimed' and s ~= 'offered' then m = m .. '/wait' end\n"
    "      local sc = redis.call('zscore', busy, m)\n"
    "      if not sc or tonumber(sc) < now + ttl then redis.call('zadd', busy, now + ttl, m) end\n"
    "      if redis.call('pttl', busy) < ttl + 3600000 then\n"
    "        redis.call('pexpire', busy, ttl + 3600000)\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "return 1\n";

/* KEYS: busy:J, assign:J, paused, load:N. ARGV: field, value (accepted,
 * as accepted), job. Returns 1 (started), 0 (no longer this run's), 2
 * (the job is paused, or resumed without catch-up past the tick: the
 * assignment is handed back as the claim's marker, "claimed <node> ...",
 * its registration and capacity freed, for the leader to keep while the
 * pause lasts). */
static const char started_src[] = NOW_LUA PARSE_LUA
    "if redis.call('hget', KEYS[2], ARGV[1]) ~= ARGV[2] or reofferable(ARGV[2], KEYS[1]) then\n"
    "  return 0\n"
    "end\n"
    "local tick = tonumber(string.match(ARGV[1], '^%d+'))\n"
    "for _, name in ipairs({ARGV[3], '*'}) do\n"
    "  local raw = redis.call('hget', KEYS[3], name)\n"
    "  local ok, e = false, nil\n"
    "  if raw then ok, e = pcall(cjson.decode, raw) end\n"
    "  if ok and type(e) == 'table' and (e.state == 'paused' or\n"
    "      (e.state == 'resumed' and tonumber(e.at) and tonumber(e.at) >= tick)) then\n"
    "    local _, node, att, _, run, moves, died = parse(ARGV[2])\n"
    "    redis.call('zrem', KEYS[1], node .. '/' .. run)\n"
    "    redis.call('zrem', KEYS[4], ARGV[3] .. ' ' .. run)\n"
    "    redis.call('hset', KEYS[2], ARGV[1], 'claimed ' .. node .. ' ' .. att .. ' ' .. now ..\n"
    "               ' ' .. run .. ' ' .. moves .. ' ' .. died)\n"
    "    return 2\n"
    "  end\n"
    "end\n"
    "redis.call('hset', KEYS[2], ARGV[1], 'started' .. string.sub(ARGV[2], 9))\n"
    "return 1\n";

/* KEYS: busy:J, assign:J, load:N. ARGV: field, node, run_id, job, ended
 * channel, retry delay ms ('' none), the index key. A retry made is held
 * as "<node>/<run_id>/wait" until its due instant plus what was left of
 * the run's registration (at least ASSIGN_OFFER_MS): a forbid job's next
 * tick, and max_running, see it through its backoff; the leader's tend
 * holds it on (assign_hold), and its offer or drop removes it. */
static const char end_src[] = NOW_LUA PARSE_LUA OFFER_MS_LUA
    "local m = ARGV[2] .. '/' .. ARGV[3]\n"
    "local left = tonumber(redis.call('zscore', KEYS[1], m) or now) - now\n"
    "redis.call('zrem', KEYS[1], m)\n"
    "redis.call('zrem', KEYS[3], ARGV[4] .. ' ' .. ARGV[3])\n"
    "local cur = redis.call('hget', KEYS[2], ARGV[1])\n"
    "if cur then\n"
    "  local _, node, att, _, run, moves, died = parse(cur)\n"
    "  if node == ARGV[2] and run == ARGV[3] then\n"
    "    if ARGV[6] ~= '' then\n"
    "      local due = now + tonumber(ARGV[6])\n"
    "      redis.call('hset', KEYS[2], ARGV[1], 'retry ' .. node .. ' ' .. att .. ' ' .. due ..\n"
    "                 ' ' .. run .. ' ' .. moves .. ' ' .. died)\n"
    "      local hold = due + math.max(left, offer_ms)\n"
    "      redis.call('zadd', KEYS[1], hold, m .. '/wait')\n"
    "      if redis.call('pttl', KEYS[1]) < hold - now + 3600000 then\n"
    "        redis.call('pexpire', KEYS[1], hold - now + 3600000)\n"
    "      end\n"
    "    else\n"
    "      redis.call('hdel', KEYS[2], ARGV[1])\n"
    "      unindex(ARGV[7], ARGV[4], KEYS[2])\n"
    "    end\n"
    "  end\n"
    "end\n"
    "redis.call('publish', ARGV[5], 'ended ' .. ARGV[4])\n"
    "return 1\n";

/* KEYS: the index (assigned). ARGV: prefix, max, due ('1': only those
 * that need the leader, and the retries in their backoff, whose hold the
 * leader keeps). Returns {now, job, field, value, alive, ...} of every
 * job the index names (a job whose hash is empty leaves it), at most max
 * assignments. */
static const char list_src[] =
    NOW_LUA PARSE_LUA "local out, n = {now}, 0\n"
                      "for _, job in ipairs(redis.call('smembers', KEYS[1])) do\n"
                      "  local akey = ARGV[1] .. 'assign:' .. job\n"
                      "  local all = redis.call('hgetall', akey)\n"
                      "  if #all == 0 then redis.call('srem', KEYS[1], job) end\n"
                      "  for i = 1, #all, 2 do\n"
                      "    if n >= tonumber(ARGV[2]) then return out end\n"
                      "    local due = reofferable(all[i + 1], ARGV[1] .. 'busy:' .. job)\n"
                      "    local retry = string.sub(all[i + 1], 1, 6) == 'retry '\n"
                      "    if due or retry or ARGV[3] ~= '1' then\n"
                      "      out[#out + 1] = job\n"
                      "      out[#out + 1] = all[i]\n"
                      "      out[#out + 1] = all[i + 1]\n"
                      "      out[#out + 1] = due and 0 or 1\n"
                      "      n = n + 1\n"
                      "    end\n"
                      "  end\n"
                      "end\n"
                      "return out\n";

/* KEYS: offers:N. ARGV: max. The offers not past their deadline. */
static const char offers_src[] =
    NOW_LUA "redis.call('zremrangebyscore', KEYS[1], '-inf', now)\n"
            "return redis.call('zrange', KEYS[1], 0, tonumber(ARGV[1]) - 1)\n";

/* ARGV: prefix, nodes... Returns each node's runs alive and offers open. */
static const char loads_src[] = NOW_LUA LOAD_LUA
    "local out = {}\n"
    "for i = 2, #ARGV do\n"
    "  local offers = redis.call('zcount', ARGV[1] .. 'offers:' .. ARGV[i], '(' .. now, '+inf')\n"
    "  out[#out + 1] = load(ARGV[1], ARGV[i], false) + offers\n"
    "end\n"
    "return out\n";

/* Runs script with nkeys keys "baton:{group}:<kf[i]>:<ka[i]>" and the
 * args; *out the reply (owned). */
static int eval_keys(struct baton_client *c, const char *script, const char *group,
                     const char *const *kf, const char *const *ka, int nkeys,
                     const char *const *args, int nargs, struct baton_reply **out)
{
    char *keys[8] = {0};
    int rc = BATON_ENOMEM;
    *out = NULL;
    for (int i = 0; i < nkeys; i++)
        if ((keys[i] = group_key(group, "%s:%s", kf[i], ka[i])) == NULL)
            goto out;
    rc = baton_client_eval(c, script, nkeys, (const char *const *)keys, nargs, args, out);
    if (rc == BATON_OK && *out == NULL) {
        rc = BATON_EPROTO;
        baton_reply_free(*out);
        *out = NULL;
    }
out:
    for (int i = 0; i < nkeys; i++)
        free(keys[i]);
    return rc;
}

static long long elem_int(const struct baton_reply *r, size_t i)
{
    if (r == NULL || r->type != BATON_REPLY_ARRAY || i >= r->elements ||
        r->element[i]->type != BATON_REPLY_INTEGER)
        return -100;
    return r->element[i]->integer;
}

static const char *elem_str(const struct baton_reply *r, size_t i)
{
    if (r == NULL || r->type != BATON_REPLY_ARRAY || i >= r->elements ||
        r->element[i]->type != BATON_REPLY_STRING)
        return NULL;
    return r->element[i]->str;
}

/* offer or drop (assign.h). */
static int offer_or_drop(struct baton_client *c, const char *group, const char *job,
                         const char *leader_key, const char *token, const char *from,
                         const char *expect, struct assign *a, int64_t offer_ms, bool drop)
{
    char prefix[160], attempt[16], moves[16], ms[24];
    char *chan = group_key(group, "events");
    struct baton_reply *r = NULL;
    if (chan == NULL)
        return BATON_ENOMEM;
    snprintf(prefix, sizeof prefix, "baton:{%s}:", group);
    snprintf(attempt, sizeof attempt, "%d", a->attempt);
    snprintf(moves, sizeof moves, "%d", a->moves);
    snprintf(ms, sizeof ms, "%" PRId64, offer_ms);
    const char *args[14] = {token,
                            a->field,
                            expect != NULL ? expect : "",
                            from != NULL ? from : "",
                            prefix,
                            job,
                            drop ? "drop" : "offer",
                            a->node,
                            attempt,
                            a->run_id,
                            moves,
                            ms,
                            chan,
                            a->died[0] != '\0' ? a->died : "-"};
    /* the leader key is given whole: group_key() would prefix it */
    char *keys[3] = {NULL, group_key(group, "busy:%s", job), group_key(group, "assign:%s", job)};
    int rc = BATON_ENOMEM;
    if (keys[1] == NULL || keys[2] == NULL)
        goto out;
    const char *kk[3] = {leader_key, keys[1], keys[2]};
    rc = baton_client_eval(c, offer_src, 3, kk, 14, args, &r);
    if (rc != BATON_OK)
        goto out;
    long long code = elem_int(r, 0);
    if (code == -1)
        rc = BATON_ELOST;
    else if (code == 0)
        rc = 0;
    else if (code == 1 && elem_str(r, 1) != NULL) {
        rc = 1;
        if (!drop && !assign_parse(a->field, elem_str(r, 1), a))
            rc = BATON_EPROTO;
    } else
        rc = BATON_EPROTO;
out:
    baton_reply_free(r);
    free(keys[1]);
    free(keys[2]);
    free(chan);
    return rc;
}

int assign_offer(struct baton_client *c, const char *group, const char *job, const char *leader_key,
                 const char *token, const char *from, const char *expect, struct assign *a,
                 int64_t offer_ms)
{
    a->state = ASSIGN_OFFERED;
    return offer_or_drop(c, group, job, leader_key, token, from, expect, a, offer_ms, false);
}

int assign_offer_all(struct baton_client *c, const char *group, const char *job,
                     const char *leader_key, const char *token, const struct assign *m,
                     const char *const *nodes, const char *const *run_ids, size_t n,
                     enum assign_per_node policy, int64_t offer_ms, size_t *offered, bool *skipped,
                     size_t *gave_way)
{
    static const char *const policies[] = {"allow", "forbid", "replace"};
    char prefix[160], ms[24];
    char *chan = group_key(group, "events");
    char *busy = group_key(group, "busy:%s", job), *akey = group_key(group, "assign:%s", job);
    const char **args = calloc(8 + 2 * n, sizeof *args);
    struct baton_reply *r = NULL;
    int rc = BATON_ENOMEM;
    *offered = *gave_way = 0;
    for (size_t i = 0; i < n; i++)
        skipped[i] = false;
    if (chan == NULL || busy == NULL || akey == NULL || args == NULL)
        goto out;
    snprintf(prefix, sizeof prefix, "baton:{%s}:", group);
    snprintf(ms, sizeof ms, "%" PRId64, offer_ms);
    const char *fixed[8] = {token, m->field, m->run_id, prefix, job, ms, chan, policies[policy]};
    memcpy(args, fixed, sizeof fixed);
    for (size_t i = 0; i < n; i++) {
        args[8 + 2 * i] = nodes[i];
        args[9 + 2 * i] = run_ids[i];
    }
    const char *keys[3] = {leader_key, busy, akey};
    rc = baton_client_eval(c, offer_all_src, 3, keys, 8 + 2 * (int)n, args, &r);
    if (rc != BATON_OK)
        goto out;
    long long code = elem_int(r, 0), made = elem_int(r, 1), gave = elem_int(r, 3);
    const struct baton_reply *left = code == 1 && r->elements > 2 ? r->element[2] : NULL;
    bool ok =
        code == 1 && made >= 0 && gave >= 0 && left != NULL && left->type == BATON_REPLY_ARRAY;
    rc = code == -1 ? BATON_ELOST : code == 0 ? 0 : ok ? 1 : BATON_EPROTO;
    for (size_t i = 0; rc == 1 && i < left->elements; i++) {
        long long k = elem_int(left, i);
        if (k < 1 || (size_t)k > n)
            rc = BATON_EPROTO;
        else
            skipped[k - 1] = true;
    }
    if (rc == 1) {
        *offered = (size_t)made;
        *gave_way = (size_t)gave;
    }
out:
    baton_reply_free(r);
    free(args);
    free(chan);
    free(busy);
    free(akey);
    return rc;
}

int assign_drop(struct baton_client *c, const char *group, const char *job, const char *leader_key,
                const char *token, const char *expect, const struct assign *a)
{
    struct assign copy = *a;
    return offer_or_drop(c, group, job, leader_key, token, NULL, expect, &copy, 0, true);
}

int assign_hold(struct baton_client *c, const char *group, const char *leader_key,
                const char *token, const struct assign *const *w, size_t n, int64_t ttl_ms)
{
    char prefix[160], ttl[24];
    const char **args = calloc(3 + 3 * n, sizeof *args);
    struct baton_reply *r = NULL;
    int rc = BATON_ENOMEM;
    if (args == NULL)
        return rc;
    snprintf(prefix, sizeof prefix, "baton:{%s}:", group);
    snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms);
    args[0] = token;
    args[1] = prefix;
    args[2] = ttl;
    for (size_t i = 0; i < n; i++) {
        args[3 + 3 * i] = w[i]->job;
        args[4 + 3 * i] = w[i]->field;
        args[5 + 3 * i] = w[i]->value;
    }
    const char *keys[1] = {leader_key};
    rc = baton_client_eval(c, hold_src, 1, keys, 3 + 3 * (int)n, args, &r);
    if (rc == BATON_OK)
        rc = r == NULL || r->type != BATON_REPLY_INTEGER ? BATON_EPROTO
             : r->integer == -1                          ? BATON_ELOST
                                                         : BATON_OK;
    baton_reply_free(r);
    free(args);
    return rc;
}

enum assign_answer assign_accept(struct baton_client *c, const char *group, const char *job,
                                 const char *field, const char *node, int64_t capacity,
                                 int64_t ttl_ms, struct assign *a)
{
    char prefix[160], cap[24], ttl[24];
    struct baton_reply *r = NULL;
    snprintf(prefix, sizeof prefix, "baton:{%s}:", group);
    snprintf(cap, sizeof cap, "%" PRId64, capacity);
    snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms);
    const char *kf[4] = {"busy", "assign", "offers", "load"};
    const char *ka[4] = {job, job, node, node};
    const char *args[6] = {field, node, cap, ttl, job, prefix};
    enum assign_answer res = ASSIGN_ERROR;
    if (eval_keys(c, accept_src, group, kf, ka, 4, args, 6, &r) != BATON_OK)
        goto out;
    switch (elem_int(r, 0)) {
    case 0: res = ASSIGN_GONE; break;
    case 2: res = ASSIGN_FULL; break;
    case 1:
        if (elem_str(r, 1) != NULL && assign_parse(field, elem_str(r, 1), a))
            res = ASSIGN_OK;
        break;
    default: break;
    }
out:
    baton_reply_free(r);
    return res;
}

int assign_started(struct baton_client *c, const char *group, const char *job,
                   const struct assign *a)
{
    char *keys[4] = {group_key(group, "busy:%s", job), group_key(group, "assign:%s", job),
                     group_key(group, "paused"), group_key(group, "load:%s", a->node)};
    const char *args[3] = {a->field, a->value, job};
    struct baton_reply *r = NULL;
    int rc = BATON_ENOMEM;
    if (keys[0] != NULL && keys[1] != NULL && keys[2] != NULL && keys[3] != NULL)
        rc = baton_client_eval(c, started_src, 4, (const char *const *)keys, 3, args, &r);
    if (rc == BATON_OK)
        rc = r == NULL || r->type != BATON_REPLY_INTEGER ? BATON_EPROTO
             : r->integer == 1                           ? BATON_OK
             : r->integer == 2                           ? ASSIGN_PAUSED
                                                         : BATON_ELOST;
    for (int i = 0; i < 4; i++)
        free(keys[i]);
    baton_reply_free(r);
    return rc;
}

int assign_end(struct baton_client *c, const char *group, const char *job, const char *field,
               const char *node, const char *run_id, int64_t retry_ms)
{
    char *chan = group_key(group, "ended"), *index = group_key(group, "assigned");
    char retry[24] = "";
    int rc = BATON_ENOMEM;
    struct baton_reply *r = NULL;
    if (chan == NULL || index == NULL)
        goto out;
    if (retry_ms >= 0)
        snprintf(retry, sizeof retry, "%" PRId64, retry_ms);
    const char *kf[3] = {"busy", "assign", "load"};
    const char *ka[3] = {job, job, node};
    const char *args[7] = {field, node, run_id, job, chan, retry, index};
    rc = eval_keys(c, end_src, group, kf, ka, 3, args, 7, &r);
out:
    baton_reply_free(r);
    free(chan);
    free(index);
    return rc;
}

int assign_list_all(struct baton_client *c, const char *group, struct assign *v, bool *alive,
                    size_t max, bool due_only, size_t *n, int64_t *now_ms)
{
    char m[24], prefix[160];
    char *index = group_key(group, "assigned");
    struct baton_reply *r = NULL;
    int rc = BATON_ENOMEM;
    *n = 0;
    if (index == NULL)
        return rc;
    snprintf(m, sizeof m, "%zu", max);
    snprintf(prefix, sizeof prefix, "baton:{%s}:", group);
    const char *keys[1] = {index};
    const char *args[3] = {prefix, m, due_only ? "1" : "0"};
    rc = baton_client_eval(c, list_src, 1, keys, 3, args, &r);
    if (rc == BATON_OK && r == NULL)
        rc = BATON_EPROTO;
    if (rc != BATON_OK)
        goto out;
    if (elem_int(r, 0) < 0 || (r->elements - 1) % 4 != 0) {
        rc = BATON_EPROTO;
        goto out;
    }
    *now_ms = elem_int(r, 0);
    for (size_t i = 1; i + 3 < r->elements && *n < max; i += 4) {
        const char *j = elem_str(r, i), *f = elem_str(r, i + 1), *val = elem_str(r, i + 2);
        if (j == NULL || f == NULL || val == NULL || strlen(j) >= sizeof v[*n].job ||
            !assign_parse(f, val, &v[*n]))
            continue; /* not an assignment's: left alone */
        snprintf(v[*n].job, sizeof v[*n].job, "%s", j);
        alive[*n] = elem_int(r, i + 3) == 1;
        (*n)++;
    }
out:
    baton_reply_free(r);
    free(index);
    return rc;
}

int assign_offers(struct baton_client *c, const char *group, const char *node, char **jobs,
                  char **fields, size_t max, size_t *n)
{
    char m[24];
    snprintf(m, sizeof m, "%zu", max);
    const char *kf[1] = {"offers"};
    const char *ka[1] = {node};
    const char *args[1] = {m};
    struct baton_reply *r = NULL;
    *n = 0;
    int rc = eval_keys(c, offers_src, group, kf, ka, 1, args, 1, &r);
    if (rc != BATON_OK)
        goto out;
    if (r->type != BATON_REPLY_ARRAY) {
        rc = BATON_EPROTO;
        goto out;
    }
    for (size_t i = 0; i < r->elements && *n < max; i++) {
        const char *e = elem_str(r, i), *sp = e != NULL ? strchr(e, ' ') : NULL;
        if (sp == NULL)
            continue;
        jobs[*n] = strndup(e, (size_t)(sp - e));
        fields[*n] = strdup(sp + 1);
        if (jobs[*n] == NULL || fields[*n] == NULL) {
            free(jobs[*n]);
            free(fields[*n]);
            rc = BATON_ENOMEM;
            break;
        }
        (*n)++;
    }
out:
    baton_reply_free(r);
    return rc;
}

int assign_loads(struct baton_client *c, const char *group, const char *const *nodes, size_t n,
                 int64_t *in_use)
{
    char prefix[160];
    if (n == 0)
        return BATON_OK;
    const char **args = calloc(n + 1, sizeof *args);
    struct baton_reply *r = NULL;
    int rc = BATON_ENOMEM;
    if (args == NULL)
        return rc;
    snprintf(prefix, sizeof prefix, "baton:{%s}:", group);
    args[0] = prefix;
    for (size_t i = 0; i < n; i++)
        args[i + 1] = nodes[i];
    /* a key to route by: the group's slot */
    const char *kf[1] = {"load"};
    const char *ka[1] = {nodes[0]};
    rc = eval_keys(c, loads_src, group, kf, ka, 1, args, (int)n + 1, &r);
    if (rc == BATON_OK && (r->type != BATON_REPLY_ARRAY || r->elements != n))
        rc = BATON_EPROTO;
    for (size_t i = 0; rc == BATON_OK && i < n; i++)
        in_use[i] = elem_int(r, i) < 0 ? 0 : elem_int(r, i);
    baton_reply_free(r);
    free(args);
    return rc;
}
