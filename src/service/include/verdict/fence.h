/* fence.h - the claim check of a job write: whether the caller still holds the job (every
 * call a holder makes: finishing it, releasing it, a tool failure, a heartbeat), and the
 * required-tool rule for a call that finishes it. Pure functions over what the store read
 * (vd_store_job_lock); jobs.c and tool_failures.c both call them, neither calls the other. */
#ifndef VERDICT_FENCE_H
#define VERDICT_FENCE_H

#include <stdbool.h>

#include "verdict/error.h"
#include "verdict/store/jobs.h"

/* Whether a finished job's claim was taken from its holder (the lease passed and was swept,
 * or an admin released it): the holder's writes are then VD_ERR_CLAIM_LOST, not
 * JOB_FINALIZED. snap was read by vd_store_job_lock. */
bool vd_job_claim_taken(const vd_job_snapshot *snap);

/* The claim check of every call a job's holder makes (dispositions, releases, tool failures,
 * heartbeats; MCP tool calls go through the first two): VD_OK while the job is processing and
 * its token holds the item; VD_ERR_NOT_FOUND (no such job), VD_ERR_CLAIM_LOST (another token,
 * the claim was taken: vd_job_claim_taken, or the item moved on), VD_ERR_JOB_FINALIZED (the
 * holder finished it: the caller may replay). Pure. */
VD_MUST_USE vd_error vd_job_fence(const vd_job_snapshot *snap);

/* The required-tool rule for a call that finishes a job. */
typedef struct vd_tool_guard_input {
    bool rejects;          /* reject_source (or skip_item mapped to it) */
    bool completes;        /* complete */
    bool force;            /* the caller insists; recorded on the transition */
    bool required_failed;  /* a required tool failed in the job */
    bool required_blocked; /* ... and was answered retryable: false */
} vd_tool_guard_input;

/* Whether the call is refused with VD_ERR_TOOL_FAILURE_PENDING: reject_source after any
 * failure of a required tool, complete after one the model was told not to call again
 * (nothing it should have written was written), unless force. Pure. */
bool vd_tool_guard_refuses(const vd_tool_guard_input *in);

#endif
