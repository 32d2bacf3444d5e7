/* output.c -- see output.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output.h"
#include "utf8.h"

#define TAIL_FIRST_SIZE 4096 /* the ring's first allocation; it doubles up to cap */

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

/* ---- the tail ---- */

void output_tail_init(struct output_tail *t, size_t cap)
{
    memset(t, 0, sizeof *t);
    t->cap = cap;
}

void output_tail_free(struct output_tail *t)
{
    free(t->buf);
    t->buf = NULL;
    t->size = t->start = t->len = 0;
}

/* Makes room for want bytes (at most cap) while the ring has not wrapped:
 * its bytes lie at [start, start + len). Returns false when it cannot grow. */
static bool tail_grow(struct output_tail *t, size_t want)
{
    size_t size = t->size == 0 ? TAIL_FIRST_SIZE : t->size;
    char *b;

    while (size < want)
        size *= 2;
    if (size > t->cap)
        size = t->cap;
    if (size <= t->size)
        return true;
    b = malloc(size);
    if (b == NULL)
        return false;
    /* Linear copy of the ring. */
    for (size_t i = 0; i < t->len; i++)
        b[i] = t->buf[(t->start + i) % t->size];
    free(t->buf);
    t->buf = b;
    t->size = size;
    t->start = 0;
    return true;
}

void output_tail_append(struct output_tail *t, const char *p, size_t n)
{
    if (n == 0)
        return;
    t->total += (int64_t)n;
    if (t->cap == 0)
        return;
    if (n >= t->cap) { /* only its end stays */
        p += n - t->cap;
        n = t->cap;
        t->len = 0;
        t->start = 0;
    }
    if (t->len + n > t->size && t->size < t->cap && !tail_grow(t, t->len + n)) {
        /* Out of memory: what is kept stays; the rest counts as dropped. */
        if (t->size == 0)
            return;
    }
    if (t->size == 0)
        return;
    if (n > t->size) { /* the ring could not grow enough: its end only */
        p += n - t->size;
        n = t->size;
    }
    if (t->len + n > t->size) { /* the oldest bytes go */
        size_t over = t->len + n - t->size;
        t->start = (t->start + over) % t->size;
        t->len -= over;
    }
    size_t at = (t->start + t->len) % t->size, first = t->size - at;
    if (first > n)
        first = n;
    memcpy(t->buf + at, p, first);
    memcpy(t->buf, p + first, n - first);
    t->len += n;
}

void output_tail_append_text(struct output_tail *t, const char *p, size_t n)
{
    const unsigned char *u = (const unsigned char *)p;
    size_t run = 0; /* start of the valid bytes not yet appended */

    if (t->cap == 0) { /* off: counted only */
        t->total += (int64_t)n;
        return;
    }
    for (size_t i = 0; i < n;) {
        size_t sub, k = utf8_seq(u + i, n - i, &sub);
        if (k == 0 || u[i] == '\0') {
            output_tail_append(t, p + run, i - run);
            output_tail_append(t, replacement, 3);
            i += k == 0 ? sub : 1;
            run = i;
        } else {
            i += k;
        }
    }
    output_tail_append(t, p + run, n - run);
}

char *output_tail_take(struct output_tail *t, size_t *len, int64_t *dropped)
{
    char *s = NULL;
    size_t n = t->len, skip = 0;

    *len = 0;
    *dropped = t->total;
    if (t->cap > 0)
        s = malloc(n + 1);
    if (s == NULL)
        goto out;
    for (size_t i = 0; i < n; i++)
        s[i] = t->buf[(t->start + i) % t->size];
    s[n] = '\0';
    if ((int64_t)n < t->total) {
        /* Something was dropped in front: start at the next line, or at
         * least at the next character. */
        const char *nl = memchr(s, '\n', n);
        if (nl != NULL && (size_t)(nl - s) + 1 < n) {
            skip = (size_t)(nl - s) + 1;
        } else {
            while (skip < n && skip < 3 && ((unsigned char)s[skip] & 0xC0) == 0x80)
                skip++;
        }
        memmove(s, s + skip, n - skip + 1);
        n -= skip;
    }
    *len = n;
    *dropped = t->total - (int64_t)n;
out:
    output_tail_free(t);
    t->total = 0;
    return s;
}

/* ---- the streams ---- */

static void emit_piece(struct output_stream *o, const char *p, size_t n, bool partial, bool nl)
{
    bool replaced = false;
    char *quoted = json_quote_bytes(p, n, &replaced);
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "job", o->labels->job);
    cJSON_AddStringToObject(f, "run_id", o->labels->run_id);
    if (o->labels->hook != NULL)
        cJSON_AddStringToObject(f, "hook", o->labels->hook);
    cJSON_AddStringToObject(f, "stream", o->name);
    if (quoted != NULL)
        cJSON_AddRawToObject(f, "line", quoted);
    else
        cJSON_AddStringToObject(f, "line", ""); /* out of memory: the line is lost, said so */
    free(quoted);
    if (partial)
        cJSON_AddBoolToObject(f, "partial", true);
    if (o->continued)
        cJSON_AddBoolToObject(f, "continued", true);
    if (replaced)
        cJSON_AddBoolToObject(f, "invalid_utf8", true);
    if (quoted == NULL)
        cJSON_AddBoolToObject(f, "lost", true);
    log_emit(o->log, o->labels->event, f);
    if (o->tail != NULL) {
        output_tail_append_text(o->tail, p, n);
        if (nl)
            output_tail_append(o->tail, "\n", 1);
    }
    o->continued = partial;
}

/* Emits the complete lines in the buffer, and a full buffer as a piece of
 * a longer line (cut between characters); keeps the rest. */
static void flush_lines(struct output_stream *o, bool eof)
{
    size_t start = 0;
    for (size_t i = 0; i < o->len; i++)
        if (o->buf[i] == '\n') {
            emit_piece(o, o->buf + start, i - start, false, true);
            start = i + 1;
        }
    if (start < o->len && eof) {
        emit_piece(o, o->buf + start, o->len - start, false, false);
        start = o->len;
    } else if (start == 0 && o->len == sizeof o->buf) {
        /* A character straddling the end waits for its last bytes. */
        size_t cut = utf8_cut(o->buf, o->len);
        emit_piece(o, o->buf, cut, true, false);
        start = cut;
    }
    memmove(o->buf, o->buf + start, o->len - start);
    o->len -= start;
}

/* At most this much output is read per wake-up: the loop is level
 * triggered, so the rest waits for its next turn, and a job writing as fast
 * as it can never keeps the loop from its timers (the lease's renewal). */
#define READ_PER_WAKE (64 * 1024)

/* Reads what is there, up to READ_PER_WAKE; returns false at EOF or error. */
static bool read_output(struct output_stream *o)
{
    size_t got = 0;
    for (;;) {
        if (got >= READ_PER_WAKE)
            return true;
        ssize_t n = read(o->w.fd, o->buf + o->len, sizeof o->buf - o->len);
        if (n > 0) {
            o->len += (size_t)n;
            got += (size_t)n;
            flush_lines(o, false);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
}

void output_abandon(struct output_stream *o)
{
    if (o->w.fd < 0)
        return;
    loop_del(o->loop, &o->w);
    close(o->w.fd);
    o->w.fd = -1;
}

void output_close(struct output_stream *o)
{
    if (o->w.fd < 0)
        return;
    /* What the run left in the pipe (64 KiB, or more from what it left
     * running), bounded: 1 MiB. */
    for (int i = 0; i < 16 && read_output(o); i++)
        ;
    flush_lines(o, true);
    output_abandon(o);
}

static void on_output(void *ctx, struct loop_watch *w, uint32_t events)
{
    struct output_stream *o = ctx;
    (void)w;
    (void)events;
    if (!read_output(o)) {
        flush_lines(o, true);
        output_abandon(o);
    }
}

int output_open(struct output_stream *o, struct log *log, struct loop *loop,
                const struct output_labels *labels, const char *name, struct output_tail *tail,
                int fd)
{
    *o = OUTPUT_STREAM_CLOSED;
    o->log = log;
    o->loop = loop;
    o->labels = labels;
    o->name = name;
    o->tail = tail;
    fcntl(fd, F_SETFL, O_NONBLOCK);
    o->w = (struct loop_watch){.fd = fd, .cb = on_output, .ctx = o};
    int e = loop_add(loop, &o->w);
    if (e != 0) {
        close(fd);
        o->w.fd = -1;
    }
    return e;
}
