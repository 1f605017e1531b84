/* machine.c - SPEC §1.3's transition table (the rows of verdict/transitions.def, expanded
 * here), the backoff formula and the skip_item mapping, as pure functions (see machine.h).
 * Two budgets: failures (fail, retriable session, passed lease) and defers (defer_item), so
 * neither loop can run forever and a deferral never burns a failure attempt. */
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

#define VD_TR_EVENT(event, name) [VD_TR_##event] = name,
static const char *const tr_event_names[] = {
#include "verdict/transitions.def"
};

#define VD_TRANSITION(from, event, to, job_status, cause, budget)                                  \
    {VD_ITEM_##from,      VD_TR_##event,    VD_ITEM_##to,                                          \
     VD_JOB_##job_status, VD_CAUSE_##cause, VD_TR_BUDGET_##budget},
const vd_transition vd_transitions[] = {
#include "verdict/transitions.def"
};
const size_t vd_transitions_n = sizeof(vd_transitions) / sizeof(vd_transitions[0]);

const char *vd_tr_event_name(vd_tr_event e)
{
    return (int)e >= 0 && e < VD_TR__MAX ? tr_event_names[e] : NULL;
}

/* Whether a row with budget b applies to an item with the budgets in. */
static bool budget_applies(vd_tr_budget b, const vd_budgets *in)
{
    switch (b) {
    case VD_TR_BUDGET_FAILURE_LEFT:
        return in && in->failures + 1 < in->max_attempts;
    case VD_TR_BUDGET_FAILURE_SPENT:
        return in && in->failures + 1 >= in->max_attempts;
    case VD_TR_BUDGET_DEFER_LEFT:
        return in && in->defers + 1 < in->max_defers;
    case VD_TR_BUDGET_DEFER_SPENT:
        return in && in->defers + 1 >= in->max_defers;
    default:
        return true;
    }
}

const vd_transition *vd_transition_find(vd_item_state from, vd_tr_event event, const vd_budgets *in)
{
    for (size_t i = 0; i < vd_transitions_n; i++) {
        const vd_transition *t = &vd_transitions[i];
        if (t->from == from && t->event == event && budget_applies(t->budget, in))
            return t;
    }
    return NULL;
}

vd_tr_event vd_machine_event(const vd_event *ev)
{
    static const vd_tr_event of_kind[VD_EVENT__MAX] = {
        [VD_EVENT_COMPLETE] = VD_TR_COMPLETE,
        [VD_EVENT_REJECT_SOURCE] = VD_TR_REJECT_SOURCE,
        [VD_EVENT_DEFER_ITEM] = VD_TR_DEFER_ITEM,
        [VD_EVENT_FAIL] = VD_TR_FAIL,
        [VD_EVENT_SESSION_SUCCEEDED] = VD_TR_SESSION_SUCCEEDED,
        [VD_EVENT_SESSION_RETRIABLE] = VD_TR_SESSION_RETRIABLE,
        [VD_EVENT_SESSION_FAILED] = VD_TR_SESSION_FAILED,
        [VD_EVENT_RELEASE] = VD_TR_RELEASE,
        [VD_EVENT_REQUEST_REVIEW] = VD_TR_REQUEST_REVIEW,
    };
    if (ev->kind == VD_EVENT_DEFER_ITEM && ev->manual_review)
        return VD_TR_DEFER_REVIEW;
    if (ev->kind == VD_EVENT_DEFER_ITEM && ev->rate_limited) /* waits for its key */
        return VD_TR_DEFER_RATE_LIMITED;
    if (ev->kind == VD_EVENT_FAIL && !ev->retryable)
        return VD_TR_FAIL_FINAL;
    return (int)ev->kind >= 0 && ev->kind < VD_EVENT__MAX ? of_kind[ev->kind]
                                                          : VD_TR_SESSION_FAILED;
}

/* The counters after a move that spends budget k; clamped: an item requeued without a budget
 * reset never counts past its budget. */
static void spend(vd_tr_budget k, const vd_budgets *in, vd_outcome *o)
{
    if (k == VD_TR_BUDGET_FAILURE || k == VD_TR_BUDGET_FAILURE_LEFT ||
        k == VD_TR_BUDGET_FAILURE_SPENT)
        o->failures = in->failures + 1 < in->max_attempts ? in->failures + 1 : in->max_attempts;
    if (k == VD_TR_BUDGET_DEFER || k == VD_TR_BUDGET_DEFER_LEFT || k == VD_TR_BUDGET_DEFER_SPENT)
        o->defers = in->defers + 1 < in->max_defers ? in->defers + 1 : in->max_defers;
}

/* The delay before a deferred item is claimable: the caller's retry_after_seconds or the
 * backoff of the budget the row spends (a fail waits for the longer of the two); a rate
 * limited deferral spends nothing and waits for retry_after_seconds only. */
static double delay_of(const vd_transition *t, const vd_event *ev, const vd_backoff *b,
                       const vd_outcome *o, double u)
{
    double given = (double)ev->retry_after_seconds, d;
    if (t->to != VD_ITEM_DEFERRED)
        return 0;
    if (t->budget == VD_TR_BUDGET_DEFER_LEFT)
        return given >= 0 ? given : vd_backoff_seconds(b, o->defers, u);
    if (t->budget == VD_TR_BUDGET_FAILURE_LEFT) {
        d = vd_backoff_seconds(b, o->failures, u);
        return t->event == VD_TR_FAIL && given > d ? given : d;
    }
    return given >= 0 ? given : 0;
}

vd_outcome vd_machine_apply(const vd_budgets *in, const vd_event *ev, const vd_backoff *b,
                            double jitter_unit)
{
    vd_tr_event e = vd_machine_event(ev);
    const vd_transition *t = vd_transition_find(VD_ITEM_CLAIMED, e, in);
    vd_outcome o = {VD_ITEM_FAILED, VD_JOB_FAILED, in->failures, in->defers, 0, NULL};
    if (!t) /* not reached: every holder's event has its rows from claimed (test_machine.c) */
        return o;
    o.to_state = t->to;
    o.job_status = t->job_status;
    spend(t->budget, in, &o);
    o.delay_seconds = delay_of(t, ev, b, &o, jitter_unit);
    if (e == VD_TR_SESSION_RETRIABLE && t->budget == VD_TR_BUDGET_FAILURE_SPENT)
        o.reason_code = "retry_budget_exhausted";
    return o;
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
