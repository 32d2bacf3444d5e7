/* runlimits.h -- fleet-wide limits on runs, counted in Redis: at most
 * max_running runs of a job at once across the group, and at most a
 * pool's limit of runs of its jobs (jobs.yaml's pools:).
 *
 * The permit is the run's registration (claim.h): baton:{G}:busy:J holds
 * each live run of job J as "<node>/<run_id>" scored by its expiry (server
 * ms). A slot is taken in the same script that claims the tick (or
 * registers a retry), so that no tick is claimed without its slot and no
 * slot is held without its run; it is held while the registration is
 * refreshed (with the leader's lease, or on its own after a handover: the
 * runs the old leader still has count for the next one), and freed by the
 * run's release, or by its expiry when its node died, never before: the
 * shim of a run kills it before its registration can expire (runs.h).
 * Nothing is counted in a leader's memory: whichever leader claims counts
 * the registrations in Redis.
 *
 * The contract for whoever claims a run (the leader today; the dispatch of
 * runs to followers tomorrow): pass the job's limits to the claim
 * (claim_tick); an answer CLAIM_FULL means nothing was claimed nor
 * registered: the tick waits, unclaimed, and asks again when a run of the
 * job or of the pool ends ("ended <job>" on the group's channel) or after
 * LIMITS_POLL_MS (a registration that expired publishes nothing). Waiting
 * ticks of a pool are served first come, first served by the claimer
 * (ordered by their instant, then job name: the same order on every
 * leader), which claims a pool's ticks one at a time in that order.
 *
 * Over a Redlock quorum each master counts its own registrations and any
 * master that finds a limit reached makes the claim wait: a run registered
 * on a majority is seen by every majority that answers. */
#ifndef BATON_LIMITS_H
#define BATON_LIMITS_H

#include <stddef.h>

#include "baton_redis.h"
#include "jobs.h"

#define LIMITS_POLL_MS 500 /* a tick waiting for a slot looks again this often at least */
/* Jobs of one pool counted by one claim (jobs.yaml's check refuses more). */
#define LIMITS_POOL_MAX JOBS_POOL_MAX

/* One claim's limits. Borrowed for the call. */
struct claim_limits {
    int max_running;              /* 0: none */
    int pool_limit;               /* 0: no pool */
    const char *const *pool_jobs; /* the pool's jobs (the claimed one among them) */
    size_t npool;                 /* at most LIMITS_POOL_MAX */
    /* Not a limit: the job runs on members (assign.h): a claim to run also
     * writes the assignment's marker, in the same script. */
    bool dispatch;
};

/* The Lua of the check, for the claim scripts: defines limits_full(now),
 * which returns 0 (room), 7 (max_running reached) or 8 (the pool is full),
 * with KEYS[busy] the job's busy:J, KEYS[first..] the pool's busy keys,
 * ARGV[amax] max_running and ARGV[apool] the pool's limit (0: none). */
#define LIMITS_LUA(busy, first, amax, apool)                                                       \
    "local function limits_full(now)\n"                                                            \
    "  local mr, pl, lo = tonumber(ARGV[" amax "]) or 0, tonumber(ARGV[" apool "]) or 0, "         \
    "'(' .. now\n"                                                                                 \
    "  if mr > 0 and redis.call('zcount', KEYS[" busy "], lo, '+inf') >= mr then return 7 end\n"   \
    "  if pl > 0 then\n"                                                                           \
    "    local n = 0\n"                                                                            \
    "    for i = " first ", #KEYS do n = n + redis.call('zcount', KEYS[i], lo, '+inf') end\n"      \
    "    if n >= pl then return 8 end\n"                                                           \
    "  end\n"                                                                                      \
    "  return 0\n"                                                                                 \
    "end\n"

/* The live runs of the n jobs (a pool's) now, by the server's clock: on a
 * quorum, the most any counted master holds. Returns 0 and *live, or a
 * BATON_E* code. */
int limits_occupancy(struct baton_client *c, const char *group, const char *const *jobs, size_t n,
                     int *live);

/* A pool as status and metrics show it: jobs.yaml's limit and the live
 * runs of its jobs in Redis (runs: limits_pools_read). All owned by the
 * array (limits_pools_free). */
struct limits_pool {
    char *name;
    int limit;
    char **jobs; /* its jobs' names, njobs */
    size_t njobs;
    int runs; /* live runs as last read; -1: not read (or the read failed) */
};

/* The pools of jobs (pools:, in file order), with their jobs, runs -1.
 * Returns 0 and *out (owned; limits_pools_free; NULL when none), or
 * BATON_ENOMEM. */
int limits_pools_new(const struct jobs *jobs, struct limits_pool **out, size_t *n);
/* A copy of v[0..n). Returns: owned, or NULL (none, or ENOMEM). */
struct limits_pool *limits_pools_dup(const struct limits_pool *v, size_t n);
void limits_pools_free(struct limits_pool *v, size_t n);
/* Reads each pool's live runs (limits_occupancy) into its runs; a pool
 * whose read failed gets -1. Returns 0, or the first failure's BATON_E*. */
int limits_pools_read(struct baton_client *c, const char *group, struct limits_pool *v, size_t n);

#endif
