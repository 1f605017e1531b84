/* h_tools.c - SPEC §5.2: the agent-facing tools (complete_item, reject_source, defer_item,
 * fail_item) as function-calling definitions in OpenAI, Anthropic or MCP form, and the one
 * table that both GET /v1/tool-definitions and the MCP endpoint's tools/list (h_mcp.c) read.
 * The argument schemas are built from the same reason-code tables and limits the disposition
 * endpoint validates with; a plugin sends {claim_token, disposition: <mapped>, ...arguments}. */
#include "http_internal.h"

#include <string.h>

#include "verdict/lint.h"
#include "verdict/machine.h"

static cJSON *string_prop(const char *desc, int min, int max)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "string");
    cJSON_AddStringToObject(p, "description", desc);
    if (min > 0)
        cJSON_AddNumberToObject(p, "minLength", min);
    cJSON_AddNumberToObject(p, "maxLength", max);
    return p;
}

static cJSON *enum_prop(const char *desc, const char *const *values)
{
    cJSON *p = cJSON_CreateObject(), *e = cJSON_AddArrayToObject(p, "enum");
    cJSON_AddStringToObject(p, "type", "string");
    cJSON_AddStringToObject(p, "description", desc);
    for (size_t i = 0; values[i]; i++)
        cJSON_AddItemToArray(e, cJSON_CreateString(values[i]));
    return p;
}

static cJSON *retry_after_prop(const char *desc)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "integer");
    cJSON_AddStringToObject(p, "description", desc);
    cJSON_AddNumberToObject(p, "minimum", 0);
    cJSON_AddNumberToObject(p, "maximum", 604800);
    return p;
}

static cJSON *bool_prop(const char *desc)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "boolean");
    cJSON_AddStringToObject(p, "description", desc);
    return p;
}

/* `usage` (the disposition's, limits.h): what the item's model calls used, for the harness
 * that knows it; a model without it leaves it out. */
static cJSON *usage_prop(void)
{
    cJSON *p = cJSON_CreateObject(), *props = NULL, *n = NULL;
    cJSON_AddStringToObject(p, "type", "object");
    cJSON_AddStringToObject(p, "description",
                            "Only when your runtime tells you: the tokens (and cost) this item's "
                            "model calls used. Leave it out otherwise.");
    props = cJSON_AddObjectToObject(p, "properties");
    for (int i = 0; i < 2; i++) {
        n = cJSON_AddObjectToObject(props, i ? "output_tokens" : "input_tokens");
        cJSON_AddStringToObject(n, "type", "integer");
        cJSON_AddNumberToObject(n, "minimum", 0);
        cJSON_AddNumberToObject(n, "maximum", 1e9);
    }
    n = cJSON_AddObjectToObject(props, "cost_usd");
    cJSON_AddStringToObject(n, "type", "number");
    cJSON_AddNumberToObject(n, "minimum", 0);
    cJSON_AddNumberToObject(n, "maximum", 1e6);
    cJSON_AddItemToObject(props, "model", string_prop("The model's name.", 1, 200));
    n = cJSON_AddArrayToObject(p, "required");
    cJSON_AddItemToArray(n, cJSON_CreateString("input_tokens"));
    cJSON_AddItemToArray(n, cJSON_CreateString("output_tokens"));
    cJSON_AddFalseToObject(p, "additionalProperties");
    return p;
}

/* An argument schema with no properties yet: {type: object, properties, required, no others}. */
static cJSON *object_schema(cJSON **props, cJSON **req)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "type", "object");
    *props = cJSON_AddObjectToObject(s, "properties");
    *req = cJSON_AddArrayToObject(s, "required");
    cJSON_AddFalseToObject(s, "additionalProperties");
    return s;
}

/* A disposition tool's schema: its own arguments and `usage`. */
static cJSON *with_usage(cJSON *s)
{
    cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(s, "properties"), "usage", usage_prop());
    return s;
}

static cJSON *schema_complete(void)
{
    cJSON *props = NULL, *req = NULL;
    return with_usage(object_schema(&props, &req));
}

/* reason_code other needs evidence, unless force is true: {if, then} on the schema. */
static void add_other_needs_evidence(cJSON *s)
{
    cJSON *when = cJSON_AddObjectToObject(s, "if"), *then = cJSON_AddObjectToObject(s, "then");
    cJSON *code =
        cJSON_AddObjectToObject(cJSON_AddObjectToObject(when, "properties"), "reason_code");
    cJSON *any = cJSON_AddArrayToObject(then, "anyOf"), *ev = cJSON_CreateObject();
    cJSON *forced = cJSON_CreateObject();
    cJSON_AddStringToObject(code, "const", "other");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(when, "required"),
                         cJSON_CreateString("reason_code"));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(ev, "required"), cJSON_CreateString("evidence"));
    cJSON_AddTrueToObject(
        cJSON_AddObjectToObject(cJSON_AddObjectToObject(forced, "properties"), "force"), "const");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(forced, "required"), cJSON_CreateString("force"));
    cJSON_AddItemToArray(any, ev);
    cJSON_AddItemToArray(any, forced);
}

static cJSON *schema_reject(void)
{
    cJSON *props = NULL, *req = NULL, *s = object_schema(&props, &req);
    cJSON_AddItemToObject(props, "reason_code",
                          enum_prop("What is wrong with the source.", vd_reject_codes));
    cJSON_AddItemToObject(
        props, "reason", string_prop("One line on what is wrong with the source itself.", 0, 2000));
    cJSON_AddItemToObject(props, "evidence",
                          string_prop("A passage quoted verbatim from the item's payload that "
                                      "shows the problem (required with reason_code other, and "
                                      "where the flow step is strict).",
                                      1, VD_EVIDENCE_MAX));
    cJSON_AddItemToObject(props, "force",
                          bool_prop("True to confirm a rejection after a refusal with "
                                    "rejection_suspect, when you are sure the source, not a tool, "
                                    "is the problem."));
    cJSON_AddItemToArray(req, cJSON_CreateString("reason_code"));
    add_other_needs_evidence(s);
    return with_usage(s);
}

static cJSON *schema_defer(void)
{
    cJSON *props = NULL, *req = NULL, *s = object_schema(&props, &req);
    cJSON_AddItemToObject(props, "reason_code", enum_prop("What stopped you.", vd_defer_codes));
    cJSON_AddItemToObject(props, "reason", string_prop("One line on what failed.", 0, 2000));
    cJSON_AddItemToObject(props, "retry_after_seconds",
                          retry_after_prop("Wait at least this long before the next try."));
    cJSON_AddItemToObject(props, "manual_review",
                          bool_prop("True when a person should look at the item first."));
    cJSON_AddItemToArray(req, cJSON_CreateString("reason_code"));
    return with_usage(s);
}

static cJSON *schema_fail(void)
{
    cJSON *props = NULL, *req = NULL, *s = object_schema(&props, &req);
    cJSON_AddItemToObject(props, "error", string_prop("The error text.", 1, 4000));
    cJSON_AddItemToObject(props, "retryable",
                          bool_prop("False when the same input will always fail."));
    cJSON_AddItemToObject(props, "retry_after_seconds",
                          retry_after_prop("A provider's Retry-After, in seconds."));
    cJSON_AddItemToArray(req, cJSON_CreateString("error"));
    return with_usage(s);
}

static cJSON *schema_request_review(void)
{
    cJSON *props = NULL, *req = NULL, *s = object_schema(&props, &req);
    cJSON_AddItemToObject(props, "question",
                          string_prop("The question for the editor, with what they need to "
                                      "answer it (they see the item, not your context).",
                                      1, VD_REVIEW_QUESTION_MAX));
    cJSON_AddItemToArray(req, cJSON_CreateString("question"));
    return s;
}

/* SPEC §6's POST /v1/jobs/{job_id}/tool-failures, as the model reports it (no kind: the
 * error text classifies it). */
static cJSON *schema_tool_failure(void)
{
    cJSON *props = NULL, *req = NULL, *s = object_schema(&props, &req), *args = NULL;
    cJSON_AddItemToObject(props, "tool", string_prop("The name of the tool that failed.", 1, 200));
    args = cJSON_AddObjectToObject(props, "args");
    cJSON_AddStringToObject(args, "description", "The arguments you called it with (any JSON).");
    cJSON_AddItemToObject(props, "error", string_prop("The error the tool returned.", 1, 16384));
    cJSON_AddItemToObject(props, "required",
                          bool_prop("True when this item cannot be finished without that tool."));
    cJSON_AddItemToObject(props, "limit_key",
                          string_prop("When the tool's provider said 429 or overloaded: the limit "
                                      "key of that provider or model (e.g. provider:openai).",
                                      1, 200));
    cJSON_AddItemToObject(props, "retry_after_seconds",
                          retry_after_prop("The provider's Retry-After, in seconds."));
    cJSON_AddItemToArray(req, cJSON_CreateString("tool"));
    cJSON_AddItemToArray(req, cJSON_CreateString("error"));
    return s;
}

/* The descriptions keep model_text.h's rules (at most 280 characters, at most one other tool
 * named; test_model_text walks them). */
const vd_agent_tool vd_agent_tools[] = {
    {"complete_item", "complete",
     "Use when the output for this item has been written successfully by every tool the task "
     "requires. The item is marked processed and will not be offered again.",
     schema_complete, false},
    {"reject_source", "reject_source",
     "Use only when the source itself is unsuitable: irrelevant, too thin, a duplicate, spam or "
     "low quality. It closes the item for good: give the reason and quote the passage that "
     "shows it as evidence. After any tool failure, call defer_item instead.",
     schema_reject, false},
    {"defer_item", "defer_item",
     "Use when you cannot finish this item safely now: a tool, quality gate, provider or "
     "dependency failed, or your confidence is low. The source stays eligible and is offered "
     "again later. After a provider's rate limit, use reason_code rate_limited: no retry "
     "budget is spent.",
     schema_defer, false},
    {"fail_item", "fail",
     "Use when the engine itself failed and the item cannot be processed, for example a "
     "required update or upsert returned an error. Report the error text; a retryable failure "
     "is retried with backoff.",
     schema_fail, false},
    {"request_review", "request_review",
     "Use when a person must decide something before this item can be finished: ask the "
     "editor one clear question. The item waits for the answer and no retry budget is spent; "
     "the next attempt carries the question and the answer. Stop after calling it.",
     schema_request_review, false},
    {"report_tool_failure", NULL,
     "Use when one of your other tools failed: report its name, the arguments you called it "
     "with and the error text. The answer says whether calling it again can work and what to "
     "do next. Set required when the item cannot be finished without that tool.",
     schema_tool_failure, true},
};

const size_t vd_agent_tool_count = sizeof(vd_agent_tools) / sizeof(vd_agent_tools[0]);

const vd_agent_tool *vd_agent_tool_find(const char *name)
{
    for (size_t i = 0; name && i < vd_agent_tool_count; i++) {
        if (strcmp(vd_agent_tools[i].name, name) == 0)
            return &vd_agent_tools[i];
    }
    return NULL;
}

static cJSON *tool_in_format(const vd_agent_tool *t, const char *format)
{
    cJSON *o = cJSON_CreateObject();
    if (strcmp(format, "openai") == 0) {
        cJSON *fn = NULL;
        cJSON_AddStringToObject(o, "type", "function");
        fn = cJSON_AddObjectToObject(o, "function");
        cJSON_AddStringToObject(fn, "name", t->name);
        cJSON_AddStringToObject(fn, "description", t->description);
        cJSON_AddItemToObject(fn, "parameters", t->schema());
    } else {
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddStringToObject(o, "description", t->description);
        cJSON_AddItemToObject(o, strcmp(format, "mcp") == 0 ? "inputSchema" : "input_schema",
                              t->schema());
    }
    return o;
}

cJSON *vd_agent_tool_mcp(const vd_agent_tool *t)
{
    return tool_in_format(t, "mcp");
}

vd_error vd_h_tool_definitions(vd_ctx *ctx)
{
    const char *format = vd_query(ctx, "format");
    cJSON *o = NULL, *list = NULL, *map = NULL;
    if (!format || !*format)
        format = "openai";
    if (strcmp(format, "openai") != 0 && strcmp(format, "anthropic") != 0 &&
        strcmp(format, "mcp") != 0)
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "format",
                       "'format' must be openai, anthropic or mcp");
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "format", format);
    list = cJSON_AddArrayToObject(o, "tools");
    map = cJSON_AddObjectToObject(o, "dispositions");
    for (size_t i = 0; i < vd_agent_tool_count; i++) {
        if (vd_agent_tools[i].mcp_only)
            continue;
        cJSON_AddItemToArray(list, tool_in_format(&vd_agent_tools[i], format));
        cJSON_AddStringToObject(map, vd_agent_tools[i].name, vd_agent_tools[i].disposition);
    }
    return vd_respond_json(ctx, 200, o);
}
