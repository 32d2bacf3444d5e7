/* members.h -- who is in a group: each supervisor's heartbeat, reading them
 * back for `baton status`, forgetting nodes that are gone, and claiming a
 * node name at start so that two live supervisors never share one.
 *
 * Keys (group G; see keys.h):
 *   baton:{G}:nodes   hash: node -> JSON {"state","term","pid","host",
 *                     "poll_ms","version","since","running","runs",
 *                     "waiting","jobs_hash","jobs"} as the node wrote it
 *                     (jobs_hash: jobs.h's jobs_hash() of its effective
 *                     jobs, 16 hex digits; jobs: how many; running: how
 *                     many runs' commands run there now, runs: the oldest
 *                     of them, runner_runs_json(); waiting: a leader's
 *                     ticks waiting for a fleet-wide limit,
 *                     runner_waiting_json())
 *   baton:{G}:seen    hash: node -> last heartbeat, server time in ms
 *   baton:{G}:forget  sorted set: node, scored with the server time (ms) at
 *                     which it is forgotten unless it heartbeats again
 * A heartbeat is one script: it writes the three and forgets every node
 * whose time has come. Time is the server's, never a node's.
 *
 * How long a node stays listed after its last heartbeat: 1 minute when it
 * stopped (its last heartbeat says "stopped"), else 5 minutes or 3 x its
 * poll, whichever is longer. A node is alive while its last heartbeat is
 * younger than 2 x its poll + 2 s and it did not stop. */
#ifndef BATON_MEMBERS_H
#define BATON_MEMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton.h"

#define MEMBERS_STOPPED_FORGET_MS INT64_C(60000)
#define MEMBERS_FORGET_MIN_MS     INT64_C(300000)

/* How long after this heartbeat the node is forgotten (see above). */
int64_t members_forget_ms(int64_t poll_ms, bool stopped);
/* How long after its last heartbeat a node of this poll counts as alive. */
int64_t members_alive_ms(int64_t poll_ms);

/* This machine's host name, as heartbeats carry it (static). */
const char *members_host(void);

/* Writes node's heartbeat; info_json is a JSON object (the node's state,
 * with "host", "pid" and "poll_ms" for members_claim). Returns 0 or a
 * BATON_E* code; on 0, *rank (may be NULL) is set to the number of members
 * whose names sort before node's (unchanged when Redis did not say). */
int members_heartbeat(struct baton_client *c, const char *group, const char *node,
                      const char *info_json, int64_t forget_ms, int64_t *rank);

/* Claims node for this process (pid, members_host()) at start: refused
 * while another alive supervisor's heartbeat holds the name. A holder on
 * this host whose pid is gone (a crashed predecessor) is replaced. Returns
 * BATON_OK (the name is ours: a first heartbeat is written, and *rank set
 * as members_heartbeat() sets it), BATON_ETAKEN with a one-line message in
 * msg naming the holder's host, pid and last heartbeat, or another BATON_E*
 * code when Redis cannot say (the caller goes on: heartbeats will
 * follow). */
int members_claim(struct baton_client *c, const char *group, const char *node, int64_t poll_ms,
                  int64_t *rank, char *msg, size_t msglen);

struct member {
    char *node;
    char *info_json; /* as written by the node */
    int64_t seen_ago_ms;
};

/* Reads every node not yet forgotten, most recent first. Returns 0 and
 * *out and *n (owned; free with members_free), or a BATON_E* code. */
int members_read(struct baton_client *c, const char *group, struct member **out, size_t *n);
void members_free(struct member *m, size_t n);

/* True when m's last heartbeat is recent for its poll and it did not stop. */
bool members_alive(const struct member *m);

/* The hash of the effective jobs m's heartbeat carries, into hash (at
 * least 17 bytes), and their number into *njobs (-1 when absent). Returns
 * false when it carries none (a node not yet heartbeating, or an older
 * baton). */
bool members_jobs(const struct member *m, char *hash, size_t len, long *njobs);

#endif
