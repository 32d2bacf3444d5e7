/* tlsfiles.c -- see tlsfiles.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "tlsfiles.h"

#define KEY_MODE_ALLOWED 0640u

/* Reads path whole (at most TLS_FILE_MAX bytes). Returns 0 and *out
 * (owned, NUL-terminated), or -1 with msg. */
static int slurp(const char *what, const char *path, bool secret, char **out, size_t *len,
                 char *msg, size_t msglen)
{
    struct stat st;
    char *buf = NULL;
    size_t n = 0;
    int rc = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(msg, msglen, "%s %s: %s", what, path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(msg, msglen, "%s %s: not a regular file", what, path);
        goto out;
    }
    if (secret && (st.st_mode & 07777 & ~KEY_MODE_ALLOWED) != 0) {
        snprintf(msg, msglen, "%s %s: mode %04o lets others read or change it: chmod 600 it", what,
                 path, (unsigned)(st.st_mode & 07777));
        goto out;
    }
    if (st.st_size > TLS_FILE_MAX) {
        snprintf(msg, msglen, "%s %s: larger than %d bytes", what, path, TLS_FILE_MAX);
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (buf == NULL) {
        snprintf(msg, msglen, "out of memory");
        goto out;
    }
    while (n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(msg, msglen, "%s %s: %s", what, path, strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    if (memchr(buf, '\0', n) != NULL || n == 0) {
        snprintf(msg, msglen, "%s %s: %s", what, path, n == 0 ? "empty" : "not a PEM file");
        goto out;
    }
    *out = buf;
    *len = n;
    buf = NULL;
    rc = 0;
out:
    if (buf != NULL) {
        OPENSSL_cleanse(buf, n);
        free(buf);
    }
    close(fd);
    return rc;
}

static void asn1_time_text(const ASN1_TIME *t, char *buf, size_t len)
{
    struct tm tm;
    snprintf(buf, len, "?");
    if (t != NULL && ASN1_TIME_to_tm(t, &tm) == 1)
        strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int tls_files_load(const char *cert_path, const char *key_path, struct tls_files *out, char *msg,
                   size_t msglen)
{
    X509 *x = NULL;
    EVP_PKEY *k = NULL;
    BIO *b = NULL;
    int rc = -1;
    memset(out, 0, sizeof *out);
    if (slurp("http.tls.cert", cert_path, false, &out->cert, &out->cert_len, msg, msglen) != 0 ||
        slurp("http.tls.key", key_path, true, &out->key, &out->key_len, msg, msglen) != 0)
        goto out;
    b = BIO_new_mem_buf(out->cert, (int)out->cert_len);
    x = b != NULL ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    if (x == NULL) {
        snprintf(msg, msglen, "http.tls.cert %s: no PEM certificate in it", cert_path);
        goto out;
    }
    b = BIO_new_mem_buf(out->key, (int)out->key_len);
    k = b != NULL ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    if (k == NULL) {
        snprintf(msg, msglen,
                 "http.tls.key %s: no PEM private key in it (or one with a passphrase, which "
                 "baton cannot ask for)",
                 key_path);
        goto out;
    }
    if (X509_check_private_key(x, k) != 1) {
        snprintf(msg, msglen, "http.tls.key %s: does not match the certificate of %s", key_path,
                 cert_path);
        goto out;
    }
    X509_NAME_oneline(X509_get_subject_name(x), out->subject, sizeof out->subject);
    asn1_time_text(X509_get0_notAfter(x), out->not_after, sizeof out->not_after);
    rc = 0;
out:
    ERR_clear_error();
    X509_free(x);
    EVP_PKEY_free(k);
    if (rc != 0)
        tls_files_free(out);
    return rc;
}

bool tls_files_same(const struct tls_files *a, const struct tls_files *b)
{
    return a->cert != NULL && b->cert != NULL && a->cert_len == b->cert_len &&
           a->key_len == b->key_len && memcmp(a->cert, b->cert, a->cert_len) == 0 &&
           CRYPTO_memcmp(a->key, b->key, a->key_len) == 0;
}

void tls_files_free(struct tls_files *f)
{
    if (f == NULL)
        return;
    if (f->key != NULL)
        OPENSSL_cleanse(f->key, f->key_len);
    free(f->key);
    free(f->cert);
    memset(f, 0, sizeof *f);
}
