/* test_pgbouncer.c - verdictd behind a real transaction-pooling PgBouncer (Debian's, started
 * here on loopback with pool_mode = transaction and fewer server connections than verdictd
 * has clients, so transactions of different connections share server backends) WITHOUT
 * VERDICT_DB_POOL_MODE: verdictd detects the pooler by itself (a backend pid that is not the
 * connection's), says so in the log and in verdict_db_pool_mode_detected, and sends its
 * statements unprepared. 32 clients register, claim, heartbeat and complete items; every
 * answer must be a 2xx, and every acknowledged completion is in the database. Skips (77)
 * without pgbouncer. First, without PgBouncer: the other symptom, prepared statements that
 * vanish under a direct connection (a trigger runs DEALLOCATE ALL once per backend), is
 * detected too, and the statement that met it runs again unprepared: every call answers 2xx
 * and nothing ran twice. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "verdict/util.h"
#include "vt.h"
#include "vt_api.h"
#include "vt_pg.h"

#define CLIENTS 32
#define SECONDS 6.0

static vt_server srv;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long ok_calls, bad_calls, completed;

static bool good(vt_resp *r)
{
    bool ok = r->status >= 200 && r->status < 300;
    pthread_mutex_lock(&mu);
    if (ok)
        ok_calls++;
    else if (bad_calls++ < 5)
        fprintf(stderr, "%ld: %s\n", r->status, r->body ? r->body : "");
    pthread_mutex_unlock(&mu);
    return ok;
}

static void *client(void *arg)
{
    int me = (int)(intptr_t)arg;
    double end = vd_monotonic() + SECONDS;
    char body[300], path[80], flow[32];
    snprintf(flow, sizeof(flow), "pgb%d", me);
    for (int n = 0; vd_monotonic() < end; n++) {
        snprintf(body, sizeof(body),
                 "{\"items\": [{\"flow_step_id\": \"%s\", \"source_type\": \"t\","
                 " \"item_identifier\": \"i%d\"}]}",
                 flow, n);
        vt_resp r = vt_http(&srv, "POST", "/v1/items", VT_ADMIN, body, NULL);
        good(&r);
        vt_resp_free(&r);
        snprintf(body, sizeof(body), "{\"flow_step_id\": \"%s\", \"worker_id\": \"w\"}", flow);
        r = vt_http(&srv, "POST", "/v1/claims", VT_WORKER, body, NULL);
        cJSON *c = good(&r) && r.json ? cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "claims"), 0)
                                      : NULL;
        if (c) {
            long long job = (long long)vt_num(c, "job_id");
            char token[64];
            snprintf(token, sizeof(token), "%s", vt_str(c, "claim_token"));
            snprintf(path, sizeof(path), "/v1/jobs/%lld/heartbeat", job);
            snprintf(body, sizeof(body), "{\"claim_token\": \"%s\"}", token);
            vt_resp h = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
            good(&h);
            vt_resp_free(&h);
            snprintf(path, sizeof(path), "/v1/jobs/%lld/disposition", job);
            snprintf(body, sizeof(body), "{\"claim_token\": \"%s\", \"disposition\": \"complete\"}",
                     token);
            vt_resp d = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
            if (good(&d)) {
                pthread_mutex_lock(&mu);
                completed++;
                pthread_mutex_unlock(&mu);
            }
            vt_resp_free(&d);
        }
        vt_resp_free(&r);
        vt_resp s = vt_http(&srv, "GET", "/v1/stats", VT_READER, NULL, NULL);
        good(&s);
        vt_resp_free(&s);
    }
    vt_http_thread_cleanup();
    return NULL;
}

static void test_pgbouncer_transaction_mode(void **state)
{
    (void)state;
    pthread_t t[CLIENTS];
    for (int i = 0; i < CLIENTS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, client, (void *)(intptr_t)i), 0);
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(t[i], NULL);
    long in_db = vt_sql_long("SELECT count(*) FROM jobs WHERE status = 'completed'"
                             " AND flow_step_id LIKE 'pgb%%'");
    fprintf(stderr,
            "pgbouncer (transaction pooling): %ld calls, %ld errors, %ld completions"
            " acknowledged, %ld in the database\n",
            ok_calls + bad_calls, bad_calls, completed, in_db);
    assert_true(ok_calls > 300);
    assert_int_equal(bad_calls, 0);
    assert_int_equal(in_db, completed);
    /* detected by itself: the metric and one warning in the log */
    vt_resp m = vt_http(&srv, "GET", "/metrics", VT_READER, NULL, NULL);
    assert_non_null(strstr(m.body, "\nverdict_db_pool_mode_detected 1\n"));
    assert_non_null(strstr(m.body, "\nverdict_db_unprepared 1\n"));
    vt_resp_free(&m);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "test $(grep -c 'transaction-pooling proxy' %s) -eq 1",
             srv.log_path);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "! grep -q 'prepare .* failed' %s", srv.log_path);
    assert_int_equal(system(cmd), 0);
}

/* Prepared statements vanish (SQLSTATE 26000) on a direct connection: the first job insert of
 * each backend runs DEALLOCATE ALL, so the next prepared statement there does not exist. */
static void test_pgbouncer_vanished_statements(void **state)
{
    (void)state;
    vt_server direct;
    char cmd[400];
    vt_server_start(&direct, NULL); /* it migrates the fresh database */
    free(vt_sql("CREATE FUNCTION vt_dealloc_once() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                " IF current_setting('vt.dealloc_done', true) IS DISTINCT FROM 'y' THEN"
                " EXECUTE 'DEALLOCATE ALL'; PERFORM set_config('vt.dealloc_done', 'y', false);"
                " END IF; RETURN NULL; END $$"));
    free(vt_sql("CREATE TRIGGER vt_dealloc AFTER INSERT ON jobs FOR EACH ROW"
                " EXECUTE FUNCTION vt_dealloc_once()"));
    for (int i = 0; i < 20; i++) {
        char ident[16];
        snprintf(ident, sizeof(ident), "v%d", i);
        vt_register(&direct, "vanish", ident, NULL); /* each asserts a 2xx */
        vt_claim c = vt_claim1(&direct, "vanish");
        vt_resp d = vt_dispose(&direct, &c, "\"disposition\": \"complete\"");
        assert_int_equal(d.status, 200);
        vt_resp_free(&d);
    }
    vt_resp m = vt_http(&direct, "GET", "/metrics", VT_READER, NULL, NULL);
    assert_non_null(strstr(m.body, "\nverdict_db_pool_mode_detected 1\n"));
    vt_resp_free(&m);
    /* nothing ran twice: one job and three transitions per item */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'vanish'"), 20);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'vanish'"
                                 " AND status = 'completed'"),
                     20);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit t JOIN items i ON"
                                 " i.id = t.item_id WHERE i.flow_step_id = 'vanish'"),
                     60);
    snprintf(cmd, sizeof(cmd), "test $(grep -c 'a prepared statement vanished' %s) -eq 1",
             direct.log_path);
    assert_int_equal(system(cmd), 0);
    vt_server_stop(&direct);
    free(vt_sql("DROP TRIGGER vt_dealloc ON jobs"));
}

/* The database only: the first test starts a direct verdictd of its own; the second goes
 * through PgBouncer (no VERDICT_DB_POOL_MODE: detected). */
VT_FIXTURE(.env = VT_ENV("VERDICT_THREADS=8", "VERDICT_DB_POOL_SIZE=32", "VERDICT_LOG_LEVEL=warn"))

/* Start PgBouncer (skip, exit 77, without it) and srv behind it. */
static int through_pgbouncer(void **state)
{
    (void)state;
    if (vt_fixture_route(&vt_fx, VT_ROUTE_PGBOUNCER) == 77) {
        vt_fixture_teardown(&vt_fx);
        exit(77);
    }
    vt_replica_start(&srv);
    return 0;
}

static int stop_srv(void **state)
{
    (void)state;
    vt_server_stop(&srv);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pgbouncer_vanished_statements),
        cmocka_unit_test_setup_teardown(test_pgbouncer_transaction_mode, through_pgbouncer,
                                        stop_srv),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
