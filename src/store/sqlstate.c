/* sqlstate.c - a failed result (or a broken connection) mapped to the one error table, and
 * which failures are worth running the transaction again. */
#include "conn_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verdict/util.h"

bool vd_sql_is_retryable_conflict(const PGresult *res)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    return state && (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0);
}

vd_error vd_sql_error(vd_conn *c, const PGresult *res)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    c->last_conflict = vd_sql_is_retryable_conflict(res);
    if (!c->pg || PQstatus(c->pg) != CONNECTION_OK || !state) {
        c->ready = false;
        return VD_ERR_DATABASE_UNAVAILABLE;
    }
    /* connection, shutdown, resource and serialization classes are transient */
    if (strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0 ||
        strncmp(state, "53", 2) == 0 || strcmp(state, "40001") == 0 ||
        strcmp(state, "40P01") == 0 || strcmp(state, "55P03") == 0 || strcmp(state, "57014") == 0)
        return VD_ERR_DATABASE_UNAVAILABLE;
    /* a prepared statement that does not exist: the statement did not run. A transaction
     * pooler gave us a server connection that never prepared it; the caller sends it again
     * unprepared, on a new connection */
    if (strcmp(state, "26000") == 0) {
        c->last_vanished = vd_db_detect_pooler(c->db, "a prepared statement vanished") ||
                           (txn_mode(c->db) && !c->db->mode_forced);
        c->ready = false;
        return VD_ERR_DATABASE_UNAVAILABLE;
    }
    /* undefined table/function: the schema is not migrated yet */
    if (strcmp(state, "42P01") == 0 || strcmp(state, "42883") == 0) {
        c->ready = false;
        return VD_ERR_DATABASE_UNAVAILABLE;
    }
    /* data exceptions and check violations come from input the edge let through */
    if (strncmp(state, "22", 2) == 0 || strcmp(state, "23514") == 0)
        return VD_ERR_INVALID_FIELD;
    vd_logf(VD_LOG_ERROR, "database error %s: %s", state, PQresultErrorMessage(res));
    return VD_ERR_INTERNAL;
}
