/* outbox.h -- the runner's bookkeeping writes (history records, the end of
 * a run's registration, a manual run's news), held while no blocking Redis
 * call may start and written in order once one may.
 *
 * Bounded (OUTBOX_MAX items): when full, the oldest item is dropped and
 * said (history_write_failed). A write that fails for want of Redis is kept
 * and tried again FLUSH_RETRY_MS later; one Redis refused is dropped (a
 * history record's refusal is said). Uses nothing of the runner's other
 * parts. */
#ifndef BATON_OUTBOX_H
#define BATON_OUTBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton.h"
#include "history.h"
#include "log.h"
#include "run.h"

struct outbox_item;

struct outbox {
    struct baton_client *client; /* borrowed */
    const char *group;           /* borrowed */
    struct log *log;             /* borrowed */
    int64_t history_len;         /* each job's history is capped near this */
    struct outbox_item *head, *tail;
    size_t n;
    size_t nunreg;        /* of them, writes that end a registration */
    int64_t retry_at;     /* CLOCK_MONOTONIC: write again then (0: nothing waits) */
    int64_t failed_until; /* a write failed: none before then */
};

/* Queues rec, a history record of job. */
void outbox_history(struct outbox *o, const char *job, const struct history_rec *rec);
/* Queues the end of run member's registration (claim_release). */
void outbox_release(struct outbox *o, const char *job, const char *member);
/* Queues the end of a run dispatched to this node (assign_end: its
 * registration, its capacity, its assignment's field, or with retry_ms >=
 * 0 the field made a retry due then). */
void outbox_assign_end(struct outbox *o, const char *job, const char *field, const char *node,
                       const char *run_id, int64_t retry_ms);
/* Queues the news of manual run run (request trigger_id): started (rec
 * NULL), or ended with rec's outcome, which also ends its registration. */
void outbox_trigger(struct outbox *o, const struct run *run, const char *trigger_id,
                    const struct history_rec *rec);

/* True when a write that ends a registration of job (a run's release, a
 * manual run's end) waits here: that run still looks alive to a claim. */
bool outbox_unregisters(const struct outbox *o, const char *job);
/* True when member ("<node>/<run_id>") of job is a run that has ended for
 * good and the write that ends its registration waits here (a release, a
 * manual run's end, a dispatched run's end without a retry: a retry's end
 * holds the job busy through its backoff, assign_end). */
bool outbox_ends(const struct outbox *o, const char *job, const char *member);

/* Writes what waits, in order, while may_block(ctx) allows. */
void outbox_flush(struct outbox *o, bool (*may_block)(void *ctx), void *ctx);

/* Frees every item (o itself is the caller's). */
void outbox_clear(struct outbox *o);

#endif
