/* metrics.c - /metrics: in-process counters (requests by route and status, latency histograms
 * by route; lock-free atomics, so the hot path never waits on a scrape) and the one renderer of
 * the whole page, the database-derived families included (their samples come from the store
 * as data: vd_store_metrics). */
#include "http_internal.h"
#include "metrics.h"
#include "otlp.h"

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
static labelled outcomes[MAX_LABELLED], tool_failures[MAX_LABELLED], releases[MAX_LABELLED],
    disagreements[8], lint_signals[8];
static size_t n_outcomes, n_tool_failures, n_releases, n_disagreements, n_lint_signals;
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

void vd_metrics_observe_release(const char *flow_step_id, bool churn)
{
    char labels[160];
    size_t n = 0;
    n += (size_t)snprintf(labels, sizeof(labels), "flow_step_id=\"");
    /* escaped as the text format wants; a flow step id is at most 100 bytes */
    for (const char *p = flow_step_id; *p && n + 24 < sizeof(labels); p++) {
        if (*p == '\\' || *p == '"' || *p == '\n')
            labels[n++] = '\\';
        labels[n++] = *p == '\n' ? 'n' : *p;
    }
    snprintf(labels + n, sizeof(labels) - n, "\",churn=\"%s\"", churn ? "true" : "false");
    bump(releases, &n_releases, labels);
}

void vd_metrics_observe_label_disagreement(const char *label, const char *text)
{
    char labels[160];
    snprintf(labels, sizeof(labels), "label=\"%s\",text=\"%s\"", label, text);
    pthread_mutex_lock(&labelled_mu);
    size_t i = 0;
    while (i < n_disagreements && strcmp(disagreements[i].labels, labels) != 0)
        i++;
    if (i == n_disagreements && i < sizeof(disagreements) / sizeof(disagreements[0]))
        snprintf(disagreements[n_disagreements++].labels, sizeof(labels), "%s", labels);
    if (i < n_disagreements)
        disagreements[i].n++;
    pthread_mutex_unlock(&labelled_mu);
}

void vd_metrics_observe_lint_signal(const char *signal)
{
    char labels[160];
    snprintf(labels, sizeof(labels), "signal=\"%s\"", signal);
    pthread_mutex_lock(&labelled_mu);
    size_t i = 0;
    while (i < n_lint_signals && strcmp(lint_signals[i].labels, labels) != 0)
        i++;
    if (i == n_lint_signals && i < sizeof(lint_signals) / sizeof(lint_signals[0]))
        snprintf(lint_signals[n_lint_signals++].labels, sizeof(labels), "%s", labels);
    if (i < n_lint_signals)
        lint_signals[i].n++;
    pthread_mutex_unlock(&labelled_mu);
}

static void render_labelled(vd_buf *out, const char *name, const char *help, labelled *table,
                            const size_t *n)
{
    vd_buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    pthread_mutex_lock(&labelled_mu);
    for (size_t i = 0; i < *n; i++)
        vd_buf_printf(out, "%s{%s} %llu\n", name, table[i].labels, (unsigned long long)table[i].n);
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

static void render_http(vd_buf *out)
{
    render_counts(out);
    render_histograms(out);
    render_labelled(out, "verdict_session_outcomes_total",
                    "Session outcomes stored on jobs, by outcome, retry reason and content state.",
                    outcomes, &n_outcomes);
    render_labelled(out, "verdict_tool_failures_total",
                    "Tool failures recorded, by kind and whether the envelope said retryable.",
                    tool_failures, &n_tool_failures);
    render_labelled(out, "verdict_releases_total",
                    "Holder releases without a verdict, by flow step and whether the release "
                    "parked the item in manual_review (churn).",
                    releases, &n_releases);
    render_labelled(out, "verdict_tool_failure_label_disagreements_total",
                    "Tool failures whose plugin label (kind) disagrees with the class their "
                    "template's text shows.",
                    disagreements, &n_disagreements);
    render_labelled(out, "verdict_rejection_lint_signals_total",
                    "Rejections accepted although their reason reads like a tooling failure: "
                    "nothing on the item's record backed the words, so they did not refuse.",
                    lint_signals, &n_lint_signals);
}

/* A label value, escaped as the text format wants (backslash, double quote, newline). */
static void put_label(vd_buf *out, const char *name, const char *v)
{
    vd_buf_printf(out, "%s=\"", name);
    for (const char *p = v; *p; p++) {
        if (*p == '\\' || *p == '"')
            vd_buf_printf(out, "\\%c", *p);
        else if (*p == '\n')
            vd_buf_printf(out, "\\n");
        else
            vd_buf_printf(out, "%c", *p);
    }
    vd_buf_printf(out, "\"");
}

static void render_db(vd_buf *out, const vd_db_metrics *db)
{
    static const struct {
        const char *name, *type, *help, *a, *b;
    } fam[VD_DB__MAX] = {
        [VD_DB_ITEMS] = {"verdict_items", "gauge", "Items by flow step and state.", "flow_step_id",
                         "state"},
        [VD_DB_TRANSITIONS] = {"verdict_transitions_total", "counter",
                               "State transitions recorded, by cause and new state.", "cause",
                               "to_state"},
        [VD_DB_STUCK_CLAIMS] = {"verdict_stuck_claims", "gauge",
                                "Claims whose lease passed and the sweeper has not closed yet.",
                                "flow_step_id", NULL},
        [VD_DB_OLDEST_CLAIMABLE] = {"verdict_oldest_claimable_age_seconds", "gauge",
                                    "Age of the oldest item that may be claimed now (0: none).",
                                    "flow_step_id", NULL},
        [VD_DB_INCIDENTS_OPEN] = {"verdict_tool_incidents_open", "gauge",
                                  "Open tooling incidents (GET /v1/tool-incidents), by flow step "
                                  "and tool.",
                                  "flow_step_id", "tool"},
        [VD_DB_LIMIT_IN_FLIGHT] = {"verdict_limit_in_flight", "gauge",
                                   "Jobs holding a concurrency slot of a limit key.", "key", NULL},
        [VD_DB_LIMIT_THROTTLED] = {"verdict_limit_throttled", "gauge",
                                   "1 while a provider backoff holds the limit key closed.", "key",
                                   NULL},
        [VD_DB_LIMIT_TOKENS] = {"verdict_limit_tokens_used_total", "counter",
                                "Model tokens reported used by jobs holding a tokens_per_minute "
                                "key.",
                                "key", NULL},
        [VD_DB_ITEM_USAGE] = {"verdict_item_usage_tokens_total", "counter",
                              "Model tokens (input + output) dispositions reported as used, by "
                              "flow step.",
                              "flow_step_id", NULL},
        [VD_DB_REVIEW_QUESTIONS] = {"verdict_review_questions", "gauge",
                                    "Items in manual_review waiting on a model's question "
                                    "(request_review), by flow step.",
                                    "flow_step_id", NULL},
        [VD_DB_REVIEW_OLDEST] = {"verdict_review_oldest_question_age_seconds", "gauge",
                                 "How long the oldest unanswered question has waited (0: none).",
                                 "flow_step_id", NULL},
    };
    size_t k = 0;
    for (int f = 0; f < VD_DB__MAX; f++) {
        vd_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", fam[f].name, fam[f].help, fam[f].name,
                      fam[f].type);
        for (; k < db->n && (int)db->s[k].family == f; k++) {
            vd_buf_printf(out, "%s{", fam[f].name);
            put_label(out, fam[f].a, db->s[k].a);
            if (fam[f].b && db->s[k].b) {
                vd_buf_printf(out, ",");
                put_label(out, fam[f].b, db->s[k].b);
            }
            vd_buf_printf(out, "} %lld\n", db->s[k].value);
        }
    }
}

/* The span exporter's counts (otlp.h): 0 while VERDICT_OTLP_ENDPOINT is unset. */
static void render_otlp(vd_buf *out)
{
    uint64_t sent = 0, dropped = 0, failed = 0;
    vd_otlp_counts(&sent, &dropped, &failed);
    vd_buf_printf(out,
                  "# HELP verdict_otlp_spans_total Request spans of the OTLP export, by result "
                  "(exported; dropped: the queue was full; failed: the send failed).\n"
                  "# TYPE verdict_otlp_spans_total counter\n"
                  "verdict_otlp_spans_total{result=\"exported\"} %llu\n"
                  "verdict_otlp_spans_total{result=\"dropped\"} %llu\n"
                  "verdict_otlp_spans_total{result=\"failed\"} %llu\n",
                  (unsigned long long)sent, (unsigned long long)dropped,
                  (unsigned long long)failed);
}

static void render_sweeper(vd_buf *out, const vd_sweeper_counts *sw)
{
    vd_buf_printf(out,
                  "# HELP verdict_sweeper_runs_total Sweeper passes of this process, by result.\n"
                  "# TYPE verdict_sweeper_runs_total counter\n"
                  "verdict_sweeper_runs_total{result=\"ok\"} %llu\n"
                  "verdict_sweeper_runs_total{result=\"error\"} %llu\n"
                  "# HELP verdict_sweeper_leases_closed_total Passed leases the sweeper closed.\n"
                  "# TYPE verdict_sweeper_leases_closed_total counter\n"
                  "verdict_sweeper_leases_closed_total %llu\n"
                  "# HELP verdict_sweeper_idempotency_purged_total Idempotency records older "
                  "than 24 h purged.\n"
                  "# TYPE verdict_sweeper_idempotency_purged_total counter\n"
                  "verdict_sweeper_idempotency_purged_total %llu\n"
                  "# HELP verdict_sweeper_retention_deleted_total Jobs and transitions deleted by "
                  "retention.\n"
                  "# TYPE verdict_sweeper_retention_deleted_total counter\n"
                  "verdict_sweeper_retention_deleted_total %llu\n"
                  "# HELP verdict_sweeper_last_run_timestamp_seconds When the last sweeper pass "
                  "ended (0: none yet).\n"
                  "# TYPE verdict_sweeper_last_run_timestamp_seconds gauge\n"
                  "verdict_sweeper_last_run_timestamp_seconds %.3f\n",
                  sw->runs - sw->failed_runs, sw->failed_runs, sw->leases_closed,
                  sw->idempotency_purged, sw->retention_deleted, sw->last_run_unix);
}

static int claim_waiters; /* atomic */

void vd_metrics_waiters_add(int delta)
{
    __atomic_fetch_add(&claim_waiters, delta, __ATOMIC_RELAXED);
}

static unsigned long evicted; /* atomic */

/* coalesced statements and the requests they served, by kind (0 claims, 1 dispositions) */
static unsigned long coalesced_stmts[2], coalesced_reqs[2]; /* atomic */

void vd_metrics_observe_coalesced(bool dispositions, size_t requests)
{
    __atomic_fetch_add(&coalesced_stmts[dispositions], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&coalesced_reqs[dispositions], requests, __ATOMIC_RELAXED);
}

static void render_coalesced(vd_buf *out)
{
    static const char *const kinds[] = {"claim", "disposition"};
    vd_buf_printf(out, "# HELP verdict_coalesced_statements_total Statements that served "
                       "coalesced single-item requests, by kind.\n"
                       "# TYPE verdict_coalesced_statements_total counter\n");
    for (int k = 0; k < 2; k++)
        vd_buf_printf(out, "verdict_coalesced_statements_total{kind=\"%s\"} %lu\n", kinds[k],
                      __atomic_load_n(&coalesced_stmts[k], __ATOMIC_RELAXED));
    vd_buf_printf(out, "# HELP verdict_coalesced_requests_total Requests those statements "
                       "served, by kind.\n# TYPE verdict_coalesced_requests_total counter\n");
    for (int k = 0; k < 2; k++)
        vd_buf_printf(out, "verdict_coalesced_requests_total{kind=\"%s\"} %lu\n", kinds[k],
                      __atomic_load_n(&coalesced_reqs[k], __ATOMIC_RELAXED));
}

/* claims the executor answered (0) and handed back to the sync path (1) */
static unsigned long async_claims[2]; /* atomic */

void vd_metrics_observe_async(bool handed_back)
{
    __atomic_fetch_add(&async_claims[handed_back], 1, __ATOMIC_RELAXED);
}

/* batch dispositions the executor answered (0) and handed back to the sync path (1) */
static unsigned long async_disps[2]; /* atomic */

void vd_metrics_observe_async_dispositions(bool handed_back)
{
    __atomic_fetch_add(&async_disps[handed_back], 1, __ATOMIC_RELAXED);
}

/* groups of coalesced single dispositions (and their requests) the executor answered (0) and
 * handed back to a runner (1) */
static unsigned long async_groups[2], async_group_reqs[2]; /* atomic */

void vd_metrics_observe_async_coalesced(bool handed_back, size_t requests)
{
    __atomic_fetch_add(&async_groups[handed_back], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&async_group_reqs[handed_back], requests, __ATOMIC_RELAXED);
}

static void render_async_coalesced(vd_buf *out)
{
    vd_buf_printf(out,
                  "# HELP verdict_db_async_coalesced_total Statements of coalesced single "
                  "dispositions sent on the non-blocking executor, by outcome (answered there, "
                  "or handed back to a runner: nothing of it committed).\n"
                  "# TYPE verdict_db_async_coalesced_total counter\n"
                  "verdict_db_async_coalesced_total{outcome=\"answered\"} %lu\n"
                  "verdict_db_async_coalesced_total{outcome=\"handed_back\"} %lu\n"
                  "# HELP verdict_db_async_coalesced_requests_total The single dispositions "
                  "those statements carried, by outcome.\n"
                  "# TYPE verdict_db_async_coalesced_requests_total counter\n"
                  "verdict_db_async_coalesced_requests_total{outcome=\"answered\"} %lu\n"
                  "verdict_db_async_coalesced_requests_total{outcome=\"handed_back\"} %lu\n",
                  __atomic_load_n(&async_groups[0], __ATOMIC_RELAXED),
                  __atomic_load_n(&async_groups[1], __ATOMIC_RELAXED),
                  __atomic_load_n(&async_group_reqs[0], __ATOMIC_RELAXED),
                  __atomic_load_n(&async_group_reqs[1], __ATOMIC_RELAXED));
}

static void render_async(vd_buf *out)
{
    vd_buf_printf(out,
                  "# HELP verdict_db_async_claims_total Claims sent on the non-blocking "
                  "executor, by outcome (answered there, or handed back to a worker: "
                  "nothing of it committed).\n# TYPE verdict_db_async_claims_total counter\n"
                  "verdict_db_async_claims_total{outcome=\"answered\"} %lu\n"
                  "verdict_db_async_claims_total{outcome=\"handed_back\"} %lu\n",
                  __atomic_load_n(&async_claims[0], __ATOMIC_RELAXED),
                  __atomic_load_n(&async_claims[1], __ATOMIC_RELAXED));
    vd_buf_printf(out,
                  "# HELP verdict_db_async_dispositions_total Batch dispositions sent on the "
                  "non-blocking executor, by outcome (answered there, or handed back to a "
                  "worker: nothing of it committed).\n"
                  "# TYPE verdict_db_async_dispositions_total counter\n"
                  "verdict_db_async_dispositions_total{outcome=\"answered\"} %lu\n"
                  "verdict_db_async_dispositions_total{outcome=\"handed_back\"} %lu\n",
                  __atomic_load_n(&async_disps[0], __ATOMIC_RELAXED),
                  __atomic_load_n(&async_disps[1], __ATOMIC_RELAXED));
}

void vd_metrics_connection_evicted(void)
{
    __atomic_fetch_add(&evicted, 1, __ATOMIC_RELAXED);
}

void vd_metrics_render(vd_buf *out, const vd_metrics_input *in)
{
    vd_buf_printf(out, "# HELP verdict_up Whether verdictd is serving.\n# TYPE verdict_up gauge\n"
                       "verdict_up 1\n");
    vd_buf_printf(out,
                  "# HELP verdict_db_pool_in_use Database connections borrowed right now.\n"
                  "# TYPE verdict_db_pool_in_use gauge\nverdict_db_pool_in_use %d\n"
                  "# HELP verdict_db_pool_size Database connections this process may open.\n"
                  "# TYPE verdict_db_pool_size gauge\nverdict_db_pool_size %d\n",
                  in->pool_in_use, in->pool_size);
    vd_buf_printf(out,
                  "# HELP verdict_db_unprepared Whether statements are sent unprepared (1: "
                  "transaction pool mode, set or detected) or prepared (0).\n"
                  "# TYPE verdict_db_unprepared gauge\nverdict_db_unprepared %d\n"
                  "# HELP verdict_db_pool_mode_detected Whether verdictd detected a "
                  "transaction pooler by itself and switched to unprepared statements (1).\n"
                  "# TYPE verdict_db_pool_mode_detected gauge\nverdict_db_pool_mode_detected %d\n",
                  in->unprepared ? 1 : 0, in->pool_mode_detected ? 1 : 0);
    vd_buf_printf(out,
                  "# HELP verdict_claim_waiters Long-poll claims (wait_seconds) parked right "
                  "now.\n# TYPE verdict_claim_waiters gauge\nverdict_claim_waiters %d\n",
                  __atomic_load_n(&claim_waiters, __ATOMIC_RELAXED));
    vd_buf_printf(out,
                  "# HELP verdict_http_connections_evicted_total Connections closed to keep "
                  "VERDICT_MAX_CONNECTIONS (an incomplete request first).\n"
                  "# TYPE verdict_http_connections_evicted_total counter\n"
                  "verdict_http_connections_evicted_total %lu\n",
                  __atomic_load_n(&evicted, __ATOMIC_RELAXED));
    render_http(out);
    render_coalesced(out);
    render_async(out);
    render_async_coalesced(out);
    render_sweeper(out, in->sweeper);
    render_otlp(out);
    /* the database families are left out (not failed) while the database is down:
     * verdict_up still answers and verdict_db_up says 0, which is what an alert wants */
    if (in->db)
        render_db(out, in->db);
    vd_buf_printf(out,
                  "# HELP verdict_db_up Whether this scrape could read verdict's database "
                  "(1) or not (0).\n# TYPE verdict_db_up gauge\nverdict_db_up %d\n",
                  in->db ? 1 : 0);
}
