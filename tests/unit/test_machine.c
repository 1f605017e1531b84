/* test_machine.c - the pure state machine (SPEC §1.3), backoff and skip_item mapping (§5.1),
 * table-driven, plus tool-failure classification and verdicts (§6). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/fence.h"
#include "verdict/machine.h"
#include "verdict/tool_failures.h"

static const vd_backoff B = {10, 3600};

static void test_machine_table_rows(void **state)
{
    (void)state;
    static const struct {
        vd_event ev;
        vd_budgets in;
        const char *to, *job;
        int failures, defers;
        const char *code;
    } rows[] = {
        {{VD_EVENT_COMPLETE, false, true, -1, false},
         {0, 0, 5, 3},
         "processed",
         "completed",
         0,
         0,
         NULL},
        {{VD_EVENT_REJECT_SOURCE, false, true, -1, false},
         {2, 1, 5, 3},
         "rejected",
         "rejected",
         2,
         1,
         NULL},
        {{VD_EVENT_DEFER_ITEM, false, true, -1, false},
         {0, 0, 5, 3},
         "deferred",
         "deferred",
         0,
         1,
         NULL},
        {{VD_EVENT_DEFER_ITEM, false, true, -1, false},
         {0, 2, 5, 3},
         "manual_review",
         "deferred",
         0,
         3,
         NULL},
        {{VD_EVENT_DEFER_ITEM, true, true, -1, false},
         {0, 0, 5, 3},
         "manual_review",
         "deferred",
         0,
         1,
         NULL},
        {{VD_EVENT_FAIL, false, true, -1, false}, {0, 0, 5, 3}, "deferred", "failed", 1, 0, NULL},
        {{VD_EVENT_FAIL, false, true, -1, false}, {4, 0, 5, 3}, "failed", "failed", 5, 0, NULL},
        {{VD_EVENT_FAIL, false, false, -1, false}, {0, 0, 5, 3}, "failed", "failed", 1, 0, NULL},
        {{VD_EVENT_SESSION_SUCCEEDED, false, true, -1, false},
         {1, 1, 5, 3},
         "processed",
         "completed",
         1,
         1,
         NULL},
        {{VD_EVENT_SESSION_RETRIABLE, false, true, -1, false},
         {0, 0, 5, 3},
         "deferred",
         "failed",
         1,
         0,
         NULL},
        {{VD_EVENT_RELEASE, false, true, -1, false},
         {2, 1, 5, 3},
         "available",
         "released",
         2,
         1,
         NULL},
        {{VD_EVENT_SESSION_RETRIABLE, false, true, -1, false},
         {4, 0, 5, 3},
         "failed",
         "failed",
         5,
         0,
         "retry_budget_exhausted"},
        {{VD_EVENT_SESSION_FAILED, false, true, -1, false},
         {0, 0, 5, 3},
         "failed",
         "failed",
         0,
         0,
         NULL},
        {{VD_EVENT_FAIL, false, true, -1, false}, {0, 0, 1, 3}, "failed", "failed", 1, 0, NULL},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        vd_outcome o = vd_machine_apply(&rows[i].in, &rows[i].ev, &B, 0.5);
        const char *to = vd_item_state_name(o.to_state), *job = vd_job_status_name(o.job_status);
        if (strcmp(to, rows[i].to) != 0 || strcmp(job, rows[i].job) != 0 ||
            o.failures != rows[i].failures || o.defers != rows[i].defers)
            fail_msg("row %zu: got %s/%s f=%d d=%d", i, to, job, o.failures, o.defers);
        if (rows[i].code)
            assert_string_equal(o.reason_code, rows[i].code);
        else
            assert_null(o.reason_code);
    }
}

static void test_machine_delays(void **state)
{
    (void)state;
    vd_budgets in = {0, 0, 10, 10};
    vd_event defer = {VD_EVENT_DEFER_ITEM, false, true, -1, false};
    vd_event defer_at = {VD_EVENT_DEFER_ITEM, false, true, 0, false};
    vd_event fail_after = {VD_EVENT_FAIL, false, true, 900, false};
    vd_event fail_short = {VD_EVENT_FAIL, false, true, 1, false};
    assert_true(vd_machine_apply(&in, &defer, &B, 0.5).delay_seconds == 10.0);
    assert_true(vd_machine_apply(&in, &defer_at, &B, 0.5).delay_seconds == 0.0);
    assert_true(vd_machine_apply(&in, &fail_after, &B, 0.5).delay_seconds == 900.0);
    assert_true(vd_machine_apply(&in, &fail_short, &B, 0.5).delay_seconds == 10.0);
    in.failures = 3; /* 4th failure: base * 2^3 */
    assert_true(vd_machine_apply(&in, &fail_short, &B, 0.5).delay_seconds == 80.0);
}

/* A deferral because a limit key is throttled (rate_limited) spends no budget, even with
 * none left, waits only as long as asked (the key's reopening), and never parks the item;
 * asked for a person (manual_review), it parks as any deferral does. */
static void test_machine_rate_limited(void **state)
{
    (void)state;
    vd_budgets in = {2, 2, 3, 3};
    vd_event rl = {VD_EVENT_DEFER_ITEM, false, true, 42, true};
    vd_event rl_now = {VD_EVENT_DEFER_ITEM, false, true, -1, true};
    vd_event rl_person = {VD_EVENT_DEFER_ITEM, true, true, -1, true};
    for (int i = 0; i < 10; i++) {
        vd_outcome o = vd_machine_apply(&in, &rl, &B, 0.5);
        assert_int_equal(o.to_state, VD_ITEM_DEFERRED);
        assert_int_equal(o.defers, 2);
        assert_int_equal(o.failures, 2);
        assert_true(o.delay_seconds == 42.0);
    }
    assert_true(vd_machine_apply(&in, &rl_now, &B, 0.5).delay_seconds == 0.0);
    assert_int_equal(vd_machine_apply(&in, &rl_person, &B, 0.5).to_state, VD_ITEM_MANUAL_REVIEW);
}

static void test_machine_backoff(void **state)
{
    (void)state;
    assert_true(vd_backoff_seconds(&B, 1, 0.5) == 10.0);
    assert_true(vd_backoff_seconds(&B, 2, 0.5) == 20.0);
    assert_true(vd_backoff_seconds(&B, 30, 0.5) == 3600.0);
    assert_true(vd_backoff_seconds(&B, 1000, 0.5) == 3600.0);
    assert_true(vd_backoff_seconds(&B, 1, 0.0) == 8.0);   /* -20% */
    assert_true(vd_backoff_seconds(&B, 1, 0.999) < 12.0); /* < +20% */
    assert_true(vd_backoff_seconds(&B, 0, 0.5) == 10.0);
}

/* No sequence of failures and deferrals loops forever: every item ends within
 * max_attempts + max_defers events. */
static void test_machine_always_terminates(void **state)
{
    (void)state;
    for (int ma = 1; ma <= 6; ma++) {
        for (int md = 1; md <= 6; md++) {
            for (unsigned pattern = 0; pattern < 64; pattern++) {
                vd_budgets in = {0, 0, ma, md};
                int steps = 0;
                for (;; steps++) {
                    vd_event ev = {(pattern >> (steps % 6)) & 1 ? VD_EVENT_FAIL
                                                                : VD_EVENT_DEFER_ITEM,
                                   false, true, -1, false};
                    vd_outcome o = vd_machine_apply(&in, &ev, &B, 0.5);
                    in.failures = o.failures;
                    in.defers = o.defers;
                    if (o.to_state != VD_ITEM_DEFERRED)
                        break;
                    assert_true(steps < ma + md);
                }
                assert_true(steps + 1 <= ma + md);
            }
        }
    }
}

static void test_machine_skip_item_mapping(void **state)
{
    (void)state;
    static const struct {
        const char *reason;
        bool reject;
        const char *code;
    } cases[] = {
        {"irrelevant", true, "irrelevant"},
        {"Not Relevant", true, "irrelevant"},
        {"off-topic", true, "irrelevant"},
        {"thin", true, "too_thin"},
        {"too thin", true, "too_thin"},
        {"DUPE", true, "duplicate"},
        {"noise", true, "spam"},
        {" spam ", true, "spam"},
        {"low-quality", true, "low_quality"},
        {"tool-error", false, "tool_error"},
        {"gate failed", false, "tool_error"},
        {"Timeout", false, "tool_error"},
        {"", false, "other"},
        {NULL, false, "other"},
        {"spam and tool error", false, "tool_error"},
        {"unclear", false, "other"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool reject = !cases[i].reject;
        const char *code = NULL;
        vd_skip_item_map(cases[i].reason, &reject, &code);
        if (reject != cases[i].reject || strcmp(code, cases[i].code) != 0)
            fail_msg("'%s': %d %s", cases[i].reason ? cases[i].reason : "(null)", reject, code);
    }
}

static void test_machine_tool_classification(void **state)
{
    (void)state;
    static const struct {
        const char *error;
        vd_tool_kind kind;
    } cases[] = {
        {"iteration_cap", VD_TOOL_KIND_DETERMINISTIC},
        {"HTTP 503 Service Unavailable", VD_TOOL_KIND_TRANSIENT},
        {"status=429", VD_TOOL_KIND_TRANSIENT},
        {"upstream 502", VD_TOOL_KIND_TRANSIENT},
        {"gateway 504", VD_TOOL_KIND_TRANSIENT},
        {"Rate limit exceeded", VD_TOOL_KIND_TRANSIENT},
        {"request timed out", VD_TOOL_KIND_TRANSIENT},
        {"read ECONNRESET", VD_TOOL_KIND_TRANSIENT},
        {"Connection refused", VD_TOOL_KIND_TRANSIENT},
        {"id 15030 not found", VD_TOOL_KIND_DETERMINISTIC},
        {"schema validation failed", VD_TOOL_KIND_DETERMINISTIC},
        /* the provider refused the request: the same request is refused again */
        {"Request refused: content policy violation", VD_TOOL_KIND_DETERMINISTIC},
        {"The model refused to answer", VD_TOOL_KIND_DETERMINISTIC},
        {"400 content_filter: the prompt was flagged", VD_TOOL_KIND_DETERMINISTIC},
        {"HTTP 403 Forbidden", VD_TOOL_KIND_DETERMINISTIC},
        {"403", VD_TOOL_KIND_DETERMINISTIC},
        {"This request violates our usage policies", VD_TOOL_KIND_DETERMINISTIC},
        {"rejected as a result of our safety system", VD_TOOL_KIND_DETERMINISTIC},
        {"flagged by moderation", VD_TOOL_KIND_DETERMINISTIC},
        {"operation not permitted for this key", VD_TOOL_KIND_DETERMINISTIC},
        {"the provider declined the request", VD_TOOL_KIND_DETERMINISTIC},
        {"blocked by provider", VD_TOOL_KIND_DETERMINISTIC},
        {"429 Too Many Requests (rate limit policy)", VD_TOOL_KIND_TRANSIENT},
        {"upstream reset: connection refused", VD_TOOL_KIND_TRANSIENT},
        {"model overloaded, try later", VD_TOOL_KIND_TRANSIENT},
        {"service temporarily unavailable", VD_TOOL_KIND_TRANSIENT},
        {"id 4031 not found", VD_TOOL_KIND_DETERMINISTIC},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (vd_tool_kind_classify(cases[i].error) != cases[i].kind)
            fail_msg("'%s' misclassified", cases[i].error);
    }
    vd_tool_verdict v;
    vd_tool_verdict_decide(VD_TOOL_KIND_DETERMINISTIC, "skills__tldr", false, 1, 3, &v);
    assert_false(v.retryable);
    assert_non_null(strstr(v.hint, "'skills__tldr'"));
    assert_null(strstr(v.hint, "Continue without it")); /* it no longer invites completion */
    assert_non_null(strstr(v.hint, "If the item cannot be finished without it, call defer_item."));
    vd_tool_verdict_decide(VD_TOOL_KIND_TRANSIENT, "fetch", false, 2, 3, &v);
    assert_true(v.retryable);
    vd_tool_verdict_decide(VD_TOOL_KIND_TRANSIENT, "fetch", false, 3, 3, &v);
    assert_false(v.retryable);
    assert_non_null(strstr(v.hint, "defer_item"));
}

/* A required tool the model must not call again: the hint steers to defer_item (the one
 * tool it names), never "continue without it"; a retryable one keeps the transient hint. */
static void test_machine_required_tool_hint(void **state)
{
    (void)state;
    vd_tool_verdict v;
    vd_tool_verdict_decide(VD_TOOL_KIND_DETERMINISTIC, "wp_upsert", true, 1, 3, &v);
    assert_false(v.retryable);
    assert_null(strstr(v.hint, "Continue without it"));
    assert_non_null(strstr(v.hint, "defer_item"));
    assert_non_null(strstr(v.hint, "cannot be finished now"));
    vd_tool_verdict_decide(VD_TOOL_KIND_TRANSIENT, "wp_upsert", true, 3, 3, &v);
    assert_false(v.retryable);
    assert_non_null(strstr(v.hint, "cannot be finished now"));
    vd_tool_verdict_decide(VD_TOOL_KIND_TRANSIENT, "wp_upsert", true, 1, 3, &v);
    assert_true(v.retryable);
    assert_null(strstr(v.hint, "do not complete"));
}

/* The rule as a table: which finishing calls a required tool failure refuses. */
static void test_machine_required_tool_guard(void **state)
{
    (void)state;
    static const struct {
        vd_tool_guard_input in;
        bool refuses;
    } rows[] = {
        {{true, false, false, true, false}, true},   /* reject after any required failure */
        {{true, false, true, true, true}, false},    /* ... unless forced */
        {{false, true, false, true, false}, false},  /* complete after a retryable one */
        {{false, true, false, true, true}, true},    /* complete after a given-up one */
        {{false, true, true, true, true}, false},    /* ... unless forced */
        {{false, false, false, true, true}, false},  /* defer_item / fail: always */
        {{true, false, false, false, false}, false}, /* no required failure */
        {{false, true, false, false, false}, false},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (vd_tool_guard_refuses(&rows[i].in) != rows[i].refuses)
            fail_msg("row %zu", i);
    }
}

/* Budgets a LEFT row applies to, and a SPENT row. */
static const vd_budgets LEFT = {0, 0, 5, 5}, SPENT = {4, 4, 5, 5};

static bool budget_is(vd_tr_budget b, bool spent)
{
    return spent ? b == VD_TR_BUDGET_FAILURE_SPENT || b == VD_TR_BUDGET_DEFER_SPENT
                 : b == VD_TR_BUDGET_FAILURE_LEFT || b == VD_TR_BUDGET_DEFER_LEFT;
}

/* Every row of transitions.def names words of the domain and is the move its (from, event)
 * finds for budgets its guard accepts. */
static void test_machine_transitions_rows(void **state)
{
    (void)state;
    assert_true(vd_transitions_n > 30);
    for (size_t i = 0; i < vd_transitions_n; i++) {
        const vd_transition *t = &vd_transitions[i];
        if (t->from != VD_ITEM_NONE)
            assert_non_null(vd_item_state_name(t->from));
        assert_non_null(vd_item_state_name(t->to));
        if (t->job_status != VD_JOB_NONE)
            assert_non_null(vd_job_status_name(t->job_status));
        assert_non_null(vd_cause_name(t->cause));
        assert_non_null(vd_tr_event_name(t->event));
        const vd_budgets *in = budget_is(t->budget, true) ? &SPENT : &LEFT;
        if (vd_transition_find(t->from, t->event, in) != t)
            fail_msg("row %zu (%s) is not found", i, vd_tr_event_name(t->event));
    }
}

/* Every (from, event) pair the table has no row for is refused, whatever the budgets; a pair
 * it has is one row, or two that split on the budget (LEFT and SPENT). */
static void test_machine_transitions_refused(void **state)
{
    (void)state;
    const vd_budgets *budgets[] = {&LEFT, &SPENT, NULL};
    for (int from = -1; from < VD_ITEM__MAX; from++) {
        for (int e = 0; e < VD_TR__MAX; e++) {
            int rows = 0, guarded = 0;
            for (size_t i = 0; i < vd_transitions_n; i++) {
                const vd_transition *t = &vd_transitions[i];
                if ((int)t->from == from && (int)t->event == e) {
                    rows++;
                    guarded += budget_is(t->budget, false) || budget_is(t->budget, true);
                }
            }
            if (!(rows == 0 || (rows == 1 && guarded == 0) || (rows == 2 && guarded == 2)))
                fail_msg("(%d, %s): %d rows, %d guarded", from, vd_tr_event_name(e), rows, guarded);
            for (size_t b = 0; b < 3; b++) {
                const vd_transition *t =
                    vd_transition_find((vd_item_state)from, (vd_tr_event)e, budgets[b]);
                if (rows == 0 && t)
                    fail_msg("(%d, %s) is not in the table but accepted", from,
                             vd_tr_event_name(e));
                if (rows > 0 && b < 2 && !t)
                    fail_msg("(%d, %s) is in the table but refused", from, vd_tr_event_name(e));
            }
        }
    }
}

/* Whatever a holder sends, vd_machine_apply's outcome is a row of the table from claimed. */
static void test_machine_transitions_apply(void **state)
{
    (void)state;
    const vd_budgets *budgets[] = {&LEFT, &SPENT};
    for (int k = 0; k < VD_EVENT__MAX; k++) {
        for (int flags = 0; flags < 8; flags++) {
            for (size_t b = 0; b < 2; b++) {
                vd_event ev = {(vd_event_kind)k, flags & 1, (flags & 2) != 0, -1, (flags & 4) != 0};
                vd_outcome o = vd_machine_apply(budgets[b], &ev, &B, 0.5);
                const vd_transition *t =
                    vd_transition_find(VD_ITEM_CLAIMED, vd_machine_event(&ev), budgets[b]);
                assert_non_null(t);
                assert_int_equal(o.to_state, t->to);
                assert_int_equal(o.job_status, t->job_status);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_machine_table_rows),
        cmocka_unit_test(test_machine_transitions_rows),
        cmocka_unit_test(test_machine_transitions_refused),
        cmocka_unit_test(test_machine_transitions_apply),
        cmocka_unit_test(test_machine_delays),
        cmocka_unit_test(test_machine_backoff),
        cmocka_unit_test(test_machine_rate_limited),
        cmocka_unit_test(test_machine_always_terminates),
        cmocka_unit_test(test_machine_skip_item_mapping),
        cmocka_unit_test(test_machine_tool_classification),
        cmocka_unit_test(test_machine_required_tool_hint),
        cmocka_unit_test(test_machine_required_tool_guard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
