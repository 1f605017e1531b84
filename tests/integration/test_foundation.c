/* test_foundation.c - the real verdictd over HTTP against a real PostgreSQL: health and
 * readiness, the error envelope for 404/405/401, request ids, migrations run twice, an
 * upgrade of a database holding data, and recovery from a database restart without
 * restarting verdictd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "verdict/embedded.h"
#include "verdict/store.h"
#include <libpq-fe.h>

#include "vt.h"
#include "vt_api.h"

static vt_server srv;

static void test_foundation_health_and_ready(void **state)
{
    (void)state;
    vt_resp r = vt_http(&srv, "GET", "/healthz", NULL, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "status"), "ok");
    assert_true(strlen(r.request_id) > 0);
    assert_non_null(strstr(r.content_type, "application/json"));
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/readyz", NULL, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "status"), "ready");
    vt_resp_free(&r);
}

static void test_foundation_request_id_echoed(void **state)
{
    (void)state;
    const char *h[] = {"X-Request-Id: my-trace.42", NULL};
    vt_resp r = vt_http(&srv, "GET", "/healthz", NULL, NULL, h);
    assert_string_equal(r.request_id, "my-trace.42");
    vt_resp_free(&r);
    const char *bad[] = {"X-Request-Id: has spaces and \"quotes\"", NULL};
    r = vt_http(&srv, "GET", "/healthz", NULL, NULL, bad);
    assert_int_equal(strlen(r.request_id), 32); /* replaced by a fresh one */
    vt_resp_free(&r);
}

static void test_foundation_not_found_and_method(void **state)
{
    (void)state;
    vt_resp r = vt_http(&srv, "GET", "/v1/nothing-here", VT_ADMIN, NULL, NULL);
    vt_assert_error(&r, 404, "not_found");
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/healthz/", NULL, NULL, NULL);
    vt_assert_error(&r, 404, "not_found");
    vt_resp_free(&r);
    r = vt_http(&srv, "DELETE", "/healthz", NULL, NULL, NULL);
    vt_assert_error(&r, 405, "method_not_allowed");
    vt_resp_free(&r);
}

static void test_foundation_auth(void **state)
{
    (void)state;
    vt_resp r = vt_http(&srv, "GET", "/metrics", NULL, NULL, NULL);
    vt_assert_error(&r, 401, "unauthorized");
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/metrics", "reader-token-0123456780", NULL, NULL);
    vt_assert_error(&r, 401, "unauthorized");
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/metrics", VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "verdict_up 1"));
    assert_non_null(strstr(r.body, "verdict_http_requests_total{route=\"healthz\",code=\"200\"}"));
    vt_resp_free(&r);
}

static void test_foundation_openapi_served(void **state)
{
    (void)state;
    vt_resp r = vt_http(&srv, "GET", "/openapi.json", NULL, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(r.json);
    assert_string_equal(vt_str(r.json, "openapi"), "3.1.0");
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/openapi.yaml", NULL, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "openapi: 3.1.0"));
    vt_resp_free(&r);
}

static int run_migrate(void)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "VERDICT_DATABASE_URL='%s' %s migrate 2>/dev/null",
             vt_db_setup_url(), VERDICTD_PATH);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_foundation_migrate_twice(void **state)
{
    (void)state;
    assert_int_equal(run_migrate(), 0);
    assert_int_equal(run_migrate(), 0);
    /* every embedded migration once (numbers may skip one that another change reserves) */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM schema_migrations"),
                     (long)vd_migration_count);
    assert_int_equal(vt_sql_long("SELECT max(version) FROM schema_migrations"),
                     vd_store_latest_version());
}

/* A migration missing below the newest recorded one (branches merged out of number order) is
 * still applied: 0013 is undone and forgotten, and migrate brings it back. */
static void test_foundation_migrate_fills_a_gap(void **state)
{
    (void)state;
    assert_int_equal(run_migrate(), 0);
    free(vt_sql("DROP FUNCTION verdict_flow_step_json(flow_steps);"
                " ALTER TABLE flow_steps DROP COLUMN incident_min_items,"
                "  DROP COLUMN incident_window_minutes, DROP COLUMN pause_on_incident,"
                "  DROP COLUMN strict_evidence;"
                " DELETE FROM schema_migrations WHERE version = 13;"
                /* a newer one recorded (another branch's): 13 is below the newest now */
                " INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_other.sql')"));
    assert_int_equal(vt_sql_long("SELECT count(*) FROM schema_migrations WHERE version = 13"), 0);
    assert_int_equal(run_migrate(), 0);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM schema_migrations WHERE version = 13"), 1);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM information_schema.columns"
                                 " WHERE table_name = 'flow_steps'"
                                 "   AND column_name = 'incident_min_items'"),
                     1);
    free(vt_sql("DELETE FROM schema_migrations WHERE version = 9999"));
    assert_int_equal(vt_sql_long("SELECT count(*) FROM schema_migrations"),
                     (long)vd_migration_count);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *data = NULL;
    long n;
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    rewind(f);
    data = calloc((size_t)n + 1, 1);
    assert_non_null(data);
    assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return data;
}

/* A database at schema 4 (before job_answers) that holds a finished job and its kept answer
 * is migrated by `serve`; the identical request still replays that answer byte for byte, a
 * different one is still refused, and the old columns are gone. */
static void test_foundation_upgrade_keeps_replays(void **state)
{
    static const char *const before[] = {"0001_init.sql", "0002_stats.sql", "0003_metrics.sql",
                                         "0004_speed.sql"};
    static const char token[] = "6f1c2a9e-8d3b-4c57-9e1a-0b2c3d4e5f60";
    char name[64], up_url[512], env_url[600], sql[1024], path[512], body[256];
    const char *env[] = {env_url, NULL};
    vt_server up;
    PGconn *pg;
    long job_id;
    (void)state;
    snprintf(name, sizeof(name), "vt_up_%d", (int)getpid());
    vt_sql("DROP DATABASE IF EXISTS %s", name);
    vt_sql("CREATE DATABASE %s", name);
    snprintf(up_url, sizeof(up_url), "%s dbname=%s", getenv("VERDICT_TEST_DATABASE_URL"), name);
    pg = PQconnectdb(up_url);
    assert_int_equal(PQstatus(pg), CONNECTION_OK);
    PQclear(vt_pq_ok(pg, "SET client_min_messages = warning"));
    PQclear(vt_pq_ok(
        pg, "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"));
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof(path), "%s/../sql/migrations/%s", VERDICT_TEST_DATA_DIR, before[i]);
        char *text = read_file(path);
        PQclear(vt_pq_ok(pg, "BEGIN"));
        PQclear(vt_pq_ok(pg, text));
        snprintf(sql, sizeof(sql), "INSERT INTO schema_migrations VALUES (%d, '%s')", i + 1,
                 before[i]);
        PQclear(vt_pq_ok(pg, sql));
        PQclear(vt_pq_ok(pg, "COMMIT"));
        free(text);
    }
    PQclear(vt_pq_ok(pg, "INSERT INTO flow_steps (flow_step_id) VALUES ('up')"));
    PQclear(vt_pq_ok(pg,
                     "INSERT INTO items (flow_step_id, source_type, item_identifier, state,"
                     " max_attempts, max_defers) VALUES ('up', 'rss', 'a', 'processed', 3, 3)"));
    snprintf(sql, sizeof(sql),
             "INSERT INTO jobs (item_id, flow_step_id, worker_id, attempt, status, claim_token,"
             " lease_expires_at, finished_at, disposition, final_request, final_response)"
             " SELECT id, 'up', 'w', 1, 'completed', '%s', now(), now(), 'complete',"
             " '{\"claim_token\": \"%s\", \"disposition\": \"complete\"}',"
             " '{\"disposition\":\"complete\",\"job\":{\"kept\":\"by 0004\"},"
             "\"item\":{}' FROM items",
             token, token);
    PQclear(vt_pq_ok(pg, sql));
    PQfinish(pg);

    snprintf(env_url, sizeof(env_url), "VERDICT_DATABASE_URL=%s", up_url);
    vt_server_start(&up, env); /* applies 0005 and later */
    pg = PQconnectdb(up_url);
    assert_int_equal(PQstatus(pg), CONNECTION_OK);
    /* the kept answer moved to job_answers (0005) and back into the job's row (0026) */
    PGresult *res =
        PQexec(pg, "SELECT (SELECT count(*) FROM jobs WHERE answer_response IS NOT NULL),"
                   " (SELECT count(*) FROM information_schema.columns"
                   "  WHERE table_name = 'jobs' AND column_name LIKE 'final_%'),"
                   " (SELECT id FROM jobs),"
                   /* 0012 closed the kept answer: it is a JSON object now */
                   " (SELECT count(*) FROM jobs"
                   "  WHERE jsonb_typeof(answer_response::jsonb) = 'object')");
    assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
    assert_string_equal(PQgetvalue(res, 0, 0), "1");
    assert_string_equal(PQgetvalue(res, 0, 1), "0");
    job_id = strtol(PQgetvalue(res, 0, 2), NULL, 10);
    assert_string_equal(PQgetvalue(res, 0, 3), "1");
    PQclear(res);
    PQfinish(pg);

    snprintf(path, sizeof(path), "/v1/jobs/%ld/disposition", job_id);
    /* same request, other key order and spacing: jsonb equality */
    snprintf(body, sizeof(body), "{\"disposition\":\"complete\",\"claim_token\":\"%s\"}", token);
    vt_resp r = vt_http(&up, "POST", path, VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(r.json);
    assert_string_equal(vt_str(r.json, "job.kept"), "by 0004");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "replayed")));
    vt_resp_free(&r);
    snprintf(body, sizeof(body),
             "{\"claim_token\":\"%s\",\"disposition\":\"reject_source\","
             "\"reason_code\":\"spam\"}",
             token);
    r = vt_http(&up, "POST", path, VT_WORKER, body, NULL);
    vt_assert_error(&r, 409, "job_finalized");
    vt_resp_free(&r);
    /* item ids go on after the items kept (sql/migrations/0023_item_sources.sql restarts the
     * sequence) */
    assert_int_equal(vt_register(&up, "up", "b", NULL), 2);
    vt_server_stop(&up);
    vt_sql("DROP DATABASE %s WITH (FORCE)", name);
}

static int sh(const char *env)
{
    const char *cmd = getenv(env);
    if (!cmd)
        return -1;
    char full[2048];
    snprintf(full, sizeof(full), "%s >/dev/null 2>&1", cmd);
    int st = system(full);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_foundation_database_restart(void **state)
{
    (void)state;
    if (!getenv("VERDICT_TEST_PG_STOP") || !getenv("VERDICT_TEST_PG_START")) {
        skip();
        return;
    }
    assert_int_equal(sh("VERDICT_TEST_PG_STOP"), 0);
    vt_resp r = vt_http(&srv, "GET", "/readyz", NULL, NULL, NULL);
    vt_assert_error(&r, 503, "database_unavailable");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "retryable")));
    assert_true(strtol(r.retry_after, NULL, 10) >= 1);
    vt_resp_free(&r);
    assert_int_equal(sh("VERDICT_TEST_PG_START"), 0);
    long status = 0;
    for (int i = 0; i < 50 && status != 200; i++) {
        r = vt_http(&srv, "GET", "/readyz", NULL, NULL, NULL);
        status = r.status;
        vt_resp_free(&r);
        if (status != 200) {
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    assert_int_equal(status, 200);
}

VT_SERVER_FIXTURE(srv, NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_foundation_health_and_ready),
        cmocka_unit_test(test_foundation_request_id_echoed),
        cmocka_unit_test(test_foundation_not_found_and_method),
        cmocka_unit_test(test_foundation_auth),
        cmocka_unit_test(test_foundation_openapi_served),
        cmocka_unit_test(test_foundation_migrate_twice),
        cmocka_unit_test(test_foundation_migrate_fills_a_gap),
        cmocka_unit_test(test_foundation_upgrade_keeps_replays),
        cmocka_unit_test(test_foundation_database_restart),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
