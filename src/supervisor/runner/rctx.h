/* rctx.h -- what every part of the runner reads: who this node is, its
 * Redis client and election, whether it leads and in which term, the log,
 * the gate of blocking calls, and where records go. The coordinator
 * (runner.c) owns it and is the only one to change leading and term; a
 * part reads it, and writes through the pointers it holds (the outbox,
 * the job table's keys). */
#ifndef BATON_RCTX_H
#define BATON_RCTX_H

#include <stdbool.h>
#include <stdint.h>

#include "baton.h"
#include "baton_election.h"
#include "log.h"
#include "records.h"
#include "rtime.h"
#include "ticklife.h"

struct jobtable;
struct hooks;
struct dispatch;

struct rctx {
    const char *node, *group;        /* the runner's copies */
    struct log *log;                 /* borrowed */
    struct baton_client *client;     /* borrowed */
    struct baton_election *election; /* borrowed */
    struct hooks *hooks;             /* borrowed; NULL when going away */
    struct jobtable *jt;             /* the coordinator's */
    struct outbox *out;              /* the coordinator's */
    struct recorder *rec;            /* the coordinator's */
    struct dispatch *disp;           /* the coordinator's (dispatch.h) */
    bool leading;
    uint64_t term;
    int64_t guard_ns;     /* a cover's stop point: its end less this */
    int64_t lease_ttl_ms; /* own registrations' length, and recovered requests' */
    /* The host's: a blocking Redis call (up to redis_timeout) may start
     * now; a run started or ended; a tick moved (NULL: none hears it). */
    bool (*may_block)(void *ctx);
    void (*on_runs_changed)(void *ctx);
    void (*on_tick)(void *ctx, const struct tick_moved *m);
    void *host;
    /* tests (BATON_TEST_FAULT) */
    bool fault_stop_after_claim, fault_stop_after_preclaim, fault_slow_prepare;
    bool fault_stop_before_offer, fault_stop_after_accept;
    const char *const *labels; /* this node's (runner_host) */
};

static inline bool rctx_may_block(const struct rctx *x)
{
    return x->may_block(x->host);
}

static inline void rctx_runs_changed(const struct rctx *x)
{
    if (x->on_runs_changed != NULL)
        x->on_runs_changed(x->host);
}

#endif
