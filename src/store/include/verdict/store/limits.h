/* store/limits.h - flow control (docs/decisions/0050-limits-in-the-claim.md): limits per key
 * (concurrency, a GCRA rate, model tokens per minute), a provider's backoff on a key, and the
 * claim that honours them. The limits live in PostgreSQL (sql/migrations/0032_flow_control.sql);
 * every function takes a borrowed connection and returns VD_OK or an error of the one table.
 * Strings returned are malloc'd JSON text the caller frees. */
#ifndef VERDICT_STORE_LIMITS_H
#define VERDICT_STORE_LIMITS_H

#include <stdbool.h>
#include <stdint.h>

#include "verdict/error.h"
#include "verdict/store.h"
#include "verdict/store/idempotency.h"

/* The longest limit key, and the most keys an item or a claim may carry. */
#define VD_LIMIT_KEY_MAX 200
#define VD_LIMIT_KEYS_MAX 16
/* An item's priority: a point is worth a minute of waiting
 * (sql/migrations/0037_priority_fairness.sql). */
#define VD_PRIORITY_MIN (-1000)
#define VD_PRIORITY_MAX 1000
/* The longest pause a streak of backoffs grows to (seconds). */
#define VD_LIMIT_BACKOFF_CAP 3600

/* Whether s is a limit key: 1..200 bytes of [A-Za-z0-9._:@-]. Pure. */
bool vd_limit_key_valid(const char *s);

/* The settings of PUT /v1/limits/{key}; a value < 0 (or per_seconds 0) is "not set". */
typedef struct vd_limit_settings {
    int64_t concurrency;
    int64_t rate_per_seconds; /* 1, 60 or 3600; 0: no rate */
    int64_t rate_count, rate_burst;
    int64_t tokens_per_minute;
} vd_limit_settings;

/* Set key's limits (replacing every setting): *out {"limit": {...}}. */
VD_MUST_USE vd_error vd_store_limit_put(vd_conn *c, const char *key, const vd_limit_settings *s,
                                        char **out);
/* {"limit": {...}}; VD_ERR_NOT_FOUND when the key has no row. */
VD_MUST_USE vd_error vd_store_limit_get(vd_conn *c, const char *key, char **out);
/* {"limits": [...]} by key. */
VD_MUST_USE vd_error vd_store_limits_list(vd_conn *c, char **out);
/* {"deleted": key}; VD_ERR_NOT_FOUND when the key has no row. */
VD_MUST_USE vd_error vd_store_limit_delete(vd_conn *c, const char *key, char **out);
/* Throttle key for retry_after seconds, grown by a streak of backoffs up to
 * VD_LIMIT_BACKOFF_CAP (sql/migrations/0032_flow_control.sql, verdict_limit_backoff); reason may be
 * NULL. *out {"limit": {...}}. */
VD_MUST_USE vd_error vd_store_limit_backoff(vd_conn *c, const char *key, int64_t retry_after,
                                            const char *reason, char **out);
/* Seconds until every key of job_id is open again (0: none throttled) into *seconds. */
VD_MUST_USE vd_error vd_store_job_reopen_seconds(vd_conn *c, int64_t job_id, double *seconds);

/* The usage a disposition reports for its job. */
typedef struct vd_usage {
    bool given;
    int64_t input_tokens, output_tokens;
    double cost_usd;   /* < 0: not given */
    const char *model; /* borrowed; may be NULL */
} vd_usage;

/* Keep u on the job, add it to the item's sums and settle the job's keys' token minute
 * against it (sql/migrations/0032_flow_control.sql, verdict_job_usage); *over: the item's summed
 * usage now passes its flow step's max_item_tokens or max_item_cost_usd. Inside the job's
 * transaction. */
VD_MUST_USE vd_error vd_store_job_usage(vd_conn *c, int64_t job_id, const vd_usage *u, bool *over);

/* Set a flow step's cost budget (< 0: keep; 0: remove): *out {"flow_step": {...}} with
 * max_item_tokens and max_item_cost_usd. VD_ERR_NOT_FOUND for an unknown flow step. */
VD_MUST_USE vd_error vd_store_flow_step_budgets(vd_conn *c, const char *flow_step_id,
                                                int64_t max_tokens, double max_cost_usd,
                                                char **out);

/* Set a flow step's fair key (NULL or "": none), made when unknown; a changed key gives its
 * items their fair values again (sql/migrations/0037_priority_fairness.sql). */
VD_MUST_USE vd_error vd_store_flow_step_fair_key(vd_conn *c, const char *flow_step_id,
                                                 const char *fair_key);

/* What a claim adds for flow control: its keys as a JSON array of strings (borrowed; NULL:
 * none) and the tokens each claimed item reserves (< 0: none). */
typedef struct vd_claim_keys {
    const char *keys_json;
    int64_t estimated_tokens;
} vd_claim_keys;

/* The OTLP links of a claim: job_ids a Postgres array literal ("{1,2}"); *out (malloc'd) the
 * claim trace and span (48 hex digits) of each job's item's previous job, comma-separated. */
VD_MUST_USE vd_error vd_store_claim_links(vd_conn *c, const char *job_ids, char **out);

/* vd_store_claim with the claim's limit keys and token estimate (store/claims.h). */
VD_MUST_USE vd_error vd_store_claim_keyed(vd_conn *c, const char *flow_step_id,
                                          const char *worker_id, const char *worker_version,
                                          int64_t limit, int64_t lease_seconds, const char *actor,
                                          const vd_claim_keys *keys, bool hold_empty,
                                          const vd_idem *idem, vd_reply *out);

#endif
