/* h_tools.c - SPEC §5.2: the agent-facing tools (complete_item, reject_source, defer_item,
 * fail_item) as function-calling definitions in OpenAI, Anthropic or MCP form. The argument
 * schemas are built from the same reason-code tables and limits the disposition endpoint
 * validates with; a plugin sends {claim_token, disposition: <mapped>, ...arguments}. */
#include "http_internal.h"

#include <string.h>

typedef struct tool_def {
    const char *name;
    const char *disposition;
    const char *description;
} tool_def;

static const tool_def tools[] = {
    {"complete_item", "complete",
     "Use when the pipeline's output for this item has been written successfully. The item is "
     "marked processed and will not be offered again."},
    {"reject_source", "reject_source",
     "Use when you have judged the source itself not worth processing: irrelevant to the "
     "topic, too thin, a duplicate, spam or low quality. This is a reasoned judgement about "
     "the source's content; the item is closed for good, so state the reason."},
    {"defer_item", "defer_item",
     "Use when you cannot finish this item safely right now: a tool, quality gate, provider or "
     "dependency failed, or your confidence is low. The source stays eligible and the item is "
     "offered again later; set manual_review when a person should look at it first."},
    {"fail_item", "fail",
     "Use when the engine itself failed, for example a required update or upsert tool "
     "returned an error. Report the error text; a retryable failure is retried with backoff."},
};

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

/* The JSON Schema of tool i's arguments. */
static cJSON *schema_of(size_t i)
{
    cJSON *s = cJSON_CreateObject(), *props = NULL, *req = NULL;
    cJSON_AddStringToObject(s, "type", "object");
    props = cJSON_AddObjectToObject(s, "properties");
    req = cJSON_AddArrayToObject(s, "required");
    cJSON_AddFalseToObject(s, "additionalProperties");
    if (i == 1) {
        cJSON_AddItemToObject(props, "reason_code",
                              enum_prop("What is wrong with the source.", vd_reject_codes));
        cJSON_AddItemToObject(props, "reason", string_prop("One line on why.", 0, 2000));
        cJSON_AddItemToArray(req, cJSON_CreateString("reason_code"));
    } else if (i == 2) {
        cJSON_AddItemToObject(props, "reason_code",
                              enum_prop("What stopped you.", vd_defer_codes));
        cJSON_AddItemToObject(props, "reason", string_prop("One line on what failed.", 0, 2000));
        cJSON_AddItemToObject(props, "retry_after_seconds",
                              retry_after_prop("Wait at least this long before the next try."));
        cJSON_AddItemToObject(props, "manual_review",
                              bool_prop("True when a person should look at the item first."));
        cJSON_AddItemToArray(req, cJSON_CreateString("reason_code"));
    } else if (i == 3) {
        cJSON_AddItemToObject(props, "error", string_prop("The error text.", 1, 4000));
        cJSON_AddItemToObject(props, "retryable",
                              bool_prop("False when the same input will always fail."));
        cJSON_AddItemToObject(props, "retry_after_seconds",
                              retry_after_prop("A provider's Retry-After, in seconds."));
        cJSON_AddItemToArray(req, cJSON_CreateString("error"));
    }
    return s;
}

static cJSON *tool_in_format(size_t i, const char *format)
{
    cJSON *t = cJSON_CreateObject();
    if (strcmp(format, "openai") == 0) {
        cJSON *fn = NULL;
        cJSON_AddStringToObject(t, "type", "function");
        fn = cJSON_AddObjectToObject(t, "function");
        cJSON_AddStringToObject(fn, "name", tools[i].name);
        cJSON_AddStringToObject(fn, "description", tools[i].description);
        cJSON_AddItemToObject(fn, "parameters", schema_of(i));
    } else {
        cJSON_AddStringToObject(t, "name", tools[i].name);
        cJSON_AddStringToObject(t, "description", tools[i].description);
        cJSON_AddItemToObject(t, strcmp(format, "mcp") == 0 ? "inputSchema" : "input_schema",
                              schema_of(i));
    }
    return t;
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
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
        cJSON_AddItemToArray(list, tool_in_format(i, format));
        cJSON_AddStringToObject(map, tools[i].name, tools[i].disposition);
    }
    return vd_respond_json(ctx, 200, o);
}
