/* buf.h - the one growable text buffer of verdict: appended to with vd_buf_printf or
 * vd_buf_append, always NUL-terminated once anything was appended. A failed allocation sets
 * `failed` and makes every later append a no-op, so a writer checks once at the end. A
 * zeroed vd_buf is empty; data == NULL reads as "". Not thread-safe (one owner). */
#ifndef VERDICT_BUF_H
#define VERDICT_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct vd_buf {
    char *data;
    size_t len, cap;
    bool failed; /* an allocation failed; data holds what fit */
} vd_buf;

void vd_buf_printf(vd_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void vd_buf_vprintf(vd_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Append s[0..n) (may contain no NUL; n 0 makes data non-NULL). */
void vd_buf_append(vd_buf *b, const char *s, size_t n);
/* Free the storage and reset *b to empty (NULL-safe on a zeroed buffer). */
void vd_buf_cleanup(vd_buf *b);
/* Hand the text to the caller (malloc'd, "" when nothing was appended; NULL when an
 * allocation failed) and reset *b. */
char *vd_buf_take(vd_buf *b);

#endif
