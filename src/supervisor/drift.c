/* drift.c -- see drift.h. The state is a small list of the nodes reported
 * as drifting, with the pair of hashes reported: its length is bounded by
 * the members of the group. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "drift.h"
#include "jobs.h"

struct drifting {
    char *node;
    char hash[JOBS_HASH_HEX];        /* the node's, as reported */
    char leader_hash[JOBS_HASH_HEX]; /* ours, as reported */
    bool seen;                       /* in this round */
    struct drifting *next;
};

struct drift {
    struct drifting *list;
};

struct drift *drift_new(void)
{
    return calloc(1, sizeof(struct drift));
}

void drift_reset(struct drift *d)
{
    if (d == NULL)
        return;
    while (d->list != NULL) {
        struct drifting *x = d->list;
        d->list = x->next;
        free(x->node);
        free(x);
    }
}

void drift_free(struct drift *d)
{
    drift_reset(d);
    free(d);
}

static struct drifting *find(struct drift *d, const char *node)
{
    for (struct drifting *x = d->list; x != NULL; x = x->next)
        if (strcmp(x->node, node) == 0)
            return x;
    return NULL;
}

void drift_check(struct drift *d, struct log *log, const char *self, const char *hash,
                 long njobs, const struct member *m, size_t n)
{
    for (struct drifting *x = d->list; x != NULL; x = x->next)
        x->seen = false;
    for (size_t i = 0; i < n; i++) {
        char theirs[JOBS_HASH_HEX];
        long count;
        if (strcmp(m[i].node, self) == 0 || !members_alive(&m[i]) ||
            !members_jobs(&m[i], theirs, sizeof theirs, &count))
            continue;
        struct drifting *x = find(d, m[i].node);
        if (strcmp(theirs, hash) == 0) {
            if (x != NULL) { /* back in line */
                cJSON *f = log_fields();
                cJSON_AddStringToObject(f, "follower", m[i].node);
                cJSON_AddStringToObject(f, "jobs_hash", theirs);
                log_emit(log, LE_CONFIG_DRIFT_RESOLVED, f);
                x->seen = false; /* dropped below */
            }
            continue;
        }
        if (x == NULL) {
            x = calloc(1, sizeof *x);
            char *node = x != NULL ? strdup(m[i].node) : NULL;
            if (node == NULL) {
                free(x);
                continue; /* out of memory: reported at the next check */
            }
            x->node = node;
            x->next = d->list;
            d->list = x;
        }
        x->seen = true;
        if (strcmp(x->hash, theirs) == 0 && strcmp(x->leader_hash, hash) == 0)
            continue; /* reported already */
        snprintf(x->hash, sizeof x->hash, "%s", theirs);
        snprintf(x->leader_hash, sizeof x->leader_hash, "%s", hash);
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "follower", m[i].node);
        cJSON_AddStringToObject(f, "jobs_hash", theirs);
        if (count >= 0)
            cJSON_AddNumberToObject(f, "jobs", (double)count);
        else
            cJSON_AddNullToObject(f, "jobs");
        cJSON_AddStringToObject(f, "leader_jobs_hash", hash);
        cJSON_AddNumberToObject(f, "leader_jobs", (double)njobs);
        log_emit(log, LE_CONFIG_DRIFT, f);
    }
    /* Nodes back in line, gone, stopped or silent: forgotten. */
    for (struct drifting **p = &d->list; *p != NULL;) {
        struct drifting *x = *p;
        if (x->seen) {
            p = &x->next;
            continue;
        }
        *p = x->next;
        free(x->node);
        free(x);
    }
}
