/* test_json_scan.c - the shared strict JSON scanner (src/common/json_scan.c): a table of
 * texts PHP's json_decode, Node's JSON.parse or PostgreSQL's jsonb reject or read otherwise
 * (each refused, with the field it names), and texts that stay accepted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/json_scan.h"

typedef struct scan_case {
    const char *text;
    const char *field; /* NULL: accepted; "": refused, no field; else refused naming it */
} scan_case;

static const scan_case cases[] = {
    {"{\"priority\":01}", "priority"},
    {"{\"items\":[{\"priority\":-01}]}", "items[0].priority"},
    {"{\"a\":\"x\ty\"}", "a"},
    {"{\"a\":{\"b\":\"line\nbreak\"}}", "a.b"},
    {"{\"a\":1,\"a\":2}", "a"},
    {"{\"p\":{\"k\":1,\"j\":0,\"k\":3}}", "p.k"},
    {"{\"a\":1,\"\\u0061\":2}", "a"},
    {"{\"l\":[{\"x\":1},{\"y\":1,\"y\":1}]}", "l[1].y"},
    {"{\"n\":1e999}", "n"},
    {"{\"n\":-1e400}", "n"},
    {"{\"n\":[1,2,1E+309]}", "n[2]"},
    {"{\"s\":\"\\u0000\"}", "s"},
    {"{\"s\":\"\\ud800\"}", "s"},
    {"{\"s\":\"\\x41\"}", "s"},
    {"{\"a\":1,}", ""},
    {"[1,2,]", ""},
    {"{'a':1}", ""},
    {"{\"a\":NaN}", "a"},
    {"{\"a\":Infinity}", "a"},
    {"{\"a\":.5}", "a"},
    {"{\"a\":1.}", "a"},
    {"{\"a\":+1}", "a"},
    {"{\"a\":tru}", "a"},
    {"{\"a\":1} {}", ""},
    {"{\"a\" 1}", "a"},
    {"{a:1}", ""},
    {"", ""},
    {"{\"a\":\"unterminated}", "a"},
    /* accepted */
    {"{\"a\":0,\"b\":-0.5e-3,\"c\":1E308,\"d\":\"\\ud83d\\ude00\"}", NULL},
    {" [ ] ", NULL},
    {"{\"a\":{\"k\":1},\"b\":{\"k\":1}}", NULL},
    {"{\"k\":1,\"K\":2,\"k \":3}", NULL},
    {"{\"n\":1e-999}", NULL},
};

static void test_json_scan_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        vd_json_problem why;
        bool ok = vd_json_check(cases[i].text, strlen(cases[i].text), 32, VD_JSON_STRICT, &why);
        if (ok != (cases[i].field == NULL))
            fail_msg("case %zu '%s': %s", i, cases[i].text, ok ? "accepted" : why.message);
        if (!ok && strcmp(why.field, cases[i].field) != 0)
            fail_msg("case %zu '%s': field '%s', want '%s' (%s)", i, cases[i].text, why.field,
                     cases[i].field, why.message);
        assert_true(ok || why.message[0] != '\0');
    }
}

/* Without the flags (the adjudicator's use) duplicates and 1e999 pass; grammar still holds. */
static void test_json_scan_flags(void **state)
{
    (void)state;
    const char *dup = "{\"a\":1,\"a\":2}", *big = "{\"a\":1e999}", *arr = "[1]";
    assert_true(vd_json_check(dup, strlen(dup), 32, 0, NULL));
    assert_true(vd_json_check(big, strlen(big), 32, 0, NULL));
    assert_false(vd_json_check(arr, strlen(arr), 32, VD_JSON_OBJECT_ONLY, NULL));
    assert_false(vd_json_check("{\"a\":01}", 8, 32, 0, NULL));
    assert_false(vd_json_check("[[[1]]]", 7, 2, 0, NULL));
    assert_true(vd_json_check("[[[1]]]", 7, 3, 0, NULL));
}

/* Many keys in one object: duplicates are found by sorting, not by comparing every pair. */
static void test_json_scan_many_keys(void **state)
{
    (void)state;
    static char text[2000000];
    size_t n = 0, keys = 100000;
    n += (size_t)snprintf(text + n, sizeof(text) - n, "{");
    for (size_t i = 0; i < keys; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%s\"k%zu\":1", i ? "," : "", i);
    n += (size_t)snprintf(text + n, sizeof(text) - n, ",\"k77\":2}");
    vd_json_problem why;
    assert_false(vd_json_check(text, n, 32, VD_JSON_STRICT, &why));
    assert_string_equal(why.field, "k77");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_scan_table),
        cmocka_unit_test(test_json_scan_flags),
        cmocka_unit_test(test_json_scan_many_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
