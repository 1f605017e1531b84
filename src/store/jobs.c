/* jobs.c - the store's side of every write on a job: lock the job and its item, finish the
 * job (item, job, transition and the answer kept for replays in one statement, committed in
 * the same round trip). The
 * decisions are the service layer's (service/jobs.c). */
#include "store_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/store_ops.h"

vd_error vd_store_tx(vd_conn *c, vd_store_tx_fn fn, void *arg)
{
    return vd_sql_tx(c, fn, arg);
}

void vd_job_snapshot_cleanup(vd_job_snapshot *s)
{
    free(s->final_response);
    memset(s, 0, sizeof(*s));
}

static void copy_field(char *dst, size_t cap, const PGresult *res, int col)
{
    snprintf(dst, cap, "%s", PQgetvalue(res, 0, col));
}

static bool flag(const PGresult *res, int col)
{
    return strcmp(PQgetvalue(res, 0, col), "t") == 0;
}

vd_error vd_store_job_lock(vd_conn *c, int64_t job_id, const char *token,
                           const char *request_json, vd_job_snapshot *out)
{
    char id[24];
    const char *p[] = {id, token, request_json};
    PGresult *res = NULL;
    vd_error rc;
    memset(out, 0, sizeof(*out));
    snprintf(id, sizeof(id), "%" PRId64, job_id);
    rc = vd_sql_exec(c, VD_SQL_JOB_LOCK, 3, p, &res);
    if (rc)
        return rc;
    if (PQntuples(res) == 1) {
        out->found = true;
        copy_field(out->status, sizeof(out->status), res, 0);
        out->token_ok = flag(res, 1);
        copy_field(out->disposition, sizeof(out->disposition), res, 2);
        out->required_tool_failed = flag(res, 3);
        out->same_request = flag(res, 4);
        if (!PQgetisnull(res, 0, 5) && !(out->final_response = strdup(PQgetvalue(res, 0, 5))))
            rc = VD_ERR_INTERNAL;
        out->item_id = strtoll(PQgetvalue(res, 0, 6), NULL, 10);
        copy_field(out->item_state, sizeof(out->item_state), res, 7);
        out->holds = flag(res, 8);
        out->failures = atoi(PQgetvalue(res, 0, 9));
        out->defers = atoi(PQgetvalue(res, 0, 10));
        out->max_attempts = atoi(PQgetvalue(res, 0, 11));
        out->max_defers = atoi(PQgetvalue(res, 0, 12));
    }
    PQclear(res);
    return rc;
}

vd_error vd_store_job_finish(vd_conn *c, const vd_job_finish *w, char **answer)
{
    char job[24], item[24], fail[16], defer[16], delay[32];
    const char *p[18] = {job,           item,         w->to_state,  w->job_status,
                         w->cause,      w->disposition, w->reason_code, w->reason,
                         fail,          defer,        delay,        w->forced ? "true" : "false",
                         w->actor,      w->engine_data, w->adjudication, w->request_json,
                         w->answer_head, w->answer_tail};
    PGresult *res = NULL;
    vd_error rc;
    snprintf(job, sizeof(job), "%" PRId64, w->job_id);
    snprintf(item, sizeof(item), "%" PRId64, w->item_id);
    snprintf(fail, sizeof(fail), "%d", w->failures);
    snprintf(defer, sizeof(defer), "%d", w->defers);
    snprintf(delay, sizeof(delay), "%.3f", w->delay_seconds);
    *answer = NULL;
    rc = vd_sql_exec_commit(c, VD_SQL_JOB_FINISH, 18, p, &res);
    if (rc)
        return rc;
    if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
        rc = VD_ERR_INTERNAL; /* committed without its answer: cannot happen under the lock */
    else if (!(*answer = strdup(PQgetvalue(res, 0, 0))))
        rc = VD_ERR_INTERNAL;
    PQclear(res);
    return rc;
}

vd_error vd_store_job_set_adjudication(vd_conn *c, int64_t job_id, const char *adjudication,
                                       char **item_json, char **job_json)
{
    char job[24];
    const char *p[] = {job, adjudication};
    PGresult *res = NULL;
    vd_error rc;
    snprintf(job, sizeof(job), "%" PRId64, job_id);
    *item_json = *job_json = NULL;
    rc = vd_sql_exec(c, VD_SQL_JOB_SET_ADJUDICATION, 2, p, &res);
    if (rc)
        return rc;
    if (PQntuples(res) != 1) {
        rc = VD_ERR_NOT_FOUND;
    } else {
        *item_json = strdup(PQgetvalue(res, 0, 0));
        *job_json = strdup(PQgetvalue(res, 0, 1));
        if (!*item_json || !*job_json)
            rc = VD_ERR_INTERNAL;
    }
    PQclear(res);
    return rc;
}

vd_error vd_store_prior_adjudications(vd_conn *c, int64_t item_id, int64_t job_id, char **out)
{
    char item[24], job[24];
    const char *p[] = {item, job};
    PGresult *res = NULL;
    vd_error rc;
    snprintf(item, sizeof(item), "%" PRId64, item_id);
    snprintf(job, sizeof(job), "%" PRId64, job_id);
    *out = NULL;
    rc = vd_sql_exec(c, VD_SQL_PRIOR_ADJUDICATIONS, 2, p, &res);
    if (rc)
        return rc;
    if (!(*out = strdup(PQgetvalue(res, 0, 0))))
        rc = VD_ERR_INTERNAL;
    PQclear(res);
    return rc;
}

vd_error vd_store_tool_failure_count(vd_conn *c, int64_t job_id, const char *tool,
                                     const char *args, long *count)
{
    char job[24];
    const char *p[] = {job, tool, args};
    PGresult *res = NULL;
    vd_error rc;
    snprintf(job, sizeof(job), "%" PRId64, job_id);
    *count = 0;
    rc = vd_sql_exec(c, VD_SQL_TOOL_FAILURE_COUNT, 3, p, &res);
    if (rc)
        return rc;
    *count = atol(PQgetvalue(res, 0, 0));
    PQclear(res);
    return VD_OK;
}

vd_error vd_store_tool_failure_insert(vd_conn *c, int64_t job_id, const char *tool,
                                      const char *args, const char *kind, bool retryable,
                                      bool required, const char *error)
{
    char job[24];
    const char *p[] = {job, tool, args, kind, retryable ? "true" : "false",
                       required ? "true" : "false", error};
    PGresult *res = NULL;
    snprintf(job, sizeof(job), "%" PRId64, job_id);
    vd_error rc = vd_sql_exec(c, VD_SQL_TOOL_FAILURE_INSERT, 7, p, &res);
    PQclear(res);
    return rc;
}
