/* utf8.c -- see utf8.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* The valid ranges of the byte after a lead byte (RFC 3629, table 3-7 of
 * the Unicode standard): they exclude overlongs, surrogates and code
 * points above U+10FFFF. */
static bool second_ok(unsigned char lead, unsigned char b)
{
    switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
    }
}

size_t utf8_seq(const unsigned char *s, size_t n, size_t *sub)
{
    unsigned char c = s[0];
    size_t need;
    *sub = 1;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        need = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        need = 4;
    else
        return 0; /* a continuation byte, C0, C1 or F5..FF */
    for (size_t i = 1; i < need; i++) {
        bool ok = i < n && (i == 1 ? second_ok(c, s[1]) : (s[i] >= 0x80 && s[i] <= 0xBF));
        if (!ok) {
            *sub = i; /* the lead and the continuation bytes that fit */
            return 0;
        }
    }
    return need;
}

bool utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t sub, k = utf8_seq(p + i, n - i, &sub);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}

size_t utf8_cut(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    /* A sequence is at most 4 bytes: its lead is among the last 3. */
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        size_t at = n - back, sub;
        if (p[at] < 0xC0)
            continue; /* ASCII or a continuation byte: look further back */
        if (p[at] < 0xC2 || p[at] > 0xF4)
            return n; /* never a lead byte: invalid, cut anywhere */
        /* A lead byte: is p[at..n) the valid beginning of a longer
         * sequence? utf8_seq() reports how far it stays valid. */
        if (utf8_seq(p + at, back, &sub) == 0 && sub == back)
            return at;
        return n;
    }
    return n;
}

char *json_quote_bytes(const char *s, size_t n, bool *replaced)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    /* Worst case: every byte becomes \u00XX or \ufffd (6 bytes). */
    char *out = malloc(n * 6 + 3);
    size_t o = 0;
    if (replaced != NULL)
        *replaced = false;
    if (out == NULL)
        return NULL;
    out[o++] = '"';
    for (size_t i = 0; i < n;) {
        size_t sub, k = utf8_seq(p + i, n - i, &sub);
        if (k == 0) {
            memcpy(out + o, "\\ufffd", 6);
            o += 6;
            i += sub;
            if (replaced != NULL)
                *replaced = true;
            continue;
        }
        if (k > 1) {
            memcpy(out + o, p + i, k);
            o += k;
            i += k;
            continue;
        }
        unsigned char c = p[i++];
        switch (c) {
        case '"': out[o++] = '\\'; out[o++] = '"'; break;
        case '\\': out[o++] = '\\'; out[o++] = '\\'; break;
        case '\n': out[o++] = '\\'; out[o++] = 'n'; break;
        case '\r': out[o++] = '\\'; out[o++] = 'r'; break;
        case '\t': out[o++] = '\\'; out[o++] = 't'; break;
        case '\b': out[o++] = '\\'; out[o++] = 'b'; break;
        case '\f': out[o++] = '\\'; out[o++] = 'f'; break;
        default:
            if (c < 0x20 || c == 0x7F) {
                memcpy(out + o, "\\u00", 4);
                out[o + 4] = hex[c >> 4];
                out[o + 5] = hex[c & 15];
                o += 6;
            } else {
                out[o++] = (char)c;
            }
        }
    }
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

char *utf8_fix(const char *s)
{
    size_t n = strlen(s);
    const unsigned char *p = (const unsigned char *)s;
    char *out = malloc(n * 3 + 1); /* one invalid byte becomes 3 */
    size_t o = 0;
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n;) {
        size_t sub, k = utf8_seq(p + i, n - i, &sub);
        if (k == 0) {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i += sub;
        } else {
            memcpy(out + o, p + i, k);
            o += k;
            i += k;
        }
    }
    out[o] = '\0';
    return out;
}

/* The code point of the valid sequence p[0..k) (utf8_seq). */
static unsigned decode(const unsigned char *p, size_t k)
{
    static const unsigned char lead_bits[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    unsigned cp = p[0] & lead_bits[k];
    for (size_t i = 1; i < k; i++)
        cp = (cp << 6) | (p[i] & 0x3F);
    return cp;
}

/* True for the characters a terminal acts on, or that reorder what it
 * shows: C0 controls (ESC starts every escape sequence), DEL, C1 controls
 * (U+009B is a CSI to some terminals), and the bidirectional embeddings,
 * overrides and isolates. */
static bool term_acts(unsigned cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

size_t utf8_term_escape(const char *s, size_t n, char *buf, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t need = 0, o = 0;
    bool cut = len == 0;
    for (size_t i = 0; i < n;) {
        char esc[8];
        const char *piece = esc;
        size_t sub, k = utf8_seq(p + i, n - i, &sub), m;
        unsigned cp = k > 0 ? decode(p + i, k) : 0;
        if (k == 0) { /* each byte of an invalid sequence, as a byte */
            m = (size_t)snprintf(esc, sizeof esc, "\\x%02x", p[i]);
            k = 1;
        } else if (!term_acts(cp)) {
            piece = (const char *)p + i;
            m = k;
        } else if (cp == '\n') {
            piece = "\\n", m = 2;
        } else if (cp == '\r') {
            piece = "\\r", m = 2;
        } else if (cp == '\t') {
            piece = "\\t", m = 2;
        } else if (cp < 0x80) {
            m = (size_t)snprintf(esc, sizeof esc, "\\x%02x", cp);
        } else {
            m = (size_t)snprintf(esc, sizeof esc, "\\u%04x", cp);
        }
        if (!cut && o + m < len) { /* whole pieces only, room for the NUL */
            memcpy(buf + o, piece, m);
            o += m;
        } else {
            cut = true;
        }
        need += m;
        i += k;
    }
    if (len > 0)
        buf[o] = '\0';
    return need;
}

const char *utf8_term(const char *s, char *buf, size_t len)
{
    utf8_term_escape(s, strlen(s), buf, len);
    return buf;
}

char *utf8_term_dup(const char *s)
{
    size_t n = strlen(s), need = utf8_term_escape(s, n, NULL, 0);
    char *out = malloc(need + 1);
    if (out != NULL)
        utf8_term_escape(s, n, out, need + 1);
    return out;
}
