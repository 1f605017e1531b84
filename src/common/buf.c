/* buf.c - the growable text buffer (buf.h), shared by every layer: the metrics renderer, the
 * batch answers, the redactor and the adjudicator. No dependencies. */
#include "verdict/buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for `more` bytes and the NUL after them; false (and failed set) when there is none. */
static bool reserve(vd_buf *b, size_t more)
{
    if (b->failed)
        return false;
    if (more > SIZE_MAX / 4 - b->len) {
        b->failed = true;
        return false;
    }
    if (b->data && b->len + more < b->cap)
        return true;
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *data = realloc(b->data, cap);
    if (!data) {
        b->failed = true;
        return false;
    }
    b->data = data;
    b->cap = cap;
    return true;
}

void vd_buf_vprintf(vd_buf *b, const char *fmt, va_list ap)
{
    va_list again;
    if (!reserve(b, 0))
        return;
    /* formatted straight into the free space; only text that does not fit is formatted twice */
    va_copy(again, ap);
    int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    if (n < 0) {
        b->failed = true;
    } else if (b->len + (size_t)n < b->cap) {
        b->len += (size_t)n;
    } else if (reserve(b, (size_t)n)) {
        vsnprintf(b->data + b->len, b->cap - b->len, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
}

void vd_buf_printf(vd_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vd_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void vd_buf_append(vd_buf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    if (n > 0)
        memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void vd_buf_cleanup(vd_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = false;
}

char *vd_buf_take(vd_buf *b)
{
    char *s = NULL;
    if (!b->failed) {
        vd_buf_append(b, "", 0);
        s = b->failed ? NULL : b->data;
    }
    if (s)
        b->data = NULL;
    vd_buf_cleanup(b);
    return s;
}
