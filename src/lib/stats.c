/* stats.c -- lock statistics of one client, by key class, and their
 * Prometheus text exposition.
 *
 * A key's class is its first colon-separated segment ("account:123" ->
 * "account"; a key without a colon is its own class). The first
 * BATON_STATS_MAX_CLASSES classes seen get their own series; later ones are
 * counted under "other", so the number of series stays bounded whatever
 * the keys.
 *
 * The hot path takes no lock: a class is looked up among the published
 * entries (an acquire-load of their count), and the counters are atomics.
 * Only the first sighting of a class takes the mutex, to append it. The
 * stats live in the client (no process-global state), so two clients of
 * one process keep separate books. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_int.h"

/* Upper bounds of the wait-time histogram (BATON_STATS_BUCKETS of them, as
 * listed in baton.h): in ns, and as Prometheus writes them ("le", seconds). */
static const struct {
    int64_t ns;
    const char *le;
} bucket[BATON_STATS_BUCKETS] = {
    {500000, "0.0005"},  {1000000, "0.001"},  {2500000, "0.0025"}, {5000000, "0.005"},
    {10000000, "0.01"},  {25000000, "0.025"}, {50000000, "0.05"},  {100000000, "0.1"},
    {250000000, "0.25"}, {500000000, "0.5"},  {1000000000, "1"},   {2500000000, "2.5"},
    {5000000000, "5"},   {10000000000, "10"},
};

#define OTHER BATON_STATS_MAX_CLASSES /* index of the overflow class */

struct stats_class {
    char name[BATON_STATS_CLASS_LEN]; /* written once, before publication */
    _Atomic uint64_t acquired, released, timeouts, lost, contention;
    _Atomic int64_t held;
    _Atomic uint64_t
        waits[BATON_STATS_BUCKETS + 1]; /* per bound, not cumulative; last: above all */
    _Atomic uint64_t wait_sum_ns;
};

struct baton__stats {
    pthread_mutex_t mu; /* serializes appends */
    _Atomic int n;      /* published classes, 0..BATON_STATS_MAX_CLASSES */
    struct stats_class cls[BATON_STATS_MAX_CLASSES + 1];
};

struct baton__stats *baton__stats_new(void)
{
    struct baton__stats *st = calloc(1, sizeof *st);
    if (st == NULL)
        return NULL;
    if (pthread_mutex_init(&st->mu, NULL) != 0) {
        free(st);
        return NULL;
    }
    snprintf(st->cls[OTHER].name, sizeof st->cls[OTHER].name, "other");
    return st;
}

void baton__stats_free(struct baton__stats *st)
{
    if (st == NULL)
        return;
    pthread_mutex_destroy(&st->mu);
    free(st);
}

/* Writes key's class into out (BATON_STATS_CLASS_LEN bytes): the part
 * before the first ':', truncated, with bytes outside printable ASCII
 * replaced by '_' so that every class is a valid label value. */
static void class_of(const char *key, char *out)
{
    size_t i = 0;
    for (; key[i] != '\0' && key[i] != ':' && i < BATON_STATS_CLASS_LEN - 1; i++) {
        unsigned char ch = (unsigned char)key[i];
        out[i] = (ch < 0x20 || ch > 0x7e) ? '_' : (char)ch;
    }
    out[i] = '\0';
}

static int find(const struct baton__stats *st, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(st->cls[i].name, name) == 0)
            return i;
    return -1;
}

/* Returns the index of key's class, appending it when new. */
static int lookup(struct baton__stats *st, const char *key)
{
    char name[BATON_STATS_CLASS_LEN];
    class_of(key, name);
    if (strcmp(name, "other") == 0)
        return OTHER;
    int i = find(st, atomic_load_explicit(&st->n, memory_order_acquire), name);
    if (i >= 0)
        return i;
    pthread_mutex_lock(&st->mu);
    int n = atomic_load_explicit(&st->n, memory_order_relaxed);
    if ((i = find(st, n, name)) < 0) {
        if (n < BATON_STATS_MAX_CLASSES) {
            memcpy(st->cls[n].name, name, sizeof name);
            atomic_store_explicit(&st->n, n + 1, memory_order_release);
            i = n;
        } else {
            i = OTHER;
        }
    }
    pthread_mutex_unlock(&st->mu);
    return i;
}

void baton__stats_granted(struct baton_lock *lk, const char *key, int64_t wait_ns, bool contended)
{
    struct baton__stats *st = lk->c->stats;
    if (st == NULL)
        return;
    int i = lookup(st, key);
    struct stats_class *k = &st->cls[i];
    int b = 0;
    if (wait_ns < 0)
        wait_ns = 0;
    while (b < BATON_STATS_BUCKETS && wait_ns > bucket[b].ns)
        b++;
    atomic_fetch_add(&k->acquired, 1);
    atomic_fetch_add(&k->waits[b], 1);
    atomic_fetch_add(&k->wait_sum_ns, (uint64_t)wait_ns);
    if (contended)
        atomic_fetch_add(&k->contention, 1);
    lk->stats_class = i;
    atomic_fetch_add(&k->held, 1);
    atomic_store(&lk->stats_held, true);
}

void baton__stats_refused(struct baton_client *c, const char *key, bool timed_out)
{
    if (c->stats == NULL)
        return;
    struct stats_class *k = &c->stats->cls[lookup(c->stats, key)];
    atomic_fetch_add(&k->contention, 1);
    if (timed_out)
        atomic_fetch_add(&k->timeouts, 1);
}

/* Unmarks lk held. Returns its class, or NULL when it was not marked. */
static struct stats_class *unhold(struct baton_lock *lk)
{
    if (lk->c == NULL || lk->c->stats == NULL || !atomic_exchange(&lk->stats_held, false))
        return NULL;
    struct stats_class *k = &lk->c->stats->cls[lk->stats_class];
    atomic_fetch_sub(&k->held, 1);
    return k;
}

void baton__stats_released(struct baton_lock *lk)
{
    struct stats_class *k = unhold(lk);
    if (k != NULL)
        atomic_fetch_add(&k->released, 1);
}

void baton__stats_lost(struct baton_lock *lk)
{
    struct stats_class *k = unhold(lk);
    if (k != NULL)
        atomic_fetch_add(&k->lost, 1);
}

void baton__stats_dropped(struct baton_lock *lk)
{
    (void)unhold(lk);
}

/* ---- reading ---- */

static void snapshot(const struct stats_class *k, struct baton_stats *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->key_class, k->name, sizeof out->key_class);
    out->acquired = atomic_load(&k->acquired);
    out->released = atomic_load(&k->released);
    out->acquire_timeouts = atomic_load(&k->timeouts);
    out->lost = atomic_load(&k->lost);
    out->contention = atomic_load(&k->contention);
    out->held = atomic_load(&k->held);
    uint64_t cum = 0;
    for (int b = 0; b <= BATON_STATS_BUCKETS; b++) {
        cum += atomic_load(&k->waits[b]);
        if (b < BATON_STATS_BUCKETS)
            out->wait_le[b] = cum;
    }
    out->wait_count = cum; /* the +Inf bucket: consistent with the others */
    out->wait_sum_seconds = (double)atomic_load(&k->wait_sum_ns) / 1e9;
}

static bool used(const struct stats_class *k)
{
    return atomic_load(&k->acquired) != 0 || atomic_load(&k->contention) != 0 ||
           atomic_load(&k->held) != 0;
}

int baton_stats_classes(struct baton_client *c, struct baton_stats *out, int cap)
{
    if (c == NULL || c->stats == NULL || cap < 0 || (out == NULL && cap > 0))
        return BATON_EINVAL;
    struct baton__stats *st = c->stats;
    int n = atomic_load_explicit(&st->n, memory_order_acquire), k = 0;
    for (int i = 0; i < n && k < cap; i++)
        snapshot(&st->cls[i], &out[k++]);
    if (k < cap && used(&st->cls[OTHER]))
        snapshot(&st->cls[OTHER], &out[k++]);
    return k;
}

int baton_stats_get(struct baton_client *c, const char *key_class, struct baton_stats *out)
{
    if (c == NULL || c->stats == NULL || key_class == NULL || out == NULL)
        return BATON_EINVAL;
    struct baton__stats *st = c->stats;
    int i = strcmp(key_class, "other") == 0
                ? OTHER
                : find(st, atomic_load_explicit(&st->n, memory_order_acquire), key_class);
    if (i < 0) {
        memset(out, 0, sizeof *out);
        snprintf(out->key_class, sizeof out->key_class, "%s", key_class);
        return BATON_OK; /* never seen: all zero */
    }
    snapshot(&st->cls[i], out);
    return BATON_OK;
}

/* ---- Prometheus text format 0.0.4 ---- */

/* Writes name as a label value: \, " and newline escaped (class_of() has
 * already replaced other control bytes). */
static void put_label(FILE *f, const char *name)
{
    for (const char *p = name; *p != '\0'; p++) {
        if (*p == '\\' || *p == '"')
            fputc('\\', f);
        fputc(*p, f);
    }
}

struct family {
    const char *name, *type, *help;
    uint64_t (*get)(const struct baton_stats *s);
};

static uint64_t get_acquired(const struct baton_stats *s)
{
    return s->acquired;
}
static uint64_t get_released(const struct baton_stats *s)
{
    return s->released;
}
static uint64_t get_timeouts(const struct baton_stats *s)
{
    return s->acquire_timeouts;
}
static uint64_t get_lost(const struct baton_stats *s)
{
    return s->lost;
}
static uint64_t get_contention(const struct baton_stats *s)
{
    return s->contention;
}

static const struct family counters[] = {
    {"baton_lock_acquired_total", "counter", "Locks granted (semaphore permits included).",
     get_acquired},
    {"baton_lock_released_total", "counter", "Locks released by their owner.", get_released},
    {"baton_lock_acquire_timeouts_total", "counter",
     "Acquires that gave up after their maximum wait.", get_timeouts},
    {"baton_lock_lost_total", "counter",
     "Locks lost while held: taken over, or not renewed before their validity deadline.", get_lost},
    {"baton_lock_contention_total", "counter",
     "Acquires that found the lock held (and waited, or were refused).", get_contention},
};

int baton_stats_write_prometheus(struct baton_client *c, FILE *f)
{
    struct baton_stats s[BATON_STATS_MAX_CLASSES + 1];
    if (c == NULL || f == NULL)
        return BATON_EINVAL;
    int n = baton_stats_classes(c, s, BATON_STATS_MAX_CLASSES + 1);
    if (n < 0)
        return n;
    for (size_t j = 0; j < sizeof counters / sizeof counters[0]; j++) {
        const struct family *fam = &counters[j];
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name, fam->type);
        for (int i = 0; i < n; i++) {
            fprintf(f, "%s{key_class=\"", fam->name);
            put_label(f, s[i].key_class);
            fprintf(f, "\"} %llu\n", (unsigned long long)fam->get(&s[i]));
        }
    }
    fputs("# HELP baton_lock_held Locks held now by this process.\n"
          "# TYPE baton_lock_held gauge\n",
          f);
    for (int i = 0; i < n; i++) {
        fputs("baton_lock_held{key_class=\"", f);
        put_label(f, s[i].key_class);
        fprintf(f, "\"} %lld\n", (long long)s[i].held);
    }
    fputs("# HELP baton_lock_acquire_wait_seconds Time from the acquire call to the grant.\n"
          "# TYPE baton_lock_acquire_wait_seconds histogram\n",
          f);
    for (int i = 0; i < n; i++) {
        for (int b = 0; b <= BATON_STATS_BUCKETS; b++) {
            fputs("baton_lock_acquire_wait_seconds_bucket{key_class=\"", f);
            put_label(f, s[i].key_class);
            fprintf(
                f, "\",le=\"%s\"} %llu\n", b < BATON_STATS_BUCKETS ? bucket[b].le : "+Inf",
                (unsigned long long)(b < BATON_STATS_BUCKETS ? s[i].wait_le[b] : s[i].wait_count));
        }
        fputs("baton_lock_acquire_wait_seconds_sum{key_class=\"", f);
        put_label(f, s[i].key_class);
        fprintf(f, "\"} %.9f\n", s[i].wait_sum_seconds);
        fputs("baton_lock_acquire_wait_seconds_count{key_class=\"", f);
        put_label(f, s[i].key_class);
        fprintf(f, "\"} %llu\n", (unsigned long long)s[i].wait_count);
    }
    if (fflush(f) != 0 || ferror(f))
        return BATON_EIO;
    return BATON_OK;
}
