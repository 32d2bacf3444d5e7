/* secrets.c -- see secrets.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "baton.h"
#include "secrets.h"

#define SECRET_MAX 4096

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

void secrets_scrub_env(void)
{
    const char *u = getenv("BATON_REDIS_URL");
    if (u != NULL && secrets_url_has_password(u))
        unsetenv("BATON_REDIS_URL");
    unsetenv("BATON_REDIS_PASSWORD");
    unsetenv("BATON_SENTINEL_PASSWORD");
}

/* Masks the value of every name=... (password=, sentinel_password=) in the
 * query. */
static void mask_param(char *q, const char *name)
{
    size_t n = strlen(name);
    for (char *p = q; p != NULL && *p != '\0'; p = strchr(p, '&')) {
        if (*p == '&' || *p == '?')
            p++;
        if (strncmp(p, name, n) == 0 && p[n] == '=')
            for (char *v = p + n + 1; *v != '\0' && *v != '&'; v++)
                *v = '*';
    }
}

void secrets_mask_url(char *url)
{
    char *s = strstr(url, "://");
    if (s == NULL)
        return;
    s += 3;
    char *q = strchr(s, '?');
    size_t hostend = strcspn(s, "/?");
    char *at = NULL;
    for (size_t i = 0; i < hostend; i++)
        if (s[i] == '@')
            at = s + i;
    if (at != NULL) {
        char *colon = memchr(s, ':', (size_t)(at - s));
        for (char *p = colon != NULL ? colon + 1 : s; p < at; p++)
            *p = '*';
    }
    if (q != NULL) {
        mask_param(q, "password");
        mask_param(q, "sentinel_password");
    }
}
