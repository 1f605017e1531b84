/* test_semver.c - semver.h: which worker versions and redrive times are accepted (tables of
 * good and bad forms), and the precedence rules of vd_semver_compare on semver.org's own
 * ordered list (tests/integration/test_redrive.c holds the database to the same table). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/semver.h"

static void test_semver_valid_forms(void **state)
{
    (void)state;
    static const char *const good[] = {"0.0.0",
                                       "1.4.2",
                                       "10.20.30",
                                       "1.0.0-alpha",
                                       "1.0.0-alpha.1",
                                       "1.0.0-0.3.7",
                                       "1.0.0-x.7.z.92",
                                       "1.0.0-x-y-z.--",
                                       "1.0.0+20130313144700",
                                       "1.0.0-beta+exp.sha.5114f85",
                                       "1.0.0-0a",
                                       "1.2.3+001"};
    static const char *const bad[] = {
        "",       "1",      "1.2",       "1.2.3.4",        "v1.2.3",     "01.2.3",   "1.02.3",
        "1.2.03", "1.2.3-", "1.2.3+",    "1.2.3-01",       "1.2.3-a..b", "1.2.3-a.", "1.2.3+a..b",
        "1.2.3 ", " 1.2.3", "1.2.3-a_b", "1.2.3-\xc3\xa9", "-1.2.3",     "1.2.-3",   "1.2.3++a"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (!vd_semver_valid(good[i]))
            fail_msg("refused %s", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (vd_semver_valid(bad[i]))
            fail_msg("accepted '%s'", bad[i]);
    char longest[VD_SEMVER_MAX + 2];
    memset(longest, '1', sizeof(longest));
    memcpy(longest, "1.2.3-", 6);
    longest[VD_SEMVER_MAX] = '\0';
    assert_true(vd_semver_valid(longest)); /* 64 bytes */
    longest[VD_SEMVER_MAX] = '1';
    longest[VD_SEMVER_MAX + 1] = '\0';
    assert_false(vd_semver_valid(longest)); /* 65 */
    assert_false(vd_semver_valid(NULL));
}

static void test_semver_precedence(void **state)
{
    (void)state;
    /* semver.org §11, lowest first, then more of the cases */
    static const char *const order[] = {"0.9.9",
                                        "1.0.0-1",
                                        "1.0.0-2",
                                        "1.0.0-10",
                                        "1.0.0-alpha",
                                        "1.0.0-alpha.1",
                                        "1.0.0-alpha.beta",
                                        "1.0.0-beta",
                                        "1.0.0-beta.2",
                                        "1.0.0-beta.11",
                                        "1.0.0-rc.1",
                                        "1.0.0",
                                        "1.4.2-rc.1",
                                        "1.4.2",
                                        "1.9.3",
                                        "1.10.0",
                                        "2.0.0",
                                        "10.0.0"};
    size_t n = sizeof(order) / sizeof(order[0]);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            int c = vd_semver_compare(order[i], order[j]);
            int want = (i > j) - (i < j);
            if ((c > 0) - (c < 0) != want)
                fail_msg("%s vs %s: %d, want %d", order[i], order[j], c, want);
        }
    }
    assert_int_equal(vd_semver_compare("1.2.3+b.1", "1.2.3+b.2"), 0);
    assert_int_equal(vd_semver_compare("1.2.3-rc.1+x", "1.2.3-rc.1"), 0);
    assert_true(vd_semver_compare("100000000000000000000.0.0", "99999999999999999999.0.0") > 0);
}

static void test_semver_rfc3339(void **state)
{
    (void)state;
    static const char *const good[] = {"2026-01-02T03:04:05Z",        "2026-01-02t03:04:05z",
                                       "2026-01-02T03:04:05.123456Z", "2026-01-02T03:04:05+01:00",
                                       "2024-02-29T00:00:00-23:59",   "2026-12-31T23:59:60Z"};
    static const char *const bad[] = {"",
                                      "2026-01-02",
                                      "2026-01-02 03:04:05Z",
                                      "2026-01-02T03:04:05",
                                      "2026-13-02T03:04:05Z",
                                      "2026-02-29T03:04:05Z",
                                      "2026-04-31T03:04:05Z",
                                      "2026-01-00T03:04:05Z",
                                      "2026-01-02T24:00:00Z",
                                      "2026-01-02T03:60:05Z",
                                      "2026-01-02T03:04:61Z",
                                      "2026-01-02T03:04:05.Z",
                                      "2026-01-02T03:04:05+1:00",
                                      "2026-01-02T03:04:05+01:0",
                                      "2026-01-02T03:04:05+0100",
                                      "2026-01-02T03:04:05+24:00",
                                      "2026-01-02T03:04:05Zjunk",
                                      "0000-01-02T03:04:05Z",
                                      "yesterday at noon, roughly"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (!vd_rfc3339_valid(good[i]))
            fail_msg("refused %s", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (vd_rfc3339_valid(bad[i]))
            fail_msg("accepted '%s'", bad[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_semver_valid_forms),
        cmocka_unit_test(test_semver_precedence),
        cmocka_unit_test(test_semver_rfc3339),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
