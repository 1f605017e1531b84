/* sweep.c - the sweeper's statements: close passed leases, purge old idempotency records. */
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/domain.h"
#include "verdict/store.h"
#include "verdict/store/idempotency.h"
#include "verdict/store/stats.h"
#include "verdict/store/sweep.h"

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
    if (*closed > 0 && !PQgetisnull(res, 0, 1))
        vd_sql_announce(c, PQgetvalue(res, 0, 1));
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
    *purged = strtol(PQcmdTuples(res), NULL, 10);
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

typedef struct retention_args {
    const char *p[2]; /* days, limit */
    long deleted;
} retention_args;

/* One retention batch in one transaction. Index scans only: the statements start from the
 * BRIN indexes of the rows' age and look each candidate's item up by primary key
 * (sql/migrations/0027_retention_by_age.sql), so a pass that finds nothing old reads a few blocks
 * however large the tables grow; a sequential scan, which the planner may prefer for a range it
 * cannot size, would read them all on every pass. */
static vd_error retention_tx(vd_conn *c, void *arg)
{
    retention_args *a = arg;
    PGresult *res = NULL;
    vd_error rc = vd_sql_prefer_indexes(c);
    a->deleted = 0; /* vd_store_tx may run this again after a retriable failure */
    /* transitions first: a job is deleted only once its item has none (sql/migrations/0022) */
    if (rc || (rc = vd_sql_exec(c, VD_SQL_RETENTION_TRANSITIONS, 2, a->p, &res)))
        return rc;
    a->deleted += strtol(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    if ((rc = vd_sql_exec(c, VD_SQL_RETENTION_JOBS, 2, a->p, &res)))
        return rc;
    a->deleted += PQntuples(res);
    PQclear(res);
    return VD_OK;
}

vd_error vd_store_retention(vd_conn *c, int days, long limit, long *deleted)
{
    char d[16], l[24];
    retention_args a = {{d, l}, 0};
    snprintf(d, sizeof(d), "%d", days);
    snprintf(l, sizeof(l), "%ld", limit);
    vd_error rc = vd_store_tx(c, retention_tx, &a);
    *deleted = rc ? 0 : a.deleted;
    return rc;
}

static vd_error one_text(vd_conn *c, vd_sql sql, int n, const char *const *p, char **out)
{
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, sql, n, p, &res);
    *out = NULL;
    if (rc)
        return rc;
    *out = strdup(PQntuples(res) ? PQgetvalue(res, 0, 0) : "");
    if (!*out)
        rc = VD_ERR_INTERNAL;
    PQclear(res);
    return rc;
}

/* A table of domain.h as a PostgreSQL array literal: "{" then ",word" per row, and the first
 * comma dropped by array_literal. */
#define ARRAY_ELEMENT(name, str) "," str
static const char item_states_array[] = "{" VD_ITEM_STATE_MAP(ARRAY_ELEMENT) "}";
static const char job_statuses_array[] = "{" VD_JOB_STATUS_MAP(ARRAY_ELEMENT) "}";

static void array_literal(char *out, size_t cap, const char *elements)
{
    snprintf(out, cap, "{%s", elements + 2); /* without the first "," */
}

vd_error vd_store_stats(vd_conn *c, const char *flow_step_id, char **out)
{
    char states[sizeof(item_states_array)], statuses[sizeof(job_statuses_array)];
    const char *p[] = {flow_step_id, states, statuses};
    array_literal(states, sizeof(states), item_states_array);
    array_literal(statuses, sizeof(statuses), job_statuses_array);
    return one_text(c, VD_SQL_STATS, 3, p, out);
}

vd_error vd_store_metrics(vd_conn *c, vd_db_metrics *out)
{
    char states[sizeof(item_states_array)];
    const char *p[] = {states};
    PGresult *res = NULL;
    memset(out, 0, sizeof(*out));
    array_literal(states, sizeof(states), item_states_array);
    vd_error rc = vd_sql_exec(c, VD_SQL_METRICS, 1, p, &res);
    if (rc)
        return rc;
    int rows = PQntuples(res);
    out->s = calloc(rows > 0 ? (size_t)rows : 1, sizeof(*out->s));
    if (!out->s) {
        PQclear(res);
        return VD_ERR_INTERNAL;
    }
    out->owner = res; /* the labels point into it */
    for (int r = 0; r < rows; r++) {
        vd_db_sample *s = &out->s[out->n];
        long family = strtol(PQgetvalue(res, r, 0), NULL, 10);
        if (family < 0 || family >= VD_DB__MAX)
            continue;
        s->family = (vd_db_family)family;
        s->a = PQgetvalue(res, r, 1);
        s->b = PQgetisnull(res, r, 2) ? NULL : PQgetvalue(res, r, 2);
        s->value = strtoll(PQgetvalue(res, r, 3), NULL, 10);
        out->n++;
    }
    return VD_OK;
}

void vd_db_metrics_cleanup(vd_db_metrics *m)
{
    PQclear(m->owner);
    free(m->s);
    memset(m, 0, sizeof(*m));
}
