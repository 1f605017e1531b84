/* metrics.h - the http layer's in-process counters (metrics.c) and a growable text buffer. */
#ifndef VERDICT_HTTP_METRICS_H
#define VERDICT_HTTP_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "verdict/store_ops.h"
#include "verdict/sweeper.h"

typedef struct vd_buf {
    char *data;
    size_t len, cap;
    bool failed; /* an allocation failed; data holds what fit */
} vd_buf;

void vd_buf_printf(vd_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void vd_buf_cleanup(vd_buf *b);

/* Count one answered request; route is an index into vd_routes or -1 for unmatched. */
void vd_metrics_observe_http(long route, int status, double seconds);
/* Count one stored session outcome / one recorded tool failure (names are wire strings). */
void vd_metrics_observe_adjudication(const char *outcome, const char *retry_reason,
                                     const char *content_state);
void vd_metrics_observe_tool_failure(const char *kind, bool retryable);
/* What one scrape shows besides the in-process counters. */
typedef struct vd_metrics_input {
    int pool_in_use, pool_size;
    const vd_sweeper_counts *sweeper;
    const vd_db_metrics *db; /* NULL: the database could not be read (verdict_db_up 0) */
} vd_metrics_input;

/* The whole /metrics page in Prometheus text format: the one place that renders it. */
void vd_metrics_render(vd_buf *out, const vd_metrics_input *in);

#endif
