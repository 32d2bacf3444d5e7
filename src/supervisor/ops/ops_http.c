/* ops_http.c -- the HTTP server's side of ops (ops_int.h): the handlers of
 * /healthz, /readyz, /status, / and /metrics, on the server's thread. Each
 * copies what it needs under ops.mu (the header by value, references to
 * the snapshots, a copy of the metrics) and formats outside it; none
 * reaches Redis or waits for the loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "machine.h"
#include "ops_int.h"
#include "status.h"
#include "statuspage.h"

#ifndef BATON_VERSION_STRING
#define BATON_VERSION_STRING "unknown"
#endif

struct snap {
    struct head head;
    struct roster *roster; /* may be NULL */
    struct lasts *lasts;
};

static void snap_take(struct ops *o, struct snap *s)
{
    pthread_mutex_lock(&o->mu);
    s->head = o->head;
    s->roster = o->roster;
    s->lasts = o->lasts;
    if (s->roster != NULL)
        atomic_fetch_add(&s->roster->refs, 1);
    atomic_fetch_add(&s->lasts->refs, 1);
    pthread_mutex_unlock(&o->mu);
}

static void snap_drop(struct snap *s)
{
    ops_roster_unref(s->roster);
    ops_lasts_unref(s->lasts);
}

/* Ready: Redis answers, and the node leads or follows. Returns true, or
 * false with why in buf; buf says what it is either way. */
static bool readiness(const struct ops *o, const struct head *h, int64_t now, char *buf, size_t len)
{
    if (!h->decided) {
        snprintf(buf, len, "starting: no decision yet");
        return false;
    }
    if (h->outage) {
        snprintf(buf, len, "Redis unreachable for %.1f s (%s)",
                 (double)(now - h->outage_since_ns) / 1e9, h->outage_what);
        return false;
    }
    switch (h->state) {
    case ST_WORKING:
    case ST_RENEWING:
        snprintf(buf, len, "leader of group %s, term %llu", o->group, (unsigned long long)h->term);
        return true;
    case ST_WAITING:
    case ST_ACQUIRING:
        if (h->leader_known)
            snprintf(buf, len, "follower of %s, term %llu", h->leader,
                     (unsigned long long)h->leader_term);
        else
            snprintf(buf, len, "follower");
        return true;
    case ST_PAUSING: snprintf(buf, len, "pausing: the lease was not confirmed"); return false;
    case ST_RELEASING:
        snprintf(buf, len, "%s", h->stopping ? "stopping" : "stepping down");
        return false;
    default: snprintf(buf, len, "idle"); return false;
    }
}

/* The leader as this node knows it now. */
static struct baton_leader_info leader_now(const struct ops *o, const struct head *h, int64_t now)
{
    struct baton_leader_info li = {.ttl_ms = -1};
    if (ops_leading_state(h->state)) {
        li.has_leader = true;
        snprintf(li.identity, sizeof li.identity, "%s", o->node);
        li.term = h->term;
        li.ttl_ms = h->lease_deadline_ns > now ? (h->lease_deadline_ns - now) / MS : 0;
    } else if (h->leader_known) {
        li.has_leader = true;
        snprintf(li.identity, sizeof li.identity, "%s", h->leader);
        li.term = h->leader_term;
        if (h->leader_lease_end_ns != 0)
            li.ttl_ms = h->leader_lease_end_ns > now ? (h->leader_lease_end_ns - now) / MS : 0;
    } else {
        li.term = h->leader_term > h->term ? h->leader_term : h->term;
    }
    return li;
}

static cJSON *view_json(const struct ops *o, const struct snap *s)
{
    int64_t now = loop_now();
    const struct ops_defs *d = s->lasts->defs;
    struct status_job *rows = d->n > 0 ? calloc(d->n, sizeof *rows) : NULL;
    if (d->n > 0 && rows == NULL)
        return NULL;
    for (size_t i = 0; i < d->n; i++) {
        const struct lastrun *r = s->lasts->v[i];
        rows[i] = (struct status_job){
            .name = d->v[i].name,
            .schedule = d->v[i].schedule,
            .timezone = d->v[i].timezone,
            .enabled = d->v[i].enabled,
            .expr = d->v[i].expr,
            .tz = d->v[i].tz,
            .last = r != NULL && r->l.n > 0 ? &r->l.v[0] : NULL,
            .paused = s->roster != NULL ? pause_holding(&s->roster->paused, d->v[i].name) : NULL};
    }
    struct baton_leader_info li = leader_now(o, &s->head, now);
    struct status_doc doc = {.group = o->group,
                             .redis = o->redis_url,
                             .leader = &li,
                             .members = s->roster != NULL ? s->roster->v : NULL,
                             .nmembers = s->roster != NULL ? s->roster->n : 0,
                             .members_age_ms =
                                 s->roster != NULL ? (now - s->roster->read_ns) / MS : 0,
                             .jobs = rows,
                             .njobs = d->n,
                             .pools = s->roster != NULL ? s->roster->pools : NULL,
                             .npools = s->roster != NULL ? s->roster->npools : 0,
                             .offers = s->roster != NULL ? &s->roster->offers : NULL,
                             .now = (int64_t)time(NULL),
                             .now_ms = wall_ms()};
    cJSON *root = status_doc_json(&doc);
    free(rows);
    if (root == NULL)
        return NULL;
    char why[400], ts[40];
    bool ready = readiness(o, &s->head, now, why, sizeof why);
    cJSON *v = cJSON_AddObjectToObject(root, "view");
    cJSON_AddStringToObject(v, "node", o->node);
    cJSON_AddStringToObject(v, "state", machine_state_name((enum machine_state)s->head.state));
    cJSON_AddNumberToObject(v, "term", (double)li.term); /* the term it leads or follows */
    cJSON_AddBoolToObject(v, "ready", ready);
    cJSON_AddStringToObject(v, "why", why);
    cJSON_AddBoolToObject(v, "redis_up", !s->head.outage);
    if (s->roster != NULL)
        cJSON_AddNumberToObject(v, "nodes_read_ms_ago", (double)((now - s->roster->read_ns) / MS));
    else
        cJSON_AddNullToObject(v, "nodes_read_ms_ago");
    int64_t oldest = 0;
    for (size_t i = 0; i < d->n; i++)
        if (s->lasts->v[i] != NULL && (oldest == 0 || s->lasts->v[i]->read_ns < oldest))
            oldest = s->lasts->v[i]->read_ns;
    if (oldest != 0)
        cJSON_AddNumberToObject(v, "last_runs_read_ms_ago", (double)((now - oldest) / MS));
    else
        cJSON_AddNullToObject(v, "last_runs_read_ms_ago");
    cJSON *tr = cJSON_AddArrayToObject(v, "transitions");
    size_t n = s->head.ntrans < OPS_TRANSITIONS ? s->head.ntrans : OPS_TRANSITIONS;
    for (size_t k = 0; k < n; k++) {
        const struct trans *t = &s->head.trans[(s->head.ntrans - 1 - k) % OPS_TRANSITIONS];
        cJSON *e = cJSON_CreateObject();
        log_rfc3339_ms(t->ts_ms, ts, sizeof ts);
        cJSON_AddStringToObject(e, "ts", ts);
        cJSON_AddStringToObject(e, "from", machine_state_name((enum machine_state)t->from));
        cJSON_AddStringToObject(e, "to", machine_state_name((enum machine_state)t->to));
        cJSON_AddStringToObject(e, "trigger", machine_event_name((enum machine_event)t->trigger));
        if (t->guard[0] != '\0')
            cJSON_AddStringToObject(e, "guard", t->guard);
        cJSON_AddNumberToObject(e, "term", (double)t->term);
        cJSON_AddItemToArray(tr, e);
    }
    return root;
}

static void reply_text(struct http_response *out, int status, const char *fmt_done)
{
    out->status = status;
    out->type = "text/plain; charset=utf-8";
    out->len = strlen(fmt_done);
    out->body = strdup(fmt_done);
    if (out->body == NULL) {
        out->status = 500;
        out->len = 0;
    }
}

static void h_healthz(void *ctx, const char *path, struct http_response *out)
{
    struct ops *o = ctx;
    char buf[160];
    (void)path;
    pthread_mutex_lock(&o->mu);
    int64_t last = o->head.last_turn_ns;
    pthread_mutex_unlock(&o->mu);
    double age = (double)(loop_now() - last) / 1e9;
    if (loop_now() - last <= o->live_limit_ns) {
        snprintf(buf, sizeof buf, "ok: the event loop turned %.1f s ago\n", age);
        reply_text(out, 200, buf);
    } else {
        snprintf(buf, sizeof buf,
                 "not live: the event loop has not turned for %.1f s (limit %.1f s)\n", age,
                 (double)o->live_limit_ns / 1e9);
        reply_text(out, 503, buf);
    }
}

static void h_readyz(void *ctx, const char *path, struct http_response *out)
{
    struct ops *o = ctx;
    char why[400], buf[440];
    struct head h;
    (void)path;
    pthread_mutex_lock(&o->mu);
    h = o->head;
    pthread_mutex_unlock(&o->mu);
    bool ready = readiness(o, &h, loop_now(), why, sizeof why);
    snprintf(buf, sizeof buf, "%s: %s\n", ready ? "ready" : "not ready", why);
    reply_text(out, ready ? 200 : 503, buf);
}

static void h_status(void *ctx, const char *path, struct http_response *out)
{
    struct ops *o = ctx;
    struct snap s;
    (void)path;
    atomic_store(&o->watched_ns, loop_now());
    snap_take(o, &s);
    cJSON *doc = view_json(o, &s);
    snap_drop(&s);
    char *text = doc != NULL ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    if (text == NULL)
        return; /* 500 */
    size_t n = strlen(text);
    text[n] = '\n'; /* the buffer held the NUL */
    out->status = 200;
    out->type = "application/json";
    out->body = text;
    out->len = n + 1;
}

static void h_page(void *ctx, const char *path, struct http_response *out)
{
    struct ops *o = ctx;
    struct snap s;
    (void)path;
    atomic_store(&o->watched_ns, loop_now());
    snap_take(o, &s);
    cJSON *doc = view_json(o, &s);
    snap_drop(&s);
    if (doc == NULL)
        return;
    enum statuspage_mode mode = o->api == NULL                    ? STATUSPAGE_PLAIN
                                : out->grant == API_GRANT_OPERATE ? STATUSPAGE_OPERATE
                                                                  : STATUSPAGE_READ;
    out->body = statuspage_render_mode(doc, wall_ms(), mode, &out->len);
    cJSON_Delete(doc);
    if (out->body == NULL)
        return;
    out->status = 200;
    out->type = "text/html; charset=utf-8";
    out->page = true;
}

static void h_metrics(void *ctx, const char *path, struct http_response *out)
{
    struct ops *o = ctx;
    (void)path;
    pthread_mutex_lock(&o->mu);
    struct head h = o->head;
    struct metrics *m = metrics_dup(o->metrics);
    pthread_mutex_unlock(&o->mu);
    if (m == NULL)
        return;
    int64_t now = loop_now();
    struct baton_leader_info li = leader_now(o, &h, now);
    struct metrics_gauges g = {
        .state = h.state,
        .is_leader = ops_leading_state(h.state),
        .term = li.term,
        .lease_left_s = ops_leading_state(h.state) && h.lease_deadline_ns > now
                            ? (double)(h.lease_deadline_ns - now) / 1e9
                            : 0,
        .running = h.running,
        .claim_ahead_s = ops_leading_state(h.state) ? (double)h.claim_ahead_ms / 1e3 : 0,
        .redis_up = !h.outage,
        .start_time_s = o->start_time_s,
        .log_lines_dropped = log_dropped_lines(o->h.log),
        .version = BATON_VERSION_STRING,
        .group = o->group,
        .node = o->node};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL) {
        metrics_free(m);
        return;
    }
    int rc = metrics_write(m, &g, f);
    if (rc == 0 && baton_stats_write_prometheus(o->h.client, f) != BATON_OK)
        rc = -1;
    metrics_free(m);
    if (fclose(f) != 0 || rc != 0) {
        free(buf);
        return;
    }
    out->status = 200;
    out->type = "text/plain; version=0.0.4; charset=utf-8";
    out->body = buf;
    out->len = len;
}

const struct http_route ops_routes[] = {
    {"/", h_page},           {"/status", h_status}, {"/metrics", h_metrics},
    {"/healthz", h_healthz}, {"/readyz", h_readyz}, {NULL, NULL},
};
