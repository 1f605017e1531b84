/* test_input.c - strict input's pure parts (docs/decisions/0025): the one checked integer
 * parse (vd_parse_i64) at its edges, the Verdict-Claim header, percent-decoding that keeps a
 * %00 visible, the control-byte test, the member tables (unknown members, wrong types, a null
 * dry_run) and the route's declared query arguments against openapi/verdict.yaml. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/http_internal.h"
#include "verdict/embedded.h"
#include "verdict/util.h"

static void test_input_parse_i64(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int64_t min, max;
        bool ok;
        int64_t want;
    } rows[] = {
        {"0", 0, INT64_MAX, true, 0},
        {"42", 0, INT64_MAX, true, 42},
        {"007", 0, INT64_MAX, true, 7},
        {"9223372036854775807", 0, INT64_MAX, true, INT64_MAX},
        {"9223372036854775808", 0, INT64_MAX, false, 0},
        {"18446744073709551616", 0, INT64_MAX, false, 0},
        {"99999999999999999999999999999", 0, INT64_MAX, false, 0},
        {"-9223372036854775808", INT64_MIN, INT64_MAX, true, INT64_MIN},
        {"-9223372036854775809", INT64_MIN, INT64_MAX, false, 0},
        {"-1", 0, INT64_MAX, false, 0},
        {"-1", -5, 5, true, -1},
        {"6", -5, 5, false, 0},
        {"", 0, 10, false, 0},
        {"-", -10, 10, false, 0},
        {"+1", 0, 10, false, 0},
        {" 1", 0, 10, false, 0},
        {"1 ", 0, 10, false, 0},
        {"1x", 0, 10, false, 0},
        {"0x10", 0, 100, false, 0},
        {"1e3", 0, 10000, false, 0},
        {"１", 0, 10, false, 0}, /* a full-width digit */
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int64_t v = -77;
        bool ok = vd_parse_i64(rows[i].s, strlen(rows[i].s), rows[i].min, rows[i].max, &v);
        if (ok != rows[i].ok || (ok && v != rows[i].want) || (!ok && v != -77))
            fail_msg("'%s': got %d %lld", rows[i].s, ok, (long long)v);
    }
    /* the length bounds the text: "12" of "123" */
    int64_t v = 0;
    assert_true(vd_parse_i64("123", 2, 0, 100, &v));
    assert_int_equal(v, 12);
}

static void test_input_claim_header(void **state)
{
    (void)state;
    static const char uuid[] = "0b7e3f0e-6a43-4c1b-9a53-8f5d2b9c1d2e";
    static const struct {
        const char *pre;
        bool ok;
        int64_t job;
    } rows[] = {
        {"1:", true, 1},
        {"999999999999999999:", true, 999999999999999999LL},
        {"1000000000000000000:", false, 0},
        {"9223372036854775807:", false, 0},
        {"9223372036854775808:", false, 0},
        {"18446744073709551617:", false, 0},
        {"0:", false, 0},
        {"01:", false, 0},
        {"-1:", false, 0},
        {"+1:", false, 0},
        {":", false, 0},
        {"1", false, 0},
        {"1::", false, 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char h[120], token[VD_UUID_SIZE] = "";
        int64_t job = 0;
        snprintf(h, sizeof(h), "%s%s", rows[i].pre, uuid);
        bool ok = vd_claim_header_parse(h, &job, token);
        if (ok != rows[i].ok || (ok && (job != rows[i].job || strcmp(token, uuid) != 0)))
            fail_msg("'%s': got %d %lld", h, ok, (long long)job);
    }
    int64_t job = 0;
    char token[VD_UUID_SIZE];
    assert_false(vd_claim_header_parse("1:not-a-uuid", &job, token));
    assert_false(vd_claim_header_parse("", &job, token));
}

static void test_input_unescape_and_control(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
        bool control;
    } rows[] = {
        {"/v1/items/42", "/v1/items/42", false},
        {"/v1/flow-steps/a%20b", "/v1/flow-steps/a b", false},
        {"/v1/flow-steps/a%00b",
         "/v1/flow-steps/a\x7f"
         "b",
         true},
        {"/v1/flow-steps/a%0Ab", "/v1/flow-steps/a\nb", true},
        {"/v1/flow-steps/a%09b", "/v1/flow-steps/a\tb", true},
        {"/v1/flow-steps/a%7fb",
         "/v1/flow-steps/a\x7f"
         "b",
         true},
        {"/v1/flow-steps/a%1Fb",
         "/v1/flow-steps/a\x1f"
         "b",
         true},
        {"/v1/flow-steps/%C3%A9t%C3%A9", "/v1/flow-steps/\xc3\xa9t\xc3\xa9", false},
        {"a%25b", "a%b", false},
        {"a%2", "a%2", false},
        {"a%", "a%", false},
        {"a%zz", "a%zz", false},
        {"%%41", "%A", false},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char s[200];
        snprintf(s, sizeof(s), "%s", rows[i].in);
        size_t n = vd_url_unescape(s);
        if (n != strlen(rows[i].out) || strcmp(s, rows[i].out) != 0 ||
            vd_has_control(s) != rows[i].control)
            fail_msg("'%s' -> '%s' (%zu), control %d", rows[i].in, s, n, vd_has_control(s));
    }
}

/* The request bodies of the member rows: an unknown member and wrong types are refused,
 * naming the member; null passes as absent except on a VD_J_NOT_NULL member. */
static void test_input_members(void **state)
{
    (void)state;
    static const vd_member table[] = {
        {"flow_step_id", VD_J_STRING},          {"limit", VD_J_NUMBER},      {"states", VD_J_ARRAY},
        {"dry_run", VD_J_BOOL | VD_J_NOT_NULL}, {"checkpoint", VD_J_OBJECT}, {"args", VD_J_ANY}};
    static const struct {
        const char *body;
        vd_error err;
        const char *field;
    } rows[] = {
        {"{}", VD_OK, NULL},
        {"{\"flow_step_id\": \"a\", \"limit\": 5, \"states\": [], \"dry_run\": false,"
         " \"checkpoint\": {}, \"args\": 1}",
         VD_OK, NULL},
        {"{\"flow_step_id\": null, \"limit\": null, \"args\": null}", VD_OK, NULL},
        {"{\"dry_run\": null}", VD_ERR_INVALID_FIELD, "x.dry_run"},
        {"{\"dry_run\": \"true\"}", VD_ERR_INVALID_FIELD, "x.dry_run"},
        {"{\"dry_run\": 0}", VD_ERR_INVALID_FIELD, "x.dry_run"},
        {"{\"flow_step\": \"a\"}", VD_ERR_INVALID_FIELD, "x.flow_step"},
        {"{\"flow_step_id\": \"a\", \"Limit\": 5}", VD_ERR_INVALID_FIELD, "x.Limit"},
        {"{\"limit\": \"5\"}", VD_ERR_INVALID_FIELD, "x.limit"},
        {"{\"states\": \"failed\"}", VD_ERR_INVALID_FIELD, "x.states"},
        {"{\"checkpoint\": []}", VD_ERR_INVALID_FIELD, "x.checkpoint"},
        {"{\"flow_step_id\": 1}", VD_ERR_INVALID_FIELD, "x.flow_step_id"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        vd_ctx *ctx = calloc(1, sizeof(*ctx));
        cJSON *body = cJSON_Parse(rows[i].body);
        assert_non_null(ctx);
        assert_non_null(body);
        vd_error rc = VD_MEMBERS_CHECK(((vd_field){ctx, body, "x"}), table);
        if (rc != rows[i].err || (rc && strcmp(ctx->err_field, rows[i].field) != 0))
            fail_msg("%s: got %s '%s' (%s)", rows[i].body, vd_error_code(rc), ctx->err_field,
                     ctx->err_message);
        cJSON_Delete(body);
        free(ctx);
    }
}

/* The query arguments openapi documents for method+pattern, space-separated, into out. */
static void documented_query(const cJSON *doc, const char *pattern, const char *method, char *out,
                             size_t cap)
{
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "paths"), pattern),
        method);
    const cJSON *comps = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "components"), "parameters");
    const cJSON *p = NULL;
    out[0] = '\0';
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(op, "parameters"))
    {
        const char *ref = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "$ref"));
        const cJSON *d = ref && strrchr(ref, '/')
                             ? cJSON_GetObjectItemCaseSensitive(comps, strrchr(ref, '/') + 1)
                             : p;
        const char *in = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "in"));
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "name"));
        if (in && name && strcmp(in, "query") == 0)
            snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? " " : "", name);
    }
}

/* Whether the space-separated word lists a and b hold the same words. */
static bool same_words(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    for (const char *p = a; *p; p += strcspn(p, " "), p += *p == ' ', na++) {
        char w[64];
        snprintf(w, sizeof(w), " %.*s ", (int)strcspn(p, " "), p);
        char padded[600];
        snprintf(padded, sizeof(padded), " %s ", b);
        if (!strstr(padded, w))
            return false;
    }
    for (const char *p = b; *p; p += strcspn(p, " "), p += *p == ' ')
        nb++;
    return na == nb;
}

static void test_input_route_queries_match_openapi(void **state)
{
    (void)state;
    cJSON *doc = cJSON_ParseWithLength(vd_openapi_json.data, vd_openapi_json.len);
    assert_non_null(doc);
    for (size_t i = 0; i < vd_route_count; i++) {
        char method[16], documented[600];
        size_t ml = strlen(vd_routes[i].method);
        for (size_t k = 0; k <= ml; k++)
            method[k] = (char)(k < ml ? vd_routes[i].method[k] + ('a' - 'A') : 0);
        documented_query(doc, vd_routes[i].pattern, method, documented, sizeof(documented));
        const char *routed = vd_route_query(&vd_routes[i]);
        if (!same_words(routed ? routed : "", documented))
            fail_msg("%s %s takes '%s' but openapi documents '%s'", vd_routes[i].method,
                     vd_routes[i].pattern, routed ? routed : "", documented);
    }
    cJSON_Delete(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_input_parse_i64),
        cmocka_unit_test(test_input_claim_header),
        cmocka_unit_test(test_input_unescape_and_control),
        cmocka_unit_test(test_input_members),
        cmocka_unit_test(test_input_route_queries_match_openapi),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
