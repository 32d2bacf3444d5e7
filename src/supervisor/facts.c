/* facts.c -- see facts.h. */
#include <stdio.h>

#include "facts.h"

static const char *const durings[DURING_COUNT] = {
#define LOG_DURING_NAME_(id, name) [DURING_##id] = name,
    LOG_DURINGS(LOG_DURING_NAME_)
#undef LOG_DURING_NAME_
};

const char *log_during_name(enum log_during d)
{
    return ((int)d >= 0 && d < DURING_COUNT) ? durings[d] : "?";
}

/* The events whose observers read more than their kind (ops.c, metrics.c):
 * what each sets is in struct log_facts. */
static const bool carried[LE_COUNT] = {
    [LE_TRANSITION] = true,       [LE_FOLLOWING] = true,        [LE_REDIS_UNREACHABLE] = true,
    [LE_SIGNAL_RECEIVED] = true,  [LE_JOB_START] = true,        [LE_JOB_END] = true,
    [LE_JOB_RETRY] = true,        [LE_TICK_SKIPPED] = true,     [LE_HOOK_END] = true,
    [LE_TRIGGER_RECEIVED] = true, [LE_TRIGGER_REJECTED] = true, [LE_TRIGGER_LEFT] = true,
    [LE_TRIGGER_LOST] = true,     [LE_JOB_PAUSED] = true,       [LE_JOB_RESUMED] = true,
    [LE_REASSIGNED] = true,       [LE_LOST] = true,
};

bool log_facts_carried(enum log_event ev)
{
    return (int)ev >= 0 && ev < LE_COUNT && carried[ev];
}

void log_facts_guard(const struct log_facts *f, char *buf, size_t len)
{
    if (f->guard == G_ALWAYS && len > 0)
        buf[0] = '\0';
    else if (f->guard != G_ALWAYS)
        snprintf(buf, len, "%s%s", f->guard_held ? "" : "not ", machine_guard_name(f->guard));
}
