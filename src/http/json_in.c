/* json_in.c - request JSON under SPEC §2's rules, checked by the strict scanner
 * (json_scan.h: no duplicate keys, leading zeros, raw control characters or numbers beyond a
 * double), and typed field access that answers bad input with a 400 naming the field.
 * Strings are checked for UTF-8 and length in bytes; integers must be whole numbers in range
 * and exact (at most 2^53 - 1 in magnitude). Also the redaction of free-form trees. */
#include "http_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/json_scan.h"
#include "verdict/util.h"

#include "input.h"

vd_error vd_json_parse(const char *body, size_t len, cJSON **out, char *msg, size_t msglen,
                       char *field, size_t fieldlen)
{
    const char *end = NULL;
    vd_json_problem why;
    cJSON *v = NULL;
    *out = NULL;
    if (fieldlen > 0)
        field[0] = '\0';
    if (!vd_utf8_valid(body, len)) {
        snprintf(msg, msglen, "the body is not valid UTF-8");
        return VD_ERR_INVALID_JSON;
    }
    if (memchr(body, '\0', len)) {
        snprintf(msg, msglen, "the body contains a NUL byte");
        return VD_ERR_INVALID_JSON;
    }
    /* the strict scanner decides what is JSON; cJSON (lenient) only reads what it accepted */
    if (!vd_json_check(body, len, VD_JSON_MAX_DEPTH, VD_JSON_STRICT, &why)) {
        snprintf(msg, msglen, "%s", why.message);
        snprintf(field, fieldlen, "%s", why.field);
        return VD_ERR_INVALID_JSON;
    }
    v = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!v) {
        snprintf(msg, msglen, "out of memory parsing the body");
        return VD_ERR_INTERNAL;
    }
    *out = v;
    return VD_OK;
}

bool vd_json_redact(cJSON *v)
{
    bool ok = true;
    for (cJSON *e = v ? v->child : NULL; e && ok; e = e->next) {
        if (cJSON_IsObject(v) && e->string && !cJSON_IsNull(e) && !cJSON_IsBool(e) &&
            vd_redact_is_secret_key(e->string)) {
            /* a secret's name: its value whatever its type (a boolean is never a secret) */
            /* by name (it copies the key; keys are unique: the scanner refused duplicates) */
            cJSON *mask = cJSON_CreateString(VD_REDACTED);
            ok = mask && cJSON_ReplaceItemInObjectCaseSensitive(v, e->string, mask);
            if (!ok) {
                cJSON_Delete(mask);
                break;
            }
            e = mask; /* e was freed by the replacement */
        } else if (cJSON_IsString(e)) {
            char *clean = vd_redact(e->valuestring);
            ok = clean != NULL;
            if (ok && strcmp(clean, e->valuestring) != 0)
                ok = cJSON_SetValuestring(e, clean) != NULL;
            free(clean);
        } else if (cJSON_IsObject(e) || cJSON_IsArray(e)) {
            ok = vd_json_redact(e);
        }
    }
    return ok;
}

const char *vd_field_name(vd_field f, const char *key, char *buf, size_t len)
{
    if (f.path && *f.path)
        snprintf(buf, len, "%s.%s", f.path, key);
    else
        snprintf(buf, len, "%s", key);
    return buf;
}

vd_error vd_get_redacted(vd_field f, const char *key, bool required, size_t min, size_t max,
                         char **out)
{
    const char *raw = NULL;
    vd_error rc = vd_get_string(f, key, required, min, max, &raw);
    *out = NULL;
    if (rc || !raw)
        return rc;
    *out = vd_redact(raw);
    return *out ? VD_OK : vd_fail(f.ctx, VD_ERR_INTERNAL, NULL, "out of memory");
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
    /* a double holds every integer exactly only up to 2^53: beyond, 9007199254740993 would
     * be read as ...992, another id; such a number is refused, never rounded */
    if (max > VD_JSON_MAX_EXACT)
        max = VD_JSON_MAX_EXACT;
    if (min < -VD_JSON_MAX_EXACT)
        min = -VD_JSON_MAX_EXACT;
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

/* The name of the first type of mask ("a string", ...) and whether v is one of mask's. */
static bool type_ok(const cJSON *v, unsigned mask, const char **want)
{
    static const struct {
        unsigned bit;
        const char *name;
        cJSON_bool (*is)(const cJSON *);
    } types[] = {{VD_J_STRING, "a string", cJSON_IsString},
                 {VD_J_NUMBER, "a number", cJSON_IsNumber},
                 {VD_J_BOOL, "true or false", cJSON_IsBool},
                 {VD_J_OBJECT, "an object", cJSON_IsObject},
                 {VD_J_ARRAY, "an array", cJSON_IsArray}};
    *want = NULL;
    if (cJSON_IsNull(v) && !(mask & VD_J_NOT_NULL))
        return true; /* null means absent (SPEC §2), unless the member says otherwise */
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (!(mask & types[i].bit))
            continue;
        if (types[i].is(v))
            return true;
        if (!*want)
            *want = types[i].name;
    }
    return false;
}

vd_error vd_members_check(vd_field f, const vd_member *table, size_t n)
{
    char name[200];
    const cJSON *m = NULL;
    cJSON_ArrayForEach(m, f.obj)
    {
        const vd_member *d = NULL;
        const char *want = NULL;
        for (size_t i = 0; i < n && !d; i++)
            d = strcmp(m->string, table[i].name) == 0 ? &table[i] : NULL;
        vd_field_name(f, m->string, name, sizeof(name));
        if (!d)
            return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, name,
                           "'%s' is not a member of this request", name);
        if (!type_ok(m, d->types, &want))
            return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, name, "'%s' must be %s%s", name,
                           want ? want : "of another type", cJSON_IsNull(m) ? ", not null" : "");
    }
    return VD_OK;
}

vd_error vd_get_redacted_object(vd_field f, const char *key, size_t max, vd_error too_large,
                                char **out)
{
    char name[200];
    const cJSON *o = NULL;
    cJSON *copy = NULL;
    vd_error rc = vd_get_object(f, key, false, &o);
    *out = NULL;
    if (rc || !o)
        return rc;
    copy = cJSON_Duplicate(o, true);
    if (copy && vd_json_redact(copy))
        *out = cJSON_PrintUnformatted(copy);
    cJSON_Delete(copy);
    if (!*out)
        return vd_fail(f.ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    if (strlen(*out) <= max)
        return VD_OK;
    free(*out);
    *out = NULL;
    vd_field_name(f, key, name, sizeof(name));
    return vd_fail(f.ctx, too_large, name,
                   "'%s' is larger than %zu KiB serialised: keep ids and progress markers in it, "
                   "not content",
                   name, max / 1024);
}

bool vd_has_member(vd_field f, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(f.obj, key);
    return v && !cJSON_IsNull(v);
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
    if (s[0] == '0' || !vd_parse_i64(s, strlen(s), 1, VD_MAX_ID, out))
        return vd_fail(ctx, VD_ERR_NOT_FOUND, NULL, "%s '%s' does not exist", what, s);
    return VD_OK;
}

vd_error vd_target_read(vd_ctx *ctx, const char *noun, vd_target *t)
{
    const cJSON *body = NULL;
    vd_error rc;
    *t = (vd_target){.f = {ctx, NULL, NULL}};
    if ((rc = vd_param_id(ctx, 0, noun, &t->id)) || (rc = vd_body_object(ctx, &body)))
        return rc;
    t->f.obj = body;
    snprintf(t->what, sizeof(t->what), "%s %lld", noun, (long long)t->id);
    return VD_OK;
}

vd_error vd_request_check_path(vd_ctx *ctx)
{
    char shown[200];
    if (!vd_has_control(ctx->path))
        return VD_OK;
    vd_utf8_scrub(shown, sizeof(shown), ctx->path);
    return vd_fail(ctx, VD_ERR_INVALID_PATH, NULL,
                   "the path holds a control byte (0x00-0x1F or 0x7F, here or percent-encoded); "
                   "no id or name contains one: '%s'",
                   shown);
}

/* Whether name is one of the space-separated words of list; its index in *at. */
static bool declared(const char *list, const char *name, size_t *at)
{
    size_t n = strlen(name), i = 0;
    for (const char *p = list; p && *p; i++) {
        size_t len = strcspn(p, " ");
        if (len == n && n > 0 && memcmp(p, name, n) == 0) {
            *at = i;
            return true;
        }
        p += len;
        p += *p == ' ';
    }
    return false;
}

/* What the query check found: the first refused argument and why. */
typedef struct query_scan {
    const char *list;
    uint64_t seen; /* bit i: the i-th declared argument was given */
    const char *bad, *why;
} query_scan;

static enum MHD_Result scan_argument(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    query_scan *q = cls;
    size_t at = 0;
    (void)kind;
    if (vd_has_control(key) || (value && vd_has_control(value)))
        q->why = "holds a control byte (0x00-0x1F or 0x7F, here or percent-encoded)";
    else if (!declared(q->list, key, &at))
        q->why = "is not an argument of this endpoint";
    else if (at < 64 && (q->seen & (1ULL << at)))
        q->why = "is given more than once";
    else if (at < 64)
        q->seen |= 1ULL << at;
    if (q->why)
        q->bad = key;
    return q->why ? MHD_NO : MHD_YES;
}

vd_error vd_request_check_query(vd_ctx *ctx)
{
    char name[100];
    query_scan q = {vd_route_query(ctx->route), 0, NULL, NULL};
    MHD_get_connection_values(ctx->conn, MHD_GET_ARGUMENT_KIND, scan_argument, &q);
    if (!q.bad)
        return VD_OK;
    vd_utf8_scrub(name, sizeof(name), q.bad);
    return vd_fail(ctx, VD_ERR_INVALID_QUERY, name, "query argument '%s' %s (%s takes: %s)", name,
                   q.why, ctx->route ? ctx->route->pattern : ctx->path, q.list ? q.list : "none");
}

const char *vd_query(vd_ctx *ctx, const char *key)
{
    return MHD_lookup_connection_value(ctx->conn, MHD_GET_ARGUMENT_KIND, key);
}

vd_error vd_query_int(vd_ctx *ctx, const char *key, int64_t min, int64_t max, int64_t def,
                      int64_t *out)
{
    const char *s = vd_query(ctx, key);
    *out = def;
    if (!s || !*s)
        return VD_OK;
    if (!vd_parse_i64(s, strlen(s), min, max, out))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, key,
                       "query argument '%s' must be a whole number from %lld to %lld", key,
                       (long long)min, (long long)max);
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
