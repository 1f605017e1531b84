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
