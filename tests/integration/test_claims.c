/* test_claims.c - SPEC §3-§4 and §5.3 over HTTP against PostgreSQL: registration
 * (idempotent, whole-batch validation), lookups and listing, claim order, Idempotency-Key
 * replay and reuse, pause/resume, heartbeat, and lease expiry rescued by the sweeper. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "store_internal.h"
#include "vt.h"
#include "vt_api.h"

static vt_server srv;

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static void test_claims_register_idempotent(void **state)
{
    (void)state;
    const char *body = "{\"items\": [{\"flow_step_id\": \"reg\", \"source_type\": \"rss\","
                       " \"item_identifier\": \"https://ex.org/a\", \"payload\": {\"t\": 1}},"
                       " {\"flow_step_id\": \"reg\", \"source_type\": \"rss\","
                       " \"item_identifier\": \"https://ex.org/b\", \"priority\": 3},"
                       " {\"flow_step_id\": \"reg\", \"source_type\": \"rss\","
                       " \"item_identifier\": \"https://ex.org/a\"}]}";
    vt_resp r = vt_http(&srv, "POST", "/v1/items", VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(
        cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "items"), 0), "created")));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(
        cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "items"), 2), "created")));
    double a = vt_num(r.json, "items.0.id"), b = vt_num(r.json, "items.1.id");
    assert_true(a == vt_num(r.json, "items.2.id"));
    assert_string_equal(vt_str(r.json, "items.1.item_identifier"), "https://ex.org/b");
    vt_resp_free(&r);
    /* registering again creates nothing and shows current states */
    r = vt_http(&srv, "POST", "/v1/items", VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    assert_true(vt_num(r.json, "items.0.id") == a && vt_num(r.json, "items.1.id") == b);
    for (int i = 0; i < 3; i++)
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(
            cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "items"), i), "created")));
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'reg'"), 2);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit t JOIN items i ON"
                                 " i.id = t.item_id WHERE i.flow_step_id = 'reg'"),
                     2);
    /* a processed item is never revived by registration */
    vt_claim c = vt_claim1(&srv, "reg");
    assert_int_equal(c.item_id, (int64_t)b); /* priority 3 first */
    r = vt_dispose(&srv, &c, "\"disposition\": \"complete\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    r = vt_http(&srv, "POST", "/v1/items", VT_WORKER, body, NULL);
    assert_string_equal(vt_str(r.json, "items.1.state"), "processed");
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, (int64_t)b), "processed");
}

static void test_claims_bad_batch_rejected_whole(void **state)
{
    (void)state;
    char body[40000];
    size_t n = (size_t)snprintf(body, sizeof(body), "{\"items\": [");
    for (int i = 0; i < 20; i++) {
        n += (size_t)snprintf(body + n, sizeof(body) - n,
                              "%s{\"flow_step_id\": \"bad\", \"source_type\": \"rss\","
                              " \"item_identifier\": \"",
                              i ? "," : "");
        int len = i == 17 ? 2001 : 10;
        for (int k = 0; k < len; k++)
            body[n++] = 'x';
        n += (size_t)snprintf(body + n, sizeof(body) - n, "%d\"}", i);
    }
    snprintf(body + n, sizeof(body) - n, "]}");
    vt_resp r = vt_http(&srv, "POST", "/v1/items", VT_WORKER, body, NULL);
    vt_assert_error(&r, 400, "invalid_field");
    assert_string_equal(vt_str(r.json, "field"), "items[17].item_identifier");
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'bad'"), 0);

    static const struct {
        const char *body;
        const char *code;
        const char *field;
    } cases[] = {
        {"{}", "missing_field", "items"},
        {"{\"items\": []}", "invalid_field", "items"},
        {"{\"items\": {}}", "invalid_field", "items"},
        {"{\"items\": [{\"source_type\": \"rss\", \"item_identifier\": \"x\"}]}", "missing_field",
         "items[0].flow_step_id"},
        {"{\"items\": [{\"flow_step_id\": 7, \"source_type\": \"rss\", \"item_identifier\": "
         "\"x\"}]}",
         "invalid_field", "items[0].flow_step_id"},
        {"{\"items\": [{\"flow_step_id\": \"f\", \"source_type\": \"rss\", \"item_identifier\": "
         "\"x\", \"priority\": 1.5}]}",
         "invalid_field", "items[0].priority"},
        {"{\"items\": [{\"flow_step_id\": \"f\", \"source_type\": \"rss\", \"item_identifier\": "
         "\"x\", \"max_attempts\": 101}]}",
         "invalid_field", "items[0].max_attempts"},
        {"{\"items\": [{\"flow_step_id\": \"f\", \"source_type\": \"rss\", \"item_identifier\": "
         "\"x\", \"delay_seconds\": -1}]}",
         "invalid_field", "items[0].delay_seconds"},
        {"{\"items\": [{\"flow_step_id\": \"f\", \"source_type\": \"rss\", \"item_identifier\": "
         "\"x\", \"payload\": [1]}]}",
         "invalid_field", "items[0].payload"},
        {"{\"items\": [{\"flow_step_id\": \"\", \"source_type\": \"rss\", \"item_identifier\": "
         "\"x\"}]}",
         "invalid_field", "items[0].flow_step_id"},
        {"{\"items\": [1]}", "invalid_field", "items[0]"},
        {"[1, 2]", "invalid_json", NULL},
        {"{\"items\": [}", "invalid_json", NULL},
        {"{\"items\": [{\"flow_step_id\": \"a\\u0000b\"}]}", "invalid_json", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        r = vt_http(&srv, "POST", "/v1/items", VT_WORKER, cases[i].body, NULL);
        if (r.status != 400 || strcmp(vt_str(r.json, "error"), cases[i].code) != 0 ||
            (cases[i].field &&
             strcmp(vt_str(r.json, "field") ? vt_str(r.json, "field") : "", cases[i].field) != 0))
            fail_msg("case %zu (%s): got %ld %s", i, cases[i].body, r.status, r.body);
        vt_resp_free(&r);
    }
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'f'"), 0);
}

/* One refused request at the HTTP edge: what is sent and the error it meets. */
typedef struct edge_row {
    const char *method, *path, *token, *body, *header;
    long status;
    const char *code, *field; /* field: the member the error names, NULL when unchecked */
} edge_row;

static const edge_row edge_rows[] = {
    {"POST", "/v1/claims", VT_WORKER, "{}", "Content-Type: text/plain", 415,
     "unsupported_media_type", NULL},
    {"POST", "/v1/items", VT_READER, "{}", NULL, 403, "forbidden", NULL},
    {"POST", "/v1/flow-steps/x/pause", VT_WORKER, NULL, NULL, 403, "forbidden", NULL},
    {"POST", "/v1/items", NULL, "{}", NULL, 401, "unauthorized", NULL},
    {"POST", "/v1/claims", VT_WORKER, "{\"flow_step_id\": \"x\"", NULL, 400, "invalid_json", NULL},
    {"GET", "/v1/items/abc", VT_READER, NULL, NULL, 404, "not_found", NULL},
    {"GET", "/v1/items/999999", VT_READER, NULL, NULL, 404, "not_found", NULL},
    {"GET", "/v1/items?limit=501", VT_READER, NULL, NULL, 400, "invalid_field", NULL},
    {"POST", "/v1/claims", VT_WORKER,
     "{\"flow_step_id\": \"x\", \"worker_id\": \"w\", \"limit\": 101}", NULL, 400, "invalid_field",
     "limit"},
    {"POST", "/v1/claims", VT_WORKER,
     "{\"flow_step_id\": \"x\", \"worker_id\": \"w\", \"lease_seconds\": 4}", NULL, 400,
     "invalid_field", NULL},
};

/* Send each row's request and assert its refusal. */
static void expect_refusals(const edge_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const edge_row *e = &rows[i];
        const char *hs[] = {e->header, NULL};
        vt_resp r = vt_http(&srv, e->method, e->path, e->token, e->body, hs);
        if (r.status != e->status)
            fprintf(stderr, "row %zu (%s %s): %ld %s\n", i, e->method, e->path, r.status, r.body);
        vt_assert_error(&r, e->status, e->code);
        if (e->field)
            assert_string_equal(vt_str(r.json, "field"), e->field);
        vt_resp_free(&r);
    }
}

static void test_claims_http_edges(void **state)
{
    (void)state;
    expect_refusals(edge_rows, sizeof(edge_rows) / sizeof(edge_rows[0]));
    /* a body over the limit */
    size_t big = 1100 * 1024;
    char *body = malloc(big + 64);
    memset(body, ' ', big);
    memcpy(body, "{\"items\": \"", 11);
    memcpy(body + big - 2, "\"}", 3);
    vt_resp r = vt_http(&srv, "POST", "/v1/items", VT_WORKER, body, NULL);
    vt_assert_error(&r, 413, "payload_too_large");
    vt_resp_free(&r);
    free(body);
}

static void test_claims_lookup_get_list(void **state)
{
    (void)state;
    char ident[32];
    for (int i = 0; i < 7; i++) {
        snprintf(ident, sizeof(ident), "L%d", i);
        vt_register(&srv, "lst", ident, NULL);
    }
    vt_resp r = vt_http(&srv, "POST", "/v1/items/lookup", VT_READER,
                        "{\"flow_step_id\": \"lst\", \"source_type\": \"rss\","
                        " \"item_identifiers\": [\"L5\", \"nope\", \"L1\"]}",
                        NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "items")), 2);
    assert_string_equal(vt_str(r.json, "items.0.item_identifier"), "L5");
    assert_string_equal(vt_str(r.json, "items.1.state"), "available");
    vt_resp_free(&r);
    /* keyset pagination visits every item exactly once */
    int seen = 0;
    long after = 0;
    for (int page = 0; page < 10; page++) {
        char path[128];
        snprintf(path, sizeof(path), "/v1/items?flow_step_id=lst&limit=3&after=%ld", after);
        r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
        assert_int_equal(r.status, 200);
        int n = cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "items"));
        seen += n;
        const cJSON *next = cJSON_GetObjectItem(r.json, "next_after");
        bool more = cJSON_IsNumber(next);
        if (more)
            after = (long)next->valuedouble;
        vt_resp_free(&r);
        if (!more)
            break;
    }
    assert_int_equal(seen, 7);
    r = vt_http(&srv, "GET", "/v1/items?state=claimed&flow_step_id=lst", VT_READER, NULL, NULL);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "items")), 0);
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/v1/items?state=bogus", VT_READER, NULL, NULL);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
}

static void test_claims_idempotent_claim(void **state)
{
    (void)state;
    vt_register(&srv, "idem", "a", NULL);
    vt_register(&srv, "idem", "b", NULL);
    const char *key[] = {"Idempotency-Key: claim-42", NULL};
    const char *body = "{\"flow_step_id\": \"idem\", \"worker_id\": \"w\", \"limit\": 1}";
    vt_resp r1 = vt_http(&srv, "POST", "/v1/claims", VT_WORKER, body, key);
    assert_int_equal(r1.status, 200);
    assert_false(r1.replayed);
    vt_resp r2 = vt_http(&srv, "POST", "/v1/claims", VT_WORKER, body, key);
    assert_int_equal(r2.status, 200);
    assert_true(r2.replayed);
    assert_string_equal(r1.body, r2.body); /* the SAME claims, token included */
    vt_resp_free(&r1);
    vt_resp_free(&r2);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'idem'"), 1);
    r1 = vt_http(&srv, "POST", "/v1/claims", VT_WORKER,
                 "{\"flow_step_id\": \"idem\", \"worker_id\": \"w\", \"limit\": 2}", key);
    vt_assert_error(&r1, 422, "idempotency_key_reused");
    vt_resp_free(&r1);
    /* the same key under another route or another API key is another scope */
    const char *ibody = "{\"items\": [{\"flow_step_id\": \"idem\", \"source_type\": \"rss\","
                        " \"item_identifier\": \"c\"}]}";
    r1 = vt_http(&srv, "POST", "/v1/items", VT_WORKER, ibody, key);
    assert_int_equal(r1.status, 200);
    assert_false(r1.replayed);
    vt_resp_free(&r1);
    r1 = vt_http(&srv, "POST", "/v1/items", VT_WORKER, ibody, key);
    assert_true(r1.replayed);
    vt_resp_free(&r1);
    r1 = vt_http(&srv, "POST", "/v1/claims", VT_ADMIN, body, key);
    assert_int_equal(r1.status, 200);
    assert_false(r1.replayed);
    vt_resp_free(&r1);
    const char *badkey[] = {"Idempotency-Key: ", NULL};
    r1 = vt_http(&srv, "POST", "/v1/claims", VT_WORKER, body, badkey);
    assert_true(r1.status == 200 || r1.status == 400); /* curl drops an empty header */
    vt_resp_free(&r1);
}

static void test_claims_pause_resume(void **state)
{
    (void)state;
    vt_claim c[4];
    vt_register(&srv, "pz", "a", NULL);
    vt_resp r = vt_http(&srv, "POST", "/v1/flow-steps/pz/pause", VT_ADMIN, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_true(
        cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "flow_step"), "paused")));
    vt_resp_free(&r);
    assert_int_equal(vt_claim_n(&srv, "pz", 4, 60, c), 0);
    r = vt_http(&srv, "GET", "/v1/flow-steps", VT_READER, NULL, NULL);
    assert_non_null(strstr(r.body, "\"pz\""));
    vt_resp_free(&r);
    r = vt_http(&srv, "POST", "/v1/flow-steps/pz/resume", VT_ADMIN, NULL, NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_int_equal(vt_claim_n(&srv, "pz", 4, 60, c), 1);
}

/* PATCH /v1/flow-steps/{id}: the agent-safety settings (sql/migrations/0013), partial changes keep
 * the rest, bounds and unknown members are refused naming the field, admin only. */
static void test_flow_step_settings(void **state)
{
    (void)state;
    vt_resp r = vt_http(&srv, "PATCH", "/v1/flow-steps/cfg", VT_ADMIN, "{}", NULL);
    assert_int_equal(r.status, 200); /* created with the defaults */
    assert_int_equal((long)vt_num(r.json, "flow_step.incident_min_items"), 5);
    assert_int_equal((long)vt_num(r.json, "flow_step.incident_window_minutes"), 15);
    assert_true(cJSON_IsFalse(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "flow_step"), "pause_on_incident")));
    vt_resp_free(&r);
    r = vt_http(&srv, "PATCH", "/v1/flow-steps/cfg", VT_ADMIN,
                "{\"incident_min_items\": 2, \"strict_evidence\": true}", NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal((long)vt_num(r.json, "flow_step.incident_min_items"), 2);
    vt_resp_free(&r);
    r = vt_http(&srv, "PATCH", "/v1/flow-steps/cfg", VT_ADMIN,
                "{\"incident_window_minutes\": 60, \"pause_on_incident\": true}", NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal((long)vt_num(r.json, "flow_step.incident_min_items"), 2); /* kept */
    assert_int_equal((long)vt_num(r.json, "flow_step.incident_window_minutes"), 60);
    assert_true(cJSON_IsTrue(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "flow_step"), "strict_evidence")));
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM flow_steps WHERE flow_step_id = 'cfg'"
                                 " AND incident_min_items = 2 AND incident_window_minutes = 60"
                                 " AND pause_on_incident AND strict_evidence AND NOT paused"),
                     1);
    static const edge_row refused[] = {
        {"PATCH", "/v1/flow-steps/cfg", VT_ADMIN, "{\"incident_min_items\": 0}", NULL, 400,
         "invalid_field", "incident_min_items"},
        {"PATCH", "/v1/flow-steps/cfg", VT_ADMIN, "{\"incident_window_minutes\": 1441}", NULL, 400,
         "invalid_field", NULL},
        /* pausing has its own endpoint */
        {"PATCH", "/v1/flow-steps/cfg", VT_ADMIN, "{\"paused\": true}", NULL, 400, "invalid_field",
         "paused"},
        {"PATCH", "/v1/flow-steps/cfg", VT_ADMIN, "{\"strict_evidence\": 1}", NULL, 400,
         "invalid_field", NULL},
        {"PATCH", "/v1/flow-steps/cfg", VT_WORKER, "{}", NULL, 403, "forbidden", NULL},
    };
    expect_refusals(refused, sizeof(refused) / sizeof(refused[0]));
    r = vt_http(&srv, "GET", "/v1/flow-steps", VT_READER, NULL, NULL);
    const cJSON *fs = NULL, *found = NULL;
    cJSON_ArrayForEach(fs, cJSON_GetObjectItem(r.json, "flow_steps"))
    {
        if (strcmp(vt_str(fs, "flow_step_id"), "cfg") == 0)
            found = fs;
    }
    assert_non_null(found);
    assert_int_equal((long)vt_num(found, "incident_window_minutes"), 60);
    vt_resp_free(&r);
    r = vt_http(&srv, "POST", "/v1/flow-steps/cfg/pause", VT_ADMIN, NULL, NULL);
    assert_int_equal((long)vt_num(r.json, "flow_step.incident_min_items"), 2); /* same shape */
    vt_resp_free(&r);
}

static void test_claims_order_and_delay(void **state)
{
    (void)state;
    vt_claim c[5];
    int64_t low = vt_register(&srv, "ord", "low", "\"priority\": -1");
    int64_t hi = vt_register(&srv, "ord", "hi", "\"priority\": 9");
    int64_t mid = vt_register(&srv, "ord", "mid", NULL);
    vt_register(&srv, "ord", "later", "\"delay_seconds\": 3600");
    assert_int_equal(vt_claim_n(&srv, "ord", 5, 60, c), 3);
    assert_int_equal(c[0].item_id, hi);
    assert_int_equal(c[1].item_id, mid);
    assert_int_equal(c[2].item_id, low);
    assert_int_equal(c[0].attempt, 1);
    assert_string_not_equal(c[0].token, c[1].token);
}

static void test_claims_heartbeat_keeps_claim(void **state)
{
    (void)state;
    vt_claim c;
    char path[64], body[160];
    vt_register(&srv, "hb", "a", NULL);
    assert_int_equal(vt_claim_n(&srv, "hb", 1, 5, &c), 1);
    snprintf(path, sizeof(path), "/v1/jobs/%lld/heartbeat", (long long)c.job_id);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\", \"lease_seconds\": 5}", c.token);
    for (int i = 0; i < 4; i++) { /* 8 s in all: well past the first 5 s lease */
        sleep_s(2);
        vt_resp r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
        assert_int_equal(r.status, 200);
        assert_non_null(vt_str(r.json, "lease_expires_at"));
        vt_resp_free(&r);
    }
    assert_string_equal(vt_item_state(&srv, c.item_id), "claimed");
    vt_resp r = vt_dispose(&srv, &c, "\"disposition\": \"complete\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    /* a heartbeat on a finished job says so */
    r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
    vt_assert_error(&r, 409, "job_finalized");
    vt_resp_free(&r);
    snprintf(body, sizeof(body), "{\"claim_token\": \"00000000-0000-4000-8000-000000000000\"}");
    r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
    vt_assert_error(&r, 409, "claim_lost");
    vt_resp_free(&r);
    r = vt_http(&srv, "POST", path, VT_WORKER, "{\"claim_token\": \"nope\"}", NULL);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
}

static void test_claims_lease_expiry(void **state)
{
    (void)state;
    vt_claim c, again;
    char path[64], body[160];
    int64_t id = vt_register(&srv, "exp", "a", NULL);
    assert_int_equal(vt_claim_n(&srv, "exp", 1, 5, &c), 1);
    assert_int_equal(c.attempt, 1);
    int n = 0;
    for (int i = 0; i < 40 && n == 0; i++) { /* the sweeper runs every second here */
        sleep_s(0.5);
        n = vt_claim_n(&srv, "exp", 1, 60, &again);
    }
    assert_int_equal(n, 1);
    assert_int_equal(again.item_id, id);
    assert_int_equal(again.attempt, 2);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE id = %lld AND status ="
                                 " 'expired'",
                                 (long long)c.job_id),
                     1);
    assert_int_equal(vt_sql_long("SELECT failures FROM items WHERE id = %lld", (long long)id), 1);
    /* the old holder is fenced off */
    snprintf(path, sizeof(path), "/v1/jobs/%lld/heartbeat", (long long)c.job_id);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\"}", c.token);
    vt_resp r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
    vt_assert_error(&r, 409, "claim_lost");
    vt_resp_free(&r);
    r = vt_dispose(&srv, &c, "\"disposition\": \"complete\"");
    vt_assert_error(&r, 409, "claim_lost");
    vt_resp_free(&r);
    r = vt_dispose(&srv, &again, "\"disposition\": \"complete\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld"
                                 " AND cause = 'lease_expired'",
                                 (long long)id),
                     1);
}

/* The plan `name` gets with plan_cache_mode = force_generic_plan (what a prepared statement
 * settles on), after `settings` (the SET LOCALs its transaction makes; "" for none), must reach
 * items, jobs and transitions only through indexes, or every call would scan a table that only
 * grows (item_sources too). Returns the plan (JSON, malloc'd). */
static char *plan_indexed(const char *settings, const char *name, const char *types,
                          const char *args, vd_sql sql)
{
    char *plan = vt_sql("SET plan_cache_mode = force_generic_plan; %s"
                        " PREPARE %s (%s) AS %s;"
                        " EXPLAIN (FORMAT JSON) EXECUTE %s (%s)",
                        settings, name, types, vd_sql_statements[sql].text, name, args);
    assert_non_null(plan);
    /* items or item_sources (sql/migrations/0023_item_sources.sql) */
    assert_non_null(strstr(plan, "\"Relation Name\": \"item"));
    for (const char *p = strstr(plan, "\"Seq Scan\""); p; p = strstr(p + 1, "\"Seq Scan\"")) {
        const char *rel = strstr(p, "\"Relation Name\": \"");
        assert_non_null(rel);
        rel += strlen("\"Relation Name\": \"");
        if (strncmp(rel, "items\"", 6) == 0 || strncmp(rel, "jobs\"", 5) == 0 ||
            strncmp(rel, "item_sources\"", 13) == 0 || strncmp(rel, "transitions\"", 12) == 0)
            fail_msg("the generic plan of %s scans %.12s: %s", name, rel, plan);
    }
    return plan;
}

static void assert_generic_plan_indexed(const char *name, const char *types, const char *args,
                                        vd_sql sql)
{
    free(plan_indexed("", name, types, args, sql));
}

/* The sweeper's retention runs every pass with index scans only (vd_store_retention): every
 * node reading items must look it up by key (an Index Cond), never walk all of it, whatever
 * the size of the tables (sql/migrations/0027_retention_by_age.sql). */
static void assert_retention_plan(const char *name, vd_sql sql)
{
    char *plan =
        plan_indexed("SET enable_seqscan = off;", name, "integer, integer", "30, 500", sql);
    /* each plan node's own fields come before its children ("Plans"), up to the next node */
    for (const char *n = strstr(plan, "\"Node Type\""); n;) {
        const char *next = strstr(n + 1, "\"Node Type\"");
        size_t len = next ? (size_t)(next - n) : strlen(n);
        char *node = strndup(n, len);
        assert_non_null(node);
        if (strstr(node, "\"Relation Name\": \"items\"") && !strstr(node, "\"ModifyTable\"") &&
            !strstr(node, "\"Index Cond\""))
            fail_msg("%s reads items without a key: %.300s", name, node);
        free(node);
        n = next;
    }
    free(plan);
}

/* The claim runs with a generic plan (vd_sql_exec_generic), and so do the disposition's
 * statements once PostgreSQL has seen them five times: whatever the limit or the number of
 * jobs, they must use indexes. */
static void test_claims_generic_plans_use_indexes(void **state)
{
    (void)state;
    free(vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('plan');"
                " WITH s AS (INSERT INTO item_sources (flow_step_id, source_type,"
                "  item_identifier) SELECT 'plan', 'rss', 'https://plan.example/' || g"
                "  FROM generate_series(1, 5000) g RETURNING id)"
                " INSERT INTO items (id, flow_step_id, max_attempts, max_defers)"
                " SELECT id, 'plan', 5, 3 FROM s;"
                " INSERT INTO jobs (item_id, flow_step_id, worker_id, attempt, status,"
                " claim_token, lease_expires_at, finished_at)"
                " SELECT id, 'plan', 'w', 1, 'completed', gen_random_uuid(), now(), now()"
                " FROM items WHERE flow_step_id = 'plan';"
                " UPDATE jobs SET answer_response = '{}' WHERE flow_step_id = 'plan';"
                " ANALYZE items, item_sources, jobs, transitions"));
    assert_generic_plan_indexed("claim_plan", "text, text, bigint, bigint, text, text, text, text",
                                "'plan', 'w', 1, 300, 'a', '1.0.0', NULL, NULL", VD_SQL_CLAIM);
    assert_generic_plan_indexed("lock_plan", "bigint, text, text", "1, NULL, NULL",
                                VD_SQL_JOB_LOCK);
    assert_generic_plan_indexed(
        "finish_plan",
        "bigint, bigint, text, text, text, text, text, text, integer, integer, float8, boolean,"
        " text, text, text, text, text, boolean, text, boolean, text, text, boolean, text, text",
        "1, 1, 'processed', 'completed', 'complete', 'complete', NULL, NULL, 0, 0, 0, false,"
        " 'w', NULL, NULL, '{}', 'complete', false, NULL, false, NULL, 'Recorded', true, NULL,"
        " NULL",
        VD_SQL_JOB_FINISH);
    assert_generic_plan_indexed("facts_plan", "bigint, text", "1, 'quote'", VD_SQL_REJECT_FACTS);
    assert_generic_plan_indexed("locks_plan", "jsonb", "'[{\"ord\": 0, \"job_id\": 1}]'",
                                VD_SQL_JOBS_LOCK);
    assert_generic_plan_indexed("finishes_plan", "jsonb, text",
                                "'[{\"job_id\": 1, \"item_id\": 1}]', NULL", VD_SQL_JOBS_FINISH);
    assert_retention_plan("rt_plan", VD_SQL_RETENTION_TRANSITIONS);
    assert_retention_plan("rj_plan", VD_SQL_RETENTION_JOBS);
    /* the identity can be found by its digest (item_sources_identity, migrations 0018, 0023); on
     * this small
     * table a scan of the whole table joined costs less, so the plan is asked for without one */
    char *plan =
        vt_sql("SET enable_seqscan = off; SET enable_hashjoin = off;"
               " SET enable_mergejoin = off; PREPARE lookup_plan (text, text, jsonb) AS %s;"
               " EXPLAIN (FORMAT JSON) EXECUTE lookup_plan ('plan', 'rss',"
               " '[\"https://plan.example/7\"]')",
               vd_sql_statements[VD_SQL_ITEMS_LOOKUP].text);
    assert_non_null(plan);
    if (!strstr(plan, "item_sources_identity"))
        fail_msg("items_lookup does not use item_sources_identity: %s", plan);
    free(plan);
}

VT_SERVER_FIXTURE(srv, "VERDICT_SWEEP_INTERVAL_SECONDS=1", NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claims_register_idempotent),
        cmocka_unit_test(test_claims_generic_plans_use_indexes),
        cmocka_unit_test(test_claims_bad_batch_rejected_whole),
        cmocka_unit_test(test_claims_http_edges),
        cmocka_unit_test(test_claims_lookup_get_list),
        cmocka_unit_test(test_claims_idempotent_claim),
        cmocka_unit_test(test_claims_pause_resume),
        cmocka_unit_test(test_flow_step_settings),
        cmocka_unit_test(test_claims_order_and_delay),
        cmocka_unit_test(test_claims_heartbeat_keeps_claim),
        cmocka_unit_test(test_claims_lease_expiry),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
