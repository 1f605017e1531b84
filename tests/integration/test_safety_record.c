/* test_safety_record.c - the job's own record decides, over HTTP against PostgreSQL: a
 * heartbeat without lease_seconds keeps the claim's lease length; a holder's releases park the
 * item as churn; a rejection is checked against the item's tool failures; a completion after a
 * write tool's deterministic failure waits for a reported success or force. */
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

/* POST to the job's sub-path ("heartbeat", "disposition", ...) with the claim's token and the
 * given members (may be ""). The caller frees the answer. */
static vt_resp job_post(const vt_claim *c, const char *what, const char *members)
{
    char path[96], body[4096];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/%s", (long long)c->job_id, what);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\"%s%s}", c->token, *members ? ", " : "",
             members);
    return vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
}

/* The seconds from now to the job's lease end, as PostgreSQL sees it. */
static long lease_left(const vt_claim *c)
{
    return vt_sql_long("SELECT round(extract(epoch FROM lease_expires_at - now()))::bigint"
                       " FROM jobs WHERE id = %lld",
                       (long long)c->job_id);
}

/* A heartbeat without lease_seconds extends by the claim's own length (600 s here, the server
 * default being 300), also after a heartbeat that named another length. */
static void test_heartbeat_keeps_claim_lease(void **state)
{
    (void)state;
    vt_register(&srv, "hb", "hb-1", NULL);
    vt_claim c;
    assert_int_equal(vt_claim_n(&srv, "hb", 1, 600, &c), 1);
    vt_resp r = job_post(&c, "heartbeat", "");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    long left = lease_left(&c);
    assert_true(left > 590 && left <= 600);
    r = job_post(&c, "heartbeat", "\"lease_seconds\": 60");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    left = lease_left(&c);
    assert_true(left > 50 && left <= 60);
    r = job_post(&c, "heartbeat", "");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    left = lease_left(&c);
    assert_true(left > 590 && left <= 600);
    /* a claim without lease_seconds has the server's default, and keeps it */
    vt_register(&srv, "hb2", "hb-2", NULL);
    vt_resp cr = vt_http(&srv, "POST", "/v1/claims", VT_WORKER,
                         "{\"flow_step_id\": \"hb2\", \"worker_id\": \"w\"}", NULL);
    assert_int_equal(cr.status, 200);
    c.job_id = (int64_t)vt_num(cr.json, "claims.0.job_id");
    snprintf(c.token, sizeof(c.token), "%s", vt_str(cr.json, "claims.0.claim_token"));
    vt_resp_free(&cr);
    r = job_post(&c, "heartbeat", "");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    left = lease_left(&c);
    assert_true(left > 290 && left <= 300);
}

/* Claims the one item of flow and releases it; returns the item's state after the release. */
static const char *claim_and_release(const char *flow)
{
    static char state[32];
    vt_claim c;
    if (vt_claim_n(&srv, flow, 1, 60, &c) != 1)
        return "unclaimable";
    vt_resp r = job_post(&c, "release", "\"reason\": \"worker timed out\"");
    assert_int_equal(r.status, 200);
    snprintf(state, sizeof(state), "%s", vt_str(r.json, "item.state"));
    vt_resp_free(&r);
    return state;
}

/* The loop: 12 releases in a row. With the default (2 x max_defers = 6) the 6th parks
 * the item in manual_review as churn; the rest find nothing to claim. A verdict between
 * releases starts the count again (a defer here). */
static void test_release_churn_parks(void **state)
{
    (void)state;
    int64_t id = vt_register(&srv, "churn", "churn-1", NULL);
    int parked_at = 0;
    for (int i = 1; i <= 12; i++) {
        const char *st = claim_and_release("churn");
        if (strcmp(st, "available") != 0 && parked_at == 0)
            parked_at = i;
    }
    assert_int_equal(parked_at, 6);
    assert_string_equal(vt_item_state(&srv, id), "manual_review");
    char *code = vt_sql("SELECT last_reason_code FROM items WHERE id = %lld", (long long)id);
    assert_string_equal(code, "churn");
    free(code);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE item_id = %lld", (long long)id),
                     6);
    /* a verdict in between starts the count again: max_defers 5 allows 10 releases; 5, a
     * defer, then 9 more stay available and the 10th after the defer parks */
    int64_t id2 = vt_register(&srv, "churn2", "churn-2", "\"max_defers\": 5");
    for (int i = 0; i < 5; i++)
        assert_string_equal(claim_and_release("churn2"), "available");
    vt_claim c;
    assert_int_equal(vt_claim_n(&srv, "churn2", 1, 60, &c), 1);
    vt_resp r = job_post(&c, "disposition",
                         "\"disposition\": \"defer_item\", \"reason_code\": \"other\","
                         " \"reason\": \"later\", \"retry_after_seconds\": 0");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    for (int i = 0; i < 9; i++)
        assert_string_equal(claim_and_release("churn2"), "available");
    assert_string_equal(claim_and_release("churn2"), "manual_review");
    assert_string_equal(vt_item_state(&srv, id2), "manual_review");
    r = vt_http(&srv, "GET", "/metrics", VT_ADMIN, NULL, NULL);
    assert_non_null(
        strstr(r.body, "verdict_releases_total{flow_step_id=\"churn\",churn=\"true\"} 1"));
    assert_non_null(
        strstr(r.body, "verdict_releases_total{flow_step_id=\"churn\",churn=\"false\"} 5"));
    vt_resp_free(&r);
}

#define PAYLOAD                                                                                    \
    "\"payload\": {\"title\": \"Press release\", \"text\": \"Acme announces a new product."        \
    " Contact our sales team for pricing. No further details were given.\"}"

/* Registers one item of flow (with PAYLOAD) and claims it. */
static vt_claim fresh(const char *flow, const char *ident)
{
    vt_register(&srv, flow, ident, PAYLOAD);
    vt_claim c;
    assert_int_equal(vt_claim_n(&srv, flow, 1, 300, &c), 1);
    return c;
}

static void tool_failure(const vt_claim *c, const char *tool, const char *error, const char *kind)
{
    char members[2048];
    snprintf(members, sizeof(members),
             "\"tool\": \"%s\", \"args\": {\"n\": 1}, \"error\": \"%s\", \"kind\": \"%s\"", tool,
             error, kind);
    vt_resp r = job_post(c, "tool-failures", members);
    if (r.status != 200)
        fail_msg("tool failure: %ld %s", r.status, r.body);
    vt_resp_free(&r);
}

/* A rejection's answer: status and, for a refusal, its code and field. */
static void reject_expect(const vt_claim *c, const char *members, long status, const char *code,
                          const char *field)
{
    char all[2048];
    snprintf(all, sizeof(all), "\"disposition\": \"reject_source\", %s", members);
    vt_resp r = vt_dispose(&srv, c, all);
    if (r.status != status)
        fail_msg("%s: want %ld, got %ld %s", members, status, r.status, r.body);
    if (code) {
        vt_assert_error(&r, status, code);
        if (field)
            assert_string_equal(vt_str(r.json, "field"), field);
    }
    vt_resp_free(&r);
}

/* reason_code other quotes evidence from the payload, or forces; the source-quality codes
 * stay as they were (no evidence needed). */
static void test_reject_other_needs_evidence(void **state)
{
    (void)state;
    vt_claim c = fresh("oth", "o1");
    reject_expect(&c, "\"reason_code\": \"other\", \"reason\": \"not an article at all\"", 400,
                  "missing_field", "evidence");
    reject_expect(&c,
                  "\"reason_code\": \"other\", \"reason\": \"not an article at all\","
                  " \"evidence\": \"a recipe for bread\"",
                  409, "evidence_not_found", "evidence");
    /* non-English reason, no evidence: the same */
    reject_expect(&c, "\"reason_code\": \"other\", \"reason\": \"kein richtiger Artikel\"", 400,
                  "missing_field", "evidence");
    reject_expect(&c,
                  "\"reason_code\": \"other\", \"reason\": \"an advert, not an article\","
                  " \"evidence\": \"Contact our sales team for pricing.\"",
                  200, NULL, NULL);
    c = fresh("oth", "o2");
    reject_expect(&c, "\"reason_code\": \"other\", \"reason\": \"an advert\", \"force\": true", 200,
                  NULL, NULL);
    c = fresh("oth", "o3");
    reject_expect(&c, "\"reason_code\": \"too_thin\", \"reason\": \"two sentences of text\"", 200,
                  NULL, NULL);
    c = fresh("oth", "o4");
    reject_expect(&c, "\"reason_code\": \"low_quality\", \"reason\": \"kaum Inhalt, nur Werbung\"",
                  200, NULL, NULL);
}

/* The wordings: each passed the keyword list before. A rejection that repeats the
 * text of any tool failure of the item (this job or an earlier one, labelled transient or
 * not, any language) is rejection_suspect; unrelated reasons pass. */
static void test_reject_repeats_tool_failure(void **state)
{
    (void)state;
    static const struct {
        const char *error, *reason;
    } cases[] = {
        {"Could not save the article: database is locked", "could not save the article"},
        {"quality gate failed: readability score 41 below 60",
         "Quality gate failed: readability score 41 below 60"},
        {"upstream said: the API is down for maintenance until 14:00 UTC",
         "The API is down for maintenance until 14:00"},
        {"rest_post_invalid_id: Invalid post ID. {\\\"status\\\":404}",
         "rest_post_invalid_id: Invalid post ID."},
        {"Der Artikel konnte nicht gespeichert werden: Datenbank gesperrt",
         "Der Artikel konnte nicht gespeichert werden"},
        {"記事を保存できませんでした。データベースがロックされています",
         "記事を保存できませんでした。"},
        {"Erreur : la requête a expiré après 30 secondes (délai dépassé)",
         "la requête a expiré après 30 secondes"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char ident[16], members[1024];
        snprintf(ident, sizeof(ident), "r%zu", i);
        vt_claim c = fresh("rep", ident);
        tool_failure(&c, "wiki_upsert", cases[i].error, "transient");
        snprintf(members, sizeof(members), "\"reason_code\": \"low_quality\", \"reason\": \"%s\"",
                 cases[i].reason);
        reject_expect(&c, members, 409, "rejection_suspect", "reason");
        /* the next attempt still sees the earlier job's failure */
        vt_resp r = vt_dispose(&srv, &c,
                               "\"disposition\": \"defer_item\", \"reason_code\": \"tool_error\","
                               " \"retry_after_seconds\": 0");
        assert_int_equal(r.status, 200);
        vt_resp_free(&r);
        assert_int_equal(vt_claim_n(&srv, "rep", 1, 300, &c), 1);
        reject_expect(&c, members, 409, "rejection_suspect", "reason");
        /* evidence that repeats the failure is suspect too; a genuine rejection passes */
        snprintf(members, sizeof(members),
                 "\"reason_code\": \"spam\", \"reason\": \"an advert\", \"evidence\": \"%s\"",
                 cases[i].reason);
        reject_expect(&c, members, 409, "rejection_suspect", "evidence");
        reject_expect(&c, "\"reason_code\": \"spam\", \"reason\": \"an advert for a product\"", 200,
                      NULL, NULL);
    }
    /* the tool's own error text pasted as the reason, with no tooling word in it */
    vt_claim c = fresh("rep", "paste");
    tool_failure(&c, "search", "Template 'rate-banner' not found in theme twentytwenty",
                 "transient");
    reject_expect(&c,
                  "\"reason_code\": \"irrelevant\","
                  " \"reason\": \"Template 'rate-banner' not found in theme twentytwenty\"",
                  409, "rejection_suspect", "reason");
    /* force lets it through, recorded as overridden */
    reject_expect(&c,
                  "\"reason_code\": \"irrelevant\","
                  " \"reason\": \"Template 'rate-banner' not found in theme twentytwenty\","
                  " \"force\": true",
                  200, NULL, NULL);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld"
                                 " AND lint_overridden",
                                 (long long)c.item_id),
                     1);
    /* keywords stay an extra signal, never the only one: the short wordings with no
     * failure on the item's record are accepted (and noted); after a tool failure of the
     * item they are refused */
    static const char *const words[] = {"quality gate failed", "the API is down",
                                        "could not save the article"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        char ident[16], members[256];
        snprintf(ident, sizeof(ident), "w%zu", i);
        snprintf(members, sizeof(members), "\"reason_code\": \"low_quality\", \"reason\": \"%s\"",
                 words[i]);
        c = fresh("repw", ident);
        reject_expect(&c, members, 200, NULL, NULL);
        snprintf(ident, sizeof(ident), "f%zu", i);
        c = fresh("repf", ident);
        tool_failure(&c, "search", "socket closed by peer", "transient");
        reject_expect(&c, members, 409, "rejection_suspect", "reason");
    }
}

/* A rejection that mines to the template of a tool failure of the item, with no 24-byte run
 * in common: other ids and numbers, other quoted values, a reworded variable part, in
 * English, German and Spanish, as the whole reason or quoted amid other words, or as the
 * evidence. */
static void test_reject_same_template(void **state)
{
    (void)state;
    static const struct {
        const char *error, *reason;
    } cases[] = {
        {"Invalid post ID 4521 for site 77 (request req_9f3ac2)",
         "Invalid post ID 98 for site 12 (request req_ab12cd)"},
        {"Invalid post ID 4521 for site 77 (request req_9f3ac2)",
         "The tool said: Invalid post ID 98 for site 12 (request req_ab12cd). Rejecting."},
        {"Template rate-limit-banner not found", "Template hero-banner not found"},
        {"Datei 'a.txt' fehlt (Ordner 17, Versuch 3)", "Datei 'b.pdf' fehlt (Ordner 9, Versuch 1)"},
        {"El campo 'titulo' no vale (línea 88, columna 31)",
         "El campo 'fecha' no vale (línea 4, columna 2)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char ident[16], members[1024];
        snprintf(ident, sizeof(ident), "t%zu", i);
        vt_claim c = fresh("rept", ident);
        tool_failure(&c, "wiki_upsert", cases[i].error, "transient");
        snprintf(members, sizeof(members), "\"reason_code\": \"low_quality\", \"reason\": \"%s\"",
                 cases[i].reason);
        reject_expect(&c, members, 409, "rejection_suspect", "reason");
        snprintf(members, sizeof(members),
                 "\"reason_code\": \"spam\", \"reason\": \"an advert\", \"evidence\": \"%s\"",
                 cases[i].reason);
        reject_expect(&c, members, 409, "rejection_suspect", "evidence");
        /* a genuine judgement of the source passes */
        reject_expect(&c, "\"reason_code\": \"spam\", \"reason\": \"an advert for a product\"", 200,
                      NULL, NULL);
    }
}

static vt_resp mcp(const vt_claim *c, const char *body)
{
    char h[200];
    snprintf(h, sizeof(h), "Verdict-Claim: %lld:%s", (long long)c->job_id, c->token);
    const char *hs[] = {h, NULL};
    vt_resp r = vt_http(&srv, "POST", "/mcp", VT_WORKER, body, hs);
    assert_int_equal(r.status, 200);
    return r;
}

static vt_resp patch_tools(const char *flow, const char *body)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/flow-steps/%s", flow);
    return vt_http(&srv, "PATCH", path, VT_ADMIN, body, NULL);
}

/* The complete of c: 200, or 409 tool_failure_pending (single, batch and MCP agree). */
static void complete_expect(const vt_claim *c, bool pending)
{
    char body[400];
    vt_resp r;
    snprintf(body, sizeof(body),
             "{\"dispositions\":[{\"job_id\":%lld,\"claim_token\":\"%s\",\"disposition\":"
             "\"complete\"}]}",
             (long long)c->job_id, c->token);
    if (pending) {
        r = vt_dispose(&srv, c, "\"disposition\": \"complete\"");
        vt_assert_error(&r, 409, "tool_failure_pending");
        vt_resp_free(&r);
        r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
        assert_int_equal((long)vt_num(r.json, "results.0.status"), 409);
        assert_string_equal(vt_str(r.json, "results.0.error"), "tool_failure_pending");
        vt_resp_free(&r);
        r = mcp(c, "{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\": \"tools/call\", \"params\":"
                   " {\"name\": \"complete_item\", \"arguments\": {}}}");
        assert_true(
            cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "result"), "isError")));
        assert_string_equal(vt_str(r.json, "result.structuredContent.error"),
                            "tool_failure_pending");
        vt_resp_free(&r);
        assert_string_equal(vt_item_state(&srv, c->item_id), "claimed");
        return;
    }
    r = mcp(c, "{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\": \"tools/call\", \"params\":"
               " {\"name\": \"complete_item\", \"arguments\": {}}}");
    assert_true(
        cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "result"), "isError")));
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, c->item_id), "processed");
}

static vt_resp tool_success(const vt_claim *c, const char *tool)
{
    char members[300];
    snprintf(members, sizeof(members), "\"tool\": \"%s\"", tool);
    return job_post(c, "tool-successes", members);
}

/* A flow step declares its tools; invalid declarations are 400 and change nothing. */
static void test_flow_step_tools_declared(void **state)
{
    (void)state;
    vt_resp r = patch_tools("ws", "{\"tools\": {\"wiki_upsert\": {\"role\": \"write\","
                                  " \"required\": true}, \"search\": {\"role\": \"read\"}}}");
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "flow_step.tools.wiki_upsert.role"), "write");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "flow_step"), "tools"),
                            "search"),
        "required")));
    vt_resp_free(&r);
    static const char *const bad[] = {
        "{\"tools\": []}",
        "{\"tools\": {\"x\": {\"role\": \"admin\"}}}",
        "{\"tools\": {\"x\": {\"role\": \"read\", \"kind\": 1}}}",
        "{\"tools\": {\"x\": {\"required\": true}}}",
        "{\"tools\": {\"x\": {\"role\": \"read\", \"required\": \"yes\"}}}",
        "{\"tools\": {\"x\": \"write\"}}",
        "{\"tools\": {\"\": {\"role\": \"read\"}}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = patch_tools("ws", bad[i]);
        if (r.status != 400)
            fail_msg("%s: %ld %s", bad[i], r.status, r.body);
        vt_resp_free(&r);
    }
    r = vt_http(&srv, "GET", "/v1/flow-steps", VT_READER, NULL, NULL);
    assert_non_null(strstr(r.body, "\"wiki_upsert\": {\"role\": \"write\", \"required\": true}"));
    vt_resp_free(&r);
}

/* Seed 1 through the other door: a declared write tool fails deterministically without the
 * failure saying `required`; complete waits for a reported success of it (or force with a
 * reason). A read tool's failure holds nothing; an undeclared tool keeps its own flag. */
static void test_complete_after_write_failure(void **state)
{
    (void)state;
    vt_resp r = patch_tools("wf", "{\"tools\": {\"wiki_upsert\": {\"role\": \"write\"},"
                                  " \"search\": {\"role\": \"read\"}}}");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    vt_claim c = fresh("wf", "w1");
    tool_failure(&c, "wiki_upsert", "rest_post_invalid_id: Invalid post ID.", "deterministic");
    complete_expect(&c, true);
    /* a success of another tool clears nothing */
    r = tool_success(&c, "search");
    assert_int_equal(r.status, 200);
    assert_int_equal((int)vt_num(r.json, "cleared"), 0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "tool_failure_pending")));
    vt_resp_free(&r);
    r = tool_success(&c, "wiki_upsert");
    assert_int_equal(r.status, 200);
    assert_int_equal((int)vt_num(r.json, "cleared"), 1);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "tool_failure_pending")));
    vt_resp_free(&r);
    /* a later failure holds it back again */
    tool_failure(&c, "wiki_upsert", "rest_forbidden: Sorry, you are not allowed to do that.",
                 "deterministic");
    complete_expect(&c, true);
    r = tool_success(&c, "wiki_upsert");
    vt_resp_free(&r);
    complete_expect(&c, false);
    /* a read tool's deterministic failure holds nothing */
    c = fresh("wf", "w2");
    tool_failure(&c, "search", "invalid query syntax near 'AND'", "deterministic");
    complete_expect(&c, false);
    /* a transient failure of the write tool holds nothing (it may still succeed) */
    c = fresh("wf", "w3");
    tool_failure(&c, "wiki_upsert", "HTTP 503 Service Unavailable", "transient");
    complete_expect(&c, false);
    /* an undeclared tool: its failure's required flag decides */
    c = fresh("wf", "w4");
    vt_resp f = job_post(&c, "tool-failures",
                         "\"tool\": \"publish\", \"args\": {}, \"error\": \"schema invalid\","
                         " \"kind\": \"deterministic\", \"required\": true");
    assert_int_equal(f.status, 200);
    vt_resp_free(&f);
    complete_expect(&c, true);
    c = fresh("wf", "w5");
    tool_failure(&c, "publish", "schema invalid", "deterministic");
    complete_expect(&c, false);
    /* force needs a reason, recorded on the transition */
    c = fresh("wf", "w6");
    tool_failure(&c, "wiki_upsert", "rest_post_invalid_id: Invalid post ID.", "deterministic");
    r = vt_dispose(&srv, &c, "\"disposition\": \"complete\", \"force\": true");
    vt_assert_error(&r, 400, "missing_field");
    assert_string_equal(vt_str(r.json, "field"), "reason");
    vt_resp_free(&r);
    r = vt_dispose(&srv, &c,
                   "\"disposition\": \"complete\", \"force\": true,"
                   " \"reason\": \"the editor published it by hand\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE job_id = %lld AND forced"
                                 " AND reason = 'the editor published it by hand'",
                                 (long long)c.job_id),
                     1);
}

/* POST /v1/jobs/{id}/tool-successes: fenced and validated like every job write. */
static void test_tool_success_refusals(void **state)
{
    (void)state;
    vt_claim c = fresh("ts", "t1");
    vt_resp r = job_post(&c, "tool-successes", "");
    vt_assert_error(&r, 400, "missing_field");
    vt_resp_free(&r);
    r = job_post(&c, "tool-successes", "\"tool\": \"x\", \"ok\": true");
    assert_int_equal(r.status, 400);
    vt_resp_free(&r);
    r = job_post(&c, "tool-successes", "\"tool\": 5");
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
    vt_claim other = c;
    snprintf(other.token, sizeof(other.token), "00000000-0000-4000-8000-000000000000");
    r = tool_success(&other, "x");
    vt_assert_error(&r, 409, "claim_lost");
    vt_resp_free(&r);
    r = vt_dispose(&srv, &c, "\"disposition\": \"complete\"");
    vt_resp_free(&r);
    r = tool_success(&c, "x");
    vt_assert_error(&r, 409, "job_finalized");
    vt_resp_free(&r);
}

/* The names tools/list offers the session of c, joined by ','. */
static void offered_tools(const vt_claim *c, char *out, size_t len)
{
    vt_resp r = mcp(c, "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/list\"}");
    const cJSON *t = NULL;
    out[0] = '\0';
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "result"), "tools"))
    {
        size_t n = strlen(out);
        snprintf(out + n, len - n, "%s%s", n ? "," : "", vt_str(t, "name"));
    }
    vt_resp_free(&r);
}

#define ALL_TOOLS                                                                                  \
    "complete_item,reject_source,defer_item,fail_item,request_review,report_tool_failure"

/* MCP tools/list reflects the claim's record. */
static void test_mcp_tools_reflect_claim(void **state)
{
    (void)state;
    char names[400];
    vt_resp r = patch_tools("mo", "{\"tools\": {\"wiki_upsert\": {\"role\": \"write\"}}}");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    vt_claim c = fresh("mo", "m1");
    offered_tools(&c, names, sizeof(names));
    assert_string_equal(names, ALL_TOOLS);
    /* a transient failure changes nothing */
    tool_failure(&c, "search", "HTTP 503 Service Unavailable", "transient");
    offered_tools(&c, names, sizeof(names));
    assert_string_equal(names, ALL_TOOLS);
    /* a deterministic failure of a read tool: no reject_source */
    tool_failure(&c, "search", "invalid query syntax", "deterministic");
    offered_tools(&c, names, sizeof(names));
    assert_string_equal(names,
                        "complete_item,defer_item,fail_item,request_review,report_tool_failure");
    /* the write tool's failure: no complete_item either, until its success is reported */
    tool_failure(&c, "wiki_upsert", "rest_post_invalid_id: Invalid post ID.", "deterministic");
    offered_tools(&c, names, sizeof(names));
    assert_string_equal(names, "defer_item,fail_item,request_review,report_tool_failure");
    r = tool_success(&c, "wiki_upsert");
    vt_resp_free(&r);
    offered_tools(&c, names, sizeof(names));
    assert_string_equal(names,
                        "complete_item,defer_item,fail_item,request_review,report_tool_failure");
    /* a finished claim offers nothing */
    r = vt_dispose(&srv, &c, "\"disposition\": \"complete\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    offered_tools(&c, names, sizeof(names));
    assert_string_equal(names, "");
    /* nor does a released one */
    c = fresh("mo", "m2");
    r = job_post(&c, "release", "");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    offered_tools(&c, names, sizeof(names));
    assert_string_equal(names, "");
    /* an open incident in the flow step: no reject_source for any claim of it */
    r = patch_tools("mi", "{\"incident_min_items\": 1}");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    vt_claim a = fresh("mi", "i1");
    tool_failure(&a, "wiki_upsert", "target_path must stay inside root", "deterministic");
    vt_claim b = fresh("mi", "i2");
    offered_tools(&b, names, sizeof(names));
    assert_string_equal(names,
                        "complete_item,defer_item,fail_item,request_review,report_tool_failure");
}

/* MCP refusals speak the model's terms: one next tool, no HTTP, "Stop now." when nothing is
 * left to call. */
static void test_mcp_refusal_texts(void **state)
{
    (void)state;
    vt_claim c = fresh("mt", "t1");
    tool_failure(&c, "search", "socket closed by peer", "transient"); /* backs the words */
    vt_resp r = mcp(&c, "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\", \"params\":"
                        " {\"name\": \"reject_source\", \"arguments\": {\"reason_code\":"
                        " \"low_quality\", \"reason\": \"the API is down\"}}}");
    const char *text = vt_str(r.json, "result.content.0.text");
    assert_string_equal(vt_str(r.json, "result.structuredContent.error"), "rejection_suspect");
    assert_non_null(strstr(text, "call defer_item") ? text : strstr(text, "Call defer_item"));
    assert_null(strstr(text, "/v1/"));
    assert_true(strlen(text) <= 280);
    vt_resp_free(&r);
    r = job_post(&c, "release", "");
    vt_resp_free(&r);
    r = mcp(&c, "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"tools/call\", \"params\":"
                " {\"name\": \"defer_item\", \"arguments\": {\"reason_code\": \"tool_error\"}}}");
    text = vt_str(r.json, "result.content.0.text");
    assert_string_equal(vt_str(r.json, "result.structuredContent.error"), "job_finalized");
    assert_null(strstr(text, "laim new work"));
    assert_true(strlen(text) > 10 && strcmp(text + strlen(text) - 9, "Stop now.") == 0);
    vt_resp_free(&r);
}

VT_SERVER_FIXTURE(srv, NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heartbeat_keeps_claim_lease),
        cmocka_unit_test(test_release_churn_parks),
        cmocka_unit_test(test_reject_other_needs_evidence),
        cmocka_unit_test(test_reject_repeats_tool_failure),
        cmocka_unit_test(test_reject_same_template),
        cmocka_unit_test(test_flow_step_tools_declared),
        cmocka_unit_test(test_complete_after_write_failure),
        cmocka_unit_test(test_tool_success_refusals),
        cmocka_unit_test(test_mcp_tools_reflect_claim),
        cmocka_unit_test(test_mcp_refusal_texts),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
