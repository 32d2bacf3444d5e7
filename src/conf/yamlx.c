/* yamlx.c -- a small YAML document tree with positions (see yamlx.h).
 *
 * The tree is built from libyaml's parser events with an explicit stack, so
 * the depth of the input never becomes the depth of our C stack (the limit
 * YAMLX_MAX_DEPTH also bounds yamlx_free's recursion). Duplicate keys are
 * found when a mapping closes, by sorting its keys: O(n log n) however many
 * keys a hostile file holds. The scalars' values (durations, integers,
 * booleans) are read by yamlx_values.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "yamlx.h"

/* ------------------------------------------------------------------------ */
/* Messages */

static int verrorf_at(const struct yamlx_diag *d, int line, int col, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

static int verrorf_at(const struct yamlx_diag *d, int line, int col, const char *fmt, va_list ap)
{
    int n;

    if (d == NULL || d->buf == NULL || d->len == 0)
        return -1;
    if (line > 0)
        n = snprintf(d->buf, d->len, "%s:%d:%d: ", d->name, line, col);
    else
        n = snprintf(d->buf, d->len, "%s: ", d->name);
    if (n < 0 || (size_t)n >= d->len)
        return -1;
    vsnprintf(d->buf + n, d->len - (size_t)n, fmt, ap);
    /* One line whatever went into it (a token quoted by another module, a
     * file name): control characters become '?'. */
    for (char *p = d->buf; *p != '\0'; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return -1;
}

int yamlx_errorf_at(const struct yamlx_diag *d, int line, int col, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    verrorf_at(d, line, col, fmt, ap);
    va_end(ap);
    return -1;
}

int yamlx_errorf(const struct yamlx_diag *d, const struct yamlx_node *n, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    verrorf_at(d, n != NULL ? n->line : 0, n != NULL ? n->col : 0, fmt, ap);
    va_end(ap);
    return -1;
}

const char *yamlx_quote(const char *s, char *buf, size_t len)
{
    /* At most this many input bytes are shown; the rest becomes "...". */
    const size_t max_shown = 60;
    size_t o = 0, i;

    if (len == 0)
        return buf;
    if (len < 8) {
        buf[0] = '\0';
        return buf;
    }
    buf[o++] = '"';
    for (i = 0; s[i] != '\0' && i < max_shown; i++) {
        unsigned char ch = (unsigned char)s[i];
        char tmp[8];
        size_t tl;

        if (ch == '"' || ch == '\\') {
            tmp[0] = '\\';
            tmp[1] = (char)ch;
            tl = 2;
        } else if (ch == '\n') {
            memcpy(tmp, "\\n", 2);
            tl = 2;
        } else if (ch == '\t') {
            memcpy(tmp, "\\t", 2);
            tl = 2;
        } else if (ch < 0x20 || ch == 0x7f) {
            snprintf(tmp, sizeof tmp, "\\x%02x", ch);
            tl = 4;
        } else {
            tmp[0] = (char)ch;
            tl = 1;
        }
        if (o + tl + 5 > len) /* room for `..."` and the NUL */
            break;
        memcpy(buf + o, tmp, tl);
        o += tl;
    }
    if (s[i] != '\0') {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

const char *yamlx_kind_name(const struct yamlx_node *n)
{
    if (n == NULL)
        return "nothing";
    switch (n->kind) {
    case YAMLX_MAP: return "a mapping";
    case YAMLX_SEQ: return "a sequence";
    case YAMLX_SCALAR: break;
    }
    return n->null ? "an empty value" : "a string";
}

/* ------------------------------------------------------------------------ */
/* Reading a file */

/* Why this user may not read path (open said EACCES): the first directory
 * on its path that it cannot search, or the file, with its mode and owners
 * and what would give access, e.g. "permission denied: /etc/baton is 0750
 * root:baton (run as root or join the group baton)". */
static void describe_denied(const char *path, char *out, size_t len)
{
    char at[4096];
    size_t n = strlen(path);
    struct stat st;

    if (n >= sizeof at) {
        snprintf(out, len, "permission denied");
        return;
    }
    /* The shortest prefix that ends at a '/' (a directory) and cannot be
     * searched, else the file itself. */
    memcpy(at, path, n + 1);
    bool dir = false;
    for (size_t i = 1; i < n; i++) {
        if (path[i] != '/')
            continue;
        at[i] = '\0';
        if (access(at, X_OK) != 0 && errno == EACCES) {
            dir = true;
            break;
        }
        at[i] = '/';
    }
    if (stat(at, &st) != 0) {
        snprintf(out, len, "permission denied");
        return;
    }
    char owner[64], group[64], who[160];
    const struct passwd *pw = getpwuid(st.st_uid);
    const struct group *gr = getgrgid(st.st_gid);
    if (pw != NULL)
        snprintf(owner, sizeof owner, "%s", pw->pw_name);
    else
        snprintf(owner, sizeof owner, "%u", (unsigned)st.st_uid);
    if (gr != NULL)
        snprintf(group, sizeof group, "%s", gr->gr_name);
    else
        snprintf(group, sizeof group, "%u", (unsigned)st.st_gid);
    /* What the group's bits would give: search for a directory, read for
     * the file. */
    mode_t need = dir ? S_IXGRP : S_IRGRP;
    if ((st.st_mode & need) != 0 && st.st_gid != 0)
        snprintf(who, sizeof who, "run as root or join the group %s", group);
    else
        snprintf(who, sizeof who, "run as root");
    snprintf(out, len, "permission denied: %s is %04o %s:%s (%s)", at,
             (unsigned)(st.st_mode & 07777), owner, group, who);
}

int yamlx_read_file(const char *path, char **buf, size_t *len, const struct yamlx_diag *d)
{
    struct stat st;
    char *b = NULL;
    size_t cap = 0, n = 0;
    int fd, rc = -1;

    *buf = NULL;
    *len = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == EACCES) {
        char why[4608]; /* the longest path, its owners and the advice */
        describe_denied(path, why, sizeof why);
        return yamlx_errorf(d, NULL, "%s", why);
    }
    if (fd < 0)
        return yamlx_errorf(d, NULL, "cannot open: %s", strerror(errno));
    if (fstat(fd, &st) != 0) {
        yamlx_errorf(d, NULL, "cannot read: %s", strerror(errno));
        goto out_close;
    }
    if (S_ISDIR(st.st_mode)) {
        yamlx_errorf(d, NULL, "cannot read: is a directory");
        goto out_close;
    }
    for (;;) {
        ssize_t r;

        if (n + 1 >= cap) {
            size_t ncap = cap == 0 ? 4096 : cap * 2;
            char *nb;

            if (cap > YAMLX_MAX_FILE) {
                yamlx_errorf(d, NULL, "file too large (at most %d MiB)", YAMLX_MAX_FILE >> 20);
                goto out_free;
            }
            nb = realloc(b, ncap);
            if (nb == NULL) {
                yamlx_errorf(d, NULL, "out of memory");
                goto out_free;
            }
            b = nb;
            cap = ncap;
        }
        r = read(fd, b + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            yamlx_errorf(d, NULL, "cannot read: %s", strerror(errno));
            goto out_free;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > YAMLX_MAX_FILE) {
        yamlx_errorf(d, NULL, "file too large (at most %d MiB)", YAMLX_MAX_FILE >> 20);
        goto out_free;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    b = NULL;
    rc = 0;
out_free:
    free(b);
out_close:
    close(fd);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The tree */

void yamlx_free(struct yamlx_node *n)
{
    size_t i;

    if (n == NULL)
        return;
    for (i = 0; i < n->nitems; i++)
        yamlx_free(n->items[i]);
    for (i = 0; i < n->npairs; i++) {
        yamlx_free(n->pairs[i].key);
        yamlx_free(n->pairs[i].value);
    }
    free(n->items);
    free(n->pairs);
    free(n->str);
    free(n);
}

const struct yamlx_node *yamlx_map_get(const struct yamlx_node *map, const char *key)
{
    if (map == NULL || map->kind != YAMLX_MAP)
        return NULL;
    for (size_t i = 0; i < map->npairs; i++)
        if (strcmp(map->pairs[i].key->str, key) == 0)
            return map->pairs[i].value;
    return NULL;
}

/* One open collection on the builder's stack. */
struct frame {
    struct yamlx_node *node;
    struct yamlx_node *key; /* a mapping's key waiting for its value */
    size_t cap;             /* of items or pairs */
};

struct builder {
    const struct yamlx_diag *d;
    struct yamlx_node *root;
    struct frame stack[YAMLX_MAX_DEPTH];
    size_t depth;
};

static struct yamlx_node *node_new(enum yamlx_kind kind, const yaml_event_t *ev)
{
    struct yamlx_node *n = calloc(1, sizeof *n);

    if (n == NULL)
        return NULL;
    n->kind = kind;
    n->line = (int)ev->start_mark.line + 1;
    n->col = (int)ev->start_mark.column + 1;
    n->end_line = (int)ev->end_mark.line + 1;
    n->end_col = (int)ev->end_mark.column + 1;
    return n;
}

static bool is_null_text(const char *s)
{
    return strcmp(s, "") == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
           strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

static struct yamlx_node *scalar_new(const yaml_event_t *ev, const struct yamlx_diag *d)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    struct yamlx_node *n;

    if (memchr(v, '\0', len) != NULL) {
        yamlx_errorf_at(d, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
                        "a string may not contain a NUL character");
        return NULL;
    }
    n = node_new(YAMLX_SCALAR, ev);
    if (n == NULL)
        goto out_oom;
    n->str = malloc(len + 1);
    if (n->str == NULL)
        goto out_oom;
    memcpy(n->str, v, len);
    n->str[len] = '\0';
    n->len = len;
    switch (ev->data.scalar.style) {
    case YAML_SINGLE_QUOTED_SCALAR_STYLE: n->style = YAMLX_SINGLE; break;
    case YAML_DOUBLE_QUOTED_SCALAR_STYLE: n->style = YAMLX_DOUBLE; break;
    case YAML_LITERAL_SCALAR_STYLE:
    case YAML_FOLDED_SCALAR_STYLE: n->style = YAMLX_BLOCK; break;
    default: n->style = YAMLX_PLAIN; break;
    }
    n->null = n->style == YAMLX_PLAIN && is_null_text(n->str);
    return n;
out_oom:
    yamlx_free(n);
    yamlx_errorf(d, NULL, "out of memory");
    return NULL;
}

static int grow(void **v, size_t *cap, size_t n, size_t elem)
{
    void *nv;
    size_t ncap;

    if (n < *cap)
        return 0;
    ncap = *cap == 0 ? 4 : *cap * 2;
    nv = realloc(*v, ncap * elem);
    if (nv == NULL)
        return -1;
    *v = nv;
    *cap = ncap;
    return 0;
}

/* Hangs n under the innermost open collection (or makes it the root). On
 * error n is freed. */
static int attach(struct builder *b, struct yamlx_node *n)
{
    struct frame *f;

    if (b->depth == 0) {
        b->root = n;
        return 0;
    }
    f = &b->stack[b->depth - 1];
    if (f->node->kind == YAMLX_SEQ) {
        if (grow((void **)&f->node->items, &f->cap, f->node->nitems, sizeof *f->node->items) != 0)
            goto out_oom;
        f->node->items[f->node->nitems++] = n;
        return 0;
    }
    if (f->key == NULL) {
        if (n->kind != YAMLX_SCALAR) {
            yamlx_errorf(b->d, n, "a mapping key must be a string, not %s", yamlx_kind_name(n));
            yamlx_free(n);
            return -1;
        }
        f->key = n;
        return 0;
    }
    if (grow((void **)&f->node->pairs, &f->cap, f->node->npairs, sizeof *f->node->pairs) != 0)
        goto out_oom;
    f->node->pairs[f->node->npairs].key = f->key;
    f->node->pairs[f->node->npairs].value = n;
    f->node->npairs++;
    f->key = NULL;
    return 0;
out_oom:
    yamlx_free(n);
    return yamlx_errorf(b->d, NULL, "out of memory");
}

struct keyref {
    const char *s;
    size_t idx;
};

static int keyref_cmp(const void *a, const void *b)
{
    const struct keyref *x = a, *y = b;
    int c = strcmp(x->s, y->s);

    if (c != 0)
        return c;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Rejects a mapping that holds a key twice, pointing at the earliest second
 * occurrence in the file and naming the first's line. */
static int check_duplicates(const struct yamlx_diag *d, const struct yamlx_node *map)
{
    struct keyref *k;
    size_t i, dup = SIZE_MAX, first = 0;
    char q[96];

    if (map->npairs < 2)
        return 0;
    k = malloc(map->npairs * sizeof *k);
    if (k == NULL)
        return yamlx_errorf(d, NULL, "out of memory");
    for (i = 0; i < map->npairs; i++) {
        k[i].s = map->pairs[i].key->str;
        k[i].idx = i;
    }
    qsort(k, map->npairs, sizeof *k, keyref_cmp);
    for (i = 1; i < map->npairs; i++) {
        /* k[i] repeats the key of k[i-1]; the group's first entry is the
         * first occurrence, and only the group's second one matters. */
        if (strcmp(k[i].s, k[i - 1].s) == 0 && (i < 2 || strcmp(k[i - 1].s, k[i - 2].s) != 0) &&
            (dup == SIZE_MAX || k[i].idx < dup)) {
            dup = k[i].idx;
            first = k[i - 1].idx;
        }
    }
    free(k);
    if (dup == SIZE_MAX)
        return 0;
    return yamlx_errorf(d, map->pairs[dup].key, "duplicate key %s (first at line %d)",
                        yamlx_quote(map->pairs[dup].key->str, q, sizeof q),
                        map->pairs[first].key->line);
}

/* Line and column (1-based, in characters) of byte offset off in buf. */
static void offset_position(const char *buf, size_t len, size_t off, int *line, int *col)
{
    int l = 1, c = 1;

    if (off > len)
        off = len;
    for (size_t i = 0; i < off; i++) {
        unsigned char ch = (unsigned char)buf[i];

        if (ch == '\n') {
            l++;
            c = 1;
        } else if ((ch & 0xc0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

/* The byte offset in buf of a libyaml mark (0-based line, column in
 * characters), or len when it is past the end. */
static size_t mark_offset(const char *buf, size_t len, const yaml_mark_t *m)
{
    size_t off = 0, line = 0, col = 0;

    while (off < len && line < m->line)
        line += buf[off++] == '\n';
    while (off < len && buf[off] != '\n' && col < m->column) {
        off++;
        while (off < len && ((unsigned char)buf[off] & 0xc0) == 0x80)
            off++; /* the rest of a UTF-8 sequence */
        col++;
    }
    return off;
}

/* A hint for a plain value that YAML cannot read because of its first
 * character, the way an unquoted cron expression fails: "*" starts an
 * alias, "&" an anchor, "@" and "`" are reserved. Writes
 * "; a value that starts with * must be quoted (...): key: \"...\"" into
 * hint when the character at m is one of those and starts a value (after
 * "key:" or "- "); else "". */
static void quote_hint(const char *buf, size_t len, const yaml_mark_t *m, char *hint, size_t hlen)
{
    size_t off = mark_offset(buf, len, m), ls = off, ke, ks, ve;
    const char *why;
    char value[256], q[300];
    bool flow = false;

    hint[0] = '\0';
    if (off >= len)
        return;
    switch (buf[off]) {
    case '*': why = "* starts a YAML alias"; break;
    case '&': why = "& starts a YAML anchor"; break;
    case '@':
    case '`': why = "YAML reserves it"; break;
    default: return;
    }
    while (ls > 0 && buf[ls - 1] != '\n')
        ls--;
    for (size_t i = ls; i < off; i++)
        flow = flow || buf[i] == '{' || buf[i] == '[';
    /* What comes before: "key: " (or "- ", a sequence item, without a key). */
    ke = off;
    while (ke > ls && (buf[ke - 1] == ' ' || buf[ke - 1] == '\t'))
        ke--;
    if (ke == off || ke == ls || (buf[ke - 1] != ':' && buf[ke - 1] != '-'))
        return;
    ks = --ke;
    while (ks > ls && buf[ks - 1] != ' ' && buf[ks - 1] != '\t' && buf[ks - 1] != '{' &&
           buf[ks - 1] != ',' && buf[ks - 1] != '-')
        ks--;
    if (buf[ke] == '-')
        ks = ke; /* no key */
    /* The value: to the end of the line, a comment, or (in a flow
     * collection) the next ',', '}' or ']'. */
    ve = off;
    while (ve < len && buf[ve] != '\n' && buf[ve] != '\r' &&
           !(buf[ve] == '#' && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t')) &&
           !(flow && (buf[ve] == ',' || buf[ve] == '}' || buf[ve] == ']')))
        ve++;
    while (ve > off && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t'))
        ve--;
    snprintf(value, sizeof value, "%.*s", (int)(ve - off), buf + off);
    yamlx_quote(value, q, sizeof q);
    if (ks < ke)
        snprintf(hint, hlen, "; a value that starts with %c must be quoted (%s): %.*s: %s",
                 buf[off], why, (int)(ke - ks), buf + ks, q);
    else
        snprintf(hint, hlen, "; a value that starts with %c must be quoted (%s): - %s", buf[off],
                 why, q);
}

static int syntax_error(const struct yamlx_diag *d, const yaml_parser_t *p, const char *buf,
                        size_t len)
{
    char hint[400];
    const char *problem = p->problem != NULL ? p->problem : "unknown error";
    int line, col;

    switch (p->error) {
    case YAML_MEMORY_ERROR: return yamlx_errorf(d, NULL, "out of memory");
    case YAML_READER_ERROR:
        offset_position(buf, len, p->problem_offset, &line, &col);
        if (strstr(problem, "UTF-8") != NULL)
            return yamlx_errorf_at(d, line, col, "invalid YAML: the text is not UTF-8 (%s)",
                                   problem);
        if (p->problem_value != -1)
            return yamlx_errorf_at(d, line, col, "invalid YAML: %s (byte 0x%02x)", problem,
                                   (unsigned)p->problem_value & 0xffu);
        return yamlx_errorf_at(d, line, col, "invalid YAML: %s", problem);
    default: break;
    }
    line = (int)p->problem_mark.line + 1;
    col = (int)p->problem_mark.column + 1;
    /* An alias or anchor that does not scan starts at the context mark;
     * a reserved character is the problem itself. */
    if (p->context != NULL &&
        (strstr(p->context, "an alias") != NULL || strstr(p->context, "an anchor") != NULL))
        quote_hint(buf, len, &p->context_mark, hint, sizeof hint);
    else
        quote_hint(buf, len, &p->problem_mark, hint, sizeof hint);
    if (p->context != NULL)
        return yamlx_errorf_at(d, line, col, "invalid YAML: %s (%s that starts at line %d)%s",
                               problem, p->context, (int)p->context_mark.line + 1, hint);
    return yamlx_errorf_at(d, line, col, "invalid YAML: %s%s", problem, hint);
}

/* Anchors, aliases and tags make a file read differently to a human and to
 * baton; the schema has defaults: for sharing, and values are typed by key. */
static int check_node_props(const struct yamlx_diag *d, const yaml_event_t *ev,
                            const yaml_char_t *anchor, const yaml_char_t *tag)
{
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
    /* libyaml admits only [0-9A-Za-z_-] in anchor names and URI characters
     * in tags: both are safe to print as they are, truncated. */
    if (anchor != NULL)
        return yamlx_errorf_at(d, line, col, "YAML anchors (&%.40s) are not supported",
                               (const char *)anchor);
    if (tag != NULL) {
        const char *t = (const char *)tag, *core = "tag:yaml.org,2002:";

        if (strncmp(t, core, strlen(core)) == 0)
            return yamlx_errorf_at(d, line, col,
                                   "YAML tags (!!%.40s) are not supported; quote the value instead",
                                   t + strlen(core));
        return yamlx_errorf_at(d, line, col,
                               "YAML tags (%.60s) are not supported; quote the value instead", t);
    }
    return 0;
}

/* Handles one event. Returns 1 at the end of the stream, 0 to go on, -1 on
 * error. */
static int on_event(struct builder *b, const yaml_event_t *ev, int *ndocs)
{
    struct yamlx_node *n;

    switch (ev->type) {
    case YAML_STREAM_END_EVENT: return 1;
    case YAML_DOCUMENT_START_EVENT:
        if (++*ndocs > 1)
            return yamlx_errorf_at(b->d, (int)ev->start_mark.line + 1,
                                   (int)ev->start_mark.column + 1,
                                   "a second YAML document; the file must hold only one");
        return 0;
    case YAML_ALIAS_EVENT:
        return yamlx_errorf_at(b->d, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
                               "YAML aliases (*%.40s) are not supported",
                               (const char *)ev->data.alias.anchor);
    case YAML_SCALAR_EVENT:
        if (check_node_props(b->d, ev, ev->data.scalar.anchor, ev->data.scalar.tag) != 0)
            return -1;
        n = scalar_new(ev, b->d);
        if (n == NULL)
            return -1;
        return attach(b, n);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        bool seq = ev->type == YAML_SEQUENCE_START_EVENT;

        if (check_node_props(b->d, ev,
                             seq ? ev->data.sequence_start.anchor : ev->data.mapping_start.anchor,
                             seq ? ev->data.sequence_start.tag : ev->data.mapping_start.tag) != 0)
            return -1;
        if (b->depth == YAMLX_MAX_DEPTH)
            return yamlx_errorf_at(b->d, (int)ev->start_mark.line + 1,
                                   (int)ev->start_mark.column + 1,
                                   "nested more than %d levels deep", YAMLX_MAX_DEPTH);
        n = node_new(seq ? YAMLX_SEQ : YAMLX_MAP, ev);
        if (n == NULL)
            return yamlx_errorf(b->d, NULL, "out of memory");
        if (attach(b, n) != 0)
            return -1;
        b->stack[b->depth].node = n;
        b->stack[b->depth].key = NULL;
        b->stack[b->depth].cap = 0;
        b->depth++;
        return 0;
    }
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: {
        struct frame *f;

        if (b->depth == 0) /* libyaml never does this; be safe anyway */
            return yamlx_errorf(b->d, NULL, "invalid YAML: unbalanced collection");
        f = &b->stack[--b->depth];
        f->node->end_line = (int)ev->end_mark.line + 1;
        f->node->end_col = (int)ev->end_mark.column + 1;
        if (f->key != NULL) { /* cannot happen: libyaml pairs every key */
            yamlx_free(f->key);
            f->key = NULL;
        }
        if (f->node->kind == YAMLX_MAP)
            return check_duplicates(b->d, f->node);
        return 0;
    }
    default: return 0;
    }
}

int yamlx_parse(const char *buf, size_t len, const struct yamlx_diag *d, struct yamlx_node **root)
{
    struct builder b = {.d = d};
    yaml_parser_t p;
    yaml_event_t ev;
    int ndocs = 0, rc = -1;

    *root = NULL;
    if (!yaml_parser_initialize(&p))
        return yamlx_errorf(d, NULL, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
    for (;;) {
        int r;

        if (!yaml_parser_parse(&p, &ev)) {
            syntax_error(d, &p, buf, len);
            goto out_delete;
        }
        r = on_event(&b, &ev, &ndocs);
        yaml_event_delete(&ev);
        if (r < 0)
            goto out_delete;
        if (r == 1)
            break;
    }
    if (b.root != NULL && b.root->kind == YAMLX_SCALAR && b.root->null) {
        yamlx_free(b.root);
        b.root = NULL;
    }
    *root = b.root;
    b.root = NULL;
    rc = 0;
out_delete:
    /* Keys still waiting for a value are not in the tree yet. */
    for (size_t i = 0; i < b.depth; i++)
        yamlx_free(b.stack[i].key);
    yamlx_free(b.root);
    yaml_parser_delete(&p);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Suggestions: optimal string alignment distance (Levenshtein with adjacent
 * transpositions), bounded so that long inputs cost nothing. */

#define SUGGEST_MAX 40

static size_t osa_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t dist[SUGGEST_MAX + 1][SUGGEST_MAX + 1];

    if (la > SUGGEST_MAX || lb > SUGGEST_MAX)
        return SIZE_MAX;
    for (size_t i = 0; i <= la; i++)
        dist[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        dist[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t v = dist[i - 1][j] + 1;

            if (dist[i][j - 1] + 1 < v)
                v = dist[i][j - 1] + 1;
            if (dist[i - 1][j - 1] + cost < v)
                v = dist[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                dist[i - 2][j - 2] + 1 < v)
                v = dist[i - 2][j - 2] + 1;
            dist[i][j] = v;
        }
    }
    return dist[la][lb];
}

const char *yamlx_suggest(const char *word, const char *const *cands, size_t n)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;

    for (size_t i = 0; i < n; i++) {
        size_t dd = osa_distance(word, cands[i]);
        size_t l = strlen(cands[i]);

        /* A typo, not a different word: at most 2 edits, and at most a third
         * of the known key ("tll" -> "ttl", never "x" -> "ttl"). */
        if (dd <= 2 && dd * 3 <= l && dd < best_d) {
            best = cands[i];
            best_d = dd;
        }
    }
    return best;
}

/* ------------------------------------------------------------------------ */
/* Typed readers */

int yamlx_expect_scalar(const struct yamlx_diag *d, const struct yamlx_node *n, const char *what,
                        const char *expected)
{
    if (n->kind != YAMLX_SCALAR)
        return yamlx_errorf(d, n, "%s: expected %s, got %s", what, expected, yamlx_kind_name(n));
    if (n->null)
        return yamlx_errorf(d, n, "%s: missing value (expected %s)", what, expected);
    return 0;
}

int yamlx_scalar_col(const struct yamlx_node *n, size_t offset)
{
    size_t quotes;

    if (n->kind != YAMLX_SCALAR || n->line != n->end_line || offset > n->len)
        return n->col;
    switch (n->style) {
    case YAMLX_PLAIN: quotes = 0; break;
    case YAMLX_SINGLE:
    case YAMLX_DOUBLE: quotes = 2; break;
    default: return n->col;
    }
    /* Columns count characters and the value bytes: only ASCII maps 1:1, and
     * then any escape makes the source longer than the value. */
    for (size_t i = 0; i < n->len; i++)
        if ((unsigned char)n->str[i] >= 0x80)
            return n->col;
    if ((size_t)(n->end_col - n->col) != n->len + quotes)
        return n->col;
    return n->col + (int)(quotes / 2) + (int)offset;
}

void yamlx_list_names(const char *const *names, size_t n, char *buf, size_t len)
{
    size_t o = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n && names[i] != NULL && o < len; i++) {
        int w = snprintf(buf + o, len - o, "%s%s", i > 0 ? ", " : "", names[i]);

        if (w < 0)
            break;
        o += (size_t)w;
    }
}
