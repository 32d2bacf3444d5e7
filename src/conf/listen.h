/* listen.h -- the values of http.listen and http.allowed_hosts: the
 * address the HTTP endpoint binds, the names it answers to, and which Host
 * header such a server answers. Pure: no socket, no libmicrohttpd (the
 * server is src/supervisor/ops/http.h), so that checking a configuration
 * needs nothing of it.
 *
 * DNS rebinding: a TCP server answers only requests whose Host header
 * (its port aside) is an IP address literal, localhost or a name under
 * .localhost, the machine's host name (or its first label), the host of
 * http.listen, or one of the allowed names ("*.example.com" stands for any
 * name under example.com); others get 421 Misdirected Request. A browser
 * sends an IP literal only to the host of that address, without asking
 * DNS, so a page of another site cannot make it name ours. A Unix socket
 * serves any Host. */
#ifndef BATON_LISTEN_H
#define BATON_LISTEN_H

#include <stdbool.h>
#include <stddef.h>

#define HTTP_MAX_HOSTS 1024 /* the allowed names, comma-separated, at most */

/* A parsed `http.listen`: "host:port", "[v6addr]:port" or "unix:/path". */
struct http_listen {
    bool unix_socket;
    char host[256]; /* or the socket's path */
    char port[8];
};

/* Parses spec (not "off"). Returns 0, or -1 with a message in msg. */
int http_listen_parse(const char *spec, struct http_listen *out, char *msg, size_t msglen);

/* True when l is a TCP address of this machine's loopback only: localhost,
 * 127.0.0.0/8 or ::1 (not a Unix socket, not a wildcard). */
bool http_listen_loopback(const struct http_listen *l);

/* Checks one allowed name of http.allowed_hosts: a host name without a
 * port (letters, digits, - and _ in dot-separated labels), or "*." and
 * such a name. Returns 0, or -1 with a message (without the name) in msg. */
int http_allowed_name_check(const char *name, char *msg, size_t msglen);

/* True when a TCP server whose allowed names are names (comma-separated,
 * each passing http_allowed_name_check; NULL or "" for none) answers a
 * request with this Host header value (not NULL): see the top of this
 * file (the server adds the machine's name and http.listen's host to
 * names). Case does not matter; the port and a trailing dot are ignored. */
bool http_host_allowed(const char *host, const char *names);

#endif /* BATON_LISTEN_H */
