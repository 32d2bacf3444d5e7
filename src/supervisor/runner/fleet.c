/* fleet.c -- see fleet.h. */
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "members.h"
#include "rtime.h"

void fleet_free(struct fleet *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; f->info != NULL && i < f->n; i++)
        cJSON_Delete(f->info[i]);
    free(f->info);
    free(f->labels);
    free(f->v);
    members_free(f->m, f->n);
    free(f);
}

/* Reads the members' last heartbeats and what Redis counts of their
 * loads; the credits of the nodes of was (may be NULL) carried over.
 * Returns: owned (fleet_free), or NULL when Redis could not say. */
static struct fleet *fleet_read(const struct rctx *x, const struct fleet *was)
{
    struct fleet *f = calloc(1, sizeof *f);
    if (f == NULL || members_read(x->client, x->group, &f->m, &f->n) != BATON_OK) {
        free(f);
        return NULL;
    }
    f->read_at = loop_now();
    f->v = calloc(f->n + 1, sizeof *f->v);
    f->info = calloc(f->n + 1, sizeof *f->info);
    f->labels = calloc(f->n * ASSIGN_LABELS_MAX + 1, sizeof *f->labels);
    const char **names = calloc(f->n + 1, sizeof *names);
    int64_t *in_use = calloc(f->n + 1, sizeof *in_use);
    bool ok =
        f->v != NULL && f->info != NULL && f->labels != NULL && names != NULL && in_use != NULL;
    for (size_t i = 0; ok && i < f->n; i++) {
        struct assign_node *a = &f->v[i];
        cJSON *o = f->info[i] = cJSON_Parse(f->m[i].info_json);
        const cJSON *cap = cJSON_GetObjectItemCaseSensitive(o, "capacity");
        const cJSON *acc = cJSON_GetObjectItemCaseSensitive(o, "accepting");
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "labels"), *e;
        a->node = names[i] = f->m[i].node;
        a->labels = f->labels + i * ASSIGN_LABELS_MAX;
        cJSON_ArrayForEach(e, l)
        {
            if (cJSON_IsString(e) && a->nlabels < ASSIGN_LABELS_MAX)
                f->labels[i * ASSIGN_LABELS_MAX + a->nlabels++] = e->valuestring;
        }
        /* An older baton says no capacity: it takes nothing. */
        a->capacity = cJSON_IsNumber(cap) ? (int64_t)cap->valuedouble : 0;
        a->alive = members_alive(&f->m[i]) && !cJSON_IsFalse(acc);
        for (size_t k = 0; was != NULL && k < was->n; k++)
            if (strcmp(was->v[k].node, a->node) == 0)
                a->credit = was->v[k].credit;
    }
    if (ok && f->n > 0 && assign_loads(x->client, x->group, names, f->n, in_use) != BATON_OK)
        ok = false;
    for (size_t i = 0; ok && i < f->n; i++)
        f->v[i].in_use = in_use[i];
    free(names);
    free(in_use);
    if (!ok) {
        fleet_free(f);
        f = NULL;
    }
    return f;
}

struct fleet *fleet_get(const struct rctx *x, struct dispatch *d, bool room)
{
    int64_t now = loop_now(), age = d->view != NULL ? now - d->view->read_at : 0;
    if (d->view != NULL && age < DISPATCH_FLEET_MS * MS &&
        (!room || !d->reread || age < DISPATCH_ROOM_MS * MS))
        return d->view;
    d->reread = false;
    struct fleet *f = fleet_read(x, d->view);
    if (f != NULL) {
        fleet_free(d->view);
        d->view = f;
    }
    return f;
}

size_t fleet_job_labels(const struct job *job, const char *const **labels)
{
    char *const *l;
    size_t nl = 0;
    job_run_on(job, &l);
    while (l != NULL && l[nl] != NULL)
        nl++;
    *labels = (const char *const *)l;
    return nl;
}

long fleet_pick(const struct rctx *x, struct dispatch *d, const struct job *job, int64_t tick,
                const char *avoid, struct fleet **fp)
{
    const char *const *l;
    size_t nl = fleet_job_labels(job, &l);
    uint64_t seed = assign_seed(job->name, tick, NULL);
    long i = ASSIGN_NO_MEMBER;
    for (int pass = 0; pass < 2 && (pass == 0 || i == ASSIGN_NO_ROOM); pass++) {
        *fp = fleet_get(x, d, pass == 1);
        if (*fp == NULL)
            return ASSIGN_NO_ROOM; /* Redis could not say: it waits */
        i = assign_choose((*fp)->v, (*fp)->n, l, nl, avoid, seed);
    }
    return i;
}

void fleet_charge(struct fleet *f, const struct job *job, const char *avoid, long i)
{
    const char *const *l;
    size_t nl = fleet_job_labels(job, &l);
    assign_charge(f->v, f->n, l, nl, avoid, i);
}
