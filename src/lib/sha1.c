/* sha1.c -- SHA-1 hex digests, for calling scripts by SHA (EVALSHA): from
 * OpenSSL, which the TLS transport links anyway. */
#include <openssl/sha.h>

#include "baton_int.h"

void baton__sha1_hex(const void *data, size_t len, char out[41])
{
    unsigned char md[SHA_DIGEST_LENGTH];
    SHA1(data, len, md);
    baton__hex(md, sizeof md, out);
}
