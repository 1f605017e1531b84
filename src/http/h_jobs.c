/* h_jobs.c - SPEC §5: POST /v1/jobs/{job_id}/disposition. Validates the call per
 * disposition, maps the legacy skip_item (SPEC §5.1), and hands the rest to the service
 * layer (service/jobs.c), which enforces the state machine in one transaction. */
#include "http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/jobs.h"
#include "verdict/store_ops.h"

#define MAX_ENGINE_DATA 65536

const char *const vd_reject_codes[] = {"irrelevant", "too_thin",    "duplicate",
                                           "spam",       "low_quality", "other", NULL};
const char *const vd_defer_codes[] = {"tool_error",     "quality_gate",      "provider_error",
                                          "low_confidence", "dependency_outage", "other", NULL};

static vd_error get_code(vd_field f, const char *const *allowed, const char **out)
{
    vd_error rc = vd_get_string(f, "reason_code", true, 1, 200, out);
    if (rc)
        return rc;
    for (size_t i = 0; allowed[i]; i++) {
        if (strcmp(*out, allowed[i]) == 0)
            return VD_OK;
    }
    char list[200] = "";
    for (size_t i = 0; allowed[i]; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
                 allowed[i]);
    return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, "reason_code",
                   "'reason_code' must be one of: %s", list);
}

static vd_error get_engine_data(vd_field f, char **out)
{
    const cJSON *o = NULL;
    vd_error rc = vd_get_object(f, "engine_data", false, &o);
    *out = NULL;
    if (rc || !o)
        return rc;
    *out = cJSON_PrintUnformatted(o);
    if (!*out)
        return vd_fail(f.ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    if (strlen(*out) > MAX_ENGINE_DATA)
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, "engine_data",
                       "'engine_data' is larger than 64 KiB serialised");
    return VD_OK;
}

/* Fill the event and reason fields of w for one explicit disposition. */
static vd_error parse_explicit(vd_field f, const char *d, vd_job_write *w)
{
    int64_t after = -1;
    bool b = false;
    vd_error rc = VD_OK;
    if (strcmp(d, "complete") == 0) {
        w->event.kind = VD_EVENT_COMPLETE;
    } else if (strcmp(d, "reject_source") == 0) {
        w->event.kind = VD_EVENT_REJECT_SOURCE;
        w->is_reject = true;
        rc = get_code(f, vd_reject_codes, &w->reason_code);
    } else if (strcmp(d, "defer_item") == 0) {
        w->event.kind = VD_EVENT_DEFER_ITEM;
        if ((rc = get_code(f, vd_defer_codes, &w->reason_code)) ||
            (rc = vd_get_bool(f, "manual_review", false, &b)))
            return rc;
        w->event.manual_review = b;
    } else if (strcmp(d, "fail") == 0) {
        w->event.kind = VD_EVENT_FAIL;
        w->reason_code = "engine_error";
        if ((rc = vd_get_string(f, "error", true, 1, 4000, &w->reason)) ||
            (rc = vd_get_bool(f, "retryable", true, &b)))
            return rc;
        w->event.retryable = b;
    } else {
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, "disposition",
                       "'disposition' must be complete, reject_source, defer_item, fail or "
                       "skip_item");
    }
    if (rc)
        return rc;
    if (w->event.kind == VD_EVENT_DEFER_ITEM || w->event.kind == VD_EVENT_FAIL) {
        rc = vd_get_int(f, "retry_after_seconds", false, 0, 604800, -1, &after);
        w->event.retry_after_seconds = after;
    }
    return rc;
}

vd_error vd_h_disposition(vd_ctx *ctx)
{
    const cJSON *body = NULL;
    const char *d = NULL, *reason = NULL;
    char *engine = NULL, head[64], tail[400], what[48];
    int64_t job = 0;
    vd_conn *c = NULL;
    vd_job_answer ans = {0};
    vd_job_write w = {0};
    vd_error rc = vd_param_id(ctx, 0, "job", &job);
    if (rc || (rc = vd_body_object(ctx, &body)))
        return rc;
    vd_field f = {ctx, body, NULL};
    w.job_id = job;
    w.event.retry_after_seconds = -1;
    w.event.retryable = true;
    if ((rc = vd_get_token(f, &w.token)) ||
        (rc = vd_get_string(f, "disposition", true, 1, 40, &d)) ||
        (rc = vd_get_string(f, "reason", false, 0, 2000, &reason)) ||
        (rc = vd_get_bool(f, "force", false, &w.force)) || (rc = get_engine_data(f, &engine)))
        goto out;
    w.reason = reason;
    if (strcmp(d, "skip_item") == 0) {
        bool reject = false;
        vd_skip_item_map(reason, &reject, &w.reason_code);
        w.event.kind = reject ? VD_EVENT_REJECT_SOURCE : VD_EVENT_DEFER_ITEM;
        w.is_reject = reject;
        w.disposition = reject ? "reject_source" : "defer_item";
        w.cause = "skip_item";
        snprintf(tail, sizeof(tail),
                 "\"deprecated\":true,\"mapped_to\":\"%s\",\"hint\":\"skip_item is deprecated: "
                 "call %s with reason_code '%s' instead%s.\"",
                 w.disposition, w.disposition, w.reason_code,
                 reject ? "" : " (the item stays eligible and is retried later)");
        w.tail = tail;
    } else if ((rc = parse_explicit(f, d, &w))) {
        goto out;
    } else {
        w.disposition = d;
        w.cause = d;
    }
    snprintf(head, sizeof(head), "\"disposition\":\"%s\"", w.disposition);
    w.head = head;
    w.request_json = ctx->body;
    w.actor = ctx->actor;
    w.engine_data = engine;
    if ((rc = vd_ctx_db(ctx, &c)))
        goto out;
    snprintf(what, sizeof(what), "job %lld", (long long)job);
    rc = vd_job_apply(c, ctx->cfg, &w, &ans);
    if (rc == VD_ERR_JOB_FINALIZED)
        vd_fail(ctx, rc, "disposition",
                "%s is already finished with disposition '%s'; a different call cannot replace "
                "it (repeat the identical call to read the stored answer)",
                what, ans.standing);
    else if (rc == VD_ERR_TOOL_FAILURE_PENDING)
        vd_fail(ctx, rc, "disposition",
                "a required tool failed in %s: a tooling failure is not a reason to reject the "
                "source",
                what);
    else if (rc)
        vd_store_fail(ctx, rc, what);
    else
        rc = vd_respond_owned(ctx, ans.body), ans.body = NULL;
out:
    free(engine);
    free(ans.body);
    return rc;
}

vd_error vd_h_job_get(vd_ctx *ctx)
{
    int64_t id = 0;
    char *out = NULL, what[48];
    vd_conn *c = NULL;
    vd_error rc = vd_param_id(ctx, 0, "job", &id);
    if (rc || (rc = vd_ctx_db(ctx, &c)))
        return rc;
    snprintf(what, sizeof(what), "job %lld", (long long)id);
    rc = vd_store_job_get(c, id, &out);
    return rc ? vd_store_fail(ctx, rc, what) : vd_respond_owned(ctx, out);
}

static bool valid_since(const char *s)
{
    /* RFC 3339: 2026-01-02T03:04:05Z / +01:00, optional fraction; PostgreSQL checks the rest */
    size_t n = strlen(s);
    if (n < 20 || n > 40 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= '0' && ch <= '9') || strchr("-:T.Z+tz", ch)))
            return false;
    }
    return true;
}

vd_error vd_h_jobs_list(vd_ctx *ctx)
{
    static const char *const statuses[] = {"processing", "completed", "rejected", "deferred",
                                           "failed",     "expired",   NULL};
    const char *fs = vd_query(ctx, "flow_step_id"), *status = vd_query(ctx, "status");
    const char *since = vd_query(ctx, "since");
    int64_t limit = 0, after = 0;
    char *out = NULL;
    vd_conn *c = NULL;
    bool known = false;
    vd_error rc = vd_query_int(ctx, "limit", 1, 500, 100, &limit);
    if (rc || (rc = vd_query_int(ctx, "after", 0, INT64_MAX, 0, &after)))
        return rc;
    for (size_t i = 0; status && statuses[i]; i++)
        known |= strcmp(status, statuses[i]) == 0;
    if (status && !known)
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "status", "'status' is not a job status");
    if (fs && (strlen(fs) < 1 || strlen(fs) > 200))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "flow_step_id",
                       "'flow_step_id' must be 1 to 200 bytes");
    if (since && !valid_since(since))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "since", "'since' must be an RFC 3339 time");
    if ((rc = vd_ctx_db(ctx, &c)))
        return rc;
    rc = vd_store_jobs_list(c, fs, status, since, after, limit, &out);
    return rc ? vd_store_fail(ctx, rc, NULL) : vd_respond_owned(ctx, out);
}
