/* pause.h -- jobs paused for the whole group, stored in Redis so that a
 * pause outlives failovers and restarts.
 *
 * Key (group G; keys.h): baton:{G}:paused, a hash: job name (or "*" for
 * every job) -> JSON, one of
 *   {"state":"paused","since":<ms>,"by":"user@host","reason":"...","v":<ms>,"id":"..."}
 *   {"state":"resumed","at":<s>,"since":<ms>,"by":"user@host","v":<ms>,"id":"..."}
 *   {"state":"cleared","v":<ms>}   (a tombstone: no entry)
 * (server time). A paused job's ticks do not run: the leader records them
 * as skipped (reason "paused"). `resumed` marks a resume that does not catch
 * up: the ticks up to `at` stay skipped, and the leader, once it has
 * recorded them and moved the job's high-water mark past them, clears the
 * entry (only if it still holds what it read). A resume that catches up
 * clears the entry at once: the leader then catches up from the mark, as
 * after a failover. Changes are published on the group's events channel
 * ("paused <job>", "resumed <job>"; job "*" for all), waking the leader.
 * A pause or resume that changes an entry is also recorded in the job's
 * history, by whom, when and why (pauselog.h), in the same script.
 *
 * Every entry carries its version v: the masters' time (the latest TIME
 * of those that answer) when the command that wrote it ran, taken once, so
 * that one write is the same JSON on every master. Writes go to every
 * master; a master keeps a later version it holds; a write holds when a
 * majority applied it (else the command fails, saying which masters did
 * not take it). A read takes every master's entries and, for each job, the
 * latest version: a pause or resume that reached a majority is seen by
 * any later read of a majority (the two share a master), and a tombstone,
 * not a deletion, ends an entry, so that a master that missed the end
 * cannot bring it back. Entries written before versions count as of their
 * own time (since, or at). The assumption: the masters' clocks agree to
 * better than the time between two commands on one job. On one server
 * all of this is the plain read and write it was. */
#ifndef BATON_PAUSE_H
#define BATON_PAUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton_redis.h"

#define PAUSE_ALL "*"

/* One entry. Strings borrowed from the list's answers (and raw from them). */
struct pause_entry {
    const char *job; /* a job name, or PAUSE_ALL */
    const char *raw; /* the value as stored, for pause_done() */
    bool resumed;    /* a resume without catch-up, not yet applied */
    bool cleared;    /* a tombstone (never in a pause_list) */
    int64_t version; /* v, ms */
    int64_t since_ms;
    int64_t resumed_at; /* Unix s (server), when resumed */
    char by[128];
    char reason[256];
};

struct pause_list {
    struct baton_answers *answers;
    struct pause_entry *v;
    size_t n;
};
void pause_list_free(struct pause_list *l);

/* Reads every entry: of each job, the latest version any master holds
 * (tombstones left out). Entries that cannot be read are left out. Returns
 * 0 and *out, or a BATON_E* code. */
int pause_read(struct baton_client *c, const char *group, struct pause_list *out);

/* Returns: the entry of job in l (not the "*" one), or NULL. */
const struct pause_entry *pause_find(const struct pause_list *l, const char *job);
/* Returns: the pause that holds job now (its own, or every job's; not one
 * already resumed), or NULL. */
const struct pause_entry *pause_holding(const struct pause_list *l, const char *job);

/* Writes "since 2026-01-02T07:00:00.000Z by alice@web-1 (every job): why"
 * into buf (truncated to len). Returns buf. */
const char *pause_describe(const struct pause_entry *e, char *buf, size_t len);

/* Pauses job (NULL: every job), by `by`, with an optional reason. An entry
 * already paused keeps its time (and is written again to every master); a
 * pending resume is replaced (the job is paused again). *was_paused tells
 * whether it was. A pause that changes something is recorded in the
 * history (pauselog.h), in the same script as the entry, the entry's
 * stream capped near keep records (history.runs; 0: no record). Returns 0
 * or BATON_E* (then the detail, naming the masters that did not take it,
 * is the client's errstr). */
int pause_set(struct baton_client *c, const char *group, const char *job, const char *by,
              const char *reason, int64_t keep, bool *was_paused);

/* Resumes job (NULL: every entry, "*" and each job's). Without catchup,
 * the ticks that fell while paused stay skipped (see above). Each entry
 * that was paused is recorded in its history as pause_set() says (one
 * already resumed that now catches up is not). *resumed gets
 * how many entries were paused. Returns 0 or BATON_E*. */
int pause_resume(struct baton_client *c, const char *group, const char *job, bool catchup,
                 const char *by, int64_t keep, int *resumed);

/* The leader applied the resume of entry job (or "*"): clears it (a
 * tombstone) where it still holds raw. Returns 0 or BATON_E*. */
int pause_done(struct baton_client *c, const char *group, const char *job, const char *raw);

#endif /* BATON_PAUSE_H */
