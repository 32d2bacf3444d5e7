/* proc.c -- see proc.h. Between fork and exec only async-signal-safe calls
 * are made: baton's processes may be multi-threaded (libbaton's threads). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"

extern char **environ;

int proc_deathsig(void)
{
    return SIGRTMIN + 3;
}

static bool is_executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int proc_resolve(const char *name, char *out, size_t len)
{
    if (name == NULL || *name == '\0')
        return ENOENT;
    if (strchr(name, '/') != NULL) {
        if (strlen(name) >= len)
            return ENAMETOOLONG;
        memcpy(out, name, strlen(name) + 1);
        if (access(name, F_OK) != 0)
            return ENOENT;
        return is_executable(name) ? 0 : EACCES;
    }
    const char *path = getenv("PATH");
    if (path == NULL || *path == '\0')
        path = "/usr/local/bin:/usr/bin:/bin";
    int found_noexec = 0;
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t dlen = colon ? (size_t)(colon - p) : strlen(p);
        int n = dlen == 0 ? snprintf(out, len, "%s", name)
                          : snprintf(out, len, "%.*s/%s", (int)dlen, p, name);
        if (n > 0 && (size_t)n < len) {
            if (is_executable(out))
                return 0;
            if (access(out, F_OK) == 0)
                found_noexec = 1;
        }
        if (colon == NULL)
            break;
        p = colon + 1;
    }
    return found_noexec ? EACCES : ENOENT;
}

static void write_str(int fd, const char *s)
{
    ssize_t n = write(fd, s, strlen(s));
    (void)n;
}

/* In the command's process, after fork: never returns. */
static void exec_command(const struct proc_spec *spec)
{
    sigset_t none;
    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL); /* fails harmlessly for KILL, STOP and glibc's own */
    if (spec->stdin_fd >= 0) {
        if (dup2(spec->stdin_fd, 0) < 0)
            _exit(126);
    } else {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0 || dup2(fd, 0) < 0)
            _exit(126);
        if (fd != 0)
            close(fd);
    }
    if (spec->stdout_fd >= 0 && dup2(spec->stdout_fd, 1) < 0)
        _exit(126);
    if (spec->stderr_fd >= 0 && dup2(spec->stderr_fd, 2) < 0)
        _exit(126);
    if (spec->workdir != NULL && chdir(spec->workdir) != 0) {
        /* strerrordesc_np: a static string, no locale, safe after fork. */
        const char *why = strerrordesc_np(errno);
        write_str(2, "baton: cannot change to the job's workdir ");
        write_str(2, spec->workdir);
        write_str(2, ": ");
        write_str(2, why != NULL ? why : "unknown error");
        write_str(2, "\n");
        _exit(126);
    }
    if (spec->set_ids) {
        if (initgroups(spec->user, spec->gid) != 0 || setgid(spec->gid) != 0 ||
            setuid(spec->uid) != 0) {
            write_str(2, "baton: cannot switch to the job's user\n");
            _exit(126);
        }
    }
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(spec->path, spec->argv, spec->envp);
    write_str(2, "baton: cannot execute ");
    write_str(2, spec->path);
    write_str(2, "\n");
    _exit(126);
}

/* Leaves the way the command left. Never returns. */
static void mirror_exit(int wstatus)
{
    if (WIFSIGNALED(wstatus)) {
        int sig = WTERMSIG(wstatus);
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
    _exit(WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 1);
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
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

/* Closes every descriptor from 3 up but those in keep[0..n) (n <= 4). The
 * shim does not exec: without this it would hold baton's Redis sockets and
 * the other runs' pipes open for as long as its command runs. */
static void close_others(int *keep, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: n is tiny */
        for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            int t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    unsigned lo = 3;
    for (int i = 0; i <= n; i++) {
        unsigned hi = i < n ? (unsigned)keep[i] : ~0u;
        if (i < n && keep[i] < 3)
            continue;
        if (hi > lo && close_range(lo, hi - 1, 0) != 0) {
            long max = sysconf(_SC_OPEN_MAX);
            for (long fd = lo; fd < (hi == ~0u ? (max > 0 ? max : 65536) : (long)hi); fd++)
                close((int)fd);
        }
        lo = hi + 1;
        if (hi == ~0u)
            break;
    }
}

/* The shim, after fork: never returns. It waits for the command (SIGCHLD),
 * for baton's death (deathsig) and, with a fence, for the end of what
 * covers the run. Only async-signal-safe calls. */
static void run_shim(const struct proc_spec *spec, pid_t parent, int deathsig)
{
    sigset_t all, wait_for;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    setpgid(0, 0);
    if (prctl(PR_SET_PDEATHSIG, deathsig) != 0 || getppid() != parent)
        _exit(125); /* baton is already gone: start nothing */
    int keep[4], nkeep = 0;
    if (spec->stdin_fd >= 0)
        keep[nkeep++] = spec->stdin_fd;
    if (spec->stdout_fd >= 0)
        keep[nkeep++] = spec->stdout_fd;
    if (spec->stderr_fd >= 0)
        keep[nkeep++] = spec->stderr_fd;
    if (spec->fenced)
        keep[nkeep++] = spec->fence_fd;
    close_others(keep, nkeep);

    pid_t child = fork();
    if (child < 0)
        _exit(126);
    if (child == 0) {
        if (spec->fenced)
            close(spec->fence_fd);
        exec_command(spec);
    }

    sigemptyset(&wait_for);
    sigaddset(&wait_for, SIGCHLD);
    sigaddset(&wait_for, deathsig);
    int sfd = signalfd(-1, &wait_for, SFD_CLOEXEC);
    int ffd = spec->fenced ? spec->fence_fd : -1;
    struct proc_fence fence = {0, 0};
    bool termed = false;
    if (sfd < 0) {
        kill(0, SIGKILL); /* cannot watch over the command: it does not run */
        _exit(137);
    }
    for (;;) {
        /* What baton wrote first: a renewal sent just before the stop
         * point must move the fence before the fence acts. */
        if (ffd >= 0 && !read_fence(ffd, &fence)) {
            close(ffd);
            ffd = -1;
        }
        int64_t now = mono_ns(), next = 0;
        if (fence.kill_at != 0 && now >= fence.kill_at) {
            kill(0, SIGKILL); /* the whole group, the shim included */
            _exit(137);
        }
        if (fence.term_at != 0 && now >= fence.term_at && !termed) {
            kill(-getpid(), SIGTERM); /* the shim blocks it: the command gets it */
            termed = true;
        }
        if (fence.term_at != 0 && now < fence.term_at)
            next = fence.term_at;
        else if (fence.kill_at != 0)
            next = fence.kill_at;
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
        if (r == child)
            mirror_exit(st);
    }
}

int proc_fence_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) != 0)
        return errno;
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    fcntl(fds[1], F_SETFL, O_NONBLOCK);
    return 0;
}

int proc_fence_send(int fd, int64_t term_at, int64_t kill_at)
{
    struct proc_fence m = {term_at, kill_at};
    for (;;) {
        ssize_t n = write(fd, &m, sizeof m);
        if (n == (ssize_t)sizeof m)
            return 0;
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 ? errno : EIO; /* a pipe write of 16 bytes is never partial */
    }
}

int proc_spawn(const struct proc_spec *spec, pid_t *pid)
{
    pid_t parent = getpid();
    int deathsig = proc_deathsig();
    pid_t p = fork();
    if (p < 0)
        return errno;
    if (p == 0)
        run_shim(spec, parent, deathsig);
    /* Also set the group from here, so that it exists whichever of parent
     * and shim runs first (the usual job-control race). */
    setpgid(p, p);
    *pid = p;
    return 0;
}

int proc_signal_group(pid_t pgid, int sig)
{
    if (pgid <= 1)
        return EINVAL;
    if (kill(-pgid, sig) != 0 && errno != ESRCH)
        return errno;
    return 0;
}

int proc_status_code(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return 1;
}

/* True when the variable a ("NAME=value") is named by b ("NAME=value" or
 * a bare "NAME"). */
static bool same_name(const char *a, const char *b)
{
    while (*a != '\0' && *a != '=' && *a == *b) {
        a++;
        b++;
    }
    return *a == '=' && (*b == '=' || *b == '\0');
}

char **proc_env_build(char *const *base, char *const *extra, size_t nextra)
{
    if (base == NULL)
        base = environ;
    size_t nbase = 0;
    while (base[nbase] != NULL)
        nbase++;
    char **env = calloc(nbase + nextra + 1, sizeof *env);
    if (env == NULL)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < nbase; i++) {
        bool replaced = false;
        for (size_t k = 0; k < nextra && !replaced; k++)
            replaced = same_name(base[i], extra[k]);
        if (!replaced && strchr(base[i], '=') != NULL && (env[n++] = strdup(base[i])) == NULL)
            goto fail;
    }
    for (size_t k = 0; k < nextra; k++) {
        bool dup = strchr(extra[k], '=') == NULL; /* a bare NAME only removes */
        for (size_t j = k + 1; j < nextra && !dup; j++) /* a later duplicate in extra wins */
            dup = same_name(extra[k], extra[j]);
        if (!dup && (env[n++] = strdup(extra[k])) == NULL)
            goto fail;
    }
    return env;
fail:
    proc_env_free(env);
    return NULL;
}

void proc_env_free(char **env)
{
    if (env == NULL)
        return;
    for (size_t i = 0; env[i] != NULL; i++)
        free(env[i]);
    free(env);
}
