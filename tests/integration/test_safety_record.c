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

VT_SERVER_FIXTURE(srv, NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heartbeat_keeps_claim_lease),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
