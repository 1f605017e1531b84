/* test_limit_keys.c - limits.h: which limit keys are accepted (a table of good and bad
 * forms; the SQL CHECK of sql/migrations/0032_flow_control.sql holds the database to the same
 * rule). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/store/limits.h"

static void test_limit_keys_forms(void **state)
{
    (void)state;
    static const char *const good[] = {
        "provider:openai", "model:gpt-4o", "site:blog-3", "a", "x.y_z@w-1:2", "A9"};
    static const char *const bad[] = {"",    "a b",        "a/b",    "site:blog?3", "mödel",
                                      "a\n", "provider:*", "100%25", "a,b"};
    char longest[VD_LIMIT_KEY_MAX + 2];
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_true(vd_limit_key_valid(good[i]));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(vd_limit_key_valid(bad[i]));
    memset(longest, 'k', sizeof(longest));
    longest[VD_LIMIT_KEY_MAX] = '\0';
    assert_true(vd_limit_key_valid(longest));
    longest[VD_LIMIT_KEY_MAX] = 'k';
    longest[VD_LIMIT_KEY_MAX + 1] = '\0';
    assert_false(vd_limit_key_valid(longest));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit_keys_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
