/* schema.c -- see schema.h. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"

#define SCHEMA_MAX_FIELDS 64 /* per file; checked against s->n */

int schema_find(const struct schema *s, const char *key)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->fields[i].key, key) == 0)
            return (int)i;
    return -1;
}

/* True when key is a section: the prefix of some field's dotted key. */
static bool is_section(const struct schema *s, const char *key)
{
    size_t n = strlen(key);

    for (size_t i = 0; i < s->n; i++)
        if (strncmp(s->fields[i].key, key, n) == 0 && s->fields[i].key[n] == '.')
            return true;
    return false;
}

/* The field of section that stands for the whole section when it is
 * written as a scalar (SCHEMA_SHORTHAND), or -1. */
static int shorthand_of(const struct schema *s, const char *section, bool only_defaults)
{
    size_t n = strlen(section);

    for (size_t i = 0; i < s->n; i++)
        if ((s->fields[i].flags & SCHEMA_SHORTHAND) &&
            strncmp(s->fields[i].key, section, n) == 0 && s->fields[i].key[n] == '.' &&
            strchr(s->fields[i].key + n + 1, '.') == NULL &&
            !(only_defaults && (s->fields[i].flags & SCHEMA_NO_DEFAULTS)))
            return (int)i;
    return -1;
}

/* The distinct names one level below section ("" for the top) that are
 * allowed, into names (each a copy in store). Returns how many. */
static size_t child_names(const struct schema *s, const char *section, bool only_defaults,
                          char store[][64], const char *names[])
{
    size_t plen = strlen(section), n = 0;

    for (size_t i = 0; i < s->n && n < SCHEMA_MAX_FIELDS; i++) {
        const char *k = s->fields[i].key, *rest, *dot;
        bool seen = false;

        if (only_defaults && (s->fields[i].flags & SCHEMA_NO_DEFAULTS))
            continue;
        if (plen > 0 && !(strncmp(k, section, plen) == 0 && k[plen] == '.'))
            continue;
        rest = plen > 0 ? k + plen + 1 : k;
        dot = strchr(rest, '.');
        snprintf(store[n], 64, "%.*s", (int)(dot != NULL ? (size_t)(dot - rest) : strlen(rest)),
                 rest);
        for (size_t j = 0; j < n; j++)
            seen = seen || strcmp(names[j], store[n]) == 0;
        if (!seen) {
            names[n] = store[n];
            n++;
        }
    }
    return n;
}

static char *join_path(const char *dir, const char *rel)
{
    size_t dl = strlen(dir), rl = strlen(rel);
    char *p;

    if (rel[0] == '/' || dl == 0)
        return strdup(rel);
    p = malloc(dl + rl + 2);
    if (p == NULL)
        return NULL;
    memcpy(p, dir, dl);
    if (dir[dl - 1] != '/')
        p[dl++] = '/';
    memcpy(p + dl, rel, rl + 1);
    return p;
}

static void store_int(void *field, size_t width, int64_t v)
{
    if (width == sizeof(int))
        *(int *)field = (int)v;
    else
        *(int64_t *)field = v;
}

/* Converts text to f's type, checks it and stores it in obj. The one path
 * for scalar values from a file and for defaults. Returns 0, or -1 with a
 * message (without the key) in msg. */
static int set_scalar(const struct schema_field *f, struct schema_ctx *ctx, void *obj,
                      const char *text, char *msg, size_t msglen)
{
    void *field = (char *)obj + f->offset;
    char q[96], all[256];
    int64_t v;

    switch (f->type) {
    case SCHEMA_STRING:
    case SCHEMA_PATH: {
        size_t n = strlen(text);
        char *copy;

        if (f->min > 0 && n == 0) {
            snprintf(msg, msglen, "must not be empty");
            return -1;
        }
        if (f->max > 0 && (int64_t)n > f->max) {
            snprintf(msg, msglen, "too long (at most %" PRId64 " characters)", f->max);
            return -1;
        }
        if (f->type == SCHEMA_PATH && (f->flags & SCHEMA_ABSOLUTE) && text[0] != '/') {
            snprintf(msg, msglen, "%s: must be an absolute path", yamlx_quote(text, q, sizeof q));
            return -1;
        }
        if (f->check != NULL && f->check(text, msg, msglen) != 0)
            return -1;
        copy = f->type == SCHEMA_PATH ? join_path(ctx->dir != NULL ? ctx->dir : "", text)
                                      : strdup(text);
        if (copy == NULL) {
            snprintf(msg, msglen, "out of memory");
            return -1;
        }
        free(*(char **)field);
        *(char **)field = copy;
        return 0;
    }
    case SCHEMA_DURATION:
        if (f->word != NULL && strcmp(text, f->word) == 0) {
            *(int64_t *)field = f->word_value;
            return 0;
        }
        return yamlx_duration_in(text, f->min, f->max, (int64_t *)field, msg, msglen);
    case SCHEMA_INT:
        if (yamlx_int_in(text, f->min, f->max, &v, msg, msglen) != 0)
            return -1;
        store_int(field, f->width, v);
        return 0;
    case SCHEMA_ENUM:
        for (int i = 0; f->names[i] != NULL; i++) {
            if (strcmp(f->names[i], text) == 0) {
                *(int *)field = i;
                return 0;
            }
        }
        yamlx_list_names(f->names, SIZE_MAX, all, sizeof all);
        snprintf(msg, msglen, "expected one of %s, got %s", all, yamlx_quote(text, q, sizeof q));
        return -1;
    case SCHEMA_BOOL: return yamlx_parse_bool(text, (bool *)field, msg, msglen);
    case SCHEMA_TEXT: return f->set_text(obj, ctx, text, msg, msglen);
    case SCHEMA_NODE: break;
    }
    snprintf(msg, msglen, "internal error: no text form");
    return -1;
}

static const char *expected_text(const struct schema_field *f)
{
    if (f->expected != NULL)
        return f->expected;
    switch (f->type) {
    case SCHEMA_DURATION: return "a duration like 500ms, 10s, 1h30m";
    case SCHEMA_INT: return "an integer";
    case SCHEMA_BOOL: return "true or false";
    case SCHEMA_ENUM: return "one of its names";
    default: return "a string";
    }
}

int schema_read_field(const struct schema_field *f, struct schema_ctx *ctx,
                      const struct yamlx_node *n, void *obj, const char *what)
{
    char msg[512];

    if (f->type == SCHEMA_NODE || (f->set_node != NULL && n->kind != YAMLX_SCALAR))
        return f->set_node(obj, ctx, n, what);
    if (yamlx_expect_scalar(ctx->d, n, what, expected_text(f)) != 0)
        return -1;
    /* In YAML a quoted value is a string: `enabled: "false"` reads as
     * true to other tools (a non-empty string), so baton takes booleans
     * and integers only as they are typed, unquoted. */
    if ((f->type == SCHEMA_BOOL || f->type == SCHEMA_INT) && n->style != YAMLX_PLAIN) {
        char q[96];
        return yamlx_errorf(ctx->d, n, "%s: expected %s, got the string %s (remove the quotes)",
                            what, expected_text(f), yamlx_quote(n->str, q, sizeof q));
    }
    if (set_scalar(f, ctx, obj, n->str, msg, sizeof msg) != 0)
        return yamlx_errorf(ctx->d, n, "%s: %s", what, msg);
    return 0;
}

/* Rejects key k found in section, suggesting what was probably meant. */
static int unknown_key(const struct schema *s, struct schema_ctx *ctx, const struct yamlx_node *k,
                       const char *section, const char *full, const char *prefix,
                       bool only_defaults)
{
    char store[SCHEMA_MAX_FIELDS][64], all[512], q[96];
    const char *names[SCHEMA_MAX_FIELDS], *best;
    size_t n = child_names(s, section, only_defaults, store, names);
    int fi = schema_find(s, full);

    if (only_defaults && fi >= 0 && (s->fields[fi].flags & SCHEMA_NO_DEFAULTS))
        return yamlx_errorf(ctx->d, k, "%s\"%s\" cannot have a default (set it on each job)",
                            prefix, s->fields[fi].key);
    if (strchr(k->str, '.') != NULL && (fi >= 0 || is_section(s, full)))
        return yamlx_errorf(ctx->d, k,
                            "%sunknown key %s (nest it: write each part of the dotted name as "
                            "its own mapping level)",
                            prefix, yamlx_quote(k->str, q, sizeof q));
    best = yamlx_suggest(k->str, names, n);
    if (best != NULL)
        return yamlx_errorf(ctx->d, k, "%sunknown key %s (did you mean \"%s\"?)", prefix,
                            yamlx_quote(k->str, q, sizeof q), best);
    yamlx_list_names(names, n, all, sizeof all);
    return yamlx_errorf(ctx->d, k, "%sunknown key %s (known keys: %s)", prefix,
                        yamlx_quote(k->str, q, sizeof q), all);
}

static int read_section(const struct schema *s, struct schema_ctx *ctx,
                        const struct yamlx_node *map, void *obj, schema_at *at, const char *prefix,
                        bool only_defaults, const char *section)
{
    for (size_t i = 0; i < map->npairs; i++) {
        const struct yamlx_node *k = map->pairs[i].key, *v = map->pairs[i].value;
        bool dotted = strchr(k->str, '.') != NULL;
        char full[160], what[400];
        int fi = -1;

        if (section[0] != '\0')
            snprintf(full, sizeof full, "%s.%s", section, k->str);
        else
            snprintf(full, sizeof full, "%s", k->str);
        if (!dotted)
            fi = schema_find(s, full);
        if (fi >= 0 && !(only_defaults && (s->fields[fi].flags & SCHEMA_NO_DEFAULTS))) {
            const struct schema_field *f = &s->fields[fi];

            if (at[fi] != NULL)
                continue; /* set by a layer read before (a job's own value over defaults:) */
            snprintf(what, sizeof what, "%s%s", prefix, f->key);
            if (schema_read_field(f, ctx, v, obj, what) != 0)
                return -1;
            at[fi] = v;
        } else if (fi < 0 && !dotted && is_section(s, full)) {
            int si = shorthand_of(s, full, only_defaults);

            if (v->kind == YAMLX_SCALAR && v->null)
                continue; /* `lease:` with everything commented out */
            if (v->kind == YAMLX_SCALAR && si >= 0) {
                /* `history: 500` for `history: {runs: 500}`: named as written. */
                if (at[si] != NULL)
                    continue;
                snprintf(what, sizeof what, "%s%s", prefix, full);
                if (schema_read_field(&s->fields[si], ctx, v, obj, what) != 0)
                    return -1;
                at[si] = v;
                continue;
            }
            if (v->kind != YAMLX_MAP)
                return yamlx_errorf(ctx->d, v, "%s%s: expected a mapping, got %s", prefix, full,
                                    yamlx_kind_name(v));
            if (read_section(s, ctx, v, obj, at, prefix, only_defaults, full) != 0)
                return -1;
        } else {
            return unknown_key(s, ctx, k, section, full, prefix, only_defaults);
        }
    }
    return 0;
}

int schema_read_map(const struct schema *s, struct schema_ctx *ctx, const struct yamlx_node *map,
                    void *obj, schema_at *at, const char *prefix, bool only_defaults)
{
    return read_section(s, ctx, map, obj, at, prefix, only_defaults, "");
}

int schema_apply_defaults(const struct schema *s, struct schema_ctx *ctx, void *obj,
                          const schema_at *at, const struct yamlx_node *where,
                          const char *prefix)
{
    for (size_t i = 0; i < s->n; i++) {
        const struct schema_field *f = &s->fields[i];
        char msg[512];
        int r;

        if (at[i] != NULL)
            continue;
        if (f->flags & SCHEMA_REQUIRED)
            return yamlx_errorf(ctx->d, where, "%smissing required key \"%s\"", prefix, f->key);
        if (f->def != NULL)
            r = set_scalar(f, ctx, obj, f->def, msg, sizeof msg);
        else if (f->def_fn != NULL)
            r = f->def_fn(obj, ctx, msg, sizeof msg);
        else
            continue; /* no default: the zero value */
        if (r != 0)
            return yamlx_errorf(ctx->d, where, "%s%s: default: %s", prefix, f->key, msg);
    }
    return 0;
}

void schema_free_strings(const struct schema *s, void *obj)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->fields[i].type == SCHEMA_STRING || s->fields[i].type == SCHEMA_PATH) {
            char **field = (char **)((char *)obj + s->fields[i].offset);
            free(*field);
            *field = NULL;
        }
}

static const char *type_name(const struct schema_field *f)
{
    if (f->type_doc != NULL)
        return f->type_doc;
    switch (f->type) {
    case SCHEMA_STRING: return "string";
    case SCHEMA_PATH: return "path";
    case SCHEMA_DURATION: return "duration";
    case SCHEMA_INT: return "integer";
    case SCHEMA_ENUM: return "enum";
    case SCHEMA_BOOL: return "bool";
    case SCHEMA_TEXT:
    case SCHEMA_NODE: break;
    }
    return "string";
}

static void write_bounds(const struct schema_field *f, FILE *out)
{
    char lo[32], hi[32], all[256];

    if (f->bounds_doc != NULL) {
        fputs(f->bounds_doc, out);
        return;
    }
    switch (f->type) {
    case SCHEMA_DURATION:
        fprintf(out, "%s..%s", yamlx_format_duration(f->min, lo, sizeof lo),
                yamlx_format_duration(f->max, hi, sizeof hi));
        break;
    case SCHEMA_INT: fprintf(out, "%" PRId64 "..%" PRId64, f->min, f->max); break;
    case SCHEMA_ENUM:
        yamlx_list_names(f->names, SIZE_MAX, all, sizeof all);
        fputs(all, out);
        break;
    case SCHEMA_STRING:
    case SCHEMA_PATH:
        if (f->max > 0)
            fprintf(out, "%" PRId64 "-%" PRId64 " chars", f->min, f->max);
        break;
    default: break;
    }
}

void schema_write_reference(const struct schema *s, FILE *out)
{
    fputs("| key | type | default | bounds | meaning |\n", out);
    fputs("|---|---|---|---|---|\n", out);
    for (size_t i = 0; i < s->n; i++) {
        const struct schema_field *f = &s->fields[i];

        fprintf(out, "| `%s` | %s | ", f->key, type_name(f));
        if (f->def_doc != NULL)
            fputs(f->def_doc, out);
        else if (f->def != NULL)
            fprintf(out, "`%s`", f->def);
        fputs(" | ", out);
        write_bounds(f, out);
        fprintf(out, " | %s%s", f->doc,
                s->has_defaults_section && (f->flags & SCHEMA_NO_DEFAULTS)
                    ? " Not in `defaults:`."
                    : "");
        if (f->flags & SCHEMA_SHORTHAND) {
            const char *dot = strrchr(f->key, '.');
            fprintf(out, " `%.*s: VALUE` is short for it.", (int)(dot - f->key), f->key);
        }
        fputs(" |\n", out);
    }
}

static void write_string(const char *s, FILE *out)
{
    char q[512];

    for (const char *p = s; *p != '\0'; p++) {
        if ((unsigned char)*p < 0x20 || *p == '"' || *p == '#') {
            fputs(yamlx_quote(s, q, sizeof q), out);
            return;
        }
    }
    fputs(s, out);
}

void schema_write_values(const struct schema *s, const void *obj, FILE *out,
                         void (*redact)(const char *url, FILE *out))
{
    for (size_t i = 0; i < s->n; i++) {
        const struct schema_field *f = &s->fields[i];
        const void *field = (const char *)obj + f->offset;
        char buf[32];

        if (f->type == SCHEMA_TEXT || f->type == SCHEMA_NODE)
            continue;
        fprintf(out, "%s: ", f->key);
        switch (f->type) {
        case SCHEMA_STRING:
        case SCHEMA_PATH: {
            const char *v = *(char *const *)field;
            if (v == NULL)
                fputs("~", out);
            else if ((f->flags & SCHEMA_SECRET) && redact != NULL)
                redact(v, out);
            else
                write_string(v, out);
            break;
        }
        case SCHEMA_DURATION:
            fputs(yamlx_format_duration(*(const int64_t *)field, buf, sizeof buf), out);
            break;
        case SCHEMA_INT:
            fprintf(out, "%" PRId64,
                    f->width == sizeof(int) ? (int64_t) * (const int *)field
                                            : *(const int64_t *)field);
            break;
        case SCHEMA_ENUM: fputs(f->names[*(const int *)field], out); break;
        case SCHEMA_BOOL: fputs(*(const bool *)field ? "true" : "false", out); break;
        default: break;
        }
        fputc('\n', out);
    }
}
