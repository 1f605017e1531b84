/* machine.c - SPEC §1.3's transition table, the backoff formula and the skip_item mapping, as
 * pure functions (see machine.h). Two budgets: failures (fail, retriable session, passed
 * lease) and defers (defer_item), so neither loop can run forever and a deferral never burns
 * a failure attempt. */
#include "verdict/machine.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

double vd_backoff_seconds(const vd_backoff *b, int n, double jitter_unit)
{
    double d = (double)b->base_seconds;
    if (n < 1)
        n = 1;
    for (int i = 1; i < n && d < (double)b->cap_seconds; i++)
        d *= 2;
    if (d > (double)b->cap_seconds)
        d = (double)b->cap_seconds;
    return d * (0.8 + 0.4 * jitter_unit);
}

static vd_outcome outcome(vd_item_state to, vd_job_status job, const vd_budgets *in)
{
    vd_outcome o = {to, job, in->failures, in->defers, 0, NULL};
    return o;
}

static vd_outcome apply_defer(const vd_budgets *in, const vd_event *ev, const vd_backoff *b,
                              double u)
{
    vd_outcome o = outcome(VD_ITEM_DEFERRED, VD_JOB_DEFERRED, in);
    if (ev->rate_limited && !ev->manual_review) { /* waits for its key, spends nothing */
        o.delay_seconds = ev->retry_after_seconds >= 0 ? (double)ev->retry_after_seconds : 0;
        return o;
    }
    /* clamped: an item requeued without a budget reset never counts past its budget */
    o.defers = in->defers + 1 < in->max_defers ? in->defers + 1 : in->max_defers;
    if (ev->manual_review || in->defers + 1 >= in->max_defers) {
        o.to_state = VD_ITEM_MANUAL_REVIEW;
        return o;
    }
    o.delay_seconds = ev->retry_after_seconds >= 0 ? (double)ev->retry_after_seconds
                                                   : vd_backoff_seconds(b, o.defers, u);
    return o;
}

static vd_outcome apply_failure(const vd_budgets *in, const vd_event *ev, const vd_backoff *b,
                                double u)
{
    vd_outcome o = outcome(VD_ITEM_FAILED, VD_JOB_FAILED, in);
    o.failures = in->failures + 1 < in->max_attempts ? in->failures + 1 : in->max_attempts;
    bool budget_left = in->failures + 1 < in->max_attempts;
    if (ev->kind == VD_EVENT_FAIL && !ev->retryable)
        return o;
    if (!budget_left) {
        if (ev->kind == VD_EVENT_SESSION_RETRIABLE)
            o.reason_code = "retry_budget_exhausted";
        return o;
    }
    o.to_state = VD_ITEM_DEFERRED;
    o.delay_seconds = vd_backoff_seconds(b, o.failures, u);
    if (ev->kind == VD_EVENT_FAIL && (double)ev->retry_after_seconds > o.delay_seconds)
        o.delay_seconds = (double)ev->retry_after_seconds;
    return o;
}

vd_outcome vd_machine_apply(const vd_budgets *in, const vd_event *ev, const vd_backoff *b,
                            double jitter_unit)
{
    switch (ev->kind) {
    case VD_EVENT_COMPLETE:
    case VD_EVENT_SESSION_SUCCEEDED:
        return outcome(VD_ITEM_PROCESSED, VD_JOB_COMPLETED, in);
    case VD_EVENT_REJECT_SOURCE:
        return outcome(VD_ITEM_REJECTED, VD_JOB_REJECTED, in);
    case VD_EVENT_DEFER_ITEM:
        return apply_defer(in, ev, b, jitter_unit);
    case VD_EVENT_FAIL:
    case VD_EVENT_SESSION_RETRIABLE:
        return apply_failure(in, ev, b, jitter_unit);
    case VD_EVENT_RELEASE:
        return outcome(VD_ITEM_AVAILABLE, VD_JOB_RELEASED, in);
    case VD_EVENT_REQUEST_REVIEW:
        return outcome(VD_ITEM_MANUAL_REVIEW, VD_JOB_DEFERRED, in);
    case VD_EVENT_SESSION_FAILED:
    case VD_EVENT__MAX:
    default:
        return outcome(VD_ITEM_FAILED, VD_JOB_FAILED, in);
    }
}

void vd_skip_item_map(const char *reason, bool *maps_to_reject, const char **reason_code)
{
    static const struct {
        const char *word, *code;
    } quality[] = {
        {"irrelevant", "irrelevant"},
        {"not_relevant", "irrelevant"},
        {"off_topic", "irrelevant"},
        {"too_thin", "too_thin"},
        {"thin", "too_thin"},
        {"duplicate", "duplicate"},
        {"dupe", "duplicate"},
        {"spam", "spam"},
        {"noise", "spam"},
        {"low_quality", "low_quality"},
    };
    static const char *tooling[] = {"tool", "error", "fail", "timeout", "gate"};
    char norm[256];
    size_t n = 0;
    const char *p = reason ? reason : "";
    while (isspace((unsigned char)*p))
        p++;
    for (; *p && n + 1 < sizeof(norm); p++)
        norm[n++] = (*p == '-' || *p == ' ') ? '_' : (char)tolower((unsigned char)*p);
    while (n > 0 && (norm[n - 1] == '_' || isspace((unsigned char)norm[n - 1])))
        n--;
    norm[n] = '\0';
    for (size_t i = 0; i < sizeof(quality) / sizeof(quality[0]); i++) {
        if (strcmp(norm, quality[i].word) == 0) {
            *maps_to_reject = true;
            *reason_code = quality[i].code;
            return;
        }
    }
    *maps_to_reject = false;
    *reason_code = "other";
    for (size_t i = 0; i < sizeof(tooling) / sizeof(tooling[0]); i++) {
        if (strstr(norm, tooling[i]))
            *reason_code = "tool_error";
    }
}
