/* util.c -- clock, randomness, hex and the one writer of error detail. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "base_int.h"

int64_t baton__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int baton__random(void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return BATON_EIO;
        }
        p += n;
        len -= (size_t)n;
    }
    return BATON_OK;
}

void baton__hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

char *baton__i64_str(int64_t v, char buf[BATON__I64_LEN])
{
    char tmp[BATON__I64_LEN];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    char *p = buf;
    if (v < 0)
        *p++ = '-';
    while (n > 0)
        *p++ = tmp[--n];
    *p = '\0';
    return buf;
}

void baton__set_error(char *dst, size_t len, const char *fmt, ...)
{
    if (dst == NULL || len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, len, fmt, ap);
    va_end(ap);
    if (n < 0)
        dst[0] = '\0';
}

uint64_t baton__rand_next(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9e3779b97f4a7c15u;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1du;
}

int64_t baton__jitter(int64_t d, uint64_t *state)
{
    if (d <= 0)
        return 0;
    int64_t span = d / 2; /* [0.75 d, 1.25 d] */
    if (span == 0)
        return d;
    return d - d / 4 + (int64_t)(baton__rand_next(state) % (uint64_t)(span + 1));
}

void baton__timespec_at(int64_t ns, struct timespec *ts)
{
    if (ns < 0)
        ns = 0;
    ts->tv_sec = ns / 1000000000;
    ts->tv_nsec = ns % 1000000000;
}

int baton__cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    if (pthread_condattr_init(&a) != 0)
        return BATON_ENOMEM;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int r = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return r == 0 ? BATON_OK : BATON_ENOMEM;
}

void baton__append_detail(char *detail, size_t len, const char *fmt, ...)
{
    size_t o = strlen(detail);
    va_list ap;
    if (o + 3 >= len)
        return;
    if (o > 0) {
        memcpy(detail + o, "; ", 3);
        o += 2;
    }
    va_start(ap, fmt);
    vsnprintf(detail + o, len - o, fmt, ap);
    va_end(ap);
}
