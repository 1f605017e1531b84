/* test_failure_templates.c - failure templates and classification by evidence over HTTP against
 * PostgreSQL: one bug through six tool names opens one incident listing the six tools; the
 * same bug with a varying unquoted slug, request id, duration or git hash opens one; two REST
 * error bodies of one shape stay apart; the wordings quoted in the issue are deterministic
 * whatever number or word sits in an argument; the plugin's kind is a prior (a recurring
 * template is deterministic, counts toward incidents, the disagreement is a metric); the loop
 * guard counts by (job, tool, template) whatever the arguments. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt.h"
#include "vt_api.h"

static vt_server srv, srv2;

/* POST a tool failure of claim c (kind and args_json may be NULL); asserts 200. */
static vt_resp failure(const vt_claim *c, const char *tool, const char *error, const char *kind,
                       const char *args_json)
{
    char path[96];
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "claim_token", c->token);
    cJSON_AddStringToObject(b, "tool", tool);
    cJSON_AddStringToObject(b, "error", error);
    if (kind)
        cJSON_AddStringToObject(b, "kind", kind);
    if (args_json)
        cJSON_AddItemToObject(b, "args", cJSON_Parse(args_json));
    char *body = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    snprintf(path, sizeof(path), "/v1/jobs/%lld/tool-failures", (long long)c->job_id);
    vt_resp r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
    free(body);
    if (r.status != 200)
        fail_msg("tool failure: %ld %s", r.status, r.body);
    return r;
}

static void min_items(const char *flow, int n)
{
    char path[128], body[64];
    snprintf(path, sizeof(path), "/v1/flow-steps/%s", flow);
    snprintf(body, sizeof(body), "{\"incident_min_items\": %d}", n);
    vt_resp r = vt_http(&srv, "PATCH", path, VT_ADMIN, body, NULL);
    if (r.status != 200)
        fail_msg("PATCH %s: %ld %s", path, r.status, r.body);
    vt_resp_free(&r);
}

static void register_n(const char *flow, int n)
{
    for (int i = 0; i < n; i++) {
        char ident[48];
        snprintf(ident, sizeof(ident), "%s-%d", flow, i);
        vt_register(&srv, flow, ident, NULL);
    }
}

static long open_incidents(const char *flow)
{
    return vt_sql_long("SELECT count(*) FROM tool_incidents WHERE flow_step_id = '%s'"
                       " AND state = 'open'",
                       flow);
}

/* One bug surfacing through six tool names: one incident, its tools listed. */
static void test_failure_templates_six_tools_one_incident(void **state)
{
    (void)state;
    static const char *const tools[] = {"wiki_upsert", "wiki_create",     "wiki_patch",
                                        "page_write",  "mcp__wiki__save", "publish"};
    min_items("six", 3);
    register_n("six", 6);
    for (int i = 0; i < 6; i++) {
        char err[200];
        vt_claim c = vt_claim1(&srv, "six");
        snprintf(err, sizeof(err),
                 "write refused: target_path /srv/wiki/%d/page.md must stay "
                 "inside root",
                 i * 31);
        vt_resp r = failure(&c, tools[i], err, NULL, NULL);
        assert_string_equal(vt_str(r.json, "kind"), "deterministic");
        vt_resp_free(&r);
    }
    assert_int_equal(open_incidents("six"), 1);
    vt_resp r = vt_http(&srv, "GET", "/v1/tool-incidents?flow_step_id=six&state=open", VT_READER,
                        NULL, NULL);
    const cJSON *inc = cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "tool_incidents"), 0);
    assert_int_equal((int)vt_num(inc, "items"), 6);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(inc, "tools")), 6);
    assert_string_equal(vt_str(inc, "template"),
                        "write refused : target_path <path> must stay inside root");
    vt_resp_free(&r);
}

/* The same bug with a varying unquoted value opens one incident per bug. */
static void test_failure_templates_varying_values_one_incident(void **state)
{
    (void)state;
    static const char *const fmt[][2] = {
        {"page ", " not found in wiki"},              /* unquoted slug */
        {"upstream ", " failed with schema error"},   /* req_9f3ac2-style id */
        {"render took ", " and exceeded the budget"}, /* a duration */
        {"build ", " is invalid for this theme"},     /* a 7-character git hash */
    };
    static const char *const values[][3] = {
        {"hello-world", "my-second-post", "about"},
        {"req_9f3ac2", "req_00ab12", "req_7c1d3e"},
        {"1.2s", "15ms", "3s"},
        {"a1b2c3d", "9f8e7d6", "0000abc"},
    };
    min_items("vary", 3);
    register_n("vary", 3);
    vt_claim c[3];
    for (int i = 0; i < 3; i++)
        c[i] = vt_claim1(&srv, "vary");
    for (int b = 0; b < 4; b++) {
        for (int i = 0; i < 3; i++) {
            char err[200];
            snprintf(err, sizeof(err), "%s%s%s", fmt[b][0], values[b][i], fmt[b][1]);
            vt_resp r = failure(&c[i], "tool", err, NULL, NULL);
            vt_resp_free(&r);
        }
    }
    assert_int_equal(open_incidents("vary"), 4);
}

/* Two REST error bodies of one shape are two bugs: no incident from three of each. */
static void test_failure_templates_rest_bodies_apart(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "{\"code\":\"rest_post_invalid_id\",\"message\":\"Invalid post ID.\",\"data\":{\"status\":"
        "404}}",
        "{\"code\":\"rest_forbidden\",\"message\":\"Sorry, you are not allowed to do that.\","
        "\"data\":{\"status\":403}}",
    };
    min_items("rest", 4);
    register_n("rest", 3);
    for (int i = 0; i < 3; i++) {
        vt_claim c = vt_claim1(&srv, "rest");
        for (int b = 0; b < 2; b++) {
            vt_resp r = failure(&c, "wp_rest", bodies[b], NULL, NULL);
            assert_string_equal(vt_str(r.json, "kind"), "deterministic");
            vt_resp_free(&r);
        }
    }
    assert_int_equal(open_incidents("rest"), 0);
    assert_int_equal(vt_sql_long("SELECT count(DISTINCT template_id) FROM tool_failures"
                                 " WHERE flow_step_id = 'rest'"),
                     2);
}

/* The wordings: a transient-looking number or word inside an argument, id or path is
 * no evidence; status codes in status position are. */
static void test_failure_templates_evidence(void **state)
{
    (void)state;
    static const struct {
        const char *error, *kind;
    } cases[] = {
        {"parameter 'timeout' must be an integer", "deterministic"},
        {"Post 503 does not exist", "deterministic"},
        {"Invalid post ID 429", "deterministic"},
        {"Template 'rate-limit-banner' not found", "deterministic"},
        {"cannot read /var/cache/504/timeout.html", "deterministic"},
        {"Die Vorlage „timeout“ existiert nicht", "deterministic"},
        {"HTTP 503 Service Unavailable", "transient"},
        {"status: 429", "transient"},
        {"request to https://api.example.com/v1/posts timed out after 30s", "transient"},
        {"Zeitüberschreitung beim Lesen von api.example.com", "transient"},
    };
    register_n("ev", 1);
    vt_claim c = vt_claim1(&srv, "ev");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        vt_resp r = failure(&c, "t", cases[i].error, NULL, NULL);
        if (strcmp(vt_str(r.json, "kind"), cases[i].kind) != 0)
            fail_msg("'%s': %s", cases[i].error, r.body);
        const cJSON *k = cJSON_GetObjectItem(r.json, "classification");
        assert_true(cJSON_IsNull(cJSON_GetObjectItem(k, "label")));
        assert_string_equal(vt_str(k, "text"), cases[i].kind);
        assert_string_equal(vt_str(k, "final"), cases[i].kind);
        assert_non_null(vt_str(k, "why"));
        assert_true(vt_num(r.json, "template_id") > 0);
        vt_resp_free(&r);
    }
}

/* kind: transient on a deterministic text: believed once, not twice in the job; the
 * disagreement is counted; it counts toward the incident of its template across items. */
static void test_failure_templates_label_is_prior(void **state)
{
    (void)state;
    min_items("lbl", 3);
    register_n("lbl", 3);
    for (int i = 0; i < 3; i++) {
        char err[160];
        vt_claim c = vt_claim1(&srv, "lbl");
        snprintf(err, sizeof(err), "Job %d contract violation: result has no output token",
                 640 + i);
        vt_resp r = failure(&c, "skills__tldr", err, "transient", NULL);
        const cJSON *k = cJSON_GetObjectItem(r.json, "classification");
        assert_string_equal(vt_str(k, "label"), "transient");
        assert_string_equal(vt_str(k, "text"), "deterministic");
        if (i < 2) { /* first in the job, no incident yet: the label holds */
            assert_string_equal(vt_str(k, "final"), "transient");
            assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "retryable")));
        } else { /* the third item opens the template's incident: deterministic */
            assert_string_equal(vt_str(k, "final"), "deterministic");
            assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "retryable")));
            assert_non_null(cJSON_GetObjectItem(r.json, "incident"));
        }
        vt_resp_free(&r);
        if (i == 0) { /* the 2nd time in the same job: deterministic whatever the label */
            r = failure(&c, "skills__tldr", "Job 1 contract violation: result has no output token",
                        "transient", NULL);
            k = cJSON_GetObjectItem(r.json, "classification");
            assert_string_equal(vt_str(k, "final"), "deterministic");
            assert_string_equal(vt_str(r.json, "kind"), "deterministic");
            assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "retryable")));
            vt_resp_free(&r);
        }
    }
    assert_int_equal(open_incidents("lbl"), 1);
    vt_resp m = vt_http(&srv, "GET", "/metrics", VT_READER, NULL, NULL);
    assert_non_null(strstr(m.body, "verdict_tool_failure_label_disagreements_total{label="
                                   "\"transient\",text=\"deterministic\"}"));
    vt_resp_free(&m);
}

/* The loop guard counts (job, tool, template): a varying nonce or whitespace is no escape. */
static void test_failure_templates_loop_guard(void **state)
{
    (void)state;
    register_n("loop", 1);
    vt_claim c = vt_claim1(&srv, "loop");
    for (int i = 0; i < 3; i++) {
        char args[64];
        snprintf(args, sizeof(args), "{\"q\": \"x%*s\", \"nonce\": %d}", i, "", i * 977);
        vt_resp r = failure(&c, "search", "HTTP 503 Service Unavailable", NULL, args);
        assert_int_equal((int)vt_num(r.json, "repeat_count"), i + 1);
        bool retryable = cJSON_IsTrue(cJSON_GetObjectItem(r.json, "retryable"));
        assert_true(retryable == (i < 2)); /* the 3rd transient one stops */
        if (i == 2)
            assert_non_null(strstr(vt_str(r.json, "hint"), "Stop calling 'search'"));
        vt_resp_free(&r);
    }
    for (int i = 0; i < 2; i++) {
        char args[64];
        snprintf(args, sizeof(args), "{\"title\": \"t\", \"nonce\": \"n%d\"}", i);
        vt_resp r = failure(&c, "publish",
                            i ? "field  title   is invalid" : "field title is invalid", NULL, args);
        assert_int_equal((int)vt_num(r.json, "repeat_count"), i + 1);
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "retryable")));
        assert_non_null(strstr(vt_str(r.json, "hint"), "Do not call 'publish' again"));
        vt_resp_free(&r);
    }
}

#define CLIENTS 16

typedef struct rep_arg {
    const vt_server *s;
    vt_claim c;
    long status;
} rep_arg;

static pthread_barrier_t barrier;

static void *rep_worker(void *p)
{
    static const char *const words[] = {"alpha", "beta", "gamma", "delta"};
    rep_arg *a = p;
    char err[160], path[96];
    snprintf(err, sizeof(err), "page %s-%s not found in wiki", words[a->c.item_id % 4],
             words[(a->c.item_id / 4) % 4]);
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "claim_token", a->c.token);
    cJSON_AddStringToObject(b, "tool", a->c.item_id % 2 ? "wiki_get" : "wiki_read");
    cJSON_AddStringToObject(b, "error", err);
    char *body = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    snprintf(path, sizeof(path), "/v1/jobs/%lld/tool-failures", (long long)a->c.job_id);
    pthread_barrier_wait(&barrier);
    vt_resp r = vt_http(a->s, "POST", path, VT_WORKER, body, NULL);
    a->status = r.status;
    vt_resp_free(&r);
    free(body);
    vt_http_thread_cleanup();
    return NULL;
}

/* Two verdictd replicas on one database, 16 clients at once, one bug with a varying slug
 * through two tool names: one template (the shape's join is serialised across replicas) and
 * one incident of 16 items. */
static void test_failure_templates_two_replicas(void **state)
{
    (void)state;
    rep_arg args[CLIENTS];
    pthread_t t[CLIENTS];
    vt_replica_start(&srv2);
    register_n("rep", CLIENTS);
    assert_int_equal(pthread_barrier_init(&barrier, NULL, CLIENTS), 0);
    for (int i = 0; i < CLIENTS; i++)
        args[i] = (rep_arg){.s = i % 2 ? &srv2 : &srv, .c = vt_claim1(&srv, "rep")};
    for (int i = 0; i < CLIENTS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, rep_worker, &args[i]), 0);
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(args[i].status, 200);
    }
    pthread_barrier_destroy(&barrier);
    vt_server_stop(&srv2);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM failure_templates WHERE flow_step_id = "
                                 "'rep'"),
                     1);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM tool_incidents WHERE flow_step_id = 'rep'"),
                     1);
    assert_int_equal(vt_sql_long("SELECT items FROM tool_incidents WHERE flow_step_id = 'rep'"),
                     CLIENTS);
    assert_int_equal(vt_sql_long("SELECT cardinality(tools) FROM tool_incidents"
                                 " WHERE flow_step_id = 'rep'"),
                     2);
}

VT_SERVER_FIXTURE(srv, NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failure_templates_six_tools_one_incident),
        cmocka_unit_test(test_failure_templates_varying_values_one_incident),
        cmocka_unit_test(test_failure_templates_rest_bodies_apart),
        cmocka_unit_test(test_failure_templates_evidence),
        cmocka_unit_test(test_failure_templates_label_is_prior),
        cmocka_unit_test(test_failure_templates_loop_guard),
        cmocka_unit_test(test_failure_templates_two_replicas),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
