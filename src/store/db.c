/* db.c - the connection pool, statement preparation, SQLSTATE -> error mapping and the
 * transaction helper. A connection belongs to one thread at a time; a lost one is re-opened
 * lazily, so the service recovers by itself when PostgreSQL comes back. */
#include "store_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verdict/util.h"

struct vd_db {
    char *url;
    int size;
    int in_use;
    vd_conn *conns;
    int *free_stack;
    int free_count;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

vd_db *vd_db_create(const char *url, int size)
{
    vd_db *db = calloc(1, sizeof(*db));
    if (!db)
        return NULL;
    db->url = strdup(url);
    db->conns = calloc((size_t)size, sizeof(*db->conns));
    db->free_stack = calloc((size_t)size, sizeof(*db->free_stack));
    if (!db->url || !db->conns || !db->free_stack) {
        vd_db_destroy(db);
        return NULL;
    }
    db->size = size;
    for (int i = 0; i < size; i++) {
        db->conns[i].index = i;
        db->conns[i].url = db->url;
        db->free_stack[db->free_count++] = size - 1 - i;
    }
    pthread_mutex_init(&db->mu, NULL);
    pthread_cond_init(&db->cv, NULL);
    return db;
}

void vd_db_destroy(vd_db *db)
{
    if (!db)
        return;
    for (int i = 0; db->conns && i < db->size; i++) {
        if (db->conns[i].pg)
            PQfinish(db->conns[i].pg);
    }
    if (db->conns) {
        pthread_mutex_destroy(&db->mu);
        pthread_cond_destroy(&db->cv);
    }
    free(db->conns);
    free(db->free_stack);
    free(db->url);
    free(db);
}

static void conn_close(vd_conn *c)
{
    if (c->pg)
        PQfinish(c->pg);
    c->pg = NULL;
    c->ready = false;
    c->in_tx = false;
}

/* Open the connection and prepare every statement; false leaves it closed. */
static bool conn_open(vd_conn *c)
{
    const char *url = c->url;
    const char *keys[] = {"dbname", "connect_timeout", "application_name", NULL};
    const char *vals[] = {url, "5", "verdictd", NULL};
    PGresult *res = NULL;
    conn_close(c);
    c->pg = PQconnectdbParams(keys, vals, 1);
    if (!c->pg || PQstatus(c->pg) != CONNECTION_OK)
        goto fail;
    res = PQexec(c->pg, "SET statement_timeout = '30s'; SET TIME ZONE 'UTC'");
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        goto fail;
    PQclear(res);
    for (int i = 0; i < VD_SQL__MAX; i++) {
        const vd_sql_statement *st = &vd_sql_statements[i];
        res = PQprepare(c->pg, st->name, st->text, 0, NULL);
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
            vd_logf(VD_LOG_WARN, "prepare %s failed: %s", st->name,
                    PQresultErrorMessage(res));
            goto fail;
        }
        PQclear(res);
    }
    c->ready = true;
    return true;
fail:
    if (c->pg && PQstatus(c->pg) != CONNECTION_OK)
        vd_logf(VD_LOG_WARN, "database connection failed: %s", PQerrorMessage(c->pg));
    PQclear(res);
    conn_close(c);
    return false;
}

vd_error vd_db_acquire(vd_db *db, vd_conn **out)
{
    struct timespec deadline;
    vd_conn *c = NULL;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    pthread_mutex_lock(&db->mu);
    while (db->free_count == 0) {
        if (pthread_cond_timedwait(&db->cv, &db->mu, &deadline) != 0 && db->free_count == 0) {
            pthread_mutex_unlock(&db->mu);
            return VD_ERR_DATABASE_UNAVAILABLE;
        }
    }
    c = &db->conns[db->free_stack[--db->free_count]];
    db->in_use++;
    pthread_mutex_unlock(&db->mu);
    if (c->pg && PQstatus(c->pg) != CONNECTION_OK)
        conn_close(c);
    if (!c->ready && !conn_open(c)) {
        vd_db_release(db, c);
        return VD_ERR_DATABASE_UNAVAILABLE;
    }
    *out = c;
    return VD_OK;
}

void vd_db_release(vd_db *db, vd_conn *c)
{
    if (!c)
        return;
    if (c->in_tx)
        vd_sql_rollback(c); /* a handler that bailed out mid-transaction writes nothing */
    pthread_mutex_lock(&db->mu);
    db->free_stack[db->free_count++] = c->index;
    db->in_use--;
    pthread_cond_signal(&db->cv);
    pthread_mutex_unlock(&db->mu);
}

int vd_db_in_use(vd_db *db)
{
    int n;
    pthread_mutex_lock(&db->mu);
    n = db->in_use;
    pthread_mutex_unlock(&db->mu);
    return n;
}

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
        strcmp(state, "40P01") == 0 || strcmp(state, "55P03") == 0 ||
        strcmp(state, "57014") == 0)
        return VD_ERR_DATABASE_UNAVAILABLE;
    /* undefined table/function: the schema is not migrated yet */
    if (strcmp(state, "42P01") == 0 || strcmp(state, "42883") == 0 ||
        strcmp(state, "26000") == 0) {
        c->ready = false;
        return VD_ERR_DATABASE_UNAVAILABLE;
    }
    /* data exceptions and check violations come from input the edge let through */
    if (strncmp(state, "22", 2) == 0 || strcmp(state, "23514") == 0)
        return VD_ERR_INVALID_FIELD;
    vd_logf(VD_LOG_ERROR, "database error %s: %s", state, PQresultErrorMessage(res));
    return VD_ERR_INTERNAL;
}

static bool result_ok(const PGresult *res)
{
    ExecStatusType st = PQresultStatus(res);
    return st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK;
}

vd_error vd_sql_exec(vd_conn *c, vd_sql sql, int n, const char *const *params, PGresult **out)
{
    PGresult *res = NULL;
    vd_error err = VD_OK;
    *out = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!c->ready && (c->in_tx || !conn_open(c)))
            return VD_ERR_DATABASE_UNAVAILABLE;
        res = PQexecPrepared(c->pg, vd_sql_statements[sql].name, n, params, NULL, NULL, 0);
        if (result_ok(res)) {
            *out = res;
            return VD_OK;
        }
        err = vd_sql_error(c, res);
        PQclear(res);
        /* a connection lost between requests costs nothing to retry outside a transaction */
        if (err != VD_ERR_DATABASE_UNAVAILABLE || c->in_tx || c->ready)
            break;
    }
    return err;
}

static vd_error simple(vd_conn *c, const char *cmd)
{
    PGresult *res = PQexec(c->pg, cmd);
    vd_error err = result_ok(res) ? VD_OK : vd_sql_error(c, res);
    PQclear(res);
    return err;
}

vd_error vd_sql_begin(vd_conn *c)
{
    vd_error err = simple(c, "BEGIN");
    c->in_tx = err == VD_OK;
    return err;
}

vd_error vd_sql_commit(vd_conn *c)
{
    vd_error err = simple(c, "COMMIT");
    c->in_tx = false;
    return err;
}

void vd_sql_rollback(vd_conn *c)
{
    if (c->pg && PQstatus(c->pg) == CONNECTION_OK)
        (void)simple(c, "ROLLBACK");
    c->in_tx = false;
}

vd_error vd_sql_tx(vd_conn *c, vd_tx_fn fn, void *arg)
{
    vd_error err = VD_OK;
    for (int attempt = 0; attempt < 4; attempt++) {
        err = vd_sql_begin(c);
        if (err)
            return err;
        err = fn(c, arg);
        if (err == VD_OK)
            err = vd_sql_commit(c);
        else
            vd_sql_rollback(c);
        if (err != VD_ERR_DATABASE_UNAVAILABLE || !c->last_conflict)
            return err;
        /* serialization failure or deadlock: pause 5-25 ms, jittered, and run it again */
        struct timespec ts = {0, (long)(5e6 + vd_random_unit() * 20e6)};
        nanosleep(&ts, NULL);
    }
    return err;
}
