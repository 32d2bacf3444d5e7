/* pauselog.c -- see pauselog.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answers.h"
#include "history.h"
#include "keys.h"
#include "pause.h"
#include "pauselog.h"
#include "rfc3339.h"

static const char empty[] = "";

char *pause_rec_fields(const char *entry, bool resume, int64_t at_ms, const char *by,
                       const char *reason, bool catchup, bool all, const char *mark)
{
    char v[8], at[24];
    snprintf(v, sizeof v, "%d", PAUSELOG_VERSION);
    snprintf(at, sizeof at, "%" PRId64, at_ms);
    cJSON *a = cJSON_CreateArray();
    const char *kv[] = {
        "v",  v,  "kind", resume ? "resume" : "pause", "job",  entry,
        "at", at, "by",   by != NULL ? by : "",        "mark", mark != NULL ? mark : ""};
    for (size_t i = 0; a != NULL && i < sizeof kv / sizeof kv[0]; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(kv[i]));
    const char *more[] = {"reason", reason != NULL ? reason : ""};
    const char *rmore[] = {"catchup", catchup ? "1" : "0", "all", all ? "1" : "0"};
    const char *const *m = resume ? rmore : more;
    size_t nm = resume ? 4 : 2;
    for (size_t i = 0; a != NULL && i < nm; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(m[i]));
    char *s = a != NULL ? cJSON_PrintUnformatted(a) : NULL;
    cJSON_Delete(a);
    return s;
}

/* Fills r from one stream entry [id, [field, value, ...]]. Returns false
 * when e is not an entry, or not a pause record. */
static bool parse_rec(const struct baton_reply *e, struct pause_rec *r)
{
    memset(r, 0, sizeof *r);
    r->job = r->by = r->reason = r->mark = empty;
    if (e->type != BATON_REPLY_ARRAY || e->elements != 2 ||
        e->element[0]->type != BATON_REPLY_STRING || e->element[1]->type != BATON_REPLY_ARRAY ||
        e->element[1]->elements % 2 != 0)
        return false;
    r->id = e->element[0]->str;
    const struct baton_reply *f = e->element[1];
    bool kind = false;
    for (size_t i = 0; i < f->elements; i += 2) {
        const struct baton_reply *name = f->element[i], *val = f->element[i + 1];
        if (name->type != BATON_REPLY_STRING || val->type != BATON_REPLY_STRING)
            return false;
        const char *k = name->str, *v = val->str;
        int64_t x;
        if (strcmp(k, "kind") == 0) {
            kind = strcmp(v, "pause") == 0 || strcmp(v, "resume") == 0;
            r->resume = strcmp(v, "resume") == 0;
        } else if (strcmp(k, "job") == 0)
            r->job = v;
        else if (strcmp(k, "at") == 0 && history_number(v, &x))
            r->at_ms = x;
        else if (strcmp(k, "by") == 0)
            r->by = v;
        else if (strcmp(k, "reason") == 0)
            r->reason = v;
        else if (strcmp(k, "mark") == 0)
            r->mark = v;
        else if (strcmp(k, "catchup") == 0)
            r->catchup = strcmp(v, "1") == 0;
        else if (strcmp(k, "all") == 0)
            r->all = strcmp(v, "1") == 0;
    }
    return kind;
}

static int newest_first(const void *x, const void *y)
{
    const struct pause_rec *a = x, *b = y;
    return a->at_ms < b->at_ms ? 1 : a->at_ms > b->at_ms ? -1 : strcmp(b->id, a->id);
}

/* XREVRANGE pauses:<entry> + - COUNT count on every master. */
static int read_stream(struct baton_client *c, const char *group, const char *entry, long count,
                       struct baton_answers **out, size_t *total)
{
    char cnt[24];
    char *key = group_key(group, "pauses:%s", entry);
    if (key == NULL)
        return BATON_ENOMEM;
    snprintf(cnt, sizeof cnt, "%ld", count);
    const char *argv[] = {"XREVRANGE", key, "+", "-", "COUNT", cnt};
    int rc = baton_client_command_all(c, 6, argv, NULL, out);
    free(key);
    if (rc == BATON_OK)
        rc = answers_arrays(c, *out, total);
    return rc;
}

int pause_rec_read(struct baton_client *c, const char *group, const char *job, long count,
                   struct pause_rec_list *out)
{
    size_t total[2] = {0, 0};
    memset(out, 0, sizeof *out);
    int rc = read_stream(c, group, job, count, &out->answers[0], &total[0]);
    if (rc == BATON_OK)
        rc = read_stream(c, group, PAUSE_ALL, count, &out->answers[1], &total[1]);
    if (rc == BATON_OK && total[0] + total[1] > 0 &&
        (out->v = calloc(total[0] + total[1], sizeof *out->v)) == NULL)
        rc = BATON_ENOMEM;
    for (int s = 0; rc == BATON_OK && s < 2; s++) {
        const struct baton_answers *a = out->answers[s];
        for (int i = 0; i < a->n; i++) {
            const struct baton_reply *r = a->v[i].reply;
            if (a->v[i].rc != BATON_OK)
                continue;
            for (size_t j = 0; j < r->elements; j++) {
                struct pause_rec rec;
                if (!parse_rec(r->element[j], &rec))
                    continue;      /* not ours: a newer baton's, or damaged */
                bool seen = false; /* the same record on another master */
                for (size_t k = 0; k < out->n && !seen && rec.mark[0] != '\0'; k++)
                    seen = strcmp(out->v[k].mark, rec.mark) == 0;
                if (!seen)
                    out->v[out->n++] = rec;
            }
        }
    }
    if (rc != BATON_OK) {
        pause_rec_list_free(out);
        return rc;
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof out->v[0], newest_first);
    if (out->n > (size_t)count)
        out->n = (size_t)count;
    return BATON_OK;
}

void pause_rec_list_free(struct pause_rec_list *l)
{
    baton_answers_free(l->answers[0]);
    baton_answers_free(l->answers[1]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

const char *pause_rec_describe(const struct pause_rec *r, char *buf, size_t len)
{
    bool every = strcmp(r->job, PAUSE_ALL) == 0;
    snprintf(buf, len, "%s%s by %s%s%s%s%s", r->resume ? "resumed" : "paused",
             every ? " every job" : "", r->by[0] != '\0' ? r->by : "?",
             r->resume && r->catchup ? " (catch-up)" : "",
             r->resume && r->all && !every ? " (a resume of every job)" : "",
             !r->resume && r->reason[0] != '\0' ? ": " : "", r->resume ? "" : r->reason);
    return buf;
}

cJSON *pause_rec_json(const struct pause_rec *r)
{
    char at[40];
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "kind", r->resume ? "resume" : "pause");
    cJSON_AddStringToObject(o, "id", r->id != NULL ? r->id : "");
    log_rfc3339_ms(r->at_ms, at, sizeof at);
    cJSON_AddStringToObject(o, "at", at);
    if (strcmp(r->job, PAUSE_ALL) == 0)
        cJSON_AddNullToObject(o, "job");
    else
        cJSON_AddStringToObject(o, "job", r->job);
    cJSON_AddStringToObject(o, "by", r->by);
    cJSON_AddBoolToObject(o, "all", r->all || strcmp(r->job, PAUSE_ALL) == 0);
    if (r->resume)
        cJSON_AddBoolToObject(o, "catchup", r->catchup);
    else
        cJSON_AddStringToObject(o, "reason", r->reason);
    return o;
}
