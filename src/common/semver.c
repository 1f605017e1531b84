/* semver.c - Semantic Versioning 2.0.0 versions (validation and precedence) and RFC 3339
 * date-times (validation), for the worker_version of a claim and the redrive filters of a
 * bulk requeue. Pure string scanning; depends only on libc. */
#include "verdict/semver.h"

#include <stddef.h>
#include <string.h>

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_ident_char(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

/* A number without leading zeros at *p; advances past it. */
static bool scan_number(const char **p)
{
    const char *s = *p;
    if (!is_digit(*s))
        return false;
    if (*s == '0' && is_digit(s[1]))
        return false;
    while (is_digit(*s))
        s++;
    *p = s;
    return true;
}

/* Dot-separated identifiers up to the end or `stop`; numeric ones without leading zeros when
 * strict (pre-release). */
static bool scan_idents(const char **p, char stop, bool strict)
{
    const char *s = *p;
    for (;;) {
        const char *start = s;
        bool numeric = true;
        while (is_ident_char(*s)) {
            numeric &= is_digit(*s);
            s++;
        }
        if (s == start || (strict && numeric && *start == '0' && s - start > 1))
            return false;
        if (*s != '.')
            break;
        s++;
    }
    *p = s;
    return *s == '\0' || *s == stop;
}

bool vd_semver_valid(const char *s)
{
    if (!s || strlen(s) > VD_SEMVER_MAX)
        return false;
    for (int i = 0; i < 3; i++) {
        if (!scan_number(&s) || (i < 2 && *s++ != '.'))
            return false;
    }
    if (*s == '-') {
        s++;
        if (!scan_idents(&s, '+', true))
            return false;
    }
    if (*s == '+') {
        s++;
        if (!scan_idents(&s, '\0', false))
            return false;
    }
    return *s == '\0';
}

/* Compare the digit runs at *a and *b as numbers and advance both past them. */
static int compare_number(const char **a, const char **b)
{
    size_t la = strspn(*a, "0123456789"), lb = strspn(*b, "0123456789");
    int c = la == lb ? strncmp(*a, *b, la) : (la < lb ? -1 : 1);
    *a += la;
    *b += lb;
    return c;
}

/* One pre-release identifier each: numeric below alphanumeric, numbers as numbers,
 * alphanumeric ones in ASCII order. */
static int compare_ident(const char *a, size_t la, const char *b, size_t lb)
{
    bool na = strspn(a, "0123456789") >= la, nb = strspn(b, "0123456789") >= lb;
    if (na != nb)
        return na ? -1 : 1;
    if (na && la != lb)
        return la < lb ? -1 : 1;
    int c = strncmp(a, b, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

static int compare_pre(const char *a, const char *b)
{
    bool ra = *a != '-', rb = *b != '-';
    if (ra || rb)
        return ra == rb ? 0 : (ra ? 1 : -1);
    a++;
    b++;
    for (;;) {
        size_t la = strcspn(a, ".+"), lb = strcspn(b, ".+");
        int c = compare_ident(a, la, b, lb);
        bool ea = a[la] != '.', eb = b[lb] != '.';
        if (c || ea || eb)
            return c ? c : (ea && eb ? 0 : (ea ? -1 : 1));
        a += la + 1;
        b += lb + 1;
    }
}

int vd_semver_compare(const char *a, const char *b)
{
    for (int i = 0; i < 3; i++) {
        int c = compare_number(&a, &b);
        if (c)
            return c;
        if (i < 2) {
            a++;
            b++;
        }
    }
    return compare_pre(a, b);
}

/* n digits at s, as a number, or -1. */
static int digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit(s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

static int days_in(int year, int month)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : days[month - 1];
}

/* The part after the seconds: optional fraction, then Z or an offset. */
static bool valid_tail(const char *s)
{
    if (*s == '.') {
        s++;
        if (!is_digit(*s))
            return false;
        while (is_digit(*s))
            s++;
    }
    if ((*s == 'Z' || *s == 'z') && s[1] == '\0')
        return true;
    if ((*s != '+' && *s != '-') || strlen(s) != 6 || s[3] != ':')
        return false;
    int h = digits(s + 1, 2), m = digits(s + 4, 2);
    return h >= 0 && h < 24 && m >= 0 && m < 60;
}

bool vd_rfc3339_valid(const char *s)
{
    if (!s || strlen(s) < 20 || strlen(s) > 40)
        return false;
    int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
    int h = digits(s + 11, 2), mi = digits(s + 14, 2), sec = digits(s + 17, 2);
    if (y < 1 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' ||
        s[16] != ':')
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in(y, mo) || h < 0 || h > 23 || mi < 0 || mi > 59 ||
        sec < 0 || sec > 60)
        return false;
    return valid_tail(s + 19);
}
