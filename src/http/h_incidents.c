/* h_incidents.c - tooling incidents over HTTP (service/incidents.c): list
 * them (reader; state, flow_step_id, keyset pagination like GET /v1/jobs), read one with its
 * affected items, and resolve one (admin; optionally putting its items back to available,
 * audited, in the same transaction). */
#include "http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/incidents.h"

vd_error vd_h_incidents_list(vd_ctx *ctx)
{
    const char *state = NULL, *flow_step = NULL;
    int64_t limit = 0, after = 0;
    char *out = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_query_int(ctx, "limit", 1, 500, 100, &limit);
    if (rc || (rc = vd_query_int(ctx, "after", 0, INT64_MAX, 0, &after)) ||
        (rc = vd_query_str(ctx, "flow_step_id", 200, &flow_step)) ||
        (rc = vd_query_str(ctx, "state", 40, &state)))
        return rc;
    if (state && strcmp(state, "open") != 0 && strcmp(state, "resolved") != 0)
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "state", "'state' must be open or resolved");
    if ((rc = vd_ctx_db(ctx, &c)))
        return rc;
    rc = vd_store_incidents_list(c, state, flow_step, after, limit, &out);
    return rc ? vd_store_fail(ctx, rc, NULL) : vd_respond_owned(ctx, out);
}

vd_error vd_h_incident_get(vd_ctx *ctx)
{
    int64_t id = 0;
    char *out = NULL, what[48];
    vd_conn *c = NULL;
    vd_error rc = vd_param_id(ctx, 0, "tool incident", &id);
    if (rc || (rc = vd_ctx_db(ctx, &c)))
        return rc;
    snprintf(what, sizeof(what), "tool incident %lld", (long long)id);
    rc = vd_store_incident_get(c, id, &out);
    return rc ? vd_store_fail(ctx, rc, what) : vd_respond_owned(ctx, out);
}

vd_error vd_h_incident_resolve(vd_ctx *ctx)
{
    static const vd_member members[] = {{"requeue_items", VD_J_BOOL}, {"reason", VD_J_STRING}};
    vd_target t;
    bool requeue = false;
    char *out = NULL, *reason = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_target_read(ctx, "tool incident", &t);
    if (rc || (rc = VD_MEMBERS_CHECK(t.f, members)) ||
        (rc = vd_get_bool(t.f, "requeue_items", false, &requeue)) ||
        (rc = vd_get_redacted(t.f, "reason", false, 0, 2000, &reason)) ||
        (rc = vd_ctx_db(ctx, &c))) {
        free(reason);
        return rc;
    }
    rc = vd_incident_resolve(c, t.id, requeue, reason, ctx->actor, &out);
    free(reason);
    if (rc == VD_ERR_INVALID_TRANSITION)
        return vd_fail(ctx, rc, NULL,
                       "%s is already resolved; GET /v1/tool-incidents/%lld shows it", t.what,
                       (long long)t.id);
    return rc ? vd_store_fail(ctx, rc, t.what) : vd_respond_owned(ctx, out);
}
