/* lint.c - the store's side of issue 17 parts 2 and 3: the facts the rejection lint judges a
 * rejection by (read in the finishing transaction), and the item's earlier attempts a
 * briefing tells. The rules and texts are the service layer's (service/lint.c, briefing.c). */
#include "store_internal.h"

#include <stdio.h>
#include <string.h>

#include "verdict/store_ops.h"

vd_error vd_store_reject_facts(vd_conn *c, int64_t job_id, const char *evidence,
                               vd_reject_facts *out)
{
    vd_i64_text id = vd_i64_text_of(job_id);
    const char *p[] = {id.s, evidence};
    PGresult *res = NULL;
    vd_error rc;
    memset(out, 0, sizeof(*out));
    rc = vd_sql_exec(c, VD_SQL_REJECT_FACTS, 2, p, &res);
    if (rc)
        return rc;
    if (PQntuples(res) != 1) {
        PQclear(res);
        return VD_ERR_NOT_FOUND;
    }
    out->deterministic_failure = vd_sql_flag(res, 0, 0);
    out->retriable_adjudication = vd_sql_flag(res, 0, 1);
    out->strict_evidence = vd_sql_flag(res, 0, 2);
    out->evidence_found = vd_sql_flag(res, 0, 3);
    PQclear(res);
    return VD_OK;
}

vd_error vd_store_briefing(vd_conn *c, int64_t job_id, char **out)
{
    vd_i64_text id = vd_i64_text_of(job_id);
    const char *p[] = {id.s};
    return vd_sql_first_text(c, VD_SQL_BRIEFING, 1, p, out);
}
