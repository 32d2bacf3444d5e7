/* schema.h -- one engine for baton.yaml and jobs.yaml: a table of fields,
 * read from a YAML mapping with positions (yamlx.h), defaulted, documented.
 *
 * A file's schema is an array of struct schema_field: key (dotted for a
 * section: "lease.ttl" is `lease: {ttl: ...}`), type, offset of the field
 * in the file's struct, default (written as in the file and read by the
 * same code as a value from the file), bounds, hooks and documentation.
 * Reading, defaults, the reference (`baton check --reference`, the man
 * pages) and the effective configuration all loop over the table;
 * the only per-key code is in the hooks.
 *
 * Errors are "file:line:col: <prefix><key>: message", pointing at the
 * value (or the key, for an unknown key), with a suggestion for a likely
 * typo. The caller rejects the file whole on the first error. */
#ifndef BATON_SCHEMA_H
#define BATON_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "yamlx.h"

enum schema_type {
    SCHEMA_STRING,   /* char *; min/max bound the length; check() validates */
    SCHEMA_PATH,     /* char *; relative values resolve against ctx->dir, or are
                        refused with SCHEMA_ABSOLUTE */
    SCHEMA_DURATION, /* int64_t ms within min..max; `word` stands for word_value */
    SCHEMA_INT,      /* int64_t, or int when width is sizeof(int); min..max */
    SCHEMA_ENUM,     /* int; names[] lists the spellings, index = value */
    SCHEMA_BOOL,     /* bool: true/false (yes/no/on/off) */
    SCHEMA_TEXT,     /* a scalar read by set_text() */
    SCHEMA_NODE,     /* any node, read by set_node() */
};

#define SCHEMA_REQUIRED    0x01u /* must be set (no default) */
#define SCHEMA_SECRET      0x02u /* a URL that may hold a password: shown redacted */
#define SCHEMA_NO_DEFAULTS 0x04u /* jobs.yaml: not allowed under defaults: */
#define SCHEMA_ABSOLUTE    0x08u /* SCHEMA_PATH: must be absolute */
#define SCHEMA_SHORTHAND   0x10u /* a dotted field whose section may be written as a
                                    scalar: `history: 500` is `history: {runs: 500}`
                                    (at most one such field per section) */

struct schema_ctx {
    const struct yamlx_diag *d; /* where errors go */
    const char *dir;            /* of the file, for relative paths ("" for none) */
    void *user;                 /* the file's own state, for the hooks */
};

struct schema_field {
    const char *key;
    enum schema_type type;
    size_t offset;       /* of the field in the file's struct */
    size_t width;        /* SCHEMA_INT: sizeof the field (default int64_t) */
    const char *def;     /* default, written as in the file; NULL: none or computed */
    const char *def_doc; /* the default as the docs say it (when not `def`) */
    /* Computes the default (def == NULL), after every row above has its
     * value. Returns 0, or -1 with a message in msg. */
    int (*def_fn)(void *obj, struct schema_ctx *ctx, char *msg, size_t msglen);
    int64_t min, max;      /* bounds: value, or string length */
    const char *word;      /* SCHEMA_DURATION: a word allowed instead ("last") */
    int64_t word_value;    /* ... and what it stands for */
    /* SCHEMA_STRING: extra validation. Returns 0, or -1 with a message. */
    int (*check)(const char *s, char *msg, size_t msglen);
    /* SCHEMA_TEXT: converts and stores text. Returns 0, or -1 with a message. */
    int (*set_text)(void *obj, struct schema_ctx *ctx, const char *text, char *msg,
                    size_t msglen);
    /* SCHEMA_NODE: reads n, reporting its own errors (with `what` first)
     * through ctx->d. Returns 0 or -1. Other types may have one too: it
     * reads a value that is not a scalar (`redis:` as a list). */
    int (*set_node)(void *obj, struct schema_ctx *ctx, const struct yamlx_node *n,
                    const char *what);
    const char *const *names; /* SCHEMA_ENUM: NULL-terminated */
    const char *expected;     /* what a value looks like, for "expected ..." */
    const char *type_doc;     /* the type column of the reference (else from type) */
    const char *bounds_doc;   /* the bounds column (else from the bounds) */
    const char *doc;          /* one line: what it means */
    unsigned flags;
};

struct schema {
    const struct schema_field *fields;
    size_t n;
    bool has_defaults_section; /* jobs.yaml: the reference says "Not in defaults:" */
};

/* Where reading found each field: at[i] is the node that set fields[i]
 * (NULL: not set). Sized by the caller, s->n entries. */
typedef const struct yamlx_node *schema_at;

/* Reads the mapping map into obj: each key is a field (or a section of
 * dotted fields), in file order. prefix starts every message ("job \"x\": "
 * or ""). only_defaults: refuse SCHEMA_NO_DEFAULTS keys (`defaults:`).
 * Fields already set in at[] (by a layer read before, such as a job's own
 * keys before `defaults:`) are skipped. Returns 0, or -1 with the error in
 * ctx->d. */
int schema_read_map(const struct schema *s, struct schema_ctx *ctx, const struct yamlx_node *map,
                    void *obj, schema_at *at, const char *prefix, bool only_defaults);

/* Reads one node as field f (the one path for every value). what names it
 * in messages. Returns 0, or -1 with the error in ctx->d. */
int schema_read_field(const struct schema_field *f, struct schema_ctx *ctx,
                      const struct yamlx_node *n, void *obj, const char *what);

/* Gives every field that at[] shows unset its default (def, read as file
 * text, or def_fn); reports a required field that is missing at `where`.
 * Returns 0, or -1 with the error in ctx->d. */
int schema_apply_defaults(const struct schema *s, struct schema_ctx *ctx, void *obj,
                          const schema_at *at, const struct yamlx_node *where,
                          const char *prefix);

/* The index of key in s, or -1. */
int schema_find(const struct schema *s, const char *key);

/* Frees the strings (SCHEMA_STRING, SCHEMA_PATH) of obj. Fields of other
 * types are the owner's to free. */
void schema_free_strings(const struct schema *s, void *obj);

/* Writes the reference, a Markdown table (key, type, default, bounds,
 * meaning). */
void schema_write_reference(const struct schema *s, FILE *out);

/* Writes `key: value` per field in table order (durations in their
 * shortest form, SCHEMA_SECRET values through redact()). Fields of types
 * TEXT and NODE are skipped: their owner writes them. */
void schema_write_values(const struct schema *s, const void *obj, FILE *out,
                         void (*redact)(const char *url, FILE *out));

#endif /* BATON_SCHEMA_H */
