/* pause.c -- see pause.h. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "answers.h"
#include "keys.h"
#include "pause.h"
#include "pauselog.h"
#include "rfc3339.h"

/* The entry's JSON, or nil when it is not readable; its version. */
#define DECODE                                                                                     \
    "local function decode(v)\n"                                                                   \
    "  if not v then return nil end\n"                                                             \
    "  local ok, o = pcall(cjson.decode, v)\n"                                                     \
    "  if ok and type(o) == 'table' then return o end\n"                                           \
    "  return nil\n"                                                                               \
    "end\n"                                                                                        \
    "local function ver(o)\n"                                                                      \
    "  if tonumber(o.v) then return tonumber(o.v) end\n"                                           \
    "  if o.state == 'resumed' then return (tonumber(o.at) or 0) * 1000 end\n"                     \
    "  return tonumber(o.since) or 0\n"                                                            \
    "end\n"

/* KEYS: paused, then the pauses:<entry> stream of each entry (pauselog.h).
 * ARGV: channel, maxlen, then (entry, json, event, record) quads. Each
 * json is written unless the entry holds a later version; where it is,
 * its record (a JSON array of fields and values; "" none) is added to the
 * entry's stream, capped near maxlen; each event ("" none) is published.
 * Returns how many were written. */
static const char write_src[] =
    DECODE "local n, k = 0, 1\n"
           "for i = 3, #ARGV, 4 do\n"
           "  k = k + 1\n"
           "  local new, old = decode(ARGV[i + 1]), decode(redis.call('hget', KEYS[1], ARGV[i]))\n"
           "  if not (old and new and ver(old) > ver(new)) then\n"
           "    redis.call('hset', KEYS[1], ARGV[i], ARGV[i + 1])\n"
           "    n = n + 1\n"
           "    if ARGV[i + 3] ~= '' then\n"
           "      redis.call('xadd', KEYS[k], 'MAXLEN', '~', ARGV[2], '*',\n"
           "                 unpack(cjson.decode(ARGV[i + 3])))\n"
           "    end\n"
           "  end\n"
           "  if ARGV[i + 2] ~= '' then redis.call('publish', ARGV[1], ARGV[i + 2]) end\n"
           "end\n"
           "return n\n";

/* KEYS: paused. ARGV: entry, value. The entry, if it still holds value,
 * becomes a tombstone one version later. */
static const char done_src[] =
    DECODE "if redis.call('hget', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end\n"
           "local o = decode(ARGV[2])\n"
           "local v = (o and ver(o) or 0) + 1\n"
           "redis.call('hset', KEYS[1], ARGV[1], cjson.encode({state = 'cleared', v = v}))\n"
           "return 1\n";

/* KEYS: paused, then each entry's stream. ARGV: (entry, ours, previous,
 * mark) quads, previous "" for none. Where an entry still holds ours, the
 * previous value comes back (a tombstone just below ours when there was
 * none, so that no older entry comes back either), and the record marked
 * mark ("" none) leaves the entry's stream: the undo of a write that fewer
 * than a majority took. */
static const char undo_src[] =
    DECODE "local k = 1\n"
           "for i = 1, #ARGV, 4 do\n"
           "  k = k + 1\n"
           "  if redis.call('hget', KEYS[1], ARGV[i]) == ARGV[i + 1] then\n"
           "    local prev = ARGV[i + 2]\n"
           "    if prev == '' then\n"
           "      local o = decode(ARGV[i + 1])\n"
           "      prev = cjson.encode({state = 'cleared', v = (o and ver(o) or 1) - 1})\n"
           "    end\n"
           "    redis.call('hset', KEYS[1], ARGV[i], prev)\n"
           "    if ARGV[i + 3] ~= '' then\n"
           "      for _, e in ipairs(redis.call('xrevrange', KEYS[k], '+', '-', 'COUNT', 16)) do\n"
           "        for j = 1, #e[2], 2 do\n"
           "          if e[2][j] == 'mark' and e[2][j + 1] == ARGV[i + 3] then\n"
           "            redis.call('xdel', KEYS[k], e[1])\n"
           "          end\n"
           "        end\n"
           "      end\n"
           "    end\n"
           "  end\n"
           "end\n"
           "return 0\n";

void pause_list_free(struct pause_list *l)
{
    baton_answers_free(l->answers);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int64_t json_int(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

static void json_str(const cJSON *o, const char *name, char *buf, size_t len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    snprintf(buf, len, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

/* Fills e from its stored value (e->cleared for a tombstone). Returns false
 * when it cannot be read. */
static bool parse_entry(const char *job, const char *raw, struct pause_entry *e)
{
    cJSON *o = cJSON_Parse(raw);
    const cJSON *state = cJSON_GetObjectItemCaseSensitive(o, "state");
    bool ok = cJSON_IsString(state) && (strcmp(state->valuestring, "paused") == 0 ||
                                        strcmp(state->valuestring, "resumed") == 0 ||
                                        strcmp(state->valuestring, "cleared") == 0);
    if (ok) {
        *e = (struct pause_entry){.job = job, .raw = raw};
        e->resumed = strcmp(state->valuestring, "resumed") == 0;
        e->cleared = strcmp(state->valuestring, "cleared") == 0;
        e->since_ms = json_int(o, "since");
        e->resumed_at = json_int(o, "at");
        e->version = json_int(o, "v");
        if (e->version == 0) /* written before versions */
            e->version = e->resumed ? e->resumed_at * 1000 : e->since_ms;
        json_str(o, "by", e->by, sizeof e->by);
        json_str(o, "reason", e->reason, sizeof e->reason);
        ok = !e->resumed || e->resumed_at > 0;
    }
    cJSON_Delete(o);
    return ok;
}

int pause_read(struct baton_client *c, const char *group, struct pause_list *out)
{
    char *key = group_key(group, "paused");
    size_t cap = 0, n = 0;
    memset(out, 0, sizeof *out);
    if (key == NULL)
        return BATON_ENOMEM;
    const char *argv[2] = {"HGETALL", key};
    int rc = baton_client_command_all(c, 2, argv, NULL, &out->answers);
    free(key);
    if (rc != BATON_OK)
        goto fail;
    const struct baton_answers *a = out->answers;
    if ((rc = answers_arrays(c, a, &cap)) != BATON_OK)
        goto fail;
    for (int i = 0; i < a->n; i++)
        if (a->v[i].rc == BATON_OK && a->v[i].reply->elements % 2 != 0) {
            rc = BATON_EPROTO; /* not a hash's fields and values */
            goto fail;
        }
    cap /= 2;
    if (cap > 0 && (out->v = calloc(cap, sizeof *out->v)) == NULL) {
        rc = BATON_ENOMEM;
        goto fail;
    }
    /* Every master's entries; of one job's, the latest version wins */
    for (int i = 0; i < a->n; i++) {
        const struct baton_reply *r = a->v[i].reply;
        if (a->v[i].rc != BATON_OK)
            continue;
        for (size_t j = 0; j + 1 < r->elements; j += 2) {
            const struct baton_reply *k = r->element[j], *v = r->element[j + 1];
            struct pause_entry e;
            if (k->type != BATON_REPLY_STRING || v->type != BATON_REPLY_STRING ||
                !parse_entry(k->str, v->str, &e))
                continue;
            size_t at = 0;
            while (at < n && strcmp(out->v[at].job, e.job) != 0)
                at++;
            if (at == n)
                out->v[n++] = e;
            else if (e.version > out->v[at].version)
                out->v[at] = e;
        }
    }
    /* Tombstones say the entry is gone */
    for (size_t i = 0; i < n; i++)
        if (!out->v[i].cleared)
            out->v[out->n++] = out->v[i];
    return BATON_OK;
fail:
    pause_list_free(out);
    return rc;
}

const struct pause_entry *pause_find(const struct pause_list *l, const char *job)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].job, job) == 0)
            return &l->v[i];
    return NULL;
}

const struct pause_entry *pause_holding(const struct pause_list *l, const char *job)
{
    const struct pause_entry *e = pause_find(l, job);
    if (e != NULL && !e->resumed)
        return e;
    e = pause_find(l, PAUSE_ALL);
    return e != NULL && !e->resumed ? e : NULL;
}

const char *pause_describe(const struct pause_entry *e, char *buf, size_t len)
{
    char since[40];
    log_rfc3339_ms(e->since_ms, since, sizeof since);
    snprintf(buf, len, "since %s by %s%s%s%s", since, e->by[0] ? e->by : "?",
             strcmp(e->job, PAUSE_ALL) == 0 ? " (every job)" : "", e->reason[0] ? ": " : "",
             e->reason);
    return buf;
}

/* The masters' time (ms): the latest that those answering report. */
static int server_ms(struct baton_client *c, int64_t *ms)
{
    const char *argv[1] = {"TIME"};
    struct baton_answers *a = NULL;
    int rc = baton_client_command_all(c, 1, argv, NULL, &a);
    *ms = 0;
    for (int i = 0; rc == BATON_OK && i < a->n; i++) {
        const struct baton_reply *r = a->v[i].reply;
        if (a->v[i].rc != BATON_OK)
            continue;
        if (r->type != BATON_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != BATON_REPLY_STRING ||
            r->element[1]->type != BATON_REPLY_STRING) {
            rc = BATON_EPROTO;
            break;
        }
        int64_t t = strtoll(r->element[0]->str, NULL, 10) * 1000 +
                    strtoll(r->element[1]->str, NULL, 10) / 1000;
        if (t > *ms)
            *ms = t;
    }
    baton_answers_free(a);
    return rc;
}

/* One write of the write script: entry, its JSON (owned), its event, the
 * value it replaces (NULL: none), and its history record (pauselog.h:
 * owned, NULL for none) with the record's mark. */
struct pw {
    const char *entry;
    char *json;
    char event[300];
    const char *old;
    char *rec;
    char mark[24];
};

/* The keys of the scripts: paused, then each entry's stream. Returns:
 * owned (free with keys_free), or NULL on ENOMEM. */
static char **entry_keys(const char *group, const struct pw *w, size_t n)
{
    char **keys = calloc(n + 1, sizeof *keys);
    if (keys == NULL)
        return NULL;
    bool ok = (keys[0] = group_key(group, "paused")) != NULL;
    for (size_t i = 0; ok && i < n; i++)
        ok = (keys[1 + i] = group_key(group, "pauses:%s", w[i].entry)) != NULL;
    if (ok)
        return keys;
    for (size_t i = 0; i <= n; i++)
        free(keys[i]);
    free(keys);
    return NULL;
}

static void keys_free(char **keys, size_t n)
{
    for (size_t i = 0; keys != NULL && i <= n; i++)
        free(keys[i]);
    free(keys);
}

/* After a write that fewer than a majority took: every master that still
 * holds it gets the previous value back, and loses its record (best
 * effort: a master whose answer was lost may keep it; the caller reports
 * the failure). */
static void undo_entries(struct baton_client *c, char **keys, const struct pw *w, size_t n)
{
    const char **args = calloc(4 * n, sizeof *args);
    struct baton_answers *a = NULL;
    if (args == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        args[4 * i] = w[i].entry;
        args[4 * i + 1] = w[i].json;
        args[4 * i + 2] = w[i].old != NULL ? w[i].old : "";
        args[4 * i + 3] = w[i].rec != NULL ? w[i].mark : "";
    }
    (void)baton_client_eval_all(c, undo_src, (int)(n + 1), (const char *const *)keys, (int)(4 * n),
                                args, &a);
    baton_answers_free(a);
    free(args);
}

/* Writes the entries of w[0..n) to every master, each with its record in
 * its stream capped near keep; the write holds when a majority applied it,
 * and over a quorum is undone where it applied when fewer did (on one
 * server it applied or not as a whole). Frees each json and rec. */
static int write_entries(struct baton_client *c, const char *group, int64_t keep, struct pw *w,
                         size_t n)
{
    char *chan = group_key(group, "events"), **keys = entry_keys(group, w, n);
    const char **args = calloc(2 + 4 * n, sizeof *args);
    char maxlen[24];
    struct baton_answers *a = NULL;
    int rc = BATON_ENOMEM;
    snprintf(maxlen, sizeof maxlen, "%" PRId64, keep > 0 ? keep : 1);
    if (keys != NULL && chan != NULL && args != NULL) {
        args[0] = chan;
        args[1] = maxlen;
        for (size_t i = 0; i < n; i++) {
            if (w[i].json == NULL)
                goto out;
            args[2 + 4 * i] = w[i].entry;
            args[3 + 4 * i] = w[i].json;
            args[4 + 4 * i] = w[i].event;
            args[5 + 4 * i] = w[i].rec != NULL ? w[i].rec : "";
        }
        rc = baton_client_eval_all(c, write_src, (int)(n + 1), (const char *const *)keys,
                                   (int)(2 + 4 * n), args, &a);
        int held = a != NULL ? baton_answers_check(c, a) : rc;
        if (held != BATON_OK && held != BATON_ENOTDURABLE && baton_client_quorum(c) > 0) {
            undo_entries(c, keys, w, n);
            (void)baton_answers_check(c, a); /* the write's failure is the detail */
        }
        if (rc == BATON_OK)
            rc = held;
    }
out:
    for (size_t i = 0; i < n; i++) {
        free(w[i].json); /* cJSON allocates with malloc (its default hooks) */
        free(w[i].rec);
    }
    baton_answers_free(a);
    free(args);
    keys_free(keys, n);
    free(chan);
    return rc;
}

/* A random id (16 hex digits) into buf; fallback when there is no
 * randomness. */
static void random_id(char *buf, size_t len, int64_t fallback)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id)
        id = (uint64_t)fallback;
    snprintf(buf, len, "%016" PRIx64, id);
}

/* A new entry's JSON (owned, free): state and the fields given. */
static char *entry_json(const char *state, int64_t v, int64_t since, int64_t at, const char *by,
                        const char *reason)
{
    cJSON *o = cJSON_CreateObject();
    char ids[24];
    random_id(ids, sizeof ids, v);
    cJSON_AddStringToObject(o, "state", state);
    if (since > 0)
        cJSON_AddNumberToObject(o, "since", (double)since);
    if (at > 0)
        cJSON_AddNumberToObject(o, "at", (double)at);
    if (by != NULL)
        cJSON_AddStringToObject(o, "by", by);
    if (reason != NULL)
        cJSON_AddStringToObject(o, "reason", reason);
    cJSON_AddNumberToObject(o, "v", (double)v);
    cJSON_AddStringToObject(o, "id", ids);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* Gives w its history record (keep 0: none). Returns false on ENOMEM. */
static bool with_record(struct pw *w, int64_t keep, bool resume, int64_t now, const char *by,
                        const char *reason, bool catchup, bool all)
{
    if (keep <= 0)
        return true;
    random_id(w->mark, sizeof w->mark, now ^ (int64_t)(uintptr_t)w);
    w->rec = pause_rec_fields(w->entry, resume, now, by, reason, catchup, all, w->mark);
    return w->rec != NULL;
}

int pause_set(struct baton_client *c, const char *group, const char *job, const char *by,
              const char *reason, int64_t keep, bool *was_paused)
{
    struct pause_list l;
    int64_t now = 0;
    const char *entry = job != NULL ? job : PAUSE_ALL;
    *was_paused = false;
    int rc = pause_read(c, group, &l);
    if (rc != BATON_OK)
        return rc;
    const struct pause_entry *e = pause_find(&l, entry);
    struct pw w = {.entry = entry};
    snprintf(w.event, sizeof w.event, "paused %s", entry);
    w.old = e != NULL ? e->raw : NULL;
    if (e != NULL && !e->resumed) {
        /* Paused already: the entry as it is, to every master (a master
         * that missed it gets it; it keeps its time); nothing changed, so
         * no record */
        *was_paused = true;
        w.json = strdup(e->raw);
    } else if ((rc = server_ms(c, &now)) == BATON_OK) {
        w.json = entry_json("paused", now, now, 0, by, reason != NULL ? reason : "");
        if (!with_record(&w, keep, false, now, by, reason, false, false))
            rc = BATON_ENOMEM;
    }
    if (rc == BATON_OK) {
        rc = write_entries(c, group, keep, &w, 1);
    } else {
        free(w.json);
        free(w.rec);
    }
    pause_list_free(&l);
    return rc;
}

int pause_resume(struct baton_client *c, const char *group, const char *job, bool catchup,
                 const char *by, int64_t keep, int *resumed)
{
    struct pause_list l;
    int64_t now = 0;
    *resumed = 0;
    int rc = pause_read(c, group, &l);
    if (rc == BATON_OK && (rc = server_ms(c, &now)) != BATON_OK)
        pause_list_free(&l);
    if (rc != BATON_OK)
        return rc;
    struct pw *w = calloc(l.n > 0 ? l.n : 1, sizeof *w);
    size_t n = 0;
    if (w == NULL) {
        pause_list_free(&l);
        return BATON_ENOMEM;
    }
    for (size_t i = 0; i < l.n; i++) {
        const struct pause_entry *e = &l.v[i];
        if (job != NULL && strcmp(e->job, job) != 0)
            continue;
        if (e->resumed && !catchup)
            continue; /* a resume is pending already */
        if (!e->resumed)
            (*resumed)++;
        w[n].entry = e->job;
        w[n].old = e->raw;
        /* With catch-up the entry goes (a tombstone, so that a master that
         * missed this cannot bring it back); without, the ticks up to now
         * stay skipped */
        w[n].json = catchup ? entry_json("cleared", now, 0, 0, NULL, NULL)
                            : entry_json("resumed", now, e->since_ms, now / 1000, by, NULL);
        snprintf(w[n].event, sizeof w[n].event, "resumed %s", e->job);
        /* Recorded when it was paused: a pending resume that now catches
         * up was resumed already, and its record says so */
        if (!with_record(&w[n], e->resumed ? 0 : keep, true, now, by, NULL, catchup,
                         job == NULL)) {
            free(w[n].json);
            w[n].json = NULL; /* write_entries answers ENOMEM */
        }
        n++;
    }
    rc = n > 0 ? write_entries(c, group, keep, w, n) : BATON_OK;
    free(w);
    pause_list_free(&l);
    return rc;
}

int pause_done(struct baton_client *c, const char *group, const char *job, const char *raw)
{
    char *key = group_key(group, "paused");
    struct baton_answers *a = NULL;
    if (key == NULL)
        return BATON_ENOMEM;
    const char *keys[1] = {key};
    const char *args[2] = {job, raw};
    int rc = baton_client_eval_all(c, done_src, 1, keys, 2, args, &a);
    if (rc == BATON_OK)
        rc = baton_answers_check(c, a);
    baton_answers_free(a);
    free(key);
    return rc;
}
