/* jitter.h -- a job's jitter: how long after its tick each tick's run
 * begins. The delay is a pure function of (group, job, tick), so that every
 * leader of the group computes the same one, before and after a failover,
 * and anyone can compute it again from the outside:
 *
 *   digest = SHA-1 of  group NUL job NUL tick      (tick: Unix seconds in
 *                                                   decimal, e.g. "1700000000")
 *   delay  = (the digest's first 8 bytes, big-endian) mod jitter_ms
 *
 * e.g. in a shell: printf 'g\0backup\0%s' 1700000000 | sha1sum. Jitter
 * spreads a fleet's load (every job of every group at :00 no longer starts
 * at once); it moves no tick: claims, marks, catch-up, concurrency and the
 * history all still key on the tick itself.
 *
 * Pure: no clock reads, no I/O, no state. */
#ifndef BATON_JITTER_H
#define BATON_JITTER_H

#include <stdint.h>

#define JITTER_PROBE_TICKS 64 /* ticks a schedule's shortest interval is looked for in */

/* Returns: the delay (ms) of the tick (Unix s) of job in group, in
 * [0, jitter_ms); 0 when jitter_ms <= 0. group NULL counts as "". The
 * reduction's bias is below jitter_ms / 2^64 (nothing, for any jitter a
 * job may have). */
int64_t jitter_delay_ms(const char *group, const char *job, int64_t tick, int64_t jitter_ms);

struct cron_expr;
struct cron_tz;

/* The shortest interval (ms) between two consecutive ticks of e in tz
 * among those after `after` (Unix s), looking at most JITTER_PROBE_TICKS
 * ticks ahead and stopping at the first interval at most stop_ms; *at (if
 * not NULL) gets the tick that interval starts at. @every has one
 * interval, its period. Returns 0 when e fires fewer than twice. */
int64_t jitter_shortest_ms(const struct cron_expr *e, const struct cron_tz *tz, int64_t after,
                           int64_t stop_ms, int64_t *at);

#endif
