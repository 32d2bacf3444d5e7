/* trigger.h -- "run this job now": a request stored in Redis, run once by
 * whichever node leads, even across a failover or a client that retries.
 *
 * Keys (group G; keys.h):
 *   baton:{G}:trigger:<id>  hash: the request and what became of it
 *   baton:{G}:triggers      sorted set: the ids not yet done, scored by the
 *                           time they were requested (server time, ms)
 *
 * A request has an id (the idempotency key: `baton trigger --id`, or one
 * made up by the client). Asking twice with one id finds the first request
 * and makes no second one. Its life:
 *
 *   pending --claim--> claimed --started--> running --finish--> done
 *      ^                  |                    |
 *      +---- requeue -----+                    +-- its node died --> done (killed)
 *
 * The leader claims a pending request in one script that checks its lease
 * token and registers the run in the job's busy set (claim.h), exactly as a
 * tick is claimed; then starts it, and writes `running`. A request claimed
 * by a leader that died before it started (its registration expired with
 * its lease: the process cannot be alive) goes back to pending for the
 * next leader, with its attempt counted; one that was running when its
 * node died is done: its run died with it (self-fencing), and it is not
 * started again. What is left is the moment between the start of the
 * process and the write of `running` (about one Redis round trip): a node
 * that dies exactly then has its request run again.
 *
 * The end of the run writes `done` with the outcome, removes the run from
 * the busy set and publishes "done <id>" (for `baton trigger --wait`) and
 * "ended <job>" on the group's events channel, in one script. A done
 * request is kept TRIGGER_KEEP_S, so a retry within that time still finds
 * it. Time is the server's inside every script.
 *
 * Over a Redlock quorum every script runs on every master (claim.h). A
 * request is made when a majority stored it; one that reached fewer is
 * not made (the client says so), and the leader that finds it on so few
 * masters that no majority could hold it ends it as rejected (incomplete),
 * so it never runs. Reads take every master's copy and keep the most
 * advanced (the highest attempt, then pending < claimed < running < done);
 * the queue is the union of the masters'. A claim needs a majority of
 * pending copies moved to claimed, so two claims of one attempt cannot
 * both succeed; a requeue or a finish holds when a majority applied it. */
#ifndef BATON_TRIGGER_H
#define BATON_TRIGGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "baton_redis.h"
#include "claim.h"
#include "history.h"

#define TRIGGER_ID_MAX    48     /* bytes of an id, at most */
#define TRIGGER_KEEP_S    86400  /* a done request is remembered this long */
#define TRIGGER_QUEUE_MAX 1000   /* requests not yet done in a group, at most */

enum trigger_state { TRIGGER_PENDING, TRIGGER_CLAIMED, TRIGGER_RUNNING, TRIGGER_DONE };

/* Returns: the state's name ("pending"...). Static. */
const char *trigger_state_name(enum trigger_state s);

/* True when id is a valid request id: 1 to TRIGGER_ID_MAX bytes of
 * [A-Za-z0-9_.:-], starting with a letter or digit. */
bool trigger_id_ok(const char *id);

/* Writes a new random id ("20261123T101500-3f9a0c2d") into buf (at least
 * TRIGGER_ID_MAX + 1 bytes). Returns 0, or -1 when no randomness could be
 * read. */
int trigger_make_id(char *buf, size_t len);

/* The run id of attempt n of request id: the id itself for the first,
 * "<id>.<n>" after (at most TRIGGER_ID_MAX + 11 bytes). Each attempt has
 * its own, so that the end of an attempt whose leader was cut off cannot
 * be taken for the end of the next one. */
void trigger_run_id(const char *id, int attempt, char *buf, size_t len);

/* A request as Redis holds it. Strings are borrowed from the answers a
 * struct trigger_reply holds; "" when absent. */
struct trigger {
    const char *id, *job, *by;
    enum trigger_state state;
    int attempt;              /* 1 for the first try */
    int64_t requested_ms;     /* server time */
    const char *node, *run_id; /* who claimed it (claimed, running, done) */
    uint64_t term;
    int64_t started_ms, ended_ms;
    const char *outcome;      /* done: a history outcome, or "rejected" */
    int exit_code;            /* -1: none */
    const char *signal, *reason;
    /* done killed by the leader that found its run's registration gone, not
     * by its node: the node may only have been stalled, and its report,
     * if it comes, replaces the verdict (trigger_finish) */
    bool presumed;
};

struct trigger_reply {
    struct baton_answers *answers;
    struct trigger *v;
    size_t n;
    /* trigger_get: so few masters hold the request that no majority could
     * (it reached a minority when it was made): it is not a request */
    bool incomplete;
};
void trigger_reply_free(struct trigger_reply *r);

/* Returns: t as a JSON object (owned; NULL on ENOMEM): id, job, state, by,
 * attempt, requested, node, run_id, started, ended, outcome, exit_code,
 * signal, reason (null when absent): `baton trigger --json` and the HTTP
 * control API's answer. */
cJSON *trigger_json(const struct trigger *t);

/* ---- the client side (baton trigger) ---- */

enum trigger_request_result {
    TRIGGER_CREATED,  /* a new request; *receivers supervisors heard it */
    TRIGGER_EXISTS,   /* a request with this id exists (for this job): out->v[0] */
    TRIGGER_OTHER_JOB, /* a request with this id exists for another job: out->v[0] */
    TRIGGER_FULL,     /* TRIGGER_QUEUE_MAX requests are waiting */
};

/* Stores a request of job under id, by `by` (user@host), unless one with
 * this id exists, and wakes the leader. Returns 0 and *result (with the
 * request in out->v[0] unless TRIGGER_FULL; free out with
 * trigger_reply_free), or a BATON_E* code. */
int trigger_request(struct baton_client *c, const char *group, const char *job, const char *id,
                    const char *by, enum trigger_request_result *result, int *receivers,
                    struct trigger_reply *out);

/* Reads request id into out->v[0] (out->n 0: there is none), the most
 * advanced copy of the masters' (see the top). Returns 0 or a BATON_E*
 * code. */
int trigger_get(struct baton_client *c, const char *group, const char *id,
                struct trigger_reply *out);

/* ---- the leader's side (runner/control.c) ---- */

/* The oldest `max` requests not yet done, oldest first. Returns 0 or a
 * BATON_E* code. */
int trigger_list(struct baton_client *c, const char *group, size_t max, struct trigger_reply *out);

/* Claims pending request id (attempt `attempt`) of job for the leader
 * whose lease key and token are given, registering member as a run of job
 * (claim.h) under run_id. mode is CLAIM_RUN or CLAIM_RUN_OR_WAIT (not
 * claimed while a run of job is alive). Returns CLAIM_OK, CLAIM_OURS (an
 * earlier attempt of ours claimed it: its answer was lost), CLAIM_BUSY,
 * CLAIM_TAKEN (not pending any more, or another attempt), CLAIM_NOT_LEADER
 * or CLAIM_ERROR; *out holds the live runs seen. */
enum claim_result trigger_claim(struct baton_client *c, const char *group, const char *job,
                                const char *leader_key, const char *token, const char *id,
                                int attempt, enum claim_mode mode, const char *member,
                                const char *node, uint64_t term, struct claim_reply *out);

/* Marks claimed request id as running under run_id. Returns 0 or a
 * BATON_E* code. */
int trigger_started(struct baton_client *c, const char *group, const char *id,
                    const char *run_id);

/* A request another node claimed: if its run (member, a run of job) is no
 * longer registered, a claimed request goes back to pending (attempt + 1;
 * *requeued true) and a running one is done, outcome killed, presumed
 * (*lost true): self-fencing ended the run by its registration's end, but
 * how is known only to its node; its end is taken as the registration's
 * last renewal (its score less lease_ttl_ms). Nothing changes while the
 * run is registered. Returns 0 or a BATON_E*. */
int trigger_recover(struct baton_client *c, const char *group, const char *job, const char *id,
                    const char *run_id, const char *member, int64_t lease_ttl_ms, bool *requeued,
                    bool *lost);

/* The end of the run run_id of request id: writes done with the outcome of
 * rec (outcome, exit_code or signal, reason; its end: started_ms +
 * duration_ms), unregisters member from job's busy set and publishes
 * "ended <job>" and "done <id>", in one step. A presumed verdict of the
 * same run (trigger_recover) is replaced. A request that another attempt
 * has taken over meanwhile is left as it is.
 * Returns 0 or a BATON_E* code. */
int trigger_finish(struct baton_client *c, const char *group, const char *job, const char *member,
                   const char *id, const struct history_rec *rec);

/* Takes id out of the queue (its hash is gone: deleted by hand). Returns 0
 * or a BATON_E* code. */
int trigger_forget(struct baton_client *c, const char *group, const char *id);

/* Ends pending request id without a run (outcome "rejected": the leader
 * has no such job), with reason. Returns 0 or a BATON_E* code. */
int trigger_reject(struct baton_client *c, const char *group, const char *id, const char *reason);

#endif /* BATON_TRIGGER_H */
