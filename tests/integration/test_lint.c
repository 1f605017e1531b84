/* test_lint.c - the rejection lint and the briefing over HTTP against PostgreSQL: the rejection
 * lint (a tooling reason, a deterministic tool failure, a retriable adjudication -> 409
 * rejection_suspect; force -> 200 and lint_overridden on the transition; a clean rejection
 * passes), strict evidence per flow step, the batch and MCP paths, tool_result on single,
 * batch and tool-failure answers (identical on replay), and the briefing of earlier attempts
 * (GET /v1/jobs/{id}/briefing and the MCP resource). */
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

static vt_resp tool_failure(const vt_claim *c, const char *members)
{
    char path[80], body[4096];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/tool-failures", (long long)c->job_id);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\", %s}", c->token, members);
    return vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
}

static void upsert_fails(const vt_claim *c)
{
    vt_resp r = tool_failure(c, "\"tool\": \"wiki_upsert\", \"args\": {\"path\": \"../x\"},"
                                " \"error\": \"target_path must stay inside root\"");
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "kind"), "deterministic");
    vt_resp_free(&r);
}

/* The refusal of a suspect rejection: 409 rejection_suspect naming field, the item still
 * claimed by the job, and no transition written. */
static void assert_suspect(const vt_claim *c, const char *members, const char *field)
{
    long before =
        vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld", (long long)c->item_id);
    vt_resp r = vt_dispose(&srv, c, members);
    vt_assert_error(&r, 409, "rejection_suspect");
    assert_string_equal(vt_str(r.json, "field"), field);
    assert_true(strncmp(vt_str(r.json, "hint"), "use defer_item", 14) == 0);
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, c->item_id), "claimed");
    assert_int_equal(
        vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld", (long long)c->item_id),
        before);
}

/* The rejection's transition: lint_overridden as expected, read over HTTP (GET item). */
static void assert_last_transition(int64_t item, bool overridden, const char *evidence)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/items/%lld", (long long)item);
    vt_resp r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "transitions.0.to_state"), "rejected");
    const cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "transitions"), 0);
    assert_true(cJSON_IsBool(cJSON_GetObjectItem(t, "lint_overridden")));
    assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(t, "lint_overridden")), overridden);
    if (evidence)
        assert_string_equal(vt_str(t, "evidence"), evidence);
    else
        assert_true(cJSON_IsNull(cJSON_GetObjectItem(t, "evidence")));
    vt_resp_free(&r);
}

/* A transient failure of another tool on c's record: the structural evidence that lets
 * tooling words in a reason refuse. */
static void search_flaked(const vt_claim *c)
{
    vt_resp r = tool_failure(c, "\"tool\": \"search\", \"args\": {\"q\": \"x\"},"
                                " \"error\": \"search backend answered HTTP 503\","
                                " \"kind\": \"transient\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
}

/* (a) the Job 640 hole: reject_source "other" / "tool-error". Tooling words refuse only with
 * a tool failure on the item's record (each item here has one, in a flow step of its own so
 * that no incident opens); without one they are a signal (test_lint_words_signal). */
static void test_lint_tooling_reason(void **state)
{
    (void)state;
    static const char *reasons[] = {
        "tool-error", "Tool error while upserting", "wiki_upsert: HTTP 503 from the API",
        "timed out",  "failed to call wiki_upsert", "RuntimeException in skill"};
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
        char flow[16], members[300];
        snprintf(flow, sizeof(flow), "la%zu", i);
        vt_register(&srv, flow, "a", NULL);
        vt_claim c = vt_claim1(&srv, flow);
        search_flaked(&c);
        snprintf(members, sizeof(members),
                 "\"disposition\": \"reject_source\", \"reason_code\": \"other\","
                 " \"reason\": \"%s\"",
                 reasons[i]);
        assert_suspect(&c, members, "reason");
        /* what the answer steers to works */
        vt_resp r = vt_dispose(&srv, &c,
                               "\"disposition\": \"defer_item\","
                               " \"reason_code\": \"tool_error\"");
        assert_int_equal(r.status, 200);
        vt_resp_free(&r);
    }
    /* force: 200, and the transition says the lint was overridden */
    vt_register(&srv, "laf", "forced", NULL);
    vt_claim c = vt_claim1(&srv, "laf");
    search_flaked(&c);
    vt_resp r = vt_dispose(&srv, &c,
                           "\"disposition\": \"reject_source\", \"reason_code\": \"other\","
                           " \"reason\": \"tool-error\", \"force\": true");
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "item.state"), "rejected");
    assert_string_equal(vt_str(r.json, "tool_result.text"),
                        "Recorded: rejected (other). The source is closed for good. Stop now.");
    assert_true(
        cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "tool_result"), "terminal")));
    assert_null(cJSON_GetObjectItem(r.json, "lint"));
    vt_resp_free(&r);
    assert_last_transition(c.item_id, true, NULL);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld"
                                 " AND lint_overridden AND NOT forced",
                                 (long long)c.item_id),
                     1);
}

/* verdict_rejection_lint_signals_total{signal="tooling_words"}, 0 when absent. */
static long words_signals(void)
{
    vt_resp m = vt_http(&srv, "GET", "/metrics", VT_READER, NULL, NULL);
    const char *key = "verdict_rejection_lint_signals_total{signal=\"tooling_words\"} ";
    const char *at = m.body ? strstr(m.body, key) : NULL;
    long n = at ? strtol(at + strlen(key), NULL, 10) : 0;
    vt_resp_free(&m);
    return n;
}

/* Tooling words with nothing on the record: accepted, noted in the answer ("lint") and
 * counted; the same reason after a tool failure of the item is refused. */
static void test_lint_words_signal(void **state)
{
    (void)state;
    long before = words_signals();
    vt_register(&srv, "lws", "a", NULL);
    vt_claim c = vt_claim1(&srv, "lws");
    vt_resp r = vt_dispose(&srv, &c,
                           "\"disposition\": \"reject_source\", \"reason_code\": \"low_quality\","
                           " \"reason\": \"the API is down\"");
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "item.state"), "rejected");
    assert_string_equal(vt_str(r.json, "lint.signal"), "tooling_words");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "lint"), "refused")));
    vt_resp_free(&r);
    assert_last_transition(c.item_id, false, NULL);
    assert_int_equal(words_signals(), before + 1);
    /* the batch path notes and counts it the same way */
    vt_register(&srv, "lws", "batch", NULL);
    c = vt_claim1(&srv, "lws");
    char body[600];
    snprintf(body, sizeof(body),
             "{\"dispositions\": [{\"job_id\": %lld, \"claim_token\": \"%s\","
             " \"disposition\": \"reject_source\", \"reason_code\": \"spam\","
             " \"reason\": \"timed out\"}]}",
             (long long)c.job_id, c.token);
    r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "results.0.lint.signal"), "tooling_words");
    vt_resp_free(&r);
    assert_int_equal(words_signals(), before + 2);
    /* the same reason after a tool failure of the item (an earlier job's) */
    vt_register(&srv, "lws", "b", "\"max_defers\": 10");
    c = vt_claim1(&srv, "lws");
    search_flaked(&c);
    r = vt_dispose(&srv, &c,
                   "\"disposition\": \"defer_item\", \"reason_code\": \"tool_error\","
                   " \"retry_after_seconds\": 0");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    c = vt_claim1(&srv, "lws");
    assert_suspect(&c,
                   "\"disposition\": \"reject_source\", \"reason_code\": \"low_quality\","
                   " \"reason\": \"the API is down\"",
                   "reason");
    assert_int_equal(words_signals(), before + 2);
}

/* (b) a deterministic tool failure, required or not, blocks a rejection; a transient one
 * does not; a genuine rejection passes and is not marked overridden. */
static void test_lint_deterministic_failure(void **state)
{
    (void)state;
    vt_register(&srv, "lb", "det", NULL);
    vt_claim c = vt_claim1(&srv, "lb");
    upsert_fails(&c);
    assert_suspect(&c,
                   "\"disposition\": \"reject_source\", \"reason_code\": \"too_thin\","
                   " \"reason\": \"one-line post\"",
                   "disposition");
    /* skip_item mapped to reject_source: the same lint */
    assert_suspect(&c, "\"disposition\": \"skip_item\", \"reason\": \"too thin\"", "disposition");
    vt_resp r = vt_dispose(&srv, &c,
                           "\"disposition\": \"reject_source\", \"reason_code\": \"too_thin\","
                           " \"reason\": \"one-line post\", \"force\": true");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_last_transition(c.item_id, true, NULL);

    vt_register(&srv, "lb", "transient", NULL);
    c = vt_claim1(&srv, "lb");
    r = tool_failure(&c, "\"tool\": \"web_fetch\", \"error\": \"upstream timeout after 30 s\"");
    assert_string_equal(vt_str(r.json, "kind"), "transient");
    vt_resp_free(&r);
    r = vt_dispose(&srv, &c,
                   "\"disposition\": \"reject_source\", \"reason_code\": \"duplicate\","
                   " \"reason\": \"duplicate of an existing article\"");
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "tool_result.text"),
                        "Recorded: rejected (duplicate). The source is closed for good. Stop now.");
    vt_resp_free(&r);
    assert_last_transition(c.item_id, false, NULL);
}

/* (c) the job's last adjudication was retriable (a stored session outcome, apply: false). */
static void test_lint_retriable_adjudication(void **state)
{
    (void)state;
    char path[80], body[300];
    vt_register(&srv, "lc", "a", NULL);
    vt_claim c = vt_claim1(&srv, "lc");
    snprintf(path, sizeof(path), "/v1/jobs/%lld/session-outcome", (long long)c.job_id);
    snprintf(body, sizeof(body),
             "{\"claim_token\": \"%s\", \"apply\": false, \"session\": {\"returncode\": -1,"
             " \"termination\": \"stale\", \"stdout\": \"\"}}",
             c.token);
    vt_resp r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "adjudication.outcome"), "retriable");
    vt_resp_free(&r);
    assert_suspect(&c, "\"disposition\": \"reject_source\", \"reason_code\": \"spam\"",
                   "disposition");
    r = vt_dispose(&srv, &c,
                   "\"disposition\": \"reject_source\", \"reason_code\": \"spam\","
                   " \"force\": true");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_last_transition(c.item_id, true, NULL);
}

/* Strict mode: evidence required (400), quoted from the payload's text values (409
 * evidence_not_found when not), white space runs read as one; not waived by force. */
static void test_lint_strict_evidence(void **state)
{
    (void)state;
    vt_register(&srv, "ls", "a",
                "\"payload\": {\"title\": \"Cheap pills\", \"n\": 42,"
                " \"body\": {\"parts\": [\"Click   here\\nto WIN a prize\"]}}");
    vt_resp p =
        vt_http(&srv, "PATCH", "/v1/flow-steps/ls", VT_ADMIN, "{\"strict_evidence\": true}", NULL);
    assert_int_equal(p.status, 200);
    assert_true(cJSON_IsTrue(
        cJSON_GetObjectItem(cJSON_GetObjectItem(p.json, "flow_step"), "strict_evidence")));
    vt_resp_free(&p);
    vt_claim c = vt_claim1(&srv, "ls");
    vt_resp r =
        vt_dispose(&srv, &c, "\"disposition\": \"reject_source\", \"reason_code\": \"spam\"");
    vt_assert_error(&r, 400, "missing_field");
    assert_string_equal(vt_str(r.json, "field"), "evidence");
    vt_resp_free(&r);
    r = vt_dispose(&srv, &c,
                   "\"disposition\": \"reject_source\", \"reason_code\": \"spam\","
                   " \"force\": true");
    vt_assert_error(&r, 400, "missing_field");
    vt_resp_free(&r);
    static const char *absent[] = {"click here", "42", "title", "Expensive pills", "   "};
    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++) {
        char members[300];
        snprintf(members, sizeof(members),
                 "\"disposition\": \"reject_source\", \"reason_code\": \"spam\","
                 " \"evidence\": \"%s\"",
                 absent[i]);
        r = vt_dispose(&srv, &c, members);
        vt_assert_error(&r, 409, "evidence_not_found");
        assert_string_equal(vt_str(r.json, "field"), "evidence");
        vt_resp_free(&r);
    }
    char big[600], members[800];
    memset(big, 'x', 501);
    big[501] = '\0';
    snprintf(members, sizeof(members),
             "\"disposition\": \"reject_source\", \"reason_code\": \"spam\", \"evidence\": \"%s\"",
             big);
    r = vt_dispose(&srv, &c, members);
    vt_assert_error(&r, 400, "invalid_field");
    assert_string_equal(vt_str(r.json, "field"), "evidence");
    vt_resp_free(&r);
    r = vt_dispose(&srv, &c,
                   "\"disposition\": \"reject_source\", \"reason_code\": \"spam\","
                   " \"evidence\": \"Click here to WIN\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_last_transition(c.item_id, false, "Click here to WIN");
    /* outside strict mode evidence is accepted and stored, not checked */
    vt_register(&srv, "ls2", "a", "\"payload\": {\"title\": \"x\"}");
    c = vt_claim1(&srv, "ls2");
    r = vt_dispose(&srv, &c,
                   "\"disposition\": \"reject_source\", \"reason_code\": \"spam\","
                   " \"evidence\": \"not in the payload\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_last_transition(c.item_id, false, "not in the payload");
}

/* tool_result on single answers, identical on replay; on the tool-failure answer. */
static void test_lint_tool_result(void **state)
{
    (void)state;
    vt_register(&srv, "lt", "a", "\"max_defers\": 5");
    vt_claim c = vt_claim1(&srv, "lt");
    vt_resp f = tool_failure(&c, "\"tool\": \"wiki_upsert\", \"error\": \"target_path must stay"
                                 " inside root\"");
    assert_int_equal(f.status, 200);
    const char *text = vt_str(f.json, "tool_result.text");
    assert_non_null(text);
    const char *prefix = "'wiki_upsert' failed (deterministic). Do not call 'wiki_upsert'";
    assert_true(strncmp(text, prefix, strlen(prefix)) == 0);
    assert_non_null(strstr(text, vt_str(f.json, "hint")));
    assert_true(
        cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(f.json, "tool_result"), "terminal")));
    vt_resp_free(&f);
    f = tool_failure(&c, "\"tool\": \"web_fetch\", \"error\": \"HTTP 503\"");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(f.json, "retryable")));
    assert_true(
        cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(f.json, "tool_result"), "terminal")));
    vt_resp_free(&f);
    const char *m = "\"disposition\": \"defer_item\", \"reason_code\": \"tool_error\","
                    " \"retry_after_seconds\": 10";
    vt_resp r1 = vt_dispose(&srv, &c, m), r2 = vt_dispose(&srv, &c, m);
    assert_int_equal(r1.status, 200);
    assert_int_equal(r2.status, 200);
    assert_string_equal(vt_str(r1.json, "tool_result.text"),
                        "Recorded: deferred (tool_error). The source stays eligible and is retried "
                        "in about 10 s. Stop now.");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r2.json, "replayed")));
    assert_true(cJSON_Compare(cJSON_GetObjectItem(r1.json, "tool_result"),
                              cJSON_GetObjectItem(r2.json, "tool_result"), true));
    vt_resp_free(&r1);
    vt_resp_free(&r2);
    /* complete and fail */
    vt_register(&srv, "lt", "b", NULL);
    c = vt_claim1(&srv, "lt");
    r1 = vt_dispose(&srv, &c, "\"disposition\": \"complete\"");
    assert_string_equal(vt_str(r1.json, "tool_result.text"),
                        "Recorded: completed. The item is processed. Stop now.");
    vt_resp_free(&r1);
    vt_register(&srv, "lt", "c", NULL);
    c = vt_claim1(&srv, "lt");
    r1 = vt_dispose(&srv, &c,
                    "\"disposition\": \"fail\", \"error\": \"boom\", \"retryable\": false");
    assert_string_equal(vt_str(r1.json, "tool_result.text"),
                        "Recorded: failed (engine_error). The item is not retried. Stop now.");
    vt_resp_free(&r1);
}

/* POST /v1/dispositions: each entry judged on its own, each answer with its tool_result. */
static void test_lint_batch(void **state)
{
    (void)state;
    vt_claim c[3];
    char body[2000];
    for (int i = 0; i < 3; i++) {
        char ident[8];
        snprintf(ident, sizeof(ident), "b%d", i);
        vt_register(&srv, "lbt", ident, NULL);
    }
    assert_int_equal(vt_claim_n(&srv, "lbt", 3, 300, c), 3);
    search_flaked(&c[0]); /* the tooling words are backed by a failure on the record */
    search_flaked(&c[1]);
    snprintf(body, sizeof(body),
             "{\"dispositions\": ["
             "{\"job_id\": %lld, \"claim_token\": \"%s\", \"disposition\": \"reject_source\","
             " \"reason_code\": \"other\", \"reason\": \"tool error\"},"
             "{\"job_id\": %lld, \"claim_token\": \"%s\", \"disposition\": \"reject_source\","
             " \"reason_code\": \"other\", \"reason\": \"tool error\", \"force\": true},"
             "{\"job_id\": %lld, \"claim_token\": \"%s\", \"disposition\": \"defer_item\","
             " \"reason_code\": \"tool_error\", \"retry_after_seconds\": 120}]}",
             (long long)c[0].job_id, c[0].token, (long long)c[1].job_id, c[1].token,
             (long long)c[2].job_id, c[2].token);
    for (int round = 0; round < 2; round++) { /* the second: replays, the refusal again */
        vt_resp r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
        assert_int_equal(r.status, 200);
        assert_true(vt_num(r.json, "results.0.status") == 409);
        assert_string_equal(vt_str(r.json, "results.0.error"), "rejection_suspect");
        assert_string_equal(vt_str(r.json, "results.0.field"), "dispositions[0].reason");
        assert_true(vt_num(r.json, "results.1.status") == 200);
        assert_string_equal(vt_str(r.json, "results.1.tool_result.text"),
                            "Recorded: rejected (other). The source is closed for good. Stop now.");
        assert_string_equal(vt_str(r.json, "results.2.tool_result.text"),
                            "Recorded: deferred (tool_error). The source stays eligible and is "
                            "retried in about 2 min. Stop now.");
        vt_resp_free(&r);
    }
    assert_string_equal(vt_item_state(&srv, c[0].item_id), "claimed");
    assert_last_transition(c[1].item_id, true, NULL);
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

/* The briefing after two deferred attempts with a deterministic wiki_upsert failure, over
 * HTTP and as the MCP resource; the MCP tool calls go through the lint. */
static void test_lint_briefing_and_mcp(void **state)
{
    (void)state;
    int64_t id = vt_register(&srv, "lbr", "a", "\"max_defers\": 10");
    for (int i = 0; i < 2; i++) {
        vt_sql("UPDATE items SET available_at = now() WHERE id = %lld", (long long)id);
        vt_claim c = vt_claim1(&srv, "lbr");
        upsert_fails(&c);
        vt_resp r = vt_dispose(&srv, &c,
                               "\"disposition\": \"defer_item\", \"reason_code\": \"tool_error\","
                               " \"reason\": \"the upsert failed\"");
        assert_int_equal(r.status, 200);
        vt_resp_free(&r);
    }
    vt_sql("UPDATE items SET available_at = now() WHERE id = %lld", (long long)id);
    vt_claim c = vt_claim1(&srv, "lbr");
    assert_int_equal(c.attempt, 3);
    char path[80];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/briefing", (long long)c.job_id);
    vt_resp r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_true(vt_num(r.json, "job_id") == (double)c.job_id);
    assert_true(vt_num(r.json, "item_id") == (double)id);
    assert_true(vt_num(r.json, "attempt") == 3);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "attempts")), 2);
    assert_string_equal(vt_str(r.json, "attempts.1.tool_failures.0.tool"), "wiki_upsert");
    assert_string_equal(vt_str(r.json, "attempts.1.tool_failures.0.kind"), "deterministic");
    const char *text = vt_str(r.json, "briefing");
    const char *prefix = "Attempt 3. Attempts 1\xe2\x80\x93"
                         "2 deferred (tool_error): 'wiki_upsert' failed deterministically "
                         "('target_path must stay inside root'). Do not reject the source for "
                         "that";
    if (strncmp(text, prefix, strlen(prefix)) != 0)
        fail_msg("briefing: %s", text);
    assert_true(strlen(text) <= 2000);
    char *want = strdup(text);
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/v1/jobs/999999999/briefing", VT_READER, NULL, NULL);
    vt_assert_error(&r, 404, "not_found");
    vt_resp_free(&r);
    /* the MCP resource: the same text */
    r = mcp(&c, "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"resources/list\"}");
    assert_string_equal(vt_str(r.json, "result.resources.1.uri"), "verdict://job/briefing");
    vt_resp_free(&r);
    r = mcp(&c, "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"resources/read\","
                " \"params\": {\"uri\": \"verdict://job/briefing\"}}");
    assert_string_equal(vt_str(r.json, "result.contents.0.text"), want);
    free(want);
    vt_resp_free(&r);
    /* MCP tool calls: the deterministic failure of this attempt makes a rejection suspect */
    upsert_fails(&c);
    r = mcp(&c, "{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"tools/call\", \"params\":"
                " {\"name\": \"reject_source\", \"arguments\": {\"reason_code\": \"too_thin\"}}}");
    assert_true(
        cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "result"), "isError")));
    assert_string_equal(vt_str(r.json, "result.structuredContent.error"), "rejection_suspect");
    vt_resp_free(&r);
    r = mcp(&c, "{\"jsonrpc\": \"2.0\", \"id\": 4, \"method\": \"tools/call\", \"params\":"
                " {\"name\": \"defer_item\", \"arguments\": {\"reason_code\": \"tool_error\","
                " \"retry_after_seconds\": 10}}}");
    assert_true(
        cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "result"), "isError")));
    assert_string_equal(vt_str(r.json, "result.content.0.text"),
                        "Recorded: deferred (tool_error). The source stays eligible and is retried "
                        "in about 10 s. Stop now.");
    assert_string_equal(vt_str(r.json, "result.structuredContent.tool_result.text"),
                        vt_str(r.json, "result.content.0.text"));
    vt_resp_free(&r);
}

/* An MCP report_tool_failure: the model reads tool_result.text. */
static void test_lint_mcp_tool_failure_text(void **state)
{
    (void)state;
    vt_register(&srv, "lm", "a", NULL);
    vt_claim c = vt_claim1(&srv, "lm");
    vt_resp r =
        mcp(&c, "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\", \"params\":"
                " {\"name\": \"report_tool_failure\", \"arguments\": {\"tool\": \"wiki_upsert\","
                " \"error\": \"target_path must stay inside root\"}}}");
    assert_string_equal(vt_str(r.json, "result.content.0.text"),
                        vt_str(r.json, "result.structuredContent.tool_result.text"));
    assert_non_null(strstr(vt_str(r.json, "result.content.0.text"), "'wiki_upsert' failed"));
    vt_resp_free(&r);
    /* reject_source with force and evidence passes through the MCP schema */
    r = mcp(&c, "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"tools/call\", \"params\":"
                " {\"name\": \"reject_source\", \"arguments\": {\"reason_code\": \"spam\","
                " \"force\": true, \"evidence\": \"buy now\"}}}");
    assert_true(
        cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "result"), "isError")));
    vt_resp_free(&r);
    assert_last_transition(c.item_id, true, "buy now");
}

VT_SERVER_FIXTURE(srv, NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lint_tooling_reason),
        cmocka_unit_test(test_lint_words_signal),
        cmocka_unit_test(test_lint_deterministic_failure),
        cmocka_unit_test(test_lint_retriable_adjudication),
        cmocka_unit_test(test_lint_strict_evidence),
        cmocka_unit_test(test_lint_tool_result),
        cmocka_unit_test(test_lint_batch),
        cmocka_unit_test(test_lint_briefing_and_mcp),
        cmocka_unit_test(test_lint_mcp_tool_failure_text),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
