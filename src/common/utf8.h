/* utf8.h -- bytes to valid JSON text, and to text safe to show on a
 * terminal. Pure: no I/O, no allocation but the results of
 * json_quote_bytes(), utf8_fix() and utf8_term_dup().
 *
 * Every log line must be valid JSON (RFC 8259: UTF-8) whatever a job
 * prints or Redis answers. Strings are checked against RFC 3629 (no
 * overlong forms, no surrogates, nothing above U+10FFFF); each maximal
 * invalid subpart becomes U+FFFD, the replacement character (the
 * WHATWG/Unicode "maximal subpart" practice), so that valid text is never
 * altered and invalid text is never dropped. NUL and other control
 * characters are escaped (\u0000), never cut. */
#ifndef BATON_UTF8_H
#define BATON_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at s[0..n), or 0 when s starts with
 * an invalid or truncated sequence; *sub gets the length of its maximal
 * invalid subpart then (>= 1). n > 0. */
size_t utf8_seq(const unsigned char *s, size_t n, size_t *sub);

/* True when s[0..n) is valid UTF-8 (NULs allowed). */
bool utf8_valid(const char *s, size_t n);

/* Where to cut s[0..n), a buffer whose end may be the first bytes of a
 * character still to come: the start of that unfinished character when
 * s ends with the valid beginning of a multi-byte sequence, else n. (A
 * long line cut there splits no character.) */
size_t utf8_cut(const char *s, size_t n);

/* Returns: s[0..n) as a JSON string literal with its quotes (owned; free
 * with free()), control characters and NUL escaped, invalid UTF-8 replaced
 * by U+FFFD (and *replaced set when that happened; may be NULL). NULL on
 * ENOMEM. */
char *json_quote_bytes(const char *s, size_t n, bool *replaced);

/* Returns: a copy of the NUL-terminated s with invalid UTF-8 replaced by
 * U+FFFD (owned; free()); NULL on ENOMEM. */
char *utf8_fix(const char *s);

/* Text for a person's terminal: what a job printed, a pause reason, a node
 * name read from Redis may hold escape sequences (a title change, a screen
 * clear, a cursor move) or line breaks that would forge lines. Every
 * character a terminal acts on, or that reorders what it shows, becomes a
 * visible escape: \n \r \t, \x1b for the other C0 controls and DEL,
 * \u009b for C1 controls and the bidirectional overrides (U+202A-202E,
 * U+2066-2069); each byte of invalid UTF-8 becomes \xff. Everything else,
 * backslashes included, is unchanged. The one helper for every text baton
 * shows a person (the text log, baton logs, status, history, check);
 * JSON output is JSON's business.
 *
 * utf8_term_escape writes s[0..n) so into buf, cut (between escapes and
 * characters) to len - 1 bytes and NUL-terminated when len > 0; buf may be
 * NULL when len is 0. Returns: the length of the whole text, without its
 * NUL (as snprintf). */
size_t utf8_term_escape(const char *s, size_t n, char *buf, size_t len);
/* The same for the NUL-terminated s. Returns buf. */
const char *utf8_term(const char *s, char *buf, size_t len);
/* Returns: the NUL-terminated s so, whole (owned; free()); NULL on ENOMEM. */
char *utf8_term_dup(const char *s);

#endif /* BATON_UTF8_H */
