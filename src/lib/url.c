/* url.c -- parse redis://[[user]:pass@]host[:port][/db] and
 * unix:///path[?db=N&user=U&password=P] into a struct baton__url. Userinfo
 * and query values may be percent-encoded. Messages never echo a password. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "baton_int.h"

/* Copies [s, s+n) percent-decoded into a new string. Returns NULL on a bad
 * escape (with *bad set) or out of memory. */
static char *decode(const char *s, size_t n, bool *bad)
{
    char *out = malloc(n + 1);
    size_t o = 0;
    *bad = false;
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[o++] = s[i];
            continue;
        }
        int v = 0;
        for (int k = 1; k <= 2; k++) {
            char ch = (i + (size_t)k < n) ? s[i + (size_t)k] : '\0';
            int d = (ch >= '0' && ch <= '9')   ? ch - '0'
                    : (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10
                    : (ch >= 'A' && ch <= 'F') ? ch - 'A' + 10
                                               : -1;
            if (d < 0) {
                free(out);
                *bad = true;
                return NULL;
            }
            v = v * 16 + d;
        }
        if (v == 0) { /* an embedded NUL would truncate the value */
            free(out);
            *bad = true;
            return NULL;
        }
        out[o++] = (char)v;
        i += 2;
    }
    out[o] = '\0';
    return out;
}

/* Parses a decimal in [lo, hi] from [s, s+n). */
static bool parse_int(const char *s, size_t n, long lo, long hi, int *out)
{
    if (n == 0 || n > 10)
        return false;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

void baton__url_clear(struct baton__url *u)
{
    free(u->host);
    free(u->path);
    free(u->user);
    free(u->pass);
    free(u->redacted);
    memset(u, 0, sizeof *u);
}

/* The URL as messages show it: normalized, the password as "***". */
static int make_redacted(struct baton__url *u)
{
    char *s = NULL;
    int n;
    const char *user = u->user ? u->user : "";
    const char *pass = u->pass ? ":***" : "";
    const char *at = (u->user || u->pass) ? "@" : "";
    if (u->transport == BATON__UNIX)
        n = asprintf(&s, "unix://%s?db=%d%s%s%s", u->path, u->db, u->user ? "&user=" : "", user,
                     u->pass ? "&password=***" : "");
    else if (strchr(u->host, ':') != NULL)
        n = asprintf(&s, "redis://%s%s%s[%s]:%d/%d", user, pass, at, u->host, u->port, u->db);
    else
        n = asprintf(&s, "redis://%s%s%s%s:%d/%d", user, pass, at, u->host, u->port, u->db);
    if (n < 0)
        return BATON_ENOMEM;
    u->redacted = s;
    return BATON_OK;
}

/* user:pass in [s, s+n): "pass", ":pass", "user:pass", "user:" (no pass). */
static int parse_userinfo(const char *s, size_t n, struct baton__url *u, char *err, size_t errlen)
{
    const char *colon = memchr(s, ':', n);
    size_t ulen = colon ? (size_t)(colon - s) : 0;
    bool bad = false;
    if (n == 0)
        return BATON_OK;
    if (colon == NULL) { /* redis://secret@host: a bare password (legacy form) */
        u->pass = decode(s, n, &bad);
    } else {
        if (ulen > 0 && (u->user = decode(s, ulen, &bad)) == NULL)
            goto fail;
        size_t plen = n - ulen - 1;
        if (plen > 0)
            u->pass = decode(colon + 1, plen, &bad);
        else
            return BATON_OK;
    }
    if (u->pass != NULL)
        return BATON_OK;
fail:
    if (bad) {
        baton__set_error(err, errlen, "invalid URL: bad percent-escape in the user or password");
        return BATON_EINVAL;
    }
    return BATON_ENOMEM;
}

static int parse_tcp(const char *p, struct baton__url *u, char *err, size_t errlen)
{
    const char *end = p + strlen(p);
    const char *slash = strchr(p, '/');
    const char *hostend = slash ? slash : end;
    const char *at = NULL;
    int r;

    if (strchr(p, '?') != NULL || strchr(p, '#') != NULL) {
        baton__set_error(err, errlen,
                         "invalid URL: redis:// URLs take no query (use /DB for the database)");
        return BATON_EINVAL;
    }
    for (const char *q = p; q < hostend; q++)
        if (*q == '@')
            at = q; /* the last '@' before the path ends the userinfo */
    if (at != NULL) {
        if ((r = parse_userinfo(p, (size_t)(at - p), u, err, errlen)) != BATON_OK)
            return r;
        p = at + 1;
    }

    const char *portsep = NULL;
    const char *hs = p, *he;
    if (*p == '[') {
        const char *close = memchr(p, ']', (size_t)(hostend - p));
        if (close == NULL) {
            baton__set_error(err, errlen, "invalid URL: invalid IPv6 address (write redis://[::1]:6379)");
            return BATON_EINVAL;
        }
        hs = p + 1;
        he = close;
        if (close + 1 < hostend) {
            if (close[1] != ':') {
                baton__set_error(err, errlen, "invalid URL: unexpected text after ]");
                return BATON_EINVAL;
            }
            portsep = close + 1;
        }
    } else {
        portsep = memchr(p, ':', (size_t)(hostend - p));
        he = portsep ? portsep : hostend;
    }
    if (he == hs) {
        baton__set_error(err, errlen, "invalid URL: missing host (redis://host:6379/0)");
        return BATON_EINVAL;
    }
    const char *hostchars = *p == '[' ? "0123456789abcdefABCDEF:." : NULL;
    for (const char *q = hs; q < he; q++) {
        bool ok = hostchars != NULL
                      ? strchr(hostchars, *q) != NULL
                      : ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
                         (*q >= '0' && *q <= '9') || *q == '.' || *q == '-' || *q == '_');
        if (!ok) {
            baton__set_error(err, errlen,
                             hostchars != NULL
                                 ? "invalid URL: invalid IPv6 address (write redis://[::1]:6379)"
                                 : "invalid URL: invalid character in the host name");
            return BATON_EINVAL;
        }
    }
    if ((u->host = strndup(hs, (size_t)(he - hs))) == NULL)
        return BATON_ENOMEM;
    u->port = 6379;
    if (portsep != NULL &&
        !parse_int(portsep + 1, (size_t)(hostend - portsep - 1), 1, 65535, &u->port)) {
        baton__set_error(err, errlen, "invalid URL: invalid port (1..65535)");
        return BATON_EINVAL;
    }
    if (slash != NULL && slash + 1 < end &&
        !parse_int(slash + 1, (size_t)(end - slash - 1), 0, INT_MAX, &u->db)) {
        baton__set_error(err, errlen, "invalid URL: invalid database number after the host (redis://host:6379/0)");
        return BATON_EINVAL;
    }
    return BATON_OK;
}

static int parse_unix(const char *p, struct baton__url *u, char *err, size_t errlen)
{
    const char *q = strchr(p, '?');
    size_t plen = q ? (size_t)(q - p) : strlen(p);
    bool bad = false;

    if (plen == 0 || p[0] != '/') {
        baton__set_error(
            err, errlen,
            "invalid URL: the socket path must be absolute (unix:///run/redis/redis.sock)");
        return BATON_EINVAL;
    }
    if ((u->path = decode(p, plen, &bad)) == NULL)
        goto bad_escape;
    if (strlen(u->path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        baton__set_error(err, errlen,
                         "invalid URL: the socket path is %zu bytes long; the system allows "
                         "at most %zu",
                         strlen(u->path), sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
        return BATON_EINVAL;
    }
    while (q != NULL) {
        const char *name = q + 1;
        const char *amp = strchr(name, '&');
        const char *vend = amp ? amp : name + strlen(name);
        const char *eq = memchr(name, '=', (size_t)(vend - name));
        q = amp;
        if (eq == NULL) {
            baton__set_error(err, errlen, "invalid URL: query items look like name=value");
            return BATON_EINVAL;
        }
        size_t nlen = (size_t)(eq - name), vlen = (size_t)(vend - eq - 1);
        if (nlen == 2 && strncmp(name, "db", 2) == 0) {
            if (!parse_int(eq + 1, vlen, 0, INT_MAX, &u->db)) {
                baton__set_error(err, errlen, "invalid URL: invalid database number in ?db=");
                return BATON_EINVAL;
            }
        } else if (nlen == 4 && strncmp(name, "user", 4) == 0) {
            free(u->user);
            if ((u->user = decode(eq + 1, vlen, &bad)) == NULL)
                goto bad_escape;
        } else if (nlen == 8 && strncmp(name, "password", 8) == 0) {
            free(u->pass);
            if ((u->pass = decode(eq + 1, vlen, &bad)) == NULL)
                goto bad_escape;
        } else {
            baton__set_error(err, errlen,
                             "invalid URL: unknown URL parameter \"%.*s\" (use db=, user=, password=)",
                             (int)(nlen > 32 ? 32 : nlen), name);
            return BATON_EINVAL;
        }
    }
    return BATON_OK;
bad_escape:
    if (!bad)
        return BATON_ENOMEM;
    baton__set_error(err, errlen, "invalid URL: bad percent-escape");
    return BATON_EINVAL;
}

int baton__url_parse(const char *text, struct baton__url *u, char *err, size_t errlen)
{
    int r;
    memset(u, 0, sizeof *u);
    if (text == NULL || *text == '\0') {
        baton__set_error(err, errlen, "invalid URL: empty");
        return BATON_EINVAL;
    }
    if (strncmp(text, "redis://", 8) == 0) {
        u->transport = BATON__TCP;
        r = parse_tcp(text + 8, u, err, errlen);
    } else if (strncmp(text, "unix://", 7) == 0) {
        u->transport = BATON__UNIX;
        r = parse_unix(text + 7, u, err, errlen);
    } else {
        const char *sep = strstr(text, "://");
        if (sep != NULL && sep - text <= 20 && strspn(text, "abcdefghijklmnopqrstuvwxyz"
                                                           "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-") ==
                                                   (size_t)(sep - text))
            baton__set_error(err, errlen,
                             "invalid URL: unsupported scheme \"%.*s://\" (use redis:// or unix://)",
                             (int)(sep - text), text);
        else
            baton__set_error(err, errlen,
                             "invalid URL: expected a URL like redis://host:6379/0 or unix:///run/redis/redis.sock");
        r = BATON_EINVAL;
    }
    if (r == BATON_OK)
        r = make_redacted(u);
    if (r != BATON_OK)
        baton__url_clear(u);
    return r;
}

int baton_url_check(const char *url, char *redacted, size_t rlen, char *err, size_t errlen)
{
    struct baton__url u;
    char detail[BATON__ERRLEN];
    int rc = baton__url_parse(url, &u, detail, sizeof detail);
    if (rc == BATON_OK && redacted != NULL && rlen > 0)
        baton__set_error(redacted, rlen, "%s", u.redacted);
    if (rc != BATON_OK && err != NULL && errlen > 0)
        baton__set_error(err, errlen, "%s", rc == BATON_ENOMEM ? "out of memory" : detail);
    baton__url_clear(&u);
    return rc;
}
