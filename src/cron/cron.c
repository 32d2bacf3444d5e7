/* cron.c -- cron expressions: the parser and the next fire time. Pure: no
 * I/O, no clock reads, no global mutable state.
 *
 * An expression is one bitset per field (seconds, minutes, hours, days of the
 * month, months, days of the week) plus the day-field extras (L, nL, n#k).
 * The next fire time is found field by field on the local calendar: skip to
 * the next month in the month set, build that month's bitset of matching days
 * (the Vixie/cronie OR rule lives in day_mask()), take its first day at or
 * after the current one, then the first matching second of that day. Nothing
 * ever steps second by second or day by day through non-matching time.
 *
 * Time zones enter through spans of constant UTC offset (cron_int.h): a
 * search walks the spans from `after` onwards and searches each one's wall
 * time range. DST, as in cronie and extended to seconds:
 *  - interval-like schedules (seconds, minute or hour field begins with `*`)
 *    fire at every instant whose wall time matches: none in a spring-forward
 *    gap, both copies of a repeated fall-back hour;
 *  - fixed-time schedules fire on the first occurrence of a wall time only
 *    (wall times below the span's high-water mark are repeats), and once at
 *    the first instant after a gap when any wall time inside it matches.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cron_int.h"

#define DAY CRON_DAY_SECS
/* How far cron_next() looks: the Gregorian calendar repeats every 400
 * years, so a day pattern with no match in 401 years has none at all (and
 * DST can only remove fire times). */
#define HORIZON (INT64_C(401) * 366 * DAY)

enum { F_SEC, F_MIN, F_HOUR, F_DOM, F_MON, F_DOW, F_COUNT };

struct cron_expr {
    uint64_t bits[F_COUNT]; /* sec, min 0-59; hour 0-23; dom 1-31; month 1-12;
                               dow 0-6 (7 is folded onto 0) */
    uint32_t dow_mask[7];   /* days 1-31 whose weekday is in bits[F_DOW],
                               indexed by the weekday of the 1st */
    uint8_t dow_last;       /* bit n: nL, the last weekday n of the month */
    uint8_t dow_nth[7];     /* dow_nth[n] bit k-1: n#k, the k-th weekday n */
    bool dom_last;          /* L in day-of-month */
    bool has_special;       /* any nL or n#k */
    bool day_or;            /* both day fields restricted: either matches */
    bool fixed;             /* fixed-time (see the top of this file) */
    int first_tod;          /* the earliest matching second of a day */
    int64_t every;          /* @every period in seconds; 0 otherwise */
};

struct field_spec {
    const char *name;
    int min, max;
    const char *const *names; /* names[i] is value name_base + i */
    int name_base, nnames;
};

static const char *const month_names[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                          "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
static const char *const dow_names[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

static const struct field_spec specs[F_COUNT] = {
    {"second", 0, 59, NULL, 0, 0},
    {"minute", 0, 59, NULL, 0, 0},
    {"hour", 0, 23, NULL, 0, 0},
    {"day-of-month", 1, 31, NULL, 0, 0},
    {"month", 1, 12, month_names, 1, 12},
    {"day-of-week", 0, 7, dow_names, 0, 7},
};

static const struct {
    const char *name;
    const char *expr;
} macros[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

/* ---- small helpers ---------------------------------------------------------- */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static char upper(char c) { return (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c; }

static bool ieq(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    if (alen != blen)
        return false;
    for (size_t i = 0; i < alen; i++)
        if (upper(a[i]) != upper(b[i]))
            return false;
    return true;
}

/* The first set bit at or above `from`, or -1. */
static int next_bit(uint64_t bits, int from)
{
    if (from >= 64)
        return -1;
    uint64_t m = bits & (~UINT64_C(0) << from);
    return m != 0 ? __builtin_ctzll(m) : -1;
}

/* ---- errors ----------------------------------------------------------------- */

struct pctx {
    const char *text; /* the whole expression, for columns */
    struct cron_error *err;
    int field;        /* the displayed (1-based) field number; 0: none */
    int f;            /* F_* of the field being parsed */
};

/* Fills c->err about the token [tok, tok + len). Returns -1. */
__attribute__((format(printf, 4, 5)))
static int fail(const struct pctx *c, const char *tok, size_t len, const char *fmt, ...)
{
    struct cron_error *e = c->err;
    va_list ap;
    size_t i;

    e->field = c->field;
    e->field_name = c->field > 0 ? specs[c->f].name : NULL;
    e->column = (int)(tok - c->text) + 1;
    for (i = 0; i < len && i < sizeof e->token - 1; i++) {
        unsigned char ch = (unsigned char)tok[i];
        e->token[i] = (ch < 0x20 || ch == 0x7f || ch == '"' || ch == '\\') ? '?' : (char)ch;
    }
    e->token[i] = '\0';
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

const char *cron_error_format(const struct cron_error *e, char *buf, size_t len)
{
    static const char *const five[] = {"minute", "hour", "day-of-month", "month", "day-of-week"};
    if (len == 0)
        return buf;
    if (e->field > 0) {
        const char *name = e->field_name;
        if (name == NULL)
            name = e->field <= 5 ? five[e->field - 1] : "field";
        snprintf(buf, len, "field %d (%s) \"%s\": %s (column %d)", e->field, name, e->token,
                 e->message, e->column);
    } else if (e->token[0] != '\0') {
        snprintf(buf, len, "\"%s\": %s (column %d)", e->token, e->message, e->column);
    } else {
        snprintf(buf, len, "%s (column %d)", e->message, e->column);
    }
    return buf;
}

/* ---- the parser --------------------------------------------------------------- */

/* Reads a number or a name at *pp (before e) into *v and advances *pp. */
static int parse_value(const struct pctx *c, const char **pp, const char *e, int *v)
{
    const struct field_spec *sp = &specs[c->f];
    const char *s = *pp, *p = *pp;

    if (p < e && is_digit(*p)) {
        long x = 0;
        while (p < e && is_digit(*p)) {
            if (x < 1000000)
                x = x * 10 + (*p - '0');
            p++;
        }
        if (x < sp->min || x > sp->max)
            return fail(c, s, (size_t)(p - s), "value out of range %d-%d", sp->min, sp->max);
        *v = (int)x;
        *pp = p;
        return 0;
    }
    if (p < e && is_alpha(*p)) {
        while (p < e && is_alpha(*p))
            p++;
        if (sp->names == NULL)
            return fail(c, s, (size_t)(p - s), "expected a number");
        /* "FRIL": a day name followed by L (the last Friday). */
        size_t n = (size_t)(p - s);
        if (c->f == F_DOW && n == 4 && upper(s[3]) == 'L') {
            n = 3;
            p = s + 3;
        }
        for (int i = 0; i < sp->nnames; i++) {
            if (ieq(s, n, sp->names[i])) {
                *v = sp->name_base + i;
                *pp = p;
                return 0;
            }
        }
        return fail(c, s, (size_t)(p - s), "unknown name (use %s-%s)", sp->names[0],
                    sp->names[sp->nnames - 1]);
    }
    if (p >= e)
        return fail(c, s, 0, "missing value");
    return fail(c, s, 1, sp->names != NULL ? "expected a number or a name" : "expected a number");
}

/* Sets the bits lo..hi (step) of field c->f in x. */
static void set_range(const struct pctx *c, struct cron_expr *x, int lo, int hi, int step)
{
    for (int v = lo; v <= hi; v += step)
        x->bits[c->f] |= UINT64_C(1) << (c->f == F_DOW ? v % 7 : v);
}

/* One element of a list: * ? L value range step nL n#k. [s, e) is the
 * element, [fs, fe) the whole field. */
static int parse_elem(const struct pctx *c, const char *s, const char *e, const char *fs,
                      const char *fe, struct cron_expr *x)
{
    const struct field_spec *sp = &specs[c->f];
    const char *p = s;
    int lo, hi, step = 1;

    if (s == e)
        return fail(c, s, 0, "empty list element");
    if (*p == '*') {
        lo = sp->min;
        hi = sp->max;
        p++;
        if (p < e && *p != '/')
            return fail(c, p, (size_t)(e - p), "unexpected text after *");
    } else if (*p == '?') {
        if (c->f != F_DOM && c->f != F_DOW)
            return fail(c, p, 1, "? is only allowed in day-of-month and day-of-week");
        if (fe - fs != 1)
            return fail(c, fs, (size_t)(fe - fs), "? must be the whole field");
        set_range(c, x, sp->min, sp->max, 1);
        return 0;
    } else if (upper(*p) == 'L') { /* no month or day name begins with L */
        if (c->f == F_DOM) {
            if (p + 1 != e && upper(p[1]) == 'W')
                return fail(c, p, (size_t)(e - p), "W (nearest weekday) is not supported");
            if (p + 1 != e)
                return fail(c, p, (size_t)(e - p), "unexpected text after L (L-n is not supported)");
            x->dom_last = true;
            return 0;
        }
        if (c->f == F_DOW)
            return fail(c, p, (size_t)(e - p), "L needs a day in day-of-week (5L: the last Friday)");
        return fail(c, p, (size_t)(e - p), "L is only allowed in day-of-month, or as nL in day-of-week");
    } else {
        if (parse_value(c, &p, e, &lo) != 0)
            return -1;
        hi = lo;
        if (p < e && *p == '-') {
            p++;
            if (parse_value(c, &p, e, &hi) != 0)
                return -1;
            if (c->f == F_DOW && hi == 0 && lo > 0)
                hi = 7; /* MON-SUN */
            if (lo > hi)
                return fail(c, s, (size_t)(p - s), "range start %d is greater than end %d", lo, hi);
        } else if (p < e && *p == '/') {
            hi = sp->max; /* a/n: a-max/n */
        } else if (p < e && upper(*p) == 'L' && c->f == F_DOW) {
            if (p + 1 != e)
                return fail(c, p + 1, (size_t)(e - p - 1), "unexpected text after nL");
            x->dow_last |= (uint8_t)(1u << (lo % 7));
            return 0;
        } else if (p < e && *p == '#' && c->f == F_DOW) {
            const char *k = ++p;
            int n = 0;
            while (p < e && is_digit(*p)) {
                if (n < 100)
                    n = n * 10 + (*p - '0');
                p++;
            }
            if (p == k)
                return fail(c, k, (size_t)(e - k), "expected an occurrence 1-5 after #");
            if (n < 1 || n > 5)
                return fail(c, k, (size_t)(p - k), "occurrence out of range 1-5");
            if (p != e)
                return fail(c, p, (size_t)(e - p), "unexpected text after n#k");
            x->dow_nth[lo % 7] |= (uint8_t)(1u << (n - 1));
            return 0;
        } else if (p < e && upper(*p) == 'W' && c->f == F_DOM) {
            return fail(c, p, (size_t)(e - p), "W (nearest weekday) is not supported");
        }
    }
    if (p < e && *p == '/') {
        const char *k = ++p;
        int nvals = c->f == F_DOW ? 7 : sp->max - sp->min + 1;
        long n = 0;
        while (p < e && is_digit(*p)) {
            if (n < 1000000)
                n = n * 10 + (*p - '0');
            p++;
        }
        if (p == k)
            return fail(c, k, (size_t)(e - k), "expected a step after /");
        if (n < 1 || n > nvals)
            return fail(c, k, (size_t)(p - k), "step out of range 1-%d", nvals);
        step = (int)n;
    }
    if (p != e)
        return fail(c, p, (size_t)(e - p), "unexpected text");
    set_range(c, x, lo, hi, step);
    return 0;
}

static int parse_field(const struct pctx *c, const char *s, const char *e, struct cron_expr *x)
{
    const char *p = s;
    for (;;) {
        const char *q = p;
        while (q < e && *q != ',')
            q++;
        if (parse_elem(c, p, q, s, e, x) != 0)
            return -1;
        if (q == e)
            return 0;
        p = q + 1;
        if (p == e)
            return fail(c, p, 0, "empty list element");
    }
}

/* Matching days 1..len of a month of len days whose 1st is weekday w1, as
 * bits 1..31. The Vixie/cronie rule: OR when both day fields are restricted,
 * else AND (an unrestricted field matches every day). */
static uint32_t day_mask_lw(const struct cron_expr *x, int len, int w1)
{
    uint32_t valid = (uint32_t)((UINT64_C(1) << (len + 1)) - 2);
    uint32_t dom = (uint32_t)x->bits[F_DOM] & valid;
    uint32_t dow = x->dow_mask[w1] & valid;

    if (x->dom_last)
        dom |= UINT32_C(1) << len;
    if (x->has_special) {
        int wl = (w1 + len - 1) % 7; /* weekday of the last day */
        for (int n = 0; n < 7; n++) {
            if (x->dow_last & (1u << n))
                dow |= UINT32_C(1) << (len - (wl - n + 7) % 7);
            if (x->dow_nth[n] != 0) {
                int d1 = 1 + (n - w1 + 7) % 7;
                for (int k = 0; k < 5; k++)
                    if ((x->dow_nth[n] & (1u << k)) && d1 + 7 * k <= len)
                        dow |= UINT32_C(1) << (d1 + 7 * k);
            }
        }
    }
    return x->day_or ? (dom | dow) : (dom & dow);
}

/* The earliest matching second of the day at or after second sod, or -1. */
static int tod_next(const struct cron_expr *x, int sod)
{
    int h = sod / 3600, mi = sod / 60 % 60, s = sod % 60;
    while (h < 24) {
        int nh = next_bit(x->bits[F_HOUR], h);
        if (nh < 0)
            return -1;
        if (nh != h) {
            h = nh;
            mi = 0;
            s = 0;
        }
        int nm = next_bit(x->bits[F_MIN], mi);
        if (nm < 0) {
            h++;
            mi = 0;
            s = 0;
            continue;
        }
        if (nm != mi) {
            mi = nm;
            s = 0;
        }
        int ns = next_bit(x->bits[F_SEC], s);
        if (ns < 0) {
            mi++;
            s = 0;
            continue;
        }
        return h * 3600 + mi * 60 + ns;
    }
    return -1;
}

/* True when some day of some year matches: all 14 kinds of year (leap or
 * not, times the weekday of Jan 1) occur in every 400-year cycle. */
static bool ever_matches(const struct cron_expr *x)
{
    for (int leap = 0; leap < 2; leap++) {
        for (int wj = 0; wj < 7; wj++) {
            int before = 0; /* days of the year before the month */
            for (int m = 1; m <= 12; m++) {
                int len = cron__month_days(leap ? 2000 : 2001, m);
                if ((x->bits[F_MON] & (UINT64_C(1) << m)) && day_mask_lw(x, len, (wj + before) % 7))
                    return true;
                before += len;
            }
        }
    }
    return false;
}

/* How six fields read, for the errors where a year was likely meant. */
#define SIX_FIELDS                                                                                 \
    "six fields are second minute hour day-of-month month day-of-week: seconds first, and a "      \
    "year field is not supported"

/* True when [s, e) is four digits, as a year written as a field. */
static bool looks_like_year(const char *s, const char *e)
{
    if (e - s != 4)
        return false;
    for (; s < e; s++)
        if (!is_digit(*s))
            return false;
    return true;
}

/* Splits text into fields and parses them into x. */
static int parse_fields(const char *text, const char *s, struct cron_expr *x, struct cron_error *err)
{
    const char *fs[7], *fe[7];
    int n = 0;
    const char *p = s;
    struct pctx c = {text, err, 0, 0};

    for (;;) {
        while (*p != '\0' && is_space(*p))
            p++;
        if (*p == '\0')
            break;
        if (n == 6)
            return fail(&c, p, strcspn(p, " \t\n\r\v\f"),
                        "expected 5 or 6 fields, found more (%s)", SIX_FIELDS);
        fs[n] = p;
        while (*p != '\0' && !is_space(*p))
            p++;
        fe[n++] = p;
    }
    if (n < 5)
        return fail(&c, p, 0, "expected 5 or 6 fields (minute hour day-of-month month day-of-week), found %d", n);

    int first = n == 6 ? F_SEC : F_MIN;
    if (n == 5)
        x->bits[F_SEC] = 1; /* second 0 */
    for (int i = 0; i < n; i++) {
        c.field = i + 1;
        c.f = first + i;
        if (parse_field(&c, fs[i], fe[i], x) != 0) {
            /* "0 9 * * 1-5 2026": read as seconds first, the year lands in
             * day-of-week; say how six fields read. */
            if (n == 6 && (i == 5 || looks_like_year(fs[5], fe[5]))) {
                size_t used = strlen(err->message);
                snprintf(err->message + used, sizeof err->message - used, "; %s", SIX_FIELDS);
            }
            return -1;
        }
    }
    const char *sec = n == 6 ? fs[0] : "0";
    const char *min = fs[n - 5], *hour = fs[n - 4], *dom = fs[n - 3], *dow = fs[n - 1];
    x->fixed = *sec != '*' && *min != '*' && *hour != '*';
    x->day_or = *dom != '*' && *dom != '?' && *dow != '*' && *dow != '?';
    x->has_special = x->dow_last != 0;
    for (int i = 0; i < 7; i++)
        x->has_special = x->has_special || x->dow_nth[i] != 0;
    for (int w1 = 0; w1 < 7; w1++)
        for (int d = 1; d <= 31; d++)
            if (x->bits[F_DOW] & (UINT64_C(1) << ((w1 + d - 1) % 7)))
                x->dow_mask[w1] |= UINT32_C(1) << d;
    x->first_tod = tod_next(x, 0);
    if (!ever_matches(x)) {
        if (*dow == '*' || *dow == '?') {
            c.field = n - 2;
            c.f = F_DOM;
            return fail(&c, dom, (size_t)(fe[n - 3] - dom), "never fires: no selected month has such a day");
        }
        c.field = 0;
        return fail(&c, fs[0], (size_t)(fe[n - 1] - fs[0]),
                    "never fires: no day matches the day-of-month, month and day-of-week fields");
    }
    return 0;
}

/* "@every DURATION" with p just after "@every". */
static int parse_every(const char *text, const char *p, struct cron_expr *x, struct cron_error *err)
{
    struct pctx c = {text, err, 0, 0};
    char dur[64], msg[128];
    int64_t ms;

    while (*p != '\0' && is_space(*p))
        p++;
    size_t n = strcspn(p, " \t\n\r\v\f");
    const char *rest = p + n;
    while (*rest != '\0' && is_space(*rest))
        rest++;
    if (n == 0)
        return fail(&c, p, 0, "@every needs a duration (@every 90s, @every 1h30m)");
    if (*rest != '\0')
        return fail(&c, rest, strlen(rest), "unexpected text after @every DURATION");
    if (n >= sizeof dur)
        return fail(&c, p, n, "duration too long");
    memcpy(dur, p, n);
    dur[n] = '\0';
    if (cron_duration_parse(dur, &ms, msg, sizeof msg) != 0)
        return fail(&c, p, n, "%s", msg);
    if (ms % 1000 != 0)
        return fail(&c, p, n, "@every needs a whole number of seconds");
    if (ms < 1000)
        return fail(&c, p, n, "@every needs at least 1s");
    x->every = ms / 1000;
    return 0;
}

int cron_parse(const char *text, struct cron_expr **out, struct cron_error *err)
{
    struct cron_expr *x = NULL;
    struct pctx c = {text, err, 0, 0};
    const char *p = text;

    *out = NULL;
    memset(err, 0, sizeof *err);
    if (text == NULL) {
        c.text = p = text = "";
        fail(&c, text, 0, "empty expression");
        return -1;
    }
    x = calloc(1, sizeof *x);
    if (x == NULL) {
        fail(&c, text, 0, "out of memory");
        goto out_fail;
    }
    while (*p != '\0' && is_space(*p))
        p++;
    if (*p == '\0') {
        fail(&c, text, 0, "empty expression");
        goto out_fail;
    }
    if (*p == '@') {
        size_t n = strcspn(p, " \t\n\r\v\f");
        size_t i;
        if (ieq(p, n, "@every")) {
            if (parse_every(text, p + n, x, err) != 0)
                goto out_fail;
            goto out_ok;
        }
        for (i = 0; i < sizeof macros / sizeof macros[0]; i++)
            if (ieq(p, n, macros[i].name))
                break;
        if (i == sizeof macros / sizeof macros[0]) {
            fail(&c, p, n, "unknown macro (use @yearly, @annually, @monthly, @weekly, @daily, "
                           "@midnight, @hourly or @every DURATION)");
            goto out_fail;
        }
        const char *rest = p + n;
        while (*rest != '\0' && is_space(*rest))
            rest++;
        if (*rest != '\0') {
            fail(&c, rest, strlen(rest), "unexpected text after %s", macros[i].name);
            goto out_fail;
        }
        if (parse_fields(macros[i].expr, macros[i].expr, x, err) != 0)
            goto out_fail; /* not reached: the table is valid */
        goto out_ok;
    }
    if (parse_fields(text, p, x, err) != 0)
        goto out_fail;
out_ok:
    *out = x;
    return 0;
out_fail:
    free(x);
    return -1;
}

void cron_free(struct cron_expr *e)
{
    free(e);
}

bool cron_is_every(const struct cron_expr *e)
{
    return e->every > 0;
}

int64_t cron_every_seconds(const struct cron_expr *e)
{
    return e->every;
}

bool cron_is_fixed_time(const struct cron_expr *e)
{
    return e->every == 0 && e->fixed;
}

/* ---- the next fire time ------------------------------------------------------- */

/* The earliest matching wall time in [lo, hi] (local seconds, as if UTC).
 * Returns true and *out, or false when there is none. */
static bool next_local(const struct cron_expr *x, int64_t lo, int64_t hi, int64_t *out)
{
    int64_t y, day, last_day;
    int m, d, sod;

    if (lo > hi)
        return false;
    day = cron__floor_div(lo, DAY);
    sod = (int)(lo - day * DAY);
    last_day = cron__floor_div(hi, DAY);
    cron__civil_from_days(day, &y, &m, &d);
    for (;;) {
        if (x->bits[F_MON] & (UINT64_C(1) << m)) {
            int len = cron__month_days(y, m);
            uint32_t mask = day_mask_lw(x, len, cron__weekday(day - (d - 1))) &
                            (~UINT32_C(0) << d);
            while (mask != 0) {
                int nd = __builtin_ctz(mask);
                if (nd != d)
                    sod = 0; /* a later day: from its midnight */
                day += nd - d;
                d = nd;
                if (day > last_day)
                    return false;
                int s = sod == 0 ? x->first_tod : tod_next(x, sod);
                if (s >= 0) {
                    int64_t w = day * DAY + s;
                    if (w > hi)
                        return false;
                    *out = w;
                    return true;
                }
                mask &= mask - 1; /* nothing left that day */
                sod = 0;
            }
        }
        m = next_bit(x->bits[F_MON], m + 1);
        if (m < 0) {
            y++;
            m = next_bit(x->bits[F_MON], 1);
        }
        d = 1;
        sod = 0;
        day = cron__days_from_civil(y, m, 1);
        if (day > last_day)
            return false;
    }
}

/* The span of tz (NULL: UTC) containing t. */
static void span_at(const struct cron_tz *tz, int64_t t, struct cron__span *sp)
{
    if (tz != NULL) {
        cron__tz_span(tz, t, sp);
        return;
    }
    sp->start = CRON_T_NONE_LO;
    sp->end = CRON_T_NONE_HI;
    sp->hw = CRON_T_NONE_LO;
    sp->off = 0;
}

int cron_next(const struct cron_expr *x, const struct cron_tz *tz, int64_t after, int64_t *next)
{
    struct cron__span sp;
    int64_t t0, limit, w;

    if (after < CRON_T_MIN - 1 || after >= CRON_T_MAX)
        return -1;
    if (x->every > 0) {
        int64_t n = (cron__floor_div(after, x->every) + 1) * x->every;
        if (n > CRON_T_MAX)
            return -1;
        *next = n;
        return 0;
    }
    t0 = after + 1;
    limit = after + HORIZON < CRON_T_MAX ? after + HORIZON : CRON_T_MAX;
    span_at(tz, t0, &sp);
    for (;;) {
        /* A fixed-time wall time skipped by a gap at the start of this span
         * fires once, at the span's first instant. */
        if (x->fixed && sp.start >= t0 && sp.start <= limit && sp.start + sp.off > sp.hw &&
            next_local(x, sp.hw, sp.start + sp.off - 1, &w)) {
            *next = sp.start;
            return 0;
        }
        int64_t from = t0 > sp.start ? t0 : sp.start;
        int64_t to = sp.end - 1 < limit ? sp.end - 1 : limit;
        if (from <= to) {
            int64_t lo = from + sp.off;
            if (x->fixed && lo < sp.hw)
                lo = sp.hw; /* repeated wall times fired in an earlier span */
            if (next_local(x, lo, to + sp.off, &w)) {
                *next = w - sp.off;
                return 0;
            }
        }
        if (sp.end > limit)
            return -1;
        span_at(tz, sp.end, &sp);
    }
}

/* ---- RFC 3339 ------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4)))
static int time_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Reads exactly n digits at *pp into *v. */
static bool digits(const char **pp, int n, int *v)
{
    int x = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit((*pp)[i]))
            return false;
        x = x * 10 + ((*pp)[i] - '0');
    }
    *pp += n;
    *v = x;
    return true;
}

int cron_time_parse(const char *s, int64_t *t, char *err, size_t errlen)
{
    const char *p = s;
    int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;

    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
        !digits(&p, 2, &d))
        return time_err(err, errlen, "expected a date YYYY-MM-DD at the start");
    if (y < 1)
        return time_err(err, errlen, "year 0000 out of range 0001-9999");
    if (mo < 1 || mo > 12)
        return time_err(err, errlen, "month %02d out of range 01-12", mo);
    if (d < 1 || d > cron__month_days(y, mo))
        return time_err(err, errlen, "day %02d out of range for %04d-%02d (01-%02d)", d, y, mo,
                        cron__month_days(y, mo));
    if (*p != 'T' && *p != 't' && *p != ' ')
        return time_err(err, errlen, "expected T between the date and the time");
    p++;
    if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' ||
        !digits(&p, 2, &sec))
        return time_err(err, errlen, "expected a time HH:MM:SS after the date");
    if (h > 23)
        return time_err(err, errlen, "hour %02d out of range 00-23", h);
    if (mi > 59)
        return time_err(err, errlen, "minute %02d out of range 00-59", mi);
    if (sec > 59)
        return time_err(err, errlen, "second %02d out of range 00-59 (leap seconds are not supported)", sec);
    if (*p == '.' || *p == ',') {
        p++;
        if (!is_digit(*p))
            return time_err(err, errlen, "expected digits after the decimal point");
        while (is_digit(*p))
            p++;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p++ == '-' ? -1 : 1;
        if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om))
            return time_err(err, errlen, "expected an offset +HH:MM");
        if (oh > 23 || om > 59)
            return time_err(err, errlen, "offset %c%02d:%02d out of range", sign < 0 ? '-' : '+', oh, om);
    } else if (*p == '\0') {
        return time_err(err, errlen, "missing time zone offset (add Z for UTC, or +HH:MM)");
    } else {
        return time_err(err, errlen, "expected Z or an offset +HH:MM after the time");
    }
    if (*p != '\0')
        return time_err(err, errlen, "unexpected text after the offset");
    *t = cron__days_from_civil(y, mo, d) * DAY + h * 3600 + mi * 60 + sec -
         sign * (oh * 3600 + om * 60);
    return 0;
}

const char *cron_time_format(int64_t t, const struct cron_tz *tz, char *buf, size_t len)
{
    int32_t off = tz != NULL ? cron_tz_offset(tz, t) : 0;
    int64_t w = t + off, day = cron__floor_div(w, DAY), y;
    int sod = (int)(w - day * DAY), m, d;
    char zone[16];

    if (len == 0)
        return buf;
    cron__civil_from_days(day, &y, &m, &d);
    if (tz == NULL) {
        snprintf(zone, sizeof zone, "Z");
    } else {
        int a = off < 0 ? -off : off;
        if (a % 60 != 0)
            snprintf(zone, sizeof zone, "%c%02d:%02d:%02d", off < 0 ? '-' : '+', a / 3600,
                     a / 60 % 60, a % 60);
        else
            snprintf(zone, sizeof zone, "%c%02d:%02d", off < 0 ? '-' : '+', a / 3600, a / 60 % 60);
    }
    snprintf(buf, len, "%04lld-%02d-%02dT%02d:%02d:%02d%s", (long long)y, m, d, sod / 3600,
             sod / 60 % 60, sod % 60, zone);
    return buf;
}
