/* pauselog.h -- the records of pauses and resumes in a job's history: the
 * one owner of their format, written with the pause entries themselves
 * (pause.c, in the same script, so that a pause that holds has its record
 * and one that did not hold has none) and read by `baton history` and the
 * control API's GET /jobs/JOB/runs.
 *
 * Each pause entry (pause.h: a job, or "*" for every job) has a stream
 * baton:{G}:pauses:<entry> (keys.h) beside the job's runs:<job>, capped
 * like it at the config's `history.runs` entries (XADD MAXLEN ~). They are
 * streams of their own, not entries of runs:<job>, so that nothing that
 * reads or counts a job's runs (its last run in `baton status` and /status,
 * the chaos ledger, the tests' tick accounting) can take one for a run; the
 * job's history as shown merges its own records with every job's, by time.
 * A pause or resume of every job is one record (in pauses:*), shown in the
 * history of each job, whether or not this node's jobs.yaml names it: it is
 * one act, it holds the jobs of every node's jobs.yaml and those added
 * later, and it costs one write rather than one per job.
 *
 * A record is written only when the call changed something: a pause of a
 * job already paused, or a resume of one not paused, writes none. Fields
 * (strings):
 *   v        PAUSELOG_VERSION
 *   kind     pause | resume
 *   job      the entry: a job name, or "*" (every job)
 *   at       the masters' time of the call, ms (the entry's version)
 *   by       who: "alice@web-1", "ops-bot (token) from 10.0.0.7"
 *   reason   (pause) as given, "" for none
 *   catchup  (resume) 1 when the paused ticks are caught up, else 0
 *   all      (resume) 1 when it came from a resume of every job (an entry
 *            of one job that `resume --all` ended), else 0
 *   mark     a random id, the same on every master (a read over a quorum
 *            shows each record once) */
#ifndef BATON_PAUSELOG_H
#define BATON_PAUSELOG_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton_redis.h"

#define PAUSELOG_VERSION 1

/* One record. Strings borrowed from the list's answers ("" when absent). */
struct pause_rec {
    const char *id; /* stream entry id */
    bool resume;    /* kind resume (else pause) */
    const char *job, *by, *reason, *mark;
    int64_t at_ms;
    bool catchup, all;
};

/* Records newest first (by at), with the answers that hold their strings. */
struct pause_rec_list {
    struct baton_answers *answers[2];
    struct pause_rec *v;
    size_t n;
};

/* The fields of a record (a JSON array of strings: field, value, ...) for
 * pause.c's write script. entry: a job or "*"; resume false: a pause (with
 * reason), true: a resume (with catchup, all). Returns: owned (free()), or
 * NULL on ENOMEM. */
char *pause_rec_fields(const char *entry, bool resume, int64_t at_ms, const char *by,
                       const char *reason, bool catchup, bool all, const char *mark);

/* Reads the count (>= 1) most recent records that concern job: its own
 * and every job's, each once however many masters hold it. Returns 0 and
 * *out (free with pause_rec_list_free), or a BATON_E* code (EPROTO when a
 * reply is not a stream range). */
int pause_rec_read(struct baton_client *c, const char *group, const char *job, long count,
                   struct pause_rec_list *out);
/* Frees what pause_rec_read() returned; a zeroed list is a no-op. */
void pause_rec_list_free(struct pause_rec_list *l);

/* Writes "paused by alice@web-1: freeze", "paused every job by ...",
 * "resumed by ... (catch-up)", "resumed by ... (resume of every job)" into
 * buf (truncated to len). Returns buf. */
const char *pause_rec_describe(const struct pause_rec *r, char *buf, size_t len);

/* Returns: r as a JSON object (owned; NULL on ENOMEM): {"kind": "pause" |
 * "resume", "id", "at" (RFC 3339 with ms), "job" (null for every job),
 * "by", "all" (a call for every job), "reason" (pause) or "catchup"
 * (resume)}. */
cJSON *pause_rec_json(const struct pause_rec *r);

#endif /* BATON_PAUSELOG_H */
