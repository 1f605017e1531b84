/* test_foundation.c - the real verdictd over HTTP against a real PostgreSQL: health and
 * readiness, the error envelope for 404/405/401, request ids, migrations run twice, and
 * recovery from a database restart without restarting verdictd. */
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

#include "vt.h"

static vt_server srv;
static const char *url;

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
    snprintf(cmd, sizeof(cmd), "VERDICT_DATABASE_URL='%s' %s migrate 2>/dev/null", url,
             VERDICTD_PATH);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_foundation_migrate_twice(void **state)
{
    (void)state;
    assert_int_equal(run_migrate(), 0);
    assert_int_equal(run_migrate(), 0);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM schema_migrations"),
                     vt_sql_long("SELECT max(version) FROM schema_migrations"));
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
    assert_true(atoi(r.retry_after) >= 1);
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

static int setup(void **state)
{
    (void)state;
    url = vt_db_setup();
    vt_server_start(&srv, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    vt_server_stop(&srv);
    vt_db_teardown();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_foundation_health_and_ready),
        cmocka_unit_test(test_foundation_request_id_echoed),
        cmocka_unit_test(test_foundation_not_found_and_method),
        cmocka_unit_test(test_foundation_auth),
        cmocka_unit_test(test_foundation_openapi_served),
        cmocka_unit_test(test_foundation_migrate_twice),
        cmocka_unit_test(test_foundation_database_restart),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
