/* conn_internal.h - what the store's connection engine shares between its files: the pool
 * (pool.c), one connection (conn.c), one transaction (tx.c) and the SQLSTATE mapping
 * (sqlstate.c); the executor (async.c) owns connections of its own. Only those include it. */
#ifndef VERDICT_CONN_INTERNAL_H
#define VERDICT_CONN_INTERNAL_H

#include <pthread.h>

#include "store_internal.h"

struct vd_db {
    char *url;
    int size;
    int timeout_ms;
    int in_use;
    vd_conn *conns;
    int *free_stack;
    int free_count;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* After a connect that got no answer in time the server is suspect: one connection
     * attempt at a time probes it and the other callers answer 503 at once, instead of every
     * caller waiting out its deadline and leaving a half-open connection in the server's
     * accept queue (which it would have to work through when it comes back). */
    bool suspect;
    bool probing;
    /* Statements sent unprepared, settings per transaction (atomic): VERDICT_DB_POOL_MODE=
     * transaction, or a transaction pooler detected by itself (mode_detected) unless
     * VERDICT_DB_POOL_MODE was set (mode_forced) */
    int txn_mode;
    int mode_detected;
    bool mode_forced;
    /* the schema was found at this build's version once (atomic): the statements can be
     * prepared; until then a connection only checks the version (no prepare warnings while
     * migrations are still to run) */
    int schema_ok;
    int schema_logged; /* the schema version last logged as behind (atomic) */
};

static inline bool txn_mode(const vd_db *db)
{
    return __atomic_load_n(&db->txn_mode, __ATOMIC_ACQUIRE) != 0;
}

/* Whether res is a statement's success (rows or a command's tag). */
static inline bool vd_sql_result_ok(const PGresult *res)
{
    ExecStatusType st = PQresultStatus(res);
    return st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK;
}

/* pool.c: a transaction pooler is in between; send every statement unprepared from now on
 * (false when the mode was set, or already switched). */
bool vd_db_detect_pooler(vd_db *db, const char *why);

/* conn.c: one connection. Open (connect, check the schema, prepare) and close it; drop what
 * a transaction left pending (a deferred statement, announcements). */
bool vd_conn_open(vd_conn *c);
void vd_conn_close(vd_conn *c);
void vd_conn_drop_deferred(vd_conn *c);
void vd_conn_drop_announce(vd_conn *c);
/* Start the bound of one call: the borrow's deadline, or the pool timeout from now. */
void vd_conn_op_begin(vd_conn *c);
/* Flush what libpq holds and, when `result`, read until a result will not block. */
bool vd_conn_pump(vd_conn *c, bool result);
/* The next result (NULL: this query's results are over); false when the wait failed. */
bool vd_conn_next_result(vd_conn *c, PGresult **res);
/* Log a connection lost in the middle of `what`. */
void vd_conn_log_lost(vd_conn *c, const char *what);
/* Send a statement of the table (prepared, or its text in transaction pool mode). */
bool vd_conn_send_sql(vd_conn *c, vd_sql sql, int n, const char *const *params);
/* Run a bare command, or a statement of the table, and collect its result. */
PGresult *vd_conn_exec(vd_conn *c, const char *command);
PGresult *vd_conn_exec_sql(vd_conn *c, vd_sql sql, int n, const char *const *params);

#endif
