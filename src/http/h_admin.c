/* h_admin.c - the admin's hands (SPEC §3): requeue one item, or many by flow step and state
 * (the dashboard's "retry all failed"); release the live claim of a claimed item; resolve a
 * parked item (manual_review or failed) to processed or rejected, one or many. Audited: every
 * item changed gets a transition naming the actor. A bulk call with "dry_run": true answers
 * the ids it would take and changes nothing. */
#include "http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/jobs.h"
#include "verdict/store_ops.h"

vd_error vd_h_requeue_one(vd_ctx *ctx)
{
    const cJSON *body = NULL;
    bool reset = false;
    int64_t id = 0;
    char *out = NULL, *clean = NULL, what[48];
    vd_conn *c = NULL;
    vd_error rc = vd_param_id(ctx, 0, "item", &id);
    if (rc || (rc = vd_body_object(ctx, &body)))
        return rc;
    vd_field f = {ctx, body, NULL};
    if ((rc = vd_get_bool(f, "reset_budgets", false, &reset)) ||
        (rc = vd_get_redacted(f, "reason", false, 0, 2000, &clean)))
        return rc;
    if ((rc = vd_ctx_db(ctx, &c))) {
        free(clean);
        return rc;
    }
    snprintf(what, sizeof(what), "item %lld", (long long)id);
    rc = vd_store_requeue_one(c, id, reset, clean, ctx->actor, &out);
    free(clean);
    if (rc == VD_ERR_INVALID_TRANSITION)
        return vd_fail(ctx, rc, NULL,
                       "%s is claimed: a live claim cannot be requeued; wait for its "
                       "disposition or for its lease to pass",
                       what);
    return rc ? vd_store_fail(ctx, rc, what) : vd_respond_owned(ctx, out);
}

/* The selection of a bulk call: flow_step_id, state (one of states), reason_code, limit. */
static vd_error bulk_select(vd_ctx *ctx, vd_field f, const vd_item_state *states, size_t nstates,
                            const char *states_text, vd_bulk_select *sel)
{
    bool known = false;
    vd_item_state state = VD_ITEM_AVAILABLE;
    vd_error rc;
    if ((rc = vd_get_string(f, "flow_step_id", true, 1, 200, &sel->flow_step_id)) ||
        (rc = vd_get_string(f, "state", true, 1, 40, &sel->state)) ||
        (rc = vd_get_string(f, "reason_code", false, 1, 200, &sel->reason_code)) ||
        (rc = vd_get_int(f, "limit", false, 1, 10000, 1000, &sel->limit)))
        return rc;
    for (size_t i = 0; i < nstates && vd_item_state_parse(sel->state, &state); i++)
        known |= state == states[i];
    if (!known)
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "state", "'state' must be %s", states_text);
    return VD_OK;
}

/* Answer a dry run: {"dry_run": true, "<count_key>": n, "item_ids": [...]}. */
static vd_error dry_run(vd_ctx *ctx, const vd_bulk_select *sel, const char *count_key)
{
    char *ids = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_ctx_db(ctx, &c);
    if (rc)
        return rc;
    if ((rc = vd_store_items_select(c, sel, &ids)))
        return vd_store_fail(ctx, rc, NULL);
    cJSON *o = cJSON_CreateObject();
    cJSON *list = ids ? cJSON_Parse(ids) : NULL;
    cJSON_AddTrueToObject(o, "dry_run");
    cJSON_AddNumberToObject(o, count_key, list ? (double)cJSON_GetArraySize(list) : 0);
    cJSON_AddItemToObject(o, "item_ids", list ? list : cJSON_CreateArray());
    free(ids);
    return vd_respond_json(ctx, 200, o);
}

vd_error vd_h_requeue_bulk(vd_ctx *ctx)
{
    static const vd_item_state states[] = {VD_ITEM_FAILED, VD_ITEM_MANUAL_REVIEW, VD_ITEM_REJECTED};
    const cJSON *body = NULL;
    char *clean = NULL;
    bool reset = false, dry = false;
    vd_bulk_select sel = {0};
    long count = 0;
    vd_conn *c = NULL;
    vd_error rc = vd_body_object(ctx, &body);
    vd_field f = {ctx, body, NULL};
    if (rc || (rc = bulk_select(ctx, f, states, 3, "failed, manual_review or rejected", &sel)) ||
        (rc = vd_get_bool(f, "reset_budgets", false, &reset)) ||
        (rc = vd_get_bool(f, "dry_run", false, &dry)))
        return rc;
    if (dry)
        return dry_run(ctx, &sel, "would_requeue");
    if ((rc = vd_get_redacted(f, "reason", false, 0, 2000, &clean)) || (rc = vd_ctx_db(ctx, &c))) {
        free(clean);
        return rc;
    }
    rc = vd_store_requeue_bulk(c, sel.flow_step_id, sel.state, sel.reason_code, sel.limit, reset,
                               clean, ctx->actor, &count);
    free(clean);
    if (rc)
        return vd_store_fail(ctx, rc, NULL);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "requeued", (double)count);
    return vd_respond_json(ctx, 200, o);
}

vd_error vd_h_release_item(vd_ctx *ctx)
{
    const cJSON *body = NULL;
    int64_t id = 0;
    char *out = NULL, *clean = NULL, what[48];
    vd_item_state state = VD_ITEM_CLAIMED;
    vd_conn *c = NULL;
    vd_error rc = vd_param_id(ctx, 0, "item", &id);
    if (rc || (rc = vd_body_object(ctx, &body)))
        return rc;
    vd_field f = {ctx, body, NULL};
    if ((rc = vd_get_redacted(f, "reason", false, 0, 2000, &clean)))
        return rc;
    if ((rc = vd_ctx_db(ctx, &c))) {
        free(clean);
        return rc;
    }
    snprintf(what, sizeof(what), "item %lld", (long long)id);
    rc = vd_item_release(c, id, clean, ctx->actor, &out, &state);
    free(clean);
    if (rc == VD_ERR_INVALID_TRANSITION)
        return vd_fail(ctx, rc, NULL, "%s is %s: only a claimed item has a claim to release", what,
                       vd_item_state_name(state));
    return rc ? vd_store_fail(ctx, rc, what) : vd_respond_owned(ctx, out);
}

/* outcome (processed|rejected) and reason (required) of a resolve call. */
static vd_error resolve_fields(vd_ctx *ctx, vd_field f, const char **outcome, char **reason)
{
    vd_error rc = vd_get_string(f, "outcome", true, 1, 40, outcome);
    if (rc)
        return rc;
    vd_item_state to = VD_ITEM_AVAILABLE;
    if (!vd_item_state_parse(*outcome, &to) || (to != VD_ITEM_PROCESSED && to != VD_ITEM_REJECTED))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "outcome",
                       "'outcome' must be processed or rejected");
    return vd_get_redacted(f, "reason", true, 1, 2000, reason);
}

vd_error vd_h_resolve_one(vd_ctx *ctx)
{
    const cJSON *body = NULL;
    const char *outcome = NULL, *code = NULL;
    int64_t id = 0;
    char *out = NULL, *reason = NULL, what[48];
    vd_conn *c = NULL;
    vd_error rc = vd_param_id(ctx, 0, "item", &id);
    if (rc || (rc = vd_body_object(ctx, &body)))
        return rc;
    vd_field f = {ctx, body, NULL};
    if ((rc = vd_get_string(f, "reason_code", false, 1, 200, &code)) ||
        (rc = resolve_fields(ctx, f, &outcome, &reason)) || (rc = vd_ctx_db(ctx, &c))) {
        free(reason);
        return rc;
    }
    snprintf(what, sizeof(what), "item %lld", (long long)id);
    rc = vd_store_resolve_one(c, id, outcome, code ? code : "resolve", reason, ctx->actor, &out);
    free(reason);
    if (rc == VD_ERR_INVALID_TRANSITION)
        return vd_fail(ctx, rc, NULL,
                       "%s is not parked: only an item in manual_review or failed can be "
                       "resolved",
                       what);
    return rc ? vd_store_fail(ctx, rc, what) : vd_respond_owned(ctx, out);
}

vd_error vd_h_resolve_bulk(vd_ctx *ctx)
{
    static const vd_item_state states[] = {VD_ITEM_MANUAL_REVIEW, VD_ITEM_FAILED};
    const cJSON *body = NULL;
    const char *outcome = NULL, *code = NULL;
    bool dry = false;
    vd_bulk_select sel = {0};
    char *ids = NULL, *reason = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_body_object(ctx, &body);
    vd_field f = {ctx, body, NULL};
    if (rc || (rc = bulk_select(ctx, f, states, 2, "manual_review or failed", &sel)) ||
        (rc = vd_get_string(f, "set_reason_code", false, 1, 200, &code)) ||
        (rc = vd_get_bool(f, "dry_run", false, &dry)) ||
        (rc = resolve_fields(ctx, f, &outcome, &reason)))
        return rc;
    if (dry) {
        free(reason);
        return dry_run(ctx, &sel, "would_resolve");
    }
    if ((rc = vd_ctx_db(ctx, &c))) {
        free(reason);
        return rc;
    }
    rc = vd_store_resolve_bulk(c, &sel, outcome, code ? code : "resolve", reason, ctx->actor, &ids);
    free(reason);
    if (rc)
        return vd_store_fail(ctx, rc, NULL);
    cJSON *o = cJSON_CreateObject();
    cJSON *list = ids ? cJSON_Parse(ids) : NULL;
    cJSON_AddNumberToObject(o, "resolved", list ? (double)cJSON_GetArraySize(list) : 0);
    cJSON_AddItemToObject(o, "item_ids", list ? list : cJSON_CreateArray());
    free(ids);
    return vd_respond_json(ctx, 200, o);
}
