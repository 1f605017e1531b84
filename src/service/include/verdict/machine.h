/* machine.h - the item state machine of SPEC §1.3 as pure functions: given an item's budgets
 * and an event, the state it moves to, the job's final status, the new counters and the
 * delay before it is claimable again. Every move comes from one table, transitions.def (its
 * rows: vd_transitions). Also the backoff and the legacy skip_item mapping.
 * No I/O, no globals but the constant table; thread-safe. Randomness (jitter) is passed in. */
#ifndef VERDICT_MACHINE_H
#define VERDICT_MACHINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "verdict/domain.h"

/* request_review: the largest question a model may ask, and the largest answer an editor
 * may give (bytes of UTF-8). */
#define VD_REVIEW_QUESTION_MAX 1000
#define VD_REVIEW_ANSWER_MAX 4000

typedef enum vd_event_kind {
    VD_EVENT_COMPLETE = 0,
    VD_EVENT_REJECT_SOURCE,
    VD_EVENT_DEFER_ITEM,
    VD_EVENT_FAIL,
    VD_EVENT_SESSION_SUCCEEDED,
    VD_EVENT_SESSION_RETRIABLE,
    VD_EVENT_SESSION_FAILED,
    VD_EVENT_RELEASE,        /* the holder gives the claim back: available now, no budget spent */
    VD_EVENT_REQUEST_REVIEW, /* the model asks an editor: manual_review, no budget spent */
    VD_EVENT__MAX
} vd_event_kind;

typedef struct vd_budgets {
    int failures, defers;         /* before the event */
    int max_attempts, max_defers; /* the item's budgets */
} vd_budgets;

/* The table (transitions.def): its events, what a row spends, its rows. */
#define VD_ITEM_NONE ((vd_item_state)-1) /* the from of a new item (register) */
#define VD_JOB_NONE ((vd_job_status)-1)  /* the job status of a move without a job */

typedef enum vd_tr_event {
#define VD_TR_EVENT(event, name) VD_TR_##event,
#include "verdict/transitions.def"
    VD_TR__MAX
} vd_tr_event;

typedef enum vd_tr_budget {
    VD_TR_BUDGET_NONE = 0,
    VD_TR_BUDGET_FAILURE,
    VD_TR_BUDGET_FAILURE_LEFT,
    VD_TR_BUDGET_FAILURE_SPENT,
    VD_TR_BUDGET_DEFER,
    VD_TR_BUDGET_DEFER_LEFT,
    VD_TR_BUDGET_DEFER_SPENT,
    VD_TR_BUDGET_RESET,
} vd_tr_budget;

typedef struct vd_transition {
    vd_item_state from; /* VD_ITEM_NONE: no item before */
    vd_tr_event event;
    vd_item_state to;
    vd_job_status job_status; /* VD_JOB_NONE: no job */
    vd_cause cause;
    vd_tr_budget budget;
} vd_transition;

extern const vd_transition vd_transitions[];
extern const size_t vd_transitions_n;

/* The event's name in the table and in the SQL function (static); NULL outside the table. */
const char *vd_tr_event_name(vd_tr_event e);

/* The row of (from, event) for an item with the budgets in (read only by a LEFT or SPENT
 * row; NULL: such rows do not apply). NULL: the table has no such move, it is refused. */
const vd_transition *vd_transition_find(vd_item_state from, vd_tr_event event,
                                        const vd_budgets *in);

typedef struct vd_backoff {
    int base_seconds, cap_seconds;
} vd_backoff;

typedef struct vd_event {
    vd_event_kind kind;
    bool manual_review;          /* defer_item */
    bool retryable;              /* fail (default true) */
    int64_t retry_after_seconds; /* defer_item / fail; -1 = not given */
    bool rate_limited;           /* defer_item with reason_code rate_limited: a key of the job
                                    is throttled; no budget is spent, no backoff added */
} vd_event;

typedef struct vd_outcome {
    vd_item_state to_state;
    vd_job_status job_status;
    int failures, defers;    /* after the event */
    double delay_seconds;    /* available_at = now + delay (deferred only) */
    const char *reason_code; /* an override of the caller's reason code, or NULL */
} vd_outcome;

/* min(cap, base * 2^(n-1)) with +-20% jitter; jitter_unit in [0,1) (0.5 = none). n >= 1. */
double vd_backoff_seconds(const vd_backoff *b, int n, double jitter_unit);

/* The table's event for an event of a claimed item's holder (its flags choose among
 * defer_item's and fail's events). */
vd_tr_event vd_machine_event(const vd_event *ev);

/* Apply an event to a claimed item (SPEC §1.3): the row of vd_machine_event's event from
 * claimed, its budget spent, and the delay before a deferred item is claimable. Pure. */
vd_outcome vd_machine_apply(const vd_budgets *in, const vd_event *ev, const vd_backoff *b,
                            double jitter_unit);

/* skip_item (SPEC §5.1): *maps_to_reject and the reason code it maps to (static string). */
void vd_skip_item_map(const char *reason, bool *maps_to_reject, const char **reason_code);

#endif
