/* h_claims.c - SPEC §4: claim a batch of items (idempotent with Idempotency-Key) and extend
 * a claim's lease with a heartbeat. */
#include "http_internal.h"

#include <stdio.h>
#include <stdlib.h>

#include "verdict/jobs.h"
#include "verdict/store_ops.h"

vd_error vd_h_claims(vd_ctx *ctx)
{
    const cJSON *body = NULL;
    const char *fs = NULL, *worker = NULL, *key = NULL;
    int64_t limit = 0, lease = 0;
    vd_conn *c = NULL;
    vd_reply reply = {0};
    vd_error rc = vd_body_object(ctx, &body);
    vd_field f = {ctx, body, NULL};
    if (rc || (rc = vd_idempotency_key(ctx, &key)) ||
        (rc = vd_get_string(f, "flow_step_id", true, 1, 200, &fs)) ||
        (rc = vd_get_string(f, "worker_id", true, 1, 200, &worker)) ||
        (rc = vd_get_int(f, "limit", false, 1, 100, 1, &limit)) ||
        (rc = vd_get_int(f, "lease_seconds", false, 5, 86400, ctx->cfg->lease_seconds, &lease)) ||
        (rc = vd_ctx_db(ctx, &c)))
        return rc;
    vd_idem idem = {"claims", ctx->actor, key, ctx->body};
    rc = vd_store_claim(c, fs, worker, limit, lease, ctx->actor, &idem, &reply);
    if (rc)
        return vd_store_fail(ctx, rc, NULL);
    ctx->idempotent_replayed = reply.replayed;
    return vd_respond_owned(ctx, reply.body);
}

vd_error vd_h_heartbeat(vd_ctx *ctx)
{
    const cJSON *body = NULL;
    const char *token = NULL;
    int64_t job = 0, lease = 0;
    char *out = NULL, what[48];
    vd_conn *c = NULL;
    vd_error rc = vd_param_id(ctx, 0, "job", &job);
    vd_field f = {ctx, NULL, NULL};
    if (rc || (rc = vd_body_object(ctx, &body)))
        return rc;
    f.obj = body;
    if ((rc = vd_get_token(f, &token)) ||
        (rc = vd_get_int(f, "lease_seconds", false, 5, 86400, ctx->cfg->lease_seconds, &lease)) ||
        (rc = vd_ctx_db(ctx, &c)))
        return rc;
    snprintf(what, sizeof(what), "job %lld", (long long)job);
    rc = vd_job_heartbeat(c, job, token, lease, &out);
    return rc ? vd_store_fail(ctx, rc, what) : vd_respond_owned(ctx, out);
}
