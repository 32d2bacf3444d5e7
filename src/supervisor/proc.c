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
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* The shim, after fork: never returns. */
static void run_shim(const struct proc_spec *spec, pid_t parent, int deathsig)
{
    sigset_t all, wait_for;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    setpgid(0, 0);
    if (prctl(PR_SET_PDEATHSIG, deathsig) != 0 || getppid() != parent)
        _exit(125); /* baton is already gone: start nothing */

    pid_t child = fork();
    if (child < 0)
        _exit(126);
    if (child == 0)
        exec_command(spec);

    sigemptyset(&wait_for);
    sigaddset(&wait_for, SIGCHLD);
    sigaddset(&wait_for, deathsig);
    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(&wait_for, &si);
        if (sig == deathsig) {
            kill(0, SIGKILL); /* the whole group, the shim included */
            _exit(137);
        }
        if (sig != SIGCHLD)
            continue;
        int st;
        pid_t r = waitpid(child, &st, WNOHANG);
        if (r == child)
            mirror_exit(st);
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

static bool same_name(const char *a, const char *b)
{
    while (*a != '\0' && *a != '=' && *a == *b) {
        a++;
        b++;
    }
    return *a == '=' && *b == '=';
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
        bool dup = false; /* a later duplicate in extra wins */
        for (size_t j = k + 1; j < nextra && !dup; j++)
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
