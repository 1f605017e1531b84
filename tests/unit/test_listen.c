/* test_listen.c - the payload of a verdict_claimable notification ("<count> <flow_step_id>",
 * statements.c's announce column) as the LISTEN thread reads it (vd_listen_parse), and the
 * long-poll settings of the configuration (VERDICT_MAX_WAITERS, VERDICT_WAIT_RETRY_MS). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/config.h"
#include "verdict/listen.h"

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

static const char *const *fake_env;

static const char *fake_get(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; fake_env && fake_env[i]; i++) {
        if (strncmp(fake_env[i], name, n) == 0 && fake_env[i][n] == '=')
            return fake_env[i] + n + 1;
    }
    return NULL;
}

static void test_config(void **state)
{
    static const char *const defaults[] = {NULL};
    static const char *const set[] = {"VERDICT_MAX_WAITERS=0", "VERDICT_WAIT_RETRY_MS=250", NULL};
    static const char *const bad[] = {"VERDICT_WAIT_RETRY_MS=99", NULL};
    vd_config cfg;
    char err[256];
    (void)state;
    fake_env = defaults;
    assert_true(vd_config_load(&cfg, fake_get, err, sizeof(err)));
    assert_int_equal(cfg.max_waiters, 1000);
    assert_int_equal(cfg.wait_retry_ms, 1000);
    vd_config_cleanup(&cfg);
    fake_env = set;
    assert_true(vd_config_load(&cfg, fake_get, err, sizeof(err)));
    assert_int_equal(cfg.max_waiters, 0);
    assert_int_equal(cfg.wait_retry_ms, 250);
    vd_config_cleanup(&cfg);
    fake_env = bad;
    assert_false(vd_config_load(&cfg, fake_get, err, sizeof(err)));
    assert_non_null(strstr(err, "VERDICT_WAIT_RETRY_MS"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_payloads),
        cmocka_unit_test(test_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
