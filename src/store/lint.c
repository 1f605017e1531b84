/* lint.c - the store's side of issue 17 parts 2 and 3: the facts the rejection lint judges a
 * rejection by (read in the finishing transaction), and the item's earlier attempts a
 * briefing tells. The rules and texts are the service layer's (service/lint.c, briefing.c). */
#include "store_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "verdict/store_ops.h"

static bool flag(const PGresult *res, int col)
{
    return strcmp(PQgetvalue(res, 0, col), "t") == 0;
}

vd_error vd_store_reject_facts(vd_conn *c, int64_t job_id, const char *evidence,
                               vd_reject_facts *out)
{
    char id[24];
    const char *p[] = {id, evidence};
    PGresult *res = NULL;
    vd_error rc;
    memset(out, 0, sizeof(*out));
    snprintf(id, sizeof(id), "%" PRId64, job_id);
    rc = vd_sql_exec(c, VD_SQL_REJECT_FACTS, 2, p, &res);
    if (rc)
        return rc;
    if (PQntuples(res) != 1) {
        PQclear(res);
        return VD_ERR_NOT_FOUND;
    }
    out->deterministic_failure = flag(res, 0);
    out->retriable_adjudication = flag(res, 1);
    out->strict_evidence = flag(res, 2);
    out->evidence_found = flag(res, 3);
    PQclear(res);
    return VD_OK;
}

vd_error vd_store_briefing(vd_conn *c, int64_t job_id, char **out)
{
    char id[24];
    const char *p[] = {id};
    PGresult *res = NULL;
    vd_error rc;
    *out = NULL;
    snprintf(id, sizeof(id), "%" PRId64, job_id);
    rc = vd_sql_exec(c, VD_SQL_BRIEFING, 1, p, &res);
    if (rc)
        return rc;
    rc = PQntuples(res) == 1 && !PQgetisnull(res, 0, 0) ? vd_sql_dup(res, 0, 0, out)
                                                        : VD_ERR_NOT_FOUND;
    PQclear(res);
    return rc;
}
