/* templates.c - the store side of failure templates (templates.h, sql/migrations/0030): the
 * templates of one (flow step, shape) under an advisory lock, their save, and the tool-failure row
 * with its template. Every statement is in statements.c. */
#include "store_internal.h"

#include <inttypes.h>
#include <stdio.h>

#include "verdict/store/templates.h"
#include "verdict/store/tool_failures.h"

void vd_tpl_rows_cleanup(vd_tpl_rows *r)
{
    for (size_t i = 0; r->text && i < r->n; i++)
        free(r->text[i]);
    free(r->text);
    free(r->id);
    free(r->same_tool);
    free(r->same_job);
    free(r->incident);
    memset(r, 0, sizeof(*r));
}

static bool rows_alloc(vd_tpl_rows *r, size_t n)
{
    r->id = calloc(n + 1, sizeof(*r->id));
    r->text = calloc(n + 1, sizeof(*r->text));
    r->same_tool = calloc(n + 1, sizeof(*r->same_tool));
    r->same_job = calloc(n + 1, sizeof(*r->same_job));
    r->incident = calloc(n + 1, sizeof(*r->incident));
    return r->id && r->text && r->same_tool && r->same_job && r->incident;
}

vd_error vd_store_templates_of_shape(vd_conn *c, const char *flow_step_id, const char *shape,
                                     int64_t job_id, const char *tool, vd_tpl_rows *out)
{
    vd_i64_text job = vd_i64_text_of(job_id);
    const char *p[] = {flow_step_id, shape, job.s, tool};
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec_deferred(c, VD_SQL_TEMPLATE_LOCK, 2, p);
    memset(out, 0, sizeof(*out));
    if (rc == VD_OK)
        rc = vd_sql_exec(c, VD_SQL_TEMPLATE_CANDIDATES, 4, p, &res);
    if (rc)
        return rc;
    size_t n = (size_t)PQntuples(res);
    bool ok = rows_alloc(out, n);
    for (size_t i = 0; ok && i < n; i++, out->n++) {
        out->id[i] = strtoll(PQgetvalue(res, (int)i, 0), NULL, 10);
        out->same_tool[i] = strtol(PQgetvalue(res, (int)i, 2), NULL, 10);
        out->same_job[i] = strtol(PQgetvalue(res, (int)i, 3), NULL, 10);
        out->incident[i] = strtoll(PQgetvalue(res, (int)i, 4), NULL, 10);
        out->text[i] = strdup(PQgetvalue(res, (int)i, 1));
        ok = out->text[i] != NULL;
    }
    PQclear(res);
    if (!ok) {
        vd_tpl_rows_cleanup(out);
        return VD_ERR_INTERNAL;
    }
    return VD_OK;
}

vd_error vd_store_template_save(vd_conn *c, int64_t id, bool changed, const char *flow_step_id,
                                const char *shape, const char *text, int64_t *out_id)
{
    vd_i64_text ids = vd_i64_text_of(id);
    const char *up[] = {ids.s, text}, *ins[] = {flow_step_id, shape, text};
    PGresult *res = NULL;
    *out_id = id;
    if (id) /* the failure's insert follows: one round trip for both */
        return changed ? vd_sql_exec_deferred(c, VD_SQL_TEMPLATE_UPDATE, 2, up) : VD_OK;
    vd_error rc = vd_sql_exec(c, VD_SQL_TEMPLATE_INSERT, 3, ins, &res);
    if (rc)
        return rc;
    *out_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return VD_OK;
}

vd_error vd_store_tool_failure_insert_template(vd_conn *c, const vd_tool_failure_row *row,
                                               int64_t *failure_id)
{
    vd_i64_text job = vd_i64_text_of(row->job_id), tpl = vd_i64_text_of(row->template_id);
    const char *p[] = {job.s,
                       row->tool,
                       row->args,
                       row->kind,
                       row->retryable ? "true" : "false",
                       row->required ? "true" : "false",
                       row->error,
                       row->signature,
                       tpl.s,
                       row->counted ? "true" : "false"};
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, VD_SQL_TOOL_FAILURE_INSERT_TEMPLATE, 10, p, &res);
    *failure_id = 0;
    if (rc)
        return rc;
    if (PQntuples(res) == 1)
        *failure_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    else
        rc = VD_ERR_NOT_FOUND;
    PQclear(res);
    return rc;
}

vd_error vd_store_tool_failure_final(vd_conn *c, int64_t failure_id)
{
    vd_i64_text id = vd_i64_text_of(failure_id);
    const char *p[] = {id.s};
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, VD_SQL_TOOL_FAILURE_FINAL, 1, p, &res);
    PQclear(res);
    return rc;
}
