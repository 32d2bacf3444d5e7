/* machine_fakes.h -- fake actions, guards and observer for the machine's
 * unit suites (check_machine, check_daemon): no Redis, no process, no
 * clock. The probe is the machine's ctx: every action records itself and
 * returns what the test put in next[], every guard says what it put in
 * guard[], the observer records the last change of state. */
#ifndef BATON_MACHINE_FAKES_H
#define BATON_MACHINE_FAKES_H

#include <stdbool.h>
#include <stdint.h>

#include "machine.h"

#define PROBE_MAX 16

struct machine_probe {
    enum machine_action all[PROBE_MAX]; /* every action run, in order */
    int nall;
    enum machine_action ran[PROBE_MAX]; /* the moves' own actions */
    int nran;
    enum machine_action exits[PROBE_MAX]; /* the parents' exit actions */
    int nexits;
    enum machine_event next[ACT_COUNT]; /* what each action returns */
    bool guard[G_COUNT];                /* what each guard says */
    /* machine_probe_observe's: changes seen, and the last one */
    int transitions;
    enum machine_state from, to;
    enum machine_guard said; /* the guard that decided it (G_ALWAYS: none) */
    bool held, quiet;
};

extern const machine_action_fn machine_fakes[ACT_COUNT];
extern const machine_guard_fn machine_fake_guards[G_COUNT];

/* Empties p: nothing ran, every action returns EV_NONE, every guard is false. */
void machine_probe_reset(struct machine_probe *p);

/* A machine_observer_fn recording into the probe ctx. */
void machine_probe_observe(void *ctx, enum machine_state from, enum machine_state to,
                           enum machine_event trigger, enum machine_guard guard, bool held,
                           int64_t in_state_ms, bool quiet);

/* True when a is some parent's exit action. */
bool machine_is_exit_action(enum machine_action a);

#endif /* BATON_MACHINE_FAKES_H */
