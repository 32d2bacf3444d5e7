/* clock.h -- the clocks and the units of time of the supervisor, the
 * command and baton-shim (libbaton keeps its own: it depends on nothing of
 * ours, and machine/ has its own as well).
 *
 * Two clocks, two units:
 *   - CLOCK_MONOTONIC in nanoseconds: deadlines, timers, durations. MS is
 *     one millisecond of it (`timeout_ms * MS`).
 *   - CLOCK_REALTIME in milliseconds since the Unix epoch: what is shown,
 *     logged and stored. MS_SECOND ... MS_DAY are durations in
 *     milliseconds (the configuration's values).
 * Header only, libc only. */
#ifndef BATON_CLOCK_H
#define BATON_CLOCK_H

#include <stdint.h>
#include <time.h>

#define MS        INT64_C(1000000) /* one millisecond, in nanoseconds */
#define MS_SECOND INT64_C(1000)    /* in milliseconds: */
#define MS_MINUTE (60 * MS_SECOND)
#define MS_HOUR   (60 * MS_MINUTE)
#define MS_DAY    (24 * MS_HOUR)

/* Clock id, nanoseconds (since its epoch). */
static inline int64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CLOCK_MONOTONIC, nanoseconds. */
static inline int64_t mono_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

/* CLOCK_MONOTONIC, milliseconds. */
static inline int64_t mono_ms(void)
{
    return mono_ns() / MS;
}

/* CLOCK_REALTIME, nanoseconds since the Unix epoch. */
static inline int64_t wall_ns(void)
{
    return clock_ns(CLOCK_REALTIME);
}

/* CLOCK_REALTIME, milliseconds since the Unix epoch. */
static inline int64_t wall_ms(void)
{
    return wall_ns() / MS;
}

#endif /* BATON_CLOCK_H */
