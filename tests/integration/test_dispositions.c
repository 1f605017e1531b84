/* test_dispositions.c - SPEC §1.3 and §5 over HTTP against PostgreSQL: the seed incident's
 * acceptance criteria, every row of the transition table, both budgets, replays, job
 * finalisation, requeue, skip_item mapping, redaction, the served tool definitions, and
 * batch dispositions (POST /v1/dispositions). */
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
    vt_resp r =
        vt_dispose(&srv, &again, "\"disposition\": \"skip_item\", \"reason\": \"tool-error\"");
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
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld"
                                 " AND cause = 'skip_item' AND to_state = 'deferred'",
                                 (long long)id),
                     1);
    dispose_ok(&third, "\"disposition\": \"complete\"", "processed");
}

/* The kept answer is compact (sql/migrations/0021): no job, no item, no payload in its row; a
 * replay renders the same answer from the rows even after the item moved on (requeued, claimed by
 * another job, finished again). */
static void test_dispositions_replay_after_item_moved(void **state)
{
    (void)state;
    int64_t id = vt_register(&srv, "moved", "a", "\"payload\": {\"body\": \"a long payload\"}");
    vt_claim first = vt_claim1(&srv, "moved");
    const char *m = "\"disposition\": \"defer_item\", \"reason_code\": \"other\","
                    " \"reason\": \"later\", \"retry_after_seconds\": 3600";
    vt_resp r1 = vt_dispose(&srv, &first, m);
    assert_int_equal(r1.status, 200);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE id = %lld"
                                 " AND answer_response IS NULL AND answer_item_state = 'deferred'"
                                 " AND strpos(answer_head || answer_tail, 'payload') = 0",
                                 (long long)first.job_id),
                     1);
    char path[64];
    snprintf(path, sizeof(path), "/v1/items/%lld/requeue", (long long)id);
    vt_resp q = vt_http(&srv, "POST", path, VT_ADMIN, "{}", NULL);
    assert_int_equal(q.status, 200);
    vt_resp_free(&q);
    vt_claim second = vt_claim1(&srv, "moved");
    vt_resp d = vt_dispose(&srv, &second, "\"disposition\": \"complete\"");
    assert_int_equal(d.status, 200);
    vt_resp_free(&d);
    vt_resp r2 = vt_dispose(&srv, &first, m);
    assert_int_equal(r2.status, 200);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r2.json, "replayed")));
    cJSON_DeleteItemFromObject(r1.json, "replayed");
    cJSON_DeleteItemFromObject(r2.json, "replayed");
    char *a = cJSON_PrintUnformatted(r1.json), *b = cJSON_PrintUnformatted(r2.json);
    assert_string_equal(a, b); /* member order and every value, the item's as it was */
    assert_string_equal(vt_str(r2.json, "item.state"), "deferred");
    assert_string_equal(vt_str(r2.json, "item.last_reason"), "later");
    cJSON_free(a);
    cJSON_free(b);
    vt_resp_free(&r1);
    vt_resp_free(&r2);
}

/* A standard tool_result text (every state but deferred) is kept as a flag, not as text
 * (sql/migrations/0028_standard_tool_results.sql); a replay answers the first answer, byte for
 * byte. A deferral names its delay: its text is kept whole. */
static void test_dispositions_standard_tool_results(void **state)
{
    (void)state;
    static const struct {
        const char *ident, *members, *item_state, *text;
        bool std;
    } c[] = {
        {"c", "\"disposition\": \"complete\"", "processed",
         "Recorded: completed. The item is processed. Stop now.", true},
        {"r", "\"disposition\": \"reject_source\", \"reason_code\": \"too_thin\"", "rejected",
         "Recorded: rejected (too_thin). The source is closed for good. Stop now.", true},
        {"f", "\"disposition\": \"fail\", \"error\": \"schema\", \"retryable\": false", "failed",
         NULL, true},
        {"m",
         "\"disposition\": \"defer_item\", \"reason_code\": \"quality_gate\","
         " \"manual_review\": true",
         "manual_review",
         "Recorded: deferred (quality_gate). The item waits for a person's review. Stop now.",
         true},
        {"d",
         "\"disposition\": \"defer_item\", \"reason_code\": \"tool_error\","
         " \"retry_after_seconds\": 120",
         "deferred",
         "Recorded: deferred (tool_error). The source stays eligible and is retried in"
         " about 2 min. Stop now.",
         false},
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        vt_register(&srv, "stdtr", c[i].ident, NULL);
        vt_claim cl = vt_claim1(&srv, "stdtr");
        vt_resp r1 = vt_dispose(&srv, &cl, c[i].members);
        assert_int_equal(r1.status, 200);
        assert_string_equal(vt_str(r1.json, "item.state"), c[i].item_state);
        if (c[i].text)
            assert_string_equal(vt_str(r1.json, "tool_result.text"), c[i].text);
        assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE id = %lld"
                                     " AND answer_tool_result_std IS %s"
                                     " AND (strpos(answer_head, 'tool_result') = 0) = %s",
                                     (long long)cl.job_id, c[i].std ? "TRUE" : "NOT TRUE",
                                     c[i].std ? "true" : "false"),
                         1);
        vt_resp r2 = vt_dispose(&srv, &cl, c[i].members);
        assert_int_equal(r2.status, 200);
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r2.json, "replayed")));
        /* the same bytes but for the flag: "replayed":false -> true */
        const char *f = strstr(r1.body, "\"replayed\":false");
        assert_non_null(f);
        char want[8192];
        snprintf(want, sizeof(want), "%.*s\"replayed\":true%s", (int)(f - r1.body), r1.body,
                 f + strlen("\"replayed\":false"));
        assert_string_equal(r2.body, want);
        /* an answer kept before 0028 (the whole head, no flag) replays the same bytes */
        vt_sql("UPDATE jobs SET answer_head = verdict_kept_head(jobs),"
               " answer_tool_result_std = NULL WHERE id = %lld",
               (long long)cl.job_id);
        assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE id = %lld"
                                     " AND strpos(answer_head, 'tool_result') > 0",
                                     (long long)cl.job_id),
                         1);
        vt_resp r3 = vt_dispose(&srv, &cl, c[i].members);
        assert_string_equal(r3.body, want);
        vt_resp_free(&r1);
        vt_resp_free(&r2);
        vt_resp_free(&r3);
    }
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
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld"
                                 " AND cause = 'complete'",
                                 (long long)id),
                     1);
    /* a different disposition on the finished job names the one that stands */
    vt_resp r =
        vt_dispose(&srv, &cl, "\"disposition\": \"reject_source\", \"reason_code\": \"spam\"");
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
                                    " FROM items WHERE id = %lld",
                                    (long long)id);
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
                            " WHERE id = %lld",
                            (long long)id2) >= 899);
    vt_register(&srv, "fnr", "a", NULL);
    cl = vt_claim1(&srv, "fnr");
    dispose_ok(&cl,
               "\"disposition\": \"fail\", \"error\": \"schema mismatch\", \"retryable\": false",
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
    r = vt_http(&srv, "POST", path, VT_ADMIN,
                "{\"reason\": \"fixed the upsert\", \"reset_budgets\": true}", NULL);
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
        dispose_ok(&cl, "\"disposition\": \"fail\", \"error\": \"x\", \"retryable\": false",
                   "failed");
    }
    r = vt_http(
        &srv, "POST", "/v1/items/requeue", VT_ADMIN,
        "{\"flow_step_id\": \"rqb\", \"state\": \"failed\", \"limit\": 3, \"reason\": \"bulk\"}",
        NULL);
    assert_int_equal(r.status, 200);
    assert_true(vt_num(r.json, "requeued") == 3);
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'rqb' AND"
                                 " state = 'available'"),
                     3);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit t JOIN items i ON"
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
        {"\"disposition\": \"fail\", \"error\": \"x\", \"retryable\": \"no\"", 400, "invalid_field",
         "retryable"},
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
    assert_int_equal(
        vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld", (long long)cl.item_id),
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
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE reason LIKE '%%abc.def%%'"
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
        assert_int_equal(cJSON_GetArraySize(tools), 5); /* with request_review */
        assert_null(strstr(r.body, "skip_item"));
        const char *name =
            f == 0 ? vt_str(r.json, "tools.1.function.name") : vt_str(r.json, "tools.1.name");
        assert_string_equal(name, "reject_source");
        vt_resp_free(&r);
    }
    vt_resp r =
        vt_http(&srv, "GET", "/v1/tool-definitions?format=anthropic", VT_READER, NULL, NULL);
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

/* POST /v1/dispositions with the given entries (a JSON array's members). */
static vt_resp batch(const char *entries)
{
    size_t len = strlen(entries) + 32;
    char *body = malloc(len);
    assert_non_null(body);
    snprintf(body, len, "{\"dispositions\": [%s]}", entries);
    vt_resp r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
    free(body);
    return r;
}

/* One entry: job_id and claim_token of c, then members. */
static void entry(char *buf, size_t cap, const vt_claim *c, const char *members)
{
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "%s{\"job_id\": %lld, \"claim_token\": \"%s\", %s}", n ? ", " : "",
             (long long)c->job_id, c->token, members);
}

static const cJSON *result(const vt_resp *r, int i, long status)
{
    const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(r->json, "results"), i);
    if (!e || vt_num(e, "status") != status)
        fail_msg("results[%d]: want %ld in %ld %s", i, status, r->status, r->body);
    return e;
}

/* A batch applies each entry as its single call would, in one transaction; refusals are
 * per entry; an identical repeat replays through either endpoint. */
static void test_dispositions_batch_mixed(void **state)
{
    (void)state;
    vt_claim c[7];
    char entries[8192] = "";
    for (int i = 0; i < 7; i++) {
        char ident[8];
        snprintf(ident, sizeof(ident), "b%d", i);
        vt_register(&srv, "bat", ident, NULL);
    }
    assert_int_equal(claim_all("bat", c, 7), 7);
    vt_claim lost = c[5], unknown = c[5];
    snprintf(lost.token, sizeof(lost.token), "00000000-0000-4000-8000-000000000000");
    unknown.job_id = 987654321;
    /* a required tool failed in c[6]'s job: rejecting its source is refused */
    char path[80], body[256];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/tool-failures", (long long)c[6].job_id);
    snprintf(body, sizeof(body),
             "{\"claim_token\": \"%s\", \"tool\": \"wp_upsert\", \"error\": \"500\","
             " \"required\": true}",
             c[6].token);
    vt_resp tf = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
    assert_int_equal(tf.status, 200);
    vt_resp_free(&tf);
    long before = vt_sql_long("SELECT count(*) FROM audit");
    /* newest job first: the order of the answer is the order of the request */
    entry(entries, sizeof(entries), &c[4], "\"disposition\": \"skip_item\", \"reason\": \"spam\"");
    entry(entries, sizeof(entries), &c[3],
          "\"disposition\": \"fail\", \"error\": \"boom\","
          " \"retryable\": false");
    entry(entries, sizeof(entries), &c[2],
          "\"disposition\": \"defer_item\","
          " \"reason_code\": \"tool_error\"");
    entry(entries, sizeof(entries), &c[1],
          "\"disposition\": \"reject_source\","
          " \"reason_code\": \"too_thin\", \"reason\": \"thin\"");
    entry(entries, sizeof(entries), &c[0],
          "\"disposition\": \"complete\","
          " \"engine_data\": {\"post_id\": 9}");
    entry(entries, sizeof(entries), &lost, "\"disposition\": \"complete\"");
    entry(entries, sizeof(entries), &unknown, "\"disposition\": \"complete\"");
    entry(entries, sizeof(entries), &c[6],
          "\"disposition\": \"reject_source\","
          " \"reason_code\": \"spam\"");
    vt_resp r = batch(entries);
    assert_int_equal(r.status, 200);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "results")), 8);
    static const char *const states[] = {"rejected", "failed", "deferred", "rejected", "processed"};
    static const int from[] = {4, 3, 2, 1, 0};
    for (int i = 0; i < 5; i++) {
        const cJSON *e = result(&r, i, 200);
        assert_true(vt_num(e, "job_id") == (double)c[from[i]].job_id);
        assert_string_equal(vt_str(e, "item.state"), states[i]);
        assert_true(vt_num(e, "job.id") == (double)c[from[i]].job_id);
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(e, "replayed")));
    }
    assert_string_equal(vt_str(result(&r, 0, 200), "mapped_to"), "reject_source");
    assert_true(vt_num(result(&r, 4, 200), "job.engine_data.post_id") == 9);
    const cJSON *e = result(&r, 5, 409);
    assert_string_equal(vt_str(e, "error"), "claim_lost");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(e, "retryable")));
    assert_non_null(vt_str(e, "hint"));
    assert_string_equal(vt_str(result(&r, 6, 404), "error"), "not_found");
    e = result(&r, 7, 409);
    assert_string_equal(vt_str(e, "error"), "tool_failure_pending");
    assert_string_equal(vt_str(e, "field"), "dispositions[7].disposition");
    /* one transition per applied entry; the refused ones left their items claimed */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit") - before, 5);
    assert_string_equal(vt_item_state(&srv, c[5].item_id), "claimed");
    assert_string_equal(vt_item_state(&srv, c[6].item_id), "claimed");
    /* the identical batch again: the applied ones replay their stored answers */
    vt_resp again = batch(entries);
    for (int i = 0; i < 5; i++) {
        const cJSON *a = result(&again, i, 200), *b = result(&r, i, 200);
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(a, "replayed")));
        /* every member as the first answer had it, tool_result included (a standard one is
         * kept as a flag, sql/migrations/0028_standard_tool_results.sql) */
        cJSON *ca = cJSON_Duplicate(a, true), *cb = cJSON_Duplicate(b, true);
        cJSON_DeleteItemFromObject(ca, "replayed");
        cJSON_DeleteItemFromObject(cb, "replayed");
        assert_true(cJSON_Compare(ca, cb, true));
        cJSON_Delete(ca);
        cJSON_Delete(cb);
    }
    /* the standard texts (every entry but the deferred one) were kept as the flag */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE id IN (%lld, %lld, %lld, %lld)"
                                 " AND answer_tool_result_std"
                                 " AND strpos(answer_head, 'tool_result') = 0",
                                 (long long)c[0].job_id, (long long)c[1].job_id,
                                 (long long)c[3].job_id, (long long)c[4].job_id),
                     4);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE id = %lld"
                                 " AND answer_tool_result_std IS NOT TRUE"
                                 " AND strpos(answer_head, 'tool_result') > 0",
                                 (long long)c[2].job_id),
                     1);
    result(&again, 5, 409);
    result(&again, 7, 409);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit") - before, 5);
    vt_resp_free(&again);
    vt_resp_free(&r);
    /* ... and through the single endpoint (the entry without its job_id, keys in any order) */
    r = vt_dispose(&srv, &c[0], "\"engine_data\": {\"post_id\": 9}, \"disposition\": \"complete\"");
    assert_int_equal(r.status, 200);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "replayed")));
    vt_resp_free(&r);
    r = vt_dispose(&srv, &c[0], "\"disposition\": \"complete\"");
    vt_assert_error(&r, 409, "job_finalized");
    vt_resp_free(&r);
    /* a single call answered first replays through a batch entry */
    dispose_ok(&c[5], "\"disposition\": \"complete\"", "processed");
    entries[0] = '\0';
    entry(entries, sizeof(entries), &c[5], "\"disposition\": \"complete\"");
    entry(entries, sizeof(entries), &c[6],
          "\"disposition\": \"reject_source\","
          " \"reason_code\": \"spam\", \"force\": true");
    r = batch(entries);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(result(&r, 0, 200), "replayed")));
    assert_string_equal(vt_str(result(&r, 1, 200), "item.state"), "rejected");
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE job_id = %lld"
                                 " AND forced",
                                 (long long)c[6].job_id),
                     1);
}

/* A batch with any invalid entry is refused whole, naming the entry's field. */
static void test_dispositions_batch_bad_calls(void **state)
{
    (void)state;
    vt_claim c[2];
    vt_register(&srv, "batbad", "a", NULL);
    vt_register(&srv, "batbad", "b", NULL);
    assert_int_equal(claim_all("batbad", c, 2), 2);
    char ok[512] = "", dup[1024] = "", big[20000] = "", bad_token[1200];
    entry(ok, sizeof(ok), &c[0], "\"disposition\": \"complete\"");
    entry(dup, sizeof(dup), &c[1], "\"disposition\": \"complete\"");
    entry(dup, sizeof(dup), &c[0], "\"disposition\": \"complete\"");
    entry(dup, sizeof(dup), &c[1], "\"disposition\": \"complete\"");
    for (int i = 0; i < 101; i++) {
        vt_claim fake = c[0];
        fake.job_id = 1000000 + i;
        entry(big, sizeof(big), &fake, "\"disposition\": \"complete\"");
    }
    snprintf(bad_token, sizeof(bad_token),
             "%s, {\"job_id\": %lld, \"claim_token\": \"x\","
             " \"disposition\": \"complete\"}",
             ok, (long long)c[1].job_id);
    char with_ok[4][600];
    static const char *const tails[] = {
        "{\"claim_token\": \"00000000-0000-4000-8000-000000000000\", \"disposition\": "
        "\"complete\"}",
        "{\"job_id\": 0, \"claim_token\": \"00000000-0000-4000-8000-000000000000\","
        " \"disposition\": \"complete\"}",
        "{\"job_id\": 2.5, \"claim_token\": \"00000000-0000-4000-8000-000000000000\","
        " \"disposition\": \"complete\"}",
        "[1]"};
    for (int i = 0; i < 4; i++)
        snprintf(with_ok[i], sizeof(with_ok[i]), "%s, %s", ok, tails[i]);
    char code_bad[512] = "", disp_bad[512] = "";
    entry(code_bad, sizeof(code_bad), &c[1],
          "\"disposition\": \"reject_source\","
          " \"reason_code\": \"tool_error\"");
    entry(disp_bad, sizeof(disp_bad), &c[1], "\"disposition\": \"explode\"");
    char code_bad2[1100], disp_bad2[1100];
    snprintf(code_bad2, sizeof(code_bad2), "%s, %s", ok, code_bad);
    snprintf(disp_bad2, sizeof(disp_bad2), "%s, %s", ok, disp_bad);
    const struct {
        const char *body; /* NULL: the entries below */
        const char *entries;
        const char *code, *field;
    } cases[] = {
        {"{}", NULL, "missing_field", "dispositions"},
        {"{\"dispositions\": {}}", NULL, "invalid_field", "dispositions"},
        {"{\"dispositions\": []}", NULL, "invalid_field", "dispositions"},
        {NULL, big, "invalid_field", "dispositions"},
        {NULL, dup, "invalid_field", "dispositions[2].job_id"},
        {NULL, bad_token, "invalid_field", "dispositions[1].claim_token"},
        {NULL, with_ok[0], "missing_field", "dispositions[1].job_id"},
        {NULL, with_ok[1], "invalid_field", "dispositions[1].job_id"},
        {NULL, with_ok[2], "invalid_field", "dispositions[1].job_id"},
        {NULL, with_ok[3], "invalid_field", "dispositions[1]"},
        {NULL, code_bad2, "invalid_field", "dispositions[1].reason_code"},
        {NULL, disp_bad2, "invalid_field", "dispositions[1].disposition"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        vt_resp r = cases[i].body
                        ? vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER, cases[i].body, NULL)
                        : batch(cases[i].entries);
        const char *field = vt_str(r.json, "field");
        if (r.status != 400 || strcmp(vt_str(r.json, "error"), cases[i].code) != 0 || !field ||
            strcmp(field, cases[i].field) != 0)
            fail_msg("case %zu: %ld %s", i, r.status, r.body);
        vt_resp_free(&r);
    }
    /* nothing was applied by any of them, not even the valid first entry */
    assert_string_equal(vt_item_state(&srv, c[0].item_id), "claimed");
    assert_int_equal(
        vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld", (long long)c[0].item_id), 2);
    /* a reader may not post dispositions */
    char body[600];
    snprintf(body, sizeof(body), "{\"dispositions\": [%s]}", ok);
    vt_resp r = vt_http(&srv, "POST", "/v1/dispositions", VT_READER, body, NULL);
    vt_assert_error(&r, 403, "forbidden");
    vt_resp_free(&r);
    r = batch(ok);
    assert_string_equal(vt_str(result(&r, 0, 200), "item.state"), "processed");
    vt_resp_free(&r);
}

/* A disposition's transaction plans its statements with sequential scans off and generically
 * (once per connection): a trigger on the job's finish records the settings it ran under, for a
 * single and a batch disposition. Left to choose (plan_cache_mode auto), PostgreSQL planned
 * job_lock and job_finish again at every execution. */
static void test_dispositions_planned_once(void **state)
{
    (void)state;
    vt_sql("CREATE TABLE plan_seen (mode text, seqscan text);"
           " CREATE FUNCTION plan_seen() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
           " IF NEW.flow_step_id = 'plan' THEN INSERT INTO plan_seen VALUES"
           " (current_setting('plan_cache_mode'), current_setting('enable_seqscan')); END IF;"
           " RETURN NEW; END $$;"
           " CREATE TRIGGER plan_seen BEFORE UPDATE ON jobs FOR EACH ROW"
           " EXECUTE FUNCTION plan_seen()");
    vt_register(&srv, "plan", "a", NULL);
    vt_register(&srv, "plan", "b", NULL);
    vt_claim one = vt_claim1(&srv, "plan");
    dispose_ok(&one, "\"disposition\": \"complete\"", "processed");
    vt_claim two = vt_claim1(&srv, "plan");
    char body[300];
    snprintf(body, sizeof(body),
             "{\"dispositions\": [{\"job_id\": %lld, \"claim_token\": \"%s\","
             " \"disposition\": \"complete\"}]}",
             (long long)two.job_id, two.token);
    vt_resp r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    long seen = vt_sql_long("SELECT count(*) FROM plan_seen");
    long generic = vt_sql_long("SELECT count(*) FROM plan_seen WHERE mode = 'force_generic_plan'"
                               " AND seqscan = 'off'");
    vt_sql("DROP TRIGGER plan_seen ON jobs; DROP FUNCTION plan_seen(); DROP TABLE plan_seen");
    assert_true(seen >= 2);
    assert_int_equal(generic, seen);
}

VT_SERVER_FIXTURE(srv, NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispositions_reject_is_final),
        cmocka_unit_test(test_dispositions_defer_keeps_item_eligible),
        cmocka_unit_test(test_dispositions_complete_once_and_replay),
        cmocka_unit_test(test_dispositions_standard_tool_results),
        cmocka_unit_test(test_dispositions_replay_after_item_moved),
        cmocka_unit_test(test_dispositions_defer_budget_and_manual_review),
        cmocka_unit_test(test_dispositions_fail_budget_and_backoff),
        cmocka_unit_test(test_dispositions_requeue),
        cmocka_unit_test(test_dispositions_skip_item_mapping),
        cmocka_unit_test(test_dispositions_bad_calls),
        cmocka_unit_test(test_dispositions_redaction),
        cmocka_unit_test(test_dispositions_tool_definitions),
        cmocka_unit_test(test_dispositions_job_reads),
        cmocka_unit_test(test_dispositions_batch_mixed),
        cmocka_unit_test(test_dispositions_batch_bad_calls),
        cmocka_unit_test(test_dispositions_planned_once),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
