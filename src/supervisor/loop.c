/* loop.c -- see loop.h. */
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "loop.h"

int64_t loop_now(void)
{
    return mono_ns();
}

int64_t loop_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The wall timer's descriptor is readable: it expired, or the clock was
 * stepped (read fails with ECANCELED). Either way it fires. */
static void wall_fired(void *ctx, struct loop_watch *w, uint32_t events)
{
    struct loop *l = ctx;
    uint64_t n;
    (void)events;
    if (read(w->fd, &n, sizeof n) < 0 && errno == EAGAIN)
        return; /* spurious */
    l->wall_done = l->wall_at;
    loop_disarm_wall(l);
    l->on_timer(l->ctx, l->wall_id);
}

int loop_init(struct loop *l, void (*on_timer)(void *ctx, int id), void *ctx)
{
    for (int i = 0; i < LOOP_TIMERS; i++)
        l->at[i] = 0;
    l->on_timer = on_timer;
    l->ctx = ctx;
    l->wall_at = l->wall_done = 0;
    l->wall_id = -1;
    l->wallfd = -1;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0)
        return errno;
    l->wallfd = timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC | TFD_NONBLOCK);
    if (l->wallfd < 0)
        return 0; /* no wall timer: loop_arm_wall() says so, callers fall back */
    l->wall_watch = (struct loop_watch){.fd = l->wallfd, .cb = wall_fired, .ctx = l};
    if (loop_add(l, &l->wall_watch) != 0) {
        close(l->wallfd);
        l->wallfd = -1;
    }
    return 0;
}

void loop_close(struct loop *l)
{
    if (l->wallfd >= 0)
        close(l->wallfd);
    l->wallfd = -1;
    if (l->epfd >= 0)
        close(l->epfd);
    l->epfd = -1;
}

int loop_arm_wall(struct loop *l, int id, int64_t at_ns)
{
    if (l->wallfd < 0)
        return ENOSYS;
    if (at_ns <= 0)
        at_ns = 1;
    if ((l->wall_at == at_ns && l->wall_id == id) || at_ns == l->wall_done)
        return 0; /* armed there already (no system call), or it fired for it */
    struct itimerspec its = {
        .it_value = {.tv_sec = at_ns / 1000000000, .tv_nsec = at_ns % 1000000000}};
    if (timerfd_settime(l->wallfd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &its, NULL) != 0)
        return errno;
    l->wall_at = at_ns;
    l->wall_id = id;
    return 0;
}

void loop_disarm_wall(struct loop *l)
{
    if (l->wallfd < 0 || l->wall_at == 0)
        return;
    struct itimerspec off = {{0, 0}, {0, 0}};
    timerfd_settime(l->wallfd, 0, &off, NULL);
    l->wall_at = 0;
}

void loop_arm(struct loop *l, int id, int64_t at_ns)
{
    if (id >= 0 && id < LOOP_TIMERS)
        l->at[id] = at_ns > 0 ? at_ns : 1;
}

void loop_arm_in(struct loop *l, int id, int64_t ms)
{
    loop_arm(l, id, loop_now() + ms * 1000000);
}

void loop_disarm(struct loop *l, int id)
{
    if (id >= 0 && id < LOOP_TIMERS)
        l->at[id] = 0;
}

bool loop_armed(const struct loop *l, int id)
{
    return id >= 0 && id < LOOP_TIMERS && l->at[id] != 0;
}

int loop_add(struct loop *l, struct loop_watch *w)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = w};
    return epoll_ctl(l->epfd, EPOLL_CTL_ADD, w->fd, &ev) == 0 ? 0 : errno;
}

void loop_del(struct loop *l, struct loop_watch *w)
{
    if (w->fd >= 0)
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, w->fd, NULL);
}

/* Fires due timers, lowest id first, re-reading the clock and the table
 * after each (a callback may arm or disarm others). */
static void run_timers(struct loop *l)
{
    for (;;) {
        int64_t now = loop_now();
        int due = -1;
        for (int i = 0; i < LOOP_TIMERS && due < 0; i++)
            if (l->at[i] != 0 && l->at[i] <= now)
                due = i;
        if (due < 0)
            return;
        l->at[due] = 0;
        l->on_timer(l->ctx, due);
    }
}

void loop_once(struct loop *l)
{
    run_timers(l);
    int64_t next = 0;
    for (int i = 0; i < LOOP_TIMERS; i++)
        if (l->at[i] != 0 && (next == 0 || l->at[i] < next))
            next = l->at[i];
    int timeout = -1;
    if (next != 0) {
        int64_t left = next - loop_now();
        timeout = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
    }
    struct epoll_event ev;
    int n = epoll_wait(l->epfd, &ev, 1, timeout);
    /* Timers first: a lease deadline that passed while we slept (or were
     * stopped) wins over anything a descriptor says. The descriptor is
     * level-triggered: skipped now, it is reported again next time, so no
     * timer callback can leave it stale. */
    int64_t now = loop_now();
    for (int i = 0; i < LOOP_TIMERS; i++)
        if (l->at[i] != 0 && l->at[i] <= now)
            return;
    if (n == 1) {
        struct loop_watch *w = ev.data.ptr;
        w->cb(w->ctx, w, ev.events);
    }
}
