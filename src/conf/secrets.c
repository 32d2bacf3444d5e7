/* secrets.c -- see secrets.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "baton.h"
#include "secrets.h"

#define SECRET_MAX 4096

extern char **environ;

static void wipe(char *s)
{
    if (s != NULL) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

/* Reads the first line of path into *out. Returns 0 or -1 with err. */
static int read_file(const char *what, const char *path, char **out, struct secrets *s, char *err,
                     size_t errlen)
{
    char buf[SECRET_MAX + 1];
    struct stat st;
    size_t len = 0;
    int rc = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

    if (fd < 0) {
        snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s %s: not a regular file", what, path);
        goto out;
    }
    if ((st.st_mode & 077) != 0 && s->nwarnings < SECRETS_WARN_MAX)
        snprintf(s->warning[s->nwarnings++], sizeof s->warning[0],
                 "%s %s can be read by other users (mode %04o): chmod 600 it", what, path,
                 (unsigned)(st.st_mode & 07777));
    while (len < SECRET_MAX) {
        ssize_t n = read(fd, buf + len, SECRET_MAX - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    if (buf[0] == '\0') {
        snprintf(err, errlen, "%s %s: empty (the password is its first line)", what, path);
        goto out;
    }
    if ((*out = strdup(buf)) == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    rc = 0;
out:
    explicit_bzero(buf, sizeof buf);
    close(fd);
    return rc;
}

static int from_env(const char *name, char **out, char *err, size_t errlen)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0')
        return 0;
    if ((*out = strdup(v)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static bool given(const char *path)
{
    return path != NULL && *path != '\0' && strcmp(path, "none") != 0;
}

int secrets_load(const char *password_file, const char *sentinel_password_file, struct secrets *s,
                 char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (given(password_file)) {
        if (read_file("password file", password_file, &s->password, s, err, errlen) != 0)
            return -1;
    } else if (from_env("BATON_REDIS_PASSWORD", &s->password, err, errlen) != 0) {
        return -1;
    }
    if (given(sentinel_password_file)) {
        if (read_file("sentinel password file", sentinel_password_file, &s->sentinel_password, s,
                      err, errlen) != 0)
            return -1;
    } else if (from_env("BATON_SENTINEL_PASSWORD", &s->sentinel_password, err, errlen) != 0) {
        return -1;
    }
    return 0;
}

void secrets_clear(struct secrets *s)
{
    wipe(s->password);
    wipe(s->sentinel_password);
    s->password = s->sentinel_password = NULL;
}

int secrets_url_has_password(const char *url)
{
    char red[4200];
    if (url == NULL || baton_url_check(url, red, sizeof red, NULL, 0) != BATON_OK)
        return 0;
    return strstr(red, ":***@") != NULL || strstr(red, "password=***") != NULL;
}

/* Removes name from the environment and wipes what the kernel keeps of it.
 * unsetenv() only drops the pointer from environ: the string stays in the
 * block the process started with, which /proc/PID/environ and `ps e` read
 * (the kernel reads mm->env_start..env_end). So each entry of the name
 * (there may be several) is overwritten with NULs in place, and dropped
 * from environ as unsetenv() does: the strings are the original block's,
 * or setenv()'s copies, which glibc never frees. Before any thread. */
static void scrub_var(const char *name)
{
    size_t nl = strlen(name);
    char **w = environ;

    if (environ == NULL)
        return;
    for (char **e = environ; *e != NULL; e++) {
        if (strncmp(*e, name, nl) == 0 && (*e)[nl] == '=') {
            explicit_bzero(*e, strlen(*e));
            continue;
        }
        *w++ = *e;
    }
    *w = NULL;
}

void secrets_scrub_env(void)
{
    const char *u = getenv("BATON_REDIS_URL");
    if (u != NULL && secrets_url_has_password(u))
        scrub_var("BATON_REDIS_URL");
    scrub_var("BATON_REDIS_PASSWORD");
    scrub_var("BATON_SENTINEL_PASSWORD");
}

bool secrets_held(const struct secrets *s, const char *url)
{
    return s->password != NULL || s->sentinel_password != NULL ||
           (url != NULL && secrets_url_has_password(url));
}

int secrets_hide_process(void)
{
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 ? 0 : -1;
}

/* The fixed mask: no password shows its length. A password shorter than
 * the mask gets as many stars as it has characters, as the text cannot
 * grow in place. */
#define MASK "***"

/* Replaces the n bytes at v, inside a string, with the mask, moving the
 * rest of the string left and clearing the bytes it no longer uses.
 * Returns what follows the mask. */
static char *mask_span(char *v, size_t n)
{
    size_t m = n < strlen(MASK) ? n : strlen(MASK), rest = strlen(v + n);
    memcpy(v, MASK, m);
    memmove(v + m, v + n, rest + 1);
    explicit_bzero(v + m + rest + 1, n - m);
    return v + m;
}

/* Masks the value of every name=... (password=, sentinel_password=) in the
 * query. */
static void mask_param(char *q, const char *name)
{
    size_t n = strlen(name);
    for (char *p = q; p != NULL && *p != '\0'; p = strchr(p, '&')) {
        if (*p == '&' || *p == '?')
            p++;
        if (strncmp(p, name, n) == 0 && p[n] == '=') {
            char *v = p + n + 1;
            p = mask_span(v, strcspn(v, "&"));
        }
    }
}

void secrets_mask_url(char *url)
{
    char *s = strstr(url, "://");
    if (s == NULL)
        return;
    s += 3;
    size_t hostend = strcspn(s, "/?");
    char *at = NULL;
    for (size_t i = 0; i < hostend; i++)
        if (s[i] == '@')
            at = s + i;
    if (at != NULL) {
        char *colon = memchr(s, ':', (size_t)(at - s));
        char *v = colon != NULL ? colon + 1 : s;
        mask_span(v, (size_t)(at - v));
    }
    char *q = strchr(s, '?');
    if (q != NULL) {
        mask_param(q, "password");
        mask_param(q, "sentinel_password");
    }
}

struct argref {
    char *p;
    int i;
};

static int argref_cmp(const void *a, const void *b)
{
    const struct argref *x = a, *y = b;
    return x->p < y->p ? -1 : x->p > y->p;
}

void secrets_mask_argv(int argc, char **argv, char *const *urls, int n)
{
    struct argref *r = argc > 0 ? malloc((size_t)argc * sizeof *r) : NULL;
    bool contiguous = r != NULL;
    char *end = NULL;

    /* The strings in memory order (the parser may have permuted argv[]):
     * the kernel lays them out one after the other. */
    for (int j = 0; r != NULL && j < argc; j++)
        r[j] = (struct argref){argv[j], j};
    if (r != NULL) {
        qsort(r, (size_t)argc, sizeof *r, argref_cmp);
        for (int j = 1; j < argc && contiguous; j++)
            contiguous = r[j].p == r[j - 1].p + strlen(r[j - 1].p) + 1;
        end = r[argc - 1].p + strlen(r[argc - 1].p) + 1;
    }
    for (int k = 0; k < n; k++)
        secrets_mask_url(urls[k]);
    /* Close the gaps: the strings move left, and the bytes freed go to the
     * end of the area as NULs, which ps leaves out. */
    if (contiguous) {
        char *w = r[0].p;
        for (int j = 0; j < argc; j++) {
            size_t len = strlen(r[j].p);
            if (w != r[j].p)
                memmove(w, r[j].p, len + 1);
            argv[r[j].i] = w;
            w += len + 1;
        }
        explicit_bzero(w, (size_t)(end - w));
    }
    free(r);
}
