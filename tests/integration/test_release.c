/* test_release.c - giving a claim back without a verdict: the holder's token-fenced
 * POST /v1/jobs/{id}/release (item available now, no budget spent, one 'release' transition,
 * replays, claim_lost / job_finalized) and the admin's POST /v1/items/{id}/release (the old
 * holder's every write is then claim_lost), over HTTP against PostgreSQL. */
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

static vt_resp release(const vt_claim *c, const char *token, const char *extra)
{
    char path[80], body[4200];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/release", (long long)c->job_id);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\"%s}", token ? token : c->token,
             extra ? extra : "");
    return vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
}

static vt_resp admin_release(int64_t item, const char *token, const char *body)
{
    char path[80];
    snprintf(path, sizeof(path), "/v1/items/%lld/release", (long long)item);
    return vt_http(&srv, "POST", path, token, body, NULL);
}

static vt_resp job_write(const vt_claim *c, const char *what, const char *members)
{
    char path[80], body[600];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/%s", (long long)c->job_id, what);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\"%s}", c->token, members);
    return vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
}

static void test_release_holder(void **state)
{
    (void)state;
    int64_t id = vt_register(&srv, "rel", "a", "\"max_attempts\": 2, \"max_defers\": 3");
    vt_claim c = vt_claim1(&srv, "rel");
    vt_resp r = release(&c, NULL, ", \"reason\": \"max_execution_time is near\"");
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_string_equal(vt_str(r.json, "job.status"), "released");
    assert_true(
        cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "job"), "disposition")));
    assert_non_null(vt_str(r.json, "job.finished_at"));
    assert_string_equal(vt_str(r.json, "item.state"), "available");
    assert_int_equal((int)vt_num(r.json, "item.failures"), 0);
    assert_int_equal((int)vt_num(r.json, "item.defers"), 0);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "replayed")));
    assert_null(cJSON_GetObjectItem(r.json, "disposition"));
    vt_resp_free(&r);
    /* one transition, audited; the claim token is cleared; available now */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld AND"
                                 " cause = 'release' AND job_status = 'released' AND"
                                 " to_state = 'available' AND actor = 'bot'",
                                 (long long)id),
                     1);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE id = %lld AND claim_token"
                                 " IS NULL AND available_at <= now() AND failures = 0",
                                 (long long)id),
                     1);
    /* the identical call replays; a different one is job_finalized; a heartbeat is lost */
    r = release(&c, NULL, ", \"reason\": \"max_execution_time is near\"");
    assert_int_equal(r.status, 200);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "replayed")));
    assert_string_equal(vt_str(r.json, "job.status"), "released");
    vt_resp_free(&r);
    r = release(&c, NULL, NULL);
    vt_assert_error(&r, 409, "job_finalized");
    vt_resp_free(&r);
    r = job_write(&c, "disposition", ", \"disposition\": \"complete\"");
    vt_assert_error(&r, 409, "job_finalized");
    vt_resp_free(&r);
    r = job_write(&c, "heartbeat", "");
    vt_assert_error(&r, 409, "claim_lost");
    vt_resp_free(&r);
    /* claimable at once, again: no failure or defer budget is spent (releases count on their
     * own: 2 x max_defers = 6 park the item as churn, test_safety_record) */
    for (int i = 0; i < 4; i++) {
        vt_claim again = vt_claim1(&srv, "rel");
        assert_int_equal(again.item_id, id);
        r = release(&again, NULL, NULL);
        assert_int_equal(r.status, 200);
        vt_resp_free(&r);
    }
    assert_string_equal(vt_item_state(&srv, id), "available");
    r = vt_http(&srv, "GET", "/v1/jobs?flow_step_id=rel&status=released", VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "jobs")), 5);
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/v1/stats?flow_step_id=rel", VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    cJSON *fs = cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "flow_steps"), 0);
    assert_int_equal((int)vt_num(fs, "jobs_last_hour.released"), 5);
    vt_resp_free(&r);
}

static void test_release_holder_refusals(void **state)
{
    (void)state;
    vt_register(&srv, "relx", "a", NULL);
    vt_claim c = vt_claim1(&srv, "relx");
    vt_resp r = release(&c, "00000000-0000-4000-8000-000000000000", NULL);
    vt_assert_error(&r, 409, "claim_lost");
    vt_resp_free(&r);
    vt_claim ghost = c;
    ghost.job_id = 999999999;
    r = release(&ghost, NULL, NULL);
    vt_assert_error(&r, 404, "not_found");
    vt_resp_free(&r);
    r = release(&c, "not-a-uuid", NULL);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
    char big[2100];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    char extra[2200];
    snprintf(extra, sizeof(extra), ", \"reason\": \"%s\"", big);
    r = release(&c, NULL, extra);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
    r = vt_http(&srv, "POST", "/v1/jobs/1/release", VT_READER, "{}", NULL);
    vt_assert_error(&r, 403, "forbidden");
    vt_resp_free(&r);
    /* a finished job: job_finalized */
    r = vt_dispose(&srv, &c, "\"disposition\": \"complete\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    r = release(&c, NULL, NULL);
    vt_assert_error(&r, 409, "job_finalized");
    vt_resp_free(&r);
    /* a swept lease: claim_lost */
    vt_register(&srv, "relx", "b", NULL);
    vt_claim d = vt_claim1(&srv, "relx");
    vt_sql("UPDATE jobs SET status = 'expired', finished_at = now() WHERE id = %lld",
           (long long)d.job_id);
    r = release(&d, NULL, NULL);
    vt_assert_error(&r, 409, "claim_lost");
    vt_resp_free(&r);
}

static void test_release_admin(void **state)
{
    (void)state;
    int64_t id = vt_register(&srv, "rela", "a", NULL);
    vt_claim c = vt_claim1(&srv, "rela");
    vt_resp r = admin_release(id, VT_WORKER, "{}");
    vt_assert_error(&r, 403, "forbidden");
    vt_resp_free(&r);
    r = admin_release(id, VT_ADMIN, "{\"reason\": \"worker host died\"}");
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_string_equal(vt_str(r.json, "job.status"), "released");
    assert_int_equal((int64_t)vt_num(r.json, "job.id"), c.job_id);
    assert_string_equal(vt_str(r.json, "item.state"), "available");
    assert_int_equal((int)vt_num(r.json, "item.failures"), 0);
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld AND"
                                 " job_id = %lld AND cause = 'admin_release' AND"
                                 " job_status = 'released' AND actor = 'ops' AND"
                                 " reason = 'worker host died'",
                                 (long long)id, (long long)c.job_id),
                     1);
    /* the old holder's every write is claim_lost */
    static const char *const writes[][2] = {
        {"heartbeat", ""},
        {"disposition", ", \"disposition\": \"complete\""},
        {"tool-failures", ", \"tool\": \"t\", \"error\": \"e\""},
        {"session-outcome", ", \"session\": {\"returncode\": -1, \"termination\": \"stale\","
                            " \"stdout\": \"\"}"},
        {"release", ""},
    };
    for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
        r = job_write(&c, writes[i][0], writes[i][1]);
        if (r.status != 409 || !strstr(r.body, "claim_lost"))
            fail_msg("%s: %ld %s", writes[i][0], r.status, r.body);
        vt_resp_free(&r);
    }
    /* not claimed now: invalid_transition; unknown: 404 */
    r = admin_release(id, VT_ADMIN, NULL);
    vt_assert_error(&r, 409, "invalid_transition");
    vt_resp_free(&r);
    r = admin_release(999999999, VT_ADMIN, NULL);
    vt_assert_error(&r, 404, "not_found");
    vt_resp_free(&r);
    /* the item is claimable at once by a new holder, who is unaffected */
    vt_claim again = vt_claim1(&srv, "rela");
    assert_int_equal(again.item_id, id);
    assert_int_equal(again.attempt, 2);
    r = vt_dispose(&srv, &again, "\"disposition\": \"complete\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
}

VT_SERVER_FIXTURE(srv, NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_release_holder),
        cmocka_unit_test(test_release_holder_refusals),
        cmocka_unit_test(test_release_admin),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
