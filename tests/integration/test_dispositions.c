/* test_dispositions.c - SPEC §1.3 and §5 over HTTP against PostgreSQL: the seed incident's
 * acceptance criteria, every row of the transition table, both budgets, replays, job
 * finalisation, requeue, skip_item mapping, redaction and the served tool definitions. */
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

static int claim_all(const char *flow, vt_claim *out, int max)
{
    return vt_claim_n(&srv, flow, max, 300, out);
}

static void dispose_ok(const vt_claim *c, const char *members, const char *expect_state)
{
    vt_resp r = vt_dispose(&srv, c, members);
    if (r.status != 200)
        fail_msg("%s: %ld %s", members, r.status, r.body);
    assert_string_equal(vt_str(r.json, "item.state"), expect_state);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "replayed")));
    vt_resp_free(&r);
}

/* Seed 1: reject_source marks the item done; a later claim never returns it. */
static void test_dispositions_reject_is_final(void **state)
{
    (void)state;
    vt_claim c[4];
    int64_t id = vt_register(&srv, "rej", "a", NULL);
    vt_claim cl = vt_claim1(&srv, "rej");
    vt_resp r = vt_dispose(&srv, &cl,
                           "\"disposition\": \"reject_source\", \"reason_code\": \"too_thin\","
                           " \"reason\": \"one-line post\"");
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "disposition"), "reject_source");
    assert_string_equal(vt_str(r.json, "job.status"), "rejected");
    assert_string_equal(vt_str(r.json, "item.state"), "rejected");
    assert_string_equal(vt_str(r.json, "item.last_reason_code"), "too_thin");
    vt_resp_free(&r);
    assert_int_equal(claim_all("rej", c, 4), 0);
    vt_register(&srv, "rej", "a", NULL); /* re-registering does not revive it */
    assert_int_equal(claim_all("rej", c, 4), 0);
    assert_string_equal(vt_item_state(&srv, id), "rejected");
}

/* Seed 2 and 3: defer_item releases the claim; the item stays claimable; a tool-error
 * deferral and a legacy skip_item "tool-error" never exclude it for good. */
static void test_dispositions_defer_keeps_item_eligible(void **state)
{
    (void)state;
    int64_t id = vt_register(&srv, "dfr", "a", "\"max_defers\": 10");
    vt_claim cl = vt_claim1(&srv, "dfr");
    dispose_ok(&cl,
               "\"disposition\": \"defer_item\", \"reason_code\": \"tool_error\","
               " \"reason\": \"generated wiki article failed quality gates\","
               " \"retry_after_seconds\": 0",
               "deferred");
    vt_claim again = vt_claim1(&srv, "dfr");
    assert_int_equal(again.item_id, id);
    assert_int_equal(again.attempt, 2);
    vt_resp r = vt_dispose(&srv, &again, "\"disposition\": \"skip_item\", \"reason\": \"tool-error\"");
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "disposition"), "defer_item");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "deprecated")));
    assert_string_equal(vt_str(r.json, "mapped_to"), "defer_item");
    assert_non_null(strstr(vt_str(r.json, "hint"), "defer_item"));
    assert_string_equal(vt_str(r.json, "item.state"), "deferred");
    assert_string_equal(vt_str(r.json, "item.last_reason_code"), "tool_error");
    vt_resp_free(&r);
    /* still unprocessed and eligible: it comes back after its backoff */
    vt_sql("UPDATE items SET available_at = now() WHERE id = %lld", (long long)id);
    vt_claim third = vt_claim1(&srv, "dfr");
    assert_int_equal(third.item_id, id);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM transitions WHERE item_id = %lld"
                                 " AND cause = 'skip_item' AND to_state = 'deferred'",
                                 (long long)id),
                     1);
    dispose_ok(&third, "\"disposition\": \"complete\"", "processed");
}

/* Seed 4: complete marks processed exactly once; replays change nothing. */
static void test_dispositions_complete_once_and_replay(void **state)
{
    (void)state;
    int64_t id = vt_register(&srv, "cmp", "a", NULL);
    vt_claim cl = vt_claim1(&srv, "cmp");
    const char *m = "\"disposition\": \"complete\", \"engine_data\": {\"post_id\": 7}";
    vt_resp r1 = vt_dispose(&srv, &cl, m);
    vt_resp r2 = vt_dispose(&srv, &cl, m);
    vt_resp r3 = vt_dispose(&srv, &cl, m);
    assert_int_equal(r1.status, 200);
    assert_int_equal(r2.status, 200);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r1.json, "replayed")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r2.json, "replayed")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r3.json, "replayed")));
    assert_string_equal(r2.body, r3.body);
    /* identical apart from the replayed flag */
    cJSON_DeleteItemFromObject(r1.json, "replayed");
    cJSON_DeleteItemFromObject(r2.json, "replayed");
    assert_true(cJSON_Compare(r1.json, r2.json, true));
    assert_true(vt_num(r1.json, "job.engine_data.post_id") == 7);
    vt_resp_free(&r1);
    vt_resp_free(&r2);
    vt_resp_free(&r3);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM transitions WHERE item_id = %lld"
                                 " AND cause = 'complete'", (long long)id),
                     1);
    /* a different disposition on the finished job names the one that stands */
    vt_resp r = vt_dispose(&srv, &cl, "\"disposition\": \"reject_source\", \"reason_code\": \"spam\"");
    vt_assert_error(&r, 409, "job_finalized");
    assert_non_null(strstr(vt_str(r.json, "message"), "'complete'"));
    vt_resp_free(&r);
    /* a different payload of the same disposition is a different call too */
    r = vt_dispose(&srv, &cl, "\"disposition\": \"complete\", \"engine_data\": {\"post_id\": 8}");
    vt_assert_error(&r, 409, "job_finalized");
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, id), "processed");
}

static void test_dispositions_defer_budget_and_manual_review(void **state)
{
    (void)state;
    vt_register(&srv, "dbud", "a", "\"max_defers\": 3");
    const char *defer = "\"disposition\": \"defer_item\", \"reason_code\": \"low_confidence\","
                        " \"retry_after_seconds\": 0";
    for (int i = 1; i <= 3; i++) {
        vt_claim cl = vt_claim1(&srv, "dbud");
        dispose_ok(&cl, defer, i < 3 ? "deferred" : "manual_review");
    }
    vt_claim none[2];
    assert_int_equal(claim_all("dbud", none, 2), 0);
    /* manual_review: true parks at once */
    vt_register(&srv, "dman", "a", NULL);
    vt_claim cl = vt_claim1(&srv, "dman");
    vt_resp r = vt_dispose(&srv, &cl,
                           "\"disposition\": \"defer_item\", \"reason_code\": \"quality_gate\","
                           " \"manual_review\": true");
    assert_string_equal(vt_str(r.json, "item.state"), "manual_review");
    assert_string_equal(vt_str(r.json, "job.status"), "deferred");
    vt_resp_free(&r);
    assert_int_equal(claim_all("dman", none, 2), 0);
}

static void test_dispositions_fail_budget_and_backoff(void **state)
{
    (void)state;
    int64_t id = vt_register(&srv, "fbud", "a", "\"max_attempts\": 3");
    const char *fail = "\"disposition\": \"fail\", \"error\": \"upsert failed: 500\"";
    for (int i = 1; i <= 3; i++) {
        vt_sql("UPDATE items SET available_at = now() WHERE id = %lld", (long long)id);
        vt_claim cl = vt_claim1(&srv, "fbud");
        dispose_ok(&cl, fail, i < 3 ? "deferred" : "failed");
        if (i == 1) {
            /* backoff(1) = base 10 s +-20% */
            long wait = vt_sql_long("SELECT extract(epoch FROM available_at - updated_at)::int"
                                    " FROM items WHERE id = %lld", (long long)id);
            assert_true(wait >= 7 && wait <= 13);
        }
    }
    assert_int_equal(vt_sql_long("SELECT failures FROM items WHERE id = %lld", (long long)id), 3);
    vt_claim none[2];
    vt_sql("UPDATE items SET available_at = now() WHERE id = %lld", (long long)id);
    assert_int_equal(claim_all("fbud", none, 2), 0);
    /* retry_after_seconds is a floor; retryable false fails at once */
    int64_t id2 = vt_register(&srv, "fra", "a", NULL);
    vt_claim cl = vt_claim1(&srv, "fra");
    dispose_ok(&cl, "\"disposition\": \"fail\", \"error\": \"429\", \"retry_after_seconds\": 900",
               "deferred");
    assert_true(vt_sql_long("SELECT extract(epoch FROM available_at - updated_at)::int FROM items"
                            " WHERE id = %lld", (long long)id2) >= 899);
    vt_register(&srv, "fnr", "a", NULL);
    cl = vt_claim1(&srv, "fnr");
    dispose_ok(&cl, "\"disposition\": \"fail\", \"error\": \"schema mismatch\", \"retryable\": false",
               "failed");
}

static void test_dispositions_requeue(void **state)
{
    (void)state;
    char path[64];
    int64_t id = vt_register(&srv, "rq", "a", "\"max_attempts\": 1");
    vt_claim cl = vt_claim1(&srv, "rq");
    /* a live claim cannot be requeued */
    snprintf(path, sizeof(path), "/v1/items/%lld/requeue", (long long)id);
    vt_resp r = vt_http(&srv, "POST", path, VT_ADMIN, "{\"reason\": \"x\"}", NULL);
    vt_assert_error(&r, 409, "invalid_transition");
    vt_resp_free(&r);
    dispose_ok(&cl, "\"disposition\": \"fail\", \"error\": \"boom\"", "failed");
    r = vt_http(&srv, "POST", path, VT_WORKER, "{}", NULL);
    vt_assert_error(&r, 403, "forbidden");
    vt_resp_free(&r);
    r = vt_http(&srv, "POST", path, VT_ADMIN, "{\"reason\": \"fixed the upsert\", \"reset_budgets\": true}",
                NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "item.state"), "available");
    assert_true(vt_num(r.json, "item.failures") == 0);
    vt_resp_free(&r);
    cl = vt_claim1(&srv, "rq");
    assert_int_equal(cl.item_id, id);
    dispose_ok(&cl, "\"disposition\": \"complete\"", "processed");
    r = vt_http(&srv, "POST", "/v1/items/99999999/requeue", VT_ADMIN, "{}", NULL);
    vt_assert_error(&r, 404, "not_found");
    vt_resp_free(&r);
    /* bulk: the dashboard's "retry all failed" */
    char ident[16];
    for (int i = 0; i < 5; i++) {
        snprintf(ident, sizeof(ident), "b%d", i);
        vt_register(&srv, "rqb", ident, NULL);
        cl = vt_claim1(&srv, "rqb");
        dispose_ok(&cl, "\"disposition\": \"fail\", \"error\": \"x\", \"retryable\": false", "failed");
    }
    r = vt_http(&srv, "POST", "/v1/items/requeue", VT_ADMIN,
                "{\"flow_step_id\": \"rqb\", \"state\": \"failed\", \"limit\": 3, \"reason\": \"bulk\"}",
                NULL);
    assert_int_equal(r.status, 200);
    assert_true(vt_num(r.json, "requeued") == 3);
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'rqb' AND"
                                 " state = 'available'"),
                     3);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM transitions t JOIN items i ON"
                                 " i.id = t.item_id WHERE i.flow_step_id = 'rqb' AND"
                                 " t.cause = 'requeue' AND t.actor = 'ops'"),
                     3);
    r = vt_http(&srv, "POST", "/v1/items/requeue", VT_ADMIN,
                "{\"flow_step_id\": \"rqb\", \"state\": \"claimed\"}", NULL);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
}

static void test_dispositions_skip_item_mapping(void **state)
{
    (void)state;
    static const struct {
        const char *reason;
        const char *mapped;
        const char *code;
    } cases[] = {
        {"spam", "reject_source", "spam"},
        {"Too Thin", "reject_source", "too_thin"},
        {"off-topic", "reject_source", "irrelevant"},
        {"dupe", "reject_source", "duplicate"},
        {"tool-error", "defer_item", "tool_error"},
        {"quality gate timeout", "defer_item", "tool_error"},
        {"", "defer_item", "other"},
        {"no idea", "defer_item", "other"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char ident[16], members[256];
        snprintf(ident, sizeof(ident), "s%zu", i);
        vt_register(&srv, "skip", ident, NULL);
        vt_claim cl = vt_claim1(&srv, "skip");
        snprintf(members, sizeof(members), "\"disposition\": \"skip_item\", \"reason\": \"%s\"",
                 cases[i].reason);
        vt_resp r = vt_dispose(&srv, &cl, members);
        assert_int_equal(r.status, 200);
        if (strcmp(vt_str(r.json, "mapped_to"), cases[i].mapped) != 0 ||
            strcmp(vt_str(r.json, "item.last_reason_code"), cases[i].code) != 0)
            fail_msg("skip_item '%s': %s", cases[i].reason, r.body);
        assert_string_equal(vt_str(r.json, "item.state"),
                            strcmp(cases[i].mapped, "reject_source") == 0 ? "rejected"
                                                                          : "deferred");
        vt_resp_free(&r);
    }
}

static void test_dispositions_bad_calls(void **state)
{
    (void)state;
    vt_register(&srv, "bad", "a", NULL);
    vt_claim cl = vt_claim1(&srv, "bad");
    static const struct {
        const char *members;
        long status;
        const char *code;
        const char *field;
    } cases[] = {
        {"\"disposition\": \"reject_source\"", 400, "missing_field", "reason_code"},
        {"\"disposition\": \"reject_source\", \"reason_code\": \"tool_error\"", 400,
         "invalid_field", "reason_code"},
        {"\"disposition\": \"defer_item\", \"reason_code\": \"spam\"", 400, "invalid_field",
         "reason_code"},
        {"\"disposition\": \"fail\"", 400, "missing_field", "error"},
        {"\"disposition\": \"explode\"", 400, "invalid_field", "disposition"},
        {"\"reason\": \"x\"", 400, "missing_field", "disposition"},
        {"\"disposition\": \"defer_item\", \"reason_code\": \"other\", \"retry_after_seconds\": "
         "604801",
         400, "invalid_field", "retry_after_seconds"},
        {"\"disposition\": \"complete\", \"engine_data\": [1]", 400, "invalid_field",
         "engine_data"},
        {"\"disposition\": \"fail\", \"error\": \"x\", \"retryable\": \"no\"", 400,
         "invalid_field", "retryable"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        vt_resp r = vt_dispose(&srv, &cl, cases[i].members);
        const char *field = vt_str(r.json, "field");
        if (r.status != cases[i].status || strcmp(vt_str(r.json, "error"), cases[i].code) != 0 ||
            !field || strcmp(field, cases[i].field) != 0)
            fail_msg("case %zu (%s): %ld %s", i, cases[i].members, r.status, r.body);
        vt_resp_free(&r);
    }
    /* a long reason is refused, nothing half-written */
    char members[3000] = "\"disposition\": \"complete\", \"reason\": \"";
    size_t n = strlen(members);
    memset(members + n, 'r', 2001);
    snprintf(members + n + 2001, sizeof(members) - n - 2001, "\"");
    vt_resp r = vt_dispose(&srv, &cl, members);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
    /* the wrong token and an unknown job */
    vt_claim wrong = cl;
    snprintf(wrong.token, sizeof(wrong.token), "00000000-0000-4000-8000-000000000000");
    r = vt_dispose(&srv, &wrong, "\"disposition\": \"complete\"");
    vt_assert_error(&r, 409, "claim_lost");
    vt_resp_free(&r);
    wrong.job_id = 987654321;
    r = vt_dispose(&srv, &wrong, "\"disposition\": \"complete\"");
    vt_assert_error(&r, 404, "not_found");
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, cl.item_id), "claimed");
    assert_int_equal(vt_sql_long("SELECT count(*) FROM transitions WHERE item_id = %lld",
                                 (long long)cl.item_id),
                     2); /* register + claim only */
    dispose_ok(&cl, "\"disposition\": \"complete\"", "processed");
}

static void test_dispositions_redaction(void **state)
{
    (void)state;
    vt_register(&srv, "red", "a", NULL);
    vt_claim cl = vt_claim1(&srv, "red");
    dispose_ok(&cl,
               "\"disposition\": \"fail\", \"error\": \"POST /wp-json failed: Authorization:"
               " Bearer abc.def.ghi api_key=s3cr3t\"",
               "deferred");
    char *stored = vt_sql("SELECT reason FROM jobs WHERE id = %lld", (long long)cl.job_id);
    assert_non_null(stored);
    assert_null(strstr(stored, "abc.def.ghi"));
    assert_null(strstr(stored, "s3cr3t"));
    assert_non_null(strstr(stored, "[REDACTED]"));
    free(stored);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM transitions WHERE reason LIKE '%%abc.def%%'"
                                 " OR reason LIKE '%%s3cr3t%%'"),
                     0);
}

static void test_dispositions_tool_definitions(void **state)
{
    (void)state;
    static const char *formats[] = {"openai", "anthropic", "mcp"};
    for (size_t f = 0; f < 3; f++) {
        char path[64];
        snprintf(path, sizeof(path), "/v1/tool-definitions?format=%s", formats[f]);
        vt_resp r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
        assert_int_equal(r.status, 200);
        const cJSON *tools = cJSON_GetObjectItem(r.json, "tools");
        assert_int_equal(cJSON_GetArraySize(tools), 4);
        assert_null(strstr(r.body, "skip_item"));
        const char *name = f == 0 ? vt_str(r.json, "tools.1.function.name")
                                  : vt_str(r.json, "tools.1.name");
        assert_string_equal(name, "reject_source");
        vt_resp_free(&r);
    }
    vt_resp r = vt_http(&srv, "GET", "/v1/tool-definitions?format=anthropic", VT_READER, NULL, NULL);
    assert_non_null(strstr(r.body, "\"input_schema\""));
    assert_non_null(strstr(r.body, "stays eligible"));
    assert_string_equal(vt_str(r.json, "dispositions.fail_item"), "fail");
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/v1/tool-definitions?format=xml", VT_READER, NULL, NULL);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
}

static void test_dispositions_job_reads(void **state)
{
    (void)state;
    char path[64];
    vt_register(&srv, "jr", "a", NULL);
    vt_claim cl = vt_claim1(&srv, "jr");
    snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)cl.job_id);
    vt_resp r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "job.status"), "processing");
    assert_null(strstr(r.body, cl.token)); /* reads never show the token */
    vt_resp_free(&r);
    dispose_ok(&cl, "\"disposition\": \"complete\"", "processed");
    r = vt_http(&srv, "GET", "/v1/jobs?flow_step_id=jr&status=completed", VT_READER, NULL, NULL);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "jobs")), 1);
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/v1/jobs?status=nope", VT_READER, NULL, NULL);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
}

static int setup(void **state)
{
    (void)state;
    vt_db_setup();
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
        cmocka_unit_test(test_dispositions_reject_is_final),
        cmocka_unit_test(test_dispositions_defer_keeps_item_eligible),
        cmocka_unit_test(test_dispositions_complete_once_and_replay),
        cmocka_unit_test(test_dispositions_defer_budget_and_manual_review),
        cmocka_unit_test(test_dispositions_fail_budget_and_backoff),
        cmocka_unit_test(test_dispositions_requeue),
        cmocka_unit_test(test_dispositions_skip_item_mapping),
        cmocka_unit_test(test_dispositions_bad_calls),
        cmocka_unit_test(test_dispositions_redaction),
        cmocka_unit_test(test_dispositions_tool_definitions),
        cmocka_unit_test(test_dispositions_job_reads),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
