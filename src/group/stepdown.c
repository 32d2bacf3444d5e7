/* stepdown.c -- see stepdown.h. */
#include <errno.h>
#include <time.h>

#include "clock.h"
#include "stepdown.h"

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int stepdown_run(struct baton_client *c, const char *group, int64_t wait_ms,
                 enum stepdown_result *result, struct baton_leader_info *old,
                 struct baton_leader_info *now)
{
    int receivers = 0;
    int rc = baton_election_leader(c, group, old);
    if (rc != BATON_OK)
        return rc;
    *now = *old;
    if (!old->has_leader) {
        *result = STEPDOWN_NO_LEADER;
        return BATON_OK;
    }
    rc = baton_election_request_step_down(c, group, old->term, &receivers);
    if (rc != BATON_OK)
        return rc;
    if (receivers == 0) {
        *result = STEPDOWN_UNHEARD;
        return BATON_OK;
    }
    int64_t deadline = mono_ms() + wait_ms;
    int64_t gone_at = -1; /* when we saw no leader */
    for (;;) {
        int64_t left = deadline - mono_ms();
        sleep_ms(left < STEPDOWN_POLL_MS ? (left > 0 ? left : 0) : STEPDOWN_POLL_MS);
        rc = baton_election_leader(c, group, now);
        if (rc != BATON_OK)
            return rc;
        if (now->has_leader && now->term != old->term) {
            *result = STEPDOWN_HANDED_OVER;
            return BATON_OK;
        }
        int64_t t = mono_ms();
        if (!now->has_leader && gone_at < 0)
            gone_at = t;
        if (gone_at >= 0 && (t >= deadline || t - gone_at >= STEPDOWN_NEW_LEADER_MS)) {
            *result = STEPDOWN_NO_LEADER_YET;
            return BATON_OK;
        }
        if (t >= deadline) {
            *result = STEPDOWN_TIMED_OUT;
            return BATON_OK;
        }
    }
}
