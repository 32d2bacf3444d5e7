/* jobhash.c -- what tells one job definition, and one set of them, from
 * another (see job_fingerprint() and jobs_hash() in jobs.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobcmd.h"
#include "jobs.h"
#include "schema.h"

/* Fingerprint: FNV-1a over the normalized definition, every field tagged
 * and length-prefixed so that no two definitions hash the same input. */

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME  UINT64_C(0x100000001b3)

static void fnv(uint64_t *h, const void *data, size_t n)
{
    const unsigned char *b = data;

    for (size_t i = 0; i < n; i++) {
        *h ^= b[i];
        *h *= FNV_PRIME;
    }
}

static void fnv_u64(uint64_t *h, uint64_t v)
{
    unsigned char b[8];

    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    fnv(h, b, sizeof b);
}

static void fnv_str(uint64_t *h, const char *s)
{
    if (s == NULL) {
        fnv_u64(h, UINT64_MAX);
        return;
    }
    fnv_u64(h, strlen(s));
    fnv(h, s, strlen(s));
}

static void fnv_strv(uint64_t *h, char *const *v)
{
    size_t n = job_strv_len((char **)v);

    fnv_u64(h, v == NULL ? UINT64_MAX : n);
    for (size_t a = 0; a < n; a++)
        fnv_str(h, v[a]);
}

/* The schedule with runs of blanks collapsed and the ends trimmed. */
static void fnv_schedule(uint64_t *h, const char *s)
{
    bool space = false, any = false;
    uint64_t n = 0;

    for (const char *c = s; *c != '\0'; c++) {
        if (*c == ' ' || *c == '\t') {
            space = any;
            continue;
        }
        if (space) {
            fnv(h, " ", 1);
            n++;
        }
        fnv(h, c, 1);
        n++;
        space = false;
        any = true;
    }
    fnv_u64(h, n);
}

uint64_t job_fingerprint(const struct job *j)
{
    uint64_t h = FNV_OFFSET;

    const struct schema *keys = jobs_schema();

    for (size_t i = 0; i < keys->n; i++) {
        const struct schema_field *k = &keys->fields[i];
        const void *field = (const char *)j + k->offset;

        fnv_str(&h, k->key);
        if (k->offset == offsetof(struct job, schedule)) {
            fnv_schedule(&h, j->schedule);
            continue;
        }
        if (k->offset == offsetof(struct job, on_failure) ||
            k->offset == offsetof(struct job, on_success)) {
            const struct job_cmd *c = field;

            fnv_strv(&h, c->argv);
            fnv_str(&h, c->shell);
            continue;
        }
        switch (k->type) {
        case SCHEMA_TEXT:
        case SCHEMA_STRING:
        case SCHEMA_PATH: fnv_str(&h, *(char *const *)field); break;
        case SCHEMA_NODE: /* command, env: string vectors */
            fnv_strv(&h, *(char *const *const *)field);
            break;
        case SCHEMA_DURATION: fnv_u64(&h, (uint64_t) * (const int64_t *)field); break;
        case SCHEMA_INT:
        case SCHEMA_ENUM: fnv_u64(&h, (uint64_t)(int64_t) * (const int *)field); break;
        case SCHEMA_BOOL: fnv_u64(&h, *(const bool *)field ? 1 : 0); break;
        }
    }
    fnv_u64(&h, (uint64_t)j->pool_limit); /* the pool's limit is the job's too */
    return h;
}

/* The hash of a set */

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

uint64_t jobs_hash(const struct jobs *j)
{
    uint64_t h = FNV_OFFSET, *fp;
    size_t n = j != NULL ? j->n : 0;

    fnv_u64(&h, n);
    if (n == 0)
        return h;
    fp = malloc(n * sizeof *fp);
    if (fp == NULL) { /* out of memory: file order, still a hash of the whole set */
        for (size_t i = 0; i < n; i++)
            fnv_u64(&h, j->v[i].fingerprint);
        return h;
    }
    for (size_t i = 0; i < n; i++)
        fp[i] = j->v[i].fingerprint;
    qsort(fp, n, sizeof *fp, u64_cmp);
    for (size_t i = 0; i < n; i++)
        fnv_u64(&h, fp[i]);
    free(fp);
    return h;
}

const char *jobs_hash_hex(const struct jobs *j, char *buf, size_t len)
{
    snprintf(buf, len, "%016" PRIx64, jobs_hash(j));
    return buf;
}
