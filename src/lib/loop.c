/* loop.c -- the client's event loop: one thread that owns the client's
 * pipelined connections (mux.c) and runs every script call (call.c) and
 * every asynchronous operation (lock_async.c) to completion.
 *
 * Why one thread: Redis spends most of its time per request in system calls
 * and wake-ups, not in our short scripts. A loop that writes every request
 * queued during one turn with one write() on one connection, and reads
 * every reply that has arrived with one read(), lets Redis do the same: one
 * read and one write for many requests (what node's auto-pipelining does).
 * Threads that call the blocking API post their call here and sleep on a
 * semaphore until the loop completes it; the asynchronous API's callbacks
 * run here.
 *
 * A turn: wait in epoll (a timeout at the next timer, none when work is
 * queued); handle the ready connections (replies completed in order, their
 * callbacks run, which may start further requests); run the tasks posted by
 * other threads and those deferred by this one; fire the timers that are
 * due (request deadlines, retry delays); then write out every connection
 * that got requests this turn. A post from another thread writes the
 * eventfd only when the loop sleeps (or is about to): a busy loop is never
 * woken by a system call.
 *
 * Nothing here blocks, except waiting in epoll. What must block (connecting:
 * DNS, TCP, TLS handshake, AUTH, Sentinel lookups; reading the cluster's
 * slot map) runs on the helper thread, started on first need, which posts
 * its result back as a task. The helper never waits for the loop, so the
 * loop never waits for it.
 *
 * Memory: the objects made and freed many times a second on this thread
 * (the asynchronous operations) are given back to it and reused
 * (baton__loop_calloc): a few of one size are kept, freed with the loop.
 *
 * Stopping (baton_client_free): posts are refused from then on (a blocking
 * caller gets BATON_EINVAL, "the client was freed"); the loop fails every
 * request still pending or in flight, fires every timer at once, and runs
 * what that completes (asynchronous operations fail with their callbacks
 * run), until nothing is left; then its thread ends and the helper is
 * stopped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "loop_int.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#define MAX_EVENTS 64

/* A block kept for reuse (baton__loop_calloc): its first bytes link it.
 * Under AddressSanitizer the rest is poisoned while it is kept, so that a
 * use after baton__loop_cfree() is caught as a use after free() is. */
struct spare {
    struct spare *next;
};
/* A cycle's callback starts the next operation before its own is given
 * back, so a handful covers any number in flight; what is beyond is freed
 * at once (at most 16 operations, about 40 KB, kept). */
#define SPARES_MAX 16
#if defined(__SANITIZE_ADDRESS__)
#define SPARE_POISON(b, size)   ASAN_POISON_MEMORY_REGION((b) + 1, (size) - sizeof *(b))
#define SPARE_UNPOISON(b, size) ASAN_UNPOISON_MEMORY_REGION((b) + 1, (size) - sizeof *(b))
#else
#define SPARE_POISON(b, size)   ((void)(b), (void)(size))
#define SPARE_UNPOISON(b, size) ((void)(b), (void)(size))
#endif

struct baton__loop {
    struct baton_client *c;
    pthread_t thread;
    int epfd, efd;

    pthread_mutex_t mu; /* guards the fields up to the helper's */
    struct baton__task *posted, *posted_tail;
    bool sleeping;      /* in (or about to enter) epoll with nothing queued */
    bool kicked;        /* the eventfd was written since it last woke */
    bool stop_asked;    /* baton__loop_stop() */
    bool refusing;      /* no post accepted any more */
    pthread_cond_t hcv; /* the helper's work */
    struct baton__job *jobs, *jobs_tail;
    bool helper_on, helper_stop;
    pthread_t helper;
    int offloaded; /* the loop thread's: jobs whose result is still to come */

    /* The loop thread's own, touched by no other thread. */
    struct baton__task *ready, *ready_tail; /* deferred by the loop itself */
    struct baton__timer **heap;             /* a min-heap by at, 1-based */
    int nheap, capheap;
    struct baton__io **dirty; /* connections with output this turn */
    int ndirty, capdirty;
    bool stopping;
    const struct baton__loop_conns *conns; /* NULL until a connection is made */
    /* Blocks of spare_size bytes given back on this thread, kept for the
     * next baton__loop_calloc() of that size (at most SPARES_MAX). */
    struct spare *spares;
    int nspares;
    size_t spare_size;
};

/* Waits up to wait_ns (-1: no limit) for events, the wait rounded up to a
 * millisecond so that a timer never fires early (a loop turn early would
 * only come back). Not epoll_pwait2: valgrind 3.19 lacks it, and the
 * client's timers (deadlines, retry delays) need no finer grain. */
static int wait_events(struct baton__loop *l, struct epoll_event *ev, int64_t wait_ns)
{
    int ms = -1;
    if (wait_ns >= 0)
        ms = wait_ns >= INT64_C(1000000) * INT32_MAX ? INT32_MAX
                                                     : (int)((wait_ns + 999999) / 1000000);
    return epoll_wait(l->epfd, ev, MAX_EVENTS, ms);
}

/* ---- timers: a binary min-heap, positions kept in the timers ---- */

static void heap_set(struct baton__loop *l, int i, struct baton__timer *t)
{
    l->heap[i] = t;
    t->idx = i;
}

static void heap_up(struct baton__loop *l, int i)
{
    struct baton__timer *t = l->heap[i];
    while (i > 1 && l->heap[i / 2]->at > t->at) {
        heap_set(l, i, l->heap[i / 2]);
        i /= 2;
    }
    heap_set(l, i, t);
}

static void heap_down(struct baton__loop *l, int i)
{
    struct baton__timer *t = l->heap[i];
    for (;;) {
        int k = 2 * i;
        if (k > l->nheap)
            break;
        if (k < l->nheap && l->heap[k + 1]->at < l->heap[k]->at)
            k++;
        if (l->heap[k]->at >= t->at)
            break;
        heap_set(l, i, l->heap[k]);
        i = k;
    }
    heap_set(l, i, t);
}

int baton__timer_arm(struct baton__loop *l, struct baton__timer *t, int64_t at)
{
    if (t->idx != 0) {
        int64_t was = t->at;
        t->at = at;
        if (at < was)
            heap_up(l, t->idx);
        else
            heap_down(l, t->idx);
        return BATON_OK;
    }
    if (l->nheap + 1 >= l->capheap) {
        int cap = l->capheap ? l->capheap * 2 : 256;
        struct baton__timer **grown = realloc(l->heap, (size_t)cap * sizeof *grown);
        if (grown == NULL)
            return BATON_ENOMEM;
        l->heap = grown;
        l->capheap = cap;
    }
    t->at = at;
    l->heap[++l->nheap] = t;
    t->idx = l->nheap;
    heap_up(l, l->nheap);
    return BATON_OK;
}

void baton__timer_disarm(struct baton__loop *l, struct baton__timer *t)
{
    int i = t->idx;
    if (i == 0)
        return;
    t->idx = 0;
    struct baton__timer *last = l->heap[l->nheap--];
    if (i > l->nheap)
        return; /* it was the last */
    heap_set(l, i, last);
    if (i > 1 && last->at < l->heap[i / 2]->at)
        heap_up(l, i);
    else
        heap_down(l, i);
}

/* Fires the timers due by now (all of them when stopping). */
static void fire_timers(struct baton__loop *l)
{
    int64_t now = baton__now_ns();
    while (l->nheap > 0 && (l->stopping || l->heap[1]->at <= now)) {
        struct baton__timer *t = l->heap[1];
        baton__timer_disarm(l, t);
        t->fire(t);
    }
}

/* ---- tasks ---- */

static void run_list(struct baton__task *t)
{
    while (t != NULL) {
        struct baton__task *next = t->next;
        t->next = NULL;
        t->run(t);
        t = next;
    }
}

void baton__loop_defer(struct baton__loop *l, struct baton__task *t)
{
    t->next = NULL;
    if (l->ready_tail != NULL)
        l->ready_tail->next = t;
    else
        l->ready = t;
    l->ready_tail = t;
}

static void run_ready(struct baton__loop *l)
{
    while (l->ready != NULL) {
        struct baton__task *t = l->ready;
        l->ready = NULL;
        l->ready_tail = NULL;
        run_list(t);
    }
}

bool baton__loop_here(const struct baton__loop *l)
{
    return l != NULL && pthread_equal(pthread_self(), l->thread);
}

void *baton__loop_calloc(struct baton__loop *l, size_t size)
{
    if (baton__loop_here(l) && l->spares != NULL && size == l->spare_size) {
        struct spare *b = l->spares;
        l->spares = b->next;
        l->nspares--;
        SPARE_UNPOISON(b, size);
        return memset(b, 0, size);
    }
    return calloc(1, size);
}

void baton__loop_cfree(struct baton__loop *l, void *p, size_t size)
{
    if (p == NULL)
        return;
    if (!baton__loop_here(l) || l->stopping || size < sizeof(struct spare) ||
        l->nspares >= SPARES_MAX || (l->spare_size != 0 && size != l->spare_size)) {
        free(p);
        return;
    }
    struct spare *b = p;
    SPARE_POISON(b, size);
    l->spare_size = size;
    b->next = l->spares;
    l->spares = b;
    l->nspares++;
}

bool baton__loop_post(struct baton__loop *l, struct baton__task *t)
{
    if (baton__loop_here(l)) {
        baton__loop_defer(l, t);
        return true;
    }
    t->next = NULL;
    pthread_mutex_lock(&l->mu);
    if (l->refusing) {
        pthread_mutex_unlock(&l->mu);
        return false;
    }
    if (l->posted_tail != NULL)
        l->posted_tail->next = t;
    else
        l->posted = t;
    l->posted_tail = t;
    bool kick = l->sleeping && !l->kicked;
    if (kick)
        l->kicked = true;
    pthread_mutex_unlock(&l->mu);
    if (kick) {
        uint64_t one = 1;
        ssize_t n = write(l->efd, &one, sizeof one);
        (void)n; /* the counter cannot overflow: it is read on every wake */
    }
    return true;
}

bool baton__loop_stopping(const struct baton__loop *l)
{
    return l->stopping;
}

/* ---- connections: epoll registration and the turn's writes ---- */

int baton__io_watch(struct baton__loop *l, struct baton__io *io, int fd, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = io};
    int op = io->fd >= 0 ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (io->fd >= 0 && io->events == events)
        return BATON_OK;
    if (epoll_ctl(l->epfd, op, fd, &ev) != 0)
        return BATON_EIO;
    io->fd = fd;
    io->events = events;
    return BATON_OK;
}

void baton__io_unwatch(struct baton__loop *l, struct baton__io *io)
{
    if (io->fd < 0)
        return;
    (void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, io->fd, NULL);
    io->fd = -1;
    io->events = 0;
}

int baton__io_dirty(struct baton__loop *l, struct baton__io *io)
{
    if (io->dirty)
        return BATON_OK;
    if (l->ndirty == l->capdirty) {
        int cap = l->capdirty ? l->capdirty * 2 : 16;
        struct baton__io **grown = realloc(l->dirty, (size_t)cap * sizeof *grown);
        if (grown == NULL)
            return BATON_ENOMEM;
        l->dirty = grown;
        l->capdirty = cap;
    }
    io->dirty = true;
    l->dirty[l->ndirty++] = io;
    return BATON_OK;
}

static void flush_dirty(struct baton__loop *l)
{
    /* A flush may fail a connection and so run callbacks that mark
     * others dirty: take the list as it grows. */
    for (int i = 0; i < l->ndirty; i++) {
        struct baton__io *io = l->dirty[i];
        io->dirty = false;
        io->flush(io);
    }
    l->ndirty = 0;
}

/* ---- the helper thread: blocking work, off the loop ---- */

static void *helper_main(void *arg)
{
    struct baton__loop *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (l->jobs == NULL && !l->helper_stop)
            pthread_cond_wait(&l->hcv, &l->mu);
        struct baton__job *j = l->jobs;
        if (j == NULL)
            break; /* stopping, nothing left */
        l->jobs = j->next;
        if (l->jobs == NULL)
            l->jobs_tail = NULL;
        j->queued = false;
        pthread_mutex_unlock(&l->mu);
        j->next = NULL;
        j->run(j);
        pthread_mutex_lock(&l->mu);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

int baton__loop_offload(struct baton__loop *l, struct baton__job *j)
{
    pthread_mutex_lock(&l->mu);
    if (j->queued) {
        pthread_mutex_unlock(&l->mu);
        return BATON_EINVAL;
    }
    j->next = NULL;
    if (!l->helper_on) {
        if (pthread_create(&l->helper, NULL, helper_main, l) != 0) {
            pthread_mutex_unlock(&l->mu);
            return BATON_ENOMEM;
        }
        l->helper_on = true;
    }
    if (l->jobs_tail != NULL)
        l->jobs_tail->next = j;
    else
        l->jobs = j;
    l->jobs_tail = j;
    j->queued = true;
    pthread_cond_signal(&l->hcv);
    pthread_mutex_unlock(&l->mu);
    l->offloaded++; /* the loop thread's count: baton__loop_offload_done() when its result runs */
    return BATON_OK;
}

/* ---- the thread ---- */

static int64_t next_wait_ns(struct baton__loop *l)
{
    if (l->nheap == 0)
        return -1;
    int64_t d = l->heap[1]->at - baton__now_ns();
    return d > 0 ? d : 0;
}

void baton__loop_offload_done(struct baton__loop *l)
{
    l->offloaded--;
}

void baton__loop_set_conns(struct baton__loop *l, const struct baton__loop_conns *conns)
{
    l->conns = conns;
}

static bool conns_busy(const struct baton__loop *l)
{
    return l->conns != NULL && l->conns->busy(l->c);
}

static void *loop_main(void *arg)
{
    struct baton__loop *l = arg;
    struct epoll_event ev[MAX_EVENTS];
    for (;;) {
        int64_t wait_ns = 0;
        pthread_mutex_lock(&l->mu);
        if (l->stop_asked)
            l->stopping = true;
        bool idle = l->posted == NULL && l->ready == NULL;
        if (l->stopping && idle && l->nheap == 0 && l->offloaded == 0 && !conns_busy(l)) {
            l->refusing = true; /* nothing left: posts fail from now on */
            pthread_mutex_unlock(&l->mu);
            break;
        }
        /* Stopping, timers fire at once and pipes fail: the loop waits
         * only when nothing but the helper's results is left. */
        if (idle && (!l->stopping || (l->nheap == 0 && !conns_busy(l)))) {
            l->sleeping = true;
            wait_ns = l->stopping ? -1 : next_wait_ns(l);
        }
        pthread_mutex_unlock(&l->mu);
        int n = wait_events(l, ev, wait_ns);
        pthread_mutex_lock(&l->mu);
        l->sleeping = false;
        l->kicked = false;
        struct baton__task *posted = l->posted;
        l->posted = l->posted_tail = NULL;
        pthread_mutex_unlock(&l->mu);
        for (int i = 0; i < n; i++) {
            if (ev[i].data.ptr == NULL) {
                uint64_t v;
                ssize_t r = read(l->efd, &v, sizeof v);
                (void)r;
                continue;
            }
            struct baton__io *io = ev[i].data.ptr;
            io->ready(io, ev[i].events);
        }
        run_list(posted);
        run_ready(l);
        if (l->stopping && l->conns != NULL)
            l->conns->fail_all(l->c);
        fire_timers(l);
        run_ready(l);
        flush_dirty(l);
    }
    if (l->conns != NULL)
        l->conns->close_all(l->c);
    return NULL;
}

struct baton__loop *baton__loop_of(struct baton_client *c)
{
    struct baton__loop *l = atomic_load(&c->loop);
    if (l != NULL)
        return l; /* started: a stopped loop refuses posts */
    pthread_mutex_lock(&c->mu);
    l = atomic_load(&c->loop);
    if (l != NULL || atomic_load(&c->closed))
        goto out;
    if ((l = calloc(1, sizeof *l)) == NULL)
        goto out;
    l->c = c;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (l->epfd < 0 || l->efd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->efd, &ev) != 0)
        goto out_fds;
    if (pthread_mutex_init(&l->mu, NULL) != 0)
        goto out_fds;
    if (pthread_cond_init(&l->hcv, NULL) != 0)
        goto out_mutex;
    /* Under l->mu until l->thread is stored: the loop reads it (baton__loop_here)
     * only after taking l->mu. */
    pthread_mutex_lock(&l->mu);
    int created = pthread_create(&l->thread, NULL, loop_main, l);
    pthread_mutex_unlock(&l->mu);
    if (created != 0)
        goto out_cond;
    atomic_store(&c->loop, l);
    goto out;
out_cond:
    pthread_cond_destroy(&l->hcv);
out_mutex:
    pthread_mutex_destroy(&l->mu);
out_fds:
    if (l->epfd >= 0)
        close(l->epfd);
    if (l->efd >= 0)
        close(l->efd);
    free(l);
    l = NULL;
out:
    pthread_mutex_unlock(&c->mu);
    return l;
}

void baton__loop_stop(struct baton_client *c)
{
    struct baton__loop *l = atomic_load(&c->loop);
    if (l == NULL)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop_asked = true;
    bool kick = !l->kicked;
    l->kicked = true;
    pthread_mutex_unlock(&l->mu);
    if (kick) {
        uint64_t one = 1;
        ssize_t n = write(l->efd, &one, sizeof one);
        (void)n;
    }
    pthread_join(l->thread, NULL);
    pthread_mutex_lock(&l->mu);
    l->helper_stop = true;
    bool helper = l->helper_on;
    pthread_cond_signal(&l->hcv);
    pthread_mutex_unlock(&l->mu);
    if (helper)
        pthread_join(l->helper, NULL); /* it finishes its jobs: their posts fail */
}

void baton__loop_free(struct baton_client *c)
{
    struct baton__loop *l = atomic_load(&c->loop);
    if (l == NULL)
        return;
    close(l->epfd);
    close(l->efd);
    free(l->heap);
    free(l->dirty);
    for (struct spare *b = l->spares, *next; b != NULL; b = next) {
        next = b->next;
        SPARE_UNPOISON(b, l->spare_size);
        free(b);
    }
    pthread_cond_destroy(&l->hcv);
    pthread_mutex_destroy(&l->mu);
    free(l);
    atomic_store(&c->loop, NULL);
}
