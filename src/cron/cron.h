/* cron.h -- cron expressions: parse, and the next fire time in an IANA zone.
 *
 * Pure: no clock reads, no global state, no I/O except cron_tz_load(), which
 * reads one TZif file from the system tz database (tzload.c). Depends on
 * nothing else of baton's. Every object is immutable after creation, so one
 * expression or zone may be shared by any number of threads.
 *
 * Semantics (see jobs.yaml(5), "Cron expressions"): Vixie/cronie day matching,
 * cronie DST rules extended to the seconds field, @every ticks aligned on the
 * Unix epoch.
 */
#ifndef BATON_CRON_H
#define BATON_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A parse error. Format it with cron_error_format(). */
struct cron_error {
    int field;        /* 1-based field number (seconds count as field 1 in a
                         6-field expression); 0: the whole expression */
    int column;       /* 1-based column in the expression text */
    char token[64];   /* the offending token, truncated */
    char message[256];/* "value out of range 0-23" */
    const char *field_name; /* "hour"; a static string, NULL when field is 0
                               (added: cron_error_format() falls back to the
                               5-field names when NULL) */
};

/* Writes e.g. `field 2 (hour) "25": value out of range 0-23 (column 3)` into
 * buf (always NUL-terminated when len > 0). Returns buf. */
const char *cron_error_format(const struct cron_error *e, char *buf, size_t len);

struct cron_expr;

/* Parses text (5 or 6 fields, or a macro). Returns: 0 and *out (owned; free
 * with cron_free()), or -1 with *err filled and *out NULL. An expression that
 * can never fire (`0 0 30 2 *`) is an error. */
int cron_parse(const char *text, struct cron_expr **out, struct cron_error *err);
void cron_free(struct cron_expr *e);

/* True when none of the seconds, minute and hour fields begins with `*`
 * (`30 2 * * *`): the schedule fires once on a wall time that DST skips or
 * repeats. False for interval-like schedules and @every. */
bool cron_is_fixed_time(const struct cron_expr *e);

/* True for @every expressions. */
bool cron_is_every(const struct cron_expr *e);
/* The period of an @every expression in seconds; 0 otherwise. */
int64_t cron_every_seconds(const struct cron_expr *e);

struct cron_tz;

/* Loads zone name ("UTC", "Europe/Berlin") from $TZDIR or
 * /usr/share/zoneinfo. "UTC" and "Etc/UTC" work without the files.
 * Returns: 0 and *out (owned; free with cron_tz_free()), or -1 with a message
 * in err ("unknown time zone \"Mars/Base\""). */
int cron_tz_load(const char *name, struct cron_tz **out, char *err, size_t errlen);
/* Builds a zone from the bytes of a TZif file (pure; used by cron_tz_load and
 * the fuzzer). Same contract. */
int cron_tz_from_tzif(const char *name, const unsigned char *buf, size_t len,
                      struct cron_tz **out, char *err, size_t errlen);
void cron_tz_free(struct cron_tz *tz);
/* Borrowed; valid until cron_tz_free(tz). */
const char *cron_tz_name(const struct cron_tz *tz);
/* UTC offset in seconds east of UTC at instant t (Unix seconds); tz NULL: 0. */
int32_t cron_tz_offset(const struct cron_tz *tz, int64_t t);

/* The first fire time strictly after `after` (Unix seconds), in zone tz
 * (NULL: UTC). `after` must lie in years 0001-9999.
 * Returns: 0 and *next, or -1 when the expression has no fire time within
 * the search horizon (bounded; never loops forever). */
int cron_next(const struct cron_expr *e, const struct cron_tz *tz, int64_t after, int64_t *next);

/* Parses an RFC 3339 date-time with `Z` or a numeric offset and optional
 * fractional seconds ("2026-01-02T07:00:00Z", "2026-01-02T08:00:00.5+01:00")
 * into Unix seconds, fractions dropped (rounded towards the past). Years
 * 0001-9999. Returns: 0, or -1 with a one-line message in err. */
int cron_time_parse(const char *s, int64_t *t, char *err, size_t errlen);

/* Formats instant t as RFC 3339: in UTC with `Z` when tz is NULL
 * ("2026-01-02T07:00:00Z"), else as wall time in tz with its offset
 * ("2026-01-02T08:00:00+01:00"; an offset with seconds, as local mean time
 * before ~1900 has, is written +HH:MM:SS). CRON_TIME_BUFSZ bytes always
 * suffice. Returns buf (always NUL-terminated when len > 0). */
#define CRON_TIME_BUFSZ 48
const char *cron_time_format(int64_t t, const struct cron_tz *tz, char *buf, size_t len);

/* Durations: "500ms", "10s", "2m", "1h30m", "1d": one or more number+unit
 * pairs (units ms s m h d), each unit once and largest first ("1h1h" and
 * "30m1h" are refused), no sign, no spaces. Returns: 0 and *ms, or -1 with
 * a message in err. Shared by @every, config files and the command line. */
int cron_duration_parse(const char *s, int64_t *ms, char *err, size_t errlen);

#endif /* BATON_CRON_H */
