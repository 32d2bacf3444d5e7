/* secrets.h -- Redis passwords from where operators keep them, never from a
 * command line: a password file (`password_file:` /
 * `sentinel_password_file:` in baton.yaml, `--password-file` for `baton
 * lock`) or the environment (BATON_REDIS_PASSWORD, BATON_SENTINEL_PASSWORD),
 * else the URL's. libbaton reads no file and no environment: the
 * supervisor and the CLI read them here and pass them in struct
 * baton_client_opts. Nothing here prints a password.
 *
 * Precedence: a file named in the configuration or on the command line,
 * then the environment, then the URL. A password file is its first line
 * (without the line end); one that others than its owner may read (mode
 * wider than 0600) is used with a warning. */
#ifndef BATON_SECRETS_H
#define BATON_SECRETS_H

#include <stdbool.h>
#include <stddef.h>

#define SECRETS_WARN_MAX 2

struct secrets {
    char *password;          /* NULL: none given here (the URL's, if any) */
    char *sentinel_password; /* NULL: likewise */
    /* Warnings to show (log at warn, or print on stderr): file modes. */
    char warning[SECRETS_WARN_MAX][320];
    int nwarnings;
};

/* Fills s from the files (NULL, "" or "none" for none) and the environment.
 * Returns 0, or -1 with a message naming the file in err (never its
 * content). Free with secrets_clear() either way. */
int secrets_load(const char *password_file, const char *sentinel_password_file, struct secrets *s,
                 char *err, size_t errlen);

/* Wipes and frees the passwords. */
void secrets_clear(struct secrets *s);

/* Removes the credentials from this process's environment, so that no
 * child inherits them, and wipes their text from the environment block
 * the process started with (what /proc/PID/environ and `ps e` show):
 * BATON_REDIS_PASSWORD, BATON_SENTINEL_PASSWORD, and BATON_REDIS_URL when
 * it holds a password. Call it once the values are copied (secrets_load). */
void secrets_scrub_env(void);

/* True when s or url holds a password (the process then keeps one in its
 * memory: it authenticates again on every reconnection). */
bool secrets_held(const struct secrets *s, const char *url);

/* Makes this process non-dumpable (prctl PR_SET_DUMPABLE 0): no other
 * process of the same user may read its memory (/proc/PID/mem, ptrace),
 * its environment (/proc/PID/environ), its descriptors or maps, and it
 * leaves no core file. Its children are not affected: exec makes a process
 * dumpable again, so jobs, hooks and the shim are as before. `baton run`
 * and `baton lock` call it when they hold a password (secrets_held); its
 * cost, that only root can debug or inspect them, is paid only then.
 * Returns 0 or -1 (errno). */
int secrets_hide_process(void);

/* True when url holds a password (userinfo, password= or
 * sentinel_password=). */
int secrets_url_has_password(const char *url);

/* Overwrites each password of url in place with a fixed "***" (fewer
 * stars for a password of one or two characters), shortening the string;
 * the bytes freed at its end become NULs. Never lengthens url. */
void secrets_mask_url(char *url);

/* Masks the URLs urls[0..n) (each a string inside an element of argv, as
 * the option parser gave it) with secrets_mask_url, and closes the gaps
 * that leaves in the argument area the kernel shows as /proc/PID/cmdline:
 * the strings after a masked one move left (argv[] is updated, in
 * whatever order the parser left it) and the freed bytes go to the end of
 * the area, where ps does not show them. So ps shows neither the password
 * nor its length. Pointers into argv's strings taken before are stale
 * after (argv[] is not). When the strings are not laid out one after the
 * other, each is only masked. */
void secrets_mask_argv(int argc, char **argv, char *const *urls, int n);

#endif
