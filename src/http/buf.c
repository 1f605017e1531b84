/* buf.c - a growable text buffer for rendering (metrics). No dependencies. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "metrics.h"

void vd_buf_printf(vd_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n = 0;
    if (b->failed)
        return;
    for (int pass = 0; pass < 2; pass++) {
        va_start(ap, fmt);
        n = vsnprintf(b->data ? b->data + b->len : NULL, b->data ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = true;
            return;
        }
        if (b->data && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *data = realloc(b->data, cap);
        if (!data) {
            b->failed = true;
            return;
        }
        b->data = data;
        b->cap = cap;
    }
}

void vd_buf_cleanup(vd_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
