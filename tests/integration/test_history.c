/* test_history.c - what reads of the history cost, and a burst of long-poll claims: the change
 * feed's statement reads the transitions after `after` up to a page, never the history before
 * it nor after it (EXPLAIN ANALYZE of its generic plan over 30,000 transitions counts the rows
 * each node read), and 500 long-poll claims that arrive at once on a server with 2 worker
 * threads (a queue of 128) are all parked, then all answered 200 when 500 items are registered
 * in one call, and all answered 200 again when they re-claim at once. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store_internal.h"
#include "verdict/buf.h"
#include "vt.h"
#include "vt_api.h"

#define SEEDED 30000
#define BURST 500

static vt_server srv;

/* The most rows any node reading table `rel` returned or removed by a filter, and whether a
 * node read it whole (a Seq Scan), over the plan tree p (EXPLAIN (ANALYZE, FORMAT JSON)). */
static void rows_read(const cJSON *p, const char *table, double *most, bool *seq)
{
    const cJSON *rel = cJSON_GetObjectItem(p, "Relation Name");
    if (cJSON_IsString(rel) && strcmp(rel->valuestring, table) == 0) {
        const cJSON *type = cJSON_GetObjectItem(p, "Node Type");
        double rows = vt_num(p, "Actual Rows"), removed = 0;
        const cJSON *rm = cJSON_GetObjectItem(p, "Rows Removed by Filter");
        if (cJSON_IsNumber(rm))
            removed = rm->valuedouble;
        if (rows + removed > *most)
            *most = rows + removed;
        if (cJSON_IsString(type) && strcmp(type->valuestring, "Seq Scan") == 0)
            *seq = true;
    }
    const cJSON *plans = cJSON_GetObjectItem(p, "Plans");
    for (const cJSON *c = plans ? plans->child : NULL; c; c = c->next)
        rows_read(c, table, most, seq);
}

/* EXPLAIN ANALYZE statement sql's plan in plan_cache_mode `mode` (parameter types,
 * arguments) and answer the most rows a node read of table; fails when a node reads it whole. */
static double plan_rows_read_in(const char *mode, vd_sql sql, const char *types, const char *args,
                                const char *table)
{
    char *plan = vt_sql("SET plan_cache_mode = %s;"
                        " PREPARE probe_plan (%s) AS %s;"
                        " EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE probe_plan (%s)",
                        mode, types, vd_sql_statements[sql].text, args);
    assert_non_null(plan);
    cJSON *j = cJSON_Parse(plan);
    assert_non_null(j);
    double most = 0;
    bool seq = false;
    rows_read(cJSON_GetObjectItem(j->child, "Plan"), table, &most, &seq);
    if (seq)
        fail_msg("the plan of %s reads %s whole: %s", vd_sql_statements[sql].name, table, plan);
    cJSON_Delete(j);
    free(plan);
    return most;
}

/* The same for the generic plan, the one the store runs these reads with (src/store/items.c). */
static double plan_rows_read(vd_sql sql, const char *types, const char *args, const char *table)
{
    return plan_rows_read_in("force_generic_plan", sql, types, args, table);
}

/* The feed's generic plan with after, flow step (SQL literal) and limit: the most rows a
 * node read of transitions or of jobs (claims and ends, sql/migrations/0039). */
static double feed_rows_read(long after, const char *flow, int limit)
{
    char args[128];
    snprintf(args, sizeof(args), "%ld, %s, %d", after, flow, limit);
    double t = plan_rows_read(VD_SQL_TRANSITIONS_FEED, "bigint, text, bigint", args, "transitions");
    double j = plan_rows_read(VD_SQL_TRANSITIONS_FEED, "bigint, text, bigint", args, "jobs");
    return t > j ? t : j;
}

/* The feed's cost is its page, not the history: from the start, the middle, the end, with
 * and without a flow-step filter (one flow step in two), and with a writer holding a
 * transaction open (the feed stops at its first row made after that transaction began,
 * without reading the rows after it). */
static void test_feed_reads_a_page(void **state)
{
    (void)state;
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('hist_a'), ('hist_b'), ('hist_none')"
           " ON CONFLICT DO NOTHING");
    vt_seed_items("hist_a", "a", 100, 3, 3);
    vt_seed_items("hist_b", "b", 100, 3, 3);
    vt_sql("INSERT INTO transitions (item_id, to_state, cause, actor, logged_at)"
           " SELECT (SELECT min(id) FROM items) + g %% 200, 'available', 'requeue', 'seed',"
           "  now() - (%d - g) * interval '1 ms' FROM generate_series(1, %d) g",
           SEEDED, SEEDED);
    /* then as many moves on job rows: a claim and an end each, their numbers interleaved */
    vt_sql("INSERT INTO jobs (item_id, flow_step_id, worker_id, attempt, status, claim_token,"
           "  lease_expires_at, finished_at, claim_from, claim_actor, finish_seq, finish_cause,"
           "  finish_to, finish_actor, finish_forced, finish_lint_overridden)"
           " SELECT i.id, i.flow_step_id, 'w', 1, 'completed', gen_random_uuid(), now(), now(),"
           "  'available', 'seed', nextval('transitions_id_seq'), 'complete', 'processed',"
           "  'seed', false, false"
           " FROM generate_series(1, %d) g"
           " JOIN items i ON i.id = (SELECT min(id) FROM items) + g %% 200",
           SEEDED / 2);
    vt_sql("ANALYZE transitions, jobs");
    long last = vt_sql_long("SELECT max(id) FROM audit");
    long mid = last - SEEDED / 2;
    double reads[] = {feed_rows_read(0, "NULL", 100),         feed_rows_read(mid, "NULL", 100),
                      feed_rows_read(last - 10, "NULL", 100), feed_rows_read(last, "NULL", 100),
                      feed_rows_read(0, "'hist_a'", 100),     feed_rows_read(mid, "'hist_b'", 50)};
    for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
        if (reads[i] > 300) /* a page of 100 of one flow step in two, and the last_id probe */
            fail_msg("feed case %zu read %.0f transitions", i, reads[i]);
    }
    /* a flow step with no rows at all: one window, from the start and from the middle */
    double rare[] = {feed_rows_read(0, "'hist_none'", 100),
                     feed_rows_read(mid, "'hist_none'", 100)};
    for (size_t i = 0; i < 2; i++) {
        if (rare[i] > 2010) /* the window, and the row past it that ends the scan */
            fail_msg("the feed of a flow step without rows read %.0f transitions", rare[i]);
    }
    /* an open writer: the rows made after it began are not read, however many */
    PGconn *c = PQconnectdb(vt_db_setup_url());
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PQclear(vt_pq_ok(c, "BEGIN"));
    PQclear(vt_pq_ok(c, "INSERT INTO transitions (item_id, to_state, cause, actor)"
                        " SELECT min(id), 'available', 'requeue', 'open' FROM items"));
    vt_sql("INSERT INTO transitions (item_id, to_state, cause, actor)"
           " SELECT (SELECT min(id) FROM items), 'available', 'requeue', 'later'"
           " FROM generate_series(1, 5000)");
    double r = feed_rows_read(last - 10, "NULL", 1000);
    if (r > 100)
        fail_msg("with an open writer the feed read %.0f transitions", r);
    PQclear(vt_pq_ok(c, "COMMIT"));
    PQfinish(c);
}

#define LIST_TYPES_ITEMS "text, text, bigint, bigint, text, text, text, text"
#define LIST_TYPES_JOBS "text, text, timestamptz, bigint, bigint, text, text, bigint, text"

/* A filtered list reads a window of at most 10,000 rows past its cursor, however rare its
 * matches (30,000 items and jobs, a worker and a reason code that match none; items by
 * worker: 2,000): both orders, items (and their sources, every filter) and jobs; an empty page past
 * a full window says where to go on (next_after), and paging on reaches the end (null). One item's
 * jobs come from jobs_item. */
static void test_lists_read_a_window(void **state)
{
    (void)state;
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('win') ON CONFLICT DO NOTHING");
    vt_seed_items("win", "w", 30000, 3, 3);
    vt_sql("INSERT INTO jobs (item_id, flow_step_id, worker_id, attempt, status, claim_token,"
           " lease_expires_at, finished_at, disposition)"
           " SELECT id, flow_step_id, 'seed', 1, 'completed', gen_random_uuid(), now(), now(),"
           " 'complete' FROM items WHERE flow_step_id = 'win'");
    vt_sql("ANALYZE items; ANALYZE jobs");
    const char *items[] = {"NULL, NULL, 0, 100, NULL, 'nobody', NULL, NULL",
                           "NULL, NULL, 0, 100, 'no', NULL, NULL, NULL"};
    for (int i = 0; i < 2; i++) { /* by worker or the item's row: a window of 2,000 */
        double a = plan_rows_read(VD_SQL_ITEMS_LIST, LIST_TYPES_ITEMS, items[i], "items");
        double d = plan_rows_read(VD_SQL_ITEMS_LIST_DESC, LIST_TYPES_ITEMS, items[i], "items");
        if (a > 2001 || d > 2001)
            fail_msg("items list %d read %.0f / %.0f rows", i, a, d);
    }
    /* item_sources too, by the same window (the planner carries no range across the join):
     * unfiltered, by flow step, by identifier and its prefix, from the middle; both orders */
    const char *sources[] = {"NULL, NULL, 0, 100, NULL, NULL, NULL, NULL",
                             "'win', NULL, 0, 100, NULL, NULL, NULL, NULL",
                             "NULL, 'available', 15000, 100, NULL, NULL, NULL, NULL",
                             "NULL, NULL, 0, 100, NULL, NULL, 'nothing', NULL",
                             "NULL, NULL, 0, 100, NULL, NULL, NULL, 'nothing/'"};
    for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
        double a = plan_rows_read(VD_SQL_ITEMS_LIST, LIST_TYPES_ITEMS, sources[i], "item_sources");
        double d =
            plan_rows_read(VD_SQL_ITEMS_LIST_DESC, LIST_TYPES_ITEMS, sources[i], "item_sources");
        if (a > 10001 || d > 10001)
            fail_msg("items list %zu read %.0f / %.0f item sources", i, a, d);
    }
    const char *jobs[] = {"NULL, NULL, NULL, 0, 100, NULL, 'nobody', NULL, NULL",
                          "NULL, 'failed', NULL, 0, 100, 'no', NULL, NULL, NULL"};
    for (int i = 0; i < 2; i++) {
        double a = plan_rows_read(VD_SQL_JOBS_LIST, LIST_TYPES_JOBS, jobs[i], "jobs");
        double d = plan_rows_read(VD_SQL_JOBS_LIST_DESC, LIST_TYPES_JOBS, jobs[i], "jobs");
        if (a > 10001 || d > 10001)
            fail_msg("jobs list %d read %.0f / %.0f rows", i, a, d);
    }
    char args[96];
    snprintf(args, sizeof(args), "NULL, NULL, NULL, 0, 100, NULL, NULL, %ld, NULL",
             vt_sql_long("SELECT max(item_id) FROM jobs"));
    if (plan_rows_read(VD_SQL_JOBS_OF_ITEM, LIST_TYPES_JOBS, args, "jobs") > 1)
        fail_msg("one item's jobs read more than its one job");
    /* paging a filter that matches nothing: empty windows, then the end */
    int64_t after = 0;
    int calls = 0;
    for (;; calls++) {
        char path[96];
        snprintf(path, sizeof(path), "/v1/items?reason_code=nobody&after=%lld", (long long)after);
        vt_resp r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
        assert_int_equal(r.status, 200);
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "items")), 0);
        const cJSON *next = cJSON_GetObjectItem(r.json, "next_after");
        bool end = cJSON_IsNull(next);
        if (!end) {
            assert_true((int64_t)next->valuedouble > after);
            after = (int64_t)next->valuedouble;
        }
        vt_resp_free(&r);
        if (end || calls > 40)
            break;
    }
    assert_true(calls >= 15 && calls <= 16); /* 30,200 items: windows of 2,000 (a filter) */
}

/* One long-poll claim of the burst, then (when it got an item) one more at once. */
typedef struct poller {
    pthread_t thread;
    long status[2];
    int claims[2];
} poller;

static int claim_once(long *status)
{
    const char *body = "{\"flow_step_id\": \"burst\", \"worker_id\": \"b\", \"wait_seconds\": 15}";
    vt_resp r = vt_http(&srv, "POST", "/v1/claims", VT_WORKER, body, NULL);
    const cJSON *claims = r.json ? cJSON_GetObjectItem(r.json, "claims") : NULL;
    int n = cJSON_IsArray(claims) ? cJSON_GetArraySize(claims) : -1;
    *status = r.status;
    vt_resp_free(&r);
    return n;
}

static void *poller_main(void *arg)
{
    poller *p = arg;
    p->claims[0] = claim_once(&p->status[0]);
    if (p->claims[0] == 1) /* unpaced: straight back in */
        p->claims[1] = claim_once(&p->status[1]);
    vt_http_thread_cleanup();
    return NULL;
}

/* verdict_claim_waiters from /metrics. */
static long parked(void)
{
    vt_resp r = vt_http(&srv, "GET", "/metrics", VT_ADMIN, NULL, NULL);
    const char *p = r.body ? strstr(r.body, "\nverdict_claim_waiters ") : NULL;
    long n = p ? strtol(p + strlen("\nverdict_claim_waiters "), NULL, 10) : -1;
    vt_resp_free(&r);
    return n;
}

static void register_burst(int n, int from)
{
    vd_buf b = {0};
    vd_buf_printf(&b, "{\"items\": [");
    for (int i = 0; i < n; i++)
        vd_buf_printf(&b,
                      "%s{\"flow_step_id\": \"burst\", \"source_type\": \"rss\","
                      " \"item_identifier\": \"https://burst.example/%d\"}",
                      i ? "," : "", from + i);
    vd_buf_printf(&b, "]}");
    vt_resp r = vt_http(&srv, "POST", "/v1/items", VT_ADMIN, b.data, NULL);
    if (r.status != 200 && r.status != 201)
        fail_msg("register: %ld %s", r.status, r.body);
    vt_resp_free(&r);
    vd_buf_cleanup(&b);
}

/* 500 long-poll claims at once on 2 worker threads (a queue of 128): every one is parked (the
 * ones the queue cannot take yet too); 500 items registered in one call, then 250 more 3 s
 * later, all go to claims, and every claim and every re-claim that follows at once is
 * answered 200 (the ones left without an item empty, at their deadline). Not one 503. */
static void test_burst_of_long_polls(void **state)
{
    static poller ps[BURST];
    (void)state;
    for (int i = 0; i < BURST; i++)
        assert_int_equal(pthread_create(&ps[i].thread, NULL, poller_main, &ps[i]), 0);
    long seen = 0;
    for (int i = 0; i < 600 && (seen = parked()) < BURST; i++)
        vt_sleep_ms(50);
    assert_int_equal(seen, BURST);
    register_burst(BURST, 0);
    vt_sleep_ms(3000);
    register_burst(BURST / 2, BURST);
    int got[2] = {0, 0};
    for (int i = 0; i < BURST; i++) {
        pthread_join(ps[i].thread, NULL);
        for (int k = 0; k < 2; k++) {
            if (k == 1 && ps[i].claims[0] != 1)
                continue;
            if (ps[i].status[k] != 200)
                fail_msg("poller %d, claim %d: answered %ld", i, k + 1, ps[i].status[k]);
            got[k] += ps[i].claims[k];
        }
    }
    /* every item went to one claim (a re-claim may overtake a parked one: no order is owed) */
    assert_int_equal(got[0] + got[1], BURST + BURST / 2);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'burst'"
                                 " AND state = 'claimed'"),
                     BURST + BURST / 2);
}

VT_SERVER_FIXTURE(srv, "VERDICT_THREADS=2", "VERDICT_MAX_CONNECTIONS_PER_IP=2000", NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_feed_reads_a_page),
        cmocka_unit_test(test_lists_read_a_window),
        cmocka_unit_test(test_burst_of_long_polls),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
