/* output.h -- what a child prints: its stdout and stderr as JSON log lines,
 * and the tail of it kept in memory.
 *
 * A run (run.h) and a hook (hook.h) both read their child's two pipes the
 * same way: each stream is cut into lines that become log lines of one
 * event (job_output, hook_output), always valid JSON (utf8.h): invalid
 * UTF-8 becomes U+FFFD, NUL and control characters are escaped, and a line
 * longer than OUTPUT_LINE_MAX is written in pieces marked `partial` (all
 * but the last) and `continued` (all but the first), so that a child that
 * prints 100 MB without a newline costs OUTPUT_LINE_MAX of memory.
 *
 * The tail (struct output_tail) keeps the last `cap` bytes of the lines of
 * both streams in the order they were logged, as text: the same
 * replacements as the log (invalid UTF-8 and NUL become U+FFFD; other bytes
 * stay as printed), each line ended by its newline. It is a ring that grows
 * up to cap as output comes (a quiet run costs nothing), then drops its
 * oldest bytes; when taken, it starts at a line (or, for a tail that holds
 * no line break, at a character) and says how many bytes of text were
 * dropped before it. Single-threaded, on the daemon's loop. */
#ifndef BATON_OUTPUT_H
#define BATON_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "log.h"
#include "loop.h"

#define OUTPUT_LINE_MAX 4096

/* ---- the tail ---- */

struct output_tail {
    char *buf;     /* a ring of size bytes (grown up to cap), or NULL */
    size_t size;
    size_t cap;    /* bytes kept at most; 0: the tail is off */
    size_t start;  /* first byte kept */
    size_t len;    /* bytes kept */
    int64_t total; /* bytes of text appended in all */
};

/* Sets up an empty tail of at most cap bytes (0: off). Allocates nothing. */
void output_tail_init(struct output_tail *t, size_t cap);
/* Appends p[0..n) as it is (the caller made it text). When memory runs
 * out, the tail keeps what it had and counts the rest as dropped. */
void output_tail_append(struct output_tail *t, const char *p, size_t n);
/* Appends p[0..n) as text: invalid UTF-8 (each maximal invalid subpart)
 * and NUL become U+FFFD. */
void output_tail_append_text(struct output_tail *t, const char *p, size_t n);
/* Returns: the tail as one NUL-terminated string (owned; free()), starting
 * at a line, or at a character when it holds no line break but its last;
 * *len its length, *dropped the bytes of text appended before it. The
 * tail is left empty (its counts start again). NULL (with *len 0 and
 * *dropped the total) when the tail is off or memory runs out. */
char *output_tail_take(struct output_tail *t, size_t *len, int64_t *dropped);
/* Frees the ring. The tail stays usable (empty). */
void output_tail_free(struct output_tail *t);

/* ---- the streams ---- */

/* What every line of a stream says besides its text (borrowed; must
 * outlive the stream). */
struct output_labels {
    enum log_event event; /* LE_JOB_OUTPUT or LE_HOOK_OUTPUT */
    const char *job;
    const char *run_id;
    const char *hook; /* "on_failure" | "on_success"; NULL for a run's own output */
};

struct output_stream {
    struct loop_watch w; /* w.fd -1: closed */
    struct log *log;
    struct loop *loop;
    const struct output_labels *labels;
    const char *name;          /* "stdout" | "stderr" */
    struct output_tail *tail;  /* NULL: none */
    char buf[OUTPUT_LINE_MAX];
    size_t len;
    bool continued; /* the next piece continues a cut line */
};

/* A closed stream (output_close and output_abandon are no-ops on it). */
#define OUTPUT_STREAM_CLOSED ((struct output_stream){.w = {.fd = -1}})

/* Starts reading fd (non-blocking; the stream owns it from now on) on loop,
 * logging its lines to log with labels, as stream name, and appending them
 * to tail (NULL: none). Returns 0, or an errno value (fd is closed then). */
int output_open(struct output_stream *o, struct log *log, struct loop *loop,
                const struct output_labels *labels, const char *name, struct output_tail *tail,
                int fd);
/* Reads what is left without blocking, writes the last (unterminated)
 * line, stops watching and closes the pipe. */
void output_close(struct output_stream *o);
/* Stops watching and closes the pipe without reading. */
void output_abandon(struct output_stream *o);

#endif /* BATON_OUTPUT_H */
