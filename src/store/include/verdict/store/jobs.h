/* store/jobs.h - jobs (src/store/jobs.c, items.c): read, list, lock, finish, the admin's
 * release and what an MCP session may be offered. The store's data operations are one function
 * per use case and one header per entity (verdict/store/). Every function takes a borrowed
 * connection (vd_db_acquire), runs parameterised prepared statements, and returns VD_OK or an
 * error of the one table. Strings returned are malloc'd JSON text the caller frees. */
#ifndef VERDICT_STORE_JOBS_H
#define VERDICT_STORE_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "verdict/domain.h"
#include "verdict/store.h"
#include "verdict/store/items.h"

/* {"job": {...}} or VD_ERR_NOT_FOUND. */
VD_MUST_USE vd_error vd_store_job_get(vd_conn *c, int64_t id, char **out);
/* {"job": {...}, "item": {...}} when `token` (a UUID in text form) is the job's claim token,
 * whatever the job's status; VD_ERR_NOT_FOUND when there is no such job or the token is
 * another's. */
VD_MUST_USE vd_error vd_store_job_claimed(vd_conn *c, int64_t id, const char *token, char **out);
/* {"jobs": [...], "next_after": id|null}; see vd_list_filter. */
VD_MUST_USE vd_error vd_store_jobs_list(vd_conn *c, const vd_list_filter *f, char **out);

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

/* The last statement of an admin's release (inside vd_store_tx, after vd_store_job_lock of
 * job_id said it holds item_id; sent with the COMMIT): job -> released, item -> available
 * now, one transition (cause admin_release, actor), no budget spent. *out: {"job": {...},
 * "item": {...}} (malloc'd). */
VD_MUST_USE vd_error vd_store_item_release(vd_conn *c, int64_t item_id, int64_t job_id,
                                           const char *reason, const char *actor, char **out);

/* A job and its item read under row locks (inside vd_store_tx). */
typedef struct vd_job_snapshot vd_job_snapshot;
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
    /* The kept answer, built by the statement (verdict_job_answer, sql/migrations/0012_answer.sql):
     * {["disposition":<disposition>,]["adjudication":<adjudication>,]"job":…,"item":…
     *  [,"deprecated":true,"mapped_to":<disposition>,"hint":<deprecation_hint>]}, with
     * "tool_result" after the disposition when tool_result_text is set */
    bool answer_disposition;      /* open with the disposition */
    bool answer_adjudication;     /* ... or with the adjudication (null when none) */
    const char *deprecation_hint; /* skip_item's: the call was mapped to the disposition */
    bool lint_overridden;         /* force let a rejection the lint refuses through */
    const char *evidence;         /* a rejection's quote of the payload (redacted), or NULL */
    /* the answer's "tool_result": {"text", "terminal"} (sql/migrations/0015_rejection_lint.sql); no
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

#endif
