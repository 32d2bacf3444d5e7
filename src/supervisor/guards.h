/* guards.h -- the machine's guards (MACHINE_GUARDS in machine.h): the only
 * facts outside an event that decide a move. They read the daemon's facts
 * through struct guards_host and change nothing, so that check_daemon.c
 * drives them, and the machine with them, on fake facts: no Redis, no
 * processes, no clock.
 *
 * may_block is also the one gate of blocking Redis calls on the daemon's
 * loop (the runner's and the HTTP view's included): a call may start only
 * if it would end, after at most redis_timeout, before every stop point:
 * the lease's while we hold it, the runner's for the runs it keeps
 * registered on their own. None while pausing: jobs are being stopped
 * against a deadline. */
#ifndef BATON_GUARDS_H
#define BATON_GUARDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "machine.h"

/* Where the facts come from (the daemon: the loop's clock, the election,
 * the runner). Every function is given ctx. */
struct guards_host {
    int64_t (*now)(void *ctx);             /* CLOCK_MONOTONIC ns */
    int64_t (*lease_deadline)(void *ctx);  /* the lease's local deadline, ns; 0: none held */
    int64_t (*runs_stop_point)(void *ctx); /* the runner's own stop point, ns; 0: none */
    size_t (*running)(void *ctx);          /* runs alive, of any term */
    void *ctx;
};

struct guards {
    struct guards_host h;
    const struct machine *m; /* borrowed: its state (no blocking call while pausing) */
    int64_t guard_ns;        /* the lease's stop point: its deadline - guard_ns */
    bool stopping;           /* SIGTERM or SIGINT was received (the daemon sets it) */
};

/* The guards, indexed by enum machine_guard; each reads a
 * const struct guards * (the machine's guard_ctx). */
extern const machine_guard_fn guards_table[G_COUNT];

/* The guard may_block, and the gate of blocking calls (above). */
bool guards_may_block(const struct guards *g);

#endif /* BATON_GUARDS_H */
