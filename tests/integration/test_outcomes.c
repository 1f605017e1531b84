/* test_outcomes.c - SPEC §6 and §7 over HTTP against PostgreSQL: tool-failure envelopes and
 * the loop guard (the seed scenario), the required-tool guard, redaction, every adjudication
 * vector through /v1/adjudications, and session outcomes applied to jobs. */
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
    char path[80], body[20000];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/tool-failures", (long long)c->job_id);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\", %s}", c->token, members);
    return vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
}

/* The seed: a weak model retried a deterministic skill failure 3-4 times. */
static void test_outcomes_deterministic_never_retryable(void **state)
{
    (void)state;
    vt_register(&srv, "tf", "a", NULL);
    vt_claim c = vt_claim1(&srv, "tf");
    for (int i = 1; i <= 4; i++) {
        vt_resp r = tool_failure(&c, "\"tool\": \"skills__tldr\", \"args\": {\"q\": \"x\"},"
                                     " \"error\": \"iteration_cap\", \"kind\": \"deterministic\"");
        assert_int_equal(r.status, 200);
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "success")));
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "retryable")));
        assert_string_equal(vt_str(r.json, "error"), "iteration_cap");
        assert_string_equal(vt_str(r.json, "tool"), "skills__tldr");
        assert_true(vt_num(r.json, "repeat_count") == i);
        assert_non_null(strstr(vt_str(r.json, "hint"), "'skills__tldr'"));
        vt_resp_free(&r);
    }
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)c.job_id);
    vt_resp r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
    assert_true(vt_num(r.json, "job.tool_failures.count") == 4);
    assert_string_equal(vt_str(r.json, "job.tool_failures.by_tool.0.tool"), "skills__tldr");
    assert_string_equal(vt_str(r.json, "job.tool_failures.by_tool.0.last_error"), "iteration_cap");
    vt_resp_free(&r);
}

static void test_outcomes_error_passed_verbatim(void **state)
{
    (void)state;
    vt_register(&srv, "tfv", "a", NULL);
    vt_claim c = vt_claim1(&srv, "tfv");
    static const char *errors[] = {
        "{\\\"success\\\":false,\\\"error\\\":\\\"iteration_cap\\\"}",
        "quotes \\\" and backslash \\\\ and tab \\t",
        "unicode: caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 \\u00e9",
    };
    static const char *expect[] = {
        "{\"success\":false,\"error\":\"iteration_cap\"}",
        "quotes \" and backslash \\ and tab \t",
        "unicode: caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 \xc3\xa9",
    };
    for (size_t i = 0; i < 3; i++) {
        char members[512];
        snprintf(members, sizeof(members), "\"tool\": \"t%zu\", \"error\": \"%s\"", i, errors[i]);
        vt_resp r = tool_failure(&c, members);
        assert_int_equal(r.status, 200);
        assert_string_equal(vt_str(r.json, "error"), expect[i]);
        vt_resp_free(&r);
    }
    char big[4100], members[4300];
    memset(big, 'e', 4000);
    big[4000] = '\0';
    snprintf(members, sizeof(members), "\"tool\": \"big\", \"error\": \"%s\"", big);
    vt_resp r = tool_failure(&c, members);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "error"), big);
    vt_resp_free(&r);
    r = tool_failure(&c, "\"tool\": \"x\", \"error\": \"\"");
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
    r = tool_failure(&c, "\"tool\": \"x\", \"error\": \"e\", \"kind\": \"flaky\"");
    vt_assert_error(&r, 400, "invalid_field");
    assert_string_equal(vt_str(r.json, "field"), "kind");
    vt_resp_free(&r);
}

static void test_outcomes_transient_loop_threshold(void **state)
{
    (void)state;
    vt_register(&srv, "tft", "a", NULL);
    vt_claim c = vt_claim1(&srv, "tft");
    /* the loop guard counts by (job, tool, failure template), whatever the arguments: a
     * model that varies a nonce or the key order is still counted (it counted identical
     * arguments before) */
    static const char *calls[] = {
        "\"tool\": \"web_fetch\", \"args\": {\"url\": \"u\", \"depth\": 1}, \"error\": \"HTTP "
        "503 Service Unavailable\"",
        "\"tool\": \"web_fetch\", \"args\": {\"depth\": 1, \"url\": \"u\"}, \"error\": \"HTTP "
        "503 Service Unavailable\"",
        "\"tool\": \"web_fetch\", \"args\": {\"url\": \"u\", \"nonce\": 7}, \"error\": \"HTTP "
        "502 Service Unavailable\"",
        "\"tool\": \"web_fetch\", \"args\": {\"url\": \" u \"}, \"error\": \"HTTP "
        "504 Service Unavailable\"",
    };
    for (int i = 0; i < 4; i++) {
        vt_resp r = tool_failure(&c, calls[i]);
        assert_int_equal(r.status, 200);
        assert_string_equal(vt_str(r.json, "kind"), "transient"); /* classified from the text */
        assert_true(vt_num(r.json, "repeat_count") == i + 1);
        if (i < 2) {
            assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "retryable")));
        } else {
            assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "retryable")));
            assert_non_null(strstr(vt_str(r.json, "hint"), "defer_item"));
            assert_non_null(strstr(vt_str(r.json, "hint"), "'web_fetch'"));
        }
        vt_resp_free(&r);
    }
    /* another failure template is another count */
    vt_resp r = tool_failure(&c, "\"tool\": \"web_fetch\", \"args\": {\"url\": \"v\"},"
                                 " \"error\": \"429 Too Many Requests\"");
    assert_true(vt_num(r.json, "repeat_count") == 1);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "retryable")));
    vt_resp_free(&r);
    r = tool_failure(&c, "\"tool\": \"validator\", \"error\": \"schema says no\"");
    assert_string_equal(vt_str(r.json, "kind"), "deterministic");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "retryable")));
    vt_resp_free(&r);
}

static void test_outcomes_required_tool_guard(void **state)
{
    (void)state;
    vt_register(&srv, "tfr", "a", NULL);
    vt_register(&srv, "tfr", "b", NULL);
    vt_claim c = vt_claim1(&srv, "tfr");
    vt_resp r = tool_failure(&c, "\"tool\": \"wp_upsert\", \"error\": \"500\", \"required\": true");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    const char *reject = "\"disposition\": \"reject_source\", \"reason_code\": \"low_quality\"";
    r = vt_dispose(&srv, &c, reject);
    vt_assert_error(&r, 409, "tool_failure_pending");
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "retryable")));
    assert_non_null(strstr(vt_str(r.json, "hint"), "defer_item"));
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, c.item_id), "claimed");
    /* skip_item that maps to a rejection is held by the same guard */
    r = vt_dispose(&srv, &c, "\"disposition\": \"skip_item\", \"reason\": \"spam\"");
    vt_assert_error(&r, 409, "tool_failure_pending");
    vt_resp_free(&r);
    /* force overrides it, and the transition says so */
    r = vt_dispose(&srv, &c,
                   "\"disposition\": \"reject_source\", \"reason_code\": \"low_quality\","
                   " \"force\": true");
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "item.state"), "rejected");
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE job_id = %lld AND forced",
                                 (long long)c.job_id),
                     1);
    /* defer_item is unaffected */
    vt_claim d = vt_claim1(&srv, "tfr");
    r = tool_failure(&d, "\"tool\": \"wp_upsert\", \"error\": \"500\", \"required\": true");
    vt_resp_free(&r);
    r = vt_dispose(&srv, &d, "\"disposition\": \"defer_item\", \"reason_code\": \"tool_error\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    /* a finished job takes no more tool failures */
    r = tool_failure(&d, "\"tool\": \"x\", \"error\": \"late\"");
    vt_assert_error(&r, 409, "job_finalized");
    vt_resp_free(&r);
}

static void test_outcomes_redaction(void **state)
{
    (void)state;
    vt_register(&srv, "tfx", "a", NULL);
    vt_claim c = vt_claim1(&srv, "tfx");
    vt_resp r = tool_failure(&c, "\"tool\": \"wp\", \"error\": \"401 with Authorization: Bearer"
                                 " abc.def password=hunter2\"");
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(vt_str(r.json, "error"), "Bearer abc.def")); /* verbatim to the caller */
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM tool_failures WHERE error LIKE '%%abc.def%%'"
                                 " OR error LIKE '%%hunter2%%'"),
                     0);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM tool_failures WHERE error LIKE"
                                 " '%%[REDACTED]%%'"),
                     1);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "grep -q -e abc.def -e hunter2 %s", srv.log_path);
    assert_int_not_equal(system(cmd), 0); /* and not in the logs */
}

/* Every vector of tests/vectors/adjudication.jsonl through the HTTP endpoint. */
static void test_outcomes_vectors_over_http(void **state)
{
    (void)state;
    FILE *f = fopen(VERDICT_TEST_DATA_DIR "/vectors/adjudication.jsonl", "r");
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    assert_non_null(f);
    while (getline(&line, &cap, f) > 0) {
        cJSON *v = cJSON_Parse(line);
        if (!v)
            continue;
        cJSON *body = cJSON_CreateObject();
        cJSON_AddItemToObject(body, "session",
                              cJSON_Duplicate(cJSON_GetObjectItem(v, "session"), true));
        char *text = cJSON_PrintUnformatted(body);
        vt_resp r = vt_http(&srv, "POST", "/v1/adjudications", VT_WORKER, text, NULL);
        const cJSON *adj = cJSON_GetObjectItem(r.json, "adjudication");
        if (r.status != 200 || !adj)
            fail_msg("%s: %ld %s", vt_str(v, "name"), r.status, r.body);
        for (const cJSON *e = cJSON_GetObjectItem(v, "expect")->child; e; e = e->next) {
            if (!cJSON_Compare(e, cJSON_GetObjectItem(adj, e->string), true))
                fail_msg("%s: %s differs: %s", vt_str(v, "name"), e->string, r.body);
        }
        vt_resp_free(&r);
        free(text);
        cJSON_Delete(body);
        cJSON_Delete(v);
        n++;
    }
    free(line);
    fclose(f);
    assert_true(n >= 60);
    vt_resp r = vt_http(&srv, "POST", "/v1/adjudications", VT_WORKER,
                        "{\"session\": {\"stdout\": \"\", \"termination\": \"bored\"}}", NULL);
    vt_assert_error(&r, 400, "invalid_field");
    assert_string_equal(vt_str(r.json, "field"), "session.termination");
    vt_resp_free(&r);
    r = vt_http(&srv, "POST", "/v1/adjudications", VT_WORKER,
                "{\"session\": {\"stdout\": \"\", \"parsed\": {}}}", NULL);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
    r = vt_http(&srv, "POST", "/v1/adjudications", VT_WORKER, "{\"session\": {}}", NULL);
    vt_assert_error(&r, 400, "missing_field");
    vt_resp_free(&r);
}

#define OK_SESSION                                                                                 \
    "{\"returncode\": 0, \"stdout\": \"{\\\"type\\\": \\\"result\\\", \\\"subtype\\\":"            \
    " \\\"success\\\", \\\"is_error\\\": false, \\\"result\\\": \\\"all done\\\"}\"}"
#define STALE_SESSION "{\"returncode\": -1, \"termination\": \"stale\", \"stdout\": \"\"}"
#define VIOLATION_SESSION                                                                          \
    "{\"returncode\": 0, \"completion_marker\": \"%%%%ORDER_UP%%%%\", "                            \
    "\"expected_output_patterns\": [\"plan_path\\\\s*=\\\\s*/.+\"], \"stdout\": "                  \
    "\"{\\\"type\\\": \\\"result\\\", \\\"subtype\\\": \\\"success\\\", \\\"is_error\\\": "        \
    "false, \\\"result\\\": \\\"plan summary\\\\n%%%%ORDER_UP%%%%\\\"}\"}"

static vt_resp session_outcome(const vt_claim *c, const char *session, const char *extra)
{
    char path[80], body[4096];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/session-outcome", (long long)c->job_id);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\", \"session\": %s%s}", c->token, session,
             extra ? extra : "");
    return vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
}

static void test_outcomes_session_apply(void **state)
{
    (void)state;
    /* succeeded -> processed */
    vt_register(&srv, "so", "ok", NULL);
    vt_claim c = vt_claim1(&srv, "so");
    vt_resp r = session_outcome(&c, OK_SESSION, NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "adjudication.outcome"), "succeeded");
    assert_string_equal(vt_str(r.json, "item.state"), "processed");
    assert_string_equal(vt_str(r.json, "job.status"), "completed");
    assert_string_equal(vt_str(r.json, "job.adjudication.outcome"), "succeeded");
    vt_resp_free(&r);
    /* the identical report again is a replay */
    r = session_outcome(&c, OK_SESSION, NULL);
    assert_int_equal(r.status, 200);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "replayed")));
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE job_id = %lld AND cause ="
                                 " 'session_outcome'",
                                 (long long)c.job_id),
                     1);
    /* contract_violation -> failed, never retried */
    int64_t id = vt_register(&srv, "so", "violation", NULL);
    c = vt_claim1(&srv, "so");
    assert_int_equal(c.item_id, id);
    r = session_outcome(&c, VIOLATION_SESSION, NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "adjudication.content_state"), "contract_violation");
    assert_string_equal(vt_str(r.json, "adjudication.outcome"), "failed");
    assert_string_equal(vt_str(r.json, "item.state"), "failed");
    assert_string_equal(vt_str(r.json, "item.last_reason_code"), "adjudicated_failure");
    vt_resp_free(&r);
    vt_claim none[2];
    assert_int_equal(vt_claim_n(&srv, "so", 2, 60, none), 0);
}

static void test_outcomes_session_retries_and_budgets(void **state)
{
    (void)state;
    /* retriable -> released with backoff; the failure budget ends it */
    int64_t id = vt_register(&srv, "sr", "a", "\"max_attempts\": 2");
    vt_claim c = vt_claim1(&srv, "sr");
    vt_resp r = session_outcome(&c, STALE_SESSION, NULL);
    assert_string_equal(vt_str(r.json, "adjudication.outcome"), "retriable");
    assert_string_equal(vt_str(r.json, "item.state"), "deferred");
    assert_string_equal(vt_str(r.json, "job.status"), "failed");
    vt_resp_free(&r);
    vt_claim none[2];
    assert_int_equal(vt_claim_n(&srv, "sr", 2, 60, none), 0); /* backoff holds it */
    vt_sql("UPDATE items SET available_at = now() WHERE id = %lld", (long long)id);
    c = vt_claim1(&srv, "sr");
    r = session_outcome(&c, STALE_SESSION, NULL);
    assert_string_equal(vt_str(r.json, "item.state"), "failed");
    assert_string_equal(vt_str(r.json, "item.last_reason_code"), "retry_budget_exhausted");
    vt_resp_free(&r);
    /* prior_consecutive_retries comes from the item's own history: the 4th stale in a row
     * exhausts max_consecutive_retries (3), whatever the caller claims */
    id = vt_register(&srv, "sb", "a", "\"max_attempts\": 10");
    for (int i = 0; i < 4; i++) {
        vt_sql("UPDATE items SET available_at = now() WHERE id = %lld", (long long)id);
        c = vt_claim1(&srv, "sb");
        r = session_outcome(&c,
                            "{\"returncode\": -1, \"termination\": \"stale\", \"stdout\": \"\","
                            " \"prior_consecutive_retries\": 0}",
                            NULL);
        assert_int_equal(r.status, 200);
        assert_string_equal(vt_str(r.json, "adjudication.retry_reason"),
                            i < 3 ? "stale" : "budget_exhausted");
        assert_string_equal(vt_str(r.json, "item.state"), i < 3 ? "deferred" : "failed");
        if (i == 3)
            assert_string_equal(vt_str(r.json, "item.last_reason_code"), "budget_exhausted");
        vt_resp_free(&r);
    }
}

static void test_outcomes_session_record_only_and_errors(void **state)
{
    (void)state;
    vt_register(&srv, "sn", "a", NULL);
    vt_claim c = vt_claim1(&srv, "sn");
    vt_resp r = session_outcome(&c, STALE_SESSION, ", \"apply\": false");
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "adjudication.outcome"), "retriable");
    assert_string_equal(vt_str(r.json, "item.state"), "claimed");
    assert_string_equal(vt_str(r.json, "job.status"), "processing");
    assert_string_equal(vt_str(r.json, "job.adjudication.retry_reason"), "stale");
    vt_resp_free(&r);
    r = session_outcome(&c, "{\"stdout\": 7}", NULL);
    vt_assert_error(&r, 400, "invalid_field");
    assert_string_equal(vt_str(r.json, "field"), "session.stdout");
    vt_resp_free(&r);
    r = session_outcome(&c, "\"nope\"", NULL);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
    vt_claim wrong = c;
    snprintf(wrong.token, sizeof(wrong.token), "00000000-0000-4000-8000-000000000001");
    r = session_outcome(&wrong, OK_SESSION, NULL);
    vt_assert_error(&r, 409, "claim_lost");
    vt_resp_free(&r);
    r = session_outcome(&c, OK_SESSION, NULL);
    assert_string_equal(vt_str(r.json, "item.state"), "processed");
    vt_resp_free(&r);
    r = session_outcome(&c, STALE_SESSION, NULL);
    vt_assert_error(&r, 409, "job_finalized");
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/metrics", VT_READER, NULL, NULL);
    assert_non_null(strstr(r.body, "verdict_session_outcomes_total{outcome=\"succeeded\""));
    assert_non_null(
        strstr(r.body, "verdict_tool_failures_total{kind=\"deterministic\",retryable=\"false\"}"));
    vt_resp_free(&r);
}

VT_SERVER_FIXTURE(srv, NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outcomes_deterministic_never_retryable),
        cmocka_unit_test(test_outcomes_error_passed_verbatim),
        cmocka_unit_test(test_outcomes_transient_loop_threshold),
        cmocka_unit_test(test_outcomes_required_tool_guard),
        cmocka_unit_test(test_outcomes_redaction),
        cmocka_unit_test(test_outcomes_vectors_over_http),
        cmocka_unit_test(test_outcomes_session_apply),
        cmocka_unit_test(test_outcomes_session_retries_and_budgets),
        cmocka_unit_test(test_outcomes_session_record_only_and_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
