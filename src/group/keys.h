/* keys.h -- the Redis keys of a group, in one place.
 *
 *   baton:{G}:leader          the leadership lock (libbaton's election)
 *   baton:{G}:leader:fence    its fencing counter: the term
 *   baton:{G}:events          pub/sub: "resigned", "step-down <term>",
 *                             "stop <node>/<run_id>", "trigger <id>",
 *                             "done <id>", "paused <job>", "resumed <job>"
 *                             (job "*": every job); every node listens
 *   baton:{G}:events:<node>   pub/sub: "resigned", naming node a successor
 *   baton:{G}:ended           pub/sub: "ended <job>", a run's end; heard by
 *                             the leader (a job waiting for its runs) and
 *                             by nodes with an HTTP view, not by every
 *                             follower of a fleet at every run's end
 *   baton:{G}:last:<job>      the job's last claimed tick (Unix seconds)
 *   baton:{G}:busy:<job>      zset: the job's live runs "<node>/<run_id>" by
 *                             expiry (claim.h)
 *   baton:{G}:claimed:<job>   hash: node -> its last claim of the job,
 *                             "<tick> <kind> <member>" (claim.h: a lost
 *                             answer's retry or lookup knows it, on every
 *                             master of a quorum)
 *   baton:{G}:assign:<job>    hash: the job's ticks dispatched to members
 *                             (assign.h; claim.h writes a claim's marker)
 *   baton:{G}:assigned        set: the jobs with an assign:<job> (assign.h)
 *   baton:{G}:offers:<node>   zset: offers to node, by deadline (assign.h)
 *   baton:{G}:load:<node>     zset: runs node accepted (assign.h)
 *   baton:{G}:runs:<job>      stream: the job's recent runs (history)
 *   baton:{G}:trigger:<id>    hash: a `baton trigger` request (trigger.h)
 *   baton:{G}:triggers        zset: the requests not yet done, by request time
 *   baton:{G}:paused          hash: job (or "*") -> its pause (pause.h)
 *   baton:{G}:pauses:<job>    stream: the job's pauses and resumes, who and
 *                             why (pauselog.h; job "*": those of every job)
 *   baton:{G}:nodes           hash: node -> heartbeat JSON
 *   baton:{G}:seen            hash: node -> last heartbeat (server ms)
 *   baton:{G}:forget          zset: node -> when it is forgotten (server ms)
 * All share the hash tag {G}: one cluster slot per group. */
#ifndef BATON_KEYS_H
#define BATON_KEYS_H

/* Returns: "baton:{group}:" followed by the formatted suffix; owned (free()),
 * or NULL on ENOMEM. */
char *group_key(const char *group, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
