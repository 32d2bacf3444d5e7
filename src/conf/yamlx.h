/* yamlx.h -- a small YAML document tree with positions, for baton's files.
 *
 * Built on libyaml's event API. Every node carries the 1-based line and
 * column where it starts, so that the schema code (config.c, jobs.c) can
 * report "file:line:col: message". The tree is deliberately narrower than
 * YAML: one document per stream, string keys only, no anchors, aliases or
 * tags, no duplicate keys in a mapping, nesting at most YAMLX_MAX_DEPTH
 * deep, and no NUL inside a string. Each of those is an error with a
 * position. Scalars stay text: the schema decides what a value means.
 *
 * Also here: the text conversions (duration, integer, boolean, with bounds)
 * that both files use, so that a duration is spelled and checked the same
 * everywhere.
 */
#ifndef BATON_YAMLX_H
#define BATON_YAMLX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define YAMLX_MAX_DEPTH 64
#define YAMLX_MAX_FILE  (16 * 1024 * 1024)

enum yamlx_kind { YAMLX_SCALAR, YAMLX_SEQ, YAMLX_MAP };
enum yamlx_style { YAMLX_PLAIN, YAMLX_SINGLE, YAMLX_DOUBLE, YAMLX_BLOCK };

struct yamlx_node;

struct yamlx_pair {
    struct yamlx_node *key; /* always a scalar */
    struct yamlx_node *value;
};

struct yamlx_node {
    enum yamlx_kind kind;
    int line, col;         /* 1-based start */
    int end_line, end_col; /* 1-based, just past the end */
    /* YAMLX_SCALAR */
    char *str; /* NUL-terminated; never contains a NUL */
    size_t len;
    enum yamlx_style style;
    bool null; /* plain "", "~", "null", "Null" or "NULL" */
    /* YAMLX_SEQ */
    struct yamlx_node **items;
    size_t nitems;
    /* YAMLX_MAP, in document order */
    struct yamlx_pair *pairs;
    size_t npairs;
};

/* Where errors go: "name:line:col: message" into buf (always NUL-terminated
 * when len > 0, truncated if need be). */
struct yamlx_diag {
    const char *name;
    char *buf;
    size_t len;
};

/* Reads the whole file into *buf (owned; free with free(); NUL-terminated,
 * *len excludes the NUL). Returns 0, or -1 with "path: message" in d. */
int yamlx_read_file(const char *path, char **buf, size_t *len, const struct yamlx_diag *d);

/* Parses buf[0..len). Returns 0 and *root (owned; free with yamlx_free), which
 * is NULL for an empty stream (nothing but comments, or a single null
 * document); or -1 with the error in d and *root NULL. */
int yamlx_parse(const char *buf, size_t len, const struct yamlx_diag *d, struct yamlx_node **root);

/* Frees n and its children. NULL is a no-op. */
void yamlx_free(struct yamlx_node *n);

/* Formats "name:line:col: message" at n (or "name: message" when n is NULL)
 * into d. Returns -1, so that callers can `return yamlx_errorf(...)`. */
int yamlx_errorf(const struct yamlx_diag *d, const struct yamlx_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same at an explicit 1-based position (line 0: no position). */
int yamlx_errorf_at(const struct yamlx_diag *d, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Writes the first n names (stopping at a NULL) into buf as "a, b, c",
 * truncated to len. For messages that list the allowed values. */
void yamlx_list_names(const char *const *names, size_t n, char *buf, size_t len);

/* Writes s as a double-quoted, escaped string of bounded length (long strings
 * end in "..."), for messages. Returns buf. */
const char *yamlx_quote(const char *s, char *buf, size_t len);

/* "a mapping", "a sequence", "an empty value" or "a string". Static. */
const char *yamlx_kind_name(const struct yamlx_node *n);

/* Returns: the value of key in map (a YAMLX_MAP), or NULL. Borrowed. */
const struct yamlx_node *yamlx_map_get(const struct yamlx_node *map, const char *key);

/* Returns: the candidate closest to word when it is a likely typo (edit
 * distance <= 2 and small against the length), else NULL. Borrowed from
 * cands. */
const char *yamlx_suggest(const char *word, const char *const *cands, size_t n);

/* ---- text conversions (no position; message in msg) ---- */

/* A duration: "0", or cron_duration_parse()'s "500ms", "10s", "1h30m". */
int yamlx_parse_duration(const char *s, int64_t *ms, char *msg, size_t msglen);
/* A decimal integer, optional leading '-', no spaces, no leading zero
 * ("010": octal to YAML 1.1), within int64_t. */
int yamlx_parse_int(const char *s, int64_t *v, char *msg, size_t msglen);
/* true/false (also True, TRUE, yes, no, on, off in those three cases). */
int yamlx_parse_bool(const char *s, bool *v, char *msg, size_t msglen);
/* The same with bounds: "\"20m\" is out of range (100ms..10m)". */
int yamlx_duration_in(const char *s, int64_t min, int64_t max, int64_t *out, char *msg,
                      size_t msglen);
int yamlx_int_in(const char *s, int64_t min, int64_t max, int64_t *out, char *msg, size_t msglen);
/* Writes ms as the shortest duration that reads back the same ("1m30s",
 * "3s333ms", "0"). Returns buf. */
const char *yamlx_format_duration(int64_t ms, char *buf, size_t len);

/* n must be a scalar that is not empty. Returns 0, or -1 with the error at n
 * in d: "what: expected <expected>, got a mapping" or "what: missing value
 * (expected <expected>)". */
int yamlx_expect_scalar(const struct yamlx_diag *d, const struct yamlx_node *n, const char *what,
                        const char *expected);

/* The column of character `offset` (0-based) of scalar n's text in the file
 * when it can be known exactly (a one-line plain or quoted scalar without
 * escapes), else n->col. */
int yamlx_scalar_col(const struct yamlx_node *n, size_t offset);

#endif /* BATON_YAMLX_H */
