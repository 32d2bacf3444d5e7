/* run.h -- one run of a job: its process, its output, its states.
 *
 * A run's life is a small machine, in the manner of systemd's service
 * state/result pairs: every change goes through run_transition(), which
 * logs it (job_start on running, job_end on exited, run_state at debug in
 * between), and the next state comes from the table of run_next_state(),
 * which the unit tests walk without processes.
 *
 *   state \ event  spawned   spawn_failed  term         kill      reaped
 *   starting       running   exited        .            .         exited
 *   running        .         .             terminating  killing   exited
 *   terminating    .         .             .            killing   exited
 *   killing        .         .             .            .         exited
 *   exited         .         .             .            .         .
 *
 * The outcome (history.h) is decided once, on exit: ok, failed, timeout
 * (stopped by its timeout), killed (stopped by baton for another reason:
 * run_stop_reason, or by its shim's fence), or failed_to_start (it never
 * ran; the reason is kept). It is what happened to the command: the shim
 * reports when and how the command ended (proc.h), so a command that
 * ended on its own before baton stopped it (a baton that was stalled,
 * then found its lease gone) is ok or failed, and its end is when it
 * ended, not when baton reaped it.
 * A claimed tick that cannot start is therefore a run that exits at once
 * with failed_to_start: logged and recorded, never dropped.
 *
 * A prepared run (run_start with prepared) has its shim started ahead of
 * its tick and waiting (proc.h): it stays `starting` until run_go() (then
 * `running`, job_start logged, its lateness measured from there), or until
 * it is reaped without a go (run_stop before the go, the fence, a failed
 * go): it then exits failed_to_start with its reason, the command never
 * having run.
 *
 * The command runs under proc.h's shim in its own process group; its
 * stdout and stderr become job_output lines (output.h: always valid JSON,
 * long lines in pieces), and the last run_env.output_bytes of them, in
 * arrival order, are kept as the run's output tail: taken when the run
 * exits (run->output), written with its history record and handed to its
 * hook (hook.h). */
#ifndef BATON_RUN_H
#define BATON_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "history.h"
#include "jobs.h"
#include "log.h"
#include "loop.h"
#include "output.h"

#define RUN_LINE_MAX OUTPUT_LINE_MAX
#define RUN_ID_MAX   64

#define RUN_STATES(X)                                                                              \
    X(STARTING, "starting")                                                                        \
    X(RUNNING, "running")                                                                          \
    X(TERMINATING, "terminating")                                                                  \
    X(KILLING, "killing")                                                                          \
    X(EXITED, "exited")

enum run_state {
#define RUN_STATE_ENUM_(id, name) RUN_##id,
    RUN_STATES(RUN_STATE_ENUM_)
#undef RUN_STATE_ENUM_
        RUN_STATE_COUNT
};

enum run_event { RUN_EV_SPAWNED, RUN_EV_SPAWN_FAILED, RUN_EV_TERM, RUN_EV_KILL, RUN_EV_REAPED };

/* Why baton stopped a run. */
#define RUN_STOPS(X)                                                                               \
    X(NONE, "")                                                                                    \
    X(TIMEOUT, "timeout")                /* its own timeout */                                     \
    X(REPLACED, "replaced")              /* concurrency: replace, a newer tick */                  \
    X(PAUSED, "lease_lost")              /* the leader could not confirm its lease */              \
    X(SHUTDOWN, "shutdown")              /* shutdown_grace ran out, or a second SIGTERM */         \
    X(UNREGISTERED, "registration_lost") /* after a handover: its registration ended */

enum run_stop {
#define RUN_STOP_ENUM_(id, name) RUN_STOP_##id,
    RUN_STOPS(RUN_STOP_ENUM_)
#undef RUN_STOP_ENUM_
        RUN_STOP_COUNT
};

/* What started a run. */
enum run_trigger {
    RUN_TRIGGER_SCHEDULE,
    RUN_TRIGGER_CATCHUP,
    RUN_TRIGGER_RETRY,
    RUN_TRIGGER_MANUAL
};

const char *run_state_name(enum run_state s);
const char *run_stop_name(enum run_stop s);
const char *run_trigger_name(enum run_trigger t);

/* The variables every run gets besides its job's env, in one table: the
 * run sets each of them (build_env), and `baton check --reference`, the man
 * pages and the docs' test list them from here. X(ID, name, meaning as
 * Markdown). */
#define RUN_ENV_VARS(X)                                                                            \
    X(JOB, "BATON_JOB", "the job's name")                                                          \
    X(RUN_ID, "BATON_RUN_ID", "the run's id, as in the log and `baton history`")                   \
    X(SCHEDULED_AT, "BATON_SCHEDULED_AT",                                                          \
      "the tick it runs for, RFC 3339 UTC; for a manual run, the time of the request")             \
    X(FENCE, "BATON_FENCE",                                                                        \
      "the fencing token: the leader's term, which only grows; give it to what the job changes "   \
      "so that it can refuse an older one")                                                        \
    X(NODE, "BATON_NODE", "the node running it")                                                   \
    X(TRIGGER, "BATON_TRIGGER", "what started it: `schedule`, `catchup`, `retry` or `manual`")     \
    X(ATTEMPT, "BATON_ATTEMPT", "1, then 2, 3... for the retries of a tick")                       \
    X(JITTER_MS, "BATON_JITTER_MS",                                                                \
      "the tick's jitter delay in ms: its run was to begin at `BATON_SCHEDULED_AT` plus this "     \
      "(`0` without `jitter`, and for a manual run)")

enum run_env_var {
#define RUN_ENV_ENUM_(id, name, doc) RUN_ENV_##id,
    RUN_ENV_VARS(RUN_ENV_ENUM_)
#undef RUN_ENV_ENUM_
        RUN_ENV_COUNT
};

/* Returns: the variable's name ("BATON_JOB") or meaning; "?" out of range.
 * Static. */
const char *run_env_name(enum run_env_var v);
const char *run_env_doc(enum run_env_var v);

/* The table above: the state after event e in state s, or s itself when
 * the table has no move (the event is ignored). */
enum run_state run_next_state(enum run_state s, enum run_event e);

struct run_env { /* what a run needs from its supervisor (borrowed) */
    struct log *log;
    struct loop *loop;
    const char *node;
    size_t output_bytes; /* the output tail kept per run (history.output_bytes); 0: none */
    bool fault_start;    /* tests: fail every start after the claim */
};

struct run {
    char id[RUN_ID_MAX];
    char member[RUN_ID_MAX + 160]; /* "<node>/<id>": its registration */
    const struct job *job;         /* borrowed from the job set the run holds */
    int64_t tick;                  /* Unix s */
    int64_t jitter_ms;             /* the tick's delay (sched_jitter_ms; 0 for a manual run) */
    int attempt;
    uint64_t term;
    enum run_trigger trigger;
    char by[128]; /* a manual run: who asked (user@host); "" otherwise */
    enum run_state state;
    enum history_outcome outcome; /* once exited */
    enum run_stop stop;           /* why baton stopped it, if it did */
    int64_t stop_ns;              /* CLOCK_MONOTONIC: when it did (0: never) */
    char error[160];              /* failed_to_start (or a cancelled run skipped): why */
    pid_t pgid;
    int wstatus;
    int64_t started_ns; /* CLOCK_MONOTONIC */
    int64_t ended_ns;   /* CLOCK_MONOTONIC, once reaped; 0 before */
    int64_t started_wall_ms;
    int64_t timeout_at;          /* CLOCK_MONOTONIC; 0: none */
    int64_t kill_at;             /* 0: none */
    struct output_labels labels; /* of its job_output lines */
    struct output_stream out, err;
    struct output_tail tail; /* both streams, while it runs */
    char *output;            /* the tail, once exited (NULL: none kept); owned */
    size_t output_len;
    int64_t output_dropped; /* bytes of output before it */
    int fence_fd;           /* the write end of the shim's fence pipe (proc.h), or -1 */
    int go_fd;              /* a prepared run's go pipe (write end) until run_go(), or -1 */
    bool prepared;          /* spawned, waiting for run_go() */
    /* run_cancel()'s outcome for a prepared run reaped without its go:
     * failed_to_start, or skipped (the tick was decided not to run). */
    enum history_outcome cancel_outcome;
    const struct run_env *env;
};

/* Sets up run (zeroed by the caller) for one attempt at tick and starts
 * it, its shim fenced at {term_at, kill_at} (CLOCK_MONOTONIC ns; see
 * proc.h: the shim TERMs and KILLs the run on its own then, unless
 * run_fence() moves the fence). Returns true when the command runs; false
 * when it could not start: the run is then already exited with outcome
 * failed_to_start, its reason in run->error, and job_end logged. */
bool run_start(struct run *run, const struct run_env *env, const struct job *job, const char *id,
               int64_t tick, int attempt, uint64_t term, enum run_trigger trigger, int64_t term_at,
               int64_t kill_at, bool prepared);

/* The instant the run was to begin (Unix ms): its tick, delayed by the
 * tick's jitter. A prepared run goes then; lateness is measured from it. */
static inline int64_t run_start_ms(const struct run *run)
{
    return run->tick * 1000 + run->jitter_ms;
}

/* A prepared run (run_start with prepared true: its shim is started and
 * waits, run->prepared set, still `starting`): starts its command now.
 * Returns true when the go was sent (the run is `running`); false when the
 * shim is gone (its reaping records the run failed_to_start). */
bool run_go(struct run *run);

/* A prepared run that is not to start: its shim is told so and killed;
 * reaped, its outcome is `outcome` (HO_FAILED_TO_START: it could not run,
 * logged job_end; HO_SKIPPED: its tick was decided not to run, e.g. its
 * job was paused before the instant, which the caller records as a
 * skipped tick: no job_end) because of why (copied into run->error). No
 * effect on a run that is not prepared. */
void run_cancel(struct run *run, enum history_outcome outcome, const char *why);

/* Moves the run's fence (one write to its shim). */
void run_fence(struct run *run, int64_t term_at, int64_t kill_at);

/* TERM the process group now (once), and KILL it at min(now + kill_grace,
 * kill_by_ns) (kill_by_ns 0: no bound). why is kept (a timeout is not
 * overwritten by a later reason). A prepared run is not started: its shim
 * is told so and killed, and its reaping records it failed_to_start with
 * why. */
void run_stop(struct run *run, enum run_stop why, int64_t kill_by_ns);

/* Acts on what is due at now: the timeout, the KILL. */
void run_tick(struct run *run, int64_t now_ns);
/* The next time run_tick() has something to do, or 0. */
int64_t run_next_ns(const struct run *run);

/* The process group leader exited with wstatus: drains the output, kills
 * what the group left, closes the pipes, takes the output tail
 * (run->output), decides the outcome, exits. */
void run_reaped(struct run *run, int wstatus);

/* Frees the run's resources (pipes, output); SIGKILLs the group if still
 * alive. */
void run_dispose(struct run *run);

/* The run as a history record (strings borrowed from run), its output
 * included when one was kept. */
void run_record(const struct run *run, const char *node, struct history_rec *out);

/* How it ended: *exit_code (-1: none), *signal (its abbreviation, "TERM";
 * "" for none; static) and *duration_ms (0 when it never started). */
void run_result(const struct run *run, int *exit_code, const char **signal, int64_t *duration_ms);

#endif /* BATON_RUN_H */
