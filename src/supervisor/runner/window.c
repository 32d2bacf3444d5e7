/* window.c -- see window.h. */
#include "jobtable.h"
#include "rtime.h"
#include "window.h"

int64_t window_ahead_ms(const struct claim_window *c, const struct jobstate *js)
{
    return js->job->concurrency == JOB_ALLOW || js->runs.running == 0 ? c->ahead_ms : 0;
}

/* When a run of the same instant was prepared before it (the batch
 * outgrew the window, rather than a loop held up or a leadership's first
 * ticks), the window doubles, once per instant. */
void window_late(const struct rctx *x, struct claim_window *c, const struct jobstate *js,
                 int64_t at, int64_t late_ms)
{
    if (window_ahead_ms(c, js) == 0 || c->prep_at != at || c->grown_at == at ||
        c->ahead_ms >= PRECLAIM_MAX_MS || loop_now() - c->lead_since < PRECLAIM_SETTLE_MS * MS)
        return;
    int64_t was = c->ahead_ms;
    c->ahead_ms = 2 * was < PRECLAIM_MAX_MS ? 2 * was : PRECLAIM_MAX_MS;
    c->grown_at = at;
    cJSON *f = log_fields();
    cJSON_AddNumberToObject(f, "ahead_ms", (double)c->ahead_ms);
    cJSON_AddNumberToObject(f, "was_ms", (double)was);
    cJSON_AddStringToObject(f, "job", js->job->name);
    cJSON_AddNumberToObject(f, "late_ms", (double)late_ms);
    log_emit(x->log, LE_CLAIM_AHEAD, f);
}

void window_went(struct claim_window *c, int64_t at)
{
    if (c->prep_at != at || c->went_at == at)
        return;
    int64_t spare = at - c->prep_done_ms, used = c->ahead_ms - spare;
    int64_t target = 2 * used > PRECLAIM_MS ? 2 * used : PRECLAIM_MS;
    c->went_at = at;
    if (spare > c->ahead_ms / 2 && target < c->ahead_ms)
        c->ahead_ms -= (c->ahead_ms - target + 7) / 8;
}

void window_lead(struct claim_window *c)
{
    c->lead_since = loop_now();
}

void window_prepared(struct claim_window *c, int64_t at)
{
    c->prep_at = at;
    c->prep_done_ms = rtime_wall_ms();
}
