/* limits.h - flow control's rules over a job's finish: the decide hooks (jobs.h) of a
 * disposition that reports usage or defers with reason_code rate_limited. The limits' rows and
 * the keyed claim are the store's (verdict/store/limits.h). */
#ifndef VERDICT_LIMITS_H
#define VERDICT_LIMITS_H

#include "verdict/error.h"
#include "verdict/jobs.h"
#include "verdict/store.h"
#include "verdict/store/limits.h"

/* The decide hook (jobs.h) of a defer_item with reason_code rate_limited: the item becomes
 * claimable when every key of the job is open again (at least retry_after_seconds when the
 * call gave it); no defer or failure budget is spent (machine.h, rate_limited). */
VD_MUST_USE vd_error vd_limits_decide_rate_limited(vd_conn *c, const vd_job_snapshot *snap,
                                                   vd_job_write *w, void *arg);

/* The decide hook (jobs.h) of a disposition that reports usage (arg: its vd_usage) or defers
 * with reason_code rate_limited: stores the usage; an item over its cost budget that would
 * be offered again parks in manual_review (reason_code cost_budget); a rate_limited deferral
 * waits for the job's keys (vd_limits_decide_rate_limited). */
VD_MUST_USE vd_error vd_limits_decide(vd_conn *c, const vd_job_snapshot *snap, vd_job_write *w,
                                      void *arg);

#endif
