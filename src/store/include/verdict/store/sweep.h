/* store/sweep.h - the sweeper's statements (src/store/sweep.c): passed leases, counter
 * compaction and retention. every function takes a borrowed connection (vd_db_acquire), runs
 * parameterised prepared statements and returns VD_OK or an error of the one table; strings
 * returned are malloc'd JSON text the caller frees. */
#ifndef VERDICT_STORE_SWEEP_H
#define VERDICT_STORE_SWEEP_H

#include <stdbool.h>
#include <stdint.h>
#include "verdict/error.h"
#include "verdict/store.h"

/* Close up to `limit` passed leases (job -> expired; item -> deferred or failed by its
 * failure budget), one transition each. *closed receives how many. */
VD_MUST_USE vd_error vd_store_sweep_leases(vd_conn *c, long limit, long *closed);

/* Fold counter deltas into the counters (sql/migrations/0002_stats.sql). */
VD_MUST_USE vd_error vd_store_compact_counts(vd_conn *c);
/* Delete up to `limit` transitions and jobs of done items older than `days`; *deleted gets
 * how many rows went. */
VD_MUST_USE vd_error vd_store_retention(vd_conn *c, int days, long limit, long *deleted);

#endif
