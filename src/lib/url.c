/* url.c -- parse Redis URLs into a struct baton__url:
 *   redis://[[user]:pass@]host[:port][/db]
 *   rediss://[[user]:pass@]host[:port][/db][?ca=&capath=&cert=&key=&sni=&verify=]
 *   unix:///path[?db=N&user=U&password=P]
 *   redis-sentinel://[[user]:pass@]h1[:p1],h2[:p2]...[/db]?master=NAME
 *       [&sentinel_user=U&sentinel_password=P]
 *   rediss-sentinel://...  (the same, plus the TLS parameters)
 *   redis-cluster://[[user]:pass@]h1[:p1],h2[:p2]...[/0]  (seed nodes)
 *   rediss-cluster://...  (the same, plus the TLS parameters)
 *   redis-quorum://[[user]:pass@]h1[:p1],...,hN[:pN][/db][?max_ttl=MS&node_timeout=MS]
 *                         (a Redlock quorum: N independent masters, N odd, 3..9)
 *   rediss-quorum://...   (the same, plus the TLS parameters)
 * Userinfo and query values may be percent-encoded. Messages never echo a
 * password; the redacted form shows "***" in its place. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "base_int.h"
#include "baton_redis.h" /* baton_url_quorum() */

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

/* Frees a secret, wiping it first. */
static void wipe(char *s)
{
    if (s != NULL) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

void baton__url_clear(struct baton__url *u)
{
    free(u->host);
    free(u->path);
    free(u->user);
    wipe(u->pass);
    free(u->master);
    for (int i = 0; i < u->nsentinels; i++)
        free(u->sentinels[i].host);
    free(u->sentinels);
    for (int i = 0; i < u->nseeds; i++)
        free(u->seeds[i].host);
    free(u->seeds);
    free(u->sentinel_user);
    wipe(u->sentinel_pass);
    free(u->tls_ca);
    free(u->tls_capath);
    free(u->tls_cert);
    free(u->tls_key);
    free(u->tls_sni);
    free(u->redacted);
    memset(u, 0, sizeof *u);
}

/* ---- the redacted form ---- */

struct sbuf {
    char *s;
    size_t len, cap;
    bool oom;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *g = realloc(b->s, cap);
        if (g == NULL) {
            b->oom = true;
            return;
        }
        b->s = g;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

static void sb_hostport(struct sbuf *b, const char *host, int port)
{
    char p[16];
    bool v6 = strchr(host, ':') != NULL;
    if (v6)
        sb_str(b, "[");
    sb_str(b, host);
    if (v6)
        sb_str(b, "]");
    snprintf(p, sizeof p, ":%d", port);
    sb_str(b, p);
}

/* Appends "&name=value" (or "?name=value" first). */
static void sb_param(struct sbuf *b, bool *first, const char *name, const char *value)
{
    sb_str(b, *first ? "?" : "&");
    *first = false;
    sb_str(b, name);
    sb_str(b, "=");
    sb_str(b, value);
}

/* The URL as messages show it: normalized, every password as "***". */
static int make_redacted(struct baton__url *u)
{
    struct sbuf b = {0};
    bool first = true;
    char num[16];

    if (u->transport == BATON__UNIX) {
        sb_str(&b, "unix://");
        sb_str(&b, u->path);
        snprintf(num, sizeof num, "%d", u->db);
        sb_param(&b, &first, "db", num);
        if (u->user != NULL)
            sb_param(&b, &first, "user", u->user);
        if (u->pass != NULL)
            sb_param(&b, &first, "password", "***");
    } else {
        sb_str(&b, u->master != NULL ? (u->tls ? "rediss-sentinel://" : "redis-sentinel://")
                   : u->cluster      ? (u->tls ? "rediss-cluster://" : "redis-cluster://")
                   : u->quorum       ? (u->tls ? "rediss-quorum://" : "redis-quorum://")
                                     : (u->tls ? "rediss://" : "redis://"));
        if (u->user != NULL)
            sb_str(&b, u->user);
        if (u->pass != NULL)
            sb_str(&b, ":***");
        if (u->user != NULL || u->pass != NULL)
            sb_str(&b, "@");
        if (u->master != NULL) {
            for (int i = 0; i < u->nsentinels; i++) {
                if (i > 0)
                    sb_str(&b, ",");
                sb_hostport(&b, u->sentinels[i].host, u->sentinels[i].port);
            }
        } else if (u->cluster || u->quorum) {
            for (int i = 0; i < u->nseeds; i++) {
                if (i > 0)
                    sb_str(&b, ",");
                sb_hostport(&b, u->seeds[i].host, u->seeds[i].port);
            }
        } else {
            sb_hostport(&b, u->host, u->port);
        }
        snprintf(num, sizeof num, "/%d", u->db);
        sb_str(&b, num);
        if (u->quorum && u->max_ttl_ms > 0) {
            snprintf(num, sizeof num, "%d", u->max_ttl_ms);
            sb_param(&b, &first, "max_ttl", num);
        }
        if (u->quorum && u->node_timeout_ms > 0) {
            snprintf(num, sizeof num, "%d", u->node_timeout_ms);
            sb_param(&b, &first, "node_timeout", num);
        }
        if (u->master != NULL) {
            sb_param(&b, &first, "master", u->master);
            if (u->sentinel_user != NULL)
                sb_param(&b, &first, "sentinel_user", u->sentinel_user);
            if (u->sentinel_pass != NULL)
                sb_param(&b, &first, "sentinel_password", "***");
        }
        if (u->tls_ca != NULL)
            sb_param(&b, &first, "ca", u->tls_ca);
        if (u->tls_capath != NULL)
            sb_param(&b, &first, "capath", u->tls_capath);
        if (u->tls_cert != NULL)
            sb_param(&b, &first, "cert", u->tls_cert);
        if (u->tls_key != NULL)
            sb_param(&b, &first, "key", u->tls_key);
        if (u->tls_sni != NULL)
            sb_param(&b, &first, "sni", u->tls_sni);
        if (u->tls && !u->tls_verify)
            sb_param(&b, &first, "verify", "none");
    }
    if (b.oom) {
        free(b.s);
        return BATON_ENOMEM;
    }
    u->redacted = b.s;
    return BATON_OK;
}

/* ---- pieces ---- */

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

/* One host[:port] or [v6][:port] in [p, end). */
static int parse_hostport(const char *p, const char *end, int defport, char **host, int *port,
                          char *err, size_t errlen)
{
    const char *portsep = NULL;
    const char *hs = p, *he;
    if (p < end && *p == '[') {
        const char *close = memchr(p, ']', (size_t)(end - p));
        if (close == NULL) {
            baton__set_error(err, errlen,
                             "invalid URL: invalid IPv6 address (write redis://[::1]:6379)");
            return BATON_EINVAL;
        }
        hs = p + 1;
        he = close;
        if (close + 1 < end) {
            if (close[1] != ':') {
                baton__set_error(err, errlen, "invalid URL: unexpected text after ]");
                return BATON_EINVAL;
            }
            portsep = close + 1;
        }
    } else {
        portsep = memchr(p, ':', (size_t)(end - p));
        he = portsep ? portsep : end;
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
    if ((*host = strndup(hs, (size_t)(he - hs))) == NULL)
        return BATON_ENOMEM;
    *port = defport;
    if (portsep != NULL && !parse_int(portsep + 1, (size_t)(end - portsep - 1), 1, 65535, port)) {
        baton__set_error(err, errlen, "invalid URL: invalid port (1..65535)");
        return BATON_EINVAL;
    }
    return BATON_OK;
}

/* The query parameters, and which URLs take them. */
enum {
    Q_UNIX = 1,     /* unix:// */
    Q_TLS = 2,      /* rediss://, rediss-sentinel:// */
    Q_SENTINEL = 4, /* redis-sentinel://, rediss-sentinel:// */
    Q_QUORUM = 8,   /* redis-quorum://, rediss-quorum:// */
};

enum qparam {
    P_DB,
    P_USER,
    P_PASSWORD,
    P_CA,
    P_CAPATH,
    P_CERT,
    P_KEY,
    P_SNI,
    P_VERIFY,
    P_MASTER,
    P_SENTINEL_USER,
    P_SENTINEL_PASSWORD,
    P_MAX_TTL,
    P_NODE_TIMEOUT,
};

static const struct {
    const char *name;
    enum qparam id;
    unsigned where;
} qparams[] = {
    {"db", P_DB, Q_UNIX},
    {"user", P_USER, Q_UNIX},
    {"password", P_PASSWORD, Q_UNIX},
    {"ca", P_CA, Q_TLS},
    {"capath", P_CAPATH, Q_TLS},
    {"cert", P_CERT, Q_TLS},
    {"key", P_KEY, Q_TLS},
    {"sni", P_SNI, Q_TLS},
    {"verify", P_VERIFY, Q_TLS},
    {"master", P_MASTER, Q_SENTINEL},
    {"sentinel_user", P_SENTINEL_USER, Q_SENTINEL},
    {"sentinel_password", P_SENTINEL_PASSWORD, Q_SENTINEL},
    {"max_ttl", P_MAX_TTL, Q_QUORUM},
    {"node_timeout", P_NODE_TIMEOUT, Q_QUORUM},
};

/* "db=, user=, password=" for the parameters that `where` takes. */
static void list_params(unsigned where, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof qparams / sizeof qparams[0]; i++) {
        if (!(qparams[i].where & where))
            continue;
        int n = snprintf(buf + o, len - o, "%s%s=", o > 0 ? ", " : "", qparams[i].name);
        if (n < 0 || (size_t)n >= len - o)
            return;
        o += (size_t)n;
    }
}

static int set_string(char **field, const char *v, size_t n, char *err, size_t errlen)
{
    bool bad = false;
    free(*field);
    if ((*field = decode(v, n, &bad)) != NULL)
        return BATON_OK;
    if (!bad)
        return BATON_ENOMEM;
    baton__set_error(err, errlen, "invalid URL: bad percent-escape");
    return BATON_EINVAL;
}

/* Parses the query after '?' (q points at it) into u, taking the
 * parameters of `where`. */
static int parse_query(const char *q, unsigned where, struct baton__url *u, char *err,
                       size_t errlen)
{
    unsigned seen = 0; /* bit qparams[i].id: the parameters given so far */
    _Static_assert(P_NODE_TIMEOUT < 32, "one bit per parameter");
    while (q != NULL) {
        const char *name = q + 1;
        const char *amp = strchr(name, '&');
        const char *vend = amp ? amp : name + strlen(name);
        const char *eq = memchr(name, '=', (size_t)(vend - name));
        const char *v = eq ? eq + 1 : NULL;
        size_t nlen, vlen;
        int rc = BATON_OK;
        q = amp;
        if (eq == NULL) {
            baton__set_error(err, errlen, "invalid URL: query items look like name=value");
            return BATON_EINVAL;
        }
        nlen = (size_t)(eq - name);
        vlen = (size_t)(vend - v);
        size_t i = 0;
        while (i < sizeof qparams / sizeof qparams[0] &&
               !((qparams[i].where & where) && strlen(qparams[i].name) == nlen &&
                 strncmp(qparams[i].name, name, nlen) == 0))
            i++;
        if (i == sizeof qparams / sizeof qparams[0]) {
            char all[256];
            list_params(where, all, sizeof all);
            baton__set_error(err, errlen, "invalid URL: unknown URL parameter \"%.*s\" (use %s)",
                             (int)(nlen > 32 ? 32 : nlen), name, all);
            return BATON_EINVAL;
        }
        /* Each once: a second verify= (or ca=, password=...) that silently
         * won would turn what the first said into a lie. */
        if (seen & (1u << qparams[i].id)) {
            baton__set_error(err, errlen,
                             "invalid URL: %s= is given twice (give each parameter once)",
                             qparams[i].name);
            return BATON_EINVAL;
        }
        seen |= 1u << qparams[i].id;
        switch (qparams[i].id) {
        case P_DB:
            if (!parse_int(v, vlen, 0, INT_MAX, &u->db)) {
                baton__set_error(err, errlen, "invalid URL: invalid database number in ?db=");
                return BATON_EINVAL;
            }
            break;
        case P_USER: rc = set_string(&u->user, v, vlen, err, errlen); break;
        case P_PASSWORD: rc = set_string(&u->pass, v, vlen, err, errlen); break;
        case P_CA: rc = set_string(&u->tls_ca, v, vlen, err, errlen); break;
        case P_CAPATH: rc = set_string(&u->tls_capath, v, vlen, err, errlen); break;
        case P_CERT: rc = set_string(&u->tls_cert, v, vlen, err, errlen); break;
        case P_KEY: rc = set_string(&u->tls_key, v, vlen, err, errlen); break;
        case P_SNI: rc = set_string(&u->tls_sni, v, vlen, err, errlen); break;
        case P_MASTER: rc = set_string(&u->master, v, vlen, err, errlen); break;
        case P_SENTINEL_USER: rc = set_string(&u->sentinel_user, v, vlen, err, errlen); break;
        case P_SENTINEL_PASSWORD:
            rc = set_string(&u->sentinel_pass, v, vlen, err, errlen);
            break;
        case P_MAX_TTL:
        case P_NODE_TIMEOUT: {
            int ms = 0;
            bool ttl = qparams[i].id == P_MAX_TTL;
            if (!parse_int(v, vlen, ttl ? 10 : 1, ttl ? 86400000 : 60000, &ms)) {
                baton__set_error(err, errlen,
                                 ttl ? "invalid URL: max_ttl= is the longest lock ttl in ms, "
                                       "10..86400000"
                                     : "invalid URL: node_timeout= is each master's time to "
                                       "answer in ms, 1..60000");
                return BATON_EINVAL;
            }
            if (ttl)
                u->max_ttl_ms = ms;
            else
                u->node_timeout_ms = ms;
            break;
        }
        case P_VERIFY:
            if (vlen == 4 && strncmp(v, "peer", 4) == 0) {
                u->tls_verify = true;
            } else if (vlen == 4 && strncmp(v, "none", 4) == 0) {
                u->tls_verify = false;
            } else {
                baton__set_error(err, errlen, "invalid URL: verify= takes peer or none");
                return BATON_EINVAL;
            }
            break;
        }
        if (rc != BATON_OK)
            return rc;
        if (vlen == 0 && qparams[i].id != P_DB) {
            baton__set_error(err, errlen, "invalid URL: %s= is empty", qparams[i].name);
            return BATON_EINVAL;
        }
    }
    return BATON_OK;
}

/* A comma-separated list of host[:port] in [p, end) into a new array of
 * at most max entries: the sentinels, or a cluster's seed nodes. */
static int parse_hostlist(const char *p, const char *end, int defport, int max, const char *what,
                          struct baton__hostport **list, int *count, char *err, size_t errlen)
{
    int n = 1, rc;
    for (const char *s = p; s < end; s++)
        n += *s == ',';
    if (n > max) {
        baton__set_error(err, errlen, "invalid URL: at most %d %s", max, what);
        return BATON_EINVAL;
    }
    if ((*list = calloc((size_t)n, sizeof **list)) == NULL)
        return BATON_ENOMEM;
    for (const char *s = p; s <= end && *count < n;) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *e = comma ? comma : end;
        struct baton__hostport *hp = &(*list)[*count];
        if ((rc = parse_hostport(s, e, defport, &hp->host, &hp->port, err, errlen)) != BATON_OK) {
            free(hp->host);
            hp->host = NULL;
            return rc;
        }
        (*count)++;
        s = e + 1;
    }
    return BATON_OK;
}

/* After the scheme of redis://, rediss://, redis-sentinel://,
 * rediss-sentinel://, redis-cluster://, rediss-cluster://. */
static int parse_network(const char *p, struct baton__url *u, bool sentinel, char *err,
                         size_t errlen)
{
    const char *q = strchr(p, '?');
    const char *end = q ? q : p + strlen(p);
    const char *slash = memchr(p, '/', (size_t)(end - p));
    const char *hostend = slash ? slash : end;
    const char *at = NULL;
    unsigned where =
        (u->tls ? Q_TLS : 0) | (sentinel ? Q_SENTINEL : 0) | (u->quorum ? Q_QUORUM : 0);
    int rc;

    if (memchr(p, '#', strlen(p)) != NULL) {
        baton__set_error(err, errlen, "invalid URL: a URL of Redis has no #fragment");
        return BATON_EINVAL;
    }
    if (q != NULL && where == 0) {
        baton__set_error(err, errlen,
                         u->cluster ? "invalid URL: redis-cluster:// URLs take no query (TLS "
                                      "parameters need rediss-cluster://)"
                                    : "invalid URL: redis:// URLs take no query (use /DB for the "
                                      "database; TLS parameters need rediss://)");
        return BATON_EINVAL;
    }
    for (const char *s = p; s < hostend; s++)
        if (*s == '@')
            at = s; /* the last '@' before the path ends the userinfo */
    if (at != NULL) {
        if ((rc = parse_userinfo(p, (size_t)(at - p), u, err, errlen)) != BATON_OK)
            return rc;
        p = at + 1;
    }
    if (u->cluster) {
        if ((rc = parse_hostlist(p, hostend, 6379, BATON__SEEDS_MAX, "seed nodes", &u->seeds,
                                 &u->nseeds, err, errlen)) != BATON_OK)
            return rc;
    } else if (u->quorum) {
        if ((rc = parse_hostlist(p, hostend, 6379, BATON__QUORUM_MAX, "quorum masters",
                                 &u->seeds, &u->nseeds, err, errlen)) != BATON_OK)
            return rc;
        for (int i = 0; i < u->nseeds; i++)
            for (int j = i + 1; j < u->nseeds; j++)
                if (u->seeds[i].port == u->seeds[j].port &&
                    strcmp(u->seeds[i].host, u->seeds[j].host) == 0) {
                    /* it would vote twice */
                    baton__set_error(err, errlen,
                                     "invalid URL: a quorum names each master once (%s:%d "
                                     "twice)",
                                     u->seeds[i].host, u->seeds[i].port);
                    return BATON_EINVAL;
                }
        if (u->nseeds < 3 || u->nseeds % 2 == 0) {
            baton__set_error(err, errlen,
                             "invalid URL: a quorum has an odd number of masters, 3 to %d "
                             "(this one names %d): redis-quorum://h1:6379,h2:6380,h3:6381",
                             BATON__QUORUM_MAX, u->nseeds);
            return BATON_EINVAL;
        }
    } else if (!sentinel) {
        if ((rc = parse_hostport(p, hostend, 6379, &u->host, &u->port, err, errlen)) != BATON_OK)
            return rc;
    } else {
        if ((rc = parse_hostlist(p, hostend, 26379, BATON__SENTINELS_MAX, "sentinels",
                                 &u->sentinels, &u->nsentinels, err, errlen)) != BATON_OK)
            return rc;
    }
    if (slash != NULL && slash + 1 < end &&
        !parse_int(slash + 1, (size_t)(end - slash - 1), 0, INT_MAX, &u->db)) {
        baton__set_error(
            err, errlen,
            "invalid URL: invalid database number after the host (redis://host:6379/0)");
        return BATON_EINVAL;
    }
    if (u->cluster && u->db != 0) {
        baton__set_error(err, errlen,
                         "invalid URL: Redis Cluster has only database 0 (redis-cluster://"
                         "h1:7000,h2:7001 or .../0)");
        return BATON_EINVAL;
    }
    if (q != NULL && (rc = parse_query(q, where, u, err, errlen)) != BATON_OK)
        return rc;
    if (sentinel && (u->master == NULL || u->master[0] == '\0')) {
        baton__set_error(err, errlen,
                         "invalid URL: a sentinel URL names its master group: "
                         "redis-sentinel://h1:26379,h2:26379/0?master=NAME");
        return BATON_EINVAL;
    }
    if ((u->tls_cert == NULL) != (u->tls_key == NULL)) {
        baton__set_error(err, errlen,
                         "invalid URL: a client certificate needs both cert= and key=");
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
    if ((u->path = decode(p, plen, &bad)) == NULL) {
        if (!bad)
            return BATON_ENOMEM;
        baton__set_error(err, errlen, "invalid URL: bad percent-escape");
        return BATON_EINVAL;
    }
    if (strlen(u->path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        baton__set_error(err, errlen,
                         "invalid URL: the socket path is %zu bytes long; the system allows "
                         "at most %zu",
                         strlen(u->path), sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
        return BATON_EINVAL;
    }
    return q != NULL ? parse_query(q, Q_UNIX, u, err, errlen) : BATON_OK;
}

static const struct {
    const char *prefix;
    enum baton__family transport;
    bool tls, sentinel, cluster, quorum;
} schemes[] = {
    {"redis://", BATON__TCP, false, false, false, false},
    {"rediss://", BATON__TCP, true, false, false, false},
    {"redis-sentinel://", BATON__TCP, false, true, false, false},
    {"rediss-sentinel://", BATON__TCP, true, true, false, false},
    {"redis-cluster://", BATON__TCP, false, false, true, false},
    {"rediss-cluster://", BATON__TCP, true, false, true, false},
    {"redis-quorum://", BATON__TCP, false, false, false, true},
    {"rediss-quorum://", BATON__TCP, true, false, false, true},
    {"unix://", BATON__UNIX, false, false, false, false},
};

int baton__url_parse(const char *text, struct baton__url *u, char *err, size_t errlen)
{
    int r = BATON_EINVAL;
    size_t i;
    memset(u, 0, sizeof *u);
    u->tls_verify = true;
    if (text == NULL || *text == '\0') {
        baton__set_error(err, errlen, "invalid URL: empty");
        return BATON_EINVAL;
    }
    for (i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
        if (strncmp(text, schemes[i].prefix, strlen(schemes[i].prefix)) == 0)
            break;
    if (i < sizeof schemes / sizeof schemes[0]) {
        const char *rest = text + strlen(schemes[i].prefix);
        u->transport = schemes[i].transport;
        u->tls = schemes[i].tls;
        u->cluster = schemes[i].cluster;
        u->quorum = schemes[i].quorum;
        if (u->transport == BATON__UNIX)
            r = parse_unix(rest, u, err, errlen);
        else
            r = parse_network(rest, u, schemes[i].sentinel, err, errlen);
    } else {
        const char *sep = strstr(text, "://");
        if (sep != NULL && sep - text <= 20 &&
            strspn(text, "abcdefghijklmnopqrstuvwxyz"
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-") == (size_t)(sep - text))
            baton__set_error(err, errlen,
                             "invalid URL: unsupported scheme \"%.*s://\" (use redis://, "
                             "rediss://, unix://, redis-sentinel://, rediss-sentinel://, "
                             "redis-cluster://, rediss-cluster://, redis-quorum:// or "
                             "rediss-quorum://)",
                             (int)(sep - text), text);
        else
            baton__set_error(err, errlen,
                             "invalid URL: expected a URL like redis://host:6379/0 or "
                             "unix:///run/redis/redis.sock");
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

int baton_url_quorum(const char *url, int *masters, int64_t *max_ttl_ms, int64_t *node_timeout_ms,
                     char *err, size_t errlen)
{
    struct baton__url u;
    char detail[BATON__ERRLEN];
    if (masters == NULL || max_ttl_ms == NULL || node_timeout_ms == NULL)
        return BATON_EINVAL;
    int rc = baton__url_parse(url, &u, detail, sizeof detail);
    if (rc != BATON_OK) {
        if (err != NULL && errlen > 0)
            baton__set_error(err, errlen, "%s", rc == BATON_ENOMEM ? "out of memory" : detail);
        return rc;
    }
    *masters = u.quorum ? u.nseeds : 0;
    *max_ttl_ms = u.max_ttl_ms > 0 ? u.max_ttl_ms : BATON__QUORUM_MAX_TTL_MS;
    *node_timeout_ms = u.node_timeout_ms > 0 ? u.node_timeout_ms : BATON__QUORUM_NODE_TIMEOUT_MS;
    baton__url_clear(&u);
    return BATON_OK;
}

/* Appends v percent-encoded (all but unreserved characters, and '/' when
 * path is set). */
static void sb_enc(struct sbuf *b, const char *v, bool path)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)v; *p != '\0'; p++) {
        char one[4] = {(char)*p, '\0'};
        bool keep = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || strchr("-._~", *p) != NULL || (path && *p == '/');
        if (!keep) {
            one[0] = '%';
            one[1] = hex[*p >> 4];
            one[2] = hex[*p & 15];
            one[3] = '\0';
        }
        sb_str(b, one);
    }
}

static bool same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* What differs between two masters' URLs that a quorum needs alike, or
 * NULL. */
static const char *differs(const struct baton__url *a, const struct baton__url *b)
{
    if (a->tls != b->tls)
        return "scheme (redis:// and rediss:// mixed)";
    if (!same_str(a->user, b->user) || !same_str(a->pass, b->pass))
        return "credentials";
    if (a->db != b->db)
        return "database";
    if (!same_str(a->tls_ca, b->tls_ca) || !same_str(a->tls_capath, b->tls_capath) ||
        !same_str(a->tls_cert, b->tls_cert) || !same_str(a->tls_key, b->tls_key) ||
        !same_str(a->tls_sni, b->tls_sni) || a->tls_verify != b->tls_verify)
        return "TLS parameters";
    return NULL;
}

int baton_url_join(const char *const *urls, int n, char **out, int *bad, char *err, size_t errlen)
{
    struct baton__url u[BATON__QUORUM_MAX];
    char detail[BATON__ERRLEN];
    struct sbuf b = {0};
    int parsed = 0, rc = BATON_EINVAL;
    bool first = true;

    if (out == NULL || urls == NULL || n < 1)
        return BATON_EINVAL;
    *out = NULL;
    if (bad != NULL)
        *bad = 0;
    if (n > BATON__QUORUM_MAX) {
        baton__set_error(err, errlen,
                         "a quorum has an odd number of masters, 3 to %d (%d URLs given)",
                         BATON__QUORUM_MAX, n);
        return BATON_EINVAL;
    }
    for (; parsed < n; parsed++) {
        if (bad != NULL)
            *bad = parsed;
        rc = baton__url_parse(urls[parsed], &u[parsed], detail, sizeof detail);
        if (rc != BATON_OK) {
            baton__set_error(err, errlen, "%s", rc == BATON_ENOMEM ? "out of memory" : detail);
            goto out;
        }
        rc = BATON_EINVAL;
        if (u[parsed].transport != BATON__TCP || u[parsed].master != NULL || u[parsed].cluster ||
            u[parsed].quorum) {
            baton__set_error(err, errlen,
                             "%s: the masters of a quorum are each a redis:// or rediss:// URL "
                             "(one server each)",
                             u[parsed].redacted);
            parsed++;
            goto out;
        }
        const char *what = parsed > 0 ? differs(&u[0], &u[parsed]) : NULL;
        if (what != NULL) {
            baton__set_error(err, errlen,
                             "%s: not the same %s as the first master (%s): the masters of a "
                             "quorum share scheme, credentials, database and TLS parameters",
                             u[parsed].redacted, what, u[0].redacted);
            parsed++;
            goto out;
        }
    }
    if (n == 1) { /* one server: that URL */
        if ((*out = strdup(urls[0])) == NULL)
            rc = BATON_ENOMEM;
        else
            rc = BATON_OK;
        goto out;
    }
    if (bad != NULL)
        *bad = -1; /* from here on, about the list */
    sb_str(&b, u[0].tls ? "rediss-quorum://" : "redis-quorum://");
    /* "user:@" for a user without a password ("user@" alone would be read
     * as a password), ":pass@", "user:pass@" */
    if (u[0].user != NULL)
        sb_enc(&b, u[0].user, false);
    if (u[0].user != NULL || u[0].pass != NULL)
        sb_str(&b, ":");
    if (u[0].pass != NULL)
        sb_enc(&b, u[0].pass, false);
    if (u[0].user != NULL || u[0].pass != NULL)
        sb_str(&b, "@");
    for (int i = 0; i < n; i++) {
        if (i > 0)
            sb_str(&b, ",");
        sb_hostport(&b, u[i].host, u[i].port);
    }
    char num[16];
    snprintf(num, sizeof num, "/%d", u[0].db);
    sb_str(&b, num);
    const char *names[5] = {"ca", "capath", "cert", "key", "sni"};
    const char *vals[5] = {u[0].tls_ca, u[0].tls_capath, u[0].tls_cert, u[0].tls_key, u[0].tls_sni};
    for (int i = 0; i < 5; i++) {
        if (vals[i] == NULL)
            continue;
        sb_str(&b, first ? "?" : "&");
        first = false;
        sb_str(&b, names[i]);
        sb_str(&b, "=");
        sb_enc(&b, vals[i], true);
    }
    if (u[0].tls && !u[0].tls_verify) {
        sb_str(&b, first ? "?" : "&");
        sb_str(&b, "verify=none");
    }
    if (b.oom) {
        rc = BATON_ENOMEM;
        goto out;
    }
    /* The quorum's own rules (an odd number of masters, each once) */
    struct baton__url q;
    rc = baton__url_parse(b.s, &q, detail, sizeof detail);
    if (rc != BATON_OK) {
        baton__set_error(err, errlen, "%s", rc == BATON_ENOMEM ? "out of memory" : detail);
        goto out;
    }
    baton__url_clear(&q);
    *out = b.s;
    b.s = NULL;
out:
    if (b.s != NULL) {
        explicit_bzero(b.s, strlen(b.s));
        free(b.s);
    }
    for (int i = 0; i < parsed; i++)
        baton__url_clear(&u[i]);
    return rc;
}
