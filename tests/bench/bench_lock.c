/* bench_lock.c -- lock throughput and handoff latency, printed as JSON.
 *
 *  1. uncontended: 50 threads, each on its own key, acquire+release cycles
 *     per second through libbaton (one shared client), next to the ceiling
 *     measured in the same run: the same 50 threads on the same transport
 *     sending raw `SET key v NX PX` + `DEL key` pairs. Target >= 0.85.
 *     The threads of one client share its pipelined connections (mux.c);
 *     for comparison, the same 50 threads with a client each (nothing
 *     shared, one request per connection at a time, like the ceiling).
 *     Measured as the peers are (bench_peers.sh): the same 50 clients as 50
 *     asynchronous cycles in flight on one client (baton_lock_try_async,
 *     baton_lock_release_async: one thread, the client's loop, one
 *     connection), next to the physical limit in the same run: raw
 *     `SET NX PX` + `DEL` with 50 pairs in flight, pipelined on one
 *     connection by one thread (each turn writes every command due with
 *     one write and reads every reply that came).
 *  2. hot key: 20 contenders on one key, each with its own client (its own
 *     connections), zero hold time: handoffs per second; the time from one
 *     holder's release to the next holder's grant (p50, p99, max), ordered
 *     by fencing token; each contender's longest wait. Targets: p99 handoff
 *     <= 2 ms; longest wait <= 20 x (p99 handoff + hold). With zero hold,
 *     every waiter of a fair lock waits 19 handoffs, and any stall of the
 *     machine adds to all of them. For scale, the same measures of the
 *     ideal fair lock on this machine, in the same run: the 20 contenders
 *     pass one in-process token first come, first served, the holder
 *     sending a raw `SET NX PX` + `DEL` pair (no Redis in the handoff).
 *     And the floor of any fair lock whose handoff goes through Redis: the
 *     20 contenders, a connection each, pass one token through a Redis
 *     list, `BLPOP` to take it and `RPUSH` to give it back (Redis serves
 *     blocked clients first come, first served; the handoff is the
 *     release's one command and the next waiter's reply, with no script,
 *     fence or lease).
 *     Beside each of the three, the machine's longest stall in the same
 *     seconds: a thread on each CPU (pinned) that sleeps 1 ms at a time
 *     records how much later than asked it woke (the largest of them, as
 *     cyclictest would). A stall holds
 *     up every waiter queued behind it, so a longest wait above 20
 *     handoffs is mostly the longest stall. So that the three meet the
 *     same stalls, they take turns: five slices each (a fifth of the
 *     seconds), baton, the ideal, the Redis list, in a row, five times;
 *     each lock's figures are over its five slices.
 *
 * Each case also reports this process's CPU per cycle (client_cpu_us_per_cycle;
 * with every case, async_client_cpu_us_per_cycle): the client's cost alone.
 *
 * usage: bench_lock [--url URL] [--seconds S] [--smoke]
 *                   [--only raw|lib|own|async|pipelined|floor|hot]
 * (floor: the two-script fenced cycle of run_pipelined(true), alone.)
 * (URL defaults to $BATON_TEST_URL; tests/lib/with-redis.sh provides one.)
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "baton.h"
#include "transport_int.h"
#include "testutil.h"

#define UNCONTENDED_THREADS 50
#define HOT_CONTENDERS      20
#define HOT_SLICES          5 /* turns of the three hot-key locks (below) */

static const char *url;
static double seconds = 5.0;
static const char *only = ""; /* "raw", "lib", "own", "async", "pipelined", "floor" or "hot" */

static int64_t run_ns(void)
{
    return (int64_t)(seconds * 1e9);
}

/* The CPU this process has used (user + system, every thread), in s. */
static double cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* What one uncontended case cost this process: its CPU (user + system,
 * every thread: the callers', the client's loop and renewer) per cycle, in
 * us. The client's own cost, apart from Redis's and from whatever else
 * runs on the machine (a machine-wide busy figure mixes them). */
struct case_cost {
    double cpu0, wall0, cpu_us_per_cycle;
};

static void cost_start(struct case_cost *k)
{
    k->cpu0 = cpu_s();
    k->wall0 = (double)tu_now_ns() / 1e9;
}

/* cps: the case's cycles/s, over its own (nearly the same) wall time. */
static void cost_end(struct case_cost *k, double cps)
{
    double cycles = cps * ((double)tu_now_ns() / 1e9 - k->wall0);
    k->cpu_us_per_cycle = cycles > 0 ? (cpu_s() - k->cpu0) * 1e6 / cycles : 0;
}

/* ---- 1. uncontended ---- */

struct unc_arg {
    int id;
    bool own_client;
    struct baton_client *c;
    atomic_bool *stop;
    int64_t cycles;
    int errors;
};

static void *raw_main(void *p)
{
    struct unc_arg *a = p;
    char key[64];
    snprintf(key, sizeof key, "bench:raw:%d", a->id);
    const char *set[6] = {"SET", key,  "0123456789abcdef0123456789abcdef0123456789abcdef",
                          "NX",  "PX", "30000"};
    const char *del[2] = {"DEL", key};
    a->cycles = tu_raw_pairs(url, 6, set, 2, del, a->stop);
    if (a->cycles < 0) {
        a->cycles = 0;
        a->errors++;
    }
    return NULL;
}

static void *lib_main(void *p)
{
    struct unc_arg *a = p;
    char key[64];
    snprintf(key, sizeof key, "bench:lib:%d", a->id);
    struct baton_lock_opts o = {.ttl_ms = 30000};
    if (a->own_client && baton_client_new(url, NULL, &a->c) != BATON_OK) {
        a->errors++;
        baton_client_free(a->c);
        return NULL;
    }
    while (!atomic_load(a->stop)) {
        struct baton_lock *lk = NULL;
        if (baton_lock_try(a->c, key, &o, &lk) != BATON_OK || baton_lock_release(lk) != BATON_OK) {
            a->errors++;
            baton_lock_free(lk);
            break;
        }
        baton_lock_free(lk);
        a->cycles++;
    }
    if (a->own_client)
        baton_client_free(a->c);
    return NULL;
}

/* Runs the 50 threads of fn for the configured time (c NULL: a client per
 * thread). Returns cycles/s. */
static double run_uncontended(void *(*fn)(void *), struct baton_client *c, int *errors)
{
    pthread_t th[UNCONTENDED_THREADS];
    struct unc_arg a[UNCONTENDED_THREADS];
    atomic_bool stop = false;
    for (int i = 0; i < UNCONTENDED_THREADS; i++) {
        a[i] = (struct unc_arg){.id = i, .c = c, .own_client = c == NULL, .stop = &stop};
        pthread_create(&th[i], NULL, fn, &a[i]);
    }
    int64_t t0 = tu_now_ns();
    tu_sleep_ms(run_ns() / 1000000);
    atomic_store(&stop, true);
    int64_t total = 0;
    for (int i = 0; i < UNCONTENDED_THREADS; i++) {
        pthread_join(th[i], NULL);
        total += a[i].cycles;
        *errors += a[i].errors;
    }
    return (double)total / ((double)(tu_now_ns() - t0) / 1e9);
}

/* ---- 1b. uncontended, asynchronous: 50 cycles in flight on one client ---- */

struct chain {
    struct baton_client *c;
    char key[32];
    atomic_bool *stop;
    atomic_int *running;
    int64_t cycles;
    int errors;
};

static void chain_next(struct chain *ch);

static void chain_released(struct baton_lock *lk, int rc, const char *why, void *arg)
{
    struct chain *ch = arg;
    if (rc != BATON_OK) {
        fprintf(stderr, "bench_lock: release: %s\n", why);
        ch->errors++;
    } else {
        ch->cycles++;
    }
    baton_lock_free(lk);
    chain_next(ch);
}

static void chain_taken(struct baton_lock *lk, int rc, const char *why, void *arg)
{
    struct chain *ch = arg;
    if (rc != BATON_OK || baton_lock_release_async(lk, chain_released, ch) != BATON_OK) {
        fprintf(stderr, "bench_lock: try: %s\n", why);
        ch->errors++;
        baton_lock_free(lk);
        atomic_fetch_sub(ch->running, 1);
    }
}

static const struct baton_lock_opts chain_opts = {.ttl_ms = 30000};

/* The next cycle, or the end of the chain (on the loop thread, or main). */
static void chain_next(struct chain *ch)
{
    if (atomic_load(ch->stop) || ch->errors > 0 ||
        baton_lock_try_async(ch->c, ch->key, &chain_opts, chain_taken, ch) != BATON_OK)
        atomic_fetch_sub(ch->running, 1);
}

static double run_async(struct baton_client *c, int *errors)
{
    struct chain ch[UNCONTENDED_THREADS];
    atomic_bool stop = false;
    atomic_int running = UNCONTENDED_THREADS;
    int64_t t0 = tu_now_ns();
    for (int i = 0; i < UNCONTENDED_THREADS; i++) {
        ch[i] = (struct chain){.c = c, .stop = &stop, .running = &running};
        snprintf(ch[i].key, sizeof ch[i].key, "bench:async:%d", i);
        chain_next(&ch[i]);
    }
    tu_sleep_ms(run_ns() / 1000000);
    atomic_store(&stop, true);
    while (atomic_load(&running) > 0)
        tu_sleep_ms(1);
    int64_t total = 0;
    for (int i = 0; i < UNCONTENDED_THREADS; i++) {
        total += ch[i].cycles;
        *errors += ch[i].errors;
    }
    return (double)total / ((double)(tu_now_ns() - t0) / 1e9);
}

/* The floor of any fenced cycle on this server, for the Redis CPU a cycle
 * costs: the fewest calls a grant with baton's fence needs (SET NX PX, the
 * server's TIME, one write of max(last + 1, clock) to the fence key) and a
 * release that compares and deletes (GET, DEL), as two scripts by EVALSHA:
 * a compare-and-delete and a fence computed on the server need Lua on
 * Redis 6 and 7. No queue, no waiters. */
static const char floor_acquire[] =
    "if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end\n"
    "local t = redis.call('time')\n"
    "local now = t[1] .. string.sub('00000' .. t[2], -6, -2)\n"
    "local last = redis.call('getset', KEYS[2], now)\n"
    "if last and tonumber(last) >= tonumber(now) then\n"
    "  now = string.format('%d', tonumber(last) + 1)\n"
    "  redis.call('set', KEYS[2], now)\n"
    "end\n"
    "return tonumber(now)\n";
static const char floor_release[] = "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n"
                                    "return redis.call('del', KEYS[1])\n";

/* The physical limit of the same work: raw SET NX PX + DEL, 50 pairs in
 * flight on one connection, one thread: each turn writes every command
 * due with one write, then reads every reply that has come. scripted: the
 * pair is instead the two scripts of the floor above, by EVALSHA. */
static double run_pipelined(bool scripted, int *errors)
{
    struct baton__conn *cn = tu_raw_open(url);
    char keys[UNCONTENDED_THREADS][32], fences[UNCONTENDED_THREADS][40];
    bool set_next[UNCONTENDED_THREADS];
    int order[UNCONTENDED_THREADS], head = 0, inflight = 0;
    int64_t cycles = 0;
    char sha_acq[41], sha_rel[41];
    baton__sha1_hex(floor_acquire, strlen(floor_acquire), sha_acq);
    baton__sha1_hex(floor_release, strlen(floor_release), sha_rel);
    const char *load_acq[3] = {"SCRIPT", "LOAD", floor_acquire};
    const char *load_rel[3] = {"SCRIPT", "LOAD", floor_release};
    if (cn == NULL ||
        (scripted && (!tu_raw_cmd(cn, 3, load_acq) || !tu_raw_cmd(cn, 3, load_rel)))) {
        tu_raw_close(cn);
        (*errors)++;
        return 0;
    }
    int64_t t0 = tu_now_ns(), end = t0 + run_ns();
    for (int i = 0; i < UNCONTENDED_THREADS; i++) {
        /* Keys of their own: a run stops with some pairs half done, and a
         * key the raw pairs left set (PX 30 s) would refuse the floor's
         * grants (50 "errors" when the floor ran right after). */
        const char *kind = scripted ? "floor" : "pipe";
        snprintf(keys[i], sizeof keys[i], "bench:%s:%d", kind, i);
        snprintf(fences[i], sizeof fences[i], "bench:%s:%d:fence", kind, i);
        set_next[i] = true;
    }
    int due[UNCONTENDED_THREADS], ndue = UNCONTENDED_THREADS;
    for (int i = 0; i < UNCONTENDED_THREADS; i++)
        due[i] = i;
    bool stop = false;
    while (!stop || inflight > 0) {
        for (int d = 0; d < ndue && !stop; d++) {
            int i = due[d];
            const char *set[6] = {
                "SET", keys[i], "0123456789abcdef0123456789abcdef0123456789abcdef",
                "NX",  "PX",    "30000"};
            const char *del[2] = {"DEL", keys[i]};
            const char *acq[7] = {"EVALSHA", sha_acq,
                                  "2",       keys[i],
                                  fences[i], "0123456789abcdef0123456789abcdef0123456789abcdef",
                                  "30000"};
            const char *rel[5] = {"EVALSHA", sha_rel, "1", keys[i],
                                  "0123456789abcdef0123456789abcdef0123456789abcdef"};
            size_t lens[7];
            const char **argv = scripted ? (set_next[i] ? acq : rel) : (set_next[i] ? set : del);
            int argc = scripted ? (set_next[i] ? 7 : 5) : (set_next[i] ? 6 : 2);
            for (int k = 0; k < argc; k++)
                lens[k] = strlen(argv[k]);
            if (baton__conn_append(cn, argc, argv, lens) != BATON_OK) {
                (*errors)++;
                stop = true;
                break;
            }
            order[(head + inflight) % UNCONTENDED_THREADS] = i;
            inflight++;
        }
        ndue = 0;
        if (baton__conn_flush(cn, tu_now_ns() + INT64_C(2000000000)) != BATON_OK) {
            (*errors)++;
            break;
        }
        redisReply *r = NULL;
        if (inflight > 0 &&
            baton__conn_read(cn, &r, tu_now_ns() + INT64_C(2000000000)) != BATON_OK) {
            (*errors)++;
            break;
        }
        while (r != NULL) {
            int i = order[head];
            head = (head + 1) % UNCONTENDED_THREADS;
            inflight--;
            /* an error, or a grant refused (each key is only ours) */
            if (r->type == REDIS_REPLY_ERROR ||
                (scripted && set_next[i] && r->type == REDIS_REPLY_INTEGER && r->integer == 0))
                (*errors)++;
            freeReplyObject(r);
            if (!set_next[i])
                cycles++;
            set_next[i] = !set_next[i];
            due[ndue++] = i;
            r = NULL;
            if (inflight > 0 && baton__conn_poll_reply(cn, &r) < 0) {
                (*errors)++;
                stop = true;
            }
        }
        if (tu_now_ns() >= end)
            stop = true;
    }
    double secs = (double)(tu_now_ns() - t0) / 1e9;
    tu_raw_close(cn);
    return (double)cycles / secs;
}

/* ---- 2. hot key ---- */

struct grant {
    uint64_t fence;
    int64_t asked_ns, acquired_ns, released_ns;
};

struct hot_arg {
    int id;
    atomic_bool *stop;
    struct grant *grants;
    size_t n, cap;
    int errors;
};

static void *hot_main(void *p)
{
    struct hot_arg *a = p;
    struct baton_client *c = NULL;
    if (baton_client_new(url, NULL, &c) != BATON_OK) {
        a->errors++;
        baton_client_free(c);
        return NULL;
    }
    struct baton_lock_opts o = {.ttl_ms = 10000, .max_wait_ms = 20000};
    while (!atomic_load(a->stop) && a->n < a->cap) {
        struct baton_lock *lk = NULL;
        int64_t t0 = tu_now_ns();
        if (baton_lock_acquire(c, "bench:hot", &o, &lk) != BATON_OK) {
            a->errors++;
            break;
        }
        int64_t got = tu_now_ns();
        struct grant *g = &a->grants[a->n++];
        g->fence = baton_lock_fence(lk);
        g->asked_ns = t0;
        g->acquired_ns = got;
        g->released_ns = tu_now_ns(); /* zero hold */
        if (baton_lock_release(lk) != BATON_OK)
            a->errors++;
        baton_lock_free(lk);
    }
    baton_client_free(c);
    return NULL;
}

/* The ideal fair lock of this machine: one in-process token handed first
 * come, first served; its "fence" counts the grants. */
static struct tu_tokens hot_token = TU_TOKENS(1);
static uint64_t hot_grants; /* under the token */

static void *hot_raw_main(void *p)
{
    struct hot_arg *a = p;
    struct baton__conn *cn = tu_raw_open(url);
    const char *set[6] = {"SET", "bench:hotraw", "0123456789abcdef0123456789abcdef0123456789abcdef",
                          "NX",  "PX",           "10000"};
    const char *del[2] = {"DEL", "bench:hotraw"};
    if (cn == NULL)
        a->errors++;
    while (cn != NULL && !atomic_load(a->stop) && a->n < a->cap) {
        int64_t t0 = tu_now_ns();
        tu_tokens_take(&hot_token);
        struct grant *g = &a->grants[a->n++];
        g->asked_ns = t0;
        g->acquired_ns = tu_now_ns();
        g->fence = ++hot_grants;
        if (!tu_raw_cmd(cn, 6, set) || !tu_raw_cmd(cn, 2, del))
            a->errors++;
        g->released_ns = tu_now_ns();
        tu_tokens_give(&hot_token);
    }
    tu_raw_close(cn);
    return NULL;
}

/* The floor of a fair lock handed over through Redis: the token is the
 * one element of a list, its value the count of grants (the "fence"). */
static void *hot_fifo_main(void *p)
{
    struct hot_arg *a = p;
    struct baton__conn *cn = tu_raw_open(url);
    if (cn == NULL)
        a->errors++;
    while (cn != NULL && !atomic_load(a->stop) && a->n < a->cap) {
        const char *pop[3] = {"BLPOP", "bench:hotfifo", "1"};
        size_t plen[3] = {strlen(pop[0]), strlen(pop[1]), strlen(pop[2])};
        redisReply *r = NULL;
        int64_t t0 = tu_now_ns();
        if (baton__conn_command(cn, 3, pop, plen, &r, t0 + INT64_C(3000000000)) != BATON_OK) {
            a->errors++;
            break;
        }
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) { /* timed out: ask again */
            freeReplyObject(r);
            continue;
        }
        struct grant *g = &a->grants[a->n++];
        g->acquired_ns = tu_now_ns();
        g->asked_ns = t0;
        g->fence = strtoull(r->element[1]->str, NULL, 10) + 1;
        freeReplyObject(r);
        char v[32];
        snprintf(v, sizeof v, "%" PRIu64, g->fence);
        const char *push[3] = {"RPUSH", "bench:hotfifo", v};
        g->released_ns = tu_now_ns(); /* zero hold */
        if (!tu_raw_cmd(cn, 3, push))
            a->errors++;
    }
    tu_raw_close(cn);
    return NULL;
}

static int cmp_grant(const void *x, const void *y)
{
    const struct grant *a = x, *b = y;
    return a->fence < b->fence ? -1 : a->fence > b->fence;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

static int64_t pct(const int64_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i];
}

/* What the hot-key measurement found. */
struct hot_result {
    double handoffs_per_sec, p50, p99, max, wait_p50, wait_p99, longest; /* ms */
    double stall;                                                        /* ms */
    size_t samples;
    /* The longest wait, taken apart: the grants to others while it waited
     * (a first come, first served lock of 20 allows 19), and the longest
     * handoff among them (ms). */
    size_t longest_overtaken;
    double longest_worst_handoff;
};

/* A stall meter: sleeps 1 ms at a time until *stop, and keeps in *worst
 * the most it woke later than asked (ns) once *from (ns) is set and past.
 * One per CPU, pinned there (cpu), so that a stall of either vCPU shows. */
struct stall_meter {
    atomic_bool *stop;
    atomic_llong from;
    int64_t worst;
    int cpu;
};

#define STALL_METERS_MAX 8

static void *stall_main(void *p)
{
    struct stall_meter *m = p;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(m->cpu, &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set); /* best effort */
    while (!atomic_load(m->stop)) {
        int64_t t = tu_now_ns();
        tu_sleep_ms(1);
        int64_t late = tu_now_ns() - t - 1000000, from = atomic_load(&m->from);
        if (from != 0 && t >= from && late > m->worst)
            m->worst = late;
    }
    return NULL;
}

/* What the slices of one hot-key measurement gathered (hot_slice), and
 * what they add up to (hot_finish). */
struct hot_acc {
    int64_t *waits, *hand; /* ns */
    size_t nw, nh, capw, caph;
    int64_t measured_ns, stall;
    /* the longest wait of all slices, taken apart in its slice */
    int64_t longest;
    size_t longest_overtaken;
    int64_t longest_worst_handoff;
};

static void acc_push(int64_t **v, size_t *n, size_t *cap, int64_t x)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 4096;
        *v = realloc(*v, *cap * sizeof **v);
        if (*v == NULL)
            abort();
    }
    (*v)[(*n)++] = x;
}

/* One slice: runs HOT_CONTENDERS threads of fn for slice_s seconds after
 * a warm-up, orders their grants by fence (a handoff is the time from one
 * grant's release to the next grant, a wait the time from asking to the
 * grant) and adds what it measured to a. */
static void hot_slice(void *(*fn)(void *), double slice_s, struct hot_acc *a, int *errors)
{
    pthread_t th[HOT_CONTENDERS], meter[STALL_METERS_MAX];
    struct hot_arg h[HOT_CONTENDERS];
    atomic_bool stop = false;
    struct stall_meter sm[STALL_METERS_MAX];
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nm = ncpu < 1 ? 1 : ncpu > STALL_METERS_MAX ? STALL_METERS_MAX : (int)ncpu;
    size_t cap = (size_t)(slice_s * 200000) + 1000;
    for (int i = 0; i < HOT_CONTENDERS; i++) {
        h[i] = (struct hot_arg){.id = i, .stop = &stop, .cap = cap};
        h[i].grants = calloc(cap, sizeof(struct grant));
        pthread_create(&th[i], NULL, fn, &h[i]);
    }
    for (int i = 0; i < nm; i++) {
        sm[i] = (struct stall_meter){.stop = &stop, .from = 0, .worst = 0, .cpu = i};
        pthread_create(&meter[i], NULL, stall_main, &sm[i]);
    }
    tu_sleep_ms(300); /* everyone connected and queued: measure from here */
    int64_t t0 = tu_now_ns();
    for (int i = 0; i < nm; i++)
        atomic_store(&sm[i].from, t0);
    tu_sleep_ms((int64_t)(slice_s * 1000));
    atomic_store(&stop, true);
    int64_t t1 = tu_now_ns();
    for (int i = 0; i < nm; i++)
        pthread_join(meter[i], NULL);
    size_t total = 0;
    for (int i = 0; i < HOT_CONTENDERS; i++) {
        pthread_join(th[i], NULL);
        total += h[i].n;
        *errors += h[i].errors;
    }
    struct grant *all = calloc(total + 1, sizeof *all);
    size_t k = 0;
    for (int i = 0; i < HOT_CONTENDERS; i++) {
        memcpy(all + k, h[i].grants, h[i].n * sizeof *all);
        k += h[i].n;
        free(h[i].grants);
    }
    qsort(all, total, sizeof *all, cmp_grant);
    for (size_t i = 0; i < total; i++)
        if (all[i].asked_ns >= t0) /* not in the warm-up */
            acc_push(&a->waits, &a->nw, &a->capw, all[i].acquired_ns - all[i].asked_ns);
    /* Every grant of the key is recorded, so neighbours in fence order are
     * successive grants (fences strictly increase, by 1 or by the server's
     * clock: scripts.c). */
    for (size_t i = 1; i < total; i++)
        if (all[i - 1].released_ns >= t0 && all[i].fence > all[i - 1].fence &&
            all[i].acquired_ns >= all[i - 1].released_ns)
            acc_push(&a->hand, &a->nh, &a->caph, all[i].acquired_ns - all[i - 1].released_ns);
    /* The slice's longest wait: how many grants it saw go to others, and
     * the longest handoff between two of them (or into its own grant). */
    size_t lw = total, overtaken = 0;
    for (size_t i = 0; i < total; i++)
        if (all[i].asked_ns >= t0 && (lw == total || all[i].acquired_ns - all[i].asked_ns >
                                                         all[lw].acquired_ns - all[lw].asked_ns))
            lw = i;
    int64_t worst_hand = 0;
    for (size_t i = 0; lw < total && i < total; i++) {
        if (i != lw && all[i].acquired_ns > all[lw].asked_ns &&
            all[i].acquired_ns < all[lw].acquired_ns)
            overtaken++;
        if (i > 0 && all[i].acquired_ns > all[lw].asked_ns &&
            all[i].acquired_ns <= all[lw].acquired_ns &&
            all[i].acquired_ns - all[i - 1].released_ns > worst_hand)
            worst_hand = all[i].acquired_ns - all[i - 1].released_ns;
    }
    if (lw < total && all[lw].acquired_ns - all[lw].asked_ns > a->longest) {
        a->longest = all[lw].acquired_ns - all[lw].asked_ns;
        a->longest_overtaken = overtaken;
        a->longest_worst_handoff = worst_hand;
    }
    a->measured_ns += t1 - t0;
    for (int i = 0; i < nm; i++)
        if (sm[i].worst > a->stall)
            a->stall = sm[i].worst;
    free(all);
}

/* The figures of a's slices together (a's arrays freed). */
static void hot_finish(struct hot_acc *a, struct hot_result *out)
{
    qsort(a->waits, a->nw, sizeof *a->waits, cmp_i64);
    qsort(a->hand, a->nh, sizeof *a->hand, cmp_i64);
    *out = (struct hot_result){
        .handoffs_per_sec = a->measured_ns > 0 ? (double)a->nw / ((double)a->measured_ns / 1e9) : 0,
        .p50 = (double)pct(a->hand, a->nh, 0.50) / 1e6,
        .p99 = (double)pct(a->hand, a->nh, 0.99) / 1e6,
        .max = a->nh ? (double)a->hand[a->nh - 1] / 1e6 : 0,
        .wait_p50 = (double)pct(a->waits, a->nw, 0.50) / 1e6,
        .wait_p99 = (double)pct(a->waits, a->nw, 0.99) / 1e6,
        .longest = (double)a->longest / 1e6,
        .stall = (double)a->stall / 1e6,
        .samples = a->nh,
        .longest_overtaken = a->longest_overtaken,
        .longest_worst_handoff = (double)a->longest_worst_handoff / 1e6,
    };
    free(a->waits);
    free(a->hand);
}

static void print_hot(const char *name, const struct hot_result *r, const char *tail)
{
    printf(" \"%s\":{\"contenders\":%d,\"hold_ms\":0,\"handoffs_per_sec\":%.0f,"
           "\"handoff_ms\":{\"p50\":%.3f,\"p99\":%.3f,\"max\":%.3f,\"samples\":%zu},"
           "\"wait_ms\":{\"p50\":%.3f,\"p99\":%.3f,\"longest\":%.3f},"
           "\"longest_wait_overtaken_by\":%zu,\"longest_wait_worst_handoff_ms\":%.3f,"
           "\"machine_longest_stall_ms\":%.3f,\"bound_20_x_p99_ms\":%.3f%s},\n",
           name, HOT_CONTENDERS, r->handoffs_per_sec, r->p50, r->p99, r->max, r->samples,
           r->wait_p50, r->wait_p99, r->longest, r->longest_overtaken, r->longest_worst_handoff,
           r->stall, 20 * r->p99, tail);
}

int main(int argc, char **argv)
{
    url = getenv("BATON_TEST_URL");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0)
            seconds = 0.3;
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--url") == 0 && i + 1 < argc)
            url = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "usage: bench_lock [--url URL] [--seconds S] [--smoke] "
                            "[--only raw|lib|own|async|pipelined|floor|hot]\n");
            return 2;
        }
    }
    if (url == NULL || seconds <= 0 || seconds > 600) {
        fprintf(stderr, "bench_lock: need --url or BATON_TEST_URL, and 0 < seconds <= 600\n");
        return 2;
    }

    struct baton_client *c = NULL;
    if (baton_client_new(url, NULL, &c) != BATON_OK) {
        fprintf(stderr, "bench_lock: %s\n", baton_client_errstr(c));
        baton_client_free(c);
        return 1;
    }
    int errors = 0;
    double ceiling = 0, lib = 0, own = 0, async = 0, piped = 0;
    struct case_cost kc = {0}, kasync = {0};
    if (*only == '\0' || strcmp(only, "raw") == 0) {
        cost_start(&kc);
        ceiling = run_uncontended(raw_main, NULL, &errors);
        cost_end(&kc, ceiling);
    }
    if (*only == '\0' || strcmp(only, "lib") == 0) {
        cost_start(&kc);
        lib = run_uncontended(lib_main, c, &errors);
        cost_end(&kc, lib);
    }
    if (*only == '\0' || strcmp(only, "own") == 0) {
        cost_start(&kc);
        own = run_uncontended(lib_main, NULL, &errors);
        cost_end(&kc, own);
    }
    if (*only == '\0' || strcmp(only, "async") == 0) {
        cost_start(&kasync);
        async = run_async(c, &errors);
        cost_end(&kasync, async);
        kc = kasync;
    }
    if (*only == '\0' || strcmp(only, "pipelined") == 0) {
        cost_start(&kc);
        piped = run_pipelined(false, &errors);
        cost_end(&kc, piped);
    }
    if (strcmp(only, "floor") == 0) {
        cost_start(&kc);
        piped = run_pipelined(true, &errors);
        cost_end(&kc, piped);
    }
    baton_client_free(c);
    if (*only != '\0' && strcmp(only, "hot") != 0) {
        printf("{\"bench\":\"lock\",\"only\":\"%s\",\"seconds\":%.1f,\"cycles_per_sec\":%.0f,"
               "\"client_cpu_us_per_cycle\":%.3f,\"ctx_switches\":%lld,\"errors\":%d}\n",
               only, seconds, ceiling + lib + own + async + piped, kc.cpu_us_per_cycle,
               (long long)tu_ctx_switches(), errors);
        return errors == 0 ? 0 : 1;
    }

    /* The three take turns, a slice each, HOT_SLICES times: the machine's
     * stalls (several ms at random on this VM) then fall on all three
     * alike, not on whichever ran while one came. */
    struct hot_acc ahot = {0}, aideal = {0}, afifo = {0};
    int slices = seconds >= HOT_SLICES * 0.5 ? HOT_SLICES : 1;
    for (int i = 0; i < slices; i++) {
        hot_slice(hot_main, seconds / slices, &ahot, &errors);
        hot_slice(hot_raw_main, seconds / slices, &aideal, &errors);
        struct baton__conn *cn = tu_raw_open(url);
        const char *del[2] = {"DEL", "bench:hotfifo"}, *push[3] = {"RPUSH", "bench:hotfifo", "0"};
        if (cn == NULL || !tu_raw_cmd(cn, 2, del) || !tu_raw_cmd(cn, 3, push))
            errors++;
        tu_raw_close(cn);
        hot_slice(hot_fifo_main, seconds / slices, &afifo, &errors);
    }
    struct hot_result hot, ideal, fifo;
    hot_finish(&ahot, &hot);
    hot_finish(&aideal, &ideal);
    hot_finish(&afifo, &fifo);
    double ratio = ceiling > 0 ? lib / ceiling : 0;
    bool ok = errors == 0 && ratio >= 0.85 && hot.p99 <= 2.0 && hot.longest <= 20 * hot.p99;

    printf("{\"bench\":\"lock\",\"seconds\":%.1f,\n"
           " \"uncontended\":{\"threads\":%d,\"ceiling_raw_setnx_del_per_sec\":%.0f,"
           "\"baton_acquire_release_per_sec\":%.0f,\"ratio\":%.3f,\"target_ratio\":0.85,"
           "\"a_client_per_thread_per_sec\":%.0f,\"a_client_per_thread_ratio\":%.3f,"
           "\"async_50_in_flight_per_sec\":%.0f,\"pipelined_raw_limit_per_sec\":%.0f,"
           "\"async_over_pipelined_limit\":%.3f,\"async_client_cpu_us_per_cycle\":%.3f},\n",
           seconds, UNCONTENDED_THREADS, ceiling, lib, ratio, own, ceiling > 0 ? own / ceiling : 0,
           async, piped, piped > 0 ? async / piped : 0, kasync.cpu_us_per_cycle);
    print_hot("hot_key", &hot, ",\"target_p99_ms\":2.0");
    print_hot("hot_key_ideal_in_process_token", &ideal, "");
    print_hot("hot_key_redis_fifo_token", &fifo, "");
    printf(" \"errors\":%d,\"ok\":%s}\n", errors, ok ? "true" : "false");
    return errors == 0 ? 0 : 1;
}
