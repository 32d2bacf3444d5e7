/* shim.c -- baton-shim, the small process between baton and each command
 * it runs (a job, a hook, `baton lock`'s command). See proc.h for what it
 * guarantees; this file is the program.
 *
 * baton starts it with posix_spawn(): the supervisor's address space is
 * never copied (a fork of a multi-threaded baton cost it milliseconds of
 * page-table copies and copy-on-write faults per run). It is linked with
 * libc alone, so each running command costs a few hundred KiB, and it
 * runs as:
 *
 *   baton-shim PROTOCOL PARENT FLAGS WORKDIR USER UID GID PATH ARGV0 [ARG...]
 *
 * PROTOCOL is PROC_SHIM_PROTOCOL; PARENT baton's pid; FLAGS holds 'f' when
 * descriptor 3 is the fence pipe's read end, 'g' when descriptor 4 is a go
 * pipe's (a prepared start: the command starts when baton writes a byte
 * there; see proc.h) and 'u' when the command runs as UID:GID with USER's
 * supplementary groups; WORKDIR is "" to stay; the
 * environment is the command's. Descriptors 0-2 are the command's, set up
 * by baton; every other one is closed here. baton made the shim the leader
 * of its own process group, with every signal blocked and at its default.
 *
 * A prepared start forks the command's process at once: it changes its
 * directory and ids, then waits on the go pipe itself, and at the go only
 * its wake-up and the exec remain. The shim never reads the go byte; the
 * byte's presence in the pipe is how it knows the command was told to go.
 *
 * Exit status: the command's (or killed by the command's signal; killed by
 * SIGTERM when its group was told to stop before the command started); 125 when
 * baton was already gone or a prepared start was never told to go
 * (PROC_SHIM_NOT_STARTED), 126 when the command could not be started (its
 * stderr says why), 137 when the shim killed the group (fence or baton's
 * death), 64 when started with a wrong command line.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "proc.h"

extern char **environ;

struct shim_args {
    pid_t parent;
    bool fenced, prepared, set_ids;
    const char *workdir, *user;
    uid_t uid;
    gid_t gid;
    const char *path;
    char **argv;
};

static void write_str(int fd, const char *s)
{
    ssize_t n = write(fd, s, strlen(s));
    (void)n;
}

static bool parse_long(const char *s, long long min, long long max, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static bool parse_args(int argc, char **argv, struct shim_args *a)
{
    long long v;
    if (argc < 10 || strcmp(argv[1], PROC_SHIM_PROTOCOL) != 0)
        return false;
    if (!parse_long(argv[2], 1, INT_MAX, &v))
        return false;
    a->parent = (pid_t)v;
    a->fenced = strchr(argv[3], 'f') != NULL;
    a->prepared = strchr(argv[3], 'g') != NULL;
    a->set_ids = strchr(argv[3], 'u') != NULL;
    if (a->prepared && !a->fenced)
        return false;
    a->workdir = argv[4][0] != '\0' ? argv[4] : NULL;
    a->user = argv[5];
    if (!parse_long(argv[6], 0, UINT32_MAX, &v))
        return false;
    a->uid = (uid_t)v;
    if (!parse_long(argv[7], 0, UINT32_MAX, &v))
        return false;
    a->gid = (gid_t)v;
    a->path = argv[8];
    a->argv = argv + 9;
    return true;
}

/* Says on stderr "baton: <what><arg>: <why>" and exits 126 (the command
 * could not be started). Never returns. */
_Noreturn static void not_started(const char *what, const char *arg, const char *why)
{
    write_str(2, "baton: ");
    write_str(2, what);
    write_str(2, arg);
    write_str(2, ": ");
    write_str(2, why != NULL ? why : "unknown error");
    write_str(2, "\n");
    _exit(126);
}

/* Why the command cannot be started, found before its exec: what failed,
 * its argument, and the reason (NULL when there is none). */
struct not_startable {
    const char *what, *arg, *why;
};

/* In the command's process, after fork: does what precedes the exec (the
 * working directory, the ids). Returns false with *w filled when one fails. */
static bool before_exec(const struct shim_args *a, struct not_startable *w)
{
    if (a->workdir != NULL && chdir(a->workdir) != 0) {
        *w = (struct not_startable){"cannot change to the job's workdir ", a->workdir,
                                    strerror(errno)};
        return false;
    }
    if (a->set_ids &&
        (initgroups(a->user, a->gid) != 0 || setgid(a->gid) != 0 || setuid(a->uid) != 0)) {
        *w = (struct not_startable){"cannot switch to the job's user ", a->user, strerror(errno)};
        return false;
    }
    return true;
}

/* In the command's process: says why it cannot start (w, or NULL when it
 * can), else unblocks every signal and executes the command. A signal the
 * group got meanwhile (pending, blocked until here) acts now, as it would
 * on the command. Never returns. */
_Noreturn static void exec_command(const struct shim_args *a, const struct not_startable *w)
{
    sigset_t none;
    if (w != NULL)
        not_started(w->what, w->arg, w->why);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execv(a->path, a->argv);
    not_started("cannot execute ", a->path, strerror(errno));
}

/* True when the go byte is in the pipe now (poll says so without waiting;
 * nobody reads it: its presence is the go). The end of the pipe alone is
 * not a go. */
static bool go_ready(int gfd)
{
    struct pollfd p = {.fd = gfd, .events = POLLIN};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* Forks the command's process of a prepared start while the shim waits:
 * it does what precedes the exec at once, then waits for baton's go on
 * PROC_SHIM_GO_FD itself, so that at the tick's instant only its wake-up
 * and the exec remain (no fork, no second wake-up). It leaves the go byte
 * in the pipe for the shim to see. It exits PROC_SHIM_NOT_STARTED, saying
 * nothing, when the pipe ends without a go; 126 after the go when what
 * precedes the exec failed. Returns its pid in the shim; exits
 * PROC_SHIM_NOT_STARTED when there can be no such process. */
static pid_t fork_prepared(const struct shim_args *a, int sfd)
{
    pid_t child = fork();
    if (child < 0)
        _exit(PROC_SHIM_NOT_STARTED);
    if (child > 0)
        return child;
    struct not_startable w;
    bool ok;
    close(sfd);
    close(PROC_SHIM_FENCE_FD);
    if (fcntl(PROC_SHIM_GO_FD, F_SETFD, FD_CLOEXEC) != 0)
        _exit(PROC_SHIM_NOT_STARTED);
    ok = before_exec(a, &w);
    for (;;) {
        struct pollfd p = {.fd = PROC_SHIM_GO_FD, .events = POLLIN};
        int n = poll(&p, 1, -1);
        if (n < 0 && errno != EINTR)
            _exit(PROC_SHIM_NOT_STARTED); /* cannot wait for a go: never started */
        if (n != 1)
            continue;
        if (p.revents & POLLIN)
            break;
        _exit(PROC_SHIM_NOT_STARTED); /* the end of the pipe: not to start */
    }
    exec_command(a, ok ? NULL : &w);
}

/* Starts the command. Without a workdir or ids to change, with
 * posix_spawn() (a vfork: no copy of the page tables, which on a
 * paravirtualised machine costs the start of every job a millisecond or
 * more); else with fork() and exec_command(). Not for a prepared start
 * (fork_prepared). Returns its pid; exits 126
 * when it cannot be started (its stderr says why). */
static pid_t start_command(const struct shim_args *a)
{
    if (a->workdir != NULL || a->set_ids) {
        pid_t child = fork();
        if (child < 0)
            _exit(126);
        if (child == 0) {
            struct not_startable w;
            if (a->fenced)
                close(PROC_SHIM_FENCE_FD);
            exec_command(a, before_exec(a, &w) ? NULL : &w);
        }
        return child;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    pid_t child = -1;
    int e = posix_spawn_file_actions_init(&fa);
    if (e == 0 && (e = posix_spawnattr_init(&attr)) != 0)
        posix_spawn_file_actions_destroy(&fa);
    if (e == 0) {
        if (a->fenced)
            e = posix_spawn_file_actions_addclose(&fa, PROC_SHIM_FENCE_FD);
        if (e == 0)
            e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        if (e == 0)
            e = posix_spawnattr_setsigmask(&attr, &none);
        if (e == 0)
            e = posix_spawnattr_setsigdefault(&attr, &all);
        if (e == 0)
            e = posix_spawn(&child, a->path, &fa, &attr, a->argv, environ);
        posix_spawnattr_destroy(&attr);
        posix_spawn_file_actions_destroy(&fa);
    }
    if (e != 0)
        not_started("cannot execute ", a->path, strerror(e));
    return child;
}

/* Ends the shim killed by sig (without a core). Never returns. */
_Noreturn static void die_by(int sig)
{
    struct rlimit no_core = {0, 0};
    sigset_t one;
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    kill(getpid(), sig);
    _exit(128 + sig);
}

/* Tells baton on the fence channel fd (-1: none) how and when the command
 * ended (proc.h), then leaves the way it left. Never returns. */
_Noreturn static void report_exit(int fd, int wstatus, int64_t ended_at, int64_t termed_at);

/* Leaves the way the command left. Never returns. */
_Noreturn static void mirror_exit(int wstatus)
{
    if (WIFSIGNALED(wstatus))
        die_by(WTERMSIG(wstatus));
    _exit(WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 1);
}

_Noreturn static void report_exit(int fd, int wstatus, int64_t ended_at, int64_t termed_at)
{
    if (fd >= 0) {
        struct proc_exit_report m = {.magic = PROC_REPORT_MAGIC,
                                     .wstatus = wstatus,
                                     .ended_at = ended_at,
                                     .termed_at = termed_at};
        ssize_t n = send(fd, &m, sizeof m, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)n; /* baton gone, or not reading: it reaps us all the same */
    }
    mirror_exit(wstatus);
}

/* Reads every fence message waiting on fd into *f (the last one wins).
 * Returns false at EOF or error: baton closed its end (it exits, or the
 * run is over); the last fence read stays in force. */
static bool read_fence(int fd, struct proc_fence *f)
{
    for (;;) {
        struct proc_fence m;
        ssize_t n = read(fd, &m, sizeof m);
        if (n == (ssize_t)sizeof m) {
            *f = m;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && errno == EAGAIN;
    }
}

/* Closes every descriptor from `from` up (what baton's libraries opened
 * without O_CLOEXEC must not stay open under the command). */
static void close_from(unsigned from)
{
    if (close_range(from, ~0u, 0) == 0)
        return;
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = from; fd < (max > 0 ? max : 65536); fd++)
        close((int)fd);
}

/* True when a SIGTERM waits, blocked, for this process. */
static bool term_pending(void)
{
    sigset_t pending;
    return sigpending(&pending) == 0 && sigismember(&pending, SIGTERM);
}

int main(int argc, char **argv)
{
    struct shim_args a;
    if (!parse_args(argc, argv, &a)) {
        write_str(2, "baton-shim: started by baton only, never by hand\n");
        return 64;
    }
    int deathsig = PROC_DEATHSIG;
    sigset_t all, wait_for;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    if (prctl(PR_SET_PDEATHSIG, deathsig) != 0 || getppid() != a.parent)
        _exit(125); /* baton is already gone: start nothing */
    close_from(a.prepared ? PROC_SHIM_GO_FD + 1 : a.fenced ? PROC_SHIM_FENCE_FD + 1 : 3);

    sigemptyset(&wait_for);
    sigaddset(&wait_for, SIGCHLD);
    sigaddset(&wait_for, deathsig);
    int sfd = signalfd(-1, &wait_for, SFD_CLOEXEC);
    int ffd = a.fenced ? PROC_SHIM_FENCE_FD : -1;
    struct proc_fence fence = {0, 0};
    int64_t termed_at = 0; /* when the fence TERMed the group */
    if (sfd < 0)
        _exit(a.prepared ? PROC_SHIM_NOT_STARTED : 126); /* cannot watch over a command */

    /* A stop sent to the group before the command exists (baton's TERM at
     * a timeout that came before the shim got this far on a loaded
     * machine, or the service's whole stop) reached the shim alone, which
     * blocks it: the command would never get it. Unprepared, the command
     * is not started and the shim ends as the command would have. Prepared,
     * the command's process is told: it has every signal blocked too, so
     * the TERM waits there for the go and then ends it before its exec
     * (a TERM that comes after the fork reaches it directly). */
    pid_t child;
    bool started = !a.prepared;
    if (a.prepared) {
        child = fork_prepared(&a, sfd);
        if (term_pending())
            kill(child, SIGTERM);
    } else {
        if (term_pending())
            die_by(SIGTERM);
        child = start_command(&a);
    }

    for (;;) {
        /* What baton wrote first: a renewal sent just before the stop
         * point must move the fence before the fence acts. */
        if (ffd >= 0 && !read_fence(ffd, &fence)) {
            close(ffd);
            ffd = -1;
        }
        if (!started && go_ready(PROC_SHIM_GO_FD)) {
            started = true;
            close(PROC_SHIM_GO_FD);
        }
        int64_t now = mono_ns(), next = 0;
        if (!started) {
            /* Not told to go: at the fence's first stop point it never
             * will be (baton sends no go after it). A go that raced the
             * check may have reached the command's process: then it was
             * killed by the fence, not left unstarted. */
            int64_t stop = fence.term_at != 0 ? fence.term_at : fence.kill_at;
            if (stop != 0 && now >= stop) {
                int st;
                kill(child, SIGKILL);
                while (waitpid(child, &st, 0) < 0 && errno == EINTR)
                    ;
                _exit(go_ready(PROC_SHIM_GO_FD) ? 137 : PROC_SHIM_NOT_STARTED);
            }
            next = stop;
        } else {
            if (fence.kill_at != 0 && now >= fence.kill_at) {
                kill(0, SIGKILL); /* the whole group, the shim included */
                _exit(137);
            }
            if (fence.term_at != 0 && now >= fence.term_at && termed_at == 0) {
                kill(-getpid(), SIGTERM); /* the shim blocks it: the command gets it */
                termed_at = now;
            }
            if (fence.term_at != 0 && now < fence.term_at)
                next = fence.term_at;
            else if (fence.kill_at != 0)
                next = fence.kill_at;
        }
        int timeout = -1;
        if (next != 0) {
            int64_t ms = (next - now + 999999) / 1000000;
            timeout = ms > 60000 ? 60000 : (int)ms;
        }
        struct pollfd p[2] = {{.fd = sfd, .events = POLLIN}, {.fd = ffd, .events = POLLIN}};
        if (poll(p, ffd >= 0 ? 2 : 1, timeout) <= 0 || !(p[0].revents & POLLIN))
            continue;
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
            continue;
        if ((int)si.ssi_signo == deathsig) {
            kill(0, SIGKILL); /* the whole group, the shim included */
            _exit(137);
        }
        int st;
        pid_t r = waitpid(child, &st, WNOHANG);
        if (r != child)
            continue;
        if (!started && !go_ready(PROC_SHIM_GO_FD))
            _exit(PROC_SHIM_NOT_STARTED); /* its go pipe ended without a go */
        report_exit(ffd, st, mono_ns(), termed_at);
    }
}
