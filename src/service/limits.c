/* limits.c - the service's side of flow control (limits.h): a rate_limited deferral waits
 * for the job's keys to reopen. Runs inside the disposition's transaction (jobs.c, decide);
 * it reads, never writes. */
#include "verdict/limits.h"

#include <math.h>

vd_error vd_limits_decide_rate_limited(vd_conn *c, const vd_job_snapshot *snap, vd_job_write *w,
                                       void *arg)
{
    double reopen = 0;
    vd_error rc = vd_store_job_reopen_seconds(c, w->job_id, &reopen);
    (void)snap;
    (void)arg;
    if (rc)
        return rc;
    if ((double)w->event.retry_after_seconds < ceil(reopen))
        w->event.retry_after_seconds = (int64_t)ceil(reopen);
    return VD_OK;
}

vd_error vd_limits_decide(vd_conn *c, const vd_job_snapshot *snap, vd_job_write *w, void *arg)
{
    const vd_usage *u = arg;
    bool over = false;
    vd_error rc = u && u->given ? vd_store_job_usage(c, w->job_id, u, &over) : VD_OK;
    bool again = w->event.kind == VD_EVENT_DEFER_ITEM || w->event.kind == VD_EVENT_FAIL;
    if (rc)
        return rc;
    if (over && again) { /* spent its budget: a person decides, it is not offered again */
        w->event = (vd_event){VD_EVENT_DEFER_ITEM, true, true, -1, false};
        w->disposition = VD_DISPOSITION_DEFER_ITEM;
        w->cause = vd_disposition_cause(VD_DISPOSITION_DEFER_ITEM);
        w->reason_code = "cost_budget";
        return VD_OK;
    }
    return w->event.rate_limited ? vd_limits_decide_rate_limited(c, snap, w, NULL) : VD_OK;
}
