/* h_admin.c - the admin's hands (SPEC §3): requeue one item, or many by flow step and states
 * (the dashboard's "retry all failed"), narrowed by the redrive filters (a failed tool, a
 * worker version, a time window); release the live claim of a claimed item; resolve a
 * parked item (manual_review or failed) to processed or rejected, one or many. Audited: every
 * item changed gets a transition naming the actor. A bulk call with "dry_run": true answers
 * the ids it would take and changes nothing. */
#include "http_internal.h"

#include <stdlib.h>
#include <string.h>

#include "verdict/jobs.h"
#include "verdict/semver.h"
#include "verdict/store.h"
#include "verdict/store/items.h"

vd_error vd_h_requeue_one(vd_ctx *ctx)
{
    static const vd_member members[] = {{"reset_budgets", VD_J_BOOL}, {"reason", VD_J_STRING}};
    vd_target t;
    bool reset = false;
    char *out = NULL, *clean = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_target_read(ctx, "item", &t);
    if (rc || (rc = VD_MEMBERS_CHECK(t.f, members)) ||
        (rc = vd_get_bool(t.f, "reset_budgets", false, &reset)) ||
        (rc = vd_get_redacted(t.f, "reason", false, 0, 2000, &clean)) ||
        (rc = vd_ctx_db(ctx, &c))) {
        free(clean);
        return rc;
    }
    rc = vd_store_requeue_one(c, t.id, reset, clean, ctx->actor, &out);
    free(clean);
    if (rc == VD_ERR_INVALID_TRANSITION)
        return vd_fail(ctx, rc, NULL,
                       "%s is claimed: a live claim cannot be requeued; wait for its "
                       "disposition or for its lease to pass",
                       t.what);
    return rc ? vd_store_fail(ctx, rc, t.what) : vd_respond_owned(ctx, out);
}

/* The members of a bulk call every bulk call has: flow_step_id, reason_code, limit. */
static vd_error bulk_common(vd_field f, vd_bulk_select *sel)
{
    vd_error rc = vd_get_string(f, "flow_step_id", true, 1, 200, &sel->flow_step_id);
    if (rc || (rc = vd_get_string(f, "reason_code", false, 1, 200, &sel->reason_code)) ||
        (rc = vd_get_int(f, "limit", false, 1, 10000, 1000, &sel->limit)))
        return rc;
    return VD_OK;
}

/* A resolve's selection: bulk_common and state (one of states); *states_json (malloc'd) is
 * that state as the one-element array the dry run selects with. */
static vd_error bulk_select(vd_ctx *ctx, vd_field f, const vd_item_state *states, size_t nstates,
                            const char *states_text, vd_bulk_select *sel, char **states_json)
{
    bool known = false;
    vd_item_state state = VD_ITEM_AVAILABLE;
    vd_error rc;
    *states_json = NULL;
    if ((rc = bulk_common(f, sel)) || (rc = vd_get_string(f, "state", true, 1, 40, &sel->state)))
        return rc;
    for (size_t i = 0; i < nstates && vd_item_state_parse(sel->state, &state); i++)
        known |= state == states[i];
    if (!known)
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "state", "'state' must be %s", states_text);
    cJSON *one = cJSON_CreateStringArray(&sel->state, 1);
    *states_json = one ? cJSON_PrintUnformatted(one) : NULL;
    cJSON_Delete(one);
    sel->states_json = *states_json;
    return *states_json ? VD_OK : vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
}

/* The answer of a bulk action or its dry run, from the JSON array of ids the store gave
 * (freed here): {["dry_run": true,] "<count_key>": n, "item_ids": [...]}. */
static vd_error bulk_answer(vd_ctx *ctx, bool dry, const char *count_key, char *ids)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *list = ids ? cJSON_Parse(ids) : NULL;
    if (dry)
        cJSON_AddTrueToObject(o, "dry_run");
    cJSON_AddNumberToObject(o, count_key, list ? (double)cJSON_GetArraySize(list) : 0);
    cJSON_AddItemToObject(o, "item_ids", list ? list : cJSON_CreateArray());
    free(ids);
    return vd_respond_json(ctx, 200, o);
}

/* Answer a dry run: what the action would select now. */
static vd_error dry_run(vd_ctx *ctx, const vd_bulk_select *sel, const char *count_key)
{
    char *ids = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_ctx_db(ctx, &c);
    if (rc)
        return rc;
    if ((rc = vd_store_items_select(c, sel, &ids)))
        return vd_store_fail(ctx, rc, NULL);
    return bulk_answer(ctx, true, count_key, ids);
}

/* One state name a requeue may select: any state but claimed. */
static bool requeueable(const cJSON *v)
{
    vd_item_state st = VD_ITEM_CLAIMED;
    return cJSON_IsString(v) && vd_item_state_parse(v->valuestring, &st) && st != VD_ITEM_CLAIMED;
}

#define REQUEUE_STATES "available, deferred, processed, rejected, manual_review or failed"

/* A requeue's states: "state" (one name) or "states" (an array of 1 to 7 names), exactly one
 * of them, never claimed; *out (malloc'd) is them as a JSON array. */
static vd_error requeue_states(vd_field f, char **out)
{
    const cJSON *one = cJSON_GetObjectItemCaseSensitive(f.obj, "state");
    const cJSON *many = cJSON_GetObjectItemCaseSensitive(f.obj, "states");
    bool has_one = one && !cJSON_IsNull(one), has_many = many && !cJSON_IsNull(many);
    *out = NULL;
    if (has_one == has_many)
        return vd_fail(f.ctx, has_one ? VD_ERR_INVALID_FIELD : VD_ERR_MISSING_FIELD, "state",
                       "send 'state' (one name) or 'states' (an array), not %s",
                       has_one ? "both" : "neither");
    if (has_one && !requeueable(one))
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, "state",
                       "'state' must be " REQUEUE_STATES " (a claimed item's lease decides)");
    if (has_many &&
        (!cJSON_IsArray(many) || cJSON_GetArraySize(many) < 1 || cJSON_GetArraySize(many) > 7))
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, "states",
                       "'states' must be an array of 1 to 7 state names");
    for (const cJSON *e = has_many ? many->child : NULL; e; e = e->next) {
        if (!requeueable(e))
            return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, "states",
                           "each of 'states' must be " REQUEUE_STATES);
    }
    cJSON *list = has_many ? cJSON_Duplicate(many, true) : cJSON_CreateArray();
    if (list && has_one)
        cJSON_AddItemToArray(list, cJSON_CreateString(one->valuestring));
    *out = list ? cJSON_PrintUnformatted(list) : NULL;
    cJSON_Delete(list);
    return *out ? VD_OK : vd_fail(f.ctx, VD_ERR_INTERNAL, NULL, "out of memory");
}

/* An RFC 3339 time member (optional). */
static vd_error get_time(vd_field f, const char *key, const char **out)
{
    vd_error rc = vd_get_string(f, key, false, 1, 40, out);
    if (rc || !*out || vd_rfc3339_valid(*out))
        return rc;
    return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, key,
                   "'%s' must be an RFC 3339 time such as 2026-01-02T03:04:05Z", key);
}

/* The redrive filters: tool_failed, failed_under_version ("<" and a semantic version),
 * since, until. */
static vd_error redrive_filters(vd_field f, vd_bulk_select *sel)
{
    const char *below = NULL;
    vd_error rc = vd_get_string(f, "tool_failed", false, 1, 200, &sel->tool_failed);
    if (rc ||
        (rc = vd_get_string(f, "failed_under_version", false, 2, VD_SEMVER_MAX + 1, &below)) ||
        (rc = get_time(f, "since", &sel->since)) || (rc = get_time(f, "until", &sel->until)))
        return rc;
    if (below && (below[0] != '<' || !vd_semver_valid(below + 1)))
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, "failed_under_version",
                       "'failed_under_version' must be '<' and a semantic version "
                       "(e.g. \"<1.4.2\"); only '<' is supported");
    sel->below_version = below ? below + 1 : NULL;
    return VD_OK;
}

/* Every member of POST /v1/items/requeue; any other is refused. dry_run is true or false,
 * never null: a null must not turn a dry run into the action. */
static const vd_member requeue_members[] = {{"flow_step_id", VD_J_STRING},
                                            {"state", VD_J_STRING},
                                            {"states", VD_J_ARRAY},
                                            {"reason_code", VD_J_STRING},
                                            {"limit", VD_J_NUMBER},
                                            {"tool_failed", VD_J_STRING},
                                            {"failed_under_version", VD_J_STRING},
                                            {"since", VD_J_STRING},
                                            {"until", VD_J_STRING},
                                            {"reset_budgets", VD_J_BOOL},
                                            {"dry_run", VD_J_BOOL | VD_J_NOT_NULL},
                                            {"reason", VD_J_STRING}};

/* Every member of POST /v1/items/resolve. */
static const vd_member resolve_members[] = {
    {"flow_step_id", VD_J_STRING},    {"state", VD_J_STRING},
    {"reason_code", VD_J_STRING},     {"limit", VD_J_NUMBER},
    {"set_reason_code", VD_J_STRING}, {"dry_run", VD_J_BOOL | VD_J_NOT_NULL},
    {"outcome", VD_J_STRING},         {"reason", VD_J_STRING}};

/* The requeue itself: {"requeued": n, "item_ids": [...]}. */
static vd_error requeue_run(vd_ctx *ctx, vd_field f, const vd_bulk_select *sel, bool reset)
{
    char *clean = NULL, *ids = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_get_redacted(f, "reason", false, 0, 2000, &clean);
    if (rc || (rc = vd_ctx_db(ctx, &c))) {
        free(clean);
        return rc;
    }
    rc = vd_store_requeue_bulk(c, sel, reset, clean, ctx->actor, &ids);
    free(clean);
    if (rc)
        return vd_store_fail(ctx, rc, NULL);
    return bulk_answer(ctx, false, "requeued", ids);
}

vd_error vd_h_requeue_bulk(vd_ctx *ctx)
{
    const cJSON *body = NULL;
    char *states = NULL;
    bool reset = false, dry = false;
    vd_bulk_select sel = {0};
    vd_error rc = vd_body_object(ctx, &body);
    vd_field f = {ctx, body, NULL};
    if (rc || (rc = VD_MEMBERS_CHECK(f, requeue_members)) || (rc = bulk_common(f, &sel)) ||
        (rc = requeue_states(f, &states)) || (rc = redrive_filters(f, &sel)) ||
        (rc = vd_get_bool(f, "reset_budgets", false, &reset)) ||
        (rc = vd_get_bool(f, "dry_run", false, &dry))) {
        free(states);
        return rc;
    }
    sel.states_json = states;
    rc = dry ? dry_run(ctx, &sel, "would_requeue") : requeue_run(ctx, f, &sel, reset);
    free(states);
    return rc;
}

vd_error vd_h_release_item(vd_ctx *ctx)
{
    static const vd_member members[] = {{"reason", VD_J_STRING}};
    vd_target t;
    char *out = NULL, *clean = NULL;
    vd_item_state state = VD_ITEM_CLAIMED;
    vd_conn *c = NULL;
    vd_error rc = vd_target_read(ctx, "item", &t);
    if (rc || (rc = VD_MEMBERS_CHECK(t.f, members)) ||
        (rc = vd_get_redacted(t.f, "reason", false, 0, 2000, &clean)) ||
        (rc = vd_ctx_db(ctx, &c))) {
        free(clean);
        return rc;
    }
    rc = vd_item_release(c, t.id, clean, ctx->actor, &out, &state);
    free(clean);
    if (rc == VD_ERR_INVALID_TRANSITION)
        return vd_fail(ctx, rc, NULL, "%s is %s: only a claimed item has a claim to release",
                       t.what, vd_item_state_name(state));
    return rc ? vd_store_fail(ctx, rc, t.what) : vd_respond_owned(ctx, out);
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
    static const vd_member members[] = {
        {"outcome", VD_J_STRING}, {"reason", VD_J_STRING}, {"reason_code", VD_J_STRING}};
    vd_target t;
    const char *outcome = NULL, *code = NULL;
    char *out = NULL, *reason = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_target_read(ctx, "item", &t);
    if (rc || (rc = VD_MEMBERS_CHECK(t.f, members)) ||
        (rc = vd_get_string(t.f, "reason_code", false, 1, 200, &code)) ||
        (rc = resolve_fields(ctx, t.f, &outcome, &reason)) || (rc = vd_ctx_db(ctx, &c))) {
        free(reason);
        return rc;
    }
    rc = vd_store_resolve_one(c, t.id, outcome, code ? code : "resolve", reason, ctx->actor, &out);
    free(reason);
    if (rc == VD_ERR_INVALID_TRANSITION)
        return vd_fail(ctx, rc, NULL,
                       "%s is not parked: only an item in manual_review or failed can be "
                       "resolved",
                       t.what);
    return rc ? vd_store_fail(ctx, rc, t.what) : vd_respond_owned(ctx, out);
}

/* The resolve itself: {"resolved": n, "item_ids": [...]}. */
static vd_error resolve_run(vd_ctx *ctx, const vd_bulk_select *sel, const char *outcome,
                            const char *code, const char *reason)
{
    char *ids = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_ctx_db(ctx, &c);
    if (rc)
        return rc;
    rc = vd_store_resolve_bulk(c, sel, outcome, code ? code : "resolve", reason, ctx->actor, &ids);
    if (rc)
        return vd_store_fail(ctx, rc, NULL);
    return bulk_answer(ctx, false, "resolved", ids);
}

vd_error vd_h_resolve_bulk(vd_ctx *ctx)
{
    static const vd_item_state states[] = {VD_ITEM_MANUAL_REVIEW, VD_ITEM_FAILED};
    const cJSON *body = NULL;
    const char *outcome = NULL, *code = NULL;
    bool dry = false;
    vd_bulk_select sel = {0};
    char *reason = NULL, *one = NULL;
    vd_error rc = vd_body_object(ctx, &body);
    vd_field f = {ctx, body, NULL};
    if (rc || (rc = VD_MEMBERS_CHECK(f, resolve_members)) ||
        (rc = bulk_select(ctx, f, states, 2, "manual_review or failed", &sel, &one)) ||
        (rc = vd_get_string(f, "set_reason_code", false, 1, 200, &code)) ||
        (rc = vd_get_bool(f, "dry_run", false, &dry)) ||
        (rc = resolve_fields(ctx, f, &outcome, &reason)))
        goto out;
    rc = dry ? dry_run(ctx, &sel, "would_resolve") : resolve_run(ctx, &sel, outcome, code, reason);
out:
    free(reason);
    free(one);
    return rc;
}
