/* test_domain.c - the words of the state machine (domain.h): every C table equals the SQL
 * CHECK list of the newest migration that defines the constraint, and names and parsers are
 * each other's inverse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/domain.h"
#include "verdict/embedded.h"

/* The quoted words of the newest migration's `CHECK (<column> IN (...))`, joined by ','. */
static void sql_words(const char *column, char *out, size_t cap)
{
    char marker[64];
    const char *at = NULL;
    snprintf(marker, sizeof(marker), "CHECK (%s IN", column);
    for (size_t m = vd_migration_count; m-- > 0 && !at;) {
        for (const char *p = strstr(vd_migrations[m].data, marker); p; p = strstr(p + 1, marker))
            at = p; /* the last definition in that file */
    }
    if (!at)
        fail_msg("no migration defines CHECK (%s IN ...)", column);
    const char *end = strstr(at, "))");
    out[0] = '\0';
    for (const char *q = strchr(at, '\''); q && q < end; q = strchr(q + 1, '\'')) {
        const char *close = strchr(q + 1, '\'');
        snprintf(out + strlen(out), cap - strlen(out), "%s%.*s", out[0] ? "," : "",
                 (int)(close - q - 1), q + 1);
        q = close;
    }
}

#define JOIN_ROW(name, str) str ","

static void assert_same(const char *column, const char *c_list)
{
    char sql[1024], c[1024];
    sql_words(column, sql, sizeof(sql));
    snprintf(c, sizeof(c), "%s", c_list);
    c[strlen(c) - 1] = '\0'; /* the last comma */
    if (strcmp(sql, c) != 0)
        fail_msg("CHECK (%s IN ...) is {%s} in SQL but {%s} in domain.h", column, sql, c);
}

static void test_domain_matches_sql_checks(void **state)
{
    (void)state;
    assert_same("state", VD_ITEM_STATE_MAP(JOIN_ROW));
    assert_same("from_state", VD_ITEM_STATE_MAP(JOIN_ROW));
    assert_same("to_state", VD_ITEM_STATE_MAP(JOIN_ROW));
    assert_same("status", VD_JOB_STATUS_MAP(JOIN_ROW));
    assert_same("job_status", VD_JOB_STATUS_MAP(JOIN_ROW));
    assert_same("cause", VD_CAUSE_MAP(JOIN_ROW));
    assert_same("disposition", VD_DISPOSITION_MAP(JOIN_ROW));
}

static void test_domain_round_trips(void **state)
{
    (void)state;
    for (int i = 0; i < VD_ITEM__MAX; i++) {
        vd_item_state v = VD_ITEM__MAX;
        assert_true(vd_item_state_parse(vd_item_state_name((vd_item_state)i), &v));
        assert_int_equal(v, i);
    }
    for (int i = 0; i < VD_JOB__MAX; i++) {
        vd_job_status v = VD_JOB__MAX;
        assert_true(vd_job_status_parse(vd_job_status_name((vd_job_status)i), &v));
        assert_int_equal(v, i);
    }
    for (int i = 0; i < VD_CAUSE__MAX; i++) {
        vd_cause v = VD_CAUSE__MAX;
        assert_true(vd_cause_parse(vd_cause_name((vd_cause)i), &v));
        assert_int_equal(v, i);
    }
    for (int i = 0; i < VD_DISPOSITION__MAX; i++) {
        vd_disposition v = VD_DISPOSITION_NONE;
        assert_true(vd_disposition_parse(vd_disposition_name((vd_disposition)i), &v));
        assert_int_equal(v, i);
        /* a disposition's own cause has the same word */
        assert_string_equal(vd_cause_name(vd_disposition_cause(v)), vd_disposition_name(v));
    }
}

static void test_domain_refuses_unknown_words(void **state)
{
    (void)state;
    vd_item_state s = VD_ITEM_FAILED;
    vd_disposition d = VD_DISPOSITION_FAIL;
    assert_false(vd_item_state_parse("Claimed", &s));
    assert_false(vd_item_state_parse(NULL, &s));
    assert_false(vd_item_state_parse("", &s));
    assert_int_equal(s, VD_ITEM_FAILED); /* untouched */
    assert_false(vd_disposition_parse("release", &d));
    assert_int_equal(d, VD_DISPOSITION_FAIL);
    assert_null(vd_disposition_name(VD_DISPOSITION_NONE));
    assert_null(vd_job_status_name(VD_JOB__MAX));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_domain_matches_sql_checks),
        cmocka_unit_test(test_domain_round_trips),
        cmocka_unit_test(test_domain_refuses_unknown_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
