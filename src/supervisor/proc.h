/* proc.h -- run a command in its own process group, under a shim that takes
 * the whole group down if baton dies.
 *
 *   baton ── posix_spawn ──> baton-shim (pid P, leader of group P)
 *                              └─ spawn/fork+exec ──> the command (group P), and
 *                                                its children (group P)
 *
 * The shim is a program of its own (shim/shim.c, libc only), found beside
 * the running baton or in BATON_LIBEXECDIR: starting it never copies
 * baton's address space, so a run costs baton a fraction of a millisecond
 * however large and multi-threaded baton is.
 *
 * The shim has PR_SET_PDEATHSIG: when baton dies, even by SIGKILL or the
 * OOM killer, the kernel signals the shim, which SIGKILLs group P. A lock
 * or lease that expires after baton's death therefore never has an orphan
 * still working under it. The shim blocks every other signal, waits for
 * the command and exits the way the command did (same exit code, or killed
 * by the same signal), so baton reaps one pid and reads the command's status.
 * To signal the command and its children, signal the group: kill(-P, sig).
 *
 * Self-fencing. With a fence pipe (proc_spec.fenced, .fence_fd), the shim also
 * learns from baton when the lease (or registration) that covers the run
 * ends, and enforces it on its own, whatever happens to baton: a baton
 * that is stopped (SIGSTOP, a debugger, a cgroup freeze of baton alone) or
 * starved cannot keep the command running past its cover. Each message is
 * a struct proc_fence: at term_at the shim SIGTERMs the group, at kill_at
 * it SIGKILLs it (itself included), as baton would. A later message moves
 * both (every renewal); {0, 0} lifts the fence. The channel is a socket
 * pair (messages, not a byte stream), so that the shim can answer on it:
 * when its command ends, the shim writes a struct proc_exit_report (how
 * and when the command ended, and when its fence TERMed it, if it did)
 * before it exits. A baton that was stopped or starved while its command
 * ended on its own reads there what happened, and when, rather than what
 * it finds when it reaps the shim later. Times are CLOCK_MONOTONIC,
 * the clock of libbaton's deadlines (a machine that is suspended is frozen
 * whole: only fencing tokens help there, as for any lease).
 *
 * Prepared start. With a go pipe (proc_spec.prepared, .go_fd), the shim is started
 * ahead of time, forks the command's process, which changes its directory
 * and ids and waits, fenced: one byte on the pipe (proc_go) wakes that
 * process, which execs the command at once, so that at a tick's instant
 * only a write, a wake-up and an exec remain. The end of the pipe
 * without that byte (baton closed it, or died) means "do not start": the
 * shim exits PROC_SHIM_NOT_STARTED without running anything. While it
 * waits, the fence applies as it does to a running command: at kill_at the
 * shim exits the same way, the command never started.
 */
#ifndef BATON_PROC_H
#define BATON_PROC_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The shim's command line protocol (shim/shim.c), its fence descriptor, and
 * the signal the kernel sends it when baton dies. */
#define PROC_SHIM_PROTOCOL    "2"
#define PROC_SHIM_FENCE_FD    3
#define PROC_SHIM_GO_FD       4
#define PROC_SHIM_NOT_STARTED 125 /* prepared, never told to go: nothing ran */
#define PROC_DEATHSIG         (SIGRTMIN + 3)

struct proc_spec {
    const char *path;    /* executable, as resolved by proc_resolve() */
    char *const *argv;   /* argv[0] is shown to the command */
    char *const *envp;   /* full environment */
    const char *workdir; /* NULL: inherit */
    int stdin_fd;        /* -1: /dev/null */
    int stdout_fd;       /* -1: inherit */
    int stderr_fd;       /* -1: inherit */
    bool fenced;         /* fence_fd is the read end of a fence pipe (the
                            shim keeps it; the caller closes its copy) */
    int fence_fd;
    bool prepared; /* go_fd is the read end of a go pipe (needs fenced;
                      the caller closes its copy): the shim waits for
                      proc_go() before it starts the command */
    int go_fd;
    bool set_ids; /* run as uid/gid (supplementary groups of user) */
    uid_t uid;
    gid_t gid;
    const char *user; /* for initgroups(); with set_ids */
};

/* Finds name in $PATH (or takes it as is when it contains '/'), checking it
 * is an executable regular file. Returns 0 with the path in out, or ENOENT
 * (not found) / EACCES (found, not executable) / ENAMETOOLONG. */
int proc_resolve(const char *name, char *out, size_t len);

/* Finds baton-shim: beside the running executable, else in
 * BATON_LIBEXECDIR. Returns 0 with its path in out, or ENOENT / EACCES /
 * ENAMETOOLONG. */
int proc_shim_path(char *out, size_t len);
/* proc_shim_path() for a start-up check: 0, or errno with a message saying
 * where baton looked in err. */
int proc_shim_check(char *err, size_t len);

/* Starts the shim and the command. Returns 0 and *pid (the shim's pid, also
 * the process group id), or an errno value. Signals should be blocked in the
 * caller (they are reset to defaults and unblocked in the command). */
int proc_spawn(const struct proc_spec *spec, pid_t *pid);

/* One fence message: CLOCK_MONOTONIC ns; 0: none. */
struct proc_fence {
    int64_t term_at;
    int64_t kill_at;
};

/* Makes a fence channel (a socket pair of messages): fds[0] for
 * proc_spec.fence_fd, fds[1] for proc_fence_send() and
 * proc_exit_report_read(). Both O_CLOEXEC and non-blocking. Returns 0 or
 * errno. */
int proc_fence_pipe(int fds[2]);

/* What the shim says of its command's end, on the fence channel. */
#define PROC_REPORT_MAGIC 0x62746e31u /* "btn1" */
struct proc_exit_report {
    uint32_t magic;    /* PROC_REPORT_MAGIC */
    int32_t wstatus;   /* the command's wait status */
    int64_t ended_at;  /* CLOCK_MONOTONIC ns: when the shim saw it end */
    int64_t termed_at; /* CLOCK_MONOTONIC ns: when the shim's fence TERMed its group; 0: never */
};

/* Reads the shim's report from fd (the fence channel's baton end),
 * without waiting. Returns 0 with *out, EAGAIN when there is none (the
 * shim was killed, or is not done), or errno. */
int proc_exit_report_read(int fd, struct proc_exit_report *out);
/* Tells the shim behind fd the new fence. Returns 0, or errno (EAGAIN
 * when the shim has not read the last messages: it enforces the last it
 * read, which is earlier, so nothing is lost but time). */
int proc_fence_send(int fd, int64_t term_at, int64_t kill_at);

/* Makes a go pipe: fds[0] for proc_spec.go_fd, fds[1] for proc_go().
 * Both O_CLOEXEC. Returns 0 or errno. */
int proc_go_pipe(int fds[2]);
/* Tells the prepared shim behind fd to start its command now. Returns 0
 * or errno (the shim then never starts it). */
int proc_go(int fd);

/* kill(-pgid, sig), ignoring a group that is already gone. Returns 0 or
 * errno. */
int proc_signal_group(pid_t pgid, int sig);

/* The signal the kernel sends the shim when baton dies. */
int proc_deathsig(void);

/* Builds a NUL-terminated environment: base (NULL: environ) with each
 * "NAME=value" of extra replacing or adding NAME, and each bare "NAME"
 * removing it. Returns: owned array
 * whose strings are owned too; free with proc_env_free(). NULL on ENOMEM. */
char **proc_env_build(char *const *base, char *const *extra, size_t nextra);
void proc_env_free(char **env);

/* Exit status in shell terms: the code, or 128+N when killed by signal N. */
int proc_status_code(int wstatus);

#endif
