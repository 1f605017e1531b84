/* test_reconnect.c - the reconnect and answer rules, with verdictd talking to
 * PostgreSQL through a loopback proxy that can drop a connection right after the server
 * committed (vt_pg.h): a write that may have committed is not sent again (claim without
 * Idempotency-Key, bulk requeue) but answered 503; conflict state is per transaction (a tool
 * failure is never counted twice); an autocommit statement's deadlock is retried; a connection
 * closed while idle is replaced before anything is sent; a heartbeat queued behind its own
 * job's disposition answers job_finalized; an Idempotency-Key record past 24 h is absent;
 * Idempotency-Key bodies compare as JSON. The verification reads the database. */
#include <libpq-fe.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "vt.h"
#include "vt_api.h"
#include "vt_pg.h"

static vt_server srv;

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static vt_resp post(const char *path, const char *token, const char *body, const char *key)
{
    char h[200];
    const char *hdr[] = {h, NULL};
    snprintf(h, sizeof(h), "Idempotency-Key: %s", key ? key : "");
    return vt_http(&srv, "POST", path, token, body, key ? hdr : NULL);
}

static void test_reconnect_claim_not_sent_twice(void **state)
{
    (void)state;
    for (int i = 0; i < 6; i++) {
        char ident[16];
        snprintf(ident, sizeof(ident), "c%d", i);
        vt_register(&srv, "rc_claim", ident, NULL);
    }
    vt_proxy_arm("dropper-worker", 1, true);
    int drops = vt_proxy_drops();
    vt_resp r = post("/v1/claims", VT_WORKER,
                     "{\"flow_step_id\": \"rc_claim\", \"worker_id\": \"dropper-worker\","
                     " \"limit\": 2}",
                     NULL);
    assert_int_equal(vt_proxy_drops(), drops + 1);
    /* the claim committed, its answer was lost: 503, and it did not run a second time */
    vt_assert_error(&r, 503, "database_unavailable");
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE worker_id = 'dropper-worker'"),
                     2);
}

static void test_reconnect_requeue_not_sent_twice(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++) {
        char ident[16];
        snprintf(ident, sizeof(ident), "q%d", i);
        vt_register(&srv, "rc_rq", ident, NULL);
    }
    free(vt_sql("UPDATE items SET state = 'failed' WHERE flow_step_id = 'rc_rq'"));
    vt_proxy_arm("drop-requeue", 1, false);
    vt_resp r = post("/v1/items/requeue", VT_ADMIN,
                     "{\"flow_step_id\": \"rc_rq\", \"state\": \"failed\","
                     " \"reason\": \"drop-requeue\"}",
                     NULL);
    /* before: sent again on a new connection and answered "requeued": 0 */
    vt_assert_error(&r, 503, "database_unavailable");
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'rc_rq'"
                                 " AND state = 'available'"),
                     3);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE reason = 'drop-requeue'"), 3);
}

static void test_reconnect_tool_failure_counted_once(void **state)
{
    (void)state;
    vt_register(&srv, "rc_tf", "a", NULL);
    vt_claim c = vt_claim1(&srv, "rc_tf");
    /* the first insert of this tool fails with a serialization failure (retried), and the
     * retry's COMMIT is answered to nobody */
    free(vt_sql("CREATE SEQUENCE rc_once"));
    free(vt_sql("CREATE FUNCTION rc_conflict() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                " IF NEW.tool = 'flaky-tool' AND nextval('rc_once') = 1 THEN"
                "  RAISE EXCEPTION 'injected' USING ERRCODE = '40001'; END IF;"
                " RETURN NEW; END $$"));
    free(vt_sql("CREATE TRIGGER rc_conflict BEFORE INSERT ON tool_failures"
                " FOR EACH ROW EXECUTE FUNCTION rc_conflict()"));
    vt_proxy_arm("flaky-tool", 4, true);
    char path[80], body[300];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/tool-failures", (long long)c.job_id);
    snprintf(body, sizeof(body),
             "{\"claim_token\": \"%s\", \"tool\": \"flaky-tool\", \"args\": {\"q\": 1},"
             " \"error\": \"timeout\"}",
             c.token);
    vt_resp r = post(path, VT_WORKER, body, NULL);
    vt_assert_error(&r, 503, "database_unavailable");
    vt_resp_free(&r);
    /* before: the stale conflict flag re-ran the committed transaction: 2 rows */
    assert_int_equal(
        vt_sql_long("SELECT count(*) FROM tool_failures WHERE job_id = %lld", (long long)c.job_id),
        1);
    free(vt_sql("DROP TRIGGER rc_conflict ON tool_failures"));
}

static void test_reconnect_autocommit_deadlock_retried(void **state)
{
    (void)state;
    int64_t id = vt_register(&srv, "rc_dl", "a", NULL);
    free(vt_sql("CREATE SEQUENCE rc_dl_once"));
    free(vt_sql("CREATE FUNCTION rc_deadlock() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                " IF NEW.last_reason = 'deadlock-once' AND nextval('rc_dl_once') = 1 THEN"
                "  RAISE EXCEPTION 'injected' USING ERRCODE = '40P01'; END IF;"
                " RETURN NEW; END $$"));
    free(vt_sql("CREATE TRIGGER rc_deadlock BEFORE UPDATE ON items"
                " FOR EACH ROW EXECUTE FUNCTION rc_deadlock()"));
    char path[80];
    snprintf(path, sizeof(path), "/v1/items/%lld/requeue", (long long)id);
    vt_resp r = post(path, VT_ADMIN, "{\"reason\": \"deadlock-once\"}", NULL);
    /* before: only explicit transactions were retried; this answered 503 */
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT nextval('rc_dl_once')"), 3);
    free(vt_sql("DROP TRIGGER rc_deadlock ON items"));
}

static void test_reconnect_idle_connection_replaced(void **state)
{
    (void)state;
    for (int i = 0; i < 4; i++) {
        char ident[16];
        snprintf(ident, sizeof(ident), "i%d", i);
        vt_register(&srv, "rc_idle", ident, NULL);
    }
    int closed = vt_proxy_closed();
    long killed = vt_sql_long("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                              " WHERE application_name = 'verdictd'"
                              " AND datname = current_database()");
    assert_true(killed > 0);
    for (int i = 0; i < 500 && vt_sql_long("SELECT count(*) FROM pg_stat_activity"
                                           " WHERE application_name = 'verdictd'"
                                           " AND datname = current_database()") > 0;
         i++)
        pause_ms(10);
    /* and the proxy has passed each close on to verdictd (on a loaded machine its threads may
     * lag behind PostgreSQL): what verdictd then finds closed is what this test is about */
    for (int i = 0; i < 500 && vt_proxy_closed() < closed + (int)killed; i++)
        pause_ms(10);
    /* claims without a key are never sent twice: it works only because the closed connection
     * is noticed before sending */
    for (int i = 0; i < 4; i++) {
        vt_resp r =
            post("/v1/claims", VT_WORKER,
                 "{\"flow_step_id\": \"rc_idle\", \"worker_id\": \"w\", \"limit\": 1}", NULL);
        if (r.status != 200)
            fail_msg("claim %d after the sessions were killed: %ld %s", i, r.status, r.body);
        vt_resp_free(&r);
    }
}

typedef struct call {
    const char *path;
    char body[300];
    vt_resp r;
} call;

static void *run_call(void *arg)
{
    call *k = arg;
    k->r = post(k->path, VT_WORKER, k->body, NULL);
    vt_http_thread_cleanup();
    return NULL;
}

static void wait_waiters(PGconn *pg, int n)
{
    for (int i = 0; i < 1500; i++) { /* 15 s: a loaded machine */
        /* not on pg: inside its transaction pg_stat_activity is one snapshot, taken at the first
         * look (a backend that connects later, e.g. the executor's, would never show) */
        long have = vt_sql_long("SELECT count(*) FROM pg_stat_activity WHERE"
                                " application_name = 'verdictd' AND wait_event_type = 'Lock'");
        if (have >= n)
            return;
        pause_ms(10);
    }
    PGresult *res = PQexec(pg, "SELECT string_agg(application_name || '/' || coalesce(state, '-')"
                               " || '/' || coalesce(wait_event_type, '-') || ':'"
                               " || coalesce(wait_event, '-') || ':' || left(query, 60), ' | ')"
                               " FROM pg_stat_activity WHERE backend_type = 'client backend'");
    fprintf(stderr, "sessions: %s\n", PQgetvalue(res, 0, 0));
    PQclear(res);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "grep -v 'applied function' %s | tail -8 | cut -c1-330 >&2",
             srv.log_path);
    if (system(cmd) != 0)
        fprintf(stderr, "no log\n");
    {
        vt_resp m = vt_http(&srv, "GET", "/metrics", VT_READER, NULL, NULL);
        const char *pl = m.body ? strstr(m.body, "\nverdict_db_pool_in_use ") : NULL;
        fprintf(stderr, "metrics %ld: %.60s\n", m.status, pl ? pl : "(none)");
        vt_resp_free(&m);
    }
    /* let go of the held row first: the tests after this one must not queue behind it */
    PQclear(PQexec(pg, "ROLLBACK"));
    fail_msg("no %d lock waiters", n);
}

static void *run_stats(void *arg)
{
    vt_resp r = vt_http(&srv, "GET", "/v1/stats", VT_READER, NULL, NULL);
    *(long *)arg = r.status;
    vt_resp_free(&r);
    vt_http_thread_cleanup();
    return NULL;
}

/* Open the pool's connections first, with reads side by side: what this test is about is the
 * order of two calls on one job, not a new connection (through the test's proxy) made while
 * an item is locked. */
static void warm_pool(void)
{
    pthread_t t[4];
    long status[4] = {0};
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, run_stats, &status[i]);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(status[i], 200);
    }
}

static void test_reconnect_heartbeat_behind_disposition(void **state)
{
    (void)state;
    warm_pool();
    vt_register(&srv, "rc_hb", "a", NULL);
    vt_claim c = vt_claim1(&srv, "rc_hb");
    char dpath[80], hpath[80];
    snprintf(dpath, sizeof(dpath), "/v1/jobs/%lld/disposition", (long long)c.job_id);
    snprintf(hpath, sizeof(hpath), "/v1/jobs/%lld/heartbeat", (long long)c.job_id);
    call d = {dpath, "", {0}}, h = {hpath, "", {0}};
    snprintf(d.body, sizeof(d.body), "{\"claim_token\": \"%s\", \"disposition\": \"complete\"}",
             c.token);
    snprintf(h.body, sizeof(h.body), "{\"claim_token\": \"%s\"}", c.token);
    /* hold the item: the disposition locks its job and queues on the item, the heartbeat
     * queues behind it */
    PGconn *pg = PQconnectdb(vt_db_setup_url());
    assert_int_equal(PQstatus(pg), CONNECTION_OK);
    char sql[120];
    snprintf(sql, sizeof(sql), "SELECT 1 FROM items WHERE id = %lld FOR UPDATE",
             (long long)c.item_id);
    PQclear(PQexec(pg, "BEGIN"));
    PQclear(PQexec(pg, sql));
    pthread_t td, th;
    pthread_create(&td, NULL, run_call, &d);
    wait_waiters(pg, 1);
    pthread_create(&th, NULL, run_call, &h);
    wait_waiters(pg, 2);
    PQclear(PQexec(pg, "COMMIT"));
    pthread_join(td, NULL);
    pthread_join(th, NULL);
    PQfinish(pg);
    assert_int_equal(d.r.status, 200);
    /* before: claim_lost (its snapshot of the job predated the disposition) */
    vt_assert_error(&h.r, 409, "job_finalized");
    vt_resp_free(&d.r);
    vt_resp_free(&h.r);
}

static void test_reconnect_idempotency_expired_is_absent(void **state)
{
    (void)state;
    vt_resp r = post("/v1/items", VT_ADMIN,
                     "{\"items\": [{\"flow_step_id\": \"rc_idem\", \"source_type\": \"t\","
                     " \"item_identifier\": \"a\"}]}",
                     "old-key-1");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    free(vt_sql("UPDATE idempotency_keys SET created_at = now() - interval '25 hours'"
                " WHERE idem_key = 'old-key-1'"));
    /* another body with the same key, past 24 h: a new request (before: 503) */
    r = post("/v1/items", VT_ADMIN,
             "{\"items\": [{\"flow_step_id\": \"rc_idem\", \"source_type\": \"t\","
             " \"item_identifier\": \"b\"}]}",
             "old-key-1");
    assert_int_equal(r.status, 200);
    assert_false(r.replayed);
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'rc_idem'"), 2);
    /* and it is the key's record now */
    r = post("/v1/items", VT_ADMIN,
             "{\"items\": [{\"flow_step_id\": \"rc_idem\", \"source_type\": \"t\","
             " \"item_identifier\": \"b\"}]}",
             "old-key-1");
    assert_int_equal(r.status, 200);
    assert_true(r.replayed);
    vt_resp_free(&r);
}

static void test_reconnect_idempotency_json_compare(void **state)
{
    (void)state;
    vt_resp r = post("/v1/items", VT_ADMIN,
                     "{\"items\":[{\"flow_step_id\":\"rc_js\",\"source_type\":\"t\","
                     "\"item_identifier\":\"a\"}]}",
                     "json-key-1");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    /* the same JSON re-indented, members reordered: a replay (before: 422) */
    r = post("/v1/items", VT_ADMIN,
             "{\n  \"items\": [\n    {\n      \"item_identifier\": \"a\",\n"
             "      \"source_type\": \"t\",\n      \"flow_step_id\": \"rc_js\"\n    }\n  ]\n}\n",
             "json-key-1");
    assert_int_equal(r.status, 200);
    assert_true(r.replayed);
    vt_resp_free(&r);
    /* another value is still another request */
    r = post("/v1/items", VT_ADMIN,
             "{\"items\":[{\"flow_step_id\":\"rc_js\",\"source_type\":\"t\","
             "\"item_identifier\":\"b\"}]}",
             "json-key-1");
    assert_int_equal(r.status, 422);
    vt_resp_free(&r);
}

/* verdictd reaches PostgreSQL through the dropping proxy. A deadline longer than the tests' own
 * waits: the heartbeat test holds an item's lock while two calls queue behind it, and on a
 * loaded machine the second one's new pool connection (connect and prepare) alone took the
 * default 5 s. */
VT_FIXTURE(.srv = {&srv}, .route = VT_ROUTE_PROXY,
           .env = VT_ENV("VERDICT_THREADS=4", "VERDICT_DB_TIMEOUT_MS=30000"))

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reconnect_heartbeat_behind_disposition),
        cmocka_unit_test(test_reconnect_claim_not_sent_twice),
        cmocka_unit_test(test_reconnect_requeue_not_sent_twice),
        cmocka_unit_test(test_reconnect_tool_failure_counted_once),
        cmocka_unit_test(test_reconnect_autocommit_deadlock_retried),
        cmocka_unit_test(test_reconnect_idle_connection_replaced),
        cmocka_unit_test(test_reconnect_idempotency_expired_is_absent),
        cmocka_unit_test(test_reconnect_idempotency_json_compare),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
