/* h_admin.c - the admin's hands (SPEC §3): requeue one item, or many by flow step and state
 * (the dashboard's "retry all failed"), and release the live claim of a claimed item.
 * Audited: every requeued or released item gets a transition naming the actor. */
#include "http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/redact.h"
#include "verdict/store_ops.h"

vd_error vd_h_requeue_one(vd_ctx *ctx)
{
    const cJSON *body = NULL;
    const char *reason = NULL;
    bool reset = false;
    int64_t id = 0;
    char *out = NULL, *clean = NULL, what[48];
    vd_conn *c = NULL;
    vd_error rc = vd_param_id(ctx, 0, "item", &id);
    if (rc || (rc = vd_body_object(ctx, &body)))
        return rc;
    vd_field f = {ctx, body, NULL};
    if ((rc = vd_get_string(f, "reason", false, 0, 2000, &reason)) ||
        (rc = vd_get_bool(f, "reset_budgets", false, &reset)) || (rc = vd_ctx_db(ctx, &c)))
        return rc;
    snprintf(what, sizeof(what), "item %lld", (long long)id);
    if (reason && !(clean = vd_redact(reason)))
        return vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    rc = vd_store_requeue_one(c, id, reset, clean, ctx->actor, &out);
    free(clean);
    if (rc == VD_ERR_INVALID_TRANSITION)
        return vd_fail(ctx, rc, NULL,
                       "%s is claimed: a live claim cannot be requeued; wait for its "
                       "disposition or for its lease to pass",
                       what);
    return rc ? vd_store_fail(ctx, rc, what) : vd_respond_owned(ctx, out);
}

vd_error vd_h_requeue_bulk(vd_ctx *ctx)
{
    static const char *const states[] = {"failed", "manual_review", "rejected", NULL};
    const cJSON *body = NULL;
    const char *fs = NULL, *state = NULL, *code = NULL, *reason = NULL;
    char *clean = NULL;
    bool reset = false, known = false;
    int64_t limit = 0;
    long count = 0;
    vd_conn *c = NULL;
    vd_error rc = vd_body_object(ctx, &body);
    vd_field f = {ctx, body, NULL};
    if (rc || (rc = vd_get_string(f, "flow_step_id", true, 1, 200, &fs)) ||
        (rc = vd_get_string(f, "state", true, 1, 40, &state)) ||
        (rc = vd_get_string(f, "reason_code", false, 1, 200, &code)) ||
        (rc = vd_get_int(f, "limit", false, 1, 10000, 1000, &limit)) ||
        (rc = vd_get_string(f, "reason", false, 0, 2000, &reason)) ||
        (rc = vd_get_bool(f, "reset_budgets", false, &reset)))
        return rc;
    for (size_t i = 0; states[i]; i++)
        known |= strcmp(state, states[i]) == 0;
    if (!known)
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "state",
                       "'state' must be failed, manual_review or rejected");
    if ((rc = vd_ctx_db(ctx, &c)))
        return rc;
    if (reason && !(clean = vd_redact(reason)))
        return vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    rc = vd_store_requeue_bulk(c, fs, state, code, limit, reset, clean, ctx->actor, &count);
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
    const char *reason = NULL;
    int64_t id = 0;
    char *out = NULL, *clean = NULL, what[48], state[16] = "";
    vd_conn *c = NULL;
    vd_error rc = vd_param_id(ctx, 0, "item", &id);
    if (rc || (rc = vd_body_object(ctx, &body)))
        return rc;
    vd_field f = {ctx, body, NULL};
    if ((rc = vd_get_string(f, "reason", false, 0, 2000, &reason)) || (rc = vd_ctx_db(ctx, &c)))
        return rc;
    snprintf(what, sizeof(what), "item %lld", (long long)id);
    if (reason && !(clean = vd_redact(reason)))
        return vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    rc = vd_store_item_release(c, id, clean, ctx->actor, &out, state, sizeof(state));
    free(clean);
    if (rc == VD_ERR_INVALID_TRANSITION)
        return vd_fail(ctx, rc, NULL, "%s is %s: only a claimed item has a claim to release",
                       what, state);
    return rc ? vd_store_fail(ctx, rc, what) : vd_respond_owned(ctx, out);
}
