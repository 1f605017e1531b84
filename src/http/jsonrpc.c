/* jsonrpc.c - JSON-RPC 2.0 messages as the Model Context Protocol uses them (h_mcp.c):
 * classify a message (request, notification, response or invalid) and build results and
 * error responses. Pure functions on cJSON trees; no I/O, no libmicrohttpd. */
#include "http_internal.h"

#include <string.h>

/* A string, or a number that is an integer JSON can carry exactly (|n| <= 2^53). */
static bool valid_id(const cJSON *id)
{
    double d = 0;
    if (cJSON_IsString(id))
        return true;
    if (!cJSON_IsNumber(id))
        return false;
    d = id->valuedouble; /* NaN fails every comparison */
    return d >= -9007199254740992.0 && d <= 9007199254740992.0 && d == (double)(long long)d;
}

static vd_rpc_kind invalid(vd_rpc_msg *out, const char *why)
{
    out->kind = VD_RPC_INVALID;
    out->why = why;
    return VD_RPC_INVALID;
}

vd_rpc_kind vd_rpc_classify(const cJSON *m, vd_rpc_msg *out)
{
    const cJSON *v = NULL, *id = NULL, *method = NULL;
    memset(out, 0, sizeof(*out));
    if (!cJSON_IsObject(m))
        return invalid(out, "a JSON-RPC message must be an object");
    id = cJSON_GetObjectItemCaseSensitive(m, "id");
    if (id && !valid_id(id))
        return invalid(out, "'id' must be a string or an integer (MCP allows no null id)");
    out->id = id;
    v = cJSON_GetObjectItemCaseSensitive(m, "jsonrpc");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, "2.0") != 0)
        return invalid(out, "'jsonrpc' must be \"2.0\"");
    method = cJSON_GetObjectItemCaseSensitive(m, "method");
    if (method) {
        if (!cJSON_IsString(method) || !method->valuestring[0])
            return invalid(out, "'method' must be a non-empty string");
        out->method = method->valuestring;
        out->params = cJSON_GetObjectItemCaseSensitive(m, "params");
        out->kind = id ? VD_RPC_REQUEST : VD_RPC_NOTIFICATION;
        return out->kind;
    }
    if (id && (cJSON_GetObjectItemCaseSensitive(m, "result") ||
               cJSON_GetObjectItemCaseSensitive(m, "error"))) {
        out->kind = VD_RPC_RESPONSE;
        return out->kind;
    }
    return invalid(out, "a JSON-RPC message needs a 'method' (or, as a response, an 'id' and a "
                        "'result' or 'error')");
}

static cJSON *envelope_of(const cJSON *id)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "jsonrpc", "2.0");
    if (id) {
        cJSON *copy = cJSON_Duplicate(id, false);
        if (!copy) {
            cJSON_Delete(o);
            return NULL;
        }
        cJSON_AddItemToObject(o, "id", copy);
    }
    return o;
}

cJSON *vd_rpc_result(const cJSON *id, cJSON *result)
{
    cJSON *o = result ? envelope_of(id) : NULL;
    if (!o) {
        cJSON_Delete(result);
        return NULL;
    }
    cJSON_AddItemToObject(o, "result", result);
    return o;
}

cJSON *vd_rpc_error(const cJSON *id, int code, const char *message, cJSON *data)
{
    cJSON *o = envelope_of(id), *e = NULL;
    if (o)
        e = cJSON_AddObjectToObject(o, "error");
    if (!e) {
        cJSON_Delete(o);
        cJSON_Delete(data);
        return NULL;
    }
    cJSON_AddNumberToObject(e, "code", code);
    cJSON_AddStringToObject(e, "message", message);
    if (data)
        cJSON_AddItemToObject(e, "data", data);
    return o;
}

int vd_rpc_code_of(vd_error err)
{
    if (err == VD_ERR_INVALID_JSON)
        return VD_RPC_PARSE_ERROR;
    if (err == VD_ERR_INTERNAL)
        return VD_RPC_INTERNAL_ERROR;
    return VD_RPC_SERVER_ERROR;
}
