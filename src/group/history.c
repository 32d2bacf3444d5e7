/* history.c -- see history.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "answers.h"
#include "history.h"
#include "keys.h"
#include "rfc3339.h"
#include "utf8.h"

static const struct {
    const char *name;
    bool ran;
} outcomes[HO_COUNT] = {
#define ROW_(id, nm, r) [HO_##id] = {nm, r},
    HISTORY_OUTCOMES(ROW_)
#undef ROW_
};

const char *history_outcome_name(enum history_outcome o)
{
    return ((int)o >= 0 && o < HO_COUNT) ? outcomes[o].name : "?";
}

bool history_outcome_ran(enum history_outcome o)
{
    return (int)o >= 0 && o < HO_COUNT && outcomes[o].ran;
}

bool history_outcome_parse(const char *name, enum history_outcome *o)
{
    for (int i = 0; i < HO_COUNT; i++)
        if (strcmp(outcomes[i].name, name) == 0) {
            *o = (enum history_outcome)i;
            return true;
        }
    return false;
}

/* ---- writing ---- */

#define HIST_MAX_ARGS 48

static int push(struct history_command *c, const char *s)
{
    if (c->argc >= HIST_MAX_ARGS || (c->argv[c->argc] = strdup(s)) == NULL)
        return BATON_ENOMEM;
    c->argc++;
    return BATON_OK;
}

static int push_field(struct history_command *c, const char *name, const char *value)
{
    int rc = push(c, name);
    return rc == BATON_OK ? push(c, value) : rc;
}

static int push_i64(struct history_command *c, const char *name, int64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return push_field(c, name, buf);
}

int history_command(const struct history_rec *r, const char *group, const char *job,
                    int64_t maxlen, struct history_command *out)
{
    char sched[32], until[32], started[40], result[48];
    char *key = group_key(group, "runs:%s", job);
    int rc = BATON_ENOMEM;

    out->argc = 0;
    out->argv = calloc(HIST_MAX_ARGS + 1, sizeof *out->argv);
    if (key == NULL || out->argv == NULL)
        goto out;
    log_rfc3339(r->scheduled_at, sched, sizeof sched);
    log_rfc3339(r->until != 0 ? r->until : r->scheduled_at, until, sizeof until);
    started[0] = '\0';
    if (r->started_ms > 0)
        log_rfc3339_ms(r->started_ms, started, sizeof started);
    result[0] = '\0';
    if (r->signal != NULL && r->signal[0] != '\0')
        snprintf(result, sizeof result, "signal %s", r->signal);
    else if (r->exit_code >= 0)
        snprintf(result, sizeof result, "exit %d", r->exit_code);
    char n[24];
    snprintf(n, sizeof n, "%" PRId64, maxlen);
    if ((rc = push(out, "XADD")) != BATON_OK || (rc = push(out, key)) != BATON_OK ||
        (rc = push(out, "MAXLEN")) != BATON_OK || (rc = push(out, "~")) != BATON_OK ||
        (rc = push(out, n)) != BATON_OK || (rc = push(out, "*")) != BATON_OK ||
        (rc = push_i64(out, "v", HISTORY_VERSION)) != BATON_OK ||
        (rc = push_field(out, "run_id", r->run_id != NULL ? r->run_id : "")) != BATON_OK ||
        (rc = push_field(out, "node", r->node != NULL ? r->node : "")) != BATON_OK ||
        (rc = push_i64(out, "term", (int64_t)r->term)) != BATON_OK ||
        (rc = push_field(out, "scheduled_at", sched)) != BATON_OK ||
        (rc = push_field(out, "until", until)) != BATON_OK ||
        (rc = push_i64(out, "ticks", r->ticks)) != BATON_OK ||
        (rc = push_field(out, "trigger", r->trigger != NULL ? r->trigger : "")) != BATON_OK ||
        (rc = push_field(out, "started", started)) != BATON_OK ||
        (rc = push_i64(out, "duration_ms", r->duration_ms)) != BATON_OK ||
        (rc = push_i64(out, "attempt", r->attempt)) != BATON_OK ||
        (rc = push_field(out, "outcome", history_outcome_name(r->outcome))) != BATON_OK ||
        (rc = push_field(out, "result", result)) != BATON_OK)
        goto out;
    if (r->signal != NULL && r->signal[0] != '\0')
        rc = push_field(out, "signal", r->signal);
    else if (r->exit_code >= 0)
        rc = push_i64(out, "exit_code", r->exit_code);
    if (rc == BATON_OK && r->reason != NULL && r->reason[0] != '\0')
        rc = push_field(out, "reason", r->reason);
    if (rc == BATON_OK && r->by != NULL && r->by[0] != '\0')
        rc = push_field(out, "by", r->by);
    if (rc == BATON_OK && r->jitter_ms > 0)
        rc = push_i64(out, "jitter_ms", r->jitter_ms);
    if (rc == BATON_OK && r->dispatched)
        rc = push_i64(out, "dispatch_ms", r->dispatch_ms);
    if (rc == BATON_OK && r->has_output) {
        rc = push_field(out, "output", r->output != NULL ? r->output : "");
        if (rc == BATON_OK)
            rc = push_i64(out, "output_dropped", r->output_dropped);
    }
out:
    free(key);
    if (rc != BATON_OK)
        history_command_free(out);
    return rc;
}

int history_write(struct baton_client *c, const struct history_command *cmd)
{
    struct baton_answers *a = NULL;
    int rc = baton_client_command_all(c, cmd->argc, (const char *const *)cmd->argv, NULL, &a);
    if (rc == BATON_OK)
        rc = baton_answers_check(c, a);
    baton_answers_free(a);
    return rc;
}

void history_command_free(struct history_command *c)
{
    for (int i = 0; c->argv != NULL && i < c->argc; i++)
        free(c->argv[i]);
    free(c->argv);
    c->argv = NULL;
    c->argc = 0;
}

/* ---- reading ---- */

static const char empty[] = "";

bool history_number(const char *s, int64_t *v)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (s[0] == '\0' || errno != 0 || *end != '\0' || (s[0] != '-' && (s[0] < '0' || s[0] > '9')))
        return false;
    *v = x;
    return true;
}


bool history_parse(const struct baton_reply *e, struct history_rec *r)
{
    memset(r, 0, sizeof *r);
    r->run_id = r->node = r->trigger = r->reason = r->signal = r->outcome_name = r->by = empty;
    r->exit_code = -1;
    r->version = 1;
    r->ticks = 1;
    if (e->type != BATON_REPLY_ARRAY || e->elements != 2 ||
        e->element[0]->type != BATON_REPLY_STRING)
        return false;
    r->id = e->element[0]->str;
    const struct baton_reply *f = e->element[1];
    if (f->type == BATON_REPLY_NIL) /* a deleted entry */
        return true;
    if (f->type != BATON_REPLY_ARRAY || f->elements % 2 != 0)
        return false;
    const char *result = empty, *until = empty;
    for (size_t i = 0; i < f->elements; i += 2) {
        const struct baton_reply *name = f->element[i], *val = f->element[i + 1];
        if (name->type != BATON_REPLY_STRING || val->type != BATON_REPLY_STRING)
            return false;
        const char *k = name->str, *v = val->str;
        int64_t x, ms;
        if (strcmp(k, "v") == 0 && history_number(v, &x))
            r->version = (int)x;
        else if (strcmp(k, "run_id") == 0)
            r->run_id = v;
        else if (strcmp(k, "node") == 0)
            r->node = v;
        else if (strcmp(k, "term") == 0 && history_number(v, &x))
            r->term = (uint64_t)x;
        else if (strcmp(k, "scheduled_at") == 0 && log_parse_rfc3339_ms(v, &ms))
            r->scheduled_at = ms / 1000;
        else if (strcmp(k, "until") == 0)
            until = v;
        else if (strcmp(k, "ticks") == 0 && history_number(v, &x))
            r->ticks = x;
        else if (strcmp(k, "trigger") == 0)
            r->trigger = v;
        else if (strcmp(k, "by") == 0)
            r->by = v;
        else if (strcmp(k, "started") == 0 && log_parse_rfc3339_ms(v, &ms))
            r->started_ms = ms;
        else if (strcmp(k, "duration_ms") == 0 && history_number(v, &x))
            r->duration_ms = x;
        else if (strcmp(k, "jitter_ms") == 0 && history_number(v, &x))
            r->jitter_ms = x;
        else if (strcmp(k, "attempt") == 0 && history_number(v, &x))
            r->attempt = (int)x;
        else if (strcmp(k, "outcome") == 0) {
            r->outcome_name = v;
            r->outcome_known = history_outcome_parse(v, &r->outcome);
        } else if (strcmp(k, "exit_code") == 0 && history_number(v, &x))
            r->exit_code = (int)x;
        else if (strcmp(k, "signal") == 0)
            r->signal = v;
        else if (strcmp(k, "reason") == 0)
            r->reason = v;
        else if (strcmp(k, "result") == 0)
            result = v;
        else if (strcmp(k, "output") == 0) {
            r->has_output = true;
            r->output = v;
            r->output_len = val->len;
        } else if (strcmp(k, "output_dropped") == 0 && history_number(v, &x))
            r->output_dropped = x;
        else if (strcmp(k, "dispatch_ms") == 0 && history_number(v, &x)) {
            r->dispatched = true;
            r->dispatch_ms = x;
        }
    }
    int64_t ms;
    r->until = log_parse_rfc3339_ms(until, &ms) ? ms / 1000 : r->scheduled_at;
    /* Version 1 wrote only "exit N" / "signal X". */
    if (r->exit_code < 0 && r->signal[0] == '\0') {
        int64_t x;
        if (strncmp(result, "exit ", 5) == 0 && history_number(result + 5, &x))
            r->exit_code = (int)x;
        else if (strncmp(result, "signal ", 7) == 0)
            r->signal = result + 7;
    }
    return true;
}

/* Stream ids "ms-seq": <0, 0, >0 as a is older, the same, newer than b. */
static int id_cmp(const char *a, const char *b)
{
    unsigned long long am = strtoull(a, NULL, 10), bm = strtoull(b, NULL, 10);
    if (am != bm)
        return am < bm ? -1 : 1;
    const char *ad = strchr(a, '-'), *bd = strchr(b, '-');
    unsigned long long as = ad != NULL ? strtoull(ad + 1, NULL, 10) : 0;
    unsigned long long bs = bd != NULL ? strtoull(bd + 1, NULL, 10) : 0;
    return as < bs ? -1 : as > bs;
}

/* Two records are one (written to several masters, or written again after
 * an answer was lost) when they say the same thing. */
static bool same_record(const struct history_rec *a, const struct history_rec *b)
{
    return strcmp(a->run_id, b->run_id) == 0 && a->attempt == b->attempt &&
           a->scheduled_at == b->scheduled_at && a->until == b->until &&
           strcmp(a->outcome_name, b->outcome_name) == 0 && a->started_ms == b->started_ms;
}

static int newest_first(const void *x, const void *y)
{
    const struct history_rec *a = x, *b = y;
    return id_cmp(b->id, a->id);
}

/* Adds the records of every master's range in out->answers to out->v (room
 * for all), each once, newest first. Returns 0 or EPROTO. */
static int merge_ranges(struct history_list *out)
{
    const struct baton_answers *a = out->answers;
    for (int i = 0; i < a->n; i++) {
        const struct baton_reply *r = a->v[i].reply;
        if (a->v[i].rc != BATON_OK)
            continue;
        if (r->type != BATON_REPLY_ARRAY)
            return BATON_EPROTO;
        for (size_t j = 0; j < r->elements; j++) {
            struct history_rec rec;
            if (!history_parse(r->element[j], &rec))
                return BATON_EPROTO;
            bool seen = false;
            for (size_t k = 0; k < out->n && !seen; k++)
                seen = same_record(&out->v[k], &rec);
            if (!seen)
                out->v[out->n++] = rec;
        }
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof out->v[0], newest_first);
    return BATON_OK;
}

/* XREVRANGE key end - COUNT count on every master into out->answers, with
 * room in out->v for every entry. */
static int read_range(struct baton_client *c, const char *key, const char *end, long count,
                      struct history_list *out)
{
    char cnt[24];
    snprintf(cnt, sizeof cnt, "%ld", count);
    const char *argv[] = {"XREVRANGE", key, end, "-", "COUNT", cnt};
    int rc = baton_client_command_all(c, 6, argv, NULL, &out->answers);
    if (rc != BATON_OK)
        return rc;
    size_t total = 0;
    if ((rc = answers_arrays(c, out->answers, &total)) != BATON_OK)
        return rc;
    if (total > 0 && (out->v = calloc(total, sizeof *out->v)) == NULL)
        return BATON_ENOMEM;
    return BATON_OK;
}

int history_read(struct baton_client *c, const char *group, const char *job, long count,
                 struct history_list *out)
{
    memset(out, 0, sizeof *out);
    char *key = group_key(group, "runs:%s", job);
    if (key == NULL)
        return BATON_ENOMEM;
    int rc = read_range(c, key, "+", count, out);
    free(key);
    if (rc == BATON_OK)
        rc = merge_ranges(out);
    if (rc != BATON_OK) {
        history_list_free(out);
        return rc;
    }
    if (out->n > (size_t)count) /* every master's newest: the group's newest */
        out->n = (size_t)count;
    return BATON_OK;
}

void history_list_free(struct history_list *l)
{
    baton_answers_free(l->answers);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* The id just before id ("ms-seq") in a stream, for paging back with an
 * inclusive range. Returns false when there is none. */
static bool id_before(const char *id, char *buf, size_t len)
{
    unsigned long long ms, seq;
    char *end;

    errno = 0;
    ms = strtoull(id, &end, 10);
    if (errno != 0 || end == id || *end != '-')
        return false;
    const char *s = end + 1;
    seq = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0')
        return false;
    if (seq > 0)
        snprintf(buf, len, "%llu-%llu", ms, seq - 1);
    else if (ms > 0)
        snprintf(buf, len, "%llu-18446744073709551615", ms - 1);
    else
        return false;
    return true;
}

#define FIND_PAGE 50

/* The oldest id of a full page among the masters' answers (the newest of
 * them: every master has given all it holds above it), or NULL when every
 * master's range is exhausted. */
static const char *page_floor(const struct baton_answers *a)
{
    const char *floor = NULL;
    for (int i = 0; i < a->n; i++) {
        const struct baton_reply *r = a->v[i].reply;
        if (a->v[i].rc != BATON_OK || r->type != BATON_REPLY_ARRAY || r->elements < FIND_PAGE)
            continue;
        const struct baton_reply *last = r->element[r->elements - 1];
        if (last->type != BATON_REPLY_ARRAY || last->elements != 2 ||
            last->element[0]->type != BATON_REPLY_STRING)
            continue;
        if (floor == NULL || id_cmp(last->element[0]->str, floor) > 0)
            floor = last->element[0]->str;
    }
    return floor;
}

int history_find(struct baton_client *c, const char *group, const char *job, const char *run_id,
                 struct history_list *out)
{
    char end[64] = "+";
    int rc = BATON_OK;
    struct history_list best = {0}; /* the page holding the newest hit so far, as v[0] */

    memset(out, 0, sizeof *out);
    char *key = group_key(group, "runs:%s", job);
    if (key == NULL)
        return BATON_ENOMEM;
    /* A page from every master at a time, all at or below one id. Every
     * entry a master has not yet given is older than the newest of the
     * pages' oldest ids (the floor): a hit at or above it is the answer;
     * the next pages start just below it. */
    for (;;) {
        struct history_list page = {0};
        rc = read_range(c, key, end, FIND_PAGE, &page);
        if (rc == BATON_OK)
            rc = merge_ranges(&page);
        if (rc != BATON_OK) {
            history_list_free(&page);
            break;
        }
        size_t hit = page.n;
        for (size_t i = 0; i < page.n && hit == page.n; i++)
            if (run_id != NULL ? strcmp(page.v[i].run_id, run_id) == 0
                               : page.v[i].run_id[0] != '\0' && page.v[i].started_ms > 0)
                hit = i; /* newest first: the first is the newest */
        if (hit < page.n && (best.n == 0 || id_cmp(page.v[hit].id, best.v[0].id) > 0)) {
            page.v[0] = page.v[hit];
            page.n = 1;
            history_list_free(&best);
            best = page; /* the record's strings live in its answers */
            page = (struct history_list){0};
        }
        const char *floor =
            page_floor(best.answers != NULL && page.answers == NULL ? best.answers : page.answers);
        bool done =
            best.n > 0 && (run_id != NULL || floor == NULL || id_cmp(best.v[0].id, floor) >= 0);
        bool more = !done && floor != NULL && id_before(floor, end, sizeof end);
        history_list_free(&page);
        if (!more)
            break;
    }
    free(key);
    if (rc != BATON_OK)
        history_list_free(&best);
    *out = best;
    return rc;
}

/* ---- showing ---- */

cJSON *history_json(const struct history_rec *r)
{
    return history_json_opts(r, 0);
}

cJSON *history_json_opts(const struct history_rec *r, unsigned flags)
{
    char when[40];
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "id", r->id != NULL ? r->id : "");
    cJSON_AddNumberToObject(o, "v", r->version);
    cJSON_AddStringToObject(o, "run_id", r->run_id);
    cJSON_AddStringToObject(o, "node", r->node);
    cJSON_AddNumberToObject(o, "term", (double)r->term);
    log_rfc3339(r->scheduled_at, when, sizeof when);
    cJSON_AddStringToObject(o, "scheduled_at", when);
    log_rfc3339(r->until, when, sizeof when);
    cJSON_AddStringToObject(o, "until", when);
    if (r->ticks > 0)
        cJSON_AddNumberToObject(o, "ticks", (double)r->ticks);
    else
        cJSON_AddNullToObject(o, "ticks");
    cJSON_AddStringToObject(o, "trigger", r->trigger);
    if (r->by != NULL && r->by[0] != '\0')
        cJSON_AddStringToObject(o, "by", r->by);
    else
        cJSON_AddNullToObject(o, "by");
    if (r->started_ms > 0) {
        log_rfc3339_ms(r->started_ms, when, sizeof when);
        cJSON_AddStringToObject(o, "started", when);
    } else {
        cJSON_AddNullToObject(o, "started");
    }
    if (r->jitter_ms > 0)
        cJSON_AddNumberToObject(o, "jitter_ms", (double)r->jitter_ms);
    cJSON_AddNumberToObject(o, "duration_ms", (double)r->duration_ms);
    cJSON_AddNumberToObject(o, "attempt", r->attempt);
    cJSON_AddStringToObject(o, "outcome", r->outcome_name != NULL && r->outcome_name[0] != '\0'
                                              ? r->outcome_name
                                              : history_outcome_name(r->outcome));
    if (r->signal[0] != '\0')
        cJSON_AddStringToObject(o, "signal", r->signal);
    else if (r->exit_code >= 0)
        cJSON_AddNumberToObject(o, "exit_code", r->exit_code);
    if (r->reason[0] != '\0')
        cJSON_AddStringToObject(o, "reason", r->reason);
    if (r->dispatched)
        cJSON_AddNumberToObject(o, "dispatch_ms", (double)r->dispatch_ms);
    if (r->has_output) {
        cJSON_AddNumberToObject(o, "output_bytes", (double)r->output_len);
        cJSON_AddNumberToObject(o, "output_dropped", (double)r->output_dropped);
    }
    if (r->has_output && (flags & HISTORY_JSON_OUTPUT)) {
        const char *text = r->output != NULL ? r->output : "";
        /* Ours is valid UTF-8; another writer's might not be: JSON must be. */
        char *fixed = utf8_valid(text, strlen(text)) ? NULL : utf8_fix(text);
        cJSON_AddStringToObject(o, "output", fixed != NULL ? fixed : text);
        free(fixed);
    }
    return o;
}

const char *history_summary(const struct history_rec *r, char *buf, size_t len)
{
    const char *name = r->outcome_name != NULL && r->outcome_name[0] != '\0'
                           ? r->outcome_name
                           : history_outcome_name(r->outcome);
    if (r->signal[0] != '\0')
        snprintf(buf, len, "%s (signal %s)", name, r->signal);
    else if (r->exit_code >= 0)
        snprintf(buf, len, "%s (exit %d)", name, r->exit_code);
    else if (r->ticks > 1 && r->reason[0] != '\0')
        snprintf(buf, len, "%s x%" PRId64 ": %s", name, r->ticks, r->reason);
    else if (r->ticks == 0 && r->reason[0] != '\0')
        snprintf(buf, len, "%s (many ticks): %s", name, r->reason);
    else if (r->reason[0] != '\0')
        snprintf(buf, len, "%s: %s", name, r->reason);
    else
        snprintf(buf, len, "%s", name);
    return buf;
}
