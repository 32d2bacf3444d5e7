/* logfmt.c -- see logfmt.h. Two tables say how lines read: `phrases[]`,
 * the common events (every other field is written key=value after the
 * phrase), and `words[]`, the values that are internal names (a guard, a
 * trigger, why a run was stopped) in words an operator reads. The JSON
 * keeps the names: only the text changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logfmt.h"
#include "utf8.h"

#define C_RESET "\033[0m"
#define C_BOLD  "\033[1m"
#define C_DIM   "\033[2m"

/* How an event reads: a template where {field} is the field's value (the
 * field is then not repeated as key=value) and [...] is written only when
 * every field it names is there, and the fields never repeated (hide,
 * space-separated; e.g. fence, which equals term). */
static const struct phrase {
    const char *event;
    const char *tmpl;
    const char *hide;
} phrases[] = {
    {"transition", "{from} -> {to} ({trigger}[, {guard}])", "fence"},
    {"following", "{leader} (term {term})", ""},
    {"job_start", "{job} started", ""},
    {"job_output", "{job}: {line}", "run_id"},
    {"job_end", "{job} {outcome}[ ({stopped_because})]", ""},
    {"job_retry", "{job} retry {next_attempt}", ""},
    {"job_timeout", "{job} timed out", ""},
    {"catch_up",
     "{job}: catching up {missed_ticks} missed tick(s)[; {outside_window} older than its "
     "catch-up window, not run][; {superseded} superseded by a later one, not run]",
     ""},
    {"no_high_water_mark",
     "{job}: no tick of it was ever claimed (a new job, or Redis lost its data): it starts "
     "from now, without catch-up",
     ""},
    {"config_drift", "{follower} runs other jobs than this leader", ""},
    {"config_drift_resolved", "{follower} runs the leader's jobs again", ""},
    {"log_lines_dropped", "{lines} line(s) dropped since {since}: the log's reader was slow", ""},
    {"signal_received", "{signal}", ""},
    {"redis_unreachable", "Redis unreachable during {during}: {error}", ""},
    {"reload_failed", "{error}", ""},
};

/* Values that are internal names, in words: the value of any of fields
 * (space-separated) equal to value reads as text. */
static const struct word {
    const char *fields, *value, *text;
} words[] = {
    /* machine.h's guards, held or not (transition) */
    {"guard", "in_time", "renewed in time"},
    {"guard", "not in_time", "renewed too late"},
    {"guard", "stopping", "shutting down"},
    {"guard", "not stopping", "not shutting down"},
    {"guard", "runs_left", "runs still going"},
    {"guard", "not runs_left", "no run left"},
    {"guard", "may_block", "Redis may be called"},
    {"guard", "not may_block", "past a stop point"},
    /* machine.h's events that are not plain words (transition) */
    {"trigger", "taken", "another node leads"},
    {"trigger", "redis_error", "Redis error"},
    {"trigger", "renew_due", "renewal due"},
    {"trigger", "lost", "lease lost"},
    {"trigger", "deadline", "stop point passed"},
    {"trigger", "jobs_stopped", "runs ended"},
    {"trigger", "released", "lease given up"},
    {"trigger", "drain_timeout", "shutdown grace over"},
    {"trigger", "wake", "woke up"},
    {"trigger", "step_down", "step-down asked"},
    /* run.h's reasons to stop a run (job_end, run_state) */
    {"stopped_because because", "timeout", "its timeout"},
    {"stopped_because because", "replaced", "replaced by a newer tick"},
    {"stopped_because because", "lease_lost", "this node lost its lease"},
    {"stopped_because because", "shutdown", "shutdown grace over"},
    {"stopped_because because", "registration_lost", "its registration was lost"},
};

static const struct phrase *find_phrase(const char *event)
{
    for (size_t i = 0; i < sizeof phrases / sizeof phrases[0]; i++)
        if (strcmp(phrases[i].event, event) == 0)
            return &phrases[i];
    return NULL;
}

static bool is_head(const char *key)
{
    static const char *const head[] = {"ts", "level", "event", "node", "group"};
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        if (strcmp(head[i], key) == 0)
            return true;
    return false;
}

/* True when word is one of the space-separated words of list. */
static bool in_list(const char *list, const char *word, size_t n)
{
    for (const char *p = list; *p != '\0';) {
        size_t w = strcspn(p, " ");
        if (w == n && strncmp(p, word, n) == 0)
            return true;
        p += w;
        while (*p == ' ')
            p++;
    }
    return false;
}

/* The words for the value of field key, or NULL (words[]). */
static const char *word_for(const char *key, const char *value)
{
    for (size_t i = 0; key != NULL && i < sizeof words / sizeof words[0]; i++)
        if (strcmp(words[i].value, value) == 0 && in_list(words[i].fields, key, strlen(key)))
            return words[i].text;
    return NULL;
}

/* Writes s with every character a terminal would act on escaped (utf8.h):
 * whatever a line holds, it is one line on the screen, and only our own
 * colours are escapes. */
static void put(FILE *out, const char *s)
{
    char small[256];
    if (utf8_term_escape(s, strlen(s), small, sizeof small) < sizeof small) {
        fputs(small, out);
        return;
    }
    char *big = utf8_term_dup(s);
    fputs(big != NULL ? big : small, out); /* out of memory: cut */
    free(big);
}

/* Writes v as JSON text (escaped as put does). */
static void put_json(FILE *out, const cJSON *v)
{
    char *s = cJSON_PrintUnformatted(v);
    if (s != NULL)
        put(out, s);
    free(s);
}

/* The string a raw item holds when it is a JSON string literal (a line of
 * output, quoted by the log itself: log.c), parsed into *tmp (delete it
 * after); else v. So the text log shows output as baton logs does. */
static const cJSON *unraw(const cJSON *v, cJSON **tmp)
{
    *tmp = NULL;
    if (!cJSON_IsRaw(v) || v->valuestring == NULL || v->valuestring[0] != '"')
        return v;
    *tmp = cJSON_Parse(v->valuestring);
    return cJSON_IsString(*tmp) ? *tmp : v;
}

/* Writes a value as text: strings as they are, numbers without a needless
 * fraction, others as compact JSON. */
static void write_value(FILE *out, const cJSON *raw)
{
    cJSON *tmp;
    const cJSON *v = unraw(raw, &tmp);
    if (cJSON_IsString(v)) {
        const char *w = word_for(raw->string, v->valuestring);
        put(out, w != NULL ? w : v->valuestring);
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == (double)(long long)d && d < 9e15 && d > -9e15)
            fprintf(out, "%lld", (long long)d);
        else
            fprintf(out, "%g", d);
    } else {
        put_json(out, v);
    }
    cJSON_Delete(tmp);
}

/* key=value, the value quoted (JSON style) when it has spaces, quotes,
 * '=' or control characters, or is empty. */
static void write_pair(FILE *out, const cJSON *raw, bool color)
{
    cJSON *tmp;
    const cJSON *v = unraw(raw, &tmp);
    bool quote = false;
    fprintf(out, "  %s", color ? C_DIM : "");
    put(out, raw->string);
    fprintf(out, "=%s", color ? C_RESET : "");
    if (cJSON_IsString(v)) {
        const char *w = word_for(raw->string, v->valuestring), *s = w != NULL ? w : v->valuestring;
        quote = *s == '\0';
        for (const char *p = s; !quote && *p != '\0'; p++)
            quote = *p == ' ' || *p == '"' || *p == '=' || (unsigned char)*p < 0x20 || *p == 0x7F;
        if (quote && w != NULL) {
            cJSON_Delete(tmp);
            tmp = cJSON_CreateString(w);
            v = tmp;
        }
    }
    if (quote)
        put_json(out, v);
    else
        write_value(out, raw);
    cJSON_Delete(tmp);
}

static const char *level_color(const char *level)
{
    if (strcmp(level, "debug") == 0)
        return C_DIM;
    if (strcmp(level, "warn") == 0)
        return "\033[33m";
    if (strcmp(level, "error") == 0)
        return "\033[1;31m";
    return "\033[32m";
}

/* One of six colours for a node name (FNV-1a), so that each node reads
 * apart from the others: cyans, blues and magentas, never the red or the
 * yellow of an error or a warning, nor the green of INFO. */
static const char *node_color(const char *node)
{
    static const char *const colors[] = {"\033[36m", "\033[34m", "\033[35m",
                                         "\033[96m", "\033[94m", "\033[95m"};
    unsigned h = 2166136261u;
    for (const char *p = node; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return colors[h % 6];
}

static const char *str_field(const cJSON *ev, const char *name, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ev, name);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* The fields a phrase showed: not repeated as key=value. */
struct shown {
    const cJSON *v[16];
    size_t n;
};

/* The field named by t[1..close) ("{name}"), or NULL. */
static const cJSON *field_at(const cJSON *ev, const char *t, const char *close)
{
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(close - t - 1), t + 1);
    return cJSON_GetObjectItemCaseSensitive(ev, name);
}

/* True when every {field} of t[0..end) is in ev. */
static bool has_fields(const cJSON *ev, const char *t, const char *end)
{
    for (; t < end; t++) {
        const char *close = *t == '{' ? memchr(t, '}', (size_t)(end - t)) : NULL;
        if (close != NULL && field_at(ev, t, close) == NULL)
            return false;
        if (close != NULL)
            t = close;
    }
    return true;
}

/* Writes the template t[0..end), marking in sh the fields it showed. */
static void write_tmpl(FILE *out, const cJSON *ev, const char *t, const char *end, struct shown *sh)
{
    for (; t < end; t++) {
        const char *close = NULL;
        if (*t == '[' && (close = memchr(t, ']', (size_t)(end - t))) != NULL) {
            if (has_fields(ev, t + 1, close))
                write_tmpl(out, ev, t + 1, close, sh);
            t = close;
            continue;
        }
        close = *t == '{' ? memchr(t, '}', (size_t)(end - t)) : NULL;
        if (close == NULL) {
            fputc(*t, out);
            continue;
        }
        const cJSON *v = field_at(ev, t, close);
        if (v != NULL) {
            write_value(out, v);
            if (sh->n < sizeof sh->v / sizeof sh->v[0])
                sh->v[sh->n++] = v;
        } else {
            fputc('?', out);
        }
        t = close;
    }
}

const char *logfmt_phrase_event(size_t i)
{
    return i < sizeof phrases / sizeof phrases[0] ? phrases[i].event : NULL;
}

const char *logfmt_words(const char *field, const char *value)
{
    return word_for(field, value);
}

char *logfmt_event(const cJSON *ev, bool color)
{
    char *buf = NULL;
    size_t len = 0;
    struct shown sh = {.n = 0};
    FILE *out = open_memstream(&buf, &len);
    if (out == NULL)
        return NULL;

    const char *level = str_field(ev, "level", "info");
    const char *event = str_field(ev, "event", "?");
    const char *node = str_field(ev, "node", "-");
    const char *group = str_field(ev, "group", "default");
    char lv[8];
    size_t i;
    for (i = 0; i < 5 && level[i] != '\0'; i++)
        lv[i] = (char)(level[i] >= 'a' && level[i] <= 'z' ? level[i] - 'a' + 'A' : level[i]);
    lv[i] = '\0';

    fputs(color ? C_DIM : "", out);
    put(out, str_field(ev, "ts", "-"));
    fprintf(out, "%s %s", color ? C_RESET : "", color ? level_color(level) : "");
    char lvbuf[64];
    fprintf(out, "%-5s%s %s", utf8_term(lv, lvbuf, sizeof lvbuf), color ? C_RESET : "",
            color ? node_color(node) : "");
    put(out, node);
    fprintf(out, "%s ", color ? C_RESET : "");
    put(out, event);
    const struct phrase *p = find_phrase(event);
    if (p != NULL) {
        fputs(color ? " " C_BOLD : " ", out);
        write_tmpl(out, ev, p->tmpl, p->tmpl + strlen(p->tmpl), &sh);
        if (color)
            fputs(C_RESET, out);
    }
    for (const cJSON *f = ev->child; f != NULL; f = f->next) {
        /* A head key is shown once, in the head; a second member of that
         * name (a line of an older baton: config_drift had two "node"s) is
         * shown as key=value, not lost. */
        bool skip = f->string == NULL ||
                    (is_head(f->string) && cJSON_GetObjectItemCaseSensitive(ev, f->string) == f);
        for (size_t k = 0; !skip && k < sh.n; k++)
            skip = sh.v[k] == f;
        if (!skip && p != NULL)
            skip = in_list(p->hide, f->string, strlen(f->string));
        if (!skip)
            write_pair(out, f, color);
    }
    if (strcmp(group, "default") != 0) {
        fprintf(out, "  %sgroup=%s", color ? C_DIM : "", color ? C_RESET : "");
        put(out, group);
    }
    if (fclose(out) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

char *logfmt_line(const char *line, size_t len, bool color)
{
    cJSON *ev = NULL;
    size_t start = 0;
    while (start < len && (line[start] == ' ' || line[start] == '\t'))
        start++;
    if (start < len && line[start] == '{')
        ev = cJSON_ParseWithLength(line, len);
    if (!cJSON_IsObject(ev) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(ev, "event"))) {
        cJSON_Delete(ev);
        size_t need = utf8_term_escape(line, len, NULL, 0);
        char *text = malloc(need + 1);
        if (text != NULL)
            utf8_term_escape(line, len, text, need + 1);
        return text;
    }
    char *text = logfmt_event(ev, color);
    cJSON_Delete(ev);
    return text;
}
