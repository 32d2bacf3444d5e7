/* leader.c -- leader election for embedding: one thread per campaign drives
 * the election primitives of election.c (campaign, renew, resign, watch)
 * and calls the caller back on gaining and losing leadership.
 *
 * The thread, as a follower: keeps a subscription to the name's events,
 * campaigns, and sleeps (poll on the subscription and a stop eventfd) until
 * the leader resigns, its lease runs out, or retry_ms passes. As the
 * leader: renews every renew_ms and watches for step-down requests. Loss
 * is reported loss_margin_ms before the validity deadline: the thread
 * never starts a Redis call that could end after that moment (a call is
 * bounded by the client's connect + command timeouts), so it is awake to
 * report the loss on time whether or not Redis answers. */
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "baton_election.h"
#include "lock_int.h"

#define DEFAULT_TTL_MS   10000
#define DEFAULT_RETRY_MS 1000
#define BACKOFF_START_MS 50
#define RENEW_RETRY_MS   200 /* after a failed renewal (bounded by renew/4) */

struct baton_leader {
    struct baton_client *c;
    struct baton_election *e; /* used by the thread only */
    int64_t ttl_ms, renew_ms, margin_ms, retry_ms;
    int64_t call_ns; /* the longest a Redis call can take */
    baton_leader_fn on_gained, on_lost;
    void *arg;
    int efd; /* written to stop the thread */
    pthread_t thread;
    uint64_t rng; /* the thread's jitter */
    int result;   /* the final resign's result; written by the thread */
    bool joined;  /* the owner's */

    _Atomic bool stop;
    _Atomic bool leading;
    _Atomic uint64_t term;
    _Atomic int64_t lose_at_ns; /* validity deadline - margin, while leading */
};

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Sleeps until until_ns or a stop request; with watch, also until the
 * subscription has something. Returns the BATON_EVENT_* bits read. */
static unsigned nap(struct baton_leader *l, int64_t until_ns, bool watch)
{
    struct pollfd p[2] = {{.fd = l->efd, .events = POLLIN}, {.fd = -1, .events = POLLIN}};
    unsigned events = 0;
    if (watch)
        p[1].fd = baton_election_watch_fd(l->e);
    int64_t left = until_ns - baton__now_ns();
    if (left <= 0 || atomic_load(&l->stop))
        return 0;
    int ms = (int)min64((left + 999999) / 1000000, 60000);
    if (poll(p, p[1].fd >= 0 ? 2 : 1, ms) > 0 && p[1].fd >= 0 && p[1].revents != 0)
        (void)baton_election_watch_read(l->e, &events); /* broken: closed, re-made later */
    return events;
}

/* True when a Redis call started now would end before until_ns. */
static bool call_fits(const struct baton_leader *l, int64_t until_ns)
{
    return baton__now_ns() + l->call_ns < until_ns;
}

/* Leadership ends: the callback first, then the lease is given up (a
 * no-op in Redis when it is no longer ours). Returns resign's result. */
static int lose(struct baton_leader *l, int reason)
{
    atomic_store(&l->leading, false);
    atomic_store(&l->lose_at_ns, 0);
    if (l->on_lost != NULL)
        l->on_lost(l, atomic_load(&l->term), reason, l->arg);
    return baton_election_resign(l->e);
}

/* One follower round: campaign, then wait. *backoff_ms grows while Redis
 * fails. */
static void follow(struct baton_leader *l, int64_t *backoff_ms, int64_t *next_renew_ns)
{
    struct baton_leader_info holder;
    if (!baton_election_watch_complete(l->e))
        (void)baton_election_watch(l->e); /* subscribe before campaigning: no missed resign */
    int rc = baton_election_campaign(l->e, &holder);
    if (rc == BATON_OK) {
        int64_t dl = baton_election_deadline_ns(l->e);
        int64_t sent = dl - (l->ttl_ms - l->ttl_ms / 100 - 2) * 1000000;
        *next_renew_ns = sent + l->renew_ms * 1000000;
        *backoff_ms = BACKOFF_START_MS;
        atomic_store(&l->term, baton_election_term(l->e));
        atomic_store(&l->lose_at_ns, dl - l->margin_ms * 1000000);
        atomic_store(&l->leading, true);
        if (l->on_gained != NULL)
            l->on_gained(l, atomic_load(&l->term), 0, l->arg);
        return;
    }
    int64_t now = baton__now_ns();
    if (rc == BATON_ETAKEN) {
        *backoff_ms = BACKOFF_START_MS;
        int64_t wait = baton__jitter(l->retry_ms, &l->rng);
        if (holder.ttl_ms >= 0 && holder.ttl_ms + 1 < wait)
            wait = holder.ttl_ms + 1;             /* the leader's lease runs out */
        (void)nap(l, now + wait * 1000000, true); /* any event: campaign again */
        return;
    }
    /* Redis unreachable or failing: capped exponential back-off. */
    (void)nap(l, now + baton__jitter(*backoff_ms, &l->rng) * 1000000, true);
    *backoff_ms = min64(*backoff_ms * 2, l->retry_ms);
}

/* One leader round: renew when due, report the loss on time, honour a
 * step-down request. */
static void lead(struct baton_leader *l, int64_t *next_renew_ns)
{
    int64_t lose_at = atomic_load(&l->lose_at_ns);
    int64_t now = baton__now_ns();
    if (now >= lose_at) {
        (void)lose(l, BATON_EIO);
        return;
    }
    if (now >= *next_renew_ns && call_fits(l, lose_at)) {
        int rc = baton_election_renew(l->e);
        if (rc == BATON_OK) {
            atomic_store(&l->lose_at_ns, baton_election_deadline_ns(l->e) - l->margin_ms * 1000000);
            *next_renew_ns = now + l->renew_ms * 1000000;
            if (!baton_election_watch_complete(l->e) && call_fits(l, atomic_load(&l->lose_at_ns)))
                (void)baton_election_watch(l->e);
        } else if (rc == BATON_ELOST) {
            (void)lose(l, BATON_ELOST);
        } else {
            *next_renew_ns = baton__now_ns() + min64(RENEW_RETRY_MS, l->renew_ms / 4 + 1) * 1000000;
        }
        return;
    }
    /* Sleep to the next renewal, or to the loss when no call fits before it. */
    int64_t until = call_fits(l, lose_at) ? min64(*next_renew_ns, lose_at) : lose_at;
    unsigned ev = nap(l, until, true);
    if ((ev & BATON_EVENT_STEP_DOWN) != 0 && atomic_load(&l->leading)) {
        (void)lose(l, 0);
        (void)nap(l, baton__now_ns() + l->retry_ms * 1000000, false); /* let another win */
    }
}

static void *leader_main(void *arg)
{
    struct baton_leader *l = arg;
    int64_t backoff = BACKOFF_START_MS, next_renew = 0;
    while (!atomic_load(&l->stop)) {
        if (atomic_load(&l->leading))
            lead(l, &next_renew);
        else
            follow(l, &backoff, &next_renew);
    }
    l->result = atomic_load(&l->leading) ? lose(l, 0) : BATON_OK;
    return NULL;
}

int baton_leader_campaign(struct baton_client *c, const char *name,
                          const struct baton_leader_opts *opts, struct baton_leader **out)
{
    static const struct baton_leader_opts zero = {0};
    struct baton_leader *l = NULL;
    int rc;

    if (out == NULL)
        return BATON_EINVAL;
    *out = NULL;
    if (c == NULL)
        return BATON_EINVAL;
    const struct baton_leader_opts *o = opts != NULL ? opts : &zero;
    int64_t ttl = o->ttl_ms != 0 ? o->ttl_ms : DEFAULT_TTL_MS;
    int64_t renew = o->renew_ms != 0 ? o->renew_ms : ttl / 3;
    int64_t margin = o->loss_margin_ms != 0 ? o->loss_margin_ms : (ttl / 10 > 0 ? ttl / 10 : 1);
    int64_t retry = o->retry_ms != 0 ? o->retry_ms : DEFAULT_RETRY_MS;
    int64_t call_ms = c->connect_timeout_ms + c->command_timeout_ms;
    if (ttl < 10 || renew < 1 || margin < 1 || retry < 1 || retry > 3600000 ||
        renew + call_ms + margin >= ttl - (ttl / 100 + 2))
        return BATON_EINVAL;

    if ((l = calloc(1, sizeof *l)) == NULL)
        return BATON_ENOMEM;
    l->c = c;
    l->efd = -1;
    l->joined = true; /* until the thread runs */
    struct baton_election_opts eo = {.ttl_ms = ttl, .identity = o->identity};
    if ((rc = baton_election_new(c, name, &eo, &l->e)) != BATON_OK)
        goto out_free;
    l->ttl_ms = ttl;
    l->renew_ms = renew;
    l->margin_ms = margin;
    l->retry_ms = retry;
    l->call_ns = call_ms * 1000000;
    l->on_gained = o->on_gained;
    l->on_lost = o->on_lost;
    l->arg = o->arg;
    baton__random(&l->rng, sizeof l->rng);
    rc = BATON_ENOMEM;
    if ((l->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
        goto out_free;
    if (pthread_create(&l->thread, NULL, leader_main, l) != 0)
        goto out_free;
    l->joined = false;
    *out = l;
    return BATON_OK;
out_free:
    baton_leader_free(l);
    return rc;
}

int baton_leader_resign(struct baton_leader *l)
{
    if (l == NULL)
        return BATON_EINVAL;
    if (l->joined)
        return l->result;
    if (pthread_equal(pthread_self(), l->thread))
        return BATON_EINVAL; /* from a callback: it would wait for itself */
    atomic_store(&l->stop, true);
    uint64_t one = 1;
    ssize_t n = write(l->efd, &one, sizeof one);
    (void)n; /* an eventfd write only fails on overflow: it is already set */
    pthread_join(l->thread, NULL);
    l->joined = true;
    return l->result;
}

void baton_leader_free(struct baton_leader *l)
{
    if (l == NULL)
        return;
    (void)baton_leader_resign(l);
    baton_election_free(l->e);
    if (l->efd >= 0)
        close(l->efd);
    free(l);
}

bool baton_leader_is_leader(const struct baton_leader *l)
{
    return l != NULL && atomic_load(&l->leading) && baton__now_ns() < atomic_load(&l->lose_at_ns);
}

uint64_t baton_leader_term(const struct baton_leader *l)
{
    return l != NULL ? atomic_load(&l->term) : 0;
}

int64_t baton_leader_deadline_ns(const struct baton_leader *l)
{
    return (l != NULL && atomic_load(&l->leading)) ? atomic_load(&l->lose_at_ns) : 0;
}
