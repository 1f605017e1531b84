/* limits.c - the store's side of flow control (limits.h): limits per key, a provider's
 * backoff, and the reopening delay of a rate_limited deferral. The claim with limits is in
 * items.c (claim_limited); the rules themselves are SQL (sql/migrations/0032_flow_control.sql). */
#include "store_internal.h"

#include <stdio.h>

#include "verdict/store/limits.h"

bool vd_limit_key_valid(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char ch = s[n];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == ':' || ch == '@' ||
                  ch == '-';
        if (!ok || n >= VD_LIMIT_KEY_MAX)
            return false;
    }
    return n > 0;
}

/* The text of v, or NULL (SQL NULL) when v is "not set" (< 0). */
static const char *opt_i64(int64_t v, vd_i64_text *t)
{
    *t = vd_i64_text_of(v);
    return v >= 0 ? t->s : NULL;
}

vd_error vd_store_limit_put(vd_conn *c, const char *key, const vd_limit_settings *s, char **out)
{
    vd_i64_text t[5];
    bool rate = s->rate_per_seconds > 0;
    const char *p[] = {key,
                       opt_i64(s->concurrency, &t[0]),
                       opt_i64(rate ? s->rate_per_seconds : -1, &t[1]),
                       opt_i64(rate ? s->rate_count : -1, &t[2]),
                       opt_i64(rate ? s->rate_burst : -1, &t[3]),
                       opt_i64(s->tokens_per_minute, &t[4])};
    return vd_sql_first_text(c, VD_SQL_LIMIT_PUT, 6, p, out);
}

vd_error vd_store_limit_get(vd_conn *c, const char *key, char **out)
{
    const char *p[] = {key};
    return vd_sql_first_text(c, VD_SQL_LIMIT_GET, 1, p, out);
}

vd_error vd_store_limits_list(vd_conn *c, char **out)
{
    return vd_sql_first_text(c, VD_SQL_LIMITS_LIST, 0, NULL, out);
}

vd_error vd_store_limit_delete(vd_conn *c, const char *key, char **out)
{
    const char *p[] = {key};
    return vd_sql_first_text(c, VD_SQL_LIMIT_DELETE, 1, p, out);
}

vd_error vd_store_limit_backoff(vd_conn *c, const char *key, int64_t retry_after,
                                const char *reason, char **out)
{
    vd_i64_text a = vd_i64_text_of(retry_after), cap = vd_i64_text_of(VD_LIMIT_BACKOFF_CAP);
    const char *p[] = {key, a.s, reason, cap.s};
    return vd_sql_first_text(c, VD_SQL_LIMIT_BACKOFF, 4, p, out);
}

vd_error vd_store_job_reopen_seconds(vd_conn *c, int64_t job_id, double *seconds)
{
    vd_i64_text j = vd_i64_text_of(job_id);
    const char *p[] = {j.s};
    char *text = NULL;
    vd_error rc = vd_sql_first_text(c, VD_SQL_JOB_REOPEN_SECONDS, 1, p, &text);
    *seconds = 0;
    if (rc == VD_OK && sscanf(text, "%lf", seconds) != 1)
        rc = VD_ERR_INTERNAL;
    free(text);
    return rc;
}

vd_error vd_store_job_usage(vd_conn *c, int64_t job_id, const vd_usage *u, bool *over)
{
    vd_i64_text j = vd_i64_text_of(job_id), in = vd_i64_text_of(u->input_tokens),
                out = vd_i64_text_of(u->output_tokens);
    char cost[64];
    snprintf(cost, sizeof(cost), "%.6f", u->cost_usd);
    const char *p[] = {j.s, in.s, out.s, u->cost_usd >= 0 ? cost : NULL, u->model};
    char *text = NULL;
    vd_error rc = vd_sql_first_text(c, VD_SQL_JOB_USAGE, 5, p, &text);
    *over = rc == VD_OK && strcmp(text, "t") == 0;
    free(text);
    return rc;
}

vd_error vd_store_flow_step_fair_key(vd_conn *c, const char *flow_step_id, const char *fair_key)
{
    const char *p[] = {flow_step_id, fair_key && *fair_key ? fair_key : NULL};
    char *out = NULL;
    vd_error rc = vd_sql_first_text(c, VD_SQL_FLOW_STEP_FAIR_KEY, 2, p, &out);
    free(out);
    return rc;
}

vd_error vd_store_flow_step_budgets(vd_conn *c, const char *flow_step_id, int64_t max_tokens,
                                    double max_cost_usd, char **out)
{
    vd_i64_text t = vd_i64_text_of(max_tokens);
    char cost[64];
    snprintf(cost, sizeof(cost), "%.6f", max_cost_usd);
    const char *p[] = {flow_step_id, max_tokens >= 0 ? t.s : NULL, max_cost_usd >= 0 ? cost : NULL};
    return vd_sql_first_text(c, VD_SQL_FLOW_STEP_BUDGETS, 3, p, out);
}
