/* machine.h -- the supervisor's state machine, as data.
 *
 * MACHINE_TABLE is the whole behaviour: one line per event, one cell per
 * state (in MACHINE_STATES order). Every (state, event) pair is decided:
 *   __           ignored: stay, run nothing, log nothing
 *   T(S, a)      go to S, log the transition (info), run action a
 *   Q(S, a)      the same, logged at debug: the routine round trips (a
 *                renewal; a follower's poll that finds the leader alive,
 *                announced instead by one "following" line per term), and
 *                a stay that waits for a later event (Q to its own state,
 *                action NONE: nothing is logged, nothing runs)
 *   IF(g, X, Y)  X when guard g holds, else Y (X and Y are T or Q cells;
 *                Y may be one more IF: the guards are asked in order, as
 *                xstate's list of guarded transitions)
 * Actions return the next event (or EV_NONE); guards only read: they are
 * the only facts outside the event that decide a move. A parent state
 * (MACHINE_PARENTS) groups states and has an exit action, run whenever a
 * move leaves the group, after the move is logged and before the move's
 * own action. The dispatcher, machine_dispatch(), is the only writer of
 * the state. The actions and guards themselves live in the supervisor
 * (src/supervisor/daemon.c, src/supervisor/guards.c); the diagram in
 * machine/README.md is generated from this table (gen_diagram.c), and a
 * test fails when the two disagree.
 */
#ifndef BATON_MACHINE_H
#define BATON_MACHINE_H

#include <stdbool.h>
#include <stdint.h>

/* The states, each with its parent (NONE: at the top). stopped is the
 * final state: idle ends the node's work (finish), then the machine stops
 * there for good; only the hooks still running may keep the process. */
#define MACHINE_STATES(X)                                                                          \
    X(IDLE, idle, NONE)                                                                            \
    X(ACQUIRING, acquiring, NONE)                                                                  \
    X(WORKING, working, LEADING)                                                                   \
    X(RENEWING, renewing, LEADING)                                                                 \
    X(PAUSING, pausing, NONE)                                                                      \
    X(RELEASING, releasing, NONE)                                                                  \
    X(WAITING, waiting, NONE)                                                                      \
    X(STOPPED, stopped, NONE)

/* Parent states and their exit actions (xstate's exit). */
#define MACHINE_PARENTS(X)                                                                         \
    X(LEADING, leading, DISARM) /* the node holds the lease: working, renewing */

#define MACHINE_EVENTS(X)                                                                          \
    X(START, start)               /* boot, or the end of a step-down's pause */                    \
    X(ACQUIRED, acquired)         /* campaign won: a new term */                                   \
    X(TAKEN, taken)               /* campaign lost: another node leads */                          \
    X(REDIS_ERROR, redis_error)   /* Redis unreachable or failing */                               \
    X(RENEW_DUE, renew_due)       /* lease.renew since the last confirmation */                    \
    X(RENEWED, renewed)           /* Redis confirmed the extension */                              \
    X(LOST, lost)                 /* the lease is someone else's */                                \
    X(DEADLINE, deadline)         /* the stop point passed unconfirmed */                          \
    X(JOBS_STOPPED, jobs_stopped) /* runs told to stop (or end), or the last one ended */          \
    X(RELEASED, released)         /* the lease was given up (or left to expire) */                 \
    X(DRAIN_TIMEOUT, drain_timeout) /* shutdown_grace is over */                                   \
    X(WAKE, wake)                 /* leader resigned, its lease ran out, poll, backoff */          \
    X(STOP, stop)                 /* SIGTERM or SIGINT */                                          \
    X(STEP_DOWN, step_down)       /* `baton step-down` */                                          \
    X(FINISHED, finished)         /* finish left nothing: no run, no lease, no timer */

#define MACHINE_ACTIONS(X)                                                                         \
    X(CAMPAIGN, campaign) /* ask Redis for the lease -> acquired|taken|redis_error */              \
    X(LEAD, lead)         /* schedule the jobs; arm renewal and the stop point */                  \
    X(FOLLOW, follow)     /* arm wake-ups: leader's lease end, poll; watch for resignation */      \
    X(BACKOFF, backoff)   /* Redis unreachable: capped exponential backoff + jitter */             \
    X(RENEW, renew)       /* extend the lease -> renewed|lost|redis_error */                       \
    X(CONFIRM, confirm)   /* renewed in time: the leader's runs are covered to the new deadline */ \
    X(RETRY, retry)       /* renewal failed: try again soon, the stop point still armed */         \
    X(PAUSE, pause)       /* stop scheduling; TERM runs, KILL by the deadline -> jobs_stopped */   \
    X(HANDOVER, handover) /* stop scheduling, keep the runs registered, resign -> released */      \
    X(DRAIN, drain)       /* let the runs finish up to shutdown_grace -> jobs_stopped */           \
    X(HURRY, hurry)       /* 2nd SIGTERM, drain timeout: TERM runs, hooks now -> jobs_stopped */   \
    X(RESTART, restart)   /* after a step-down: campaign again after a pause */                    \
    X(FINISH, finish)     /* the end of the work: no timer, the outbox written -> finished */      \
    X(SIGN_OFF, sign_off) /* the last heartbeat says "stopped"; the loop ends */                   \
    X(DISARM, disarm)     /* exit of leading: disarm renewal and the stop point */

/* Guards: facts an action cannot see from its own event, named so that
 * every decision is on this screen (xstate's `cond`). */
#define MACHINE_GUARDS(X)                                                                          \
    X(IN_TIME, in_time)     /* the renewal was confirmed before the stop point */                  \
    X(STOPPING, stopping)   /* SIGTERM or SIGINT was received */                                   \
    X(RUNS_LEFT, runs_left) /* some run (possibly of an earlier term) is alive */                  \
    X(MAY_BLOCK, may_block) /* a blocking Redis call would end before every stop point */

/* clang-format off */
#define MACHINE_TABLE(ROW, __, T, Q, IF)                                                                                                                                                                                                                       \
/*  event           idle                   acquiring           working                 renewing                pausing    releasing            waiting                stopped */                                                                               \
ROW(START,          T(ACQUIRING,CAMPAIGN), __,                 __,                     __,                     __,        __,                  __,                    __)                                                                                      \
ROW(ACQUIRED,       __,                    T(WORKING,LEAD),    __,                     __,                     __,        __,                  __,                    __)                                                                                      \
ROW(TAKEN,          __,                    Q(WAITING,FOLLOW),  __,                     __,                     __,        __,                  __,                    __)                                                                                      \
ROW(REDIS_ERROR,    __,                    Q(WAITING,BACKOFF), __,                     Q(RENEWING,RETRY),      __,        __,                  __,                    __)                                                                                      \
ROW(RENEW_DUE,      __,                    __,                 IF(MAY_BLOCK,Q(RENEWING,RENEW),T(PAUSING,PAUSE)), IF(MAY_BLOCK,Q(RENEWING,RENEW),T(PAUSING,PAUSE)), __, __, __, __)                                                                             \
ROW(RENEWED,        __,                    __,                 __,                     IF(IN_TIME,Q(WORKING,CONFIRM),T(PAUSING,PAUSE)), __, __, __,                   __)                                                                                      \
ROW(LOST,           __,                    __,                 T(PAUSING,PAUSE),       T(PAUSING,PAUSE),       __,        __,                  __,                    __)                                                                                      \
ROW(DEADLINE,       __,                    __,                 T(PAUSING,PAUSE),       T(PAUSING,PAUSE),       __,        __,                  __,                    __)                                                                                      \
ROW(JOBS_STOPPED,   __,                    __,                 __,                     __,                     IF(RUNS_LEFT,Q(PAUSING,NONE),IF(STOPPING,T(IDLE,FINISH),T(WAITING,FOLLOW))), IF(RUNS_LEFT,Q(RELEASING,NONE),T(IDLE,FINISH)), __, __)            \
ROW(RELEASED,       __,                    __,                 __,                     __,                     __,        IF(STOPPING,Q(RELEASING,DRAIN),T(IDLE,RESTART)), __, __)                                                                             \
ROW(DRAIN_TIMEOUT,  __,                    __,                 __,                     __,                     __,        Q(RELEASING,HURRY),  __,                    Q(STOPPED,HURRY))                                                                        \
ROW(WAKE,           __,                    __,                 __,                     __,                     __,        __,                  Q(ACQUIRING,CAMPAIGN), __)                                                                                      \
ROW(STOP,           IF(RUNS_LEFT,T(RELEASING,DRAIN),T(IDLE,FINISH)), IF(RUNS_LEFT,T(RELEASING,DRAIN),T(IDLE,FINISH)), T(RELEASING,HANDOVER), T(RELEASING,HANDOVER), __, Q(RELEASING,HURRY), IF(RUNS_LEFT,T(RELEASING,DRAIN),T(IDLE,FINISH)), Q(STOPPED,HURRY)) \
ROW(STEP_DOWN,      __,                    __,                 T(RELEASING,HANDOVER),  T(RELEASING,HANDOVER),  __,        __,                  __,                    __)                                                                                      \
ROW(FINISHED,       Q(STOPPED,SIGN_OFF),   __,                 __,                     __,                     __,        __,                  __,                    __)
/* clang-format on */

enum machine_state {
#define MACHINE_STATE_ENUM_(id, name, parent) ST_##id,
    MACHINE_STATES(MACHINE_STATE_ENUM_)
#undef MACHINE_STATE_ENUM_
        ST_COUNT
};

/* The final state: no move leaves it (its cells stay in it). */
#define MACHINE_FINAL ST_STOPPED

enum machine_parent {
    P_NONE,
#define MACHINE_PARENT_ENUM_(id, name, exit) P_##id,
    MACHINE_PARENTS(MACHINE_PARENT_ENUM_)
#undef MACHINE_PARENT_ENUM_
        P_COUNT
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

/* One cell of the table: then when guard holds; else elif when elif_guard
 * holds; else otherwise. guard G_ALWAYS: then is the cell (the rest
 * unused); elif_guard G_ALWAYS: no elif (IF(g, X, Y)). */
struct machine_cell {
    enum machine_guard guard;
    struct machine_branch then;
    enum machine_guard elif_guard;
    struct machine_branch elif, otherwise;
};

/* Returns: the cell for (state, event). Static. */
const struct machine_cell *machine_cell(enum machine_state s, enum machine_event e);

const char *machine_state_name(enum machine_state s);
const char *machine_event_name(enum machine_event e);
const char *machine_action_name(enum machine_action a);
const char *machine_guard_name(enum machine_guard g);
const char *machine_parent_name(enum machine_parent p);

/* Returns: the parent of s (P_NONE at the top). */
enum machine_parent machine_state_parent(enum machine_state s);
/* Returns: the exit action of p (ACT_NONE for P_NONE). */
enum machine_action machine_parent_exit(enum machine_parent p);
/* Returns: the exit action a move from -> to runs: its parent's when it
 * leaves it, else ACT_NONE. */
enum machine_action machine_exit_action(enum machine_state from, enum machine_state to);

/* Actions get the context and return the next event (an exit action's
 * is not used: it returns EV_NONE). */
typedef enum machine_event (*machine_action_fn)(void *ctx);
/* Guards read the context and change nothing. */
typedef bool (*machine_guard_fn)(const void *ctx);

/* Called after every change of state (not for ignored events). guard is
 * the last guard the cell asked (G_ALWAYS when it has none) and held what
 * it said. */
typedef void (*machine_observer_fn)(void *ctx, enum machine_state from, enum machine_state to,
                                    enum machine_event trigger, enum machine_guard guard,
                                    bool held, int64_t in_state_ms, bool quiet);

struct machine {
    enum machine_state state; /* written by machine_dispatch() only */
    int64_t entered_ns;       /* CLOCK_MONOTONIC time of entering state */
    const machine_action_fn *actions; /* indexed by enum machine_action */
    const machine_guard_fn *guards;   /* indexed by enum machine_guard */
    machine_observer_fn observer;
    void *ctx;             /* what the actions and the observer get */
    const void *guard_ctx; /* what the guards read: ctx, unless set after machine_init */
};

/* Starts m in idle. actions has ACT_COUNT entries (ACT_NONE's may be NULL),
 * guards G_COUNT entries (G_ALWAYS's may be NULL; a NULL guard is false);
 * observer may be NULL. */
void machine_init(struct machine *m, const machine_action_fn *actions,
                  const machine_guard_fn *guards, machine_observer_fn observer, void *ctx);

/* True when m is in parent p (in one of its states). */
bool machine_in(const struct machine *m, enum machine_parent p);
/* True once m is in its final state (MACHINE_FINAL). */
bool machine_done(const struct machine *m);

/* Returns: the branch c takes in m's context (asking its guards). */
const struct machine_branch *machine_branch(const struct machine *m, const struct machine_cell *c);

/* Feeds ev, then every event the actions return, until one returns EV_NONE
 * or an event the current state ignores. Returns the number of transitions
 * made, or -1 if the chain did not end within 64 steps (a table bug). */
int machine_dispatch(struct machine *m, enum machine_event ev);

#endif /* BATON_MACHINE_H */
