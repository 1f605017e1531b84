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

static void conn_close(vd_conn *c);

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
        db->conns[i].deferred = -1;
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
    for (int i = 0; db->conns && i < db->size; i++)
        conn_close(&db->conns[i]);
    if (db->conns) {
        pthread_mutex_destroy(&db->mu);
        pthread_cond_destroy(&db->cv);
    }
    free(db->conns);
    free(db->free_stack);
    free(db->url);
    free(db);
}

static void drop_deferred(vd_conn *c)
{
    for (int i = 0; i < c->deferred_n; i++) {
        free(c->deferred_params[i]);
        c->deferred_params[i] = NULL;
    }
    c->deferred = -1;
    c->deferred_n = 0;
}

static void conn_close(vd_conn *c)
{
    if (c->pg)
        PQfinish(c->pg);
    c->pg = NULL;
    c->ready = false;
    c->in_tx = false;
    c->begin_pending = false;
    c->indexed_pending = false;
    drop_deferred(c);
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
    /* jit off: short OLTP statements never repay compiling, and a custom plan of the stats
     * query over a big table crossed jit_above_cost (0.5 s of JIT per connection) */
    res = PQexec(c->pg, "SET statement_timeout = '30s'; SET TIME ZONE 'UTC'; SET jit = off");
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

int vd_db_size(const vd_db *db)
{
    return db->size;
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

/* One statement of a pipeline: a prepared statement with parameters, or a bare command. */
typedef struct step {
    const char *prepared;
    const char *command;
    int n;
    const char *const *params;
} step;

/* Send steps[0..count) in one pipeline (one round trip) and read every result. On VD_OK
 * *kept (if not NULL) holds the result of steps[keep]; the first failure decides the error
 * (the steps after it are skipped by the server) and keeps nothing. */
static vd_error run_pipeline(vd_conn *c, const step *steps, int count, int keep,
                             PGresult **kept)
{
    vd_error err = VD_OK;
    bool sent = PQenterPipelineMode(c->pg) == 1;
    for (int i = 0; sent && i < count; i++)
        sent = steps[i].prepared
                   ? PQsendQueryPrepared(c->pg, steps[i].prepared, steps[i].n, steps[i].params,
                                         NULL, NULL, 0) == 1
                   : PQsendQueryParams(c->pg, steps[i].command, 0, NULL, NULL, NULL, NULL, 0) == 1;
    if (!sent || PQpipelineSync(c->pg) != 1)
        goto broken;
    for (int i = 0; i < count; i++) {
        PGresult *res = PQgetResult(c->pg), *more;
        if (!res)
            goto broken;
        while ((more = PQgetResult(c->pg)))
            PQclear(more);
        if (err == VD_OK && !result_ok(res)) {
            /* an aborted step only echoes the failure before it */
            err = PQresultStatus(res) == PGRES_PIPELINE_ABORTED ? VD_ERR_INTERNAL
                                                                 : vd_sql_error(c, res);
        }
        if (i == keep && err == VD_OK && kept)
            *kept = res;
        else
            PQclear(res);
    }
    PGresult *sync = PQgetResult(c->pg);
    bool synced = sync && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
    PQclear(sync);
    if (!synced || PQexitPipelineMode(c->pg) != 1)
        goto broken;
    if (err && kept && *kept) { /* a later step failed: the kept result means nothing */
        PQclear(*kept);
        *kept = NULL;
    }
    return err;
broken:
    if (kept && *kept) {
        PQclear(*kept);
        *kept = NULL;
    }
    vd_logf(VD_LOG_WARN, "database pipeline failed: %s", c->pg ? PQerrorMessage(c->pg) : "");
    conn_close(c);
    return VD_ERR_DATABASE_UNAVAILABLE;
}

/* The steps that are waiting to be sent (a lazy BEGIN, a deferred statement), then `tail`. */
static int pending_steps(vd_conn *c, step *out, step tail)
{
    int k = 0;
    if (c->begin_pending)
        out[k++] = (step){NULL, "BEGIN", 0, NULL};
    if (c->begin_pending && c->indexed_pending)
        out[k++] = (step){NULL, "SET LOCAL enable_seqscan = off", 0, NULL};
    if (c->deferred >= 0)
        out[k++] = (step){vd_sql_statements[c->deferred].name, NULL, c->deferred_n,
                          (const char *const *)c->deferred_params};
    out[k++] = tail;
    return k;
}

/* Run the pending steps and `tail`; on return nothing is pending any more. */
static vd_error run_with_pending(vd_conn *c, step tail, PGresult **out)
{
    step steps[4];
    int k = pending_steps(c, steps, tail);
    vd_error err;
    PGresult *res = NULL;
    if (k == 1) {
        res = tail.prepared
                  ? PQexecPrepared(c->pg, tail.prepared, tail.n, tail.params, NULL, NULL, 0)
                  : PQexec(c->pg, tail.command);
        err = result_ok(res) ? VD_OK : vd_sql_error(c, res);
        if (err == VD_OK && out)
            *out = res;
        else
            PQclear(res);
        return err;
    }
    err = run_pipeline(c, steps, k, k - 1, out);
    if (c->pg && c->begin_pending)
        c->begin_pending = c->indexed_pending = false; /* sent: the server holds it now */
    drop_deferred(c);
    return err;
}

vd_error vd_sql_exec(vd_conn *c, vd_sql sql, int n, const char *const *params, PGresult **out)
{
    vd_error err = VD_OK;
    step tail = {vd_sql_statements[sql].name, NULL, n, params};
    bool in_tx = c->in_tx, indexed = c->indexed_pending;
    /* nothing has reached the server in this transaction yet: a new connection will do */
    bool fresh = !in_tx || (c->begin_pending && c->deferred < 0);
    *out = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!c->ready) {
            if (!fresh || !conn_open(c))
                return VD_ERR_DATABASE_UNAVAILABLE;
            c->in_tx = c->begin_pending = in_tx; /* the BEGIN still has to go */
            c->indexed_pending = in_tx && indexed;
        }
        err = run_with_pending(c, tail, out);
        /* a connection lost between requests costs nothing to retry */
        if (err != VD_ERR_DATABASE_UNAVAILABLE || !fresh || c->ready)
            break;
    }
    return err;
}

/* Run steps[0..count), the last a COMMIT, as one pipeline keeping the result of steps[keep];
 * on failure roll back what is still open (a ROLLBACK after a failed COMMIT is harmless). */
static vd_error run_committing(vd_conn *c, const step *steps, int count, int keep,
                               PGresult **out)
{
    vd_error err = run_pipeline(c, steps, count, keep, out);
    if (err && c->ready) {
        PGresult *res = PQexec(c->pg, "ROLLBACK");
        PQclear(res);
    }
    return err;
}

vd_error vd_sql_exec_generic(vd_conn *c, vd_sql sql, int n, const char *const *params,
                             PGresult **out)
{
    const step steps[] = {
        {NULL, "BEGIN", 0, NULL},
        {NULL, "SET LOCAL plan_cache_mode = force_generic_plan", 0, NULL},
        {vd_sql_statements[sql].name, NULL, n, params},
        {NULL, "COMMIT", 0, NULL},
    };
    vd_error err = VD_OK;
    *out = NULL;
    if (c->in_tx)
        return VD_ERR_INTERNAL;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!c->ready && !conn_open(c))
            return VD_ERR_DATABASE_UNAVAILABLE;
        err = run_committing(c, steps, 4, 2, out);
        if (err == VD_OK || c->ready) /* the statement failed: rolled back, nothing to retry */
            break;
        /* a connection lost between requests costs nothing to retry */
        if (err != VD_ERR_DATABASE_UNAVAILABLE)
            break;
    }
    return err;
}

vd_error vd_sql_exec_deferred(vd_conn *c, vd_sql sql, int n, const char *const *params)
{
    /* one deferred write at a time: every caller defers at most one between statements */
    if (!c->in_tx || n > VD_SQL_MAX_PARAMS || c->deferred >= 0)
        return VD_ERR_INTERNAL;
    for (int i = 0; i < n; i++) {
        if (params[i] && !(c->deferred_params[i] = strdup(params[i]))) {
            c->deferred_n = i;
            drop_deferred(c);
            return VD_ERR_INTERNAL;
        }
    }
    c->deferred = (int)sql;
    c->deferred_n = n;
    return VD_OK;
}

vd_error vd_sql_exec_commit(vd_conn *c, vd_sql sql, int n, const char *const *params,
                            PGresult **out)
{
    step steps[5];
    int k;
    vd_error err;
    *out = NULL;
    if (!c->in_tx)
        return VD_ERR_INTERNAL;
    if (!c->ready) { /* lost mid-transaction: whatever was sent is gone with it */
        vd_sql_rollback(c);
        return VD_ERR_DATABASE_UNAVAILABLE;
    }
    k = pending_steps(c, steps, (step){vd_sql_statements[sql].name, NULL, n, params});
    steps[k++] = (step){NULL, "COMMIT", 0, NULL};
    err = run_committing(c, steps, k, k - 2, out);
    c->begin_pending = c->indexed_pending = false;
    drop_deferred(c);
    c->in_tx = false;
    return err;
}

vd_error vd_sql_begin(vd_conn *c)
{
    if (!c->ready && !conn_open(c))
        return VD_ERR_DATABASE_UNAVAILABLE;
    c->in_tx = true;
    c->begin_pending = true;
    return VD_OK;
}

vd_error vd_sql_prefer_indexes(vd_conn *c)
{
    PGresult *res = NULL;
    vd_error err;
    if (!c->in_tx)
        return VD_ERR_INTERNAL;
    if (c->begin_pending) {
        c->indexed_pending = true;
        return VD_OK;
    }
    if (!c->ready)
        return VD_ERR_DATABASE_UNAVAILABLE;
    res = PQexec(c->pg, "SET LOCAL enable_seqscan = off");
    err = PQresultStatus(res) == PGRES_COMMAND_OK ? VD_OK : vd_sql_error(c, res);
    PQclear(res);
    return err;
}

vd_error vd_sql_commit(vd_conn *c)
{
    vd_error err = VD_OK;
    if (!c->in_tx) /* vd_sql_exec_commit ended it */
        return VD_OK;
    if (c->begin_pending && c->deferred < 0) { /* nothing was sent: nothing to commit */
        c->begin_pending = c->indexed_pending = false;
        c->in_tx = false;
        return VD_OK;
    }
    if (!c->ready) {
        conn_close(c);
        return VD_ERR_DATABASE_UNAVAILABLE;
    }
    err = run_with_pending(c, (step){NULL, "COMMIT", 0, NULL}, NULL);
    if (err)
        vd_sql_rollback(c); /* a failed deferred statement leaves the transaction aborted */
    c->in_tx = false;
    return err;
}

void vd_sql_rollback(vd_conn *c)
{
    drop_deferred(c);
    if (!c->in_tx) /* nothing open (vd_sql_exec_commit ended it) */
        return;
    if (!c->begin_pending && c->pg && PQstatus(c->pg) == CONNECTION_OK) {
        PGresult *res = PQexec(c->pg, "ROLLBACK");
        PQclear(res);
    }
    c->begin_pending = c->indexed_pending = false;
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
