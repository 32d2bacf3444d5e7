/* with_lock.c -- baton_with_lock(): run a function under a renewed lock. */
#include "lock_int.h"

int baton_with_lock(struct baton_client *c, const char *key, const struct baton_lock_opts *opts,
                    baton_locked_fn fn, void *arg)
{
    struct baton_lock_opts o = {0};
    struct baton_lock *lk = NULL;

    if (fn == NULL)
        return BATON_EINVAL;
    if (opts != NULL)
        o = *opts;
    o.auto_renew = true;
    int rc = baton_lock_acquire(c, key, &o, &lk);
    if (rc != BATON_OK)
        return rc;
    int result = fn(lk, arg);
    bool lost = baton_lock_lost(lk);
    rc = baton_lock_release(lk);
    baton_lock_free(lk);
    if (lost || rc == BATON_ELOST)
        return BATON_ELOST;
    return result;
}
