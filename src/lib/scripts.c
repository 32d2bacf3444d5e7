/* scripts.c -- the Lua scripts that make every lock operation atomic.
 *
 * Keys of a lock on user key K, all in one cluster slot (hash tag {K}):
 *   P{K}        the lock: value = owner token, PX = lease
 *   P{K}:fence  fencing counter: INCR on every grant, no TTL, never reset
 *   P{K}:q      waiters, a sorted set: member = token, score = arrival (us)
 *   P{K}:qx     waiters' liveness, a hash: token -> expiry (ms, server time)
 * where P is the client's key prefix ("baton:").
 *
 * Waiting is first come, first served: while waiters are queued, only the
 * first live one may take a free lock, and the release wakes exactly that
 * one by publishing its token on its client's channel (prefix "wake:" +
 * the token's first 16 chars, the client id). A waiter that dies leaves the
 * queue when its entry expires; waiters refresh their entries each time they
 * retry. Time inside scripts is the server's (TIME), never a client's.
 */
#include "baton_int.h"

#define PRELUDE                                                                                    \
    "local function now_ms()\n"                                                                    \
    "  local t = redis.call('time')\n"                                                             \
    "  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"                         \
    "end\n"                                                                                        \
    "local function live_head(q, qx, now)\n"                                                       \
    "  while true do\n"                                                                            \
    "    local h = redis.call('zrange', q, 0, 0)[1]\n"                                             \
    "    if not h then return nil end\n"                                                           \
    "    local e = tonumber(redis.call('hget', qx, h))\n"                                          \
    "    if e and e > now then return h end\n"                                                     \
    "    redis.call('zrem', q, h)\n"                                                               \
    "    redis.call('hdel', qx, h)\n"                                                              \
    "  end\n"                                                                                      \
    "end\n"                                                                                        \
    "local function wake_head(q, qx, chan)\n"                                                      \
    "  local h = live_head(q, qx, now_ms())\n"                                                     \
    "  if h then redis.call('publish', chan .. string.sub(h, 1, 16), h) end\n"                     \
    "end\n"

/* KEYS: lock fence q qx. ARGV: token ttl_ms wait(0|1) entry_ttl_ms.
 * Returns the fence (integer) when granted, else {pttl}: the holder's
 * remaining ms, -1 if it has no TTL, 0 if free but others queue first. */
static const char acquire_src[] =
    PRELUDE "local lock, fence, q, qx = KEYS[1], KEYS[2], KEYS[3], KEYS[4]\n"
            "local tok, ttl = ARGV[1], ARGV[2]\n"
            "if redis.call('exists', q) == 0 then\n"
            "  if redis.call('set', lock, tok, 'NX', 'PX', ttl) then\n"
            "    return redis.call('incr', fence)\n"
            "  end\n"
            "  if ARGV[3] == '0' then return {redis.call('pttl', lock)} end\n"
            "else\n"
            "  local head = live_head(q, qx, now_ms())\n"
            "  if (head == nil or head == tok) and redis.call('exists', lock) == 0 then\n"
            "    redis.call('set', lock, tok, 'PX', ttl)\n"
            "    if head then redis.call('zrem', q, tok); redis.call('hdel', qx, tok) end\n"
            "    return redis.call('incr', fence)\n"
            "  end\n"
            "  if ARGV[3] == '0' then\n"
            "    local p = redis.call('pttl', lock)\n"
            "    if p == -2 then p = 0 end\n"
            "    return {p}\n"
            "  end\n"
            "end\n"
            "local t = redis.call('time')\n"
            "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
            "local ettl = tonumber(ARGV[4])\n"
            "if not redis.call('zscore', q, tok) then\n"
            "  redis.call('zadd', q, tonumber(t[1]) * 1000000 + tonumber(t[2]), tok)\n"
            "end\n"
            "redis.call('hset', qx, tok, now + ettl)\n"
            "if redis.call('pttl', q) < ettl then\n"
            "  redis.call('pexpire', q, ettl); redis.call('pexpire', qx, ettl)\n"
            "end\n"
            "local p = redis.call('pttl', lock)\n"
            "if p == -2 then p = 0 end\n"
            "return {p}\n";

/* KEYS: lock q qx. ARGV: token wake_channel_prefix.
 * Returns 1 when released, 0 when the lock was not ours (unchanged). */
static const char release_src[] =
    PRELUDE "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n"
            "redis.call('del', KEYS[1])\n"
            "if redis.call('exists', KEYS[2]) == 1 then wake_head(KEYS[2], KEYS[3], ARGV[2]) end\n"
            "return 1\n";

/* KEYS: lock. ARGV: token ttl_ms. Returns 1 when extended, 0 if not ours. */
static const char extend_src[] = "if redis.call('get', KEYS[1]) == ARGV[1] then\n"
                                 "  return redis.call('pexpire', KEYS[1], ARGV[2])\n"
                                 "end\n"
                                 "return 0\n";

/* KEYS: lock q qx. ARGV: token wake_channel_prefix. A waiter gives up: it
 * leaves the queue, and if the lock is free the next waiter is woken. */
static const char cancel_src[] =
    PRELUDE "redis.call('zrem', KEYS[2], ARGV[1])\n"
            "redis.call('hdel', KEYS[3], ARGV[1])\n"
            "if redis.call('exists', KEYS[1]) == 0 and redis.call('exists', KEYS[2]) == 1 then\n"
            "  wake_head(KEYS[2], KEYS[3], ARGV[2])\n"
            "end\n"
            "return 1\n";

const char *baton__script_source(enum baton__script_id id)
{
    switch (id) {
    case BATON__S_ACQUIRE: return acquire_src;
    case BATON__S_RELEASE: return release_src;
    case BATON__S_EXTEND: return extend_src;
    case BATON__S_CANCEL: return cancel_src;
    case BATON__S_COUNT: break;
    }
    return "";
}
