/* util.c - randomness, constant-time compare, UTF-8 checks, clocks, monotonic waits and the
 * JSON-lines logger (every line redacted, redact.c). Depends only on libc and the kernel
 * (getrandom). */
#include "verdict/util.h"

#include "verdict/redact.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static _Atomic int log_level = VD_LOG_INFO;

void vd_random_bytes(void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n <= 0)
            continue; /* EINTR; getrandom on a booted system does not fail otherwise */
        p += n;
        len -= (size_t)n;
    }
}

double vd_random_unit(void)
{
    uint64_t v = 0;
    vd_random_bytes(&v, sizeof(v));
    return (double)(v >> 11) / (double)(1ULL << 53);
}

void vd_random_hex(char *out, size_t bytes)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char buf[64];
    if (bytes > sizeof(buf))
        bytes = sizeof(buf);
    vd_random_bytes(buf, bytes);
    for (size_t i = 0; i < bytes; i++) {
        out[2 * i] = hex[buf[i] >> 4];
        out[2 * i + 1] = hex[buf[i] & 15];
    }
    out[2 * bytes] = '\0';
}

bool vd_ct_streq(const char *given, const char *secret)
{
    size_t glen = strlen(given), slen = strlen(secret);
    unsigned diff = (unsigned)(glen ^ slen);
    for (size_t i = 0; i < slen; i++) {
        unsigned char g = i < glen ? (unsigned char)given[i] : 0;
        diff |= (unsigned)(g ^ (unsigned char)secret[i]);
    }
    return diff == 0;
}

bool vd_parse_i64(const char *s, size_t len, int64_t min, int64_t max, int64_t *out)
{
    bool neg = len > 0 && s[0] == '-';
    size_t i = neg ? 1 : 0;
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    if (i == len)
        return false;
    for (; i < len; i++) {
        unsigned d = (unsigned)((unsigned char)s[i] - '0');
        if (d > 9 || v > (limit - d) / 10) /* not a digit, or v * 10 + d would pass limit */
            return false;
        v = v * 10 + d;
    }
    /* -v without overflow: INT64_MIN's magnitude is 2^63, one more than INT64_MAX */
    int64_t r = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    if (r < min || r > max)
        return false;
    *out = r;
    return true;
}

/* The length of the well-formed UTF-8 sequence at s[0..len) (1 to 4), or 0 if there is none. */
static size_t utf8_seq(const unsigned char *s, size_t len)
{
    unsigned c = s[0];
    size_t n = 0;
    uint32_t cp = 0, min = 0;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0)
        n = 1, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0)
        n = 2, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0)
        n = 3, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (len <= n)
        return 0;
    for (size_t k = 1; k <= n; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n + 1;
}

bool vd_utf8_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        size_t n = utf8_seq(s + i, len - i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

void vd_utf8_scrub(char *dst, size_t cap, const char *src)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t len = strlen(src), i = 0, o = 0;
    if (cap == 0)
        return;
    while (i < len) {
        size_t n = utf8_seq(s + i, len - i);
        if (n == 0) { /* one byte that is not UTF-8 becomes the four characters \xNN */
            if (o + 4 >= cap)
                break;
            snprintf(dst + o, cap - o, "\\x%02X", s[i]);
            o += 4;
            i++;
            continue;
        }
        if (o + n >= cap)
            break;
        memcpy(dst + o, s + i, n);
        o += n;
        i += n;
    }
    dst[o] = '\0';
}

size_t vd_utf8_count(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

void vd_now_rfc3339(char *out, size_t len)
{
    struct timespec ts;
    struct tm tm;
    char date[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, len, "%s.%03dZ", date, (int)(ts.tv_nsec / 1000000) % 1000);
}

double vd_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int vd_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    int rc = pthread_condattr_init(&ca);
    if (rc)
        return rc;
    rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
    return rc;
}

bool vd_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, double deadline)
{
    struct timespec ts;
    double whole;
    if (deadline <= vd_monotonic())
        return false;
    whole = (double)(long long)deadline;
    ts.tv_sec = (time_t)whole;
    ts.tv_nsec = (long)((deadline - whole) * 1e9);
    if (ts.tv_nsec >= 1000000000L) { /* rounding */
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return pthread_cond_timedwait(cv, mu, &ts) != ETIMEDOUT;
}

void vd_log_set_level(vd_log_level level)
{
    atomic_store(&log_level, (int)level);
}

bool vd_log_enabled(vd_log_level level)
{
    return (int)level >= atomic_load(&log_level);
}

size_t vd_json_escape(char *out, size_t cap, size_t used, const char *s)
{
    for (; *s && used + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[used++] = '\\';
            out[used++] = (char)c;
        } else if (c < 0x20) {
            used += (size_t)snprintf(out + used, cap - used, "\\u%04x", c);
        } else {
            out[used++] = (char)c;
        }
    }
    if (used < cap)
        out[used] = '\0';
    return used;
}

void vd_log(vd_log_level level, const char *msg, const char *fields)
{
    static const char *names[VD_LOG__MAX] = {"debug", "info", "warn", "error"};
    char line[4096], ts[40];
    char *clean_msg = NULL, *clean_fields = NULL;
    size_t used = 0;
    if (!vd_log_enabled(level))
        return;
    /* nothing secret reaches the log: both parts pass the redactor (fields stay valid JSON:
     * no pattern's secret runs over a quote or a backslash) */
    clean_msg = vd_redact(msg);
    clean_fields = fields && *fields ? vd_redact(fields) : NULL;
    msg = clean_msg ? clean_msg : "(out of memory)";
    fields = clean_fields;
    vd_now_rfc3339(ts, sizeof(ts));
    used = (size_t)snprintf(line, sizeof(line), "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"", ts,
                            names[level]);
    used = vd_json_escape(line, sizeof(line) - 8, used, msg);
    if (fields && *fields && used + strlen(fields) + 8 < sizeof(line))
        used += (size_t)snprintf(line + used, sizeof(line) - used, "\",%s}\n", fields);
    else
        used += (size_t)snprintf(line + used, sizeof(line) - used, "\"}\n");
    fwrite(line, 1, used < sizeof(line) ? used : sizeof(line) - 1, stderr);
    free(clean_msg);
    free(clean_fields);
}

void vd_logf(vd_log_level level, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    if (!vd_log_enabled(level))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    vd_log(level, msg, NULL);
}
