/* test_reviews.c - human review over HTTP (docs/decisions/0061-human-review.md): a model's
 * request_review (single and batch) parks its item in manual_review with its question and
 * spends no budget; the review queue counts it; an editor's POST /v1/items/{id}/review
 * (admin only, manual_review only, an answer required for retry) makes it available, and the
 * next claim and briefing carry review {question, answer, by, at} until a worker decides
 * again; processed and rejected close it; bad input is a clear 400; /metrics counts the
 * questions waiting and the age of the oldest. */
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

VT_SERVER_FIXTURE(srv, NULL)

#define Q "Is the 2019 survey still a fair source for this post?"
#define A "Yes: cite it, and say the year."

static void review(int64_t item, const char *token, const char *body, long status, const char *code)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/items/%lld/review", (long long)item);
    vt_resp r = vt_http(&srv, "POST", path, token, body, NULL);
    if (code)
        vt_assert_error(&r, status, code);
    else
        assert_int_equal(r.status, status);
    vt_resp_free(&r);
}

static void test_reviews_request_and_refusals(void **state)
{
    (void)state;
    char big[1200];
    int64_t item = vt_register(&srv, "rev", "rev-1", "\"max_defers\": 1");
    vt_claim c = vt_claim1(&srv, "rev");
    /* a missing, empty or too long question is refused and changes nothing */
    vt_resp r = vt_dispose(&srv, &c, "\"disposition\": \"request_review\"");
    vt_assert_error(&r, 400, "missing_field");
    vt_resp_free(&r);
    memset(big, 'x', 1001);
    big[1001] = '\0';
    char members[1300];
    snprintf(members, sizeof(members), "\"disposition\": \"request_review\", \"question\": \"%s\"",
             big);
    r = vt_dispose(&srv, &c, members);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, item), "claimed");
    /* with max_defers 1 a defer would park it too: request_review spends nothing */
    r = vt_dispose(&srv, &c, "\"disposition\": \"request_review\", \"question\": \"" Q "\"");
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "item.state"), "manual_review");
    assert_int_equal((int)vt_num(r.json, "item.defers"), 0);
    assert_int_equal((int)vt_num(r.json, "item.failures"), 0);
    assert_string_equal(vt_str(r.json, "job.disposition"), "request_review");
    assert_string_equal(vt_str(r.json, "job.status"), "deferred");
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld AND cause "
                                 "= 'request_review' AND reason = '%s'",
                                 (long long)item, Q),
                     1);
    /* the queue */
    r = vt_http(&srv, "GET", "/v1/reviews?flow_step_id=rev", VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "flow_steps.0.flow_step_id"), "rev");
    assert_int_equal((int)vt_num(r.json, "flow_steps.0.questions"), 1);
    assert_true(vt_num(r.json, "flow_steps.0.oldest_question_age_seconds") >= 0);
    assert_string_equal(vt_str(r.json, "reviews.0.question"), Q);
    assert_string_equal(vt_str(r.json, "reviews.0.asked_by"), "bot");
    vt_resp_free(&r);
    /* the metric the alert VerdictReviewWaiting reads */
    r = vt_http(&srv, "GET", "/metrics", VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\nverdict_review_questions{flow_step_id=\"rev\"} 1\n"));
    assert_non_null(
        strstr(r.body, "\nverdict_review_oldest_question_age_seconds{flow_step_id=\"rev\"} "));
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/v1/reviews?sate=x", VT_READER, NULL, NULL);
    vt_assert_error(&r, 400, "invalid_query");
    vt_resp_free(&r);
    /* the answer: admin only, a known decision, an answer for retry, known members */
    review(item, VT_WORKER, "{\"decision\": \"retry\", \"answer\": \"" A "\"}", 403, "forbidden");
    review(item, VT_ADMIN, "{\"decision\": \"retry\"}", 400, "missing_field");
    review(item, VT_ADMIN, "{\"decision\": \"later\", \"answer\": \"x\"}", 400, "invalid_field");
    review(item, VT_ADMIN, "{\"decision\": \"retry\", \"answer\": \"x\", \"why\": 1}", 400,
           "invalid_field");
    review(999999, VT_ADMIN, "{\"decision\": \"processed\"}", 404, "not_found");
    assert_string_equal(vt_item_state(&srv, item), "manual_review");
}

static void test_reviews_answer_reaches_next_attempt(void **state)
{
    (void)state;
    char path[64];
    int64_t item = vt_register(&srv, "rev2", "rev2-1", NULL);
    vt_claim c = vt_claim1(&srv, "rev2");
    vt_resp r =
        vt_dispose(&srv, &c, "\"disposition\": \"request_review\", \"question\": \"" Q "\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    review(item, VT_ADMIN, "{\"decision\": \"retry\", \"answer\": \"" A "\"}", 200, NULL);
    assert_string_equal(vt_item_state(&srv, item), "available");
    /* answered twice: it is no longer waiting */
    review(item, VT_ADMIN, "{\"decision\": \"processed\"}", 409, "invalid_transition");
    r = vt_http(&srv, "POST", "/v1/claims", VT_WORKER,
                "{\"flow_step_id\": \"rev2\", \"worker_id\": \"w\"}", NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "claims.0.review.question"), Q);
    assert_string_equal(vt_str(r.json, "claims.0.review.answer"), A);
    assert_string_equal(vt_str(r.json, "claims.0.review.by"), "ops");
    assert_non_null(vt_str(r.json, "claims.0.review.at"));
    vt_claim next = {.job_id = (int64_t)vt_num(r.json, "claims.0.job_id"), .item_id = item};
    snprintf(next.token, sizeof(next.token), "%s", vt_str(r.json, "claims.0.claim_token"));
    vt_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/jobs/%lld/briefing", (long long)next.job_id);
    r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "review.answer"), A);
    assert_string_equal(vt_str(r.json, "review.question"), Q);
    assert_non_null(strstr(vt_str(r.json, "briefing"), "An editor answered"));
    vt_resp_free(&r);
    /* once the worker decides, later claims no longer carry it */
    r = vt_dispose(&srv, &next, "\"disposition\": \"defer_item\", \"reason_code\": \"other\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    vt_sql_long("UPDATE items SET available_at = now() WHERE id = %lld RETURNING 1",
                (long long)item);
    r = vt_http(&srv, "POST", "/v1/claims", VT_WORKER,
                "{\"flow_step_id\": \"rev2\", \"worker_id\": \"w\"}", NULL);
    assert_int_equal(r.status, 200);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r.json, "claims"), 0), "review")));
    vt_resp_free(&r);
}

static void test_reviews_batch_and_close(void **state)
{
    (void)state;
    char body[512];
    int64_t a = vt_register(&srv, "rev3", "rev3-a", NULL);
    int64_t b = vt_register(&srv, "rev3", "rev3-b", NULL);
    vt_claim c[2];
    assert_int_equal(vt_claim_n(&srv, "rev3", 2, 300, c), 2);
    snprintf(body, sizeof(body),
             "{\"dispositions\": [{\"job_id\": %lld, \"claim_token\": \"%s\", \"disposition\": "
             "\"request_review\", \"question\": \"first?\"}, {\"job_id\": %lld, \"claim_token\": "
             "\"%s\", \"disposition\": \"request_review\", \"question\": \"second?\"}]}",
             (long long)c[0].job_id, c[0].token, (long long)c[1].job_id, c[1].token);
    vt_resp r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, a), "manual_review");
    assert_string_equal(vt_item_state(&srv, b), "manual_review");
    review(a, VT_ADMIN, "{\"decision\": \"processed\", \"answer\": \"published by hand\"}", 200,
           NULL);
    review(b, VT_ADMIN, "{\"decision\": \"rejected\"}", 200, NULL);
    assert_string_equal(vt_item_state(&srv, a), "processed");
    assert_string_equal(vt_item_state(&srv, b), "rejected");
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE cause = 'review' AND "
                                 "actor = 'ops' AND item_id IN (%lld, %lld)",
                                 (long long)a, (long long)b),
                     2);
    r = vt_http(&srv, "GET", "/v1/reviews?flow_step_id=rev3", VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r.json, "reviews")), 0);
    vt_resp_free(&r);
}

/* A claim that names limit keys (verdict_claim_limited) carries the answer too, and its job
 * keeps the claim's own lease length for a heartbeat without lease_seconds. */
static void test_reviews_answer_reaches_limited_claim(void **state)
{
    (void)state;
    int64_t item = vt_register(&srv, "rev4", "rev4-1", NULL);
    vt_claim c = vt_claim1(&srv, "rev4");
    vt_resp r =
        vt_dispose(&srv, &c, "\"disposition\": \"request_review\", \"question\": \"" Q "\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    review(item, VT_ADMIN, "{\"decision\": \"retry\", \"answer\": \"" A "\"}", 200, NULL);
    r = vt_http(&srv, "POST", "/v1/claims", VT_WORKER,
                "{\"flow_step_id\": \"rev4\", \"worker_id\": \"w\", \"lease_seconds\": 77,"
                " \"limit_keys\": [\"provider:rev4\"]}",
                NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "claims.0.review.answer"), A);
    int64_t job = (int64_t)vt_num(r.json, "claims.0.job_id");
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT lease_seconds FROM jobs WHERE id = %lld", (long long)job),
                     77);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reviews_request_and_refusals),
        cmocka_unit_test(test_reviews_answer_reaches_next_attempt),
        cmocka_unit_test(test_reviews_batch_and_close),
        cmocka_unit_test(test_reviews_answer_reaches_limited_claim),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
