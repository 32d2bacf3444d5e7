/* log.c -- see log.h. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "logfmt.h"
#include "utf8.h"

/* How much may wait for a slow reader (the lines and their bookkeeping).
 * Beyond LOG_QUEUE_MAX, the bulk lines (a run's or a hook's output) are
 * dropped; the others -- the story of states, runs and errors, a few lines
 * a second -- have LOG_QUEUE_RESERVE more before they are dropped too, so
 * that they stay complete through any stall short of a very long one. The
 * line that reports drops is never dropped: it is queued once the queue is
 * down to LOG_QUEUE_MAX / 4, or when the log is freed. */
#define LOG_QUEUE_MAX     (4u << 20)
#define LOG_QUEUE_RESERVE (1u << 20)

/* Lines dropped and not yet reported. */
struct drops {
    int64_t lines, bytes;
    int64_t since_ms; /* the first one's time, Unix ms */
    int64_t by_event[LE_COUNT];
};

struct line {
    struct line *next;
    size_t len;
    char *text; /* the formatted line, its NUL replaced by '\n'; owned */
};

struct log {
    int fd;
    enum log_level min;
    bool text, color; /* log.format: text lines, coloured */
    char *node;
    char *group;
    /* The writer's queue; mu guards it and the drop counts. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct line *head, *tail;
    size_t queued; /* bytes, with each line's bookkeeping */
    int held;      /* log_hold() without its log_release(): the writer is not woken */
    bool stop;
    struct drops drops;     /* not yet reported */
    uint64_t dropped_total; /* every line dropped since log_new */
    pthread_t writer;
    bool writer_started;
    log_observer_fn observer;
    void *observer_ctx;
};

static void *writer_main(void *arg);
static char *format_line(const struct log *lg, bool text, bool color, enum log_level lvl,
                         enum log_event ev, cJSON *fields);
static void report_drops(struct log *lg, bool now);

const char *log_level_name(enum log_level lvl)
{
    return ((int)lvl >= 0 && lvl <= LOG_ERROR) ? log_level_names[lvl] : "info";
}

struct log *log_new(int fd, enum log_level min, const char *node, const char *group)
{
    struct log *lg = calloc(1, sizeof *lg);
    if (lg == NULL)
        return NULL;
    lg->fd = fd;
    lg->min = min;
    lg->node = strdup(node);
    lg->group = strdup(group);
    pthread_mutex_init(&lg->mu, NULL);
    pthread_cond_init(&lg->cv, NULL);
    if (lg->node == NULL || lg->group == NULL ||
        pthread_create(&lg->writer, NULL, writer_main, lg) != 0) {
        log_free(lg);
        return NULL;
    }
    lg->writer_started = true;
    return lg;
}

void log_free(struct log *lg)
{
    if (lg == NULL)
        return;
    if (lg->writer_started) {
        lg->observer = NULL; /* no one follows a log being freed */
        report_drops(lg, true);
        pthread_mutex_lock(&lg->mu);
        lg->stop = true;
        lg->held = 0;
        pthread_cond_signal(&lg->cv);
        pthread_mutex_unlock(&lg->mu);
        pthread_join(lg->writer, NULL); /* it writes what is queued first */
    }
    while (lg->head != NULL) {
        struct line *l = lg->head;
        lg->head = l->next;
        free(l->text);
        free(l);
    }
    pthread_cond_destroy(&lg->cv);
    pthread_mutex_destroy(&lg->mu);
    free(lg->node);
    free(lg->group);
    free(lg);
}

void log_hold(struct log *lg)
{
    pthread_mutex_lock(&lg->mu);
    lg->held++;
    pthread_mutex_unlock(&lg->mu);
}

void log_release(struct log *lg)
{
    pthread_mutex_lock(&lg->mu);
    if (lg->held > 0 && --lg->held == 0 && lg->head != NULL)
        pthread_cond_signal(&lg->cv);
    pthread_mutex_unlock(&lg->mu);
}

void log_set_level(struct log *lg, enum log_level min)
{
    lg->min = min;
}

void log_set_format(struct log *lg, enum log_format format)
{
    const char *no = getenv("NO_COLOR");
    bool tty = isatty(lg->fd) == 1;
    lg->text = format == LOG_FORMAT_TEXT || (format == LOG_FORMAT_AUTO && tty);
    lg->color = lg->text && tty && (no == NULL || *no == '\0');
}

void log_set_observer(struct log *lg, log_observer_fn fn, void *ctx)
{
    lg->observer = fn;
    lg->observer_ctx = ctx;
}

bool log_enabled(const struct log *lg, enum log_level lvl)
{
    return lvl >= lg->min;
}

cJSON *log_fields(void)
{
    return cJSON_CreateObject();
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* nowhere to report a broken log */
        p += w;
        n -= (size_t)w;
    }
}

/* True for the lines dropped first: a run's or a hook's output, the bulk
 * of any log. */
static bool is_bulk(enum log_event ev)
{
    return ev == LE_JOB_OUTPUT || ev == LE_HOOK_OUTPUT;
}

/* The most that may be queued once a line of ev is added. */
static size_t queue_limit(enum log_event ev)
{
    if (ev == LE_LOG_LINES_DROPPED)
        return SIZE_MAX;
    return is_bulk(ev) ? LOG_QUEUE_MAX : LOG_QUEUE_MAX + LOG_QUEUE_RESERVE;
}

/* Queues a formatted line (NUL-terminated, without its newline) for the
 * writer, or drops it -- counted -- when there is no room for a line of
 * ev (queue_limit). Takes ownership of text. Returns true when dropped
 * lines wait to be reported. */
static bool enqueue(struct log *lg, enum log_event ev, char *text)
{
    /* The line keeps the formatted buffer (no copy): its NUL becomes the
     * newline, the room is there. */
    struct line *l = malloc(sizeof *l);
    size_t n = strlen(text), cost = n + 1 + sizeof *l;
    pthread_mutex_lock(&lg->mu);
    if (l == NULL || lg->queued + cost > queue_limit(ev)) {
        struct drops *d = &lg->drops;
        if (d->lines == 0)
            d->since_ms = wall_ms();
        d->lines++;
        d->bytes += (int64_t)n + 1;
        d->by_event[ev]++;
        lg->dropped_total++;
        pthread_mutex_unlock(&lg->mu);
        free(text);
        free(l);
        return true;
    }
    text[n] = '\n';
    *l = (struct line){.next = NULL, .len = n + 1, .text = text};
    if (lg->tail != NULL)
        lg->tail->next = l;
    else
        lg->head = l;
    lg->tail = l;
    lg->queued += cost;
    if (lg->held == 0)
        pthread_cond_signal(&lg->cv);
    bool pending = lg->drops.lines > 0;
    pthread_mutex_unlock(&lg->mu);
    return pending;
}

/* Logs what was dropped since the last report (log_lines_dropped), once
 * the queue is down to a quarter of its bound (the reader caught up), or
 * at once when now. Nothing when nothing was dropped. */
static void report_drops(struct log *lg, bool now)
{
    struct drops d;
    pthread_mutex_lock(&lg->mu);
    bool due = lg->drops.lines > 0 && (now || lg->queued <= LOG_QUEUE_MAX / 4);
    if (due) {
        d = lg->drops;
        lg->drops = (struct drops){0};
    }
    pthread_mutex_unlock(&lg->mu);
    if (!due)
        return;
    char since[40];
    log_rfc3339_ms(d.since_ms, since, sizeof since);
    cJSON *f = log_fields();
    cJSON_AddNumberToObject(f, "lines", (double)d.lines);
    cJSON_AddNumberToObject(f, "bytes", (double)d.bytes);
    cJSON *by = cJSON_AddObjectToObject(f, "events");
    for (int e = 0; e < LE_COUNT; e++)
        if (d.by_event[e] > 0)
            cJSON_AddNumberToObject(by, log_event_name((enum log_event)e), (double)d.by_event[e]);
    cJSON_AddStringToObject(f, "since", since);
    log_emit(lg, LE_LOG_LINES_DROPPED, f); /* through log_emit: the observer sees it */
}

uint64_t log_dropped_lines(struct log *lg)
{
    pthread_mutex_lock(&lg->mu);
    uint64_t n = lg->dropped_total;
    pthread_mutex_unlock(&lg->mu);
    return n;
}

/* The writer: lines in order, blocking on the reader as long as it takes,
 * without holding the queue. */
static void *writer_main(void *arg)
{
    struct log *lg = arg;
    pthread_mutex_lock(&lg->mu);
    for (;;) {
        while (lg->head == NULL && !lg->stop)
            pthread_cond_wait(&lg->cv, &lg->mu);
        if (lg->head == NULL)
            break; /* stopping, all written */
        struct line *l = lg->head;
        lg->head = l->next;
        if (lg->head == NULL)
            lg->tail = NULL;
        lg->queued -= l->len + sizeof *l;
        pthread_mutex_unlock(&lg->mu);
        write_all(lg->fd, l->text, l->len);
        free(l->text);
        free(l);
        pthread_mutex_lock(&lg->mu);
    }
    pthread_mutex_unlock(&lg->mu);
    return NULL;
}

/* Replaces every string value in o's tree that is not valid UTF-8. Raw
 * items (job output, already quoted by json_quote_bytes) are left alone. */
static void fix_strings(cJSON *o)
{
    for (cJSON *it = o; it != NULL; it = it->next) {
        if (cJSON_IsString(it) && it->valuestring != NULL &&
            !utf8_valid(it->valuestring, strlen(it->valuestring))) {
            char *fixed = utf8_fix(it->valuestring);
            if (fixed != NULL) {
                free(it->valuestring);
                it->valuestring = fixed;
            } else {
                it->valuestring[0] = '\0'; /* out of memory: drop, never emit invalid JSON */
            }
        }
        if (it->child != NULL)
            fix_strings(it->child);
    }
}

void log_emit_facts_at(struct log *lg, enum log_level lvl, enum log_event ev, cJSON *fields,
                       const struct log_facts *facts)
{
    if (lg->observer != NULL)
        lg->observer(lg->observer_ctx, ev, lvl, facts);
    bool pending = true; /* unknown */
    if (log_enabled(lg, lvl)) {
        char *line = format_line(lg, lg->text, lg->color, lvl, ev, fields);
        if (line != NULL)
            pending = enqueue(lg, ev, line);
    } else {
        cJSON_Delete(fields);
    }
    /* At every event, debug ones too: the report comes soon after the
     * reader catches up, even on a node that logs little at its level. */
    if (pending && ev != LE_LOG_LINES_DROPPED)
        report_drops(lg, false);
}

/* Turns every integral number in o's tree into a raw item printed with
 * %lld: cJSON prints a number beyond int's range (terms, fences, times in
 * ms) through %1.15g and reads it back with sscanf to check it, a cost
 * paid on the loop for every such field. Same text, as JSON numbers. */
static void integers_plain(cJSON *o)
{
    for (cJSON *it = o; it != NULL; it = it->next) {
        double v = it->valuedouble;
        if (cJSON_IsNumber(it) && !(it->type & cJSON_IsReference) &&
            v >= -9007199254740992.0 && v <= 9007199254740992.0 && v == (double)(long long)v) {
            char buf[24];
            snprintf(buf, sizeof buf, "%lld", (long long)v);
            char *raw = strdup(buf);
            if (raw != NULL) { /* else printed as before */
                it->type = cJSON_Raw | (it->type & cJSON_StringIsConst);
                it->valuestring = raw;
            }
        }
        if (it->child != NULL)
            integers_plain(it->child);
    }
}

/* Adds field f (owned) to the line o under a name none of o's members
 * has, so that every line has one member per name: readers of JSON
 * disagree on which of two wins (jq keeps the last, cJSON the first). A
 * field named as one of the head (ts, level, event, node, group) or as an
 * earlier field -- a bug of the code that emits it -- gets '_' appended
 * until its name is free; its value is kept. */
static void add_field(cJSON *o, cJSON *f)
{
    const char *key = f->string != NULL ? f->string : "";
    char name[64];
    size_t n = strlen(key);
    bool free_name = cJSON_GetObjectItemCaseSensitive(o, key) == NULL;
    if (!free_name && n + 2 <= sizeof name) {
        memcpy(name, key, n + 1);
        do {
            name[n++] = '_';
            name[n] = '\0';
            free_name = cJSON_GetObjectItemCaseSensitive(o, name) == NULL;
        } while (!free_name && n + 2 <= sizeof name);
        key = name;
    }
    if (!free_name || !cJSON_AddItemToObject(o, key, f))
        cJSON_Delete(f); /* out of memory, or no free name within 63 bytes: none of ours */
}

/* The line of event ev (without its newline; owned), text or JSON, or NULL
 * on ENOMEM. Consumes fields. */
static char *format_line(const struct log *lg, bool text, bool color, enum log_level lvl,
                         enum log_event ev, cJSON *fields)
{
    char when[40];
    log_rfc3339_ms(wall_ms(), when, sizeof when);

    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "ts", when);
    cJSON_AddStringToObject(o, "level", log_level_name(lvl));
    cJSON_AddStringToObject(o, "event", log_event_name(ev));
    cJSON_AddStringToObject(o, "node", lg->node);
    cJSON_AddStringToObject(o, "group", lg->group);
    if (fields != NULL) {
        cJSON *f = fields->child;
        while (f != NULL) {
            cJSON *next = f->next;
            cJSON_DetachItemViaPointer(fields, f);
            add_field(o, f);
            f = next;
        }
        cJSON_Delete(fields);
    }
    if (o != NULL)
        fix_strings(o->child);
    if (o != NULL && !text)
        integers_plain(o->child);
    char *line = text ? logfmt_event(o, color) : cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return line;
}

void log_emit(struct log *lg, enum log_event ev, cJSON *fields)
{
    log_emit_facts_at(lg, log_event_level(ev), ev, fields, NULL);
}

void log_emit_at(struct log *lg, enum log_level lvl, enum log_event ev, cJSON *fields)
{
    log_emit_facts_at(lg, lvl, ev, fields, NULL);
}

void log_emit_facts(struct log *lg, enum log_event ev, cJSON *fields, const struct log_facts *facts)
{
    log_emit_facts_at(lg, log_event_level(ev), ev, fields, facts);
}
