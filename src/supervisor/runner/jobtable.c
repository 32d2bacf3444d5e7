/* jobtable.c -- see jobtable.h. */
#include <stdlib.h>
#include <string.h>

#include "jobtable.h"
#include "loop.h"

static unsigned hash_name(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % JOBTABLE_HASH_SIZE;
}

struct jobstate *jobtable_find(const struct jobtable *t, const char *name)
{
    for (struct jobstate *js = t->hash[hash_name(name)]; js != NULL; js = js->hash_next)
        if (strcmp(js->job->name, name) == 0)
            return js;
    return NULL;
}

static void heap_swap(struct jobtable *t, size_t a, size_t b)
{
    struct jobstate *x = t->heap[a];
    t->heap[a] = t->heap[b];
    t->heap[b] = x;
    t->heap[a]->heap_pos = a;
    t->heap[b]->heap_pos = b;
}

static void heap_sift(struct jobtable *t, size_t i)
{
    while (i > 0 && t->heap[(i - 1) / 2]->key > t->heap[i]->key) {
        heap_swap(t, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    for (;;) {
        size_t l = 2 * i + 1, s = i;
        if (l < t->nheap && t->heap[l]->key < t->heap[s]->key)
            s = l;
        if (l + 1 < t->nheap && t->heap[l + 1]->key < t->heap[s]->key)
            s = l + 1;
        if (s == i)
            return;
        heap_swap(t, i, s);
        i = s;
    }
}

static void heap_remove(struct jobtable *t, struct jobstate *js)
{
    size_t i = js->heap_pos;
    if (i == HEAP_NONE)
        return;
    js->heap_pos = HEAP_NONE;
    if (i != --t->nheap) {
        t->heap[i] = t->heap[t->nheap];
        t->heap[i]->heap_pos = i;
        heap_sift(t, i);
    }
}

void jobtable_set_key(struct jobtable *t, struct jobstate *js, int64_t key)
{
    js->key = key;
    if (key == 0) {
        heap_remove(t, js);
        return;
    }
    if (js->heap_pos == HEAP_NONE) {
        if (t->nheap == t->heapcap) {
            size_t cap = t->heapcap ? t->heapcap * 2 : 64;
            struct jobstate **h = realloc(t->heap, cap * sizeof *h);
            if (h == NULL)
                return; /* out of memory: the job waits for the next event */
            t->heap = h;
            t->heapcap = cap;
        }
        js->heap_pos = t->nheap;
        t->heap[t->nheap++] = js;
    }
    heap_sift(t, js->heap_pos);
}

void jobtable_wake(struct jobtable *t, struct jobstate *js, bool leading)
{
    js->hold_until = 0;
    if (leading)
        jobtable_set_key(t, js, loop_now());
}

struct jobstate *jobtable_top(const struct jobtable *t)
{
    return t->nheap > 0 ? t->heap[0] : NULL;
}

void jobtable_hold_set(struct jobset *s)
{
    s->refs++;
}

void jobtable_unref_set(struct jobtable *t, struct jobset *s)
{
    if (s == NULL || --s->refs > 0)
        return;
    for (struct jobset **p = &t->sets; *p != NULL; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    jobs_free(s->jobs);
    free(s);
}

/* Frees js and what its parts own. */
static void free_state(struct jobtable *t, struct jobstate *js)
{
    jobtable_set_key(t, js, 0);
    ticks_free(&js->ticks);
    for (struct retry *r = js->runs.retries, *next; r != NULL; r = next) {
        next = r->next;
        free(r);
    }
    jobtable_unref_set(t, js->set);
    free(js);
}

static void index_states(struct jobtable *t)
{
    memset(t->hash, 0, sizeof t->hash);
    for (struct jobstate *js = t->states; js != NULL; js = js->next) {
        unsigned h = hash_name(js->job->name);
        js->hash_next = t->hash[h];
        t->hash[h] = js;
    }
}

int jobtable_apply(struct jobtable *t, struct jobs *jobs,
                   void (*changed)(void *ctx, struct jobstate *js),
                   void (*gone)(void *ctx, struct jobstate *js), void *ctx)
{
    struct jobset *set = calloc(1, sizeof *set);
    if (set == NULL) {
        jobs_free(jobs);
        return BATON_ENOMEM;
    }
    set->jobs = jobs;
    set->refs = 1; /* the table's */
    set->next = t->sets;
    t->sets = set;

    /* The old records stay indexed by name while the new list is made, so
     * that matching is not O(jobs^2); old_next keeps the old list. */
    struct jobstate *old = t->states, *fresh = NULL, **tail = &fresh;
    for (struct jobstate *js = old; js != NULL; js = js->next)
        js->old_next = js->next;
    for (size_t i = 0; i < jobs->n; i++) {
        const struct job *job = &jobs->v[i];
        struct jobstate *js = jobtable_find(t, job->name);
        if (js != NULL && js->kept) {
            continue; /* a name twice (jobs.yaml refuses it): the first keeps the record */
        } else if (js != NULL) { /* kept: left out of the old list below, in one pass */
            js->kept = true;
        } else if ((js = calloc(1, sizeof *js)) == NULL) {
            continue; /* out of memory: the job is left out (the set still holds it) */
        } else {
            js->heap_pos = HEAP_NONE;
            js->kept = true;
        }
        bool same = js->job != NULL && js->job->fingerprint == job->fingerprint;
        jobtable_unref_set(t, js->set);
        js->job = job;
        js->set = set;
        set->refs++;
        js->rekey = !same;
        if (!same)
            changed(ctx, js);
        js->next = NULL;
        *tail = js;
        tail = &js->next;
    }
    /* Jobs gone from the file. */
    while (old != NULL) {
        struct jobstate *js = old;
        old = js->old_next;
        if (js->kept)
            continue;
        gone(ctx, js);
        free_state(t, js);
    }
    t->states = fresh;
    for (struct jobstate *js = t->states; js != NULL; js = js->next)
        js->kept = false;
    index_states(t);
    struct jobset *previous = t->current;
    t->current = set;
    jobtable_unref_set(t, previous);
    return BATON_OK;
}

void jobtable_free(struct jobtable *t)
{
    while (t->states != NULL) {
        struct jobstate *js = t->states;
        t->states = js->next;
        free_state(t, js);
    }
    while (t->sets != NULL) {
        struct jobset *s = t->sets;
        t->sets = s->next;
        jobs_free(s->jobs);
        free(s);
    }
    free(t->heap);
    t->heap = NULL;
    t->nheap = t->heapcap = 0;
}
