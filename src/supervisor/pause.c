/* pause.c -- see pause.h. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "log.h"
#include "pause.h"

#define NOW_MS                                                                                     \
    "local t = redis.call('time')\n"                                                               \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

/* The entry's JSON, or nil when it is not readable. */
#define DECODE                                                                                     \
    "local function decode(v)\n"                                                                   \
    "  if not v then return nil end\n"                                                             \
    "  local ok, o = pcall(cjson.decode, v)\n"                                                     \
    "  if ok and type(o) == 'table' then return o end\n"                                           \
    "  return nil\n"                                                                               \
    "end\n"

/* KEYS: paused. ARGV: entry, by, reason, channel. Returns 1 when it was
 * paused already, 0 when it is now. */
static const char set_src[] =
    DECODE "local o = decode(redis.call('hget', KEYS[1], ARGV[1]))\n"
    "if o and o.state == 'paused' then return 1 end\n" NOW_MS
    "redis.call('hset', KEYS[1], ARGV[1],\n"
    "           cjson.encode({state = 'paused', since = now, by = ARGV[2], reason = ARGV[3]}))\n"
    "redis.call('publish', ARGV[4], 'paused ' .. ARGV[1])\n"
    "return 0\n";

/* KEYS: paused. ARGV: entry ('' for all), catchup ('1' or '0'), by,
 * channel. Returns how many entries were paused. */
static const char resume_src[] =
    DECODE NOW_MS "local fields = {ARGV[1]}\n"
    "if ARGV[1] == '' then fields = redis.call('hkeys', KEYS[1]) end\n"
    "local n = 0\n"
    "for _, f in ipairs(fields) do\n"
    "  local v = redis.call('hget', KEYS[1], f)\n"
    "  local o = decode(v)\n"
    "  if v and not o then\n"
    "    redis.call('hdel', KEYS[1], f)\n"
    "  elseif o and o.state == 'paused' then\n"
    "    n = n + 1\n"
    "    if ARGV[2] == '1' then\n"
    "      redis.call('hdel', KEYS[1], f)\n"
    "    else\n"
    "      redis.call('hset', KEYS[1], f, cjson.encode({state = 'resumed',\n"
    "                 at = math.floor(now / 1000), since = o.since, by = ARGV[3]}))\n"
    "    end\n"
    "    redis.call('publish', ARGV[4], 'resumed ' .. f)\n"
    "  elseif o and ARGV[2] == '1' then\n"
    "    redis.call('hdel', KEYS[1], f)\n"
    "    redis.call('publish', ARGV[4], 'resumed ' .. f)\n"
    "  end\n"
    "end\n"
    "return n\n";

/* KEYS: paused. ARGV: entry, value. */
static const char done_src[] = "if redis.call('hget', KEYS[1], ARGV[1]) == ARGV[2] then\n"
                               "  redis.call('hdel', KEYS[1], ARGV[1])\n"
                               "  return 1\n"
                               "end\n"
                               "return 0\n";

void pause_list_free(struct pause_list *l)
{
    baton_reply_free(l->reply);
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

/* Fills e from its stored value. Returns false when it cannot be read. */
static bool parse_entry(const char *job, const char *raw, struct pause_entry *e)
{
    cJSON *o = cJSON_Parse(raw);
    const cJSON *state = cJSON_GetObjectItemCaseSensitive(o, "state");
    bool ok = cJSON_IsString(state) &&
              (strcmp(state->valuestring, "paused") == 0 ||
               strcmp(state->valuestring, "resumed") == 0);
    if (ok) {
        *e = (struct pause_entry){.job = job, .raw = raw};
        e->resumed = strcmp(state->valuestring, "resumed") == 0;
        e->since_ms = json_int(o, "since");
        e->resumed_at = json_int(o, "at");
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
    struct baton_reply *rep = NULL;
    memset(out, 0, sizeof *out);
    if (key == NULL)
        return BATON_ENOMEM;
    const char *argv[2] = {"HGETALL", key};
    int rc = baton_client_command(c, 2, argv, NULL, &rep);
    free(key);
    if (rc != BATON_OK)
        return rc;
    if (rep->type != BATON_REPLY_ARRAY || rep->elements % 2 != 0) {
        baton_reply_free(rep);
        return BATON_EPROTO;
    }
    out->reply = rep;
    if (rep->elements > 0 && (out->v = calloc(rep->elements / 2, sizeof *out->v)) == NULL) {
        pause_list_free(out);
        return BATON_ENOMEM;
    }
    for (size_t i = 0; i + 1 < rep->elements; i += 2) {
        const struct baton_reply *k = rep->element[i], *v = rep->element[i + 1];
        if (k->type == BATON_REPLY_STRING && v->type == BATON_REPLY_STRING &&
            parse_entry(k->str, v->str, &out->v[out->n]))
            out->n++;
    }
    return BATON_OK;
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

static int eval_int(struct baton_client *c, const char *src, int nargs, const char *const *args,
                    const char *group, long long *result)
{
    char *key = group_key(group, "paused");
    struct baton_reply *rep = NULL;
    if (key == NULL)
        return BATON_ENOMEM;
    const char *keys[1] = {key};
    int rc = baton_client_eval(c, src, 1, keys, nargs, args, &rep);
    free(key);
    if (rc == BATON_OK && rep->type != BATON_REPLY_INTEGER)
        rc = BATON_EPROTO;
    if (rc == BATON_OK && result != NULL)
        *result = rep->integer;
    baton_reply_free(rep);
    return rc;
}

int pause_set(struct baton_client *c, const char *group, const char *job, const char *by,
              const char *reason, bool *was_paused)
{
    char *chan = group_key(group, "events");
    long long r = 0;
    if (chan == NULL)
        return BATON_ENOMEM;
    const char *args[4] = {job != NULL ? job : PAUSE_ALL, by, reason != NULL ? reason : "", chan};
    int rc = eval_int(c, set_src, 4, args, group, &r);
    free(chan);
    *was_paused = r == 1;
    return rc;
}

int pause_resume(struct baton_client *c, const char *group, const char *job, bool catchup,
                 const char *by, int *resumed)
{
    char *chan = group_key(group, "events");
    long long r = 0;
    if (chan == NULL)
        return BATON_ENOMEM;
    const char *args[4] = {job != NULL ? job : "", catchup ? "1" : "0", by, chan};
    int rc = eval_int(c, resume_src, 4, args, group, &r);
    free(chan);
    *resumed = (int)r;
    return rc;
}

int pause_done(struct baton_client *c, const char *group, const char *job, const char *raw)
{
    const char *args[2] = {job, raw};
    return eval_int(c, done_src, 2, args, group, NULL);
}
