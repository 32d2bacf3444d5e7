/* statuspage.h -- the status page that `baton run` serves at GET /: the
 * status document (status.h) with ops.c's "view", as one small HTML page.
 *
 * Self-contained (no external script, style, font or image), readable on
 * a phone (a viewport, tables that scroll sideways) and in a terminal
 * browser (plain tables, no script needed). It refreshes itself: with
 * JavaScript it fetches itself every STATUSPAGE_REFRESH_S and swaps in the
 * new body and title (the title names the leader); without, a <noscript>
 * meta refresh reloads it. Rendered from the same document as /status, so
 * the two never disagree.
 *
 * With the control API (http.control, api.h) the page asks for a token
 * once (statuspage_login() is what a request without one gets), keeps it
 * in the tab's sessionStorage and sends it as an Authorization header
 * with every fetch (no cookie: another site's page cannot use it). Each
 * job links to its recent runs and their output (fetched with the token,
 * shown in a panel); an operate token's page also has Run now, Pause
 * (asking for a reason) and Resume beside each job, and Step down beside
 * the leader. What the script writes into the page goes through
 * textContent: a reason or an output line with markup shows as text. */
#ifndef BATON_STATUSPAGE_H
#define BATON_STATUSPAGE_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define STATUSPAGE_REFRESH_S 2

/* Returns: the page (owned; free()), *len its length; NULL on ENOMEM.
 * now_ms: the wall clock (Unix ms), for "as of" and relative times. */
char *statuspage_render(const cJSON *doc, int64_t now_ms, size_t *len);

enum statuspage_mode {
    STATUSPAGE_PLAIN,   /* no control API */
    STATUSPAGE_READ,    /* control API, a read token (or public_read without one) */
    STATUSPAGE_OPERATE, /* control API, an operate token: the buttons */
};

/* statuspage_render() for mode. */
char *statuspage_render_mode(const cJSON *doc, int64_t now_ms, enum statuspage_mode mode,
                             size_t *len);

/* The page without data, asking for a token (control API). Returns: owned
 * (free()), *len its length; NULL on ENOMEM. */
char *statuspage_login(size_t *len);

#endif /* BATON_STATUSPAGE_H */
