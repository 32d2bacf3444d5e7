/* runner.c -- see runner.h.
 *
 * Data, per job (struct jobstate): the last tick dealt with, the next one
 * to wait for, a queue of due ticks in tick order, the runs alive, the
 * retries waiting, and a range of ticks that did not run (written as one
 * history record). The jobs wait in a min-heap keyed by the time each has
 * something to do, so a timer costs O(log jobs), never O(jobs).
 *
 * A live tick is claimed a window ahead of its instant (PRECLAIM_MS, more
 * when the runs of one instant take longer than that to prepare: below),
 * and its run prepared (run.h: the shim started, waiting): at the instant
 * the wall timer (loop.h) fires and the runner only tells the shim to go.
 * The claim is the same atomic script as at the instant (checked against
 * the lease's token); what could change in between decides at the
 * instant: the go is sent only before the stop point of what covers the
 * run (the lease, or its own registration after a handover), else the run
 * is cancelled and recorded failed_to_start with its reason; and not when
 * the job was paused in between (the tick is recorded skipped, reason
 * paused, as the pause's other ticks are). A job with a run alive under
 * forbid or replace is not claimed ahead (its tick is decided at its
 * instant, as before), and a run elsewhere makes a claim ahead wait for the
 * instant instead of skipping, so the policies decide as they did.
 *
 * Runs (struct rrun) are a list: their number is bounded by the processes
 * alive, not by the jobs. A run is covered by the lease while its leader
 * leads; after a handover, by its own registration (claim.h), which the
 * runner refreshes every lease.renew and enforces like a lease. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "claim.h"
#include "clock.h"
#include "history.h"
#include "hook.h"
#include "keys.h"
#include "pause.h"
#include "run.h"
#include "runner.h"
#include "schedule.h"
#include "trigger.h"

#define QUEUE_MAX        4096 /* ticks queued per job, at most */
#define OUTBOX_MAX       1000 /* bookkeeping writes waiting, at most */
#define CLAIM_RETRY_MS   100  /* a claim that failed (Redis unreachable) is retried this often */
#define BUSY_POLL_MS     500  /* a tick waiting for a run elsewhere looks again this often */
#define GATE_RETRY_MS    20   /* no blocking call allowed now: look again this soon */
#define FLUSH_RETRY_MS   1000 /* the outbox could not be written: try again then */
#define MARK_BATCH       500  /* high-water marks read per MGET */
#define CONTROL_RETRY_MS 1000 /* the control keys could not be read: try again then */
/* Starting runs (a claim round trip and a fork each) stops after this long
 * in one turn of the loop and goes on a millisecond later, after the
 * lease's own timers: a catch-up of many jobs at once never holds the
 * loop past the renewal. */
#define TURN_BUDGET_MS 20
/* A live tick is claimed and its run prepared at least this long before
 * its instant: enough for a claim round trip and a shim's start on a busy
 * machine, short enough that a leader that dies (SIGKILL) in between
 * takes few prepared runs with it (as it takes its running ones). Each
 * preparation costs a round trip and a posix_spawn (1-3 ms), one after the
 * other, so the runs of one busy instant (18 of 10,000 jobs) need more:
 * the window doubles, up to PRECLAIM_MAX_MS, when a live tick of an
 * instant some of whose runs were prepared in time is claimed after that
 * instant (the batch outgrew the window; logged claim_ahead), and shrinks
 * back by an eighth of its excess at each instant whose preparations ended
 * with more than half of it to spare. A tick claimed late for another
 * reason (the first ticks of a leadership, a loop held up with nothing
 * prepared) does not grow it. */
#define PRECLAIM_MS     25
#define PRECLAIM_MAX_MS 250
/* Late claims in the first second of a leadership do not grow the window:
 * its first ticks are claimed as the high-water marks are read. */
#define PRECLAIM_SETTLE_MS 1000
/* A prepared run whose instant is this much further than PRECLAIM_MAX_MS
 * ahead: the wall clock was stepped back under it. */
#define STEP_BACK_MS  1000
#define PAUSE_FLUSH_S 3600      /* a paused job's skipped ticks are recorded at least this often */
#define PAUSE_FOREVER INT64_MAX /* paused, no resume yet */

/* ---- the parts ---- */

/* A jobs.yaml generation, kept while a run or a job state uses it. */
struct jobset {
    struct jobs *jobs;
    int refs;
    struct jobset *next;
};

/* A run of a tick of ours still to start without a new claim: a retry, or
 * a tick held by a pause that came after its claim (held: its prepared run
 * was cancelled before the instant). A held tick waits for the pause's
 * end: recorded skipped, or run as a catch-up when the resume catches up
 * (sched_held). */
struct retry {
    int64_t tick;
    int attempt;
    int64_t at_ns;
    bool held;
    enum run_trigger trigger;
    struct retry *next;
};

/* A request of baton trigger (trigger.h) this leader is to run. */
struct manual {
    char id[TRIGGER_ID_MAX + 1];
    char by[128]; /* who asked */
    int attempt;
    int64_t requested_s;
    struct manual *next;
    struct manual *hash_next; /* the runner's index of requests by id */
};

struct jobstate {
    const struct job *job;
    struct jobset *set;
    bool mark_known;   /* the high-water mark was read in this leadership */
    bool mark_unset;   /* Redis has none: ours (last) is still to be written */
    int64_t last;      /* the last tick dealt with (Unix s) */
    int64_t next_tick; /* the next tick to queue (Unix s); 0: none */
    struct sched_tick *q;
    size_t qhead, qlen, qcap, qmissed; /* a ring; qmissed: how many are missed */
    int running;                       /* runs of this job alive here */
    int64_t hold_until;                /* CLOCK_MONOTONIC: the head waits until then */
    struct retry *retries;
    struct manual *manuals;     /* requests to run now, oldest first */
    struct sched_range skipped; /* ticks that did not run, not yet written */
    /* Paused (pause.h): until when its ticks are skipped (Unix s; 0: not
     * paused, PAUSE_FOREVER: no resume yet), its own entry as read (NULL:
     * none; paused by "*" only), whether "*"'s resume waits for it, and
     * the ticks skipped so far: recorded, and the high-water mark moved
     * past them, when the resume comes or every PAUSE_FLUSH_S. */
    int64_t pause_until;
    char *pause_raw;
    int64_t own_until;
    bool all_pending;
    struct sched_range paused;
    /* The run id the head's claim is made with, kept across retries of the
     * claim: a retry after a lost answer is recognised as the same claim. */
    int64_t claim_tick;
    char claim_id[RUN_ID_MAX];
    /* A claim of claim_tick went unanswered (Redis stalled past
     * redis_timeout): it may have been applied after all, and the tick
     * then be ours (resolve_lost_claim). */
    bool claim_lost;
    int claim_majority; /* of the masters it went to (1: one server) */
    /* Claims that failed in a row (Redis did not answer), and since when
     * (CLOCK_MONOTONIC): the first is logged at warn, the rest at debug,
     * and claim_failures_ended says how many and how long. */
    int64_t claim_failures, claim_failing_since;
    /* The reason to record if that claim was to skip the tick (NULL: to
     * run it): a lost skip claim is recorded with it (resolve_lost_claim). */
    const char *claim_skip_reason;
    int64_t claimed_max; /* the last tick this process claimed (kept across leaderships) */
    size_t heap_pos;
    int64_t key;               /* when it next has something to do (CLOCK_MONOTONIC), 0: never */
    bool kept;                 /* runner_set_jobs: matched by a job of the new file */
    bool rekey;                /* runner_set_jobs: new or changed, its key to compute afresh */
    struct jobstate *old_next; /* runner_set_jobs: the list before it */
    struct jobstate *next;     /* all states */
    struct jobstate *hash_next;
};

struct rrun {
    struct run run;
    struct jobstate *js; /* NULL once its job is gone from jobs.yaml */
    struct jobset *set;
    bool own; /* registered on its own (after a handover), not by the lease */
    char trigger_id[TRIGGER_ID_MAX + 1]; /* a manual run's request; "" for a tick's run */
    struct rrun *next;
};

enum outbox_kind {
    OUT_HISTORY,         /* a history record */
    OUT_RELEASE,         /* unregister a run (claim_release) */
    OUT_TRIGGER_STARTED, /* a manual run started (trigger_started) */
    OUT_TRIGGER_DONE,    /* a manual run ended: unregister it, request done (trigger_finish) */
};

struct outbox_item {
    enum outbox_kind kind;
    struct history_command cmd;         /* OUT_HISTORY */
    char *job, *member;                 /* OUT_RELEASE, OUT_TRIGGER_DONE */
    char *trigger_id, *run_id, *reason; /* OUT_TRIGGER_* */
    enum history_outcome outcome;       /* OUT_TRIGGER_DONE */
    int exit_code;
    const char *signal; /* static */
    int64_t started_ms, duration_ms; /* OUT_TRIGGER_DONE: when the command ran */
    struct outbox_item *next;
};

#define HEAP_NONE ((size_t)-1)
#define HASH_SIZE 16384
#define MANUAL_HASH_SIZE 1024 /* requests waiting are at most TRIGGER_QUEUE_MAX */

struct runner {
    struct runner_host h;
    char *node, *group;
    struct run_env env;
    struct jobset *sets, *current;
    struct jobstate *states;
    struct jobstate *hash[HASH_SIZE];
    struct jobstate **heap;
    size_t nheap, heapcap;
    struct rrun *runs;
    size_t nruns;
    bool leading;
    uint64_t term;
    int64_t lead_wall_s;    /* when this leadership began (Unix s) */
    int64_t lease_deadline; /* covers the runs that are not on their own */
    int64_t own_cover;      /* covers the runs on their own: their registration's end */
    int64_t own_refresh_at; /* next refresh of those */
    int64_t wall_offset_ms; /* wall - monotonic when the keys were computed */
    uint64_t seq;
    struct outbox_item *outbox, *outbox_tail;
    size_t noutbox;
    int64_t flush_retry_at;
    int64_t flush_failed_until; /* an outbox write failed: none before then */
    /* The control keys (pause.h, trigger.h): read at lead, when a message
     * says they changed, and every control_poll_ms (pub/sub may lose one). */
    int64_t control_at; /* CLOCK_MONOTONIC; 0: not leading */
    char *all_raw;      /* the "*" entry of the paused hash, as read */
    int64_t all_until;  /* its pause (as pause_until) */
    size_t all_pending; /* jobs whose ticks before its resume are not yet recorded */
    size_t nmanuals;    /* requests waiting in the jobs' lists */
    struct manual *manual_hash[MANUAL_HASH_SIZE]; /* the same, by id */
    /* This term's grant came from a server that may lack the last writes of
     * the term before (baton_election_server_changed): no catch-up. */
    bool no_catchup, no_catchup_logged;
    int64_t turn_end; /* this turn of the loop yields at this time (TURN_BUDGET_MS) */
    /* The claim-ahead window (PRECLAIM_MS): its length now (ms); the
     * instant (Unix s; 0: none) whose runs were prepared last, at least one
     * of them before it, and when the last of them was (wall ms); the
     * instants whose late claim grew it and whose go was weighed for a
     * shrink, last; when this leadership began (CLOCK_MONOTONIC). */
    int64_t ahead_ms, prep_at, prep_done_ms, grown_at, went_at, lead_since;
    /* Not leading, with claims left to resolve (resolve_lost_claim): the
     * next try (CLOCK_MONOTONIC; 0: none) */
    int64_t lost_retry_at;
    size_t nlost;   /* job states with claim_lost set: the only ones a follower looks at */
    size_t npaused; /* job states paused or with an entry, at the last apply_pauses() */
};

/* ---- clocks ---- */

/* The monotonic time at which the wall clock shows unix_s. */
static int64_t mono_at(int64_t unix_s, int64_t now_ns, int64_t now_wall_ms)
{
    return now_ns + (unix_s * 1000 - now_wall_ms) * MS;
}

/* ---- job states: hash and heap ---- */

static unsigned hash_name(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % HASH_SIZE;
}

static struct jobstate *find_state(struct runner *r, const char *name)
{
    for (struct jobstate *js = r->hash[hash_name(name)]; js != NULL; js = js->hash_next)
        if (strcmp(js->job->name, name) == 0)
            return js;
    return NULL;
}

/* ---- requests waiting (struct manual), indexed by id ---- */

static struct manual **manual_slot(struct runner *r, const char *id)
{
    return &r->manual_hash[hash_name(id) % MANUAL_HASH_SIZE];
}

/* Appends m to js's requests and to the index. */
static void manual_add(struct runner *r, struct jobstate *js, struct manual *m)
{
    struct manual **p = &js->manuals, **h = manual_slot(r, m->id);
    while (*p != NULL)
        p = &(*p)->next;
    *p = m;
    m->hash_next = *h;
    *h = m;
    r->nmanuals++;
}

/* Takes the first of js's requests out of its list and the index, and
 * frees it. */
static void manual_pop(struct runner *r, struct jobstate *js)
{
    struct manual *m = js->manuals;
    js->manuals = m->next;
    for (struct manual **h = manual_slot(r, m->id); *h != NULL; h = &(*h)->hash_next)
        if (*h == m) {
            *h = m->hash_next;
            break;
        }
    free(m);
    r->nmanuals--;
}

static void heap_swap(struct runner *r, size_t a, size_t b)
{
    struct jobstate *t = r->heap[a];
    r->heap[a] = r->heap[b];
    r->heap[b] = t;
    r->heap[a]->heap_pos = a;
    r->heap[b]->heap_pos = b;
}

static void heap_sift(struct runner *r, size_t i)
{
    while (i > 0 && r->heap[(i - 1) / 2]->key > r->heap[i]->key) {
        heap_swap(r, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    for (;;) {
        size_t l = 2 * i + 1, s = i;
        if (l < r->nheap && r->heap[l]->key < r->heap[s]->key)
            s = l;
        if (l + 1 < r->nheap && r->heap[l + 1]->key < r->heap[s]->key)
            s = l + 1;
        if (s == i)
            return;
        heap_swap(r, i, s);
        i = s;
    }
}

static void heap_remove(struct runner *r, struct jobstate *js)
{
    size_t i = js->heap_pos;
    if (i == HEAP_NONE)
        return;
    js->heap_pos = HEAP_NONE;
    if (i != --r->nheap) {
        r->heap[i] = r->heap[r->nheap];
        r->heap[i]->heap_pos = i;
        heap_sift(r, i);
    }
}

/* Sets js's key (0: nothing to do) and its place in the heap. */
static void set_key(struct runner *r, struct jobstate *js, int64_t key)
{
    js->key = key;
    if (key == 0) {
        heap_remove(r, js);
        return;
    }
    if (js->heap_pos == HEAP_NONE) {
        if (r->nheap == r->heapcap) {
            size_t cap = r->heapcap ? r->heapcap * 2 : 64;
            struct jobstate **h = realloc(r->heap, cap * sizeof *h);
            if (h == NULL)
                return; /* out of memory: the job waits for the next event */
            r->heap = h;
            r->heapcap = cap;
        }
        js->heap_pos = r->nheap;
        r->heap[r->nheap++] = js;
    }
    heap_sift(r, js->heap_pos);
}

/* ---- queues ---- */

static struct sched_tick *q_head(struct jobstate *js)
{
    return &js->q[js->qhead];
}

static bool q_push(struct jobstate *js, int64_t at, bool missed, bool overlapped)
{
    if (js->qlen == js->qcap) {
        if (js->qcap == QUEUE_MAX)
            return false;
        size_t cap = js->qcap ? js->qcap * 2 : 8;
        struct sched_tick *q = malloc(cap * sizeof *q);
        if (q == NULL)
            return false;
        for (size_t i = 0; i < js->qlen; i++)
            q[i] = js->q[(js->qhead + i) % js->qcap];
        free(js->q);
        js->q = q;
        js->qcap = cap;
        js->qhead = 0;
    }
    js->q[(js->qhead + js->qlen) % js->qcap] =
        (struct sched_tick){.at = at, .missed = missed, .overlapped = overlapped};
    js->qlen++;
    js->qmissed += missed;
    return true;
}

static void q_pop(struct jobstate *js)
{
    js->qmissed -= q_head(js)->missed;
    js->qhead = (js->qhead + 1) % js->qcap;
    js->qlen--;
}

/* ---- the outbox: bookkeeping written when a blocking call is allowed ---- */

static void outbox_item_free(struct outbox_item *it)
{
    history_command_free(&it->cmd);
    free(it->job);
    free(it->member);
    free(it->trigger_id);
    free(it->run_id);
    free(it->reason);
    free(it);
}

static void outbox_put(struct runner *r, struct outbox_item *it)
{
    if (r->noutbox == OUTBOX_MAX) { /* bounded: the oldest goes */
        struct outbox_item *old = r->outbox;
        r->outbox = old->next;
        if (r->outbox == NULL)
            r->outbox_tail = NULL;
        r->noutbox--;
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "job", old->job != NULL ? old->job : "");
        cJSON_AddStringToObject(f, "run_id", "");
        cJSON_AddStringToObject(f, "error",
                                "too many records waiting for Redis: the oldest "
                                "is dropped");
        log_emit(r->h.log, LE_HISTORY_WRITE_FAILED, f);
        outbox_item_free(old);
    }
    if (r->outbox_tail != NULL)
        r->outbox_tail->next = it;
    else
        r->outbox = it;
    r->outbox_tail = it;
    r->noutbox++;
}

static void queue_history(struct runner *r, const char *job, const struct history_rec *rec)
{
    struct outbox_item *it = calloc(1, sizeof *it);
    if (it == NULL || (it->job = strdup(job)) == NULL ||
        history_command(rec, r->group, job, r->h.history_len, &it->cmd) != BATON_OK) {
        if (it != NULL)
            outbox_item_free(it);
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "job", job);
        cJSON_AddStringToObject(f, "run_id", rec->run_id != NULL ? rec->run_id : "");
        cJSON_AddStringToObject(f, "error", "out of memory");
        log_emit(r->h.log, LE_HISTORY_WRITE_FAILED, f);
        return;
    }
    outbox_put(r, it);
}

static void queue_release(struct runner *r, const char *job, const char *member)
{
    struct outbox_item *it = calloc(1, sizeof *it);
    if (it == NULL || (it->job = strdup(job)) == NULL || (it->member = strdup(member)) == NULL) {
        if (it != NULL)
            outbox_item_free(it);
        return; /* the registration expires on its own */
    }
    it->kind = OUT_RELEASE;
    outbox_put(r, it);
}

/* Queues the news of a manual run: started (rec NULL), or ended with rec's
 * outcome (which also unregisters it, as queue_release does). */
static void queue_trigger(struct runner *r, const struct run *run, const char *trigger_id,
                          const struct history_rec *rec)
{
    struct outbox_item *it = calloc(1, sizeof *it);
    if (it == NULL || (it->job = strdup(run->job->name)) == NULL ||
        (it->member = strdup(run->member)) == NULL ||
        (it->trigger_id = strdup(trigger_id)) == NULL || (it->run_id = strdup(run->id)) == NULL ||
        (it->reason = strdup(rec != NULL ? rec->reason : "")) == NULL) {
        if (it != NULL)
            outbox_item_free(it);
        if (rec != NULL) /* at least unregister it */
            queue_release(r, run->job->name, run->member);
        return;
    }
    it->kind = rec != NULL ? OUT_TRIGGER_DONE : OUT_TRIGGER_STARTED;
    if (rec != NULL) {
        it->outcome = rec->outcome;
        it->exit_code = rec->exit_code;
        it->signal = rec->signal;
        it->started_ms = rec->started_ms;
        it->duration_ms = rec->duration_ms;
    }
    outbox_put(r, it);
}

/* Writes one outbox item. Returns 0 or a BATON_E* code. */
static int outbox_write(struct runner *r, const struct outbox_item *it)
{
    switch (it->kind) {
    case OUT_RELEASE: return claim_release(r->h.client, r->group, it->job, it->member);
    case OUT_TRIGGER_STARTED:
        return trigger_started(r->h.client, r->group, it->trigger_id, it->run_id);
    case OUT_TRIGGER_DONE: {
        struct history_rec rec = {.run_id = it->run_id,
                                  .outcome = it->outcome,
                                  .exit_code = it->exit_code,
                                  .signal = it->signal,
                                  .reason = it->reason,
                                  .started_ms = it->started_ms,
                                  .duration_ms = it->duration_ms};
        return trigger_finish(r->h.client, r->group, it->job, it->member, it->trigger_id, &rec);
    }
    case OUT_HISTORY: break;
    }
    /* To every master; it holds when a majority took it (history.h) */
    struct baton_answers *a = NULL;
    int rc = baton_client_command_all(r->h.client, it->cmd.argc, (const char *const *)it->cmd.argv,
                                      NULL, &a);
    if (rc == BATON_OK)
        rc = baton_answers_check(r->h.client, a);
    baton_answers_free(a);
    return rc;
}

void runner_flush(struct runner *r)
{
    /* After a failure, not before its retry time, however often we are
     * called: over a quorum without a majority, a write that failed may
     * still have reached some masters (a release publishes "ended J" there,
     * which wakes us), and trying again at each wake-up would feed itself. */
    if (r->flush_failed_until != 0 && mono_ns() < r->flush_failed_until)
        return;
    r->flush_failed_until = 0;
    while (r->outbox != NULL && r->h.may_block(r->h.ctx)) {
        struct outbox_item *it = r->outbox;
        int rc = outbox_write(r, it);
        if (rc == BATON_EIO || rc == BATON_ENOMEM) {
            r->flush_retry_at = mono_ns() + FLUSH_RETRY_MS * MS; /* keep it: try later */
            r->flush_failed_until = r->flush_retry_at;
            return;
        }
        if (rc != BATON_OK && it->kind == OUT_HISTORY) {
            cJSON *f = log_fields();
            cJSON_AddStringToObject(f, "job", it->job);
            cJSON_AddStringToObject(f, "run_id", it->cmd.argc > 10 ? it->cmd.argv[9] : "");
            cJSON_AddStringToObject(f, "error", baton_client_errstr(r->h.client));
            log_emit(r->h.log, LE_HISTORY_WRITE_FAILED, f);
        }
        r->outbox = it->next;
        if (r->outbox == NULL)
            r->outbox_tail = NULL;
        r->noutbox--;
        outbox_item_free(it);
    }
    /* Whatever is left waits for the gate to open. */
    r->flush_retry_at = r->outbox == NULL ? 0 : mono_ns() + GATE_RETRY_MS * MS;
}

/* ---- ticks that do not run ---- */

/* Writes js's accumulated range of ticks that did not run: one log line,
 * one history record. */
static void write_skipped(struct runner *r, const char *job, const struct sched_range *s)
{
    char first[32], last[32];
    if (s->count == 0)
        return;
    log_rfc3339(s->first, first, sizeof first);
    log_rfc3339(s->last, last, sizeof last);
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", job);
    cJSON_AddStringToObject(f, "scheduled_at", first);
    cJSON_AddStringToObject(f, "until", last);
    if (s->count > 0)
        cJSON_AddNumberToObject(f, "ticks", (double)s->count);
    else
        cJSON_AddNullToObject(f, "ticks");
    cJSON_AddStringToObject(f, "outcome", history_outcome_name(s->outcome));
    cJSON_AddStringToObject(f, "reason", s->reason);
    log_emit_at(r->h.log, s->outcome == HO_MISSED ? LOG_WARN : LOG_INFO, LE_TICK_SKIPPED, f);
    struct history_rec rec = {.run_id = "",
                              .node = r->node,
                              .term = r->term,
                              .scheduled_at = s->first,
                              .until = s->last,
                              .ticks = s->count > 0 ? s->count : 0,
                              .trigger = "schedule",
                              .outcome = s->outcome,
                              .exit_code = -1,
                              .signal = "",
                              .reason = s->reason};
    queue_history(r, job, &rec);
}

static void flush_skipped(struct runner *r, struct jobstate *js)
{
    write_skipped(r, js->job->name, &js->skipped);
    memset(&js->skipped, 0, sizeof js->skipped);
}

/* Adds tick t to js's range of ticks that did not run, writing the range
 * first when t's outcome or reason differs. */
static void add_skipped(struct runner *r, struct jobstate *js, int64_t t, enum history_outcome o,
                        const char *reason)
{
    struct sched_range *s = &js->skipped;
    if (s->count != 0 && (s->outcome != o || strcmp(s->reason, reason) != 0))
        flush_skipped(r, js);
    if (s->count == 0) {
        s->first = t;
        s->outcome = o;
        s->reason = reason;
    }
    if (s->count >= 0)
        s->count++;
    s->last = t;
}

static const char reason_paused[] = "paused (baton pause)";

/* Records js's held ticks (struct retry) as skipped, reason paused, each
 * its own record, in tick order after what was decided before them, and
 * forgets them. (Not with the pause's range of ticks: that range is
 * recorded by a claim of its last tick, and a held tick is claimed
 * already.) */
static void record_held(struct runner *r, struct jobstate *js)
{
    for (struct retry **q = &js->retries; *q != NULL;) {
        struct retry *t = *q;
        if (!t->held) {
            q = &t->next;
            continue;
        }
        struct sched_range one = {.first = t->tick,
                                  .last = t->tick,
                                  .count = 1,
                                  .outcome = HO_SKIPPED,
                                  .reason = reason_paused};
        flush_skipped(r, js);
        write_skipped(r, js->job->name, &one);
        *q = t->next;
        free(t);
    }
}

/* js's claimed tick `tick`, whose prepared run a pause cancelled before
 * its instant, waits for the pause's end (kept in tick order). Returns
 * false when it cannot be kept (out of memory): the caller records it. */
static bool hold_tick(struct jobstate *js, int64_t tick)
{
    struct retry *t = calloc(1, sizeof *t), **q = &js->retries;
    if (t == NULL)
        return false;
    *t = (struct retry){.tick = tick, .attempt = 1, .held = true, .trigger = RUN_TRIGGER_CATCHUP};
    while (*q != NULL && !((*q)->held && (*q)->tick > tick))
        q = &(*q)->next;
    t->next = *q;
    *q = t;
    return true;
}

/* The pause of js ended with catch-up at wall (ms): each held tick runs
 * now (a retry of attempt 1, due at once), or is recorded as the catch-up
 * policy says (sched_held). */
static void release_held(struct runner *r, struct jobstate *js, int64_t wall)
{
    for (struct retry **q = &js->retries; *q != NULL;) {
        struct retry *t = *q;
        if (!t->held) {
            q = &t->next;
            continue;
        }
        enum sched_verdict v = sched_held(js->job, t->tick, wall);
        if (v == SV_START) {
            t->held = false;
            t->at_ns = mono_ns();
            if (wall - t->tick * 1000 < SCHED_LIVE_SLACK_MS)
                t->trigger = RUN_TRIGGER_SCHEDULE;
            q = &t->next;
            continue;
        }
        add_skipped(r, js, t->tick, v == SV_DROP ? HO_MISSED : HO_SUPERSEDED,
                    sched_reason(js->job, v));
        flush_skipped(r, js);
        *q = t->next;
        free(t);
    }
}

static void claim_failures_end(struct runner *r, struct jobstate *js, bool answered);

/* ---- job sets ---- */

static void set_unref(struct runner *r, struct jobset *s)
{
    if (s == NULL || --s->refs > 0)
        return;
    for (struct jobset **p = &r->sets; *p != NULL; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    jobs_free(s->jobs);
    free(s);
}

static void clear_schedule(struct runner *r, struct jobstate *js)
{
    claim_failures_end(r, js, false);
    flush_skipped(r, js);
    js->qhead = js->qlen = js->qmissed = 0;
    js->hold_until = 0;
    js->mark_known = js->mark_unset = false;
    js->next_tick = 0;
    /* Held ticks are claimed: no later leader runs them. Said here. */
    record_held(r, js);
    while (js->retries != NULL) {
        struct retry *t = js->retries;
        js->retries = t->next;
        hooks_retry_dropped(r->h.hooks, js->job->name, t->tick);
        free(t);
    }
    /* Requests stay pending in Redis, and a paused job's skipped ticks are
     * counted again from its mark: both are for the next leader to read. */
    while (js->manuals != NULL)
        manual_pop(r, js);
    free(js->pause_raw);
    js->pause_raw = NULL;
    js->pause_until = js->own_until = 0;
    js->all_pending = false;
    memset(&js->paused, 0, sizeof js->paused);
    set_key(r, js, 0);
}

/* Forgets the "*" entry as read: the next read applies it afresh. */
static void forget_all_pause(struct runner *r)
{
    free(r->all_raw);
    r->all_raw = NULL;
    r->all_until = 0;
    r->all_pending = 0;
}

/* Sets js->claim_lost, keeping the count of such states. */
static void set_claim_lost(struct runner *r, struct jobstate *js, bool lost)
{
    if (js->claim_lost != lost)
        r->nlost = lost ? r->nlost + 1 : r->nlost - 1;
    js->claim_lost = lost;
}

static void free_state(struct runner *r, struct jobstate *js)
{
    set_claim_lost(r, js, false);
    clear_schedule(r, js);
    set_unref(r, js->set);
    free(js->q);
    free(js);
}

struct runner *runner_new(const struct runner_host *host)
{
    struct runner *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->h = *host;
    /* Our own copies: a reload frees the configuration they came from. */
    r->h.node = r->node = strdup(host->node);
    r->h.group = r->group = strdup(host->group);
    if (r->node == NULL || r->group == NULL) {
        runner_free(r);
        return NULL;
    }
    r->ahead_ms = PRECLAIM_MS;
    r->env = (struct run_env){.log = host->log,
                              .loop = host->loop,
                              .node = r->node,
                              .output_bytes = host->output_bytes,
                              .fault_start = host->fault_start};
    return r;
}

int runner_set_jobs(struct runner *r, struct jobs *jobs)
{
    struct jobset *set = calloc(1, sizeof *set);
    if (set == NULL) {
        jobs_free(jobs);
        return BATON_ENOMEM;
    }
    set->jobs = jobs;
    set->refs = 1; /* the runner's */
    set->next = r->sets;
    r->sets = set;

    struct jobstate *old = r->states, *fresh = NULL, **tail = &fresh;
    r->states = NULL;
    memset(r->hash, 0, sizeof r->hash);
    /* Index the old states by name, so that matching is not O(jobs^2);
     * old_next keeps the old list while next makes the new one. */
    for (struct jobstate *js = old; js != NULL; js = js->next) {
        js->old_next = js->next;
        unsigned h = hash_name(js->job->name);
        js->hash_next = r->hash[h];
        r->hash[h] = js;
    }
    int64_t now_s = wall_ms() / 1000;
    for (size_t i = 0; i < jobs->n; i++) {
        const struct job *job = &jobs->v[i];
        struct jobstate *js = find_state(r, job->name);
        if (js != NULL && js->kept) {
            continue; /* a name twice (jobs.yaml refuses it): the first keeps the state */
        } else if (js != NULL) { /* kept: left out of the old list below, in one pass */
            js->kept = true;
        } else if ((js = calloc(1, sizeof *js)) == NULL) {
            continue; /* out of memory: the job is left out (the set below still holds it) */
        } else {
            js->heap_pos = HEAP_NONE;
        }
        bool same = js->job != NULL && js->job->fingerprint == job->fingerprint;
        set_unref(r, js->set);
        js->job = job;
        js->set = set;
        set->refs++;
        js->rekey = !same;
        if (!same && r->leading) { /* new or changed: its schedule starts now */
            clear_schedule(r, js);
            js->mark_known = true;
            js->last = now_s;
            js->next_tick = sched_next(job, now_s);
        }
        js->next = NULL;
        *tail = js;
        tail = &js->next;
    }
    /* Jobs gone from the file: their runs finish under their old definition. */
    while (old != NULL) {
        struct jobstate *js = old;
        old = js->old_next;
        if (js->kept) {
            js->kept = false;
            continue;
        }
        for (struct rrun *rr = r->runs; rr != NULL; rr = rr->next)
            if (rr->js == js)
                rr->js = NULL;
        free_state(r, js);
    }
    r->states = fresh;
    memset(r->hash, 0, sizeof r->hash);
    for (struct jobstate *js = r->states; js != NULL; js = js->next) {
        unsigned h = hash_name(js->job->name);
        js->hash_next = r->hash[h];
        r->hash[h] = js;
    }
    struct jobset *previous = r->current;
    r->current = set;
    set_unref(r, previous);
    /* New and changed jobs are looked at now; the others keep their keys:
     * making 10,000 unchanged jobs due at once would hold the next
     * instant's claims behind them. */
    for (struct jobstate *js = r->states; js != NULL && r->leading; js = js->next)
        if (js->rekey)
            set_key(r, js, mono_ns());
    if (r->leading) { /* requests and pauses of new or changed jobs: read again */
        forget_all_pause(r);
        r->control_at = mono_ns();
    }
    runner_on_timer(r);
    return BATON_OK;
}

/* ---- runs ---- */

size_t runner_running(const struct runner *r)
{
    return r->nruns;
}

int64_t runner_claim_ahead_ms(const struct runner *r)
{
    return r->leading ? r->ahead_ms : 0;
}

static void make_run_id(struct runner *r, int64_t tick, int attempt, char *id, size_t len)
{
    r->seq++;
    snprintf(id, len, "%" PRId64 "-%" PRIu64 "-%d-%" PRIu64, tick, r->term, attempt, r->seq);
}

/* The fence a run's shim enforces on its own (proc.h): SIGTERM at the stop
 * point of what covers it (the lease, or its own registration after a
 * handover), SIGKILL kill_margin before that ends: what the daemon and the
 * runner do themselves, in a process that a stopped or starved baton does
 * not hold back. */
static void fence_of(const struct runner *r, bool own, int64_t *term_at, int64_t *kill_at)
{
    int64_t cover = own ? r->own_cover : r->lease_deadline;
    *term_at = cover != 0 ? cover - r->h.guard_ns : 0;
    *kill_at = cover != 0 ? cover - r->h.kill_margin_ns : 0;
}

/* Tells the shims of the runs covered by the lease (own false) or by their
 * own registration (own true) where their fence is now. */
static void send_fences(struct runner *r, bool own)
{
    int64_t term_at, kill_at;
    fence_of(r, own, &term_at, &kill_at);
    for (struct rrun *rr = r->runs; rr != NULL; rr = rr->next)
        if (rr->own == own)
            run_fence(&rr->run, term_at, kill_at);
}

/* Records a finished run (or one that never started) and unregisters it;
 * a manual run's request (trigger_id not "") is done with its outcome. The
 * run then goes to its hook (deferred while a retry follows: hook.h). */
static void record_run(struct runner *r, const struct run *run, const char *trigger_id,
                       bool retry_follows)
{
    struct history_rec rec;
    run_record(run, r->node, &rec);
    if (trigger_id != NULL && trigger_id[0] != '\0')
        queue_trigger(r, run, trigger_id, &rec);
    else
        queue_release(r, run->job->name, run->member);
    queue_history(r, run->job->name, &rec);
    hooks_run_ended(r->h.hooks, run, retry_follows);
}

/* Starts a run of js for a claimed tick, or for request trigger_id (a
 * manual run; NULL otherwise). A start that fails is recorded. Returns
 * the run when the command runs, else NULL. */
static void runs_changed(struct runner *r)
{
    if (r->h.on_runs_changed != NULL)
        r->h.on_runs_changed(r->h.ctx);
}

cJSON *runner_runs_json(const struct runner *r, size_t max)
{
    cJSON *a = cJSON_CreateArray();
    size_t n = 0, skip = 0;
    for (const struct rrun *rr = r->runs; rr != NULL; rr = rr->next)
        n += rr->run.state != RUN_STARTING && rr->run.state != RUN_EXITED;
    if (n > max)
        skip = n - max; /* the newest (the list's first) are left out */
    for (const struct rrun *rr = r->runs; rr != NULL && a != NULL; rr = rr->next) {
        const struct run *run = &rr->run;
        char when[40];
        if (run->state == RUN_STARTING || run->state == RUN_EXITED)
            continue;
        if (skip > 0) {
            skip--;
            continue;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "job", run->job->name);
        cJSON_AddStringToObject(o, "run_id", run->id);
        cJSON_AddStringToObject(o, "trigger", run_trigger_name(run->trigger));
        log_rfc3339(run->tick, when, sizeof when);
        cJSON_AddStringToObject(o, "scheduled_at", when);
        log_rfc3339_ms(run->started_wall_ms, when, sizeof when);
        cJSON_AddStringToObject(o, "started", when);
        if (run->by[0] != '\0')
            cJSON_AddStringToObject(o, "by", run->by);
        else
            cJSON_AddNullToObject(o, "by");
        cJSON_InsertItemInArray(a, 0, o); /* the oldest first */
    }
    return a;
}

static struct rrun *start_run(struct runner *r, struct jobstate *js, const char *id, int64_t tick,
                              int attempt, enum run_trigger trigger, const char *trigger_id,
                              bool prepared)
{
    struct rrun *rr = calloc(1, sizeof *rr);
    if (rr == NULL) {
        /* No memory for even the record: a tiny one on the stack. */
        struct run gone = {.job = js->job,
                           .tick = tick,
                           .attempt = attempt,
                           .term = r->term,
                           .trigger = trigger,
                           .state = RUN_EXITED,
                           .outcome = HO_FAILED_TO_START,
                           .fence_fd = -1,
                           .env = &r->env};
        snprintf(gone.id, sizeof gone.id, "%s", id);
        snprintf(gone.member, sizeof gone.member, "%s/%s", r->node, id);
        snprintf(gone.error, sizeof gone.error, "out of memory");
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "job", js->job->name);
        cJSON_AddStringToObject(f, "run_id", id);
        cJSON_AddStringToObject(f, "outcome", "failed_to_start");
        cJSON_AddStringToObject(f, "error", "out of memory");
        log_emit_at(r->h.log, LOG_ERROR, LE_JOB_END, f);
        record_run(r, &gone, trigger_id, false);
        return NULL;
    }
    int64_t term_at, kill_at;
    fence_of(r, false, &term_at, &kill_at);
    if (!run_start(&rr->run, &r->env, js->job, id, tick, attempt, r->term, trigger, term_at,
                   kill_at, prepared)) {
        record_run(r, &rr->run, trigger_id, false); /* failed_to_start: logged by run_start */
        run_dispose(&rr->run);
        free(rr);
        return NULL;
    }
    if (trigger_id != NULL)
        snprintf(rr->trigger_id, sizeof rr->trigger_id, "%s", trigger_id);
    rr->js = js;
    rr->set = js->set;
    js->set->refs++;
    rr->next = r->runs;
    r->runs = rr;
    r->nruns++;
    js->running++;
    if (!rr->run.prepared)
        runs_changed(r);
    return rr;
}

static void wake_job(struct runner *r, struct jobstate *js)
{
    if (r->leading)
        set_key(r, js, mono_ns());
}

static int64_t retry_delay_ms(const struct job *job, int attempt)
{
    int64_t d = job->retry_backoff_ms;
    for (int i = 1; i < attempt && d < INT64_C(3600000); i++)
        d *= 2;
    return d > INT64_C(3600000) ? INT64_C(3600000) : d;
}

static void finish_run(struct runner *r, struct rrun *rr)
{
    struct run *run = &rr->run;
    struct jobstate *js = rr->js;
    bool failed = run->outcome == HO_FAILED || run->outcome == HO_TIMEOUT, retry = false;
    /* A manual run is not retried: whoever asked for it sees its outcome. */
    if (failed && js != NULL && r->leading && !rr->own && js->job == run->job &&
        rr->trigger_id[0] == '\0' && run->attempt <= js->job->retries && run->term == r->term) {
        struct retry *t = calloc(1, sizeof *t);
        int64_t delay = retry_delay_ms(run->job, run->attempt);
        if (t != NULL) {
            *t = (struct retry){.tick = run->tick,
                                .attempt = run->attempt + 1,
                                .at_ns = mono_ns() + delay * MS,
                                .trigger = RUN_TRIGGER_RETRY,
                                .next = js->retries};
            js->retries = t;
            cJSON *g = log_fields();
            cJSON_AddStringToObject(g, "job", run->job->name);
            cJSON_AddStringToObject(g, "run_id", run->id);
            cJSON_AddNumberToObject(g, "next_attempt", run->attempt + 1);
            cJSON_AddNumberToObject(g, "retry_in_ms", (double)delay);
            log_emit(r->h.log, LE_JOB_RETRY, g);
            retry = true;
        }
    }
    if (run->outcome == HO_SKIPPED) { /* cancelled before its instant (paused) */
        /* Held for the pause's end while this leader is on it: a resume
         * with catch-up runs it; else it is recorded skipped then. */
        bool held = js != NULL && r->leading && !rr->own && js->job == run->job &&
                    js->pause_until != 0 && hold_tick(js, run->tick);
        if (!held) {
            struct sched_range one = {.first = run->tick,
                                      .last = run->tick,
                                      .count = 1,
                                      .outcome = HO_SKIPPED,
                                      .reason = run->error};
            if (js != NULL) /* the ticks before it first */
                flush_skipped(r, js);
            write_skipped(r, run->job->name, &one);
        }
        queue_release(r, run->job->name, run->member);
    } else {
        record_run(r, run, rr->trigger_id, retry);
    }
    if (js != NULL) {
        js->running--;
        wake_job(r, js);
    }
    for (struct rrun **p = &r->runs; *p != NULL; p = &(*p)->next)
        if (*p == rr) {
            *p = rr->next;
            break;
        }
    r->nruns--;
    run_dispose(run);
    set_unref(r, rr->set);
    free(rr);
    runs_changed(r);
}

/* ---- claims and decisions ---- */

static void log_claim(struct runner *r, const char *job, int64_t tick, enum log_event ev,
                      const char *why, const char *then)
{
    char when[32];
    log_rfc3339(tick, when, sizeof when);
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", job);
    cJSON_AddStringToObject(f, "scheduled_at", when);
    if (ev == LE_CLAIM_FAILED)
        cJSON_AddStringToObject(
            f, "error", why != NULL && why[0] != '\0' ? why : baton_client_errstr(r->h.client));
    cJSON_AddStringToObject(f, "then", then);
    enum log_level lvl = log_event_level(ev);
    if (ev == LE_CLAIM_FAILED) /* the first of a run of failures, or one of the next */
        lvl = why != NULL ? LOG_WARN : LOG_DEBUG;
    log_emit_at(r->h.log, lvl, ev, f);
}

/* A claim of js's tick failed (Redis did not answer; why: the detail, or
 * NULL for the client's): logged at warn when it starts a run of failures,
 * at debug after (each one counted in /metrics all the same), so that an
 * outage is one line per job, not ten a second. */
static void claim_failed(struct runner *r, struct jobstate *js, int64_t tick, const char *why)
{
    const char *then = "retried in order within its catch-up window";
    if (js->claim_failures++ == 0) {
        js->claim_failing_since = mono_ns();
        log_claim(r, js->job->name, tick, LE_CLAIM_FAILED,
                  why != NULL && why[0] != '\0' ? why : baton_client_errstr(r->h.client), then);
    } else {
        log_claim(r, js->job->name, tick, LE_CLAIM_FAILED, NULL, then); /* at debug */
    }
}

/* The end of js's run of failed claims (answered: a claim got an answer;
 * else the node stopped trying): one line with their number and time. */
static void claim_failures_end(struct runner *r, struct jobstate *js, bool answered)
{
    if (js->claim_failures == 0)
        return;
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", js->job->name);
    cJSON_AddNumberToObject(f, "failures", (double)js->claim_failures);
    cJSON_AddNumberToObject(f, "outage_ms", (double)((mono_ns() - js->claim_failing_since) / MS));
    cJSON_AddBoolToObject(f, "answered", answered);
    log_emit(r->h.log, LE_CLAIM_FAILURES_ENDED, f);
    js->claim_failures = js->claim_failing_since = 0;
}

/* True when member ("<node>/<run_id>") is a run of ours that has ended
 * (its unregistration is still in the outbox). */
static bool stale_own(const struct runner *r, const char *member)
{
    size_t nl = strlen(r->node);
    if (strncmp(member, r->node, nl) != 0 || member[nl] != '/')
        return false;
    for (const struct rrun *rr = r->runs; rr != NULL; rr = rr->next)
        if (strcmp(rr->run.member, member) == 0)
            return false;
    return true;
}

/* Leaves out of c the runs of ours that have ended: they count for
 * nothing. */
static void live_busy(const struct runner *r, struct claim_reply *c)
{
    size_t live = 0;
    for (size_t i = 0; i < c->nbusy; i++)
        if (!stale_own(r, c->busy[i]))
            c->busy[live++] = c->busy[i];
    c->nbusy = live;
}

/* True when a claim that has just succeeded came after the point where we
 * must stop acting as the leader (a stall): what it claimed is ours, but
 * starting it now could overlap the next leader. */
static bool claimed_late(const struct runner *r)
{
    return loop_now() >= baton_election_deadline_ns(r->h.election) - r->h.guard_ns;
}

/* The reason to record for a live tick skipped because of a run elsewhere. */
static const char reason_busy[] = "a run of the job was still alive in the group "
                                  "(concurrency: forbid)";

/* concurrency: replace: stops js's runs here (their SIGCHLD wakes the job). */
static void stop_local_runs(struct runner *r, struct jobstate *js)
{
    for (struct rrun *rr = r->runs; rr != NULL; rr = rr->next)
        if (rr->js == js && rr->run.state == RUN_RUNNING)
            run_stop(&rr->run, RUN_STOP_REPLACED, 0);
}

/* concurrency: replace: asks the nodes running js's runs elsewhere to stop
 * them (their "ended" message wakes the job). */
static void stop_remote_runs(struct runner *r, const struct claim_reply *c)
{
    size_t nl = strlen(r->node);
    for (size_t i = 0; i < c->nbusy; i++)
        if (!(strncmp(c->busy[i], r->node, nl) == 0 && c->busy[i][nl] == '/'))
            claim_request_stop(r->h.client, r->group, c->busy[i]);
}

/* Tick `tick` of js was claimed by this process: a later leadership of
 * ours starts after it even if Redis lost the mark (a failover to a replica
 * that missed it). */
static void note_claimed(struct jobstate *js, int64_t tick)
{
    if (tick > js->claimed_max)
        js->claimed_max = tick;
}

/* Records tick h of js, claimed under run id (member), as failed to start
 * because of why. */
static void not_started(struct runner *r, struct jobstate *js, const char *id, const char *member,
                        const struct sched_tick *h, const char *why)
{
    struct run gone = {.job = js->job,
                       .tick = h->at,
                       .attempt = 1,
                       .term = r->term,
                       .state = RUN_STARTING,
                       .fence_fd = -1,
                       .env = &r->env};
    snprintf(gone.id, sizeof gone.id, "%s", id);
    snprintf(gone.member, sizeof gone.member, "%s", member);
    gone.trigger = h->missed ? RUN_TRIGGER_CATCHUP : RUN_TRIGGER_SCHEDULE;
    gone.outcome = HO_FAILED_TO_START;
    snprintf(gone.error, sizeof gone.error, "%s", why);
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", js->job->name);
    cJSON_AddStringToObject(f, "run_id", id);
    cJSON_AddStringToObject(f, "outcome", "failed_to_start");
    cJSON_AddStringToObject(f, "error", gone.error);
    log_emit_at(r->h.log, LOG_ERROR, LE_JOB_END, f);
    record_run(r, &gone, NULL, false);
}

/* js's unanswered or undecided claim of claim_tick (claim_lost), once this
 * node will not claim that tick again (a new term found the job's mark at
 * or past it, or the node stopped leading), and before the node claims
 * another tick of the job (claimed:J keeps each node's last claim of a
 * job): if Redis applied it after all (on a quorum: a majority did), its
 * mark is passed, so no leader will run it: a claim to run is recorded
 * failed_to_start (and its registration removed), a claim as skipped is
 * recorded skipped (claim_lookup). A claim that was not applied (on a
 * quorum: on too few masters to make a majority) leaves nothing to record:
 * the next leader claims the tick.
 * On one server it keeps trying while Redis cannot answer. Over a quorum,
 * when too few masters answer to tell, the node decides at once: it did
 * not run the tick, and it records so (the next leader runs the tick,
 * unless the masters it reads say a majority had it, and then this record
 * is where it is). Asking again could not be relied on: what this claim
 * left there (its registration, its record in claimed:J) expires before
 * the masters that did not answer come back. */
static void resolve_lost_claim(struct runner *r, struct jobstate *js)
{
    if (!js->claim_lost || js->claim_id[0] == '\0' || !r->h.may_block(r->h.ctx))
        return;
    char member[RUN_ID_MAX + 160];
    snprintf(member, sizeof member, "%s/%s", r->node, js->claim_id);
    enum claim_result res =
        claim_lookup(r->h.client, r->group, js->job->name, js->claim_tick, member);
    struct sched_tick h = {.at = js->claim_tick, .missed = true};
    if (res == CLAIM_OURS || res == CLAIM_OURS_EXPIRED) {
        log_claim(r, js->job->name, h.at, LE_CLAIM_RECOVERED, NULL, "recorded not started");
        not_started(r, js, js->claim_id, member, &h,
                    "claimed by a request whose answer was lost (Redis stalled), and this node "
                    "stopped leading before it could start it: not run");
    } else if (res == CLAIM_OURS_SKIPPED) {
        log_claim(r, js->job->name, h.at, LE_CLAIM_RECOVERED, NULL, "recorded skipped");
        struct sched_range one = {.first = h.at, .last = h.at, .count = 1, .outcome = HO_SKIPPED};
        one.reason = js->claim_skip_reason != NULL ? js->claim_skip_reason : reason_busy;
        write_skipped(r, js->job->name, &one);
    } else if (res == CLAIM_ERROR && js->claim_majority > 1) {
        not_started(r, js, js->claim_id, member, &h,
                    "its claim was undecided (a majority of the masters did not answer it) when "
                    "this node gave it up: not run here (a later leader runs it unless a "
                    "majority had it)");
        res = CLAIM_TAKEN; /* dealt with */
    }
    if (res != CLAIM_ERROR) {
        set_claim_lost(r, js, false);
        js->claim_id[0] = '\0';
    }
}

/* ---- the claim-ahead window (PRECLAIM_MS) ---- */

/* How long before its instant js's next live tick is claimed (ms): 0 when
 * it cannot be decided ahead (a run of a forbid or replace job is alive
 * here: whether the tick runs or is skipped depends on when that ends). */
static int64_t ahead_ms(const struct runner *r, const struct jobstate *js)
{
    return js->job->concurrency == JOB_ALLOW || js->running == 0 ? r->ahead_ms : 0;
}

/* The first claim of js's live tick `at` came late_ms after its instant.
 * When a run of the same instant was prepared before it (the batch
 * outgrew the window, rather than a loop held up or a leadership's first
 * ticks), the window doubles, once per instant. */
static void window_late(struct runner *r, const struct jobstate *js, int64_t at, int64_t late_ms)
{
    if (ahead_ms(r, js) == 0 || r->prep_at != at || r->grown_at == at ||
        r->ahead_ms >= PRECLAIM_MAX_MS || mono_ns() - r->lead_since < PRECLAIM_SETTLE_MS * MS)
        return;
    int64_t was = r->ahead_ms;
    r->ahead_ms = 2 * was < PRECLAIM_MAX_MS ? 2 * was : PRECLAIM_MAX_MS;
    r->grown_at = at;
    cJSON *f = log_fields();
    cJSON_AddNumberToObject(f, "ahead_ms", (double)r->ahead_ms);
    cJSON_AddNumberToObject(f, "was_ms", (double)was);
    cJSON_AddStringToObject(f, "job", js->job->name);
    cJSON_AddNumberToObject(f, "late_ms", (double)late_ms);
    log_emit(r->h.log, LE_CLAIM_AHEAD, f);
}

/* A run of js's live tick `at` was prepared ahead (wall ms now). */
static void window_prepared(struct runner *r, int64_t at)
{
    r->prep_at = at;
    r->prep_done_ms = wall_ms();
}

/* The go of the runs of instant at (Unix s): when the last of them was
 * prepared with more than half the window to spare, the window shrinks by
 * an eighth of its excess over twice what the preparations took. */
static void window_went(struct runner *r, int64_t at)
{
    if (r->prep_at != at || r->went_at == at)
        return;
    int64_t spare = at * 1000 - r->prep_done_ms, used = r->ahead_ms - spare;
    int64_t target = 2 * used > PRECLAIM_MS ? 2 * used : PRECLAIM_MS;
    r->went_at = at;
    if (spare > r->ahead_ms / 2 && target < r->ahead_ms)
        r->ahead_ms -= (r->ahead_ms - target + 7) / 8;
}

/* Claims the head of js's queue with mode and acts on the answer; ahead:
 * before the head's instant (its run is prepared, or the head waits for
 * its instant when a run elsewhere is alive). Returns true when the head
 * was dealt with (popped), false when it waits (js->hold_until says until
 * when, 0: until a run ends). */
static bool claim_head(struct runner *r, struct jobstate *js, enum claim_mode mode, bool ahead)
{
    const struct sched_tick h = *q_head(js);
    const char *token = baton_election_token(r->h.election);
    int64_t now = mono_ns();
    char id[RUN_ID_MAX], member[RUN_ID_MAX + 160];
    struct claim_reply c;
    /* The records of the ticks before this one first (superseded, dropped:
     * this claim passes them), and our ended runs unregistered: they must
     * not look busy. */
    flush_skipped(r, js);
    runner_flush(r);
    if (token == NULL)
        return false;
    if (!r->h.may_block(r->h.ctx)) {
        js->hold_until = now + GATE_RETRY_MS * MS;
        return false;
    }
    if (js->claim_lost && js->claim_tick != h.at) {
        /* A lost claim of another tick is settled first: its record in
         * claimed:J is this node's last claim of the job until the next. */
        resolve_lost_claim(r, js);
        if (js->claim_lost) {
            js->hold_until = now + CLAIM_RETRY_MS * MS;
            return false;
        }
    }
    if (js->claim_tick != h.at || js->claim_id[0] == '\0') {
        make_run_id(r, h.at, 1, js->claim_id, sizeof js->claim_id);
        js->claim_tick = h.at;
        if (!ahead && !h.missed) /* its first try, at or after its instant */
            window_late(r, js, h.at, wall_ms() - h.at * 1000);
    }
    const char *skip_reason = mode == CLAIM_SKIP ? sched_reason(js->job, SV_SKIP) : reason_busy;
    js->claim_skip_reason = mode == CLAIM_SKIP || mode == CLAIM_RUN_OR_SKIP ? skip_reason : NULL;
    snprintf(id, sizeof id, "%s", js->claim_id);
    snprintf(member, sizeof member, "%s/%s", r->node, id);
    enum claim_result res =
        claim_tick(r->h.client, r->group, js->job->name, baton_election_key(r->h.election), token,
                   h.at, mode, member, &c);
    if (res != CLAIM_ERROR)
        claim_failures_end(r, js, true);
    /* A tick claimed late (claimed_late) is recorded as failed to start. */
    bool late = (res == CLAIM_OK || res == CLAIM_OURS) && claimed_late(r);
    live_busy(r, &c);
    bool done = true;
    if (c.undo) /* a quorum's masters registered what does not run: released */
        queue_release(r, js->job->name, member);
    if (c.partial) /* undecided where it applied: resolved if we stop leading */
        set_claim_lost(r, js, true);
    js->claim_majority = c.majority;
    if (res != CLAIM_ERROR && res != CLAIM_BUSY && res != CLAIM_NOT_LEADER) {
        js->claim_id[0] = '\0'; /* the head is dealt with: the next claims afresh */
        set_claim_lost(r, js, false);
    }
    if (res == CLAIM_OURS || res == CLAIM_OURS_SKIPPED || res == CLAIM_OURS_EXPIRED)
        log_claim(r, js->job->name, h.at, LE_CLAIM_RECOVERED, NULL,
                  res == CLAIM_OURS           ? (late ? "recorded not started" : "run")
                  : res == CLAIM_OURS_SKIPPED ? "recorded skipped"
                                              : "recorded not started");
    switch (res) {
    case CLAIM_OURS: /* an earlier attempt claimed it; its answer was lost */
    case CLAIM_OK:
        q_pop(js);
        note_claimed(js, h.at);
        if (late)
            not_started(r, js, id, member, &h,
                        "claimed after the leader's stop point (it was stalled): not started");
        else {
            struct rrun *rr =
                start_run(r, js, id, h.at, 1, h.missed ? RUN_TRIGGER_CATCHUP : RUN_TRIGGER_SCHEDULE,
                          NULL, ahead && wall_ms() < h.at * 1000);
            if (rr != NULL && rr->run.prepared) {
                if (r->h.fault_slow_prepare)
                    nanosleep(&(struct timespec){.tv_nsec = 15 * MS}, NULL);
                window_prepared(r, h.at);
                if (r->h.fault_stop_after_preclaim)
                    raise(SIGSTOP);
            }
        }
        break;
    case CLAIM_NOT_DURABLE: /* claimed on the master only: running it could run it twice */
        q_pop(js);
        note_claimed(js, h.at);
        not_started(r, js, id, member, &h,
                    "claimed, but not acknowledged by min_replicas replicas in time: not run "
                    "(after a failover another leader could run it too)");
        break;
    case CLAIM_SKIPPED:
    case CLAIM_OURS_SKIPPED: /* an earlier attempt claimed it as skipped; its answer was lost */
        q_pop(js);
        note_claimed(js, h.at);
        add_skipped(r, js, h.at, HO_SKIPPED, skip_reason);
        break;
    case CLAIM_OURS_EXPIRED: /* ours to run, but its registration is gone: too late */
        q_pop(js);
        note_claimed(js, h.at);
        not_started(r, js, id, member, &h,
                    "claimed by a request whose answer was lost (Redis stalled) until its "
                    "registration expired: not started");
        break;
    case CLAIM_BUSY: /* runs elsewhere (after a handover): wait, or replace them */
        if (ahead) { /* decided at its instant, as if it had not been claimed ahead */
            js->hold_until = mono_at(h.at, now, wall_ms());
        } else if (c.nbusy == 0) { /* only our own ended runs: try again at once */
            js->hold_until = now + GATE_RETRY_MS * MS;
        } else {
            if (js->job->concurrency == JOB_REPLACE)
                stop_remote_runs(r, &c);
            js->hold_until = now + BUSY_POLL_MS * MS;
        }
        done = false;
        break;
    case CLAIM_TAKEN: /* another leader dealt with it */ q_pop(js); break;
    case CLAIM_NOT_LEADER:
        log_claim(r, js->job->name, h.at, LE_CLAIM_REFUSED, NULL, "not run");
        js->hold_until = now + CLAIM_RETRY_MS * MS;
        done = false;
        break;
    case CLAIM_ERROR:
        claim_failed(r, js, h.at, c.why);
        set_claim_lost(r, js, true);
        js->hold_until = now + CLAIM_RETRY_MS * MS;
        done = false;
        break;
    }
    claim_reply_free(&c);
    return done;
}

/* Starts the retries that are due (they need no claim: the tick is ours;
 * they are registered like any run). */
static void start_retries(struct runner *r, struct jobstate *js, int64_t now)
{
    for (struct retry **p = &js->retries; *p != NULL;) {
        struct retry *t = *p;
        if (t->held || t->at_ns > now || (js->job->concurrency == JOB_FORBID && js->running > 0)) {
            p = &t->next;
            continue;
        }
        const char *token = baton_election_token(r->h.election);
        if (token == NULL || !r->h.may_block(r->h.ctx))
            return;
        char id[RUN_ID_MAX], member[RUN_ID_MAX + 160];
        struct claim_reply c;
        make_run_id(r, t->tick, t->attempt, id, sizeof id);
        snprintf(member, sizeof member, "%s/%s", r->node, id);
        enum claim_result res =
            claim_tick(r->h.client, r->group, js->job->name, baton_election_key(r->h.election),
                       token, t->tick, CLAIM_REGISTER, member, &c);
        if ((c.undo || c.partial) && res != CLAIM_OK)
            queue_release(r, js->job->name, member);
        claim_reply_free(&c);
        if (res == CLAIM_ERROR || res == CLAIM_NOT_DURABLE) {
            t->at_ns = now + CLAIM_RETRY_MS * MS;
            return;
        }
        *p = t->next;
        if (res == CLAIM_OK)
            start_run(r, js, id, t->tick, t->attempt, t->trigger, NULL, false);
        else
            hooks_retry_dropped(r->h.hooks, js->job->name, t->tick);
        free(t);
    }
}

/* ---- manual runs (baton trigger) ---- */

static void log_trigger(struct runner *r, enum log_event ev, const char *job, const char *id,
                        int attempt, const char *detail)
{
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", job);
    cJSON_AddStringToObject(f, "trigger_id", id);
    if (attempt > 0)
        cJSON_AddNumberToObject(f, "attempt", attempt);
    if (detail != NULL)
        cJSON_AddStringToObject(f, ev == LE_TRIGGER_RECEIVED ? "by" : "reason", detail);
    log_emit(r->h.log, ev, f);
}

/* A manual run started (rr, NULL when it did not): its request says so
 * (trigger.h: a request that was running is not run again). */
static void mark_started(struct runner *r, const struct rrun *rr)
{
    if (rr != NULL)
        queue_trigger(r, &rr->run, rr->trigger_id, NULL);
}

/* Starts js's requests in order, as its concurrency policy allows: allow
 * at once; forbid once no run of the job is alive in the group; replace
 * once the runs alive are stopped. The claim (trigger.h) registers the run
 * like a tick's, so the policies see manual runs and ticks alike. */
static void start_manuals(struct runner *r, struct jobstate *js, int64_t now)
{
    while (js->manuals != NULL && js->hold_until == 0 && r->leading) {
        struct manual *m = js->manuals;
        enum claim_mode mode = CLAIM_RUN;
        if (js->job->concurrency != JOB_ALLOW) {
            if (js->running > 0) { /* a run of ours first: its SIGCHLD wakes us */
                if (js->job->concurrency == JOB_REPLACE)
                    stop_local_runs(r, js);
                return;
            }
            mode = CLAIM_RUN_OR_WAIT;
        } else if (js->running >= SCHED_ALLOW_PARALLEL) {
            return;
        }
        const char *token = baton_election_token(r->h.election);
        runner_flush(r); /* our ended runs unregistered: they must not look busy */
        if (token == NULL)
            return;
        if (!r->h.may_block(r->h.ctx)) {
            js->hold_until = now + GATE_RETRY_MS * MS;
            return;
        }
        char id[RUN_ID_MAX], member[RUN_ID_MAX + 160];
        struct claim_reply c;
        trigger_run_id(m->id, m->attempt, id, sizeof id);
        snprintf(member, sizeof member, "%s/%s", r->node, id);
        enum claim_result res =
            trigger_claim(r->h.client, r->group, js->job->name, baton_election_key(r->h.election),
                          token, m->id, m->attempt, mode, member, r->node, r->term, &c);
        bool late = (res == CLAIM_OK || res == CLAIM_OURS) && claimed_late(r);
        live_busy(r, &c);
        switch (res) {
        case CLAIM_OK:
        case CLAIM_OURS:
            if (r->h.fault_stop_after_claim) {
                raise(SIGSTOP);
                late = claimed_late(r);
            }
            if (late) /* left claimed: the next leader finds it not started and runs it */
                log_trigger(r, LE_TRIGGER_LEFT, js->job->name, m->id, m->attempt,
                            "claimed after the leader's stop point (it was stalled)");
            else {
                struct rrun *rr = start_run(r, js, id, m->requested_s, m->attempt,
                                            RUN_TRIGGER_MANUAL, m->id, false);
                if (rr != NULL)
                    snprintf(rr->run.by, sizeof rr->run.by, "%s", m->by);
                mark_started(r, rr);
            }
            manual_pop(r, js);
            break;
        case CLAIM_BUSY:
            if (c.nbusy == 0) {
                js->hold_until = now + GATE_RETRY_MS * MS;
            } else {
                if (js->job->concurrency == JOB_REPLACE)
                    stop_remote_runs(r, &c);
                js->hold_until = now + BUSY_POLL_MS * MS;
            }
            claim_reply_free(&c);
            return;
        case CLAIM_NOT_DURABLE: /* not run: it is recovered once its registration expires */
            log_trigger(r, LE_TRIGGER_LEFT, js->job->name, m->id, m->attempt,
                        "claimed, but not acknowledged by min_replicas replicas in time");
            /* fall through */
        case CLAIM_TAKEN: /* done, or taken over by another attempt */
        case CLAIM_SKIPPED:
        case CLAIM_OURS_SKIPPED: /* (never answered to a request's claim) */
        case CLAIM_OURS_EXPIRED:
            manual_pop(r, js);
            break;
        case CLAIM_NOT_LEADER:
        case CLAIM_ERROR:
            js->hold_until = now + CLAIM_RETRY_MS * MS;
            claim_reply_free(&c);
            return;
        }
        claim_reply_free(&c);
    }
}

/* True when request id is one this runner knows: waiting here, or running. */
static bool manual_known(struct runner *r, const char *id)
{
    for (const struct rrun *rr = r->runs; rr != NULL; rr = rr->next)
        if (strcmp(rr->trigger_id, id) == 0)
            return true;
    for (const struct manual *m = *manual_slot(r, id); m != NULL; m = m->hash_next)
        if (strcmp(m->id, id) == 0)
            return true;
    return false;
}

static void add_manual(struct runner *r, struct jobstate *js, const struct trigger *t, int attempt)
{
    struct manual *m = calloc(1, sizeof *m);
    if (m == NULL)
        return; /* it stays pending: the next read of the requests tries again */
    snprintf(m->id, sizeof m->id, "%s", t->id);
    snprintf(m->by, sizeof m->by, "%s", t->by);
    m->attempt = attempt;
    m->requested_s = t->requested_ms / 1000;
    manual_add(r, js, m);
    log_trigger(r, LE_TRIGGER_RECEIVED, js->job->name, t->id, attempt, t->by);
    wake_job(r, js);
}

/* Acts on request t as the leader: a pending one is queued on its job (or
 * rejected when there is no such job); one claimed by a run that no longer
 * exists is recovered (trigger_recover). Returns false when Redis failed. */
static bool take_trigger(struct runner *r, const struct trigger *t)
{
    struct jobstate *js = find_state(r, t->job);
    if (manual_known(r, t->id))
        return true;
    if (t->state == TRIGGER_PENDING) {
        if (js != NULL) {
            add_manual(r, js, t, t->attempt);
            return true;
        }
        char why[JOB_NAME_MAX + 160];
        snprintf(why, sizeof why, "the leader (node %s) has no job \"%s\" in its jobs.yaml",
                 r->node, t->job);
        log_trigger(r, LE_TRIGGER_REJECTED, t->job, t->id, 0, why);
        return trigger_reject(r->h.client, r->group, t->id, why) == BATON_OK;
    }
    if (t->state != TRIGGER_CLAIMED && t->state != TRIGGER_RUNNING)
        return true;
    char member[RUN_ID_MAX + 160];
    bool requeued, lost;
    snprintf(member, sizeof member, "%s/%s", t->node, t->run_id);
    if (trigger_recover(r->h.client, r->group, t->job, t->id, t->run_id, member,
                        r->h.lease_ttl_ms, &requeued,
                        &lost) != BATON_OK)
        return false;
    if (lost)
        log_trigger(r, LE_TRIGGER_LOST, t->job, t->id, t->attempt,
                    "its node stopped answering while it ran: presumed killed, not run again");
    if (requeued && js != NULL)
        add_manual(r, js, t, t->attempt + 1);
    return true;
}

/* Reads the requests not yet done (all of them: at most
 * TRIGGER_QUEUE_MAX, so that the requests of one busy job never hide
 * another's) and takes those this runner does not know. Returns false
 * when Redis failed. */
static bool read_triggers(struct runner *r)
{
    struct trigger_reply ids;
    if (trigger_list(r->h.client, r->group, TRIGGER_QUEUE_MAX, &ids) != BATON_OK)
        return false;
    bool ok = true;
    for (size_t i = 0; i < ids.n && ok; i++) {
        struct trigger_reply t;
        if (manual_known(r, ids.v[i].id))
            continue;
        if (!r->h.may_block(r->h.ctx))
            return false;
        if (trigger_get(r->h.client, r->group, ids.v[i].id, &t) != BATON_OK) {
            ok = false;
        } else if (t.n == 0) {
            trigger_forget(r->h.client, r->group, ids.v[i].id); /* its hash is gone */
        } else if (t.incomplete && t.v[0].state == TRIGGER_PENDING) {
            /* It reached a minority of the quorum's masters when it was
             * made (its client was told so): no majority can claim it. */
            static const char why[] = "incomplete: the request reached only a minority of the "
                                      "masters when it was made (baton trigger said so)";
            log_trigger(r, LE_TRIGGER_REJECTED, t.v[0].job, t.v[0].id, 0, why);
            ok = trigger_reject(r->h.client, r->group, t.v[0].id, why) == BATON_OK;
        } else {
            ok = take_trigger(r, &t.v[0]);
        }
        trigger_reply_free(&t);
    }
    trigger_reply_free(&ids);
    return ok;
}

/* ---- paused jobs ---- */

/* Records js's paused ticks and moves its high-water mark past them (a
 * claim of the last one as skipped). Returns false when it cannot now. */
static bool write_paused(struct runner *r, struct jobstate *js)
{
    struct sched_range *p = &js->paused;
    const char *token = baton_election_token(r->h.election);
    if (p->count == 0)
        return true;
    if (token == NULL || !r->h.may_block(r->h.ctx))
        return false;
    struct claim_reply c;
    /* A member of its own, so that a retry after a lost answer knows the
     * claim for ours (and records the ticks) instead of another's. */
    char member[RUN_ID_MAX + 160];
    snprintf(member, sizeof member, "%s/paused-%" PRId64, r->node, p->last);
    enum claim_result res =
        claim_tick(r->h.client, r->group, js->job->name, baton_election_key(r->h.election), token,
                   p->last, CLAIM_SKIP, member, &c);
    claim_reply_free(&c);
    if (res == CLAIM_SKIPPED || res == CLAIM_OURS_SKIPPED || res == CLAIM_NOT_DURABLE)
        write_skipped(r, js->job->name, p);
    else if (res != CLAIM_TAKEN) /* TAKEN: dealt with already */
        return false;
    note_claimed(js, p->last);
    memset(p, 0, sizeof *p);
    return true;
}

/* The end of a resume of entry (job, or "*" when job is NULL): deletes it
 * if it still holds what we read. */
static void pause_entry_done(struct runner *r, const char *job, const char *raw)
{
    if (raw != NULL && r->h.may_block(r->h.ctx))
        pause_done(r->h.client, r->group, job != NULL ? job : PAUSE_ALL, raw);
}

/* A paused job at wall (ms): its due ticks, queued ones first, join
 * js->paused instead of running; they are recorded (write_paused) when its
 * resume comes, or when the oldest is PAUSE_FLUSH_S old. After a resume
 * without catch-up is recorded, the job runs again (pause_until 0). */
static void hold_paused(struct runner *r, struct jobstate *js, int64_t wall, int64_t now)
{
    int64_t now_s = wall / 1000;
    bool finishing = js->pause_until != PAUSE_FOREVER && now_s >= js->pause_until;
    int64_t until = finishing ? js->pause_until : now_s;
    if (!finishing && now_s - js->last < PAUSE_FLUSH_S)
        return;           /* nothing to write yet: counted when it is */
    flush_skipped(r, js); /* in tick order: what was decided before */
    record_held(r, js);   /* claimed already: older than the queue's */
    for (; js->qlen > 0; q_pop(js))
        sched_span(js->job, q_head(js)->at - 1, q_head(js)->at, HO_SKIPPED, reason_paused,
                   &js->paused);
    if (until > js->last) {
        js->next_tick =
            sched_span(js->job, js->last, until, HO_SKIPPED, reason_paused, &js->paused);
        js->last = until;
    }
    if (!write_paused(r, js)) {
        js->hold_until = now + CLAIM_RETRY_MS * MS;
        return;
    }
    if (!finishing)
        return;
    pause_entry_done(r, js->job->name, js->pause_raw);
    free(js->pause_raw);
    js->pause_raw = NULL;
    js->pause_until = js->own_until = 0;
    if (js->all_pending) {
        js->all_pending = false;
        if (--r->all_pending == 0)
            pause_entry_done(r, NULL, r->all_raw);
    }
}

/* Logs a change of entry job ("*" for all) from old (NULL: none) to e. */
static void log_pause(struct runner *r, const char *job, const char *old,
                      const struct pause_entry *e)
{
    if (e != NULL && old != NULL && strcmp(old, e->raw) == 0)
        return;
    if (e == NULL && old == NULL)
        return;
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", job);
    if (e != NULL && !e->resumed) {
        char since[40];
        log_rfc3339_ms(e->since_ms, since, sizeof since);
        cJSON_AddStringToObject(f, "since", since);
        cJSON_AddStringToObject(f, "by", e->by);
        cJSON_AddStringToObject(f, "reason", e->reason);
        log_emit(r->h.log, LE_JOB_PAUSED, f);
        return;
    }
    cJSON_AddBoolToObject(f, "catchup", e == NULL);
    if (e != NULL) {
        char at[32];
        log_rfc3339(e->resumed_at, at, sizeof at);
        cJSON_AddStringToObject(f, "skipped_until", at);
        cJSON_AddStringToObject(f, "by", e->by);
    }
    log_emit(r->h.log, LE_JOB_RESUMED, f);
}

static int64_t entry_until(const struct pause_entry *e)
{
    return e == NULL ? 0 : e->resumed ? e->resumed_at : PAUSE_FOREVER;
}

/* Applies the paused hash as read: each job's pause_until is the later of
 * its own entry's and "*"'s. A job no longer paused at all was resumed
 * with catch-up: it catches up from its high-water mark. */
static void apply_pauses(struct runner *r, const struct pause_list *l)
{
    const struct pause_entry *all = pause_find(l, PAUSE_ALL);
    bool all_changed = !(all == NULL ? r->all_raw == NULL
                                     : r->all_raw != NULL && strcmp(all->raw, r->all_raw) == 0);
    if (all_changed) {
        log_pause(r, PAUSE_ALL, r->all_raw, all);
        free(r->all_raw);
        r->all_raw = all != NULL ? strdup(all->raw) : NULL;
        r->all_until = r->all_raw != NULL ? entry_until(all) : 0;
    }
    /* Nothing paused now nor at the last read: nothing to walk (this runs
     * every control_poll_ms, and 10,000 jobs are not walked for nothing). */
    if (l->n == 0 && !all_changed && r->all_raw == NULL && r->npaused == 0)
        return;
    for (struct jobstate *js = r->states; js != NULL; js = js->next)
        js->own_until = -1; /* not seen yet */
    for (size_t i = 0; i < l->n; i++) {
        struct jobstate *js = find_state(r, l->v[i].job);
        if (js == NULL)
            continue;
        log_pause(r, js->job->name, js->pause_raw, &l->v[i]);
        if (js->pause_raw == NULL || strcmp(js->pause_raw, l->v[i].raw) != 0) {
            free(js->pause_raw);
            js->pause_raw = strdup(l->v[i].raw);
        }
        js->own_until = entry_until(&l->v[i]);
    }
    r->all_pending = 0;
    r->npaused = 0;
    for (struct jobstate *js = r->states; js != NULL; js = js->next) {
        if (js->own_until < 0) { /* no entry of its own */
            log_pause(r, js->job->name, js->pause_raw, NULL);
            free(js->pause_raw);
            js->pause_raw = NULL;
            js->own_until = 0;
        }
        int64_t until = js->own_until > r->all_until ? js->own_until : r->all_until;
        if (all_changed)
            js->all_pending =
                r->all_until != 0 && r->all_until != PAUSE_FOREVER && js->own_until <= r->all_until;
        r->all_pending += js->all_pending;
        r->npaused += until != 0 || js->pause_raw != NULL;
        if (until == js->pause_until)
            continue;
        if (until == 0) { /* resumed with catch-up: from the mark, as a new leader */
            release_held(r, js, wall_ms());
            memset(&js->paused, 0, sizeof js->paused);
            js->qhead = js->qlen = js->qmissed = 0;
            js->mark_known = false;
        }
        js->pause_until = until;
        wake_job(r, js);
    }
    if (all_changed && r->all_until != 0 && r->all_until != PAUSE_FOREVER && r->all_pending == 0)
        pause_entry_done(r, NULL, r->all_raw);
}

/* Reads the control keys: the paused hash, then the requests. */
static void read_control(struct runner *r, int64_t now)
{
    struct pause_list l;
    if (!r->leading) {
        r->control_at = 0;
        return;
    }
    if (!r->h.may_block(r->h.ctx)) {
        r->control_at = now + GATE_RETRY_MS * MS;
        return;
    }
    if (pause_read(r->h.client, r->group, &l) != BATON_OK) {
        r->control_at = now + CONTROL_RETRY_MS * MS;
        return;
    }
    apply_pauses(r, &l);
    pause_list_free(&l);
    r->control_at = now + (read_triggers(r) ? r->h.control_poll_ms : CONTROL_RETRY_MS) * MS;
}

/* Queues the ticks due for js at wall (ms), recording those the catch-up
 * policy does not run. */
static void queue_due(struct runner *r, struct jobstate *js, int64_t wall)
{
    int64_t missed[SCHED_CATCHUP_MAX];
    struct sched_due d;
    size_t room = QUEUE_MAX - js->qlen;
    sched_due(js->job, js->last, wall, missed, room < SCHED_CATCHUP_MAX ? room : SCHED_CATCHUP_MAX,
              &d);
    if (d.nmissed > 0 || d.dropped.count != 0 || d.superseded.count != 0) {
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "job", js->job->name);
        cJSON_AddNumberToObject(f, "missed_ticks", (double)d.nmissed);
        if (d.dropped.count != 0)
            cJSON_AddNumberToObject(f, "outside_window", (double)d.dropped.count);
        if (d.superseded.count != 0)
            cJSON_AddNumberToObject(f, "superseded", (double)d.superseded.count);
        log_emit(r->h.log, LE_CATCH_UP, f);
    }
    /* In tick order: the dropped ones are the oldest, then the superseded
     * (catchup: last), then those that run. */
    flush_skipped(r, js);
    write_skipped(r, js->job->name, &d.dropped);
    write_skipped(r, js->job->name, &d.superseded);
    for (size_t i = 0; i < d.nmissed; i++)
        q_push(js, missed[i], true, false);
    if (d.live != 0) {
        bool overlapped = js->job->concurrency == JOB_FORBID && js->running > 0;
        if (!q_push(js, d.live, false, overlapped))
            add_skipped(r, js, d.live, HO_SKIPPED, "the job's queue of due ticks is full");
    }
    js->last = wall / 1000;
    js->next_tick = d.next;
}

static int cmp_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x > y ? -1 : x < y;
}

/* The high-water mark the masters' answers to a GET (elem < 0) or an MGET
 * (its element elem) give: on one server its value. Over a quorum, of the
 * counted masters that answered (R of them), the k-th highest, k = R -
 * (N - majority): every tick a majority claimed is at or below it (R
 * answers share at least k masters with that majority), and a tick
 * claimed by a minority that never completed is above it (so it is caught
 * up, and claimed properly or recorded, not lost); lagging masters (down
 * when the last claims were made, or restarted empty: no mark) are below
 * it unless more lag than a quorum tolerates, and then the highest mark
 * any master has is taken (no tick twice, what may be missed is missed).
 * A mark is valid when it is a positive number no later than now + 1 day.
 * Returns true with *v, or false when there is none. */
static bool mark_of(const struct baton_answers *a, long elem, int64_t now_s, int64_t *v)
{
    int64_t marks[BATON_QUORUM_MAX];
    int answered = 0, present = 0;
    for (int i = 0; i < a->n; i++) {
        const struct baton_reply *rep = a->v[i].reply;
        if (a->v[i].rc != BATON_OK || !a->v[i].counts)
            continue;
        if (elem >= 0)
            rep = rep->type == BATON_REPLY_ARRAY && (size_t)elem < rep->elements
                      ? rep->element[elem]
                      : NULL;
        answered++;
        char *end = NULL;
        long long x =
            rep != NULL && rep->type == BATON_REPLY_STRING ? strtoll(rep->str, &end, 10) : 0;
        if (end == NULL || *end != '\0' || x <= 0 || x > now_s + 86400)
            continue;
        marks[present++] = x;
    }
    if (present == 0)
        return false;
    qsort(marks, (size_t)present, sizeof marks[0], cmp_desc);
    int k = answered - (a->n - a->majority);
    *v = k >= 1 && k <= present ? marks[k - 1] : marks[0];
    return true;
}

/* js's high-water mark (has: one was found, v its tick): its schedule
 * continues after it. A missing or unbelievable mark (a new job, or Redis
 * lost its data) starts from now, without catch-up: what ran before cannot
 * be known, and no tick must run twice. */
static void take_mark(struct runner *r, struct jobstate *js, bool has, int64_t v, int64_t now_s)
{
    bool valid = has;
    if (valid && r->no_catchup) {
        /* The server may lack the last claims of the term before (a failover
         * to a replica): what ran before this term cannot be known, so
         * nothing before it is caught up. What this term claimed it holds:
         * a mark read later in the term (a resume with catch-up) is caught
         * up from, as far back as the term's start. */
        int64_t from = v > js->claimed_max ? v : js->claimed_max;
        int64_t t = sched_next(js->job, v);
        if (t != 0 && t < r->lead_wall_s && !r->no_catchup_logged) {
            cJSON *f = log_fields();
            cJSON_AddNumberToObject(f, "term", (double)r->term);
            cJSON_AddStringToObject(f, "reason",
                                    "Redis failed over, restarted without persistence or lost "
                                    "data since the previous term: what ran before cannot be "
                                    "known");
            log_emit(r->h.log, LE_CATCH_UP_SKIPPED, f);
            r->no_catchup_logged = true;
        }
        js->last = from > r->lead_wall_s ? from : r->lead_wall_s;
    } else if (valid) {
        js->last = v > js->claimed_max ? v : js->claimed_max;
    } else {
        js->last = now_s;
        js->mark_unset = true; /* written by write_start_marks() */
        /* Said even when the server changed (a restart without persistence
         * loses the marks): without this line, the ticks of the loss window
         * went unrun with nothing saying so (test_faults, restart_nopersist). */
        if (js->job->catchup_ms != 0 && js->job->enabled) {
            cJSON *f = log_fields();
            cJSON_AddStringToObject(f, "job", js->job->name);
            log_emit(r->h.log, LE_NO_HIGH_WATER_MARK, f);
        }
    }
    js->mark_known = true;
    js->next_tick = sched_next(js->job, js->last);
    if (js->claim_lost && js->claim_tick <= js->last)
        resolve_lost_claim(r, js);
}

/* Writes the marks of the n jobs of js[] that Redis had none for: from
 * now on a later leader catches them up from where this one started,
 * instead of from its own start (a new job whose leader died before its
 * first tick lost the ticks in between, without a record). Jobs whose
 * write failed try again from process_job(). */
static void write_start_marks(struct runner *r, struct jobstate **js, size_t n)
{
    enum { CHUNK = 256 }; /* claim_start_marks()'s limit */
    const char *names[CHUNK];
    int64_t marks[CHUNK];
    struct jobstate *which[CHUNK];
    const char *token = baton_election_token(r->h.election);
    for (size_t i = 0; i < n;) {
        size_t k = 0;
        for (; i < n && k < CHUNK; i++)
            if (js[i]->mark_unset) {
                which[k] = js[i];
                names[k] = js[i]->job->name;
                marks[k++] = js[i]->last;
            }
        if (k == 0 || token == NULL || !r->h.may_block(r->h.ctx) ||
            claim_start_marks(r->h.client, r->group, baton_election_key(r->h.election), token,
                              names, marks, k) != 0)
            return;
        for (size_t j = 0; j < k; j++)
            which[j]->mark_unset = false;
    }
}

/* Reads js's high-water mark (one GET). Returns false when it cannot now. */
static bool read_mark(struct runner *r, struct jobstate *js)
{
    if (!r->h.may_block(r->h.ctx))
        return false;
    char *key = group_key(r->group, "last:%s", js->job->name);
    struct baton_answers *a = NULL;
    const char *argv[2] = {"GET", key};
    int rc = key != NULL ? baton_client_command_all(r->h.client, 2, argv, NULL, &a) : BATON_ENOMEM;
    free(key);
    bool ok = rc == BATON_OK;
    for (int i = 0; ok && i < a->n; i++)
        ok = a->v[i].rc != BATON_OK || a->v[i].reply->type == BATON_REPLY_NIL ||
             a->v[i].reply->type == BATON_REPLY_STRING;
    if (ok) {
        int64_t now_s = wall_ms() / 1000, v = 0;
        bool has = mark_of(a, -1, now_s, &v);
        take_mark(r, js, has, v, now_s);
    }
    baton_answers_free(a);
    if (ok && js->mark_unset)
        write_start_marks(r, &js, 1);
    return ok;
}

/* Does what js has to do now; sets its key to when it next has something
 * to do. */
static void process_job(struct runner *r, struct jobstate *js)
{
    int64_t now = mono_ns(), wall = wall_ms();
    if (!r->leading) {
        set_key(r, js, 0);
        return;
    }
    if (js->hold_until != 0 && js->hold_until <= now)
        js->hold_until = 0;
    if (!js->mark_known && js->hold_until == 0 && !read_mark(r, js))
        js->hold_until = now + CLAIM_RETRY_MS * MS;
    if (js->mark_known && js->mark_unset)
        write_start_marks(r, &js, 1);
    if (js->mark_known) {
        start_retries(r, js, now);
        start_manuals(r, js, now); /* a paused job can still be run by hand */
        if (js->pause_until != 0 && js->hold_until == 0)
            hold_paused(r, js, wall, now);
    }
    if (js->mark_known && js->pause_until == 0) {
        int64_t ahead = ahead_ms(r, js);
        if (js->next_tick != 0 && js->next_tick * 1000 <= wall + ahead)
            queue_due(r, js, wall + ahead);
        for (int claims = 0; r->leading && js->hold_until == 0; claims++) {
            if (js->qlen == 0)
                break;
            if (claims > 0 && mono_ns() >= r->turn_end) {
                js->hold_until = mono_ns(); /* the rest next turn (runner_on_timer) */
                break;
            }
            struct sched_tick *h = q_head(js);
            bool early = h->at * 1000 > wall;
            if (early && ahead_ms(r, js) == 0) { /* decided at its instant */
                js->hold_until = mono_at(h->at, now, wall);
                break;
            }
            if (!h->missed && wall - h->at * 1000 >= SCHED_LIVE_SLACK_MS) {
                h->missed = true; /* it waited: the catch-up policy decides now */
                js->qmissed++;
            }
            enum sched_verdict v = sched_decide(
                js->job, h, js->qlen - 1, js->qmissed - (h->missed ? 1 : 0), js->running, wall);
            if (v == SV_WAIT)
                break; /* a run of ours ends first: its SIGCHLD wakes us */
            if (v == SV_REPLACE) {
                /* Unclaimed until the old runs are gone: a leader that dies
                 * meanwhile leaves the tick to the next one, not lost. */
                stop_local_runs(r, js);
                break;
            }
            if (v == SV_DROP || v == SV_SUPERSEDE) {
                add_skipped(r, js, h->at, v == SV_DROP ? HO_MISSED : HO_SUPERSEDED,
                            sched_reason(js->job, v));
                q_pop(js);
                continue;
            }
            enum claim_mode mode = CLAIM_RUN; /* allow */
            if (v == SV_SKIP)
                mode = CLAIM_SKIP;
            else if (js->job->concurrency == JOB_FORBID && !h->missed)
                mode = CLAIM_RUN_OR_SKIP;
            else if (js->job->concurrency != JOB_ALLOW)
                mode = CLAIM_RUN_OR_WAIT; /* forbid's backlog; replace: runs elsewhere */
            if (early && mode == CLAIM_RUN_OR_SKIP)
                mode = CLAIM_RUN_OR_WAIT; /* busy elsewhere: decided at its instant */
            if (!claim_head(r, js, mode, early))
                break;
        }
        flush_skipped(r, js);
    }
    /* When next: the next tick (paused: the resume, or the next record of
     * its skipped ticks), a hold, a retry. */
    int64_t key = 0;
#define CONSIDER(t)                                                                                \
    do {                                                                                           \
        int64_t t_ = (t);                                                                          \
        if (t_ > 0 && (key == 0 || t_ < key))                                                      \
            key = t_;                                                                              \
    } while (0)
    if (js->pause_until != 0 && js->mark_known && js->hold_until == 0) {
        int64_t at = js->pause_until != PAUSE_FOREVER ? js->pause_until : js->last + PAUSE_FLUSH_S;
        int64_t t = mono_at(at, now, wall);
        CONSIDER(t > now ? t : now + CONTROL_RETRY_MS * MS);
    } else if (js->next_tick != 0 && js->pause_until == 0) {
        CONSIDER(mono_at(js->next_tick, now, wall) - ahead_ms(r, js) * MS);
    }
    CONSIDER(js->hold_until);
    /* A due retry that could not start (no blocking call allowed, Redis
     * failing) looks again soon: never a key in the past. */
    for (const struct retry *t = js->retries; t != NULL; t = t->next)
        if (!t->held && !(js->job->concurrency == JOB_FORBID && js->running > 0))
            CONSIDER(t->at_ns > now ? t->at_ns : now + GATE_RETRY_MS * MS);
#undef CONSIDER
    set_key(r, js, key);
}

/* ---- leading ---- */

/* Reads the high-water marks of every job, MARK_BATCH keys per MGET. Jobs
 * whose mark could not be read read it themselves later. */
static void read_marks(struct runner *r)
{
    const char *argv[MARK_BATCH + 1];
    char *keys[MARK_BATCH];
    struct jobstate *batch[MARK_BATCH];
    int64_t now_s = wall_ms() / 1000;
    struct jobstate *js = r->states;

    argv[0] = "MGET";
    while (js != NULL && r->h.may_block(r->h.ctx)) {
        size_t n = 0;
        for (; js != NULL && n < MARK_BATCH; js = js->next) {
            if ((keys[n] = group_key(r->group, "last:%s", js->job->name)) == NULL)
                break;
            argv[n + 1] = keys[n];
            batch[n++] = js;
        }
        struct baton_answers *a = NULL;
        int rc = baton_client_command_all(r->h.client, (int)n + 1, argv, NULL, &a);
        for (size_t i = 0; i < n; i++)
            free(keys[i]);
        for (int i = 0; rc == BATON_OK && i < a->n; i++)
            if (a->v[i].rc == BATON_OK &&
                (a->v[i].reply->type != BATON_REPLY_ARRAY || a->v[i].reply->elements != n))
                rc = BATON_EPROTO;
        if (rc != BATON_OK) {
            baton_answers_free(a);
            return;
        }
        for (size_t i = 0; i < n; i++) {
            int64_t v = 0;
            bool has = mark_of(a, (long)i, now_s, &v);
            take_mark(r, batch[i], has, v, now_s);
        }
        baton_answers_free(a);
        write_start_marks(r, batch, n);
    }
}

void runner_lead(struct runner *r, uint64_t term, int64_t lease_deadline_ns)
{
    runner_flush(r);
    r->leading = true;
    r->lead_since = mono_ns();
    r->lead_wall_s = wall_ms() / 1000;
    r->term = term;
    r->no_catchup = baton_election_server_changed(r->h.election);
    r->no_catchup_logged = false;
    r->lease_deadline = lease_deadline_ns;
    for (struct jobstate *js = r->states; js != NULL; js = js->next)
        clear_schedule(r, js);
    forget_all_pause(r);
    read_marks(r);
    read_control(r, mono_ns());
    int64_t now = mono_ns();
    for (struct jobstate *js = r->states; js != NULL; js = js->next)
        set_key(r, js, now);
    runner_on_timer(r);
}

/* The runs of ours covered by the lease (own == false), as claim entries.
 * Returns how many (owned array in *out). */
static size_t lease_runs(struct runner *r, bool own, struct claim_entry **out, struct rrun ***which)
{
    size_t n = 0;
    *out = NULL;
    *which = NULL;
    for (struct rrun *rr = r->runs; rr != NULL; rr = rr->next)
        n += rr->own == own && rr->run.state != RUN_EXITED;
    if (n == 0)
        return 0;
    *out = calloc(n, sizeof **out);
    *which = calloc(n, sizeof **which);
    if (*out == NULL || *which == NULL) {
        free(*out);
        free(*which);
        *out = NULL;
        *which = NULL;
        return 0;
    }
    size_t i = 0;
    for (struct rrun *rr = r->runs; rr != NULL; rr = rr->next)
        if (rr->own == own && rr->run.state != RUN_EXITED) {
            (*out)[i] = (struct claim_entry){.job = rr->run.job->name, .member = rr->run.member};
            (*which)[i++] = rr;
        }
    return n;
}

void runner_lease_renewed(struct runner *r, int64_t lease_deadline_ns)
{
    r->lease_deadline = lease_deadline_ns;
    send_fences(r, false);
    struct claim_entry *e;
    struct rrun **which;
    size_t n = lease_runs(r, false, &e, &which);
    const char *token = baton_election_token(r->h.election);
    if (n > 0 && token != NULL && r->h.may_block(r->h.ctx)) {
        bool *lost = calloc(n, sizeof *lost);
        if (lost != NULL)
            claim_refresh(r->h.client, r->group, baton_election_key(r->h.election), token,
                          REFRESH_LEASE, r->h.lease_ttl_ms, e, n, lost);
        free(lost);
    }
    free(e);
    free(which);
    runner_on_timer(r);
}

void runner_stop_scheduling(struct runner *r)
{
    r->leading = false; /* every claim and start asks this first */
    r->control_at = 0;
}

void runner_unlead(struct runner *r)
{
    runner_stop_scheduling(r);
    r->lost_retry_at = mono_ns(); /* claims left undecided: resolved from now on */
    for (struct jobstate *js = r->states; js != NULL; js = js->next)
        clear_schedule(r, js);
    forget_all_pause(r);
    runner_on_timer(r);
}

/* The end of a registration measured from the send time of the request
 * that confirmed it, less the drift the library allows a lease. */
static int64_t cover_from(int64_t sent_ns, int64_t ttl_ms)
{
    return sent_ns + (ttl_ms - ttl_ms / 100 - 2) * MS;
}

int runner_handover(struct runner *r, int64_t lease_deadline_ns)
{
    struct claim_entry *e;
    struct rrun **which;
    r->lease_deadline = lease_deadline_ns;
    size_t n = lease_runs(r, false, &e, &which);
    const char *token = baton_election_token(r->h.election);
    int rc = BATON_OK;
    if (n > 0) {
        bool *lost = calloc(n, sizeof *lost);
        int64_t sent = mono_ns();
        if (lost == NULL)
            rc = BATON_ENOMEM;
        else if (token == NULL)
            rc = BATON_ELOST;
        else if (!r->h.may_block(r->h.ctx))
            rc = BATON_ETIMEDOUT;
        else
            rc = claim_refresh(r->h.client, r->group, baton_election_key(r->h.election), token,
                               REFRESH_HANDOVER, r->h.lease_ttl_ms, e, n, lost);
        if (rc == BATON_OK) {
            int64_t cover = cover_from(sent, r->h.lease_ttl_ms);
            for (size_t i = 0; i < n; i++) {
                which[i]->own = !lost[i];
                if (lost[i]) /* gone from Redis (a data loss): nothing covers it */
                    run_stop(&which[i]->run, RUN_STOP_UNREGISTERED, mono_ns());
            }
            if (r->own_cover == 0 || cover < r->own_cover)
                r->own_cover = cover;
            r->own_refresh_at = mono_ns() + r->h.refresh_ms * MS;
            send_fences(r, true);
        }
        free(lost);
    }
    free(e);
    free(which);
    runner_on_timer(r);
    return rc;
}

int64_t runner_stop_point(const struct runner *r)
{
    int64_t p = 0;
    for (const struct rrun *rr = r->runs; rr != NULL; rr = rr->next) {
        int64_t cover = rr->own ? r->own_cover : (r->leading ? 0 : r->lease_deadline);
        if (cover != 0 && (p == 0 || cover - r->h.guard_ns < p))
            p = cover - r->h.guard_ns;
    }
    return p;
}

void runner_terminate(struct runner *r, bool all, int64_t kill_by_ns)
{
    for (struct rrun *rr = r->runs; rr != NULL; rr = rr->next)
        if (all || !rr->own)
            run_stop(&rr->run, all ? RUN_STOP_SHUTDOWN : RUN_STOP_PAUSED, kill_by_ns);
    runner_on_timer(r);
}

/* Keeps the registration of the runs on their own alive; stops them when
 * it cannot be confirmed in time. */
static void tend_own_runs(struct runner *r, int64_t now)
{
    struct claim_entry *e;
    struct rrun **which;
    size_t n = lease_runs(r, true, &e, &which);
    if (n == 0) {
        r->own_cover = r->own_refresh_at = 0;
        goto out;
    }
    if (now >= r->own_cover - r->h.guard_ns) {
        /* Unconfirmed at its stop point: dead before it ends. */
        for (size_t i = 0; i < n; i++)
            if (which[i]->run.state == RUN_RUNNING) {
                cJSON *f = log_fields();
                cJSON_AddStringToObject(f, "job", which[i]->run.job->name);
                cJSON_AddStringToObject(f, "run_id", which[i]->run.id);
                cJSON_AddStringToObject(f, "reason", "its registration could not be renewed");
                log_emit(r->h.log, LE_RUN_LOST, f);
            }
        for (size_t i = 0; i < n; i++)
            run_stop(&which[i]->run, RUN_STOP_UNREGISTERED, r->own_cover - r->h.kill_margin_ns);
        goto out;
    }
    if (now < r->own_refresh_at)
        goto out;
    if (!r->h.may_block(r->h.ctx)) {
        r->own_refresh_at = now + GATE_RETRY_MS * MS;
        goto out;
    }
    bool *lost = calloc(n, sizeof *lost);
    int64_t sent = mono_ns();
    int rc = lost != NULL ? claim_refresh(r->h.client, r->group, baton_election_key(r->h.election),
                                          NULL, REFRESH_OWN, r->h.lease_ttl_ms, e, n, lost)
                          : BATON_ENOMEM;
    if (rc == BATON_OK) {
        r->own_cover = cover_from(sent, r->h.lease_ttl_ms);
        r->own_refresh_at = mono_ns() + r->h.refresh_ms * MS;
        send_fences(r, true);
        for (size_t i = 0; i < n; i++)
            if (lost[i] && which[i]->run.state == RUN_RUNNING) {
                cJSON *f = log_fields();
                cJSON_AddStringToObject(f, "job", which[i]->run.job->name);
                cJSON_AddStringToObject(f, "run_id", which[i]->run.id);
                cJSON_AddStringToObject(f, "reason", "its registration is gone from Redis");
                log_emit(r->h.log, LE_RUN_LOST, f);
                run_stop(&which[i]->run, RUN_STOP_UNREGISTERED, mono_ns());
            }
    } else {
        int64_t retry = r->h.refresh_ms / 4;
        r->own_refresh_at = mono_ns() + (retry < 10 ? 10 : retry > 500 ? 500 : retry) * MS;
    }
    free(lost);
out:
    free(e);
    free(which);
}

/* Runs whose lease is no longer renewed by a leader (a handover that could
 * not register them): stopped before the lease ends. */
static void fence_lease_runs(struct runner *r, int64_t now)
{
    if (r->leading || r->lease_deadline == 0 || now < r->lease_deadline - r->h.guard_ns)
        return;
    for (struct rrun *rr = r->runs; rr != NULL; rr = rr->next)
        if (!rr->own)
            run_stop(&rr->run, RUN_STOP_PAUSED, r->lease_deadline - r->h.kill_margin_ns);
}

/* ---- prepared runs: the go at their instant ---- */

/* Tells each prepared run whose instant has come to go: only before the
 * stop point of what covers it (the lease while this node leads, its own
 * registration after a handover), as a claim at the instant would have
 * been checked (claimed_late). A run that may not go is cancelled and
 * recorded failed_to_start with its reason, as is one whose instant moved
 * far ahead (the wall clock was stepped back after its claim). */
static void go_prepared(struct runner *r)
{
    int64_t now = mono_ns(), wall = wall_ns();
    for (struct rrun *rr = r->runs; rr != NULL; rr = rr->next) {
        struct run *run = &rr->run;
        if (!run->prepared)
            continue;
        int64_t at = run->tick * 1000 * MS;
        if (at - wall > (PRECLAIM_MAX_MS + STEP_BACK_MS) * MS) {
            run_cancel(run, HO_FAILED_TO_START,
                       "the wall clock was stepped back after its claim, before the tick's "
                       "instant: not run");
            continue;
        }
        if (wall < at)
            continue;
        const char *why = NULL;
        if (rr->own) {
            if (r->own_cover == 0 || now >= r->own_cover - r->h.guard_ns)
                why = "its registration reached its stop point before the tick's instant "
                      "(after a handover): not run";
        } else if (!r->leading) {
            why = "this node stopped leading before the tick's instant: not run";
        } else if (claimed_late(r)) {
            why = "the lease reached its stop point before the tick's instant (the leader "
                  "was stalled): not run";
        }
        if (why != NULL)
            run_cancel(run, HO_FAILED_TO_START, why);
        else if (!rr->own && rr->js != NULL && rr->js->pause_until != 0 &&
                 run->tick <= rr->js->pause_until) /* paused after its claim */
            run_cancel(run, HO_SKIPPED, reason_paused);
        else if (run_go(run))
            runs_changed(r);
        window_went(r, run->tick);
    }
}

/* ---- the timer ---- */

static void rearm(struct runner *r)
{
    int64_t next = 0, go = 0;
#define CONSIDER(t)                                                                                \
    do {                                                                                           \
        int64_t t_ = (t);                                                                          \
        if (t_ > 0 && (next == 0 || t_ < next))                                                    \
            next = t_;                                                                             \
    } while (0)
    if (r->nheap > 0)
        CONSIDER(r->heap[0]->key);
    if (r->leading)
        CONSIDER(r->control_at);
    else
        CONSIDER(r->lost_retry_at);
    /* The stop points matter for runs not yet told to stop (a run being
     * stopped has its own KILL time): never a time in the past again. */
    bool own = false, own_running = false, lease_running = false;
    for (const struct rrun *rr = r->runs; rr != NULL; rr = rr->next) {
        CONSIDER(run_next_ns(&rr->run));
        if (rr->run.prepared && (go == 0 || rr->run.tick * 1000 * MS < go))
            go = rr->run.tick * 1000 * MS;
        own |= rr->own;
        own_running |= rr->own && rr->run.state == RUN_RUNNING;
        lease_running |= !rr->own && rr->run.state == RUN_RUNNING;
    }
    if (own)
        CONSIDER(r->own_refresh_at);
    if (own_running)
        CONSIDER(r->own_cover - r->h.guard_ns);
    if (lease_running && !r->leading && r->lease_deadline != 0)
        CONSIDER(r->lease_deadline - r->h.guard_ns);
    CONSIDER(r->flush_retry_at);
    /* The go of prepared runs on the exact wall timer, and on the monotonic
     * one a millisecond later (the fallback: a wall timer that fired
     * already, or cannot be had; the instant as the wall clock shows it
     * now). */
    if (go != 0) {
        loop_arm_wall(r->h.loop, r->h.timer_id, go);
        CONSIDER(mono_ns() + (go - wall_ns()) + MS);
    } else {
        loop_disarm_wall(r->h.loop);
    }
#undef CONSIDER
    /* Everything due was just done: a time in the past here would be a bug
     * that spins the loop and starves its descriptors (signals). Never
     * sooner than a millisecond. */
    int64_t soonest = mono_ns() + MS;
    if (next != 0 && next < soonest)
        next = soonest;
    if (next != 0)
        loop_arm(r->h.loop, r->h.timer_id, next);
    else
        loop_disarm(r->h.loop, r->h.timer_id);
}

void runner_on_timer(struct runner *r)
{
    go_prepared(r); /* first: nothing else stands between an instant and its go */
    int64_t now = mono_ns(), wall = wall_ms();
    /* A step of the wall clock moves every tick's monotonic time. */
    int64_t offset = wall - now / MS;
    if (llabs(offset - r->wall_offset_ms) > 500) {
        r->wall_offset_ms = offset;
        for (struct jobstate *js = r->states; js != NULL && r->leading; js = js->next)
            if (js->key != 0)
                set_key(r, js, now);
    }
    for (struct rrun *rr = r->runs; rr != NULL; rr = rr->next)
        run_tick(&rr->run, now);
    if (!r->leading && r->nlost > 0 && r->lost_retry_at != 0 && r->lost_retry_at <= now) {
        /* Unanswered claims of a term that ended: a follower looks at
         * those jobs only, again in a while as long as Redis cannot tell */
        r->lost_retry_at = 0;
        for (struct jobstate *js = r->states; js != NULL; js = js->next) {
            resolve_lost_claim(r, js);
            if (js->claim_lost)
                r->lost_retry_at = now + CONTROL_RETRY_MS * MS;
        }
    }
    tend_own_runs(r, now);
    fence_lease_runs(r, now);
    if (r->leading && r->control_at != 0 && r->control_at <= now)
        read_control(r, now);
    /* Every job that has something to do now, earliest first, for at most
     * TURN_BUDGET_MS (at least one job). A job that still has something to
     * do now gets a later key (a hold), or a hold of now when the budget
     * ran out while it started runs: the loop ends. */
    r->turn_end = now + TURN_BUDGET_MS * MS;
    for (int jobs = 0; r->leading && r->nheap > 0; jobs++) {
        int64_t t = mono_ns();
        if (r->heap[0]->key > t || (jobs > 0 && t >= r->turn_end))
            break;                  /* past the budget: rearm() makes the rest due in 1 ms */
        process_job(r, r->heap[0]); /* gives it a key in the future, or none */
    }
    runner_flush(r);
    rearm(r);
}

void runner_on_sigchld(struct runner *r)
{
    size_t before = r->nruns;
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0)
            break;
        struct rrun *rr = r->runs;
        while (rr != NULL && rr->run.pgid != pid)
            rr = rr->next;
        if (rr != NULL) {
            run_reaped(&rr->run, st);
            finish_run(r, rr);
        } else {
            hooks_reaped(r->h.hooks, pid, st);
        }
    }
    runner_on_timer(r);
    if (before > 0 && r->nruns == 0 && r->h.on_idle != NULL)
        r->h.on_idle(r->h.ctx);
}

void runner_on_message(struct runner *r, const char *msg, size_t len)
{
    if (len > 6 && strncmp(msg, "ended ", 6) == 0) {
        char name[JOB_NAME_MAX + 1];
        size_t n = len - 6 < JOB_NAME_MAX ? len - 6 : JOB_NAME_MAX;
        memcpy(name, msg + 6, n);
        name[n] = '\0';
        struct jobstate *js = find_state(r, name);
        if (js != NULL && js->hold_until != 0) {
            js->hold_until = 0;
            wake_job(r, js);
        }
    } else if (r->leading && ((len > 8 && strncmp(msg, "trigger ", 8) == 0) ||
                              (len > 7 && strncmp(msg, "paused ", 7) == 0) ||
                              (len > 8 && strncmp(msg, "resumed ", 8) == 0))) {
        r->control_at = mono_ns(); /* read at once, below */
    } else if (len > 5 && strncmp(msg, "stop ", 5) == 0) {
        size_t nl = strlen(r->node);
        const char *member = msg + 5;
        if (len - 5 > nl && strncmp(member, r->node, nl) == 0 && member[nl] == '/')
            for (struct rrun *rr = r->runs; rr != NULL; rr = rr->next)
                if (strlen(rr->run.member) == len - 5 &&
                    memcmp(rr->run.member, member, len - 5) == 0)
                    run_stop(&rr->run, RUN_STOP_REPLACED, 0);
    }
    runner_on_timer(r);
}

void runner_free(struct runner *r)
{
    if (r == NULL)
        return;
    r->h.hooks = NULL; /* going away: no hook starts now */
    while (r->runs != NULL) {
        struct rrun *rr = r->runs;
        r->runs = rr->next;
        run_dispose(&rr->run);
        set_unref(r, rr->set);
        free(rr);
    }
    while (r->states != NULL) {
        struct jobstate *js = r->states;
        r->states = js->next;
        free_state(r, js);
    }
    while (r->sets != NULL) {
        struct jobset *s = r->sets;
        r->sets = s->next;
        jobs_free(s->jobs);
        free(s);
    }
    while (r->outbox != NULL) {
        struct outbox_item *it = r->outbox;
        r->outbox = it->next;
        outbox_item_free(it);
    }
    free(r->heap);
    free(r->all_raw);
    free(r->node);
    free(r->group);
    free(r);
}

void runner_control_changed(struct runner *r)
{
    if (r->leading) {
        r->control_at = mono_ns();
        runner_on_timer(r);
    }
}
