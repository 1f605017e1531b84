/* fence.c - the claim check of a job write and the required-tool rule (see fence.h). */
#include "verdict/fence.h"

bool vd_job_claim_taken(const vd_job_snapshot *snap)
{
    /* an admin's release keeps no answer (no holder made the call); the holder's does */
    return snap->status == VD_JOB_EXPIRED ||
           (snap->status == VD_JOB_RELEASED && !snap->final_response);
}

vd_error vd_job_fence(const vd_job_snapshot *snap)
{
    if (!snap->found)
        return VD_ERR_NOT_FOUND;
    if (!snap->token_ok)
        return VD_ERR_CLAIM_LOST;
    if (snap->status != VD_JOB_PROCESSING)
        return vd_job_claim_taken(snap) ? VD_ERR_CLAIM_LOST : VD_ERR_JOB_FINALIZED;
    return snap->holds ? VD_OK : VD_ERR_CLAIM_LOST;
}

bool vd_tool_guard_refuses(const vd_tool_guard_input *in)
{
    if (in->force)
        return false;
    if (in->rejects && in->required_failed)
        return true; /* a tooling failure is no reason to reject a source (SPEC §6) */
    return in->completes && in->required_blocked;
}
