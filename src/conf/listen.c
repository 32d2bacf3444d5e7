/* listen.c -- see listen.h. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "listen.h"

/* ---- http.listen ---- */

static bool all_digits(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s != '\0'; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

int http_listen_parse(const char *spec, struct http_listen *out, char *msg, size_t msglen)
{
    memset(out, 0, sizeof *out);
    if (strncmp(spec, "unix:", 5) == 0) {
        const char *path = spec + 5;
        if (path[0] != '/') {
            snprintf(msg, msglen,
                     "a Unix socket needs an absolute path (unix:/run/baton/http.sock)");
            return -1;
        }
        if (strlen(path) >= sizeof((struct sockaddr_un *)0)->sun_path) {
            snprintf(msg, msglen, "the Unix socket's path is longer than %zu bytes",
                     sizeof((struct sockaddr_un *)0)->sun_path - 1);
            return -1;
        }
        out->unix_socket = true;
        snprintf(out->host, sizeof out->host, "%s", path);
        return 0;
    }
    const char *colon = strrchr(spec, ':');
    const char *host = spec, *host_end = colon;
    if (spec[0] == '[') { /* [v6]:port */
        const char *close = strchr(spec, ']');
        if (close == NULL || close[1] != ':') {
            snprintf(msg, msglen, "expected [address]:port for an IPv6 address");
            return -1;
        }
        host = spec + 1;
        host_end = close;
        colon = close + 1;
    }
    if (colon == NULL || host_end == host) {
        snprintf(msg, msglen,
                 "expected host:port (127.0.0.1:9746; 0.0.0.0:9746 for every interface), "
                 "[address]:port, or unix:/path");
        return -1;
    }
    char *end = NULL;
    errno = 0;
    long port = all_digits(colon + 1) ? strtol(colon + 1, &end, 10) : -1;
    if (errno != 0 || port < 0 || port > 65535) {
        snprintf(msg, msglen, "the port must be a number from 0 to 65535");
        return -1;
    }
    if ((size_t)(host_end - host) >= sizeof out->host) {
        snprintf(msg, msglen, "the host is too long");
        return -1;
    }
    memcpy(out->host, host, (size_t)(host_end - host));
    snprintf(out->port, sizeof out->port, "%ld", port);
    return 0;
}

/* ---- Host: which names a TCP server answers to ---- */

#define HOST_NAME_MAX_LEN 253

static bool name_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '_';
}

int http_allowed_name_check(const char *name, char *msg, size_t msglen)
{
    const char *p = strncmp(name, "*.", 2) == 0 ? name + 2 : name;
    size_t label = 0;
    if (strchr(name, ':') != NULL || name[0] == '[') {
        snprintf(msg, msglen,
                 "a host name without a port (IP addresses are always answered, and "
                 "the port is never checked)");
        return -1;
    }
    if (strlen(name) > HOST_NAME_MAX_LEN) {
        snprintf(msg, msglen, "a host name is at most %d characters", HOST_NAME_MAX_LEN);
        return -1;
    }
    for (;; p++) {
        if (*p == '.' || *p == '\0') {
            if (label == 0 || label > 63)
                break;
            if (*p == '\0')
                return 0;
            label = 0;
        } else if (name_char(*p)) {
            label++;
        } else {
            break;
        }
    }
    snprintf(msg, msglen,
             "expected a host name (letters, digits, - and _ in labels of 1 to 63, separated by "
             "dots), or *. and one for every name under it");
    return -1;
}

/* True when name (lowercase, no trailing dot) is one of names. */
static bool listed(const char *name, const char *names)
{
    size_t nlen = strlen(name);
    for (const char *p = names; p != NULL && *p != '\0';) {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        if (len > 2 && p[0] == '*' && p[1] == '.') { /* ".example.com": a name under it */
            if (nlen > len - 1 && strncasecmp(name + nlen - (len - 1), p + 1, len - 1) == 0)
                return true;
        } else if (len == nlen && strncasecmp(name, p, len) == 0) {
            return true;
        }
        p = end != NULL ? end + 1 : NULL;
    }
    return false;
}

bool http_host_allowed(const char *host, const char *names)
{
    char name[HOST_NAME_MAX_LEN + 2];
    const char *colon;
    size_t len;
    if (host[0] == '[') { /* [v6]:port */
        const char *close = strchr(host, ']');
        struct in6_addr a6;
        len = close != NULL ? (size_t)(close - host - 1) : 0;
        if (close == NULL || len >= sizeof name || (close[1] != '\0' && close[1] != ':'))
            return false;
        if (close[1] == ':' && !all_digits(close + 2))
            return false;
        memcpy(name, host + 1, len);
        name[len] = '\0';
        return inet_pton(AF_INET6, name, &a6) == 1;
    }
    colon = strchr(host, ':');
    if (colon != NULL && !all_digits(colon + 1))
        return false; /* a port that is not one, or an IPv6 address without [] */
    len = colon != NULL ? (size_t)(colon - host) : strlen(host);
    if (len > 0 && host[len - 1] == '.')
        len--; /* the root: "localhost." is localhost */
    if (len == 0 || len >= sizeof name)
        return false;
    for (size_t i = 0; i < len; i++)
        name[i] = (char)tolower((unsigned char)host[i]);
    name[len] = '\0';
    struct in_addr a4;
    if (inet_pton(AF_INET, name, &a4) == 1)
        return true;
    if (strcmp(name, "localhost") == 0 || (len > 10 && strcmp(name + len - 10, ".localhost") == 0))
        return true; /* never asked of DNS (RFC 6761) */
    return listed(name, names);
}

bool http_listen_loopback(const struct http_listen *l)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (l->unix_socket)
        return false;
    if (strcasecmp(l->host, "localhost") == 0)
        return true;
    if (inet_pton(AF_INET, l->host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, l->host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}
