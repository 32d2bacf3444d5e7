/* tokens.h -- the bearer tokens of the HTTP control API (http.tokens_file):
 * the one owner of the tokens file's format, written by `baton token` and
 * read by `baton run` (at start and on SIGHUP).
 *
 * The file holds names, roles and hashes, never a token. One token a line:
 *
 *   # baton tokens: NAME ROLE sha256:HEX (baton token new|list|revoke)
 *   ops-bot operate sha256:3f9a...(64 hex digits)
 *   grafana read sha256:...
 *
 * Blank lines and lines starting with '#' are ignored. NAME is 1-64
 * letters, digits, '_', '.', '@' or '-', unique in the file; ROLE is
 * `read` (GET only) or `operate` (also POST).
 *
 * A token is "bt_" and 43 base64url characters: 32 bytes from OpenSSL's
 * RAND_bytes (256 bits). It is stored as its SHA-256. A slow password hash
 * (bcrypt, scrypt, argon2) guards low-entropy secrets that people choose
 * against guessing from a stolen file; a 256-bit random token cannot be
 * guessed whatever the hash, so a fast one costs nothing in safety, while
 * a slow one would cost every request (and hand an attacker a cheap way to
 * burn the server's CPU with wrong tokens). Every hash is unique (the
 * tokens are), so a salt adds nothing either.
 *
 * The file may be read by its owner and its group (0600, 0640 or
 * narrower): any other mode is refused, as a file that others can read or
 * anyone but its owner can write is no place for credentials. */
#ifndef BATON_TOKENS_H
#define BATON_TOKENS_H

#include <stdbool.h>
#include <stddef.h>

#define TOKEN_NAME_MAX  64
#define TOKEN_HASH_LEN  32                 /* SHA-256 */
#define TOKEN_TEXT_LEN  (3 + 43)           /* "bt_" + base64url of 32 bytes */
#define TOKENS_MAX      1024               /* tokens in a file, at most */
#define TOKENS_FILE_MAX (TOKENS_MAX * 200) /* bytes of a tokens file, at most */

enum token_role { TOKEN_READ, TOKEN_OPERATE };

/* Returns: "read" or "operate". Static. */
const char *token_role_name(enum token_role r);
/* Finds a role by name. Returns true and *r, or false. */
bool token_role_parse(const char *name, enum token_role *r);
/* True when name is a valid token name (see the top). */
bool token_name_ok(const char *name);

struct token_entry {
    char name[TOKEN_NAME_MAX + 1];
    enum token_role role;
    unsigned char hash[TOKEN_HASH_LEN];
};

struct token_set {
    struct token_entry *v;
    size_t n;
};

/* Parses a tokens file held in buf[0..len) (file: its name in messages).
 * Returns 0 and *out (free with tokens_free), or -1 with err =
 * "file:line:col: message" and *out empty. */
int tokens_parse(const char *file, const char *buf, size_t len, struct token_set *out, char *err,
                 size_t errlen);

/* Reads and parses path, refusing a mode wider than 0640 (see the top).
 * Returns 0 and *out, or -1 with err naming the file (never a hash). */
int tokens_load(const char *path, struct token_set *out, char *err, size_t errlen);

/* Frees what tokens_parse/tokens_load returned; a zeroed set is a no-op. */
void tokens_free(struct token_set *s);

/* The entry whose hash is token's, or NULL. Constant time in what an
 * attacker controls: the token is hashed whole and compared with every
 * entry (CRYPTO_memcmp), none skipped, whatever matched. Borrowed from s. */
const struct token_entry *tokens_verify(const struct token_set *s, const char *token, size_t len);

/* Writes a new token (TOKEN_TEXT_LEN characters and a NUL) into buf
 * (at least TOKEN_TEXT_LEN + 1 bytes). Returns 0, or -1 when OpenSSL has no
 * randomness to give. */
int token_make(char *buf, size_t len);

/* SHA-256 of token[0..len) into hash. */
void token_hash(const char *token, size_t len, unsigned char hash[TOKEN_HASH_LEN]);

/* Makes a token for name with role and appends its line to path, creating
 * the file (mode 0600) when absent; the file is locked (flock) while it is
 * read and written. Refuses a name already in the file, a file that does
 * not parse, or a mode wider than 0640. Returns 0 with the token in
 * token (at least TOKEN_TEXT_LEN + 1 bytes), or -1 with err. */
int tokens_add(const char *path, const char *name, enum token_role role, char *token,
               size_t tokenlen, char *err, size_t errlen);

/* Removes name's line from path (written whole to a temporary file beside
 * it, with the file's mode, then renamed over it), keeping every other line
 * as it was. Returns 0, or -1 with err (no such name, the file cannot be
 * read, parsed or replaced). */
int tokens_revoke(const char *path, const char *name, char *err, size_t errlen);

#endif /* BATON_TOKENS_H */
