/* steps.c -- see steps.h. */
#include "steps.h"

struct claim_next claim_step_of(enum claim_result res, bool manual)
{
    switch (res) {
#define STEP_CASE_(r, tick, req, done, why_tick, why_req, move)                                    \
    case r:                                                                                        \
        return manual ? (struct claim_next){req, done, why_req, TICK_EV_##move}                    \
                      : (struct claim_next){tick, done, why_tick, TICK_EV_##move};
        CLAIM_STEPS(STEP_CASE_)
#undef STEP_CASE_
    }
    return (struct claim_next){STEP_RETRY, false, NULL, TICK_EV_NO_ANSWER};
}

const char *claim_step_name(enum claim_step s)
{
    static const char *const names[] = {"start", "not_started", "skipped", "leave",
                                        "drop",  "wait",        "retry",   "full"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}
