/* util.c - verdict-bench's small helpers: clocks, latency samples and percentiles, a
 * per-worker random generator, string formatting and progress lines. Depends on libc only.
 */
#include "bench.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool vb_quiet = false;

double vb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void vb_sleep(double seconds)
{
    struct timespec ts;
    if (seconds <= 0)
        return;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static bool samples_reserve(vb_samples *s, size_t need)
{
    size_t cap = s->cap ? s->cap : 4096;
    uint32_t *v = NULL;
    if (need <= s->cap)
        return true;
    while (cap < need)
        cap *= 2;
    v = realloc(s->v, cap * sizeof(*v));
    if (!v)
        return false;
    s->v = v;
    s->cap = cap;
    return true;
}

bool vb_samples_add(vb_samples *s, double seconds)
{
    double us = seconds * 1e6;
    if (!samples_reserve(s, s->n + 1))
        return false;
    s->v[s->n++] = us < 0 ? 0 : us > 4e9 ? 4000000000u : (uint32_t)(us + 0.5);
    return true;
}

bool vb_samples_merge(vb_samples *dst, const vb_samples *src)
{
    if (src->n == 0)
        return true;
    if (!samples_reserve(dst, dst->n + src->n))
        return false;
    memcpy(dst->v + dst->n, src->v, src->n * sizeof(*src->v));
    dst->n += src->n;
    return true;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

double vb_samples_pct(vb_samples *s, double p)
{
    size_t rank;
    if (s->n == 0)
        return 0;
    qsort(s->v, s->n, sizeof(*s->v), cmp_u32);
    /* nearest rank: the smallest value with at least p% of the samples at or below it */
    rank = (size_t)((p / 100.0) * (double)s->n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > s->n)
        rank = s->n;
    return s->v[rank - 1] / 1000.0;
}

void vb_samples_free(vb_samples *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}

uint64_t vb_rand(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9E3779B97F4A7C15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

char *vb_strdupf(const char *fmt, ...)
{
    va_list ap;
    int n;
    char *s = NULL;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    s = malloc((size_t)n + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

void vb_log(const char *fmt, ...)
{
    va_list ap;
    if (vb_quiet)
        return;
    va_start(ap, fmt);
    fputs("verdict-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

const char *vb_scenario_name(vb_scenario s)
{
    static const char *const names[] = {"single", "batch",       "batchcall",
                                        "mix",    "single_next", "batchcall_next"};
    return s < VB_SCENARIO__MAX ? names[s] : "?";
}

const char *vb_mode_name(vb_mode m)
{
    static const char *const names[] = {"verdict", "sql", "minimal", "pg-boss", "graphile"};
    return m < VB_MODE__MAX ? names[m] : "?";
}
