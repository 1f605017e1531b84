/* templates.c - the store side of failure templates (templates.h, sql/0030): the templates of
 * one (flow step, shape) under an advisory lock, their save, and the tool-failure row with its
 * template. Every statement is in statements.c. */
#include "store_internal.h"

#include <inttypes.h>
#include <stdio.h>

#include "verdict/templates.h"
#include "verdict/tool_failures.h"

void vd_tpl_rows_cleanup(vd_tpl_rows *r)
{
    for (size_t i = 0; r->text && i < r->n; i++)
        free(r->text[i]);
    free(r->text);
    free(r->id);
    memset(r, 0, sizeof(*r));
}

vd_error vd_store_templates_of_shape(vd_conn *c, const char *flow_step_id, const char *shape,
                                     vd_tpl_rows *out)
{
    const char *p[] = {flow_step_id, shape};
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec_deferred(c, VD_SQL_TEMPLATE_LOCK, 2, p);
    memset(out, 0, sizeof(*out));
    if (rc == VD_OK)
        rc = vd_sql_exec(c, VD_SQL_TEMPLATE_CANDIDATES, 2, p, &res);
    if (rc)
        return rc;
    size_t n = (size_t)PQntuples(res);
    out->id = calloc(n + 1, sizeof(*out->id));
    out->text = calloc(n + 1, sizeof(*out->text));
    for (size_t i = 0; out->id && out->text && i < n; i++, out->n++) {
        out->id[i] = strtoll(PQgetvalue(res, (int)i, 0), NULL, 10);
        out->text[i] = strdup(PQgetvalue(res, (int)i, 1));
        if (!out->text[i])
            break;
    }
    PQclear(res);
    if (out->n != n) {
        vd_tpl_rows_cleanup(out);
        return VD_ERR_INTERNAL;
    }
    return VD_OK;
}

vd_error vd_store_template_save(vd_conn *c, int64_t id, const char *flow_step_id, const char *shape,
                                const char *text, int64_t *out_id)
{
    vd_i64_text ids = vd_i64_text_of(id);
    const char *p[] = {id ? ids.s : NULL, flow_step_id, shape, text};
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, VD_SQL_TEMPLATE_SAVE, 4, p, &res);
    *out_id = 0;
    if (rc)
        return rc;
    if (PQntuples(res) == 1)
        *out_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    else
        rc = VD_ERR_NOT_FOUND; /* the template was deleted under us */
    PQclear(res);
    return rc;
}

vd_error vd_store_tool_failure_count_template(vd_conn *c, int64_t job_id, int64_t template_id,
                                              const char *tool, long *same_tool, long *same_job)
{
    vd_i64_text job = vd_i64_text_of(job_id), tpl = vd_i64_text_of(template_id);
    const char *p[] = {job.s, tpl.s, tool};
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, VD_SQL_TOOL_FAILURE_COUNT_TEMPLATE, 3, p, &res);
    *same_tool = *same_job = 0;
    if (rc)
        return rc;
    *same_tool = strtol(PQgetvalue(res, 0, 0), NULL, 10);
    *same_job = strtol(PQgetvalue(res, 0, 1), NULL, 10);
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
