/* coalesce.c - the store's side of coalesced requests (verdict/store/coalesce.h): many single-item
 * claims of one flow step (and one set of limit keys) in one statement (claim_many,
 * claim_many_limited), its requests as one JSON array. */
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "verdict/store/coalesce.h"

static cJSON *str_or_null(const char *s)
{
    return s && *s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

/* A request's limit keys (a JSON array), or null. */
static cJSON *keys_or_null(const char *keys_json)
{
    cJSON *keys = keys_json ? cJSON_Parse(keys_json) : NULL;
    if (keys_json && !keys)
        return NULL; /* out of memory (the handler parsed it before) */
    return keys ? keys : cJSON_CreateNull();
}

/* A request's Idempotency-Key and raw body into its row (claim_many), when it has a key. */
static bool add_idem(cJSON *row, const vd_claim_one *q)
{
    if (!q->idem_key)
        return true;
    return cJSON_AddStringToObject(row, "key", q->idem_key) &&
           cJSON_AddStringToObject(row, "body", q->idem_body ? q->idem_body : "");
}

/* The requests as rows: [{"ord","worker","version","lease","actor","trace","span","fs",
 * "keys","est"[,"key","body"]}...]; fs is a request's own flow step, or flow_step_id; keys and
 * est its own limit keys and token estimate, or null; key and body its Idempotency-Key and raw
 * body, when it has a key. */
static char *claim_rows(const char *flow_step_id, const vd_claim_one *reqs, size_t n)
{
    static const char *const names[] = {"ord",   "worker", "version", "lease", "actor",
                                        "trace", "span",   "fs",      "keys",  "est"};
    cJSON *rows = cJSON_CreateArray();
    bool ok = rows != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        const vd_claim_one *q = &reqs[i];
        cJSON *row = cJSON_CreateObject();
        cJSON *values[] = {cJSON_CreateNumber((double)i),
                           cJSON_CreateString(q->worker_id),
                           str_or_null(q->worker_version),
                           cJSON_CreateNumber((double)q->lease_seconds),
                           cJSON_CreateString(q->actor),
                           str_or_null(q->trace_id),
                           str_or_null(q->trace_id && *q->trace_id ? q->span_id : NULL),
                           cJSON_CreateString(q->flow_step_id ? q->flow_step_id : flow_step_id),
                           keys_or_null(q->limit_keys),
                           q->estimated_tokens >= 0
                               ? cJSON_CreateNumber((double)q->estimated_tokens)
                               : cJSON_CreateNull()};
        ok = row != NULL;
        for (int k = 0; k < 10; k++) {
            if (values[k] && row)
                cJSON_AddItemToObject(row, names[k], values[k]);
            else {
                cJSON_Delete(values[k]);
                ok = false;
            }
        }
        if (row && !add_idem(row, q))
            ok = false;
        if (row)
            cJSON_AddItemToArray(rows, row);
    }
    char *text = ok ? cJSON_PrintUnformatted(rows) : NULL;
    cJSON_Delete(rows);
    return text;
}

/* The answers of claim_many's rows (ord, answer[, how]) into reqs; all or none. */
static vd_error read_answers(const PGresult *res, vd_claim_one *reqs, size_t n)
{
    vd_error rc = PQntuples(res) == (int)n ? VD_OK : VD_ERR_INTERNAL;
    for (int r = 0; rc == VD_OK && r < PQntuples(res); r++) {
        long i = strtol(PQgetvalue(res, r, 0), NULL, 10);
        long how = PQnfields(res) > 2 ? strtol(PQgetvalue(res, r, 2), NULL, 10) : 0;
        if (i < 0 || (size_t)i >= n || reqs[i].body || how < 0 || how > VD_CLAIM_UNANSWERED)
            rc = VD_ERR_INTERNAL;
        else if (!PQgetisnull(res, r, 1))
            rc = vd_sql_dup(res, r, 1, &reqs[i].body);
        if (rc == VD_OK)
            reqs[i].idem = (vd_claim_idem)how;
    }
    for (size_t i = 0; rc && i < n; i++) {
        free(reqs[i].body);
        reqs[i].body = NULL;
    }
    return rc;
}

/* Run claim statement sql (np parameters p) alone in its transaction and read one answer per
 * request into reqs (NULL where the statement leaves one); on an error no body is set. */
static vd_error exec_claims(vd_conn *c, vd_sql sql, int np, const char *const *p,
                            vd_claim_one *reqs, size_t n)
{
    PGresult *res = NULL;
    vd_error rc = p[1] ? vd_sql_exec_indexed(c, sql, np, p, &res) : VD_ERR_INTERNAL;
    if (rc == VD_OK)
        rc = read_answers(res, reqs, n);
    PQclear(res);
    return rc;
}

vd_error vd_store_claim_many(vd_conn *c, const char *flow_step_id, vd_claim_one *reqs, size_t n)
{
    char *rows = claim_rows(flow_step_id, reqs, n);
    const char *p[] = {rows};
    PGresult *res = NULL;
    vd_error rc = VD_ERR_INTERNAL;
    vd_sql sql = VD_SQL_CLAIM_MANY; /* claim_many_keyed only when some request has a key */
    for (size_t i = 0; i < n; i++) {
        reqs[i].body = NULL;
        reqs[i].idem = VD_CLAIM_OWN;
        if (reqs[i].idem_key)
            sql = VD_SQL_CLAIM_MANY_KEYED;
    }
    if (rows && vd_in_tx(c)) { /* claim_next of coalesced dispositions: in their transaction */
        rc = vd_sql_prefer_generic(c);
        if (rc == VD_OK)
            rc = vd_sql_exec(c, sql, 1, p, &res);
    } else if (rows) { /* alone: BEGIN, planned by index, the claim, COMMIT in one round trip */
        rc = vd_sql_exec_indexed(c, sql, 1, p, &res);
    }
    free(rows);
    if (rc == VD_OK)
        rc = read_answers(res, reqs, n);
    PQclear(res);
    return rc;
}

vd_error vd_store_claim_many_limited(vd_conn *c, const char *flow_step_id, const char *keys_json,
                                     int64_t estimated_tokens, vd_claim_one *reqs, size_t n)
{
    char *rows = claim_rows(flow_step_id, reqs, n);
    vd_i64_text count = vd_i64_text_of((int64_t)n), est = vd_i64_text_of(estimated_tokens);
    const char *p[] = {flow_step_id, rows, count.s, keys_json,
                       estimated_tokens >= 0 ? est.s : NULL};
    for (size_t i = 0; i < n; i++)
        reqs[i].body = NULL;
    vd_error rc = exec_claims(c, VD_SQL_CLAIM_MANY_LIMITED, 5, p, reqs, n);
    free(rows);
    for (size_t i = 0; rc == VD_OK && i < n; i++)
        if (!reqs[i].body) /* every request has its answer */
            rc = VD_ERR_INTERNAL;
    for (size_t i = 0; rc && i < n; i++) {
        free(reqs[i].body);
        reqs[i].body = NULL;
    }
    return rc;
}

/* Claim with limits (claim_many_limited) the requests of reqs that have no answer yet, in
 * order, and move their answers back. */
vd_error vd_store_claim_many_rest(vd_conn *c, const char *flow_step_id, vd_claim_one *reqs,
                                  size_t n)
{
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        m += reqs[k].body == NULL && !reqs[k].idem_key;
    if (m == 0)
        return VD_OK;
    size_t *of = calloc(m, sizeof(*of));
    vd_claim_one *sub = calloc(m, sizeof(*sub));
    vd_error rc = of && sub ? VD_OK : VD_ERR_INTERNAL;
    m = 0;
    for (size_t k = 0; rc == VD_OK && k < n; k++) {
        if (!reqs[k].body && !reqs[k].idem_key) {
            of[m] = k;
            sub[m++] = reqs[k];
        }
    }
    if (rc == VD_OK)
        rc = vd_store_claim_many_limited(c, flow_step_id, NULL, -1, sub, m);
    for (size_t k = 0; rc == VD_OK && k < m; k++)
        reqs[of[k]].body = sub[k].body;
    free(sub);
    free(of);
    return rc;
}

/* Whether every request names the same limit keys (the same JSON text) and estimate. */
static bool one_key_set(const vd_claim_one *reqs, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        const char *a = reqs[0].limit_keys, *b = reqs[i].limit_keys;
        if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0) ||
            reqs[i].estimated_tokens != reqs[0].estimated_tokens)
            return false;
    }
    return n > 0;
}

vd_error vd_store_claim_many_take(vd_conn *c, const char *flow_step_id, vd_claim_one *reqs,
                                  size_t n)
{
    if (!one_key_set(reqs, n))
        return vd_store_claim_many_limited(c, flow_step_id, NULL, -1, reqs, n);
    char *rows = claim_rows(flow_step_id, reqs, n);
    vd_i64_text est = vd_i64_text_of(reqs[0].estimated_tokens);
    const char *p[] = {flow_step_id, rows, reqs[0].limit_keys,
                       reqs[0].estimated_tokens >= 0 ? est.s : NULL};
    for (size_t i = 0; i < n; i++)
        reqs[i].body = NULL;
    vd_error rc = exec_claims(c, VD_SQL_CLAIM_MANY_TAKE, 4, p, reqs, n);
    free(rows);
    return rc ? rc : vd_store_claim_many_rest(c, flow_step_id, reqs, n);
}
