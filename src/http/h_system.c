/* h_system.c - the operational endpoints: liveness, readiness, the OpenAPI documents and
 * the Prometheus scrape. */
#include "http_internal.h"
#include "verdict/sweeper.h"
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/embedded.h"
#include "verdict/store.h"
#include "verdict/store/stats.h"

vd_error vd_h_healthz(vd_ctx *ctx)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", "ok");
    cJSON_AddStringToObject(o, "version", VERDICT_VERSION);
    return vd_respond_json(ctx, 200, o);
}

vd_error vd_h_readyz(vd_ctx *ctx)
{
    vd_conn *conn = NULL;
    int version = 0;
    vd_error rc = vd_db_acquire_until(ctx->db, ctx->deadline, &conn);
    if (rc)
        return vd_fail(ctx, rc, NULL, "the database does not answer");
    rc = vd_store_ready(conn, &version);
    vd_db_release(ctx->db, conn);
    if (rc)
        return vd_fail(ctx, VD_ERR_DATABASE_UNAVAILABLE, NULL,
                       "the schema is at version %d, this binary needs %d", version,
                       vd_store_latest_version());
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", "ready");
    cJSON_AddNumberToObject(o, "schema_version", version);
    return vd_respond_json(ctx, 200, o);
}

vd_error vd_h_openapi_json(vd_ctx *ctx)
{
    return vd_respond_text(ctx, 200, "application/json; charset=utf-8", vd_openapi_json.data,
                           vd_openapi_json.len);
}

vd_error vd_h_openapi_yaml(vd_ctx *ctx)
{
    return vd_respond_text(ctx, 200, "application/yaml; charset=utf-8", vd_openapi_yaml.data,
                           vd_openapi_yaml.len);
}

vd_error vd_h_metrics(vd_ctx *ctx)
{
    vd_buf out = {0};
    vd_sweeper_counts sw;
    vd_db_metrics db = {0};
    vd_conn *c = NULL;
    bool db_up = false;
    vd_error rc = VD_OK;
    vd_sweeper_totals(&sw);
    if (vd_db_acquire_until(ctx->db, ctx->deadline, &c) == VD_OK) {
        db_up = vd_store_metrics(c, &db) == VD_OK;
        vd_db_release(ctx->db, c);
    }
    vd_metrics_render(&out,
                      &(vd_metrics_input){.pool_in_use = vd_db_in_use(ctx->db),
                                          .pool_size = vd_db_size(ctx->db),
                                          .unprepared = vd_db_unprepared(ctx->db),
                                          .pool_mode_detected = vd_db_pool_mode_detected(ctx->db),
                                          .sweeper = &sw,
                                          .db = db_up ? &db : NULL});
    vd_db_metrics_cleanup(&db);
    if (out.failed)
        rc = vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory rendering metrics");
    else
        rc = vd_respond_text(ctx, 200, "text/plain; version=0.0.4; charset=utf-8", out.data,
                             out.len);
    vd_buf_cleanup(&out);
    return rc;
}

vd_error vd_h_stats(vd_ctx *ctx)
{
    const char *fs = vd_query(ctx, "flow_step_id");
    char *out = NULL;
    vd_conn *c = NULL;
    vd_error rc = VD_OK;
    if (fs && (strlen(fs) < 1 || strlen(fs) > 200))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "flow_step_id",
                       "'flow_step_id' must be 1 to 200 bytes");
    if ((rc = vd_ctx_db(ctx, &c)))
        return rc;
    rc = vd_store_stats(c, fs, &out);
    return rc ? vd_store_fail(ctx, rc, NULL) : vd_respond_owned(ctx, out);
}
