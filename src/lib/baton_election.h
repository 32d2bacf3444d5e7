/* baton_election.h -- libbaton's election primitives: one leader per name,
 * each call one bounded Redis call, for a daemon that drives its campaign
 * from its own event loop (the baton supervisor does). A daemon that would
 * rather have a thread campaign for it, with callbacks, uses the leaders of
 * baton.h (baton_leader_campaign()), which run on these.
 *
 * Installed beside baton.h, which it includes: the conventions, errors and
 * the client are baton.h's. */
#ifndef BATON_ELECTION_H
#define BATON_ELECTION_H

#include "baton.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Leader election: one leader per name, with a term that strictly increases
 * with every leadership (it is the fencing token of the name's lock).
 *
 * Over a Redlock quorum the leadership is a quorum lock (granted by a
 * majority, valid from the send time; its term the quorum's fence). A
 * renewal holds when a majority extended it within its validity, and takes
 * the key again on masters where it is free and no later term was granted
 * (a master that restarted empty, or missed the grant); a resignation
 * releases it on every master, publishing "resigned" on each; followers
 * subscribe on every master. baton_election_server_changed() is false
 * (a quorum has no promoted replicas). The holder a refused campaign
 * reports is the one a majority holds, with the time it keeps that
 * majority; none (has_leader false) after a split vote, with a short
 * random ttl_ms.
 *
 * These are the primitives, each one bounded Redis call, for a caller that
 * drives the campaign from its own event loop (the baton supervisor does):
 * campaign, renew and resign; followers watch a subscription (poll its fd)
 * that says at once when the leader resigns, and sleep until the leader's
 * lease runs out (campaign reports it). A struct baton_election belongs to
 * one thread; baton_election_is_leader() and baton_election_term() may be
 * called from any. */

struct baton_election;

struct baton_election_opts {
    int64_t ttl_ms;       /* leadership lease; default 10000 */
    const char *identity; /* who we are, shown by baton_election_leader();
                             default "" */
};

/* Returns: 0 and *out (owned; free with baton_election_free()), or
 * BATON_EINVAL (empty name, name with braces, or longer than 200 bytes) or
 * BATON_ENOMEM. No Redis I/O. */
BATON_API int baton_election_new(struct baton_client *c, const char *name,
                                 const struct baton_election_opts *opts,
                                 struct baton_election **out);
/* Frees e (closing its subscription). Does not resign. NULL is a no-op. */
BATON_API void baton_election_free(struct baton_election *e);

struct baton_leader_info {
    bool has_leader;
    char identity[256]; /* the leader's identity, truncated */
    uint64_t term;      /* its term; when there is no leader, the last term */
    int64_t ttl_ms;     /* its remaining lease (-1 unknown) */
};

/* Tries once to become the leader, always asking Redis: leadership comes
 * only from a grant confirmed in this call, never from what this node
 * believes. A lease this node may still hold from an earlier term (after
 * baton_election_abandon(), or a renewal that timed out but that Redis may
 * have applied late) is first released by its token, waking the
 * followers, so that the group does not wait out a lease nobody uses.
 * Returns 0 when we now lead, in a new term; BATON_ETAKEN when another
 * leads, described in *holder (may be NULL); EIO/EPROTO/EREDIS. */
BATON_API int baton_election_campaign(struct baton_election *e, struct baton_leader_info *holder);
/* True when the last campaign found Redis still holding a lease of ours
 * from an earlier term, and released it. */
BATON_API bool baton_election_released_stale(const struct baton_election *e);
/* Stops leading at once, without Redis I/O: for a leader that could not
 * confirm its lease before its own stop point. The next campaign releases
 * what Redis may still hold. */
BATON_API void baton_election_abandon(struct baton_election *e);
/* Extends the lease. Returns 0; BATON_ELOST (not the leader any more: the
 * lease was lost or taken); EIO... (leadership unconfirmed: the caller
 * watches baton_election_deadline_ns()). */
BATON_API int baton_election_renew(struct baton_election *e);
/* Gives up leadership if still ours and wakes a successor: on one server,
 * at most two followers that watch with an identity (other than ours) are
 * woken on their own channels, the rest see the new leader at their next
 * campaign; when none such watches (no identities, or over a quorum),
 * every follower is woken. Returns 0, BATON_ELOST (it was not ours any
 * more) or EIO... (then the lease expires). */
BATON_API int baton_election_resign(struct baton_election *e);

/* True when our current term was granted by a Redis master whose data may
 * lack the last writes of the term before it: another server process than
 * the one that granted the previous term, which was promoted from replica
 * (a failover, Sentinel's or by hand), or no record of the previous term's
 * server at all (FLUSHALL, a restart without persistence, or the first
 * term ever). What the previous leader wrote last (a high-water mark, a
 * claim) may then be missing or behind what it did: the baton supervisor
 * does not catch up missed ticks in such a term, so that none runs twice.
 * False after a plain restart of the same master (its persistence decides
 * what it kept) and when the previous term was granted by this very
 * server process. */
BATON_API bool baton_election_server_changed(const struct baton_election *e);
/* True while we lead: campaign succeeded, no loss seen, deadline not past. */
BATON_API bool baton_election_is_leader(const struct baton_election *e);
/* The term of our current (or last) leadership; 0 before the first. */
BATON_API uint64_t baton_election_term(const struct baton_election *e);
/* Validity deadline of our leadership (CLOCK_MONOTONIC ns), 0 if none. */
BATON_API int64_t baton_election_deadline_ns(const struct baton_election *e);
/* Detail of the last failure on e ("" if none). Borrowed; valid until the
 * next call on e. */
BATON_API const char *baton_election_errstr(const struct baton_election *e);
/* The Redis key of the leadership (prefix{name}:leader), and the value it
 * holds while we lead (NULL when we do not): a script that must act only for
 * the current leader compares the two (GET key == token) in the same atomic
 * step as its write. Keys of the form prefix{name}:... share its cluster
 * slot. Borrowed; valid until the next campaign/resign or free. */
BATON_API const char *baton_election_key(const struct baton_election *e);
BATON_API const char *baton_election_token(const struct baton_election *e);

/* The subscription: (re)connects and subscribes to the name's events
 * (and, given an identity, to this candidate's own channel, where a
 * resignation may name it).
 * Returns 0 or EIO... Bounded by the client's timeouts. Over a quorum:
 * subscribes on every master not subscribed yet (one connection each, the
 * ones subscribed kept; a master left alone after a failure is skipped),
 * each bounded by node_timeout; returns 0 when at least one master is
 * subscribed (baton_election_watch_complete() says whether all are). */
BATON_API int baton_election_watch(struct baton_election *e);
/* Its file descriptor (poll it for POLLIN), or -1 when not subscribed.
 * Over a quorum an epoll descriptor behind the masters' subscriptions: it
 * stays the same while any is subscribed. */
BATON_API int baton_election_watch_fd(const struct baton_election *e);
/* True when subscribed on every master (on one server: subscribed). A
 * caller that watches over a quorum calls baton_election_watch() again
 * when this is false, so that a master that came back is heard again. */
BATON_API bool baton_election_watch_complete(const struct baton_election *e);

#define BATON_EVENT_RESIGNED  1u /* the leader resigned: campaign now */
#define BATON_EVENT_STEP_DOWN 2u /* someone asked the leader of this term to step down */
/* The subscription broke (the server went away, or Redis failed over): the
 * leader and lease seen so far may be the old master's. Campaign now rather
 * than wait out a ttl read from it. */
#define BATON_EVENT_SWITCHED 4u

/* Reads what has arrived, without blocking; ORs BATON_EVENT_* into *events.
 * A step-down request counts only when it names our current term. Returns 0,
 * or EIO/EPROTO when the subscription broke (it is closed: call
 * baton_election_watch() again), with BATON_EVENT_SWITCHED set. Over a
 * quorum every master's subscription is read (an event published on
 * several masters arrives once from each: the events are idempotent);
 * EIO/EPROTO when one of them broke: it is closed, the others go on, and
 * BATON_EVENT_SWITCHED is not set (a master going away is no failover). */
BATON_API int baton_election_watch_read(struct baton_election *e, unsigned *events);
/* The same, handing every other message published on the name's events
 * channel to on_msg(arg, msg, len) (msg is NUL-terminated, borrowed for
 * the call), for callers that publish their own events there. */
typedef void (*baton_election_msg_fn)(void *arg, const char *msg, size_t len);
BATON_API int baton_election_watch_read_msgs(struct baton_election *e, unsigned *events,
                                             baton_election_msg_fn on_msg, void *arg);
/* Also hears channel on the subscription (every master's, over a quorum)
 * while it is set: its messages go to on_msg like the events channel's.
 * One such channel at a time; NULL stops. A subscription made later by
 * baton_election_watch() includes it. For messages that only some
 * candidates want, such as the baton supervisor's "ended" messages, heard
 * by its leader only: a follower is not woken by them. Returns 0; EINVAL,
 * ENOMEM; EIO when a subscription could not be told (it is broken: the
 * next read says so, and watching again subscribes it with the channel). */
BATON_API int baton_election_listen(struct baton_election *e, const char *channel);

/* Who leads name now. Returns 0 and *info, or EIO... Over a quorum: the
 * identity a majority of the masters hold (none when no holder has a
 * majority), its ttl_ms the time it keeps that majority, its term the
 * highest counter of the masters that answered (a majority must). */
BATON_API int baton_election_leader(struct baton_client *c, const char *name,
                                    struct baton_leader_info *info);
/* Asks the leader of name, whose term is term, to resign. *receivers (may be
 * NULL) gets how many subscribers heard it (over a quorum: the most that
 * one master had; it is published on every master). Returns 0 or EIO... */
BATON_API int baton_election_request_step_down(struct baton_client *c, const char *name,
                                               uint64_t term, int *receivers);

#ifdef __cplusplus
}
#endif
#endif /* BATON_ELECTION_H */
