/* jobs.c - the store's side of every write on a job: lock jobs and their items, finish the
 * jobs (items, jobs, transitions and the answers kept for replays in one statement, committed
 * in the same round trip). One job goes through positional statements, several through
 * statements taking one JSON array. The decisions are the service layer's (service/jobs.c). */
#include "store_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "verdict/store.h"
#include "verdict/store/items.h"
#include "verdict/store/jobs.h"

vd_error vd_store_tx(vd_conn *c, vd_store_tx_fn fn, void *arg)
{
    return vd_sql_tx(c, fn, arg);
}

void vd_job_snapshot_cleanup(vd_job_snapshot *s)
{
    free(s->final_response);
    free(s->flow_step_id);
    free(s->worker_id);
    free(s->worker_version);
    memset(s, 0, sizeof(*s));
}

static cJSON *raw_i64(int64_t v)
{
    char buf[24];
    snprintf(buf, sizeof(buf), "%" PRId64, v);
    return cJSON_CreateRaw(buf);
}

/* A JSON value given as text (already valid JSON), or null. */
static cJSON *raw_json(const char *text)
{
    return text ? cJSON_CreateRaw(text) : cJSON_CreateNull();
}

static cJSON *str_or_null(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

/* Adds every member, then checks once: cJSON_AddItemToObject ignores a NULL item, so a
 * failed allocation shows as a missing member. */
static bool add_all(cJSON *o, const char *const *names, cJSON **values, int n)
{
    bool ok = o != NULL;
    for (int i = 0; i < n; i++) {
        if (!values[i] || !o) {
            cJSON_Delete(values[i]);
            ok = false;
            continue;
        }
        cJSON_AddItemToObject(o, names[i], values[i]);
    }
    return ok;
}

/* Renders the one parameter of a many-row statement: a JSON array of one object per row. */
static char *print_rows(cJSON *rows, bool ok)
{
    char *text = ok ? cJSON_PrintUnformatted(rows) : NULL;
    cJSON_Delete(rows);
    return text;
}

/* Run a many-row statement on its one parameter, the rows as JSON (taken: freed here; NULL
 * when rendering them failed); commit: sent with the COMMIT (vd_sql_exec_commit). */
static vd_error exec_rows(vd_conn *c, vd_sql sql, char *rows, bool commit, PGresult **res)
{
    const char *p[] = {rows};
    vd_error rc;
    if (!rows)
        return VD_ERR_INTERNAL;
    rc = commit ? vd_sql_exec_commit(c, sql, 1, p, res) : vd_sql_exec(c, sql, 1, p, res);
    free(rows);
    return rc;
}

/* exec_rows with commit for jobs_finish, whose $2 is the request's trace id. */
static vd_error exec_rows_traced(vd_conn *c, vd_sql sql, char *rows, PGresult **res)
{
    const char *p[] = {rows, c->trace_id[0] ? c->trace_id : NULL};
    vd_error rc;
    if (!rows)
        return VD_ERR_INTERNAL;
    rc = vd_sql_exec_commit(c, sql, 2, p, res);
    free(rows);
    return rc;
}

vd_error vd_jobs_read_snapshots(const PGresult *res, size_t n, vd_job_snapshot *out)
{
    for (int r = 0; r < PQntuples(res); r++) {
        long i = strtol(PQgetvalue(res, r, 0), NULL, 10);
        if (i < 0 || (size_t)i >= n)
            continue;
        vd_job_snapshot *s = &out[i];
        s->found = true;
        s->disposition = VD_DISPOSITION_NONE;
        if (!vd_job_status_parse(PQgetvalue(res, r, 1), &s->status) ||
            (*PQgetvalue(res, r, 3) &&
             !vd_disposition_parse(PQgetvalue(res, r, 3), &s->disposition)) ||
            !vd_item_state_parse(PQgetvalue(res, r, 8), &s->item_state))
            return VD_ERR_INTERNAL; /* a word the CHECK constraints do not allow */
        s->token_ok = vd_sql_flag(res, r, 2);
        s->required_tool_failed = vd_sql_flag(res, r, 4);
        s->same_request = vd_sql_flag(res, r, 5);
        if (!PQgetisnull(res, r, 6) && vd_sql_dup(res, r, 6, &s->final_response))
            return VD_ERR_INTERNAL;
        s->item_id = strtoll(PQgetvalue(res, r, 7), NULL, 10);
        s->holds = vd_sql_flag(res, r, 9);
        s->failures = (int)strtol(PQgetvalue(res, r, 10), NULL, 10);
        s->defers = (int)strtol(PQgetvalue(res, r, 11), NULL, 10);
        s->max_attempts = (int)strtol(PQgetvalue(res, r, 12), NULL, 10);
        s->max_defers = (int)strtol(PQgetvalue(res, r, 13), NULL, 10);
        s->required_tool_blocked = vd_sql_flag(res, r, 14);
        if (vd_sql_dup(res, r, 15, &s->flow_step_id) || vd_sql_dup(res, r, 16, &s->worker_id) ||
            (!PQgetisnull(res, r, 17) && vd_sql_dup(res, r, 17, &s->worker_version)))
            return VD_ERR_INTERNAL;
    }
    return VD_OK;
}

char *vd_jobs_lock_rows(const vd_job_key *keys, size_t n)
{
    static const char *const names[] = {"ord", "job_id", "token", "request"};
    cJSON *rows = cJSON_CreateArray();
    bool ok = rows != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        cJSON *row = cJSON_CreateObject();
        cJSON *values[] = {cJSON_CreateNumber((double)i), raw_i64(keys[i].job_id),
                           cJSON_CreateString(keys[i].token), raw_json(keys[i].request_json)};
        ok = add_all(row, names, values, 4);
        if (row)
            cJSON_AddItemToArray(rows, row);
    }
    return print_rows(rows, ok);
}

vd_error vd_store_jobs_lock(vd_conn *c, const vd_job_key *keys, size_t n, vd_job_snapshot *out)
{
    PGresult *res = NULL;
    vd_error rc;
    memset(out, 0, n * sizeof(*out));
    if ((rc = vd_sql_prefer_indexes(c)))
        return rc;
    if (n == 1) { /* the positional statement: measured faster than the JSON one */
        char id[24];
        const char *p[] = {id, keys[0].token, keys[0].request_json};
        snprintf(id, sizeof(id), "%" PRId64, keys[0].job_id);
        rc = vd_sql_exec(c, VD_SQL_JOB_LOCK, 3, p, &res);
    } else {
        rc = exec_rows(c, VD_SQL_JOBS_LOCK, vd_jobs_lock_rows(keys, n), false, &res);
    }
    if (rc)
        return rc;
    /* a lock that waited for a finisher reads the finished row and its kept answer
     * (sql/migrations/0026_answers_in_jobs.sql, verdict_kept_answer) */
    rc = vd_jobs_read_snapshots(res, n, out);
    PQclear(res);
    return rc;
}

vd_error vd_store_job_lock(vd_conn *c, int64_t job_id, const char *token, const char *request_json,
                           vd_job_snapshot *out)
{
    vd_job_key key = {job_id, token, request_json};
    return vd_store_jobs_lock(c, &key, 1, out);
}

/* One value of a finishing record, as VD_FINISH_COLUMNS names it. */
typedef enum fkind { FK_I64, FK_INT, FK_DBL, FK_BOOL, FK_STR, FK_JSON } fkind;
typedef struct fvalue {
    const char *name;
    fkind kind;
    int64_t i;
    double d;
    const char *s;
} fvalue;

#define FV_I64(v) .i = (v)
#define FV_INT(v) .i = (v)
#define FV_DBL(v) .d = (v)
#define FV_BOOL(v) .i = (v) ? 1 : 0
#define FV_STR(v) .s = (v)
#define FV_JSON(v) .s = (v)
#define FINISH_VALUE(col, type, k, value) {.name = #col, .kind = FK_##k, FV_##k(value)},
enum { NFINISH = VD_FINISH_NCOLUMNS };

/* The values of w in the table's order. */
static void finish_values(const vd_job_finish *w, fvalue v[NFINISH])
{
    const fvalue all[NFINISH] = {VD_FINISH_COLUMNS(FINISH_VALUE)};
    memcpy(v, all, sizeof(all));
}

static cJSON *json_value(const fvalue *v)
{
    switch (v->kind) {
    case FK_I64:
    case FK_INT:
        return raw_i64(v->i);
    case FK_DBL:
        return cJSON_CreateNumber(v->d);
    case FK_BOOL:
        return cJSON_CreateBool(v->i != 0);
    case FK_STR:
        return str_or_null(v->s);
    case FK_JSON:
    default:
        return raw_json(v->s);
    }
}

static cJSON *finish_row(const vd_job_finish *w)
{
    fvalue v[NFINISH];
    const char *names[NFINISH];
    cJSON *values[NFINISH];
    finish_values(w, v);
    for (int k = 0; k < NFINISH; k++) {
        names[k] = v[k].name;
        values[k] = json_value(&v[k]);
    }
    cJSON *row = cJSON_CreateObject();
    if (row && w->trace_id && !cJSON_AddStringToObject(row, "trace_id", w->trace_id)) {
        cJSON_Delete(row);
        row = NULL;
    }
    if (!add_all(row, names, values, NFINISH)) {
        cJSON_Delete(row);
        return NULL;
    }
    return row;
}

char *vd_jobs_finish_rows(const vd_job_finish *w, size_t n)
{
    cJSON *rows = cJSON_CreateArray();
    bool ok = rows != NULL;
    for (size_t k = 0; ok && k < n; k++) {
        cJSON *row = finish_row(&w[k]);
        ok = row != NULL;
        if (row)
            cJSON_AddItemToArray(rows, row);
    }
    return print_rows(rows, ok);
}

void vd_job_finish_params(const vd_job_finish *w, const char *trace_id, char (*text)[32],
                          const char **p)
{
    fvalue v[NFINISH];
    p[NFINISH] = w->trace_id ? w->trace_id : trace_id;
    finish_values(w, v);
    for (int k = 0; k < NFINISH; k++) {
        p[k] = text[k];
        if (v[k].kind == FK_I64 || v[k].kind == FK_INT)
            snprintf(text[k], 32, "%" PRId64, v[k].i);
        else if (v[k].kind == FK_DBL)
            snprintf(text[k], 32, "%.3f", v[k].d);
        else if (v[k].kind == FK_BOOL)
            p[k] = v[k].i ? "true" : "false";
        else
            p[k] = v[k].s;
    }
}

/* The positional job_finish, sent with the COMMIT. */
static vd_error finish_one(vd_conn *c, const vd_job_finish *w, PGresult **res)
{
    char text[VD_FINISH_NCOLUMNS][32];
    const char *p[VD_FINISH_NCOLUMNS + 1];
    vd_job_finish_params(w, c->trace_id[0] ? c->trace_id : NULL, text, p);
    return vd_sql_exec_commit(c, VD_SQL_JOB_FINISH, VD_FINISH_NCOLUMNS + 1, p, res);
}

bool vd_job_claimable_now(const vd_job_finish *w)
{
    return w->to_state == VD_ITEM_AVAILABLE ||
           (w->to_state == VD_ITEM_DEFERRED && w->delay_seconds <= 0);
}

/* Long-poll claims: what the items a finish makes claimable now announce (one read in the
 * finish's transaction, sent after its commit: vd_sql_announce). The hot complete and reject
 * paths make nothing claimable and cost nothing here. */
static vd_error announce_claimable(vd_conn *c, const vd_job_finish *w, size_t n)
{
    char ids[2400]; /* up to 100 ids (a batch) */
    size_t len = 0;
    char *lines = NULL;
    ids[len++] = '{';
    for (size_t k = 0; k < n && len < sizeof(ids) - 24; k++) {
        if (vd_job_claimable_now(&w[k]))
            len += (size_t)snprintf(ids + len, sizeof(ids) - len, "%s%" PRId64, len > 1 ? "," : "",
                                    w[k].item_id);
    }
    if (len == 1)
        return VD_OK; /* nothing claimable: no statement */
    snprintf(ids + len, sizeof(ids) - len, "}");
    const char *p[] = {ids};
    vd_error rc = vd_sql_first_text(c, VD_SQL_CLAIMABLE_ANNOUNCE, 1, p, &lines);
    if (rc == VD_OK)
        vd_sql_announce(c, lines);
    free(lines);
    return rc == VD_ERR_NOT_FOUND ? VD_OK : rc;
}

vd_error vd_jobs_read_answers(const PGresult *res, const vd_job_finish *w, size_t n, char **answers)
{
    vd_error rc = VD_OK;
    for (int r = 0; r < PQntuples(res) && rc == VD_OK; r++) {
        int64_t job = strtoll(PQgetvalue(res, r, 0), NULL, 10);
        for (size_t k = 0; k < n; k++) {
            if (w[k].job_id == job && !answers[k] && rc == VD_OK)
                rc = vd_sql_dup(res, r, 1, &answers[k]);
        }
    }
    /* every job was locked by this transaction, so each has its row; committed either way */
    for (size_t k = 0; k < n && rc == VD_OK; k++) {
        if (!answers[k])
            rc = VD_ERR_INTERNAL;
    }
    return rc;
}

vd_error vd_store_jobs_finish(vd_conn *c, const vd_job_finish *w, size_t n, char **answers)
{
    PGresult *res = NULL;
    vd_error rc;
    for (size_t k = 0; k < n; k++)
        answers[k] = NULL;
    rc = announce_claimable(c, w, n);
    if (rc)
        return rc;
    if (n == 1) { /* the positional statement: measured faster than the JSON one */
        rc = finish_one(c, w, &res);
    } else {
        rc = exec_rows_traced(c, VD_SQL_JOBS_FINISH, vd_jobs_finish_rows(w, n), &res);
    }
    if (rc)
        return rc;
    rc = vd_jobs_read_answers(res, w, n, answers);
    PQclear(res);
    return rc;
}

vd_error vd_store_job_set_adjudication(vd_conn *c, int64_t job_id, const char *adjudication,
                                       char **answer)
{
    char job[24];
    const char *p[] = {job, adjudication};
    PGresult *res = NULL;
    vd_error rc;
    snprintf(job, sizeof(job), "%" PRId64, job_id);
    *answer = NULL;
    rc = vd_sql_exec(c, VD_SQL_JOB_SET_ADJUDICATION, 2, p, &res);
    if (rc)
        return rc;
    if (PQntuples(res) != 1)
        rc = VD_ERR_NOT_FOUND;
    else
        rc = vd_sql_dup(res, 0, 0, answer);
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
    rc = vd_sql_dup(res, 0, 0, out);
    PQclear(res);
    return rc;
}

vd_error vd_store_item_current_job(vd_conn *c, int64_t item_id, vd_item_state *state, int64_t *job)
{
    char id[24];
    const char *p[] = {id};
    PGresult *res = NULL;
    snprintf(id, sizeof(id), "%" PRId64, item_id);
    *job = 0;
    vd_error rc = vd_sql_exec(c, VD_SQL_ITEM_CURRENT_JOB, 1, p, &res);
    if (rc)
        return rc;
    if (PQntuples(res) == 0)
        rc = VD_ERR_NOT_FOUND;
    else if (!vd_item_state_parse(PQgetvalue(res, 0, 0), state))
        rc = VD_ERR_INTERNAL;
    else if (*state == VD_ITEM_CLAIMED)
        *job = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    PQclear(res);
    return rc;
}

vd_error vd_store_tool_success(vd_conn *c, int64_t job_id, const char *tool, int64_t *cleared,
                               bool *pending)
{
    char id[24];
    const char *p[] = {id, tool};
    PGresult *res = NULL;
    snprintf(id, sizeof(id), "%" PRId64, job_id);
    *cleared = 0;
    *pending = false;
    vd_error rc = vd_sql_exec(c, VD_SQL_TOOL_SUCCESS, 2, p, &res);
    if (rc)
        return rc;
    if (PQntuples(res) == 1)
        *cleared = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    if ((rc = vd_sql_exec(c, VD_SQL_TOOL_PENDING, 1, p, &res)))
        return rc;
    *pending = PQntuples(res) == 1 && vd_sql_flag(res, 0, 0);
    PQclear(res);
    return VD_OK;
}

vd_error vd_store_mcp_offer(vd_conn *c, int64_t job_id, const char *token, vd_mcp_offer *out)
{
    char id[24];
    const char *p[] = {id, token};
    PGresult *res = NULL;
    snprintf(id, sizeof(id), "%" PRId64, job_id);
    memset(out, 0, sizeof(*out));
    vd_error rc = vd_sql_exec(c, VD_SQL_MCP_OFFER, 2, p, &res);
    if (rc)
        return rc;
    if (PQntuples(res) == 1) {
        out->live = vd_sql_flag(res, 0, 0);
        out->deterministic_failure = vd_sql_flag(res, 0, 1);
        out->complete_pending = vd_sql_flag(res, 0, 2);
        out->item_id = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
    }
    PQclear(res);
    return VD_OK;
}

vd_error vd_store_item_releases(vd_conn *c, int64_t item_id, int64_t *n)
{
    char id[24];
    const char *p[] = {id};
    PGresult *res = NULL;
    snprintf(id, sizeof(id), "%" PRId64, item_id);
    *n = 0;
    vd_error rc = vd_sql_exec(c, VD_SQL_ITEM_RELEASES, 1, p, &res);
    if (rc)
        return rc;
    if (PQntuples(res) == 1)
        *n = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return VD_OK;
}

vd_error vd_store_item_release(vd_conn *c, int64_t item_id, int64_t job_id, const char *reason,
                               const char *actor, char **out)
{
    char item[24], jid[24];
    const char *p[] = {item, jid, reason, actor};
    PGresult *res = NULL;
    snprintf(item, sizeof(item), "%" PRId64, item_id);
    snprintf(jid, sizeof(jid), "%" PRId64, job_id);
    *out = NULL;
    vd_error rc = vd_sql_exec_commit(c, VD_SQL_ITEM_RELEASE, 4, p, &res);
    if (rc)
        return rc;
    rc = PQntuples(res) == 1 ? vd_sql_dup(res, 0, 0, out) : VD_ERR_INTERNAL;
    if (rc == VD_OK)
        vd_sql_announce(c, PQgetvalue(res, 0, 1)); /* committed: sent now */
    PQclear(res);
    return rc;
}
