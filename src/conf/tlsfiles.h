/* tlsfiles.h -- the certificate and key of http.tls, read and checked
 * before the HTTP endpoint is given them (at start and on SIGHUP), so that
 * a bad file is a precise error and never a server without TLS.
 *
 * Checked with OpenSSL (libmicrohttpd's GnuTLS reads them again): the
 * certificate file holds a PEM certificate (a chain: the first is the
 * server's), the key file a PEM private key that matches it; the key file
 * is a regular file nobody but its owner and group may read (mode 0640 at
 * most, as http.tokens_file). */
#ifndef BATON_TLSFILES_H
#define BATON_TLSFILES_H

#include <stdbool.h>
#include <stddef.h>

#define TLS_FILE_MAX (1024 * 1024) /* a certificate chain or key, at most */

struct tls_files {
    char *cert, *key; /* PEM text, NUL-terminated; owned */
    size_t cert_len, key_len;
    char subject[256];  /* the certificate's subject, one line */
    char not_after[32]; /* RFC 3339, UTC */
};

/* Reads and checks cert_path and key_path into out. Returns 0, or -1 with
 * msg ("http.tls.key /etc/baton/key.pem: does not match the certificate
 * ..."); out is then empty. */
int tls_files_load(const char *cert_path, const char *key_path, struct tls_files *out, char *msg,
                   size_t msglen);

/* True when a and b hold the same certificate and key. */
bool tls_files_same(const struct tls_files *a, const struct tls_files *b);

/* Wipes the key and frees both texts; out is empty after. NULL-safe. */
void tls_files_free(struct tls_files *f);

#endif /* BATON_TLSFILES_H */
