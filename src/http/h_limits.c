/* h_limits.c - flow control over HTTP: PUT/GET/DELETE /v1/limits/{key}, GET /v1/limits, and a
 * provider's backoff on a key (POST /v1/limits/{key}/backoff); also the reading of the
 * `limit_keys` member that items and claims carry. The rules live in SQL
 * (sql/migrations/0032_flow_control.sql); this file only validates and answers. */
#include "http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/store/limits.h"
#include "verdict/redact.h"

vd_error vd_get_limit_keys(vd_field f, char **json)
{
    char name[200], at[240];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(f.obj, "limit_keys");
    int i = 0;
    *json = NULL;
    vd_field_name(f, "limit_keys", name, sizeof(name));
    if (!v || cJSON_IsNull(v))
        return VD_OK;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 || cJSON_GetArraySize(v) > VD_LIMIT_KEYS_MAX)
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, name,
                       "'%s' must be an array of 1 to %d limit keys", name, VD_LIMIT_KEYS_MAX);
    for (const cJSON *k = v->child; k; k = k->next, i++) {
        if (cJSON_IsString(k) && vd_limit_key_valid(k->valuestring))
            continue;
        snprintf(at, sizeof(at), "%s[%d]", name, i);
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, at,
                       "'%s' must be a limit key: 1 to %d bytes of letters, digits and . _ : @ -",
                       at, VD_LIMIT_KEY_MAX);
    }
    *json = cJSON_PrintUnformatted(v);
    return *json ? VD_OK : vd_fail(f.ctx, VD_ERR_INTERNAL, NULL, "out of memory");
}

/* The key of the path. */
static vd_error key_param(vd_ctx *ctx, const char **key)
{
    *key = ctx->match.params[0];
    if (!vd_limit_key_valid(*key))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "key",
                       "the limit key must be 1 to %d bytes of letters, digits and . _ : @ -",
                       VD_LIMIT_KEY_MAX);
    return VD_OK;
}

/* rate: {"per": "second"|"minute"|"hour", "count": N, "burst": B (default N)} or absent. */
static vd_error get_rate(vd_field f, vd_limit_settings *s)
{
    static const vd_member members[] = {
        {"per", VD_J_STRING}, {"count", VD_J_NUMBER}, {"burst", VD_J_NUMBER}};
    static const struct {
        const char *word;
        int64_t seconds;
    } pers[] = {{"second", 1}, {"minute", 60}, {"hour", 3600}};
    const cJSON *rate = NULL;
    const char *per = NULL;
    vd_error rc = vd_get_object(f, "rate", false, &rate);
    vd_field r = {f.ctx, rate, "rate"};
    if (rc || !rate)
        return rc;
    if ((rc = VD_MEMBERS_CHECK(r, members)) || (rc = vd_get_string(r, "per", true, 1, 10, &per)) ||
        (rc = vd_get_int(r, "count", true, 1, 1000000, 1, &s->rate_count)) ||
        (rc = vd_get_int(r, "burst", false, 1, 10000, s->rate_count < 10000 ? s->rate_count : 10000,
                         &s->rate_burst)))
        return rc;
    for (size_t i = 0; i < sizeof(pers) / sizeof(pers[0]); i++) {
        if (strcmp(per, pers[i].word) == 0)
            s->rate_per_seconds = pers[i].seconds;
    }
    if (s->rate_per_seconds == 0)
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, "rate.per",
                       "'rate.per' must be second, minute or hour");
    return VD_OK;
}

vd_error vd_h_limit_put(vd_ctx *ctx)
{
    static const vd_member members[] = {
        {"concurrency", VD_J_NUMBER}, {"rate", VD_J_OBJECT}, {"tokens_per_minute", VD_J_NUMBER}};
    const char *key = NULL;
    const cJSON *body = NULL;
    char *out = NULL;
    vd_conn *c = NULL;
    vd_limit_settings s = {-1, 0, 0, 0, -1};
    vd_error rc = vd_body_object(ctx, &body);
    vd_field f = {ctx, body, NULL};
    if (rc || (rc = key_param(ctx, &key)) || (rc = VD_MEMBERS_CHECK(f, members)) ||
        (rc = vd_get_int(f, "concurrency", false, 0, 10000, -1, &s.concurrency)) ||
        (rc = get_rate(f, &s)) ||
        (rc = vd_get_int(f, "tokens_per_minute", false, 1, 1000000000000LL, -1,
                         &s.tokens_per_minute)) ||
        (rc = vd_ctx_db(ctx, &c)))
        return rc;
    rc = vd_store_limit_put(c, key, &s, &out);
    return rc ? vd_store_fail(ctx, rc, NULL) : vd_respond_owned(ctx, out);
}

/* A call on the one limit the path names (its key), answered with what the store gives. */
static vd_error on_limit(vd_ctx *ctx, vd_error (*op)(vd_conn *, const char *, char **))
{
    const char *key = NULL;
    char *out = NULL, what[300];
    vd_conn *c = NULL;
    vd_error rc = key_param(ctx, &key);
    if (rc || (rc = vd_ctx_db(ctx, &c)))
        return rc;
    snprintf(what, sizeof(what), "limit %s", key);
    rc = op(c, key, &out);
    return rc ? vd_store_fail(ctx, rc, what) : vd_respond_owned(ctx, out);
}

vd_error vd_h_limit_get(vd_ctx *ctx)
{
    return on_limit(ctx, vd_store_limit_get);
}

vd_error vd_h_limits_list(vd_ctx *ctx)
{
    char *out = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_ctx_db(ctx, &c);
    if (rc)
        return rc;
    rc = vd_store_limits_list(c, &out);
    return rc ? vd_store_fail(ctx, rc, NULL) : vd_respond_owned(ctx, out);
}

vd_error vd_h_limit_delete(vd_ctx *ctx)
{
    return on_limit(ctx, vd_store_limit_delete);
}

vd_error vd_h_limit_backoff(vd_ctx *ctx)
{
    static const vd_member members[] = {{"retry_after_seconds", VD_J_NUMBER},
                                        {"reason", VD_J_STRING}};
    const char *key = NULL;
    const cJSON *body = NULL;
    char *out = NULL, *reason = NULL;
    int64_t after = 0;
    vd_conn *c = NULL;
    vd_error rc = vd_body_object(ctx, &body);
    vd_field f = {ctx, body, NULL};
    if (rc || (rc = key_param(ctx, &key)) || (rc = VD_MEMBERS_CHECK(f, members)) ||
        (rc = vd_get_int(f, "retry_after_seconds", false, 1, 604800, 60, &after)) ||
        (rc = vd_get_redacted(f, "reason", false, 1, 500, &reason)) || (rc = vd_ctx_db(ctx, &c))) {
        free(reason);
        return rc;
    }
    rc = vd_store_limit_backoff(c, key, after, reason, &out);
    free(reason);
    return rc ? vd_store_fail(ctx, rc, NULL) : vd_respond_owned(ctx, out);
}

vd_error vd_tool_backoff_parse(vd_field f, vd_tool_backoff *b)
{
    char name[200];
    vd_error rc = vd_get_string(f, "limit_key", false, 1, VD_LIMIT_KEY_MAX, &b->key);
    if (rc == VD_OK && b->key && !vd_limit_key_valid(b->key))
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, vd_field_name(f, "limit_key", name, 200),
                       "'%s' must be a limit key: letters, digits and . _ : @ -", name);
    if (rc == VD_OK) /* a provider's Retry-After of any size: the pause is capped in SQL */
        rc = vd_get_int(f, "retry_after_seconds", false, 0, 604800, 60, &b->retry_after);
    if (b->retry_after < 1)
        b->retry_after = 1;
    return rc;
}

vd_error vd_tool_backoff_apply(vd_ctx *ctx, vd_conn *c, const vd_tool_backoff *b, cJSON *env)
{
    char *out = NULL, hint[280];
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(env, "error");
    char *reason = vd_redact(cJSON_GetStringValue(err)); /* the error, kept as the reason */
    vd_error rc = vd_store_limit_backoff(c, b->key, b->retry_after, reason, &out);
    free(reason);
    if (rc)
        return vd_store_fail(ctx, rc, NULL);
    cJSON *doc = cJSON_Parse(out), *limit = cJSON_DetachItemFromObject(doc, "limit");
    free(out);
    cJSON_Delete(doc);
    if (!limit)
        return vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    cJSON_AddItemToObject(env, "limit", limit);
    /* the model's terms, one next tool, at most 280 bytes */
    snprintf(hint, sizeof(hint),
             "The provider behind '%.60s' is rate-limited: stop calling it. Call defer_item with "
             "reason_code rate_limited; the item is offered again when the limit reopens and no "
             "retry budget is spent.",
             b->key);
    cJSON_ReplaceItemInObjectCaseSensitive(env, "hint", cJSON_CreateString(hint));
    cJSON_ReplaceItemInObjectCaseSensitive(env, "retryable", cJSON_CreateFalse());
    return VD_OK;
}

vd_error vd_get_usage(vd_field f, vd_usage *u)
{
    static const vd_member members[] = {{"input_tokens", VD_J_NUMBER},
                                        {"output_tokens", VD_J_NUMBER},
                                        {"cost_usd", VD_J_NUMBER},
                                        {"model", VD_J_STRING}};
    const cJSON *o = NULL, *cost = NULL;
    char path[200], name[240];
    vd_field g = {f.ctx, NULL, vd_field_name(f, "usage", path, sizeof(path))};
    vd_error rc = vd_get_object(f, "usage", false, &o);
    *u = (vd_usage){false, 0, 0, -1, NULL};
    if (rc || !o)
        return rc;
    g.obj = o;
    if ((rc = VD_MEMBERS_CHECK(g, members)) ||
        (rc = vd_get_int(g, "input_tokens", true, 0, 1000000000, 0, &u->input_tokens)) ||
        (rc = vd_get_int(g, "output_tokens", true, 0, 1000000000, 0, &u->output_tokens)) ||
        (rc = vd_get_string(g, "model", false, 1, 200, &u->model)))
        return rc;
    cost = cJSON_GetObjectItemCaseSensitive(o, "cost_usd");
    if (cost && !cJSON_IsNull(cost)) {
        if (!cJSON_IsNumber(cost) || cost->valuedouble < 0 || cost->valuedouble > 1000000)
            return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, vd_field_name(g, "cost_usd", name, 240),
                           "'%s' must be a number from 0 to 1000000", name);
        u->cost_usd = cost->valuedouble;
    }
    u->given = true;
    return VD_OK;
}

vd_error vd_flow_step_fair_key_parse(vd_field f, const char **key)
{
    vd_error rc = vd_get_string(f, "fair_key", false, 0, 100, key);
    if (rc || !*key)
        return rc;
    for (const char *p = *key; *p; p++)
        if (!strchr("._@-", *p) && !(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
            !(*p >= '0' && *p <= '9'))
            return vd_fail(
                f.ctx, VD_ERR_INVALID_FIELD, "fair_key",
                "'fair_key' must be the name of a limit key (the part before its "
                "':'): up to 100 bytes of letters, digits and . _ @ -, or \"\" for none");
    return VD_OK;
}

vd_error vd_flow_step_budgets_parse(vd_field f, vd_budget_change *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(f.obj, "max_item_cost_usd");
    vd_error rc = vd_get_int(f, "max_item_tokens", false, 0, 1000000000000LL, -1, &b->tokens);
    b->cost_usd = -1;
    if (rc)
        return rc;
    if (v && !cJSON_IsNull(v)) {
        if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1000000)
            return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, "max_item_cost_usd",
                           "'max_item_cost_usd' must be a number from 0 to 1000000");
        b->cost_usd = v->valuedouble;
    }
    b->given = b->tokens >= 0 || b->cost_usd >= 0;
    return VD_OK;
}
