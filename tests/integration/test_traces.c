/* test_traces.c - W3C Trace Context over HTTP (docs/decisions/0060-trace-context.md): every
 * answer carries a traceparent with the request's trace id (the caller's when its traceparent
 * is valid, a new one when it is absent or malformed: never a refusal) and verdictd's own span
 * id; tracestate comes back with a valid traceparent; the access log names the trace; a job
 * keeps the trace id of its claim and of its disposition (single, batch, claim_next) and
 * GET /v1/jobs?trace_id= finds it from either. */
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

VT_SERVER_FIXTURE(srv, "VERDICT_LOG_LEVEL=info", NULL)

#define T1 "4bf92f3577b34da6a3ce929d0e0e4736"
#define T2 "0af7651916cd43dd8448eb211c80319c"
#define T3 "a3ce929d0e0e47364bf92f3577b34da6"
#define T4 "11111111111111112222222222222222"
#define SPAN "00f067aa0ba902b7"
#define TP(t) "traceparent: 00-" t "-" SPAN "-01"

static vt_resp traced(const char *method, const char *path, const char *token, const char *body,
                      const char *traceparent)
{
    const char *h[] = {traceparent, "tracestate: vendor=x1,other=y", NULL};
    return vt_http(&srv, method, path, token, body, traceparent ? h : NULL);
}

static void test_traces_headers(void **state)
{
    (void)state;
    vt_resp r = traced("GET", "/v1/stats", VT_READER, NULL, TP(T1));
    assert_int_equal(r.status, 200);
    assert_int_equal(strlen(r.traceparent), 55);
    assert_memory_equal(r.traceparent, "00-" T1 "-", 36);
    assert_memory_not_equal(r.traceparent + 36, SPAN, 16); /* its own span */
    assert_string_equal(r.traceparent + 52, "-01");
    assert_string_equal(r.tracestate, "vendor=x1,other=y");
    vt_resp_free(&r);
    /* malformed (upper case, all-zero, short): ignored, answered, a new trace, no tracestate */
    static const char *const bad[] = {
        "traceparent: 00-4BF92F3577B34DA6A3CE929D0E0E4736-" SPAN "-01",
        "traceparent: 00-00000000000000000000000000000000-" SPAN "-01",
        "traceparent: 00-" T1 "-" SPAN "-1", "traceparent: garbage"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = traced("GET", "/v1/stats", VT_READER, NULL, bad[i]);
        assert_int_equal(r.status, 200);
        assert_int_equal(strlen(r.traceparent), 55);
        assert_memory_not_equal(r.traceparent + 3, T1, 32);
        assert_string_equal(r.tracestate, "");
        vt_resp_free(&r);
    }
    /* none: a new trace too, and on a refusal as well */
    r = vt_http(&srv, "GET", "/v1/stats", NULL, NULL, NULL);
    assert_int_equal(r.status, 401);
    assert_int_equal(strlen(r.traceparent), 55);
    vt_resp_free(&r);
}

static char *job_field(int64_t job, const char *field)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)job);
    vt_resp r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    const char *v = vt_str(r.json, field);
    char *out = strdup(v ? v : "(null)");
    vt_resp_free(&r);
    return out;
}

static void assert_job_field(int64_t job, const char *field, const char *want)
{
    char *v = job_field(job, field);
    assert_string_equal(v, want);
    free(v);
}

/* how many jobs GET /v1/jobs?trace_id=t lists, and the first one's id */
static int jobs_of_trace(const char *t, int64_t *first)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/jobs?trace_id=%s", t);
    vt_resp r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(r.json, "jobs");
    int n = cJSON_GetArraySize(jobs);
    if (n > 0)
        *first = (int64_t)cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(jobs, 0), "id")
                     ->valuedouble;
    vt_resp_free(&r);
    return n;
}

static int64_t claim_traced(const char *flow, const char *tp, char *token, size_t cap)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"flow_step_id\": \"%s\", \"worker_id\": \"w\"}", flow);
    vt_resp r = traced("POST", "/v1/claims", VT_WORKER, body, tp);
    assert_int_equal(r.status, 200);
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r.json, "claims"), 0);
    assert_non_null(c);
    int64_t job = (int64_t)cJSON_GetObjectItemCaseSensitive(c, "job_id")->valuedouble;
    snprintf(token, cap, "%s", cJSON_GetObjectItemCaseSensitive(c, "claim_token")->valuestring);
    vt_resp_free(&r);
    return job;
}

static void test_traces_on_jobs(void **state)
{
    (void)state;
    char token[64], token2[64], body[512], path[64];
    int64_t found = 0;
    vt_register(&srv, "traces", "t-1", NULL);
    vt_register(&srv, "traces", "t-2", NULL);
    vt_register(&srv, "traces", "t-3", NULL);
    int64_t job = claim_traced("traces", TP(T1), token, sizeof(token));
    assert_job_field(job, "job.claim_trace_id", T1);
    assert_job_field(job, "job.disposition_trace_id", "(null)");
    /* the disposition, with claim_next: the next claim carries the disposition's trace */
    snprintf(path, sizeof(path), "/v1/jobs/%lld/disposition", (long long)job);
    snprintf(body, sizeof(body),
             "{\"claim_token\": \"%s\", \"disposition\": \"complete\", \"claim_next\": 1}", token);
    vt_resp r = traced("POST", path, VT_WORKER, body, TP(T2));
    assert_int_equal(r.status, 200);
    const cJSON *next = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r.json, "claims"), 0);
    assert_non_null(next);
    int64_t job2 = (int64_t)cJSON_GetObjectItemCaseSensitive(next, "job_id")->valuedouble;
    snprintf(token2, sizeof(token2), "%s",
             cJSON_GetObjectItemCaseSensitive(next, "claim_token")->valuestring);
    vt_resp_free(&r);
    assert_job_field(job, "job.disposition_trace_id", T2);
    assert_job_field(job2, "job.claim_trace_id", T2);
    /* a batch: every job of it keeps the batch request's trace */
    int64_t job3 = claim_traced("traces", NULL, token, sizeof(token));
    snprintf(body, sizeof(body),
             "{\"dispositions\": [{\"job_id\": %lld, \"claim_token\": \"%s\", \"disposition\": "
             "\"complete\"}, {\"job_id\": %lld, \"claim_token\": \"%s\", \"disposition\": "
             "\"complete\"}]}",
             (long long)job2, token2, (long long)job3, token);
    r = traced("POST", "/v1/dispositions", VT_WORKER, body, TP(T3));
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_job_field(job2, "job.disposition_trace_id", T3);
    assert_job_field(job3, "job.disposition_trace_id", T3);
    /* a claim without a traceparent still records the trace verdictd began for it */
    char *own = job_field(job3, "job.claim_trace_id");
    assert_int_equal(strlen(own), 32);
    free(own);
    /* found from a trace: the claim's, the disposition's */
    assert_int_equal(jobs_of_trace(T1, &found), 1);
    assert_int_equal(found, job);
    assert_int_equal(jobs_of_trace(T2, &found), 2); /* job's disposition, job2's claim */
    assert_int_equal(jobs_of_trace(T3, &found), 2);
    assert_int_equal(jobs_of_trace(T4, &found), 0);
    r = vt_http(&srv, "GET", "/v1/jobs?trace_id=" SPAN, VT_READER, NULL, NULL);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/v1/jobs?trace_id=4BF92F3577B34DA6A3CE929D0E0E4736", VT_READER, NULL,
                NULL);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
}

static void test_traces_logged(void **state)
{
    (void)state;
    vt_resp r = traced("GET", "/v1/stats", VT_READER, NULL, TP(T4));
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    vt_sleep_ms(100);
    FILE *f = fopen(srv.log_path, "r");
    assert_non_null(f);
    char line[4096];
    bool seen = false;
    while (fgets(line, sizeof(line), f))
        seen = seen || strstr(line, "\"trace_id\":\"" T4 "\"") != NULL;
    fclose(f);
    assert_true(seen);
}

/* A claim that names limit keys (the limited claim) records its trace on the job too. */
static void test_traces_on_limited_claims(void **state)
{
    (void)state;
    int64_t found = 0;
    vt_register(&srv, "traces_keyed", "k-1", NULL);
    vt_resp r = traced("POST", "/v1/claims", VT_WORKER,
                       "{\"flow_step_id\": \"traces_keyed\", \"worker_id\": \"w\","
                       " \"limit_keys\": [\"provider:traces\"]}",
                       TP(T4));
    assert_int_equal(r.status, 200);
    int64_t job = (int64_t)vt_num(r.json, "claims.0.job_id");
    vt_resp_free(&r);
    assert_job_field(job, "job.claim_trace_id", T4);
    assert_int_equal(jobs_of_trace(T4, &found), 1);
    assert_int_equal(found, job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_traces_headers),
        cmocka_unit_test(test_traces_on_jobs),
        cmocka_unit_test(test_traces_logged),
        cmocka_unit_test(test_traces_on_limited_claims),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
