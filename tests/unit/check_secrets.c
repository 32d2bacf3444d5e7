/* check_secrets.c -- what keeps Redis passwords out of sight
 * (src/conf/secrets.c): the fixed mask of a URL, the argument area
 * closed up after masking (what ps shows), and the scrub of the
 * environment, which wipes the text of the block the process started with
 * (what /proc/PID/environ shows), checked in a child started with the
 * passwords in that block.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "secrets.h"
#include "testutil.h"

/* ---- the fixed mask ---- */

static const struct {
    const char *url, *masked;
} masks[] = {
    {"redis://:hunter2@h:1/0", "redis://:***@h:1/0"},
    {"redis://u:a-much-longer-password-than-three@h", "redis://u:***@h"},
    {"redis://legacy-bare-password@h/2", "redis://***@h/2"},
    {"redis://u:ab@h", "redis://u:**@h"}, /* shorter than the mask: never longer */
    {"redis://u:@h", "redis://u:@h"},
    {"rediss://u:p%40ss@h?ca=/ca.pem", "rediss://u:***@h?ca=/ca.pem"},
    {"unix:///s?db=1&password=secret&user=u", "unix:///s?db=1&password=***&user=u"},
    {"redis-sentinel://:p1-long@s1,s2?master=m&sentinel_password=p2-long",
     "redis-sentinel://:***@s1,s2?master=m&sentinel_password=***"},
    {"redis://h:1/0", "redis://h:1/0"},
    {"not a url", "not a url"},
};

START_TEST(mask_is_fixed)
{
    char buf[256];
    size_t len = strlen(masks[_i].url);

    memset(buf, 'Z', sizeof buf);
    memcpy(buf, masks[_i].url, len + 1);
    secrets_mask_url(buf);
    ck_assert_str_eq(buf, masks[_i].masked);
    /* What the string no longer holds is cleared up to its old end. */
    for (size_t i = strlen(buf); i <= len; i++)
        ck_assert_msg(buf[i] == '\0', "%s: byte %zu is %#x", masks[_i].url, i, buf[i]);
    ck_assert_int_eq(buf[len + 1], 'Z');
}
END_TEST

/* ---- the argument area ---- */

/* Lays out the strings one after another in area, as the kernel does, and
 * points argv at them; returns the end of the area. */
static char *layout(char *area, size_t cap, const char *const *strs, int n, char **argv)
{
    char *w = area;

    memset(area, 'Z', cap);
    for (int i = 0; i < n; i++) {
        size_t len = strlen(strs[i]) + 1;
        ck_assert_uint_le((size_t)(w - area) + len, cap);
        memcpy(w, strs[i], len);
        argv[i] = w;
        w += len;
    }
    argv[n] = NULL;
    return w;
}

/* The area as ps would show it: NULs between strings as spaces, those at
 * the end left out. */
static void shown(const char *area, const char *end, char *out, size_t len)
{
    const char *last = end;
    size_t o = 0;

    while (last > area && last[-1] == '\0')
        last--;
    for (const char *p = area; p < last && o + 1 < len; p++)
        out[o++] = *p == '\0' ? ' ' : *p;
    out[o] = '\0';
}

START_TEST(argv_closed_up)
{
    static const char *const strs[] = {"lock", "--url", "redis://:s3cret-s3cret@h/0", "--url=redis://u:an0ther-pw@h2/0", "k", "--", "true"};
    char area[512], *argv[8], out[512], *urls[2];
    char *end = layout(area, sizeof area, strs, 7, argv);

    urls[0] = argv[2];
    urls[1] = argv[3] + strlen("--url=");
    secrets_mask_argv(7, argv, urls, 2);
    ck_assert_str_eq(argv[0], "lock");
    ck_assert_str_eq(argv[1], "--url");
    ck_assert_str_eq(argv[2], "redis://:***@h/0");
    ck_assert_str_eq(argv[3], "--url=redis://u:***@h2/0");
    ck_assert_str_eq(argv[4], "k");
    ck_assert_str_eq(argv[5], "--");
    ck_assert_str_eq(argv[6], "true");
    shown(area, end, out, sizeof out);
    ck_assert_str_eq(out, "lock --url redis://:***@h/0 --url=redis://u:***@h2/0 k -- true");
    ck_assert_ptr_null(memmem(area, (size_t)(end - area), "s3cret", 6));
    ck_assert_ptr_null(memmem(area, (size_t)(end - area), "an0ther", 7));
    ck_assert_int_eq(*end, 'Z'); /* nothing written past the area */
}
END_TEST

/* argv[] in another order than memory (a parser that permutes): each
 * pointer still names its own string. */
START_TEST(argv_permuted)
{
    static const char *const strs[] = {"a", "redis://:pw-pw-pw@h", "b"};
    char area[128], *argv[4], out[128], *url;
    char *end = layout(area, sizeof area, strs, 3, argv), *tmp;

    url = argv[1];
    tmp = argv[0];
    argv[0] = argv[2];
    argv[2] = tmp;
    secrets_mask_argv(3, argv, &url, 1);
    ck_assert_str_eq(argv[0], "b");
    ck_assert_str_eq(argv[1], "redis://:***@h");
    ck_assert_str_eq(argv[2], "a");
    shown(area, end, out, sizeof out);
    ck_assert_str_eq(out, "a redis://:***@h b");
}
END_TEST

/* Strings not laid out one after another: masked each in place, nothing
 * moved. */
START_TEST(argv_scattered)
{
    char a[] = "x", url[] = "redis://:pw-pw-pw@h", b[] = "y";
    char *argv[] = {a, url, b, NULL}, *u = url;

    secrets_mask_argv(3, argv, &u, 1);
    ck_assert_ptr_eq(argv[0], a);
    ck_assert_ptr_eq(argv[1], url);
    ck_assert_ptr_eq(argv[2], b);
    ck_assert_str_eq(url, "redis://:***@h");
}
END_TEST

/* ---- the environment block ---- */

#define CHILD_FLAG "--scrub-child"

/* In the child: scrub, then write what /proc/self/environ shows, and what
 * getenv says, to stdout. */
static int scrub_child(void)
{
    char buf[65536];
    ssize_t n;
    size_t len = 0;
    int fd;

    secrets_scrub_env();
    fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 2;
    while (len < sizeof buf && (n = read(fd, buf + len, sizeof buf - len)) > 0)
        len += (size_t)n;
    close(fd);
    for (size_t i = 0; i < len; i++)
        if (buf[i] == '\0')
            buf[i] = '\n';
    if (fwrite(buf, 1, len, stdout) != len)
        return 2;
    printf("getenv:%s,%s,%s,%s\n", getenv("BATON_REDIS_PASSWORD") ? "set" : "unset",
           getenv("BATON_SENTINEL_PASSWORD") ? "set" : "unset",
           getenv("BATON_REDIS_URL") ? "set" : "unset", getenv("KEEP_ME") ? getenv("KEEP_ME") : "-");
    return fflush(stdout) == 0 ? 0 : 2;
}

/* Runs this program as the child with env; returns its output (owned). */
static char *run_child(char *const *env)
{
    int fds[2];
    char *out = calloc(1, 131072);
    size_t len = 0;
    ssize_t n;
    int st;

    ck_assert_ptr_nonnull(out);
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char *argv[] = {"check_secrets", CHILD_FLAG, NULL};
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execve("/proc/self/exe", argv, env);
        _exit(127);
    }
    close(fds[1]);
    while (len + 1 < 131072 && (n = read(fds[0], out + len, 131071 - len)) > 0)
        len += (size_t)n;
    close(fds[0]);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed (status %#x): %s", st,
                  out);
    return out;
}

/* unsetenv() left the strings in the block /proc/PID/environ reads: a job
 * reading /proc/<baton>/environ, or `ps axe`, found the password. */
START_TEST(scrub_wipes_the_block)
{
    char *env[] = {"KEEP_ME=kept",
                   "BATON_REDIS_PASSWORD=pw-in-the-block",
                   "BATON_SENTINEL_PASSWORD=sentinel-pw-in-the-block",
                   "BATON_REDIS_URL=redis://:url-pw-in-the-block@h/0",
                   "BATON_REDIS_PASSWORD=pw-given-twice",
                   NULL};
    char *out = run_child(env);

    ck_assert_msg(strstr(out, "in-the-block") == NULL && strstr(out, "given-twice") == NULL,
                  "/proc/self/environ after the scrub:\n%s", out);
    ck_assert_msg(strstr(out, "BATON_") == NULL, "%s", out);
    ck_assert_msg(strstr(out, "KEEP_ME=kept\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "getenv:unset,unset,unset,kept\n") != NULL, "%s", out);
    free(out);

    /* A URL without a password stays, for the command to use. */
    char *plain[] = {"BATON_REDIS_URL=redis://h:1/0", NULL};
    out = run_child(plain);
    ck_assert_msg(strstr(out, "BATON_REDIS_URL=redis://h:1/0\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "getenv:unset,unset,set,-\n") != NULL, "%s", out);
    free(out);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("secrets");
    TCase *tc = tcase_create("secrets");

    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, mask_is_fixed, 0, (int)(sizeof masks / sizeof masks[0]));
    tcase_add_test(tc, argv_closed_up);
    tcase_add_test(tc, argv_permuted);
    tcase_add_test(tc, argv_scattered);
    tcase_add_test(tc, scrub_wipes_the_block);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], CHILD_FLAG) == 0)
        return scrub_child();
    return tu_run(suite());
}
