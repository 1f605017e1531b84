/* store/items.h - items (src/store/items.c, jobs.c): register, look up, read, list, the change
 * feed, and the bulk and single resolve and requeue. every function takes a borrowed connection
 * (vd_db_acquire), runs parameterised prepared statements and returns VD_OK or an error of the one
 * table; strings returned are malloc'd JSON text the caller frees. */
#ifndef VERDICT_STORE_ITEMS_H
#define VERDICT_STORE_ITEMS_H

#include <stdbool.h>
#include <stdint.h>
#include "verdict/domain.h"
#include "verdict/error.h"
#include "verdict/store.h"
#include "verdict/store/idempotency.h"

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

VD_MUST_USE vd_error vd_store_resolve_one(vd_conn *c, int64_t id, const char *outcome,
                                          const char *reason_code, const char *reason,
                                          const char *actor, char **out);
/* Resolve the items sel takes (sel->state must be manual_review or failed), skipping rows
 * locked by others; *ids_json receives the ids resolved as a JSON array. */
VD_MUST_USE vd_error vd_store_resolve_bulk(vd_conn *c, const vd_bulk_select *sel,
                                           const char *outcome, const char *reason_code,
                                           const char *reason, const char *actor, char **ids_json);

/* Requeue one item (any state but claimed): {"item": {...}}; VD_ERR_NOT_FOUND, or
 * VD_ERR_INVALID_TRANSITION when it is claimed. */
VD_MUST_USE vd_error vd_store_requeue_one(vd_conn *c, int64_t id, bool reset_budgets,
                                          const char *reason, const char *actor, char **out);

/* How many times the holder released item_id since its last verdict (*n). */
VD_MUST_USE vd_error vd_store_item_releases(vd_conn *c, int64_t item_id, int64_t *n);
/* An item's state and, when it is claimed, its current job (*job; 0 otherwise), read without
 * locks. VD_ERR_NOT_FOUND when there is no such item. */
VD_MUST_USE vd_error vd_store_item_current_job(vd_conn *c, int64_t item_id, vd_item_state *state,
                                               int64_t *job);

/* Requeue the items sel takes (sel->states_json), skipping rows locked by others, each with
 * its transition (cause requeue, actor) in the same statement; *ids_json receives the ids
 * requeued as a JSON array (malloc'd). */
VD_MUST_USE vd_error vd_store_requeue_bulk(vd_conn *c, const vd_bulk_select *sel,
                                           bool reset_budgets, const char *reason,
                                           const char *actor, char **ids_json);

#endif
