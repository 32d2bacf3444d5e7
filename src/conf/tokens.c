/* tokens.c -- see tokens.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "tokens.h"

#define HASH_PREFIX  "sha256:"
#define MODE_ALLOWED 0640u
#define FILE_HEADER  "# baton tokens: NAME ROLE sha256:HEX (baton token new|list|revoke)\n"

static const char *const role_names[] = {"read", "operate"};

const char *token_role_name(enum token_role r)
{
    return r == TOKEN_OPERATE ? role_names[1] : role_names[0];
}

bool token_role_parse(const char *name, enum token_role *r)
{
    for (int i = 0; i < 2; i++) {
        if (strcmp(name, role_names[i]) == 0) {
            *r = (enum token_role)i;
            return true;
        }
    }
    return false;
}

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '@' || c == '-';
}

bool token_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > TOKEN_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!name_char(name[i]))
            return false;
    return true;
}

void token_hash(const char *token, size_t len, unsigned char hash[TOKEN_HASH_LEN])
{
    unsigned int n = 0;
    if (EVP_Digest(token, len, hash, &n, EVP_sha256(), NULL) != 1 || n != TOKEN_HASH_LEN)
        memset(hash, 0, TOKEN_HASH_LEN); /* matches nothing a real token hashes to */
}

int token_make(char *buf, size_t len)
{
    static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char raw[33]; /* 32 random bytes and a zero: 44 sextets, the last 2 bits zero */
    if (len < TOKEN_TEXT_LEN + 1 || RAND_bytes(raw, 32) != 1)
        return -1;
    raw[32] = 0;
    memcpy(buf, "bt_", 3);
    size_t o = 3;
    for (size_t i = 0; i < 33 && o < TOKEN_TEXT_LEN; i += 3) {
        unsigned v = (unsigned)raw[i] << 16 | (i + 1 < 33 ? (unsigned)raw[i + 1] << 8 : 0) |
                     (i + 2 < 33 ? raw[i + 2] : 0);
        for (int k = 3; k >= 0 && o < TOKEN_TEXT_LEN; k--)
            buf[o++] = b64url[(v >> (6 * k)) & 63];
    }
    buf[o] = '\0';
    OPENSSL_cleanse(raw, sizeof raw);
    return 0;
}

const struct token_entry *tokens_verify(const struct token_set *s, const char *token, size_t len)
{
    unsigned char h[TOKEN_HASH_LEN];
    const struct token_entry *found = NULL;
    token_hash(token, len, h);
    for (size_t i = 0; i < s->n; i++) {
        /* Every entry is compared; the match is kept without a branch on
         * the comparison's time. */
        int differs = CRYPTO_memcmp(h, s->v[i].hash, TOKEN_HASH_LEN);
        if (differs == 0 && found == NULL)
            found = &s->v[i];
    }
    OPENSSL_cleanse(h, sizeof h);
    return found;
}

void tokens_free(struct token_set *s)
{
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* One field of a line: [*p, end) up to a space or tab. */
struct field {
    const char *s;
    size_t n;
    size_t col; /* 1-based */
};

static bool next_field(const char *line, size_t len, size_t *p, struct field *f)
{
    while (*p < len && (line[*p] == ' ' || line[*p] == '\t'))
        (*p)++;
    if (*p >= len)
        return false;
    f->s = line + *p;
    f->col = *p + 1;
    while (*p < len && line[*p] != ' ' && line[*p] != '\t')
        (*p)++;
    f->n = (size_t)(line + *p - f->s);
    return true;
}

#define FAIL(col, ...)                                                                             \
    do {                                                                                           \
        int k_ = snprintf(err, errlen, "%s:%zu:%zu: ", file, lineno, (size_t)(col));               \
        if (k_ >= 0 && (size_t)k_ < errlen)                                                        \
            snprintf(err + k_, errlen - (size_t)k_, __VA_ARGS__);                                  \
        goto fail;                                                                                 \
    } while (0)

/* Parses one line (no line end) into e. Returns 1 for an entry, 0 for a
 * blank or comment line, -1 with err. */
static int parse_line(const char *file, size_t lineno, const char *line, size_t len,
                      struct token_entry *e, char *err, size_t errlen)
{
    size_t p = 0;
    struct field name, role, hash, extra;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (!next_field(line, len, &p, &name) || name.s[0] == '#')
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)line[i] < 0x20 && line[i] != '\t')
            FAIL(i + 1, "a control character (0x%02x)", (unsigned)(unsigned char)line[i]);
    if (name.n > TOKEN_NAME_MAX)
        FAIL(name.col, "a token name is at most %d characters", TOKEN_NAME_MAX);
    for (size_t i = 0; i < name.n; i++)
        if (!name_char(name.s[i]))
            FAIL(name.col + i, "'%c' in the token name: use letters, digits, '_', '.', '@' or '-'",
                 name.s[i]);
    memcpy(e->name, name.s, name.n);
    e->name[name.n] = '\0';
    if (!next_field(line, len, &p, &role))
        FAIL(len + 1, "expected a role (read or operate) after the name");
    char rbuf[16];
    snprintf(rbuf, sizeof rbuf, "%.*s", (int)(role.n < 15 ? role.n : 15), role.s);
    if (role.n >= 15 || !token_role_parse(rbuf, &e->role))
        FAIL(role.col, "unknown role \"%.*s\": read or operate", (int)(role.n < 32 ? role.n : 32),
             role.s);
    if (!next_field(line, len, &p, &hash))
        FAIL(len + 1, "expected the token's hash (sha256:HEX) after the role");
    size_t plen = strlen(HASH_PREFIX);
    if (hash.n < plen || memcmp(hash.s, HASH_PREFIX, plen) != 0)
        FAIL(hash.col, "the hash must start with \"" HASH_PREFIX "\"");
    if (hash.n != plen + 2 * TOKEN_HASH_LEN)
        FAIL(hash.col + plen, "the hash must be %d hex digits, not %zu", 2 * TOKEN_HASH_LEN,
             hash.n - plen);
    for (size_t i = 0; i < TOKEN_HASH_LEN; i++) {
        int hi = hexval(hash.s[plen + 2 * i]), lo = hexval(hash.s[plen + 2 * i + 1]);
        if (hi < 0 || lo < 0)
            FAIL(hash.col + plen + 2 * i + (hi < 0 ? 0 : 1), "not a hex digit");
        e->hash[i] = (unsigned char)(hi << 4 | lo);
    }
    if (next_field(line, len, &p, &extra))
        FAIL(extra.col, "unexpected text after the hash");
    return 1;
fail:
    return -1;
}

int tokens_parse(const char *file, const char *buf, size_t len, struct token_set *out, char *err,
                 size_t errlen)
{
    size_t lineno = 0, cap = 0;
    memset(out, 0, sizeof *out);
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(buf + at, '\n', len - at);
        size_t llen = nl != NULL ? (size_t)(nl - (buf + at)) : len - at;
        struct token_entry e;
        lineno++;
        if (memchr(buf + at, '\0', llen) != NULL)
            FAIL((size_t)((const char *)memchr(buf + at, '\0', llen) - (buf + at)) + 1,
                 "a NUL byte");
        int rc = parse_line(file, lineno, buf + at, llen, &e, err, errlen);
        at += llen + (nl != NULL ? 1 : 0);
        if (rc < 0)
            goto fail_quiet;
        if (rc == 0)
            continue;
        for (size_t i = 0; i < out->n; i++)
            if (strcmp(out->v[i].name, e.name) == 0)
                FAIL(1, "token name \"%s\" is used twice (first on another line)", e.name);
        if (out->n == TOKENS_MAX)
            FAIL(1, "more than %d tokens", TOKENS_MAX);
        if (out->n == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            struct token_entry *v = realloc(out->v, ncap * sizeof *v);
            if (v == NULL)
                FAIL(1, "out of memory");
            out->v = v;
            cap = ncap;
        }
        out->v[out->n++] = e;
    }
    return 0;
fail:
fail_quiet:
    tokens_free(out);
    return -1;
}

#undef FAIL

/* Checks fd's file: regular, and a mode within 0640. */
static int check_mode(int fd, const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        return -1;
    }
    if ((st.st_mode & 07777 & ~MODE_ALLOWED) != 0) {
        snprintf(err, errlen,
                 "%s: mode %04o is refused for a tokens file: it must be 0600 or 0640 (chmod 600 "
                 "%s)",
                 path, (unsigned)(st.st_mode & 07777), path);
        return -1;
    }
    return 0;
}

/* Reads fd whole (at most TOKENS_FILE_MAX). Returns: owned, *len; or NULL
 * with err. */
static char *read_all(int fd, const char *path, size_t *len, char *err, size_t errlen)
{
    char *buf = malloc(TOKENS_FILE_MAX + 1);
    *len = 0;
    if (buf == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (;;) {
        ssize_t n = read(fd, buf + *len, TOKENS_FILE_MAX + 1 - *len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            free(buf);
            return NULL;
        }
        if (n == 0)
            break;
        *len += (size_t)n;
        if (*len > TOKENS_FILE_MAX) {
            snprintf(err, errlen, "%s: larger than %d bytes", path, TOKENS_FILE_MAX);
            free(buf);
            return NULL;
        }
    }
    buf[*len] = '\0';
    return buf;
}

/* Reads and parses the open file fd. */
static int load_fd(int fd, const char *path, struct token_set *out, char *err, size_t errlen)
{
    size_t len;
    memset(out, 0, sizeof *out);
    if (check_mode(fd, path, err, errlen) != 0)
        return -1;
    char *buf = read_all(fd, path, &len, err, errlen);
    if (buf == NULL)
        return -1;
    int rc = tokens_parse(path, buf, len, out, err, errlen);
    free(buf);
    return rc;
}

int tokens_load(const char *path, struct token_set *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = load_fd(fd, path, out, err, errlen);
    close(fd);
    return rc;
}

static void hex(const unsigned char *h, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < TOKEN_HASH_LEN; i++) {
        out[2 * i] = digits[h[i] >> 4];
        out[2 * i + 1] = digits[h[i] & 15];
    }
    out[2 * TOKEN_HASH_LEN] = '\0';
}

static int write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

int tokens_add(const char *path, const char *name, enum token_role role, char *token,
               size_t tokenlen, char *err, size_t errlen)
{
    struct token_set set = {0};
    unsigned char h[TOKEN_HASH_LEN];
    char line[TOKEN_NAME_MAX + 100], hx[2 * TOKEN_HASH_LEN + 1];
    int rc = -1;
    if (!token_name_ok(name)) {
        snprintf(err, errlen, "token name \"%.80s\": 1-%d letters, digits, '_', '.', '@' or '-'",
                 name, TOKEN_NAME_MAX);
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX) != 0) {
        snprintf(err, errlen, "%s: cannot lock it: %s", path, strerror(errno));
        goto out;
    }
    if (load_fd(fd, path, &set, err, errlen) != 0)
        goto out;
    for (size_t i = 0; i < set.n; i++) {
        if (strcmp(set.v[i].name, name) == 0) {
            snprintf(err, errlen,
                     "%s: a token named \"%s\" exists already (revoke it first: baton token "
                     "revoke %s --file %s)",
                     path, name, name, path);
            goto out;
        }
    }
    if (set.n >= TOKENS_MAX) {
        snprintf(err, errlen, "%s: holds %d tokens already", path, TOKENS_MAX);
        goto out;
    }
    if (token_make(token, tokenlen) != 0) {
        snprintf(err, errlen, "no randomness for a token (OpenSSL RAND_bytes failed)");
        goto out;
    }
    token_hash(token, strlen(token), h);
    hex(h, hx);
    int n =
        snprintf(line, sizeof line, "%s %s " HASH_PREFIX "%s\n", name, token_role_name(role), hx);
    off_t size = lseek(fd, 0, SEEK_END);
    /* A new file gets the header; a last line without its end gets one. */
    char last = '\n';
    if (size > 0 && pread(fd, &last, 1, size - 1) != 1)
        last = '\n';
    if ((size == 0 && write_all(fd, FILE_HEADER, strlen(FILE_HEADER)) != 0) ||
        (last != '\n' && write_all(fd, "\n", 1) != 0) || write_all(fd, line, (size_t)n) != 0 ||
        fsync(fd) != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        OPENSSL_cleanse(token, tokenlen);
        goto out;
    }
    rc = 0;
out:
    tokens_free(&set);
    close(fd); /* drops the lock */
    return rc;
}

int tokens_revoke(const char *path, const char *name, char *err, size_t errlen)
{
    struct token_set set = {0};
    struct stat st;
    char *tmp = NULL, *buf = NULL;
    size_t len = 0;
    int rc = -1, out_fd = -1;
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX) != 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (check_mode(fd, path, err, errlen) != 0 ||
        (buf = read_all(fd, path, &len, err, errlen)) == NULL ||
        tokens_parse(path, buf, len, &set, err, errlen) != 0)
        goto out;
    bool found = false;
    for (size_t i = 0; i < set.n; i++)
        found = found || strcmp(set.v[i].name, name) == 0;
    if (!found) {
        snprintf(err, errlen, "%s: no token named \"%.80s\"", path, name);
        goto out;
    }
    size_t tlen = strlen(path) + 16;
    tmp = malloc(tlen);
    if (tmp == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    snprintf(tmp, tlen, "%s.new", path);
    out_fd =
        open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, st.st_mode & MODE_ALLOWED);
    if (out_fd < 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        goto out;
    }
    /* Every line but name's, byte for byte. */
    bool bad = fchmod(out_fd, st.st_mode & MODE_ALLOWED) != 0;
    for (size_t at = 0; at < len && !bad;) {
        const char *nl = memchr(buf + at, '\n', len - at);
        size_t llen = nl != NULL ? (size_t)(nl - (buf + at)) + 1 : len - at;
        struct token_entry e;
        char scratch[8];
        int kind = parse_line(path, 0, buf + at, nl != NULL ? llen - 1 : llen, &e, scratch,
                              sizeof scratch);
        if (!(kind == 1 && strcmp(e.name, name) == 0))
            bad = write_all(out_fd, buf + at, llen) != 0;
        at += llen;
    }
    if (bad || fsync(out_fd) != 0 || rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", tmp, strerror(errno));
        unlink(tmp);
        goto out;
    }
    rc = 0;
out:
    if (out_fd >= 0)
        close(out_fd);
    free(tmp);
    free(buf);
    tokens_free(&set);
    close(fd);
    return rc;
}
