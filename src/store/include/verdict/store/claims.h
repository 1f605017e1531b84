/* store/claims.h - the claim and the heartbeat that extends its lease (src/store/items.c). Every
 * function takes a borrowed connection (vd_db_acquire), runs parameterised prepared statements and
 * returns VD_OK or an error of the one table; strings returned are malloc'd JSON text the caller
 * frees. */
#ifndef VERDICT_STORE_CLAIMS_H
#define VERDICT_STORE_CLAIMS_H

#include <stdbool.h>
#include <stdint.h>
#include "verdict/error.h"
#include "verdict/store.h"
#include "verdict/store/idempotency.h"

/* Claim up to `limit` items of a flow step in one statement (SKIP LOCKED), each job
 * recording worker_version (may be NULL). Answers {"claims": [...]}, each claim with the
 * previous_checkpoint of its item (or null).
 * hold_empty: the claim of a long-poll (POST /v1/claims with wait_seconds) that may still
 * wait: when it claims nothing it answers VD_OK with out->body NULL and keeps nothing (under an
 * Idempotency-Key the record is rolled back with the claim), so it can run again later; a
 * replay of a kept answer answers it as without hold_empty. hold_empty is for a connection
 * outside a transaction (claim_next, inside the disposition's, passes false). */
VD_MUST_USE vd_error vd_store_claim(vd_conn *c, const char *flow_step_id, const char *worker_id,
                                    const char *worker_version, int64_t limit,
                                    int64_t lease_seconds, const char *actor, bool hold_empty,
                                    const vd_idem *idem, vd_reply *out);
typedef struct vd_job_snapshot vd_job_snapshot;
/* The largest checkpoint a heartbeat may carry (serialised, compact), and the largest the
 * job keeps after the merge (as PostgreSQL renders jsonb: with spaces). */
#define VD_CHECKPOINT_MAX 65536
#define VD_CHECKPOINT_MAX_MERGED 131072
#define VD_CHECKPOINT_MAX_MERGED_SQL "131072"
/* Extend the lease of a job that still holds its item, in one statement, merging checkpoint
 * (a JSON object as text, already redacted; NULL: none) into the job's with jsonb ||.
 * *too_big: the merge would pass VD_CHECKPOINT_MAX_MERGED, and nothing was written. *seen receives
 * the job as the statement saw it (found, token_ok, status; holds when the lease was extended) for
 * the service's claim check (vd_job_fence); *out {"lease_expires_at": ...} (malloc'd) when it
 * was extended, else NULL. */
VD_MUST_USE vd_error vd_store_heartbeat(vd_conn *c, int64_t job_id, const char *token,
                                        int64_t lease_seconds, int64_t default_lease,
                                        const char *checkpoint, vd_job_snapshot *seen,
                                        bool *too_big, char **out);

#endif
