/* test_incidents.c - tooling incidents over HTTP against PostgreSQL: the
 * Job 640 story replayed flow-wide (20 items, a deterministic wiki_upsert failure on each whose
 * text differs per item; the incident opens by the 5th, no item is rejected after it, resolve
 * requeues all 20), one incident under many concurrent clients, the per-flow-step settings
 * (minimum, window, pause_on_incident), transient failures and other wording never opening
 * one, the guard on every rejection path (single, batch, skip_item, MCP) and force, the
 * metric, and the 4xx answers. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt.h"
#include "vt_api.h"

static vt_server srv;

/* POST a tool failure of claim c; asserts 200 and returns the envelope. */
static vt_resp tool_failure(const vt_claim *c, const char *tool, const char *error)
{
    char path[96];
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "claim_token", c->token);
    cJSON_AddStringToObject(b, "tool", tool);
    cJSON_AddStringToObject(b, "error", error);
    char *body = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    snprintf(path, sizeof(path), "/v1/jobs/%lld/tool-failures", (long long)c->job_id);
    vt_resp r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
    free(body);
    if (r.status != 200)
        fail_msg("tool failure: %ld %s", r.status, r.body);
    return r;
}

static void patch_flow_step(const char *flow, const char *body)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/flow-steps/%s", flow);
    vt_resp r = vt_http(&srv, "PATCH", path, VT_ADMIN, body, NULL);
    if (r.status != 200)
        fail_msg("PATCH %s: %ld %s", path, r.status, r.body);
    vt_resp_free(&r);
}

static long open_incidents(const char *flow)
{
    return vt_sql_long("SELECT count(*) FROM tool_incidents WHERE flow_step_id = '%s'"
                       " AND state = 'open'",
                       flow);
}

static void defer_tool_error(const vt_claim *c)
{
    vt_resp r = vt_dispose(&srv, c,
                           "\"disposition\": \"defer_item\", \"reason_code\": \"tool_error\","
                           " \"retry_after_seconds\": 3600");
    if (r.status != 200)
        fail_msg("defer: %ld %s", r.status, r.body);
    vt_resp_free(&r);
}

/* The Job 640 story, flow-wide. */
static void test_incidents_job640_story(void **state)
{
    (void)state;
    char err[300], path[96];
    int opened_at = -1;
    int64_t incident = 0;
    for (int i = 0; i < 20; i++) {
        char ident[32];
        snprintf(ident, sizeof(ident), "src-%d", i);
        vt_register(&srv, "wiki640", ident, "\"max_defers\": 10");
    }
    for (int i = 0; i < 20; i++) {
        vt_claim c = vt_claim1(&srv, "wiki640");
        snprintf(err, sizeof(err),
                 "wiki_upsert: target_path '/srv/wiki/items/%lld/page-%d.md' must stay inside "
                 "root (request %d, item %lld)",
                 (long long)c.item_id, i * 7, 1000 + i * 13, (long long)c.item_id);
        vt_resp r = tool_failure(&c, "wiki_upsert", err);
        assert_string_equal(vt_str(r.json, "kind"), "deterministic");
        const cJSON *inc = cJSON_GetObjectItem(r.json, "incident");
        if (inc && opened_at < 0) {
            opened_at = i;
            incident = (int64_t)vt_num(inc, "id");
        }
        if (inc) {
            char want[80];
            snprintf(want, sizeof(want), "fails the same way on %d items", i + 1);
            assert_string_equal(vt_str(inc, "tool"), "wiki_upsert");
            assert_int_equal((int)vt_num(inc, "items"), i + 1);
            if (!strstr(vt_str(r.json, "hint"), want) ||
                !strstr(vt_str(r.json, "hint"), "defer_item"))
                fail_msg("item %d: hint '%s'", i, vt_str(r.json, "hint"));
            /* the model tries to reject the source anyway: refused */
            vt_resp rj = vt_dispose(&srv, &c,
                                    "\"disposition\": \"reject_source\", \"reason_code\": "
                                    "\"other\", \"reason\": \"tool-error\"");
            vt_assert_error(&rj, 409, "tooling_incident_open");
            vt_resp_free(&rj);
        }
        vt_resp_free(&r);
        defer_tool_error(&c);
    }
    assert_true(opened_at >= 0 && opened_at <= 4); /* open by the 5th item */
    assert_int_equal(open_incidents("wiki640"), 1);
    /* no item was rejected, ever */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit t JOIN items i ON"
                                 " i.id = t.item_id WHERE i.flow_step_id = 'wiki640'"
                                 " AND t.to_state = 'rejected'"),
                     0);
    /* GET lists it with 20 items; GET one names them */
    vt_resp r = vt_http(&srv, "GET", "/v1/tool-incidents?flow_step_id=wiki640&state=open",
                        VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    const cJSON *list = cJSON_GetObjectItem(r.json, "tool_incidents");
    assert_int_equal(cJSON_GetArraySize(list), 1);
    const cJSON *first = cJSON_GetArrayItem(list, 0);
    assert_int_equal((int64_t)vt_num(first, "id"), incident);
    assert_int_equal((int)vt_num(first, "items"), 20);
    assert_string_equal(vt_str(first, "state"), "open");
    /* the key is the failure template now (the regex signature was before) */
    assert_string_equal(vt_str(first, "template"),
                        "wiki_upsert : target_path <q> must stay inside root ( request <num> , "
                        "item <num> )");
    assert_true(vt_num(first, "template_id") > 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(first, "tools")), 1);
    vt_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/tool-incidents/%lld", (long long)incident);
    r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(
                         cJSON_GetObjectItem(r.json, "tool_incident"), "affected_items")),
                     20);
    vt_resp_free(&r);
    /* the metric */
    r = vt_http(&srv, "GET", "/metrics", VT_READER, NULL, NULL);
    assert_non_null(strstr(
        r.body, "verdict_tool_incidents_open{flow_step_id=\"wiki640\",tool=\"wiki_upsert\"} 1"));
    vt_resp_free(&r);
    /* resolve with requeue_items: all 20 back to available, audited */
    snprintf(path, sizeof(path), "/v1/tool-incidents/%lld/resolve", (long long)incident);
    r = vt_http(&srv, "POST", path, VT_ADMIN,
                "{\"requeue_items\": true, \"reason\": \"wiki_upsert fixed\"}", NULL);
    if (r.status != 200)
        fail_msg("resolve: %ld %s", r.status, r.body);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "requeued")), 20);
    assert_string_equal(vt_str(r.json, "tool_incident.state"), "resolved");
    assert_string_equal(vt_str(r.json, "tool_incident.resolved_by"), "ops");
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'wiki640'"
                                 " AND state = 'available'"),
                     20);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit t JOIN items i ON"
                                 " i.id = t.item_id WHERE i.flow_step_id = 'wiki640'"
                                 " AND t.cause = 'requeue' AND t.from_state = 'deferred'"
                                 " AND t.actor = 'ops'"),
                     20);
    /* resolving it again: 409; the gauge goes to 0 */
    r = vt_http(&srv, "POST", path, VT_ADMIN, "{}", NULL);
    vt_assert_error(&r, 409, "invalid_transition");
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/metrics", VT_READER, NULL, NULL);
    assert_non_null(strstr(
        r.body, "verdict_tool_incidents_open{flow_step_id=\"wiki640\",tool=\"wiki_upsert\"} 0"));
    vt_resp_free(&r);
}

#define CLIENTS 16

typedef struct conc_arg {
    vt_claim c;
    long status;
} conc_arg;

static pthread_barrier_t barrier;

static void *conc_worker(void *p)
{
    conc_arg *a = p;
    char err[160];
    snprintf(err, sizeof(err), "upsert refused: slug \"post-%lld\" is reserved",
             (long long)a->c.item_id);
    pthread_barrier_wait(&barrier);
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "claim_token", a->c.token);
    cJSON_AddStringToObject(b, "tool", "wp_upsert");
    cJSON_AddStringToObject(b, "error", err);
    char *body = cJSON_PrintUnformatted(b), path[96];
    cJSON_Delete(b);
    snprintf(path, sizeof(path), "/v1/jobs/%lld/tool-failures", (long long)a->c.job_id);
    vt_resp r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
    a->status = r.status;
    vt_resp_free(&r);
    free(body);
    vt_http_thread_cleanup();
    return NULL;
}

/* 16 clients report the same deterministic failure on 16 items at once: exactly one
 * incident opens (default minimum 5), and it links all 16 items. */
static void test_incidents_concurrent_one(void **state)
{
    (void)state;
    conc_arg args[CLIENTS];
    pthread_t t[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        char ident[32];
        snprintf(ident, sizeof(ident), "c-%d", i);
        vt_register(&srv, "conc", ident, NULL);
    }
    assert_int_equal(pthread_barrier_init(&barrier, NULL, CLIENTS), 0);
    for (int i = 0; i < CLIENTS; i++) {
        args[i].c = vt_claim1(&srv, "conc");
        args[i].status = 0;
    }
    for (int i = 0; i < CLIENTS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, conc_worker, &args[i]), 0);
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(args[i].status, 200);
    }
    pthread_barrier_destroy(&barrier);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM tool_incidents WHERE flow_step_id = 'conc'"),
                     1);
    assert_int_equal(vt_sql_long("SELECT items FROM tool_incidents WHERE flow_step_id = 'conc'"),
                     CLIENTS);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM tool_incident_items x JOIN tool_incidents"
                                 " t ON t.id = x.incident_id WHERE t.flow_step_id = 'conc'"),
                     CLIENTS);
}

/* Minimum 2, a one-minute window, pause_on_incident: an old failure is out of the window; the
 * second item inside it opens the incident and pauses the flow step. */
static void test_incidents_settings_window_pause(void **state)
{
    (void)state;
    vt_claim c[3];
    for (int i = 0; i < 3; i++) {
        char ident[32];
        snprintf(ident, sizeof(ident), "p-%d", i);
        vt_register(&srv, "pz", ident, NULL);
    }
    patch_flow_step("pz", "{\"incident_min_items\": 2, \"incident_window_minutes\": 1,"
                          " \"pause_on_incident\": true}");
    for (int i = 0; i < 3; i++)
        c[i] = vt_claim1(&srv, "pz");
    vt_resp r = tool_failure(&c[0], "render", "template 12 not found");
    assert_null(cJSON_GetObjectItem(r.json, "incident"));
    vt_resp_free(&r);
    free(vt_sql("UPDATE tool_failures SET at = now() - interval '2 minutes'"
                " WHERE flow_step_id = 'pz'"));
    r = tool_failure(&c[1], "render", "template 13 not found");
    assert_null(cJSON_GetObjectItem(r.json, "incident")); /* the first is out of the window */
    vt_resp_free(&r);
    assert_int_equal(open_incidents("pz"), 0);
    assert_int_equal(vt_sql_long("SELECT paused::int FROM flow_steps WHERE flow_step_id = 'pz'"),
                     0);
    r = tool_failure(&c[2], "render", "template 14 not found");
    assert_int_equal((int)vt_num(r.json, "incident.items"), 2);
    vt_resp_free(&r);
    assert_int_equal(open_incidents("pz"), 1);
    assert_int_equal(vt_sql_long("SELECT paused::int FROM flow_steps WHERE flow_step_id = 'pz'"),
                     1);
    /* items linked: the two inside the window */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM tool_incident_items x JOIN tool_incidents"
                                 " t ON t.id = x.incident_id WHERE t.flow_step_id = 'pz'"
                                 " AND x.item_id IN (%lld, %lld)",
                                 (long long)c[1].item_id, (long long)c[2].item_id),
                     2);
}

/* Transient failures, and deterministic ones worded differently, never open an incident. */
static void test_incidents_transient_and_wording(void **state)
{
    (void)state;
    static const char *const wording[] = {"title is empty", "category missing", "bad encoding",
                                          "no author set"};
    patch_flow_step("tr", "{\"incident_min_items\": 2}");
    for (int i = 0; i < 4; i++) {
        char ident[32];
        snprintf(ident, sizeof(ident), "t-%d", i);
        vt_register(&srv, "tr", ident, NULL);
    }
    for (int i = 0; i < 4; i++) {
        vt_claim c = vt_claim1(&srv, "tr");
        vt_resp r = tool_failure(&c, "fetch", "upstream answered 503 Service Unavailable");
        assert_string_equal(vt_str(r.json, "kind"), "transient");
        vt_resp_free(&r);
        r = tool_failure(&c, "publish", wording[i]);
        assert_string_equal(vt_str(r.json, "kind"), "deterministic");
        assert_null(cJSON_GetObjectItem(r.json, "incident"));
        vt_resp_free(&r);
    }
    assert_int_equal(vt_sql_long("SELECT count(*) FROM tool_incidents WHERE flow_step_id = 'tr'"),
                     0);
}

/* While an incident is open every rejection path is refused (single call, skip_item mapped to
 * a rejection, batch, MCP); other tools' envelopes name it; force goes through and is recorded
 * as forced; resolve requeues the item rejected while it was open. */
static void test_incidents_guard_paths_and_force(void **state)
{
    (void)state;
    char body[512], hdr[160], path[96];
    patch_flow_step("fz", "{\"incident_min_items\": 1}");
    for (int i = 0; i < 3; i++) {
        char ident[32];
        snprintf(ident, sizeof(ident), "f-%d", i);
        vt_register(&srv, "fz", ident, NULL);
    }
    vt_claim a = vt_claim1(&srv, "fz"), b = vt_claim1(&srv, "fz");
    vt_resp r = tool_failure(&a, "wiki_upsert", "target_path '/x/1' must stay inside root");
    int64_t incident = (int64_t)vt_num(r.json, "incident.id");
    assert_true(incident > 0);
    vt_resp_free(&r);
    /* another tool's failure in the flow step: the envelope names the incident's tool */
    r = tool_failure(&b, "fetch", "connection reset by peer");
    assert_string_equal(vt_str(r.json, "incident.tool"), "wiki_upsert");
    assert_non_null(strstr(vt_str(r.json, "hint"), "'wiki_upsert' fails the same way"));
    vt_resp_free(&r);
    r = vt_dispose(&srv, &b, "\"disposition\": \"skip_item\", \"reason\": \"spam\"");
    vt_assert_error(&r, 409, "tooling_incident_open");
    vt_resp_free(&r);
    snprintf(body, sizeof(body),
             "{\"dispositions\": [{\"job_id\": %lld, \"claim_token\": \"%s\", \"disposition\":"
             " \"reject_source\", \"reason_code\": \"spam\"}]}",
             (long long)b.job_id, b.token);
    r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "tooling_incident_open"));
    vt_resp_free(&r);
    snprintf(hdr, sizeof(hdr), "Verdict-Claim: %lld:%s", (long long)b.job_id, b.token);
    const char *hs[] = {hdr, NULL};
    r = vt_http(&srv, "POST", "/mcp", VT_WORKER,
                "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\", \"params\":"
                " {\"name\": \"reject_source\", \"arguments\": {\"reason_code\": \"spam\"}}}",
                hs);
    assert_int_equal(r.status, 200);
    assert_true(
        cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "result"), "isError")));
    assert_non_null(strstr(r.body, "tooling_incident_open"));
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, b.item_id), "claimed");
    /* force: rejected, recorded as forced */
    r = vt_dispose(
        &srv, &b, "\"disposition\": \"reject_source\", \"reason_code\": \"spam\", \"force\": true");
    if (r.status != 200)
        fail_msg("forced reject: %ld %s", r.status, r.body);
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT forced::int FROM audit WHERE item_id = %lld"
                                 " AND to_state = 'rejected'",
                                 (long long)b.item_id),
                     1);
    defer_tool_error(&a);
    /* resolve: a (deferred, linked) and b (rejected while open) go back */
    snprintf(path, sizeof(path), "/v1/tool-incidents/%lld/resolve", (long long)incident);
    r = vt_http(&srv, "POST", path, VT_ADMIN, "{\"requeue_items\": true}", NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "requeued")), 2);
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, a.item_id), "available");
    assert_string_equal(vt_item_state(&srv, b.item_id), "available");
    /* closed: a rejection goes through again */
    vt_claim c = vt_claim1(&srv, "fz");
    r = vt_dispose(&srv, &c, "\"disposition\": \"reject_source\", \"reason_code\": \"spam\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
}

/* Bad input: clear 4xx naming the field; roles; pagination. */
static void test_incidents_4xx_and_pages(void **state)
{
    (void)state;
    static const struct {
        const char *method, *path, *token, *body;
        long status;
        const char *code;
    } bad[] = {
        {"GET", "/v1/tool-incidents?state=closed", VT_READER, NULL, 400, "invalid_field"},
        {"GET", "/v1/tool-incidents?limit=0", VT_READER, NULL, 400, "invalid_field"},
        {"GET", "/v1/tool-incidents?after=-1", VT_READER, NULL, 400, "invalid_field"},
        {"GET", "/v1/tool-incidents/999999", VT_READER, NULL, 404, "not_found"},
        {"GET", "/v1/tool-incidents/abc", VT_READER, NULL, 404, "not_found"},
        {"POST", "/v1/tool-incidents/999999/resolve", VT_ADMIN, "{}", 404, "not_found"},
        {"POST", "/v1/tool-incidents/1/resolve", VT_WORKER, "{}", 403, "forbidden"},
        {"POST", "/v1/tool-incidents/1/resolve", VT_ADMIN, "{\"bogus\": 1}", 400, "invalid_field"},
        {"POST", "/v1/tool-incidents/1/resolve", VT_ADMIN, "{\"requeue_items\": \"yes\"}", 400,
         "invalid_field"},
        {"POST", "/v1/tool-incidents/1/resolve", VT_ADMIN, "[1]", 400, NULL},
        {"GET", "/v1/tool-incidents", NULL, NULL, 401, "unauthorized"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        vt_resp r = vt_http(&srv, bad[i].method, bad[i].path, bad[i].token, bad[i].body, NULL);
        if (r.status != bad[i].status)
            fail_msg("%s %s: %ld %s", bad[i].method, bad[i].path, r.status, r.body);
        if (bad[i].code)
            vt_assert_error(&r, bad[i].status, bad[i].code);
        vt_resp_free(&r);
    }
    vt_resp r =
        vt_http(&srv, "POST", "/v1/tool-incidents/1/resolve", VT_ADMIN, "{\"bogus\": 1}", NULL);
    assert_string_equal(vt_str(r.json, "field"), "bogus");
    vt_resp_free(&r);
    /* pages of one: every incident once, next_after null on the last page */
    long total = vt_sql_long("SELECT count(*) FROM tool_incidents"), seen = 0;
    char path[96];
    long long after = 0;
    for (int guard = 0; guard < 100; guard++) {
        snprintf(path, sizeof(path), "/v1/tool-incidents?limit=1&after=%lld", after);
        r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
        assert_int_equal(r.status, 200);
        seen += cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "tool_incidents"));
        const cJSON *next = cJSON_GetObjectItem(r.json, "next_after");
        bool last = cJSON_IsNull(next);
        after = last ? 0 : (long long)next->valuedouble;
        vt_resp_free(&r);
        if (last)
            break;
    }
    assert_true(total >= 1);
    assert_int_equal(seen, total);
}

VT_SERVER_FIXTURE(srv, NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_incidents_job640_story),
        cmocka_unit_test(test_incidents_concurrent_one),
        cmocka_unit_test(test_incidents_settings_window_pause),
        cmocka_unit_test(test_incidents_transient_and_wording),
        cmocka_unit_test(test_incidents_guard_paths_and_force),
        cmocka_unit_test(test_incidents_4xx_and_pages),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
