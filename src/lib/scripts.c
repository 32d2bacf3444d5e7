/* scripts.c -- the Lua scripts that make every lock operation atomic.
 *
 * Keys of a lock on user key K, all in one cluster slot (hash tag {K}):
 *   P{K}        the lock: value = owner token, PX = lease; or, during a
 *               handoff to a waiter that cannot be granted directly, "~" +
 *               the token of the waiter it is reserved for
 *   P{K}:fence  the last fencing token granted, no TTL, never reset; the
 *               next is max(last + 1, server TIME in 10 us units), so
 *               that a counter lost (FLUSHALL, a restart without
 *               persistence) or lagging (a failover to a replica that
 *               missed grants) still starts above every token issued
 *               before it, as long as the servers' clocks do not step back
 *   P{K}:q      waiters, a sorted set: member = token, score = arrival (us)
 *   P{K}:qx     waiters' liveness, a hash: token -> expiry (ms, server time)
 *   P{K}:qt     waiters' leases, a hash: token -> the ttl asked (ms)
 * where P is the client's key prefix ("baton:").
 *
 * Handoff is first come, first served: a release that finds waiters does
 * not free the lock but gives it to the first live waiter, inside the
 * script, with the lease that waiter asked for and the next fence, and
 * publishes "token fence" on that waiter's client channel (P + "wake:" +
 * the token's first 16 chars, its client id). The waiter takes the grant
 * from the message without a round trip; its validity is measured from the
 * send time of its last attempt, which saw a lower fence and so ran before
 * the grant. A waiter that misses the message finds the lock holding its
 * own token at its next attempt, which confirms it (and, with
 * min_replicas, makes it durable). When the waiter's client does not
 * listen (PUBSUB NUMSUB: its process is gone, its subscription is being
 * reopened, or it listens on another node of a cluster), or the waiter
 * left no lease in :qt (an older baton), the lock is reserved for it
 * instead ("~token", PX = the waiter's remaining liveness) and the bare
 * token published: its next attempt turns the reservation into a grant, and
 * a dead waiter's reservation expires with its entry. Newcomers meanwhile
 * find the key taken and queue behind. A waiter that dies leaves the queue
 * when its entry expires (waiters refresh their entries on every retry).
 * A waiter that gives up (cancel) passes on a grant or reservation made to
 * it.
 *
 * The uncontended path is four calls to acquire (SET NX PX; TIME, INCR and
 * INCRBY of the fence) and three to release (GET, EXISTS, DEL): the fast
 * paths run no queue code and make no Lua closure. Time in scripts is the
 * server's (TIME), never a client's.
 */
#include <string.h>

#include "base_int.h"

/* On the paths every lock or semaphore cycle takes, whole numbers (scores,
 * fences, INCRBY's step: ms, us or fences, below 2^53) go to redis.call and
 * PUBLISH as strings made with string.format('%d'): a Lua number is
 * formatted by Redis with "%.17g", and '%.0f' is as slow (perf on
 * redis-server in bench_sem: formatting doubles fell from 7.6% to 4.2% of
 * its time in a semaphore cycle; the rest is its own replies of sorted-set
 * scores). Rare paths (queue upkeep, a TTL raised) keep plain numbers. */

/* FENCE_STEPS(k, t): Lua statements that leave in a new local fn the next
 * fencing token of key k, stored there: max(last + 1, server TIME in units
 * of 10 microseconds), t being the reply of a TIME the script has called.
 * The unit keeps tokens below 10^15 until the year 2286, so that every
 * consumer prints them as plain integers (a double shows 15 digits) and
 * JavaScript reads them exactly; one key cannot be granted 100,000 times a
 * second (each grant is a script run and a round trip), so the clock term
 * stays ahead of the counter and a lost counter restarts above every token
 * issued. INCR makes last + 1 and INCRBY raises it to the clock term when
 * it lags: Redis's integer arithmetic (measured: 5-8% less of Redis's time
 * per lock cycle than GET, then SET of a formatted max; GETSET of the clock
 * term, then a SET when the counter leads, one call less, was no cheaper:
 * its bulk reply and the strings made of TIME's cost what INCRBY saves).
 * Written out inline on the lock's fast path: a Lua closure is made anew
 * on each run of a script that defines it (the definitions of fence_next
 * and dequeue cost 5% of Redis's time per lock cycle, measured with
 * EVALSHA pairs pipelined 50 at a time). */
#define FENCE_STEPS(k, t)                                                                          \
    "local fnow = tonumber(" t "[1]) * 100000 + math.floor(tonumber(" t "[2]) / 10)\n"             \
    "local fn = redis.call('incr', " k ")\n"                                                       \
    "if fn < fnow then\n"                                                                          \
    "  redis.call('incrby', " k ", string.format('%d', fnow - fn))\n"                              \
    "  fn = fnow\n"                                                                                \
    "end\n"

/* Defines fence_next(key, t): FENCE_STEPS as a function, returning fn; t:
 * the reply of the TIME the script has already called, if it has (one call
 * less), else nil. For the paths other than the lock's fast ones. */
#define FENCE_FN                                                                                   \
    "local function fence_next(k, t)\n"                                                            \
    "t = t or redis.call('time')\n" FENCE_STEPS("k", "t") "return fn\n"                            \
                                                          "end\n"

/* Gives the lock to the first live waiter (see above); else deletes it.
 * Expects lock, q, qx, chan, and f, qt (nil for a caller without them: then
 * a reservation) in scope, and fence_next. */
#define HANDOFF                                                                                    \
    "local t = redis.call('time')\n"                                                               \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"                      \
    "while true do\n"                                                                              \
    "  local h = redis.call('zrange', q, '0', '0')[1]\n"                                           \
    "  if not h then break end\n"                                                                  \
    "  local e = tonumber(redis.call('hget', qx, h))\n"                                            \
    "  if e and e > now then\n"                                                                    \
    "    local ch = chan .. string.sub(h, 1, 16)\n"                                                \
    "    local ttl = qt and tonumber(redis.call('hget', qt, h))\n"                                 \
    "    if ttl and redis.call('pubsub', 'numsub', ch)[2] > 0 then\n"                              \
    "      redis.call('zrem', q, h); redis.call('hdel', qx, h); redis.call('hdel', qt, h)\n"       \
    "      redis.call('set', lock, h, 'PX', ttl)\n"                                                \
    "      redis.call('publish', ch, h .. ' ' .. string.format('%d', fence_next(f, t)))\n"         \
    "      return 1\n"                                                                             \
    "    end\n"                                                                                    \
    "    redis.call('set', lock, '~' .. h, 'PX', e - now)\n"                                       \
    "    redis.call('publish', ch, h)\n"                                                           \
    "    return 1\n"                                                                               \
    "  end\n"                                                                                      \
    "  redis.call('zrem', q, h)\n"                                                                 \
    "  redis.call('hdel', qx, h)\n"                                                                \
    "  if qt then redis.call('hdel', qt, h) end\n"                                                 \
    "end\n"                                                                                        \
    "redis.call('del', lock)\n"                                                                    \
    "return 1\n"

/* Our token leaves the queue (acquire's q, qx, qt and tok in scope). */
#define DEQUEUE                                                                                    \
    "redis.call('zrem', q, tok); redis.call('hdel', qx, tok)\n"                                    \
    "if qt then redis.call('hdel', qt, tok) end\n"

/* KEYS: lock fence [q qx qt]. ARGV: token ttl_ms [wait(0|1) entry_ttl_ms
 * queued(0|1: this token may be in the queue)]. A try (neither waiting nor
 * queued) gives only the first two of each.
 * Returns the fence (integer) when granted, else {pttl, holder, fence}: the
 * holder's remaining ms (-1: no TTL), its value and the last fence. A lock
 * that already holds our token (granted to us by a release, whose message
 * we have not used, or a request of ours whose answer was lost) is ours:
 * its lease is set again and its fence returned. */
static const char acquire_src[] =
    "local lock, fence, q, qx, qt = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]\n"
    "local tok, ttl = ARGV[1], ARGV[2]\n"
    "if redis.call('set', lock, tok, 'NX', 'PX', ttl) then\n"
    "  if ARGV[5] == '1' then\n" DEQUEUE "  end\n"
    "  local t = redis.call('time')\n" FENCE_STEPS(
        "fence",
        "t") "return fn\n"
             "end\n" FENCE_FN "local holder = redis.call('get', lock)\n"
             "if holder == '~' .. tok then\n"
             "  redis.call('set', lock, tok, 'PX', ttl)\n" DEQUEUE "  return fence_next(fence)\n"
             "end\n"
             "if holder == tok then\n"
             "  redis.call('pexpire', lock, ttl)\n"
             "  if ARGV[5] == '1' then\n" DEQUEUE "  end\n"
             "  return tonumber(redis.call('get', fence))\n"
             "end\n"
             "if ARGV[3] == '1' then\n"
             "  local t = redis.call('time')\n"
             "  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
             "  local ettl = tonumber(ARGV[4])\n"
             "  if not redis.call('zscore', q, tok) then\n"
             "    redis.call('zadd', q, tonumber(t[1]) * 1000000 + tonumber(t[2]), tok)\n"
             "  end\n"
             "  redis.call('hset', qx, tok, now + ettl)\n"
             "  if qt then redis.call('hset', qt, tok, ttl) end\n"
             "  if redis.call('pttl', q) < ettl then\n"
             "    redis.call('pexpire', q, ettl); redis.call('pexpire', qx, ettl)\n"
             "    if qt then redis.call('pexpire', qt, ettl) end\n"
             "  end\n"
             "end\n"
             "return {redis.call('pttl', lock), holder or '', redis.call('get', fence) or '0'}\n";

/* KEYS: lock q qx [fence qt]. ARGV: token wake_channel_prefix
 * [release_channel [own_successor_channel]]. Returns 1 when released (or
 * handed to the next waiter), 0 when the lock was not ours (nothing
 * changed). Without fence and qt (quorum.c), a waiter gets a reservation.
 *
 * With a release channel (elections), "resigned" wakes successors. Each
 * follower with an identity also listens on release_channel:identity; the
 * resignation names at most two of those that have a listener (PUBSUB
 * CHANNELS, this server's subscriptions), other than the resigner's own,
 * and publishes "resigned" on theirs only: one or two campaigns, not one
 * per follower, and a follower that froze with its subscription open does
 * not stall the handover alone. The others learn of the new leader at
 * their next look at the lease. When none listens (no identities, older
 * followers, or followers subscribed on other nodes of a cluster),
 * "resigned" goes to release_channel, waking every follower. */
static const char release_src[] =
    "local lock, q, qx, chan = KEYS[1], KEYS[2], KEYS[3], ARGV[2]\n"
    "local f, qt = KEYS[4], KEYS[5]\n"
    "if redis.call('get', lock) ~= ARGV[1] then return 0 end\n"
    "if redis.call('exists', q) == 0 then\n"
    "  redis.call('del', lock)\n"
    "  if ARGV[3] and ARGV[3] ~= '' then\n"
    "    local named = 0\n"
    "    if ARGV[4] then\n"
    "      local pat = string.gsub(ARGV[3] .. ':', '[%*%?%[%]\\\\]', '\\\\%0') .. '*'\n"
    "      for _, ch in ipairs(redis.call('pubsub', 'channels', pat)) do\n"
    "        if ch ~= ARGV[4] and redis.call('publish', ch, 'resigned') > 0 then\n"
    "          named = named + 1\n"
    "          if named == 2 then break end\n"
    "        end\n"
    "      end\n"
    "    end\n"
    "    if named == 0 then redis.call('publish', ARGV[3], 'resigned') end\n"
    "  end\n"
    "  return 1\n"
    "end\n" FENCE_FN HANDOFF;

/* KEYS: lock. ARGV: token ttl_ms. Returns 1 when extended, 0 if not ours. */
static const char extend_src[] = "if redis.call('get', KEYS[1]) == ARGV[1] then\n"
                                 "  return redis.call('pexpire', KEYS[1], ARGV[2])\n"
                                 "end\n"
                                 "return 0\n";

/* KEYS: lock q qx fence qt. ARGV: token wake_channel_prefix. A waiter gives
 * up: it leaves the queue; the lock, when granted or reserved to it, or
 * free, goes to the next waiter. */
static const char cancel_src[] =
    FENCE_FN "local lock, q, qx, chan = KEYS[1], KEYS[2], KEYS[3], ARGV[2]\n"
             "local f, qt = KEYS[4], KEYS[5]\n"
             "redis.call('zrem', q, ARGV[1])\n"
             "redis.call('hdel', qx, ARGV[1])\n"
             "if qt then redis.call('hdel', qt, ARGV[1]) end\n"
             "local v = redis.call('get', lock)\n"
             "if v and v ~= '~' .. ARGV[1] and v ~= ARGV[1] then return 1 end\n" HANDOFF;

/* ---- Semaphores (sem.c) ----
 *
 * Keys of semaphore S, all in the slot of {S}:
 *   P{S}:sem        holders, a sorted set: member = permit id (a token),
 *                   score = lease expiry (ms, server time). Expired members
 *                   are reclaimed by an acquire that finds the semaphore
 *                   full or waiters queued. The key's own TTL covers the
 *                   longest lease, so an abandoned set vanishes.
 *   P{S}:sem:fence  the last fencing token, no TTL (FENCE_STEPS above)
 *   P{S}:sem:q      waiters, a sorted set: member =
 *                   "<entry expiry ms>|<ttl_ms>|<token>", score = arrival
 *                   (us). The entry's liveness is in its member, so that a
 *                   grant is one ZPOPMIN and an enqueue one ZADD; a retry
 *                   refreshes it by replacing the member (same arrival),
 *                   and the waiter keeps the member the script returned.
 * A release that finds waiters grants its slot to the first live waiter
 * inside the script: the permit, with the lease the waiter asked for (the
 * ttl in its member) and the next fence. The waiter needs no round trip:
 *   - a waiter of the releasing client (the token starts with its id): the
 *     script returns {token, fence} and the releasing thread hands the
 *     grant over in-process (no message);
 *   - a waiter elsewhere whose client listens on its channel (PUBSUB
 *     NUMSUB): the grant is published there as "token fence", and the
 *     client's subscriber hands it to the waiter (waiters.c), which
 *     measures the lease from the send time of its last attempt (that
 *     attempt saw a lower fence, so the grant came after it);
 *   - a waiter whose client does not listen (its process is gone, its
 *     subscriber is reconnecting, or it listens on another node of a
 *     cluster): a reservation instead, its token among the holders until
 *     its queue entry expires, and a bare "token" wake-up; its next
 *     attempt turns the reservation into a permit. A dead waiter's slot is
 *     thus reclaimed within its entry's life; one that dies after a grant
 *     was published to its live process costs the slot its lease, like
 *     any holder that dies.
 * Waiters are served first come, first served either way. A token that is
 * a holder already (a waiter queued twice, after a lost reply) is skipped:
 * ZADD NX, never a second grant or a lease changed. A waiter whose refresh
 * reply was lost keeps its old member, so its cancel misses the new entry,
 * which lives until its expiry; granted meanwhile, it costs the slot one
 * lease, as a holder that dies does.
 *
 * Cost per cycle with waiters (zero hold): the queueing acquire 6 Redis
 * calls, the release that hands over 8, 9 when it raises the holders' TTL
 * (INFO commandstats around tests/bench/bench_sem.c). */

#define NOW_MS                                                                                     \
    "local t = redis.call('time')\n"                                                               \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

/* Gives one freed slot to the first live waiter (see above). Expects h,
 * q, f, chan, cid, t, now in scope. */
#define SEM_HANDOFF                                                                                \
    "while true do\n"                                                                              \
    "  local w = redis.call('zpopmin', q)[1]\n"                                                    \
    "  if not w then break end\n"                                                                  \
    "  local e, ttl, tok = string.match(w, '^(%d+)|(%d+)|(.+)$')\n"                                \
    "  e = tonumber(e)\n"                                                                          \
    "  if e and e > now then\n"                                                                    \
    "    ttl = tonumber(ttl)\n"                                                                    \
    "    local wc = string.sub(tok, 1, 16)\n"                                                      \
    "    local wch = chan .. wc\n"                                                                 \
    "    if wc == cid or redis.call('pubsub', 'numsub', wch)[2] > 0 then\n"                        \
    "      if redis.call('zadd', h, 'NX', string.format('%d', now + ttl), tok) == 1 then\n"        \
    "        if redis.call('pttl', h) < ttl then redis.call('pexpire', h, ttl) end\n" FENCE_STEPS( \
        "f",                                                                                       \
        "t") "        if wc == cid then return {tok, fn} end\n"                                    \
             "        redis.call('publish', wch, tok .. ' ' .. string.format('%d', fn))\n"         \
             "        return 1\n"                                                                  \
             "      end\n"                                                                         \
             "    elseif redis.call('zadd', h, 'NX', string.format('%d', e), tok) == 1 then\n"     \
             "      redis.call('publish', wch, tok)\n"                                             \
             "      return 1\n"                                                                    \
             "    end\n"                                                                           \
             "  end\n"                                                                             \
             "end\n"                                                                               \
             "return 1\n"

/* KEYS: holders fence q. ARGV: token limit ttl_ms wait(0|1) entry_ttl_ms
 * queued(0|1) entry (the member our last attempt queued, or "").
 * Returns the fence (an integer) when granted, else {ms, last fence,
 * entry}: ms until the earliest lease ends (-1: none), the last fence
 * granted (a string; a grant published later carries a higher one), and
 * our queue entry ("" when not queued). A waiter is admitted when it is
 * among the first (limit - live holders) live waiters; a newcomer when the
 * free slots outnumber the live waiters. */
static const char sem_acquire_src[] =
    "local h, f, q = KEYS[1], KEYS[2], KEYS[3]\n"
    "local tok, limit, ttl, me = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[7]\n" NOW_MS
    "local function grant()\n"
    "  redis.call('zadd', h, string.format('%d', now + ttl), tok)\n"
    "  if redis.call('pttl', h) < ttl then redis.call('pexpire', h, ttl) end\n" FENCE_STEPS(
        "f",
        "t") "  return fn\n"
             "end\n"
             "if ARGV[6] == '1' and redis.call('zscore', h, tok) then return grant() end\n"
             "local n, first, seen = redis.call('zcard', h), nil, false\n"
             "local function reclaim()\n"
             "  first, seen = redis.call('zrange', h, '0', '0', 'withscores')[2], true\n"
             "  if first and tonumber(first) <= now then\n"
             "    redis.call('zremrangebyscore', h, '-inf', now)\n"
             "    n, first = redis.call('zcard', h), redis.call('zrange', h, '0', '0', "
             "'withscores')[2]\n"
             "  end\n"
             "end\n"
             "if n >= limit then reclaim() end\n"
             "if n < limit then\n"
             "  local ok = true\n"
             "  if redis.call('exists', q) == 1 then\n"
             "    if not seen then reclaim() end\n"
             "    local free, live, mine = limit - n, 0, false\n"
             "    repeat\n"
             "      local dead = 0\n"
             "      live, mine = 0, false\n"
             "      for _, w in ipairs(redis.call('zrange', q, 0, free - 1)) do\n"
             "        local e = tonumber(string.match(w, '^(%d+)|'))\n"
             "        if e and e > now then\n"
             "          live = live + 1\n"
             "          mine = mine or w == me\n"
             "        else\n"
             "          redis.call('zrem', q, w)\n"
             "          dead = dead + 1\n"
             "        end\n"
             "      end\n"
             "    until dead == 0\n"
             "    ok = mine or live < free\n"
             "  end\n"
             "  if ok then\n"
             "    if me ~= '' then redis.call('zrem', q, me) end\n"
             "    return grant()\n"
             "  end\n"
             "end\n"
             "if ARGV[4] == '1' then\n"
             "  local ettl = tonumber(ARGV[5])\n"
             "  local at = me ~= '' and redis.call('zscore', q, me)\n"
             "  if at then redis.call('zrem', q, me) else at = t[1] .. string.sub('00000' .. t[2], "
             "-6) end\n"
             "  me = string.format('%d', now + ettl) .. '|' .. ARGV[3] .. '|' .. tok\n"
             "  redis.call('zadd', q, at, me)\n"
             "  if redis.call('pttl', q) < ettl then redis.call('pexpire', q, ettl) end\n"
             "else\n"
             "  me = ''\n"
             "end\n"
             "if not seen then first = redis.call('zrange', h, '0', '0', 'withscores')[2] end\n"
             "return {first and tonumber(first) - now or -1, redis.call('get', f) or '0', me}\n";

/* KEYS: holders q fence. ARGV: token wake_channel_prefix client_id.
 * Returns 1 when the permit was released (its slot handed on, if anyone
 * waits), {token, fence} when its slot was granted to a waiter of the same
 * client, 0 when it was not held (absent, or its lease had run out). */
static const char sem_release_src[] = "local h, q, f = KEYS[1], KEYS[2], KEYS[3]\n"
                                      "local chan, cid = ARGV[2], ARGV[3]\n"
                                      "local s = redis.call('zscore', h, ARGV[1])\n"
                                      "if not s then return 0 end\n"
                                      "redis.call('zrem', h, ARGV[1])\n" NOW_MS
                                      "if tonumber(s) <= now then return 0 end\n" SEM_HANDOFF;

/* KEYS: holders. ARGV: token ttl_ms. Returns 1 when extended, 0 when the
 * permit is not held (absent or expired). */
static const char sem_extend_src[] =
    "local h, tok, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2])\n" NOW_MS
    "local s = redis.call('zscore', h, tok)\n"
    "if not s or tonumber(s) <= now then return 0 end\n"
    "redis.call('zadd', h, string.format('%d', now + ttl), tok)\n"
    "if redis.call('pttl', h) < ttl then redis.call('pexpire', h, ttl) end\n"
    "return 1\n";

/* KEYS: holders q fence. ARGV: token wake_channel_prefix client_id entry
 * (our queue entry, or ""). A waiter gives up: it leaves the queue, and a
 * slot handed to it goes to the next waiter. Returns as the release
 * script. */
static const char sem_cancel_src[] =
    "local h, q, f = KEYS[1], KEYS[2], KEYS[3]\n"
    "local chan, cid = ARGV[2], ARGV[3]\n"
    "if ARGV[4] ~= '' then redis.call('zrem', q, ARGV[4]) end\n"
    "if redis.call('zrem', h, ARGV[1]) == 0 then return 1 end\n" NOW_MS SEM_HANDOFF;

/* ---- Multi-lock (multi.c) ----
 * KEYS: lock_1..lock_n fence_1..fence_n (one hash slot). ARGV: ttl_ms
 * token_1..token_n. Takes every lock or none: returns the fences (an
 * array) when all were free, else the 1-based index of the first lock
 * held (an integer). */
static const char multi_acquire_src[] =
    FENCE_FN "local n = #ARGV - 1\n"
             "for i = 1, n do\n"
             "  if redis.call('exists', KEYS[i]) == 1 then return i end\n"
             "end\n"
             "local out = {}\n"
             "for i = 1, n do\n"
             "  redis.call('set', KEYS[i], ARGV[i + 1], 'PX', ARGV[1])\n"
             "  out[i] = fence_next(KEYS[n + i])\n"
             "end\n"
             "return out\n";

/* ---- Elections (election.c) ----
 * KEYS: lock fence server. ARGV: token ttl_ms. The acquire script's grant
 * (elections have no wait queue) that also records which server process
 * granted the term (run id, from INFO) in P{N}:leader:server, and says
 * whether the term before may have been granted by a master whose last
 * writes this one lacks: another process, and this one a promoted replica
 * (INFO replication second_repl_offset set), or no record at all (lost
 * with the data, or never made). An ACL that refuses INFO leaves the run
 * id unknown ("?"). Returns {fence, 0|1} when granted, else
 * {pttl, holder, last fence} as the acquire script. */
static const char campaign_src[] = FENCE_FN
    "local lock, fence, srv = KEYS[1], KEYS[2], KEYS[3]\n"
    "if redis.call('set', lock, ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
    "  local srvinfo, repl = redis.pcall('info', 'server'), redis.pcall('info', 'replication')\n"
    "  local id = type(srvinfo) == 'string' and string.match(srvinfo, 'run_id:(%x+)') or '?'\n"
    "  local second = type(repl) == 'string' and\n"
    "                 string.match(repl, 'second_repl_offset:(%-?%d+)') or '-1'\n"
    "  local prev = redis.call('get', srv)\n"
    "  redis.call('set', srv, id)\n"
    "  local switched = 0\n"
    "  if not prev or (prev ~= id and second ~= '-1') then switched = 1 end\n"
    "  return {fence_next(fence), switched}\n"
    "end\n"
    "return {redis.call('pttl', lock), redis.call('get', lock) or '', redis.call('get', fence) or "
    "'0'}\n";

/* ---- Redlock quorum (quorum.c): run on each master ----
 *
 * KEYS: lock fence. ARGV: token ttl_ms fence. The client asks for the
 * highest counter a majority reported + 1 (or its hint: quorum.c). A
 * master grants only when the lock is free (or already ours: a retried
 * request) and its counter is below the fence asked for; it then stores
 * that fence. Any two majorities
 * share a master, which saw both grants in order: the later has the higher
 * fence. Returns {1, fence} granted; {0, pttl, holder, fence} held by
 * another; {-1, counter} the fence asked for is not above this master's. */
static const char quorum_acquire_src[] =
    "local hs = redis.call('get', KEYS[2]) or '0'\n"
    "if tonumber(ARGV[3]) > tonumber(hs) and\n"
    "   redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
    "  redis.call('set', KEYS[2], ARGV[3])\n"
    "  return {1, ARGV[3]}\n"
    "end\n"
    "local v = redis.call('get', KEYS[1])\n"
    "if v == ARGV[1] then\n"
    "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "  return {1, hs}\n"
    "end\n"
    "if v then return {0, redis.call('pttl', KEYS[1]), v, hs} end\n"
    "return {-1, hs}\n";

/* KEYS: lock. ARGV: token channel. A release over a quorum (no queue
 * there): deletes the lock if it is ours, publishing "resigned" on the
 * channel when one is given (elections). Returns 1 released, 0 not ours. */
static const char quorum_release_src[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n"
    "redis.call('del', KEYS[1])\n"
    "if ARGV[2] ~= '' then redis.call('publish', ARGV[2], 'resigned') end\n"
    "return 1\n";

/* KEYS: lock fence. ARGV: token ttl_ms term. An election's renewal over
 * a quorum: extends the lease where it is ours (1); where the key is free
 * and this master never granted a fence above our term (a master that
 * restarted empty, or missed the grant), takes it again for our token and
 * raises its counter to the term (2); else 0 (another holds it, or a
 * later term was granted here: we are not the leader). */
static const char quorum_extend_src[] =
    "local v = redis.call('get', KEYS[1])\n"
    "if v == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end\n"
    "if v then return 0 end\n"
    "local have = tonumber(redis.call('get', KEYS[2]) or '0')\n"
    "local term = tonumber(ARGV[3])\n"
    "if have > term then return 0 end\n"
    "redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "if have < term then redis.call('set', KEYS[2], ARGV[3]) end\n"
    "return 2\n";

const char *baton__script_source(enum baton__script_id id)
{
    switch (id) {
    case BATON__S_ACQUIRE: return acquire_src;
    case BATON__S_RELEASE: return release_src;
    case BATON__S_EXTEND: return extend_src;
    case BATON__S_CANCEL: return cancel_src;
    case BATON__S_SEM_ACQUIRE: return sem_acquire_src;
    case BATON__S_SEM_RELEASE: return sem_release_src;
    case BATON__S_SEM_EXTEND: return sem_extend_src;
    case BATON__S_SEM_CANCEL: return sem_cancel_src;
    case BATON__S_MULTI_ACQUIRE: return multi_acquire_src;
    case BATON__S_CAMPAIGN: return campaign_src;
    case BATON__S_QUORUM_ACQUIRE: return quorum_acquire_src;
    case BATON__S_QUORUM_EXTEND: return quorum_extend_src;
    case BATON__S_QUORUM_RELEASE: return quorum_release_src;
    case BATON__S_COUNT: break;
    }
    return "";
}

int baton__script_argv(const char *verb, const char *script, int nkeys, const char *const *keys,
                       int nargs, const char *const *args, const char **argv, size_t *lens,
                       char nkeys_buf[BATON__I64_LEN], size_t room)
{
    int argc = 0;
    if (nkeys < 0 || nargs < 0 || (size_t)nkeys + (size_t)nargs + 3 > room)
        return -1;
    baton__i64_str(nkeys, nkeys_buf);
    argv[argc++] = verb;
    argv[argc++] = script;
    argv[argc++] = nkeys_buf;
    for (int i = 0; i < nkeys; i++)
        argv[argc++] = keys[i];
    for (int i = 0; i < nargs; i++)
        argv[argc++] = args[i];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    return argc;
}
