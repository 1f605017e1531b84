/* h_outcomes.c - SPEC §6 and §7: tool-failure envelopes, the pure adjudication endpoint, and
 * session outcomes stored on a job (and applied to its item). The adjudicator and the
 * session-outcome rules are the service layer's (service/adjudicator.c, outcomes.c); this
 * file decodes requests and answers. */
#include "http_internal.h"
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/adjudication_codec.h"
#include "verdict/adjudicator.h"
#include "verdict/jobs.h"
#include "verdict/outcomes.h"
#include "verdict/tool_failures.h"
#include "verdict/tool_result.h"

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

/* classification {label, text, final, why} and the failure's template. */
static void add_classification(cJSON *o, const vd_tool_failure_facts *x)
{
    const vd_tool_classification *c = &x->classification;
    cJSON *k = cJSON_AddObjectToObject(o, "classification");
    if (c->label == VD_TOOL_KIND_UNKNOWN)
        cJSON_AddNullToObject(k, "label");
    else
        cJSON_AddStringToObject(k, "label", vd_tool_kind_name(c->label));
    cJSON_AddStringToObject(k, "text", vd_tool_kind_name(c->text));
    cJSON_AddStringToObject(k, "final", vd_tool_kind_name(c->final));
    cJSON_AddStringToObject(k, "why", c->why);
    cJSON_AddNumberToObject(o, "template_id", (double)x->template_id);
    cJSON_AddStringToObject(o, "template", x->template_text);
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
    if (v->incident.id) { /* a tooling incident is open in the flow step (incidents.h) */
        cJSON *inc = cJSON_AddObjectToObject(o, "incident");
        cJSON_AddNumberToObject(inc, "id", (double)v->incident.id);
        cJSON_AddStringToObject(inc, "tool", v->incident.tool);
        cJSON_AddNumberToObject(inc, "items", (double)v->incident.items);
    }
    return o;
}

/* The envelope's tool_result (README "Rejection lint and tool_result"): its hint in the
 * model's terms, never terminal. Read from the envelope as built, whatever set its hint. */
static bool add_tool_result(cJSON *env)
{
    char text[VD_TOOL_RESULT_MAX];
    const cJSON *tool = cJSON_GetObjectItemCaseSensitive(env, "tool");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(env, "kind");
    const cJSON *hint = cJSON_GetObjectItemCaseSensitive(env, "hint");
    bool terminal = vd_tool_result_failure(cJSON_GetStringValue(tool), cJSON_GetStringValue(kind),
                                           cJSON_GetStringValue(hint), text, sizeof(text));
    cJSON *r = cJSON_AddObjectToObject(env, "tool_result");
    return r && cJSON_AddStringToObject(r, "text", text) &&
           cJSON_AddBoolToObject(r, "terminal", terminal);
}

vd_error vd_tool_failure_run(vd_ctx *ctx, int64_t job_id, const cJSON *body, cJSON **out)
{
    const cJSON *args = NULL;
    cJSON *canon = NULL;
    char *args_text = NULL, what[48];
    vd_tool_failure f = {.job_id = job_id};
    vd_tool_backoff tb = {NULL, 0};
    vd_tool_verdict v;
    vd_tool_failure_facts facts;
    vd_conn *c = NULL;
    vd_field fl = {ctx, body, NULL};
    vd_error rc;
    *out = NULL;
    if ((rc = vd_get_token(fl, &f.token)) ||
        (rc = vd_get_string(fl, "tool", true, 1, 200, &f.tool)) ||
        (rc = vd_get_string(fl, "error", true, 1, 16384, &f.error)) ||
        (rc = parse_kind(fl, &f.kind)) || (rc = vd_get_bool(fl, "required", false, &f.required)) ||
        (rc = vd_tool_backoff_parse(fl, &tb)))
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
    rc = vd_tool_failure_record_facts(c, ctx->cfg, &f, &v, &facts);
    if (rc == VD_ERR_JOB_FINALIZED)
        vd_fail(ctx, rc, NULL, "%s is already finished: record tool failures while it runs", what);
    else if (rc)
        vd_store_fail(ctx, rc, what);
    else {
        vd_metrics_observe_tool_failure(vd_tool_kind_name(v.kind), v.retryable);
        if (facts.classification.label != VD_TOOL_KIND_UNKNOWN &&
            facts.classification.label != facts.classification.text)
            vd_metrics_observe_label_disagreement(vd_tool_kind_name(facts.classification.label),
                                                  vd_tool_kind_name(facts.classification.text));
        *out = envelope(&f, &v);
        if (*out)
            add_classification(*out, &facts);
        if (*out && tb.key && (rc = vd_tool_backoff_apply(ctx, c, &tb, *out))) {
            cJSON_Delete(*out);
            *out = NULL;
        } else if (!*out || !add_tool_result(*out)) {
            cJSON_Delete(*out);
            *out = NULL;
            rc = vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
        }
    }
out:
    free(args_text);
    return rc;
}

vd_error vd_h_tool_failure(vd_ctx *ctx)
{
    static const vd_member members[] = {
        {"claim_token", VD_J_STRING}, {"tool", VD_J_STRING},
        {"error", VD_J_STRING},       {"kind", VD_J_STRING},
        {"required", VD_J_BOOL},      {"args", VD_J_ANY},
        {"limit_key", VD_J_STRING},   {"retry_after_seconds", VD_J_NUMBER}};
    const cJSON *body = NULL;
    cJSON *env = NULL;
    int64_t job = 0;
    vd_error rc = vd_param_id(ctx, 0, "job", &job);
    if (rc || (rc = vd_body_object(ctx, &body)) ||
        (rc = VD_MEMBERS_CHECK(((vd_field){ctx, body, NULL}), members)) ||
        (rc = vd_tool_failure_run(ctx, job, body, &env)))
        return rc;
    return vd_respond_json(ctx, 200, env);
}

/* The members of a session report and of its write_behavior; `parsed` is the agent's own
 * result document (its members are read by name, the others are the agent's). */
static const vd_member session_members[] = {{"returncode", VD_J_NUMBER},
                                            {"termination", VD_J_STRING},
                                            {"channel", VD_J_STRING},
                                            {"kill_reason", VD_J_STRING},
                                            {"write_behavior", VD_J_OBJECT},
                                            {"stderr", VD_J_STRING},
                                            {"completion_marker", VD_J_STRING},
                                            {"expected_output_patterns", VD_J_ARRAY},
                                            {"fs_writes_detected", VD_J_BOOL},
                                            {"prior_consecutive_retries", VD_J_NUMBER},
                                            {"max_consecutive_retries", VD_J_NUMBER},
                                            {"stdout", VD_J_STRING},
                                            {"parsed", VD_J_OBJECT}};
static const vd_member write_behavior_members[] = {{"mode", VD_J_STRING},
                                                   {"expected_when", VD_J_ARRAY}};

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
    const cJSON *wb = cJSON_GetObjectItemCaseSensitive(s, "write_behavior");
    if ((rc = VD_MEMBERS_CHECK(((vd_field){ctx, s, "session"}), session_members)) ||
        (cJSON_IsObject(wb) &&
         (rc = VD_MEMBERS_CHECK(((vd_field){ctx, wb, "session.write_behavior"}),
                                write_behavior_members))))
        return rc;
    rc = vd_session_report_from_json(s, ctx->cfg->max_consecutive_retries, r, &field);
    if (rc)
        return vd_fail(ctx, rc, field, "'%s' is %s", field ? field : "session",
                       r->invalid_reason            ? r->invalid_reason
                       : rc == VD_ERR_MISSING_FIELD ? "required (exactly one of stdout, parsed)"
                                                    : "not valid");
    return VD_OK;
}

vd_error vd_h_adjudications(vd_ctx *ctx)
{
    static const vd_member members[] = {{"session", VD_J_OBJECT}};
    const cJSON *body = NULL;
    vd_session_report r;
    vd_adjudication a;
    vd_error rc = vd_body_object(ctx, &body);
    memset(&a, 0, sizeof(a));
    vd_session_report_init(&r);
    if (rc || (rc = VD_MEMBERS_CHECK(((vd_field){ctx, body, NULL}), members)) ||
        (rc = decode_session(ctx, body, &r)))
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

vd_error vd_h_session_outcome(vd_ctx *ctx)
{
    static const vd_member members[] = {
        {"claim_token", VD_J_STRING}, {"apply", VD_J_BOOL}, {"session", VD_J_OBJECT}};
    const cJSON *body = NULL;
    vd_session_report r;
    vd_session_result res = {0};
    vd_session_call call = {.request_json = ctx->body, .actor = ctx->actor, .report = &r};
    vd_conn *c = NULL;
    char what[48];
    vd_error rc = vd_param_id(ctx, 0, "job", &call.job_id);
    vd_session_report_init(&r);
    if (rc || (rc = vd_body_object(ctx, &body)))
        return rc;
    vd_field f = {ctx, body, NULL};
    if ((rc = VD_MEMBERS_CHECK(f, members)) || (rc = vd_get_token(f, &call.token)) ||
        (rc = vd_get_bool(f, "apply", true, &call.apply)) || (rc = decode_session(ctx, body, &r)))
        return rc;
    if ((rc = vd_ctx_db(ctx, &c)))
        goto out;
    snprintf(what, sizeof(what), "job %lld", (long long)call.job_id);
    rc = vd_session_outcome_apply(c, ctx->cfg, &call, &res);
    if (rc == VD_ERR_JOB_FINALIZED)
        vd_fail(ctx, rc, NULL,
                "%s is already finished with disposition '%s'; a different report cannot "
                "replace it",
                what, res.answer.standing);
    else if (rc)
        vd_store_fail(ctx, rc, what);
    else {
        if (res.adjudicated)
            vd_metrics_observe_adjudication(vd_session_outcome_name(res.adj.outcome),
                                            vd_retry_reason_name(res.adj.retry_reason),
                                            vd_content_state_name(res.adj.content_state));
        char *reply = vd_job_reply(NULL, res.answer.kept, res.answer.replayed);
        rc = reply ? vd_respond_owned(ctx, reply)
                   : vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    }
out:
    vd_session_result_cleanup(&res);
    vd_session_report_cleanup(&r);
    return rc;
}
