/* events.c -- the table of events.h as arrays, and its reference. */
#include <stdbool.h>

#include "events.h"
#include "log.h"

/* VAR events are written at info unless the code says otherwise. */
#define LVL_DEBUG LOG_DEBUG
#define LVL_INFO  LOG_INFO
#define LVL_WARN  LOG_WARN
#define LVL_ERROR LOG_ERROR
#define LVL_VAR   LOG_INFO
#define IS_VAR_DEBUG false
#define IS_VAR_INFO  false
#define IS_VAR_WARN  false
#define IS_VAR_ERROR false
#define IS_VAR_VAR   true

static const struct {
    const char *name;
    enum log_level level;
    bool varies;
    const char *fields;
    const char *doc;
} events[LE_COUNT] = {
#define ROW_(id, nm, lvl, flds, what)                                                              \
    [LE_##id] = {.name = nm, .level = LVL_##lvl, .varies = IS_VAR_##lvl, .fields = flds, .doc = what},
    LOG_EVENTS(ROW_)
#undef ROW_
};

const char *log_event_name(enum log_event e)
{
    return ((int)e >= 0 && e < LE_COUNT) ? events[e].name : "?";
}

enum log_level log_event_level(enum log_event e)
{
    return ((int)e >= 0 && e < LE_COUNT) ? events[e].level : LOG_INFO;
}

bool log_event_varies(enum log_event e)
{
    return (int)e >= 0 && e < LE_COUNT && events[e].varies;
}

const char *log_event_fields(enum log_event e)
{
    return ((int)e >= 0 && e < LE_COUNT) ? events[e].fields : "";
}

const char *log_event_doc(enum log_event e)
{
    return ((int)e >= 0 && e < LE_COUNT) ? events[e].doc : "";
}

void log_events_write_reference(FILE *out)
{
    fputs("| event | level | fields | meaning |\n", out);
    fputs("|---|---|---|---|\n", out);
    for (int e = 0; e < LE_COUNT; e++)
        fprintf(out, "| `%s` | %s | %s | %s |\n", events[e].name,
                events[e].varies ? "varies" : log_level_name(events[e].level),
                events[e].fields[0] != '\0' ? events[e].fields : "", events[e].doc);
}
