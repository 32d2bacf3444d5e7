/* check_lib.c -- libbaton pieces that need no Redis: the error table, URL
 * parsing, SHA-1, jitter. (Library internals are tested through the
 * internal headers, loop_int.h and those below; the lock itself in
 * check_redis_lock.c.) */
#include <check.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "baton.h"
#include "loop_int.h"
#include "testutil.h"

/* Every row of the error table has a distinct code, a name and a message,
 * and codes outside the table are reported as unknown. */
START_TEST(error_table)
{
    static const struct {
        int code;
        const char *name;
    } rows[] = {
#define ROW(name, code, msg) {code, #name},
        BATON_ERRNO_MAP(ROW)
#undef ROW
    };
    size_t n = sizeof rows / sizeof rows[0];
    ck_assert_int_ge(n, 11);
    for (size_t i = 0; i < n; i++) {
        ck_assert_str_eq(baton_errname(rows[i].code), rows[i].name);
        ck_assert_str_ne(baton_strerror(rows[i].code), "unknown error");
        ck_assert_int_le(rows[i].code, 0);
        for (size_t j = i + 1; j < n; j++)
            ck_assert_int_ne(rows[i].code, rows[j].code);
    }
    ck_assert_str_eq(baton_errname(-999), "UNKNOWN");
    ck_assert_str_eq(baton_strerror(42), "unknown error");
    ck_assert_str_eq(baton_errname(BATON_ETAKEN), "ETAKEN");
    ck_assert_str_eq(baton_errname(BATON_EQUEUEFULL), "EQUEUEFULL");
}
END_TEST

static const struct {
    const char *url;
    int transport;
    const char *host_or_path;
    int port, db;
    const char *user, *pass, *redacted;
} good_urls[] = {
    {"redis://127.0.0.1:6379/0", BATON__TCP, "127.0.0.1", 6379, 0, NULL, NULL,
     "redis://127.0.0.1:6379/0"},
    {"redis://localhost", BATON__TCP, "localhost", 6379, 0, NULL, NULL, "redis://localhost:6379/0"},
    {"redis://h:7000/3", BATON__TCP, "h", 7000, 3, NULL, NULL, "redis://h:7000/3"},
    {"redis://:s3cret@h:1/0", BATON__TCP, "h", 1, 0, NULL, "s3cret", "redis://:***@h:1/0"},
    {"redis://s3cret@h", BATON__TCP, "h", 6379, 0, NULL, "s3cret", "redis://:***@h:6379/0"},
    {"redis://alice:p%40ss@h:6380/2", BATON__TCP, "h", 6380, 2, "alice", "p@ss",
     "redis://alice:***@h:6380/2"},
    {"redis://[::1]:6390/1", BATON__TCP, "::1", 6390, 1, NULL, NULL, "redis://[::1]:6390/1"},
    {"redis://u:p:q@h", BATON__TCP, "h", 6379, 0, "u", "p:q", "redis://u:***@h:6379/0"},
    {"redis://h/", BATON__TCP, "h", 6379, 0, NULL, NULL, "redis://h:6379/0"},
    {"unix:///run/redis.sock", BATON__UNIX, "/run/redis.sock", 0, 0, NULL, NULL,
     "unix:///run/redis.sock?db=0"},
    {"unix:///tmp/r.sock?db=4&user=bob&password=x%26y", BATON__UNIX, "/tmp/r.sock", 0, 4, "bob",
     "x&y", "unix:///tmp/r.sock?db=4&user=bob&password=***"},
    {"rediss://h:6380/1?ca=/etc/ca.pem&verify=none", BATON__TCP, "h", 6380, 1, NULL, NULL,
     "rediss://h:6380/1?ca=/etc/ca.pem&verify=none"},
    {"rediss://u:pw@h?cert=/c.pem&key=/k.pem&sni=redis.example&verify=peer", BATON__TCP, "h", 6379,
     0, "u", "pw", "rediss://u:***@h:6379/0?cert=/c.pem&key=/k.pem&sni=redis.example"},
    {"rediss://[::1]?capath=/etc/ssl/certs", BATON__TCP, "::1", 6379, 0, NULL, NULL,
     "rediss://[::1]:6379/0?capath=/etc/ssl/certs"},
};

/* Sentinel URLs: the sentinels, the group, both sets of credentials. */
static const struct {
    const char *url;
    bool tls;
    int n;
    const char *hosts[3];
    int ports[3];
    const char *master, *pass, *sentinel_user, *sentinel_pass, *redacted;
    int db;
} sentinel_urls[] = {
    {"redis-sentinel://s1:26379,s2,[::1]:26381/2?master=mymaster", false, 3, {"s1", "s2", "::1"},
     {26379, 26379, 26381}, "mymaster", NULL, NULL, NULL,
     "redis-sentinel://s1:26379,s2:26379,[::1]:26381/2?master=mymaster", 2},
    {"redis-sentinel://:data%21@s1?master=m&sentinel_user=mon&sentinel_password=sent", false, 1,
     {"s1"}, {26379}, "m", "data!", "mon", "sent",
     "redis-sentinel://:***@s1:26379/0?master=m&sentinel_user=mon&sentinel_password=***", 0},
    {"rediss-sentinel://a:1,b:2?master=g&ca=/ca.pem", true, 2, {"a", "b"}, {1, 2}, "g", NULL, NULL,
     NULL, "rediss-sentinel://a:1,b:2/0?master=g&ca=/ca.pem", 0},
};

START_TEST(url_sentinel)
{
    char err[256];
    struct baton__url u;
    for (size_t i = 0; i < sizeof sentinel_urls / sizeof sentinel_urls[0]; i++) {
        ck_assert_msg(baton__url_parse(sentinel_urls[i].url, &u, err, sizeof err) == BATON_OK,
                      "%s: %s", sentinel_urls[i].url, err);
        ck_assert(u.tls == sentinel_urls[i].tls);
        ck_assert_ptr_null(u.host);
        ck_assert_int_eq(u.nsentinels, sentinel_urls[i].n);
        for (int k = 0; k < u.nsentinels; k++) {
            ck_assert_str_eq(u.sentinels[k].host, sentinel_urls[i].hosts[k]);
            ck_assert_int_eq(u.sentinels[k].port, sentinel_urls[i].ports[k]);
        }
        ck_assert_str_eq(u.master, sentinel_urls[i].master);
        ck_assert_pstr_eq(u.pass, sentinel_urls[i].pass);
        ck_assert_pstr_eq(u.sentinel_user, sentinel_urls[i].sentinel_user);
        ck_assert_pstr_eq(u.sentinel_pass, sentinel_urls[i].sentinel_pass);
        ck_assert_int_eq(u.db, sentinel_urls[i].db);
        ck_assert_str_eq(u.redacted, sentinel_urls[i].redacted);
        baton__url_clear(&u);
    }
}
END_TEST

/* Cluster URLs: the seed nodes, credentials, TLS; no Sentinel, no host. */
static const struct {
    const char *url;
    bool tls;
    int n;
    const char *hosts[3];
    int ports[3];
    const char *user, *pass, *redacted;
} cluster_urls[] = {
    {"redis-cluster://h1:7000,h2,[::1]:7002", false, 3, {"h1", "h2", "::1"}, {7000, 6379, 7002},
     NULL, NULL, "redis-cluster://h1:7000,h2:6379,[::1]:7002/0"},
    {"redis-cluster://app:s%21@h1:7000/0", false, 1, {"h1"}, {7000}, "app", "s!",
     "redis-cluster://app:***@h1:7000/0"},
    {"rediss-cluster://a:1,b:2?ca=/ca.pem&sni=redis.internal", true, 2, {"a", "b"}, {1, 2}, NULL,
     NULL, "rediss-cluster://a:1,b:2/0?ca=/ca.pem&sni=redis.internal"},
};

/* Quorum URLs: the masters, the quorum's parameters, TLS; db kept. */
START_TEST(url_quorum)
{
    static const struct {
        const char *url;
        bool tls;
        int n, db, max_ttl, node_timeout;
        const char *redacted;
    } urls[] = {
        {"redis-quorum://a:1,b:2,c", false, 3, 0, 0, 0, "redis-quorum://a:1,b:2,c:6379/0"},
        {"redis-quorum://:pw@a,b,c,d,e/2?max_ttl=5000&node_timeout=40", false, 5, 2, 5000, 40,
         "redis-quorum://:***@a:6379,b:6379,c:6379,d:6379,e:6379/2?max_ttl=5000&node_timeout=40"},
        {"rediss-quorum://a,b,c?ca=/ca.pem&max_ttl=100", true, 3, 0, 100, 0,
         "rediss-quorum://a:6379,b:6379,c:6379/0?max_ttl=100&ca=/ca.pem"},
    };
    char err[256];
    struct baton__url u;
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        ck_assert_msg(baton__url_parse(urls[i].url, &u, err, sizeof err) == BATON_OK, "%s: %s",
                      urls[i].url, err);
        ck_assert(u.quorum && !u.cluster);
        ck_assert(u.tls == urls[i].tls);
        ck_assert_ptr_null(u.host);
        ck_assert_int_eq(u.nseeds, urls[i].n);
        ck_assert_int_eq(u.db, urls[i].db);
        ck_assert_int_eq(u.max_ttl_ms, urls[i].max_ttl);
        ck_assert_int_eq(u.node_timeout_ms, urls[i].node_timeout);
        ck_assert_str_eq(u.redacted, urls[i].redacted);
        baton__url_clear(&u);
    }
}
END_TEST

START_TEST(url_cluster)
{
    char err[256];
    struct baton__url u;
    for (size_t i = 0; i < sizeof cluster_urls / sizeof cluster_urls[0]; i++) {
        ck_assert_msg(baton__url_parse(cluster_urls[i].url, &u, err, sizeof err) == BATON_OK,
                      "%s: %s", cluster_urls[i].url, err);
        ck_assert(u.cluster);
        ck_assert(u.tls == cluster_urls[i].tls);
        ck_assert_ptr_null(u.host);
        ck_assert_ptr_null(u.master);
        ck_assert_int_eq(u.nseeds, cluster_urls[i].n);
        for (int k = 0; k < u.nseeds; k++) {
            ck_assert_str_eq(u.seeds[k].host, cluster_urls[i].hosts[k]);
            ck_assert_int_eq(u.seeds[k].port, cluster_urls[i].ports[k]);
        }
        ck_assert_pstr_eq(u.user, cluster_urls[i].user);
        ck_assert_pstr_eq(u.pass, cluster_urls[i].pass);
        ck_assert_int_eq(u.db, 0);
        ck_assert_str_eq(u.redacted, cluster_urls[i].redacted);
        baton__url_clear(&u);
    }
}
END_TEST

/* CRC-16/XMODEM by its definition, a bit at a time: the reference that
 * cluster.c's byte table is held to. */
static uint16_t crc16_bitwise(const unsigned char *p, size_t n)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

/* The key slot computed with the table is the definition's: the check
 * value of CRC-16/XMODEM, every byte value alone and in all positions,
 * keys of every length up to 64 (no '{': the whole key is hashed). */
START_TEST(crc16_table_matches_bitwise)
{
    ck_assert_uint_eq(baton__key_slot("123456789", 9), 0x31c3 & 16383);
    unsigned char key[64];
    for (int b = 0; b < 256; b++) {
        key[0] = (unsigned char)(b == '{' ? 0 : b);
        ck_assert_uint_eq(baton__key_slot((const char *)key, 1), crc16_bitwise(key, 1) & 16383);
    }
    uint32_t x = 2463534242u; /* xorshift32: the same keys every run */
    for (size_t len = 0; len <= sizeof key; len++) {
        for (int round = 0; round < 50; round++) {
            for (size_t i = 0; i < len; i++) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                key[i] = (unsigned char)(x & 0xff) == '{' ? 'x' : (unsigned char)(x & 0xff);
            }
            ck_assert_uint_eq(baton__key_slot((const char *)key, len),
                              crc16_bitwise(key, len) & 16383);
        }
    }
}
END_TEST

/* The slot of a command's key: its first key (EVAL: the first of KEYS),
 * none for commands without one. */
START_TEST(cluster_command_slots)
{
    static const struct {
        int argc;
        const char *argv[6];
        const char *key; /* NULL: no key */
    } cmds[] = {
        {2, {"GET", "baton:{g}:last:j"}, "baton:{g}:last:j"},
        {3, {"mget", "baton:{g}:last:a", "baton:{g}:last:b"}, "baton:{g}:last:a"},
        {6, {"XREVRANGE", "baton:{g}:runs:j", "+", "-", "COUNT", "5"}, "baton:{g}:runs:j"},
        {5, {"EVALSHA", "abc", "2", "k1", "k2"}, "k1"},
        {4, {"EVAL", "return 1", "0", "x"}, NULL},
        {5, {"XREAD", "COUNT", "1", "STREAMS", "s1"}, "s1"},
        {3, {"PUBLISH", "chan", "msg"}, NULL},
        {1, {"PING"}, NULL},
        {2, {"info", "replication"}, NULL},
        {3, {"OBJECT", "ENCODING", "k"}, "k"},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        size_t lens[6];
        for (int a = 0; a < cmds[i].argc; a++)
            lens[a] = strlen(cmds[i].argv[a]);
        int want = cmds[i].key != NULL ? (int)baton__key_slot(cmds[i].key, strlen(cmds[i].key))
                                       : -1;
        ck_assert_msg(baton__cluster_command_slot(cmds[i].argc, cmds[i].argv, lens) == want,
                      "%s: slot %d, want %d", cmds[i].argv[0],
                      baton__cluster_command_slot(cmds[i].argc, cmds[i].argv, lens), want);
    }
}
END_TEST

START_TEST(url_good)
{
    char err[256];
    struct baton__url u;
    for (size_t i = 0; i < sizeof good_urls / sizeof good_urls[0]; i++) {
        ck_assert_msg(baton__url_parse(good_urls[i].url, &u, err, sizeof err) == BATON_OK, "%s: %s",
                      good_urls[i].url, err);
        ck_assert_int_eq(u.transport, good_urls[i].transport);
        ck_assert_str_eq(u.transport == BATON__TCP ? u.host : u.path, good_urls[i].host_or_path);
        if (u.transport == BATON__TCP)
            ck_assert_int_eq(u.port, good_urls[i].port);
        ck_assert_int_eq(u.db, good_urls[i].db);
        ck_assert_pstr_eq(u.user, good_urls[i].user);
        ck_assert_pstr_eq(u.pass, good_urls[i].pass);
        ck_assert_str_eq(u.redacted, good_urls[i].redacted);
        baton__url_clear(&u);
    }
}
END_TEST

static const struct {
    const char *url, *message;
} bad_urls[] = {
    {"", "invalid URL: empty"},
    {"http://h", "invalid URL: unsupported scheme \"http://\" (use redis://, rediss://, unix://, "
                 "redis-sentinel://, rediss-sentinel://, redis-cluster://, rediss-cluster://, "
                 "redis-quorum:// or rediss-quorum://)"},
    {"h:6379", "invalid URL: expected a URL like redis://host:6379/0 or unix:///run/redis/redis.sock"},
    {"redis://", "invalid URL: missing host (redis://host:6379/0)"},
    {"redis://:pw@", "invalid URL: missing host (redis://host:6379/0)"},
    {"redis://h:0", "invalid URL: invalid port (1..65535)"},
    {"redis://h:65536", "invalid URL: invalid port (1..65535)"},
    {"redis://h:x", "invalid URL: invalid port (1..65535)"},
    {"redis://h/x", "invalid URL: invalid database number after the host (redis://host:6379/0)"},
    {"redis-quorum://a,b", "invalid URL: a quorum has an odd number of masters, 3 to 9 (this one "
                           "names 2): redis-quorum://h1:6379,h2:6380,h3:6381"},
    {"redis-quorum://a,b,c,d,e,f,g,h,i,j,k", "invalid URL: at most 9 quorum masters"},
    {"redis-quorum://a,b:6379,a:6379", "invalid URL: a quorum names each master once (a:6379 "
                                       "twice)"},
    {"redis-quorum://a,b,c?max_ttl=5", "invalid URL: max_ttl= is the longest lock ttl in ms, "
                                       "10..86400000"},
    {"redis-quorum://a,b,c?node_timeout=0", "invalid URL: node_timeout= is each master's time to "
                                            "answer in ms, 1..60000"},
    {"redis-quorum://a,b,c?ca=/x", "invalid URL: unknown URL parameter \"ca\" (use max_ttl=, "
                                   "node_timeout=)"},
    {"redis-cluster://a?max_ttl=10", "invalid URL: redis-cluster:// URLs take no query (TLS "
                                     "parameters need rediss-cluster://)"},
    {"redis://h/1?a=b", "invalid URL: redis:// URLs take no query (use /DB for the database; TLS "
                        "parameters need rediss://)"},
    {"redis://h?ca=/x", "invalid URL: redis:// URLs take no query (use /DB for the database; TLS "
                        "parameters need rediss://)"},
    {"redis://h#x", "invalid URL: a URL of Redis has no #fragment"},
    {"rediss://h?verify=maybe", "invalid URL: verify= takes peer or none"},
    {"rediss://h?cert=/c.pem", "invalid URL: a client certificate needs both cert= and key="},
    {"rediss://h?ca=", "invalid URL: ca= is empty"},
    {"rediss://h?master=m", "invalid URL: unknown URL parameter \"master\" (use ca=, capath=, cert=, "
                            "key=, sni=, verify=)"},
    {"redis-sentinel://s1,s2", "invalid URL: a sentinel URL names its master group: "
                               "redis-sentinel://h1:26379,h2:26379/0?master=NAME"},
    {"redis-sentinel://s1,,s2?master=m", "invalid URL: missing host (redis://host:6379/0)"},
    {"redis-sentinel://s1:0?master=m", "invalid URL: invalid port (1..65535)"},
    {"redis-sentinel://s1?master=m&ca=/x", "invalid URL: unknown URL parameter \"ca\" (use master=, "
                                           "sentinel_user=, sentinel_password=)"},
    {"rediss-sentinel://s1?master=m&db=2", "invalid URL: unknown URL parameter \"db\" (use ca=, "
                                           "capath=, cert=, key=, sni=, verify=, master=, "
                                           "sentinel_user=, sentinel_password=)"},
    {"redis-cluster://h1:7000,h2:7001/3",
     "invalid URL: Redis Cluster has only database 0 (redis-cluster://h1:7000,h2:7001 or .../0)"},
    {"redis-cluster://h1?master=m", "invalid URL: redis-cluster:// URLs take no query (TLS "
                                    "parameters need rediss-cluster://)"},
    {"rediss-cluster://h1?master=m", "invalid URL: unknown URL parameter \"master\" (use ca=, "
                                     "capath=, cert=, key=, sni=, verify=)"},
    {"redis-cluster://h1,,h2", "invalid URL: missing host (redis://host:6379/0)"},
    {"redis-cluster://1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
     "invalid URL: at most 16 seed nodes"},
    {"redis://[::1", "invalid URL: invalid IPv6 address (write redis://[::1]:6379)"},
    {"redis://u:p%zz@h", "invalid URL: bad percent-escape in the user or password"},
    {"unix://relative.sock",
     "invalid URL: the socket path must be absolute (unix:///run/redis/redis.sock)"},
    {"unix:///s?bogus=1", "invalid URL: unknown URL parameter \"bogus\" (use db=, user=, password=)"},
    {"unix:///s?db=x", "invalid URL: invalid database number in ?db="},
    /* A repeated parameter is refused, not silently the last one. */
    {"rediss://h?ca=/ca.pem&verify=peer&verify=none",
     "invalid URL: verify= is given twice (give each parameter once)"},
    {"rediss://h?verify=none&ca=/a.pem&verify=none",
     "invalid URL: verify= is given twice (give each parameter once)"},
    {"rediss://h?ca=/a.pem&ca=/b.pem", "invalid URL: ca= is given twice (give each parameter once)"},
    {"unix:///s?db=1&db=2", "invalid URL: db= is given twice (give each parameter once)"},
    {"unix:///s?password=a&password=b",
     "invalid URL: password= is given twice (give each parameter once)"},
    {"redis-sentinel://s1?master=a&master=b",
     "invalid URL: master= is given twice (give each parameter once)"},
    {"redis-quorum://a,b,c?max_ttl=100&max_ttl=200",
     "invalid URL: max_ttl= is given twice (give each parameter once)"},
};

START_TEST(url_bad)
{
    char err[256];
    struct baton__url u;
    for (size_t i = 0; i < sizeof bad_urls / sizeof bad_urls[0]; i++) {
        err[0] = '\0';
        ck_assert_int_eq(baton__url_parse(bad_urls[i].url, &u, err, sizeof err), BATON_EINVAL);
        ck_assert_str_eq(err, bad_urls[i].message);
        ck_assert_ptr_null(u.host);
    }
}
END_TEST

/* A password never appears in a message. */
START_TEST(url_errors_hide_password)
{
    char err[256];
    struct baton__url u;
    ck_assert_int_eq(baton__url_parse("redis://u:hunter2@h:99999", &u, err, sizeof err),
                     BATON_EINVAL);
    ck_assert_ptr_null(strstr(err, "hunter2"));
    ck_assert_int_eq(baton__url_parse("redis://u:hunter2@h:1/0", &u, err, sizeof err), BATON_OK);
    ck_assert_ptr_null(strstr(u.redacted, "hunter2"));
    baton__url_clear(&u);
    static const char *const secret_urls[] = {
        "rediss://u:hunter2@h?ca=/x.pem",
        "redis-sentinel://:hunter2@s1,s2?master=m&sentinel_password=hunter3",
        "rediss-sentinel://u:hunter2@s1?master=m&sentinel_user=v&sentinel_password=hunter3",
        "unix:///s?password=hunter2",
        "rediss://u:hunter2@h?verify=bogus",
        "redis-sentinel://:hunter2@s1?sentinel_password=hunter3",
        "redis-cluster://u:hunter2@h1,h2",
        "rediss-cluster://:hunter2@h1:7000?verify=bogus",
    };
    for (size_t i = 0; i < sizeof secret_urls / sizeof secret_urls[0]; i++) {
        char red[256] = "", msg[256] = "";
        (void)baton_url_check(secret_urls[i], red, sizeof red, msg, sizeof msg);
        ck_assert_msg(strstr(red, "hunter") == NULL && strstr(msg, "hunter") == NULL, "%s: %s%s",
                      secret_urls[i], red, msg);
    }
}
END_TEST

/* Commands are formatted by baton__resp_format and
 * baton__conn_append_cmd: byte for byte what hiredis's
 * redisFormatCommandArgv makes, for empty, binary and long arguments, with
 * the prefix room left untouched (or the prefix given in front). */
START_TEST(resp_format_matches_hiredis)
{
    static char big[100000];
    memset(big, 'x', sizeof big);
    const char *a0[] = {"PING"};
    const char *a1[] = {"SET", "k", "", "NX"};
    const char *a2[] = {"EVALSHA", "0123456789012345678901234567890123456789", "1", "k\r\n\0b",
                        "9"};
    const char *a3[] = {"SET", "big", big};
    struct {
        int argc;
        const char **argv;
        size_t lens[8];
    } cmds[] = {
        {1, a0, {4}},
        {4, a1, {3, 1, 0, 2}},
        {5, a2, {7, 40, 1, 6, 1}},
        {3, a3, {3, 3, sizeof big}},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char *want = NULL, *got = NULL;
        size_t len = 0;
        int n = redisFormatCommandArgv(&want, cmds[i].argc, cmds[i].argv, cmds[i].lens);
        ck_assert_int_gt(n, 0);
        ck_assert_int_eq(baton__resp_format(&got, 3, cmds[i].argc,
                                            (const char *const *)cmds[i].argv, cmds[i].lens, &len),
                         BATON_OK);
        ck_assert_uint_eq(len, (size_t)n + 3);
        ck_assert_msg(memcmp(got + 3, want, (size_t)n) == 0, "command %zu differs", i);
        redisFreeCommand(want);
        free(got);
    }
    /* The same bytes formatted straight into a connection's output (the
     * loop's path), one command after another, odd ones behind a prefix
     * (ASKING's place), the output growing from empty. */
    struct baton__conn *cn = calloc(1, sizeof *cn);
    char *expect = NULL;
    size_t elen = 0;
    ck_assert_ptr_nonnull(cn);
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
            const char *pre = i % 2 ? "*1\r\n$6\r\nASKING\r\n" : NULL;
            size_t plen = pre != NULL ? strlen(pre) : 0;
            char *want = NULL;
            int n = redisFormatCommandArgv(&want, cmds[i].argc, cmds[i].argv, cmds[i].lens);
            ck_assert_int_gt(n, 0);
            expect = realloc(expect, elen + plen + (size_t)n);
            ck_assert_ptr_nonnull(expect);
            memcpy(expect + elen, pre != NULL ? pre : "", plen);
            memcpy(expect + elen + plen, want, (size_t)n);
            elen += plen + (size_t)n;
            redisFreeCommand(want);
            ck_assert_int_eq(baton__conn_append_cmd(cn, pre, plen, cmds[i].argc,
                                                    (const char *const *)cmds[i].argv,
                                                    cmds[i].lens),
                             BATON_OK);
            ck_assert_uint_eq(cn->olen, elen);
            ck_assert_msg(memcmp(cn->obuf, expect, elen) == 0, "output differs after %zu", i);
        }
    }
    free(expect);
    free(cn->obuf);
    free(cn);
}
END_TEST

START_TEST(sha1_vectors)
{
    static const struct {
        const char *in, *hex;
    } v[] = {
        {"", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
        {"abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
        {"return 1", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"}, /* SCRIPT LOAD "return 1" */
    };
    char out[41];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        baton__sha1_hex(v[i].in, strlen(v[i].in), out);
        ck_assert_str_eq(out, v[i].hex);
    }
    /* A million 'a's crosses many blocks. */
    char *big = malloc(1000000);
    memset(big, 'a', 1000000);
    baton__sha1_hex(big, 1000000, out);
    ck_assert_str_eq(out, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    free(big);
}
END_TEST

START_TEST(decimal_strings)
{
    char b[BATON__I64_LEN];
    ck_assert_str_eq(baton__i64_str(0, b), "0");
    ck_assert_str_eq(baton__i64_str(7, b), "7");
    ck_assert_str_eq(baton__i64_str(-1, b), "-1");
    ck_assert_str_eq(baton__i64_str(30000, b), "30000");
    ck_assert_str_eq(baton__i64_str(INT64_MAX, b), "9223372036854775807");
    ck_assert_str_eq(baton__i64_str(INT64_MIN, b), "-9223372036854775808");
}
END_TEST

START_TEST(jitter_bounds)
{
    uint64_t st = 12345;
    int64_t lo = 1000, hi = 0;
    for (int i = 0; i < 100000; i++) {
        int64_t j = baton__jitter(200, &st);
        lo = j < lo ? j : lo;
        hi = j > hi ? j : hi;
    }
    ck_assert_int_eq(lo, 150);
    ck_assert_int_eq(hi, 250);
}
END_TEST

/* Client creation reports bad URLs and unreachable servers precisely. */
/* The loop's helper thread: a job still on its list is refused a second
 * time (it would cut off the jobs queued behind it: the hang of a cluster
 * client after a failover), and every job queued runs once. */
struct tjob {
    struct baton__job job;
    struct baton__task done;
    struct baton__loop *l;
    sem_t *gate; /* the first job holds the helper until it is posted */
    _Atomic int runs;
};

static void tjob_done(struct baton__task *t)
{
    struct tjob *j = BATON__OWNER(t, struct tjob, done);
    baton__loop_offload_done(j->l);
}

static void tjob_run(struct baton__job *job)
{
    struct tjob *j = BATON__OWNER(job, struct tjob, job);
    if (j->gate != NULL)
        sem_wait(j->gate);
    atomic_fetch_add(&j->runs, 1);
    j->done.run = tjob_done;
    (void)baton__loop_post(j->l, &j->done);
}

struct toffload {
    struct baton__task task;
    struct tjob *j;
    int rc;
    sem_t ran;
};

/* On the loop thread, as the library's own callers do. */
static void toffload_run(struct baton__task *t)
{
    struct toffload *o = BATON__OWNER(t, struct toffload, task);
    o->rc = baton__loop_offload(o->j->l, &o->j->job);
    sem_post(&o->ran);
}

START_TEST(helper_job_queued_once)
{
    struct baton_client *c = NULL;
    struct baton_client_opts co = {.lazy = true};
    ck_assert_int_eq(baton_client_new("redis://127.0.0.1:1/0", &co, &c), BATON_OK);
    struct baton__loop *l = baton__loop_of(c);
    ck_assert_ptr_nonnull(l);
    sem_t gate;
    sem_init(&gate, 0, 0);
    struct tjob j[3] = {[0].gate = &gate};
    for (int i = 0; i < 3; i++) {
        j[i].l = l;
        j[i].job.run = tjob_run;
    }
    /* j0 holds the helper; j1 is queued, again (refused), then j2. */
    struct toffload o = {.task.run = toffload_run};
    sem_init(&o.ran, 0, 0);
    struct tjob *order[4] = {&j[0], &j[1], &j[1], &j[2]};
    for (int i = 0; i < 4; i++) {
        o.j = order[i];
        ck_assert(baton__loop_post(l, &o.task));
        sem_wait(&o.ran);
        ck_assert_int_eq(o.rc, i == 2 ? BATON_EINVAL : BATON_OK);
    }
    sem_post(&gate);
    int64_t until = tu_now_ns() + INT64_C(5000000000);
    while ((atomic_load(&j[1].runs) < 1 || atomic_load(&j[2].runs) < 1) && tu_now_ns() < until)
        tu_sleep_ms(1);
    tu_sleep_ms(20);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(atomic_load(&j[i].runs), 1);
    baton_client_free(c); /* waits for the jobs' results: none is left out */
    sem_destroy(&gate);
    sem_destroy(&o.ran);
}
END_TEST

/* baton__loop_calloc/cfree: on the loop thread a block given back is
 * the next one of its size, zeroed; another size, or another thread, gets
 * calloc()'s; blocks given back beyond the few kept are freed, and the
 * client's free frees the kept ones (the ASan build's leak check). */
struct tspare {
    struct baton__task task;
    struct baton__loop *l;
    bool reused, zeroed, other_size_fresh;
    sem_t ran;
};

static void tspare_run(struct baton__task *t)
{
    struct tspare *s = BATON__OWNER(t, struct tspare, task);
    enum { SIZE = 2000, MANY = 40 };
    unsigned char *a = baton__loop_calloc(s->l, SIZE);
    if (a == NULL) { /* (asserted on the test's thread: all false) */
        sem_post(&s->ran);
        return;
    }
    memset(a, 0xab, SIZE);
    baton__loop_cfree(s->l, a, SIZE);
    unsigned char *b = baton__loop_calloc(s->l, SIZE);
    s->reused = b == a;
    s->zeroed = true;
    for (int i = 0; i < SIZE; i++)
        s->zeroed = s->zeroed && b[i] == 0;
    unsigned char *o = baton__loop_calloc(s->l, SIZE / 2); /* none kept of this size */
    s->other_size_fresh = o != NULL;
    baton__loop_cfree(s->l, o, SIZE / 2); /* not kept: freed */
    baton__loop_cfree(s->l, b, SIZE);
    /* Many given back at once: some kept, the rest freed (no leak). */
    void *p[MANY];
    for (int i = 0; i < MANY; i++)
        p[i] = baton__loop_calloc(s->l, SIZE);
    for (int i = 0; i < MANY; i++)
        baton__loop_cfree(s->l, p[i], SIZE);
    sem_post(&s->ran);
}

START_TEST(loop_spare_blocks)
{
    struct baton_client *c = NULL;
    struct baton_client_opts co = {.lazy = true};
    ck_assert_int_eq(baton_client_new("redis://127.0.0.1:1/0", &co, &c), BATON_OK);
    struct baton__loop *l = baton__loop_of(c);
    ck_assert_ptr_nonnull(l);
    struct tspare s = {.task.run = tspare_run, .l = l};
    sem_init(&s.ran, 0, 0);
    ck_assert(baton__loop_post(l, &s.task));
    sem_wait(&s.ran);
    ck_assert(s.reused);
    ck_assert(s.zeroed);
    ck_assert(s.other_size_fresh);
    /* Off the loop thread: calloc() and free(), never the loop's list. */
    unsigned char *x = baton__loop_calloc(l, 2000);
    ck_assert_ptr_nonnull(x);
    for (int i = 0; i < 2000; i++)
        ck_assert_uint_eq(x[i], 0);
    baton__loop_cfree(l, x, 2000);
    baton__loop_cfree(NULL, baton__loop_calloc(NULL, 64), 64);
    baton_client_free(c);
    sem_destroy(&s.ran);
}
END_TEST

START_TEST(client_errors)
{
    struct baton_client *c = NULL;
    ck_assert_int_eq(baton_client_new("nope://x", NULL, &c), BATON_EINVAL);
    ck_assert_str_eq(baton_client_errstr(c),
                     "invalid URL: unsupported scheme \"nope://\" (use redis://, rediss://, "
                     "unix://, redis-sentinel://, rediss-sentinel://, redis-cluster://, "
                     "rediss-cluster://, redis-quorum:// or rediss-quorum://)");
    baton_client_free(c);
    ck_assert_int_eq(baton_client_new("unix:///nonexistent/baton.sock", NULL, &c), BATON_EIO);
    ck_assert_str_eq(
        baton_client_errstr(c),
        "unix:///nonexistent/baton.sock?db=0: cannot connect: No such file or directory");
    baton_client_free(c);
    struct baton_client_opts o = {.key_prefix = "a{b"};
    ck_assert_int_eq(baton_client_new("redis://127.0.0.1:1/0", &o, &c), BATON_EINVAL);
    baton_client_free(c);
    /* TLS files are read when the client is made, and named when they fail. */
    ck_assert_int_eq(baton_client_new("rediss://127.0.0.1:1/0?ca=/nonexistent/ca.pem", NULL, &c),
                     BATON_EINVAL);
    ck_assert_str_eq(baton_client_errstr(c),
                     "rediss://127.0.0.1:1/0?ca=/nonexistent/ca.pem: cannot read the CA file "
                     "/nonexistent/ca.pem: No such file or directory");
    baton_client_free(c);
    ck_assert_int_eq(baton_client_new("rediss://127.0.0.1:1/0?cert=/no/c.pem&key=/no/k.pem", NULL,
                                      &c),
                     BATON_EINVAL);
    ck_assert_str_eq(baton_client_errstr(c),
                     "rediss://127.0.0.1:1/0?cert=/no/c.pem&key=/no/k.pem: cannot read the client "
                     "certificate /no/c.pem: No such file or directory");
    baton_client_free(c);
    struct baton_client_opts mr = {.min_replicas = 17};
    ck_assert_int_eq(baton_client_new("redis://127.0.0.1:1/0", &mr, &c), BATON_EINVAL);
    ck_assert_str_eq(baton_client_errstr(c), "min_replicas must be 0..16");
    baton_client_free(c);
    /* verify=none is visible to the caller, which warns. */
    struct baton_client_opts lazy = {.lazy = true};
    ck_assert_int_eq(baton_client_new("rediss://127.0.0.1:1/0?verify=none", &lazy, &c), BATON_OK);
    ck_assert(baton_client_tls_insecure(c));
    baton_client_free(c);
    ck_assert_int_eq(baton_client_new("rediss://127.0.0.1:1/0", &lazy, &c), BATON_OK);
    ck_assert(!baton_client_tls_insecure(c));
    baton_client_free(c);
    /* A sentinel that nobody runs: every sentinel's answer is in the message. */
    struct baton_client_opts quick = {.connect_timeout_ms = 300, .command_timeout_ms = 300};
    int dead1 = tu_dead_port(), dead2 = tu_dead_port();
    char url[160], want[400];
    snprintf(url, sizeof url, "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d/0?master=m", dead1,
             dead2);
    ck_assert_int_eq(baton_client_new(url, &quick, &c), BATON_EIO);
    snprintf(want, sizeof want,
             "%s: no master for m: sentinels 127.0.0.1:%d, 127.0.0.1:%d: cannot connect: "
             "Connection refused",
             url, dead1, dead2);
    ck_assert_str_eq(baton_client_errstr(c), want);
    baton_client_free(c);

    /* A quorum: min_replicas does not apply; no majority reachable */
    struct baton_client_opts durable = {.lazy = true, .min_replicas = 1};
    ck_assert_int_eq(baton_client_new("redis-quorum://a,b,c", &durable, &c), BATON_EINVAL);
    ck_assert_str_eq(baton_client_errstr(c),
                     "min_replicas does not apply to a Redlock quorum (its masters are the "
                     "redundancy): leave it 0");
    baton_client_free(c);
    int dead3 = tu_dead_port();
    snprintf(url, sizeof url, "redis-quorum://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/0", dead1,
             dead2, dead3);
    ck_assert_int_eq(baton_client_new(url, &quick, &c), BATON_EIO);
    snprintf(want, sizeof want,
             "%s: no quorum: 0 of 3 masters answered (2 needed): 127.0.0.1:%d: cannot connect: "
             "Connection refused;",
             url, dead1);
    ck_assert_msg(strncmp(baton_client_errstr(c), want, strlen(want)) == 0, "%s",
                  baton_client_errstr(c));
    baton_client_free(c);
    baton_client_free(NULL);
    baton_lock_free(NULL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lib");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, error_table);
    tcase_add_test(tc, resp_format_matches_hiredis);
    tcase_add_test(tc, url_good);
    tcase_add_test(tc, url_bad);
    tcase_add_test(tc, url_sentinel);
    tcase_add_test(tc, url_cluster);
    tcase_add_test(tc, url_quorum);
    tcase_add_test(tc, cluster_command_slots);
    tcase_add_test(tc, crc16_table_matches_bitwise);
    tcase_add_test(tc, loop_spare_blocks);
    tcase_add_test(tc, url_errors_hide_password);
    tcase_add_test(tc, sha1_vectors);
    tcase_add_test(tc, decimal_strings);
    tcase_add_test(tc, jitter_bounds);
    tcase_add_test(tc, client_errors);
    tcase_add_test(tc, helper_job_queued_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
