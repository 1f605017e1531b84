/* test_listen.c - the payload of a verdict_claimable notification ("<count> <flow_step_id>",
 * statements.c's announce column) as the LISTEN thread reads it (vd_listen_parse). The
 * long-poll settings are tested with the rest of the configuration (test_config.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/store/listen.h"

static void test_parse_payloads(void **state)
{
    long n = -1;
    const char *fs = NULL;
    (void)state;
    assert_true(vd_listen_parse("10 12_7", &n, &fs));
    assert_int_equal(n, 10);
    assert_string_equal(fs, "12_7");
    assert_true(vd_listen_parse("0 a flow step with spaces", &n, &fs)); /* a resume: all */
    assert_int_equal(n, 0);
    assert_string_equal(fs, "a flow step with spaces");
    static const char *const bad[] = {"",      "x",    "10",    "10 ",
                                      " 10 a", "-1 a", "10a b", "99999999999999999999 a"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(vd_listen_parse(bad[i], &n, &fs));
    assert_false(vd_listen_parse(NULL, &n, &fs));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_payloads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
