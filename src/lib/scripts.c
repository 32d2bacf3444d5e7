/* scripts.c -- the Lua scripts that make every lock operation atomic.
 *
 * Keys of a lock on user key K, all in one cluster slot (hash tag {K}):
 *   P{K}        the lock: value = owner token, PX = lease; or, during a
 *               handoff, "~" + the token of the waiter it is reserved for
 *   P{K}:fence  fencing counter: INCR on every grant, no TTL, never reset
 *   P{K}:q      waiters, a sorted set: member = token, score = arrival (us)
 *   P{K}:qx     waiters' liveness, a hash: token -> expiry (ms, server time)
 * where P is the client's key prefix ("baton:").
 *
 * Handoff is first come, first served: a release that finds waiters does
 * not free the lock but reserves it for the first live waiter (value
 * "~token", PX = that waiter's remaining liveness) and wakes exactly that
 * waiter by publishing its token on its client's channel (P + "wake:" + the
 * token's first 16 chars, its client id). Newcomers meanwhile find the key
 * taken and queue behind. A waiter that dies leaves the queue when its
 * entry expires (waiters refresh their entries on every retry), and a
 * reservation for it expires with its entry.
 *
 * The uncontended path is two calls to acquire (SET NX PX, INCR) and three
 * to release (GET, EXISTS, DEL): the fast paths run no queue code. Time in
 * scripts is the server's (TIME), never a client's.
 */
#include "baton_int.h"

/* Wakes the first live waiter and reserves the lock for it; else deletes
 * the lock. Expects lock, q, qx, chan in scope. */
#define HANDOFF                                                                                    \
    "local t = redis.call('time')\n"                                                               \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"                      \
    "while true do\n"                                                                              \
    "  local h = redis.call('zrange', q, 0, 0)[1]\n"                                               \
    "  if not h then break end\n"                                                                  \
    "  local e = tonumber(redis.call('hget', qx, h))\n"                                            \
    "  if e and e > now then\n"                                                                    \
    "    redis.call('set', lock, '~' .. h, 'PX', e - now)\n"                                       \
    "    redis.call('publish', chan .. string.sub(h, 1, 16), h)\n"                                 \
    "    return 1\n"                                                                               \
    "  end\n"                                                                                      \
    "  redis.call('zrem', q, h)\n"                                                                 \
    "  redis.call('hdel', qx, h)\n"                                                                \
    "end\n"                                                                                        \
    "redis.call('del', lock)\n"                                                                    \
    "return 1\n"

/* KEYS: lock fence q qx. ARGV: token ttl_ms wait(0|1) entry_ttl_ms
 * queued(0|1: this token may be in the queue).
 * Returns the fence (integer) when granted, else {pttl, holder, fence}: the
 * holder's remaining ms (-1: no TTL), its value and the last fence. */
static const char acquire_src[] =
    "local lock, fence, q, qx = KEYS[1], KEYS[2], KEYS[3], KEYS[4]\n"
    "local tok, ttl = ARGV[1], ARGV[2]\n"
    "if redis.call('set', lock, tok, 'NX', 'PX', ttl) then\n"
    "  if ARGV[5] == '1' then redis.call('zrem', q, tok); redis.call('hdel', qx, tok) end\n"
    "  return redis.call('incr', fence)\n"
    "end\n"
    "local holder = redis.call('get', lock)\n"
    "if holder == '~' .. tok then\n"
    "  redis.call('set', lock, tok, 'PX', ttl)\n"
    "  redis.call('zrem', q, tok); redis.call('hdel', qx, tok)\n"
    "  return redis.call('incr', fence)\n"
    "end\n"
    "if ARGV[3] == '1' then\n"
    "  local t = redis.call('time')\n"
    "  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "  local ettl = tonumber(ARGV[4])\n"
    "  if not redis.call('zscore', q, tok) then\n"
    "    redis.call('zadd', q, tonumber(t[1]) * 1000000 + tonumber(t[2]), tok)\n"
    "  end\n"
    "  redis.call('hset', qx, tok, now + ettl)\n"
    "  if redis.call('pttl', q) < ettl then\n"
    "    redis.call('pexpire', q, ettl); redis.call('pexpire', qx, ettl)\n"
    "  end\n"
    "end\n"
    "return {redis.call('pttl', lock), holder or '', redis.call('get', fence) or '0'}\n";

/* KEYS: lock q qx. ARGV: token wake_channel_prefix [release_channel].
 * Returns 1 when released (or handed to the next waiter), 0 when the lock
 * was not ours (nothing changed). With a release channel (elections),
 * "resigned" is published on it, waking every follower at once. */
static const char release_src[] =
    "local lock, q, qx, chan = KEYS[1], KEYS[2], KEYS[3], ARGV[2]\n"
    "if redis.call('get', lock) ~= ARGV[1] then return 0 end\n"
    "if redis.call('exists', q) == 0 then\n"
    "  redis.call('del', lock)\n"
    "  if ARGV[3] and ARGV[3] ~= '' then redis.call('publish', ARGV[3], 'resigned') end\n"
    "  return 1\n"
    "end\n" HANDOFF;

/* KEYS: lock. ARGV: token ttl_ms. Returns 1 when extended, 0 if not ours. */
static const char extend_src[] = "if redis.call('get', KEYS[1]) == ARGV[1] then\n"
                                 "  return redis.call('pexpire', KEYS[1], ARGV[2])\n"
                                 "end\n"
                                 "return 0\n";

/* KEYS: lock q qx. ARGV: token wake_channel_prefix. A waiter gives up: it
 * leaves the queue; a reservation it had, or a free lock, goes to the next
 * waiter. */
static const char cancel_src[] = "local lock, q, qx, chan = KEYS[1], KEYS[2], KEYS[3], ARGV[2]\n"
                                 "redis.call('zrem', q, ARGV[1])\n"
                                 "redis.call('hdel', qx, ARGV[1])\n"
                                 "local v = redis.call('get', lock)\n"
                                 "if v and v ~= '~' .. ARGV[1] then return 1 end\n" HANDOFF;

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
