/* facts.h -- what an event says, as typed values, for the log's observer.
 *
 * A log line is text for people and tools. The supervisor's own readers of
 * its events (ops/: the metrics, the HTTP view, systemd's status) get the
 * same facts as the code's own values -- a state as enum machine_state, an
 * outcome as enum history_outcome -- given by the emitter in the call that
 * writes the line (log_emit_facts(), log.h), made from the same variables
 * as the line's fields. So they never read a line back by field name nor
 * turn a name back into an enum, and they count what the log says.
 *
 * The events that carry facts are those log_facts_carried() names: the
 * ones the observers read more of than their kind. Their emitters call
 * log_emit_facts(); check_metrics fails for a call in src/ that emits one
 * of them with log_emit() or log_emit_at(). Each member below says which
 * events set it; the others leave it zero. Strings are borrowed for the
 * observer's call only. */
#ifndef BATON_FACTS_H
#define BATON_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "history.h"
#include "machine.h"
#include "run.h"

/* What was being done when Redis failed: the `during` of redis_unreachable
 * (campaign, renew), and the label baton_redis_errors_total gives the
 * failures other events report by their kind. */
#define LOG_DURINGS(X)                                                                             \
    X(CAMPAIGN, "campaign")                                                                        \
    X(RENEW, "renew")                                                                              \
    X(CLAIM, "claim")                                                                              \
    X(HISTORY, "history")                                                                          \
    X(HANDOVER, "handover")                                                                        \
    X(RELEASE, "release")

enum log_during {
#define LOG_DURING_ENUM_(id, name) DURING_##id,
    LOG_DURINGS(LOG_DURING_ENUM_)
#undef LOG_DURING_ENUM_
        DURING_COUNT
};

/* Returns: d's name ("?" out of range). Static. */
const char *log_during_name(enum log_during d);

struct log_facts {
    /* job_start, job_end, job_retry, tick_skipped, hook_end, trigger_*,
     * reassigned, lost, job_paused and job_resumed ("*": every job) */
    const char *job;
    /* transition */
    enum machine_state from, to;
    enum machine_event trigger;
    enum machine_guard guard; /* G_ALWAYS: no guard decided */
    bool guard_held;
    /* transition: this node's term; following: the term followed */
    uint64_t term;
    /* following */
    const char *leader;
    int64_t lease_left_ms; /* < 0: unknown */
    /* redis_unreachable */
    enum log_during during;
    const char *error;
    /* signal_received */
    int signal;
    /* job_start (lateness_ms: none for RUN_TRIGGER_MANUAL, which has no tick) */
    enum run_trigger run_trigger;
    int64_t lateness_ms;
    bool dispatched; /* job_start: a tick of a job with run_on other than leader */
    /* job_end, tick_skipped, hook_end (ok, failed, timeout, killed,
     * failed_to_start) */
    enum history_outcome outcome;
    int64_t duration_ms; /* job_end of a run that ran */
    /* tick_skipped */
    int64_t ticks; /* < 0: too many to count */
    const char *reason;
};

/* True when ev carries facts: its emitters pass them (log_emit_facts). */
bool log_facts_carried(enum log_event ev);

/* Writes a transition's guard as its line says it ("renew_ok", "not
 * renew_ok"; "" for G_ALWAYS) to buf (len bytes). */
void log_facts_guard(const struct log_facts *f, char *buf, size_t len);

#endif /* BATON_FACTS_H */
