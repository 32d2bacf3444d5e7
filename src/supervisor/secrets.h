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
 * child inherits them: BATON_REDIS_PASSWORD, BATON_SENTINEL_PASSWORD, and
 * BATON_REDIS_URL when it holds a password. */
void secrets_scrub_env(void);

/* True when url holds a password (userinfo, password= or
 * sentinel_password=). */
int secrets_url_has_password(const char *url);

/* Overwrites the password of url in place with '*' (for argv, so that ps
 * and /proc/PID/cmdline stop showing it). */
void secrets_mask_url(char *url);

#endif
