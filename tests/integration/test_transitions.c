/* test_transitions.c - the item state machine's one table (verdict/transitions.def) in SQL:
 * the function verdict_transition that scripts/transitions.sh writes from it answers every
 * (from, event) pair as the C table does, and PostgreSQL inlines it into the statements that
 * call it for their target state (no function call left in their plans). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store_internal.h"
#include "verdict/buf.h"
#include "verdict/machine.h"
#include "vt.h"

static vt_server srv;
VT_SERVER_FIXTURE(srv, NULL)

/* Budgets a LEFT row applies to, one a SPENT row applies to, and none (SQL NULLs). */
static const vd_budgets LEFT = {0, 0, 5, 5}, SPENT = {4, 4, 5, 5};

/* The table's words as SQL arrays: from states (NULL first: no item before) into *froms,
 * events into *events; and the C table's answer for every (from, event, budgets) in that
 * order (budgets LEFT, SPENT, none), comma-separated ("-": refused), into *want. */
static void pairs(vd_buf *froms, vd_buf *events, vd_buf *want)
{
    const vd_budgets *budgets[] = {&LEFT, &SPENT, NULL};
    int n = 0;
    vd_buf_printf(froms, "ARRAY[NULL");
    for (int from = 0; from < VD_ITEM__MAX; from++)
        vd_buf_printf(froms, ", '%s'", vd_item_state_name((vd_item_state)from));
    vd_buf_printf(froms, "]::text[]");
    for (int e = 0; e < VD_TR__MAX; e++)
        vd_buf_printf(events, "%s'%s'", e ? ", " : "ARRAY[", vd_tr_event_name((vd_tr_event)e));
    vd_buf_printf(events, "]");
    for (int from = -1; from < VD_ITEM__MAX; from++) {
        for (int e = 0; e < VD_TR__MAX; e++) {
            for (size_t b = 0; b < 3; b++, n++) {
                const vd_transition *t =
                    vd_transition_find((vd_item_state)from, (vd_tr_event)e, budgets[b]);
                vd_buf_printf(want, "%s%s", n ? "," : "", t ? vd_item_state_name(t->to) : "-");
            }
        }
    }
}

/* PostgreSQL answers every pair as the C table does (no budgets: SQL NULLs; a row that reads
 * them does not apply, as with vd_transition_find without budgets). */
static void test_transitions_sql_agrees_with_c(void **state)
{
    (void)state;
    vd_buf froms = {0}, events = {0}, want = {0};
    pairs(&froms, &events, &want);
    assert_false(froms.failed || events.failed || want.failed);
    char *got =
        vt_sql("SELECT string_agg(coalesce(verdict_transition(f, e, a, b, c, d), '-'),"
               "  ',' ORDER BY fo, eo, bo)"
               " FROM unnest(%s) WITH ORDINALITY x(f, fo),"
               "  unnest(%s) WITH ORDINALITY y(e, eo),"
               "  (VALUES (1, %d, %d, %d, %d), (2, %d, %d, %d, %d),"
               "   (3, NULL, NULL, NULL, NULL)) z(bo, a, b, c, d)",
               froms.data, events.data, LEFT.failures, LEFT.max_attempts, LEFT.defers,
               LEFT.max_defers, SPENT.failures, SPENT.max_attempts, SPENT.defers, SPENT.max_defers);
    assert_non_null(got);
    if (strcmp(got, want.data) != 0) {
        const char *g = got, *w = want.data;
        while (*g && *g == *w)
            g++, w++;
        fail_msg("verdict_transition differs from transitions.def at answer %ld: SQL %.40s,"
                 " C %.40s",
                 (long)(w - want.data), g, w);
    }
    free(got);
    free(froms.data);
    free(events.data);
    free(want.data);
}

/* The generic plan of statement sql, prepared as name (parameter types) and run with args, in
 * EXPLAIN (VERBOSE, FORMAT JSON); the caller frees it. */
static char *generic_plan(const char *name, const char *types, const char *args, vd_sql sql)
{
    char *plan = vt_sql("SET plan_cache_mode = force_generic_plan;"
                        " PREPARE %s (%s) AS %s;"
                        " EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE %s (%s)",
                        name, types, vd_sql_statements[sql].text, name, args);
    assert_non_null(plan);
    return plan;
}

/* The generic plan of statement sql (parameter types, arguments): its expressions are the
 * inlined CASE, not a call of verdict_transition; `shows` is in it. */
static void assert_inlined(const char *name, const char *types, const char *args, vd_sql sql,
                           const char *shows)
{
    char *plan = generic_plan(name, types, args, sql);
    if (strstr(plan, "verdict_transition"))
        fail_msg("%s calls verdict_transition (not inlined): %s", name, plan);
    if (!strstr(plan, shows))
        fail_msg("%s: no %s in its plan: %s", name, shows, plan);
    free(plan);
}

static void test_transitions_inlined(void **state)
{
    (void)state;
    /* the sweep: folded on its constant event to the budget's CASE */
    assert_inlined("sweep", "bigint", "100", VD_SQL_SWEEP_LEASES, "failures + 1) < ");
    assert_inlined("claim", "text, text, bigint, double precision, text, text, text, text",
                   "'f', 'w', 10, 60, 'a', 'v', NULL, NULL", VD_SQL_CLAIM, "'claimed'::text");
    assert_inlined("requeue", "bigint, boolean, text, text", "1, false, 'r', 'a'",
                   VD_SQL_REQUEUE_ONE, "'available'::text");
    assert_inlined("resolve", "bigint, text, text, text, text",
                   "1, 'processed', 'resolve', 'r', 'a'", VD_SQL_RESOLVE_ONE,
                   "'resolve_processed'::text");
    assert_inlined("release", "bigint, bigint, text, text", "1, 1, 'r', 'a'", VD_SQL_ITEM_RELEASE,
                   "'available'::text");
}

/* A single disposition's generic plan calls no SQL function whose body would be parsed and
 * planned again on every execution: verdict_answer_head is inlined (its tool_result argument
 * is a column of a subquery kept apart by OFFSET 0, cheap enough to inline). */
static void test_job_finish_inlines_answer_head(void **state)
{
    (void)state;
    char *plan = generic_plan(
        "fin",
        "bigint, bigint, text, text, text, text, text, text, integer, integer, double precision,"
        " boolean, text, jsonb, text, jsonb, text, boolean, text, boolean, text, text, boolean,"
        " text, text",
        "1, 1, 'processed', 'completed', 'complete', 'complete', NULL, NULL, 0, 0, 0, false, 'a',"
        " NULL, NULL, '{}', 'complete', false, NULL, false, NULL, 'x', true, NULL, NULL",
        VD_SQL_JOB_FINISH);
    if (strstr(plan, "verdict_answer_head"))
        fail_msg("job_finish calls verdict_answer_head (not inlined): %s", plan);
    /* the head's body, inlined twice: into the kept head and into the answer */
    const char *first = strstr(plan, "concat_ws(");
    if (!first || !strstr(first + 1, "concat_ws("))
        fail_msg("job_finish: the answer head is not inlined twice in its plan: %s", plan);
    free(plan);
}

/* The claim rank is inlined into claim_many (its body is immutable), and the claim still reads
 * items_claimable in rank order: before, verdict_claim_rank ran as a function that parsed and
 * planned its body in every claim, and the plan named it. */
static void test_claim_rank_inlined(void **state)
{
    (void)state;
    char *plan = generic_plan("cm", "jsonb",
                              "'[{\"ord\": 0, \"fs\": \"a\", \"worker\": \"w\", \"lease\": 60,"
                              " \"actor\": \"a\"}]'",
                              VD_SQL_CLAIM_MANY);
    if (strstr(plan, "verdict_claim_rank"))
        fail_msg("claim_many calls verdict_claim_rank (not inlined): %s", plan);
    if (!strstr(plan, "\"items_claimable\""))
        fail_msg("claim_many does not read items_claimable: %s", plan);
    free(plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transitions_sql_agrees_with_c),
        cmocka_unit_test(test_transitions_inlined),
        cmocka_unit_test(test_job_finish_inlines_answer_head),
        cmocka_unit_test(test_claim_rank_inlined),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
