/* metrics.h - the http layer's in-process counters and the /metrics renderer (metrics.c). */
#ifndef VERDICT_HTTP_METRICS_H
#define VERDICT_HTTP_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "verdict/buf.h"
#include "verdict/store/stats.h"
#include "verdict/sweeper.h"

/* Count one answered request; route is an index into vd_routes or -1 for unmatched. */
void vd_metrics_observe_http(long route, int status, double seconds);
/* Count one stored session outcome / one recorded tool failure (names are wire strings). */
void vd_metrics_observe_adjudication(const char *outcome, const char *retry_reason,
                                     const char *content_state);
void vd_metrics_observe_tool_failure(const char *kind, bool retryable);
/* Count one holder release of an item of flow_step_id; churn: it parked the item. */
void vd_metrics_observe_release(const char *flow_step_id, bool churn);
/* A tool failure whose plugin label disagrees with the class of its template's text. */
void vd_metrics_observe_label_disagreement(const char *label, const char *text);
/* A rejection the lint accepted with a signal (lint.h VD_LINT_SIGNAL_WORDS). */
void vd_metrics_observe_lint_signal(const char *signal);
/* Long-poll claims parked (verdict_claim_waiters) changed by delta (waiters.c). */
void vd_metrics_waiters_add(int delta);
/* One coalesced statement served `requests` single-item claims or dispositions (server.c). */
void vd_metrics_observe_coalesced(bool dispositions, size_t requests);
/* One claim answered by the non-blocking executor, or handed back to a worker (server.c). */
void vd_metrics_observe_async(bool handed_back);
/* The same for a batch disposition (verdict_db_async_dispositions_total). */
void vd_metrics_observe_async_dispositions(bool handed_back);
/* The same for a group of coalesced single dispositions of `requests` requests
 * (verdict_db_async_coalesced_total, and ..._requests_total). */
void vd_metrics_observe_async_coalesced(bool handed_back, size_t requests);
/* One connection closed to keep the global connection cap (guard.c). */
void vd_metrics_connection_evicted(void);
/* What one scrape shows besides the in-process counters. */
typedef struct vd_metrics_input {
    int pool_in_use, pool_size;
    bool unprepared, pool_mode_detected; /* vd_db_unprepared, vd_db_pool_mode_detected */
    const vd_sweeper_counts *sweeper;
    const vd_db_metrics *db; /* NULL: the database could not be read (verdict_db_up 0) */
} vd_metrics_input;

/* The whole /metrics page in Prometheus text format: the one place that renders it. */
void vd_metrics_render(vd_buf *out, const vd_metrics_input *in);

#endif
