/* metrics.c - in-process counters for /metrics: requests by route and status, latency
 * histograms by route. Lock-free (atomics), so the hot path never waits on a scrape.
 * Database-derived series are rendered by the /metrics handler from a query. */
#include "http_internal.h"
#include "metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define MAX_ROUTES 64
static const int codes[] = {200, 400, 401, 403, 404, 405, 409, 413, 415, 422, 500, 503};
#define NCODES (sizeof(codes) / sizeof(codes[0]))
static const double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                 0.05,   0.1,   0.25,   0.5,   1,    2.5};
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

static _Atomic uint64_t req_count[MAX_ROUTES + 1][NCODES + 1];
static _Atomic uint64_t lat_bucket[MAX_ROUTES + 1][NBUCKETS + 1];
static _Atomic uint64_t lat_sum_us[MAX_ROUTES + 1];

/* Labelled counters whose label sets are small and known only as strings at run time:
 * a fixed table, found by a linear scan under a mutex (these calls are off the hot path). */
#define MAX_LABELLED 512
typedef struct labelled {
    char labels[160];
    uint64_t n;
} labelled;
static labelled outcomes[MAX_LABELLED], tool_failures[MAX_LABELLED];
static size_t n_outcomes, n_tool_failures;
static pthread_mutex_t labelled_mu = PTHREAD_MUTEX_INITIALIZER;

static void bump(labelled *table, size_t *n, const char *labels)
{
    pthread_mutex_lock(&labelled_mu);
    size_t i = 0;
    while (i < *n && strcmp(table[i].labels, labels) != 0)
        i++;
    if (i == *n && *n < MAX_LABELLED)
        snprintf(table[(*n)++].labels, sizeof(table[0].labels), "%s", labels);
    if (i < *n)
        table[i].n++;
    pthread_mutex_unlock(&labelled_mu);
}

void vd_metrics_observe_adjudication(const char *outcome, const char *retry_reason,
                                     const char *content_state)
{
    char labels[160];
    snprintf(labels, sizeof(labels), "outcome=\"%s\",retry_reason=\"%s\",content_state=\"%s\"",
             outcome, retry_reason, content_state);
    bump(outcomes, &n_outcomes, labels);
}

void vd_metrics_observe_tool_failure(const char *kind, bool retryable)
{
    char labels[160];
    snprintf(labels, sizeof(labels), "kind=\"%s\",retryable=\"%s\"", kind,
             retryable ? "true" : "false");
    bump(tool_failures, &n_tool_failures, labels);
}

static void render_labelled(vd_buf *out, const char *name, const char *help, labelled *table,
                            const size_t *n)
{
    vd_buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    pthread_mutex_lock(&labelled_mu);
    for (size_t i = 0; i < *n; i++)
        vd_buf_printf(out, "%s{%s} %llu\n", name, table[i].labels,
                      (unsigned long long)table[i].n);
    pthread_mutex_unlock(&labelled_mu);
}

static size_t route_slot(long route)
{
    return route < 0 || route >= MAX_ROUTES || (size_t)route >= vd_route_count ? MAX_ROUTES
                                                                                 : (size_t)route;
}

void vd_metrics_observe_http(long route, int status, double seconds)
{
    size_t r = route_slot(route), c = NCODES, b = NBUCKETS;
    for (size_t i = 0; i < NCODES; i++) {
        if (codes[i] == status) {
            c = i;
            break;
        }
    }
    for (size_t i = 0; i < NBUCKETS; i++) {
        if (seconds <= buckets[i]) {
            b = i;
            break;
        }
    }
    atomic_fetch_add_explicit(&req_count[r][c], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&lat_bucket[r][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&lat_sum_us[r], (uint64_t)(seconds * 1e6), memory_order_relaxed);
}

static const char *route_label(size_t r)
{
    return r == MAX_ROUTES ? "unmatched" : vd_routes[r].name;
}

static void render_counts(vd_buf *out)
{
    vd_buf_printf(out, "# HELP verdict_http_requests_total HTTP requests answered, by route "
                       "and status code.\n# TYPE verdict_http_requests_total counter\n");
    for (size_t r = 0; r <= MAX_ROUTES; r++) {
        if (r < MAX_ROUTES && r >= vd_route_count)
            continue;
        for (size_t c = 0; c <= NCODES; c++) {
            uint64_t n = atomic_load_explicit(&req_count[r][c], memory_order_relaxed);
            if (n == 0)
                continue;
            if (c == NCODES)
                vd_buf_printf(out,
                              "verdict_http_requests_total{route=\"%s\",code=\"other\"} %llu\n",
                              route_label(r), (unsigned long long)n);
            else
                vd_buf_printf(out, "verdict_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n",
                              route_label(r), codes[c], (unsigned long long)n);
        }
    }
}

static void render_histograms(vd_buf *out)
{
    vd_buf_printf(out, "# HELP verdict_http_request_duration_seconds Time to answer a request, "
                       "by route.\n# TYPE verdict_http_request_duration_seconds histogram\n");
    for (size_t r = 0; r <= MAX_ROUTES; r++) {
        uint64_t cum = 0;
        if (r < MAX_ROUTES && r >= vd_route_count)
            continue;
        for (size_t b = 0; b <= NBUCKETS; b++)
            cum += atomic_load_explicit(&lat_bucket[r][b], memory_order_relaxed);
        if (cum == 0)
            continue;
        cum = 0;
        for (size_t b = 0; b < NBUCKETS; b++) {
            cum += atomic_load_explicit(&lat_bucket[r][b], memory_order_relaxed);
            vd_buf_printf(out,
                          "verdict_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} "
                          "%llu\n",
                          route_label(r), buckets[b], (unsigned long long)cum);
        }
        cum += atomic_load_explicit(&lat_bucket[r][NBUCKETS], memory_order_relaxed);
        vd_buf_printf(out,
                      "verdict_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} "
                      "%llu\n"
                      "verdict_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n"
                      "verdict_http_request_duration_seconds_count{route=\"%s\"} %llu\n",
                      route_label(r), (unsigned long long)cum, route_label(r),
                      (double)atomic_load(&lat_sum_us[r]) / 1e6, route_label(r),
                      (unsigned long long)cum);
    }
}

void vd_metrics_render_http(vd_buf *out)
{
    render_counts(out);
    render_histograms(out);
    render_labelled(out, "verdict_session_outcomes_total",
                    "Session outcomes stored on jobs, by outcome, retry reason and content state.",
                    outcomes, &n_outcomes);
    render_labelled(out, "verdict_tool_failures_total",
                    "Tool failures recorded, by kind and whether the envelope said retryable.",
                    tool_failures, &n_tool_failures);
}
