/* assign.h -- a tick run on another member of the group: the leader
 * offers it, exactly one member accepts it, and an offer not accepted in
 * time, or a run whose member vanished, is offered again; the choice of
 * the member (a pure function); all of it in Redis, so that a new leader
 * adopts what the last one dispatched instead of dispatching it again.
 *
 * Keys (group G, job J, node N; keys.h):
 *   baton:{G}:assign:J  hash: field -> "<state> <node> <attempt> <at_ms>
 *                       <run_id> <moves> <died>", one per tick dispatched
 *                       and not yet ended; field "<tick>" (run_on: any,
 *                       labels) or "<tick>/<node>" (run_on: all: one per
 *                       node and tick). state: claimed (the claim's marker,
 *                       written by the claim script itself: node is the
 *                       leader that claimed it, at_ms when), offered
 *                       (at_ms: the offer's deadline), accepted (at_ms:
 *                       when; the member may not have started the
 *                       command), started (the member is about to exec it,
 *                       or did), retry (the run failed on node, which
 *                       recorded it: attempt + 1 is due at at_ms),
 *                       skipped (run_on: all: forbid: node's earlier run
 *                       was alive at the offer; replace: a newer tick was
 *                       offered to node before it accepted this one;
 *                       at_ms: then; the leader records it skipped,
 *                       or superseded, there and drops it); moves:
 *                       how many times the tick was offered again (an
 *                       offer that expired, a member lost); died: the
 *                       member that accepted it and was lost before
 *                       starting it ('-': none; absent in an older
 *                       baton's values)
 *   baton:{G}:assigned  set: the jobs whose assign:J has a field (the
 *                       leader reads them all in one call)
 *   baton:{G}:offers:N  zset: "<job> <field>" offered to N, by deadline
 *   baton:{G}:load:N    zset: "<job> <run_id>" of the runs N accepted
 *                       (its capacity in use), by the time accepted
 *   baton:{G}:busy:J    the runs' registrations (claim.h): the offer's
 *                       "<node>/<run_id>" by the offer's deadline, then,
 *                       accepted, by the member's own lease
 * Every value and key is written by the scripts below; time is the
 * server's inside every script, never a node's. One server only (one
 * Redis, Sentinel or Cluster: the keys share the slot of {G}): over a
 * Redlock quorum run_on other than leader is refused at load.
 *
 * The protocol:
 *  1. The leader claims tick T of J as for its own runs (claim.h: the
 *     mark, forbid and busy, catch-up unchanged), registering
 *     "<leader>/<run_id>" under its lease; the same script writes the
 *     tick's marker (claimed) in assign:J, so that a claimed tick is never
 *     without an entry, whatever dies when. It then chooses a member
 *     (assign_choose(): alive, carrying the job's labels, with room by
 *     the accepted runs and outstanding offers read from Redis (and the
 *     offers made since the read), in proportion to capacity among those)
 *     and offers the tick (assign_offer(), under its token); when every
 *     member that carries the labels is full, the marker waits in Redis
 *     (its registration held: assign_hold()) and is offered when one has
 *     room, oldest tick first. The claim's registration becomes
 *     "<node>/<run_id>" until the deadline, so that a forbid job sees the
 *     tick alive while it is offered, and "offer <node>" is published on
 *     the group's events channel. The first offer takes the marker
 *     (expect "claimed"), so it is made once, by whichever leader reads
 *     the marker first; a tick the leader records itself (not started,
 *     aged out) is recorded only after its marker is dropped (assign_drop
 *     "claimed").
 *  2. The member hears the offer (or finds it at its next poll of
 *     offers:N) and accepts it (assign_accept()): only while it is still
 *     offered to it, before the deadline, and with load:N under its
 *     capacity (entries whose registration is gone are pruned first). The
 *     registration is then the member's, for its lease, refreshed by the
 *     member as a handed-over run's is (claim_refresh REFRESH_OWN), and
 *     its shim fences the command by it. Before the command's exec the
 *     member marks it started (assign_started()); if that write fails it
 *     does not start it.
 *  3. At the run's end the member writes the history record (its node,
 *     the dispatch delay) and ends the assignment (assign_end(): removes
 *     the registration, the load entry and the field; "ended <job>"); a
 *     run that failed, with retries left, is handed back as a retry due
 *     after the job's backoff instead of removed, held busy through the
 *     backoff ("<node>/<run_id>/wait": forbid and max_running see it, as
 *     they would the run) until its next attempt is offered or dropped.
 *  4. The leader (or the next one: it reads assign:J of every job the
 *     index names, in one call) looks at what is outstanding: a marker, a
 *     retry due, an offer past its deadline, or an
 *     accepted or started run whose registration is gone (its member was
 *     cut off, frozen, killed: its shim stopped the command before the
 *     registration could pass), is offered again or dropped with
 *     assign_offer()/assign_drop(), each a compare-and-set on the value
 *     the leader read that re-checks in the script that the deadline has
 *     passed, or the registration is gone. Accept needs the value offered
 *     and the deadline ahead, so exactly one of accept and re-offer wins,
 *     and an accepted run whose member keeps its registration is never
 *     offered again. A run lost after `started` is recorded lost (with its
 *     node) and offered again as a retry per `retries`; one lost while
 *     only accepted never started: it is offered again once, regardless
 *     of retries, with died naming that member (its record says so); a
 *     second member lost so: recorded not started, naming both.
 *  5. A member that leaves (SIGTERM) stops accepting at once, finishes
 *     what it started within shutdown_grace, and its offers not yet
 *     accepted expire and are offered elsewhere.
 * run_on: all offers field "<tick>/<node>" to each alive member carrying
 * the labels when the marker is offered (assign_offer_all: the marker and
 * every offer in one script); such an offer is never moved to another
 * node: one that expires (the node was gone or full), or a run accepted
 * and lost before its start, is recorded not started, a run lost while it
 * ran is recorded lost, and a failed one's retry goes to the same node.
 * concurrency forbid and replace apply per node under all: the tick is
 * claimed without looking at the runs alive, and the offers' script skips
 * (forbid) each node whose earlier run is still alive, leaving "skipped"
 * for the leader to record against that node; under replace the node,
 * offered a tick while its own earlier run lives, stops that run and
 * accepts once it has ended (dispatch_member.c), and an older tick
 * offered to it and not yet accepted is left "skipped" by the newer
 * one's offer, recorded superseded there. */
#ifndef BATON_ASSIGN_H
#define BATON_ASSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton_redis.h"

#define ASSIGN_OFFER_MS   2000 /* an offer not accepted within this is offered again */
#define ASSIGN_LABELS_MAX 16   /* labels of a node, and of a job's run_on */
#define ASSIGN_LABEL_MAX  64   /* characters of a label */
#define ASSIGN_FIELD_MAX  224  /* "<tick>/<node>" */
#define ASSIGN_VALUE_MAX  544
#define ASSIGN_JOB_MAX    129 /* JOB_NAME_MAX + 1 */

/* ---- the choice: a pure function ---- */

/* A member as the leader sees it: its heartbeat, what Redis counts, and
 * the leader's account of its share. */
struct assign_node {
    const char *node;
    const char *const *labels; /* borrowed */
    size_t nlabels;
    int64_t capacity; /* the most runs it takes at once (its heartbeat) */
    int64_t in_use;   /* its accepted runs and outstanding offers (Redis) */
    bool alive;       /* members_alive(), and not stopping */
    int64_t credit;   /* how far it is behind its share (assign_charge); 0 at first */
};

/* True when n carries every one of the labels (none: true). */
bool assign_has_labels(const struct assign_node *n, const char *const *labels, size_t nlabels);

#define ASSIGN_NO_MEMBER (-1) /* no alive member that takes runs carries the labels */
#define ASSIGN_NO_ROOM   (-2) /* some do, and every one of them is full */

/* The member to offer a tick to: among the alive nodes with room (in_use <
 * capacity) that carry every label, the one furthest behind its share of
 * the ticks offered, shares in proportion to capacity: a smooth weighted
 * round robin, the largest credit + capacity (assign_charge() keeps the
 * credits). The spread is then fair, or proportional to capacity, over any
 * run of ticks whatever the runs' lengths and however late a member
 * accepts (a load read at the instant of each tick is not: short runs all
 * end at 0, and a member slow to accept looks busy); in_use only says who
 * has room. Ties go to the lowest hash of (seed, node), so that ticks
 * (seed: a hash of job and tick) spread over equal nodes, and leaders with
 * the same credits (a new one: all 0) choose alike. avoid (may be NULL): a
 * node that let the tick down (its offer expired, its run was lost),
 * chosen only if no other fits. Returns the index in v, ASSIGN_NO_ROOM or
 * ASSIGN_NO_MEMBER. */
long assign_choose(const struct assign_node *v, size_t n, const char *const *labels, size_t nlabels,
                   const char *avoid, uint64_t seed);

/* v[chosen] was offered the tick that assign_choose() chose with the same
 * v, labels and avoid: every node that could have been chosen gains its
 * capacity in credit, chosen loses their sum and counts the offer in
 * in_use (the credits of all of them together stay 0). */
void assign_charge(struct assign_node *v, size_t n, const char *const *labels, size_t nlabels,
                   const char *avoid, long chosen);

/* A 64-bit hash of (job, tick, salt) for assign_choose()'s seed. */
uint64_t assign_seed(const char *job, int64_t tick, const char *salt);

/* ---- an assignment's value ---- */

enum assign_state {
    ASSIGN_OFFERED,
    ASSIGN_ACCEPTED,
    ASSIGN_STARTED,
    ASSIGN_CLAIMED, /* the claim's marker: claimed, not yet offered */
    ASSIGN_RETRY,   /* its run failed on node: attempt + 1 is offered at at_ms */
    ASSIGN_SKIPPED, /* run_on: all: not run on node (forbid: its earlier run lived;
                       replace: a newer tick came first): for the leader to record
                       (at_ms: when decided) */
};

/* concurrency, per node, of a run_on: all job's offers (assign_offer_all). */
enum assign_per_node {
    ASSIGN_NODE_ALLOW,   /* every node is offered the tick */
    ASSIGN_NODE_FORBID,  /* not a node whose earlier run lives */
    ASSIGN_NODE_REPLACE, /* and an older tick not yet accepted there gives way */
};

struct assign {
    char field[ASSIGN_FIELD_MAX]; /* "<tick>" or "<tick>/<node>" */
    int64_t tick;
    enum assign_state state;
    char node[160];
    int attempt;
    int64_t at_ms; /* offered: the deadline; accepted, started: when accepted */
    char run_id[96];
    int moves;
    char died[160];               /* the member that accepted it and died before starting it
                                     ("": none) */
    char value[ASSIGN_VALUE_MAX]; /* as read: what a compare-and-set expects */
    char job[ASSIGN_JOB_MAX];     /* assign_list_all(): its job */
};

/* Parses field and value into *a. Returns false when they are not an
 * assignment's. */
bool assign_parse(const char *field, const char *value, struct assign *a);
/* Writes a's value (from its parts) into a->value. Returns false when it
 * does not fit. */
bool assign_format(struct assign *a);
const char *assign_state_name(enum assign_state s);

/* ---- the scripts (one server) ---- */

/* Offers a's tick to a->node (a->state offered; a->at_ms: ignored, the
 * deadline is the server's now + offer_ms; a->died carried), under the
 * leader's token: expect NULL: no assignment of a->field may exist, and
 * from (may be NULL), a registration, is replaced by the offer's; expect
 * "claimed": only while the field holds the claim's marker of a->run_id
 * (its registration is replaced); expect a value read before: only while
 * the field still holds it and it is re-offerable (an offer past its
 * deadline, a retry due; accepted or started with its registration
 * gone), whose registration is replaced. Publishes "offer <node>".
 * Returns 1 (offered; a->value and a->at_ms are the new ones), 0 (not:
 * the value changed, or not re-offerable), BATON_ELOST (not the leader),
 * or another BATON_E* code. */
int assign_offer(struct baton_client *c, const char *group, const char *job, const char *leader_key,
                 const char *token, const char *from, const char *expect, struct assign *a,
                 int64_t offer_ms);

/* run_on: all: replaces the claim's marker m (its field "<tick>", its
 * run id) by an offer "<tick>/<node>" to each of the n nodes (run id
 * run_ids[i]), in one script under the leader's token; a node's field
 * already there is left as it is (a retry of an answer lost). n == 0 drops
 * the marker. With forbid, concurrency per node: a node with a live
 * registration of the job in busy:J (an earlier tick's offer, run, or next
 * attempt waiting; the markers of other ticks, which name the leader that
 * claimed them, do not count) is not offered the tick: its field is
 * written "skipped <node> ..." instead (ASSIGN_SKIPPED, due at once: the
 * leader, this one or the next, records it and drops it), decided in the
 * same script as the offers. With replace, an offer to a node turns that
 * node's offers of older ticks not yet accepted into "skipped" fields
 * (superseded: the node runs the newest; its earlier run, if alive, is
 * the node's to stop). Returns 1 (*offered: how many offers made;
 * skipped[i], n of them: nodes[i] was skipped; *gave_way: how many older
 * offers were turned), 0 (no such marker: offered or dropped before),
 * BATON_ELOST or BATON_E*. */
int assign_offer_all(struct baton_client *c, const char *group, const char *job,
                     const char *leader_key, const char *token, const struct assign *m,
                     const char *const *nodes, const char *const *run_ids, size_t n,
                     enum assign_per_node policy, int64_t offer_ms, size_t *offered,
                     bool *skipped, size_t *gave_way);

/* Drops a (expect: its value as read, or "claimed": the marker of
 * a->run_id) under the leader's token, on the same conditions as an
 * offer: the field and its registration are removed. Returns 1, 0 (not
 * dropped: changed or not re-offerable), BATON_ELOST or BATON_E*. */
int assign_drop(struct baton_client *c, const char *group, const char *job, const char *leader_key,
                const char *token, const char *expect, const struct assign *a);

/* The registrations of the n assignments w (each as read: its job and
 * value) that wait for a member with room (the claim's marker, an offer
 * past its deadline; a run lost, or a retry, whose next attempt waits),
 * or a retry in its backoff (those registered as "<node>/<run_id>/wait",
 * removed by the value's offer or drop), are held until ttl_ms from now,
 * under the leader's token, so that forbid and max_running see the tick
 * alive while it waits; one whose value changed is left as it is.
 * Returns 0, BATON_ELOST (not the leader) or BATON_E*. */
int assign_hold(struct baton_client *c, const char *group, const char *leader_key,
                const char *token, const struct assign *const *w, size_t n, int64_t ttl_ms);

enum assign_answer {
    ASSIGN_OK,    /* accepted: the run is this node's, registered for ttl */
    ASSIGN_GONE,  /* no longer offered to this node (another's, expired, ended) */
    ASSIGN_FULL,  /* this node's capacity is in use: not accepted */
    ASSIGN_ERROR, /* Redis did not answer: detail in the client */
};

/* node accepts the offer "<job> <field>" if it still holds it, before its
 * deadline, with fewer than capacity runs accepted (see the top). On
 * ASSIGN_OK *a is the accepted assignment (at_ms: now, the server's). */
enum assign_answer assign_accept(struct baton_client *c, const char *group, const char *job,
                                 const char *field, const char *node, int64_t capacity,
                                 int64_t ttl_ms, struct assign *a);

/* Marks a (accepted by this node) started, before its exec, unless its
 * job is paused (pause.h: paused, or resumed without catch-up past the
 * tick): then the assignment goes back to the claim's marker (held by the
 * leader until the pause ends: run then, or recorded skipped), atomically.
 * Returns 0, ASSIGN_PAUSED (handed back: do not start it, record nothing),
 * BATON_ELOST (no longer this node's: do not start it) or BATON_E*. */
#define ASSIGN_PAUSED 1
int assign_started(struct baton_client *c, const char *group, const char *job,
                   const struct assign *a);

/* The end of a's run on its node: unregisters it, frees its capacity,
 * and (if the field is still this run's) removes the field, or, with
 * retry_ms >= 0 (the run failed and the job's retries allow another
 * attempt), makes it a retry due retry_ms from now, for the leader to
 * offer elsewhere, registered as "<node>/<run_id>/wait" until then plus
 * what was left of the run's registration (at least ASSIGN_OFFER_MS: the
 * leader's tend holds it on, assign_hold), so that the job is busy
 * through the backoff; publishes "ended <job>" on the ended channel.
 * Returns 0 or BATON_E*. */
int assign_end(struct baton_client *c, const char *group, const char *job, const char *field,
               const char *node, const char *run_id, int64_t retry_ms);

/* Reads the assignments of every job with one outstanding (at most max,
 * in one call: the index baton:{G}:assigned names the jobs), or with
 * due_only those that need the leader (a marker, a retry due, an offer
 * past its deadline, a run whose registration is gone, a node's tick
 * skipped, and a retry in its backoff, alive, whose hold the leader
 * keeps): into v (with their job), *n. *now_ms: the server's time of the
 * read. alive[i]: v[i] needs nothing from the leader (a live
 * registration, an offer or retry not yet due). Returns 0 or BATON_E*. */
int assign_list_all(struct baton_client *c, const char *group, struct assign *v, bool *alive,
                    size_t max, bool due_only, size_t *n, int64_t *now_ms);

/* The offers to node not yet past their deadline, "<job> <field>" into
 * jobs/fields (each at most max, owned strings: free()). Returns 0 or
 * BATON_E*. */
int assign_offers(struct baton_client *c, const char *group, const char *node, char **jobs,
                  char **fields, size_t max, size_t *n);

/* How many runs each of the n nodes has accepted or been offered and not
 * yet answered, counting only live registrations and offers: in_use[i].
 * Returns 0 or BATON_E*. */
int assign_loads(struct baton_client *c, const char *group, const char *const *nodes, size_t n,
                 int64_t *in_use);

#endif /* BATON_ASSIGN_H */
