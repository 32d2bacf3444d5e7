/* rtime.h -- the runner's units of time: CLOCK_MONOTONIC ns and the wall
 * clock, both from the loop (loop.h), so that a test drives them. */
#ifndef BATON_RTIME_H
#define BATON_RTIME_H

#include <stdint.h>

#include "clock.h"
#include "loop.h"

#define GATE_RETRY_MS 20 /* no blocking call allowed now (rctx_may_block): look again this soon */

static inline int64_t rtime_wall_ms(void)
{
    return loop_wall_ns() / MS;
}

/* The monotonic time at which the wall clock shows unix_ms. */
static inline int64_t rtime_mono_at_ms(int64_t unix_ms, int64_t now_ns, int64_t now_wall_ms)
{
    return now_ns + (unix_ms - now_wall_ms) * MS;
}

/* The same for unix_s. */
static inline int64_t rtime_mono_at(int64_t unix_s, int64_t now_ns, int64_t now_wall_ms)
{
    return rtime_mono_at_ms(unix_s * 1000, now_ns, now_wall_ms);
}

/* Keeps in *next the earliest of the times it is given (0: none). */
static inline void rtime_earliest(int64_t *next, int64_t t)
{
    if (t > 0 && (*next == 0 || t < *next))
        *next = t;
}

#endif
