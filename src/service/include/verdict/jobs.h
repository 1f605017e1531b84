/* jobs.h - the service-layer rules for every write that finishes a job (dispositions and
 * applied session outcomes): fencing by claim token, replay of an identical call, the
 * required-tool guard, the state machine, redaction, and the answer's shape. */
#ifndef VERDICT_JOBS_H
#define VERDICT_JOBS_H

#include <stdbool.h>
#include <stdint.h>

#include "verdict/config.h"
#include "verdict/error.h"
#include "verdict/machine.h"
#include "verdict/store.h"
#include "verdict/store/async.h"
#include "verdict/store/jobs.h"

/* claim_next on a disposition (README "Claim the next items with a disposition"). */
typedef struct vd_claim_next {
    int64_t count;            /* 0..100: how many items to claim; 0 claims nothing */
    int64_t lease_seconds;    /* the new claims' lease */
    bool keep;                /* a single call: the claims close its kept answer (replays) */
    char *limit_keys;         /* the worker's limit keys (JSON array, malloc'd) or NULL */
    int64_t estimated_tokens; /* tokens each claimed item reserves; < 0: none */
} vd_claim_next;

typedef struct vd_job_write {
    int64_t job_id;
    const char *token;
    const char *request_json; /* the call, as JSON; an identical repeat replays the answer */
    const char *actor;
    vd_event event;
    vd_disposition disposition; /* stored on the job; NONE for a release */
    vd_cause cause;             /* the transition's cause */
    const char *reason_code;    /* may be NULL */
    const char *reason;         /* raw text, may be NULL; stored redacted */
    bool is_reject;             /* subject to the required-tool guard (SPEC §6) */
    bool force;                 /* override that guard and the rejection lint; recorded on
                                   the transition (forced, lint_overridden) */
    const char *evidence;       /* a rejection's quote of the item's payload, or NULL; stored
                                   redacted on the transition (README "Rejection lint") */
    const char *engine_data;    /* JSON object or NULL */
    const char *adjudication;   /* JSON object or NULL */
    /* skip_item (SPEC §5.1): the answer says the call was mapped to `disposition`, with this
     * hint; NULL otherwise. The answer opens with the disposition (a disposition call), the
     * adjudication (VD_DISPOSITION_SESSION_OUTCOME) or the job (a release). */
    const char *deprecation_hint;
    /* Optional: called inside the transaction once the call is known to hold the job, before
     * the state machine runs; it may fill event, reason_code, reason and adjudication on its
     * copy of the write. It runs again when the transaction is retried. */
    vd_error (*decide)(vd_conn *c, const vd_job_snapshot *snap, struct vd_job_write *w, void *arg);
    void *decide_arg;
    bool record_only;     /* store the adjudication on the job; leave item and job status as is */
    const char *trace_id; /* the request's trace id when it is not the connection's (a
                             coalesced disposition), or NULL */
    const char *span_id;  /* with trace_id: the request's span (its claim_next's claims), or NULL */
    /* A coalesced single call's own claim_next (keep set), or NULL; used only when the call
     * as a whole has none (vd_job_apply_next's next NULL). */
    const vd_claim_next *next;
} vd_job_write;

typedef struct vd_job_answer {
    vd_error rc; /* this write's own result (vd_job_apply_many) */
    char *kept;  /* on VD_OK: the answer kept for replays, a closed JSON object
                    (malloc'd); vd_job_reply renders it */
    bool replayed;
    const char *standing;     /* on VD_ERR_JOB_FINALIZED: the disposition that stands, or
                                 "release" (static) */
    vd_item_state item_state; /* on VD_ERR_INVALID_TRANSITION: the item's state */
    const char *why;          /* on a refusal of the rejection lint (REJECTION_SUSPECT,
                                 EVIDENCE_NOT_FOUND, MISSING_FIELD): why, and the field it
                                 names (static strings) */
    const char *field;
    const char *lint_signal; /* on VD_OK: a signal the rejection lint noted but did not refuse
                                on (VD_LINT_SIGNAL_WORDS, static); the answer's "lint" */
} vd_job_answer;

/* The reply to a job write, the one place that adds "replayed":
 * {[lead,]<the members of kept>,"replayed":<replayed>} (malloc'd; NULL when out of memory).
 * kept is vd_job_answer.kept; lead is JSON members to put first (a batch's job_id and
 * status) or NULL. */
VD_MUST_USE char *vd_job_reply(const char *lead, const char *kept, bool replayed);

/* A heartbeat: extend the lease of job_id while `token` holds it (one statement), fenced by
 * vd_job_fence, and merge checkpoint (a JSON object as text, already redacted and at most
 * VD_CHECKPOINT_MAX bytes; NULL: none) into the job's with it. *out {"lease_expires_at": ...}
 * (malloc'd) on VD_OK. VD_ERR_PAYLOAD_TOO_LARGE when the merged checkpoint would pass
 * VD_CHECKPOINT_MAX_MERGED (nothing written). lease_seconds 0: the claim's own lease length
 * (default_lease for a job claimed before the length was recorded). */
VD_MUST_USE vd_error vd_job_heartbeat(vd_conn *conn, int64_t job_id, const char *token,
                                      int64_t lease_seconds, int64_t default_lease,
                                      const char *checkpoint, char **out);

/* The plugin reports that `tool` succeeded in job_id after it had failed (fenced by the claim
 * token like every job write): its failures in the job no longer hold `complete` back
 * (*cleared: how many were cleared; *pending: whether another failure still does). */
VD_MUST_USE vd_error vd_job_tool_success(vd_conn *conn, int64_t job_id, const char *token,
                                         const char *tool, int64_t *cleared, bool *pending);

/* An admin's release of the live claim of a claimed item, in one transaction: the job is
 * locked before its item (as every job write does), then released (vd_store_item_release).
 * *out: {"job": {...}, "item": {...}} (malloc'd). VD_ERR_NOT_FOUND, or
 * VD_ERR_INVALID_TRANSITION when the item is not claimed (its state is written to *state). */
VD_MUST_USE vd_error vd_item_release(vd_conn *conn, int64_t item_id, const char *reason,
                                     const char *actor, char **out, vd_item_state *state);

/* Apply w in one transaction on conn (borrowed). Errors: VD_ERR_NOT_FOUND, CLAIM_LOST,
 * JOB_FINALIZED, INVALID_TRANSITION, TOOL_FAILURE_PENDING, then for a rejection the lint's
 * (vd_lint_judge: MISSING_FIELD and EVIDENCE_NOT_FOUND in strict mode, REJECTION_SUSPECT),
 * DATABASE_UNAVAILABLE. A disposition's kept answer carries its "tool_result"
 * (vd_tool_result_disposition). The caller frees out->kept. */
VD_MUST_USE vd_error vd_job_apply(vd_conn *conn, const vd_config *cfg, const vd_job_write *w,
                                  vd_job_answer *out);

/* Apply n writes to n distinct jobs in one transaction: one statement locks every job and
 * item (in job id order), one statement finishes all that may finish, sent with the COMMIT.
 * Each write is judged on its own: out[i].rc is its result (the errors of vd_job_apply but
 * DATABASE_UNAVAILABLE), a refused write does not stop the others. The return value is the
 * transaction's: on any error no write took effect and no out[i] holds an answer. The caller
 * frees every out[i].kept. */
VD_MUST_USE vd_error vd_job_apply_many(vd_conn *conn, const vd_config *cfg, const vd_job_write *w,
                                       size_t n, vd_job_answer *out);

/* vd_job_apply_many, and when at least one write finishes (not a refusal, not a replay),
 * claim up to next->count items of the first finished job's flow step for its worker in the
 * same transaction, exactly as POST /v1/claims does (a paused flow step claims nothing).
 * next NULL: each finished write with its own w->next claims for its own job's worker and
 * flow step, in the same transaction, its claims closing its kept answer (coalesced single
 * calls; those of one flow step asking one item without keys share one claim_many).
 * *claims (may be NULL; malloc'd) receives the claim's answer {"claims":[...]}, or NULL when
 * nothing was claimed because nothing finished. With next->keep the claims are also kept in
 * the finished writes' answers. */
VD_MUST_USE vd_error vd_job_apply_next(vd_conn *conn, const vd_config *cfg, const vd_job_write *w,
                                       size_t n, const vd_claim_next *next, vd_job_answer *out,
                                       char **claims);

/* Whether vd_job_apply_async takes w[0..n), decided from the writes alone before anything is
 * sent (decision 0084): none of them needs a statement between the lock and the finish (a
 * rejection's incident check and lint, a decide hook, record_only, a release's churn count,
 * a claim_next of its own) or may leave its item claimable at once (a defer_item with
 * retry_after_seconds 0, or any defer or fail without a backoff), whose announcement is a
 * statement too. The common batch of completes and plain failures fits. */
bool vd_job_async_fits(const vd_config *cfg, const vd_job_write *w, size_t n);

/* The answer of vd_job_apply_async, on the executor thread. again: nothing of it committed
 * (a statement failed and was rolled back, a conflict, a connection lost before the finish
 * could reach the server, or it gave up): run it on the sync path (vd_job_apply_many), which
 * has every retry rule. Otherwise rc as vd_job_apply_many returns it, out[] filled the same
 * way (VD_ERR_DATABASE_UNAVAILABLE when the connection was lost once the finish was sent: it
 * may have committed, never sent again). */
typedef void (*vd_job_async_fn)(void *arg, bool again, vd_error rc);

/* vd_job_apply_many (no claim_next) on the non-blocking executor: the lock, the decision in C
 * on the executor thread, the finish and COMMIT on the same connection. w, out (n each) and
 * cfg stay the caller's until done is called, exactly once, unless this answers false (not
 * taken: vd_job_async_fits said no, or the executor refused; the caller runs it itself).
 * trace_id: the request's (jobs_finish records it), may be NULL. */
VD_MUST_USE bool vd_job_apply_async(vd_async *x, const vd_config *cfg, const vd_job_write *w,
                                    size_t n, const char *trace_id, double deadline,
                                    vd_job_answer *out, vd_job_async_fn done, void *arg);

#endif
