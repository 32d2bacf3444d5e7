/* machine_fakes.c -- see machine_fakes.h. */
#include <string.h>

#include "machine_fakes.h"

bool machine_is_exit_action(enum machine_action a)
{
    for (int p = 1; p < P_COUNT; p++)
        if (machine_parent_exit((enum machine_parent)p) == a)
            return true;
    return false;
}

static enum machine_event record(struct machine_probe *p, enum machine_action a)
{
    if (p->nall < PROBE_MAX)
        p->all[p->nall++] = a;
    if (machine_is_exit_action(a)) {
        if (p->nexits < PROBE_MAX)
            p->exits[p->nexits++] = a;
    } else if (p->nran < PROBE_MAX) {
        p->ran[p->nran++] = a;
    }
    return p->next[a];
}

#define FAKE(id, name)                                                                             \
    static enum machine_event fake_##name(void *ctx)                                               \
    {                                                                                              \
        return record(ctx, ACT_##id);                                                              \
    }
MACHINE_ACTIONS(FAKE)
#undef FAKE

const machine_action_fn machine_fakes[ACT_COUNT] = {
#define FAKE_ROW(id, name) [ACT_##id] = fake_##name,
    MACHINE_ACTIONS(FAKE_ROW)
#undef FAKE_ROW
};

#define FAKE_GUARD(id, name)                                                                       \
    static bool guard_##name(const void *ctx)                                                      \
    {                                                                                              \
        const struct machine_probe *p = ctx;                                                       \
        return p->guard[G_##id];                                                                   \
    }
MACHINE_GUARDS(FAKE_GUARD)
#undef FAKE_GUARD

const machine_guard_fn machine_fake_guards[G_COUNT] = {
#define FAKE_GUARD_ROW(id, name) [G_##id] = guard_##name,
    MACHINE_GUARDS(FAKE_GUARD_ROW)
#undef FAKE_GUARD_ROW
};

void machine_probe_reset(struct machine_probe *p)
{
    memset(p, 0, sizeof *p);
    for (int a = 0; a < ACT_COUNT; a++)
        p->next[a] = EV_NONE;
}

void machine_probe_observe(void *ctx, enum machine_state from, enum machine_state to,
                           enum machine_event trigger, enum machine_guard guard, bool held,
                           int64_t in_state_ms, bool quiet)
{
    struct machine_probe *p = ctx;
    (void)trigger;
    (void)in_state_ms;
    p->transitions++;
    p->from = from;
    p->to = to;
    p->said = guard;
    p->held = held;
    p->quiet = quiet;
}
