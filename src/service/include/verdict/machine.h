/* machine.h - the item state machine of SPEC §1.3 as pure functions: given an item's budgets
 * and an event, the state it moves to, the job's final status, the new counters and the
 * delay before it is claimable again. Also the backoff and the legacy skip_item mapping.
 * No I/O, no globals; thread-safe. Randomness (jitter) is passed in. */
#ifndef VERDICT_MACHINE_H
#define VERDICT_MACHINE_H

#include <stdbool.h>
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

/* Apply an event to a claimed item (SPEC §1.3). Pure. */
vd_outcome vd_machine_apply(const vd_budgets *in, const vd_event *ev, const vd_backoff *b,
                            double jitter_unit);

/* skip_item (SPEC §5.1): *maps_to_reject and the reason code it maps to (static string). */
void vd_skip_item_map(const char *reason, bool *maps_to_reject, const char **reason_code);

#endif
