/* ops.c -- see ops.h; the loop's side of it (ops_int.h: the HTTP
 * server's side is ops_http.c).
 *
 * Two threads meet here. The loop's (the log observer, the timer,
 * ops_set_jobs, ops_on_message) writes; the HTTP server's (the handlers)
 * reads. What they share is under o->mu: a small header copied by value
 * (struct head), the metrics (copied with metrics_dup), and two immutable,
 * reference-counted snapshots swapped by pointer: the node list (struct
 * roster) and the jobs with their last runs (struct lasts over struct
 * defs). The loop holds the mutex to bump counters or swap a pointer; a
 * handler to copy the header and the metrics and take references. Both
 * format, and free what they dropped, outside it. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "facts.h"
#include "machine.h"
#include "ops_int.h"
#include "status.h"

#define RR_SHARE 4 /* of OPS_HISTORY_BUDGET: jobs re-read in turn while watched */

static void lastrun_unref(struct lastrun *r)
{
    if (r != NULL && atomic_fetch_sub(&r->refs, 1) == 1) {
        history_list_free(&r->l);
        free(r);
    }
}

void ops_defs_unref(struct ops_defs *d)
{
    if (d == NULL || atomic_fetch_sub(&d->refs, 1) != 1)
        return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->v[i].name);
        free(d->v[i].schedule);
        free(d->v[i].timezone);
        cron_free(d->v[i].expr);
    }
    for (size_t i = 0; i < d->nzones; i++)
        cron_tz_free(d->zones[i]);
    free(d->zones);
    limits_pools_free(d->pools, d->npools);
    free(d->by_name);
    free(d->v);
    free(d);
}

void ops_lasts_unref(struct lasts *l)
{
    if (l == NULL || atomic_fetch_sub(&l->refs, 1) != 1)
        return;
    for (size_t i = 0; i < l->defs->n; i++)
        lastrun_unref(l->v[i]);
    ops_defs_unref(l->defs);
    free(l->v);
    free(l);
}

void ops_roster_unref(struct roster *r)
{
    if (r == NULL || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    members_free(r->v, r->n);
    pause_list_free(&r->paused);
    limits_pools_free(r->pools, r->npools);
    status_offers_free(&r->offers);
    free(r);
}

/* A lasts over defs (taking a reference) with no record read. */
static struct lasts *lasts_new(struct ops_defs *defs)
{
    struct lasts *l = calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    l->v = defs->n > 0 ? calloc(defs->n, sizeof *l->v) : NULL;
    if (defs->n > 0 && l->v == NULL) {
        free(l);
        return NULL;
    }
    atomic_init(&l->refs, 1);
    atomic_fetch_add(&defs->refs, 1);
    l->defs = defs;
    return l;
}

/* Copies what the view needs of jobs: names, schedules (parsed again: the
 * same text gives the same expression) and zones (loaded again, once each). */
static int def_cmp(const void *a, const void *b)
{
    return strcmp((*(struct def *const *)a)->name, (*(struct def *const *)b)->name);
}

/* bsearch's: a name against an entry of by_name. */
static int def_name_cmp(const void *name, const void *e)
{
    return strcmp(name, (*(struct def *const *)e)->name);
}

struct ops_defs *ops_defs_new(const struct jobs *jobs)
{
    struct ops_defs *d = calloc(1, sizeof *d);
    char err[256];
    if (d == NULL)
        return NULL;
    atomic_init(&d->refs, 1);
    d->v = jobs->n > 0 ? calloc(jobs->n, sizeof *d->v) : NULL;
    d->zones = jobs->n > 0 ? calloc(jobs->n, sizeof *d->zones) : NULL;
    if (jobs->n > 0 && (d->v == NULL || d->zones == NULL))
        goto fail;
    for (size_t i = 0; i < jobs->n; i++, d->n++) {
        const struct job *j = &jobs->v[i];
        struct def *e = &d->v[i];
        struct cron_error ce;
        e->name = strdup(j->name);
        e->schedule = strdup(j->schedule);
        e->timezone = j->timezone != NULL ? strdup(j->timezone) : NULL;
        e->enabled = j->enabled;
        if (e->name == NULL || e->schedule == NULL || (j->timezone != NULL && e->timezone == NULL))
            goto fail_entry;
        if (cron_parse(j->schedule, &e->expr, &ce) != 0)
            e->expr = NULL;
        const char *zone = j->timezone != NULL ? j->timezone : "UTC";
        for (size_t z = 0; z < d->nzones && e->tz == NULL; z++)
            if (strcmp(cron_tz_name(d->zones[z]), zone) == 0)
                e->tz = d->zones[z];
        if (e->tz == NULL && cron_tz_load(zone, &d->zones[d->nzones], err, sizeof err) == 0)
            e->tz = d->zones[d->nzones++];
    }
    if (limits_pools_new(jobs, &d->pools, &d->npools) != BATON_OK)
        goto fail;
    d->by_name = d->n > 0 ? calloc(d->n, sizeof *d->by_name) : NULL;
    if (d->n > 0 && d->by_name == NULL)
        goto fail;
    for (size_t i = 0; i < d->n; i++)
        d->by_name[i] = &d->v[i];
    if (d->n > 0)
        qsort(d->by_name, d->n, sizeof *d->by_name, def_cmp);
    return d;
fail_entry:
    d->n++; /* free the half-made entry too */
fail:
    ops_defs_unref(d);
    return NULL;
}

/* ---- what the log says ---- */

bool ops_leading_state(int s)
{
    return machine_state_parent((enum machine_state)s) == P_LEADING;
}

/* Updates the header from one event and its facts (f: NULL for an
 * event that carries none). Under mu. */
static void track(struct ops *o, enum log_event ev, enum log_level lvl, const struct log_facts *f,
                  int64_t now)
{
    struct head *h = &o->head;
    if (f == NULL && log_facts_carried(ev))
        return; /* an emitter's bug: nothing to say */
    switch (ev) {
    case LE_TRANSITION: {
        int from = f->from, to = f->to;
        h->state = to;
        h->term = f->term;
        if (to == ST_WORKING || to == ST_WAITING)
            h->decided = true;
        if (ops_leading_state(to)) {
            h->lease_deadline_ns = baton_election_deadline_ns(o->h.election);
            h->leader_known = true;
            snprintf(h->leader, sizeof h->leader, "%s", o->node);
            h->leader_term = h->term;
            h->leader_lease_end_ns = h->lease_deadline_ns;
        } else {
            h->lease_deadline_ns = 0;
            if (ops_leading_state(from))
                h->leader_known = false; /* who leads next, a read or `following` says */
        }
        /* The routine renewals and polls are not news; a quiet first
         * decision (acquiring -> waiting) is. */
        int last_to = h->ntrans > 0 ? h->trans[(h->ntrans - 1) % OPS_TRANSITIONS].to : -1;
        if (lvl >= LOG_INFO || (from == ST_ACQUIRING && to != last_to)) {
            struct trans *t = &h->trans[h->ntrans % OPS_TRANSITIONS];
            t->ts_ms = wall_ms();
            t->from = from;
            t->to = to;
            t->trigger = f->trigger;
            t->term = h->term;
            log_facts_guard(f, t->guard, sizeof t->guard);
            h->ntrans++;
        }
        break;
    }
    case LE_FOLLOWING:
        h->leader_known = f->leader != NULL;
        snprintf(h->leader, sizeof h->leader, "%s", f->leader != NULL ? f->leader : "");
        h->leader_term = f->term;
        h->leader_lease_end_ns = f->lease_left_ms >= 0 ? now + f->lease_left_ms * MS : 0;
        break;
    case LE_REDIS_UNREACHABLE:
        if (!h->outage)
            h->outage_since_ns = now;
        h->outage = true;
        snprintf(h->outage_what, sizeof h->outage_what, "%s: %s", log_during_name(f->during),
                 f->error != NULL ? f->error : "?");
        break;
    case LE_REDIS_REACHABLE:
    case LE_REDIS_CONNECTED: h->outage = false; break;
    case LE_SIGNAL_RECEIVED:
        if (f->signal == SIGTERM || f->signal == SIGINT)
            h->stopping = true;
        break;
    case LE_RELOADED: h->reload_failed = false; break;
    case LE_RELOAD_FAILED: h->reload_failed = true; break;
    default: break;
    }
}

/* What systemd's STATUS= says for h; "" when nothing new is worth saying
 * (a follower's poll passes through acquiring). */
static void status_text(const struct ops *o, const struct head *h, char *buf, size_t len)
{
    int n = 0;
    switch (h->state) {
    case ST_WORKING:
    case ST_RENEWING:
        n = snprintf(buf, len, "working: leader of group %s, term %llu", o->group,
                     (unsigned long long)h->term);
        break;
    case ST_WAITING:
        if (h->outage)
            n = snprintf(buf, len, "waiting: Redis unreachable (%s)", h->outage_what);
        else if (h->leader_known)
            n = snprintf(buf, len, "waiting: following %s, term %llu", h->leader,
                         (unsigned long long)h->leader_term);
        else
            n = snprintf(buf, len, "waiting: no leader seen yet");
        break;
    case ST_PAUSING:
        n = snprintf(buf, len, "pausing: lease not confirmed, stopping the jobs");
        break;
    case ST_RELEASING:
        n = snprintf(buf, len, "releasing: %s, %zu runs finishing",
                     h->stopping ? "stopping" : "stepping down", h->running);
        break;
    case ST_IDLE:
        n = snprintf(buf, len, "idle: %s", h->stopping ? "stopped" : "campaigning again soon");
        break;
    default: buf[0] = '\0'; return; /* acquiring */
    }
    if (h->reload_failed && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "; the last reload failed (see the log)");
}

/* The index of job name in d, or (size_t)-1: a binary search (it runs for
 * every job event and every "ended" message of the group). */
static size_t def_index(const struct ops_defs *d, const char *name)
{
    if (name == NULL || d->by_name == NULL)
        return (size_t)-1;
    struct def **hit = bsearch(name, d->by_name, d->n, sizeof *d->by_name, def_name_cmp);
    return hit != NULL ? (size_t)(*hit - d->v) : (size_t)-1;
}

static void mark_dirty(struct ops *o, const char *job, unsigned char why)
{
    size_t i = o->lasts != NULL ? def_index(o->lasts->defs, job) : (size_t)-1;
    if (i != (size_t)-1 && o->dirty != NULL && o->dirty[i] < why)
        o->dirty[i] = why;
}

/* The log's observer: on the loop's thread, for every event. */
static void observe(void *ctx, enum log_event ev, enum log_level lvl, const struct log_facts *f)
{
    struct ops *o = ctx;
    if (ev == LE_JOB_OUTPUT) { /* the commonest line: counted, and nothing else */
        pthread_mutex_lock(&o->mu);
        metrics_observe(o->metrics, ev, f, 0);
        pthread_mutex_unlock(&o->mu);
        return;
    }
    int64_t now = loop_now();
    pthread_mutex_lock(&o->mu);
    metrics_observe(o->metrics, ev, f, wall_ms());
    track(o, ev, lvl, f, now);
    o->head.last_turn_ns = now;
    struct head h = o->head; /* for what follows, outside the lock */
    pthread_mutex_unlock(&o->mu);

    if ((ev == LE_JOB_END || ev == LE_TICK_SKIPPED) && f != NULL)
        mark_dirty(o, f->job, DIRTY_LOCAL);
    if (ev == LE_JOB_PAUSED || ev == LE_JOB_RESUMED)
        o->next_refresh_ns = 0; /* the view's pauses: read them at the next tick */
    if (!o->notify.enabled)
        return;
    char text[sizeof o->status];
    status_text(o, &h, text, sizeof text);
    if (ev == LE_SIGNAL_RECEIVED) {
        if (f != NULL && f->signal == SIGHUP)
            notify_reloading(&o->notify);
        else if (h.stopping)
            notify_stopping(&o->notify, "stopping: handing over, then exiting",
                            o->stop_budget_ms * 1000);
        return;
    }
    /* A first decision to follow is announced with the leader, which the
     * `following` line right after it names (the timer catches a miss). */
    bool defer =
        h.state == ST_WAITING && ev == LE_TRANSITION && f != NULL && f->trigger == EV_TAKEN;
    if (!o->notify.ready && h.decided && !defer) {
        notify_ready(&o->notify, text);
        snprintf(o->status, sizeof o->status, "%s", text);
    } else if (o->notify.ready && ((text[0] != '\0' && strcmp(text, o->status) != 0) ||
                                   ev == LE_RELOADED || ev == LE_RELOAD_FAILED)) {
        notify_status(&o->notify, text[0] != '\0' ? text : o->status);
        if (text[0] != '\0')
            snprintf(o->status, sizeof o->status, "%s", text);
    }
}

/* ---- refreshing what only Redis knows (on the loop) ---- */

/* The metrics' view of the nodes m[0..n): capacity and capacity in use
 * from their heartbeats, the offers as read (NULL: not read). Returns:
 * owned (free(); names borrowed from m), or NULL (none, or ENOMEM). */
static struct metrics_node *fleet_of(const struct member *m, size_t n,
                                     const struct status_offers *offers)
{
    struct metrics_node *v = n > 0 ? calloc(n, sizeof *v) : NULL;
    for (size_t i = 0; v != NULL && i < n; i++) {
        cJSON *hb = cJSON_Parse(m[i].info_json);
        const cJSON *cap = cJSON_GetObjectItemCaseSensitive(hb, "capacity");
        const cJSON *used = cJSON_GetObjectItemCaseSensitive(hb, "assigned");
        int64_t runs = cJSON_IsNumber(used) ? (int64_t)used->valuedouble : -1;
        v[i] = (struct metrics_node){.node = m[i].node,
                                     .capacity = cJSON_IsNumber(cap) ? (int64_t)cap->valuedouble : -1,
                                     .runs = members_alive(&m[i]) ? runs : 0, /* gone: none */
                                     .offers = offers != NULL ? (int64_t)offers->per_node[i] : -1};
        cJSON_Delete(hb);
    }
    return v;
}

static void refresh_roster(struct ops *o, int64_t now)
{
    struct baton_leader_info li;
    struct member *m = NULL;
    size_t n = 0;
    struct pause_list paused;
    if (!o->h.may_block(o->h.ctx) || baton_election_leader(o->h.client, o->group, &li) != BATON_OK)
        return;
    if (!o->h.may_block(o->h.ctx) || members_read(o->h.client, o->group, &m, &n) != BATON_OK)
        return;
    status_order_members(m, n, li.has_leader ? li.identity : NULL);
    if (!o->h.may_block(o->h.ctx) || pause_read(o->h.client, o->group, &paused) != BATON_OK) {
        members_free(m, n);
        return;
    }
    /* The pools' runs as Redis counts them, where the claims count them:
     * a leader's memory misses the runs an earlier leader left. */
    const struct ops_defs *defs = o->lasts->defs;
    struct limits_pool *pools = limits_pools_dup(defs->pools, defs->npools);
    if (pools != NULL && o->h.may_block(o->h.ctx))
        limits_pools_read(o->h.client, o->group, pools, defs->npools); /* -1 where it failed */
    struct roster *r = calloc(1, sizeof *r);
    if (r == NULL) {
        members_free(m, n);
        pause_list_free(&paused);
        limits_pools_free(pools, defs->npools);
        return;
    }
    bool offers_read = o->h.may_block(o->h.ctx) &&
                       status_offers_read(o->h.client, o->group, m, n, &r->offers) == BATON_OK;
    struct metrics_node *fleet = fleet_of(m, n, offers_read ? &r->offers : NULL);
    atomic_init(&r->refs, 1);
    r->v = m;
    r->n = n;
    r->paused = paused;
    r->pools = pools;
    r->npools = pools != NULL ? defs->npools : 0;
    r->read_ns = loop_now();
    pthread_mutex_lock(&o->mu);
    struct roster *old = o->roster;
    o->roster = r;
    metrics_set_pauses(o->metrics, &r->paused);
    metrics_set_pools(o->metrics, r->pools, r->npools);
    if (fleet != NULL || n == 0)
        metrics_set_fleet(o->metrics, fleet, n);
    struct head *h = &o->head;
    if (!ops_leading_state(h->state)) { /* when we lead, we know better than a read */
        h->leader_known = li.has_leader;
        snprintf(h->leader, sizeof h->leader, "%s", li.has_leader ? li.identity : "");
        h->leader_term = li.term;
        h->leader_lease_end_ns = li.has_leader && li.ttl_ms >= 0 ? now + li.ttl_ms * MS : 0;
    }
    pthread_mutex_unlock(&o->mu);
    ops_roster_unref(old);
    free(fleet);
}

/* Reads the last record of some jobs: those never read, those that ran
 * here since, and when someone watches, those that ran elsewhere, then a
 * few others in turn (a skipped tick says nothing on the channel). */
static void refresh_lasts(struct ops *o, bool watched)
{
    struct lasts *cur = o->lasts; /* the loop is its only writer */
    size_t n = cur->defs->n, pick[OPS_HISTORY_BUDGET], np = 0;
    for (size_t i = 0; i < n && np < OPS_HISTORY_BUDGET; i++)
        if (cur->v[i] == NULL)
            pick[np++] = i;
    for (size_t i = 0; i < n && np < OPS_HISTORY_BUDGET; i++)
        if (cur->v[i] != NULL && o->dirty[i] == DIRTY_LOCAL)
            pick[np++] = i;
    for (size_t i = 0; watched && i < n && np < OPS_HISTORY_BUDGET; i++)
        if (cur->v[i] != NULL && o->dirty[i] == DIRTY_REMOTE)
            pick[np++] = i;
    for (size_t k = 0; watched && k < RR_SHARE && k < n && np < OPS_HISTORY_BUDGET; k++) {
        size_t i = (o->rr + k) % n;
        if (cur->v[i] != NULL && o->dirty[i] == DIRTY_NO)
            pick[np++] = i;
    }
    if (watched && n > 0)
        o->rr = (o->rr + RR_SHARE) % n;
    if (np == 0)
        return;
    struct lasts *next = lasts_new(cur->defs);
    if (next == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        next->v[i] = cur->v[i];
        if (next->v[i] != NULL)
            atomic_fetch_add(&next->v[i]->refs, 1);
    }
    bool changed = false;
    int64_t start = loop_now();
    for (size_t k = 0; k < np; k++) {
        size_t i = pick[k];
        if (loop_now() - start > OPS_REFRESH_BUDGET_MS * MS)
            break; /* the rest next time: the loop has jobs to start */
        struct lastrun *r = calloc(1, sizeof *r);
        if (r == NULL || !o->h.may_block(o->h.ctx) ||
            history_read(o->h.client, o->group, cur->defs->v[i].name, 1, &r->l) != BATON_OK) {
            free(r);
            break;
        }
        atomic_init(&r->refs, 1);
        r->read_ns = loop_now();
        lastrun_unref(next->v[i]);
        next->v[i] = r;
        o->dirty[i] = DIRTY_NO;
        changed = true;
    }
    if (!changed) {
        ops_lasts_unref(next);
        return;
    }
    pthread_mutex_lock(&o->mu);
    o->lasts = next;
    pthread_mutex_unlock(&o->mu);
    ops_lasts_unref(cur);
}

static void refresh(struct ops *o, int64_t now)
{
    if (o->http == NULL)
        return; /* nobody to show it to */
    int64_t seen = (int64_t)atomic_load(&o->watched_ns);
    bool watched = seen != 0 && now - seen < (int64_t)OPS_WATCH_S * 1000 * MS;
    if (watched && !o->watched)
        o->next_refresh_ns = now; /* someone started looking: now, not at the next poll */
    o->watched = watched;
    if (now + OPS_TICK_MS * MS / 2 < o->next_refresh_ns)
        return; /* (the slack: ticks and refreshes share one timer) */
    o->next_refresh_ns = now + (watched ? OPS_WATCHED_MS : o->h.poll_ms) * MS;
    if (o->head.outage)
        return; /* the daemon's own retries find out when it ends */
    refresh_roster(o, now);
    refresh_lasts(o, watched);
}

static void arm(struct ops *o)
{
    int64_t at = o->next_tick_ns;
    if (o->notify.watchdog_ns > 0 && o->next_ping_ns < at)
        at = o->next_ping_ns;
    loop_arm(o->h.loop, o->h.timer_id, at);
}

/* The leader's ticks waiting for a limit, for the metrics (the runner's
 * view now; none when not leading). */
static void track_waiting(struct ops *o)
{
    size_t n;
    struct runner_wait *w = runner_waiting(o->h.runner, &n);
    struct metrics_wait *mw = n > 0 ? calloc(n, sizeof *mw) : NULL;
    if (n > 0 && mw == NULL) {
        free(w);
        return;
    }
    for (size_t i = 0; i < n; i++)
        mw[i] = (struct metrics_wait){
            .job = w[i].job,
            .reason = w[i].room             ? METRICS_WAIT_ROOM
                      : w[i].pool != NULL ? METRICS_WAIT_POOL
                                          : METRICS_WAIT_MAX_RUNNING,
            .ticks = w[i].room ? 1 : w[i].queued}; /* room: one entry a tick */
    pthread_mutex_lock(&o->mu);
    metrics_set_waiting(o->metrics, mw, n);
    pthread_mutex_unlock(&o->mu);
    free(mw);
    free(w);
}

/* api_conf.job_known: the job is in the jobs the view has. Any thread. */
static bool job_known(void *ctx, const char *job)
{
    struct ops *o = ctx;
    pthread_mutex_lock(&o->mu);
    bool known = def_index(o->lasts->defs, job) != (size_t)-1;
    pthread_mutex_unlock(&o->mu);
    return known;
}

void ops_reload_tokens(struct ops *o)
{
    char err[600];
    if (o->api == NULL || api_reload_tokens(o->api, err, sizeof err) == 0)
        return;
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "error", err);
    cJSON_AddStringToObject(f, "then", "keeping the tokens read before");
    log_emit(o->h.log, LE_API_TOKENS_RELOAD_FAILED, f);
}

void ops_reload_tls(struct ops *o, const char *cert, const char *key)
{
    char err[600];
    struct tls_files t;
    if (o->http == NULL || o->tls.cert == NULL)
        return; /* plain HTTP: the daemon reports http.tls as needing a restart */
    if (tls_files_load(cert, key, &t, err, sizeof err) != 0)
        goto failed;
    if (tls_files_same(&t, &o->tls)) {
        tls_files_free(&t);
        return;
    }
    struct http_tls ht = {.cert = t.cert, .key = t.key};
    if (http_tls_replace(o->http, &ht, err, sizeof err) != 0) {
        tls_files_free(&t);
        goto failed;
    }
    tls_files_free(&o->tls);
    o->tls = t;
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "subject", t.subject);
    cJSON_AddStringToObject(f, "not_after", t.not_after);
    log_emit(o->h.log, LE_HTTP_TLS_RELOADED, f);
    return;
failed:;
    cJSON *g = log_fields();
    cJSON_AddStringToObject(g, "error", err);
    cJSON_AddStringToObject(g, "then", "serving the certificate read before");
    log_emit(o->h.log, LE_HTTP_TLS_RELOAD_FAILED, g);
}

void ops_on_timer(struct ops *o)
{
    int64_t now = loop_now();
    if (o->http != NULL) /* nobody to show them to otherwise */
        track_waiting(o);
    api_flush_audit(o->api, o->h.log);
    pthread_mutex_lock(&o->mu);
    o->head.last_turn_ns = now;
    o->head.running = runner_running(o->h.runner);
    o->head.claim_ahead_ms = runner_claim_ahead_ms(o->h.runner);
    if (ops_leading_state(o->head.state))
        o->head.lease_deadline_ns = baton_election_deadline_ns(o->h.election);
    pthread_mutex_unlock(&o->mu);
    if (o->notify.enabled && !o->notify.ready && o->head.decided) {
        status_text(o, &o->head, o->status, sizeof o->status);
        notify_ready(&o->notify, o->status);
    }
    if (o->notify.watchdog_ns > 0 && now >= o->next_ping_ns) {
        notify_watchdog(&o->notify);
        o->next_ping_ns = now + o->notify.watchdog_ns / 2;
    }
    if (now >= o->next_tick_ns) {
        o->next_tick_ns = now + OPS_TICK_MS * MS;
        refresh(o, now);
    }
    arm(o);
}

void ops_on_message(struct ops *o, const char *msg, size_t len)
{
    if (len > 6 && strncmp(msg, "ended ", 6) == 0)
        mark_dirty(o, msg + 6, DIRTY_REMOTE);
}

/* ---- life ---- */

void ops_set_jobs(struct ops *o, const struct jobs *jobs, struct ops_defs *defs,
                  int64_t shutdown_grace_ms)
{
    int64_t kill_grace_ms = 0;
    for (size_t i = 0; i < jobs->n; i++)
        if (jobs->v[i].kill_grace_ms > kill_grace_ms)
            kill_grace_ms = jobs->v[i].kill_grace_ms;
    o->stop_budget_ms = shutdown_grace_ms + kill_grace_ms + OPS_STOP_MARGIN_MS;
    struct ops_defs *d = defs != NULL ? defs : ops_defs_new(jobs);
    struct lasts *l = d != NULL ? lasts_new(d) : NULL;
    unsigned char *dirty = jobs->n > 0 ? calloc(jobs->n, sizeof *dirty) : NULL;
    ops_defs_unref(d); /* l holds it */
    if (l == NULL || (jobs->n > 0 && dirty == NULL)) {
        ops_lasts_unref(l);
        free(dirty);
        return; /* out of memory: the view keeps the previous jobs */
    }
    struct lasts *old = o->lasts;
    for (size_t i = 0; old != NULL && i < l->defs->n; i++) { /* keep what was read */
        size_t k = def_index(old->defs, l->defs->v[i].name);
        if (k != (size_t)-1 && old->v[k] != NULL) {
            l->v[i] = old->v[k];
            atomic_fetch_add(&l->v[i]->refs, 1);
            dirty[i] = o->dirty != NULL ? o->dirty[k] : DIRTY_NO;
        }
    }
    pthread_mutex_lock(&o->mu);
    for (size_t i = 0; i < l->defs->n; i++)
        metrics_add_job(o->metrics, l->defs->v[i].name);
    for (size_t i = 0; i < jobs->n; i++) {
        metrics_job_limits(o->metrics, jobs->v[i].name, jobs->v[i].pool != NULL,
                           jobs->v[i].max_running > 0);
        metrics_job_fleet(o->metrics, jobs->v[i].name,
                          job_run_on(&jobs->v[i], NULL) != JOB_RUN_ON_LEADER);
    }
    o->lasts = l;
    pthread_mutex_unlock(&o->mu);
    ops_lasts_unref(old);
    free(o->dirty);
    o->dirty = dirty;
}

int ops_new(const struct ops_host *host, struct ops **out, char *msg, size_t msglen)
{
    struct ops *o = calloc(1, sizeof *o);
    struct http_listen l;
    struct ops_defs *none = NULL;
    *out = NULL;
    if (o == NULL)
        goto oom;
    o->h = *host;
    o->node = strdup(host->node);
    o->group = strdup(host->group);
    o->redis_url = strdup(baton_client_url(host->client));
    o->metrics = metrics_new();
    none = calloc(1, sizeof *none);
    if (o->node == NULL || o->group == NULL || o->redis_url == NULL || o->metrics == NULL ||
        none == NULL || pthread_mutex_init(&o->mu, NULL) != 0) {
        free(none);
        metrics_free(o->metrics);
        free(o->node);
        free(o->group);
        free(o->redis_url);
        free(o);
        goto oom;
    }
    atomic_init(&none->refs, 1);
    o->lasts = lasts_new(none);
    ops_defs_unref(none);
    atomic_init(&o->watched_ns, 0);
    o->head.state = ST_IDLE;
    o->head.last_turn_ns = loop_now();
    o->live_limit_ns = ((int64_t)OPS_LIVE_S * 1000 + 3 * host->redis_timeout_ms) * MS;
    o->start_time_s = (double)wall_ms() / 1000.0;
    if (o->lasts == NULL) {
        snprintf(msg, msglen, "out of memory");
        goto fail;
    }
    if (notify_init(&o->notify, msg, msglen) != 0)
        goto fail;
    if (strcmp(host->listen, "off") != 0) {
        if (host->control) {
            struct api_conf ac = {.tokens_file = host->tokens_file,
                                  .public_read = host->public_read,
                                  .history_len = host->history_len,
                                  .group = host->group,
                                  .node = host->node,
                                  .redis_url = host->redis_url,
                                  .client_opts = host->client_opts,
                                  .job_known = job_known,
                                  .ctx = o};
            if ((o->api = api_new(&ac, msg, msglen)) == NULL)
                goto fail;
        }
        struct http_control hc = {.fn = api_handle, .ctx = o->api};
        bool tls = host->tls_cert != NULL && strcmp(host->tls_cert, "none") != 0;
        if (tls && tls_files_load(host->tls_cert, host->tls_key, &o->tls, msg, msglen) != 0)
            goto fail;
        struct http_tls ht = {.cert = o->tls.cert, .key = o->tls.key};
        if (http_listen_parse(host->listen, &l, msg, msglen) != 0 ||
            http_start_control(&l, host->allowed_hosts, ops_routes, o, o->api != NULL ? &hc : NULL,
                               tls ? &ht : NULL, &o->http, msg, msglen) != 0)
            goto fail;
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "listen", http_address(o->http));
        cJSON_AddBoolToObject(f, "tls", tls);
        log_emit(host->log, LE_HTTP_LISTENING, f);
    }
    if (o->notify.enabled) {
        cJSON *f = log_fields();
        if (o->notify.watchdog_ns > 0)
            cJSON_AddNumberToObject(f, "watchdog_ms", (double)(o->notify.watchdog_ns / MS));
        else
            cJSON_AddNullToObject(f, "watchdog_ms");
        log_emit(host->log, LE_SYSTEMD_NOTIFY, f);
    }
    log_set_observer(host->log, observe, o);
    o->next_tick_ns = o->next_ping_ns = loop_now();
    arm(o);
    *out = o;
    return 0;
oom:
    snprintf(msg, msglen, "out of memory");
    return -1;
fail:
    ops_free(o);
    return -1;
}

void ops_free(struct ops *o)
{
    if (o == NULL)
        return;
    log_set_observer(o->h.log, NULL, NULL);
    api_stop(o->api);   /* every call it took is answered before the server stops */
    http_stop(o->http); /* no handler runs after this */
    api_free(o->api);
    tls_files_free(&o->tls);
    loop_disarm(o->h.loop, o->h.timer_id);
    ops_lasts_unref(o->lasts);
    ops_roster_unref(o->roster);
    metrics_free(o->metrics);
    pthread_mutex_destroy(&o->mu);
    free(o->dirty);
    free(o->node);
    free(o->group);
    free(o->redis_url);
    free(o);
}
