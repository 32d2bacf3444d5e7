/* stepdown.h -- asking a group's leader to hand over (`baton step-down`,
 * POST /step-down): one protocol for the command and the HTTP control API.
 *
 * Reads who leads (and its term), publishes "step-down <term>" on the
 * group's event channel (only the leader of that term acts on it: it stops
 * scheduling, lets running jobs finish up to shutdown_grace, releases the
 * lease and wakes the followers), and reads the leader every
 * STEPDOWN_POLL_MS until the term changes. When the old leader is gone but
 * nobody leads yet, it waits STEPDOWN_NEW_LEADER_MS more (within the wait)
 * for the new one. */
#ifndef BATON_STEPDOWN_H
#define BATON_STEPDOWN_H

#include <stdint.h>

#include "baton_election.h"

#define STEPDOWN_POLL_MS       50
#define STEPDOWN_NEW_LEADER_MS 2000

enum stepdown_result {
    STEPDOWN_HANDED_OVER,   /* a new term: now names the new leader */
    STEPDOWN_NO_LEADER_YET, /* the old leader is gone, nobody leads yet */
    STEPDOWN_NO_LEADER,     /* nobody led: nothing asked */
    STEPDOWN_UNHEARD,       /* no supervisor listens on the group's channel */
    STEPDOWN_TIMED_OUT,     /* the leader still leads after wait_ms */
};

/* Runs the protocol above for at most wait_ms. Returns 0 with *result,
 * *old (the leader asked) and *now (the leader last read), or a BATON_E*
 * code (the detail in the client's errstr). */
int stepdown_run(struct baton_client *c, const char *group, int64_t wait_ms,
                 enum stepdown_result *result, struct baton_leader_info *old,
                 struct baton_leader_info *now);

#endif /* BATON_STEPDOWN_H */
