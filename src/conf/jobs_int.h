/* jobs_int.h -- what the two halves of reading jobs.yaml share (jobs.h says
 * what it is): jobs.c reads the file (the top level, pools:, defaults:,
 * the layers of each job, the checks across keys, the set) and jobkeys.c
 * holds the table of job keys with the hooks that read and check each
 * key's value. The hooks get the reading's state (struct jparse) through
 * ctx->user of the schema engine. Nothing but those two files includes
 * this one. */
#ifndef BATON_JOBS_INT_H
#define BATON_JOBS_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "jobs.h"
#include "schema.h"
#include "yamlx.h"

/* At least the number of rows of the key table (jobkeys.c asserts it):
 * the size of the schema_at arrays of jobs.c. */
#define JOB_KEYS_MAX 32

/* The state the hooks share: ctx->user of the schema engine. */
struct jparse {
    const struct yamlx_diag *d;
    struct jobs *set;
    const char *default_tz;
    const struct jobs_base *base; /* never NULL */
    struct schema_ctx ctx;
    /* The names read so far: an open-addressing table of indexes into
     * set->v (NAMES_FREE, jobs.c: empty), so that finding a duplicate name
     * is not O(jobs^2) at 10,000 jobs. */
    size_t *names;
    size_t names_mask;
    const struct yamlx_node *pools; /* pools:, a mapping in the order of set->pools */
};

/* Replaces the string field at *field with a copy of s. Returns 0, or -1
 * with msg set (out of memory); *field is unchanged then. */
int job_str_set(char **field, const char *s, char *msg, size_t msglen);

/* The zone name of set, loaded on first use and shared by its jobs: *out
 * is borrowed from set, valid until jobs_free(set). Returns 0, or -1 with
 * msg set (an unknown zone, out of memory). */
int jobs_zone_get(struct jobs *set, const char *name, struct cron_tz **out, char *msg,
                  size_t msglen);

#endif /* BATON_JOBS_INT_H */
