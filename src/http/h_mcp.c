/* h_mcp.c - the MCP endpoint (Model Context Protocol, Streamable HTTP transport): POST /mcp
 * takes JSON-RPC messages from an agent runtime whose session is bound to one claim by the
 * Verdict-Claim header, so the model acts on that job only and never sees its token. Tools
 * are the table of h_tools.c; a tool call goes through the same decoding and service calls as
 * POST /v1/jobs/{id}/disposition and /tool-failures. Stateless: no Mcp-Session-Id (README). */
#include "http_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/buf.h"
#include "verdict/incidents.h"
#include "verdict/model_text.h"
#include "verdict/store.h"
#include "verdict/store/incidents.h"
#include "verdict/store/jobs.h"

#define MCP_OLDEST "2025-03-26" /* the version assumed without a header; it allows batches */
#define MCP_LATEST "2025-11-25"
#define MCP_JOB_URI "verdict://job"
#define MCP_BRIEFING_URI "verdict://job/briefing"

static const char *const mcp_versions[] = {MCP_LATEST, "2025-06-18", MCP_OLDEST, NULL};

/* What one POST is bound to. */
typedef struct mcp_session {
    int64_t job_id;
    char token[VD_UUID_SIZE];
    const char *version; /* this request's protocol version */
} mcp_session;

static const char *header(vd_ctx *ctx, const char *name)
{
    return MHD_lookup_connection_value(ctx->conn, MHD_HEADER_KIND, name);
}

static bool supported(const char *v)
{
    for (size_t i = 0; v && mcp_versions[i]; i++) {
        if (strcmp(v, mcp_versions[i]) == 0)
            return true;
    }
    return false;
}

/* DNS rebinding: a browser's Origin must be this server itself (scheme://Host). */
static bool origin_ok(vd_ctx *ctx)
{
    const char *origin = header(ctx, "Origin"), *host = header(ctx, "Host"), *rest = NULL;
    if (!origin)
        return true;
    if (strncasecmp(origin, "http://", 7) == 0)
        rest = origin + 7;
    else if (strncasecmp(origin, "https://", 8) == 0)
        rest = origin + 8;
    return rest && host && strcasecmp(rest, host) == 0;
}

/* Verdict-Claim: <job_id>:<claim_token> (vd_claim_header_parse). */
static vd_error parse_claim(vd_ctx *ctx, mcp_session *s)
{
    const char *h = header(ctx, "Verdict-Claim");
    if (!h)
        return vd_fail(ctx, VD_ERR_MISSING_FIELD, "Verdict-Claim",
                       "the Verdict-Claim header is required: '<job_id>:<claim_token>' of the "
                       "claim this session works on");
    if (!vd_claim_header_parse(h, &s->job_id, s->token))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "Verdict-Claim",
                       "'Verdict-Claim' must be '<job_id>:<claim_token>' (a positive job id "
                       "of at most 18 digits without leading zeros and the UUID its claim "
                       "returned)");
    return VD_OK;
}

/* The job and its item ({"job","item"} text, caller frees) when the claim is the job's. A
 * token of another job, or no such job: 403. A claim that was lost still passes: its tool
 * calls answer claim_lost. */
static vd_error read_claim(vd_ctx *ctx, const mcp_session *s, char **out)
{
    vd_conn *c = NULL;
    vd_error rc = vd_ctx_db(ctx, &c);
    if (rc)
        return rc;
    rc = vd_store_job_claimed(c, s->job_id, s->token, out);
    if (rc == VD_ERR_NOT_FOUND)
        return vd_fail(ctx, VD_ERR_CLAIM_MISMATCH, "Verdict-Claim",
                       "Verdict-Claim names job %lld with a claim token that is not that job's "
                       "(or no such job): a session acts only on its own claim",
                       (long long)s->job_id);
    return rc ? vd_store_fail(ctx, rc, NULL) : VD_OK;
}

/* The error recorded on ctx by a refused call, as SPEC §2's envelope; ctx is cleared, since
 * the refusal is the tool's answer, not the HTTP request's. */
static cJSON *take_envelope(vd_ctx *ctx)
{
    cJSON *env = vd_error_envelope(ctx->err, ctx->err_message, ctx->err_field);
    ctx->err = VD_OK;
    ctx->err_message[0] = '\0';
    ctx->err_field[0] = '\0';
    return env;
}

/* A CallToolResult: one text block, the structured content (taken) and isError. */
static cJSON *tool_result(const char *text, cJSON *structured, bool is_error)
{
    cJSON *r = cJSON_CreateObject(), *content = cJSON_AddArrayToObject(r, "content");
    cJSON *block = cJSON_CreateObject();
    if (!r || !content || !block || !structured) {
        cJSON_Delete(r);
        cJSON_Delete(block);
        cJSON_Delete(structured);
        return NULL;
    }
    cJSON_AddStringToObject(block, "type", "text");
    cJSON_AddStringToObject(block, "text", text);
    cJSON_AddItemToArray(content, block);
    cJSON_AddItemToObject(r, "structuredContent", structured);
    cJSON_AddBoolToObject(r, "isError", is_error);
    return r;
}

/* The string member `key` of o, or "" (o may be NULL). */
static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* A refused tool call (the error recorded on ctx): isError, SPEC §2's envelope as the
 * structured content (retryable, hint, field) for the client, and the refusal in the model's
 * terms as the text (model_text.h: one next tool, no HTTP, "Stop now." when nothing is left
 * to call). */
static cJSON *refused(vd_ctx *ctx)
{
    char text[4 * VD_MODEL_TEXT_MAX], field[sizeof(ctx->err_field)];
    vd_error code = ctx->err;
    snprintf(field, sizeof(field), "%s", ctx->err_field);
    cJSON *env = take_envelope(ctx);
    vd_model_refusal(code, field, text, sizeof(text));
    return tool_result(text, env, true);
}

/* The model-facing sentence of a disposition's answer: its tool_result.text or hint when the
 * answer has one, else composed from the item's new state. */
static void answer_text(const cJSON *a, char *out, size_t len)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(a, "item");
    const char *state = str_of(item, "state"), *given = NULL;
    vd_item_state st = VD_ITEM_AVAILABLE;
    const char *again = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "replayed"))
                            ? " (This call had been applied already; nothing changed.)"
                            : "";
    given = str_of(cJSON_GetObjectItemCaseSensitive(a, "tool_result"), "text");
    if (!*given)
        given = str_of(a, "hint");
    if (*given)
        snprintf(out, len, "%s", given);
    else if (vd_item_state_parse(state, &st) && st == VD_ITEM_PROCESSED)
        snprintf(out, len, "Done: the item is processed and will not be offered again.%s", again);
    else if (st == VD_ITEM_REJECTED)
        snprintf(out, len, "The source is rejected; the item is closed for good.%s", again);
    else if (st == VD_ITEM_DEFERRED)
        snprintf(out, len,
                 "The item is deferred: it stays eligible and is offered again after %s.%s",
                 str_of(item, "available_at"), again);
    else if (st == VD_ITEM_MANUAL_REVIEW)
        snprintf(out, len, "The item is parked for a person to review.%s", again);
    else
        snprintf(out, len, "Recorded '%s': the item is now %s.%s", str_of(a, "disposition"), state,
                 again);
}

/* A disposition tool: body is the disposition call's body (borrowed). */
static cJSON *call_disposition(vd_ctx *ctx, const mcp_session *s, const cJSON *body)
{
    char *request = cJSON_PrintUnformatted(body), *answer = NULL, text[600];
    cJSON *parsed = NULL;
    vd_error rc = request ? vd_disposition_run(ctx, s->job_id, body, request, NULL, &answer)
                          : vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    free(request);
    if (rc)
        return refused(ctx);
    parsed = cJSON_Parse(answer);
    free(answer);
    if (!parsed)
        return NULL;
    answer_text(parsed, text, sizeof(text));
    return tool_result(text, parsed, false);
}

/* report_tool_failure: SPEC §6's envelope as the structured content, and its tool_result
 * text (the hint in the model's terms) as the text the model reads. A failure that must not
 * be retried (deterministic, or past the loop threshold) is answered as a tool error: the
 * tool refuses the call itself. */
static cJSON *call_tool_failure(vd_ctx *ctx, const mcp_session *s, const cJSON *body)
{
    cJSON *env = NULL;
    char text[1200];
    if (vd_tool_failure_run(ctx, s->job_id, body, &env))
        return refused(ctx);
    snprintf(text, sizeof(text), "%s",
             str_of(cJSON_GetObjectItemCaseSensitive(env, "tool_result"), "text"));
    return tool_result(text, env,
                       !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(env, "retryable")));
}

/* The call's body: the arguments the tool's schema declares (nothing else: the model cannot
 * send force, engine_data or another token), the session's token and the disposition. */
static cJSON *call_body(const vd_agent_tool *t, const mcp_session *s, const cJSON *args)
{
    cJSON *schema = t->schema(), *body = cJSON_CreateObject();
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    for (const cJSON *p = props ? props->child : NULL; p && body; p = p->next) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, p->string);
        if (v)
            cJSON_AddItemToObject(body, p->string, cJSON_Duplicate(v, true));
    }
    cJSON_Delete(schema);
    cJSON_AddStringToObject(body, "claim_token", s->token);
    if (t->disposition)
        cJSON_AddStringToObject(body, "disposition", t->disposition);
    return body;
}

/* The outcome of one request: a result (taken) or a JSON-RPC error. */
typedef struct rpc_out {
    cJSON *result;
    int code;
    char message[300];
    cJSON *data;
} rpc_out;

static void rpc_fail(rpc_out *o, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void rpc_fail(rpc_out *o, int code, const char *fmt, ...)
{
    va_list ap;
    o->code = code;
    va_start(ap, fmt);
    vsnprintf(o->message, sizeof(o->message), fmt, ap);
    va_end(ap);
}

static void tools_call(vd_ctx *ctx, const mcp_session *s, const cJSON *params, rpc_out *o)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
    const vd_agent_tool *t = NULL;
    cJSON *body = NULL;
    if (!cJSON_IsString(name)) {
        rpc_fail(o, VD_RPC_INVALID_PARAMS, "%s", "'params.name' must be a string");
        return;
    }
    t = vd_agent_tool_find(name->valuestring);
    if (!t) {
        rpc_fail(o, VD_RPC_INVALID_PARAMS, "Unknown tool: %.200s", name->valuestring);
        return;
    }
    if (args && !cJSON_IsNull(args) && !cJSON_IsObject(args)) {
        rpc_fail(o, VD_RPC_INVALID_PARAMS, "%s", "'params.arguments' must be an object");
        return;
    }
    body = call_body(t, s, args);
    if (body)
        o->result =
            t->disposition ? call_disposition(ctx, s, body) : call_tool_failure(ctx, s, body);
    cJSON_Delete(body);
    if (!o->result)
        rpc_fail(o, VD_RPC_INTERNAL_ERROR, "%s", "out of memory");
}

/* Whether tools/list offers t, given the claim's record: a lost or finished claim offers no
 * tool; reject_source is withheld while a tooling incident is open in the flow step or after
 * a deterministic failure in the job; complete_item while a write or required tool's failure
 * holds it back. The calls themselves are judged the same either way. */
static bool offered(const vd_agent_tool *t, const vd_mcp_offer *o, bool incident)
{
    if (!o->live)
        return false;
    if (strcmp(t->name, "reject_source") == 0)
        return !incident && !o->deterministic_failure;
    if (strcmp(t->name, "complete_item") == 0)
        return !o->complete_pending;
    return true;
}

static void tools_list(vd_ctx *ctx, const mcp_session *s, rpc_out *out)
{
    vd_mcp_offer o;
    vd_incident_ref inc = {0};
    vd_conn *c = NULL;
    vd_error rc = vd_ctx_db(ctx, &c);
    if (rc == VD_OK)
        rc = vd_store_mcp_offer(c, s->job_id, s->token, &o);
    if (rc == VD_OK && o.live)
        rc = vd_store_incident_open(c, NULL, o.item_id, NULL, &inc);
    if (rc) {
        ctx->err = VD_OK; /* the JSON-RPC error is the answer */
        rpc_fail(out, VD_RPC_INTERNAL_ERROR, "the claim could not be read: %s", vd_error_code(rc));
        return;
    }
    cJSON *r = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(r, "tools");
    for (size_t i = 0; list && i < vd_agent_tool_count; i++) {
        if (offered(&vd_agent_tools[i], &o, inc.id != 0))
            cJSON_AddItemToArray(list, vd_agent_tool_mcp(&vd_agent_tools[i]));
    }
    out->result = r;
}

static cJSON *resources_list(void)
{
    cJSON *r = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(r, "resources");
    cJSON *job = cJSON_CreateObject();
    cJSON_AddStringToObject(job, "uri", MCP_JOB_URI);
    cJSON_AddStringToObject(job, "name", "job");
    cJSON_AddStringToObject(job, "title", "This job and its item");
    cJSON_AddStringToObject(job, "description",
                            "The job this session works on (status, attempt, lease) and its item "
                            "(payload, state, budgets), as JSON.");
    cJSON_AddStringToObject(job, "mimeType", "application/json");
    cJSON_AddItemToArray(list, job);
    cJSON *brief = cJSON_CreateObject();
    cJSON_AddStringToObject(brief, "uri", MCP_BRIEFING_URI);
    cJSON_AddStringToObject(brief, "name", "briefing");
    cJSON_AddStringToObject(brief, "title", "What happened in earlier attempts");
    cJSON_AddStringToObject(brief, "description",
                            "A short summary of this item's earlier attempts (how they ended, "
                            "which tools failed and how), as plain text: read it before you "
                            "decide.");
    cJSON_AddStringToObject(brief, "mimeType", "text/plain");
    cJSON_AddItemToArray(list, brief);
    return r;
}

/* The result of a resources/read: one content of uri with its text. */
static void resource_contents(rpc_out *o, const char *uri, const char *mime, const char *text)
{
    cJSON *c = cJSON_CreateObject();
    o->result = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "uri", uri);
    cJSON_AddStringToObject(c, "mimeType", mime);
    cJSON_AddStringToObject(c, "text", text);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o->result, "contents"), c);
}

/* resources/read of the briefing: the text of GET /v1/jobs/{id}/briefing and, when an editor
 * answered this item's question, the question and the answer in words (a model reading the
 * resource sees no JSON `review`). */
static void read_briefing(vd_ctx *ctx, const mcp_session *s, rpc_out *o)
{
    cJSON *doc = NULL;
    const cJSON *review = NULL;
    vd_buf b = {0};
    if (vd_briefing_run(ctx, s->job_id, &doc)) {
        o->data = take_envelope(ctx);
        rpc_fail(o, VD_RPC_SERVER_ERROR, "%s", str_of(o->data, "message"));
        return;
    }
    vd_buf_printf(&b, "%s", str_of(doc, "briefing"));
    review = cJSON_GetObjectItemCaseSensitive(doc, "review");
    if (cJSON_IsObject(review))
        vd_buf_printf(&b, "\n\nThe question asked: %s\nThe editor's answer (%s, %s): %s",
                      *str_of(review, "question") ? str_of(review, "question") : "(none)",
                      str_of(review, "by"), str_of(review, "at"), str_of(review, "answer"));
    resource_contents(o, MCP_BRIEFING_URI, "text/plain",
                      b.failed || !b.data ? str_of(doc, "briefing") : b.data);
    vd_buf_cleanup(&b);
    cJSON_Delete(doc);
}

static void resources_read(vd_ctx *ctx, const mcp_session *s, const cJSON *params, rpc_out *o)
{
    const cJSON *uri = cJSON_GetObjectItemCaseSensitive(params, "uri");
    char *text = NULL;
    if (!cJSON_IsString(uri)) {
        rpc_fail(o, VD_RPC_INVALID_PARAMS, "%s", "'params.uri' must be a string");
        return;
    }
    if (strcmp(uri->valuestring, MCP_BRIEFING_URI) == 0) {
        read_briefing(ctx, s, o);
        return;
    }
    if (strcmp(uri->valuestring, MCP_JOB_URI) != 0) {
        rpc_fail(o, VD_RPC_RESOURCE_NOT_FOUND, "Resource not found: %.200s", uri->valuestring);
        o->data = cJSON_CreateObject();
        cJSON_AddStringToObject(o->data, "uri", uri->valuestring);
        return;
    }
    if (read_claim(ctx, s, &text)) { /* read again: a tool call before may have changed it */
        o->data = take_envelope(ctx);
        rpc_fail(o, VD_RPC_SERVER_ERROR, "%s", str_of(o->data, "message"));
        return;
    }
    resource_contents(o, MCP_JOB_URI, "application/json", text);
    free(text);
}

static void initialize(const mcp_session *s, const cJSON *params, bool in_batch, rpc_out *o)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
    cJSON *r = NULL, *caps = NULL, *tools = NULL, *res = NULL, *info = NULL;
    char instructions[600];
    if (in_batch) {
        rpc_fail(o, VD_RPC_INVALID_REQUEST, "%s",
                 "initialize must not be part of a JSON-RPC batch");
        return;
    }
    if (!cJSON_IsString(v)) {
        rpc_fail(o, VD_RPC_INVALID_PARAMS, "%s", "'params.protocolVersion' must be a string");
        return;
    }
    r = o->result = cJSON_CreateObject();
    /* the client's version when supported, else the newest this server speaks */
    cJSON_AddStringToObject(r, "protocolVersion",
                            supported(v->valuestring) ? v->valuestring : MCP_LATEST);
    caps = cJSON_AddObjectToObject(r, "capabilities");
    tools = cJSON_AddObjectToObject(caps, "tools");
    cJSON_AddFalseToObject(tools, "listChanged");
    res = cJSON_AddObjectToObject(caps, "resources");
    cJSON_AddFalseToObject(res, "subscribe");
    cJSON_AddFalseToObject(res, "listChanged");
    info = cJSON_AddObjectToObject(r, "serverInfo");
    cJSON_AddStringToObject(info, "name", "verdict");
    cJSON_AddStringToObject(info, "version", VERDICT_VERSION);
    snprintf(instructions, sizeof(instructions),
             "This session works on job %lld only. Read the resource " MCP_JOB_URI
             " for the item (its payload) and the job, and " MCP_BRIEFING_URI
             " for its earlier attempts. When you are done with the item, call "
             "exactly one of complete_item, reject_source, defer_item or fail_item (or "
             "request_review to ask an editor a question). When one of "
             "your other tools fails, call report_tool_failure and follow its hint.",
             (long long)s->job_id);
    cJSON_AddStringToObject(r, "instructions", instructions);
}

/* Answer one request (its id is valid). */
static cJSON *handle_request(vd_ctx *ctx, const mcp_session *s, const vd_rpc_msg *m, bool in_batch)
{
    rpc_out o = {0};
    const char *meth = m->method;
    const cJSON *params = cJSON_IsNull(m->params) ? NULL : m->params;
    if (params && !cJSON_IsObject(params))
        rpc_fail(&o, VD_RPC_INVALID_PARAMS, "%s", "'params' must be an object");
    else if (strcmp(meth, "initialize") == 0)
        initialize(s, params, in_batch, &o);
    else if (strcmp(meth, "ping") == 0)
        o.result = cJSON_CreateObject();
    else if (strcmp(meth, "tools/list") == 0)
        tools_list(ctx, s, &o);
    else if (strcmp(meth, "tools/call") == 0)
        tools_call(ctx, s, params, &o);
    else if (strcmp(meth, "resources/list") == 0)
        o.result = resources_list();
    else if (strcmp(meth, "resources/read") == 0)
        resources_read(ctx, s, params, &o);
    else if (strcmp(meth, "resources/templates/list") == 0) {
        o.result = cJSON_CreateObject();
        cJSON_AddArrayToObject(o.result, "resourceTemplates");
    } else
        rpc_fail(&o, VD_RPC_METHOD_NOT_FOUND, "Method not found: %.200s", meth);
    if (o.result)
        return vd_rpc_result(m->id, o.result);
    if (!o.code)
        rpc_fail(&o, VD_RPC_INTERNAL_ERROR, "%s", "out of memory");
    return vd_rpc_error(m->id, o.code, o.message, o.data);
}

/* One message: *answer is the response (NULL for a notification or a response, which only
 * need the 202); false when out of memory. *invalid tells a malformed message. */
static bool process_one(vd_ctx *ctx, const mcp_session *s, const cJSON *item, bool in_batch,
                        cJSON **answer, bool *invalid)
{
    vd_rpc_msg m;
    vd_rpc_kind k = vd_rpc_classify(item, &m);
    *answer = NULL;
    *invalid = k == VD_RPC_INVALID;
    if (k == VD_RPC_INVALID)
        *answer = vd_rpc_error(m.id, VD_RPC_INVALID_REQUEST, m.why, NULL);
    else if (k == VD_RPC_REQUEST)
        *answer = handle_request(ctx, s, &m, in_batch);
    else
        return true;
    return *answer != NULL;
}

/* A batch (protocol version 2025-03-26 only): the responses in order, NULL when none is
 * due (notifications and responses only); *oom on allocation failure. */
static cJSON *process_batch(vd_ctx *ctx, const mcp_session *s, bool *oom)
{
    cJSON *all = cJSON_CreateArray();
    *oom = all == NULL;
    for (const cJSON *e = ctx->json->child; e && !*oom; e = e->next) {
        cJSON *a = NULL;
        bool invalid = false;
        *oom = !process_one(ctx, s, e, true, &a, &invalid);
        if (a)
            cJSON_AddItemToArray(all, a);
    }
    if (*oom || cJSON_GetArraySize(all) == 0) {
        cJSON_Delete(all);
        return NULL;
    }
    return all;
}

/* Answer a JSON-RPC message (taken) with an HTTP status; 202 with no body when msg is NULL
 * and nothing was due. */
static vd_error respond_rpc(vd_ctx *ctx, int status, cJSON *msg)
{
    if (!msg)
        return vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    if (vd_respond_json(ctx, status, msg))
        return vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    return VD_OK;
}

/* The request's transport checks: Origin, MCP-Protocol-Version, Verdict-Claim. */
static vd_error check_transport(vd_ctx *ctx, mcp_session *s)
{
    const char *v = header(ctx, "MCP-Protocol-Version");
    if (!origin_ok(ctx))
        return vd_fail(ctx, VD_ERR_ORIGIN_FORBIDDEN, "Origin",
                       "Origin '%.200s' is not this server: browsers on other sites may not call "
                       "/mcp (DNS rebinding)",
                       header(ctx, "Origin"));
    if (v && !supported(v))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "MCP-Protocol-Version",
                       "MCP-Protocol-Version '%.40s' is not supported (supported: %s, %s, %s)", v,
                       mcp_versions[0], mcp_versions[1], mcp_versions[2]);
    s->version = v ? v : MCP_OLDEST;
    return parse_claim(ctx, s);
}

vd_error vd_h_mcp(vd_ctx *ctx)
{
    mcp_session s = {0};
    char *claimed = NULL;
    cJSON *out = NULL;
    bool invalid = false, oom = false;
    vd_error rc = check_transport(ctx, &s);
    if (rc)
        return rc;
    if (!ctx->json)
        return vd_fail(ctx, VD_ERR_INVALID_JSON, NULL, "the body must be a JSON-RPC message");
    if (cJSON_IsArray(ctx->json) && strcmp(s.version, MCP_OLDEST) != 0)
        return respond_rpc(ctx, 400,
                           vd_rpc_error(NULL, VD_RPC_INVALID_REQUEST,
                                        "JSON-RPC batches are not part of MCP protocol version "
                                        "2025-06-18 and later: send one message per POST",
                                        NULL));
    if (cJSON_IsArray(ctx->json) && !ctx->json->child)
        return respond_rpc(
            ctx, 400, vd_rpc_error(NULL, VD_RPC_INVALID_REQUEST, "an empty JSON-RPC batch", NULL));
    if ((rc = read_claim(ctx, &s, &claimed)))
        return rc;
    free(claimed);
    if (cJSON_IsArray(ctx->json))
        out = process_batch(ctx, &s, &oom);
    else
        oom = !process_one(ctx, &s, ctx->json, false, &out, &invalid);
    if (oom)
        return vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    if (!out) /* notifications and responses: accepted */
        return vd_respond_text(ctx, 202, NULL, "", 0);
    return respond_rpc(ctx, invalid ? 400 : 200, out);
}

vd_error vd_h_mcp_no_stream(vd_ctx *ctx)
{
    snprintf(ctx->match.allow, sizeof(ctx->match.allow), "POST");
    return vd_fail(ctx, VD_ERR_METHOD_NOT_ALLOWED, NULL,
                   "%s /mcp: this MCP server is stateless: it opens no SSE stream and keeps no "
                   "session to end; send each JSON-RPC message with POST",
                   ctx->method);
}
