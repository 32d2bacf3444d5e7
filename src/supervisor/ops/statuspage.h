/* statuspage.h -- the status page that `baton run` serves at GET /: the
 * status document (status.h) with ops.c's "view", as one small HTML page.
 *
 * Self-contained (no external script, style, font or image), readable on
 * a phone (a viewport, tables that scroll sideways) and in a terminal
 * browser (plain tables, no script needed). It refreshes itself: with
 * JavaScript it fetches itself every STATUSPAGE_REFRESH_S and swaps in the
 * new body and title (the title names the leader); without, a <noscript>
 * meta refresh reloads it. Rendered from the same document as /status, so
 * the two never disagree. */
#ifndef BATON_STATUSPAGE_H
#define BATON_STATUSPAGE_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define STATUSPAGE_REFRESH_S 2

/* Returns: the page (owned; free()), *len its length; NULL on ENOMEM.
 * now_ms: the wall clock (Unix ms), for "as of" and relative times. */
char *statuspage_render(const cJSON *doc, int64_t now_ms, size_t *len);

#endif /* BATON_STATUSPAGE_H */
