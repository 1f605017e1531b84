/* lint.c - the store's side of the rejection lint and the briefing: the facts the rejection lint
 * judges a rejection by (read in the finishing transaction), and the item's earlier attempts a
 * briefing tells. The rules and texts are the service layer's (service/lint.c, briefing.c). */
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "verdict/store.h"
#include "verdict/store/briefing.h"
#include "verdict/store/lint.h"

void vd_reject_facts_cleanup(vd_reject_facts *f)
{
    for (size_t i = 0; i < f->n_failures; i++)
        free(f->failures[i]);
    free(f->failures);
    f->failures = NULL;
    f->n_failures = 0;
}

/* The JSON array of error texts into out->failures. */
static vd_error read_failures(const char *json, vd_reject_facts *out)
{
    cJSON *a = cJSON_Parse(json);
    int n = cJSON_GetArraySize(a);
    const cJSON *e;
    out->failures = n > 0 ? calloc((size_t)n, sizeof(*out->failures)) : NULL;
    if (!a || (n > 0 && !out->failures)) {
        cJSON_Delete(a);
        return VD_ERR_INTERNAL;
    }
    cJSON_ArrayForEach(e, a)
    {
        const char *s = cJSON_GetStringValue(e);
        char *copy = s ? strdup(s) : NULL;
        if (copy)
            out->failures[out->n_failures++] = copy;
    }
    cJSON_Delete(a);
    return VD_OK;
}

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
    rc = PQgetisnull(res, 0, 4) ? VD_OK : read_failures(PQgetvalue(res, 0, 4), out);
    PQclear(res);
    if (rc)
        vd_reject_facts_cleanup(out);
    return rc;
}

vd_error vd_store_briefing(vd_conn *c, int64_t job_id, char **out)
{
    vd_i64_text id = vd_i64_text_of(job_id);
    const char *p[] = {id.s};
    return vd_sql_first_text(c, VD_SQL_BRIEFING, 1, p, out);
}
