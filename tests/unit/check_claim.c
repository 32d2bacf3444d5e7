/* check_claim.c -- how the masters' answers to a claim become one result
 * (claim_reduce, claim.h): table-driven, no Redis.
 *
 * Each row is the answers of N masters as a string, one character a
 * master: a claim script's code ('-' not the leader, '0' taken, '1' ok,
 * '2' busy, '3' skipped, '4' ours, '5' ours skipped, '6' ours expired), or
 * 'x' no answer, 'q' quarantined (answered, but does not count). */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "claim.h"
#include "testutil.h"

static struct baton_reply *integer(long long v)
{
    struct baton_reply *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    r->type = BATON_REPLY_INTEGER;
    r->integer = v;
    return r;
}

/* {code} or {code, {busy}} when busy is not NULL */
static struct baton_reply *code_reply(int code, const char *busy)
{
    struct baton_reply *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    r->type = BATON_REPLY_ARRAY;
    r->elements = busy != NULL ? 2 : 1;
    r->element = calloc(r->elements, sizeof *r->element);
    ck_assert_ptr_nonnull(r->element);
    r->element[0] = integer(code);
    if (busy != NULL) {
        struct baton_reply *b = calloc(1, sizeof *b), *m = calloc(1, sizeof *m);
        ck_assert(b != NULL && m != NULL);
        m->type = BATON_REPLY_STRING;
        m->str = strdup(busy);
        m->len = strlen(busy);
        b->type = BATON_REPLY_ARRAY;
        b->elements = 1;
        b->element = calloc(1, sizeof *b->element);
        ck_assert_ptr_nonnull(b->element);
        b->element[0] = m;
        r->element[1] = b;
    }
    return r;
}

/* The answers that spec describes (see the top); busy answers ('2', and
 * '1' or '3' of a skip-if-busy) list the run "n/r". */
static struct baton_answers *answers(const char *spec)
{
    int n = (int)strlen(spec);
    struct baton_answers *a = calloc(1, sizeof *a + (size_t)n * sizeof a->v[0]);
    ck_assert_ptr_nonnull(a);
    a->n = n;
    a->majority = n / 2 + 1;
    for (int i = 0; i < n; i++) {
        struct baton_answer *v = &a->v[i];
        char ch = spec[i];
        v->counts = ch != 'q';
        if (ch == 'x') {
            v->rc = BATON_EIO;
            continue;
        }
        a->answered += v->counts;
        v->rc = BATON_OK;
        int code = ch == '-' ? -1 : ch == 'q' ? 1 : ch - '0';
        v->reply = code_reply(code, code == 2 ? "n/r" : NULL);
    }
    return a;
}

static const struct {
    const char *spec;
    enum claim_mode mode;
    enum claim_result want;
    bool undo, partial;
} rows[] = {
    /* one server: the answer as it is */
    {"1", CLAIM_RUN, CLAIM_OK, false, false},
    {"0", CLAIM_RUN, CLAIM_TAKEN, false, false},
    {"4", CLAIM_RUN, CLAIM_OURS, false, false},
    {"5", CLAIM_SKIP, CLAIM_OURS_SKIPPED, false, false},
    {"6", CLAIM_RUN, CLAIM_OURS_EXPIRED, false, false},
    {"x", CLAIM_RUN, CLAIM_ERROR, false, false},
    /* a majority claimed it */
    {"11100", CLAIM_RUN, CLAIM_OK, false, false},
    {"111xx", CLAIM_RUN, CLAIM_OK, false, false},
    {"441x1", CLAIM_RUN, CLAIM_OK, false, false},
    {"444xx", CLAIM_RUN, CLAIM_OURS, false, false},
    /* a retry where the registration expired on too many masters to hold */
    {"466xx", CLAIM_RUN, CLAIM_OURS_EXPIRED, true, false},
    {"666xx", CLAIM_RUN, CLAIM_OURS_EXPIRED, false, false},
    {"4461x", CLAIM_RUN, CLAIM_OK, false, false},
    /* skips: a retry of a skip is ours skipped; a fresh skip is skipped */
    {"333xx", CLAIM_SKIP, CLAIM_SKIPPED, false, false},
    {"555xx", CLAIM_SKIP, CLAIM_OURS_SKIPPED, false, false},
    {"553xx", CLAIM_SKIP, CLAIM_SKIPPED, false, false},
    /* skip-if-busy: a run alive on one master of the majority is alive */
    {"113xx", CLAIM_RUN_OR_SKIP, CLAIM_SKIPPED, true, false},
    /* undecided: too few answers either way; what applied is partial */
    {"11xxx", CLAIM_RUN, CLAIM_ERROR, false, true},
    {"1100x", CLAIM_RUN, CLAIM_ERROR, false, true},
    {"xxxxx", CLAIM_RUN, CLAIM_ERROR, false, false},
    /* a quarantined master does not count */
    {"11qxx", CLAIM_RUN, CLAIM_ERROR, false, true},
    /* decided against us: what registered is released */
    {"000xx", CLAIM_RUN, CLAIM_TAKEN, false, false},
    {"1000x", CLAIM_RUN, CLAIM_TAKEN, true, false},
    {"---1x", CLAIM_RUN, CLAIM_NOT_LEADER, true, false},
    /* wait: busy anywhere waits, what applied is retried */
    {"12xxx", CLAIM_RUN_OR_WAIT, CLAIM_BUSY, false, true},
    {"222xx", CLAIM_RUN_OR_WAIT, CLAIM_BUSY, false, false},
};

START_TEST(reduce)
{
    struct claim_reply out;
    memset(&out, 0, sizeof out);
    out.answers = answers(rows[_i].spec);
    enum claim_result got = claim_reduce(&out, rows[_i].mode);
    ck_assert_msg(got == rows[_i].want, "%s mode %d: %s, expected %s", rows[_i].spec, rows[_i].mode,
                  claim_result_name(got), claim_result_name(rows[_i].want));
    ck_assert_msg(out.undo == rows[_i].undo, "%s: undo %d", rows[_i].spec, out.undo);
    ck_assert_msg(out.partial == rows[_i].partial, "%s: partial %d", rows[_i].spec, out.partial);
    ck_assert_int_eq(out.majority, (int)strlen(rows[_i].spec) / 2 + 1);
    if (strchr(rows[_i].spec, '2') != NULL)
        ck_assert(out.nbusy == 1 && strcmp(out.busy[0], "n/r") == 0);
    if (got == CLAIM_ERROR && strlen(rows[_i].spec) > 1)
        ck_assert_msg(strstr(out.why, "claim undecided") != NULL, "%s: %s", rows[_i].spec, out.why);
    else if (got == CLAIM_ERROR) /* one server: the client's error is the detail */
        ck_assert_str_eq(out.why, "");
    claim_reply_free(&out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("claim");
    TCase *tc = tcase_create("reduce");
    tcase_add_loop_test(tc, reduce, 0, (int)(sizeof rows / sizeof rows[0]));
    suite_add_tcase(s, tc);
    return tu_run(s);
}
