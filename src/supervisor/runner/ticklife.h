/* ticklife.h -- the life of one tick of a job on this node, as a run's
 * life is in run.h: a small machine whose table (TICK_MOVES) is the only
 * judge of a move. Every part of the runner that moves a tick (ticks.c's
 * queue through turn.c, claimer.c's claims, runs.c's runs and finish.c's
 * ends, control.c's pauses) does it with ticklife_move() on the state the
 * tick carries: a queue slot (ticks.h), a run (runs.h), a retry or a held
 * tick (finish.h); a
 * range of ticks that all make one move (the catch-up's ranges, a pause's)
 * moves once, as a range. A move the table refuses is a bug: it is logged
 * (tick_move_refused, error), the tick keeps its state, and the runner goes
 * on as its code decided.
 *
 * A tick that runs:
 *
 *   due -> queued -> claiming -> claimed -> running -> recorded
 *            ^          |  ^ |    |  ^        |  ^
 *            '----------'  '-'    v  |        v  |
 *        busy, full,       lost   held        retrying
 *        refused           answer (a pause)   (the next attempt)
 *
 * and one dispatched to a member (run_on other than leader; dispatch.h):
 * claimed -> assigned (offered; again when its offer expires or its member
 * is lost before starting it) -> accepted (on the member) -> running ->
 * recorded; assigned -> recorded (lost while it ran: recorded lost), or
 * assigned again (the same, offered again as the next attempt).
 *
 * and one that does not ends in not_started, skipped, superseded, missed,
 * taken or left. TICK_MOVES below is the whole table, each row with the
 * place that makes the move.
 *
 * The ends say what was recorded of the tick: recorded (its run's record:
 * ok, failed, timeout, killed...), not_started (failed_to_start: claimed,
 * but its run never went), skipped, superseded, missed (ticks that did not
 * run, recorded in ranges), and two that this node does not record: taken
 * (its claim found it another's; a lost claim found not applied) and left
 * (unclaimed when this node let go of the queue: leadership ended, the job
 * changed, a resume with catch-up; whoever reads the mark next decides
 * it). An end is reached where the decision is taken; its record follows
 * at once, or with its range (records.h).
 *
 * A claim whose answer was lost keeps its tick `claiming` until that
 * claim is settled: an answer that leaves it unsettled (refused, busy
 * where it may have applied) keeps it there too. Only the claim decides
 * it, never the tick's age, the catch-up policy or a pause behind its
 * back (each of those would record it, and the settled claim again): the
 * claim is made again under the same run id, and its answer is that
 * claim's. Ours to run, it runs; if it aged meanwhile, the catch-up
 * policy decides it as it does a held tick (claimed -> missed,
 * superseded); a paused job's is held. Let go before that (leadership
 * ended, the job changed, a resume with catch-up), the claimer settles
 * it later (claimer_settle) as a claim that is answered at last.
 *
 * A claimed tick is never let go unrecorded: the mark is past it, so no
 * later leader would run it. One that a resume with catch-up released
 * (held -> claimed) and whose run does not start (this node stops leading,
 * the job changes, its registration is refused) is recorded not_started,
 * as every claimed tick whose run does not start. */
#ifndef BATON_TICKLIFE_H
#define BATON_TICKLIFE_H

#include <stdbool.h>
#include <stdint.h>

/* X(ID, name, final) */
#define TICK_STATES(X)                                                                             \
    X(DUE, "due", false)                                                                           \
    X(QUEUED, "queued", false)                                                                     \
    X(CLAIMING, "claiming", false)                                                                 \
    X(CLAIMED, "claimed", false)                                                                   \
    X(RUNNING, "running", false)                                                                   \
    X(RETRYING, "retrying", false)                                                                 \
    X(HELD, "held", false)                                                                         \
    X(ASSIGNED, "assigned", false)                                                                 \
    X(ACCEPTED, "accepted", false)                                                                 \
    X(RECORDED, "recorded", true)                                                                  \
    X(NOT_STARTED, "not_started", true)                                                            \
    X(SKIPPED, "skipped", true)                                                                    \
    X(SUPERSEDED, "superseded", true)                                                              \
    X(MISSED, "missed", true)                                                                      \
    X(TAKEN, "taken", true)                                                                        \
    X(LEFT, "left", true)

enum tick_state {
#define TICK_STATE_ENUM_(id, name, final) TICK_##id,
    TICK_STATES(TICK_STATE_ENUM_)
#undef TICK_STATE_ENUM_
        TICK_STATE_COUNT,
    TICK_REFUSED = TICK_STATE_COUNT /* tick_next_state(): the table has no such move */
};

/* X(ID, name, what happened) */
#define TICK_EVENTS(X)                                                                             \
    X(QUEUE, "queue", "due now: into its job's queue, live or missed")                             \
    X(DROP, "drop", "not to run: outside the catch-up window, catchup 0, aged out")                \
    X(SUPERSEDE, "supersede", "not to run: a newer tick runs instead")                             \
    X(SKIP, "skip", "not to run: the queue is full, a pause, a forbid run alive")                  \
    X(CLAIM, "claim", "its claim goes to Redis (again, after an answer was lost)")                 \
    X(WON, "won", "the claim's answer: ours, to run")                                              \
    X(WON_SKIP, "won_skip", "the claim's answer: ours, as skipped")                                \
    X(VOID, "void", "the claim's answer: ours, but it must not run (not durable, expired, lost)")  \
    X(BUSY, "busy", "the claim's answer: not claimed, runs of the job alive: it waits")            \
    X(FULL, "full", "the claim's answer: not claimed, its pool or max_running is full: it waits")  \
    X(TAKEN, "taken", "the claim's answer: another's")                                             \
    X(REFUSED, "refused", "the claim's answer: not the leader; tried again")                       \
    X(NO_ANSWER, "no_answer", "the claim's answer was lost: it may have been applied")             \
    X(START, "start", "its run's command starts (a prepared run's go)")                            \
    X(START_FAILED, "start_failed", "its run could not start, or was cancelled before its go")     \
    X(HOLD, "hold", "a pause came after its claim: held for the pause's end")                      \
    X(RESUME, "resume", "the pause ended with catch-up: to start now")                             \
    X(END, "end", "its run ended and is recorded, no retry follows")                               \
    X(RETRY, "retry", "its run failed and is recorded: the next attempt waits")                    \
    X(FORGET, "forget", "this node lets it go: leadership ended, job changed, caught up afresh")   \
    X(ASSIGN, "assign", "offered to a member (run_on other than leader; dispatch.h)")              \
    X(REASSIGN, "reassign",                                                                        \
      "offered again: not accepted in time, or its member was lost before "                        \
      "it started it")                                                                             \
    X(ACCEPT, "accept", "this node accepted the leader's offer of it")                             \
    X(LOST, "lost", "its member was lost while it ran: recorded lost, no retry follows")

enum tick_event {
#define TICK_EVENT_ENUM_(id, name, doc) TICK_EV_##id,
    TICK_EVENTS(TICK_EVENT_ENUM_)
#undef TICK_EVENT_ENUM_
        TICK_EVENT_COUNT
};

/* The table: X(state, event, next state), one row per legal move, with the
 * place that makes it; every other (state, event) is refused. */
#define TICK_MOVES(X)                                                                              \
    X(DUE, QUEUE, QUEUED)                  /* turn.c queue_due */                                  \
    X(DUE, DROP, MISSED)                   /* turn.c queue_due: outside the window, catchup 0 */   \
    X(DUE, SUPERSEDE, SUPERSEDED)          /* turn.c queue_due: catchup last */                    \
    X(DUE, SKIP, SKIPPED)                  /* queue_due (full), control_hold (paused) */           \
    X(QUEUED, CLAIM, CLAIMING)             /* claimer.c claimer_head */                            \
    X(QUEUED, DROP, MISSED)                /* turn.c decide_ticks: aged out */                     \
    X(QUEUED, SUPERSEDE, SUPERSEDED)       /* turn.c decide_ticks: catchup last, replace */        \
    X(QUEUED, SKIP, SKIPPED)               /* control.c control_hold: paused */                    \
    X(QUEUED, FORGET, LEFT)                /* ticklife_forget */                                   \
    X(CLAIMING, CLAIM, CLAIMING)           /* claimer.c claimer_head: after a lost answer */       \
    X(CLAIMING, WON, CLAIMED)              /* claimer.c claimer_head (steps.h) */                  \
    X(CLAIMING, WON_SKIP, SKIPPED)         /* claimer.c claimer_head, claimer_settle */            \
    X(CLAIMING, VOID, NOT_STARTED)         /* claimer.c claimer_head, claimer_settle */            \
    X(CLAIMING, BUSY, QUEUED)              /* claimer.c claimer_head */                            \
    X(CLAIMING, FULL, QUEUED)              /* claimer.c claimer_head (runlimits.h) */                 \
    X(CLAIMING, TAKEN, TAKEN)              /* claimer.c claimer_head, claimer_settle */            \
    X(CLAIMING, REFUSED, QUEUED)           /* claimer.c claimer_head */                            \
    X(CLAIMING, NO_ANSWER, CLAIMING)       /* claimer_head: lost, or it leaves a lost one */       \
    X(CLAIMING, FORGET, CLAIMING)          /* ticklife_forget: claimer_settle ends it */           \
    X(CLAIMED, START, RUNNING)             /* runs.c runs_start, runs_go */                        \
    X(CLAIMED, START_FAILED, NOT_STARTED)  /* claimer_head (late), claimer_let_go, finish.c */     \
    X(CLAIMED, HOLD, HELD)                 /* finish.c finish, claimer_head: paused first */       \
    X(CLAIMED, SKIP, SKIPPED)              /* finish.c finish: the same, not held */               \
    X(CLAIMED, DROP, MISSED)               /* claimer_head: answered after it aged, catchup's */   \
    X(CLAIMED, SUPERSEDE, SUPERSEDED)      /* claimer_head: the same, catchup: last */             \
    X(RUNNING, END, RECORDED)              /* finish.c finish */                                   \
    X(RUNNING, RETRY, RETRYING)            /* finish.c finish */                                   \
    X(RETRYING, START, RUNNING)            /* runs.c runs_start (claimer_retries) */               \
    X(RETRYING, START_FAILED, NOT_STARTED) /* runs.c runs_start (claimer_retries) */               \
    X(RETRYING, FORGET, RECORDED)          /* claimer_retries, turn.c turn_clear */                \
    X(HELD, RESUME, CLAIMED)               /* control.c resume_catchup */                          \
    X(HELD, SKIP, SKIPPED)                 /* control.c control_record_held */                     \
    X(HELD, DROP, MISSED)                  /* control.c resume_catchup */                          \
    X(HELD, SUPERSEDE, SUPERSEDED)         /* control.c resume_catchup */                          \
    X(CLAIMED, ASSIGN, ASSIGNED)           /* dispatch.c dispatch_offer */                         \
    X(ASSIGNED, REASSIGN, ASSIGNED)        /* dispatch.c tend: expired, lost before its start */   \
    X(ASSIGNED, RETRY, ASSIGNED)           /* dispatch.c tend: lost while it ran, retried */       \
    X(ASSIGNED, LOST, RECORDED)            /* dispatch.c tend: lost while it ran, no retry */      \
    X(ASSIGNED, START_FAILED, NOT_STARTED) /* dispatch.c: no member for it, or none took it */     \
    X(ASSIGNED, SKIP, SKIPPED)             /* dispatch.c dispatch_skipped (all, forbid) */         \
    X(ASSIGNED, SUPERSEDE, SUPERSEDED)     /* dispatch.c dispatch_skipped (all, replace) */        \
    X(ASSIGNED, ACCEPT, ACCEPTED)          /* dispatch.c: on the member that accepts it */         \
    X(ACCEPTED, START, RUNNING)            /* runs.c runs_go: marked started, then its exec */     \
    X(ACCEPTED, START_FAILED, NOT_STARTED) /* runs.c, finish.c: not marked started, shim failed */ \
    X(ACCEPTED, FORGET, LEFT)              /* finish.c: paused before its go, handed back */

/* The state after event e in state s, or TICK_REFUSED. */
enum tick_state tick_next_state(enum tick_state s, enum tick_event e);
/* True for the ends (no move leaves them). */
bool tick_state_final(enum tick_state s);
/* Returns: the name ("queued"; "refused" for TICK_REFUSED; "?" out of
 * range). Static. */
const char *tick_state_name(enum tick_state s);
const char *tick_event_name(enum tick_event e);
const char *tick_event_doc(enum tick_event e);

/* A move, as the runner's host hears it (runner_host.on_tick): job's tick
 * at (Unix s; a range: at to until, else until == at) went from `from` by
 * ev to `to` (TICK_REFUSED: the table refused it; the tick stays). */
struct tick_moved {
    const char *job; /* borrowed, for the call */
    int64_t at, until;
    enum tick_state from, to;
    enum tick_event ev;
};

struct rctx;
struct sched_range;
struct ticks;

/* Moves *s, the state of job's tick at, by ev as the table says, and tells
 * the host. A move the table refuses is logged (tick_move_refused) and
 * leaves *s. Returns true when the tick moved. */
bool ticklife_move(const struct rctx *x, const char *job, int64_t at, enum tick_state *s,
                   enum tick_event ev);
/* The same for every tick of range r (count 0: none), all in state from. */
void ticklife_move_range(const struct rctx *x, const char *job, const struct sched_range *r,
                         enum tick_state from, enum tick_event ev);
/* This node lets go of t, job's queue: every tick in it is forgotten
 * (ticks_forget()). */
void ticklife_forget(const struct rctx *x, const char *job, struct ticks *t);

#endif
