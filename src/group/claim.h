/* claim.h -- exactly once: a tick becomes this leader's to run, skip or
 * leave, in one atomic script; and the runs registered in Redis so that
 * the whole group knows which runs of a job are alive.
 *
 * Keys (group G, job J; keys.h):
 *   baton:{G}:last:J   the job's high-water mark: its last claimed tick
 *   baton:{G}:busy:J   sorted set of the job's live runs, "<node>/<run_id>",
 *                      scored by their expiry (server time, ms)
 *   baton:{G}:claimed:J hash: node -> its last claim of the job, "<tick>
 *                      <1|3> <member>", 1 claimed to run, 3 as skipped
 *
 * The claim of tick T checks that the leader key still holds our token,
 * that the mark is below T, and (concurrency: forbid) whether a run of J is
 * alive anywhere in the group; then it moves the mark to T and registers
 * the new run with the lease's own expiry. Ticks are claimed in increasing
 * order, so a claimed tick can never be claimed again, and a node that is
 * no longer the leader cannot claim at all. A claim whose answer is lost
 * (Redis timed out after applying it) is retried with the same member: the
 * script recognises its own registration, so the tick still runs once, or
 * (claimed:J) its own claim of the tick as skipped, or to run with the
 * registration since expired, so that the tick is recorded, never dropped
 * as another leader's. A lost claim that is not retried (its node stopped
 * leading) is looked up the same way (claim_lookup). claimed:J keeps each
 * node's last claim of the job (the last 16 nodes' at most), and a node
 * settles its lost claim before it claims another tick of the job, so
 * another leader's claims of later ticks leave it to be found.
 *
 * Over a Redlock quorum every script runs on every master (libbaton's
 * baton_client_eval_all()), each master deciding on its own data, and
 * the answers are reduced (claim_reduce()):
 *   - a tick is ours only when a majority of the counted masters claimed
 *     it. Two claims of one tick need two majorities, which share a
 *     master; that master moved its mark to T at the first and refuses
 *     the second. So no tick runs twice, even with a stale leader (whose
 *     token a majority no longer holds) or a claim retried by a new leader.
 *   - a minority claim (masters unreachable) is undecided: it is retried
 *     with the same member, and completes as masters answer (they answer
 *     OURS, OURS_SKIPPED or OURS_EXPIRED where it applied); a majority
 *     that passed the tick (taken) or holds another leader decides it
 *     against us; what our member registered meanwhile is then released
 *     (undo). A claim to run that a majority applied is run only while a
 *     majority holds its registration (else OURS_EXPIRED: recorded).
 *   - forbid: a run alive on any master of the answering majority is
 *     alive (its registration was made by a majority, which shares a
 *     master with ours): the union of the busy lists decides.
 *   - a restarted master is quarantined (libbaton) and does not count.
 * Registrations are confirmed when a majority still holds them, lost when
 * no majority can; releases and marks are written to every master and
 * hold when a majority applied them (the others expire, or are repaired
 * by the next claim).
 *
 * A registered run stays registered while its node refreshes it: with the
 * lease (the leader's runs expire with its lease: a crashed leader's runs
 * died with it), or on its own after a handover (the runs of a leader that
 * gave its lease up at SIGTERM finish while the next leader already
 * schedules; see runner.h). The end of a run removes it and publishes
 * "ended <job>" on the group's channel baton:{G}:ended, waking a leader that waits
 * for it. Time is the server's inside every script, never a node's. */
#ifndef BATON_CLAIM_H
#define BATON_CLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton_redis.h"

enum claim_mode {
    CLAIM_RUN,          /* claim and register (allow, replace) */
    CLAIM_RUN_OR_WAIT,  /* forbid, a missed tick: if a run is alive, do not claim */
    CLAIM_RUN_OR_SKIP,  /* forbid, a live tick: if a run is alive, claim it as skipped */
    CLAIM_SKIP,         /* claim it as skipped (it fired while our own run was alive) */
    CLAIM_REGISTER,     /* register a run of a tick already ours (a retry): no claim */
};

enum claim_result {
    CLAIM_OK,         /* claimed; the run is registered */
    CLAIM_SKIPPED,    /* claimed as skipped */
    CLAIM_BUSY,       /* not claimed: a run of the job is alive (CLAIM_RUN_OR_WAIT) */
    CLAIM_TAKEN,      /* already claimed: not ours */
    CLAIM_NOT_LEADER, /* the leader key does not hold our token */
    CLAIM_ERROR,      /* Redis did not answer as it should: detail in the client */
    CLAIM_OURS,       /* claimed and registered by an earlier attempt of ours with the
                         same member, whose answer was lost: start it */
    CLAIM_NOT_DURABLE, /* applied on the master, but not acknowledged by min_replicas
                          replicas in time: a failover could lose it, so it must not run */
    CLAIM_OURS_SKIPPED, /* claimed as skipped by an earlier attempt of ours with the same
                           member, whose answer was lost: record it skipped */
    CLAIM_OURS_EXPIRED, /* claimed to run by an earlier attempt of ours with the same
                           member, whose answer was lost and whose registration has
                           expired since: too late to start it; record it not started */
    CLAIM_FULL,         /* not claimed: the job's max_running or its pool's limit is
                           reached (runlimits.h); pool_full says which */
};

/* Returns: the result's name ("ok", "skipped"...). Static. */
const char *claim_result_name(enum claim_result r);

/* The answers of a claim, reduced. busy: the live runs the masters saw
 * (other than the new one), as "<node>/<run_id>", each once. Borrowed from
 * the answers; valid until claim_reply_free(). */
struct claim_reply {
    struct baton_answers *answers; /* owned */
    const char *busy[32];
    size_t nbusy;
    /* The claim did not end in a run here, but some masters registered our
     * member: release it (claim_release), or it looks busy until it
     * expires. */
    bool undo;
    /* Some masters applied it, but it is not decided (BUSY, ERROR): retry
     * it with the same member, or, if this node stops leading first,
     * resolve it (claim_lookup). */
    bool partial;
    bool pool_full; /* CLAIM_FULL: the pool's limit (else the job's max_running) */
    char why[512];  /* CLAIM_ERROR: what each master said */
    int majority;  /* of the masters asked (1: one server) */
};
void claim_reply_free(struct claim_reply *r);

/* Writes the high-water mark of each of the n jobs that has none yet (SET
 * NX: a mark that exists is never moved back), to marks[i] (Unix s: the
 * second the leader starts the job from), if the lease is still the
 * token's. A job added while no leader was there, or whose mark Redis
 * lost, thus has a mark from its first leader on: the next leader catches
 * up from it instead of starting from its own now. At most 256 jobs per
 * call. Returns 0 (also when the lease is no longer ours: nothing
 * written) or EIO. */
int claim_start_marks(struct baton_client *c, const char *group, const char *leader_key,
                      const char *token, const char *const *jobs, const int64_t *marks, size_t n);

/* Reads the high-water marks of the n jobs (one MGET, at most
 * CLAIM_MARKS_MAX jobs): has[i] and v[i] (Unix s) for each. On one server
 * a mark is its value; over a quorum, of the counted masters that answered
 * (R of them), the k-th highest, k = R - (N - majority): every tick a
 * majority claimed is at or below it (R answers share at least k masters
 * with that majority), and a tick claimed by a minority that never
 * completed is above it (so it is caught up, and claimed properly or
 * recorded, not lost); lagging masters (down when the last claims were
 * made, or restarted empty: no mark) are below it unless more lag than a
 * quorum tolerates, and then the highest mark any master has is taken (no
 * tick twice, what may be missed is missed). A mark is valid when it is a
 * positive number no later than now_s + 1 day. Returns 0, or a BATON_E*
 * code (nothing read). */
#define CLAIM_MARKS_MAX 500
int claim_read_marks(struct baton_client *c, const char *group, const char *const *jobs,
                     size_t n, int64_t now_s, bool *has, int64_t *v);

/* Claims tick (Unix s) of job for the leader whose lease key and token
 * are given, registering member ("<node>/<run_id>") when a run is to
 * start, within lim (runlimits.h; NULL: none): a claim that would register a
 * run past a limit claims nothing and answers CLAIM_FULL. Returns the
 * result; *out holds the live runs seen. */
struct claim_limits;
enum claim_result claim_tick(struct baton_client *c, const char *group, const char *job,
                             const char *leader_key, const char *token, int64_t tick,
                             enum claim_mode mode, const char *member,
                             const struct claim_limits *lim, struct claim_reply *out);

/* Reduces out->answers, the masters' answers to a claim script ({code}
 * or {code, {members...}}: -1 not the leader, 0 taken, 1 ok, 2 busy, 3
 * skipped, 4 ours, 5 ours skipped, 6 ours expired, 7 max_running reached,
 * 8 the pool full) made in mode, as
 * described at the top: sets busy, undo, partial and why. One answer (a
 * single server) is taken as it is. Returns the result; CLAIM_ERROR for
 * replies of any other shape. For the scripts that claim like claim_tick
 * (trigger.h). */
enum claim_result claim_reduce(struct claim_reply *out, enum claim_mode mode);

/* What became of a claim of tick by member whose answer was lost, once its
 * node will not retry it, read on every master: CLAIM_OURS (applied, the
 * run still registered), CLAIM_OURS_SKIPPED (applied as skipped),
 * CLAIM_OURS_EXPIRED (applied to run, the registration gone since),
 * CLAIM_TAKEN (not applied, or another claim of the job has come since;
 * over a quorum: applied on too few masters to make a majority), or
 * CLAIM_ERROR (too few answers to tell: ask again). Reads only. */
enum claim_result claim_lookup(struct baton_client *c, const char *group, const char *job,
                               int64_t tick, const char *member);

/* One registered run of this node. */
struct claim_entry {
    const char *job;
    const char *member;
};

enum claim_refresh_mode {
    REFRESH_LEASE,    /* expire with the lease; only while token holds it */
    REFRESH_HANDOVER, /* expire ttl_ms from now; only while token holds the lease */
    REFRESH_OWN,      /* expire ttl_ms from now (runs of a leader that handed over) */
};

/* Extends the registration of n runs (see enum claim_refresh_mode; token
 * is ignored with REFRESH_OWN). lost[] (n entries) is set for each run no
 * longer registered (a data loss, or it expired). Returns 0; BATON_ELOST
 * when token no longer holds the lease (nothing was extended); EIO... */
int claim_refresh(struct baton_client *c, const char *group, const char *leader_key,
                  const char *token, enum claim_refresh_mode mode, int64_t ttl_ms,
                  const struct claim_entry *runs, size_t n, bool *lost);

/* The end of a run: unregisters member and publishes "ended <job>".
 * Returns 0 or EIO... */
int claim_release(struct baton_client *c, const char *group, const char *job, const char *member);

/* Asks the node running member to stop it ("stop <node>/<run_id>" on the
 * events channel). Returns 0 or EIO... */
int claim_request_stop(struct baton_client *c, const char *group, const char *member);

#endif /* BATON_CLAIM_H */
