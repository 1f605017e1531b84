/* test_row_checks.c - the rules every row of items and jobs keeps, held by one CHECK
 * constraint per table that calls an immutable function (verdict_items_valid,
 * verdict_jobs_valid; decision 0088): each rule still refuses a row that breaks it, a valid
 * row passes, and no other CHECK constraint is left on either table (each costs a parse and a
 * plan of its expression per statement that writes the table). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt.h"

static vt_server srv;
VT_SERVER_FIXTURE(srv, NULL)

/* The labels of the cases (label, arguments) whose call is not false, comma-separated ("" for
 * none). The first case is a valid row; every other one breaks one rule. */
#define ITEMS_OK "'available', 0, 0, 0, 5, 3, 0, NULL::uuid, NULL::timestamptz, NULL::bigint"
#define ITEMS_CASES                                                                                \
    "('valid', " ITEMS_OK "),"                                                                     \
    " ('claimed valid', 'claimed', 1, 0, 0, 5, 3, 0, gen_random_uuid(), now(), 1),"                \
    " ('state', 'bogus', 0, 0, 0, 5, 3, 0, NULL, NULL, NULL),"                                     \
    " ('claimed without token', 'claimed', 1, 0, 0, 5, 3, 0, NULL, now(), 1),"                     \
    " ('claimed without lease', 'claimed', 1, 0, 0, 5, 3, 0, gen_random_uuid(), NULL, 1),"         \
    " ('claimed without job', 'claimed', 1, 0, 0, 5, 3, 0, gen_random_uuid(), now(), NULL),"       \
    " ('token when available', 'available', 0, 0, 0, 5, 3, 0, gen_random_uuid(), now(), 1),"       \
    " ('priority high', 'available', 0, 0, 0, 5, 3, 1001, NULL, NULL, NULL),"                      \
    " ('priority low', 'available', 0, 0, 0, 5, 3, -1001, NULL, NULL, NULL),"                      \
    " ('max_defers 0', 'available', 0, 0, 0, 5, 0, 0, NULL, NULL, NULL),"                          \
    " ('max_defers 101', 'available', 0, 0, 0, 5, 101, 0, NULL, NULL, NULL),"                      \
    " ('max_attempts 0', 'available', 0, 0, 0, 0, 3, 0, NULL, NULL, NULL),"                        \
    " ('max_attempts 101', 'available', 0, 0, 0, 101, 3, 0, NULL, NULL, NULL),"                    \
    " ('defers', 'available', 0, 0, -1, 5, 3, 0, NULL, NULL, NULL),"                               \
    " ('failures', 'available', 0, -1, 0, 5, 3, 0, NULL, NULL, NULL),"                             \
    " ('attempts', 'available', -1, 0, 0, 5, 3, 0, NULL, NULL, NULL)"

#define T32 "'0123456789abcdef0123456789abcdef'"
#define JOBS_CASES                                                                                 \
    "('valid', 'processing', NULL::timestamptz, NULL, 'w', NULL, NULL::jsonb, '{}'::jsonb,"        \
    "  NULL, " T32 ", '0123456789abcdef', NULL, NULL, 1),"                                         \
    " ('finished valid', 'completed', now(), 'complete', 'w', 'v1', '{}', '{}', " T32 ", NULL,"    \
    "  NULL, 'h', NULL, 2),"                                                                       \
    " ('disposition', 'completed', now(), 'bogus', 'w', NULL, NULL, '{}', NULL, NULL, NULL,"       \
    "  NULL, NULL, 1),"                                                                            \
    " ('status', 'bogus', now(), NULL, 'w', NULL, NULL, '{}', NULL, NULL, NULL, NULL, NULL, 1),"   \
    " ('finished while processing', 'processing', now(), NULL, 'w', NULL, NULL, '{}', NULL,"       \
    "  NULL, NULL, NULL, NULL, 1),"                                                                \
    " ('ended unfinished', 'completed', NULL, NULL, 'w', NULL, NULL, '{}', NULL, NULL, NULL,"      \
    "  NULL, NULL, 1),"                                                                            \
    " ('worker_version empty', 'processing', NULL, NULL, 'w', '', NULL, '{}', NULL, NULL, NULL,"   \
    "  NULL, NULL, 1),"                                                                            \
    " ('worker_version long', 'processing', NULL, NULL, 'w', repeat('v', 65), NULL, '{}', NULL,"   \
    "  NULL, NULL, NULL, NULL, 1),"                                                                \
    " ('worker_id empty', 'processing', NULL, NULL, '', NULL, NULL, '{}', NULL, NULL, NULL,"       \
    "  NULL, NULL, 1),"                                                                            \
    " ('worker_id long', 'processing', NULL, NULL, repeat('w', 201), NULL, NULL, '{}', NULL,"      \
    "  NULL, NULL, NULL, NULL, 1),"                                                                \
    " ('checkpoint', 'processing', NULL, NULL, 'w', NULL, '[]', '{}', NULL, NULL, NULL, NULL,"     \
    "  NULL, 1),"                                                                                  \
    " ('engine_data', 'processing', NULL, NULL, 'w', NULL, NULL, '[]', NULL, NULL, NULL, NULL,"    \
    "  NULL, 1),"                                                                                  \
    " ('disposition_trace_id', 'processing', NULL, NULL, 'w', NULL, NULL, '{}', 'XYZ', NULL,"      \
    "  NULL, NULL, NULL, 1),"                                                                      \
    " ('claim_trace_id', 'processing', NULL, NULL, 'w', NULL, NULL, '{}', NULL, upper(" T32 "),"   \
    "  NULL, NULL, NULL, 1),"                                                                      \
    " ('claim_span_id', 'processing', NULL, NULL, 'w', NULL, NULL, '{}', NULL, NULL,"              \
    "  '0123456789abcde', NULL, NULL, 1),"                                                         \
    " ('answer in two forms', 'processing', NULL, NULL, 'w', NULL, NULL, '{}', NULL, NULL, NULL,"  \
    "  'h', 'r', 1),"                                                                              \
    " ('attempt', 'processing', NULL, NULL, 'w', NULL, NULL, '{}', NULL, NULL, NULL, NULL,"        \
    "  NULL, 0)"

static void test_rules_refuse_each_break(void **state)
{
    (void)state;
    char *items =
        vt_sql("SELECT coalesce(string_agg(l, ',' ORDER BY l), '') FROM (VALUES " ITEMS_CASES
               ") c(l, s, a, f, d, ma, md, p, t, le, j)"
               " WHERE verdict_items_valid(jsonb_populate_record(NULL::items, jsonb_build_object("
               " 'state', s, 'attempts', a, 'failures', f, 'defers', d, 'max_attempts', ma,"
               " 'max_defers', md, 'priority', p, 'claim_token', t, 'lease_expires_at', le,"
               " 'current_job_id', j))) IS NOT FALSE");
    assert_string_equal(items, "claimed valid,valid");
    free(items);
    char *jobs =
        vt_sql("SELECT coalesce(string_agg(l, ',' ORDER BY l), '') FROM (VALUES " JOBS_CASES
               ") c(l, st, fin, di, w, v, cp, ed, dt, ct, cs, ah, ar, at)"
               " WHERE verdict_jobs_valid(jsonb_populate_record(NULL::jobs, jsonb_build_object("
               " 'status', st, 'finished_at', fin, 'disposition', di, 'worker_id', w,"
               " 'worker_version', v, 'checkpoint', cp, 'engine_data', ed,"
               " 'disposition_trace_id', dt, 'claim_trace_id', ct, 'claim_span_id', cs,"
               " 'answer_head', ah, 'answer_response', ar, 'attempt', at))) IS NOT FALSE");
    assert_string_equal(jobs, "finished valid,valid");
    free(jobs);
}

/* The one constraint per table is the function's, and a write that breaks a rule is refused
 * by it (check_violation), for an item and for a job. */
static void test_constraints_hold_the_rules(void **state)
{
    (void)state;
    char *defs = vt_sql("SELECT string_agg(conrelid::regclass || ':' || conname, ',' ORDER BY 1)"
                        " FROM pg_constraint WHERE contype = 'c'"
                        " AND conrelid IN ('items'::regclass, 'jobs'::regclass)");
    assert_string_equal(defs, "items:items_valid,jobs:jobs_valid");
    free(defs);
    /* the function takes the whole row: a call of one argument is read from text per statement
     * at a fraction of the cost of ten column arguments (decision 0088, addendum) */
    defs = vt_sql("SELECT string_agg(pg_get_constraintdef(oid), ',' ORDER BY conname)"
                  " FROM pg_constraint WHERE conname IN ('items_valid', 'jobs_valid')");
    assert_string_equal(defs, "CHECK (verdict_items_valid(items.*)),"
                              "CHECK (verdict_jobs_valid(jobs.*))");
    free(defs);
    free(vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('checks')"));
    vt_seed_items("checks", "https://checks.example/", 1, 5, 3);
    char *refused = vt_sql(
        "CREATE FUNCTION pg_temp.refused(q text) RETURNS boolean LANGUAGE plpgsql AS $$"
        " BEGIN EXECUTE q; RETURN false;"
        " EXCEPTION WHEN check_violation THEN RETURN true; END $$;"
        " INSERT INTO jobs (item_id, flow_step_id, worker_id, attempt, claim_token,"
        "  lease_expires_at) SELECT id, flow_step_id, 'w', 1, gen_random_uuid(), now()"
        "  FROM items WHERE flow_step_id = 'checks';"
        " SELECT pg_temp.refused('UPDATE items SET priority = 1001 WHERE flow_step_id = "
        "''checks''')"
        "  || ',' || pg_temp.refused('UPDATE items SET state = ''claimed'''"
        "  || ' WHERE flow_step_id = ''checks''')"
        "  || ',' || pg_temp.refused('UPDATE jobs SET attempt = 0 WHERE flow_step_id = ''checks''')"
        "  || ',' || pg_temp.refused('UPDATE jobs SET status = ''completed'''"
        "  || ' WHERE flow_step_id = ''checks''')");
    assert_string_equal(refused, "true,true,true,true");
    free(refused);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules_refuse_each_break),
        cmocka_unit_test(test_constraints_hold_the_rules),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
