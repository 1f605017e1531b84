/* h_outcomes.c - SPEC §6 and §7: tool-failure envelopes, the pure adjudication endpoint, and
 * session outcomes stored on a job (and applied to its item). The adjudicator itself is the
 * service layer's (service/adjudicator.c); this file decodes, encodes and wires. */
#include "http_internal.h"
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/adjudication_codec.h"
#include "verdict/adjudicator.h"
#include "verdict/jobs.h"
#include "verdict/tool_failures.h"

#define MAX_ARGS 65536

/* A copy of v with object keys sorted (recursively); arrays keep their order. */
static cJSON *canonical(const cJSON *v)
{
    if (cJSON_IsArray(v)) {
        cJSON *a = cJSON_CreateArray();
        for (const cJSON *e = v->child; e; e = e->next)
            cJSON_AddItemToArray(a, canonical(e));
        return a;
    }
    if (!cJSON_IsObject(v))
        return cJSON_Duplicate(v, true);
    size_t n = (size_t)cJSON_GetArraySize(v), k = 0;
    const cJSON **kids = calloc(n ? n : 1, sizeof(*kids));
    cJSON *o = cJSON_CreateObject();
    for (const cJSON *e = v->child; e && kids; e = e->next)
        kids[k++] = e;
    for (size_t i = 1; i < k; i++) { /* insertion sort by key bytes; objects are small */
        const cJSON *x = kids[i];
        size_t j = i;
        for (; j > 0 && strcmp(kids[j - 1]->string, x->string) > 0; j--)
            kids[j] = kids[j - 1];
        kids[j] = x;
    }
    for (size_t i = 0; i < k; i++)
        cJSON_AddItemToObject(o, kids[i]->string, canonical(kids[i]));
    free(kids);
    return o;
}

static vd_error parse_kind(vd_field f, vd_tool_kind *out)
{
    const char *s = NULL;
    vd_error rc = vd_get_string(f, "kind", false, 1, 40, &s);
    *out = VD_TOOL_KIND_UNKNOWN;
    if (rc || !s)
        return rc;
    for (int k = 0; k < VD_TOOL_KIND__MAX; k++) {
        if (strcmp(s, vd_tool_kind_name((vd_tool_kind)k)) == 0) {
            *out = (vd_tool_kind)k;
            return VD_OK;
        }
    }
    return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, "kind",
                   "'kind' must be deterministic, transient or unknown");
}

static cJSON *envelope(const vd_tool_failure *f, const vd_tool_verdict *v)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddFalseToObject(o, "success");
    cJSON_AddStringToObject(o, "error", f->error);
    cJSON_AddBoolToObject(o, "retryable", v->retryable);
    cJSON_AddStringToObject(o, "tool", f->tool);
    cJSON_AddNumberToObject(o, "repeat_count", (double)v->repeat_count);
    cJSON_AddStringToObject(o, "kind", vd_tool_kind_name(v->kind));
    cJSON_AddStringToObject(o, "hint", v->hint);
    return o;
}

vd_error vd_tool_failure_run(vd_ctx *ctx, int64_t job_id, const cJSON *body, cJSON **out)
{
    const cJSON *args = NULL;
    cJSON *canon = NULL;
    char *args_text = NULL, what[48];
    vd_tool_failure f = {.job_id = job_id};
    vd_tool_verdict v;
    vd_conn *c = NULL;
    vd_field fl = {ctx, body, NULL};
    vd_error rc;
    *out = NULL;
    if ((rc = vd_get_token(fl, &f.token)) ||
        (rc = vd_get_string(fl, "tool", true, 1, 200, &f.tool)) ||
        (rc = vd_get_string(fl, "error", true, 1, 16384, &f.error)) ||
        (rc = parse_kind(fl, &f.kind)) || (rc = vd_get_bool(fl, "required", false, &f.required)))
        return rc;
    args = cJSON_GetObjectItemCaseSensitive(body, "args");
    canon = args ? canonical(args) : cJSON_CreateNull();
    /* stored redacted; the same call redacts the same way, so repeats still count */
    args_text = canon && vd_json_redact(canon) ? cJSON_PrintUnformatted(canon) : NULL;
    cJSON_Delete(canon);
    if (!args_text)
        return vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    if (strlen(args_text) > MAX_ARGS) {
        rc = vd_fail(ctx, VD_ERR_INVALID_FIELD, "args", "'args' is larger than 64 KiB serialised");
        goto out;
    }
    f.args = args_text;
    if ((rc = vd_ctx_db(ctx, &c)))
        goto out;
    snprintf(what, sizeof(what), "job %lld", (long long)f.job_id);
    rc = vd_tool_failure_record(c, ctx->cfg, &f, &v);
    if (rc == VD_ERR_JOB_FINALIZED)
        vd_fail(ctx, rc, NULL, "%s is already finished: record tool failures while it runs", what);
    else if (rc)
        vd_store_fail(ctx, rc, what);
    else {
        vd_metrics_observe_tool_failure(vd_tool_kind_name(v.kind), v.retryable);
        *out = envelope(&f, &v);
        if (!*out)
            rc = vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    }
out:
    free(args_text);
    return rc;
}

vd_error vd_h_tool_failure(vd_ctx *ctx)
{
    const cJSON *body = NULL;
    cJSON *env = NULL;
    int64_t job = 0;
    vd_error rc = vd_param_id(ctx, 0, "job", &job);
    if (rc || (rc = vd_body_object(ctx, &body)) || (rc = vd_tool_failure_run(ctx, job, body, &env)))
        return rc;
    return vd_respond_json(ctx, 200, env);
}

/* Decode {"session": {...}} into *r; 400 naming the field otherwise. */
static vd_error decode_session(vd_ctx *ctx, const cJSON *body, vd_session_report *r)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(body, "session");
    const char *field = NULL;
    vd_error rc;
    if (!s || cJSON_IsNull(s))
        return vd_fail(ctx, VD_ERR_MISSING_FIELD, "session", "'session' is required");
    if (!cJSON_IsObject(s))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "session", "'session' must be an object");
    rc = vd_session_report_from_json(s, ctx->cfg->max_consecutive_retries, r, &field);
    if (rc)
        return vd_fail(ctx, rc, field, "'%s' is %s", field ? field : "session",
                       r->invalid_reason ? r->invalid_reason
                       : rc == VD_ERR_MISSING_FIELD ? "required (exactly one of stdout, parsed)"
                                                  : "not valid");
    return VD_OK;
}

vd_error vd_h_adjudications(vd_ctx *ctx)
{
    const cJSON *body = NULL;
    vd_session_report r;
    vd_adjudication a;
    vd_error rc = vd_body_object(ctx, &body);
    memset(&a, 0, sizeof(a));
    vd_session_report_init(&r);
    if (rc || (rc = decode_session(ctx, body, &r)))
        return rc;
    rc = vd_adjudicate(&r, &a);
    if (rc == VD_OK) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "adjudication", vd_adjudication_to_json(&a));
        rc = vd_respond_json(ctx, 200, o);
    } else if (rc == VD_ERR_MATCH_BUDGET_EXHAUSTED) {
        vd_store_fail(ctx, rc, NULL);
    } else {
        vd_fail(ctx, rc, "session", "the session report cannot be adjudicated");
    }
    vd_adjudication_cleanup(&a);
    vd_session_report_cleanup(&r);
    return rc;
}

/* session-outcome.md §6: retriable outcomes in a row before this job, newest first. */
static int prior_retries(const char *adjudications_json)
{
    cJSON *list = cJSON_Parse(adjudications_json);
    int n = 0;
    for (const cJSON *a = list ? list->child : NULL; a; a = a->next) {
        const char *outcome = cJSON_GetStringValue(cJSON_GetObjectItem(a, "outcome"));
        const char *reason = cJSON_GetStringValue(cJSON_GetObjectItem(a, "retry_reason"));
        if (!outcome || !reason || strcmp(reason, "zero_writes") == 0)
            continue; /* neither counts nor stops */
        if (strcmp(outcome, "retriable") == 0 || strcmp(reason, "budget_exhausted") == 0)
            n++;
        else
            break;
    }
    cJSON_Delete(list);
    return n;
}

typedef struct outcome_ctx {
    vd_session_report *report;
    vd_adjudication adj;
    char *adj_text;
} outcome_ctx;

static void outcome_reset(outcome_ctx *o)
{
    vd_adjudication_cleanup(&o->adj);
    free(o->adj_text);
    o->adj_text = NULL;
}

/* Inside the transaction: adjudicate with the item's own history, choose the event. */
static vd_error decide_outcome(vd_conn *c, const vd_job_snapshot *snap, vd_job_write *w,
                               void *arg)
{
    outcome_ctx *o = arg;
    char *prior = NULL;
    vd_error rc = vd_store_prior_adjudications(c, snap->item_id, w->job_id, &prior);
    outcome_reset(o);
    if (rc)
        return rc;
    o->report->prior_consecutive_retries = prior_retries(prior);
    free(prior);
    if ((rc = vd_adjudicate(o->report, &o->adj)))
        return rc;
    cJSON *json = vd_adjudication_to_json(&o->adj);
    o->adj_text = json ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);
    if (!o->adj_text)
        return VD_ERR_INTERNAL;
    w->adjudication = o->adj_text;
    if (o->adj.outcome == VD_SESSION_OUTCOME_SUCCEEDED) {
        w->event.kind = VD_EVENT_SESSION_SUCCEEDED;
        w->reason_code = "success";
    } else if (o->adj.outcome == VD_SESSION_OUTCOME_RETRIABLE) {
        w->event.kind = VD_EVENT_SESSION_RETRIABLE;
        w->reason_code = vd_retry_reason_name(o->adj.retry_reason);
    } else {
        w->event.kind = VD_EVENT_SESSION_FAILED;
        w->reason_code = o->adj.retry_reason == VD_RETRY_REASON_BUDGET_EXHAUSTED
                             ? "budget_exhausted"
                             : vd_subtype_label_name(o->adj.subtype);
    }
    return VD_OK;
}

vd_error vd_h_session_outcome(vd_ctx *ctx)
{
    const cJSON *body = NULL;
    vd_session_report r;
    outcome_ctx o;
    vd_job_write w = {0};
    vd_job_answer ans = {0};
    vd_conn *c = NULL;
    bool apply = true;
    char what[48];
    vd_error rc = vd_param_id(ctx, 0, "job", &w.job_id);
    memset(&o, 0, sizeof(o));
    vd_session_report_init(&r);
    if (rc || (rc = vd_body_object(ctx, &body)))
        return rc;
    vd_field f = {ctx, body, NULL};
    if ((rc = vd_get_token(f, &w.token)) || (rc = vd_get_bool(f, "apply", true, &apply)) ||
        (rc = decode_session(ctx, body, &r)))
        return rc;
    o.report = &r;
    w.request_json = ctx->body;
    w.actor = ctx->actor;
    w.disposition = VD_DISPOSITION_SESSION_OUTCOME;
    w.cause = VD_CAUSE_SESSION_OUTCOME;
    w.decide = decide_outcome;
    w.decide_arg = &o;
    w.record_only = !apply;
    if ((rc = vd_ctx_db(ctx, &c)))
        goto out;
    snprintf(what, sizeof(what), "job %lld", (long long)w.job_id);
    rc = vd_job_apply(c, ctx->cfg, &w, &ans);
    if (rc == VD_ERR_JOB_FINALIZED)
        vd_fail(ctx, rc, NULL,
                "%s is already finished with disposition '%s'; a different report cannot "
                "replace it",
                what, ans.standing);
    else if (rc)
        vd_store_fail(ctx, rc, what);
    else {
        if (!ans.replayed && o.adj_text)
            vd_metrics_observe_adjudication(vd_session_outcome_name(o.adj.outcome),
                                            vd_retry_reason_name(o.adj.retry_reason),
                                            vd_content_state_name(o.adj.content_state));
        char *reply = vd_job_reply(NULL, ans.kept, ans.replayed);
        rc = reply ? vd_respond_owned(ctx, reply)
                   : vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    }
out:
    free(ans.kept);
    outcome_reset(&o);
    vd_session_report_cleanup(&r);
    return rc;
}
