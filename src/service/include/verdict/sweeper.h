/* sweeper.h - the background thread that closes passed leases (SPEC §1.3, §5.3) and purges
 * idempotency records older than 24 h. Safe with many replicas: the store skips rows another
 * sweeper holds. */
#ifndef VERDICT_SWEEPER_H
#define VERDICT_SWEEPER_H

#include "verdict/config.h"
#include "verdict/store.h"

typedef struct vd_sweeper vd_sweeper;

/* Start the thread; borrows cfg and db until vd_sweeper_stop. NULL on failure (logged). */
vd_sweeper *vd_sweeper_start(const vd_config *cfg, vd_db *db);
/* Wake the thread, wait for it to finish its pass, free it. NULL is fine. */
void vd_sweeper_stop(vd_sweeper *s);
/* One pass: returns VD_OK and counts of leases closed and records purged. Every pass, by the
 * thread or a direct call, is counted in vd_sweeper_totals. */
VD_MUST_USE vd_error vd_sweeper_run_once(const vd_config *cfg, vd_db *db, long *expired,
                                         long *purged);

/* What this process's sweeper passes have done since start (for /metrics). */
typedef struct vd_sweeper_counts {
    unsigned long long runs, failed_runs; /* passes, and those that ended in an error */
    unsigned long long leases_closed, idempotency_purged, retention_deleted;
    double last_run_unix; /* end of the last pass; 0 before the first */
} vd_sweeper_counts;
void vd_sweeper_totals(vd_sweeper_counts *out);

#endif
