/* extras.c - the two extra modes of verdict-bench: (a) the adjudicator alone (pure module,
 * no server, no database) on a ~200 KiB stream-json stdout and on a small parsed report;
 * (b) the dashboard reads: 1,000,000 items across 50 flow steps seeded with one SQL
 * statement, counters folded, then GET /v1/stats and GET /metrics timed over HTTP.
 */
#include "bench.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/adjudicator.h"
#include "verdict/buf.h"

/* ---- (a) the adjudicator ---------------------------------------------------------------- */

#define MARKER "== ORDER UP =="

/* vd_buf_printf, reporting whether the buffer still holds everything appended. */
static bool sb_printf(vd_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool sb_printf(vd_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vd_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return !b->failed;
}

/* A plausible `claude -p --output-format stream-json` transcript of about `target` bytes:
 * assistant turns with text and tool calls, tool results, a final marker, a result line. */
static char *make_stream(size_t target)
{
    static const char filler[] =
        "The source argues that the migration is safe because every statement runs inside "
        "one transaction; the plan checks that claim against the schema and the test log. ";
    vd_buf b = {0};
    bool ok = sb_printf(&b, "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"bench\","
                            "\"tools\":[\"Read\",\"Write\",\"Edit\",\"Bash\"]}\n");
    for (int i = 0; ok && b.len + 2048 < target; i++) {
        const char *tool = i % 10 == 9 ? "Write" : "Read";
        ok = sb_printf(&b,
                       "{\"type\":\"assistant\",\"message\":{\"id\":\"msg_%d\",\"role\":"
                       "\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Step %d: %s\"},"
                       "{\"type\":\"tool_use\",\"id\":\"toolu_%d\",\"name\":\"%s\",\"input\":"
                       "{\"file_path\":\"/work/src/file_%d.md\"}}]}}\n",
                       i, i, filler, i, tool, i) &&
             sb_printf(&b,
                       "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":"
                       "\"tool_result\",\"tool_use_id\":\"toolu_%d\",\"content\":\"%s%s%s\"}]}}\n",
                       i, filler, filler, filler);
    }
    ok = ok &&
         sb_printf(&b, "{\"type\":\"assistant\",\"message\":{\"role\":\"assistant\",\"content\":["
                       "{\"type\":\"text\",\"text\":\"Done. plan_path = /work/plan.md\\n" MARKER
                       "\"}]}}\n"
                       "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,"
                       "\"duration_ms\":183211,\"num_turns\":120,\"result\":\"Done. plan_path = "
                       "/work/plan.md\\n" MARKER "\",\"total_cost_usd\":0.42}\n");
    if (!ok) {
        vd_buf_cleanup(&b);
        return NULL;
    }
    return vd_buf_take(&b);
}

static const char *patterns[] = {"plan_path\\s*=\\s*/\\S+"};
static const char *messages[] = {"Reading the source.", "Writing the plan.",
                                 "Done. plan_path = /work/plan.md\n" MARKER};

static void base_report(vd_session_report *r)
{
    vd_session_report_init(r);
    r->returncode_known = true;
    r->returncode = 0;
    r->termination = VD_TERMINATION_COMPLETED;
    r->channel = VD_CHANNEL_A;
    r->completion_marker = MARKER;
    r->expected_output_patterns = patterns;
    r->n_expected_output_patterns = 1;
    r->write_behavior.mode = VD_WRITE_MODE_ALWAYS;
    r->fs_writes_detected = true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Adjudicate r for `seconds`, `runs` times; the median rate and the outcome. */
static bool measure(const vd_session_report *r, int runs, double seconds, vb_adj_result *res)
{
    double rates[64];
    vd_adjudication a;
    if (runs > 64)
        runs = 64;
    if (vd_adjudicate(r, &a) != VD_OK)
        return false;
    res->outcome = vd_session_outcome_name(a.outcome);
    vd_adjudication_cleanup(&a);
    for (int k = 0; k < runs; k++) {
        long n = 0;
        double t0 = vb_now(), t;
        do {
            for (int i = 0; i < 16; i++, n++) {
                if (vd_adjudicate(r, &a) != VD_OK)
                    return false;
                vd_adjudication_cleanup(&a);
            }
            t = vb_now() - t0;
        } while (t < seconds);
        rates[k] = (double)n / t;
    }
    qsort(rates, (size_t)runs, sizeof(double), cmp_double);
    res->runs = runs;
    res->median_per_s = runs % 2 ? rates[runs / 2] : (rates[runs / 2 - 1] + rates[runs / 2]) / 2;
    res->min_per_s = rates[0];
    res->max_per_s = rates[runs - 1];
    return true;
}

bool vb_adjudicator_run(const vb_options *o, vb_adj_result res[2])
{
    vd_session_report r;
    double seconds = o->quick ? 0.3 : 1.0;
    char *stream = make_stream(200 * 1024);
    bool ok = stream != NULL;
    memset(res, 0, 2 * sizeof(*res));
    if (ok) {
        base_report(&r);
        r.stdout_text = stream;
        res[0].name = "stream-json stdout";
        res[0].input_bytes = strlen(stream);
        vb_log("adjudicator: %zu-byte stream-json stdout, %d runs", res[0].input_bytes,
               o->adjudicator_runs);
        ok = measure(&r, o->adjudicator_runs, seconds, &res[0]);
    }
    if (ok) {
        base_report(&r);
        r.has_parsed = true;
        r.parsed.subtype = VD_CLI_SUBTYPE_SUCCESS;
        r.parsed.result = "Done. plan_path = /work/plan.md\n" MARKER;
        r.parsed.assistant_messages = messages;
        r.parsed.n_assistant_messages = 3;
        r.parsed.write_call_count = 2;
        res[1].name = "small parsed report";
        res[1].input_bytes = strlen(r.parsed.result);
        for (size_t i = 0; i < 3; i++)
            res[1].input_bytes += strlen(messages[i]);
        ok = measure(&r, o->adjudicator_runs, seconds, &res[1]);
    }
    free(stream);
    return ok;
}

/* ---- (b) dashboard reads over a large table ---------------------------------------------- */

static bool time_get(vb_http *h, const char *path, int repeats, double ms[3], size_t *bytes,
                     long *errors)
{
    vb_samples s = {0};
    for (int i = 0; i < 3 + repeats; i++) {
        double t0 = vb_now();
        int status = vb_http_request(h, "GET", path, NULL, 0);
        double t = vb_now() - t0;
        if (status != 200) {
            (*errors)++;
            fprintf(stderr, "verdict-bench: GET %s: %d %.200s\n", path, status,
                    status > 0 ? h->body : "");
            continue;
        }
        *bytes = h->body_len;
        if (i >= 3) /* three warm-up calls first */
            vb_samples_add(&s, t);
    }
    ms[0] = vb_samples_pct(&s, 50);
    ms[1] = vb_samples_pct(&s, 99);
    ms[2] = vb_samples_pct(&s, 100);
    vb_samples_free(&s);
    return true;
}

bool vb_stats_run(vb_env *e, const vb_options *o, vb_stats_result *out)
{
    char sql[2048];
    vb_http h;
    double t0 = vb_now();
    long n = o->stats_items;
    int k = o->stats_flow_steps;
    memset(out, 0, sizeof(*out));
    out->items = n;
    out->flow_steps = k;
    out->repeats = o->stats_repeats;
    vb_log("stats: seeding %ld items across %d flow steps with SQL", n, k);
    snprintf(sql, sizeof(sql),
             "INSERT INTO flow_steps (flow_step_id) SELECT 'stats_' || s"
             " FROM generate_series(0, %d) s ON CONFLICT DO NOTHING",
             k - 1);
    if (!vb_env_sql(e, sql))
        return false;
    /* states spread over (g / k) so every flow step holds every state; ages over a day */
    /* both rows of each item (sql/migrations/0023_item_sources.sql); the spread is over the id */
    snprintf(sql, sizeof(sql),
             "WITH s AS (INSERT INTO item_sources (flow_step_id, source_type, item_identifier,"
             " created_at)"
             " SELECT 'stats_' || (g %% %d), 'bench', 'https://stats.example/' || g,"
             " now() - make_interval(secs => g %% 86400)"
             " FROM generate_series(1, %ld) g RETURNING id, flow_step_id)"
             " INSERT INTO items (id, flow_step_id, state, attempts, max_attempts, max_defers,"
             " available_at, updated_at)"
             " SELECT id, flow_step_id,"
             " (ARRAY['available','available','deferred','processed','processed','processed',"
             "        'rejected','manual_review','failed','processed'])[1 + (id / %d) %% 10],"
             " 1, 5, 3, now() - make_interval(secs => id %% 86400), now() FROM s",
             k, n, k);
    if (!vb_env_sql(e, sql))
        return false;
    /* one finished job per done item, claimed within the last day */
    if (!vb_env_sql(e, "INSERT INTO jobs (item_id, flow_step_id, worker_id, attempt, status,"
                       " claim_token, claimed_at, lease_expires_at, finished_at, disposition)"
                       " SELECT id, flow_step_id, 'stats-w', 1,"
                       " CASE state WHEN 'processed' THEN 'completed' ELSE 'rejected' END,"
                       " gen_random_uuid(), now() - make_interval(secs => id % 86400),"
                       " now() - make_interval(secs => id % 86400) + interval '5 minutes',"
                       " now() - make_interval(secs => id % 86400) + interval '1 minute',"
                       " CASE state WHEN 'processed' THEN 'complete' ELSE 'reject_source' END"
                       " FROM items WHERE flow_step_id LIKE 'stats\\_%'"
                       " AND state IN ('processed', 'rejected')") ||
        /* rows written by SQL have no transitions, from which the counters are folded
         * (sql/migrations/0019): count them the way a migration counts what exists */
        !vb_env_sql(e, "INSERT INTO item_counts AS c SELECT flow_step_id, state, count(*)"
                       " FROM items WHERE flow_step_id LIKE 'stats\\_%' GROUP BY 1, 2"
                       " ON CONFLICT (flow_step_id, state) DO UPDATE SET n = c.n + EXCLUDED.n") ||
        !vb_env_sql(
            e, "INSERT INTO job_counts AS c SELECT flow_step_id, status,"
               " date_trunc('minute', claimed_at), count(*) FROM jobs"
               " WHERE worker_id = 'stats-w' GROUP BY 1, 2, 3"
               " ON CONFLICT (flow_step_id, minute, status) DO UPDATE SET n = c.n + EXCLUDED.n") ||
        !vb_env_sql(e, "SELECT verdict_compact_counts(), verdict_rollup_job_counts()") ||
        /* what autovacuum does after a bulk load anyway; done here so that it does not
         * run inside the timed calls (steady state is what is measured) */
        !vb_env_sql(e, "VACUUM (ANALYZE) items, jobs"))
        return false;
    out->jobs = vb_env_sql_long(e, "SELECT count(*) FROM jobs WHERE worker_id = 'stats-w'");
    out->seed_seconds = vb_now() - t0;
    vb_log("stats: seeded in %.1f s; timing GET /v1/stats and GET /metrics, %d each",
           out->seed_seconds, o->stats_repeats);
    if (!vb_http_open(&h, e->port, e->token))
        return false;
    time_get(&h, "/v1/stats", o->stats_repeats, out->stats_ms, &out->stats_bytes, &out->errors);
    time_get(&h, "/metrics", o->stats_repeats, out->metrics_ms, &out->metrics_bytes, &out->errors);
    vb_http_close(&h);
    return true;
}
