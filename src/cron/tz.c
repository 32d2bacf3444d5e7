/* tz.c -- time zones built from TZif data (RFC 8536, versions 1 to 4). Pure:
 * no I/O (tzload.c reads the files), no global state, never touches TZ or
 * the C library's localtime.
 *
 * A zone is one sorted array of transitions: the instant, the UTC offset from
 * then on, and the "high water" wall time reached before it (see
 * cron__span in cron_int.h). The array holds the file's own transitions, then
 * those that the footer's POSIX TZ rule ("CET-1CEST,M3.5.0,M10.5.0/3") gives
 * for the instants after the last one. A POSIX rule repeats every 400
 * Gregorian years (146097 days, a whole number of weeks), so we expand it for
 * one such period only (the "cycle") and shift instants beyond it by whole
 * periods: exact for every year, in ~800 entries.
 *
 * Only offsets matter to cron: a transition that changes only the
 * abbreviation or the isdst flag is dropped, and leap-second records
 * ("right/" zones) are ignored.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cron_int.h"

#define DAY CRON_DAY_SECS
#define PERIOD (CRON_DAYS_400Y * DAY)
/* Zones answer for this range; instants outside are clamped. */
#define T_LO (CRON_T_MIN - 40 * DAY)
#define T_HI (CRON_T_MAX + 40 * DAY)
/* RFC 8536 bounds on a UTC offset. */
#define OFF_MIN (-89999)
#define OFF_MAX 93599
/* A POSIX rule's transitions stay within this distance of their year (times
 * up to 167 h, offsets up to 25 h); the cycle starts this far before Jan 1. */
#define RULE_SLACK (10 * DAY)
#define RULE_YEARS 401
#define NAME_MAX_LEN 255

struct cron_tz {
    char *name;
    int64_t *at;      /* transition instants, strictly ascending */
    int64_t *hw;      /* hw[i]: latest wall time (exclusive) before at[i] */
    int32_t *off;     /* off[i]: the offset from at[i] on */
    size_t n;
    size_t cyc;       /* index of the first transition of the rule cycle; n: none */
    int64_t cyc_lo;   /* the cycle holds the rule's transitions in
                         [cyc_lo, cyc_lo + PERIOD) */
    int32_t base_off; /* the offset before at[0] */
};

/* A date in a POSIX TZ rule: Jn (1-365, Feb 29 never counted), n (0-365),
 * or Mm.w.d (day d of week w of month m; w 5 = the last). */
struct rule_date {
    char kind; /* 'J', 'N' or 'M' */
    int n, m, w, d;
    int32_t secs; /* wall time of the change, -167h..167h */
};

struct posix_tz {
    int32_t std_off, dst_off; /* seconds east of UTC */
    bool has_dst;
    struct rule_date start, end; /* start: to DST, in standard time; end: back */
};

__attribute__((format(printf, 3, 4)))
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- building ------------------------------------------------------------ */

void cron_tz_free(struct cron_tz *tz)
{
    if (tz == NULL)
        return;
    free(tz->name);
    free(tz->at);
    free(tz->hw);
    free(tz->off);
    free(tz);
}

/* Returns: owned zone with room for cap transitions and a copy of name, or
 * NULL when out of memory. */
static struct cron_tz *tz_alloc(const char *name, size_t cap)
{
    struct cron_tz *tz = calloc(1, sizeof *tz);
    size_t nlen = strlen(name);
    if (tz == NULL)
        return NULL;
    if (cap == 0)
        cap = 1;
    tz->name = malloc(nlen + 1);
    tz->at = calloc(cap, sizeof *tz->at);
    tz->hw = calloc(cap, sizeof *tz->hw);
    tz->off = calloc(cap, sizeof *tz->off);
    if (tz->name == NULL || tz->at == NULL || tz->hw == NULL || tz->off == NULL) {
        cron_tz_free(tz);
        return NULL;
    }
    memcpy(tz->name, name, nlen + 1);
    return tz;
}

/* Appends a transition to t with offset off unless the offset does not
 * change. The caller keeps instants strictly ascending and within capacity. */
static void tz_push(struct cron_tz *tz, int64_t t, int32_t off)
{
    int32_t cur = tz->n > 0 ? tz->off[tz->n - 1] : tz->base_off;
    if (off == cur)
        return;
    tz->at[tz->n] = t;
    tz->off[tz->n] = off;
    tz->n++;
}

/* Computes hw[] once all transitions are in. */
static void tz_finish(struct cron_tz *tz)
{
    for (size_t i = 0; i < tz->n; i++) {
        int64_t reached = tz->at[i] + (i > 0 ? tz->off[i - 1] : tz->base_off);
        tz->hw[i] = (i > 0 && tz->hw[i - 1] > reached) ? tz->hw[i - 1] : reached;
    }
    if (tz->cyc > tz->n)
        tz->cyc = tz->n;
}

int cron__tz_fixed(const char *name, int32_t off, struct cron_tz **out, char *err, size_t errlen)
{
    struct cron_tz *tz = tz_alloc(name, 0);
    *out = NULL;
    if (tz == NULL) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    tz->base_off = off;
    tz->cyc = 0; /* == n: no cycle */
    tz_finish(tz);
    *out = tz;
    return 0;
}

/* ---- the POSIX TZ footer -------------------------------------------------- */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* An abbreviation: 3+ letters, or <...> with 3+ letters, digits, + or -.
 * Returns the end of it, or NULL. */
static const char *parse_abbr(const char *p, const char *e)
{
    const char *q = p;
    if (q < e && *q == '<') {
        const char *s = ++q;
        while (q < e && (is_alpha(*q) || is_digit(*q) || *q == '+' || *q == '-'))
            q++;
        if (q >= e || *q != '>' || q - s < 3)
            return NULL;
        return q + 1;
    }
    while (q < e && is_alpha(*q))
        q++;
    return q - p >= 3 ? q : NULL;
}

/* Reads 1 to max_digits digits into *v. Returns the end, or NULL. */
static const char *parse_uint(const char *p, const char *e, int max_digits, int *v)
{
    int n = 0, x = 0;
    while (p < e && is_digit(*p) && n < max_digits) {
        x = x * 10 + (*p - '0');
        p++;
        n++;
    }
    if (n == 0 || (p < e && is_digit(*p)))
        return NULL;
    *v = x;
    return p;
}

/* [+-]h[h[h]][:mm[:ss]] with hours <= max_h into seconds. Returns the end, or
 * NULL. */
static const char *parse_hms(const char *p, const char *e, int max_h, int32_t *out)
{
    int sign = 1, h = 0, mi = 0, s = 0;
    if (p < e && (*p == '+' || *p == '-')) {
        sign = *p == '-' ? -1 : 1;
        p++;
    }
    p = parse_uint(p, e, 3, &h);
    if (p == NULL || h > max_h)
        return NULL;
    if (p < e && *p == ':') {
        p = parse_uint(p + 1, e, 2, &mi);
        if (p == NULL || mi > 59)
            return NULL;
        if (p < e && *p == ':') {
            p = parse_uint(p + 1, e, 2, &s);
            if (p == NULL || s > 59)
                return NULL;
        }
    }
    *out = (int32_t)(sign * (h * 3600 + mi * 60 + s));
    return p;
}

static const char *parse_rule_date(const char *p, const char *e, struct rule_date *r)
{
    memset(r, 0, sizeof *r);
    r->secs = 2 * 3600;
    if (p < e && *p == 'J') {
        r->kind = 'J';
        p = parse_uint(p + 1, e, 3, &r->n);
        if (p == NULL || r->n < 1 || r->n > 365)
            return NULL;
    } else if (p < e && *p == 'M') {
        r->kind = 'M';
        p = parse_uint(p + 1, e, 2, &r->m);
        if (p == NULL || r->m < 1 || r->m > 12 || p >= e || *p != '.')
            return NULL;
        p = parse_uint(p + 1, e, 1, &r->w);
        if (p == NULL || r->w < 1 || r->w > 5 || p >= e || *p != '.')
            return NULL;
        p = parse_uint(p + 1, e, 1, &r->d);
        if (p == NULL || r->d > 6)
            return NULL;
    } else {
        r->kind = 'N';
        p = parse_uint(p, e, 3, &r->n);
        if (p == NULL || r->n > 365)
            return NULL;
    }
    if (p < e && *p == '/')
        p = parse_hms(p + 1, e, 167, &r->secs);
    return p;
}

/* Parses a POSIX TZ string (RFC 8536 section 3.3) in [p, e). Returns 0 or -1. */
static int parse_posix_tz(const char *p, const char *e, struct posix_tz *tz)
{
    int32_t v;
    memset(tz, 0, sizeof *tz);
    p = parse_abbr(p, e);
    if (p != NULL)
        p = parse_hms(p, e, 24, &v);
    if (p == NULL)
        return -1;
    tz->std_off = -v; /* POSIX counts west of UTC */
    if (p == e)
        return 0;
    tz->has_dst = true;
    p = parse_abbr(p, e);
    if (p == NULL)
        return -1;
    tz->dst_off = tz->std_off + 3600;
    if (p < e && *p != ',') {
        p = parse_hms(p, e, 24, &v);
        if (p == NULL)
            return -1;
        tz->dst_off = -v;
    }
    if (p == e) { /* no rule: the traditional US one, as glibc assumes */
        tz->start = (struct rule_date){'M', 0, 3, 2, 0, 7200};
        tz->end = (struct rule_date){'M', 0, 11, 1, 0, 7200};
        return 0;
    }
    if (*p != ',')
        return -1;
    p = parse_rule_date(p + 1, e, &tz->start);
    if (p == NULL || p >= e || *p != ',')
        return -1;
    p = parse_rule_date(p + 1, e, &tz->end);
    return p == e ? 0 : -1;
}

/* Day number of rule date r in year y. */
static int64_t rule_day(const struct rule_date *r, int64_t y)
{
    int64_t jan1 = cron__days_from_civil(y, 1, 1);
    switch (r->kind) {
    case 'J':
        return jan1 + r->n - 1 + (cron__is_leap(y) && r->n >= 60 ? 1 : 0);
    case 'N':
        return jan1 + r->n;
    default: {
        int64_t first = cron__days_from_civil(y, r->m, 1);
        int dd = (r->d - cron__weekday(first) + 7) % 7 + 7 * (r->w - 1);
        while (dd >= cron__month_days(y, r->m))
            dd -= 7;
        return first + dd;
    }
    }
}

struct gen {
    int64_t t;
    int32_t off;
};

/* Expands the rule of p for the years after instant `from` (exclusive) into
 * tz: the transitions before the cycle, then one cycle of PERIOD. */
static void expand_rule(struct cron_tz *tz, const struct posix_tz *p, int64_t from,
                        struct gen *g)
{
    int64_t y0, lo;
    int m, d;
    size_t ng = 0;

    cron__civil_from_days(cron__floor_div(from + RULE_SLACK, DAY), &y0, &m, &d);
    lo = cron__days_from_civil(y0 + 1, 1, 1) * DAY - RULE_SLACK; /* > from */
    for (int64_t y = y0; y < y0 + RULE_YEARS; y++) {
        g[ng++] = (struct gen){rule_day(&p->start, y) * DAY + p->start.secs - p->std_off,
                               p->dst_off};
        g[ng++] = (struct gen){rule_day(&p->end, y) * DAY + p->end.secs - p->dst_off,
                               p->std_off};
    }
    /* Stable insertion sort: the input is nearly sorted already. */
    for (size_t i = 1; i < ng; i++) {
        struct gen x = g[i];
        size_t j = i;
        while (j > 0 && g[j - 1].t > x.t) {
            g[j] = g[j - 1];
            j--;
        }
        g[j] = x;
    }
    tz->cyc_lo = lo;
    tz->cyc = SIZE_MAX;
    for (size_t i = 0; i < ng; i++) {
        if (i + 1 < ng && g[i + 1].t == g[i].t)
            continue; /* two changes at one instant: the later one wins */
        if (g[i].t <= from || g[i].t >= lo + PERIOD)
            continue;
        if (g[i].t >= lo && tz->cyc == SIZE_MAX)
            tz->cyc = tz->n;
        tz_push(tz, g[i].t, g[i].off);
    }
}

/* ---- TZif ----------------------------------------------------------------- */

struct tzif_hdr {
    unsigned char version;
    uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
};

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

static int read_header(const unsigned char *buf, size_t len, size_t pos, struct tzif_hdr *h)
{
    if (pos > len || len - pos < 44 || memcmp(buf + pos, "TZif", 4) != 0)
        return -1;
    const unsigned char *c = buf + pos + 20;
    h->version = buf[pos + 4];
    h->isutcnt = be32(c);
    h->isstdcnt = be32(c + 4);
    h->leapcnt = be32(c + 8);
    h->timecnt = be32(c + 12);
    h->typecnt = be32(c + 16);
    h->charcnt = be32(c + 20);
    return 0;
}

/* Bytes of the data block after a header; tsize is 4 (v1) or 8. */
static uint64_t block_len(const struct tzif_hdr *h, unsigned tsize)
{
    return (uint64_t)h->timecnt * (tsize + 1) + (uint64_t)h->typecnt * 6 + h->charcnt +
           (uint64_t)h->leapcnt * (tsize + 4) + h->isstdcnt + h->isutcnt;
}

int cron_tz_from_tzif(const char *name, const unsigned char *buf, size_t len,
                      struct cron_tz **out, char *err, size_t errlen)
{
    struct tzif_hdr h;
    struct posix_tz rule;
    struct cron_tz *tz = NULL;
    struct gen *gen = NULL;
    const unsigned char *times, *idx, *types;
    size_t pos = 0;
    unsigned tsize = 4;
    bool have_rule = false, beyond = false, have_last = false;
    int64_t t_last = 0;

    *out = NULL;
    if (name == NULL || *name == '\0' || strlen(name) > NAME_MAX_LEN) {
        set_err(err, errlen, "invalid time zone name");
        goto out_fail;
    }
    if (read_header(buf, len, 0, &h) != 0) {
        set_err(err, errlen, "time zone \"%s\": not a TZif file", name);
        goto out_fail;
    }
    if (h.version >= '2') {
        uint64_t skip = block_len(&h, 4);
        if (skip > len - 44 || read_header(buf, len, 44 + (size_t)skip, &h) != 0) {
            set_err(err, errlen, "time zone \"%s\": truncated TZif file", name);
            goto out_fail;
        }
        pos = 44 + (size_t)skip;
        tsize = 8;
    }
    pos += 44;
    if (h.typecnt == 0 || h.typecnt > 256 || h.isstdcnt > h.typecnt ||
        h.isutcnt > h.typecnt) {
        set_err(err, errlen, "time zone \"%s\": invalid TZif counts", name);
        goto out_fail;
    }
    if (block_len(&h, tsize) > len - pos) {
        set_err(err, errlen, "time zone \"%s\": truncated TZif file", name);
        goto out_fail;
    }
    times = buf + pos;
    idx = times + (size_t)h.timecnt * tsize;
    types = idx + h.timecnt;

    if (tsize == 8) { /* the footer: "\n" TZ-string "\n" */
        const unsigned char *f = buf + pos + block_len(&h, tsize), *e = buf + len;
        if (f < e) {
            const unsigned char *nl = (*f == '\n') ? memchr(f + 1, '\n', (size_t)(e - f - 1)) : NULL;
            if (nl == NULL) {
                set_err(err, errlen, "time zone \"%s\": malformed TZif footer", name);
                goto out_fail;
            }
            if (nl > f + 1) {
                if (parse_posix_tz((const char *)f + 1, (const char *)nl, &rule) != 0) {
                    set_err(err, errlen, "time zone \"%s\": invalid TZ rule \"%.*s\"", name,
                            (int)(nl - f - 1 > 64 ? 64 : nl - f - 1), (const char *)f + 1);
                    goto out_fail;
                }
                have_rule = true;
            }
        }
    }
    for (uint32_t i = 0; i < h.typecnt; i++) {
        int32_t o = (int32_t)be32(types + 6 * (size_t)i);
        if (o < OFF_MIN || o > OFF_MAX) {
            set_err(err, errlen, "time zone \"%s\": UTC offset out of range", name);
            goto out_fail;
        }
    }
    tz = tz_alloc(name, (size_t)h.timecnt + 2 * RULE_YEARS + 2);
    gen = (have_rule && rule.has_dst) ? calloc(2 * RULE_YEARS, sizeof *gen) : NULL;
    if (tz == NULL || (have_rule && rule.has_dst && gen == NULL)) {
        set_err(err, errlen, "out of memory");
        goto out_fail;
    }
    tz->base_off = (int32_t)be32(types);
    for (uint32_t i = 0; i < h.timecnt; i++) {
        int64_t t = tsize == 8 ? be64(times + 8 * (size_t)i) : (int32_t)be32(times + 4 * (size_t)i);
        int32_t o;
        if (idx[i] >= h.typecnt || (have_last && t <= t_last)) {
            set_err(err, errlen, "time zone \"%s\": invalid TZif transitions", name);
            goto out_fail;
        }
        o = (int32_t)be32(types + 6 * (size_t)idx[i]);
        have_last = true;
        t_last = t;
        if (t < T_LO) {
            tz->base_off = o; /* before our range: only its result matters */
        } else if (t > T_HI) {
            beyond = true; /* the footer applies only after these */
            break;
        } else {
            tz_push(tz, t, o);
        }
    }
    tz->cyc = tz->n;
    if (have_rule && !rule.has_dst && !have_last)
        tz->base_off = rule.std_off;
    if (have_rule && rule.has_dst && !beyond) {
        int64_t from = (have_last && t_last > T_LO) ? t_last : T_LO;
        if (!have_last) {
            /* The rule alone describes the zone: before its first change
             * comes the state it ends each year with. */
            int64_t s = rule_day(&rule.start, 1970) * DAY + rule.start.secs - rule.std_off;
            int64_t e = rule_day(&rule.end, 1970) * DAY + rule.end.secs - rule.dst_off;
            tz->base_off = s < e ? rule.std_off : rule.dst_off;
        }
        expand_rule(tz, &rule, from, gen);
    }
    tz_finish(tz);
    free(gen);
    *out = tz;
    return 0;

out_fail:
    free(gen);
    cron_tz_free(tz);
    return -1;
}

/* ---- queries -------------------------------------------------------------- */

void cron__tz_span(const struct cron_tz *tz, int64_t t, struct cron__span *sp)
{
    int64_t shift = 0;
    size_t a = 0, b = tz->n, i;

    if (t < T_LO)
        t = T_LO;
    else if (t > T_HI)
        t = T_HI;
    if (tz->cyc < tz->n && t >= tz->cyc_lo + PERIOD) {
        shift = (t - tz->cyc_lo) / PERIOD * PERIOD;
        t -= shift;
    }
    while (a < b) { /* a = the number of transitions at or before t */
        size_t mid = a + (b - a) / 2;
        if (tz->at[mid] <= t)
            a = mid + 1;
        else
            b = mid;
    }
    if (shift > 0 && a <= tz->cyc) { /* before the cycle's first: the last
                                        one of the previous period */
        a = tz->n;
        shift -= PERIOD;
    }
    if (a == 0) {
        sp->start = CRON_T_NONE_LO;
        sp->end = tz->n > 0 ? tz->at[0] : CRON_T_NONE_HI;
        sp->hw = CRON_T_NONE_LO;
        sp->off = tz->base_off;
        return;
    }
    i = a - 1;
    sp->start = tz->at[i] + shift;
    sp->off = tz->off[i];
    if (i == tz->cyc && shift > 0)
        sp->hw = sp->start + tz->off[tz->n - 1];
    else
        sp->hw = tz->hw[i] + shift;
    if (i + 1 < tz->n)
        sp->end = tz->at[i + 1] + shift;
    else if (tz->cyc < tz->n)
        sp->end = tz->at[tz->cyc] + PERIOD + shift;
    else
        sp->end = CRON_T_NONE_HI;
}

int32_t cron_tz_offset(const struct cron_tz *tz, int64_t t)
{
    struct cron__span sp;
    if (tz == NULL)
        return 0;
    cron__tz_span(tz, t, &sp);
    return sp.off;
}

const char *cron_tz_name(const struct cron_tz *tz)
{
    return tz->name;
}
