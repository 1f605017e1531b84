/* sweep.c - the sweeper's statements: close passed leases, purge old idempotency records. */
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/store_ops.h"

vd_error vd_store_sweep_leases(vd_conn *c, long limit, long *closed)
{
    char lim[24];
    const char *p[] = {lim};
    PGresult *res = NULL;
    vd_error rc;
    snprintf(lim, sizeof(lim), "%ld", limit);
    *closed = 0;
    rc = vd_sql_exec(c, VD_SQL_SWEEP_LEASES, 1, p, &res);
    if (rc)
        return rc;
    *closed = PQntuples(res);
    PQclear(res);
    return VD_OK;
}

vd_error vd_store_purge_idempotency(vd_conn *c, long *purged)
{
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, VD_SQL_PURGE_IDEMPOTENCY, 0, NULL, &res);
    *purged = 0;
    if (rc)
        return rc;
    *purged = atol(PQcmdTuples(res));
    PQclear(res);
    return VD_OK;
}

vd_error vd_store_compact_counts(vd_conn *c)
{
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, VD_SQL_COMPACT_COUNTS, 0, NULL, &res);
    PQclear(res);
    return rc;
}

vd_error vd_store_retention(vd_conn *c, int days, long limit, long *deleted)
{
    char d[16], l[24];
    const char *p[] = {d, l};
    PGresult *res = NULL;
    vd_error rc;
    snprintf(d, sizeof(d), "%d", days);
    snprintf(l, sizeof(l), "%ld", limit);
    *deleted = 0;
    /* transitions first: a job row is referenced by its transitions (SET NULL otherwise) */
    rc = vd_sql_exec(c, VD_SQL_RETENTION_TRANSITIONS, 2, p, &res);
    if (rc)
        return rc;
    *deleted += atol(PQcmdTuples(res));
    PQclear(res);
    rc = vd_sql_exec(c, VD_SQL_RETENTION_JOBS, 2, p, &res);
    if (rc)
        return rc;
    *deleted += atol(PQcmdTuples(res));
    PQclear(res);
    return VD_OK;
}

static vd_error one_text(vd_conn *c, vd_sql sql, int n, const char *const *p, char **out)
{
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, sql, n, p, &res);
    *out = NULL;
    if (rc)
        return rc;
    if (!(*out = strdup(PQntuples(res) ? PQgetvalue(res, 0, 0) : "")))
        rc = VD_ERR_INTERNAL;
    PQclear(res);
    return rc;
}

vd_error vd_store_stats(vd_conn *c, const char *flow_step_id, char **out)
{
    const char *p[] = {flow_step_id};
    return one_text(c, VD_SQL_STATS, 1, p, out);
}

vd_error vd_store_metrics(vd_conn *c, char **out)
{
    return one_text(c, VD_SQL_METRICS, 0, NULL, out);
}
