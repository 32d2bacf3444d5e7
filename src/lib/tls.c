/* tls.c -- the TLS transport: OpenSSL over a socket that sock.c dialled.
 *
 * The handshake is non-blocking and bounded by the connect deadline; reads
 * and writes never block (SSL_read/SSL_write on a non-blocking socket, the
 * wait done by conn.c with the event OpenSSL asked for). Bytes go through a
 * BIO of our own that sends with MSG_NOSIGNAL: a server that went away
 * makes a write fail, never raises SIGPIPE in the caller's process (a
 * library installs no signal handler). The settings (CA, client
 * certificate, verification) live in one SSL_CTX per client; each
 * connection has its SSL object, used only by the thread that owns the
 * connection at the time (mux.c's lock).
 *
 * Failures say what failed: "certificate verify failed: unable to get
 * local issuer certificate", "host name mismatch: expected 10.0.0.5,
 * certificate is for redis.internal, 10.0.0.6", "TLS handshake timed out
 * after 1000 ms", "the server ended the TLS session: tlsv13 alert
 * certificate required". */
#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport_int.h"

struct baton__tls {
    SSL_CTX *ctx;
    BIO_METHOD *bio; /* our socket BIO: MSG_NOSIGNAL */
    char *sni;       /* the name to send and verify instead of the host */
    bool verify;
};

/* One connection's TLS state. */
struct tls_conn {
    SSL *ssl;
    int verify_err; /* the first certificate error seen, 0 none */
    char expected[256];
    char names[200]; /* what the server's certificate is for, on a mismatch */
};

/* ---- the BIO ---- */

static int bio_write(BIO *b, const char *buf, int len)
{
    int fd = (int)(intptr_t)BIO_get_data(b);
    BIO_clear_retry_flags(b);
    ssize_t n = send(fd, buf, (size_t)len, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        BIO_set_retry_write(b);
    return (int)n;
}

static int bio_read(BIO *b, char *buf, int len)
{
    int fd = (int)(intptr_t)BIO_get_data(b);
    BIO_clear_retry_flags(b);
    ssize_t n = recv(fd, buf, (size_t)len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        BIO_set_retry_read(b);
    return (int)n;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

/* ---- settings ---- */

/* The reason for the last OpenSSL error of this thread, for a message.
 * no_pem, when not NULL: what to say instead when a file was read but held
 * no PEM object of the kind asked for (OpenSSL says "PEM lib" then, or "no
 * start line", neither of which names the problem). */
static const char *ssl_reason(const char *no_pem)
{
    unsigned long first = ERR_peek_error(), e = ERR_peek_last_error();
    if (no_pem != NULL &&
        (ERR_GET_REASON(e) == ERR_R_PEM_LIB ||
         (ERR_GET_LIB(first) == ERR_LIB_PEM && ERR_GET_REASON(first) == PEM_R_NO_START_LINE)))
        return no_pem;
    const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;
    return r != NULL ? r : "unknown error";
}

/* Checks that path can be read, for a message that names the file. */
static bool readable(const char *what, const char *path, char *err, size_t errlen)
{
    if (access(path, R_OK) == 0)
        return true;
    baton__set_error(err, errlen, "cannot read the %s %s: %s", what, path, strerror(errno));
    return false;
}

int baton__tls_new(const struct baton__url *u, struct baton__tls **out, char *err, size_t errlen)
{
    struct baton__tls *t = calloc(1, sizeof *t);
    int rc = BATON_EINVAL;

    *out = NULL;
    if (t == NULL)
        return BATON_ENOMEM;
    t->verify = u->tls_verify;
    if (u->tls_sni != NULL && (t->sni = strdup(u->tls_sni)) == NULL)
        goto out_nomem;
    ERR_clear_error();
    if ((t->ctx = SSL_CTX_new(TLS_client_method())) == NULL)
        goto out_nomem;
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* Read as much as has arrived with one recv (several records of
     * pipelined replies), not a header then a body per record: what was
     * read ahead shows in tls_pending(). */
    SSL_CTX_set_read_ahead(t->ctx, 1);
    if (u->tls_ca != NULL || u->tls_capath != NULL) {
        if (u->tls_ca != NULL && !readable("CA file", u->tls_ca, err, errlen))
            goto out_free;
        if (u->tls_capath != NULL && !readable("CA directory", u->tls_capath, err, errlen))
            goto out_free;
        if (SSL_CTX_load_verify_locations(t->ctx, u->tls_ca, u->tls_capath) != 1) {
            baton__set_error(err, errlen, "cannot load the CA %s: %s",
                             u->tls_ca != NULL ? u->tls_ca : u->tls_capath, ssl_reason(NULL));
            goto out_free;
        }
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        baton__set_error(err, errlen, "cannot load the system's CA certificates: %s",
                         ssl_reason(NULL));
        goto out_free;
    }
    if (u->tls_cert != NULL) {
        if (!readable("client certificate", u->tls_cert, err, errlen) ||
            !readable("client key", u->tls_key, err, errlen))
            goto out_free;
        if (SSL_CTX_use_certificate_chain_file(t->ctx, u->tls_cert) != 1) {
            baton__set_error(err, errlen, "cannot load the client certificate %s: %s", u->tls_cert,
                             ssl_reason("no certificate in PEM format found"));
            goto out_free;
        }
        if (SSL_CTX_use_PrivateKey_file(t->ctx, u->tls_key, SSL_FILETYPE_PEM) != 1) {
            baton__set_error(err, errlen, "cannot load the client key %s: %s", u->tls_key,
                             ssl_reason("no private key in PEM format found"));
            goto out_free;
        }
        if (SSL_CTX_check_private_key(t->ctx) != 1) {
            baton__set_error(err, errlen, "the client key %s does not match the certificate %s",
                             u->tls_key, u->tls_cert);
            goto out_free;
        }
    }
    if ((t->bio = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "baton socket")) ==
            NULL ||
        BIO_meth_set_write(t->bio, bio_write) != 1 || BIO_meth_set_read(t->bio, bio_read) != 1 ||
        BIO_meth_set_ctrl(t->bio, bio_ctrl) != 1 || BIO_meth_set_create(t->bio, bio_create) != 1)
        goto out_nomem;
    ERR_clear_error();
    *out = t;
    return BATON_OK;
out_nomem:
    rc = BATON_ENOMEM;
out_free:
    ERR_clear_error();
    baton__tls_free(t);
    return rc;
}

void baton__tls_free(struct baton__tls *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    if (t->bio != NULL)
        BIO_meth_free(t->bio);
    free(t->sni);
    free(t);
}

/* ---- the handshake ---- */

static bool is_ip(const char *s)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static void add_name(char *names, size_t len, const char *name)
{
    size_t o = strlen(names);
    if (o + 2 >= len)
        return;
    snprintf(names + o, len - o, "%s%s", o > 0 ? ", " : "", name);
}

/* What cert is for: its subjectAltName DNS names and IP addresses, else
 * its common name. */
static void cert_names(X509 *cert, char *names, size_t len)
{
    GENERAL_NAMES *gens = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    names[0] = '\0';
    for (int i = 0; gens != NULL && i < sk_GENERAL_NAME_num(gens); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        char buf[INET6_ADDRSTRLEN + 1];
        if (g->type == GEN_DNS) {
            const unsigned char *d = ASN1_STRING_get0_data(g->d.dNSName);
            int n = ASN1_STRING_length(g->d.dNSName);
            snprintf(buf, sizeof buf, "%.*s", n < 0 ? 0 : n, (const char *)d);
            add_name(names, len, buf);
        } else if (g->type == GEN_IPADD) {
            int n = ASN1_STRING_length(g->d.iPAddress);
            const unsigned char *d = ASN1_STRING_get0_data(g->d.iPAddress);
            if ((n == 4 || n == 16) &&
                inet_ntop(n == 4 ? AF_INET : AF_INET6, d, buf, sizeof buf) != NULL)
                add_name(names, len, buf);
        }
    }
    GENERAL_NAMES_free(gens);
    if (names[0] == '\0' &&
        X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, names, (int)len) < 0)
        snprintf(names, len, "(no name)");
}

static int verify_cb(int ok, X509_STORE_CTX *x)
{
    if (ok)
        return ok;
    SSL *ssl = X509_STORE_CTX_get_ex_data(x, SSL_get_ex_data_X509_STORE_CTX_idx());
    struct tls_conn *t = ssl != NULL ? SSL_get_app_data(ssl) : NULL;
    int e = X509_STORE_CTX_get_error(x);
    if (t != NULL && t->verify_err == 0) {
        t->verify_err = e;
        X509 *cert = X509_STORE_CTX_get_current_cert(x);
        if ((e == X509_V_ERR_HOSTNAME_MISMATCH || e == X509_V_ERR_IP_ADDRESS_MISMATCH) &&
            cert != NULL)
            cert_names(cert, t->names, sizeof t->names);
    }
    return ok;
}

/* Describes why the handshake failed, into cn->err. */
static void handshake_failed(struct baton__conn *cn, int ssl_error, int sys_errno)
{
    struct tls_conn *t = cn->tls;
    long v = t->verify_err != 0 ? t->verify_err : SSL_get_verify_result(t->ssl);
    cn->broken = true;
    if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH)
        baton__set_error(cn->err, sizeof cn->err,
                         "host name mismatch: expected %s, certificate is for %s", t->expected,
                         t->names[0] ? t->names : "another name");
    else if (v != X509_V_OK)
        baton__set_error(cn->err, sizeof cn->err, "certificate verify failed: %s",
                         X509_verify_cert_error_string(v));
    else if (ssl_error == SSL_ERROR_SYSCALL && ERR_peek_last_error() == 0)
        /* A server that closes at once sends a FIN, or a RST when our
         * ClientHello reached it first: the same diagnosis either way. */
        baton__set_error(cn->err, sizeof cn->err, "TLS handshake failed: %s",
                         sys_errno != 0 && sys_errno != ECONNRESET && sys_errno != EPIPE
                             ? strerror(sys_errno)
                             : "connection closed by the server (is it a TLS port?)");
    else
        baton__set_error(cn->err, sizeof cn->err, "TLS handshake failed: %s", ssl_reason(NULL));
    ERR_clear_error();
}

static int tls_connect(struct baton__conn *cn, const struct baton__endpoint *ep,
                       int64_t deadline_ns)
{
    const struct baton__tls *s = ep->tls;
    const char *why = "unknown error";
    int64_t t0 = baton__now_ns();
    struct tls_conn *t;

    if ((cn->fd = baton__sock_dial(ep, deadline_ns, &why)) < 0) {
        baton__set_error(cn->err, sizeof cn->err, "cannot connect: %s", why);
        return BATON_EIO;
    }
    if ((t = calloc(1, sizeof *t)) == NULL)
        return BATON_ENOMEM;
    cn->tls = t;
    ERR_clear_error();
    BIO *b = BIO_new(s->bio);
    if ((t->ssl = SSL_new(s->ctx)) == NULL || b == NULL) {
        BIO_free(b);
        ERR_clear_error();
        return BATON_ENOMEM;
    }
    BIO_set_data(b, (void *)(intptr_t)cn->fd);
    SSL_set_bio(t->ssl, b, b);
    SSL_set_app_data(t->ssl, t);
    const char *name = s->sni != NULL ? s->sni : ep->host;
    baton__set_error(t->expected, sizeof t->expected, "%s", name);
    if (!is_ip(name))
        SSL_set_tlsext_host_name(t->ssl, name);
    if (s->verify) {
        X509_VERIFY_PARAM *p = SSL_get0_param(t->ssl);
        X509_VERIFY_PARAM_set_hostflags(p, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        if (is_ip(name) ? X509_VERIFY_PARAM_set1_ip_asc(p, name) != 1
                        : X509_VERIFY_PARAM_set1_host(p, name, 0) != 1) {
            ERR_clear_error();
            baton__set_error(cn->err, sizeof cn->err, "cannot verify the name %s", name);
            return BATON_ETLS;
        }
        SSL_set_verify(t->ssl, SSL_VERIFY_PEER, verify_cb);
    } else {
        SSL_set_verify(t->ssl, SSL_VERIFY_NONE, NULL);
    }
    for (;;) {
        ERR_clear_error();
        errno = 0;
        int r = SSL_connect(t->ssl);
        if (r == 1)
            return BATON_OK;
        int e = SSL_get_error(t->ssl, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
            handshake_failed(cn, e, errno);
            return BATON_ETLS;
        }
        int w = baton__wait_fd(cn->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline_ns);
        if (w <= 0) {
            ERR_clear_error();
            if (w == 0)
                /* The time it was given, up to a whole 10 ms: the caller's
                 * own moments before the dial are not the handshake's. */
                baton__set_error(cn->err, sizeof cn->err, "TLS handshake timed out after %lld ms",
                                 (long long)((deadline_ns - t0 + 9999999) / 10000000 * 10));
            else
                baton__set_error(cn->err, sizeof cn->err, "TLS handshake: %s", strerror(errno));
            return BATON_EIO;
        }
    }
}

/* ---- I/O ---- */

/* After a write failed because the server closed the connection: the
 * server may have said why in an alert that arrived before (TLS 1.3 checks
 * a client certificate only after the client's handshake is done). Reads
 * it without blocking. Returns true with the reason in cn->err. */
static bool read_alert(struct baton__conn *cn)
{
    struct tls_conn *t = cn->tls;
    char one;
    ERR_clear_error();
    int r = SSL_read(t->ssl, &one, 1);
    if (r > 0 || SSL_get_error(t->ssl, r) != SSL_ERROR_SSL || ERR_peek_last_error() == 0) {
        ERR_clear_error();
        return false;
    }
    return true;
}

/* A failed SSL_read/SSL_write: would block (0, cn->want set), or broken. */
static ssize_t io_result(struct baton__conn *cn, int r, const char *op)
{
    struct tls_conn *t = cn->tls;
    int saved = errno;
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_SYSCALL && ERR_peek_last_error() == 0 &&
        (saved == ECONNRESET || saved == EPIPE) && strcmp(op, "write: ") == 0 && read_alert(cn))
        e = SSL_ERROR_SSL;
    switch (e) {
    case SSL_ERROR_WANT_READ: cn->want = POLLIN; return 0;
    case SSL_ERROR_WANT_WRITE: cn->want = POLLOUT; return 0;
    case SSL_ERROR_ZERO_RETURN:
        baton__conn_fail(cn, "connection closed by the server", "");
        return BATON_EIO;
    case SSL_ERROR_SYSCALL:
        if (ERR_peek_last_error() == 0) {
            if (saved != 0)
                baton__conn_fail(cn, op, strerror(saved));
            else
                baton__conn_fail(cn, "connection closed by the server", "");
            ERR_clear_error();
            return BATON_EIO;
        }
        break;
    default: break;
    }
    const char *reason = ssl_reason(NULL);
    baton__set_error(cn->err, sizeof cn->err, "the server ended the TLS session: %s%s", reason,
                     strstr(reason, "certificate required") != NULL
                         ? " (the server requires a client certificate: give cert= and key=)"
                         : "");
    cn->broken = true;
    ERR_clear_error();
    return BATON_ETLS;
}

static ssize_t tls_read(struct baton__conn *cn, char *buf, size_t len)
{
    struct tls_conn *t = cn->tls;
    ERR_clear_error();
    errno = 0;
    int n = SSL_read(t->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    return n > 0 ? n : io_result(cn, n, "read: ");
}

static ssize_t tls_write(struct baton__conn *cn, const char *buf, size_t len)
{
    struct tls_conn *t = cn->tls;
    ERR_clear_error();
    errno = 0;
    int n = SSL_write(t->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    return n > 0 ? n : io_result(cn, n, "write: ");
}

static bool tls_pending(const struct baton__conn *cn)
{
    const struct tls_conn *t = cn->tls;
    return t != NULL && t->ssl != NULL && SSL_has_pending(t->ssl) == 1;
}

static void tls_close(struct baton__conn *cn)
{
    struct tls_conn *t = cn->tls;
    if (t != NULL) {
        if (t->ssl != NULL && !cn->broken && SSL_is_init_finished(t->ssl))
            (void)SSL_shutdown(t->ssl); /* close_notify, without waiting */
        SSL_free(t->ssl);
        ERR_clear_error();
        free(t);
        cn->tls = NULL;
    }
    if (cn->fd >= 0)
        close(cn->fd);
    cn->fd = -1;
}

const struct baton__transport baton__tls_transport = {
    .name = "tls",
    .connect = tls_connect,
    .read = tls_read,
    .write = tls_write,
    .pending = tls_pending,
    .close = tls_close,
};
