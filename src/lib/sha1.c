/* sha1.c -- SHA-1 (FIPS 180-4), only to name our Lua scripts for EVALSHA.
 * Not used for anything that needs a secure hash. */
#include <stdint.h>
#include <string.h>

#include "baton_int.h"

struct sha1 {
    uint32_t h[5];
    uint64_t total;
    unsigned char block[64];
    size_t fill;
};

static uint32_t rol(uint32_t x, int n)
{
    return (x << n) | (x >> (32 - n));
}

static void sha1_block(struct sha1 *s, const unsigned char *p)
{
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);

    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5a827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ed9eba1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8f1bbcdc;
        } else {
            f = b ^ c ^ d;
            k = 0xca62c1d6;
        }
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = t;
    }
    s->h[0] += a;
    s->h[1] += b;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
}

static void sha1_update(struct sha1 *s, const unsigned char *p, size_t len)
{
    s->total += len;
    while (len > 0) {
        size_t n = 64 - s->fill;
        if (n > len)
            n = len;
        memcpy(s->block + s->fill, p, n);
        s->fill += n;
        p += n;
        len -= n;
        if (s->fill == 64) {
            sha1_block(s, s->block);
            s->fill = 0;
        }
    }
}

void baton__sha1_hex(const void *data, size_t len, char out[41])
{
    struct sha1 s = {.h = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0}};
    sha1_update(&s, data, len);

    uint64_t bits = s.total * 8;
    unsigned char pad[72] = {0x80};
    size_t padlen = (s.fill < 56) ? 56 - s.fill : 120 - s.fill;
    for (int i = 0; i < 8; i++)
        pad[padlen + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
    sha1_update(&s, pad, padlen + 8);

    unsigned char digest[20];
    for (int i = 0; i < 5; i++) {
        digest[4 * i] = (unsigned char)(s.h[i] >> 24);
        digest[4 * i + 1] = (unsigned char)(s.h[i] >> 16);
        digest[4 * i + 2] = (unsigned char)(s.h[i] >> 8);
        digest[4 * i + 3] = (unsigned char)s.h[i];
    }
    baton__hex(digest, 20, out);
}
