/* test_secrets.c - hostile input and secrets over HTTP against PostgreSQL: strict JSON on every
 * POST route, ids beyond 2^53, credentials redacted wherever text is stored (tool errors and args,
 * reasons, engine_data at any depth, session result_text, logs), finished jobs keeping a
 * digest instead of the request, the required-tool rule for complete, provider refusals
 * classified deterministic, WWW-Authenticate on 401, verdict_db_up during an outage, and the
 * start-up warning for keys in clear off loopback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "http/http_internal.h"
#include "vt.h"
#include "vt_api.h"

static vt_server srv;

typedef struct bad_body {
    const char *body;
    const char *field; /* "" when no field applies */
} bad_body;

/* Bodies PHP's json_decode, Node's JSON.parse or jsonb reject or read differently. */
static const bad_body bad_bodies[] = {
    {"{\"limit\":01}", "limit"},
    {"{\"a\":-01}", "a"},
    {"{\"a\":00}", "a"},
    {"{\"s\":\"tab\there\"}", "s"},
    {"{\"s\":\"new\nline\"}", "s"},
    {"{\"o\":{\"s\":\"\x01\"}}", "o.s"},
    {"{\"a\":1,\"a\":2}", "a"},
    {"{\"claim_token\":\"x\",\"claim_token\":\"y\"}", "claim_token"},
    {"{\"p\":{\"k\":1,\"j\":2,\"k\":3}}", "p.k"},
    {"{\"items\":[{\"payload\":{\"x\":1,\"x\":1}}]}", "items[0].payload.x"},
    {"{\"a\":1,\"\\u0061\":2}", "a"},
    {"{\"n\":1e999}", "n"},
    {"{\"n\":-1e999}", "n"},
    {"{\"l\":[1,2e400]}", "l[1]"},
    {"{\"s\":\"\\u0000\"}", "s"},
    {"{\"s\":\"\\ud800\"}", "s"},
    {"{\"s\":\"\\q\"}", "s"},
    {"{\"a\":NaN}", "a"},
    {"{\"a\":Infinity}", "a"},
    {"{\"a\":.5}", "a"},
    {"{\"a\":1.}", "a"},
    {"{\"a\":+1}", "a"},
    {"{\"a\":tru}", "a"},
    {"{\"a\" 1}", "a"},
    {"{\"a\":\"unterminated}", "a"},
    {"{\"a\":1,}", ""},
    {"[1,2,]", ""},
    {"{'a':1}", ""},
    {"{a:1}", ""},
    {"{\"a\":1} x", ""},
};

/* Every POST route of the route table (so a route added later is covered too). */
static void test_secrets_strict_json_every_post_route(void **state)
{
    (void)state;
    size_t nb = sizeof(bad_bodies) / sizeof(bad_bodies[0]), routes = 0;
    assert_true(nb >= 25);
    for (size_t r = 0; r < vd_route_count; r++) {
        const vd_route *rt = &vd_routes[r];
        char path[256];
        size_t o = 0;
        if (strcmp(rt->method, "POST") != 0)
            continue;
        routes++;
        for (const char *p = rt->pattern; *p && o + 8 < sizeof(path);) {
            if (*p == '{') {
                o += (size_t)snprintf(path + o, sizeof(path) - o, "1");
                while (*p && *p != '}')
                    p++;
                p += *p == '}';
            } else {
                path[o++] = *p++;
            }
        }
        path[o] = '\0';
        for (size_t i = 0; i < nb; i++) {
            vt_resp resp = vt_http(&srv, "POST", path, VT_ADMIN, bad_bodies[i].body, NULL);
            /* the MCP endpoint answers JSON-RPC: the envelope is its error's data */
            const cJSON *env =
                resp.json && cJSON_GetObjectItem(resp.json, "jsonrpc")
                    ? cJSON_GetObjectItem(cJSON_GetObjectItem(resp.json, "error"), "data")
                    : resp.json;
            const char *code = env ? vt_str(env, "error") : NULL;
            if (resp.status != 400 || !code || strcmp(code, "invalid_json") != 0)
                fail_msg("POST %s %s: %ld %s", path, bad_bodies[i].body, resp.status, resp.body);
            const char *field = vt_str(env, "field");
            if (strcmp(field ? field : "", bad_bodies[i].field) != 0)
                fail_msg("POST %s %s: field '%s', want '%s'", path, bad_bodies[i].body,
                         field ? field : "", bad_bodies[i].field);
            vt_resp_free(&resp);
        }
    }
    assert_true(routes >= 13);
}

/* Integers beyond 2^53 in id fields are refused, never rounded to another job. */
static void test_secrets_ids_beyond_2_53(void **state)
{
    (void)state;
    static const char *ids[] = {"9007199254740992", "9007199254740993", "1e300"};
    for (size_t i = 0; i < 3; i++) {
        char body[300];
        snprintf(body, sizeof(body),
                 "{\"dispositions\":[{\"job_id\":%s,\"claim_token\":"
                 "\"6f1c2a9e-8d3b-4c57-9e1a-0b2c3d4e5f60\",\"disposition\":\"complete\"}]}",
                 ids[i]);
        vt_resp r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
        vt_assert_error(&r, 400, "invalid_field");
        assert_string_equal(vt_str(r.json, "field"), "dispositions[0].job_id");
        vt_resp_free(&r);
    }
    vt_resp r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER,
                        "{\"dispositions\":[{\"job_id\":9007199254740991,\"claim_token\":"
                        "\"6f1c2a9e-8d3b-4c57-9e1a-0b2c3d4e5f60\",\"disposition\":\"complete\"}]}",
                        NULL);
    assert_int_equal(r.status, 200); /* 2^53 - 1 is exact: read, and not found */
    assert_int_equal((long)vt_num(r.json, "results.0.status"), 404);
    vt_resp_free(&r);
}

static vt_resp tool_failure(const vt_claim *c, const char *members)
{
    char path[80], body[4096];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/tool-failures", (long long)c->job_id);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\", %s}", c->token, members);
    return vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
}

/* Whether any stored text or the log holds s. */
static void assert_nowhere(const char *s)
{
    char cmd[600];
    long n = vt_sql_long(
        "SELECT (SELECT count(*) FROM tool_failures WHERE error LIKE '%%%s%%' OR args LIKE"
        " '%%%s%%') + (SELECT count(*) FROM audit WHERE reason LIKE '%%%s%%')"
        " + (SELECT count(*) FROM items WHERE last_reason LIKE '%%%s%%')"
        " + (SELECT count(*) FROM jobs WHERE reason LIKE '%%%s%%' OR engine_data::text LIKE"
        " '%%%s%%' OR adjudication::text LIKE '%%%s%%')"
        " + (SELECT count(*) FROM jobs WHERE answer_response LIKE '%%%s%%'"
        "    OR answer_head LIKE '%%%s%%' OR answer_tail LIKE '%%%s%%')",
        s, s, s, s, s, s, s, s, s, s);
    if (n != 0)
        fail_msg("'%s' is stored in clear (%ld rows)", s, n);
    snprintf(cmd, sizeof(cmd), "grep -q -F -e '%s' %s", s, srv.log_path);
    if (system(cmd) == 0)
        fail_msg("'%s' is in the log", s);
}

static void test_secrets_redacted_everywhere_stored(void **state)
{
    (void)state;
    vt_register(&srv, "red", "a", NULL);
    vt_claim c = vt_claim1(&srv, "red");
    const char *tf =
        "\"tool\": \"wp_upsert\", \"error\": \"403 with client_secret=CS-one1 and X-API-Key:"
        " XK-two2\", \"args\": {\"q\": \"cats\", \"auth\": {\"password\": \"PW-three3\"},"
        " \"url\": \"https://bob:UP-four4@example.com/x\", \"list\": [{\"api_key\": 7}]}";
    for (int i = 1; i <= 2; i++) {
        vt_resp r = tool_failure(&c, tf);
        assert_int_equal(r.status, 200);
        /* redacting the args the same way each time keeps counting the same call */
        assert_int_equal((long)vt_num(r.json, "repeat_count"), i);
        vt_resp_free(&r);
    }
    vt_resp r =
        vt_dispose(&srv, &c,
                   "\"disposition\": \"fail\", \"retryable\": false, \"error\": \"upsert refused:"
                   " refresh_token=RT-five5 Authorization: Basic dXNlcjpwYXNzd29yZA==\","
                   " \"engine_data\": {\"tokens\": 1234, \"deep\": {\"deeper\": {\"access_token\":"
                   " \"AT-six6\", \"note\": \"key sk-proj-AbCdEfGhIjKlMnOpQrStUv7\"}},"
                   " \"list\": [{\"secret\": {\"x\": \"SX-eight8\"}}]}");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    /* the releases' reasons (the holder's and an admin's), a resolution's and a requeue's */
    char path[80];
    vt_register(&srv, "red", "b", NULL);
    vt_register(&srv, "red", "c", NULL);
    vt_claim h = vt_claim1(&srv, "red"), a = vt_claim1(&srv, "red");
    char body[200];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/release", (long long)h.job_id);
    snprintf(body, sizeof(body), "{\"claim_token\":\"%s\",\"reason\":\"token=RL-ten10\"}", h.token);
    r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/items/%lld/release", (long long)a.item_id);
    r = vt_http(&srv, "POST", path, VT_ADMIN, "{\"reason\":\"api_key=AR-eleven11\"}", NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    /* an admin's resolution of the failed item is redacted too */
    snprintf(path, sizeof(path), "/v1/items/%lld/resolve", (long long)c.item_id);
    r = vt_http(&srv, "POST", path, VT_ADMIN,
                "{\"outcome\":\"processed\",\"reason\":\"published by hand, secret=RS-13th\"}",
                NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/items/%lld/requeue", (long long)c.item_id);
    r = vt_http(&srv, "POST", path, VT_ADMIN, "{\"reason\":\"password=RQ-twelve12\"}", NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    static const char *secrets[] = {"CS-one1",     "XK-two2",
                                    "PW-three3",   "UP-four4",
                                    "RT-five5",    "dXNlcjpwYXNzd29yZA",
                                    "AT-six6",     "AbCdEfGhIjKlMnOpQrStUv7",
                                    "SX-eight8",   "RL-ten10",
                                    "AR-eleven11", "RQ-twelve12",
                                    "RS-13th"};
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        assert_nowhere(secrets[i]);
    /* ordinary members stay readable */
    assert_int_equal(vt_sql_long("SELECT (engine_data->>'tokens')::int FROM jobs WHERE id = %lld",
                                 (long long)c.job_id),
                     1234);
    char *args =
        vt_sql("SELECT args FROM tool_failures WHERE job_id = %lld LIMIT 1", (long long)c.job_id);
    assert_non_null(strstr(args, "\"q\":\"cats\""));
    if (!strstr(args, "\"auth\":\"[REDACTED]\"")) /* a secret key: all of it */
        fail_msg("args: %s", args);
    free(args);
}

/* The seven shapes a reader key could read, each secret marked SEKRIT, beside
 * text that must stay (tokens_used: 40, keyword: cats). At most 500 bytes: it fits evidence. */
#define SHAPES                                                                                     \
    "password: SEKRIT1a tokens_used: 40\n"                                                         \
    "run --password SEKRIT2b now\n"                                                                \
    "Cookie: sessionid=SEKRIT3c; theme=SEKRIT3d\n"                                                 \
    "cb?next=%2Fx%3Faccess_token%3DSEKRIT4e%26page%3D2\n"                                          \
    "PRIVATE-TOKEN: SEKRIT5f\n"                                                                    \
    "https://a.blob.core.windows.net/c?sv=2022-11-02&sig=SEKRIT6g%2Bh%3D&se=2030\n"                \
    "{\"args\": {\"pwd\": \"SEKRIT7i\"}} keyword: cats"

/* POST path with body (a cJSON tree, freed here) as `key`; asserts a 2xx. */
static void post_ok(const char *path, const char *key, cJSON *body)
{
    char *text = cJSON_PrintUnformatted(body);
    vt_resp r = vt_http(&srv, "POST", path, key, text, NULL);
    if (r.status < 200 || r.status > 299)
        fail_msg("POST %s: %ld %s", path, r.status, r.body);
    vt_resp_free(&r);
    free(text);
    cJSON_Delete(body);
}

static cJSON *claim_body(const vt_claim *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "claim_token", c->token);
    return o;
}

/* {"note": SHAPES, "pwd": "SEKRIT...", "args": {"pwd": "SEKRIT..."}}: a tree with the shapes
 * as a value and secrets by name at two depths. */
static cJSON *shaped_tree(const char *tag)
{
    char v[40];
    cJSON *o = cJSON_CreateObject(), *args = cJSON_AddObjectToObject(o, "args");
    cJSON_AddStringToObject(o, "note", SHAPES);
    snprintf(v, sizeof(v), "SEKRIT-%s-pwd", tag);
    cJSON_AddStringToObject(o, "pwd", v);
    snprintf(v, sizeof(v), "SEKRIT-%s-args", tag);
    cJSON_AddStringToObject(args, "pwd", v);
    cJSON_AddStringToObject(args, "keyword", "cats");
    return o;
}

/* Every place the server stores caller text, fed the shapes: checkpoints, tool errors and
 * args, engine_data, reasons (defer, fail, worker and admin releases, requeue, resolve),
 * evidence and a session's result_text. Read back with a reader key through every GET that
 * serves them: no secret anywhere, the neighbouring text kept. */
static void test_secrets_every_stored_text_reader(void **state)
{
    (void)state;
    char path[120];
    for (int i = 0; i < 6; i++) {
        char ident[8];
        snprintf(ident, sizeof(ident), "s%d", i);
        vt_register(&srv, "shape", ident, NULL);
    }
    vt_claim c[6];
    for (int i = 0; i < 6; i++)
        c[i] = vt_claim1(&srv, "shape");
    /* a checkpoint, a tool failure, then a deferral with engine_data */
    cJSON *b = claim_body(&c[0]);
    cJSON_AddItemToObject(b, "checkpoint", shaped_tree("cp"));
    snprintf(path, sizeof(path), "/v1/jobs/%lld/heartbeat", (long long)c[0].job_id);
    post_ok(path, VT_WORKER, b);
    b = claim_body(&c[0]);
    cJSON_AddStringToObject(b, "tool", "wp_upsert");
    cJSON_AddStringToObject(b, "error", SHAPES);
    cJSON_AddItemToObject(b, "args", shaped_tree("tf"));
    snprintf(path, sizeof(path), "/v1/jobs/%lld/tool-failures", (long long)c[0].job_id);
    post_ok(path, VT_WORKER, b);
    b = claim_body(&c[0]);
    cJSON_AddStringToObject(b, "disposition", "defer_item");
    cJSON_AddStringToObject(b, "reason_code", "tool_error");
    cJSON_AddStringToObject(b, "reason", SHAPES);
    cJSON_AddItemToObject(b, "engine_data", shaped_tree("ed"));
    snprintf(path, sizeof(path), "/v1/jobs/%lld/disposition", (long long)c[0].job_id);
    post_ok(path, VT_WORKER, b);
    /* a failure's error, a completion's evidence */
    b = claim_body(&c[1]);
    cJSON_AddStringToObject(b, "disposition", "fail");
    cJSON_AddBoolToObject(b, "retryable", false);
    cJSON_AddStringToObject(b, "error", SHAPES);
    snprintf(path, sizeof(path), "/v1/jobs/%lld/disposition", (long long)c[1].job_id);
    post_ok(path, VT_WORKER, b);
    b = claim_body(&c[2]);
    cJSON_AddStringToObject(b, "disposition", "complete");
    cJSON_AddStringToObject(b, "evidence", SHAPES);
    snprintf(path, sizeof(path), "/v1/jobs/%lld/disposition", (long long)c[2].job_id);
    post_ok(path, VT_WORKER, b);
    /* a session whose result carries the shapes */
    cJSON *line = cJSON_CreateObject(), *sess = cJSON_CreateObject();
    cJSON_AddStringToObject(line, "type", "result");
    cJSON_AddStringToObject(line, "subtype", "success");
    cJSON_AddBoolToObject(line, "is_error", false);
    cJSON_AddStringToObject(line, "result", SHAPES);
    char *stdout_text = cJSON_PrintUnformatted(line);
    cJSON_Delete(line);
    cJSON_AddNumberToObject(sess, "returncode", 0);
    cJSON_AddStringToObject(sess, "stdout", stdout_text);
    free(stdout_text);
    b = claim_body(&c[3]);
    cJSON_AddItemToObject(b, "session", sess);
    snprintf(path, sizeof(path), "/v1/jobs/%lld/session-outcome", (long long)c[3].job_id);
    post_ok(path, VT_WORKER, b);
    /* the holder's release, an admin's release, requeue and resolution */
    b = claim_body(&c[4]);
    cJSON_AddStringToObject(b, "reason", SHAPES);
    snprintf(path, sizeof(path), "/v1/jobs/%lld/release", (long long)c[4].job_id);
    post_ok(path, VT_WORKER, b);
    b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "reason", SHAPES);
    snprintf(path, sizeof(path), "/v1/items/%lld/release", (long long)c[5].item_id);
    post_ok(path, VT_ADMIN, b);
    b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "reason", SHAPES);
    snprintf(path, sizeof(path), "/v1/items/%lld/requeue", (long long)c[0].item_id);
    post_ok(path, VT_ADMIN, b);
    b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "outcome", "processed");
    cJSON_AddStringToObject(b, "reason", SHAPES);
    snprintf(path, sizeof(path), "/v1/items/%lld/resolve", (long long)c[1].item_id);
    post_ok(path, VT_ADMIN, b);
    /* read back with a reader key */
    int kept = 0, reads = 0;
    for (int i = 0; i < 6 * 3 + 4; i++) {
        if (i < 18) {
            int k = i / 3;
            long long id = i % 3 == 0 ? (long long)c[k].item_id : (long long)c[k].job_id;
            snprintf(path, sizeof(path),
                     i % 3 == 0   ? "/v1/items/%lld"
                     : i % 3 == 1 ? "/v1/jobs/%lld"
                                  : "/v1/jobs/%lld/briefing",
                     id);
        } else {
            static const char *lists[] = {
                "/v1/transitions?limit=500", "/v1/items?flow_step_id=shape&limit=500",
                "/v1/jobs?flow_step_id=shape&limit=500", "/v1/tool-incidents"};
            snprintf(path, sizeof(path), "%s", lists[i - 18]);
        }
        vt_resp r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
        if (r.status != 200)
            fail_msg("GET %s: %ld %s", path, r.status, r.body);
        if (strstr(r.body, "SEKRIT"))
            fail_msg("GET %s with a reader key shows a secret: %s", path, strstr(r.body, "SEKRIT"));
        kept += strstr(r.body, "tokens_used: 40") && strstr(r.body, "keyword: cats");
        reads++;
        vt_resp_free(&r);
    }
    assert_int_equal(reads, 22);
    assert_true(kept >= 6); /* the neighbouring text is stored and served as it was */
    assert_nowhere("SEKRIT");
}

#define SECRET_SESSION                                                                             \
    "{\"returncode\": 0, \"stdout\": \"{\\\"type\\\": \\\"result\\\", \\\"subtype\\\":"            \
    " \\\"success\\\", \\\"is_error\\\": false, \\\"result\\\": \\\"deployed with"                 \
    " ghp_0123456789abcdefghijABCDEFGHIJ012345 and wp_password=WP-nine9\\\"}\"}"

/* The transcript's result_text is stored redacted; the finishing request is kept only as a
 * digest (the session report is not stored), and replays keep their exact semantics. */
static void test_secrets_session_transcript(void **state)
{
    (void)state;
    char path[80], body[2048], other[2048];
    vt_register(&srv, "sess", "a", NULL);
    vt_claim c = vt_claim1(&srv, "sess");
    snprintf(path, sizeof(path), "/v1/jobs/%lld/session-outcome", (long long)c.job_id);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\", \"session\": %s}", c.token,
             SECRET_SESSION);
    vt_resp r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(vt_str(r.json, "adjudication.result_text"), "[REDACTED]"));
    vt_resp_free(&r);
    assert_nowhere("ghp_0123456789abcdefghij");
    assert_nowhere("WP-nine9");
    assert_int_equal(vt_sql_long("SELECT count(*) FROM information_schema.columns WHERE"
                                 " table_name = 'jobs' AND column_name LIKE '%%request%%'"),
                     0);
    assert_int_equal(vt_sql_long("SELECT octet_length(answer_digest) FROM jobs WHERE"
                                 " id = %lld",
                                 (long long)c.job_id),
                     32);
    /* the identical call (other spacing and key order) replays; another is refused */
    snprintf(other, sizeof(other), "{ \"session\" : %s ,\"claim_token\":\"%s\"}", SECRET_SESSION,
             c.token);
    r = vt_http(&srv, "POST", path, VT_WORKER, other, NULL);
    assert_int_equal(r.status, 200);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "replayed")));
    vt_resp_free(&r);
    snprintf(other, sizeof(other),
             "{\"claim_token\": \"%s\", \"session\": {\"returncode\": 1, \"stdout\": \"\"}}",
             c.token);
    r = vt_http(&srv, "POST", path, VT_WORKER, other, NULL);
    vt_assert_error(&r, 409, "job_finalized");
    vt_resp_free(&r);
}

/* A batch entry and the single call replay each other through the digest. */
static void test_secrets_digest_replays_across_endpoints(void **state)
{
    (void)state;
    char body[512];
    vt_register(&srv, "dig", "a", NULL);
    vt_claim c = vt_claim1(&srv, "dig");
    snprintf(body, sizeof(body),
             "{\"dispositions\":[{\"job_id\":%lld,\"claim_token\":\"%s\",\"disposition\":"
             "\"defer_item\",\"reason_code\":\"tool_error\",\"reason\":\"later\"}]}",
             (long long)c.job_id, c.token);
    vt_resp r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
    assert_int_equal((long)vt_num(r.json, "results.0.status"), 200);
    vt_resp_free(&r);
    r = vt_dispose(&srv, &c,
                   "\"reason\": \"later\", \"reason_code\": \"tool_error\","
                   " \"disposition\": \"defer_item\"");
    assert_int_equal(r.status, 200);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "replayed")));
    vt_resp_free(&r);
    r = vt_dispose(&srv, &c,
                   "\"reason\": \"sooner\", \"reason_code\": \"tool_error\","
                   " \"disposition\": \"defer_item\"");
    vt_assert_error(&r, 409, "job_finalized");
    vt_resp_free(&r);
}

/* After a required tool's deterministic failure: the hint steers to defer_item / fail, and
 * complete is 409 tool_failure_pending unless forced (recorded on the transition). */
static void test_secrets_required_tool_blocks_complete(void **state)
{
    (void)state;
    vt_register(&srv, "req", "a", NULL);
    vt_register(&srv, "req", "b", NULL);
    vt_register(&srv, "req", "c", NULL);
    vt_claim c = vt_claim1(&srv, "req");
    vt_resp r = tool_failure(&c, "\"tool\": \"wp_upsert\", \"error\": \"Request refused:"
                                 " content policy violation\", \"required\": true");
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "kind"), "deterministic");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "retryable")));
    const char *hint = vt_str(r.json, "hint");
    assert_null(strstr(hint, "Continue without it"));
    assert_non_null(strstr(hint, "defer_item"));
    vt_resp_free(&r);
    r = vt_dispose(&srv, &c, "\"disposition\": \"complete\"");
    vt_assert_error(&r, 409, "tool_failure_pending");
    assert_string_equal(vt_str(r.json, "field"), "disposition");
    vt_resp_free(&r);
    char body[400];
    snprintf(body, sizeof(body),
             "{\"dispositions\":[{\"job_id\":%lld,\"claim_token\":\"%s\",\"disposition\":"
             "\"complete\"}]}",
             (long long)c.job_id, c.token);
    r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
    assert_int_equal((long)vt_num(r.json, "results.0.status"), 409);
    assert_string_equal(vt_str(r.json, "results.0.error"), "tool_failure_pending");
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, c.item_id), "claimed");
    r = vt_dispose(&srv, &c, "\"disposition\": \"complete\", \"force\": true");
    vt_assert_error(&r, 400, "missing_field"); /* forcing past the failure needs a reason */
    assert_string_equal(vt_str(r.json, "field"), "reason");
    vt_resp_free(&r);
    r = vt_dispose(&srv, &c,
                   "\"disposition\": \"complete\", \"force\": true,"
                   " \"reason\": \"the post was written by hand\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE job_id = %lld AND"
                                 " forced AND cause = 'complete'",
                                 (long long)c.job_id),
                     1);
    /* a required tool that failed transiently (may still succeed) does not block complete */
    vt_claim d = vt_claim1(&srv, "req");
    r = tool_failure(&d, "\"tool\": \"fetch\", \"error\": \"HTTP 503\", \"required\": true");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "retryable")));
    vt_resp_free(&r);
    r = vt_dispose(&srv, &d, "\"disposition\": \"complete\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE job_id = %lld AND"
                                 " forced",
                                 (long long)d.job_id),
                     0);
    /* a session outcome is adjudicated from the transcript: the rule is complete's only */
    vt_register(&srv, "req", "d", NULL);
    vt_claim so = vt_claim1(&srv, "req");
    r = tool_failure(&so, "\"tool\": \"wp_upsert\", \"error\": \"iteration_cap\","
                          " \"kind\": \"deterministic\", \"required\": true");
    vt_resp_free(&r);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\", \"session\": %s}", so.token,
             "{\"returncode\": -1, \"termination\": \"stale\", \"stdout\": \"\"}");
    char path[80];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/session-outcome", (long long)so.job_id);
    r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    /* a non-required tool's failure never blocks complete */
    vt_claim e = vt_claim1(&srv, "req");
    r = tool_failure(&e, "\"tool\": \"tldr\", \"error\": \"iteration_cap\"");
    assert_non_null(strstr(vt_str(r.json, "hint"), "If the item cannot be finished without it"));
    vt_resp_free(&r);
    r = vt_dispose(&srv, &e, "\"disposition\": \"complete\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
}

static void test_secrets_www_authenticate(void **state)
{
    (void)state;
    vt_resp r = vt_http(&srv, "GET", "/v1/stats", NULL, NULL, NULL);
    vt_assert_error(&r, 401, "unauthorized");
    assert_string_equal(r.www_authenticate, "Bearer");
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/v1/stats", "not-a-key-at-all", NULL, NULL);
    vt_assert_error(&r, 401, "unauthorized");
    assert_string_equal(r.www_authenticate, "Bearer");
    vt_resp_free(&r);
    r = vt_http(&srv, "POST", "/v1/items/requeue", VT_READER, "{}", NULL);
    vt_assert_error(&r, 403, "forbidden");
    assert_string_equal(r.www_authenticate, "");
    vt_resp_free(&r);
}

static const char *metric_line(const char *body, const char *name, char *out, size_t len)
{
    size_t n = strlen(name);
    out[0] = '\0';
    for (const char *p = body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, name, n) == 0 && p[n] == ' ') {
            size_t l = strcspn(p, "\n");
            snprintf(out, len, "%.*s", (int)l, p);
            break;
        }
    }
    return out;
}

/* SQL on the cluster's maintenance database (ALTER DATABASE cannot name the current one). */
static void admin_sql(const char *sql)
{
    PGconn *pg = PQconnectdb(getenv("VERDICT_TEST_DATABASE_URL"));
    PGresult *res = PQexec(pg, sql);
    if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(pg));
    PQclear(res);
    PQfinish(pg);
}

/* A real outage of the server's database: it refuses connections and verdictd's are closed. */
static void test_secrets_db_up_gauge(void **state)
{
    (void)state;
    char line[128], sql[300], *db = vt_sql("SELECT current_database()");
    vt_resp r = vt_http(&srv, "GET", "/metrics", VT_READER, NULL, NULL);
    assert_string_equal(metric_line(r.body, "verdict_db_up", line, sizeof(line)),
                        "verdict_db_up 1");
    vt_resp_free(&r);
    snprintf(sql, sizeof(sql), "ALTER DATABASE %s ALLOW_CONNECTIONS false", db);
    admin_sql(sql);
    snprintf(sql, sizeof(sql),
             "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '%s'",
             db);
    admin_sql(sql);
    r = vt_http(&srv, "GET", "/metrics", VT_READER, NULL, NULL);
    snprintf(sql, sizeof(sql), "ALTER DATABASE %s ALLOW_CONNECTIONS true", db);
    admin_sql(sql); /* restore before asserting */
    assert_int_equal(r.status, 200);
    assert_string_equal(metric_line(r.body, "verdict_db_up", line, sizeof(line)),
                        "verdict_db_up 0");
    assert_string_equal(metric_line(r.body, "verdict_up", line, sizeof(line)), "verdict_up 1");
    assert_null(strstr(r.body, "\nverdict_items{"));
    vt_resp_free(&r);
    for (int i = 0; i < 100; i++) { /* verdictd reconnects on the next scrape */
        r = vt_http(&srv, "GET", "/metrics", VT_READER, NULL, NULL);
        bool up = strcmp(metric_line(r.body, "verdict_db_up", line, sizeof(line)),
                         "verdict_db_up 1") == 0;
        vt_resp_free(&r);
        if (up)
            break;
        assert_true(i < 99);
    }
    free(db);
}

/* Statements are prepared only once the schema is current: a fresh database logs no
 * "prepare ... failed" warning, neither migrated at start (the fixture's) nor served before
 * `verdictd migrate` ran (VERDICT_AUTO_MIGRATE=0), which answers 503 with one warning saying
 * what to run, then serves once the migrations are in, without a restart. */
static void test_secrets_fresh_database_no_prepare_warning(void **state)
{
    (void)state;
    char cmd[900], url[600], env_url[640], *db = vt_sql("SELECT current_database()");
    vt_server late;
    snprintf(cmd, sizeof(cmd), "! grep -q 'prepare .* failed' %s", srv.log_path);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "DROP DATABASE IF EXISTS %s_fresh", db);
    admin_sql(cmd);
    snprintf(cmd, sizeof(cmd), "CREATE DATABASE %s_fresh", db);
    admin_sql(cmd);
    snprintf(url, sizeof(url), "%s dbname=%s_fresh", vt_db_setup_url(), db);
    snprintf(env_url, sizeof(env_url), "VERDICT_DATABASE_URL=%s", url);
    const char *env[] = {env_url, "VERDICT_AUTO_MIGRATE=0", NULL};
    vt_server_start(&late, env);
    for (int i = 0; i < 3; i++) { /* each on a new connection attempt */
        vt_resp r = vt_http(&late, "GET", "/readyz", NULL, NULL, NULL);
        assert_int_equal(r.status, 503);
        vt_resp_free(&r);
        r = vt_http(&late, "GET", "/v1/stats", VT_READER, NULL, NULL);
        vt_assert_error(&r, 503, "database_unavailable");
        vt_resp_free(&r);
    }
    snprintf(cmd, sizeof(cmd), "VERDICT_DATABASE_URL='%s' %s migrate >/dev/null 2>&1", url,
             VERDICTD_PATH);
    assert_int_equal(system(cmd), 0);
    vt_resp r = vt_http(&late, "GET", "/readyz", NULL, NULL, NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    snprintf(cmd, sizeof(cmd),
             "! grep -q 'prepare .* failed' %s && test $(grep -c 'answering 503 until the"
             " migrations' %s) -eq 1",
             late.log_path, late.log_path);
    if (system(cmd) != 0) {
        snprintf(cmd, sizeof(cmd), "cat %s >&2", late.log_path);
        (void)!system(cmd);
        fail_msg("the start-up log of a fresh database has prepare warnings");
    }
    vt_server_stop(&late);
    snprintf(cmd, sizeof(cmd), "DROP DATABASE %s_fresh WITH (FORCE)", db);
    admin_sql(cmd);
    free(db);
}

/* Off loopback without TLS verdictd says at start that tokens travel in clear. */
static void test_secrets_plain_http_warning(void **state)
{
    (void)state;
    char cmd[400];
    vt_server pub;
    snprintf(cmd, sizeof(cmd), "grep -q 'travel in clear' %s", srv.log_path);
    assert_int_not_equal(system(cmd), 0); /* loopback: no warning */
    vt_server_start_listen(&pub, "0.0.0.0", NULL);
    snprintf(cmd, sizeof(cmd), "grep -q 'travel in clear' %s", pub.log_path);
    assert_int_equal(system(cmd), 0);
    vt_server_stop(&pub);
}

VT_SERVER_FIXTURE(srv, NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secrets_strict_json_every_post_route),
        cmocka_unit_test(test_secrets_ids_beyond_2_53),
        cmocka_unit_test(test_secrets_redacted_everywhere_stored),
        cmocka_unit_test(test_secrets_every_stored_text_reader),
        cmocka_unit_test(test_secrets_session_transcript),
        cmocka_unit_test(test_secrets_digest_replays_across_endpoints),
        cmocka_unit_test(test_secrets_required_tool_blocks_complete),
        cmocka_unit_test(test_secrets_www_authenticate),
        cmocka_unit_test(test_secrets_db_up_gauge),
        cmocka_unit_test(test_secrets_plain_http_warning),
        cmocka_unit_test(test_secrets_fresh_database_no_prepare_warning),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
