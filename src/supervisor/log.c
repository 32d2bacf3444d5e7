/* log.c -- see log.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "logfmt.h"
#include "utf8.h"

struct log {
    int fd;
    enum log_level min;
    bool text, color; /* log.format: text lines, coloured */
    char *node;
    char *group;
    log_observer_fn observer;
    void *observer_ctx;
};

static const char *const level_names[] = {"debug", "info", "warn", "error"};

const char *log_level_name(enum log_level lvl)
{
    return ((int)lvl >= 0 && lvl <= LOG_ERROR) ? level_names[lvl] : "info";
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
    if (lg->node == NULL || lg->group == NULL) {
        log_free(lg);
        return NULL;
    }
    return lg;
}

void log_free(struct log *lg)
{
    if (lg == NULL)
        return;
    free(lg->node);
    free(lg->group);
    free(lg);
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

void log_rfc3339_ms(int64_t unix_ms, char *buf, size_t len)
{
    time_t s = (time_t)(unix_ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(unix_ms % 1000));
}

void log_rfc3339(int64_t unix_s, char *buf, size_t len)
{
    time_t s = (time_t)unix_s;
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
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

void log_emit_at(struct log *lg, enum log_level lvl, enum log_event ev, cJSON *fields)
{
    if (lg->observer != NULL)
        lg->observer(lg->observer_ctx, ev, lvl, fields);
    if (!log_enabled(lg, lvl)) {
        cJSON_Delete(fields);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char when[40];
    log_rfc3339_ms((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, when, sizeof when);

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
            cJSON_AddItemToObject(o, f->string, f);
            f = next;
        }
        cJSON_Delete(fields);
    }
    if (o != NULL)
        fix_strings(o->child);
    char *line = lg->text ? logfmt_event(o, lg->color) : cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (line == NULL)
        return;
    size_t n = strlen(line);
    line[n] = '\n'; /* the buffer has room: it held the NUL */
    write_all(lg->fd, line, n + 1);
    free(line);
}

void log_emit(struct log *lg, enum log_event ev, cJSON *fields)
{
    log_emit_at(lg, log_event_level(ev), ev, fields);
}
