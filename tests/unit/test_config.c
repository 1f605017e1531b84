/* test_config.c - vd_config_load: defaults, valid values, and each invalid case naming its
 * variable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/config.h"

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

static void test_config_defaults(void **state)
{
    (void)state;
    vd_config cfg;
    char err[256];
    const char *env[] = {"VERDICT_DATABASE_URL=postgresql://x/y", NULL};
    fake_env = env;
    assert_true(vd_config_load(&cfg, fake_get, err, sizeof(err)));
    assert_string_equal(cfg.listen_host, "127.0.0.1");
    assert_int_equal(cfg.listen_port, 8080);
    assert_true(cfg.listen_loopback);
    assert_int_equal(cfg.lease_seconds, 300);
    assert_int_equal(cfg.max_attempts, 5);
    assert_int_equal(cfg.max_defers, 3);
    assert_int_equal(cfg.backoff_base_seconds, 10);
    assert_int_equal(cfg.backoff_cap_seconds, 3600);
    assert_int_equal(cfg.loop_threshold, 3);
    assert_int_equal(cfg.sweep_interval_seconds, 5);
    assert_int_equal(cfg.max_body_bytes, 1048576);
    assert_int_equal(cfg.log_level, VD_LOG_INFO);
    assert_true(cfg.auto_migrate);
    assert_true(cfg.threads >= 1);
    assert_int_equal(cfg.api_key_count, 0);
    vd_config_cleanup(&cfg);
}

static void test_config_valid_values(void **state)
{
    (void)state;
    vd_config cfg;
    char err[256];
    const char *env[] = {"VERDICT_LISTEN=[::1]:9000",
                         "VERDICT_API_KEYS=ops:admin:abcdefgh:with:colons,dash:reader:12345678",
                         "VERDICT_THREADS=3", "VERDICT_LOG_LEVEL=debug",
                         "VERDICT_AUTO_MIGRATE=0", NULL};
    fake_env = env;
    assert_true(vd_config_load(&cfg, fake_get, err, sizeof(err)));
    assert_string_equal(cfg.listen_host, "::1");
    assert_int_equal(cfg.listen_port, 9000);
    assert_int_equal(cfg.threads, 3);
    assert_int_equal(cfg.api_key_count, 2);
    assert_string_equal(cfg.api_keys[0].name, "ops");
    assert_string_equal(cfg.api_keys[0].token, "abcdefgh:with:colons");
    assert_int_equal(cfg.api_keys[0].role, VD_ROLE_ADMIN);
    assert_int_equal(cfg.api_keys[1].role, VD_ROLE_READER);
    assert_false(cfg.auto_migrate);
    assert_int_equal(cfg.log_level, VD_LOG_DEBUG);
    vd_config_cleanup(&cfg);
}

static void test_config_invalid_cases(void **state)
{
    (void)state;
    static const struct {
        const char *env;
        const char *names;
    } cases[] = {
        {"VERDICT_THREADS=0", "VERDICT_THREADS"},
        {"VERDICT_THREADS=four", "VERDICT_THREADS"},
        {"VERDICT_LEASE_SECONDS=4", "VERDICT_LEASE_SECONDS"},
        {"VERDICT_LEASE_SECONDS=10x", "VERDICT_LEASE_SECONDS"},
        {"VERDICT_MAX_ATTEMPTS=0", "VERDICT_MAX_ATTEMPTS"},
        {"VERDICT_BACKOFF_BASE_SECONDS=-1", "VERDICT_BACKOFF_BASE_SECONDS"},
        {"VERDICT_BACKOFF_CAP_SECONDS=5", "VERDICT_BACKOFF_CAP_SECONDS"},
        {"VERDICT_LOOP_THRESHOLD=0", "VERDICT_LOOP_THRESHOLD"},
        {"VERDICT_SWEEP_INTERVAL_SECONDS=0", "VERDICT_SWEEP_INTERVAL_SECONDS"},
        {"VERDICT_MAX_BODY_BYTES=12", "VERDICT_MAX_BODY_BYTES"},
        {"VERDICT_LOG_LEVEL=loud", "VERDICT_LOG_LEVEL"},
        {"VERDICT_AUTO_MIGRATE=yes", "VERDICT_AUTO_MIGRATE"},
        {"VERDICT_LISTEN=nohostport", "VERDICT_LISTEN"},
        {"VERDICT_LISTEN=127.0.0.1:70000", "VERDICT_LISTEN"},
        {"VERDICT_API_KEYS=ops:boss:abcdefgh", "VERDICT_API_KEYS"},
        {"VERDICT_API_KEYS=ops:admin", "VERDICT_API_KEYS"},
        {"VERDICT_API_KEYS=ops:admin:short", "VERDICT_API_KEYS"},
        {"VERDICT_LISTEN=0.0.0.0:8080", "VERDICT_API_KEYS"}, /* public without keys */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        vd_config cfg;
        char err[256] = "";
        const char *env[] = {cases[i].env, NULL};
        fake_env = env;
        assert_false(vd_config_load(&cfg, fake_get, err, sizeof(err)));
        if (!strstr(err, cases[i].names))
            fail_msg("%s: message '%s' does not name %s", cases[i].env, err, cases[i].names);
    }
}

static void test_config_public_with_keys(void **state)
{
    (void)state;
    vd_config cfg;
    char err[256];
    const char *env[] = {"VERDICT_LISTEN=0.0.0.0:8080", "VERDICT_API_KEYS=a:worker:12345678",
                         NULL};
    fake_env = env;
    assert_true(vd_config_load(&cfg, fake_get, err, sizeof(err)));
    assert_false(cfg.listen_loopback);
    vd_config_cleanup(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults),
        cmocka_unit_test(test_config_valid_values),
        cmocka_unit_test(test_config_invalid_cases),
        cmocka_unit_test(test_config_public_with_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
