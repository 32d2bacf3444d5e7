/* jobcmd.c -- see jobcmd.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "jobcmd.h"
#include "yamlx.h"

extern char **environ;

void job_strv_free(char **v)
{
    if (v == NULL)
        return;
    for (char **p = v; *p != NULL; p++)
        free(*p);
    free(v);
}

size_t job_strv_len(char **v)
{
    size_t n = 0;

    while (v != NULL && v[n] != NULL)
        n++;
    return n;
}

int job_shell_check(const char *s, char *msg, size_t msglen)
{
    size_t n = strlen(s);

    if (n < JOB_ARG_STRLEN)
        return 0;
    snprintf(msg, msglen,
             "%zu bytes; /bin/sh -c takes the command line as one argument of exec, at most %d "
             "bytes (MAX_ARG_STRLEN): put the script in a file and run that",
             n, JOB_ARG_STRLEN - 1);
    return -1;
}

int job_argv_read(const struct yamlx_diag *d, const struct yamlx_node *n, const char *what,
                  bool allow_empty, char ***out)
{
    char **v;

    *out = NULL;
    if (n->nitems == 0) {
        if (allow_empty)
            return 0;
        return yamlx_errorf(d, n, "%s: empty (give at least the program)", what);
    }
    v = calloc(n->nitems + 1, sizeof *v);
    if (v == NULL)
        return yamlx_errorf(d, NULL, "out of memory");
    for (size_t i = 0; i < n->nitems; i++) {
        const struct yamlx_node *it = n->items[i];
        char w[256];

        snprintf(w, sizeof w, "%s[%zu]", what, i);
        if (yamlx_expect_scalar(d, it, w, "a string") != 0)
            goto out_free;
        if (i == 0 && it->len == 0) {
            yamlx_errorf(d, it, "%s: the program must not be empty", w);
            goto out_free;
        }
        if (it->len >= JOB_ARG_STRLEN) {
            yamlx_errorf(d, it,
                         "%s: %zu bytes; exec takes at most %d bytes in one argument "
                         "(MAX_ARG_STRLEN)",
                         w, it->len, JOB_ARG_STRLEN - 1);
            goto out_free;
        }
        v[i] = strdup(it->str);
        if (v[i] == NULL) {
            yamlx_errorf(d, NULL, "out of memory");
            goto out_free;
        }
    }
    *out = v;
    return 0;
out_free:
    job_strv_free(v);
    return -1;
}

/* ---- hook commands: [argv...] or {shell: "..."} ---- */

bool job_cmd_set(const struct job_cmd *c)
{
    return c != NULL && (c->argv != NULL || c->shell != NULL);
}

void job_cmd_clear(struct job_cmd *c)
{
    job_strv_free(c->argv);
    free(c->shell);
    c->argv = NULL;
    c->shell = NULL;
}

int job_cmd_copy(struct job_cmd *dst, const struct job_cmd *src)
{
    struct job_cmd c = {NULL, NULL};
    size_t n = 0;

    if (src != NULL && src->argv != NULL) {
        while (src->argv[n] != NULL)
            n++;
        c.argv = calloc(n + 1, sizeof *c.argv);
        if (c.argv == NULL)
            return -1;
        for (size_t i = 0; i < n; i++) {
            c.argv[i] = strdup(src->argv[i]);
            if (c.argv[i] == NULL)
                goto fail;
        }
    }
    if (src != NULL && src->shell != NULL) {
        c.shell = strdup(src->shell);
        if (c.shell == NULL)
            goto fail;
    }
    job_cmd_clear(dst);
    *dst = c;
    return 0;
fail:
    job_cmd_clear(&c);
    return -1;
}

int job_cmd_read(const struct yamlx_diag *d, const struct yamlx_node *n, const char *what,
                 struct job_cmd *out)
{
    static const char shape[] =
        "a command like [\"/usr/local/bin/notify\", \"--job\"] or {shell: \"...\"} ([] for none)";
    struct job_cmd c = {NULL, NULL};
    char q[96];

    if (n->kind == YAMLX_SEQ) {
        if (job_argv_read(d, n, what, true, &c.argv) != 0)
            return -1;
    } else if (n->kind == YAMLX_MAP) {
        const struct yamlx_node *sh = NULL;
        char w[256], m[256];

        for (size_t i = 0; i < n->npairs; i++) {
            if (strcmp(n->pairs[i].key->str, "shell") != 0)
                return yamlx_errorf(d, n->pairs[i].key, "%s: unknown key %s (expected %s)", what,
                                    yamlx_quote(n->pairs[i].key->str, q, sizeof q), shape);
            sh = n->pairs[i].value;
        }
        if (sh == NULL)
            return yamlx_errorf(d, n, "%s: expected %s, got an empty mapping", what, shape);
        snprintf(w, sizeof w, "%s.shell", what);
        if (yamlx_expect_scalar(d, sh, w, "a command line") != 0)
            return -1;
        if (sh->len == 0)
            return yamlx_errorf(d, sh, "%s: must not be empty", w);
        if (job_shell_check(sh->str, m, sizeof m) != 0)
            return yamlx_errorf(d, sh, "%s: %s", w, m);
        c.shell = strdup(sh->str);
        if (c.shell == NULL)
            return yamlx_errorf(d, NULL, "out of memory");
    } else if (n->null) {
        return yamlx_errorf(d, n, "%s: missing value (expected %s)", what, shape);
    } else {
        return yamlx_errorf(d, n, "%s: expected %s, got %s", what, shape, yamlx_kind_name(n));
    }
    job_cmd_clear(out);
    *out = c;
    return 0;
}

/* The bytes exec needs for the strings v (each with its NUL and pointer). */
static size_t strv_exec_bytes(char *const *v)
{
    size_t b = 0;

    for (size_t i = 0; v != NULL && v[i] != NULL; i++)
        b += strlen(v[i]) + 1 + sizeof(char *);
    return b;
}

/* The bytes exec needs for a command: its argv, or /bin/sh -c LINE. */
static size_t cmd_exec_bytes(char *const *argv, const char *shell)
{
    if (argv != NULL)
        return strv_exec_bytes(argv);
    if (shell != NULL)
        return sizeof "/bin/sh" + sizeof "-c" + strlen(shell) + 1 + 3 * sizeof(char *);
    return 0;
}

/* What exec takes on this machine (fs/exec.c): a quarter of the stack
 * limit, capped at 6 MiB, at least 128 KiB. */
static size_t exec_limit(void)
{
    struct rlimit rl;
    size_t lim = EXEC_LIMIT_CAP;

    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 4 < lim)
        lim = (size_t)(rl.rlim_cur / 4);
    return lim < EXEC_LIMIT_MIN ? EXEC_LIMIT_MIN : lim;
}

int job_exec_check(const struct job *j, char *msg, size_t msglen)
{
    size_t cmd = cmd_exec_bytes(j->argv, j->shell), env = strv_exec_bytes(j->env);
    size_t hooks[2] = {cmd_exec_bytes(j->on_failure.argv, j->on_failure.shell),
                       cmd_exec_bytes(j->on_success.argv, j->on_success.shell)};
    const char *which = "its command";
    size_t need, limit, base = strv_exec_bytes(environ);

    for (int i = 0; i < 2; i++)
        if (hooks[i] > cmd) {
            cmd = hooks[i];
            which = i == 0 ? "its on_failure hook" : "its on_success hook";
        }
    need = cmd + env;
    if (need > JOB_EXEC_MAX) {
        snprintf(msg, msglen,
                 "%s and env take %zu bytes for exec (each string with its NUL and pointer); a "
                 "job takes at most %d (1 MiB)",
                 which, need, JOB_EXEC_MAX);
        return -1;
    }
    limit = exec_limit();
    if (need + base + JOB_EXEC_RESERVE > limit) {
        snprintf(msg, msglen,
                 "%s and env take %zu bytes for exec; this machine's exec takes %zu (a quarter "
                 "of the stack limit), less baton's environment (%zu) and %d for what baton adds",
                 which, need, limit, base, JOB_EXEC_RESERVE);
        return -1;
    }
    return 0;
}
