/* store_ops.h - the data operations of the store, one function per use case. Every function
 * takes a borrowed connection (vd_db_acquire), runs parameterised prepared statements, and
 * returns VD_OK or an error of the one table. Strings returned are malloc'd JSON text the
 * caller frees. */
#ifndef VERDICT_STORE_OPS_H
#define VERDICT_STORE_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "verdict/domain.h"
#include "verdict/store.h"

/* Close up to `limit` passed leases (job -> expired; item -> deferred or failed by its
 * failure budget), one transition each. *closed receives how many. */
VD_MUST_USE vd_error vd_store_sweep_leases(vd_conn *c, long limit, long *closed);
/* Delete idempotency records older than 24 h. */
VD_MUST_USE vd_error vd_store_purge_idempotency(vd_conn *c, long *purged);

/* An Idempotency-Key scope (SPEC §2). key NULL: the call is not idempotent. body is the raw
 * request body; a repeat with the same key and another body is VD_ERR_IDEMPOTENCY_KEY_REUSED. */
typedef struct vd_idem {
    const char *route;
    const char *key_name;
    const char *key;
    const char *body;
} vd_idem;

/* A stored or fresh answer: JSON text (malloc'd, caller frees) and whether it was replayed. */
typedef struct vd_reply {
    char *body;
    bool replayed;
} vd_reply;

/* Register a batch (a JSON array of normalised items with "ord" and every field filled),
 * audited as `actor`. Answers {"items": [...]} in input order. */
VD_MUST_USE vd_error vd_store_items_register(vd_conn *c, const char *batch_json, const char *actor,
                                             const vd_idem *idem, vd_reply *out);
/* {"items": [{id, item_identifier, state}]} for the known identifiers (a JSON array). */
VD_MUST_USE vd_error vd_store_items_lookup(vd_conn *c, const char *flow_step_id,
                                           const char *source_type, const char *identifiers_json,
                                           char **out);
/* {"item": {...}, "transitions": [... last 100, newest first]} or VD_ERR_NOT_FOUND. */
VD_MUST_USE vd_error vd_store_item_get(vd_conn *c, int64_t id, char **out);
/* What a list shows: every string filter may be NULL (any); `state` is the job status for
 * jobs; item_id 0 is any item; after is the keyset cursor (ids above it, or below it when
 * desc; 0 starts at the oldest or the newest). */
typedef struct vd_list_filter {
    const char *flow_step_id, *state, *reason_code, *worker_id;
    const char *since;    /* jobs: RFC 3339, claimed at or after */
    int64_t item_id;      /* jobs only */
    const char *trace_id; /* jobs only: the claim's or the disposition's W3C trace id */
    const char *identifier, *identifier_prefix; /* items only: exact, starts with */
    int64_t after, limit;
    bool desc;
} vd_list_filter;

/* {"items": [...], "next_after": id|null}. For items, worker_id is the worker of the item's
 * latest job and reason_code its last_reason_code. */
VD_MUST_USE vd_error vd_store_items_list(vd_conn *c, const vd_list_filter *f, char **out);
/* The change feed: {"transitions": [... oldest first], "next_after": id, "last_id": id}. */
VD_MUST_USE vd_error vd_store_transitions_feed(vd_conn *c, int64_t after, const char *flow_step_id,
                                               int64_t limit, char **out);

/* Which parked or done items a bulk call takes: up to `limit` of a flow step in `state`
 * (resolve; requeue: in one of `states_json`, a JSON array of state names, never claimed),
 * lowest ids first. Every other filter may be NULL (any): reason_code the last_reason_code;
 * tool_failed a tool that failed in one of the item's jobs; below_version a semantic
 * version that such a failure's worker_version is lower than (both on the same failure);
 * since / until (RFC 3339) the item's last change, at or after / before. */
typedef struct vd_bulk_select {
    const char *flow_step_id, *state, *reason_code;
    const char *states_json;
    const char *tool_failed, *below_version, *since, *until;
    int64_t limit;
} vd_bulk_select;
/* The ids a bulk call would take now, as a JSON array (dry run; locks nothing). */
VD_MUST_USE vd_error vd_store_items_select(vd_conn *c, const vd_bulk_select *sel, char **ids_json);
/* Resolve one parked item (manual_review or failed) to `outcome` (processed or rejected),
 * audited with cause 'resolve': {"item": {...}, "transition": {...}}; VD_ERR_NOT_FOUND, or
 * VD_ERR_INVALID_TRANSITION when it is not parked. */
/* An editor's answer to an item in manual_review (one statement): to available (retry),
 * processed or rejected, with a transition of cause review whose reason is `answer`
 * (redacted by the caller; may be NULL). *out {"item", "transition"} (malloc'd).
 * VD_ERR_NOT_FOUND; VD_ERR_INVALID_TRANSITION when the item is not in manual_review. */
VD_MUST_USE vd_error vd_store_review_one(vd_conn *c, int64_t id, vd_item_state to,
                                         const char *answer, const char *actor, char **out);
/* The review queue: {"flow_steps": [{flow_step_id, waiting, questions,
 * oldest_question_age_seconds}], "reviews": [up to limit, oldest question first]}. */
VD_MUST_USE vd_error vd_store_reviews_list(vd_conn *c, const char *flow_step_id, int64_t limit,
                                           char **out);
VD_MUST_USE vd_error vd_store_resolve_one(vd_conn *c, int64_t id, const char *outcome,
                                          const char *reason_code, const char *reason,
                                          const char *actor, char **out);
/* Resolve the items sel takes (sel->state must be manual_review or failed), skipping rows
 * locked by others; *ids_json receives the ids resolved as a JSON array. */
VD_MUST_USE vd_error vd_store_resolve_bulk(vd_conn *c, const vd_bulk_select *sel,
                                           const char *outcome, const char *reason_code,
                                           const char *reason, const char *actor, char **ids_json);

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

/* Pause or resume a flow step (created if unknown): {"flow_step": {...}}. */
VD_MUST_USE vd_error vd_store_flow_step_set_paused(vd_conn *c, const char *flow_step_id,
                                                   bool paused, char **out);
/* {"flow_steps": [{flow_step_id, paused, created_at, updated_at}]}. */
VD_MUST_USE vd_error vd_store_flow_steps_list(vd_conn *c, char **out);

/* {"job": {...}} or VD_ERR_NOT_FOUND. */
VD_MUST_USE vd_error vd_store_job_get(vd_conn *c, int64_t id, char **out);
/* {"job": {...}, "item": {...}} when `token` (a UUID in text form) is the job's claim token,
 * whatever the job's status; VD_ERR_NOT_FOUND when there is no such job or the token is
 * another's. */
VD_MUST_USE vd_error vd_store_job_claimed(vd_conn *c, int64_t id, const char *token, char **out);
/* {"jobs": [...], "next_after": id|null}; see vd_list_filter. */
VD_MUST_USE vd_error vd_store_jobs_list(vd_conn *c, const vd_list_filter *f, char **out);
/* Requeue one item (any state but claimed): {"item": {...}}; VD_ERR_NOT_FOUND, or
 * VD_ERR_INVALID_TRANSITION when it is claimed. */
VD_MUST_USE vd_error vd_store_requeue_one(vd_conn *c, int64_t id, bool reset_budgets,
                                          const char *reason, const char *actor, char **out);
/* A reported success of `tool` in job_id (inside vd_store_tx, after the job was locked and
 * fenced): clears its earlier failures in the job (*cleared how many), and says whether a
 * tool failure still holds the job's `complete` back (*pending). */
VD_MUST_USE vd_error vd_store_tool_success(vd_conn *c, int64_t job_id, const char *tool,
                                           int64_t *cleared, bool *pending);
/* What an MCP session bound to job_id (with token) may be offered (all false when the token
 * is not the job's). */
typedef struct vd_mcp_offer {
    bool live;                  /* the job is processing and holds its item, lease not passed */
    bool deterministic_failure; /* a tool failed deterministically in the job */
    bool complete_pending;      /* a write or required tool's failure holds `complete` back */
    int64_t item_id;
} vd_mcp_offer;
VD_MUST_USE vd_error vd_store_mcp_offer(vd_conn *c, int64_t job_id, const char *token,
                                        vd_mcp_offer *out);
/* How many times the holder released item_id since its last verdict (*n). */
VD_MUST_USE vd_error vd_store_item_releases(vd_conn *c, int64_t item_id, int64_t *n);
/* An item's state and, when it is claimed, its current job (*job; 0 otherwise), read without
 * locks. VD_ERR_NOT_FOUND when there is no such item. */
VD_MUST_USE vd_error vd_store_item_current_job(vd_conn *c, int64_t item_id, vd_item_state *state,
                                               int64_t *job);
/* The last statement of an admin's release (inside vd_store_tx, after vd_store_job_lock of
 * job_id said it holds item_id; sent with the COMMIT): job -> released, item -> available
 * now, one transition (cause admin_release, actor), no budget spent. *out: {"job": {...},
 * "item": {...}} (malloc'd). */
VD_MUST_USE vd_error vd_store_item_release(vd_conn *c, int64_t item_id, int64_t job_id,
                                           const char *reason, const char *actor, char **out);
/* Requeue the items sel takes (sel->states_json), skipping rows locked by others, each with
 * its transition (cause requeue, actor) in the same statement; *ids_json receives the ids
 * requeued as a JSON array (malloc'd). */
VD_MUST_USE vd_error vd_store_requeue_bulk(vd_conn *c, const vd_bulk_select *sel,
                                           bool reset_budgets, const char *reason,
                                           const char *actor, char **ids_json);

/* SPEC §8 /v1/stats (flow_step_id may be NULL for all). */
VD_MUST_USE vd_error vd_store_stats(vd_conn *c, const char *flow_step_id, char **out);
/* The database-derived /metrics families, as samples (rendered by the http layer). */
typedef enum vd_db_family {
    VD_DB_ITEMS,            /* a: flow_step_id, b: state */
    VD_DB_TRANSITIONS,      /* a: cause, b: to_state */
    VD_DB_STUCK_CLAIMS,     /* a: flow_step_id */
    VD_DB_OLDEST_CLAIMABLE, /* a: flow_step_id; seconds */
    VD_DB_INCIDENTS_OPEN,   /* a: flow_step_id, b: tool; open tooling incidents */
    VD_DB_LIMIT_IN_FLIGHT,  /* a: limit key; jobs holding a concurrency slot */
    VD_DB_LIMIT_THROTTLED,  /* a: limit key; 1 while a backoff holds it closed */
    VD_DB_LIMIT_TOKENS,     /* a: limit key; usage reported on its token shards */
    VD_DB_REVIEW_QUESTIONS, /* a: flow_step_id; items waiting on a model's question */
    VD_DB_REVIEW_OLDEST,    /* a: flow_step_id; seconds the oldest question waits (0: none) */
    VD_DB__MAX
} vd_db_family;
typedef struct vd_db_sample {
    vd_db_family family;
    const char *a, *b; /* label values (b may be NULL), owned by the vd_db_metrics */
    long long value;
} vd_db_sample;
typedef struct vd_db_metrics {
    vd_db_sample *s; /* in family order, then by labels */
    size_t n;
    void *owner; /* the result the labels point into */
} vd_db_metrics;
VD_MUST_USE vd_error vd_store_metrics(vd_conn *c, vd_db_metrics *out);
void vd_db_metrics_cleanup(vd_db_metrics *m);
/* Fold counter deltas into the counters (sql/0002_stats.sql). */
VD_MUST_USE vd_error vd_store_compact_counts(vd_conn *c);
/* Delete up to `limit` transitions and jobs of done items older than `days`; *deleted gets
 * how many rows went. */
VD_MUST_USE vd_error vd_store_retention(vd_conn *c, int days, long limit, long *deleted);

/* Run fn(c, arg) in one transaction, retried on serialization failures and deadlocks (fn
 * must be safe to run again from scratch). */
typedef vd_error (*vd_store_tx_fn)(vd_conn *c, void *arg);
VD_MUST_USE vd_error vd_store_tx(vd_conn *c, vd_store_tx_fn fn, void *arg);

/* A job and its item read under row locks (inside vd_store_tx). */
struct vd_job_snapshot {
    bool found;
    bool token_ok; /* the claim_token given is the job's */
    vd_job_status status;
    vd_disposition disposition; /* VD_DISPOSITION_NONE when none */
    bool required_tool_failed;  /* a `required: true` tool failed in this job */
    bool required_tool_blocked; /* ... and was answered retryable: false (do not call again) */
    bool same_request;          /* the stored finishing request equals this one */
    char *final_response;       /* the stored answer (malloc'd) or NULL */
    int64_t item_id;
    vd_item_state item_state;
    bool holds; /* the job's token still holds the item (claimed by it) */
    int failures, defers, max_attempts, max_defers;
    /* the job's (malloc'd; worker_version NULL when none): where claim_next claims */
    char *flow_step_id, *worker_id, *worker_version;
};

/* Lock job `job_id` and its item; request_json (may be NULL) is compared with the stored
 * finishing request. Free with vd_job_snapshot_cleanup. */
VD_MUST_USE vd_error vd_store_job_lock(vd_conn *c, int64_t job_id, const char *token,
                                       const char *request_json, vd_job_snapshot *out);
/* The same for n distinct jobs in one statement, locked in job id order (so that two callers
 * never wait on each other in a cycle); out[i] answers keys[i]. token must be a UUID in text
 * form; request_json valid JSON or NULL. */
typedef struct vd_job_key {
    int64_t job_id;
    const char *token;
    const char *request_json;
} vd_job_key;
VD_MUST_USE vd_error vd_store_jobs_lock(vd_conn *c, const vd_job_key *keys, size_t n,
                                        vd_job_snapshot *out);
void vd_job_snapshot_cleanup(vd_job_snapshot *s);

/* Finish a job that holds its item and end the transaction: item state and counters, job
 * status and disposition, one transition row and the answer kept for replays, committed in
 * the same round trip. Strings may be NULL where the SQL column allows it. */
typedef struct vd_job_finish {
    int64_t job_id, item_id;
    vd_item_state to_state;
    vd_job_status job_status;
    vd_cause cause;
    vd_disposition disposition;       /* VD_DISPOSITION_NONE leaves the job's NULL (a release) */
    const char *reason_code, *reason; /* already redacted */
    int failures, defers;
    double delay_seconds;
    bool forced;
    const char *actor;
    const char *engine_data;  /* JSON object merged into the job, or NULL */
    const char *adjudication; /* JSON object, or NULL */
    const char *request_json; /* the finishing request, for replay */
    /* The kept answer, built by the statement (verdict_job_answer, sql/0012_answer.sql):
     * {["disposition":<disposition>,]["adjudication":<adjudication>,]"job":…,"item":…
     *  [,"deprecated":true,"mapped_to":<disposition>,"hint":<deprecation_hint>]}, with
     * "tool_result" after the disposition when tool_result_text is set */
    bool answer_disposition;      /* open with the disposition */
    bool answer_adjudication;     /* ... or with the adjudication (null when none) */
    const char *deprecation_hint; /* skip_item's: the call was mapped to the disposition */
    bool lint_overridden;         /* force let a rejection the lint refuses through */
    const char *evidence;         /* a rejection's quote of the payload (redacted), or NULL */
    /* the answer's "tool_result": {"text", "terminal"} (sql/0015_rejection_lint.sql); no
     * member when the text is NULL */
    const char *tool_result_text;
    bool tool_result_terminal;
    const char *claims;   /* claim_next's {"claims":[...]} closing the kept answer, or NULL */
    const char *trace_id; /* the finishing request's trace id; NULL: the connection's */
} vd_job_finish;

/* Apply w[0..n) (distinct jobs) in one statement and commit; answers[k] receives the kept
 * answer of w[k] (a closed JSON object, malloc'd) once committed. The vd_store_tx callback must
 * return right after it: the transaction is over. engine_data, adjudication and request_json must
 * be valid JSON (or NULL). */
VD_MUST_USE vd_error vd_store_jobs_finish(vd_conn *c, const vd_job_finish *w, size_t n,
                                          char **answers);
/* Store an adjudication on a job without finishing it; *answer receives
 * {"adjudication":…,"job":…,"item":…} (verdict_job_answer; malloc'd). */
VD_MUST_USE vd_error vd_store_job_set_adjudication(vd_conn *c, int64_t job_id,
                                                   const char *adjudication, char **answer);
/* The adjudications of the item's jobs before `job_id`, newest first, as a JSON array of
 * objects (malloc'd). */
VD_MUST_USE vd_error vd_store_prior_adjudications(vd_conn *c, int64_t item_id, int64_t job_id,
                                                  char **out);

/* What the rejection lint needs of job job_id (inside the finishing transaction, after the
 * job is locked): evidence may be NULL (then evidence_found is false). VD_ERR_NOT_FOUND when
 * there is no such job. */
typedef struct vd_reject_facts {
    bool deterministic_failure;  /* a tool failure of kind deterministic in this job */
    bool retriable_adjudication; /* the job's adjudication: outcome retriable / needs_retry */
    bool strict_evidence;        /* flow_steps.strict_evidence of the job's flow step */
    bool evidence_found;         /* evidence is quoted in the item's payload */
    char **failures;             /* the error texts of the item's tool failures (any job,
                                    newest first, at most 50; malloc'd: vd_reject_facts_cleanup) */
    size_t n_failures;
} vd_reject_facts;
void vd_reject_facts_cleanup(vd_reject_facts *f);
VD_MUST_USE vd_error vd_store_reject_facts(vd_conn *c, int64_t job_id, const char *evidence,
                                           vd_reject_facts *out);
/* {"job_id","item_id","attempt","attempts":[{job_id, attempt, status, disposition,
 * reason_code, reason, finished_at, tool_failures:[{tool, kind, count, last_error}]}]}: the
 * item's (up to 20) attempts before job_id, oldest first (malloc'd); VD_ERR_NOT_FOUND. */
VD_MUST_USE vd_error vd_store_briefing(vd_conn *c, int64_t job_id, char **out);

#endif
