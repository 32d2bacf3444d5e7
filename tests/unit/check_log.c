/* check_log.c -- every log line is valid JSON whatever it carries (utf8.h,
 * log.c), and the table of log events (events.h). */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "events.h"
#include "log.h"
#include "utf8.h"
#include "testutil.h"

/* ---- UTF-8 ---- */

static const struct {
    const char *bytes;
    size_t len;
    bool valid;
} seqs[] = {
    {"plain ascii", 11, true},
    {"caf\xc3\xa9", 5, true},
    {"\xe2\x82\xac", 3, true},           /* EURO SIGN */
    {"\xf0\x9f\x98\x80", 4, true},       /* U+1F600 */
    {"\xf4\x8f\xbf\xbf", 4, true},       /* U+10FFFF, the last code point */
    {"a\0b", 3, true},                   /* NUL is a character */
    {"\xff\xfe", 2, false},              /* not UTF-8 at all */
    {"\xc0\x80", 2, false},              /* an overlong NUL */
    {"\xe0\x80\xaf", 3, false},          /* an overlong / */
    {"\xed\xa0\x80", 3, false},          /* a surrogate */
    {"\xf4\x90\x80\x80", 4, false},      /* above U+10FFFF */
    {"\xe2\x82", 2, false},              /* truncated */
    {"\x80", 1, false},                  /* a lone continuation byte */
};

START_TEST(validity)
{
    for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; i++)
        ck_assert_msg(utf8_valid(seqs[i].bytes, seqs[i].len) == seqs[i].valid, "case %zu", i);
}
END_TEST

/* Quoting: control characters and NUL escaped, invalid bytes replaced by
 * U+FFFD (one per maximal invalid subpart), valid text untouched. */
START_TEST(quoting)
{
    static const struct {
        const char *in;
        size_t len;
        const char *out;
        bool replaced;
    } q[] = {
        {"hello", 5, "\"hello\"", false},
        {"before\0after", 12, "\"before\\u0000after\"", false},
        {"\xff\xfe", 2, "\"\\ufffd\\ufffd\"", true},
        {"a\xe2\x82z", 4, "\"a\\ufffdz\"", true}, /* a truncated sequence is one U+FFFD */
        {"tab\there\n\"q\"\\", 13, "\"tab\\there\\n\\\"q\\\"\\\\\"", false},
        {"\x1b[31mred\x7f", 9, "\"\\u001b[31mred\\u007f\"", false},
        {"caf\xc3\xa9 \xf0\x9f\x98\x80", 10, "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"", false},
        {"\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"", true}, /* a surrogate: 3 subparts */
    };
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        bool replaced = !q[i].replaced;
        char *s = json_quote_bytes(q[i].in, q[i].len, &replaced);
        ck_assert_ptr_nonnull(s);
        ck_assert_msg(strcmp(s, q[i].out) == 0, "case %zu: %s", i, s);
        ck_assert(replaced == q[i].replaced);
        free(s);
    }
    char *fixed = utf8_fix("ok \xff ok");
    ck_assert_str_eq(fixed, "ok \xef\xbf\xbd ok");
    free(fixed);
}
END_TEST

/* A long line is cut between characters, never inside one. */
START_TEST(cutting)
{
    ck_assert_int_eq(utf8_cut("abc", 3), 3);
    ck_assert_int_eq(utf8_cut("ab\xc3", 3), 2);          /* a 2-byte char begun */
    ck_assert_int_eq(utf8_cut("ab\xe2\x82", 4), 2);      /* a 3-byte char begun */
    ck_assert_int_eq(utf8_cut("ab\xf0\x9f\x98", 5), 2);  /* a 4-byte char begun */
    ck_assert_int_eq(utf8_cut("ab\xc3\xa9", 4), 4);      /* complete */
    ck_assert_int_eq(utf8_cut("ab\xff", 3), 3);          /* invalid: cut anywhere */
    ck_assert_int_eq(utf8_cut("ab\x80\x80", 4), 4);      /* stray continuation bytes */
}
END_TEST

/* Text for a terminal: what it acts on becomes visible, the rest stays. */
START_TEST(terminal_text)
{
    static const struct {
        const char *in;
        size_t len;
        const char *out;
    } t[] = {
#define T(in, out) {in, sizeof in - 1, out}
        T("plain \\ text", "plain \\ text"),
        T("\x1b]0;owned\x07", "\\x1b]0;owned\\x07"), /* OSC: a title change */
        T("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),       /* a screen clear */
        T("a\rb\nc\td", "a\\rb\\nc\\td"),
        T("nul\0del\x7f", "nul\\x00del\\x7f"),
        T("csi\xc2\x9b\x32J", "csi\\u009b2J"),   /* C1 CSI */
        T("\xe2\x80\xae\x65vil", "\\u202eevil"), /* RIGHT-TO-LEFT OVERRIDE */
        T("bad\x9b\xff", "bad\\x9b\\xff"),       /* invalid UTF-8: bytes */
        T("caf\xc3\xa9 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xf0\x9f\x98\x80"),
#undef T
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char buf[64];
        size_t need = utf8_term_escape(t[i].in, t[i].len, buf, sizeof buf);
        ck_assert_msg(strcmp(buf, t[i].out) == 0, "case %zu: %s", i, buf);
        ck_assert_uint_eq(need, strlen(t[i].out));
    }
    /* Cut between escapes, never inside one; the whole length returned. */
    char small[8];
    ck_assert_uint_eq(utf8_term_escape("ab\x1b\x1b", 4, small, sizeof small), 10);
    ck_assert_str_eq(small, "ab\\x1b");
    ck_assert_uint_eq(utf8_term_escape("\n", 1, NULL, 0), 2);
    char *d = utf8_term_dup("x\x1b[31my");
    ck_assert_str_eq(d, "x\\x1b[31my");
    free(d);
    ck_assert_str_eq(utf8_term("\ttab", small, sizeof small), "\\ttab");
}
END_TEST

/* ---- log lines ---- */

/* What a memory file holds (owned, NUL-terminated); closes it. */
static char *slurp(int fd)
{
    off_t n = lseek(fd, 0, SEEK_END);
    char *buf = calloc(1, (size_t)n + 1);
    ck_assert_int_eq(pread(fd, buf, (size_t)n, 0), n);
    close(fd);
    return buf;
}

/* Emits one line through a memory file and returns it (owned). */
static char *emit(enum log_event ev, cJSON *fields)
{
    int fd = memfd_create("log", MFD_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    struct log *lg = log_new(fd, LOG_DEBUG, "node-\xff", "g");
    ck_assert_ptr_nonnull(lg);
    log_emit(lg, ev, fields);
    log_free(lg);
    return slurp(fd);
}

/* Whatever strings an event carries, the line is one valid UTF-8 JSON
 * object ending in a newline. */
START_TEST(lines_are_valid_json)
{
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "error", "redis said \xc0\xaf and \x01");
    cJSON_AddRawToObject(f, "line", "\"raw \\u0000 stays\"");
    char *line = emit(LE_HISTORY_WRITE_FAILED, f);
    size_t n = strlen(line);
    ck_assert(n > 0 && line[n - 1] == '\n');
    ck_assert(utf8_valid(line, n));
    ck_assert_ptr_null(memchr(line, '\n', n - 1));
    cJSON *o = cJSON_Parse(line);
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(cJSON_GetObjectItem(o, "event")->valuestring, "history_write_failed");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "level")->valuestring, "warn");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "error")->valuestring,
                     "redis said \xef\xbf\xbd\xef\xbf\xbd and \x01");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "node")->valuestring, "node-\xef\xbf\xbd");
    ck_assert_ptr_nonnull(strstr(line, "\"error\":\"redis said \xef\xbf\xbd\xef\xbf\xbd and \\u0001\""));
    ck_assert_ptr_nonnull(strstr(line, "\"line\":\"raw \\u0000 stays\""));
    cJSON_Delete(o);
    free(line);
}
END_TEST

/* Integral numbers print as integers, whatever their size up to 2^53 (a
 * term, a fence, a time in ms); others as cJSON prints them. */
START_TEST(numbers_print_exactly)
{
    cJSON *f = log_fields();
    cJSON_AddNumberToObject(f, "term", 179566729166927.0);
    cJSON_AddNumberToObject(f, "neg", -4294967297.0);
    cJSON_AddNumberToObject(f, "edge", 9007199254740992.0);
    cJSON_AddNumberToObject(f, "huge", 1e20);
    cJSON_AddNumberToObject(f, "frac", 1.5);
    cJSON_AddNumberToObject(f, "zero", 0.0);
    cJSON *inner = cJSON_AddObjectToObject(f, "inner");
    cJSON_AddNumberToObject(inner, "ms", 1795667298953.0);
    char *line = emit(LE_TRANSITION, f);
    ck_assert_ptr_nonnull(strstr(line, "\"term\":179566729166927,"));
    ck_assert_ptr_nonnull(strstr(line, "\"neg\":-4294967297,"));
    ck_assert_ptr_nonnull(strstr(line, "\"edge\":9007199254740992,"));
    ck_assert_ptr_nonnull(strstr(line, "\"huge\":1e+20,"));
    ck_assert_ptr_nonnull(strstr(line, "\"frac\":1.5,"));
    ck_assert_ptr_nonnull(strstr(line, "\"zero\":0,"));
    ck_assert_ptr_nonnull(strstr(line, "\"inner\":{\"ms\":1795667298953}"));
    cJSON *o = cJSON_Parse(line);
    ck_assert_ptr_nonnull(o);
    ck_assert(cJSON_GetObjectItem(o, "term")->valuedouble == 179566729166927.0);
    cJSON_Delete(o);
    free(line);
}
END_TEST

/* Lines emitted while the log is held are all written, in order, once it
 * is released (and by log_free, should a hold be left). */
START_TEST(held_lines_follow)
{
    int fd = memfd_create("log", MFD_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    struct log *lg = log_new(fd, LOG_DEBUG, "n", "g");
    ck_assert_ptr_nonnull(lg);
    /* A first line written, then time for the writer to go back to sleep
     * (a writer just started could find queued lines on its own). */
    log_emit(lg, LE_HANDOVER, NULL);
    for (int i = 0; i < 200 && lseek(fd, 0, SEEK_END) == 0; i++)
        tu_sleep_ms(5);
    tu_sleep_ms(20);
    off_t first = lseek(fd, 0, SEEK_END);
    ck_assert_int_gt(first, 0);
    log_hold(lg);
    log_hold(lg);
    for (int i = 0; i < 3; i++) {
        cJSON *f = log_fields();
        cJSON_AddNumberToObject(f, "running", i);
        log_emit(lg, LE_HANDOVER, f);
    }
    /* Held, the sleeping writer is not woken. */
    tu_sleep_ms(50);
    ck_assert_int_eq(lseek(fd, 0, SEEK_END), first);
    log_release(lg);
    tu_sleep_ms(50);
    ck_assert_int_eq(lseek(fd, 0, SEEK_END), first); /* still held once */
    log_release(lg);
    log_release(lg); /* one too many: harmless */
    log_hold(lg);
    log_emit(lg, LE_HANDOVER, NULL);
    log_free(lg);
    char *buf = slurp(fd);
    const char *p = buf;
    for (int i = 0; i < 3; i++) {
        char want[32];
        snprintf(want, sizeof want, "\"running\":%d}", i);
        p = strstr(p, want);
        ck_assert_msg(p != NULL, "line %d missing or out of order in: %s", i, buf);
    }
    int lines = 0;
    for (const char *q = buf; *q != '\0'; q++)
        lines += *q == '\n';
    ck_assert_int_eq(lines, 5);
    free(buf);
}
END_TEST

/* A field named as one of the line's head, or as an earlier field, is
 * renamed (a '_' appended): one member per name, no value lost. */
START_TEST(fields_never_share_a_name)
{
    cJSON *f = log_fields();
    cJSON_AddStringToObject(f, "node", "follower-1");
    cJSON_AddStringToObject(f, "job", "a");
    cJSON_AddStringToObject(f, "job", "b");
    cJSON_AddStringToObject(f, "ts", "then");
    char *line = emit(LE_CONFIG_DRIFT, f);
    cJSON *o = cJSON_Parse(line);
    ck_assert_ptr_nonnull(o);
    for (const cJSON *a = o->child; a != NULL; a = a->next)
        for (const cJSON *b = a->next; b != NULL; b = b->next)
            ck_assert_msg(strcmp(a->string, b->string) != 0, "two \"%s\" in %s", a->string, line);
    ck_assert_str_eq(cJSON_GetObjectItem(o, "node")->valuestring, "node-\xef\xbf\xbd");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "node_")->valuestring, "follower-1");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "job")->valuestring, "a");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "job_")->valuestring, "b");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "ts_")->valuestring, "then");
    cJSON_Delete(o);
    free(line);
}
END_TEST

/* Reads fd to its end into a growing buffer (struct sink). */
struct sink {
    int fd;
    char *buf;
    size_t len, cap;
};

static void *sink_main(void *arg)
{
    struct sink *k = arg;
    for (;;) {
        if (k->cap - k->len < 65536) {
            k->cap = k->cap * 2 + 65536;
            k->buf = realloc(k->buf, k->cap + 1);
            ck_assert_ptr_nonnull(k->buf);
        }
        ssize_t n = read(k->fd, k->buf + k->len, k->cap - k->len);
        if (n <= 0)
            break;
        k->len += (size_t)n;
    }
    k->buf[k->len] = '\0';
    return NULL;
}

static size_t count(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = strstr(text, what); p != NULL; p = strstr(p + 1, what))
        n++;
    return n;
}

/* Behind a reader that does not read, the queue is bounded whatever is
 * logged: output goes first (beyond 4 MiB), state lines have 1 MiB more,
 * then go too; each drop is counted at once (log_dropped_lines), and
 * reported by event once the reader caught up (here: at log_free). */
START_TEST(queue_is_bounded)
{
    int p[2];
    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
    struct log *lg = log_new(p[1], LOG_INFO, "n", "g");
    ck_assert_ptr_nonnull(lg);
    /* Few lines, long ones: the test is about bytes (and quick under ASan). */
    char fat[4001], slim[401];
    memset(fat, 'x', sizeof fat - 1);
    fat[sizeof fat - 1] = '\0';
    memcpy(slim, fat, sizeof slim - 1);
    slim[sizeof slim - 1] = '\0';
    /* 10 MB of job and hook output, then 300 state lines: all kept. */
    for (int i = 0; i < 2500; i++) {
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "line", fat);
        log_emit(lg, i % 2 ? LE_JOB_OUTPUT : LE_HOOK_OUTPUT, f);
    }
    uint64_t bulk_dropped = log_dropped_lines(lg);
    ck_assert_uint_gt(bulk_dropped, 1000);
    for (int i = 0; i < 300; i++) {
        cJSON *f = log_fields();
        cJSON_AddNumberToObject(f, "first", i);
        cJSON_AddStringToObject(f, "pad", slim);
        log_emit(lg, LE_JOB_START, f);
    }
    ck_assert_uint_eq(log_dropped_lines(lg), bulk_dropped);
    /* 8 MB of state lines: beyond the reserve, they are dropped too. */
    for (int i = 0; i < 2000; i++) {
        cJSON *f = log_fields();
        cJSON_AddStringToObject(f, "pad", fat);
        log_emit(lg, LE_JOB_END, f);
    }
    uint64_t dropped = log_dropped_lines(lg);
    ck_assert_uint_gt(dropped, bulk_dropped + 1000);
    /* A debug line (filtered out) reports nothing while the queue is full. */
    log_emit(lg, LE_LEASE_RENEWED, NULL);
    struct sink k = {.fd = p[0]};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, sink_main, &k), 0);
    log_free(lg);
    close(p[1]);
    pthread_join(t, NULL);
    close(p[0]);
    /* What came out: at most the bound (5 MiB) and what the pipe held. */
    ck_assert_uint_lt(k.len, (5u << 20) + (1u << 20));
    ck_assert_uint_eq(count(k.buf, "\"event\":\"job_start\""), 300);
    for (int i = 0; i < 300; i++) {
        char want[32];
        snprintf(want, sizeof want, "\"first\":%d,", i);
        ck_assert_msg(strstr(k.buf, want) != NULL, "state line %d dropped", i);
    }
    size_t ends = count(k.buf, "\"event\":\"job_end\"");
    size_t outs =
        count(k.buf, "\"event\":\"job_output\"") + count(k.buf, "\"event\":\"hook_output\"");
    ck_assert_uint_eq(2500 + 2000 + 300 - ends - outs - 300, dropped);
    const char *report = strstr(k.buf, "\"event\":\"log_lines_dropped\"");
    ck_assert_ptr_nonnull(report);
    ck_assert_ptr_null(strstr(report + 1, "\"event\":\"log_lines_dropped\"")); /* one */
    char *nl = strchr(report, '\n');
    ck_assert_ptr_nonnull(nl);
    const char *start = report;
    while (start > k.buf && start[-1] != '\n')
        start--;
    cJSON *o = cJSON_ParseWithLength(start, (size_t)(nl - start));
    ck_assert_ptr_nonnull(o);
    ck_assert_uint_eq((uint64_t)cJSON_GetObjectItem(o, "lines")->valuedouble, dropped);
    cJSON *by = cJSON_GetObjectItem(o, "events");
    ck_assert_uint_eq((uint64_t)(cJSON_GetObjectItem(by, "job_output")->valuedouble +
                                 cJSON_GetObjectItem(by, "hook_output")->valuedouble),
                      bulk_dropped);
    ck_assert_uint_eq((uint64_t)cJSON_GetObjectItem(by, "job_end")->valuedouble,
                      dropped - bulk_dropped);
    ck_assert_ptr_null(cJSON_GetObjectItem(by, "job_start"));
    ck_assert(cJSON_GetObjectItem(o, "bytes")->valuedouble > 4000.0 * (double)dropped);
    ck_assert(cJSON_IsString(cJSON_GetObjectItem(o, "since")));
    cJSON_Delete(o);
    free(k.buf);
}
END_TEST

/* ---- the event table ---- */

/* The documented fields of e (the names in backquotes outside
 * parentheses), space-separated, into buf. */
static void documented_fields(enum log_event e, char *buf, size_t len)
{
    size_t n = 0;
    int depth = 0;
    buf[0] = '\0';
    for (const char *p = log_event_fields(e); *p != '\0'; p++) {
        depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
        const char *close = *p == '`' ? strchr(p + 1, '`') : NULL;
        if (close == NULL)
            continue;
        if (depth == 0 && n + (size_t)(close - p) + 1 < len)
            n += (size_t)snprintf(buf + n, len - n, "%.*s ", (int)(close - p - 1), p + 1);
        p = close;
    }
}

START_TEST(event_table)
{
    for (int e = 0; e < LE_COUNT; e++) {
        const char *name = log_event_name((enum log_event)e);
        ck_assert(name[0] != '\0' && strcmp(name, "?") != 0);
        for (int k = 0; k < e; k++)
            ck_assert_msg(strcmp(name, log_event_name((enum log_event)k)) != 0, "%s twice", name);
        for (const char *p = name; *p != '\0'; p++)
            ck_assert_msg((*p >= 'a' && *p <= 'z') || *p == '_', "%s: snake case", name);
    }
    /* One member per name in every line: no event documents a field named
     * as the head of every line, or the same field twice. */
    static const char *const head[] = {"ts", "level", "event", "node", "group"};
    for (int e = 0; e < LE_COUNT; e++) {
        char fields[512], *save = NULL;
        const char *seen[32];
        size_t nseen = 0;
        documented_fields((enum log_event)e, fields, sizeof fields);
        for (char *w = strtok_r(fields, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
            const char *name = log_event_name((enum log_event)e);
            for (size_t h = 0; h < sizeof head / sizeof head[0]; h++)
                ck_assert_msg(strcmp(w, head[h]) != 0, "%s: a field named %s", name, w);
            for (size_t k = 0; k < nseen; k++)
                ck_assert_msg(strcmp(w, seen[k]) != 0, "%s: %s twice", name, w);
            if (nseen < sizeof seen / sizeof seen[0])
                seen[nseen++] = w;
        }
    }
    ck_assert(log_event_varies(LE_TRANSITION));
    ck_assert(log_event_varies(LE_JOB_END));
    ck_assert(log_event_varies(LE_CLAIM_FAILED));
    ck_assert_int_eq(log_event_level(LE_CLAIM_REFUSED), LOG_WARN);
    ck_assert_int_eq(log_event_level(LE_RELOAD_FAILED), LOG_ERROR);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    log_events_write_reference(f);
    fclose(f);
    for (int e = 0; e < LE_COUNT; e++) {
        char want[96];
        snprintf(want, sizeof want, "| `%s` | ", log_event_name((enum log_event)e));
        ck_assert_ptr_nonnull(strstr(text, want));
    }
    free(text);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("log");
    TCase *tc = tcase_create("log");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, validity);
    tcase_add_test(tc, quoting);
    tcase_add_test(tc, cutting);
    tcase_add_test(tc, terminal_text);
    tcase_add_test(tc, lines_are_valid_json);
    tcase_add_test(tc, numbers_print_exactly);
    tcase_add_test(tc, held_lines_follow);
    tcase_add_test(tc, fields_never_share_a_name);
    tcase_add_test(tc, queue_is_bounded);
    tcase_add_test(tc, event_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
