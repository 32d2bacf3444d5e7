/* rfc3339.h -- the one time format of what baton writes and reads back:
 * RFC 3339 in UTC, "2026-01-02T07:00:00Z" or with milliseconds
 * "2026-01-02T07:00:00.123Z". The log's ts, the run records (src/group),
 * pauses, requests and the status all use it. (The log_ prefix is the
 * log's, which had them first.) Pure: no clock read, no allocation. */
#ifndef BATON_RFC3339_H
#define BATON_RFC3339_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Formats a CLOCK_REALTIME instant (Unix ms) as 2026-01-02T07:00:00.123Z. */
void log_rfc3339_ms(int64_t unix_ms, char *buf, size_t len);
/* Formats Unix seconds as 2026-01-02T07:00:00Z. */
void log_rfc3339(int64_t unix_s, char *buf, size_t len);
/* Parses 2026-01-02T07:00:00Z or ...00.123Z (UTC) into Unix ms. Returns
 * false (and *ms untouched) when s is not one. */
bool log_parse_rfc3339_ms(const char *s, int64_t *ms);

#endif /* BATON_RFC3339_H */
