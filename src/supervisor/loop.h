/* loop.h -- the supervisor's event loop: epoll for file descriptors, and a
 * small table of one-shot timers on CLOCK_MONOTONIC.
 *
 * Timers are identified by small integers (the caller's enum); when several
 * are due at once they fire in id order, so the caller puts what must win
 * first (the lease deadline before anything that would act as leader). One
 * loop_once() handles all due timers and at most one ready descriptor, so a
 * callback may remove any watch without leaving a stale event behind.
 *
 * One more timer is exact and on the wall clock (loop_arm_wall): a timerfd
 * armed at an absolute CLOCK_REALTIME instant with TFD_TIMER_CANCEL_ON_SET,
 * so that it fires at that instant to the microsecond (the table's timers
 * wait in epoll_wait, to the millisecond) and also at once when the wall
 * clock is stepped (settimeofday, clock_settime: the instant moved). The
 * runner starts its prepared runs on it (runner.h). */
#ifndef BATON_LOOP_H
#define BATON_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#define LOOP_TIMERS 16

struct loop_watch {
    int fd;
    void (*cb)(void *ctx, struct loop_watch *w, uint32_t events);
    void *ctx;
};

struct loop {
    int epfd;
    int64_t at[LOOP_TIMERS]; /* 0: disarmed */
    int wallfd;              /* the wall timer's timerfd, or -1 */
    int wall_id;             /* the id it fires as */
    int64_t wall_at;         /* its instant (CLOCK_REALTIME ns); 0: disarmed */
    int64_t wall_done;       /* the instant it last fired for: not armed again */
    struct loop_watch wall_watch;
    void (*on_timer)(void *ctx, int id);
    void *ctx;
};

/* Returns 0 or an errno value. */
int loop_init(struct loop *l, void (*on_timer)(void *ctx, int id), void *ctx);
void loop_close(struct loop *l);

int64_t loop_now(void); /* CLOCK_MONOTONIC ns */
int64_t loop_wall_ns(void); /* CLOCK_REALTIME ns: the times ticks fall at */
void loop_arm(struct loop *l, int id, int64_t at_ns);
void loop_arm_in(struct loop *l, int id, int64_t ms);
void loop_disarm(struct loop *l, int id);
bool loop_armed(const struct loop *l, int id);

/* Arms the wall timer: on_timer(ctx, id) at the CLOCK_REALTIME instant
 * at_ns, or as soon as the wall clock is stepped before then. One wall
 * timer per loop: arming it again moves it (id included). An instant it
 * already fired for is not armed again (a clock stepped back, or a clock
 * faked in the process only, would make it fire again at once, over and
 * over): the caller keeps a monotonic timer as its fallback. Returns 0 or
 * an errno value (ENOSYS: no wall timer). */
int loop_arm_wall(struct loop *l, int id, int64_t at_ns);
void loop_disarm_wall(struct loop *l);

/* Watches w->fd for input (EPOLLIN). w stays the caller's; it must stay
 * valid until loop_del(). Returns 0 or an errno value. */
int loop_add(struct loop *l, struct loop_watch *w);
void loop_del(struct loop *l, struct loop_watch *w);

/* Runs due timers, waits (at most until the next timer) for one descriptor,
 * and runs its callback unless a timer became due meanwhile (it is then
 * reported again by the next call). */
void loop_once(struct loop *l);

#endif
