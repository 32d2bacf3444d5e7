/* check_tokens.c -- the tokens file of the HTTP control API
 * (src/conf/tokens.c): a token's shape and randomness, its SHA-256 as the
 * file keeps it (checked against OpenSSL's one-shot SHA256), verification
 * that finds the right entry and nothing else, every malformed line with
 * its exact file:line:col error, the mode rule, and new/revoke on a real
 * file (created 0600, the other lines kept byte for byte, a name refused
 * twice, a missing name refused). */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "testutil.h"
#include "tokens.h"

#define HASH64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

START_TEST(token_shape)
{
    char a[TOKEN_TEXT_LEN + 1], b[TOKEN_TEXT_LEN + 1];
    ck_assert_int_eq(token_make(a, sizeof a), 0);
    ck_assert_int_eq(token_make(b, sizeof b), 0);
    ck_assert_uint_eq(strlen(a), TOKEN_TEXT_LEN);
    ck_assert(strncmp(a, "bt_", 3) == 0);
    ck_assert_str_ne(a, b);
    for (size_t i = 3; i < TOKEN_TEXT_LEN; i++)
        ck_assert_msg(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                             a[i]) != NULL,
                      "%s: byte %zu", a, i);
    char small[10];
    ck_assert_int_eq(token_make(small, sizeof small), -1);
}
END_TEST

START_TEST(hash_is_sha256)
{
    unsigned char mine[TOKEN_HASH_LEN], ref[SHA256_DIGEST_LENGTH];
    const char *t = "bt_example";
    token_hash(t, strlen(t), mine);
    SHA256((const unsigned char *)t, strlen(t), ref);
    ck_assert_mem_eq(mine, ref, TOKEN_HASH_LEN);
}
END_TEST

/* A file of three tokens made here; verify finds each by its token. */
START_TEST(verify_finds_the_entry)
{
    char tok[3][TOKEN_TEXT_LEN + 1], buf[1024], err[256];
    const char *names[] = {"a", "b.c", "ops@web-1"};
    size_t len = 0;
    for (int i = 0; i < 3; i++) {
        unsigned char h[TOKEN_HASH_LEN];
        ck_assert_int_eq(token_make(tok[i], sizeof tok[i]), 0);
        token_hash(tok[i], strlen(tok[i]), h);
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s %s sha256:", names[i],
                                i == 1 ? "read" : "operate");
        for (int k = 0; k < TOKEN_HASH_LEN; k++)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%02x", h[k]);
        len += (size_t)snprintf(buf + len, sizeof buf - len, "\n");
    }
    struct token_set s;
    ck_assert_msg(tokens_parse("t", buf, len, &s, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(s.n, 3);
    for (int i = 0; i < 3; i++) {
        const struct token_entry *e = tokens_verify(&s, tok[i], strlen(tok[i]));
        ck_assert_ptr_nonnull(e);
        ck_assert_str_eq(e->name, names[i]);
        ck_assert_int_eq(e->role, i == 1 ? TOKEN_READ : TOKEN_OPERATE);
    }
    /* A prefix, a longer string, an empty one, another token: nothing. */
    ck_assert_ptr_null(tokens_verify(&s, tok[0], strlen(tok[0]) - 1));
    char longer[TOKEN_TEXT_LEN + 2];
    snprintf(longer, sizeof longer, "%sx", tok[0]);
    ck_assert_ptr_null(tokens_verify(&s, longer, strlen(longer)));
    ck_assert_ptr_null(tokens_verify(&s, "", 0));
    char other[TOKEN_TEXT_LEN + 1];
    ck_assert_int_eq(token_make(other, sizeof other), 0);
    ck_assert_ptr_null(tokens_verify(&s, other, strlen(other)));
    tokens_free(&s);
}
END_TEST

static const struct {
    const char *text, *err;
} bad[] = {
    {"ops operate\n", "f:1:12: expected the token's hash (sha256:HEX) after the role"},
    {"ops\n", "f:1:4: expected a role (read or operate) after the name"},
    {"# c\n\nops admin sha256:" HASH64 "\n", "f:3:5: unknown role \"admin\": read or operate"},
    {"ops read md5:" HASH64 "\n", "f:1:10: the hash must start with \"sha256:\""},
    {"ops read sha256:abc\n", "f:1:17: the hash must be 64 hex digits, not 3"},
    {"ops read sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg\n",
     "f:1:80: not a hex digit"},
    {"ops read sha256:" HASH64 " extra\n", "f:1:82: unexpected text after the hash"},
    {"op$ read sha256:" HASH64 "\n",
     "f:1:3: '$' in the token name: use letters, digits, '_', '.', '@' or '-'"},
    {"a read sha256:" HASH64 "\na operate sha256:" HASH64 "\n",
     "f:2:1: token name \"a\" is used twice (first on another line)"},
    {"a\x01 read\n", "f:1:2: a control character (0x01)"},
    {"  x read sha256:" HASH64 "\nthis-name-is-far-too-long-for-a-token-name-of-"
     "baton-it-has-65-chars read sha256:" HASH64 "\n",
     "f:2:1: a token name is at most 64 characters"},
};

START_TEST(malformed_lines)
{
    struct token_set s;
    char err[256];
    ck_assert_int_eq(tokens_parse("f", bad[_i].text, strlen(bad[_i].text), &s, err, sizeof err),
                     -1);
    ck_assert_str_eq(err, bad[_i].err);
    ck_assert_uint_eq(s.n, 0);
    ck_assert_ptr_null(s.v);
}
END_TEST

START_TEST(good_file_forms)
{
    /* Comments, blank lines, tabs, CRLF, no final line end. */
    const char *t = "# tokens\r\n\n\tops\toperate  sha256:" HASH64 "\r\nro read sha256:" HASH64;
    struct token_set s;
    char err[256];
    ck_assert_msg(tokens_parse("f", t, strlen(t), &s, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(s.n, 2);
    ck_assert_str_eq(s.v[0].name, "ops");
    ck_assert_str_eq(s.v[1].name, "ro");
    ck_assert_int_eq(s.v[1].role, TOKEN_READ);
    tokens_free(&s);
}
END_TEST

static char dir[] = "/tmp/check_tokens.XXXXXX";

static void path_in_dir(char *buf, size_t len, const char *name)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(buf, len, "%s/%s", dir, name);
}

/* Removes what a test left in dir. */
static void clean_dir(const char *path)
{
    unlink(path);
    rmdir(dir);
}

static char *slurp(const char *path)
{
    static char buf[8192];
    FILE *f = fopen(path, "re");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

START_TEST(add_list_revoke)
{
    char path[256], tok[TOKEN_TEXT_LEN + 1], tok2[TOKEN_TEXT_LEN + 1], err[512];
    struct stat st;
    struct token_set s;
    path_in_dir(path, sizeof path, "tokens");
    ck_assert_msg(tokens_add(path, "ops", TOKEN_OPERATE, tok, sizeof tok, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0600);
    /* The token is not in the file; its hash is. */
    ck_assert_ptr_null(strstr(slurp(path), tok));
    ck_assert_int_ne(tokens_add(path, "ops", TOKEN_READ, tok2, sizeof tok2, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "a token named \"ops\" exists already") != NULL, "%s", err);
    ck_assert_msg(tokens_add(path, "ro", TOKEN_READ, tok2, sizeof tok2, err, sizeof err) == 0, "%s",
                  err);
    ck_assert_int_eq(tokens_load(path, &s, err, sizeof err), 0);
    ck_assert_uint_eq(s.n, 2);
    ck_assert_str_eq(tokens_verify(&s, tok, strlen(tok))->name, "ops");
    ck_assert_str_eq(tokens_verify(&s, tok2, strlen(tok2))->name, "ro");
    tokens_free(&s);
    /* A hand-written comment survives a revoke; the revoked token stops
     * verifying; the mode stays. */
    FILE *f = fopen(path, "ae");
    fputs("# kept by hand\n", f);
    fclose(f);
    chmod(path, 0640);
    ck_assert_msg(tokens_revoke(path, "ops", err, sizeof err) == 0, "%s", err);
    ck_assert_ptr_nonnull(strstr(slurp(path), "# kept by hand\n"));
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0640);
    ck_assert_int_eq(tokens_load(path, &s, err, sizeof err), 0);
    ck_assert_uint_eq(s.n, 1);
    ck_assert_ptr_null(tokens_verify(&s, tok, strlen(tok)));
    ck_assert_ptr_nonnull(tokens_verify(&s, tok2, strlen(tok2)));
    tokens_free(&s);
    ck_assert_int_ne(tokens_revoke(path, "ops", err, sizeof err), 0);
    ck_assert_msg(strstr(err, "no token named \"ops\"") != NULL, "%s", err);
    ck_assert_int_ne(tokens_add(path, "bad name", TOKEN_READ, tok, sizeof tok, err, sizeof err), 0);
    clean_dir(path);
}
END_TEST

START_TEST(mode_refused)
{
    static const unsigned modes[] = {0644, 0660, 0604, 0700, 0641};
    char path[256], err[512], tok[TOKEN_TEXT_LEN + 1];
    struct token_set s;
    path_in_dir(path, sizeof path, "tokens");
    ck_assert_int_eq(tokens_add(path, "ops", TOKEN_OPERATE, tok, sizeof tok, err, sizeof err), 0);
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        char want[700];
        ck_assert_int_eq(chmod(path, modes[i]), 0);
        ck_assert_int_eq(tokens_load(path, &s, err, sizeof err), -1);
        snprintf(want, sizeof want,
                 "%s: mode %04o is refused for a tokens file: it must be 0600 or 0640 (chmod 600 "
                 "%s)",
                 path, modes[i], path);
        ck_assert_str_eq(err, want);
        ck_assert_int_ne(tokens_add(path, "x", TOKEN_READ, tok, sizeof tok, err, sizeof err), 0);
        ck_assert_int_ne(tokens_revoke(path, "ops", err, sizeof err), 0);
    }
    ck_assert_int_eq(chmod(path, 0400), 0);
    ck_assert_int_eq(tokens_load(path, &s, err, sizeof err), 0);
    tokens_free(&s);
    clean_dir(path);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("tokens");
    TCase *tc = tcase_create("tokens");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, token_shape);
    tcase_add_test(tc, hash_is_sha256);
    tcase_add_test(tc, verify_finds_the_entry);
    tcase_add_loop_test(tc, malformed_lines, 0, (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, good_file_forms);
    tcase_add_test(tc, add_list_revoke);
    tcase_add_test(tc, mode_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
