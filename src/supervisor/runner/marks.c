/* marks.c -- see marks.h. */
#include "claimer.h"
#include "jobtable.h"
#include "marks.h"
#include "rtime.h"

/* js's mark (has: Redis had one, v its tick), read at now_s. */
static void take_mark(const struct rctx *x, struct marks *m, struct claimer *c, struct jobstate *js,
                      bool has, int64_t v, int64_t now_s)
{
    cJSON *f;
    switch (ticks_take_mark(&js->ticks, js->job, has, v, m->no_catchup, m->lead_wall_s, now_s)) {
    case TM_NO_CATCH_UP:
        if (m->no_catchup_logged)
            break;
        f = log_fields();
        cJSON_AddNumberToObject(f, "term", (double)x->term);
        cJSON_AddStringToObject(f, "reason",
                                "Redis failed over, restarted without persistence or lost data "
                                "since the previous term: what ran before cannot be known");
        log_emit(x->log, LE_CATCH_UP_SKIPPED, f);
        m->no_catchup_logged = true;
        break;
    case TM_NO_MARK:
        /* Said even when the server changed (a restart without persistence
         * loses the marks): without this line, the ticks of the loss window
         * went unrun with nothing saying so. */
        if (js->job->catchup_ms != 0 && js->job->enabled) {
            f = log_fields();
            cJSON_AddStringToObject(f, "job", js->job->name);
            log_emit(x->log, LE_NO_HIGH_WATER_MARK, f);
        }
        break;
    case TM_CATCH_UP: break;
    }
    if (js->claim.lost && js->claim.tick <= js->ticks.last)
        claimer_settle(x, c, js);
}

void marks_write(const struct rctx *x, struct jobstate **js, size_t n)
{
    enum { CHUNK = 256 }; /* claim_start_marks()'s limit */
    const char *names[CHUNK];
    int64_t marks[CHUNK];
    struct jobstate *which[CHUNK];
    const char *token = baton_election_token(x->election);
    for (size_t i = 0; i < n;) {
        size_t k = 0;
        for (; i < n && k < CHUNK; i++)
            if (js[i]->ticks.mark_unset) {
                which[k] = js[i];
                names[k] = js[i]->job->name;
                marks[k++] = js[i]->ticks.last;
            }
        if (k == 0 || token == NULL || !rctx_may_block(x) ||
            claim_start_marks(x->client, x->group, baton_election_key(x->election), token, names,
                              marks, k) != 0)
            return;
        for (size_t j = 0; j < k; j++)
            which[j]->ticks.mark_unset = false;
    }
}

bool marks_read(const struct rctx *x, struct marks *m, struct claimer *c, struct jobstate **js,
                size_t n)
{
    const char *names[CLAIM_MARKS_MAX];
    bool has[CLAIM_MARKS_MAX];
    int64_t v[CLAIM_MARKS_MAX], now_s = rtime_wall_ms() / 1000;
    if (n > CLAIM_MARKS_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        names[i] = js[i]->job->name;
    if (!rctx_may_block(x) || claim_read_marks(x->client, x->group, names, n, now_s, has, v) != 0)
        return false;
    for (size_t i = 0; i < n; i++)
        take_mark(x, m, c, js[i], has[i], v[i], now_s);
    marks_write(x, js, n);
    return true;
}

void marks_lead(const struct rctx *x, struct marks *m, struct claimer *c, struct jobstate *states,
                bool server_changed)
{
    m->lead_wall_s = rtime_wall_ms() / 1000;
    m->no_catchup = server_changed;
    m->no_catchup_logged = false;
    /* Every job's mark, CLAIM_MARKS_MAX per read; a job whose mark could
     * not be read reads it itself later. */
    struct jobstate *batch[CLAIM_MARKS_MAX];
    for (struct jobstate *js = states; js != NULL;) {
        size_t n = 0;
        for (; js != NULL && n < CLAIM_MARKS_MAX; js = js->next)
            batch[n++] = js;
        if (!marks_read(x, m, c, batch, n))
            break;
    }
}
