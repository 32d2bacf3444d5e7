/* fuzz_resp.c -- libFuzzer target: whatever a broken or hostile Redis
 * answers, libbaton and the history parser neither crash, hang nor leak.
 *
 * A fake server on a Unix socket (a thread of this process) reads each
 * command with hiredis's reader and answers it. The input is a list of
 * canned replies, entries separated by a NUL byte, each "NAME\n" followed by
 * raw RESP bytes: the first unused entry whose NAME is the command's name
 * (EVALSHA, INFO, XREVRANGE, ...; "*" matches any) is sent as is, so the
 * fuzzer controls every byte of the replies it wants to; a command with no
 * entry gets a plausible answer (a correct SHA for SCRIPT LOAD, a run id for
 * INFO, an error otherwise), so that later calls are reached. Then a fixed
 * sequence runs through the client: connect, a lock (try, extend, release),
 * a semaphore permit, a multi-lock, an election (campaign, renew, resign,
 * leader), baton_once, and XREVRANGE replies given to history_parse().
 * Every call is bounded by a 10 ms command timeout, so a reply that never
 * completes costs that and no more.
 *
 * Fuzzer state (the server thread, its socket) is process-wide: it lives
 * for the process like libFuzzer's own.
 */
#include <hiredis/hiredis.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "baton.h"
#include "baton_election.h"
#include "baton_redis.h"
#include "history.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ENTRIES 64

struct entry {
    char name[32];
    size_t off, len; /* in srv.buf */
    int used;
};

/* Connections of an earlier input may still be open for a moment: they get
 * default answers (their generation is not srv.gen), never this input's. */
static struct {
    pthread_mutex_t mu;
    uint8_t *buf; /* a copy of the input: libFuzzer frees its own */
    struct entry e[MAX_ENTRIES];
    int n;
    unsigned gen;
    int lfd;
    char path[108];
    /* The connections being served, each on the heap and listed here, so
     * that their readers are reachable from this global whatever state
     * their threads are in when LeakSanitizer looks; at exit every one is
     * shut down and waited for. A connection is made and listed by the
     * accepting thread before its own thread starts, and a finished one
     * goes to `done` (fd closed, reader freed), which the next input frees:
     * so none is ever held only by a thread's registers (a connection
     * struct, its reader and buffer showed as a leak in a 2-minute run when
     * the thread freed them itself). */
    struct conn *conns;
    struct conn *done;
    int nconns;
    pthread_cond_t gone;
} srv = {.mu = PTHREAD_MUTEX_INITIALIZER, .lfd = -1, .gone = PTHREAD_COND_INITIALIZER};

struct conn {
    int fd;
    redisReader *rd;
    struct conn *next, **prev;
};

static void conn_add(struct conn *cn)
{
    pthread_mutex_lock(&srv.mu);
    cn->next = srv.conns;
    cn->prev = &srv.conns;
    if (srv.conns != NULL)
        srv.conns->prev = &cn->next;
    srv.conns = cn;
    srv.nconns++;
    pthread_mutex_unlock(&srv.mu);
}

/* Takes cn out of the live list (before its fd is closed: stop_conns()
 * never shuts a reused number), closes it, frees its reader and keeps the
 * struct in srv.done for conns_reap(). */
static void conn_retire(struct conn *cn)
{
    pthread_mutex_lock(&srv.mu);
    *cn->prev = cn->next;
    if (cn->next != NULL)
        cn->next->prev = cn->prev;
    close(cn->fd);
    if (cn->rd != NULL)
        redisReaderFree(cn->rd);
    cn->rd = NULL;
    cn->next = srv.done;
    srv.done = cn;
    srv.nconns--;
    pthread_cond_broadcast(&srv.gone);
    pthread_mutex_unlock(&srv.mu);
}

/* Frees the retired connections. Call with srv.mu held. */
static void conns_reap(void)
{
    while (srv.done != NULL) {
        struct conn *cn = srv.done;
        srv.done = cn->next;
        free(cn);
    }
}

/* At exit: every connection shut down, and its thread gone (at most 2 s),
 * before LeakSanitizer looks. */
static void stop_conns(void)
{
    pthread_mutex_lock(&srv.mu);
    for (struct conn *cn = srv.conns; cn != NULL; cn = cn->next)
        shutdown(cn->fd, SHUT_RDWR);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 2;
    while (srv.nconns > 0 && pthread_cond_timedwait(&srv.gone, &srv.mu, &until) == 0)
        ;
    conns_reap();
    pthread_mutex_unlock(&srv.mu);
}

static void write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL); /* the client may be gone */
        if (w <= 0)
            return;
        p += w;
        len -= (size_t)w;
    }
}

static void send_default(int fd, const redisReply *cmd, const char *name)
{
    char buf[256];
    if (strcasecmp(name, "SCRIPT") == 0 && cmd->elements == 3) {
        unsigned char md[SHA_DIGEST_LENGTH];
        SHA1((const unsigned char *)cmd->element[2]->str, cmd->element[2]->len, md);
        int n = snprintf(buf, sizeof buf, "$40\r\n");
        for (int i = 0; i < SHA_DIGEST_LENGTH; i++)
            n += snprintf(buf + n, sizeof buf - (size_t)n, "%02x", md[i]);
        snprintf(buf + n, sizeof buf - (size_t)n, "\r\n");
    } else if (strcasecmp(name, "INFO") == 0) {
        const char *body = "# Server\r\nrun_id:0123456789abcdef0123456789abcdef01234567\r\n";
        snprintf(buf, sizeof buf, "$%zu\r\n%s\r\n", strlen(body), body);
    } else if (strcasecmp(name, "PING") == 0) {
        snprintf(buf, sizeof buf, "+PONG\r\n");
    } else {
        snprintf(buf, sizeof buf, "-ERR fuzz: no answer for %.40s\r\n", name);
    }
    write_all(fd, buf, strlen(buf));
}

/* Answers one command: the first unused entry for its name, else a default. */
static void answer(int fd, const redisReply *cmd, unsigned gen)
{
    char name[32] = "";
    if (cmd->type == REDIS_REPLY_ARRAY && cmd->elements > 0 &&
        cmd->element[0]->type == REDIS_REPLY_STRING)
        snprintf(name, sizeof name, "%.*s", (int)cmd->element[0]->len, cmd->element[0]->str);
    pthread_mutex_lock(&srv.mu);
    for (int i = 0; gen == srv.gen && i < srv.n; i++) {
        struct entry *e = &srv.e[i];
        if (e->used || (strcmp(e->name, "*") != 0 && strcasecmp(e->name, name) != 0))
            continue;
        e->used = 1;
        uint8_t *copy = malloc(e->len + 1);
        if (copy != NULL)
            memcpy(copy, srv.buf + e->off, e->len);
        size_t len = e->len;
        pthread_mutex_unlock(&srv.mu);
        if (copy != NULL)
            write_all(fd, copy, len);
        free(copy);
        return;
    }
    pthread_mutex_unlock(&srv.mu);
    send_default(fd, cmd, name);
}

static void *serve_conn(void *arg)
{
    struct conn *cn = arg;
    pthread_mutex_lock(&srv.mu);
    unsigned gen = srv.gen;
    pthread_mutex_unlock(&srv.mu);
    char buf[16384];
    ssize_t n;
    while (cn->rd != NULL && (n = read(cn->fd, buf, sizeof buf)) > 0) {
        if (redisReaderFeed(cn->rd, buf, (size_t)n) != REDIS_OK)
            break;
        void *r = NULL;
        while (redisReaderGetReply(cn->rd, &r) == REDIS_OK && r != NULL) {
            answer(cn->fd, r, gen);
            freeReplyObject(r);
            r = NULL;
        }
    }
    conn_retire(cn);
    return NULL;
}

static void *serve(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(srv.lfd, NULL, NULL);
        if (fd < 0)
            continue;
        struct conn *cn = calloc(1, sizeof *cn);
        if (cn == NULL) {
            close(fd);
            continue;
        }
        cn->fd = fd;
        cn->rd = redisReaderCreate();
        conn_add(cn);
        pthread_t t;
        if (pthread_create(&t, NULL, serve_conn, cn) != 0) {
            conn_retire(cn);
            continue;
        }
        pthread_detach(t);
    }
    return NULL;
}

static void start_server(void)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(srv.path, sizeof srv.path, "/tmp/baton-fuzz-resp.%d.sock", (int)getpid());
    unlink(srv.path);
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", srv.path);
    srv.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (srv.lfd < 0 || bind(srv.lfd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(srv.lfd, 64) != 0)
        abort(); /* a setup error, not a finding */
    pthread_t t;
    if (pthread_create(&t, NULL, serve, NULL) != 0)
        abort();
    pthread_detach(t);
    atexit(stop_conns);
}

/* Splits the input into entries: "NAME\n<bytes>", separated by NUL. */
static void load(const uint8_t *data, size_t size)
{
    pthread_mutex_lock(&srv.mu);
    conns_reap();
    srv.gen++;
    srv.n = 0;
    free(srv.buf);
    srv.buf = malloc(size + 1);
    if (srv.buf == NULL) {
        pthread_mutex_unlock(&srv.mu);
        return;
    }
    memcpy(srv.buf, data, size);
    size_t i = 0;
    while (i < size && srv.n < MAX_ENTRIES) {
        const uint8_t *end = memchr(data + i, '\0', size - i);
        size_t len = end != NULL ? (size_t)(end - (data + i)) : size - i;
        const uint8_t *nl = memchr(data + i, '\n', len);
        if (nl != NULL && (size_t)(nl - (data + i)) < sizeof srv.e[0].name) {
            struct entry *e = &srv.e[srv.n++];
            size_t nlen = (size_t)(nl - (data + i));
            memcpy(e->name, data + i, nlen);
            e->name[nlen] = '\0';
            e->off = (size_t)(nl + 1 - data);
            e->len = len - nlen - 1;
            e->used = 0;
        }
        i += len + 1;
    }
    pthread_mutex_unlock(&srv.mu);
}

static int work(struct baton_lock *lk, void *arg)
{
    (void)lk;
    (void)arg;
    return 0;
}

static void history_replies(struct baton_client *c)
{
    const char *argv[] = {"XREVRANGE", "baton:{g}:history:j", "+", "-", "COUNT", "10"};
    struct baton_reply *r = NULL;
    if (baton_client_command(c, 6, argv, NULL, &r) != BATON_OK)
        return;
    if (r->type == BATON_REPLY_ARRAY) {
        for (size_t i = 0; i < r->elements; i++) {
            struct history_rec rec;
            if (history_parse(r->element[i], &rec) && rec.run_id == NULL)
                abort(); /* a parsed record always has its strings */
        }
    }
    baton_reply_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (srv.lfd < 0)
        start_server();
    if (size > 65536)
        return 0;
    load(data, size);

    char url[160];
    snprintf(url, sizeof url, "unix://%s", srv.path);
    struct baton_client_opts co = {.connect_timeout_ms = 10, .command_timeout_ms = 10};
    struct baton_client *c = NULL;
    if (baton_client_new(url, &co, &c) != BATON_OK) {
        baton_client_free(c);
        return 0;
    }
    struct baton_lock_opts lo = {.ttl_ms = 1000, .max_wait_ms = BATON_NO_WAIT};
    struct baton_lock *lk = NULL;
    if (baton_lock_try(c, "f:k", &lo, &lk) == BATON_OK) {
        (void)baton_lock_fence(lk);
        (void)baton_lock_extend(lk, 0);
        (void)baton_lock_release(lk);
    }
    baton_lock_free(lk);

    struct baton_permit *p = NULL;
    if (baton_sem_try(c, "f:s", 2, NULL, &p) == BATON_OK)
        (void)baton_sem_release(p);
    baton_permit_free(p);
    int holders;
    (void)baton_sem_holders(c, "f:s", &holders);

    const char *keys[] = {"f:a", "f:b"};
    struct baton_multi *m = NULL;
    if (baton_multi_acquire(c, keys, 2, &lo, &m) == BATON_OK) {
        (void)baton_multi_extend(m, 0);
        (void)baton_multi_release(m);
    }
    baton_multi_free(m);

    struct baton_election *e = NULL;
    if (baton_election_new(c, "f-e", NULL, &e) == BATON_OK) {
        struct baton_leader_info info;
        if (baton_election_campaign(e, &info) == BATON_OK) {
            (void)baton_election_renew(e);
            (void)baton_election_resign(e);
        }
        (void)baton_election_leader(c, "f-e", &info);
    }
    baton_election_free(e);

    (void)baton_once(c, "f:once", 1000, work, NULL);
    history_replies(c);
    baton_client_free(c);
    return 0;
}
