/* test_mcp.c - the MCP endpoint's protocol edges over raw HTTP against the real server (the
 * SDK-driven happy paths are tests/mcp/mcp.mjs): the claim header (missing, malformed, another
 * job's token), auth, Origin, MCP-Protocol-Version, malformed JSON and JSON-RPC, unknown
 * methods, invalid params, notifications (202, no body), batches per protocol version,
 * version negotiation, GET/DELETE (405). Every refusal is a JSON-RPC error; none is a 5xx. */
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
static vt_claim claim_a, claim_b;
static char claim_hdr[160];

/* POST /mcp with the worker key, the given Verdict-Claim header (NULL: none) and more headers
 * (NULL-terminated list, may be NULL). */
static vt_resp mcp_post(const char *claim, const char *body, const char *extra1, const char *extra2)
{
    char h[200];
    const char *hs[4] = {NULL, NULL, NULL, NULL};
    int n = 0;
    if (claim) {
        snprintf(h, sizeof(h), "Verdict-Claim: %s", claim);
        hs[n++] = h;
    }
    if (extra1)
        hs[n++] = extra1;
    if (extra2)
        hs[n++] = extra2;
    vt_resp r = vt_http(&srv, "POST", "/mcp", VT_WORKER, body, hs);
    if (r.status >= 500)
        fail_msg("POST /mcp answered %ld: %s", r.status, r.body);
    return r;
}

/* A JSON-RPC error with the status and code; id_json the expected id ("null": none). */
static void assert_rpc_error(const vt_resp *r, long status, int code, const char *id_json)
{
    if (r->status != status || !r->json)
        fail_msg("want %ld, got %ld: %s", status, r->status, r->body);
    assert_string_equal(vt_str(r->json, "jsonrpc"), "2.0");
    assert_int_equal((int)vt_num(r->json, "error.code"), code);
    assert_non_null(vt_str(r->json, "error.message"));
    const cJSON *id = cJSON_GetObjectItem(r->json, "id");
    if (strcmp(id_json, "null") == 0) {
        assert_null(id); /* MCP: an error with no id, never "id": null */
    } else {
        char *printed = cJSON_PrintUnformatted(id);
        assert_string_equal(printed, id_json);
        free(printed);
    }
    assert_non_null(strstr(r->content_type, "application/json"));
}

/* A transport refusal: JSON-RPC error -32000 (or -32700) whose data is the verdict envelope. */
static void assert_refusal(const vt_resp *r, long status, int code, const char *error,
                           const char *field)
{
    assert_rpc_error(r, status, code, "null");
    assert_string_equal(vt_str(r->json, "error.data.error"), error);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r->json, "error"), "data"), "success")));
    if (field)
        assert_string_equal(vt_str(r->json, "error.data.field"), field);
}

static const char *ping = "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}";

static void test_mcp_claim_header(void **state)
{
    (void)state;
    char hdr[200];
    vt_resp r = mcp_post(NULL, ping, NULL, NULL);
    assert_refusal(&r, 400, -32000, "missing_field", "Verdict-Claim");
    vt_resp_free(&r);
    static const struct {
        const char *pre;
        bool token;
        const char *post;
    } bad[] = {{"abc", false, ""},
               {"12", false, ""},
               {"0:", true, ""},
               {"-1:", true, ""},
               {"1234567890123456789:", true, ""},
               {"1:not-a-uuid", false, ""},
               {"", true, ""},
               {"1::", true, ""},
               {"1:", true, ":"},
               {"01:", true, ""},
               {"9223372036854775808:", true, ""},
               {"18446744073709551616:", true, ""},
               {"99999999999999999999999999:", true, ""},
               {"+1:", true, ""}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(hdr, sizeof(hdr), "%s%s%s", bad[i].pre, bad[i].token ? claim_a.token : "",
                 bad[i].post);
        r = mcp_post(hdr, ping, NULL, NULL);
        if (r.status != 400)
            fail_msg("Verdict-Claim '%s': %ld %s", hdr, r.status, r.body);
        assert_refusal(&r, 400, -32000, "invalid_field", "Verdict-Claim");
        vt_resp_free(&r);
    }
    /* another job's token, and a job that does not exist: 403, nothing applied */
    snprintf(hdr, sizeof(hdr), "%lld:%s", (long long)claim_a.job_id, claim_b.token);
    r = mcp_post(hdr,
                 "{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\": \"tools/call\", \"params\":"
                 " {\"name\": \"complete_item\"}}",
                 NULL, NULL);
    assert_refusal(&r, 403, -32000, "claim_mismatch", "Verdict-Claim");
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, claim_a.item_id), "claimed");
    assert_string_equal(vt_item_state(&srv, claim_b.item_id), "claimed");
    snprintf(hdr, sizeof(hdr), "987654321:%s", claim_a.token);
    r = mcp_post(hdr, ping, NULL, NULL);
    assert_refusal(&r, 403, -32000, "claim_mismatch", "Verdict-Claim");
    vt_resp_free(&r);
    r = mcp_post(claim_hdr, ping, NULL, NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
}

static void test_mcp_auth_origin_version(void **state)
{
    (void)state;
    char h[200];
    const char *hs[] = {h, NULL};
    snprintf(h, sizeof(h), "Verdict-Claim: %s", claim_hdr);
    vt_resp r = vt_http(&srv, "POST", "/mcp", NULL, ping, hs);
    assert_refusal(&r, 401, -32000, "unauthorized", NULL);
    vt_resp_free(&r);
    r = vt_http(&srv, "POST", "/mcp", VT_READER, ping, hs);
    assert_refusal(&r, 403, -32000, "forbidden", NULL);
    vt_resp_free(&r);
    r = mcp_post(claim_hdr, ping, "Origin: http://evil.example", NULL);
    assert_refusal(&r, 403, -32000, "origin_forbidden", "Origin");
    vt_resp_free(&r);
    snprintf(h, sizeof(h), "Origin: %s", srv.base);
    r = mcp_post(claim_hdr, ping, h, NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    const char *versions[] = {
        "MCP-Protocol-Version: 1999-01-01", "MCP-Protocol-Version: 2099-01-01",
        "MCP-Protocol-Version: not-a-version", "MCP-Protocol-Version: 2024-11-05"};
    for (size_t i = 0; i < 4; i++) {
        r = mcp_post(claim_hdr, ping, versions[i], NULL);
        assert_refusal(&r, 400, -32000, "invalid_field", "MCP-Protocol-Version");
        vt_resp_free(&r);
    }
    const char *good[] = {"MCP-Protocol-Version: 2025-03-26", "MCP-Protocol-Version: 2025-06-18",
                          "MCP-Protocol-Version: 2025-11-25"};
    for (size_t i = 0; i < 3; i++) {
        r = mcp_post(claim_hdr, ping, good[i], NULL);
        assert_int_equal(r.status, 200);
        assert_non_null(cJSON_GetObjectItem(r.json, "result"));
        vt_resp_free(&r);
    }
    r = mcp_post(claim_hdr, "hello", "Content-Type: text/plain", NULL);
    assert_refusal(&r, 415, -32000, "unsupported_media_type", NULL);
    vt_resp_free(&r);
}

static void test_mcp_malformed_messages(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        const char *id; /* the id the error carries, "null" for none */
    } invalid[] = {
        {"{\"jsonrpc\": \"1.0\", \"id\": 1, \"method\": \"ping\"}", "1"},
        {"{\"id\": \"a\", \"method\": \"ping\"}", "\"a\""},
        {"{\"jsonrpc\": \"2.0\", \"id\": null, \"method\": \"ping\"}", "null"},
        {"{\"jsonrpc\": \"2.0\", \"id\": 1.5, \"method\": \"ping\"}", "null"},
        {"{\"jsonrpc\": \"2.0\", \"id\": true, \"method\": \"ping\"}", "null"},
        {"{\"jsonrpc\": \"2.0\", \"id\": {}, \"method\": \"ping\"}", "null"},
        {"{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": 7}", "3"},
        {"{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"\"}", "3"},
        {"{\"jsonrpc\": \"2.0\", \"id\": 4}", "4"},
        {"{\"jsonrpc\": \"2.0\"}", "null"},
        {"42", "null"},
        {"\"ping\"", "null"},
    };
    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
        vt_resp r = mcp_post(claim_hdr, invalid[i].body, NULL, NULL);
        if (r.status != 400)
            fail_msg("%s: %ld %s", invalid[i].body, r.status, r.body);
        assert_rpc_error(&r, 400, -32600, invalid[i].id);
        vt_resp_free(&r);
    }
    const char *unparsable[] = {"{\"jsonrpc\": \"2.0\", \"id\": 1,", "{} {}", "{\"a\": NaN}",
                                "\xff"};
    for (size_t i = 0; i < sizeof(unparsable) / sizeof(unparsable[0]); i++) {
        vt_resp r = mcp_post(claim_hdr, unparsable[i], NULL, NULL);
        assert_refusal(&r, 400, -32700, "invalid_json", NULL);
        vt_resp_free(&r);
    }
    /* an empty body is no message either */
    char h[200];
    const char *hs[] = {h, "Content-Type: application/json", NULL};
    snprintf(h, sizeof(h), "Verdict-Claim: %s", claim_hdr);
    vt_resp r = vt_http(&srv, "POST", "/mcp", VT_WORKER, NULL, hs);
    assert_refusal(&r, 400, -32700, "invalid_json", NULL);
    vt_resp_free(&r);
}

static void test_mcp_methods_and_params(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        int code;
        const char *id;
    } cases[] = {
        {"{\"jsonrpc\": \"2.0\", \"id\": \"m\", \"method\": \"prompts/list\"}", -32601, "\"m\""},
        {"{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"no/such\", \"params\": {}}", -32601, "2"},
        {"{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"tools/list\", \"params\": [1]}", -32602,
         "3"},
        {"{\"jsonrpc\": \"2.0\", \"id\": 4, \"method\": \"tools/call\", \"params\": {}}", -32602,
         "4"},
        {"{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": \"tools/call\", \"params\": {\"name\": 5}}",
         -32602, "5"},
        {"{\"jsonrpc\": \"2.0\", \"id\": 6, \"method\": \"tools/call\", \"params\":"
         " {\"name\": \"skip_item\"}}",
         -32602, "6"},
        {"{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"tools/call\", \"params\":"
         " {\"name\": \"complete_item\", \"arguments\": [1]}}",
         -32602, "7"},
        {"{\"jsonrpc\": \"2.0\", \"id\": 8, \"method\": \"resources/read\", \"params\": {}}",
         -32602, "8"},
        {"{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\": \"resources/read\", \"params\":"
         " {\"uri\": \"verdict://nope\"}}",
         -32002, "9"},
        {"{\"jsonrpc\": \"2.0\", \"id\": 10, \"method\": \"initialize\", \"params\": {}}", -32602,
         "10"},
        {"{\"jsonrpc\": \"2.0\", \"id\": 11, \"method\": \"initialize\"}", -32602, "11"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        vt_resp r = mcp_post(claim_hdr, cases[i].body, NULL, NULL);
        if (r.status != 200)
            fail_msg("%s: %ld %s", cases[i].body, r.status, r.body);
        assert_rpc_error(&r, 200, cases[i].code, cases[i].id);
        vt_resp_free(&r);
    }
    /* none of that touched the claim */
    assert_string_equal(vt_item_state(&srv, claim_a.item_id), "claimed");
}

static void test_mcp_notifications_accepted(void **state)
{
    (void)state;
    const char *bodies[] = {
        "{\"jsonrpc\": \"2.0\", \"method\": \"notifications/initialized\"}",
        "{\"jsonrpc\": \"2.0\", \"method\": \"notifications/cancelled\", \"params\":"
        " {\"requestId\": 1}}",
        "{\"jsonrpc\": \"2.0\", \"method\": \"no/such/notification\"}",
        "{\"jsonrpc\": \"2.0\", \"id\": 5, \"result\": {}}", /* a response from the client */
    };
    for (size_t i = 0; i < 4; i++) {
        vt_resp r = mcp_post(claim_hdr, bodies[i], NULL, NULL);
        assert_int_equal(r.status, 202);
        assert_string_equal(r.body, "");
        assert_string_equal(r.content_type, "");
        vt_resp_free(&r);
    }
}

static void test_mcp_batches(void **state)
{
    (void)state;
    const char *batch = "[{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"},"
                        " {\"jsonrpc\": \"2.0\", \"method\": \"notifications/initialized\"},"
                        " {\"jsonrpc\": \"2.0\", \"id\": \"b\", \"method\": \"nope\"},"
                        " {\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"initialize\","
                        " \"params\": {\"protocolVersion\": \"2025-03-26\"}}, 7]";
    /* 2025-06-18 and later have no batches */
    const char *later[] = {"MCP-Protocol-Version: 2025-06-18", "MCP-Protocol-Version: 2025-11-25"};
    for (size_t i = 0; i < 2; i++) {
        vt_resp r = mcp_post(claim_hdr, batch, later[i], NULL);
        assert_rpc_error(&r, 400, -32600, "null");
        vt_resp_free(&r);
    }
    /* 2025-03-26 (also assumed without the header) must take them: one answer per request */
    const char *v0326[] = {"MCP-Protocol-Version: 2025-03-26", NULL};
    for (size_t i = 0; i < 2; i++) {
        vt_resp r = mcp_post(claim_hdr, batch, v0326[i], NULL);
        assert_int_equal(r.status, 200);
        assert_true(cJSON_IsArray(r.json));
        assert_int_equal(cJSON_GetArraySize(r.json), 4);
        cJSON *a0 = cJSON_GetArrayItem(r.json, 0), *a1 = cJSON_GetArrayItem(r.json, 1);
        cJSON *a2 = cJSON_GetArrayItem(r.json, 2), *a3 = cJSON_GetArrayItem(r.json, 3);
        assert_true(vt_num(a0, "id") == 1 && cJSON_GetObjectItem(a0, "result"));
        assert_string_equal(vt_str(a1, "id"), "b");
        assert_int_equal((int)vt_num(a1, "error.code"), -32601);
        assert_int_equal((int)vt_num(a2, "error.code"), -32600); /* initialize is never batched */
        assert_true(vt_num(a2, "id") == 3);
        assert_int_equal((int)vt_num(a3, "error.code"), -32600);
        assert_null(cJSON_GetObjectItem(a3, "id"));
        vt_resp_free(&r);
    }
    vt_resp r = mcp_post(claim_hdr, "[{\"jsonrpc\": \"2.0\", \"method\": \"notifications/x\"}]",
                         NULL, NULL);
    assert_int_equal(r.status, 202);
    assert_string_equal(r.body, "");
    vt_resp_free(&r);
    r = mcp_post(claim_hdr, "[]", NULL, NULL);
    assert_rpc_error(&r, 400, -32600, "null");
    vt_resp_free(&r);
}

static void test_mcp_initialize_negotiates(void **state)
{
    (void)state;
    static const struct {
        const char *asked, *answered;
    } cases[] = {{"2025-03-26", "2025-03-26"}, {"2025-06-18", "2025-06-18"},
                 {"2025-11-25", "2025-11-25"}, {"2024-11-05", "2025-11-25"},
                 {"2099-01-01", "2025-11-25"}, {"x", "2025-11-25"}};
    char body[300];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"initialize\", \"params\":"
                 " {\"protocolVersion\": \"%s\", \"capabilities\": {}, \"clientInfo\":"
                 " {\"name\": \"t\", \"version\": \"1\"}}}",
                 cases[i].asked);
        vt_resp r = mcp_post(claim_hdr, body, NULL, NULL);
        assert_int_equal(r.status, 200);
        assert_string_equal(vt_str(r.json, "result.protocolVersion"), cases[i].answered);
        assert_string_equal(vt_str(r.json, "result.serverInfo.name"), "verdict");
        assert_non_null(cJSON_GetObjectItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "result"), "capabilities"), "tools"));
        assert_null(strstr(r.body, claim_a.token)); /* the token never reaches the model */
        vt_resp_free(&r);
    }
}

static void test_mcp_get_and_delete(void **state)
{
    (void)state;
    const char *methods[] = {"GET", "DELETE"};
    const char *hs[] = {"Accept: text/event-stream", NULL};
    for (size_t i = 0; i < 2; i++) {
        vt_resp r = vt_http(&srv, methods[i], "/mcp", VT_WORKER, NULL, hs);
        assert_refusal(&r, 405, -32000, "method_not_allowed", NULL);
        vt_resp_free(&r);
    }
    vt_resp r = vt_http(&srv, "PUT", "/mcp", VT_WORKER, "{}", NULL);
    vt_assert_error(&r, 405, "method_not_allowed");
    vt_resp_free(&r);
}

/* Two items claimed before the tests, for every test to use (claim_hdr names claim_a). */
static void claim_two(void)
{
    vt_register(&srv, "mcp", "a", NULL);
    vt_register(&srv, "mcp", "b", NULL);
    claim_a = vt_claim1(&srv, "mcp");
    claim_b = vt_claim1(&srv, "mcp");
    snprintf(claim_hdr, sizeof(claim_hdr), "%lld:%s", (long long)claim_a.job_id, claim_a.token);
}

VT_FIXTURE(.srv = {&srv}, .ready = claim_two)

/* The disposition tools declare `usage` (what the item's model calls used) and pass it on: it is
 * kept on the job, as a disposition over HTTP keeps it. */
static void test_mcp_usage(void **state)
{
    (void)state;
    vt_resp r = mcp_post(claim_hdr, "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/list\"}",
                         NULL, NULL);
    assert_int_equal(r.status, 200);
    const cJSON *tools = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "result"), "tools");
    int with = 0;
    for (const cJSON *t = tools ? tools->child : NULL; t; t = t->next)
        with += vt_str(t, "inputSchema.properties.usage.type") != NULL;
    assert_true(with >= 4); /* complete, reject, defer, fail */
    vt_resp_free(&r);
    r = mcp_post(claim_hdr,
                 "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"tools/call\", \"params\":"
                 " {\"name\": \"complete_item\", \"arguments\": {\"usage\": {\"input_tokens\": 70,"
                 " \"output_tokens\": 7, \"model\": \"m\"}}}}",
                 NULL, NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, claim_a.item_id), "processed");
    assert_int_equal(vt_sql_long("SELECT usage_input_tokens * 1000 + usage_output_tokens FROM jobs"
                                 " WHERE id = %lld AND usage_model = 'm'",
                                 (long long)claim_a.job_id),
                     70007);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mcp_claim_header),
        cmocka_unit_test(test_mcp_auth_origin_version),
        cmocka_unit_test(test_mcp_malformed_messages),
        cmocka_unit_test(test_mcp_methods_and_params),
        cmocka_unit_test(test_mcp_notifications_accepted),
        cmocka_unit_test(test_mcp_batches),
        cmocka_unit_test(test_mcp_initialize_negotiates),
        cmocka_unit_test(test_mcp_get_and_delete),
        cmocka_unit_test(test_mcp_usage),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
