/* pause.h -- jobs paused for the whole group, stored in Redis so that a
 * pause outlives failovers and restarts.
 *
 * Key (group G; keys.h): baton:{G}:paused, a hash: job name (or "*" for
 * every job) -> JSON, one of
 *   {"state":"paused","since":<ms>,"by":"user@host","reason":"..."}
 *   {"state":"resumed","at":<s>,"since":<ms>,"by":"user@host"}
 * (server time). A paused job's ticks do not run: the leader records them
 * as skipped (reason "paused"). `resumed` marks a resume that does not catch
 * up: the ticks up to `at` stay skipped, and the leader, once it has
 * recorded them and moved the job's high-water mark past them, deletes the
 * entry (only if it still holds what it read). A resume that catches up
 * deletes the entry at once: the leader then catches up from the mark, as
 * after a failover. Changes are published on the group's events channel
 * ("paused <job>", "resumed <job>"; job "*" for all), waking the leader. */
#ifndef BATON_PAUSE_H
#define BATON_PAUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton.h"

#define PAUSE_ALL "*"

/* One entry. Strings borrowed from the list's reply (and raw from it). */
struct pause_entry {
    const char *job; /* a job name, or PAUSE_ALL */
    const char *raw; /* the value as stored, for pause_done() */
    bool resumed;    /* a resume without catch-up, not yet applied */
    int64_t since_ms;
    int64_t resumed_at; /* Unix s (server), when resumed */
    char by[128];
    char reason[256];
};

struct pause_list {
    struct baton_reply *reply;
    struct pause_entry *v;
    size_t n;
};
void pause_list_free(struct pause_list *l);

/* Reads every entry. Entries that cannot be read are left out. Returns 0
 * and *out, or a BATON_E* code. */
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
 * already paused keeps its time; a pending resume is replaced (the job is
 * paused again). *was_paused tells whether it was. Returns 0 or BATON_E*. */
int pause_set(struct baton_client *c, const char *group, const char *job, const char *by,
              const char *reason, bool *was_paused);

/* Resumes job (NULL: every entry, "*" and each job's). Without catchup,
 * the ticks that fell while paused stay skipped (see above). *resumed gets
 * how many entries were paused. Returns 0 or BATON_E*. */
int pause_resume(struct baton_client *c, const char *group, const char *job, bool catchup,
                 const char *by, int *resumed);

/* The leader applied the resume of entry job (or "*"): deletes it if it
 * still holds raw. Returns 0 or BATON_E*. */
int pause_done(struct baton_client *c, const char *group, const char *job, const char *raw);

#endif /* BATON_PAUSE_H */
