/* hook.h -- on_failure and on_success: a command run after a run ends, on
 * the node that ran it, at most once per run.
 *
 * Which: a run that ended ok gets its job's on_success; one that failed,
 * timed out, was killed by baton, or could not start gets on_failure, once
 * no retry follows: the runner says whether it scheduled one. A failed
 * attempt with a retry scheduled waits here (deferred); the retry's own end
 * replaces it, and a retry that is dropped (the node stops leading, the job
 * changed, the retry's claim was refused) starts it. So a tick's failure is
 * reported once, by its last attempt (BATON_ATTEMPT). A manual run (baton
 * trigger) is never retried: its hook starts when it ends, as a tick's
 * last attempt's does. Ticks that did not run (skipped, superseded,
 * missed, paused) have no run, and no hook.
 *
 * How: like a run (proc.h's shim, its own process group, stdin /dev/null,
 * the job's user, workdir and env), but never fenced (a hook reports a run
 * that is over: it does not need the lease) and never blocking the loop. It
 * gets the run's facts in its environment (HOOK_ENV_VARS, below), among
 * them BATON_OUTPUT_FILE, a private file (mode 0600, owned by the job's
 * user) holding the run's output tail, removed when the hook ends. Its own output becomes
 * hook_output lines (output.h); hook_start and hook_end frame it. After
 * hook_timeout it gets SIGTERM, and SIGKILL after the job's kill_grace.
 *
 * A hook dies with its supervisor (the shim's PR_SET_PDEATHSIG), like any
 * child of baton: a node killed during a hook does not finish it, and no
 * other node runs it. On a graceful shutdown the daemon waits for hooks
 * within shutdown_grace; hooks_hurry() then stops them (SIGTERM, SIGKILL
 * after kill_grace), and a hook that starts after that point (its run was
 * stopped by the drain) has kill_grace before its SIGTERM.
 *
 * Bounded: at most HOOKS_ALIVE_MAX hooks alive and HOOKS_DEFERRED_MAX
 * deferred; beyond, a hook is not started (hook_end says why).
 * Single-threaded, on the daemon's loop; the runner reaps every child
 * (waitpid(-1)) and hands hooks_reaped() the pids that are not runs. */
#ifndef BATON_HOOK_H
#define BATON_HOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "log.h"
#include "loop.h"
#include "run.h"

#define HOOKS_ALIVE_MAX    256
#define HOOKS_DEFERRED_MAX 1024

/* The variables a hook gets besides its job's env, in one table: prepare()
 * and hook_start set them, and `baton check --reference`, the man pages and
 * the docs' test list them from here. A variable is set when its meaning
 * applies (BATON_EXIT_CODE or BATON_SIGNAL...). X(ID, name, meaning as
 * Markdown). */
#define HOOK_ENV_VARS(X)                                                                           \
    X(JOB, "BATON_JOB", "the job's name")                                                          \
    X(RUN_ID, "BATON_RUN_ID", "the run's id")                                                      \
    X(NODE, "BATON_NODE", "the node that ran it, and runs the hook")                               \
    X(GROUP, "BATON_GROUP", "the group")                                                           \
    X(HOOK, "BATON_HOOK", "`on_failure` or `on_success`")                                          \
    X(OUTCOME, "BATON_OUTCOME",                                                                    \
      "how the run ended: `ok`, `failed`, `timeout`, `killed` or `failed_to_start`")               \
    X(EXIT_CODE, "BATON_EXIT_CODE", "its exit status, when it exited")                             \
    X(SIGNAL, "BATON_SIGNAL", "the signal that ended it (`TERM`, `KILL`...), when one did")        \
    X(REASON, "BATON_REASON",                                                                      \
      "why baton stopped it (`timeout`, `replaced`, `lease_lost`, `shutdown`, "                    \
      "`registration_lost`), or why it could not start")                                           \
    X(DURATION_MS, "BATON_DURATION_MS", "how long it ran, in milliseconds")                        \
    X(ATTEMPT, "BATON_ATTEMPT", "which attempt of its tick it was (1, 2...)")                      \
    X(TRIGGER, "BATON_TRIGGER", "what started it: `schedule`, `catchup`, `retry` or `manual`")     \
    X(SCHEDULED_AT, "BATON_SCHEDULED_AT",                                                          \
      "the tick it ran for, RFC 3339 UTC; for a manual run, the time of the request")              \
    X(STARTED_AT, "BATON_STARTED_AT",                                                              \
      "when it started, RFC 3339 UTC with milliseconds, unless it never started")                  \
    X(OUTPUT_FILE, "BATON_OUTPUT_FILE",                                                            \
      "a private file (mode 0600, owned by the job's user, in `$TMPDIR` or /tmp) holding the "     \
      "run's output tail, removed when the hook ends")                                             \
    X(OUTPUT_DROPPED, "BATON_OUTPUT_DROPPED", "how many bytes of output went before that tail")

enum hook_env_var {
#define HOOK_ENV_ENUM_(id, name, doc) HOOK_ENV_##id,
    HOOK_ENV_VARS(HOOK_ENV_ENUM_)
#undef HOOK_ENV_ENUM_
        HOOK_ENV_COUNT
};

/* Returns: the variable's name or meaning; "?" out of range. Static. */
const char *hook_env_name(enum hook_env_var v);
const char *hook_env_doc(enum hook_env_var v);

struct hooks;

struct hooks_host { /* node and group are copied; the rest is borrowed */
    struct log *log;
    struct loop *loop;
    int timer_id; /* the loop timer the hooks own */
    const char *node;
    const char *group;
};

/* Returns: owned (free with hooks_free), or NULL on ENOMEM. */
struct hooks *hooks_new(const struct hooks_host *host);
/* SIGKILLs the hooks still alive, removes their files, drops the deferred
 * ones, frees h. NULL is a no-op. */
void hooks_free(struct hooks *h);

/* run (exited, recorded) ended: starts the hook its job has for its
 * outcome, or defers an on_failure while retry_follows. A deferred hook of
 * the same job and tick is replaced by this run's. Copies what it needs:
 * run may go right after. h NULL: nothing. */
void hooks_run_ended(struct hooks *h, const struct run *run, bool retry_follows);
/* The retry of job's tick that a deferred hook waited for will not run:
 * the hook starts now. h NULL or nothing deferred: nothing. */
void hooks_retry_dropped(struct hooks *h, const char *job, int64_t tick);

/* A child exited: true when pid was a hook (it is reaped, logged, its file
 * removed), false when it is not ours. */
bool hooks_reaped(struct hooks *h, pid_t pid, int wstatus);
/* Hooks alive. 0 for h NULL. */
size_t hooks_running(const struct hooks *h);
/* The timer fired: timeouts and KILLs that are due. */
void hooks_on_timer(struct hooks *h);
/* The shutdown's grace is over: SIGTERM to every hook now (SIGKILL after
 * its kill_grace); hooks that start from now on get kill_grace only. */
void hooks_hurry(struct hooks *h);

#endif /* BATON_HOOK_H */
