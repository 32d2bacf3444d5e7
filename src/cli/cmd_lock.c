/* cmd_lock.c -- `baton lock KEY -- CMD [ARG...]`: run a command while
 * holding a lock, like flock(1) across machines.
 *
 * The command runs in its own process group under a shim (proc.h), with
 * BATON_LOCK_KEY and BATON_FENCE in its environment. The lock is renewed
 * every ttl/3. If it is lost, or its validity deadline comes close without
 * a confirmed renewal, the group gets SIGTERM, then SIGKILL just before the
 * deadline: it is dead before the lock could be granted to anyone else.
 * SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded to
 * the group. The lock is released once the command has exited.
 *
 * Exit status: the command's (128+N when killed by signal N), or
 *   75  not acquired within --wait (EX_TEMPFAIL)
 *   70  the lock was lost while the command ran; the command was stopped
 *   69  Redis unreachable or failing (EX_UNAVAILABLE)
 *   66  the password file cannot be read (EX_NOINPUT)
 *   64  usage error, or a URL whose files cannot be used; 126 command not
 *       executable; 127 command not found
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "baton.h"
#include "cli.h"
#include "clock.h"
#include "proc.h"
#include "secrets.h"
#include "tools.h"

static int cmd_lock(int argc, char **argv);

enum { OPT_PASSWORD_FILE = TOOL_OPT_COLOR + 1, OPT_MIN_REPLICAS, OPT_PASS_CREDENTIALS };

static const struct cli_opt opts[] = {
    {TOOL_OPT_URL, "url", "URL",
     "Redis URL: redis://[user:pass@]host[:port][/db], rediss:// (TLS: ?ca=FILE, cert=, key=, "
     "sni=, verify=), unix:///path?db=N&user=U&password=P, "
     "redis-sentinel://h1,h2[/db]?master=NAME, redis-cluster://h1,h2 or "
     "redis-quorum://h1,h2,h3[/db]; given 3, 5, 7 or 9 times (redis:// URLs sharing "
     "credentials and db), a Redlock quorum of those masters (default $BATON_REDIS_URL, else "
     "redis://127.0.0.1:6379/0)"},
    {OPT_PASSWORD_FILE, "password-file", "FILE",
     "the Redis password is FILE's first line (keep FILE mode 0600); else "
     "$BATON_REDIS_PASSWORD, else the URL's ($BATON_SENTINEL_PASSWORD: the sentinels' own)"},
    {OPT_MIN_REPLICAS, "min-replicas", "N",
     "the grant and every renewal count only once N replicas acknowledge them (WAIT), within "
     "the lease (0-16; default 0: off)"},
    {OPT_PASS_CREDENTIALS, "pass-credentials", NULL,
     "let CMD inherit BATON_REDIS_PASSWORD and a BATON_REDIS_URL holding a password (default: "
     "removed from its environment)"},
    {TOOL_OPT_TTL, "ttl", "D", "the lease, renewed every D/3 while CMD runs (default 30s)"},
    {'w', "wait", "D", "wait at most D for the lock (default: forever; 0: try once)"},
    {TOOL_OPT_KILL_GRACE, "kill-grace", "D",
     "SIGTERM-to-SIGKILL grace when the lock is lost (default ttl/5, at most 2s)"},
    {'v', "verbose", NULL, "say on stderr when the lock is acquired and released"},
    {0},
};

static const struct cli_item environment[] = {
    {"BATON_REDIS_URL", "the Redis URL when --url is not given"},
    {"BATON_REDIS_PASSWORD", "the Redis password, unless --password-file is given"},
    {"BATON_SENTINEL_PASSWORD", "the sentinels' password (redis-sentinel:// URLs)"},
    {"BATON_LOCK_KEY", "given to CMD: KEY"},
    {"BATON_FENCE",
     "given to CMD: the fencing token, strictly increasing across all grants of KEY; pass it "
     "to the resource CMD changes so that it can refuse a stale holder"},
    {NULL, NULL},
};

static const struct cli_item signals[] = {
    {"TERM, INT, HUP, QUIT, USR1, USR2",
     "forwarded to CMD's process group; the lock is released once CMD has exited"},
    {NULL, NULL},
};

static const struct cli_section sections[] = {
    {"environment", environment},
    {"signals", signals},
    {NULL, NULL},
};

static const struct cli_exit exits[] = {
    {CLI_EXIT_OK, "CMD ran under the lock and exited 0; otherwise CMD's own exit status (128+N "
                  "when killed by signal N)"},
    {CLI_EXIT_USAGE, "bad command line, or a URL whose files (CA, certificate, key) cannot be "
                     "used (one line on stderr)"},
    {CLI_EXIT_NOINPUT, "the password file cannot be read"},
    {CLI_EXIT_UNAVAILABLE, "Redis unreachable or failing"},
    {CLI_EXIT_LOST,
     "the lock was lost while CMD ran, or could not be confirmed before its deadline; CMD was "
     "stopped"},
    {CLI_EXIT_TEMPFAIL, "not acquired within --wait: someone else holds KEY"},
    {CLI_EXIT_NOEXEC, "CMD is not executable"},
    {CLI_EXIT_NOTFOUND, "CMD was not found"},
    {-1, NULL},
};

const struct cli_cmd cli_cmd_lock = {
    .name = "lock",
    .operands = "KEY -- CMD [ARG...]",
    .summary = "run a command while holding a lock, renewed while it runs",
    .description =
        "Runs CMD (argv as given, no shell, in a new process group) while holding the "
        "distributed lock KEY, like flock(1) across machines; whatever CMD leaves running in "
        "its group is killed when it exits. The lock is renewed every ttl/3 while CMD runs. "
        "If it is lost, or cannot be confirmed before its deadline, CMD's whole process group "
        "gets SIGTERM, then SIGKILL before the lock could pass to anyone else; if baton itself "
        "is killed, CMD dies with it. Waiters are served first come, first served, and are "
        "woken at once when the lock is released.",
    .opts = opts,
    .sections = sections,
    .exits = exits,
    .operand = CLI_OPERAND_KEY_CMD,
    .flags = CLI_STOP_AT_OPERAND,
    .run = cmd_lock,
};

struct lock_args {
    const char *url;
    char *url_copy; /* --url with a password, or joined: our copy (argv's is masked) */
    char *urls[BATON_QUORUM_MAX]; /* each --url (owned copies), when given */
    int nurls;
    char *password_file; /* owned copy */
    int min_replicas;
    bool pass_credentials;
    const char *key;
    char **cmd;
    int64_t ttl_ms;
    int64_t wait_ms; /* -1: forever */
    int64_t kill_grace_ms;
    bool verbose;
};

/* Returns 0, or the exit status after --help, --version or a usage error. */
static int parse_args(int argc, char **argv, struct lock_args *a)
{
    struct cli_parse p;
    int id = 0, rc = 0, nmasks = 0;
    char *masks[BATON_QUORUM_MAX];
    a->url = cli_default_url();
    a->ttl_ms = 30000;
    a->wait_ms = -1;
    a->kill_grace_ms = -1;
    cli_parse_init(&p, &cli_cmd_lock, argc, argv);
    while (rc == 0) {
        id = cli_parse_next(&p);
        if (id < 0)
            break;
        switch (id) {
        case TOOL_OPT_URL:
            if (a->nurls == BATON_QUORUM_MAX) {
                rc = cli_usage("lock", "--url: a quorum has at most %d masters", BATON_QUORUM_MAX);
                break;
            }
            /* A copy of each: several make a quorum (joined below) */
            if ((a->urls[a->nurls] = strdup(p.arg)) == NULL) {
                rc = cli_fail("lock", "out of memory");
                break;
            }
            a->url = a->urls[a->nurls++];
            if (secrets_url_has_password(p.arg)) {
                /* ps shows argv: masked below, once parsed. */
                masks[nmasks++] = (char *)p.arg; /* p.arg points into argv */
                fprintf(stderr, "baton: lock: warning: a password in --url can be read by every "
                                "user of this machine (ps); use --password-file or "
                                "BATON_REDIS_PASSWORD\n");
            }
            break;
        case OPT_PASSWORD_FILE:
            free(a->password_file);
            if ((a->password_file = strdup(p.arg)) == NULL)
                rc = cli_fail("lock", "out of memory");
            break;
        case OPT_MIN_REPLICAS: {
            char *end = NULL;
            errno = 0;
            long n = strtol(p.arg, &end, 10);
            if (errno != 0 || end == p.arg || *end != '\0' || n < 0 || n > 16)
                rc = cli_usage("lock", "--min-replicas \"%s\": expected 0..16", p.arg);
            else
                a->min_replicas = (int)n;
            break;
        }
        case OPT_PASS_CREDENTIALS: a->pass_credentials = true; break;
        case TOOL_OPT_TTL:
            if (!cli_duration("lock", "--ttl", p.arg, false, &a->ttl_ms))
                rc = CLI_EXIT_USAGE;
            else if (a->ttl_ms < 100)
                rc = cli_usage("lock", "--ttl \"%s\": must be at least 100ms", p.arg);
            break;
        case 'w':
            if (!cli_duration("lock", "--wait", p.arg, true, &a->wait_ms))
                rc = CLI_EXIT_USAGE;
            break;
        case TOOL_OPT_KILL_GRACE:
            if (!cli_duration("lock", "--kill-grace", p.arg, true, &a->kill_grace_ms))
                rc = CLI_EXIT_USAGE;
            break;
        case 'v': a->verbose = true; break;
        default: break;
        }
    }
    cli_parse_end(&p);
    /* The passwords in argv: masked with a fixed mask, and the argument
     * area closed up, so that ps shows neither them nor their length. What
     * follows reads argv[] again (pointers into its strings move). */
    secrets_mask_argv(argc, argv, masks, nmasks);
    if (rc != 0)
        return rc;
    if (id == CLI_OPT_EXIT)
        return p.status == CLI_EXIT_OK ? -1 : p.status;
    if (a->nurls > 1) {
        /* --url given several times: the masters of a Redlock quorum */
        char msg[512];
        int bad = -1;
        int jrc = baton_url_join((const char *const *)a->urls, a->nurls, &a->url_copy, &bad, msg,
                                 sizeof msg);
        if (jrc == BATON_ENOMEM)
            return cli_fail("lock", "out of memory");
        if (jrc != BATON_OK) {
            if (bad >= 0)
                return cli_usage("lock", "--url (the %d%s): %s", bad + 1,
                                 bad == 0   ? "st"
                                 : bad == 1 ? "nd"
                                 : bad == 2 ? "rd"
                                            : "th",
                                 msg);
            return cli_usage("lock", "--url: %s", msg);
        }
        a->url = a->url_copy;
    }
    int optind = p.optind;
    /* getopt consumed a "--" right before KEY: `baton lock -- CMD`. */
    bool dashdash = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
    if (optind >= argc)
        return cli_usage("lock", dashdash ? "missing KEY before --" : "missing KEY");
    if (dashdash && (optind + 1 >= argc || strcmp(argv[optind + 1], "--") != 0))
        return cli_usage("lock", "missing KEY before --");
    a->key = argv[optind++];
    if (*a->key == '\0')
        return cli_usage("lock", "KEY must not be empty");
    if (a->key[0] == '-' && strcmp(a->key, "--") != 0)
        return cli_usage("lock", "%s: unknown option", a->key);
    if (strcmp(a->key, "--") == 0)
        return cli_usage("lock", "missing KEY before --");
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (optind >= argc)
        return cli_usage("lock", "missing the command to run after KEY --");
    a->cmd = argv + optind;
    if (a->kill_grace_ms < 0) {
        a->kill_grace_ms = a->ttl_ms / 5;
        if (a->kill_grace_ms > 2000)
            a->kill_grace_ms = 2000;
    }
    if (a->kill_grace_ms >= a->ttl_ms / 2)
        return cli_usage("lock", "--kill-grace must be less than half of --ttl");
    return 0;
}

static void on_lost(struct baton_lock *lk, void *arg)
{
    (void)lk;
    uint64_t one = 1;
    ssize_t n = write(*(int *)arg, &one, sizeof one);
    (void)n;
}

static void format_ms(int64_t ms, char *buf, size_t len)
{
    if (ms % 1000 == 0)
        snprintf(buf, len, "%" PRId64 "s", ms / 1000);
    else
        snprintf(buf, len, "%" PRId64 "ms", ms);
}

/* State of the supervision loop. */
struct watch {
    pid_t pgid;
    bool stopping;   /* SIGTERM sent because of the lock */
    int64_t kill_at; /* SIGKILL time once stopping */
    bool killed;
    int status;          /* the shim's wait status */
    int fence_fd;        /* write end of the shim's fence pipe */
    int64_t fenced_till; /* the lock deadline the shim was last told */
};

/* When the shim stops the command on its own, for a lock valid until
 * deadline: SIGTERM when this process would, SIGKILL 5 ms before the end. */
static void fence_times(int64_t deadline, int64_t grace_ns, int64_t *term_at, int64_t *kill_at)
{
    *term_at = deadline - grace_ns - 5000000;
    *kill_at = deadline - 5000000;
}

/* Tells the shim the lock's deadline when it moved (a renewal): one pipe
 * write per renewal. The shim then stops the command at the deadline even
 * when this process cannot (stopped, frozen, starved). */
static void refence(struct watch *w, int64_t deadline, int64_t grace_ns)
{
    if (deadline == w->fenced_till)
        return;
    int64_t term_at, kill_at;
    fence_times(deadline, grace_ns, &term_at, &kill_at);
    if (proc_fence_send(w->fence_fd, term_at, kill_at) == 0)
        w->fenced_till = deadline;
}

/* Starts stopping the command because the lock is (about to be) gone. */
static void stop_command(struct watch *w, int64_t now, int64_t deadline, int64_t grace_ns)
{
    if (w->stopping)
        return;
    w->stopping = true;
    proc_signal_group(w->pgid, SIGTERM);
    w->kill_at = now + grace_ns;
    if (w->kill_at > deadline - 5000000)
        w->kill_at = deadline - 5000000;
}

/* Supervises the command until it exits. Returns true if the lock was lost
 * (or could not be confirmed) while it ran. */
static bool supervise(struct baton_lock *lk, int sfd, int lostfd, const struct lock_args *a,
                      struct watch *w)
{
    const int64_t grace_ns = a->kill_grace_ms * 1000000;
    /* Renewals move the deadline on the renewal thread; looking every
     * ttl/10 tells the shim well before its old fence could act (a renewal
     * comes ttl/3 after the last, the fence acts ttl/6 or more later). */
    const int64_t look_ns = a->ttl_ms * 100000;
    for (;;) {
        int64_t now = mono_ns();
        int64_t deadline = baton_lock_deadline_ns(lk);
        if (!w->stopping)
            refence(w, deadline, grace_ns);
        if (!w->stopping && (baton_lock_lost(lk) || now >= deadline - grace_ns - 5000000))
            stop_command(w, now, deadline, grace_ns);
        if (w->stopping && !w->killed && now >= w->kill_at) {
            proc_signal_group(w->pgid, SIGKILL);
            w->killed = true;
        }

        int64_t next = w->stopping ? (w->killed ? now + 1000000000 : w->kill_at)
                                   : deadline - grace_ns - 5000000;
        if (!w->stopping && next > now + look_ns)
            next = now + look_ns;
        int timeout = next <= now ? 0 : (int)((next - now + 999999) / 1000000);
        struct pollfd p[2] = {{.fd = sfd, .events = POLLIN}, {.fd = lostfd, .events = POLLIN}};
        if (poll(p, 2, timeout) < 0 && errno != EINTR)
            continue;
        if (p[1].revents & POLLIN) {
            uint64_t v;
            ssize_t n = read(lostfd, &v, sizeof v);
            (void)n;
        }
        if (!(p[0].revents & POLLIN))
            continue;
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
            continue;
        if (si.ssi_signo != SIGCHLD) {
            proc_signal_group(w->pgid, (int)si.ssi_signo);
            continue;
        }
        int st;
        if (waitpid(w->pgid, &st, WNOHANG) == w->pgid) {
            w->status = st;
            /* The shim stops the command at the moment this loop would
             * (its fence): when it acted first, the lock is still why. */
            return w->stopping || baton_lock_lost(lk) ||
                   mono_ns() >= baton_lock_deadline_ns(lk) - grace_ns - 5000000;
        }
    }
}

static int run_locked(struct baton_lock *lk, const struct lock_args *a, const char *path, int sfd,
                      int lostfd)
{
    char fence[64], keyvar[BATON_KEY_MAX + 32];
    snprintf(fence, sizeof fence, "BATON_FENCE=%" PRIu64, baton_lock_fence(lk));
    snprintf(keyvar, sizeof keyvar, "BATON_LOCK_KEY=%s", a->key);
    char *extra[2] = {keyvar, fence};
    char **env = proc_env_build(NULL, extra, 2);
    if (env == NULL)
        return cli_fail("lock", "out of memory");

    /* The shim learns the deadline before the command starts. */
    int fencep[2];
    int err = proc_fence_pipe(fencep);
    if (err != 0) {
        proc_env_free(env);
        return cli_fail("lock", "pipe: %s", strerror(err));
    }
    const int64_t grace_ns = a->kill_grace_ms * 1000000;
    int64_t term_at, kill_at, deadline = baton_lock_deadline_ns(lk);
    fence_times(deadline, grace_ns, &term_at, &kill_at);
    (void)proc_fence_send(fencep[1], term_at, kill_at); /* an empty pipe takes it */
    struct proc_spec spec = {.path = path,
                             .argv = a->cmd,
                             .envp = env,
                             .stdin_fd = 0,
                             .stdout_fd = -1,
                             .stderr_fd = -1,
                             .fenced = true,
                             .fence_fd = fencep[0]};
    struct watch w = {.fence_fd = fencep[1], .fenced_till = deadline};
    err = proc_spawn(&spec, &w.pgid);
    proc_env_free(env);
    close(fencep[0]);
    if (err != 0) {
        close(fencep[1]);
        return cli_fail("lock", "cannot start %s: %s", a->cmd[0], strerror(err));
    }

    bool lost = supervise(lk, sfd, lostfd, a, &w);
    close(w.fence_fd);
    /* Whatever the command left behind in its group goes with it. */
    proc_signal_group(w.pgid, SIGKILL);
    int code = proc_status_code(w.status);
    if (lost) {
        fprintf(stderr, "baton: lock: %s: %s; the command was stopped\n", a->key,
                baton_lock_errstr(lk)[0] != '\0'
                    ? baton_lock_errstr(lk)
                    : "the lease could not be confirmed before its deadline");
        return CLI_EXIT_LOST;
    }
    return code;
}

/* Frees the copies of the URLs (they may hold a password: wiped). */
static void args_free(struct lock_args *a)
{
    char *all[BATON_QUORUM_MAX + 1];
    int n = 0;
    for (int i = 0; i < a->nurls; i++)
        all[n++] = a->urls[i];
    all[n++] = a->url_copy;
    for (int i = 0; i < n; i++)
        if (all[i] != NULL) {
            explicit_bzero(all[i], strlen(all[i]));
            free(all[i]);
        }
    a->nurls = 0;
    free(a->password_file);
    a->password_file = NULL;
    a->url_copy = NULL;
    a->url = NULL;
}

static int cmd_lock(int argc, char **argv)
{
    struct lock_args a = {0};
    struct baton_client *client = NULL;
    struct baton_lock *lk = NULL;
    char path[4096];
    int sfd = -1, lostfd = -1;
    struct secrets sec = {0};
    char serr[512];
    int rc = parse_args(argc, argv, &a);
    if (rc != 0) {
        args_free(&a);
        return rc < 0 ? CLI_EXIT_OK : rc;
    }
    if (strlen(a.key) > BATON_KEY_MAX) {
        args_free(&a);
        return cli_usage("lock", "KEY is too long (at most %d bytes)", BATON_KEY_MAX);
    }

    int perr = proc_resolve(a.cmd[0], path, sizeof path);
    if (perr == ENOENT) {
        fprintf(stderr, "baton: lock: %s: command not found\n", a.cmd[0]);
        args_free(&a);
        return CLI_EXIT_NOTFOUND;
    }
    if (perr != 0) {
        fprintf(stderr, "baton: lock: %s: %s\n", a.cmd[0], strerror(perr));
        args_free(&a);
        return CLI_EXIT_NOEXEC;
    }
    char shim_err[512];
    if (proc_shim_check(shim_err, sizeof shim_err) != 0) {
        fprintf(stderr, "baton: lock: %s\n", shim_err);
        args_free(&a);
        return CLI_EXIT_NOEXEC;
    }

    /* Block the signals we handle before libbaton starts its threads, so
     * that they all reach the signalfd. */
    sigset_t mask;
    sigemptyset(&mask);
    int handled[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++)
        sigaddset(&mask, handled[i]);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    sfd = signalfd(-1, &mask, SFD_CLOEXEC);
    lostfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (sfd < 0 || lostfd < 0) {
        rc = cli_fail("lock", "signalfd/eventfd: %s", strerror(errno));
        goto out;
    }

    /* The password: --password-file, else the environment, else the URL.
     * Then neither reaches CMD unless asked. */
    if (secrets_load(a.password_file, NULL, &sec, serr, sizeof serr) != 0) {
        fprintf(stderr, "baton: lock: %s\n", serr);
        rc = CLI_EXIT_NOINPUT;
        goto out;
    }
    for (int i = 0; i < sec.nwarnings; i++)
        fprintf(stderr, "baton: lock: warning: %s\n", sec.warning[i]);
    if (a.url_copy == NULL && (a.url_copy = strdup(a.url)) == NULL) {
        rc = cli_fail("lock", "out of memory");
        goto out;
    }
    a.url = a.url_copy; /* BATON_REDIS_URL's value may go with the scrub */
    if (!a.pass_credentials)
        secrets_scrub_env();
    /* A password stays in memory (for AUTH on a reconnection): CMD, of the
     * same user, may not read it there (secrets.h). */
    if (secrets_held(&sec, a.url) && secrets_hide_process() != 0)
        fprintf(stderr, "baton: lock: warning: cannot make this process non-dumpable: %s\n",
                strerror(errno));
    struct baton_client_opts copts = {.connect_timeout_ms = 2000,
                                      .command_timeout_ms = 2000,
                                      .password = sec.password,
                                      .sentinel_password = sec.sentinel_password,
                                      .min_replicas = a.min_replicas};
    rc = cli_client_new("lock", a.url, &copts, &client);
    secrets_clear(&sec);
    if (rc != BATON_OK) {
        fprintf(stderr, "baton: lock: %s\n", baton_client_errstr(client));
        rc = rc == BATON_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_UNAVAILABLE;
        goto out;
    }

    struct baton_lock_opts lopts = {
        .ttl_ms = a.ttl_ms,
        .max_wait_ms = a.wait_ms < 0    ? BATON_WAIT_FOREVER
                       : a.wait_ms == 0 ? BATON_NO_WAIT
                                        : a.wait_ms,
        .auto_renew = true,
        .on_lost = on_lost,
        .on_lost_arg = &lostfd,
    };
    rc = baton_lock_acquire(client, a.key, &lopts, &lk);
    if (rc == BATON_ETIMEDOUT || rc == BATON_ETAKEN) {
        char wait[32];
        format_ms(a.wait_ms, wait, sizeof wait);
        if (a.wait_ms == 0)
            fprintf(stderr, "baton: lock: %s: held by another owner\n", a.key);
        else
            fprintf(stderr, "baton: lock: %s: not acquired within %s\n", a.key, wait);
        rc = CLI_EXIT_TEMPFAIL;
        goto out;
    }
    if (rc != BATON_OK) {
        fprintf(stderr, "baton: lock: %s: %s\n", a.key,
                baton_client_errstr(client)[0] ? baton_client_errstr(client) : baton_strerror(rc));
        rc = CLI_EXIT_UNAVAILABLE;
        goto out;
    }
    if (a.verbose)
        fprintf(stderr, "baton: lock: acquired %s (fence %" PRIu64 ")\n", a.key,
                baton_lock_fence(lk));

    rc = run_locked(lk, &a, path, sfd, lostfd);

    if (rc != CLI_EXIT_LOST) {
        int r = baton_lock_release(lk);
        if (r == BATON_ELOST) {
            fprintf(stderr, "baton: lock: %s: %s\n", a.key, baton_lock_errstr(lk));
            rc = CLI_EXIT_LOST;
        } else if (r != BATON_OK) {
            /* The command finished under the lock; the lease will expire. */
            fprintf(stderr, "baton: lock: %s: release failed (%s); it expires with its lease\n",
                    a.key, baton_lock_errstr(lk));
        } else if (a.verbose) {
            fprintf(stderr, "baton: lock: released %s\n", a.key);
        }
    }
out:
    secrets_clear(&sec);
    args_free(&a);
    baton_lock_free(lk);
    baton_client_free(client);
    if (sfd >= 0)
        close(sfd);
    if (lostfd >= 0)
        close(lostfd);
    return rc;
}
