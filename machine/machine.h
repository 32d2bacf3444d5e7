/* machine.h -- the supervisor's state machine, as data.
 *
 * MACHINE_TABLE is the whole behaviour: one line per event, one cell per
 * state (in MACHINE_STATES order). Every (state, event) pair is decided:
 *   __           ignored: stay, run nothing, log nothing
 *   T(S, a)      go to S, log the transition (info), run action a
 *   Q(S, a)      the same, logged at debug: the routine round trips (a
 *                renewal; a follower's poll that finds the leader alive,
 *                announced instead by one "following" line per term)
 * Actions return the next event (or EV_NONE); the dispatcher,
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
    X(START, start)             /* boot, or the end of a step-down's pause */                      \
    X(ACQUIRED, acquired)       /* campaign won: a new term */                                     \
    X(TAKEN, taken)             /* campaign lost: another node leads */                            \
    X(REDIS_ERROR, redis_error) /* Redis unreachable or failing */                                 \
    X(RENEW_DUE, renew_due)     /* lease.renew since the last confirmation */                      \
    X(RENEWED, renewed)         /* the lease was extended */                                       \
    X(LOST, lost)               /* the lease is someone else's */                                  \
    X(DEADLINE, deadline)       /* the local validity deadline passed unconfirmed */               \
    X(JOBS_STOPPED, jobs_stopped) /* no job is running any more */                                 \
    X(RELEASED, released)       /* the lease was given up (or left to expire) */                   \
    X(WAKE, wake)               /* leader resigned, its lease ran out, poll, backoff */            \
    X(STOP, stop)               /* SIGTERM or SIGINT */                                            \
    X(STEP_DOWN, step_down)     /* `baton step-down` */

#define MACHINE_ACTIONS(X)                                                                         \
    X(CAMPAIGN, campaign) /* try once to take the lease -> acquired|taken|redis_error */          \
    X(LEAD, lead)         /* start scheduling jobs; arm renewal and deadline */                    \
    X(FOLLOW, follow)     /* arm wake-ups: leader's lease end, poll; watch for resignation */      \
    X(BACKOFF, backoff)   /* Redis unreachable: capped exponential backoff + jitter */             \
    X(RENEW, renew)       /* extend the lease -> renewed|lost|redis_error */                       \
    X(RETRY, retry)       /* renewal failed: try again soon, the deadline still armed */           \
    X(PAUSE, pause)       /* stop scheduling; TERM jobs, KILL them before the deadline */          \
    X(DRAIN, drain)       /* stop scheduling; let jobs finish up to shutdown_grace */              \
    X(HURRY, hurry)       /* second SIGTERM: TERM the jobs now */                                  \
    X(RESIGN, resign)     /* give up the lease, wake the followers -> released */                  \
    X(FINISH, finish)     /* exit, or after a step-down pause and start again */

/* clang-format off */
#define MACHINE_TABLE(ROW, __, T, Q)                                                                                                   \
/*   event         idle                 acquiring           working             renewing            pausing             releasing          waiting */            \
ROW(START,         T(ACQUIRING,CAMPAIGN), __,               __,                 __,                 __,                 __,                __)                   \
ROW(ACQUIRED,      __,                  T(WORKING,LEAD),    __,                 __,                 __,                 __,                __)                   \
ROW(TAKEN,         __,                  Q(WAITING,FOLLOW),  __,                 __,                 __,                 __,                __)                   \
ROW(REDIS_ERROR,   __,                  Q(WAITING,BACKOFF), __,                 Q(RENEWING,RETRY),  __,                 Q(RELEASING,RETRY),__)                   \
ROW(RENEW_DUE,     __,                  __,                 Q(RENEWING,RENEW),  Q(RENEWING,RENEW),  __,                 Q(RELEASING,RENEW),__)                   \
ROW(RENEWED,       __,                  __,                 __,                 Q(WORKING,NONE),    __,                 __,                __)                   \
ROW(LOST,          __,                  __,                 T(PAUSING,PAUSE),   T(PAUSING,PAUSE),   __,                 T(PAUSING,PAUSE),  __)                   \
ROW(DEADLINE,      __,                  __,                 T(PAUSING,PAUSE),   T(PAUSING,PAUSE),   __,                 T(PAUSING,PAUSE),  __)                   \
ROW(JOBS_STOPPED,  __,                  __,                 __,                 __,                 T(WAITING,FOLLOW),  Q(RELEASING,RESIGN),__)                  \
ROW(RELEASED,      __,                  __,                 __,                 __,                 __,                 T(IDLE,FINISH),    __)                   \
ROW(WAKE,          __,                  __,                 __,                 __,                 __,                 __,                Q(ACQUIRING,CAMPAIGN))\
ROW(STOP,          T(IDLE,FINISH),      T(IDLE,FINISH),     T(RELEASING,DRAIN), T(RELEASING,DRAIN), __,                 Q(RELEASING,HURRY),T(IDLE,FINISH))       \
ROW(STEP_DOWN,     __,                  __,                 T(RELEASING,DRAIN), T(RELEASING,DRAIN), __,                 __,                __)
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

/* One cell of the table. */
struct machine_cell {
    bool ignored;
    bool quiet; /* log at debug level */
    enum machine_state next;
    enum machine_action action;
};

/* Returns: the cell for (state, event). Static. */
const struct machine_cell *machine_cell(enum machine_state s, enum machine_event e);

const char *machine_state_name(enum machine_state s);
const char *machine_event_name(enum machine_event e);
const char *machine_action_name(enum machine_action a);

/* Actions get the context and return the next event. */
typedef enum machine_event (*machine_action_fn)(void *ctx);

/* Called after every change of state (not for ignored events). */
typedef void (*machine_observer_fn)(void *ctx, enum machine_state from, enum machine_state to,
                                    enum machine_event trigger, int64_t in_state_ms, bool quiet);

struct machine {
    enum machine_state state; /* written by machine_dispatch() only */
    int64_t entered_ns;       /* CLOCK_MONOTONIC time of entering state */
    const machine_action_fn *actions; /* indexed by enum machine_action */
    machine_observer_fn observer;
    void *ctx;
};

/* Starts m in idle. actions has ACT_COUNT entries (ACT_NONE's may be NULL);
 * observer may be NULL. */
void machine_init(struct machine *m, const machine_action_fn *actions, machine_observer_fn observer,
                  void *ctx);

/* Feeds ev, then every event the actions return, until one returns EV_NONE
 * or an event the current state ignores. Returns the number of transitions
 * made, or -1 if the chain did not end within 64 steps (a table bug). */
int machine_dispatch(struct machine *m, enum machine_event ev);

#endif /* BATON_MACHINE_H */
