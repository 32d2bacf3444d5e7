/* log.h -- the supervisor's log: one JSON object per line on stdout.
 *
 * Every line: ts (RFC 3339 UTC with milliseconds), level, event, node,
 * group, then the event's own fields. Lines are written with one write(2)
 * each, so lines of several processes sharing a pipe never interleave
 * (up to PIPE_BUF). They are written by a thread of the log's own, so that
 * a slow reader of stdout (a full pipe, a slow disk) never holds up the
 * caller, whose lease depends on its loop turning: lines wait in a queue,
 * whose size is bounded. When more than 4 MiB wait, new job_output and
 * hook_output lines are dropped; other lines have 1 MiB more (thousands of
 * lines), and are dropped beyond it. Drops are counted at once
 * (log_dropped_lines) and reported, by event, once the reader caught up
 * (log_lines_dropped). Events are the enum of events.h, so every line the
 * code can write is in the documented table. Every line is valid JSON, one
 * member per name (a field named as the head or as another field is
 * renamed, '_' appended): string values that are not valid UTF-8 are
 * repaired (utf8.h) before writing.
 * With log_set_format(), the same events are written as readable text
 * instead (logfmt.h). Never log secrets. */
#ifndef BATON_LOG_H
#define BATON_LOG_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "events.h"
#include "log_level.h"
#include "rfc3339.h" /* the format of ts */

struct log;

/* Returns: owned (free with log_free), or NULL on ENOMEM or when its
 * writer thread cannot start. fd: where lines go. */
struct log *log_new(int fd, enum log_level min, const char *node, const char *group);
/* Writes every line still queued (waiting for the reader, however slow),
 * then stops the writer and frees lg. NULL is a no-op. */
void log_free(struct log *lg);
void log_set_level(struct log *lg, enum log_level min);
/* Between log_hold() and its log_release(), lines are formatted and queued
 * as always (their ts is the time of the call) but the writer is not
 * woken: a caller about to hand work to another thread (the old leader's
 * release, posted to the client's loop) keeps the second core free for it.
 * log_release() wakes the writer for what was queued. Holds nest; keep
 * them short: lines are written only after the last release. */
void log_hold(struct log *lg);
void log_release(struct log *lg);
/* Writes text lines (logfmt.h) instead of JSON: for LOG_FORMAT_TEXT, or
 * LOG_FORMAT_AUTO when fd is a terminal; coloured on a terminal unless
 * NO_COLOR is set. */
void log_set_format(struct log *lg, enum log_format format);
bool log_enabled(const struct log *lg, enum log_level lvl);

struct log_facts; /* facts.h */

/* Writes one line of event ev at the event's level in the table. fields
 * (may be NULL) is consumed. For an event that carries no facts (facts.h:
 * log_facts_carried). */
void log_emit(struct log *lg, enum log_event ev, cJSON *fields);
/* The same at lvl: for the events whose level varies per line. */
void log_emit_at(struct log *lg, enum log_level lvl, enum log_event ev, cJSON *fields);
/* log_emit() and log_emit_at() for the events that carry facts: facts
 * (borrowed for the call) go to the observer with the line, which is
 * written as fields say, the same with or without them. */
void log_emit_facts(struct log *lg, enum log_event ev, cJSON *fields,
                    const struct log_facts *facts);
void log_emit_facts_at(struct log *lg, enum log_level lvl, enum log_event ev, cJSON *fields,
                       const struct log_facts *facts);

/* Called for every event emitted, whatever log.level filters out, before
 * its line is written: lvl is the line's level, facts what the emitter
 * gave (borrowed for the call; NULL for an event that carries none). The
 * line's fields are not given: observers read the typed facts, never the
 * text back. It runs on the emitting thread (the supervisor's loop) and
 * must not emit. What the code emits only when debug lines are enabled
 * (lease_renewed, watch_lost, run_state) reaches it only then. The
 * metrics and systemd's status are made from these calls, one per line
 * emitted, so that they cannot disagree with the log. */
typedef void (*log_observer_fn)(void *ctx, enum log_event ev, enum log_level lvl,
                                const struct log_facts *facts);
/* Sets the one observer (NULL: none). */
void log_set_observer(struct log *lg, log_observer_fn fn, void *ctx);

/* Lines dropped since log_new, counted at each drop (the log_lines_dropped
 * line that reports them comes later): baton_log_lines_dropped_total. Any
 * thread. */
uint64_t log_dropped_lines(struct log *lg);

/* A new fields object (NULL on ENOMEM; cJSON's adders accept NULL). */
cJSON *log_fields(void);

const char *log_level_name(enum log_level lvl);

#endif
