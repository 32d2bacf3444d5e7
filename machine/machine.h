/* machine.h -- the supervisor's state machine, as data.
 *
 * MACHINE_TABLE is the whole behaviour: one line per event, one cell per
 * state (in MACHINE_STATES order). Every (state, event) pair is decided:
 *   __           ignored: stay, run nothing, log nothing
 *   T(S, a)      go to S, log the transition (info), run action a
 *   Q(S, a)      the same, logged at debug: the routine round trips (a
 *                renewal; a follower's poll that finds the leader alive,
 *                announced instead by one "following" line per term)
 *   IF(g, X, Y)  X when guard g holds, else Y (X and Y are T or Q cells)
 * Actions return the next event (or EV_NONE); guards only read. The
 * dispatcher,
 * machine_dispatch(), is the only writer of the state. The actions
 * themselves live in the supervisor (src/supervisor/daemon.c); the diagram
 * in machine/README.md is generated from this table (gen_diagram.c), and a
 * test fails when the two disagree.
 */
#ifndef BATON_MACHINE_H
#define BATON_MACHINE_H

#include <stdbool.h>
#include <stdint.h>

#define MACHINE_STATES(X)                                                                          \
    X(IDLE, idle)                                                                                  \
    X(ACQUIRING, acquiring)                                                                        \
    X(WORKING, working)                                                                            \
    X(RENEWING, renewing)                                                                          \
    X(PAUSING, pausing)                                                                            \
    X(RELEASING, releasing)                                                                        \
    X(WAITING, waiting)

#define MACHINE_EVENTS(X)                                                                          \
    X(START, start)               /* boot, or the end of a step-down's pause */                    \
    X(ACQUIRED, acquired)         /* campaign won: a new term */                                   \
    X(TAKEN, taken)               /* campaign lost: another node leads */                          \
    X(REDIS_ERROR, redis_error)   /* Redis unreachable or failing */                               \
    X(RENEW_DUE, renew_due)       /* lease.renew since the last confirmation */                    \
    X(RENEWED, renewed)           /* Redis confirmed the extension */                              \
    X(LOST, lost)                 /* the lease is someone else's */                                \
    X(DEADLINE, deadline)         /* the stop point passed unconfirmed */                          \
    X(JOBS_STOPPED, jobs_stopped) /* no run is left alive */                                       \
    X(RELEASED, released)         /* the lease was given up (or left to expire) */                 \
    X(DRAIN_TIMEOUT, drain_timeout) /* shutdown_grace is over */                                   \
    X(WAKE, wake)                 /* leader resigned, its lease ran out, poll, backoff */          \
    X(STOP, stop)                 /* SIGTERM or SIGINT */                                          \
    X(STEP_DOWN, step_down)       /* `baton step-down` */

#define MACHINE_ACTIONS(X)                                                                         \
    X(CAMPAIGN, campaign) /* ask Redis for the lease -> acquired|taken|redis_error */              \
    X(LEAD, lead)         /* schedule the jobs; arm renewal and the stop point */                  \
    X(FOLLOW, follow)     /* arm wake-ups: leader's lease end, poll; watch for resignation */      \
    X(BACKOFF, backoff)   /* Redis unreachable: capped exponential backoff + jitter */             \
    X(RENEW, renew)       /* extend the lease -> renewed|lost|redis_error */                       \
    X(RETRY, retry)       /* renewal failed: try again soon, the stop point still armed */         \
    X(PAUSE, pause)       /* stop scheduling; TERM runs, KILL them before the deadline */          \
    X(HANDOVER, handover) /* stop scheduling, keep the runs registered, resign -> released */      \
    X(DRAIN, drain)       /* let the runs finish up to shutdown_grace -> jobs_stopped */           \
    X(HURRY, hurry)       /* second SIGTERM or drain timeout: TERM the runs now */                 \
    X(RESTART, restart)   /* after a step-down: campaign again after a pause */                    \
    X(FINISH, finish)     /* exit */

/* Guards: facts an action cannot see from its own event, named so that
 * every decision is on this screen (xstate's `cond`). */
#define MACHINE_GUARDS(X)                                                                          \
    X(IN_TIME, in_time)     /* the renewal was confirmed before the stop point */                  \
    X(STOPPING, stopping)   /* SIGTERM or SIGINT was received */                                   \
    X(RUNS_LEFT, runs_left) /* some run (possibly of an earlier term) is alive */

/* clang-format off */
#define MACHINE_TABLE(ROW, __, T, Q, IF)                                                                                                                                     \
/*   event          idle                                  acquiring                             working               renewing                                    pausing                                        releasing                                     waiting */   \
ROW(START,          T(ACQUIRING,CAMPAIGN),                __,                                   __,                   __,                                         __,                                            __,                                           __)                  \
ROW(ACQUIRED,       __,                                   T(WORKING,LEAD),                      __,                   __,                                         __,                                            __,                                           __)                  \
ROW(TAKEN,          __,                                   Q(WAITING,FOLLOW),                    __,                   __,                                         __,                                            __,                                           __)                  \
ROW(REDIS_ERROR,    __,                                   Q(WAITING,BACKOFF),                   __,                   Q(RENEWING,RETRY),                          __,                                            __,                                           __)                  \
ROW(RENEW_DUE,      __,                                   __,                                   Q(RENEWING,RENEW),    Q(RENEWING,RENEW),                          __,                                            __,                                           __)                  \
ROW(RENEWED,        __,                                   __,                                   __,                   IF(IN_TIME,Q(WORKING,NONE),T(PAUSING,PAUSE)), __,                                          __,                                           __)                  \
ROW(LOST,           __,                                   __,                                   T(PAUSING,PAUSE),     T(PAUSING,PAUSE),                           __,                                            __,                                           __)                  \
ROW(DEADLINE,       __,                                   __,                                   T(PAUSING,PAUSE),     T(PAUSING,PAUSE),                           __,                                            __,                                           __)                  \
ROW(JOBS_STOPPED,   __,                                   __,                                   __,                   __,                                         IF(STOPPING,T(IDLE,FINISH),T(WAITING,FOLLOW)), T(IDLE,FINISH),                             __)                  \
ROW(RELEASED,       __,                                   __,                                   __,                   __,                                         __,                                            IF(STOPPING,Q(RELEASING,DRAIN),T(IDLE,RESTART)), __)               \
ROW(DRAIN_TIMEOUT,  __,                                   __,                                   __,                   __,                                         __,                                            Q(RELEASING,HURRY),                           __)                  \
ROW(WAKE,           __,                                   __,                                   __,                   __,                                         __,                                            __,                                           Q(ACQUIRING,CAMPAIGN)) \
ROW(STOP,           IF(RUNS_LEFT,T(RELEASING,DRAIN),T(IDLE,FINISH)), IF(RUNS_LEFT,T(RELEASING,DRAIN),T(IDLE,FINISH)), T(RELEASING,HANDOVER), T(RELEASING,HANDOVER), __,                               Q(RELEASING,HURRY),                           IF(RUNS_LEFT,T(RELEASING,DRAIN),T(IDLE,FINISH))) \
ROW(STEP_DOWN,      __,                                   __,                                   T(RELEASING,HANDOVER), T(RELEASING,HANDOVER),                     __,                                            __,                                           __)
/* clang-format on */

enum machine_state {
#define MACHINE_STATE_ENUM_(id, name) ST_##id,
    MACHINE_STATES(MACHINE_STATE_ENUM_)
#undef MACHINE_STATE_ENUM_
        ST_COUNT
};

enum machine_event {
    EV_NONE = -1,
#define MACHINE_EVENT_ENUM_(id, name) EV_##id,
    MACHINE_EVENTS(MACHINE_EVENT_ENUM_)
#undef MACHINE_EVENT_ENUM_
        EV_COUNT
};

enum machine_action {
    ACT_NONE,
#define MACHINE_ACTION_ENUM_(id, name) ACT_##id,
    MACHINE_ACTIONS(MACHINE_ACTION_ENUM_)
#undef MACHINE_ACTION_ENUM_
        ACT_COUNT
};

enum machine_guard {
    G_ALWAYS,
#define MACHINE_GUARD_ENUM_(id, name) G_##id,
    MACHINE_GUARDS(MACHINE_GUARD_ENUM_)
#undef MACHINE_GUARD_ENUM_
        G_COUNT
};

/* One outcome of a cell: where to go and what to run. */
struct machine_branch {
    bool ignored;
    bool quiet; /* log at debug level */
    enum machine_state next;
    enum machine_action action;
};

/* One cell of the table: the branch taken when guard holds, else the
 * other one (guard G_ALWAYS: then is the cell, otherwise unused). */
struct machine_cell {
    enum machine_guard guard;
    struct machine_branch then, otherwise;
};

/* Returns: the cell for (state, event). Static. */
const struct machine_cell *machine_cell(enum machine_state s, enum machine_event e);

const char *machine_state_name(enum machine_state s);
const char *machine_event_name(enum machine_event e);
const char *machine_action_name(enum machine_action a);
const char *machine_guard_name(enum machine_guard g);

/* Actions get the context and return the next event. */
typedef enum machine_event (*machine_action_fn)(void *ctx);
/* Guards read the context and change nothing. */
typedef bool (*machine_guard_fn)(const void *ctx);

/* Called after every change of state (not for ignored events). guard is
 * the cell's guard (G_ALWAYS when it has none) and held what it said. */
typedef void (*machine_observer_fn)(void *ctx, enum machine_state from, enum machine_state to,
                                    enum machine_event trigger, enum machine_guard guard,
                                    bool held, int64_t in_state_ms, bool quiet);

struct machine {
    enum machine_state state; /* written by machine_dispatch() only */
    int64_t entered_ns;       /* CLOCK_MONOTONIC time of entering state */
    const machine_action_fn *actions; /* indexed by enum machine_action */
    const machine_guard_fn *guards;   /* indexed by enum machine_guard */
    machine_observer_fn observer;
    void *ctx;
};

/* Starts m in idle. actions has ACT_COUNT entries (ACT_NONE's may be NULL),
 * guards G_COUNT entries (G_ALWAYS's may be NULL; a NULL guard is false);
 * observer may be NULL. */
void machine_init(struct machine *m, const machine_action_fn *actions,
                  const machine_guard_fn *guards, machine_observer_fn observer, void *ctx);

/* Returns: the branch c takes in m's context (evaluating its guard). */
const struct machine_branch *machine_branch(const struct machine *m, const struct machine_cell *c);

/* Feeds ev, then every event the actions return, until one returns EV_NONE
 * or an event the current state ignores. Returns the number of transitions
 * made, or -1 if the chain did not end within 64 steps (a table bug). */
int machine_dispatch(struct machine *m, enum machine_event ev);

#endif /* BATON_MACHINE_H */
