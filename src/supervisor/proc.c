/* proc.c -- see proc.h. The shim itself is its own program
 * (shim/shim.c), started with posix_spawn(): baton's address space is
 * never copied. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"

extern char **environ;

int proc_deathsig(void)
{
    return PROC_DEATHSIG;
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

int proc_fence_pipe(int fds[2])
{
    return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) != 0 ? errno
                                                                                           : 0;
}

int proc_exit_report_read(int fd, struct proc_exit_report *out)
{
    for (;;) {
        struct proc_exit_report m;
        ssize_t n = recv(fd, &m, sizeof m, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return EAGAIN; /* the shim's end is closed: no report */
        if (n == (ssize_t)sizeof m && m.magic == PROC_REPORT_MAGIC) {
            *out = m;
            return 0;
        }
        /* not a report: look at the next message */
    }
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
        return n < 0 ? errno : EIO; /* a message is sent whole or not at all */
    }
}

int proc_go_pipe(int fds[2])
{
    return pipe2(fds, O_CLOEXEC) != 0 ? errno : 0;
}

int proc_go(int fd)
{
    for (;;) {
        ssize_t n = write(fd, "g", 1);
        if (n == 1)
            return 0;
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 ? errno : EIO;
    }
}

int proc_shim_path(char *out, size_t len)
{
    /* Beside the running baton (a build tree), at the place relative to it
     * where `cmake --install` puts it (an installed tree, whatever its
     * prefix), then at the configured path. */
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            *slash = '\0';
            int w = snprintf(out, len, "%s/baton-shim", self);
            if (w > 0 && (size_t)w < len && is_executable(out))
                return 0;
            w = snprintf(out, len, "%s/%s/baton-shim", self, BATON_SHIM_FROM_BIN);
            if (w > 0 && (size_t)w < len && is_executable(out))
                return 0;
        }
    }
    int w = snprintf(out, len, "%s/baton-shim", BATON_LIBEXECDIR);
    if (w <= 0 || (size_t)w >= len)
        return ENAMETOOLONG;
    if (access(out, F_OK) != 0)
        return ENOENT;
    return is_executable(out) ? 0 : EACCES;
}

int proc_shim_check(char *err, size_t len)
{
    char path[PATH_MAX];
    int e = proc_shim_path(path, sizeof path);
    if (e != 0)
        snprintf(err, len,
                 "cannot find baton-shim (the process baton runs each command under) beside "
                 "the baton executable, in %s beside it, or in %s: %s",
                 BATON_SHIM_FROM_BIN, BATON_LIBEXECDIR, strerror(e));
    return e;
}

/* The file actions that give the shim its descriptors: 0-2 the command's,
 * PROC_SHIM_FENCE_FD the fence pipe, PROC_SHIM_GO_FD the go pipe. */
static int shim_files(const struct proc_spec *spec, posix_spawn_file_actions_t *fa)
{
    int e = spec->stdin_fd >= 0 ? posix_spawn_file_actions_adddup2(fa, spec->stdin_fd, 0)
                                : posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
    if (e == 0 && spec->stdout_fd >= 0)
        e = posix_spawn_file_actions_adddup2(fa, spec->stdout_fd, 1);
    if (e == 0 && spec->stderr_fd >= 0)
        e = posix_spawn_file_actions_adddup2(fa, spec->stderr_fd, 2);
    if (e == 0 && spec->fenced)
        e = posix_spawn_file_actions_adddup2(fa, spec->fence_fd, PROC_SHIM_FENCE_FD);
    if (e == 0 && spec->prepared)
        e = posix_spawn_file_actions_adddup2(fa, spec->go_fd, PROC_SHIM_GO_FD);
    return e;
}

int proc_spawn(const struct proc_spec *spec, pid_t *pid)
{
    char shim[PATH_MAX], parent[24], uid[24], gid[24];
    int e = proc_shim_path(shim, sizeof shim);
    if (e != 0)
        return e;
    size_t nargs = 0;
    while (spec->argv[nargs] != NULL)
        nargs++;
    char **argv = calloc(nargs + 10, sizeof *argv);
    if (argv == NULL)
        return ENOMEM;
    snprintf(parent, sizeof parent, "%ld", (long)getpid());
    snprintf(uid, sizeof uid, "%lu", (unsigned long)(spec->set_ids ? spec->uid : 0));
    snprintf(gid, sizeof gid, "%lu", (unsigned long)(spec->set_ids ? spec->gid : 0));
    char flags[4] = "", *f = flags;
    if (spec->prepared && !spec->fenced)
        return EINVAL; /* a prepared shim waits fenced */
    if (spec->fenced)
        *f++ = 'f';
    if (spec->prepared)
        *f++ = 'g';
    if (spec->set_ids)
        *f++ = 'u';
    *f = '\0';
    size_t k = 0;
    argv[k++] = "baton-shim";
    argv[k++] = PROC_SHIM_PROTOCOL;
    argv[k++] = parent;
    argv[k++] = flags;
    argv[k++] = (char *)(spec->workdir != NULL ? spec->workdir : "");
    argv[k++] = (char *)(spec->set_ids && spec->user != NULL ? spec->user : "");
    argv[k++] = uid;
    argv[k++] = gid;
    argv[k++] = (char *)spec->path;
    for (size_t i = 0; i < nargs; i++)
        argv[k++] = spec->argv[i];
    argv[k] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t all, dfl;
    sigfillset(&all);
    sigfillset(&dfl);
    sigdelset(&dfl, SIGKILL);
    sigdelset(&dfl, SIGSTOP);
    e = posix_spawn_file_actions_init(&fa);
    if (e != 0)
        goto out_free_argv;
    e = posix_spawnattr_init(&attr);
    if (e != 0)
        goto out_free_fa;
    /* Its own process group, every signal blocked (it waits with a
     * signalfd) and every disposition at its default. */
    e = shim_files(spec, &fa);
    if (e == 0)
        e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                POSIX_SPAWN_SETSIGDEF);
    if (e == 0)
        e = posix_spawnattr_setpgroup(&attr, 0);
    if (e == 0)
        e = posix_spawnattr_setsigmask(&attr, &all);
    if (e == 0)
        e = posix_spawnattr_setsigdefault(&attr, &dfl);
    pid_t p = -1;
    if (e == 0)
        e = posix_spawn(&p, shim, &fa, &attr, argv, spec->envp != NULL ? spec->envp : environ);
    if (e == 0)
        *pid = p;
    posix_spawnattr_destroy(&attr);
out_free_fa:
    posix_spawn_file_actions_destroy(&fa);
out_free_argv:
    free(argv);
    return e;
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

/* A variable's name in extra, for sorting: NAME of "NAME=value" or of a
 * bare "NAME", and where it was. */
struct env_name {
    const char *s;
    size_t len, idx;
};

static int env_name_cmp(const struct env_name *x, const char *s, size_t len)
{
    int c = memcmp(x->s, s, x->len < len ? x->len : len);
    if (c != 0)
        return c;
    return x->len < len ? -1 : x->len > len;
}

static int env_name_order(const void *a, const void *b)
{
    const struct env_name *x = a, *y = b;
    int c = env_name_cmp(x, y->s, y->len);
    if (c != 0)
        return c;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* True when the name [s, s+len) is in the sorted names. */
static bool env_name_find(const struct env_name *v, size_t n, const char *s, size_t len)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = env_name_cmp(&v[mid], s, len);
        if (c == 0)
            return true;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* Sorting the names of extra keeps this O((base + extra) log extra): a
 * job with a large env: starts as fast as a small one. */
char **proc_env_build(char *const *base, char *const *extra, size_t nextra)
{
    if (base == NULL)
        base = environ;
    size_t nbase = 0;
    while (base[nbase] != NULL)
        nbase++;
    char **env = calloc(nbase + nextra + 1, sizeof *env);
    struct env_name *names = calloc(nextra + 1, sizeof *names);
    bool *last = calloc(nextra + 1, sizeof *last);
    if (env == NULL || names == NULL || last == NULL)
        goto fail;
    for (size_t k = 0; k < nextra; k++)
        names[k] = (struct env_name){extra[k], strcspn(extra[k], "="), k};
    qsort(names, nextra, sizeof *names, env_name_order);
    for (size_t i = 0; i < nextra; i++) /* a later duplicate in extra wins */
        last[names[i].idx] =
            i + 1 == nextra || env_name_cmp(&names[i], names[i + 1].s, names[i + 1].len) != 0;
    size_t n = 0;
    for (size_t i = 0; i < nbase; i++) {
        const char *eq = strchr(base[i], '=');
        if (eq == NULL || env_name_find(names, nextra, base[i], (size_t)(eq - base[i])))
            continue; /* replaced (or removed) by extra */
        if ((env[n++] = strdup(base[i])) == NULL)
            goto fail;
    }
    for (size_t k = 0; k < nextra; k++) /* a bare NAME only removes */
        if (last[k] && strchr(extra[k], '=') != NULL && (env[n++] = strdup(extra[k])) == NULL)
            goto fail;
    free(names);
    free(last);
    return env;
fail:
    free(names);
    free(last);
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
