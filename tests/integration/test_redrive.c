/* test_redrive.c - redrive over HTTP against PostgreSQL: POST /v1/items/requeue with
 * the redrive filters (tool_failed, failed_under_version, since/until, states), alone and
 * combined; a dry run answers exactly the ids the real run then requeues, each audited; the
 * semantic-version order of the database (verdict_semver_cmp) and of the C code agree on one
 * table; every malformed filter is a 400 naming its field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/semver.h"
#include "vt.h"
#include "vt_api.h"

static vt_server srv;

static vt_resp requeue(const char *body)
{
    return vt_http(&srv, "POST", "/v1/items/requeue", VT_ADMIN, body, NULL);
}

/* One item of flow claimed under `version` (NULL: none sent), a failure of `tool` (NULL:
 * none) recorded, then finished into `end` (failed, manual_review, rejected, deferred or
 * processed). Returns its id. */
static int64_t item_through(const char *flow, const char *ident, const char *version,
                            const char *tool, const char *end)
{
    char body[400], path[80], ver[80] = "";
    vt_register(&srv, flow, ident, NULL);
    if (version)
        snprintf(ver, sizeof(ver), ", \"worker_version\": \"%s\"", version);
    snprintf(body, sizeof(body), "{\"flow_step_id\": \"%s\", \"worker_id\": \"w\"%s}", flow, ver);
    vt_resp r = vt_http(&srv, "POST", "/v1/claims", VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    vt_claim c = {.job_id = (int64_t)vt_num(r.json, "claims.0.job_id"),
                  .item_id = (int64_t)vt_num(r.json, "claims.0.item.id")};
    snprintf(c.token, sizeof(c.token), "%s", vt_str(r.json, "claims.0.claim_token"));
    vt_resp_free(&r);
    if (tool) {
        snprintf(path, sizeof(path), "/v1/jobs/%lld/tool-failures", (long long)c.job_id);
        snprintf(body, sizeof(body),
                 "{\"claim_token\": \"%s\", \"tool\": \"%s\", \"args\": {},"
                 " \"error\": \"target_path must stay inside root\", \"kind\": \"deterministic\"}",
                 c.token, tool);
        r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
        assert_int_equal(r.status, 200);
        vt_resp_free(&r);
    }
    const char *members =
        strcmp(end, "failed") == 0
            ? "\"disposition\": \"fail\", \"error\": \"x\", \"retryable\": false"
        : strcmp(end, "manual_review") == 0 ? "\"disposition\": \"defer_item\", \"reason_code\": "
                                              "\"tool_error\", \"manual_review\": true"
        : strcmp(end, "rejected") == 0
            ? "\"disposition\": \"reject_source\", \"reason_code\": \"spam\", \"force\": true"
        : strcmp(end, "deferred") == 0 ? "\"disposition\": \"defer_item\", \"reason_code\":"
                                         " \"tool_error\", \"retry_after_seconds\": 3600"
                                       : "\"disposition\": \"complete\"";
    r = vt_dispose(&srv, &c, members);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, c.item_id), end);
    return c.item_id;
}

/* The ids of answer member `key` as "a,b,c" into out. */
static const char *ids_of(const vt_resp *r, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    const cJSON *e = NULL;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(r->json, "item_ids"))
    {
        used += (size_t)snprintf(out + used, cap - used, "%s%lld", used ? "," : "",
                                 (long long)e->valuedouble);
    }
    return out;
}

/* The ids of items `letters` ("acf": ids[0], ids[2], ids[5]) as a comma list (into out). */
static const char *ids_at(char *out, size_t cap, const int64_t *ids, const char *letters)
{
    size_t n = 0;
    out[0] = '\0';
    for (const char *l = letters; *l && n < cap; l++)
        n += (size_t)snprintf(out + n, cap - n, "%s%lld", l == letters ? "" : ",",
                              (long long)ids[*l - 'a']);
    return out;
}

/* A dry run of `filters` (flow_step_id and members, no braces) must answer `want` ids. */
static void expect_dry(const char *filters, const char *want)
{
    char body[600], got[400];
    snprintf(body, sizeof(body), "{%s, \"dry_run\": true}", filters);
    vt_resp r = requeue(body);
    assert_int_equal(r.status, 200);
    assert_string_equal(ids_of(&r, got, sizeof(got)), want);
    assert_int_equal((long)vt_num(r.json, "would_requeue"),
                     cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "item_ids")));
    vt_resp_free(&r);
}

/* Each filter alone and combined, by dry run (nothing changes). */
/* Every state but claimed: the redrive filters below narrow it. */
#define RF_ALL                                                                                     \
    "\"flow_step_id\": \"rf\", \"states\": [\"failed\", \"manual_review\", \"rejected\","          \
    " \"deferred\", \"processed\"]"

/* One dry-run requeue: its filters and the items (letters of test_redrive_filters) it takes. */
typedef struct filter_row {
    const char *filters, *want;
} filter_row;

static const filter_row filter_rows[] = {
    /* the old single state still works */
    {"\"flow_step_id\": \"rf\", \"state\": \"failed\"", "acef"},
    /* tool_failed alone (every non-claimed state) */
    {RF_ALL ", \"tool_failed\": \"wiki_upsert\"", "abcegh"},
    /* failed_under_version alone: 1.4.1, 1.4.2-rc.1 and 1.0.0 are below 1.4.2; 1.9.3 and
     * 1.10.0 are not; a failure without a version never is; f failed no tool */
    {RF_ALL ", \"failed_under_version\": \"<1.4.2\"", "adgh"},
    /* 1.10.0 > 1.9.3: below 1.10.0 takes b (1.9.3), not c */
    {"\"flow_step_id\": \"rf\", \"states\": [\"failed\", \"manual_review\"],"
     " \"failed_under_version\": \"<1.10.0\"",
     "ab"},
    /* combined: the tool and the version on the same failure, and the states */
    {RF_ALL ", \"tool_failed\": \"http_get\", \"failed_under_version\": \"<1.4.2\"", "d"},
    {"\"flow_step_id\": \"rf\", \"states\": [\"failed\", \"deferred\"],"
     " \"tool_failed\": \"wiki_upsert\", \"failed_under_version\": \"<1.4.2\"",
     "ag"},
    /* since / until: the item's last change, [since, until) (a and b changed 2026-01-01, c
     * 2026-02-01) */
    {RF_ALL ", \"until\": \"2026-02-01T00:00:00Z\"", "ab"},
    {RF_ALL ", \"since\": \"2026-01-15T00:00:00+01:00\", \"until\": \"2026-03-01T00:00:00Z\"", "c"},
    {RF_ALL ", \"since\": \"2026-01-01T00:00:00Z\", \"until\": \"2026-02-01T00:00:00.000001Z\","
            " \"tool_failed\": \"wiki_upsert\", \"failed_under_version\": \"<1.9.3\"",
     "a"},
    /* nothing matches: an empty list */
    {RF_ALL ", \"tool_failed\": \"no_such_tool\"", ""},
};

static void test_redrive_filters(void **state)
{
    (void)state;
    char w[200];
    const int64_t ids[] = {
        item_through("rf", "a", "1.4.1", "wiki_upsert", "failed"),
        item_through("rf", "b", "1.9.3", "wiki_upsert", "manual_review"),
        item_through("rf", "c", "1.10.0", "wiki_upsert", "failed"),
        item_through("rf", "d", "1.4.2-rc.1", "http_get", "rejected"),
        item_through("rf", "e", NULL, "wiki_upsert", "failed"),
        item_through("rf", "f", "1.0.0", NULL, "failed"),
        item_through("rf", "g", "1.0.0", "wiki_upsert", "deferred"),
        item_through("rf", "h", "1.0.0", "wiki_upsert", "processed"),
    };
    long before = vt_sql_long("SELECT count(*) FROM audit");
    vt_sql("UPDATE items SET updated_at = '2026-01-01T00:00:00Z' WHERE id IN (%lld, %lld)",
           (long long)ids[0], (long long)ids[1]);
    vt_sql("UPDATE items SET updated_at = '2026-02-01T00:00:00Z' WHERE id = %lld",
           (long long)ids[2]);
    for (size_t i = 0; i < sizeof(filter_rows) / sizeof(filter_rows[0]); i++)
        expect_dry(filter_rows[i].filters, ids_at(w, sizeof(w), ids, filter_rows[i].want));
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit"), before);
}

/* A dry run then the real run: the same ids, each requeued and audited in the statement. */
static void test_redrive_dry_then_real(void **state)
{
    (void)state;
    char dry[400], real[400];
    for (int i = 0; i < 6; i++) {
        char ident[8];
        snprintf(ident, sizeof(ident), "i%d", i);
        item_through("dr", ident, i % 2 ? "2.0.0" : "2.1.0-beta.2", "wiki_upsert",
                     i % 3 ? "failed" : "deferred");
    }
#define DR_SELECT                                                                                  \
    "{\"flow_step_id\": \"dr\", \"states\": [\"failed\", \"deferred\"],"                           \
    " \"tool_failed\": \"wiki_upsert\", \"failed_under_version\": \"<2.1.0\""
    char body[400];
    snprintf(body, sizeof(body), DR_SELECT ", \"dry_run\": true}");
    vt_resp r = requeue(body);
    assert_int_equal(r.status, 200);
    ids_of(&r, dry, sizeof(dry));
    assert_int_equal((long)vt_num(r.json, "would_requeue"), 6);
    vt_resp_free(&r);
    snprintf(body, sizeof(body),
             DR_SELECT ", \"reason\": \"fixed in 2.1.0\", \"reset_budgets\": true}");
    r = requeue(body);
    assert_int_equal(r.status, 200);
    assert_string_equal(ids_of(&r, real, sizeof(real)), dry);
    assert_int_equal((long)vt_num(r.json, "requeued"), 6);
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'dr' AND"
                                 " state = 'available' AND failures = 0 AND defers = 0"),
                     6);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit t JOIN items i ON"
                                 " i.id = t.item_id WHERE i.flow_step_id = 'dr' AND"
                                 " t.cause = 'requeue' AND t.actor = 'ops' AND"
                                 " t.reason = 'fixed in 2.1.0' AND t.to_state = 'available'"),
                     6);
    /* again: they are available now, which the selection did not name */
    r = requeue(body);
    assert_int_equal(r.status, 200);
    assert_int_equal((long)vt_num(r.json, "requeued"), 0);
    vt_resp_free(&r);
}

/* One table, both orders: the database's verdict_semver_cmp and vd_semver_compare. */
static void test_redrive_semver_order(void **state)
{
    (void)state;
    static const struct {
        const char *a, *b;
        int want;
    } rows[] = {
        {"1.9.3", "1.10.0", -1},
        {"1.10.0", "1.9.3", 1},
        {"1.4.2-rc.1", "1.4.2", -1},
        {"1.4.2", "1.4.2-rc.1", 1},
        {"1.4.1", "1.4.2", -1},
        {"0.9.9", "1.0.0", -1},
        {"2.0.0", "10.0.0", -1},
        {"1.2.3", "1.2.3", 0},
        {"1.2.3+build.1", "1.2.3", 0},
        {"1.2.3-rc.1+b.2", "1.2.3-rc.1", 0},
        /* the order of semver.org §11 */
        {"1.0.0-alpha", "1.0.0-alpha.1", -1},
        {"1.0.0-alpha.1", "1.0.0-alpha.beta", -1},
        {"1.0.0-alpha.beta", "1.0.0-beta", -1},
        {"1.0.0-beta", "1.0.0-beta.2", -1},
        {"1.0.0-beta.2", "1.0.0-beta.11", -1},
        {"1.0.0-beta.11", "1.0.0-rc.1", -1},
        {"1.0.0-rc.1", "1.0.0", -1},
        {"1.0.0-1", "1.0.0-a", -1},
        {"1.0.0-a", "1.0.0-a-b", -1},
        {"1.0.0-B", "1.0.0-a", -1},
        {"99999999999999999999.0.0", "2.0.0", 1},
        {"1.0.0-2", "1.0.0-10", -1},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int c = vd_semver_compare(rows[i].a, rows[i].b);
        long s = vt_sql_long("SELECT verdict_semver_cmp('%s', '%s')", rows[i].a, rows[i].b);
        if ((c > 0) - (c < 0) != rows[i].want || s != rows[i].want)
            fail_msg("%s vs %s: C %d, SQL %ld, want %d", rows[i].a, rows[i].b, c, s, rows[i].want);
        assert_true(vd_semver_valid(rows[i].a) && vd_semver_valid(rows[i].b));
    }
    /* not a version: NULL in SQL (never below anything) */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM (SELECT verdict_semver_cmp('1.4', '1.0.0')"
                                 " AS c) s WHERE c IS NULL"),
                     1);
}

/* Every malformed selection is a 400 naming its field; nothing changes. */
static void test_redrive_bad_requests(void **state)
{
    (void)state;
    static const struct {
        const char *members, *field;
    } rows[] = {
        {"\"state\": \"failed\", \"tool\": \"x\"", "tool"},
        {"\"state\": \"failed\", \"dryrun\": true", "dryrun"},
        {"\"state\": \"claimed\"", "state"},
        {"\"states\": [\"failed\", \"claimed\"]", "states"},
        {"\"states\": [\"failed\", \"done\"]", "states"},
        {"\"states\": []", "states"},
        {"\"states\": \"failed\"", "states"},
        {"\"states\": [1]", "states"},
        {"\"state\": \"failed\", \"states\": [\"failed\"]", "state"},
        {"\"state\": \"failed\", \"failed_under_version\": \"1.4.2\"", "failed_under_version"},
        {"\"state\": \"failed\", \"failed_under_version\": \"<1.4\"", "failed_under_version"},
        {"\"state\": \"failed\", \"failed_under_version\": \"<=1.4.2\"", "failed_under_version"},
        {"\"state\": \"failed\", \"failed_under_version\": \">1.4.2\"", "failed_under_version"},
        {"\"state\": \"failed\", \"failed_under_version\": \"< 1.4.2\"", "failed_under_version"},
        {"\"state\": \"failed\", \"failed_under_version\": 1", "failed_under_version"},
        {"\"state\": \"failed\", \"tool_failed\": \"\"", "tool_failed"},
        {"\"state\": \"failed\", \"tool_failed\": 5", "tool_failed"},
        {"\"state\": \"failed\", \"since\": \"yesterday\"", "since"},
        {"\"state\": \"failed\", \"since\": \"2026-02-30T00:00:00Z\"", "since"},
        {"\"state\": \"failed\", \"until\": \"2026-01-01 00:00:00Z\"", "until"},
        {"\"state\": \"failed\", \"until\": \"2026-01-01T25:00:00Z\"", "until"},
        {"\"state\": \"failed\", \"until\": \"2026-01-01T00:00:00+1:00\"", "until"},
        {"\"state\": \"failed\", \"dry_run\": \"yes\"", "dry_run"},
    };
    char body[400];
    long before = vt_sql_long("SELECT count(*) FROM audit");
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        snprintf(body, sizeof(body), "{\"flow_step_id\": \"bad\", %s}", rows[i].members);
        vt_resp r = requeue(body);
        if (r.status != 400 || !vt_str(r.json, "field") ||
            strcmp(vt_str(r.json, "field"), rows[i].field) != 0)
            fail_msg("%s: %ld %s", rows[i].members, r.status, r.body);
        vt_resp_free(&r);
    }
    vt_resp r = requeue("{\"flow_step_id\": \"bad\"}");
    vt_assert_error(&r, 400, "missing_field");
    assert_string_equal(vt_str(r.json, "field"), "state");
    vt_resp_free(&r);
    r = vt_http(&srv, "POST", "/v1/items/requeue", VT_WORKER,
                "{\"flow_step_id\": \"bad\", \"state\": \"failed\"}", NULL);
    vt_assert_error(&r, 403, "forbidden");
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit"), before);
}

VT_SERVER_FIXTURE(srv, NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redrive_filters),
        cmocka_unit_test(test_redrive_dry_then_real),
        cmocka_unit_test(test_redrive_semver_order),
        cmocka_unit_test(test_redrive_bad_requests),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
