/* json_in.c - request JSON under SPEC §2's rules and typed field access that answers bad
 * input with a 400 naming the field. Strings are checked for UTF-8 and length in bytes;
 * integers must be whole numbers in range. */
#include "http_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/util.h"

/* One pass over the raw text: nesting depth and "\u0000" inside strings. */
static vd_error prescan(const char *s, size_t len, char *msg, size_t msglen)
{
    int depth = 0;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\' && i + 1 < len) {
                if (s[i + 1] == 'u' && i + 5 < len && memcmp(s + i + 2, "0000", 4) == 0) {
                    snprintf(msg, msglen, "\\u0000 is not allowed in strings");
                    return VD_ERR_INVALID_JSON;
                }
                i++;
            } else if (c == '"') {
                in_str = false;
            }
        } else if (c == '"') {
            in_str = true;
        } else if (c == '[' || c == '{') {
            if (++depth > VD_JSON_MAX_DEPTH) {
                snprintf(msg, msglen, "JSON nesting is deeper than %d", VD_JSON_MAX_DEPTH);
                return VD_ERR_INVALID_JSON;
            }
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return VD_OK;
}

vd_error vd_json_parse(const char *body, size_t len, cJSON **out, char *msg, size_t msglen)
{
    const char *end = NULL;
    cJSON *v = NULL;
    vd_error rc = VD_OK;
    *out = NULL;
    if (!vd_utf8_valid(body, len)) {
        snprintf(msg, msglen, "the body is not valid UTF-8");
        return VD_ERR_INVALID_JSON;
    }
    if (memchr(body, '\0', len)) {
        snprintf(msg, msglen, "the body contains a NUL byte");
        return VD_ERR_INVALID_JSON;
    }
    rc = prescan(body, len, msg, msglen);
    if (rc)
        return rc;
    v = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!v) {
        /* cJSON points `end` at the failure (its global error pointer is not thread-safe) */
        long off = end && end >= body && end <= body + len ? (long)(end - body) : -1;
        snprintf(msg, msglen, "malformed JSON near byte %ld", off);
        return VD_ERR_INVALID_JSON;
    }
    for (; end && end < body + len; end++) {
        if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r') {
            cJSON_Delete(v);
            snprintf(msg, msglen, "unexpected bytes after the JSON value at byte %ld",
                     (long)(end - body));
            return VD_ERR_INVALID_JSON;
        }
    }
    *out = v;
    return VD_OK;
}

const char *vd_field_name(vd_field f, const char *key, char *buf, size_t len)
{
    if (f.path && *f.path)
        snprintf(buf, len, "%s.%s", f.path, key);
    else
        snprintf(buf, len, "%s", key);
    return buf;
}

vd_error vd_get_string(vd_field f, const char *key, bool required, size_t min, size_t max,
                       const char **out)
{
    char name[200];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(f.obj, key);
    size_t len = 0;
    *out = NULL;
    if (!v || cJSON_IsNull(v)) {
        if (required)
            return vd_fail(f.ctx, VD_ERR_MISSING_FIELD, vd_field_name(f, key, name, sizeof(name)),
                           "'%s' is required", vd_field_name(f, key, name, sizeof(name)));
        return VD_OK;
    }
    vd_field_name(f, key, name, sizeof(name));
    if (!cJSON_IsString(v))
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, name, "'%s' must be a string", name);
    len = strlen(v->valuestring);
    if (len < min || len > max)
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, name, "'%s' must be %zu to %zu bytes long",
                       name, min, max);
    *out = v->valuestring;
    return VD_OK;
}

vd_error vd_get_int(vd_field f, const char *key, bool required, int64_t min, int64_t max,
                    int64_t def, int64_t *out)
{
    char name[200];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(f.obj, key);
    double d = 0;
    *out = def;
    vd_field_name(f, key, name, sizeof(name));
    if (!v || cJSON_IsNull(v)) {
        if (required)
            return vd_fail(f.ctx, VD_ERR_MISSING_FIELD, name, "'%s' is required", name);
        return VD_OK;
    }
    if (!cJSON_IsNumber(v))
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, name, "'%s' must be an integer", name);
    d = v->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < (double)min || d > (double)max)
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, name,
                       "'%s' must be a whole number from %lld to %lld", name, (long long)min,
                       (long long)max);
    *out = (int64_t)d;
    return VD_OK;
}

vd_error vd_get_bool(vd_field f, const char *key, bool def, bool *out)
{
    char name[200];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(f.obj, key);
    *out = def;
    if (!v || cJSON_IsNull(v))
        return VD_OK;
    if (!cJSON_IsBool(v)) {
        vd_field_name(f, key, name, sizeof(name));
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, name, "'%s' must be true or false", name);
    }
    *out = cJSON_IsTrue(v);
    return VD_OK;
}

vd_error vd_get_object(vd_field f, const char *key, bool required, const cJSON **out)
{
    char name[200];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(f.obj, key);
    *out = NULL;
    vd_field_name(f, key, name, sizeof(name));
    if (!v || cJSON_IsNull(v)) {
        if (required)
            return vd_fail(f.ctx, VD_ERR_MISSING_FIELD, name, "'%s' is required", name);
        return VD_OK;
    }
    if (!cJSON_IsObject(v))
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, name, "'%s' must be an object", name);
    *out = v;
    return VD_OK;
}

vd_error vd_body_object(vd_ctx *ctx, const cJSON **out)
{
    static const cJSON empty = {.type = cJSON_Object};
    *out = &empty;
    if (!ctx->json)
        return VD_OK;
    if (!cJSON_IsObject(ctx->json))
        return vd_fail(ctx, VD_ERR_INVALID_JSON, NULL, "the body must be a JSON object");
    *out = ctx->json;
    return VD_OK;
}

vd_error vd_param_id(vd_ctx *ctx, int i, const char *what, int64_t *out)
{
    const char *s = ctx->match.params[i];
    char *end = NULL;
    long long v = 0;
    if (*s >= '0' && *s <= '9' && strlen(s) <= 18)
        v = strtoll(s, &end, 10);
    if (!end || *end != '\0' || v <= 0)
        return vd_fail(ctx, VD_ERR_NOT_FOUND, NULL, "%s '%s' does not exist", what, s);
    *out = v;
    return VD_OK;
}

const char *vd_query(vd_ctx *ctx, const char *key)
{
    return MHD_lookup_connection_value(ctx->conn, MHD_GET_ARGUMENT_KIND, key);
}

vd_error vd_query_int(vd_ctx *ctx, const char *key, int64_t min, int64_t max, int64_t def,
                      int64_t *out)
{
    const char *s = vd_query(ctx, key);
    char *end = NULL;
    long long v = 0;
    *out = def;
    if (!s || !*s)
        return VD_OK;
    v = strtoll(s, &end, 10);
    if (*end != '\0' || v < min || v > max || strlen(s) > 19)
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, key,
                       "query argument '%s' must be a whole number from %lld to %lld", key,
                       (long long)min, (long long)max);
    *out = v;
    return VD_OK;
}

vd_error vd_query_str(vd_ctx *ctx, const char *key, size_t max, const char **out)
{
    const char *s = vd_query(ctx, key);
    *out = s;
    if (s && (strlen(s) < 1 || strlen(s) > max || !vd_utf8_valid(s, strlen(s))))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, key,
                       "query argument '%s' must be 1 to %zu bytes of UTF-8", key, max);
    return VD_OK;
}

vd_error vd_query_order(vd_ctx *ctx, bool *desc)
{
    const char *s = vd_query(ctx, "order");
    *desc = s && strcmp(s, "desc") == 0;
    if (s && !*desc && strcmp(s, "asc") != 0)
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "order", "'order' must be asc or desc");
    return VD_OK;
}

vd_error vd_idempotency_key(vd_ctx *ctx, const char **key)
{
    const char *k = MHD_lookup_connection_value(ctx->conn, MHD_HEADER_KIND, "Idempotency-Key");
    *key = NULL;
    if (!k)
        return VD_OK;
    if (strlen(k) < 1 || strlen(k) > 255 || !vd_utf8_valid(k, strlen(k)))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "Idempotency-Key",
                       "the Idempotency-Key header must be 1 to 255 bytes");
    *key = k;
    return VD_OK;
}

bool vd_is_uuid(const char *s)
{
    static const char shape[] = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";
    if (strlen(s) != sizeof(shape) - 1)
        return false;
    for (size_t i = 0; shape[i]; i++) {
        char c = s[i];
        bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        if (shape[i] == '-' ? c != '-' : !hex)
            return false;
    }
    return true;
}

vd_error vd_get_token(vd_field f, const char **out)
{
    char name[200];
    vd_error rc = vd_get_string(f, "claim_token", true, 1, 64, out);
    if (rc)
        return rc;
    if (!vd_is_uuid(*out))
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD,
                       vd_field_name(f, "claim_token", name, sizeof(name)),
                       "'%s' must be the UUID returned by the claim", name);
    return VD_OK;
}
