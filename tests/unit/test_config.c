/* test_config.c - vd_config_load: defaults, valid values, and each invalid case naming its
 * variable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    assert_int_equal(cfg.retention_interval_seconds, 60);
    assert_int_equal(cfg.max_body_bytes, 1048576);
    assert_int_equal(cfg.log_level, VD_LOG_INFO);
    assert_true(cfg.auto_migrate);
    assert_false(cfg.db_pool_transaction);
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
                         "VERDICT_THREADS=3",
                         "VERDICT_LOG_LEVEL=debug",
                         "VERDICT_AUTO_MIGRATE=0",
                         "VERDICT_DB_POOL_MODE=transaction",
                         NULL};
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
    assert_true(cfg.db_pool_transaction);
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
        {"VERDICT_DB_POOL_MODE=statement", "VERDICT_DB_POOL_MODE"},
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
    const char *env[] = {"VERDICT_LISTEN=0.0.0.0:8080", "VERDICT_API_KEYS=a:worker:12345678", NULL};
    fake_env = env;
    assert_true(vd_config_load(&cfg, fake_get, err, sizeof(err)));
    assert_false(cfg.listen_loopback);
    vd_config_cleanup(&cfg);
}

/* Write text to a fresh temporary file; its path in path (>= 64 bytes). */
static void temp_file(char *path, const char *text)
{
    snprintf(path, 64, "/tmp/vd-config-test-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* Docker/Kubernetes secrets: the values come from files, one API key per line or comma
 * separated, trailing newlines cut. */
static void test_config_secret_files(void **state)
{
    (void)state;
    vd_config cfg;
    char err[256], keys[64], url[64], keys_env[100], url_env[100];
    temp_file(keys, "ops:admin:abcdefgh:with:colons\ndash:reader:12345678,bot:worker:87654321\n");
    temp_file(url, "postgresql://u:secret@db/verdict\n");
    snprintf(keys_env, sizeof(keys_env), "VERDICT_API_KEYS_FILE=%s", keys);
    snprintf(url_env, sizeof(url_env), "VERDICT_DATABASE_URL_FILE=%s", url);
    const char *env[] = {keys_env, url_env, "VERDICT_LISTEN=0.0.0.0:8080", NULL};
    fake_env = env;
    assert_true(vd_config_load(&cfg, fake_get, err, sizeof(err)));
    assert_string_equal(cfg.database_url, "postgresql://u:secret@db/verdict");
    assert_int_equal(cfg.api_key_count, 3);
    assert_string_equal(cfg.api_keys[0].token, "abcdefgh:with:colons");
    assert_string_equal(cfg.api_keys[1].name, "dash");
    assert_string_equal(cfg.api_keys[2].token, "87654321");
    vd_config_cleanup(&cfg);
    unlink(keys);
    unlink(url);
}

static void test_config_secret_file_errors(void **state)
{
    (void)state;
    char keys[64], keys_env[100], bad_env[100];
    temp_file(keys, "ops:admin:abcdefgh\n");
    snprintf(keys_env, sizeof(keys_env), "VERDICT_API_KEYS_FILE=%s", keys);
    snprintf(bad_env, sizeof(bad_env), "VERDICT_DATABASE_URL_FILE=%s.missing", keys);
    static const char *names[] = {"VERDICT_API_KEYS_FILE",     "VERDICT_DATABASE_URL_FILE",
                                  "VERDICT_DATABASE_URL_FILE", "VERDICT_TLS_KEY_FILE",
                                  "VERDICT_TLS_CERT_FILE",     "VERDICT_TLS_PRIORITY"};
    const char *envs[][4] = {
        {keys_env, "VERDICT_API_KEYS=ops:admin:abcdefgh", NULL, NULL},  /* both set */
        {bad_env, NULL, NULL, NULL},                                    /* unreadable */
        {bad_env, "VERDICT_DATABASE_URL=postgresql://x/y", NULL, NULL}, /* both set */
        {"VERDICT_TLS_CERT_FILE=/x/cert.pem", NULL, NULL, NULL},
        {"VERDICT_TLS_KEY_FILE=/x/key.pem", NULL, NULL, NULL},
        {"VERDICT_TLS_PRIORITY=NORMAL", NULL, NULL, NULL}, /* without a certificate */
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        vd_config cfg;
        char err[256] = "";
        fake_env = envs[i];
        assert_false(vd_config_load(&cfg, fake_get, err, sizeof(err)));
        if (!strstr(err, names[i]))
            fail_msg("case %zu: message '%s' does not name %s", i, err, names[i]);
    }
    unlink(keys);
}

static void test_config_tls_files(void **state)
{
    (void)state;
    vd_config cfg;
    char err[256];
    const char *env[] = {"VERDICT_TLS_CERT_FILE=/run/secrets/cert.pem",
                         "VERDICT_TLS_KEY_FILE=/run/secrets/key.pem", NULL};
    fake_env = env;
    assert_true(vd_config_load(&cfg, fake_get, err, sizeof(err)));
    assert_string_equal(cfg.tls_cert_file, "/run/secrets/cert.pem");
    assert_string_equal(cfg.tls_key_file, "/run/secrets/key.pem");
    assert_null(cfg.tls_priority); /* the default of tls.h */
    vd_config_cleanup(&cfg);
    const char *prio[] = {"VERDICT_TLS_CERT_FILE=/c.pem", "VERDICT_TLS_KEY_FILE=/k.pem",
                          "VERDICT_TLS_PRIORITY=SECURE256:-VERS-ALL:+VERS-TLS1.3", NULL};
    fake_env = prio;
    assert_true(vd_config_load(&cfg, fake_get, err, sizeof(err)));
    assert_string_equal(cfg.tls_priority, "SECURE256:-VERS-ALL:+VERS-TLS1.3");
    vd_config_cleanup(&cfg);
}

/* The long-poll settings: VERDICT_MAX_WAITERS, VERDICT_WAIT_RETRY_MS. */
static void test_config_long_poll(void **state)
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

/* VERDICT_HTTP_IDLE_SECONDS: 30 s by default, past the read deadline when that is longer; a
 * value set must be longer than the read deadline. */
static void test_config_idle(void **state)
{
    static const char *const defaults[] = {NULL};
    static const char *const long_read[] = {"VERDICT_READ_TIMEOUT_MS=45500", NULL};
    static const char *const set[] = {"VERDICT_HTTP_IDLE_SECONDS=11", NULL};
    static const char *const bad[] = {"VERDICT_HTTP_IDLE_SECONDS=10", NULL};
    static const char *const *const ok_envs[] = {defaults, long_read, set};
    static const int want[] = {30, 47, 11};
    vd_config cfg;
    char err[256];
    (void)state;
    for (size_t i = 0; i < 3; i++) {
        fake_env = ok_envs[i];
        assert_true(vd_config_load(&cfg, fake_get, err, sizeof(err)));
        assert_int_equal(cfg.idle_seconds, want[i]);
        vd_config_cleanup(&cfg);
    }
    fake_env = bad; /* 10 s is not longer than the default read deadline of 10,000 ms */
    assert_false(vd_config_load(&cfg, fake_get, err, sizeof(err)));
    assert_non_null(strstr(err, "VERDICT_HTTP_IDLE_SECONDS"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults),
        cmocka_unit_test(test_config_valid_values),
        cmocka_unit_test(test_config_invalid_cases),
        cmocka_unit_test(test_config_public_with_keys),
        cmocka_unit_test(test_config_secret_files),
        cmocka_unit_test(test_config_secret_file_errors),
        cmocka_unit_test(test_config_tls_files),
        cmocka_unit_test(test_config_long_poll),
        cmocka_unit_test(test_config_idle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
