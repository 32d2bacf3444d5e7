/* history.h -- the run record: the one owner of its format, written by the
 * runner and read by `baton history` and `baton status`.
 *
 * Each job has a stream baton:{G}:runs:<job> (keys.h), capped at the
 * config's `history.runs` entries (XADD MAXLEN ~: Redis trims whole blocks
 * of the stream, so it may hold one block more: a block closes at 4 KiB or
 * 100 entries by default, so a stream of records with output holds about
 * one record more than history.runs). An entry is one run, or one
 * range of ticks that did not run (skipped, superseded or missed), so that
 * every tick of a job either ran or has a recorded reason, without a run
 * of 600 skipped ticks pushing the real runs out of the stream.
 *
 * Fields (all strings, as Redis keeps them):
 *   v             record version (HISTORY_VERSION; absent in version 1)
 *   run_id        BATON_RUN_ID of the run ("" for ticks that did not run)
 *   node, term    who ran (or decided) it, in which term
 *   scheduled_at  the tick, RFC 3339 UTC; until: the last tick of a range
 *   ticks         how many ticks the entry covers (1 for a run)
 *   trigger       schedule | catchup | retry | manual (baton trigger)
 *   by            (manual runs) who asked: user@host, as `baton trigger` wrote it
 *   started       RFC 3339 UTC with ms ("" when it never started)
 *   jitter_ms     (runs of a job with jitter; absent: 0) the tick's delay:
 *                 its run was to begin at scheduled_at + jitter_ms
 *   duration_ms, attempt
 *   outcome       one of HISTORY_OUTCOMES below
 *   exit_code or signal (runs that ended), reason (why it did not run, or
 *                 could not start, or was stopped)
 *   result        "exit 0" / "signal TERM" (kept for version 1 readers)
 *   output        (v3, runs that started, when history.output_bytes > 0) the
 *                 tail of the run's stdout and stderr in arrival order: UTF-8
 *                 text without NUL, at most output_bytes, starting at a line
 *                 (or a character) when output was dropped before it
 *   output_dropped  (v3, with output) bytes of output before the tail
 *   dispatch_ms   (runs on a member, run_on other than leader) from the
 *                 tick's instant to the command's exec on it
 * Version 3 adds output and output_dropped; a v3 run record without them was
 * written with history.output_bytes 0. Readers ignore fields they do not
 * know: a newer supervisor may add some.
 */
#ifndef BATON_HISTORY_H
#define BATON_HISTORY_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton_redis.h"

#define HISTORY_VERSION 3

/* X(ID, name, ran: the entry is a run that started) */
#define HISTORY_OUTCOMES(X)                                                                        \
    X(OK, "ok", true)                          /* exited 0 */                                      \
    X(FAILED, "failed", true)                  /* exited non-zero, or killed by a signal */        \
    X(TIMEOUT, "timeout", true)                /* stopped by its timeout */                        \
    X(KILLED, "killed", true)                  /* stopped by baton: replaced, paused, drain */     \
    X(FAILED_TO_START, "failed_to_start", false) /* claimed, but could not be started */           \
    X(SKIPPED, "skipped", false)               /* forbid with a run alive; paused */               \
    X(SUPERSEDED, "superseded", false)         /* a newer tick ran instead (replace, last) */      \
    X(MISSED, "missed", false)                 /* outside the catch-up window */                   \
    X(LOST, "lost", true)                      /* its member was lost while it ran (run_on) */

enum history_outcome {
#define HISTORY_OUTCOME_ENUM_(id, name, ran) HO_##id,
    HISTORY_OUTCOMES(HISTORY_OUTCOME_ENUM_)
#undef HISTORY_OUTCOME_ENUM_
        HO_COUNT
};

/* Returns: the outcome's name ("?" out of range). Static. */
const char *history_outcome_name(enum history_outcome o);
/* True when the outcome is that of a run that started. */
bool history_outcome_ran(enum history_outcome o);
/* Finds an outcome by name. Returns true and *o, or false. */
bool history_outcome_parse(const char *name, enum history_outcome *o);

/* One record. Strings are borrowed (from the writer, or from the reply a
 * history_list holds); "" when absent. */
struct history_rec {
    const char *id; /* stream entry id, on read ("1700000000000-0") */
    int version;    /* 1 for records without `v` */
    const char *run_id, *node, *trigger, *reason, *signal;
    const char *by; /* manual runs: who asked ("" or NULL: not said) */
    uint64_t term;
    int64_t scheduled_at; /* Unix s */
    int64_t until;        /* Unix s: the last tick the entry covers */
    int64_t ticks;        /* ticks covered; 0: unknown (too many to count) */
    int64_t started_ms;   /* Unix ms; 0: never started */
    int64_t jitter_ms;    /* the tick's jitter delay (0: none) */
    int64_t duration_ms;
    enum history_outcome outcome;
    bool outcome_known; /* on read: false for a name this version does not know */
    const char *outcome_name; /* on read: as written */
    int exit_code;            /* -1: none */
    int attempt;
    bool has_output;          /* output is set (may be empty) */
    const char *output;       /* the output tail (NUL-free UTF-8 when written by
                                 us), output_len bytes; NULL without output */
    size_t output_len;
    int64_t output_dropped;   /* bytes of output before it */
    bool dispatched;          /* run on a member (run_on other than leader) */
    int64_t dispatch_ms;      /* then: from the tick's instant to its exec */
};

/* An XADD of r to job's stream, capped near maxlen: owned argv (free with
 * history_command_free). Returns 0 or BATON_ENOMEM. */
struct history_command {
    int argc;
    char **argv;
};
int history_command(const struct history_rec *r, const char *group, const char *job,
                    int64_t maxlen, struct history_command *out);
void history_command_free(struct history_command *c);
/* Writes c to every master: it holds when a majority took it (see below).
 * Returns 0 or a BATON_E* code (the detail in the client). */
int history_write(struct baton_client *c, const struct history_command *cmd);

/* Records, newest first, with the answers that hold their strings. Over a
 * Redlock quorum every write goes to every master (and holds when a
 * majority took it); a read takes every master's records, each record
 * once (one written to several masters, or again after a lost answer, is
 * one: same run, attempt, ticks, outcome and start), newest first by
 * stream id: the union of a majority's holds every record a majority
 * took. */
struct history_list {
    struct baton_answers *answers;
    struct history_rec *v;
    size_t n;
};

/* Reads the count (>= 1) most recent records of job. Returns 0 and *out
 * (free with history_list_free), or a BATON_E* code: EPROTO when the reply
 * is not a stream range; EREDIS (e.g. WRONGTYPE) with the detail in
 * baton_client_errstr(). */
int history_read(struct baton_client *c, const char *group, const char *job, long count,
                 struct history_list *out);
/* Frees what history_read() returned; a zeroed struct is a no-op. */
void history_list_free(struct history_list *l);

/* Parses s, a whole decimal number as the history's fields hold them
 * (optional '-', digits, nothing else): true with *v set, else false and
 * *v untouched. */
bool history_number(const char *s, int64_t *v);

/* Fills r from one stream entry [id, [field, value, ...]]. Strings are
 * borrowed from e. Returns false when e is not an entry. */
bool history_parse(const struct baton_reply *e, struct history_rec *r);

/* Finds the record of run run_id of job (run_id NULL: the newest record
 * of a run that started), reading the stream newest first a page at a
 * time. Returns 0 and *out (free with history_list_free) holding it as
 * out->v[0] (out->n 1), or nothing (out->n 0) when the stream has no such
 * record; or a BATON_E* code as history_read(). */
int history_find(struct baton_client *c, const char *group, const char *job, const char *run_id,
                 struct history_list *out);

/* history_json_opts() flags. */
#define HISTORY_JSON_OUTPUT 0x1u /* include the output itself */

/* Returns: r as a JSON object (owned; NULL on ENOMEM): id, v, run_id, node,
 * term, scheduled_at, until, ticks, trigger, started (null when it never
 * started), jitter_ms (when not 0), duration_ms, attempt, outcome, exit_code or signal, reason;
 * for a record with output, output_bytes (its length) and output_dropped,
 * and with HISTORY_JSON_OUTPUT the output itself (as valid JSON whatever
 * the stream holds). history_json() is history_json_opts(r, 0): records
 * stay small in `baton history --json` and `baton status --json`. */
cJSON *history_json_opts(const struct history_rec *r, unsigned flags);
cJSON *history_json(const struct history_rec *r);

/* Writes what happened in a few words: "ok (exit 0)", "failed (signal
 * KILL)", "skipped x3: the previous run is still running". Returns buf. */
const char *history_summary(const struct history_rec *r, char *buf, size_t len);

#endif /* BATON_HISTORY_H */
