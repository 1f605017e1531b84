/* h_items.c - SPEC §3: register items (batch, idempotent), look them up, read one with its
 * transitions, list them; the flow-step pause switch. Input is validated whole before
 * anything is written: one bad item rejects the batch with `field` naming it. */
#include "http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/store.h"
#include "verdict/store/flow_steps.h"
#include "verdict/store/idempotency.h"
#include "verdict/store/items.h"
#include "verdict/store/limits.h"

#define MAX_BATCH 1000
#define MAX_PAYLOAD 65536

/* Validate items[i] and append its normalised form (every default filled) to batch. */
static vd_error normalise_item(vd_ctx *ctx, const cJSON *in, int i, cJSON *batch)
{
    static const vd_member members[] = {
        {"flow_step_id", VD_J_STRING},    {"source_type", VD_J_STRING},
        {"item_identifier", VD_J_STRING}, {"payload", VD_J_OBJECT},
        {"priority", VD_J_NUMBER},        {"delay_seconds", VD_J_NUMBER},
        {"max_attempts", VD_J_NUMBER},    {"max_defers", VD_J_NUMBER},
        {"limit_keys", VD_J_ARRAY}};
    char path[32];
    const char *fs = NULL, *st = NULL, *ident = NULL;
    const cJSON *payload = NULL;
    char *keys = NULL;
    int64_t prio = 0, delay = 0, maxa = 0, maxd = 0;
    vd_error rc;
    snprintf(path, sizeof(path), "items[%d]", i);
    vd_field f = {ctx, in, path};
    if (!cJSON_IsObject(in))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, path, "'%s' must be an object", path);
    if ((rc = VD_MEMBERS_CHECK(f, members)) ||
        (rc = vd_get_string(f, "flow_step_id", true, 1, 200, &fs)) ||
        (rc = vd_get_string(f, "source_type", true, 1, 100, &st)) ||
        (rc = vd_get_string(f, "item_identifier", true, 1, 2000, &ident)) ||
        (rc = vd_get_object(f, "payload", false, &payload)) ||
        (rc = vd_get_int(f, "priority", false, VD_PRIORITY_MIN, VD_PRIORITY_MAX, 0, &prio)) ||
        (rc = vd_get_int(f, "delay_seconds", false, 0, 604800, 0, &delay)) ||
        (rc = vd_get_int(f, "max_attempts", false, 1, 100, ctx->cfg->max_attempts, &maxa)) ||
        (rc = vd_get_int(f, "max_defers", false, 1, 100, ctx->cfg->max_defers, &maxd)) ||
        (rc = vd_get_limit_keys(f, &keys)))
        return rc;
    if (payload) {
        char *text = cJSON_PrintUnformatted(payload);
        size_t len = text ? strlen(text) : 0;
        free(text);
        char name[64];
        if (len > MAX_PAYLOAD) {
            free(keys);
            return vd_fail(ctx, VD_ERR_INVALID_FIELD,
                           vd_field_name(f, "payload", name, sizeof(name)),
                           "'%s' is larger than 64 KiB serialised", name);
        }
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "ord", i);
    cJSON_AddStringToObject(o, "flow_step_id", fs);
    cJSON_AddStringToObject(o, "source_type", st);
    cJSON_AddStringToObject(o, "item_identifier", ident);
    if (payload)
        cJSON_AddItemToObject(o, "payload", cJSON_Duplicate(payload, true));
    cJSON_AddNumberToObject(o, "priority", (double)prio);
    cJSON_AddNumberToObject(o, "delay_seconds", (double)delay);
    cJSON_AddNumberToObject(o, "max_attempts", (double)maxa);
    cJSON_AddNumberToObject(o, "max_defers", (double)maxd);
    if (keys) /* limit keys: the flow step is claimed with limits
                 (sql/migrations/0032_flow_control.sql) */
        cJSON_AddItemToObject(o, "limit_keys", cJSON_Parse(keys));
    free(keys);
    cJSON_AddItemToArray(batch, o);
    return VD_OK;
}

static vd_error items_batch(vd_ctx *ctx, char **batch_text)
{
    static const vd_member members[] = {{"items", VD_J_ARRAY}};
    const cJSON *body = NULL, *items = NULL;
    cJSON *batch = NULL;
    vd_error rc = vd_body_object(ctx, &body);
    *batch_text = NULL;
    if (rc || (rc = VD_MEMBERS_CHECK(((vd_field){ctx, body, NULL}), members)))
        return rc;
    items = cJSON_GetObjectItemCaseSensitive(body, "items");
    if (!items)
        return vd_fail(ctx, VD_ERR_MISSING_FIELD, "items", "'items' is required");
    int n = cJSON_GetArraySize(items);
    if (!cJSON_IsArray(items) || n < 1 || n > MAX_BATCH)
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "items",
                       "'items' must be an array of 1 to %d items", MAX_BATCH);
    batch = cJSON_CreateArray();
    int i = 0;
    for (const cJSON *it = items->child; it && rc == VD_OK; it = it->next, i++)
        rc = normalise_item(ctx, it, i, batch);
    if (rc == VD_OK)
        *batch_text = cJSON_PrintUnformatted(batch);
    if (rc == VD_OK && !*batch_text)
        rc = vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    cJSON_Delete(batch);
    return rc;
}

vd_error vd_h_items_register(vd_ctx *ctx)
{
    char *batch = NULL;
    const char *key = NULL;
    vd_conn *c = NULL;
    vd_reply reply = {0};
    vd_error rc = vd_idempotency_key(ctx, &key);
    if (rc || (rc = items_batch(ctx, &batch)) || (rc = vd_ctx_db(ctx, &c)))
        goto out;
    vd_idem idem = {"items.register", ctx->actor, key, ctx->body};
    rc = vd_store_items_register(c, batch, ctx->actor, &idem, &reply);
    if (rc) {
        vd_store_fail(ctx, rc, NULL);
        goto out;
    }
    ctx->idempotent_replayed = reply.replayed;
    rc = vd_respond_owned(ctx, reply.body);
    reply.body = NULL;
out:
    free(batch);
    free(reply.body);
    return rc;
}

vd_error vd_h_items_lookup(vd_ctx *ctx)
{
    static const vd_member members[] = {{"flow_step_id", VD_J_STRING},
                                        {"source_type", VD_J_STRING},
                                        {"item_identifiers", VD_J_ARRAY}};
    const cJSON *body = NULL, *ids = NULL;
    const char *fs = NULL, *st = NULL;
    char *ids_text = NULL, *out = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_body_object(ctx, &body);
    vd_field f = {ctx, body, NULL};
    if (rc || (rc = VD_MEMBERS_CHECK(f, members)) ||
        (rc = vd_get_string(f, "flow_step_id", true, 1, 200, &fs)) ||
        (rc = vd_get_string(f, "source_type", true, 1, 100, &st)))
        return rc;
    ids = cJSON_GetObjectItemCaseSensitive(body, "item_identifiers");
    if (!ids)
        return vd_fail(ctx, VD_ERR_MISSING_FIELD, "item_identifiers",
                       "'item_identifiers' is required");
    if (!cJSON_IsArray(ids) || cJSON_GetArraySize(ids) > MAX_BATCH)
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "item_identifiers",
                       "'item_identifiers' must be an array of at most %d strings", MAX_BATCH);
    int i = 0;
    for (const cJSON *it = ids->child; it; it = it->next, i++) {
        size_t len = cJSON_IsString(it) ? strlen(it->valuestring) : 0;
        if (len < 1 || len > 2000) {
            char name[40];
            snprintf(name, sizeof(name), "item_identifiers[%d]", i);
            return vd_fail(ctx, VD_ERR_INVALID_FIELD, name,
                           "'%s' must be a string of 1 to 2000 bytes", name);
        }
    }
    ids_text = cJSON_PrintUnformatted(ids);
    if (!ids_text)
        return vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    if ((rc = vd_ctx_db(ctx, &c)) == VD_OK) {
        rc = vd_store_items_lookup(c, fs, st, ids_text, &out);
        rc = rc ? vd_store_fail(ctx, rc, NULL) : vd_respond_owned(ctx, out);
    }
    free(ids_text);
    return rc;
}

vd_error vd_h_item_get(vd_ctx *ctx)
{
    int64_t id = 0;
    char *out = NULL, what[48];
    vd_conn *c = NULL;
    vd_error rc = vd_param_id(ctx, 0, "item", &id);
    if (rc || (rc = vd_ctx_db(ctx, &c)))
        return rc;
    snprintf(what, sizeof(what), "item %lld", (long long)id);
    rc = vd_store_item_get(c, id, &out);
    return rc ? vd_store_fail(ctx, rc, what) : vd_respond_owned(ctx, out);
}

vd_error vd_h_items_list(vd_ctx *ctx)
{
    vd_list_filter f = {0};
    char *out = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_query_int(ctx, "limit", 1, 500, 100, &f.limit);
    if (rc || (rc = vd_query_int(ctx, "after", 0, INT64_MAX, 0, &f.after)) ||
        (rc = vd_query_str(ctx, "flow_step_id", 200, &f.flow_step_id)) ||
        (rc = vd_query_str(ctx, "reason_code", 200, &f.reason_code)) ||
        (rc = vd_query_str(ctx, "worker_id", 200, &f.worker_id)) ||
        (rc = vd_query_str(ctx, "identifier", 2000, &f.identifier)) ||
        (rc = vd_query_str(ctx, "identifier_prefix", 2000, &f.identifier_prefix)) ||
        (rc = vd_query_order(ctx, &f.desc)))
        return rc;
    f.state = vd_query(ctx, "state");
    vd_item_state state = VD_ITEM_AVAILABLE;
    if (f.state && !vd_item_state_parse(f.state, &state))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "state", "'state' is not an item state");
    if ((rc = vd_ctx_db(ctx, &c)))
        return rc;
    rc = vd_store_items_list(c, &f, &out);
    return rc ? vd_store_fail(ctx, rc, NULL) : vd_respond_owned(ctx, out);
}

vd_error vd_h_flow_steps_list(vd_ctx *ctx)
{
    char *out = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_ctx_db(ctx, &c);
    if (rc)
        return rc;
    rc = vd_store_flow_steps_list(c, &out);
    return rc ? vd_store_fail(ctx, rc, NULL) : vd_respond_owned(ctx, out);
}

/* The flow step of the path: 1 to 200 bytes. */
static vd_error flow_step_param(vd_ctx *ctx, const char **fs)
{
    *fs = ctx->match.params[0];
    if (strlen(*fs) < 1 || strlen(*fs) > 200)
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "flow_step_id",
                       "the flow step id must be 1 to 200 bytes");
    return VD_OK;
}

static vd_error set_paused(vd_ctx *ctx, bool paused)
{
    const char *fs = NULL;
    char *out = NULL;
    vd_conn *c = NULL;
    const cJSON *body = NULL;
    vd_error rc = vd_body_object(ctx, &body); /* no body, or {} like every other POST */
    if (rc || (rc = vd_members_check((vd_field){ctx, body, NULL}, NULL, 0)) ||
        (rc = flow_step_param(ctx, &fs)) || (rc = vd_ctx_db(ctx, &c)))
        return rc;
    rc = vd_store_flow_step_set_paused(c, fs, paused, &out);
    return rc ? vd_store_fail(ctx, rc, NULL) : vd_respond_owned(ctx, out);
}

vd_error vd_h_flow_step_pause(vd_ctx *ctx)
{
    return set_paused(ctx, true);
}

vd_error vd_h_flow_step_resume(vd_ctx *ctx)
{
    return set_paused(ctx, false);
}

#define VD_FLOW_STEP_TOOLS_MAX 100

/* One declared tool {"role": "read"|"write", "required": bool} at f, copied into out. */
static vd_error tool_decl(vd_field f, cJSON *out)
{
    static const vd_member members[] = {{"role", VD_J_STRING}, {"required", VD_J_BOOL}};
    static const char *const roles[] = {"read", "write"};
    const char *role = NULL;
    bool required = false;
    char name[240];
    vd_error rc = VD_MEMBERS_CHECK(f, members);
    if (rc || (rc = vd_get_string(f, "role", true, 1, 16, &role)) ||
        (rc = vd_get_bool(f, "required", false, &required)))
        return rc;
    if (strcmp(role, roles[0]) != 0 && strcmp(role, roles[1]) != 0)
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, vd_field_name(f, "role", name, sizeof(name)),
                       "'%s' must be read or write", name);
    cJSON_AddStringToObject(out, "role", role);
    cJSON_AddBoolToObject(out, "required", required);
    return VD_OK;
}

/* "tools": {"<tool>": {role, required}, ...} into *json (malloc'd compact JSON; NULL when the
 * member is absent). */
static vd_error tools_change(vd_ctx *ctx, const cJSON *body, char **json)
{
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(body, "tools"), *t = NULL;
    cJSON *out = NULL;
    vd_error rc = VD_OK;
    *json = NULL;
    if (!tools || cJSON_IsNull(tools))
        return VD_OK;
    if (!cJSON_IsObject(tools) || cJSON_GetArraySize(tools) > VD_FLOW_STEP_TOOLS_MAX)
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "tools",
                       "'tools' must be an object of at most 100 tools, each {\"role\": "
                       "\"read\"|\"write\", \"required\": bool}");
    out = cJSON_CreateObject();
    cJSON_ArrayForEach(t, tools)
    {
        char path[240];
        size_t n = strlen(t->string);
        snprintf(path, sizeof(path), "tools.%.200s", t->string);
        if (n < 1 || n > 200 || !cJSON_IsObject(t))
            rc = vd_fail(ctx, VD_ERR_INVALID_FIELD, path,
                         "'%s' must be an object {\"role\", \"required\"} under a tool name "
                         "of 1 to 200 bytes",
                         path);
        else
            rc = tool_decl((vd_field){ctx, t, path}, cJSON_AddObjectToObject(out, t->string));
        if (rc)
            break;
    }
    *json = rc ? NULL : cJSON_PrintUnformatted(out);
    cJSON_Delete(out);
    return rc ? rc : (*json ? VD_OK : VD_ERR_INTERNAL);
}

/* The settings members of a PATCH body into ch (only those present are changed). */
static vd_error settings_change(vd_field f, vd_flow_step_change *ch)
{
    static const vd_member members[] = {{"incident_min_items", VD_J_NUMBER},
                                        {"incident_window_minutes", VD_J_NUMBER},
                                        {"pause_on_incident", VD_J_BOOL},
                                        {"strict_evidence", VD_J_BOOL},
                                        {"tools", VD_J_OBJECT},
                                        {"max_item_tokens", VD_J_NUMBER},
                                        {"max_item_cost_usd", VD_J_NUMBER},
                                        {"fair_key", VD_J_STRING}};
    int64_t min_items = 0, window = 0;
    vd_error rc = VD_MEMBERS_CHECK(f, members);
    ch->has_min_items = vd_has_member(f, "incident_min_items");
    ch->has_window = vd_has_member(f, "incident_window_minutes");
    ch->has_pause = vd_has_member(f, "pause_on_incident");
    ch->has_strict = vd_has_member(f, "strict_evidence");
    if (rc || (rc = vd_get_int(f, "incident_min_items", false, 1, 1000, 5, &min_items)) ||
        (rc = vd_get_int(f, "incident_window_minutes", false, 1, 1440, 15, &window)) ||
        (rc = vd_get_bool(f, "pause_on_incident", false, &ch->to.pause_on_incident)) ||
        (rc = vd_get_bool(f, "strict_evidence", false, &ch->to.strict_evidence)))
        return rc;
    ch->to.incident_min_items = (int)min_items;
    ch->to.incident_window_minutes = (int)window;
    return VD_OK;
}

vd_error vd_h_flow_step_configure(vd_ctx *ctx)
{
    const char *fs = NULL;
    char *out = NULL;
    vd_conn *c = NULL;
    const cJSON *body = NULL;
    char *tools = NULL;
    vd_flow_step_change ch = {0};
    vd_budget_change b = {0};
    const char *fair = NULL;
    vd_error rc = vd_body_object(ctx, &body);
    vd_field f = {ctx, body, NULL};
    if (rc || (rc = flow_step_param(ctx, &fs)) || (rc = settings_change(f, &ch)) ||
        (rc = vd_flow_step_budgets_parse(f, &b)) || (rc = vd_flow_step_fair_key_parse(f, &fair)) ||
        (rc = tools_change(ctx, body, &tools)) || (rc = vd_ctx_db(ctx, &c))) {
        cJSON_free(tools);
        return rc;
    }
    ch.tools_json = tools;
    /* a fair key first: the answer below shows it (sql/migrations/0037_priority_fairness.sql) */
    rc = fair ? vd_store_flow_step_fair_key(c, fs, fair) : VD_OK;
    if (rc == VD_OK)
        rc = vd_store_flow_step_configure(c, fs, &ch, &out);
    cJSON_free(tools);
    if (rc == VD_OK && b.given) { /* a cost budget (limits.h): the answer shows it */
        free(out);
        rc = vd_store_flow_step_budgets(c, fs, b.tokens, b.cost_usd, &out);
    }
    return rc ? vd_store_fail(ctx, rc, NULL) : vd_respond_owned(ctx, out);
}
