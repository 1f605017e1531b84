/* test_stats.c - SPEC §8 for dashboards: /v1/stats equals the truth after a scripted mix of
 * claims and dispositions; keyset pagination returns every row exactly once under
 * concurrent inserts; a real /metrics scrape passes `promtool check metrics`; retention
 * deletes only the history of done items; the counters, folded from the transitions
 * (sql/migrations/0019), stay exact under concurrent writers and never fold past a transition that
 * is still uncommitted. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vt.h"
#include "vt_api.h"

static vt_server srv;

/* One finish of each kind: the four dispositions, then a deferral to manual review (a test
 * that wants only the dispositions takes the first four). */
static const char *const finishes[] = {
    "\"disposition\": \"complete\"",
    "\"disposition\": \"reject_source\", \"reason_code\": \"spam\"",
    "\"disposition\": \"defer_item\", \"reason_code\": \"other\", \"retry_after_seconds\": 3600",
    "\"disposition\": \"fail\", \"error\": \"x\", \"retryable\": false",
    "\"disposition\": \"defer_item\", \"reason_code\": \"other\", \"manual_review\": true",
};

static const cJSON *flow_of(const cJSON *stats, const char *flow)
{
    const cJSON *list = cJSON_GetObjectItem(stats, "flow_steps");
    for (const cJSON *f = list ? list->child : NULL; f; f = f->next) {
        if (strcmp(vt_str(f, "flow_step_id"), flow) == 0)
            return f;
    }
    return NULL;
}

static void check_against_truth(const char *flow)
{
    static const char *states[] = {"available", "claimed",       "deferred", "processed",
                                   "rejected",  "manual_review", "failed"};
    static const char *statuses[] = {"processing", "completed", "rejected",
                                     "deferred",   "failed",    "expired"};
    char path[128];
    snprintf(path, sizeof(path), "/v1/stats?flow_step_id=%s", flow);
    vt_resp r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(vt_str(r.json, "generated_at"));
    const cJSON *f = flow_of(r.json, flow);
    assert_non_null(f);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "flow_steps")), 1);
    for (size_t i = 0; i < 7; i++) {
        char key[64];
        snprintf(key, sizeof(key), "items.%s", states[i]);
        long truth = vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = '%s' AND state"
                                 " = '%s'",
                                 flow, states[i]);
        if ((long)vt_num(f, key) != truth)
            fail_msg("%s %s: stats %g, truth %ld", flow, states[i], vt_num(f, key), truth);
        snprintf(key, sizeof(key), "items.%s", states[i]);
        assert_true((long)vt_num(r.json, "totals.items.available") >= 0);
    }
    for (size_t i = 0; i < 6; i++) {
        char key[64];
        long truth = vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = '%s' AND status"
                                 " = '%s' AND claimed_at > now() - interval '1 hour'",
                                 flow, statuses[i]);
        snprintf(key, sizeof(key), "jobs_last_hour.%s", statuses[i]);
        if ((long)vt_num(f, key) != truth)
            fail_msg("%s %s: stats %g, truth %ld", flow, key, vt_num(f, key), truth);
        snprintf(key, sizeof(key), "jobs_last_day.%s", statuses[i]);
        assert_true((long)vt_num(f, key) == truth);
    }
    long stuck = vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = '%s' AND state ="
                             " 'claimed' AND lease_expires_at < now()",
                             flow);
    assert_true((long)vt_num(f, "stuck_claims") == stuck);
    vt_resp_free(&r);
}

static void test_stats_equal_truth(void **state)
{
    (void)state;
    vt_claim c[12];
    char ident[16];
    for (int i = 0; i < 20; i++) {
        snprintf(ident, sizeof(ident), "s%d", i);
        vt_register(&srv, "st1", ident, "\"max_defers\": 2");
    }
    check_against_truth("st1");
    assert_int_equal(vt_claim_n(&srv, "st1", 12, 300, c), 12);
    for (int i = 0; i < 10; i++) {
        vt_resp r = vt_dispose(&srv, &c[i], finishes[i % 5]);
        assert_int_equal(r.status, 200);
        vt_resp_free(&r);
    }
    /* one claim's lease passes without a disposition: a stuck claim until the sweeper runs */
    check_against_truth("st1");
    vt_resp r = vt_http(&srv, "GET", "/v1/stats", VT_READER, NULL, NULL);
    const cJSON *f = flow_of(r.json, "st1");
    assert_true(vt_num(f, "oldest_claimable_age_seconds") >= 0);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(f, "paused")));
    long total = vt_sql_long("SELECT count(*) FROM items WHERE state = 'processed'");
    assert_true((long)vt_num(r.json, "totals.items.processed") == total);
    vt_resp_free(&r);
    vt_sleep_ms(1500); /* after the sweeper folded the deltas, the answer is the same */
    check_against_truth("st1");
    r = vt_http(&srv, "GET", "/v1/stats?flow_step_id=none-such", VT_READER, NULL, NULL);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "flow_steps")), 0);
    vt_resp_free(&r);
}

static _Atomic bool inserting;

static void *inserter(void *arg)
{
    (void)arg;
    char ident[32];
    for (int i = 0; atomic_load(&inserting); i++) {
        snprintf(ident, sizeof(ident), "late%d", i);
        vt_register(&srv, "pg", ident, NULL);
    }
    vt_http_thread_cleanup();
    return NULL;
}

static void test_stats_pagination_under_inserts(void **state)
{
    (void)state;
    char ident[16];
    pthread_t t;
    for (int i = 0; i < 60; i++) {
        snprintf(ident, sizeof(ident), "p%d", i);
        vt_register(&srv, "pg", ident, NULL);
    }
    long before = vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'pg'");
    long max_before = vt_sql_long("SELECT max(id) FROM items WHERE flow_step_id = 'pg'");
    atomic_store(&inserting, true);
    assert_int_equal(pthread_create(&t, NULL, inserter, NULL), 0);
    long after = 0, seen_old = 0, last = 0;
    for (int page = 0; page < 1000; page++) {
        char path[128];
        snprintf(path, sizeof(path), "/v1/items?flow_step_id=pg&limit=7&after=%ld", after);
        vt_resp r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
        assert_int_equal(r.status, 200);
        const cJSON *items = cJSON_GetObjectItem(r.json, "items");
        for (const cJSON *it = items->child; it; it = it->next) {
            long id = (long)vt_num(it, "id");
            assert_true(id > last); /* strictly increasing: no row twice */
            last = id;
            seen_old += id <= max_before;
        }
        const cJSON *next = cJSON_GetObjectItem(r.json, "next_after");
        bool more = cJSON_IsNumber(next) && last < max_before + 20;
        if (more)
            after = (long)next->valuedouble;
        vt_resp_free(&r);
        if (!more)
            break;
    }
    atomic_store(&inserting, false);
    pthread_join(t, NULL);
    assert_int_equal(seen_old, before); /* every row that existed was returned once */
}

static void test_stats_promtool(void **state)
{
    (void)state;
    if (system("command -v promtool >/dev/null 2>&1") != 0) {
        fprintf(stderr, "promtool not installed: skipped\n");
        skip();
        return;
    }
    vt_register(&srv, "prom\\\"quote", "a", NULL);
    vt_resp r = vt_http(&srv, "GET", "/metrics", VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "verdict_items{flow_step_id=\"st1\",state=\"processed\"}"));
    assert_non_null(strstr(r.body, "verdict_items{flow_step_id=\"prom\\\"quote\""));
    assert_non_null(
        strstr(r.body, "verdict_transitions_total{cause=\"claim\",to_state=\"claimed\"}"));
    assert_non_null(
        strstr(r.body, "verdict_http_request_duration_seconds_bucket{route=\"claims\""));
    assert_non_null(strstr(r.content_type, "text/plain"));
    assert_non_null(strstr(r.body, "verdict_stuck_claims{flow_step_id=\"prom\\\"quote\"} 0\n"));
    assert_non_null(strstr(r.body, "verdict_oldest_claimable_age_seconds{flow_step_id=\"prom"));
    assert_non_null(strstr(r.body, "verdict_db_pool_size "));
    /* the sweeper (every second here) has run at least once since the server started */
    const char *runs = strstr(r.body, "verdict_sweeper_runs_total{result=\"ok\"} ");
    assert_non_null(runs);
    assert_true(strtol(runs + strlen("verdict_sweeper_runs_total{result=\"ok\"} "), NULL, 10) >= 1);
    assert_non_null(strstr(r.body, "verdict_sweeper_last_run_timestamp_seconds 1"));
    char path[] = "/tmp/verdict-scrape-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, r.body, strlen(r.body)), (ssize_t)strlen(r.body));
    close(fd);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
    int rc = system(cmd);
    unlink(path);
    vt_resp_free(&r);
    assert_int_equal(rc, 0);
}

/* Minute buckets older than two hours fold into hour buckets; the counts read the same. */
static void test_stats_hour_rollup(void **state)
{
    (void)state;
    free(vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('roll')"));
    free(vt_sql(
        "INSERT INTO job_counts (flow_step_id, status, minute, n) VALUES"
        " ('roll', 'completed', date_trunc('hour', now()) - interval '5 hours 7 minutes', 3),"
        " ('roll', 'completed', date_trunc('hour', now()) - interval '5 hours 42 minutes', 4),"
        " ('roll', 'failed', date_trunc('hour', now()) - interval '30 hours', 6),"
        " ('roll', 'completed', date_trunc('minute', now()) - interval '5 minutes', 2)"));
    free(vt_sql("SELECT verdict_compact_counts(), verdict_rollup_job_counts()"));
    /* 5 h 7 min and 5 h 42 min before this hour (hh:53 and hh:18) fold into one hh:00 */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM job_counts WHERE flow_step_id = 'roll'"
                                 " AND minute <> date_trunc('hour', minute)"
                                 " AND minute < now() - interval '2 hours'"),
                     0);
    assert_int_equal(vt_sql_long("SELECT n FROM job_counts WHERE flow_step_id = 'roll'"
                                 " AND status = 'completed'"
                                 " AND minute = date_trunc('hour', now()) - interval '6 hours'"),
                     7);
    assert_int_equal(vt_sql_long("SELECT sum(n) FROM job_counts WHERE flow_step_id = 'roll'"
                                 " AND status = 'completed'"),
                     9);
    vt_resp r = vt_http(&srv, "GET", "/v1/stats?flow_step_id=roll", VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal((long)vt_num(r.json, "flow_steps.0.jobs_last_hour.completed"), 2);
    assert_int_equal((long)vt_num(r.json, "flow_steps.0.jobs_last_day.completed"), 9);
    assert_int_equal((long)vt_num(r.json, "flow_steps.0.jobs_last_day.failed"), 0);
    vt_resp_free(&r);
}

static long folded(void)
{
    return vt_sql_long("SELECT transition_id FROM counts_folded");
}

/* Wait (at most 15 s) until the sweeper's fold took every transition up to id. */
static void wait_folded(long id)
{
    for (int i = 0; i < 150 && folded() < id; i++)
        vt_sleep_ms(100);
    assert_true(folded() >= id);
}

/* A transaction takes a transition id and stays open while later ids commit and the sweeper
 * folds (every second): the fold must stop below the open one, or that transition would never
 * be counted once it commits. */
static void test_stats_fold_waits_for_open_writer(void **state)
{
    (void)state;
    int64_t item = vt_register(&srv, "fold_open", "held", NULL);
    vt_register(&srv, "fold_open", "other", NULL);
    PGconn *c = PQconnectdb(vt_db_setup_url());
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PQclear(vt_pq_ok(c, "BEGIN"));
    char sql[512];
    snprintf(sql, sizeof(sql),
             "WITH u AS (UPDATE items SET state = 'processed', updated_at = now()"
             "           WHERE id = %lld RETURNING id)"
             " INSERT INTO transitions (item_id, from_state, to_state, cause, actor)"
             " SELECT id, 'available', 'processed', 'resolve', 'test' FROM u RETURNING id",
             (long long)item);
    PGresult *res = vt_pq_ok(c, sql);
    long held = strtol(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    vt_claim k = vt_claim1(&srv, "fold_open"); /* commits transitions above the held one */
    vt_resp r = vt_dispose(&srv, &k, "\"disposition\": \"complete\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    long later = vt_sql_long("SELECT max(id) FROM audit");
    assert_true(later > held);
    vt_sleep_ms(4000); /* four sweeper passes past the 2 s margin */
    assert_true(folded() < held);
    check_against_truth("fold_open"); /* the open change is not visible yet */
    PQclear(vt_pq_ok(c, "COMMIT"));
    PQfinish(c);
    wait_folded(later);
    check_against_truth("fold_open");
    assert_int_equal(vt_sql_long("SELECT n FROM item_counts WHERE flow_step_id = 'fold_open'"
                                 " AND state = 'processed'"),
                     2);
}

static _Atomic int cycles_done, empty_claims, refused;

/* register, claim and finish items with every kind of disposition, until time is up */
static void *cycler(void *arg)
{
    static const char *d[] = {
        "\"disposition\": \"complete\"",
        "\"disposition\": \"reject_source\", \"reason_code\": \"spam\"",
        "\"disposition\": \"defer_item\", \"reason_code\": \"other\", \"retry_after_seconds\": 1",
        "\"disposition\": \"fail\", \"error\": \"x\", \"retryable\": true",
    };
    long n = (long)(intptr_t)arg;
    char ident[48];
    time_t until = time(NULL) + 3;
    for (int i = 0; time(NULL) < until; i++) {
        snprintf(ident, sizeof(ident), "c%ld-%d", n, i);
        vt_register(&srv, "fold_busy", ident, NULL);
        vt_claim k;
        if (vt_claim_n(&srv, "fold_busy", 1, 300, &k) != 1) {
            atomic_fetch_add(&empty_claims, 1);
            continue;
        }
        vt_resp r = vt_dispose(&srv, &k, d[(n + i) % 4]);
        if (r.status != 200)
            atomic_fetch_add(&refused, 1);
        vt_resp_free(&r);
        atomic_fetch_add(&cycles_done, 1);
    }
    vt_http_thread_cleanup();
    return NULL;
}

/* 12 concurrent clients change states while the sweeper folds every second: the counters
 * equal the truth while rows are unfolded, and again once everything is folded. */
static void test_stats_exact_under_concurrent_writers(void **state)
{
    (void)state;
    pthread_t t[12];
    for (long i = 0; i < 12; i++)
        assert_int_equal(pthread_create(&t[i], NULL, cycler, (void *)(intptr_t)i), 0);
    for (int i = 0; i < 12; i++)
        pthread_join(t[i], NULL);
    assert_true(atomic_load(&cycles_done) > 12);
    assert_int_equal(atomic_load(&refused), 0);
    check_against_truth("fold_busy");
    wait_folded(vt_sql_long("SELECT max(id) FROM audit"));
    check_against_truth("fold_busy");
    assert_int_equal(vt_sql_long("SELECT sum(n) FROM transition_counts"),
                     vt_sql_long("SELECT count(*) FROM audit"));
}

/* Folds the transitions made since the last fold while no one else can: the test holds the
 * fold's advisory lock (sql/migrations/0019) on conn, so the sweeper skips its folds, and only the
 * calls made on conn fold (a session may take its own lock again). */
static void fold_on(PGconn *conn, long upto)
{
    for (int i = 0; i < 50 && folded() < upto; i++) {
        PQclear(vt_pq_ok(conn, "SELECT verdict_compact_counts()"));
        if (folded() < upto)
            vt_sleep_ms(100);
    }
    assert_true(folded() >= upto);
}

/* One fold (sql/migrations/0024) takes, in three flow steps at once: registrations and an admin's
 * requeue (transitions without a job status), claims, one finish of each kind, a claim still open.
 * The counters equal the truth before the fold (read through the views) and after it (the
 * counters alone): the item's deltas of the job-less transitions are counted and every row of
 * the audit counts once. (A job deleted by hand takes its claim and its end with it since
 * sql/migrations/0039: the fold has no transition naming a gone job to skip.) */
static void test_stats_fold_one_pass(void **state)
{
    (void)state;
    static const char *flows[] = {"fold_one_a", "fold_one_b", "fold_one_c"};
    PGconn *lock = PQconnectdb(vt_db_setup_url());
    assert_int_equal(PQstatus(lock), CONNECTION_OK);
    PQclear(vt_pq_ok(lock, "SELECT pg_advisory_lock(7306153949216651922)"));
    long before = folded();
    vt_claim c[3][5];
    char ident[16], path[64];
    for (int f = 0; f < 3; f++) {
        for (int i = 0; i < 6; i++) {
            snprintf(ident, sizeof(ident), "i%d", i);
            vt_register(&srv, flows[f], ident, NULL);
        }
        assert_int_equal(vt_claim_n(&srv, flows[f], 5, 300, c[f]), 5);
        for (int i = 0; i < 4; i++) { /* c[f][4] stays claimed */
            vt_resp r = vt_dispose(&srv, &c[f][i], finishes[(f + i) % 4]);
            assert_int_equal(r.status, 200);
            vt_resp_free(&r);
        }
    }
    /* flow a: the deferred item back to available by an admin (no job status) */
    snprintf(path, sizeof(path), "/v1/items/%lld/requeue", (long long)c[0][2].item_id);
    vt_resp q = vt_http(&srv, "POST", path, VT_ADMIN, "{}", NULL);
    assert_int_equal(q.status, 200);
    vt_resp_free(&q);
    assert_string_equal(vt_item_state(&srv, c[1][3].item_id), "processed");
    long last = vt_sql_long("SELECT max(id) FROM audit");
    assert_int_equal(folded(), before); /* the sweeper did not fold meanwhile */
    for (int f = 0; f < 3; f++)
        check_against_truth(flows[f]);
    vt_sleep_ms(2100); /* every row made before the fold's 2 s margin */
    fold_on(lock, last);
    for (int f = 0; f < 3; f++)
        check_against_truth(flows[f]);
    /* the completed item went available -> claimed -> processed in the counters */
    assert_int_equal(vt_sql_long("SELECT n FROM item_counts WHERE flow_step_id = 'fold_one_b'"
                                 " AND state = 'processed'"),
                     1);
    assert_int_equal(vt_sql_long("SELECT (SELECT sum(n) FROM transition_counts)"
                                 " + (SELECT count(*) FROM transition_count_deltas)"
                                 " - (SELECT count(*) FROM audit)"),
                     0);
    PQclear(vt_pq_ok(lock, "SELECT pg_advisory_unlock(7306153949216651922)"));
    PQfinish(lock);
}

static void test_stats_retention(void **state)
{
    (void)state;
    /* a done item with old history, and a live (deferred) one with equally old history */
    int64_t done_id = vt_register(&srv, "ret", "done", NULL);
    vt_claim c = vt_claim1(&srv, "ret");
    vt_resp r = vt_dispose(&srv, &c, "\"disposition\": \"complete\"");
    vt_resp_free(&r);
    int64_t live_id = vt_register(&srv, "ret", "live", NULL);
    vt_claim l = vt_claim1(&srv, "ret");
    r = vt_dispose(&srv, &l,
                   "\"disposition\": \"defer_item\", \"reason_code\": \"other\","
                   " \"retry_after_seconds\": 3600");
    vt_resp_free(&r);
    vt_sql("UPDATE transitions SET at = now() - interval '40 days', logged_at = now() - interval "
           "'40 days' WHERE item_id IN (%lld, %lld)",
           (long long)done_id, (long long)live_id);
    vt_sql("UPDATE jobs SET finished_at = now() - interval '40 days', claimed_at = now() -"
           " interval '40 days' WHERE item_id IN (%lld, %lld)",
           (long long)done_id, (long long)live_id);
    vt_sql("UPDATE items SET updated_at = now() - interval '40 days' WHERE id IN (%lld, %lld)",
           (long long)done_id, (long long)live_id);
    long left = -1;
    for (int i = 0; i < 60 && left != 0; i++) {
        vt_sleep_ms(100);
        left = vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld", (long long)done_id);
    }
    assert_int_equal(left, 0);
    assert_int_equal(
        vt_sql_long("SELECT count(*) FROM jobs WHERE item_id = %lld", (long long)done_id), 0);
    assert_string_equal(vt_item_state(&srv, done_id), "processed"); /* the item itself stays */
    /* and forgets its deleted job (no foreign key does it since sql/migrations/0022) */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE id = %lld"
                                 " AND current_job_id IS NULL",
                                 (long long)done_id),
                     1);
    assert_int_equal(
        vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld", (long long)live_id), 3);
    assert_int_equal(
        vt_sql_long("SELECT count(*) FROM jobs WHERE item_id = %lld", (long long)live_id), 1);
}

VT_SERVER_FIXTURE(srv, "VERDICT_SWEEP_INTERVAL_SECONDS=1", "VERDICT_RETENTION_DAYS=30",
                  "VERDICT_RETENTION_INTERVAL_SECONDS=1", NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats_equal_truth),
        cmocka_unit_test(test_stats_pagination_under_inserts),
        cmocka_unit_test(test_stats_promtool),
        cmocka_unit_test(test_stats_hour_rollup),
        cmocka_unit_test(test_stats_fold_waits_for_open_writer),
        cmocka_unit_test(test_stats_exact_under_concurrent_writers),
        cmocka_unit_test(test_stats_fold_one_pass),
        cmocka_unit_test(test_stats_retention),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
