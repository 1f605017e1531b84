/* h_briefing.c - GET /v1/jobs/{job_id}/briefing: the item's earlier
 * attempts as the store reads them (structured), and the short text the service writes from
 * them (service/briefing.c) for a plugin to put in the model's prompt. Also read by the MCP
 * resource verdict://job/briefing (h_mcp.c). */
#include "http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/briefing.h"
#include "verdict/store.h"
#include "verdict/store/briefing.h"

static const char *str_member(const cJSON *o, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* The tools of one attempt, as the service reads them (strings borrowed from fails). */
static vd_briefing_tool *tools_of(const cJSON *fails, size_t *n)
{
    size_t k = 0;
    const cJSON *f = NULL;
    vd_briefing_tool *t = NULL;
    *n = (size_t)cJSON_GetArraySize(fails);
    t = calloc(*n ? *n : 1, sizeof(*t));
    cJSON_ArrayForEach(f, fails)
    {
        if (t && k < *n)
            t[k++] = (vd_briefing_tool){str_member(f, "tool"), str_member(f, "kind"),
                                        str_member(f, "last_error")};
    }
    return t;
}

/* The text of doc's attempts (malloc'd), or NULL when out of memory. */
static char *render(const cJSON *doc)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "attempts"), *e = NULL;
    size_t n = (size_t)cJSON_GetArraySize(list), k = 0;
    vd_briefing_attempt *a = calloc(n ? n : 1, sizeof(*a));
    bool ok = a != NULL;
    char *text = NULL;
    cJSON_ArrayForEach(e, list)
    {
        if (!ok || k >= n)
            break;
        vd_briefing_attempt *x = &a[k++];
        x->attempt = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "attempt"));
        x->status = str_member(e, "status");
        x->reason_code = str_member(e, "reason_code");
        x->reason = str_member(e, "reason");
        x->tools = tools_of(cJSON_GetObjectItemCaseSensitive(e, "tool_failures"), &x->n_tools);
        ok = x->tools != NULL;
    }
    if (ok)
        text = vd_briefing_render(
            (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(doc, "attempt")), a, k);
    for (size_t i = 0; a && i < k; i++)
        free((void *)a[i].tools);
    free(a);
    return text;
}

/* An editor's answer to this item's question comes first in the text (when it fits the
 * briefing's bound): the model must act on it; `review` holds the words. Takes text. */
static char *with_review(const cJSON *doc, char *text)
{
    static const char lead[] = "An editor answered the question asked about this item: act on "
                               "the answer in `review` (review.answer). ";
    char *out = NULL;
    if (!text || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "review")) ||
        strlen(text) + sizeof(lead) - 1 > VD_BRIEFING_MAX)
        return text;
    out = malloc(strlen(text) + sizeof(lead));
    if (out) {
        memcpy(out, lead, sizeof(lead) - 1);
        memcpy(out + sizeof(lead) - 1, text, strlen(text) + 1);
    }
    free(text);
    return out;
}

vd_error vd_briefing_run(vd_ctx *ctx, int64_t job_id, cJSON **doc)
{
    char *raw = NULL, *text = NULL, what[48];
    cJSON *attempts = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_ctx_db(ctx, &c);
    *doc = NULL;
    if (rc)
        return rc;
    snprintf(what, sizeof(what), "job %lld", (long long)job_id);
    if ((rc = vd_store_briefing(c, job_id, &raw)))
        return vd_store_fail(ctx, rc, what);
    *doc = cJSON_Parse(raw);
    free(raw);
    text = *doc ? with_review(*doc, render(*doc)) : NULL;
    /* the text after the numbers, before the structured attempts */
    attempts = *doc ? cJSON_DetachItemFromObjectCaseSensitive(*doc, "attempts") : NULL;
    if (!text || !attempts || !cJSON_AddStringToObject(*doc, "briefing", text) ||
        !cJSON_AddItemToObject(*doc, "attempts", attempts)) {
        if (attempts && !cJSON_GetObjectItemCaseSensitive(*doc, "attempts"))
            cJSON_Delete(attempts);
        free(text);
        cJSON_Delete(*doc);
        *doc = NULL;
        return vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    }
    free(text);
    return VD_OK;
}

vd_error vd_h_job_briefing(vd_ctx *ctx)
{
    int64_t id = 0;
    cJSON *doc = NULL;
    vd_error rc = vd_param_id(ctx, 0, "job", &id);
    if (rc || (rc = vd_briefing_run(ctx, id, &doc)))
        return rc;
    return vd_respond_json(ctx, 200, doc);
}
