/* test_strict_input.c - no input widens an action (docs/decisions/0025): every endpoint with a
 * body refuses an unknown member and a member of the wrong type with 400 invalid_field naming
 * it, and changes nothing ("dry_run": null on a bulk requeue leaves every item as it was); a
 * query argument an endpoint does not declare, a repeated one or one holding a control byte is
 * 400 invalid_query naming it; a path holding a control byte (also percent-encoded: %00, %0A,
 * %09, %7F) is 400 invalid_path and acts on nothing. */
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

/* Everything the rows could change, as one text: each table's rows, hashed. */
static char *fingerprint(void)
{
    return vt_sql("SELECT concat_ws('|',"
                  " (SELECT md5(string_agg(t::text, ',' ORDER BY t.id)) FROM items t),"
                  " (SELECT md5(string_agg(t::text, ',' ORDER BY t.id)) FROM jobs t),"
                  " (SELECT md5(string_agg(t::text, ',' ORDER BY t.id)) FROM audit t),"
                  " (SELECT md5(string_agg(t::text, ',' ORDER BY t.id)) FROM tool_failures t),"
                  " (SELECT md5(string_agg(t::text, ',' ORDER BY t.id)) FROM tool_incidents t),"
                  " (SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM flow_steps t),"
                  " (SELECT count(*) FROM idempotency_keys))");
}

/* s with every "{ITEM}", "{JOB}" and "{TOKEN}" replaced (into out). */
static void fill(char *out, size_t cap, const char *s, int64_t item, const vt_claim *c)
{
    size_t n = 0;
    out[0] = '\0';
    while (*s && n + 64 < cap) {
        if (strncmp(s, "{ITEM}", 6) == 0) {
            n += (size_t)snprintf(out + n, cap - n, "%lld", (long long)item);
            s += 6;
        } else if (strncmp(s, "{JOB}", 5) == 0) {
            n += (size_t)snprintf(out + n, cap - n, "%lld", (long long)c->job_id);
            s += 5;
        } else if (strncmp(s, "{TOKEN}", 7) == 0) {
            n += (size_t)snprintf(out + n, cap - n, "%s", c->token);
            s += 7;
        } else {
            out[n++] = *s++;
            out[n] = '\0';
        }
    }
}

#define TOK "\"claim_token\": \"{TOKEN}\""
#define DISP TOK ", \"disposition\": \"complete\""
#define ITEM "{\"flow_step_id\": \"strict\", \"source_type\": \"t\", \"item_identifier\": \"n\""
#define SESSION "\"session\": {\"stdout\": \"done\", \"returncode\": 0"

/* One refused body: the endpoint, the body and the field the 400 names. */
typedef struct body_row {
    const char *method, *path, *body, *field;
} body_row;

static const body_row body_rows[] = {
    {"POST", "/v1/items", "{\"items\": [" ITEM "}], \"itemz\": []}", "itemz"},
    {"POST", "/v1/items", "{\"items\": [" ITEM ", \"priorty\": 1}]}", "items[0].priorty"},
    {"POST", "/v1/items", "{\"items\": [" ITEM ", \"payload\": \"x\"}]}", "items[0].payload"},
    {"POST", "/v1/items", "{\"items\": {}}", "items"},
    {"POST", "/v1/items/lookup",
     "{\"flow_step_id\": \"strict\", \"source_type\": \"t\", \"item_identifiers\": [\"a\"],"
     " \"state\": \"failed\"}",
     "state"},
    {"POST", "/v1/items/lookup",
     "{\"flow_step_id\": \"strict\", \"source_type\": 1, \"item_identifiers\": [\"a\"]}",
     "source_type"},
    {"POST", "/v1/items/{ITEM}/requeue", "{\"reset_budget\": true}", "reset_budget"},
    {"POST", "/v1/items/{ITEM}/requeue", "{\"reset_budgets\": \"yes\"}", "reset_budgets"},
    {"POST", "/v1/items/requeue",
     "{\"flow_step_id\": \"strict\", \"state\": \"available\", \"dry_run\": null}", "dry_run"},
    {"POST", "/v1/items/requeue",
     "{\"flow_step_id\": \"strict\", \"state\": \"available\", \"dry_run\": \"true\"}", "dry_run"},
    {"POST", "/v1/items/requeue",
     "{\"flow_step_id\": \"strict\", \"state\": \"available\", \"dry_run\": true,"
     " \"tool_faild\": \"x\"}",
     "tool_faild"},
    {"POST", "/v1/items/{ITEM}/release", "{\"reasn\": \"x\"}", "reasn"},
    {"POST", "/v1/items/{ITEM}/release", "{\"reason\": 5}", "reason"},
    {"POST", "/v1/items/{ITEM}/resolve",
     "{\"outcome\": \"processed\", \"reason\": \"x\", \"outcom\": \"y\"}", "outcom"},
    {"POST", "/v1/items/{ITEM}/resolve",
     "{\"outcome\": \"processed\", \"reason\": \"x\", \"reason_code\": 1}", "reason_code"},
    {"POST", "/v1/items/resolve",
     "{\"flow_step_id\": \"strict\", \"state\": \"failed\", \"outcome\": \"processed\","
     " \"reason\": \"x\", \"tool_failed\": \"search\"}",
     "tool_failed"},
    {"POST", "/v1/items/resolve",
     "{\"flow_step_id\": \"strict\", \"state\": \"failed\", \"outcome\": \"processed\","
     " \"reason\": \"x\", \"dry_run\": null}",
     "dry_run"},
    {"POST", "/v1/claims", "{\"flow_step_id\": \"strict\", \"worker_id\": \"w\", \"limt\": 5}",
     "limt"},
    {"POST", "/v1/claims", "{\"flow_step_id\": \"strict\", \"worker_id\": \"w\", \"limit\": \"5\"}",
     "limit"},
    {"POST", "/v1/jobs/{JOB}/heartbeat", "{" TOK ", \"lease\": 60}", "lease"},
    {"POST", "/v1/jobs/{JOB}/heartbeat", "{" TOK ", \"checkpoint\": \"x\"}", "checkpoint"},
    {"POST", "/v1/jobs/{JOB}/disposition", "{" DISP ", \"claim_nxt\": 1}", "claim_nxt"},
    {"POST", "/v1/jobs/{JOB}/disposition", "{" DISP ", \"manual_review\": \"yes\"}",
     "manual_review"},
    {"POST", "/v1/jobs/{JOB}/release", "{" TOK ", \"reasons\": \"x\"}", "reasons"},
    {"POST", "/v1/jobs/{JOB}/release", "{" TOK ", \"reason\": []}", "reason"},
    {"POST", "/v1/dispositions",
     "{\"dispositions\": [{\"job_id\": {JOB}, " DISP "}], \"claimnext\": 1}", "claimnext"},
    {"POST", "/v1/dispositions",
     "{\"dispositions\": [{\"job_id\": {JOB}, " DISP ", \"forse\": true}]}",
     "dispositions[0].forse"},
    {"POST", "/v1/dispositions",
     "{\"dispositions\": [{\"job_id\": {JOB}, " DISP ", \"force\": 1}]}", "dispositions[0].force"},
    {"POST", "/v1/jobs/{JOB}/tool-failures",
     "{" TOK ", \"tool\": \"search\", \"error\": \"boom\", \"tol\": \"x\"}", "tol"},
    {"POST", "/v1/jobs/{JOB}/tool-failures",
     "{" TOK ", \"tool\": \"search\", \"error\": \"boom\", \"required\": \"yes\"}", "required"},
    {"POST", "/v1/jobs/{JOB}/session-outcome", "{" TOK ", " SESSION "}, \"aply\": true}", "aply"},
    {"POST", "/v1/jobs/{JOB}/session-outcome", "{" TOK ", " SESSION "}, \"apply\": 1}", "apply"},
    {"POST", "/v1/jobs/{JOB}/session-outcome", "{" TOK ", " SESSION ", \"stdot\": \"x\"}}",
     "session.stdot"},
    {"POST", "/v1/adjudications", "{" SESSION "}, \"sesion\": {}}", "sesion"},
    {"POST", "/v1/adjudications", "{" SESSION ", \"write_behavior\": {\"mod\": \"x\"}}}",
     "session.write_behavior.mod"},
    {"POST", "/v1/tool-incidents/999999/resolve", "{\"requeue_item\": true}", "requeue_item"},
    {"POST", "/v1/tool-incidents/999999/resolve", "{\"requeue_items\": \"yes\"}", "requeue_items"},
    {"PATCH", "/v1/flow-steps/strict", "{\"pause\": true}", "pause"},
    {"PATCH", "/v1/flow-steps/strict", "{\"incident_min_items\": \"5\"}", "incident_min_items"},
    {"POST", "/v1/flow-steps/strict/pause", "{\"paused\": true}", "paused"},
    {"POST", "/v1/flow-steps/strict/resume", "{\"paused\": false}", "paused"},
};

static void test_bodies_refuse_unknown_and_mistyped(void **state)
{
    (void)state;
    char path[200], body[1024];
    vt_register(&srv, "strict", "a", NULL);
    vt_register(&srv, "strict", "b", NULL);
    int64_t item = vt_register(&srv, "strict", "c", NULL);
    vt_claim c = vt_claim1(&srv, "strict");
    char *before = fingerprint();
    for (size_t i = 0; i < sizeof(body_rows) / sizeof(body_rows[0]); i++) {
        const body_row *row = &body_rows[i];
        fill(path, sizeof(path), row->path, item, &c);
        fill(body, sizeof(body), row->body, item, &c);
        vt_resp r = vt_http(&srv, row->method, path, VT_ADMIN, body, NULL);
        const char *field = r.json ? vt_str(r.json, "field") : NULL;
        const char *code = r.json ? vt_str(r.json, "error") : NULL;
        if (r.status != 400 || !code || strcmp(code, "invalid_field") != 0 || !field ||
            strcmp(field, row->field) != 0)
            fail_msg("%s %s %s: want 400 invalid_field '%s', got %ld %s", row->method, path, body,
                     row->field, r.status, r.body);
        vt_resp_free(&r);
    }
    char *after = fingerprint();
    assert_string_equal(before, after);
    free(before);
    free(after);
    /* the same body with dry_run: true is a dry run, and with false the action */
    vt_resp r = vt_http(
        &srv, "POST", "/v1/items/requeue", VT_ADMIN,
        "{\"flow_step_id\": \"strict\", \"state\": \"available\", \"dry_run\": true}", NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal((int)vt_num(r.json, "would_requeue"), 2);
    vt_resp_free(&r);
}

/* One refused request line: the path (with its query) and the answer's code and field. */
typedef struct line_row {
    const char *method, *path, *code, *field;
} line_row;

static const line_row line_rows[] = {
    {"GET", "/v1/items?sate=failed", "invalid_query", "sate"},
    {"GET", "/v1/items?state=failed&state=available", "invalid_query", "state"},
    {"GET", "/v1/items?flow_step_id=a%00b", "invalid_query", "flow_step_id"},
    {"GET", "/v1/items?flow_step_id=a%0Ab", "invalid_query", "flow_step_id"},
    {"GET", "/v1/items?flow_step_id=a%09b", "invalid_query", "flow_step_id"},
    {"GET", "/v1/items?flow_step_id=a%7Fb", "invalid_query", "flow_step_id"},
    {"GET", "/v1/jobs?stat=failed", "invalid_query", "stat"},
    {"GET", "/v1/jobs?state=failed", "invalid_query", "state"},
    {"GET", "/v1/tool-incidents?status=open", "invalid_query", "status"},
    {"GET", "/v1/transitions?afterr=1", "invalid_query", "afterr"},
    {"GET", "/v1/stats?flow=x", "invalid_query", "flow"},
    {"GET", "/v1/tool-definitions?fromat=openai", "invalid_query", "fromat"},
    {"GET", "/v1/flow-steps?limit=1", "invalid_query", "limit"},
    {"GET", "/v1/whoami?x", "invalid_query", "x"},
    {"GET", "/v1/items/{ITEM}?verbose=1", "invalid_query", "verbose"},
    {"POST", "/v1/items/requeue?dry_run=true", "invalid_query", "dry_run"},
    {"PATCH", "/v1/flow-steps/a%00b", "invalid_path", NULL},
    {"PATCH", "/v1/flow-steps/a%0Ab", "invalid_path", NULL},
    {"PATCH", "/v1/flow-steps/a%09b", "invalid_path", NULL},
    {"PATCH", "/v1/flow-steps/a%7Fb", "invalid_path", NULL},
    {"POST", "/v1/flow-steps/a%00b/pause", "invalid_path", NULL},
    {"GET", "/v1/items/1%00", "invalid_path", NULL},
    {"GET", "/v1/nothing%00here", "invalid_path", NULL},
};

static void test_query_and_path_refused(void **state)
{
    (void)state;
    char path[200];
    vt_claim none = {0};
    int64_t item = vt_register(&srv, "a", "x", NULL);
    char *before = fingerprint();
    for (size_t i = 0; i < sizeof(line_rows) / sizeof(line_rows[0]); i++) {
        const line_row *row = &line_rows[i];
        const char *body = strcmp(row->method, "GET") == 0 ? NULL : "{\"pause_on_incident\": true}";
        fill(path, sizeof(path), row->path, item, &none);
        vt_resp r = vt_http(&srv, row->method, path, VT_ADMIN, body, NULL);
        const char *code = r.json ? vt_str(r.json, "error") : NULL;
        const char *field = r.json ? vt_str(r.json, "field") : NULL;
        if (r.status != 400 || !code || strcmp(code, row->code) != 0 ||
            (row->field && (!field || strcmp(field, row->field) != 0)))
            fail_msg("%s %s: want 400 %s '%s', got %ld %s", row->method, path, row->code,
                     row->field ? row->field : "-", r.status, r.body);
        vt_resp_free(&r);
    }
    char *after = fingerprint();
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM flow_steps WHERE flow_step_id = 'a' AND"
                                 " NOT pause_on_incident AND NOT paused"),
                     1);
    /* what the console, the clients and the contract test send still answers 200 */
    const char *ok[] = {"/v1/items?flow_step_id=a&state=available&order=desc&limit=50",
                        "/v1/jobs?item_id=1&order=desc&limit=100",
                        "/v1/tool-incidents?state=open&limit=500",
                        "/v1/transitions?after=0&limit=1",
                        "/v1/stats?flow_step_id=a",
                        "/v1/tool-definitions?format=openai",
                        "/v1/items?after=&limit=5"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        vt_resp r = vt_http(&srv, "GET", ok[i], VT_READER, NULL, NULL);
        if (r.status != 200)
            fail_msg("GET %s: %ld %s", ok[i], r.status, r.body);
        vt_resp_free(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bodies_refuse_unknown_and_mistyped),
        cmocka_unit_test(test_query_and_path_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
