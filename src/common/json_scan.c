/* json_scan.c - the strict RFC 8259 scanner of json_scan.h (moved here from the adjudicator so
 * request bodies and agent transcripts are judged by the same code). A recursive descent
 * over the bytes that keeps the path of the value it is in, so a refusal can name the
 * field; duplicate keys are found by sorting each object's unescaped keys. Depends on libc. */
#include "verdict/json_scan.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct scan {
    const unsigned char *start, *p, *end;
    int depth, max_depth;
    unsigned flags;
    vd_json_problem *why;
    bool failed;
    char path[200];
    size_t plen;
    char *scratch; /* unescaped keys (duplicate checks), reused */
    size_t scratch_cap;
} scan;

static bool value(scan *j);

static bool fail(scan *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool fail(scan *j, const char *fmt, ...)
{
    va_list ap;
    bool first = !j->failed;
    j->failed = true;
    if (!first || !j->why)
        return false;
    j->why->offset = (size_t)(j->p - j->start);
    snprintf(j->why->field, sizeof(j->why->field), "%.*s", (int)j->plen, j->path);
    va_start(ap, fmt);
    vsnprintf(j->why->message, sizeof(j->why->message), fmt, ap);
    va_end(ap);
    return false;
}

/* Extend the path by ".key" (raw bytes, cut to fit) or "[i]"; returns the length to restore. */
static size_t path_push(scan *j, const unsigned char *key, size_t klen, long index)
{
    size_t old = j->plen, room = sizeof(j->path) - 1 - j->plen;
    if (!j->why) /* nobody asks which field: no path to keep */
        return old;
    int n = key ? snprintf(j->path + j->plen, room + 1, "%s%.*s", j->plen ? "." : "",
                           (int)(klen < room ? klen : room), (const char *)key)
                : snprintf(j->path + j->plen, room + 1, "[%ld]", index);
    j->plen += n < 0 ? 0 : (size_t)n > room ? room : (size_t)n;
    return old;
}

static void ws(scan *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static bool peek(const scan *j, unsigned char c)
{
    return j->p < j->end && *j->p == c;
}

static long hex4(scan *j)
{
    long v = 0;
    if (j->end - j->p < 4)
        return -1;
    for (int i = 0; i < 4; i++) {
        unsigned char c = *j->p++;
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* One escape after the backslash; its code point in *cp (0 for the one-letter escapes but
 * their character). \u0000 is refused: it would silently cut a C string. */
static bool escape(scan *j, uint32_t *cp)
{
    static const char one[] = "\"\\/bfnrt", val[] = "\"\\/\b\f\n\r\t";
    unsigned char c;
    long hi, lo;
    if (j->p >= j->end)
        return fail(j, "unterminated escape");
    c = *j->p++;
    const char *at = c ? strchr(one, c) : NULL;
    if (at) {
        *cp = (uint32_t)(unsigned char)val[at - one];
        return true;
    }
    if (c != 'u')
        return fail(j, "invalid escape '\\%c' in a string", c >= 0x20 && c < 0x7f ? c : '?');
    hi = hex4(j);
    if (hi == 0)
        return fail(j, "\\u0000 is not allowed in strings");
    if (hi < 0 || (hi >= 0xDC00 && hi <= 0xDFFF))
        return fail(j, "invalid \\u escape in a string");
    *cp = (uint32_t)hi;
    if (hi < 0xD800 || hi > 0xDBFF)
        return true;
    /* A high surrogate must be followed by an escaped low one. */
    if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
        return fail(j, "unpaired surrogate escape in a string");
    j->p += 2;
    lo = hex4(j);
    if (lo < 0xDC00 || lo > 0xDFFF)
        return fail(j, "unpaired surrogate escape in a string");
    *cp = 0x10000u + (((uint32_t)hi - 0xD800u) << 10) + ((uint32_t)lo - 0xDC00u);
    return true;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Room for n more bytes in the scratch buffer the keys are unescaped into. */
static bool scratch_reserve(scan *j, size_t used, size_t n)
{
    if (used + n <= j->scratch_cap)
        return true;
    size_t cap = (used + n) * 2;
    char *p = realloc(j->scratch, cap);
    if (!p)
        return fail(j, "out of memory");
    j->scratch = p;
    j->scratch_cap = cap;
    return true;
}

/* A string at j->p; when out is given, its unescaped text (malloc'd, exactly its size) for
 * duplicate checks. */
static bool string(scan *j, char **out)
{
    const unsigned char *open = j->p++;
    size_t n = 0;
    while (j->p < j->end) {
        unsigned char c = *j->p++;
        uint32_t cp = 0;
        if (c == '"') {
            if (out) {
                *out = scratch_reserve(j, n, 1) ? malloc(n + 1) : NULL;
                if (!*out)
                    return fail(j, "out of memory");
                memcpy(*out, j->scratch, n);
                (*out)[n] = '\0';
            }
            return true;
        }
        if (c < 0x20) {
            j->p--;
            return fail(j, "raw control character 0x%02x in a string (escape it)", c);
        }
        if (c == '\\' && !escape(j, &cp))
            return false;
        if (!out)
            continue;
        if (!scratch_reserve(j, n, 4))
            return false;
        if (c == '\\')
            n += put_utf8(j->scratch + n, cp);
        else
            j->scratch[n++] = (char)c;
    }
    j->p = open;
    return fail(j, "unterminated string");
}

static bool digits(scan *j)
{
    const unsigned char *from = j->p;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
        j->p++;
    return j->p > from;
}

/* Whether the number text[0..n) fits a double (strtod needs a NUL-terminated copy). */
static bool finite_number(const unsigned char *text, size_t n)
{
    char small[64], *buf = n < sizeof(small) ? small : malloc(n + 1);
    double d;
    if (!buf)
        return false;
    memcpy(buf, text, n);
    buf[n] = '\0';
    d = strtod(buf, NULL);
    if (buf != small)
        free(buf);
    return isfinite(d);
}

static bool number(scan *j)
{
    const unsigned char *from = j->p;
    if (peek(j, '-'))
        j->p++;
    if (peek(j, '0')) {
        j->p++;
        if (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            return fail(j, "leading zeros are not allowed in numbers");
    } else if (j->p >= j->end || *j->p < '1' || *j->p > '9' || !digits(j)) {
        return fail(j, "malformed JSON near byte %zu", (size_t)(j->p - j->start));
    }
    if (peek(j, '.')) {
        j->p++;
        if (!digits(j))
            return fail(j, "a number needs digits after its '.'");
    }
    if (peek(j, 'e') || peek(j, 'E')) {
        j->p++;
        if (peek(j, '+') || peek(j, '-'))
            j->p++;
        if (!digits(j))
            return fail(j, "a number needs digits in its exponent");
    }
    if ((j->flags & VD_JSON_FINITE_NUMBERS) && !finite_number(from, (size_t)(j->p - from))) {
        j->p = from;
        return fail(j, "a number beyond the range of a double (about 1.8e308)");
    }
    return true;
}

static bool literal(scan *j, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
        return fail(j, "malformed JSON near byte %zu", (size_t)(j->p - j->start));
    j->p += n;
    return true;
}

typedef struct keyset {
    char **k;
    size_t n, cap;
} keyset;

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void keys_free(keyset *ks)
{
    for (size_t i = 0; i < ks->n; i++)
        free(ks->k[i]);
    free(ks->k);
}

static bool keys_add(scan *j, keyset *ks, char *key)
{
    if (ks->n == ks->cap) {
        size_t cap = ks->cap ? ks->cap * 2 : 8;
        char **k = realloc(ks->k, cap * sizeof(*k));
        if (!k) {
            free(key);
            return fail(j, "out of memory");
        }
        ks->k = k;
        ks->cap = cap;
    }
    ks->k[ks->n++] = key;
    return true;
}

/* After an object's last member: a key seen twice is refused, naming it. */
static bool keys_distinct(scan *j, keyset *ks, const unsigned char *open)
{
    if (ks->n < 2)
        return true; /* (an empty object has no key array at all) */
    qsort(ks->k, ks->n, sizeof(*ks->k), cmp_key);
    for (size_t i = 1; i < ks->n; i++) {
        if (strcmp(ks->k[i - 1], ks->k[i]) == 0) {
            path_push(j, (const unsigned char *)ks->k[i], strlen(ks->k[i]), 0);
            j->p = open;
            return fail(j, "duplicate key '%.60s' in an object (send each key once)", ks->k[i]);
        }
    }
    return true;
}

/* One "key": value member; the path names the member while its value is scanned. */
static bool member(scan *j, keyset *ks)
{
    const unsigned char *kp = j->p + 1;
    char *key = NULL;
    size_t saved;
    bool ok;
    if (!peek(j, '"'))
        return fail(j, "an object key must be a string (near byte %zu)", (size_t)(j->p - j->start));
    if (!string(j, ks ? &key : NULL) || (ks && !keys_add(j, ks, key)))
        return false;
    saved = path_push(j, kp, (size_t)(j->p - 1 - kp), 0);
    ws(j);
    if (!peek(j, ':'))
        return fail(j, "expected ':' after an object key");
    j->p++;
    ws(j);
    ok = value(j);
    if (ok)
        j->plen = saved;
    return ok;
}

/* An object (close '}') or array (close ']'), at most max_depth deep. */
static bool container(scan *j, unsigned char close)
{
    const unsigned char *open = j->p;
    keyset ks = {0};
    bool dups = close == '}' && (j->flags & VD_JSON_NO_DUPLICATE_KEYS);
    bool ok = true;
    long index = 0;
    if (++j->depth > j->max_depth)
        return fail(j, "JSON nesting is deeper than %d", j->max_depth);
    j->p++;
    ws(j);
    while (ok && !peek(j, close)) {
        if (close == '}') {
            ok = member(j, dups ? &ks : NULL);
        } else {
            size_t saved = path_push(j, NULL, 0, index++);
            ok = value(j);
            if (ok)
                j->plen = saved;
        }
        ws(j);
        if (!ok || !peek(j, ','))
            break;
        j->p++;
        ws(j);
        if (peek(j, close))
            ok = fail(j, "trailing comma before '%c'", close);
    }
    if (ok && !peek(j, close))
        ok = fail(j, "expected ',' or '%c' near byte %zu", close, (size_t)(j->p - j->start));
    if (ok && dups)
        ok = keys_distinct(j, &ks, open);
    keys_free(&ks);
    if (!ok)
        return false;
    j->p++;
    j->depth--;
    return true;
}

static bool value(scan *j)
{
    if (j->p >= j->end)
        return fail(j, "unexpected end of the JSON text");
    switch (*j->p) {
    case '{':
        return container(j, '}');
    case '[':
        return container(j, ']');
    case '"':
        return string(j, NULL);
    case 't':
        return literal(j, "true");
    case 'f':
        return literal(j, "false");
    case 'n':
        return literal(j, "null");
    default:
        return number(j);
    }
}

bool vd_json_check(const char *text, size_t len, int max_depth, unsigned flags,
                   vd_json_problem *why)
{
    const unsigned char *s = (const unsigned char *)text;
    scan j = {s, s, s + len, 0, max_depth, flags, why, false, "", 0, NULL, 0};
    bool ok;
    if (why)
        memset(why, 0, sizeof(*why));
    ws(&j);
    if ((flags & VD_JSON_OBJECT_ONLY) && !peek(&j, '{'))
        return fail(&j, "the value must be a JSON object");
    ok = value(&j);
    free(j.scratch);
    if (!ok)
        return false;
    j.plen = 0;
    ws(&j);
    if (j.p != j.end)
        return fail(&j, "unexpected bytes after the JSON value at byte %zu",
                    (size_t)(j.p - j.start));
    return true;
}
