/* test_http.c - the http layer's pure parts: route matching, the route table against
 * openapi/verdict.yaml, the error table, JSON input limits, and small util helpers. */
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

static void test_http_route_matching(void **state)
{
    (void)state;
    static const vd_route table[] = {
        {"GET", "/v1/jobs/{job_id}", VD_ROLE_READER, NULL, "a"},
        {"POST", "/v1/jobs/{job_id}/heartbeat", VD_ROLE_WORKER, NULL, "b"},
        {"GET", "/v1/jobs", VD_ROLE_READER, NULL, "c"},
        {"POST", "/v1/jobs", VD_ROLE_WORKER, NULL, "d"},
    };
    vd_match m;
    assert_int_equal(vd_route_match(table, 4, "GET", "/v1/jobs/42", &m), VD_MATCH_FOUND);
    assert_int_equal(m.route_index, 0);
    assert_int_equal(m.nparams, 1);
    assert_string_equal(m.params[0], "42");
    assert_int_equal(vd_route_match(table, 4, "POST", "/v1/jobs/7/heartbeat", &m), VD_MATCH_FOUND);
    assert_int_equal(m.route_index, 1);
    assert_string_equal(m.params[0], "7");
    assert_int_equal(vd_route_match(table, 4, "HEAD", "/v1/jobs", &m), VD_MATCH_FOUND);
    assert_int_equal(m.route_index, 2);
    assert_int_equal(vd_route_match(table, 4, "DELETE", "/v1/jobs", &m), VD_MATCH_BAD_METHOD);
    assert_string_equal(m.allow, "GET, POST");
    assert_int_equal(vd_route_match(table, 4, "GET", "/v1/jobs/", &m), VD_MATCH_NOT_FOUND);
    assert_int_equal(vd_route_match(table, 4, "GET", "/v1/jobs/1/2", &m), VD_MATCH_NOT_FOUND);
    assert_int_equal(vd_route_match(table, 4, "GET", "/v1", &m), VD_MATCH_NOT_FOUND);
    assert_int_equal(vd_route_match(table, 4, "GET", "", &m), VD_MATCH_NOT_FOUND);
}

/* A trailing slash names a resource only where the pattern has one (the console's /ui/). */
static void test_http_route_trailing_slash(void **state)
{
    (void)state;
    static const vd_route table[] = {
        {"GET", "/ui", VD_ROLE_NONE, NULL, "a"},
        {"GET", "/ui/", VD_ROLE_NONE, NULL, "b"},
        {"GET", "/ui/{asset}", VD_ROLE_NONE, NULL, "c"},
    };
    vd_match m;
    assert_int_equal(vd_route_match(table, 3, "GET", "/ui", &m), VD_MATCH_FOUND);
    assert_int_equal(m.route_index, 0);
    assert_int_equal(vd_route_match(table, 3, "GET", "/ui/", &m), VD_MATCH_FOUND);
    assert_int_equal(m.route_index, 1);
    assert_int_equal(vd_route_match(table, 3, "GET", "/ui/app.js", &m), VD_MATCH_FOUND);
    assert_int_equal(m.route_index, 2);
    assert_string_equal(m.params[0], "app.js");
    assert_int_equal(vd_route_match(table, 3, "GET", "/ui/app.js/", &m), VD_MATCH_NOT_FOUND);
}

/* A concrete path wins over a templated one: /v1/items/lookup is not item "lookup". */
static void test_http_route_concrete_before_template(void **state)
{
    (void)state;
    static const vd_route table[] = {
        {"GET", "/v1/items/{item_id}", VD_ROLE_READER, NULL, "get"},
        {"POST", "/v1/items/lookup", VD_ROLE_WORKER, NULL, "lookup"},
        {"POST", "/v1/items/{item_id}/requeue", VD_ROLE_ADMIN, NULL, "requeue1"},
        {"POST", "/v1/items/requeue", VD_ROLE_ADMIN, NULL, "requeue"},
    };
    vd_match m;
    assert_int_equal(vd_route_match(table, 4, "GET", "/v1/items/lookup", &m), VD_MATCH_BAD_METHOD);
    assert_string_equal(m.allow, "POST");
    assert_int_equal(vd_route_match(table, 4, "POST", "/v1/items/lookup", &m), VD_MATCH_FOUND);
    assert_int_equal(m.route_index, 1);
    assert_int_equal(vd_route_match(table, 4, "GET", "/v1/items/requeue", &m), VD_MATCH_BAD_METHOD);
    assert_int_equal(vd_route_match(table, 4, "GET", "/v1/items/17", &m), VD_MATCH_FOUND);
    assert_int_equal(m.route_index, 0);
    assert_string_equal(m.params[0], "17");
    assert_int_equal(vd_route_match(table, 4, "POST", "/v1/items/17/requeue", &m), VD_MATCH_FOUND);
    assert_int_equal(m.route_index, 2);
}

/* Every route is in openapi/verdict.yaml and every path there is a route. */
static void test_http_routes_match_openapi(void **state)
{
    (void)state;
    const char *yaml = vd_openapi_yaml.data;
    const char *paths = strstr(yaml, "\npaths:\n");
    const char *comps = strstr(yaml, "\ncomponents:\n");
    assert_non_null(paths);
    assert_non_null(comps);
    for (size_t i = 0; i < vd_route_count; i++) {
        char key[300], method[16];
        snprintf(key, sizeof(key), "\n  %s:\n", vd_routes[i].pattern);
        const char *at = strstr(paths, key);
        if (!at || at > comps)
            fail_msg("route %s %s is not in openapi/verdict.yaml", vd_routes[i].method,
                     vd_routes[i].pattern);
        size_t ml = strlen(vd_routes[i].method);
        for (size_t k = 0; k <= ml; k++)
            method[k] = (char)(k < ml ? vd_routes[i].method[k] + ('a' - 'A') : 0);
        char op[32];
        snprintf(op, sizeof(op), "\n    %s:\n", method);
        const char *next = strstr(at + 1, "\n  /");
        const char *found = strstr(at, op);
        if (!found || (next && found > next) || found > comps)
            fail_msg("%s %s is not documented", vd_routes[i].method, vd_routes[i].pattern);
    }
    /* and the other way round: every documented path+method is routed */
    for (const char *p = strstr(paths, "\n  /"); p && p < comps; p = strstr(p + 1, "\n  /")) {
        char path[300];
        const char *end = strstr(p + 3, ":\n");
        size_t len = (size_t)(end - (p + 3));
        memcpy(path, p + 3, len);
        path[len] = '\0';
        const char *next = strstr(p + 1, "\n  /");
        if (!next || next > comps)
            next = comps;
        static const char *methods[] = {"get", "post", "put", "delete", "patch"};
        for (size_t k = 0; k < 5; k++) {
            char op[32];
            snprintf(op, sizeof(op), "\n    %s:\n", methods[k]);
            const char *found = strstr(p, op);
            if (!found || found > next)
                continue;
            bool routed = false;
            for (size_t i = 0; i < vd_route_count; i++)
                routed |= strcmp(vd_routes[i].pattern, path) == 0 &&
                          strcasecmp(vd_routes[i].method, methods[k]) == 0;
            if (!routed)
                fail_msg("openapi documents %s %s but no route serves it", methods[k], path);
        }
    }
}

static void test_http_error_table_complete(void **state)
{
    (void)state;
    for (int e = 1; e < VD_ERR__MAX; e++) {
        int st = vd_error_status((vd_error)e);
        assert_true(st >= 400 && st <= 599);
        assert_true(strlen(vd_error_hint((vd_error)e)) > 20);
        assert_true(strlen(vd_error_code((vd_error)e)) > 3);
        for (int f = 1; f < e; f++)
            assert_string_not_equal(vd_error_code((vd_error)e), vd_error_code((vd_error)f));
    }
    assert_true(vd_error_retryable(VD_ERR_DATABASE_UNAVAILABLE));
    assert_false(vd_error_retryable(VD_ERR_CLAIM_LOST));
    assert_int_equal(vd_error_status(VD_ERR_CLAIM_LOST), 409);
    assert_int_equal(vd_error_status(VD_ERR_IDEMPOTENCY_KEY_REUSED), 422);
    assert_string_equal(vd_error_code(VD_ERR_TOOL_FAILURE_PENDING), "tool_failure_pending");
    assert_string_equal(vd_error_code((vd_error)999), "internal");
}

static vd_error parse(const char *s)
{
    cJSON *v = NULL;
    char msg[200], field[200];
    vd_error rc = vd_json_parse(s, strlen(s), &v, msg, sizeof(msg), field, sizeof(field));
    cJSON_Delete(v);
    return rc;
}

static void test_http_json_limits(void **state)
{
    (void)state;
    char deep[200];
    assert_int_equal(parse("{\"a\": [1, 2, {\"b\": null}]}"), VD_OK);
    assert_int_equal(parse("  {} \n"), VD_OK);
    assert_int_equal(parse("{\"a\": \"caf\xc3\xa9\"}"), VD_OK);
    assert_int_equal(parse("{\"a\": \"\\ud83d\\ude00\"}"), VD_OK);
    assert_int_equal(parse("{\"a\": 1} x"), VD_ERR_INVALID_JSON);
    assert_int_equal(parse("{\"a\": 1}{}"), VD_ERR_INVALID_JSON);
    assert_int_equal(parse("{\"a\": NaN}"), VD_ERR_INVALID_JSON);
    assert_int_equal(parse("{\"a\": Infinity}"), VD_ERR_INVALID_JSON);
    assert_int_equal(parse("{\"a\": -Infinity}"), VD_ERR_INVALID_JSON);
    assert_int_equal(parse("{\"a\": \"x\\u0000y\"}"), VD_ERR_INVALID_JSON);
    assert_int_equal(parse("{\"a\": \"\\ud800\"}"), VD_ERR_INVALID_JSON);
    assert_int_equal(parse("{\"a\": \"\\udc00x\"}"), VD_ERR_INVALID_JSON);
    assert_int_equal(parse("{\"a\": \"\xff\"}"), VD_ERR_INVALID_JSON);
    assert_int_equal(parse("{\"a\": \"\xc0\xaf\"}"), VD_ERR_INVALID_JSON);
    assert_int_equal(parse("{\"a\": "), VD_ERR_INVALID_JSON);
    /* depth 32 is fine, 33 is not */
    memset(deep, '[', 32);
    memset(deep + 32, ']', 32);
    deep[64] = '\0';
    assert_int_equal(parse(deep), VD_OK);
    memset(deep, '[', 33);
    memset(deep + 33, ']', 33);
    deep[66] = '\0';
    assert_int_equal(parse(deep), VD_ERR_INVALID_JSON);
    /* brackets inside strings do not count */
    assert_int_equal(parse("{\"a\": \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}"), VD_OK);
}

static void test_http_util_helpers(void **state)
{
    (void)state;
    char *r = vd_redact("call failed: Authorization: Bearer abc.def token=xyz&password=p4ss");
    assert_non_null(r);
    assert_null(strstr(r, "abc.def"));
    assert_null(strstr(r, "xyz"));
    assert_null(strstr(r, "p4ss"));
    assert_non_null(strstr(r, "Bearer [REDACTED]"));
    free(r);
    r = vd_redact("no secrets; max_tokens=keep");
    assert_string_equal(r, "no secrets; max_tokens=keep"); /* a key ending in a secret word
                                                              (mytoken=) is masked: test_redact.c */
    free(r);
    assert_true(vd_ct_streq("abcdef", "abcdef"));
    assert_false(vd_ct_streq("abcdeg", "abcdef"));
    assert_false(vd_ct_streq("abc", "abcdef"));
    assert_false(vd_ct_streq("abcdefg", "abcdef"));
    assert_false(vd_ct_streq("", "abcdef"));
    assert_true(vd_utf8_valid("h\xc3\xa9llo \xf0\x9f\x98\x80", 11));
    assert_false(vd_utf8_valid("\xed\xa0\x80", 3));     /* a surrogate */
    assert_false(vd_utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
    assert_false(vd_utf8_valid("\xe2\x82", 2));
    assert_int_equal(vd_utf8_count("h\xc3\xa9", 3), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_route_matching),
        cmocka_unit_test(test_http_route_trailing_slash),
        cmocka_unit_test(test_http_route_concrete_before_template),
        cmocka_unit_test(test_http_routes_match_openapi),
        cmocka_unit_test(test_http_error_table_complete),
        cmocka_unit_test(test_http_json_limits),
        cmocka_unit_test(test_http_util_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
