/* report.c - verdict-bench's output: the per-cell table, the per-item costs on the server
 * (CPU, WAL, commits) and the top statements by WAL, the side-by-side items/s, the
 * verdict ÷ sql ratios, batch ÷ single, the issue-8 targets with what was measured, and
 * the extra modes; as text for people or as one JSON document (--json) for machines. Reads results,
 * computes nothing that the text and the JSON could disagree on.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The targets verdict is held to (docs/performance.md). */
#define T_SINGLE_RATIO 0.8
#define T_BATCH_RATIO 4.0
#define T_P99_CLAIM_MS 25.0
#define T_P99_CLIENTS 32
#define T_RSS_IDLE_KB (10 * 1024)
#define T_RSS_PEAK_KB (40 * 1024)
#define T_RSS_CLIENTS 64

/* The two ways a batch of 10 is finished: ten single dispositions, or one batch call. */
static const vb_scenario batch_scenarios[2] = {VB_SCENARIO_BATCH, VB_SCENARIO_BATCH_CALL};

static const vb_cell *find(const vb_run *r, vb_scenario s, vb_mode m, int clients)
{
    for (size_t i = 0; i < r->n_cells; i++) {
        const vb_cell *c = &r->cells[i];
        if (c->scenario == s && c->mode == m && c->clients == clients)
            return c;
    }
    return NULL;
}

static double rate(const vb_cell *c, bool items)
{
    if (!c || c->seconds <= 0)
        return 0;
    return (double)(items ? c->items : c->cycles) / c->seconds;
}

/* ---- the targets, computed once for both outputs ----------------------------------------- */

typedef struct target {
    char what[96];
    char measured[96];
    int verdict; /* 1 met, 0 missed, -1 not measured in this run */
} target;

static size_t compute_targets(const vb_run *r, target *t, size_t cap)
{
    size_t n = 0;
    const int single_at[] = {8, 32};
    memset(t, 0, cap * sizeof(*t));
    long errs = 0, e5 = 0;
    bool any_http = false;
    for (size_t i = 0; r->o->matrix && i < 2 && n < cap; i++, n++) {
        const vb_cell *v = find(r, VB_SCENARIO_SINGLE, VB_MODE_HTTP, single_at[i]);
        const vb_cell *s = find(r, VB_SCENARIO_SINGLE, VB_MODE_SQL, single_at[i]);
        snprintf(t[n].what, sizeof(t[n].what), "single: verdict >= %.1f x sql at %d clients",
                 T_SINGLE_RATIO, single_at[i]);
        t[n].verdict = -1;
        if (v && s && rate(s, false) > 0) {
            double ratio = rate(v, false) / rate(s, false);
            snprintf(t[n].measured, sizeof(t[n].measured), "%.2f x (%.0f vs %.0f cycles/s)", ratio,
                     rate(v, false), rate(s, false));
            t[n].verdict = ratio >= T_SINGLE_RATIO;
        }
    }
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < r->o->n_clients && n < cap; i++) {
            int c = r->o->clients[i];
            const vb_cell *b = find(r, batch_scenarios[k], VB_MODE_HTTP, c);
            const vb_cell *s = find(r, VB_SCENARIO_SINGLE, VB_MODE_HTTP, c);
            if (!b || !s || rate(s, true) <= 0)
                continue;
            snprintf(t[n].what, sizeof(t[n].what),
                     "%s (of 10): >= %.0f x single items/s at %d clients",
                     vb_scenario_name(batch_scenarios[k]), T_BATCH_RATIO, c);
            snprintf(t[n].measured, sizeof(t[n].measured), "%.2f x (%.0f vs %.0f items/s)",
                     rate(b, true) / rate(s, true), rate(b, true), rate(s, true));
            t[n].verdict = rate(b, true) / rate(s, true) >= T_BATCH_RATIO;
            n++;
        }
    for (int s = 0; s < VB_SCENARIO__MAX && n < cap; s++) {
        const vb_cell *v = find(r, (vb_scenario)s, VB_MODE_HTTP, T_P99_CLIENTS);
        if (!v)
            continue;
        /* with claim_next the claims ride in the disposition call: its p99 is the claim's */
        bool next = s == VB_SCENARIO_SINGLE_NEXT || s == VB_SCENARIO_BATCH_CALL_NEXT;
        double p99 = next ? v->disp_ms[2] : v->claim_ms[2];
        snprintf(t[n].what, sizeof(t[n].what), "%s: p99 claim%s <= %.0f ms at %d clients",
                 vb_scenario_name((vb_scenario)s), next ? " (the disposition that claims)" : "",
                 T_P99_CLAIM_MS, T_P99_CLIENTS);
        snprintf(t[n].measured, sizeof(t[n].measured), "%.2f ms", p99);
        t[n].verdict = p99 <= T_P99_CLAIM_MS;
        n++;
    }
    for (size_t i = 0; i < r->n_cells; i++) {
        if (r->cells[i].mode != VB_MODE_HTTP)
            continue;
        any_http = true;
        errs += r->cells[i].errors;
        e5 += r->cells[i].errors_5xx;
    }
    if (any_http && n < cap) {
        snprintf(t[n].what, sizeof(t[n].what), "no errors, no 5xx (every verdict cell)");
        snprintf(t[n].measured, sizeof(t[n].measured), "%ld errors, %ld 5xx", errs, e5);
        t[n].verdict = errs == 0 && e5 == 0;
        n++;
    }
    if (r->e->rss_idle_kb > 0 && n < cap) {
        snprintf(t[n].what, sizeof(t[n].what), "verdictd RSS idle <= %d MB", T_RSS_IDLE_KB / 1024);
        snprintf(t[n].measured, sizeof(t[n].measured), "%.1f MB", r->e->rss_idle_kb / 1024.0);
        t[n].verdict = r->e->rss_idle_kb <= T_RSS_IDLE_KB;
        n++;
    }
    long peak = -1;
    for (size_t i = 0; i < r->n_cells; i++)
        if (r->cells[i].mode == VB_MODE_HTTP && r->cells[i].clients == T_RSS_CLIENTS &&
            r->cells[i].rss_peak_kb > peak)
            peak = r->cells[i].rss_peak_kb;
    if (peak > 0 && n < cap) {
        snprintf(t[n].what, sizeof(t[n].what), "verdictd RSS peak <= %d MB at %d clients",
                 T_RSS_PEAK_KB / 1024, T_RSS_CLIENTS);
        snprintf(t[n].measured, sizeof(t[n].measured), "%.1f MB", peak / 1024.0);
        t[n].verdict = peak <= T_RSS_PEAK_KB;
        n++;
    }
    return n;
}

/* CPUs busy with processes that are none of verdictd, PostgreSQL and this program: other
 * load on the machine during the cell (noise), in cores. */
static double other_cores(const vb_cell *c)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    double ours = c->server_cpu_s + c->pg_cpu_s + c->bench_cpu_s;
    double other;
    if (c->seconds <= 0 || ncpu < 1)
        return 0;
    other = (c->host_busy * (double)ncpu * c->seconds - ours) / c->seconds;
    return other > 0 ? other : 0;
}

/* Per item of the measured window: the server's costs. */
typedef struct per_item {
    double pg_cpu_ms, proc_cpu_ms, wal_bytes, wal_records, wal_fpi, commits, stmt_wal;
} per_item;

static per_item costs(const vb_cell *c)
{
    per_item p = {0};
    double n = (double)c->items;
    if (n <= 0)
        return p;
    p.pg_cpu_ms = 1000 * c->pg_cpu_s / n;
    p.proc_cpu_ms = 1000 * c->server_cpu_s / n;
    if (c->db_before.ok && c->db_after.ok) {
        p.wal_bytes = (c->db_after.wal_lsn - c->db_before.wal_lsn) / n;
        p.wal_records = (c->db_after.wal_records - c->db_before.wal_records) / n;
        p.wal_fpi = (c->db_after.wal_fpi - c->db_before.wal_fpi) / n;
        p.commits = (c->db_after.xact_commit - c->db_before.xact_commit) / n;
    }
    p.stmt_wal = c->pgss_top_wal / n;
    return p;
}

/* ---- text -------------------------------------------------------------------------------- */

static void text_costs(const vb_run *r)
{
    printf("\nper item (server side, measured window): PostgreSQL CPU, the side's own process CPU"
           " (verdictd / node), WAL bytes (insert LSN delta), WAL records and full-page images"
           " (pg_stat_wal), commits (pg_stat_database), WAL of top-level statements"
           " (pg_stat_statements)\n");
    printf("%-9s %-8s %4s %9s %11s %11s %10s %9s %8s %9s %9s\n", "scen", "side", "cli", "items/s",
           "pg cpu ms", "proc cpu ms", "WAL B", "WAL rec", "FPI", "commits", "stmt WAL");
    for (size_t i = 0; i < r->n_cells; i++) {
        const vb_cell *c = &r->cells[i];
        per_item p = costs(c);
        printf("%-9s %-8s %4d %9.0f %11.3f %11.3f %10.0f %9.2f %8.3f %9.3f %9.0f\n",
               vb_scenario_name(c->scenario), vb_mode_name(c->mode), c->clients, rate(c, true),
               p.pg_cpu_ms, p.proc_cpu_ms, p.wal_bytes, p.wal_records, p.wal_fpi, p.commits,
               p.stmt_wal);
    }
}

/* items/s of every side, scenario by scenario, client counts across */
static void text_side_by_side(const vb_run *r)
{
    printf("\nside by side (items/s, same run)\n%-9s %-8s", "scen", "side");
    for (int i = 0; i < r->o->n_clients; i++)
        printf(" %8d", r->o->clients[i]);
    printf("  (clients)\n");
    for (int s = 0; s < VB_SCENARIO__MAX; s++)
        for (int m = 0; m < VB_MODE__MAX; m++) {
            if (!r->o->scenarios[s] || !vb_cell_applies(r->o, (vb_scenario)s, (vb_mode)m))
                continue;
            printf("%-9s %-8s", vb_scenario_name((vb_scenario)s), vb_mode_name((vb_mode)m));
            for (int i = 0; i < r->o->n_clients; i++) {
                const vb_cell *c = find(r, (vb_scenario)s, (vb_mode)m, r->o->clients[i]);
                if (c)
                    printf(" %8.0f", rate(c, true));
                else
                    printf(" %8s", "-");
            }
            printf("%s%s\n", r->e->peer_system[m][0] ? "  " : "", r->e->peer_system[m]);
        }
}

static void text_statements(const vb_run *r)
{
    bool any = false;
    for (size_t i = 0; i < r->n_cells; i++) {
        const vb_cell *c = &r->cells[i];
        double n = (double)c->items;
        if (!c->n_stmts || n <= 0)
            continue;
        if (!any)
            printf("\nstatements by WAL (pg_stat_statements, track=all; '+' = nested, its WAL is"
                   " also in the statement that ran it); per item of the window\n");
        any = true;
        printf("%s %s %d clients (%ld items)\n", vb_scenario_name(c->scenario),
               vb_mode_name(c->mode), c->clients, c->items);
        printf("  %8s %9s %8s %8s %7s  %s\n", "calls/it", "mean ms", "WAL B/it", "rec/it", "FPI/it",
               "statement");
        for (int k = 0; k < c->n_stmts; k++) {
            const vb_stmt *t = &c->stmts[k];
            printf("  %8.2f %9.3f %8.0f %8.2f %7.3f %s%.110s\n", t->calls / n, t->mean_ms,
                   t->wal_bytes / n, t->wal_records / n, t->wal_fpi / n, t->toplevel ? " " : "+",
                   t->query);
        }
    }
}

static void text_cells(const vb_run *r)
{
    printf("\n%-9s %-7s %4s %9s %9s %22s %22s %5s %5s %5s %14s %7s %7s %5s %6s %12s\n", "scen",
           "side", "cli", "cycles/s", "items/s", "claim p50/p95/p99 ms", "disp p50/p95/p99 ms",
           "err", "5xx", "empty", "verdictd cpu", "pg cpu", "bench", "host", "other",
           "rss idle/pk");
    for (size_t i = 0; i < r->n_cells; i++) {
        const vb_cell *c = &r->cells[i];
        char claim[40], disp[40], cpu[32], rss[32];
        /* graphile-worker's fetches and completions happen inside it: no latency to show */
        snprintf(claim, sizeof(claim), c->claim_calls ? "%.2f/%.2f/%.2f" : "-", c->claim_ms[0],
                 c->claim_ms[1], c->claim_ms[2]);
        snprintf(disp, sizeof(disp), c->disp_calls ? "%.2f/%.2f/%.2f" : "-", c->disp_ms[0],
                 c->disp_ms[1], c->disp_ms[2]);
        snprintf(cpu, sizeof(cpu), "%.2fs %3.0f%%", c->server_cpu_s,
                 c->seconds > 0 ? 100 * c->server_cpu_s / c->seconds : 0);
        snprintf(rss, sizeof(rss), "%.1f/%.1fM", c->rss_idle_kb / 1024.0, c->rss_peak_kb / 1024.0);
        printf("%-9s %-7s %4d %9.0f %9.0f %22s %22s %5ld %5ld %5ld %14s %6.2fs %6.2fs %4.0f%% "
               "%6.2f %12s\n",
               vb_scenario_name(c->scenario), vb_mode_name(c->mode), c->clients, rate(c, false),
               rate(c, true), claim, disp, c->errors, c->errors_5xx, c->empty_claims, cpu,
               c->pg_cpu_s, c->bench_cpu_s, 100 * c->host_busy, other_cores(c), rss);
        if (c->first_error[0])
            printf("        first error: %s\n", c->first_error);
    }
}

static void text_ratios(const vb_run *r)
{
    printf("\nverdict / sql (cycles/s, same run, interleaved)\n%-9s", "scen");
    for (int i = 0; i < r->o->n_clients; i++)
        printf(" %8d", r->o->clients[i]);
    printf("  (clients)\n");
    for (int s = 0; s < VB_SCENARIO__MAX; s++) {
        if (!r->o->scenarios[s])
            continue;
        printf("%-9s", vb_scenario_name((vb_scenario)s));
        for (int i = 0; i < r->o->n_clients; i++) {
            const vb_cell *v = find(r, (vb_scenario)s, VB_MODE_HTTP, r->o->clients[i]);
            const vb_cell *q = find(r, (vb_scenario)s, VB_MODE_SQL, r->o->clients[i]);
            if (v && q && rate(q, false) > 0)
                printf(" %7.2fx", rate(v, false) / rate(q, false));
            else
                printf(" %8s", "-");
        }
        printf("\n");
    }
    for (int k = 0; k < 2; k++) {
        if (!r->o->scenarios[batch_scenarios[k]] || !r->o->scenarios[VB_SCENARIO_SINGLE])
            continue;
        printf("\n%s / single (items/s)\n%-9s", vb_scenario_name(batch_scenarios[k]), "side");
        for (int i = 0; i < r->o->n_clients; i++)
            printf(" %8d", r->o->clients[i]);
        printf("  (clients)\n");
        for (int m = 0; m < VB_MODE__MAX; m++) {
            printf("%-9s", vb_mode_name((vb_mode)m));
            for (int i = 0; i < r->o->n_clients; i++) {
                const vb_cell *b = find(r, batch_scenarios[k], (vb_mode)m, r->o->clients[i]);
                const vb_cell *s = find(r, VB_SCENARIO_SINGLE, (vb_mode)m, r->o->clients[i]);
                if (b && s && rate(s, true) > 0)
                    printf(" %7.2fx", rate(b, true) / rate(s, true));
                else
                    printf(" %8s", "-");
            }
            printf("\n");
        }
    }
}

void vb_report_text(const vb_run *r)
{
    target t[32];
    size_t n;
    const vb_options *o = r->o;
    printf("verdict-bench on %s\n", r->host);
    if (o->matrix || o->stats_items > 0)
        printf("PostgreSQL: %s (%s)\n", r->e->settings,
               o->own_pg ? (o->fast_db ? "the bench's own cluster, --fast-db"
                                       : "the bench's own cluster, durable")
                         : "--database-url");
    if (o->matrix || o->stats_items > 0)
        printf("verdictd: VERDICT_THREADS=%d (its default, 1 x CPUs, unless --threads), DB pool %d "
               "(VERDICT_DB_POOL_SIZE default threads+1+2x coalesce runners), idle RSS %.1f MB\n",
               r->e->threads, r->e->db_pool, r->e->rss_idle_kb / 1024.0);
    if (o->matrix) {
        printf("matrix: %ld claimable items kept in stock over %d flow steps; seeded %ld over "
               "POST /v1/items in %.1f s (%.0f items/s)\n",
               o->items, o->flow_steps, r->seeded, r->seed_seconds,
               r->seed_seconds > 0 ? r->seeded / r->seed_seconds : 0);
        if (o->cycles > 0)
            printf("cells: %ld measured cycles after %.1f s warm-up", o->cycles, o->warmup);
        else
            printf("cells: %.1f s measured after %.1f s warm-up", o->duration, o->warmup);
        printf("%s; verdict = HTTP to verdictd, sql = the same transactions through verdict's "
               "store over libpq\n",
               o->vacuum ? ", VACUUM (ANALYZE) before each" : "");
        text_cells(r);
        text_costs(r);
        text_side_by_side(r);
        text_statements(r);
        text_ratios(r);
    }
    if (r->have_adj) {
        printf("\nadjudicator (vd_adjudicate alone, one thread, median of %d runs)\n",
               r->adj[0].runs);
        for (int i = 0; i < 2; i++)
            printf("  %-20s %8zu bytes  %10.0f adjudications/s  (min %.0f, max %.0f)  "
                   "outcome %s%s\n",
                   r->adj[i].name, r->adj[i].input_bytes, r->adj[i].median_per_s,
                   r->adj[i].min_per_s, r->adj[i].max_per_s, r->adj[i].outcome, i == 0 ? "" : "");
        printf("  stream-json throughput: %.1f MB/s\n",
               r->adj[0].median_per_s * (double)r->adj[0].input_bytes / 1e6);
    }
    if (r->have_stats) {
        const vb_stats_result *s = &r->stats;
        printf("\ndashboard reads: %ld items, %d flow steps, %ld jobs (seeded by SQL in %.1f s); "
               "%d calls each after 3 warm-ups\n",
               s->items, s->flow_steps, s->jobs, s->seed_seconds, s->repeats);
        printf("  GET /v1/stats   median %7.2f ms  p99 %7.2f ms  max %7.2f ms  (%zu bytes)\n",
               s->stats_ms[0], s->stats_ms[1], s->stats_ms[2], s->stats_bytes);
        printf("  GET /metrics    median %7.2f ms  p99 %7.2f ms  max %7.2f ms  (%zu bytes)\n",
               s->metrics_ms[0], s->metrics_ms[1], s->metrics_ms[2], s->metrics_bytes);
        if (s->errors)
            printf("  errors: %ld\n", s->errors);
    }
    n = compute_targets(r, t, sizeof(t) / sizeof(t[0]));
    if (n) {
        printf("\ntargets\n");
        for (size_t i = 0; i < n; i++)
            printf("  %-4s %-52s %s\n",
                   t[i].verdict < 0 ? "n/a"
                   : t[i].verdict   ? "MET"
                                    : "MISS",
                   t[i].what, t[i].measured[0] ? t[i].measured : "not measured");
    }
    fflush(stdout);
}

/* ---- JSON -------------------------------------------------------------------------------- */

static cJSON *pct_obj(const double v[3])
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "p50_ms", v[0]);
    cJSON_AddNumberToObject(o, "p95_ms", v[1]);
    cJSON_AddNumberToObject(o, "p99_ms", v[2]);
    return o;
}

static cJSON *cell_json(const vb_cell *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "scenario", vb_scenario_name(c->scenario));
    cJSON_AddStringToObject(o, "side", vb_mode_name(c->mode));
    cJSON_AddNumberToObject(o, "clients", c->clients);
    cJSON_AddNumberToObject(o, "seconds", c->seconds);
    cJSON_AddNumberToObject(o, "cycles", (double)c->cycles);
    cJSON_AddNumberToObject(o, "items", (double)c->items);
    cJSON_AddNumberToObject(o, "cycles_per_s", rate(c, false));
    cJSON_AddNumberToObject(o, "items_per_s", rate(c, true));
    cJSON_AddNumberToObject(o, "claim_calls", (double)c->claim_calls);
    cJSON_AddNumberToObject(o, "disposition_calls", (double)c->disp_calls);
    cJSON_AddItemToObject(o, "claim", pct_obj(c->claim_ms));
    cJSON_AddItemToObject(o, "disposition", pct_obj(c->disp_ms));
    cJSON_AddNumberToObject(o, "errors", (double)c->errors);
    cJSON_AddNumberToObject(o, "errors_5xx", (double)c->errors_5xx);
    cJSON_AddNumberToObject(o, "empty_claims", (double)c->empty_claims);
    cJSON_AddNumberToObject(o, "reconnects", (double)c->reconnects);
    cJSON_AddNumberToObject(o, "verdictd_cpu_s", c->server_cpu_s);
    cJSON_AddNumberToObject(o, "postgres_cpu_s", c->pg_cpu_s);
    cJSON_AddNumberToObject(o, "bench_cpu_s", c->bench_cpu_s);
    cJSON_AddNumberToObject(o, "host_busy", c->host_busy);
    cJSON_AddNumberToObject(o, "other_load_cores", other_cores(c));
    cJSON_AddNumberToObject(o, "verdictd_rss_idle_kb", (double)c->rss_idle_kb);
    cJSON_AddNumberToObject(o, "verdictd_rss_peak_kb", (double)c->rss_peak_kb);
    per_item p = costs(c);
    cJSON *pi = cJSON_AddObjectToObject(o, "per_item");
    cJSON_AddNumberToObject(pi, "postgres_cpu_ms", p.pg_cpu_ms);
    cJSON_AddNumberToObject(pi, "process_cpu_ms", p.proc_cpu_ms);
    cJSON_AddNumberToObject(pi, "wal_bytes", p.wal_bytes);
    cJSON_AddNumberToObject(pi, "wal_records", p.wal_records);
    cJSON_AddNumberToObject(pi, "wal_fpi", p.wal_fpi);
    cJSON_AddNumberToObject(pi, "commits", p.commits);
    cJSON_AddNumberToObject(pi, "statement_wal_bytes", p.stmt_wal);
    cJSON *st = cJSON_AddArrayToObject(o, "statements");
    for (int k = 0; k < c->n_stmts; k++) {
        const vb_stmt *t = &c->stmts[k];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "query", t->query);
        cJSON_AddBoolToObject(x, "toplevel", t->toplevel);
        cJSON_AddNumberToObject(x, "calls", t->calls);
        cJSON_AddNumberToObject(x, "mean_ms", t->mean_ms);
        cJSON_AddNumberToObject(x, "rows", t->rows);
        cJSON_AddNumberToObject(x, "wal_bytes", t->wal_bytes);
        cJSON_AddNumberToObject(x, "wal_records", t->wal_records);
        cJSON_AddNumberToObject(x, "wal_fpi", t->wal_fpi);
        cJSON_AddItemToArray(st, x);
    }
    if (c->first_error[0])
        cJSON_AddStringToObject(o, "first_error", c->first_error);
    return o;
}

void vb_report_json(const vb_run *r)
{
    const vb_options *o = r->o;
    cJSON *root = cJSON_CreateObject(), *cfg = cJSON_AddObjectToObject(root, "config");
    cJSON *arr = NULL;
    target t[32];
    size_t n;
    char *text = NULL;
    cJSON_AddStringToObject(root, "host", r->host);
    cJSON_AddStringToObject(root, "postgres_settings", r->e->settings);
    cJSON_AddBoolToObject(root, "own_cluster", o->own_pg);
    cJSON_AddNumberToObject(cfg, "items", (double)o->items);
    cJSON_AddNumberToObject(cfg, "flow_steps", o->flow_steps);
    cJSON_AddNumberToObject(cfg, "duration_s", o->duration);
    cJSON_AddNumberToObject(cfg, "warmup_s", o->warmup);
    cJSON_AddNumberToObject(cfg, "cycles", (double)o->cycles);
    cJSON_AddNumberToObject(cfg, "verdictd_threads", r->e->threads);
    cJSON_AddNumberToObject(cfg, "verdictd_db_pool", r->e->db_pool);
    cJSON_AddNumberToObject(cfg, "seed", o->seed);
    arr = cJSON_AddArrayToObject(cfg, "clients");
    for (int i = 0; i < o->n_clients; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(o->clients[i]));
    cJSON_AddNumberToObject(root, "verdictd_rss_idle_kb", (double)r->e->rss_idle_kb);
    if (o->matrix) {
        cJSON *seed = cJSON_AddObjectToObject(root, "seed");
        cJSON_AddNumberToObject(seed, "items", (double)r->seeded);
        cJSON_AddNumberToObject(seed, "seconds", r->seed_seconds);
        arr = cJSON_AddArrayToObject(root, "cells");
        for (size_t i = 0; i < r->n_cells; i++)
            cJSON_AddItemToArray(arr, cell_json(&r->cells[i]));
        arr = cJSON_AddArrayToObject(root, "ratios");
        for (int s = 0; s < VB_SCENARIO__MAX; s++)
            for (int i = 0; i < o->n_clients; i++) {
                const vb_cell *v = find(r, (vb_scenario)s, VB_MODE_HTTP, o->clients[i]);
                const vb_cell *q = find(r, (vb_scenario)s, VB_MODE_SQL, o->clients[i]);
                const vb_cell *b = find(r, (vb_scenario)s, VB_MODE_HTTP, o->clients[i]);
                const vb_cell *g = find(r, VB_SCENARIO_SINGLE, VB_MODE_HTTP, o->clients[i]);
                cJSON *x;
                if (!v || !q || rate(q, false) <= 0)
                    continue;
                x = cJSON_CreateObject();
                cJSON_AddStringToObject(x, "scenario", vb_scenario_name((vb_scenario)s));
                cJSON_AddNumberToObject(x, "clients", o->clients[i]);
                cJSON_AddNumberToObject(x, "verdict_over_sql", rate(v, false) / rate(q, false));
                if ((s == VB_SCENARIO_BATCH || s == VB_SCENARIO_BATCH_CALL) && b && g &&
                    rate(g, true) > 0)
                    cJSON_AddNumberToObject(x, "batch_over_single_items",
                                            rate(b, true) / rate(g, true));
                cJSON_AddItemToArray(arr, x);
            }
    }
    if (r->have_adj) {
        arr = cJSON_AddArrayToObject(root, "adjudicator");
        for (int i = 0; i < 2; i++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "input", r->adj[i].name);
            cJSON_AddNumberToObject(x, "input_bytes", (double)r->adj[i].input_bytes);
            cJSON_AddNumberToObject(x, "median_per_s", r->adj[i].median_per_s);
            cJSON_AddNumberToObject(x, "min_per_s", r->adj[i].min_per_s);
            cJSON_AddNumberToObject(x, "max_per_s", r->adj[i].max_per_s);
            cJSON_AddNumberToObject(x, "runs", r->adj[i].runs);
            cJSON_AddStringToObject(x, "outcome", r->adj[i].outcome);
            cJSON_AddItemToArray(arr, x);
        }
    }
    if (r->have_stats) {
        cJSON *x = cJSON_AddObjectToObject(root, "dashboard_reads");
        cJSON *m;
        cJSON_AddNumberToObject(x, "items", (double)r->stats.items);
        cJSON_AddNumberToObject(x, "flow_steps", r->stats.flow_steps);
        cJSON_AddNumberToObject(x, "jobs", (double)r->stats.jobs);
        cJSON_AddNumberToObject(x, "seed_seconds", r->stats.seed_seconds);
        cJSON_AddNumberToObject(x, "repeats", r->stats.repeats);
        cJSON_AddNumberToObject(x, "errors", (double)r->stats.errors);
        m = cJSON_AddObjectToObject(x, "stats");
        cJSON_AddNumberToObject(m, "median_ms", r->stats.stats_ms[0]);
        cJSON_AddNumberToObject(m, "p99_ms", r->stats.stats_ms[1]);
        cJSON_AddNumberToObject(m, "max_ms", r->stats.stats_ms[2]);
        cJSON_AddNumberToObject(m, "bytes", (double)r->stats.stats_bytes);
        m = cJSON_AddObjectToObject(x, "metrics");
        cJSON_AddNumberToObject(m, "median_ms", r->stats.metrics_ms[0]);
        cJSON_AddNumberToObject(m, "p99_ms", r->stats.metrics_ms[1]);
        cJSON_AddNumberToObject(m, "max_ms", r->stats.metrics_ms[2]);
        cJSON_AddNumberToObject(m, "bytes", (double)r->stats.metrics_bytes);
    }
    n = compute_targets(r, t, sizeof(t) / sizeof(t[0]));
    arr = cJSON_AddArrayToObject(root, "targets");
    for (size_t i = 0; i < n; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "target", t[i].what);
        cJSON_AddStringToObject(x, "measured", t[i].measured);
        if (t[i].verdict < 0)
            cJSON_AddNullToObject(x, "met");
        else
            cJSON_AddBoolToObject(x, "met", t[i].verdict);
        cJSON_AddItemToArray(arr, x);
    }
    text = cJSON_Print(root);
    if (text)
        printf("%s\n", text);
    free(text);
    cJSON_Delete(root);
    fflush(stdout);
}
