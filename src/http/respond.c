/* respond.c - building answers: JSON bodies, raw text, and the one error envelope of SPEC §2
 * produced from the error table for every failure. */
#include "http_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/adjudicator.h"
#include "verdict/util.h"

vd_error vd_respond_text(vd_ctx *ctx, int status, const char *ctype, const char *text, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return VD_ERR_INTERNAL;
    memcpy(copy, text, len);
    copy[len] = '\0';
    free(ctx->resp_body);
    ctx->resp_body = copy;
    ctx->resp_ctype = ctype;
    ctx->status = status;
    return VD_OK;
}

vd_error vd_respond_json(vd_ctx *ctx, int status, cJSON *value)
{
    char *text = value ? cJSON_PrintUnformatted(value) : NULL;
    cJSON_Delete(value);
    if (!text)
        return VD_ERR_INTERNAL;
    free(ctx->resp_body);
    ctx->resp_body = text;
    ctx->resp_ctype = "application/json; charset=utf-8";
    ctx->status = status;
    return VD_OK;
}

vd_error vd_fail(vd_ctx *ctx, vd_error err, const char *field, const char *fmt, ...)
{
    char raw[sizeof(ctx->err_message)];
    va_list ap;
    ctx->err = err;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    /* messages echo paths, methods and headers: the JSON envelope must stay valid UTF-8 */
    vd_utf8_scrub(ctx->err_message, sizeof(ctx->err_message), raw);
    vd_utf8_scrub(ctx->err_field, sizeof(ctx->err_field), field ? field : "");
    return err;
}

cJSON *vd_error_envelope(vd_error err, const char *message, const char *field)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddFalseToObject(o, "success");
    cJSON_AddStringToObject(o, "error", vd_error_code(err));
    cJSON_AddStringToObject(o, "message", message && *message ? message : vd_error_code(err));
    cJSON_AddBoolToObject(o, "retryable", vd_error_retryable(err));
    cJSON_AddStringToObject(o, "hint", vd_error_hint(err));
    if (field && *field)
        cJSON_AddStringToObject(o, "field", field);
    return o;
}

cJSON *vd_json_raw(const char *text)
{
    return cJSON_CreateRaw(text && *text ? text : "null");
}

vd_error vd_respond_owned(vd_ctx *ctx, char *json)
{
    free(ctx->resp_body);
    ctx->resp_body = json;
    ctx->resp_ctype = "application/json; charset=utf-8";
    ctx->status = 200;
    return VD_OK;
}

vd_error vd_ctx_db(vd_ctx *ctx, vd_conn **out)
{
    vd_error rc = VD_OK;
    if (!ctx->dbc) {
        rc = vd_db_acquire_until(ctx->db, ctx->deadline, &ctx->dbc);
        if (rc)
            return vd_store_fail(ctx, rc, NULL);
        vd_conn_set_trace(ctx->dbc, ctx->trace.trace_id, ctx->trace.span_id);
    }
    *out = ctx->dbc;
    return VD_OK;
}

const char *vd_store_message(vd_error err, const char *what, char *msg, size_t len)
{
    const char *w = what ? what : "the resource";
    switch (err) {
    case VD_ERR_DATABASE_UNAVAILABLE:
        snprintf(msg, len,
                 "the database is unavailable or did not answer in time; retry the "
                 "same request");
        return NULL;
    case VD_ERR_NOT_FOUND:
        snprintf(msg, len, "%s does not exist", w);
        return NULL;
    case VD_ERR_CLAIM_LOST:
        snprintf(msg, len,
                 "%s no longer holds its item: its lease passed or the item was claimed again, "
                 "or the claim_token is not this job's",
                 w);
        return NULL;
    case VD_ERR_JOB_FINALIZED:
        snprintf(msg, len, "%s is already finished", w);
        return NULL;
    case VD_ERR_IDEMPOTENCY_KEY_REUSED:
        snprintf(msg, len, "this Idempotency-Key was used with a different request body");
        return "Idempotency-Key";
    case VD_ERR_INVALID_FIELD:
        snprintf(msg, len, "a value is out of the range the database accepts");
        return NULL;
    case VD_ERR_MATCH_BUDGET_EXHAUSTED:
        snprintf(msg, len,
                 "matching the session's regexes against its text took more than the budget of "
                 "%d ms; nothing was adjudicated",
                 VD_ADJ_MATCH_BUDGET_MS);
        return "session.expected_output_patterns";
    default:
        snprintf(msg, len, "the request could not be completed (%s)", vd_error_code(err));
        return NULL;
    }
}

vd_error vd_store_fail(vd_ctx *ctx, vd_error err, const char *what)
{
    char msg[sizeof(ctx->err_message)];
    const char *field = vd_store_message(err, what, msg, sizeof(msg));
    return vd_fail(ctx, err, field, "%s", msg);
}
