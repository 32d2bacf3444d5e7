/* log.h -- the supervisor's log: one JSON object per line on stdout.
 *
 * Every line: ts (RFC 3339 UTC with milliseconds), level, event, node,
 * group, then the event's own fields. Lines are written with one write(2)
 * each, so lines of several processes sharing a pipe never interleave
 * (up to PIPE_BUF). Never log secrets. With log_set_format(), the same
 * events are written as readable text instead (logfmt.h). */
#ifndef BATON_LOG_H
#define BATON_LOG_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "config.h"

struct log;

/* Returns: owned (free with log_free), or NULL on ENOMEM. fd: where lines go. */
struct log *log_new(int fd, enum log_level min, const char *node, const char *group);
void log_free(struct log *lg);
void log_set_level(struct log *lg, enum log_level min);
/* Writes text lines (logfmt.h) instead of JSON: for LOG_FORMAT_TEXT, or
 * LOG_FORMAT_AUTO when fd is a terminal; coloured on a terminal unless
 * NO_COLOR is set. */
void log_set_format(struct log *lg, enum log_format format);
bool log_enabled(const struct log *lg, enum log_level lvl);

/* Writes one line. fields (may be NULL) is consumed. */
void log_emit(struct log *lg, enum log_level lvl, const char *event, cJSON *fields);

/* A new fields object (NULL on ENOMEM; cJSON's adders accept NULL). */
cJSON *log_fields(void);

/* Formats a CLOCK_REALTIME instant (Unix ms) as 2026-01-02T07:00:00.123Z. */
void log_rfc3339_ms(int64_t unix_ms, char *buf, size_t len);
/* Formats Unix seconds as 2026-01-02T07:00:00Z. */
void log_rfc3339(int64_t unix_s, char *buf, size_t len);

const char *log_level_name(enum log_level lvl);

#endif
