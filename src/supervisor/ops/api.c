/* api.c -- see api.h. Three threads meet here: the HTTP server's
 * (api_handle: checks, then queues), the workers' (carry a call out
 * through Redis and answer it), and the loop's (api_reload_tokens,
 * api_flush_audit). The tokens are swapped under mu; the queue and the
 * audit lines are under mu; the table of failed addresses is the HTTP
 * thread's alone. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>

#include "api.h"
#include "clock.h"
#include "history.h"
#include "jobs.h"
#include "pause.h"
#include "pauselog.h"
#include "statuspage.h"
#include "stepdown.h"
#include "tokens.h"
#include "trigger.h"

#define WAIT_POLL_MS    200
#define STEPDOWN_WAIT_S 5
#define RUNS_DEFAULT    20
#define REASON_MAX      200
#define BY_MAX          128

/* ---- the calls: one table ---- */

enum op {
    OP_TRIGGER,
    OP_PAUSE,
    OP_RESUME,
    OP_PAUSE_ALL,
    OP_RESUME_ALL,
    OP_STEP_DOWN,
    OP_RUNS,
    OP_OUTPUT
};

static const struct route {
    const char *pattern; /* '*' stands for one segment: a job or a run id */
    const char *method;
    enum op op;
    const char *action; /* the audit's and the errors' name of it */
} routes[] = {
    {"/jobs/*/trigger", "POST", OP_TRIGGER, "trigger"},
    {"/jobs/*/pause", "POST", OP_PAUSE, "pause"},
    {"/jobs/*/resume", "POST", OP_RESUME, "resume"},
    {"/pause-all", "POST", OP_PAUSE_ALL, "pause-all"},
    {"/resume-all", "POST", OP_RESUME_ALL, "resume-all"},
    {"/step-down", "POST", OP_STEP_DOWN, "step-down"},
    {"/jobs/*/runs", "GET", OP_RUNS, "runs"},
    {"/runs/*/output", "GET", OP_OUTPUT, "output"},
};

/* The read-only paths of ops_http.c: a token unless http.public_read. */
static const char *const read_paths[] = {"/", "/status", "/metrics"};
/* Never checked: kubelets and load balancers have no token. */
static const char *const probe_paths[] = {"/healthz", "/readyz"};

/* A call checked and queued. */
struct task {
    enum op op;
    struct http_call *call;
    char job[JOB_NAME_MAX + 1]; /* "" for none */
    char id[TRIGGER_ID_MAX + 12];
    char by[BY_MAX]; /* "NAME (token) from ADDR" */
    char token_name[TOKEN_NAME_MAX + 1];
    char remote[64];
    char reason[REASON_MAX + 1];
    bool has_reason, catchup;
    int64_t wait_ms;
    long count;
    struct task *next;
};

struct failed { /* an address that sent wrong tokens */
    char addr[64];
    int count;
    int64_t window_ns, blocked_until_ns, last_ns;
};

struct api {
    struct api_conf conf; /* strings below are copies */
    char *tokens_file, *group, *node;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct token_set tokens;  /* under mu */
    struct task *head, *tail; /* under mu */
    size_t queued;
    bool stopping;
    cJSON *audit; /* array of pending audit lines, under mu */
    struct baton_client *clients[API_WORKERS];
    pthread_t threads[API_WORKERS];
    int nthreads;
    struct failed failed[API_ADDRS]; /* the HTTP thread's */
    /* Refusals logged in the current second, and those left out since
     * the last one logged, of each kind ([0] 401, [1] 429): the HTTP
     * thread's. Each kind has its own budget, so that the line saying an
     * address is now blocked is not crowded out by the 401s before it. */
    int64_t refused_second_ns;
    int refused_logged[2];
    long refused_dropped[2];
};

/* ---- answers ---- */

static void reply_json(struct http_response *out, int status, cJSON *doc)
{
    char *text = doc != NULL ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    out->type = "application/json";
    if (text == NULL) {
        out->status = 500;
        return;
    }
    size_t n = strlen(text);
    text[n] = '\n'; /* the buffer held the NUL */
    out->status = status;
    out->body = text;
    out->len = n + 1;
}

static void reply_error(struct http_response *out, int status, const char *code, const char *fmt,
                        ...) __attribute__((format(printf, 4, 5)));
static void reply_error(struct http_response *out, int status, const char *code, const char *fmt,
                        ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    cJSON_AddStringToObject(o, "code", code);
    reply_json(out, status, o);
}

/* ---- the failed addresses ---- */

static struct failed *failed_find(struct api *a, const char *addr, bool make, int64_t now)
{
    struct failed *oldest = NULL;
    for (size_t i = 0; i < API_ADDRS; i++) {
        struct failed *f = &a->failed[i];
        if (f->addr[0] != '\0' && strcmp(f->addr, addr) == 0)
            return f;
        if (oldest == NULL || f->addr[0] == '\0' ||
            (oldest->addr[0] != '\0' && f->last_ns < oldest->last_ns))
            oldest = f;
    }
    if (!make)
        return NULL;
    /* The table is bounded: the least recently seen address is forgotten. */
    memset(oldest, 0, sizeof *oldest);
    snprintf(oldest->addr, sizeof oldest->addr, "%s", addr);
    oldest->window_ns = now;
    return oldest;
}

/* Seconds addr stays refused, 0 when it is not. */
static int blocked_for(struct api *a, const char *addr, int64_t now)
{
    struct failed *f = failed_find(a, addr, false, now);
    if (f == NULL || f->blocked_until_ns <= now)
        return 0;
    return (int)((f->blocked_until_ns - now) / 1000000000 + 1);
}

static void failed_note(struct api *a, const char *addr, int64_t now)
{
    struct failed *f = failed_find(a, addr, true, now);
    if (now - f->window_ns > (int64_t)API_FAIL_WINDOW_S * 1000000000) {
        f->window_ns = now;
        f->count = 0;
    }
    f->last_ns = now;
    if (++f->count >= API_FAIL_MAX) {
        f->blocked_until_ns = now + (int64_t)API_BLOCK_S * 1000000000;
        f->count = 0;
        f->window_ns = now;
    }
}

/* ---- checks on the HTTP thread ---- */

static bool in_list(const char *path, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(path, list[i]) == 0)
            return true;
    return false;
}

/* Matches path against pattern; the '*' segment goes into seg. */
static bool match(const char *pattern, const char *path, char *seg, size_t seglen)
{
    seg[0] = '\0';
    while (*pattern != '\0') {
        if (*pattern == '*') {
            size_t n = strcspn(path, "/");
            if (n == 0 || n >= seglen)
                return false;
            memcpy(seg, path, n);
            seg[n] = '\0';
            path += n;
            pattern++;
            continue;
        }
        if (*pattern++ != *path++)
            return false;
    }
    return *path == '\0';
}

/* The bearer token of an Authorization header, or NULL. */
static const char *bearer(const char *h, size_t *len)
{
    if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    h += 7;
    while (*h == ' ')
        h++;
    *len = strcspn(h, " \t");
    return *len > 0 && h[*len] == '\0' ? h : NULL;
}

/* A query argument's value ("k=v&" pairs, api.h), copied into buf.
 * Returns false when absent. */
static bool query_get(const char *q, const char *key, char *buf, size_t len)
{
    size_t kl = strlen(key);
    while (*q != '\0') {
        size_t n = strcspn(q, "&");
        if (n > kl && strncmp(q, key, kl) == 0 && q[kl] == '=') {
            snprintf(buf, len, "%.*s", (int)(n - kl - 1), q + kl + 1);
            return true;
        }
        q += n + (q[n] == '&');
    }
    return false;
}

/* Reads the JSON body into t. Returns 0, or -1 after an error answer. */
static int read_body(const struct http_request *rq, const struct route *r, struct task *t,
                     struct http_response *out)
{
    static const char *const allowed[][3] = {[OP_TRIGGER] = {"id", "wait", NULL},
                                             [OP_PAUSE] = {"reason", NULL, NULL},
                                             [OP_RESUME] = {"catchup", NULL, NULL},
                                             [OP_PAUSE_ALL] = {"reason", NULL, NULL},
                                             [OP_RESUME_ALL] = {"catchup", NULL, NULL},
                                             [OP_STEP_DOWN] = {"wait", NULL, NULL},
                                             [OP_RUNS] = {NULL, NULL, NULL},
                                             [OP_OUTPUT] = {NULL, NULL, NULL}};
    if (rq->body_too_big) {
        reply_error(out, 413, "body_too_large", "the body is larger than %d bytes", HTTP_MAX_BODY);
        return -1;
    }
    size_t n = rq->body_len;
    while (n > 0 && isspace((unsigned char)rq->body[n - 1]))
        n--;
    if (n == 0)
        return 0;
    if (memchr(rq->body, '\0', rq->body_len) != NULL) {
        reply_error(out, 400, "bad_body", "the body holds a NUL byte");
        return -1;
    }
    cJSON *doc = cJSON_ParseWithLength(rq->body, rq->body_len);
    int rc = -1;
    if (doc == NULL || !cJSON_IsObject(doc)) {
        reply_error(out, 400, "bad_body", "the body must be a JSON object");
        goto out;
    }
    for (cJSON *it = doc->child; it != NULL; it = it->next) {
        bool known = false;
        for (int i = 0; i < 3 && allowed[r->op][i] != NULL; i++)
            known = known || strcmp(it->string, allowed[r->op][i]) == 0;
        if (!known) {
            reply_error(out, 400, "bad_body", "%s takes no field \"%.64s\"", r->action, it->string);
            goto out;
        }
        if (strcmp(it->string, "id") == 0) {
            if (!cJSON_IsString(it) || !trigger_id_ok(it->valuestring)) {
                reply_error(out, 400, "bad_id",
                            "id: 1-48 letters, digits, '_', '.', ':' or '-', starting with a "
                            "letter or digit");
                goto out;
            }
            snprintf(t->id, sizeof t->id, "%s", it->valuestring);
        } else if (strcmp(it->string, "wait") == 0) {
            if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0) ||
                it->valuedouble > API_WAIT_MAX_S) {
                reply_error(out, 400, "bad_wait", "wait: seconds, 0 to %d", API_WAIT_MAX_S);
                goto out;
            }
            t->wait_ms = (int64_t)(it->valuedouble * 1000);
        } else if (strcmp(it->string, "reason") == 0) {
            if (!cJSON_IsString(it) || strlen(it->valuestring) > REASON_MAX) {
                reply_error(out, 400, "bad_reason", "reason: a string of at most %d bytes",
                            REASON_MAX);
                goto out;
            }
            snprintf(t->reason, sizeof t->reason, "%s", it->valuestring);
            t->has_reason = true;
        } else if (strcmp(it->string, "catchup") == 0) {
            if (!cJSON_IsBool(it)) {
                reply_error(out, 400, "bad_catchup", "catchup: true or false");
                goto out;
            }
            t->catchup = cJSON_IsTrue(it);
        }
    }
    rc = 0;
out:
    cJSON_Delete(doc);
    return rc;
}

static void audit_queue(struct api *a, cJSON *f);

static void audit(struct api *a, const struct task *t, const char *action, int status,
                  const char *result)
{
    cJSON *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "token", t->token_name);
    cJSON_AddStringToObject(f, "action", action);
    if (t->job[0] != '\0')
        cJSON_AddStringToObject(f, "job", t->job);
    else
        cJSON_AddNullToObject(f, "job");
    cJSON_AddStringToObject(f, "remote", t->remote);
    cJSON_AddNumberToObject(f, "status", status);
    cJSON_AddStringToObject(f, "result", result);
    audit_queue(a, f);
}

/* Queues one audit line (f taken) for api_flush_audit(). Any thread. */
static void audit_queue(struct api *a, cJSON *f)
{
    pthread_mutex_lock(&a->mu);
    if (a->audit == NULL)
        a->audit = cJSON_CreateArray();
    if (a->audit != NULL && cJSON_GetArraySize(a->audit) < 1000)
        cJSON_AddItemToArray(a->audit, f);
    else
        cJSON_Delete(f);
    pthread_mutex_unlock(&a->mu);
}

/* Audits a request refused for its token (401) or its address (429): at
 * most API_REFUSED_LOG_PER_S lines a second of each, the next one of its
 * kind logged saying how many were left out (`suppressed`), so that a
 * flood cannot fill the log. HTTP thread. */
static void refused(struct api *a, const struct http_request *rq, int status, const char *code)
{
    int64_t now = mono_ns();
    char seg[TRIGGER_ID_MAX + 16];
    const char *action = "read";
    int k = status == 429;
    if (now - a->refused_second_ns >= 1000000000) {
        a->refused_second_ns = now;
        a->refused_logged[0] = a->refused_logged[1] = 0;
    }
    if (a->refused_logged[k] >= API_REFUSED_LOG_PER_S) {
        a->refused_dropped[k]++;
        return;
    }
    a->refused_logged[k]++;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (match(routes[i].pattern, rq->path, seg, sizeof seg))
            action = routes[i].action;
    cJSON *f = cJSON_CreateObject();
    cJSON_AddNullToObject(f, "token");
    cJSON_AddStringToObject(f, "action", action);
    cJSON_AddNullToObject(f, "job");
    cJSON_AddStringToObject(f, "remote", rq->remote);
    cJSON_AddNumberToObject(f, "status", status);
    cJSON_AddStringToObject(f, "result", code);
    if (a->refused_dropped[k] > 0)
        cJSON_AddNumberToObject(f, "suppressed", (double)a->refused_dropped[k]);
    a->refused_dropped[k] = 0;
    audit_queue(a, f);
}

enum http_verdict api_handle(void *ctx, const struct http_request *rq, struct http_response *out)
{
    struct api *a = ctx;
    int64_t now = mono_ns();
    if (in_list(rq->path, probe_paths, sizeof probe_paths / sizeof probe_paths[0]))
        return HTTP_PASS;
    bool read_path = in_list(rq->path, read_paths, sizeof read_paths / sizeof read_paths[0]);
    bool page = strcmp(rq->path, "/") == 0;
    if (read_path && a->conf.public_read && (!page || rq->authorization == NULL)) {
        out->grant = API_GRANT_PUBLIC;
        return HTTP_PASS;
    }
    /* Every token is checked, even from an address refused for its
     * failures: a client with a valid token behind the same address (a
     * shared NAT, a proxy) is not locked out by another's wrong ones. The
     * refusal still answers every wrong or missing token with 429, so
     * guessing gains nothing while it lasts (and a token has 256 bits). */
    size_t tlen = 0;
    const char *tok = bearer(rq->authorization, &tlen);
    struct token_entry who;
    bool found = false;
    pthread_mutex_lock(&a->mu);
    const struct token_entry *e = tokens_verify(&a->tokens, tok != NULL ? tok : "", tok ? tlen : 0);
    if (e != NULL) {
        who = *e;
        found = true;
    }
    pthread_mutex_unlock(&a->mu);
    int wait_s = found ? 0 : blocked_for(a, rq->remote, now);
    if (wait_s > 0) {
        refused(a, rq, 429, "too_many_failures");
        reply_error(out, 429, "too_many_failures",
                    "too many requests with a wrong token from this address: try again in %d s",
                    wait_s);
        out->retry_after_s = wait_s;
        return HTTP_ANSWER;
    }
    if (!found) {
        /* A browser's first visit has no token: not a failure to count. */
        if (tok != NULL || !page)
            failed_note(a, rq->remote, now);
        refused(a, rq, 401, "unauthorized");
        if (page && (out->body = statuspage_login(&out->len)) != NULL) {
            out->status = 401;
            out->type = "text/html; charset=utf-8";
            out->page = true;
        } else {
            reply_error(out, 401, "unauthorized", "a valid bearer token is required");
        }
        out->www_auth = true;
        return HTTP_ANSWER;
    }
    if (read_path) {
        out->grant = who.role == TOKEN_OPERATE ? API_GRANT_OPERATE : API_GRANT_READ;
        return HTTP_PASS;
    }
    const struct route *r = NULL;
    char seg[TRIGGER_ID_MAX + 16];
    bool path_known = false;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0] && r == NULL; i++) {
        if (!match(routes[i].pattern, rq->path, seg, sizeof seg))
            continue;
        path_known = true;
        if (strcmp(routes[i].method, rq->method) == 0 ||
            (strcmp(rq->method, "HEAD") == 0 && strcmp(routes[i].method, "GET") == 0))
            r = &routes[i];
        else
            out->allow = strcmp(routes[i].method, "GET") == 0 ? "GET, HEAD" : "POST";
    }
    if (r == NULL && path_known) {
        reply_error(out, 405, "method_not_allowed", "%s is not served here: %s", rq->method,
                    out->allow);
        return HTTP_ANSWER;
    }
    if (r == NULL) {
        reply_error(out, 404, "not_found",
                    "no such path: the control API serves /jobs/JOB/trigger, pause, resume and "
                    "runs, /pause-all, /resume-all, /step-down and /runs/ID/output");
        return HTTP_ANSWER;
    }
    struct task *t = calloc(1, sizeof *t);
    if (t == NULL) {
        out->status = 500;
        return HTTP_ANSWER;
    }
    t->op = r->op;
    t->call = rq->call;
    snprintf(t->token_name, sizeof t->token_name, "%s", who.name);
    snprintf(t->remote, sizeof t->remote, "%s", rq->remote);
    snprintf(t->by, sizeof t->by, "%s (token) from %s", who.name, rq->remote);
    bool job_path = strncmp(r->pattern, "/jobs/", 6) == 0;
    if (job_path) {
        if (!job_name_ok(seg)) {
            reply_error(out, 400, "bad_job",
                        "a job name is 1-128 letters, digits, '_', '.' or '-'");
            goto refuse;
        }
        snprintf(t->job, sizeof t->job, "%s", seg);
    }
    if (strcmp(r->method, "POST") == 0 && who.role != TOKEN_OPERATE) {
        reply_error(out, 403, "forbidden", "token %s may only read (its role is read)", who.name);
        audit(a, t, r->action, 403, "forbidden: a read token");
        goto refuse;
    }
    if (job_path && !a->conf.job_known(a->conf.ctx, t->job)) {
        reply_error(out, 404, "no_such_job", "no job %s in this node's jobs.yaml", t->job);
        goto refuse;
    }
    if (read_body(rq, r, t, out) != 0)
        goto refuse;
    if (r->op == OP_OUTPUT) {
        if (!trigger_id_ok(seg) && strspn(seg, "0123456789-.") != strlen(seg)) {
            reply_error(out, 400, "bad_run_id", "not a run id");
            goto refuse;
        }
        snprintf(t->id, sizeof t->id, "%s", seg);
        char job[JOB_NAME_MAX + 1];
        if (query_get(rq->query, "job", job, sizeof job)) {
            if (!job_name_ok(job)) {
                reply_error(out, 400, "bad_job", "job: 1-128 letters, digits, '_', '.' or '-'");
                goto refuse;
            }
            snprintf(t->job, sizeof t->job, "%s", job);
        }
    }
    if (r->op == OP_RUNS) {
        char n[16];
        t->count = RUNS_DEFAULT;
        if (query_get(rq->query, "count", n, sizeof n)) {
            char *end = NULL;
            errno = 0;
            long v = strtol(n, &end, 10);
            if (errno != 0 || end == n || *end != '\0' || v < 1 || v > API_RUNS_MAX) {
                reply_error(out, 400, "bad_count", "count: 1 to %d", API_RUNS_MAX);
                goto refuse;
            }
            t->count = v;
        }
    }
    if (r->op == OP_STEP_DOWN && t->wait_ms == 0)
        t->wait_ms = STEPDOWN_WAIT_S * 1000;
    pthread_mutex_lock(&a->mu);
    bool full = a->queued >= API_QUEUE_MAX || a->stopping;
    if (!full) {
        if (a->tail != NULL)
            a->tail->next = t;
        else
            a->head = t;
        a->tail = t;
        a->queued++;
        pthread_cond_signal(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    if (full) {
        reply_error(out, 503, "busy", "%d calls wait already, or the node is stopping: try again",
                    API_QUEUE_MAX);
        out->retry_after_s = 1;
        goto refuse;
    }
    return HTTP_LATER;
refuse:
    free(t);
    return HTTP_ANSWER;
}

/* ---- the workers ---- */

static bool stopping(struct api *a)
{
    pthread_mutex_lock(&a->mu);
    bool s = a->stopping;
    pthread_mutex_unlock(&a->mu);
    return s;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void redis_error(struct http_response *out, struct baton_client *c, int rc)
{
    reply_error(out, 503, "redis", "Redis: %s (%s)", baton_client_errstr(c), baton_strerror(rc));
}

static void do_trigger(struct api *a, struct baton_client *c, struct task *t,
                       struct http_response *out)
{
    enum trigger_request_result res;
    struct trigger_reply r = {0};
    int receivers = 0;
    if (t->id[0] == '\0' && trigger_make_id(t->id, sizeof t->id) != 0) {
        reply_error(out, 503, "no_randomness", "cannot make an id");
        return;
    }
    int rc = trigger_request(c, a->group, t->job, t->id, t->by, &res, &receivers, &r);
    if (rc != BATON_OK) {
        redis_error(out, c, rc);
        return;
    }
    if (res == TRIGGER_FULL) {
        reply_error(out, 503, "queue_full", "%d requests wait in group %s already",
                    TRIGGER_QUEUE_MAX, a->group);
        goto out;
    }
    if (res == TRIGGER_OTHER_JOB) {
        reply_error(out, 409, "id_of_another_job", "id %s belongs to a request for job %s", t->id,
                    r.v[0].job);
        goto out;
    }
    int64_t deadline = mono_ms() + t->wait_ms;
    while (t->wait_ms > 0 && r.v[0].state != TRIGGER_DONE && mono_ms() < deadline && !stopping(a)) {
        int64_t left = deadline - mono_ms();
        sleep_ms(left < WAIT_POLL_MS ? (left > 0 ? left : 1) : WAIT_POLL_MS);
        trigger_reply_free(&r);
        rc = trigger_get(c, a->group, t->id, &r);
        if (rc != BATON_OK || r.n == 0) {
            if (rc != BATON_OK)
                redis_error(out, c, rc);
            else
                reply_error(out, 503, "gone", "request %s is gone from Redis", t->id);
            goto out;
        }
    }
    cJSON *doc = trigger_json(&r.v[0]);
    cJSON_AddBoolToObject(doc, "created", res == TRIGGER_CREATED);
    cJSON_AddNumberToObject(doc, "listeners", receivers);
    reply_json(out, r.v[0].state == TRIGGER_DONE ? 200 : 202, doc);
out:
    trigger_reply_free(&r);
}

static void do_pause(struct api *a, struct baton_client *c, struct task *t,
                     struct http_response *out)
{
    bool was = false;
    const char *job = t->op == OP_PAUSE ? t->job : NULL;
    int rc = pause_set(c, a->group, job, t->by, t->has_reason ? t->reason : NULL,
                       a->conf.history_len, &was);
    if (rc != BATON_OK) {
        redis_error(out, c, rc);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    if (job != NULL)
        cJSON_AddStringToObject(o, "job", job);
    else
        cJSON_AddNullToObject(o, "job");
    cJSON_AddBoolToObject(o, "paused", true);
    cJSON_AddBoolToObject(o, "was_paused", was);
    cJSON_AddStringToObject(o, "by", t->by);
    reply_json(out, 200, o);
}

static void do_resume(struct api *a, struct baton_client *c, struct task *t,
                      struct http_response *out)
{
    int n = 0;
    struct pause_list l = {0};
    const char *job = t->op == OP_RESUME ? t->job : NULL;
    int rc = pause_resume(c, a->group, job, t->catchup, t->by, a->conf.history_len, &n);
    if (rc == BATON_OK && job != NULL)
        rc = pause_read(c, a->group, &l);
    if (rc != BATON_OK) {
        redis_error(out, c, rc);
        return;
    }
    const struct pause_entry *all = job != NULL ? pause_find(&l, PAUSE_ALL) : NULL;
    cJSON *o = cJSON_CreateObject();
    if (job != NULL)
        cJSON_AddStringToObject(o, "job", job);
    else
        cJSON_AddNullToObject(o, "job");
    cJSON_AddNumberToObject(o, "resumed", n);
    cJSON_AddBoolToObject(o, "catchup", t->catchup);
    cJSON_AddBoolToObject(o, "still_paused_by_all", all != NULL && !all->resumed);
    pause_list_free(&l);
    reply_json(out, 200, o);
}

static cJSON *leader_json(const struct baton_leader_info *li)
{
    if (!li->has_leader)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "node", li->identity);
    cJSON_AddNumberToObject(o, "term", (double)li->term);
    return o;
}

static void do_step_down(struct api *a, struct baton_client *c, struct task *t,
                         struct http_response *out)
{
    static const char *const names[] = {[STEPDOWN_HANDED_OVER] = "handed_over",
                                        [STEPDOWN_NO_LEADER_YET] = "no_leader_yet",
                                        [STEPDOWN_NO_LEADER] = "no_leader",
                                        [STEPDOWN_UNHEARD] = "unheard",
                                        [STEPDOWN_TIMED_OUT] = "timed_out"};
    struct baton_leader_info old, now;
    enum stepdown_result res;
    int rc = stepdown_run(c, a->group, t->wait_ms, &res, &old, &now);
    if (rc != BATON_OK) {
        redis_error(out, c, rc);
        return;
    }
    if (res == STEPDOWN_NO_LEADER) {
        reply_error(out, 409, "no_leader", "no leader in group %s", a->group);
        return;
    }
    if (res == STEPDOWN_UNHEARD) {
        reply_error(out, 503, "unheard", "no supervisor is listening on group %s", a->group);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "result", names[res]);
    cJSON_AddItemToObject(o, "old_leader", leader_json(&old));
    cJSON_AddItemToObject(o, "leader", leader_json(&now));
    reply_json(out, res == STEPDOWN_TIMED_OUT ? 503 : 200, o);
}

static void do_runs(struct api *a, struct baton_client *c, struct task *t,
                    struct http_response *out)
{
    struct history_list l = {0};
    struct pause_rec_list p = {0};
    int rc = history_read(c, a->group, t->job, t->count, &l);
    if (rc == BATON_OK)
        rc = pause_rec_read(c, a->group, t->job, t->count, &p);
    if (rc != BATON_OK) {
        history_list_free(&l);
        redis_error(out, c, rc);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "job", t->job);
    cJSON *runs = cJSON_AddArrayToObject(o, "runs");
    for (size_t i = 0; i < l.n; i++)
        cJSON_AddItemToArray(runs, history_json(&l.v[i]));
    /* Apart from the runs, so that nothing counting runs counts them. */
    cJSON *pauses = cJSON_AddArrayToObject(o, "pauses");
    for (size_t i = 0; i < p.n; i++)
        cJSON_AddItemToArray(pauses, pause_rec_json(&p.v[i]));
    pause_rec_list_free(&p);
    history_list_free(&l);
    reply_json(out, 200, o);
}

static void do_output(struct api *a, struct baton_client *c, struct task *t,
                      struct http_response *out)
{
    struct history_list l = {0};
    if (t->job[0] == '\0') { /* a manual run: its request names the job */
        struct trigger_reply r = {0};
        int rc = trigger_get(c, a->group, t->id, &r);
        if (rc != BATON_OK) {
            redis_error(out, c, rc);
            return;
        }
        if (r.n > 0)
            snprintf(t->job, sizeof t->job, "%s", r.v[0].job);
        trigger_reply_free(&r);
        if (t->job[0] == '\0') {
            reply_error(out, 400, "job_needed",
                        "run %s is not a request of baton trigger: name its job (?job=JOB)", t->id);
            return;
        }
    }
    int rc = history_find(c, a->group, t->job, t->id, &l);
    if (rc != BATON_OK) {
        redis_error(out, c, rc);
        return;
    }
    if (l.n == 0 || !l.v[0].has_output) {
        reply_error(out, 404, l.n == 0 ? "no_such_run" : "no_output",
                    l.n == 0 ? "no run %s of job %s in the history"
                             : "run %s of job %s has no output kept",
                    t->id, t->job);
        history_list_free(&l);
        return;
    }
    cJSON *o = history_json_opts(&l.v[0], HISTORY_JSON_OUTPUT);
    cJSON_AddStringToObject(o, "job", t->job);
    history_list_free(&l);
    reply_json(out, 200, o);
}

static const char *action_of(enum op op)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (routes[i].op == op)
            return routes[i].action;
    return "?";
}

static void carry_out(struct api *a, struct baton_client *c, struct task *t)
{
    struct http_response out = {.status = 500, .type = "application/json"};
    switch (t->op) {
    case OP_TRIGGER: do_trigger(a, c, t, &out); break;
    case OP_PAUSE:
    case OP_PAUSE_ALL: do_pause(a, c, t, &out); break;
    case OP_RESUME:
    case OP_RESUME_ALL: do_resume(a, c, t, &out); break;
    case OP_STEP_DOWN: do_step_down(a, c, t, &out); break;
    case OP_RUNS: do_runs(a, c, t, &out); break;
    case OP_OUTPUT: do_output(a, c, t, &out); break;
    }
    if (t->op != OP_RUNS && t->op != OP_OUTPUT) {
        char result[160] = "ok";
        if (out.status >= 300) {
            cJSON *e = out.body != NULL ? cJSON_ParseWithLength(out.body, out.len) : NULL;
            const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
            snprintf(result, sizeof result, "%s", cJSON_IsString(code) ? code->valuestring : "?");
            cJSON_Delete(e);
        }
        audit(a, t, action_of(t->op), out.status, result);
    }
    http_call_answer(t->call, &out);
}

struct worker_arg {
    struct api *a;
    int i;
};

static void *work(void *arg)
{
    struct api *a = ((struct worker_arg *)arg)->a;
    int i = ((struct worker_arg *)arg)->i;
    free(arg);
    for (;;) {
        pthread_mutex_lock(&a->mu);
        while (a->head == NULL && !a->stopping)
            pthread_cond_wait(&a->cv, &a->mu);
        if (a->stopping) {
            pthread_mutex_unlock(&a->mu);
            return NULL;
        }
        struct task *t = a->head;
        a->head = t->next;
        if (a->head == NULL)
            a->tail = NULL;
        a->queued--;
        pthread_mutex_unlock(&a->mu);
        carry_out(a, a->clients[i], t);
        free(t);
    }
}

/* ---- life ---- */

struct api *api_new(const struct api_conf *conf, char *msg, size_t msglen)
{
    struct api *a = calloc(1, sizeof *a);
    if (a == NULL) {
        snprintf(msg, msglen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    a->conf = *conf;
    a->tokens_file = strdup(conf->tokens_file);
    a->group = strdup(conf->group);
    a->node = strdup(conf->node);
    if (a->tokens_file == NULL || a->group == NULL || a->node == NULL) {
        snprintf(msg, msglen, "out of memory");
        goto fail;
    }
    if (tokens_load(a->tokens_file, &a->tokens, msg, msglen) != 0)
        goto fail;
    struct baton_client_opts co = *conf->client_opts;
    co.lazy = true; /* a worker connects at its first call */
    for (int i = 0; i < API_WORKERS; i++) {
        if (baton_client_new(conf->redis_url, &co, &a->clients[i]) != BATON_OK) {
            snprintf(msg, msglen, "the control API's Redis client: %s",
                     a->clients[i] != NULL ? baton_client_errstr(a->clients[i]) : "out of memory");
            goto fail;
        }
    }
    for (int i = 0; i < API_WORKERS; i++) {
        struct worker_arg *w = malloc(sizeof *w);
        if (w == NULL) {
            snprintf(msg, msglen, "out of memory");
            goto fail;
        }
        *w = (struct worker_arg){a, i};
        int err = pthread_create(&a->threads[i], NULL, work, w);
        if (err != 0) {
            free(w);
            snprintf(msg, msglen, "cannot start a thread: %s", strerror(err));
            goto fail;
        }
        pthread_setname_np(a->threads[i], "baton-api");
        a->nthreads++;
    }
    return a;
fail:
    api_stop(a);
    api_free(a);
    return NULL;
}

int api_reload_tokens(struct api *a, char *err, size_t errlen)
{
    struct token_set s, old;
    if (tokens_load(a->tokens_file, &s, err, errlen) != 0)
        return -1;
    pthread_mutex_lock(&a->mu);
    old = a->tokens;
    a->tokens = s;
    pthread_mutex_unlock(&a->mu);
    OPENSSL_cleanse(old.v, old.n * sizeof *old.v);
    tokens_free(&old);
    return 0;
}

void api_flush_audit(struct api *a, struct log *log)
{
    if (a == NULL)
        return;
    pthread_mutex_lock(&a->mu);
    cJSON *lines = a->audit;
    a->audit = NULL;
    pthread_mutex_unlock(&a->mu);
    if (lines == NULL)
        return;
    cJSON *f;
    while ((f = cJSON_DetachItemFromArray(lines, 0)) != NULL)
        log_emit(log, LE_API_CALL, f);
    cJSON_Delete(lines);
}

void api_stop(struct api *a)
{
    if (a == NULL)
        return;
    pthread_mutex_lock(&a->mu);
    a->stopping = true;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    for (int i = 0; i < a->nthreads; i++)
        pthread_join(a->threads[i], NULL);
    a->nthreads = 0;
    /* What is still queued is answered: every suspended call ends before
     * the server stops. */
    while (a->head != NULL) {
        struct task *t = a->head;
        a->head = t->next;
        struct http_response out = {.type = "application/json"};
        reply_error(&out, 503, "stopping", "the node is stopping");
        http_call_answer(t->call, &out);
        free(t);
    }
    a->tail = NULL;
    a->queued = 0;
}

void api_free(struct api *a)
{
    if (a == NULL)
        return;
    for (int i = 0; i < API_WORKERS; i++)
        baton_client_free(a->clients[i]);
    OPENSSL_cleanse(a->tokens.v, a->tokens.n * sizeof *a->tokens.v);
    tokens_free(&a->tokens);
    cJSON_Delete(a->audit);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a->tokens_file);
    free(a->group);
    free(a->node);
    free(a);
}
