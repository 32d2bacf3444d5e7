/* multi.c -- several locks, all or nothing, in one deterministic order.
 *
 * Keys are sorted and deduplicated, so that every caller takes them in the
 * same order: two callers locking {A,B} and {B,A} cannot deadlock. When all
 * the Redis keys share one cluster hash slot, one script (scripts.c,
 * BATON__S_MULTI_ACQUIRE) takes every lock at once if all are free. When
 * they do not, or when a key is held and the caller may wait, the locks are
 * acquired one by one in sorted order with baton_lock_acquire() (its FIFO
 * queue and wake-ups), inside one overall deadline, and released in reverse
 * order on failure. Each key stays an ordinary lock. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_int.h"

struct baton_multi {
    struct baton_client *c;
    size_t n;
    char *keys[BATON_MULTI_MAX_KEYS];            /* sorted, distinct */
    struct baton_lock *lk[BATON_MULTI_MAX_KEYS]; /* lk[i] holds keys[i] */
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void baton_multi_free(struct baton_multi *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->n; i++) {
        baton_lock_free(m->lk[i]);
        free(m->keys[i]);
    }
    free(m);
}

/* Makes m with the sorted, distinct keys. Returns 0 or ENOMEM/EINVAL. */
static int multi_new(struct baton_client *c, const char *const *keys, size_t n,
                     struct baton_multi **out)
{
    const char *sorted[BATON_MULTI_MAX_KEYS];
    for (size_t i = 0; i < n; i++) {
        if (keys[i] == NULL || keys[i][0] == '\0' ||
            strnlen(keys[i], BATON__KEY_MAX + 1) > BATON__KEY_MAX)
            return BATON_EINVAL;
        sorted[i] = keys[i];
    }
    qsort(sorted, n, sizeof sorted[0], cmp_str);
    struct baton_multi *m = calloc(1, sizeof *m);
    if (m == NULL)
        return BATON_ENOMEM;
    m->c = c;
    for (size_t i = 0; i < n; i++) {
        if (m->n > 0 && strcmp(m->keys[m->n - 1], sorted[i]) == 0)
            continue;
        if ((m->keys[m->n] = strdup(sorted[i])) == NULL) {
            baton_multi_free(m);
            return BATON_ENOMEM;
        }
        m->n++;
    }
    *out = m;
    return BATON_OK;
}

/* Frees and forgets the lock objects (not released). */
static void drop_locks(struct baton_multi *m)
{
    for (size_t i = 0; i < m->n; i++) {
        baton_lock_free(m->lk[i]);
        m->lk[i] = NULL;
    }
}

/* True when every lock's Redis key (prefix{key}) lies in one cluster slot. */
static bool one_slot(const struct baton_multi *m)
{
    char rkey[BATON__KEY_MAX + 160]; /* prefix <= 128 bytes, key <= BATON__KEY_MAX */
    unsigned first = 0;
    for (size_t i = 0; i < m->n; i++) {
        int n = snprintf(rkey, sizeof rkey, "%s{%s}", m->c->prefix, m->keys[i]);
        unsigned s = baton__key_slot(rkey, (size_t)n);
        if (i == 0)
            first = s;
        else if (s != first)
            return false;
    }
    return true;
}

/* Takes every lock with one script. Returns 0 (fences and deadlines set);
 * BATON_ETAKEN with *held = index of a held key; or an error with detail
 * in err. */
static int take_all(struct baton_multi *m, const struct baton_lock_opts *o, size_t *held, char *err,
                    size_t errlen)
{
    struct baton_client *c = m->c;
    const char *keys[2 * BATON_MULTI_MAX_KEYS], *args[1 + BATON_MULTI_MAX_KEYS];
    char ttl[24];
    int rc;

    snprintf(ttl, sizeof ttl, "%lld", (long long)o->ttl_ms);
    args[0] = ttl;
    for (size_t i = 0; i < m->n; i++) {
        keys[i] = m->lk[i]->rkeys[0];
        keys[m->n + i] = m->lk[i]->rkeys[1];
        args[1 + i] = m->lk[i]->token;
    }
    struct baton__call k = {.id = BATON__S_MULTI_ACQUIRE,
                            .nkeys = (int)(2 * m->n),
                            .keys = keys,
                            .nargs = (int)(1 + m->n),
                            .args = args,
                            .deadline_ns = baton__client_grant_deadline(c, o->ttl_ms),
                            .durable = true,
                            .err = err,
                            .errlen = errlen};
    rc = baton__script_call(c, &k);
    redisReply *r = k.reply;
    if (rc == BATON_ENOTDURABLE) {
        if (r->type == REDIS_REPLY_ARRAY) /* taken on the master only: give them back */
            for (size_t i = 0; i < m->n; i++)
                (void)baton_lock_release(m->lk[i]);
        freeReplyObject(r);
        return rc;
    }
    if (rc != BATON_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER && r->integer >= 1 && (size_t)r->integer <= m->n) {
        *held = (size_t)r->integer - 1;
        rc = BATON_ETAKEN;
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == m->n) {
        for (size_t i = 0; i < m->n; i++) {
            const redisReply *e = r->element[i];
            if (e->type != REDIS_REPLY_INTEGER || e->integer <= 0)
                rc = BATON_EPROTO;
        }
        for (size_t i = 0; rc == BATON_OK && i < m->n; i++) {
            atomic_store(&m->lk[i]->fence, (uint64_t)r->element[i]->integer);
            baton__lock_granted_by(m->lk[i], k.runid);
            baton__lock_confirm(m->lk[i], k.sent_ns, o->ttl_ms);
        }
    } else {
        rc = BATON_EPROTO;
    }
    if (rc == BATON_EPROTO)
        baton__set_error(err, errlen, "%s: unexpected reply to the multi-lock script",
                         c->url.redacted);
    freeReplyObject(r);
    return rc;
}

/* The fast path: when the keys share a slot, one script for all. Returns
 * 0 (every lock held), BATON_ETAKEN (none taken; *held says which key is
 * held, SIZE_MAX when the keys span slots and no script ran), or an error.
 * Leaves no lock objects behind unless 0. */
static int try_one_script(struct baton_multi *m, const struct baton_lock_opts *o, size_t *held,
                          char *err, size_t errlen)
{
    struct baton_client *c = m->c;
    int rc = BATON_OK;
    *held = SIZE_MAX;
    if (!one_slot(m))
        return BATON_ETAKEN;
    for (size_t i = 0; i < m->n && rc == BATON_OK; i++) {
        char *base = NULL;
        if (asprintf(&base, "%s{%s}", c->prefix, m->keys[i]) < 0)
            rc = BATON_ENOMEM;
        else
            rc = baton__lock_new(c, base, m->keys[i], NULL, o, &m->lk[i]);
        free(base);
    }
    if (rc == BATON_OK)
        rc = take_all(m, o, held, err, errlen);
    if (rc != BATON_OK)
        drop_locks(m);
    return rc;
}

int baton_multi_release(struct baton_multi *m)
{
    int first = BATON_OK;
    bool lost = false;
    if (m == NULL)
        return BATON_EINVAL;
    for (size_t i = m->n; i-- > 0;) {
        if (m->lk[i] == NULL)
            continue;
        int rc = baton_lock_release(m->lk[i]);
        lost |= rc == BATON_ELOST;
        if (first == BATON_OK)
            first = rc;
    }
    return lost ? BATON_ELOST : first;
}

/* Releases and frees whatever m holds after a failed acquire; returns rc. */
static int fail(struct baton_multi *m, int rc, struct baton_multi **out)
{
    (void)baton_multi_release(m);
    baton_multi_free(m);
    *out = NULL;
    return rc;
}

int baton_multi_acquire(struct baton_client *c, const char *const *keys, size_t n,
                        const struct baton_lock_opts *opts, struct baton_multi **out)
{
    struct baton_lock_opts o;
    struct baton_multi *m = NULL;
    char err[BATON__ERRLEN] = "";
    size_t held = 0;
    int rc;

    if (out == NULL)
        return BATON_EINVAL;
    *out = NULL;
    if (c == NULL || keys == NULL || n < 1 || n > BATON_MULTI_MAX_KEYS ||
        baton__lock_opts(opts, &o) != BATON_OK)
        return BATON_EINVAL;
    if ((rc = multi_new(c, keys, n, &m)) != BATON_OK)
        return rc;
    int64_t start = baton__now_ns();
    int64_t deadline = o.max_wait_ms < 0 ? INT64_MAX : start + o.max_wait_ms * 1000000;

    rc = try_one_script(m, &o, &held, err, sizeof err);
    if (rc == BATON_OK) {
        for (size_t i = 0; i < m->n; i++) {
            baton__stats_granted(m->lk[i], m->keys[i], baton__now_ns() - start, false);
            if (o.auto_renew && (rc = baton__renew_add(m->lk[i], o.renew_ms)) != BATON_OK)
                return fail(m, rc, out);
        }
        *out = m;
        return BATON_OK;
    }
    if (rc != BATON_ETAKEN) {
        baton__client_error(c, err);
        return fail(m, rc, out);
    }
    if (o.max_wait_ms == BATON_NO_WAIT && held != SIZE_MAX) {
        baton__stats_refused(c, m->keys[held], false);
        return fail(m, BATON_ETAKEN, out);
    }

    /* One by one, in sorted order, within the overall deadline. */
    for (size_t i = 0; i < m->n; i++) {
        struct baton_lock_opts oi = o;
        if (o.max_wait_ms == BATON_NO_WAIT) {
            rc = baton_lock_try(c, m->keys[i], &oi, &m->lk[i]);
        } else {
            if (o.max_wait_ms != BATON_WAIT_FOREVER) {
                int64_t left = (deadline - baton__now_ns()) / 1000000;
                oi.max_wait_ms = left > 1 ? left : 1;
            }
            rc = baton_lock_acquire(c, m->keys[i], &oi, &m->lk[i]);
        }
        if (rc != BATON_OK)
            return fail(m, rc, out);
    }
    *out = m;
    return BATON_OK;
}

int baton_multi_extend(struct baton_multi *m, int64_t ttl_ms)
{
    if (m == NULL)
        return BATON_EINVAL;
    for (size_t i = 0; i < m->n; i++) {
        int rc = baton_lock_extend(m->lk[i], ttl_ms);
        if (rc != BATON_OK)
            return rc;
    }
    return BATON_OK;
}

bool baton_multi_lost(const struct baton_multi *m)
{
    if (m == NULL)
        return false;
    for (size_t i = 0; i < m->n; i++)
        if (baton_lock_lost(m->lk[i]))
            return true;
    return false;
}

int64_t baton_multi_deadline_ns(const struct baton_multi *m)
{
    int64_t dl = INT64_MAX;
    if (m == NULL || m->n == 0)
        return 0;
    for (size_t i = 0; i < m->n; i++) {
        int64_t d = baton_lock_deadline_ns(m->lk[i]);
        if (d < dl)
            dl = d;
    }
    return dl;
}

size_t baton_multi_count(const struct baton_multi *m)
{
    return m != NULL ? m->n : 0;
}

struct baton_lock *baton_multi_lock(const struct baton_multi *m, size_t i)
{
    return (m != NULL && i < m->n) ? m->lk[i] : NULL;
}

int baton_with_locks(struct baton_client *c, const char *const *keys, size_t n,
                     const struct baton_lock_opts *opts, baton_multi_fn fn, void *arg)
{
    struct baton_lock_opts o = {0};
    struct baton_multi *m = NULL;

    if (fn == NULL)
        return BATON_EINVAL;
    if (opts != NULL)
        o = *opts;
    o.auto_renew = true;
    int rc = baton_multi_acquire(c, keys, n, &o, &m);
    if (rc != BATON_OK)
        return rc;
    int result = fn(m, arg);
    bool lost = baton_multi_lost(m);
    rc = baton_multi_release(m);
    baton_multi_free(m);
    if (lost || rc == BATON_ELOST)
        return BATON_ELOST;
    return result;
}
