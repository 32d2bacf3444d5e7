/* check_output.c -- the output tail (src/supervisor/output.c): a ring that
 * keeps the last cap bytes of text, grows only as output comes, and is
 * taken starting at a line (or a character), saying how much it dropped.
 *
 * Every case is checked against a model: the text appended in full, whose
 * suffix the tail must be, exactly. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "utf8.h"
#include "testutil.h"

/* The model: everything appended, as text. */
struct model {
    char *all;
    size_t len;
};

static void model_add(struct model *m, const char *p, size_t n)
{
    m->all = realloc(m->all, m->len + n + 1);
    ck_assert_ptr_nonnull(m->all);
    memcpy(m->all + m->len, p, n);
    m->len += n;
    m->all[m->len] = '\0';
}

/* Takes t and checks it against the model: a suffix of it, at most cap
 * bytes, starting after a newline when something was dropped and the kept
 * text holds one (else at a character), dropped + kept = all. */
static void check_take(struct output_tail *t, struct model *m, size_t cap)
{
    size_t len;
    int64_t dropped;
    char *s = output_tail_take(t, &len, &dropped);

    ck_assert_ptr_nonnull(s);
    ck_assert_uint_le(len, cap);
    ck_assert_int_eq(dropped + (int64_t)len, (int64_t)m->len);
    ck_assert_uint_eq(strlen(s), len);
    ck_assert_int_eq(memcmp(s, m->all + dropped, len), 0);
    ck_assert(utf8_valid(s, len));
    if (dropped > 0 && len > 0) {
        /* Cut at a line: the byte before is a newline; or, when the kept
         * window held no line break but its last, the cut is the nearest
         * character boundary. */
        const char *window = m->all + m->len - (m->len < cap ? m->len : cap);
        size_t wlen = m->len < cap ? m->len : cap;
        const char *nl = memchr(window, '\n', wlen);
        if (nl != NULL && (size_t)(nl - window) + 1 < wlen)
            ck_assert_int_eq(m->all[dropped - 1], '\n');
        else
            ck_assert_int_ne((unsigned char)s[0] & 0xC0, 0x80);
    }
    /* Taking empties it. */
    free(s);
    s = output_tail_take(t, &len, &dropped);
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(dropped, 0);
    free(s);
}

START_TEST(lines_fit)
{
    struct output_tail t;
    struct model m = {0};
    output_tail_init(&t, 64);
    for (int i = 0; i < 3; i++) {
        char line[16];
        int n = snprintf(line, sizeof line, "line %d\n", i);
        output_tail_append(&t, line, (size_t)n);
        model_add(&m, line, (size_t)n);
    }
    ck_assert_ptr_nonnull(t.buf);
    check_take(&t, &m, 64);
    output_tail_free(&t);
    free(m.all);
}
END_TEST

/* Many lines through a small ring, with every chunk size from 1 to 300
 * bytes: the tail is exactly the suffix that starts at a line. */
START_TEST(ring_wraps_exactly)
{
    static const size_t caps[] = {1, 7, 64, 100, 4096, 5000, 16384};
    size_t cap = caps[_i];
    for (size_t chunk = 1; chunk <= 300; chunk += 37) {
        struct output_tail t;
        struct model m = {0};
        char buf[400];
        output_tail_init(&t, cap);
        for (int i = 0; i < 2000; i++) {
            int n = snprintf(buf, sizeof buf, "%d:%.*s\n", i, (int)(i % (int)chunk),
                             "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmno"
                             "pqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcd"
                             "efghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrs"
                             "tuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
            output_tail_append(&t, buf, (size_t)n);
            model_add(&m, buf, (size_t)n);
        }
        /* Memory: the ring never grows past cap. */
        ck_assert_uint_le(t.size, cap);
        check_take(&t, &m, cap);
        output_tail_free(&t);
        free(m.all);
    }
}
END_TEST

/* A quiet run costs nothing; a little output costs the first block only. */
START_TEST(grows_as_output_comes)
{
    struct output_tail t;
    output_tail_init(&t, 1 << 20);
    ck_assert_ptr_null(t.buf);
    output_tail_append(&t, "hello\n", 6);
    ck_assert_uint_le(t.size, 4096);
    for (int i = 0; i < 1000; i++)
        output_tail_append(&t, "0123456789abcdef", 16);
    ck_assert_uint_le(t.size, 32768);
    ck_assert_uint_ge(t.size, 16006);
    output_tail_free(&t);
}
END_TEST

/* cap 0: nothing is kept, nothing allocated, everything counted. */
START_TEST(off)
{
    struct output_tail t;
    size_t len;
    int64_t dropped;
    output_tail_init(&t, 0);
    output_tail_append_text(&t, "abc\n", 4);
    ck_assert_ptr_null(t.buf);
    ck_assert_ptr_null(output_tail_take(&t, &len, &dropped));
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(dropped, 4);
}
END_TEST

/* Text: invalid UTF-8 (each maximal invalid subpart) and NUL become U+FFFD;
 * valid multi-byte characters and control characters stay. */
START_TEST(text_replacements)
{
    static const struct {
        const char *in;
        size_t n;
        const char *out;
    } rows[] = {
        {"caf\xc3\xa9", 5, "caf\xc3\xa9"},
        {"\xff\xfe", 2, "\xef\xbf\xbd\xef\xbf\xbd"},
        {"a\0b", 3, "a\xef\xbf\xbd" "b"},
        {"\xe2\x82", 2, "\xef\xbf\xbd"},          /* a truncated sequence: one subpart */
        {"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* a surrogate */
        {"\x1b[31mred\r", 9, "\x1b[31mred\r"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct output_tail t;
        size_t len;
        int64_t dropped;
        output_tail_init(&t, 100);
        output_tail_append_text(&t, rows[i].in, rows[i].n);
        char *s = output_tail_take(&t, &len, &dropped);
        ck_assert_msg(len == strlen(rows[i].out) && memcmp(s, rows[i].out, len) == 0,
                      "row %zu: got %s", i, s);
        ck_assert_int_eq(dropped, 0);
        ck_assert(utf8_valid(s, len));
        free(s);
    }
}
END_TEST

/* No line break in the window: the cut falls on a character, never inside
 * one (here 3-byte characters through a 100-byte ring). */
START_TEST(cut_at_a_character)
{
    struct output_tail t;
    struct model m = {0};
    output_tail_init(&t, 100);
    for (int i = 0; i < 77; i++) {
        output_tail_append_text(&t, "\xe2\x82\xac", 3); /* U+20AC */
        model_add(&m, "\xe2\x82\xac", 3);
    }
    size_t len;
    int64_t dropped;
    char *s = output_tail_take(&t, &len, &dropped);
    ck_assert_uint_eq(len, 99); /* 33 whole characters of the last 100 bytes */
    ck_assert_int_eq(dropped, 77 * 3 - 99);
    ck_assert(utf8_valid(s, len));
    free(s);
    free(m.all);
}
END_TEST

/* One line longer than the ring: its end, at a character. */
START_TEST(one_long_line)
{
    struct output_tail t;
    struct model m = {0};
    output_tail_init(&t, 50);
    for (int i = 0; i < 1000; i++) {
        output_tail_append(&t, "x", 1);
        model_add(&m, "x", 1);
    }
    output_tail_append(&t, "\n", 1);
    model_add(&m, "\n", 1);
    check_take(&t, &m, 50);
    free(m.all);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("output");
    TCase *tc = tcase_create("tail");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, lines_fit);
    tcase_add_loop_test(tc, ring_wraps_exactly, 0, 7);
    tcase_add_test(tc, grows_as_output_comes);
    tcase_add_test(tc, off);
    tcase_add_test(tc, text_replacements);
    tcase_add_test(tc, cut_at_a_character);
    tcase_add_test(tc, one_long_line);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
