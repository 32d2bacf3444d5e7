/* drift.h -- config drift: which nodes of the group run other jobs than
 * the leader.
 *
 * Each node's heartbeat carries the hash of its effective jobs (jobs.h's
 * jobs_hash(): every job's fingerprint, sorted, so the file's order does
 * not count) and their number (members.h). A half-done deploy leaves some
 * nodes with an old jobs.yaml: they would run the old schedule after the
 * next failover. The leader reads the heartbeats every poll (one script,
 * through the daemon's may_block() gate) and hands them to drift_check(),
 * which logs `config_drift` once per change of a node's hash (or of the
 * leader's own), and `config_drift_resolved` when the node is back in line.
 * A node that stops heartbeating, stops, or carries no hash (an older
 * baton) is left out and forgotten without a line. The state is the
 * leader's: drift_reset() when it stops leading, so that the next time it
 * leads it reports what it finds afresh. */
#ifndef BATON_DRIFT_H
#define BATON_DRIFT_H

#include <stddef.h>

#include "log.h"
#include "members.h"

struct drift;

/* Returns: owned (free with drift_free), or NULL on ENOMEM. */
struct drift *drift_new(void);
/* NULL is a no-op. */
void drift_free(struct drift *d);

/* Compares the alive members m[0..n) but self with hash (self's jobs,
 * njobs of them) and logs what changed since the last call. */
void drift_check(struct drift *d, struct log *log, const char *self, const char *hash,
                 long njobs, const struct member *m, size_t n);
/* Forgets what was reported. */
void drift_reset(struct drift *d);

#endif /* BATON_DRIFT_H */
