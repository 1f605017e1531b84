/* db.c - the connection pool, statement preparation, SQLSTATE -> error mapping and the
 * transaction helper. A connection belongs to one thread at a time; a lost one is re-opened
 * lazily, so the service recovers by itself when PostgreSQL comes back. libpq runs
 * non-blocking: every wait (connect, send, result) is one poll() bounded by a deadline, so a
 * stopped or unreachable server costs a caller at most VERDICT_DB_TIMEOUT_MS. Serialization
 * failures and deadlocks are retried here, with jitter, for every statement; a statement that
 * may have committed is never sent again after a lost connection (reconnect rules below). */
#include "store_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verdict/util.h"

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

static bool txn_mode(const vd_db *db)
{
    return __atomic_load_n(&db->txn_mode, __ATOMIC_ACQUIRE) != 0;
}

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
    db->timeout_ms = 5000;
    for (int i = 0; i < size; i++) {
        db->conns[i].index = i;
        db->conns[i].url = db->url;
        db->conns[i].db = db;
        db->conns[i].timeout_ms = db->timeout_ms;
        db->conns[i].deferred = -1;
        db->free_stack[db->free_count++] = size - 1 - i;
    }
    pthread_mutex_init(&db->mu, NULL);
    {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* deadlines are vd_monotonic() */
        pthread_cond_init(&db->cv, &ca);
        pthread_condattr_destroy(&ca);
    }
    return db;
}

void vd_db_set_timeout(vd_db *db, int timeout_ms)
{
    db->timeout_ms = timeout_ms;
    for (int i = 0; i < db->size; i++)
        db->conns[i].timeout_ms = timeout_ms;
}

void vd_db_set_pool_mode(vd_db *db, bool transaction, bool forced)
{
    __atomic_store_n(&db->txn_mode, transaction ? 1 : 0, __ATOMIC_RELEASE);
    db->mode_forced = forced;
}

bool vd_db_unprepared(const vd_db *db)
{
    return txn_mode(db);
}

bool vd_db_pool_mode_detected(const vd_db *db)
{
    return __atomic_load_n(&db->mode_detected, __ATOMIC_ACQUIRE) != 0;
}

/* A transaction pooler is in between (a backend pid that is not the connection's, a prepared
 * statement that vanished or already existed): send every statement unprepared from now on,
 * once, with a warning. Not when VERDICT_DB_POOL_MODE says which mode it is. */
static bool detect_pooler(vd_db *db, const char *why)
{
    int was = 0;
    if (db->mode_forced || txn_mode(db))
        return false;
    if (__atomic_compare_exchange_n(&db->mode_detected, &was, 1, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        vd_logf(VD_LOG_WARN,
                "database: %s: a transaction-pooling proxy (PgBouncer?) is assumed; statements "
                "are sent unprepared from now on (set VERDICT_DB_POOL_MODE=transaction to say "
                "so, or =session to keep prepared statements)",
                why);
    __atomic_store_n(&db->txn_mode, 1, __ATOMIC_RELEASE);
    return true;
}

void vd_db_destroy(vd_db *db)
{
    if (!db)
        return;
    for (int i = 0; db->conns && i < db->size; i++) {
        conn_close(&db->conns[i]);
        free(db->conns[i].announce);
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

static void drop_deferred(vd_conn *c)
{
    for (int i = 0; i < c->deferred_n; i++) {
        free(c->deferred_params[i]);
        c->deferred_params[i] = NULL;
    }
    c->deferred = -1;
    c->deferred_n = 0;
}

static void drop_announce(vd_conn *c)
{
    c->announce_len = 0;
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
    drop_announce(c);
}

static bool result_ok(const PGresult *res)
{
    ExecStatusType st = PQresultStatus(res);
    return st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK;
}

/* Start the bound of one call: the borrow's deadline, or the pool timeout from now. */
static void op_begin(vd_conn *c)
{
    c->timed_out = false;
    c->op_deadline = c->deadline > 0 ? c->deadline : vd_monotonic() + c->timeout_ms / 1000.0;
}

static int remaining_ms(const vd_conn *c)
{
    double left = (c->op_deadline - vd_monotonic()) * 1000.0;
    return left <= 0 ? 0 : left > 3600e3 ? 3600000 : (int)left + 1;
}

/* Wait until the socket is ready for `events`; false when the deadline passed first (then
 * c->timed_out) or the socket is gone. */
static bool wait_socket(vd_conn *c, short events)
{
    int fd = c->pg ? PQsocket(c->pg) : -1;
    if (fd < 0)
        return false;
    for (;;) {
        struct pollfd p = {fd, events, 0};
        int ms = remaining_ms(c), n;
        if (ms <= 0) {
            c->timed_out = true;
            return false;
        }
        n = poll(&p, 1, ms);
        if (n > 0)
            return true;
        if (n < 0 && errno != EINTR)
            return false;
    }
}

/* The one place the store waits on the server: flush what libpq holds and, when `result`,
 * read until PQgetResult will not block. False on a broken socket or a passed deadline. */
static bool conn_pump(vd_conn *c, bool result)
{
    for (;;) {
        int f = PQflush(c->pg);
        if (f < 0)
            return false;
        if (f == 0 && (!result || !PQisBusy(c->pg)))
            return true;
        if (!wait_socket(c, (short)(f ? POLLIN | POLLOUT : POLLIN)))
            return false;
        if (!PQconsumeInput(c->pg))
            return false;
    }
}

/* The next result (NULL: this query's results are over). False when the wait failed. */
static bool next_result(vd_conn *c, PGresult **res)
{
    *res = NULL;
    if (!conn_pump(c, true))
        return false;
    *res = PQgetResult(c->pg);
    return true;
}

static void log_lost(vd_conn *c, const char *what)
{
    if (c->timed_out)
        vd_logf(VD_LOG_WARN,
                "database %s: no answer within the deadline (%d ms); the "
                "connection is dropped",
                what, c->timeout_ms);
    else
        vd_logf(VD_LOG_WARN, "database %s failed: %s", what, c->pg ? PQerrorMessage(c->pg) : "");
}

/* Collect every result of the query just sent: the first failed one, else the last. NULL
 * (and the connection closed) when the server did not answer in time or the socket broke. */
static PGresult *collect(vd_conn *c, bool sent)
{
    PGresult *keep = NULL, *res = NULL;
    bool ok = sent && conn_pump(c, false);
    while (ok) {
        ok = next_result(c, &res);
        if (!ok || !res)
            break;
        if (keep && !result_ok(keep)) {
            PQclear(res); /* the first failure is the answer */
        } else {
            PQclear(keep);
            keep = res;
        }
    }
    if (!ok) {
        PQclear(keep);
        log_lost(c, "call");
        conn_close(c);
        return NULL;
    }
    return keep;
}

/* PQexec, bounded: a command (several allowed) as one simple query. */
static PGresult *conn_exec(vd_conn *c, const char *command)
{
    return c->pg ? collect(c, PQsendQuery(c->pg, command) == 1) : NULL;
}

/* Send statement `sql`: its prepared name in session mode, else its text as an unnamed
 * statement (a transaction pooler may hand every transaction another server connection). */
static bool send_sql(vd_conn *c, vd_sql sql, int n, const char *const *params)
{
    if (txn_mode(c->db))
        return PQsendQueryParams(c->pg, vd_sql_statements[sql].text, n, NULL, params, NULL, NULL,
                                 0) == 1;
    return PQsendQueryPrepared(c->pg, vd_sql_statements[sql].name, n, params, NULL, NULL, 0) == 1;
}

/* PQexecPrepared, bounded. */
static PGresult *conn_exec_sql(vd_conn *c, vd_sql sql, int n, const char *const *params)
{
    return c->pg ? collect(c, send_sql(c, sql, n, params)) : NULL;
}

PGconn *vd_pg_connect_start(const char *url, const char *app, const char *connect_timeout,
                            const char *user_timeout_ms)
{
    const char *keys[] = {"connect_timeout",
                          "application_name",
                          "keepalives",
                          "keepalives_idle",
                          "keepalives_interval",
                          "keepalives_count",
                          "tcp_user_timeout",
                          "dbname",
                          NULL};
    const char *vals[] = {connect_timeout, app, "1", "5", "2", "3", user_timeout_ms, url, NULL};
    return PQconnectStartParams(keys, vals, 1);
}

/* PQconnectdbParams, bounded by the call's deadline; the connection is non-blocking after.
 * Our keywords come first so that the caller's URL can override them. */
static bool conn_connect(vd_conn *c)
{
    char ct[16], ut[16];
    int ms = remaining_ms(c);
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    if (ms <= 0) {
        c->timed_out = true;
        return false;
    }
    /* libpq's own bounds back ours up: whole seconds (2 at least), and unacknowledged
     * data on a dead peer gives up after the pool timeout */
    snprintf(ct, sizeof(ct), "%d", ms / 1000 + 2);
    snprintf(ut, sizeof(ut), "%d", c->timeout_ms);
    c->pg = vd_pg_connect_start(c->url, "verdictd", ct, ut);
    if (!c->pg || PQstatus(c->pg) == CONNECTION_BAD)
        return false;
    while (st != PGRES_POLLING_OK) {
        if (st == PGRES_POLLING_FAILED)
            return false;
        if (!wait_socket(c, (short)(st == PGRES_POLLING_READING ? POLLIN : POLLOUT)))
            return false;
        st = PQconnectPoll(c->pg);
    }
    return PQsetnonblocking(c->pg, 1) == 0;
}

/* Prepare every statement in one pipeline (one round trip, so a reconnect after an outage
 * is quick); false on the first failure. */
static bool prepare_all(vd_conn *c)
{
    bool ok = PQenterPipelineMode(c->pg) == 1;
    for (int i = 0; ok && i < VD_SQL__MAX; i++)
        ok = PQsendPrepare(c->pg, vd_sql_statements[i].name, vd_sql_statements[i].text, 0, NULL) ==
             1;
    ok = ok && PQpipelineSync(c->pg) == 1 && conn_pump(c, false);
    for (int i = 0; ok && i < VD_SQL__MAX; i++) {
        PGresult *res = NULL, *end = NULL;
        ok = next_result(c, &res) && res && next_result(c, &end) && !end;
        if (ok && PQresultStatus(res) != PGRES_COMMAND_OK) {
            const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
            if (!(state && strcmp(state, "42P05") == 0 &&
                  detect_pooler(c->db, "a statement was prepared already on a new connection")))
                vd_logf(VD_LOG_WARN, "prepare %s failed: %s", vd_sql_statements[i].name,
                        PQresultErrorMessage(res));
            ok = false;
        }
        PQclear(res);
    }
    if (ok) {
        PGresult *sync = NULL;
        ok = next_result(c, &sync) && sync && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
        PQclear(sync);
        ok = ok && PQexitPipelineMode(c->pg) == 1;
    }
    return ok;
}

/* Whether the schema is at this build's version (found once, then remembered: it never goes
 * back). Before that, statements are not prepared: on a database that `verdictd migrate` has
 * not brought up yet they would fail, one warning each, on every connection. `table`: whether
 * schema_migrations exists at all. */
static bool schema_current(vd_conn *c, bool table)
{
    int v = 0, latest = vd_store_latest_version();
    if (__atomic_load_n(&c->db->schema_ok, __ATOMIC_ACQUIRE))
        return true;
    if (table) {
        PGresult *res = conn_exec(c, "SELECT coalesce(max(version), 0) FROM schema_migrations");
        bool ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
        v = ok ? (int)strtol(PQgetvalue(res, 0, 0), NULL, 10) : 0;
        PQclear(res);
        if (!ok)
            return false;
    }
    if (v >= latest) {
        __atomic_store_n(&c->db->schema_ok, 1, __ATOMIC_RELEASE);
        return true;
    }
    /* once per version seen: the operator learns what to run, the log is not flooded */
    if (__atomic_exchange_n(&c->db->schema_logged, v + 1, __ATOMIC_ACQ_REL) != v + 1)
        vd_logf(VD_LOG_WARN,
                "database schema at version %d, this verdictd needs %d: answering 503 until "
                "the migrations have run (verdictd migrate, or VERDICT_AUTO_MIGRATE=1)",
                v, latest);
    return false;
}

/* What a new connection learns from the server in one round trip: its backend pid (a pooler
 * answers another than the one it announced to libpq: then statements go unprepared), and
 * whether the schema is current. False: the connection is not usable yet. */
static bool conn_probe(vd_conn *c)
{
    PGresult *res =
        conn_exec(c, "SELECT pg_backend_pid(), to_regclass('schema_migrations') IS NOT NULL");
    bool ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1, table = false;
    if (ok && strtol(PQgetvalue(res, 0, 0), NULL, 10) != (long)PQbackendPID(c->pg))
        detect_pooler(c->db, "the server's backend pid is not the one the connection announced");
    table = ok && strcmp(PQgetvalue(res, 0, 1), "t") == 0;
    PQclear(res);
    return ok && schema_current(c, table);
}

/* Open the connection, check it (conn_probe) and, in session mode, set the session and
 * prepare every statement, under the call's deadline; false leaves it closed. */
static bool conn_open(vd_conn *c)
{
    char setup[160];
    PGresult *res = NULL;
    conn_close(c);
    if (!conn_connect(c) || !conn_probe(c))
        goto fail;
    /* the same settings, per transaction (pending_steps): nothing outlives a transaction */
    snprintf(c->settings, sizeof(c->settings),
             "SELECT set_config('statement_timeout', '%d', true),"
             " set_config('TimeZone', 'UTC', true), set_config('jit', 'off', true)",
             c->timeout_ms);
    if (txn_mode(c->db)) {
        c->ready = true;
        return true;
    }
    /* jit off: short OLTP statements never repay compiling, and a custom plan of the stats
     * query over a big table crossed jit_above_cost (0.5 s of JIT per connection). The
     * server's statement_timeout matches our deadline, so a statement whose caller gave up
     * does not run on after the connection is dropped. */
    snprintf(setup, sizeof(setup), "SET statement_timeout = %d; SET TIME ZONE 'UTC'; SET jit = off",
             c->timeout_ms);
    res = conn_exec(c, setup);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        goto fail;
    PQclear(res);
    res = NULL;
    if (!prepare_all(c)) {
        if (txn_mode(c->db)) /* a statement existed already: a pooler, now detected */
            return conn_open(c);
        goto fail;
    }
    c->ready = true;
    return true;
fail:
    if (c->timed_out)
        log_lost(c, "connect");
    else if (c->pg && PQstatus(c->pg) != CONNECTION_OK)
        vd_logf(VD_LOG_WARN, "database connection failed: %s", PQerrorMessage(c->pg));
    PQclear(res);
    conn_close(c);
    return false;
}

/* Wait for a free connection until `deadline`; NULL when none came. */
static vd_conn *pool_take(vd_db *db, double deadline)
{
    struct timespec ts;
    vd_conn *c = NULL;
    double whole = (double)(long long)deadline;
    ts.tv_sec = (time_t)whole;
    ts.tv_nsec = (long)((deadline - whole) * 1e9);
    pthread_mutex_lock(&db->mu);
    while (db->free_count == 0) {
        if (pthread_cond_timedwait(&db->cv, &db->mu, &ts) != 0 && db->free_count == 0) {
            pthread_mutex_unlock(&db->mu);
            return NULL;
        }
    }
    c = &db->conns[db->free_stack[--db->free_count]];
    db->in_use++;
    pthread_mutex_unlock(&db->mu);
    return c;
}

/* Open c unless the server is suspect and another caller is already probing it. */
static bool open_or_skip(vd_db *db, vd_conn *c)
{
    bool ok;
    pthread_mutex_lock(&db->mu);
    if (db->suspect && db->probing) {
        pthread_mutex_unlock(&db->mu);
        return false;
    }
    db->probing = db->suspect;
    pthread_mutex_unlock(&db->mu);
    ok = conn_open(c);
    pthread_mutex_lock(&db->mu);
    db->probing = false;
    if (ok)
        db->suspect = false;
    else if (c->timed_out)
        db->suspect = true;
    pthread_mutex_unlock(&db->mu);
    return ok;
}

static vd_error acquire(vd_db *db, double deadline, bool whole_borrow, vd_conn **out)
{
    vd_conn *c = pool_take(db, deadline);
    if (!c)
        return VD_ERR_DATABASE_UNAVAILABLE;
    c->deadline = whole_borrow ? deadline : 0;
    c->op_deadline = deadline;
    c->timed_out = false;
    if (c->pg && PQstatus(c->pg) != CONNECTION_OK)
        conn_close(c);
    if (!c->ready && !open_or_skip(db, c)) {
        vd_db_release(db, c);
        return VD_ERR_DATABASE_UNAVAILABLE;
    }
    *out = c;
    return VD_OK;
}

vd_error vd_db_acquire(vd_db *db, vd_conn **out)
{
    return acquire(db, vd_monotonic() + db->timeout_ms / 1000.0, false, out);
}

vd_error vd_db_acquire_until(vd_db *db, double deadline, vd_conn **out)
{
    return acquire(db, deadline, true, out);
}

void vd_conn_set_trace(vd_conn *c, const char *trace_id, const char *span_id)
{
    snprintf(c->trace_id, sizeof(c->trace_id), "%s", trace_id ? trace_id : "");
    snprintf(c->span_id, sizeof(c->span_id), "%s", trace_id && span_id ? span_id : "");
}

void vd_db_release(vd_db *db, vd_conn *c)
{
    if (!c)
        return;
    c->trace_id[0] = '\0';
    c->span_id[0] = '\0';
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
        strcmp(state, "40P01") == 0 || strcmp(state, "55P03") == 0 || strcmp(state, "57014") == 0)
        return VD_ERR_DATABASE_UNAVAILABLE;
    /* a prepared statement that does not exist: the statement did not run. A transaction
     * pooler gave us a server connection that never prepared it; the caller sends it again
     * unprepared, on a new connection */
    if (strcmp(state, "26000") == 0) {
        c->last_vanished = detect_pooler(c->db, "a prepared statement vanished") ||
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

/* One statement of a pipeline: a statement of the table with parameters (sql >= 0), or a
 * bare command. */
typedef struct step {
    int sql;
    const char *command;
    int n;
    const char *const *params;
} step;

#define COMMAND(text) ((step){-1, (text), 0, NULL})

/* Send steps[0..count) in one pipeline (one round trip) and read every result. On VD_OK
 * *kept (if not NULL) holds the result of steps[keep]; the first failure decides the error
 * (the steps after it are skipped by the server) and keeps nothing. */
static vd_error run_pipeline(vd_conn *c, const step *steps, int count, int keep, PGresult **kept)
{
    vd_error err = VD_OK;
    bool sent = PQenterPipelineMode(c->pg) == 1;
    for (int i = 0; sent && i < count; i++)
        sent = steps[i].sql >= 0
                   ? send_sql(c, (vd_sql)steps[i].sql, steps[i].n, steps[i].params)
                   : PQsendQueryParams(c->pg, steps[i].command, 0, NULL, NULL, NULL, NULL, 0) == 1;
    if (!sent || PQpipelineSync(c->pg) != 1 || !conn_pump(c, false))
        goto broken;
    for (int i = 0; i < count; i++) {
        PGresult *res = NULL, *more = NULL;
        bool ok = next_result(c, &res) && res;
        while (ok) {
            ok = next_result(c, &more);
            if (!ok || !more)
                break;
            PQclear(more);
        }
        if (!ok) {
            PQclear(res);
            goto broken;
        }
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
    PGresult *sync = NULL;
    bool synced = next_result(c, &sync) && sync && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
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
    log_lost(c, "pipeline");
    conn_close(c);
    return VD_ERR_DATABASE_UNAVAILABLE;
}

/* The steps that are waiting to be sent (a lazy BEGIN, a deferred statement), then `tail`. */
static int pending_steps(vd_conn *c, step *out, step tail)
{
    int k = 0;
    if (c->begin_pending)
        out[k++] = COMMAND("BEGIN");
    if (c->begin_pending && txn_mode(c->db))
        out[k++] = COMMAND(c->settings);
    if (c->begin_pending && c->indexed_pending)
        out[k++] = COMMAND("SET LOCAL enable_seqscan = off");
    if (c->deferred >= 0)
        out[k++] =
            (step){c->deferred, NULL, c->deferred_n, (const char *const *)c->deferred_params};
    out[k++] = tail;
    return k;
}

/* Run the pending steps and `tail`; on return nothing is pending any more. */
static vd_error run_with_pending(vd_conn *c, step tail, PGresult **out)
{
    step steps[6];
    int k = pending_steps(c, steps, tail);
    vd_error err;
    PGresult *res = NULL;
    if (k == 1) {
        res = tail.sql >= 0 ? conn_exec_sql(c, (vd_sql)tail.sql, tail.n, tail.params)
                            : conn_exec(c, tail.command);
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

/* A connection that sat idle may have been closed by the server (a restart, a failover, a
 * pooler's idle timeout): find that out before anything is sent on it, while opening a new
 * one is still safe. An idle server sends nothing we ask for, so anything readable (a FATAL
 * before the close, the close itself) means it is going away. */
static void probe_idle(vd_conn *c)
{
    struct pollfd p = {c->pg ? PQsocket(c->pg) : -1, POLLIN, 0};
    if (!c->ready)
        return;
    if (p.fd < 0 || PQstatus(c->pg) != CONNECTION_OK || poll(&p, 1, 0) != 0) {
        vd_logf(VD_LOG_INFO, "database connection closed while idle; opening a new one");
        conn_close(c);
    }
}

/* Pause 5-25 ms, jittered, before running a conflicted statement or transaction again; false
 * when the caller's deadline leaves no room for it. */
static bool conflict_pause(vd_conn *c)
{
    double pause = 0.005 + vd_random_unit() * 0.020;
    if (c->op_deadline - vd_monotonic() < pause + 0.010)
        return false;
    struct timespec ts = {0, (long)(pause * 1e9)};
    nanosleep(&ts, NULL);
    return true;
}

/* Whether a statement that was sent on a connection that then broke may be sent again on a
 * new one: reads, and writes whose second run changes nothing (a heartbeat sets the same
 * lease, a sweep closes only what is still due). A write that may have committed is not: it
 * would run twice (a second claim, a requeue answered with 0); its caller answers 503. */
static bool resend_safe(vd_sql sql)
{
    switch (sql) {
    case VD_SQL_CLAIM:
    case VD_SQL_CLAIM_LIMITED:
    case VD_SQL_LIMIT_DELETE:
    case VD_SQL_REQUEUE_ONE:
    case VD_SQL_REQUEUE_BULK:
    case VD_SQL_RESOLVE_ONE:
    case VD_SQL_RESOLVE_BULK:
    case VD_SQL_ITEMS_INSERT:
    case VD_SQL_TOOL_FAILURE_INSERT_TEMPLATE:
    case VD_SQL_JOB_FINISH:
    case VD_SQL_JOBS_FINISH:
    case VD_SQL_ITEM_RELEASE:
    case VD_SQL_JOB_SET_ADJUDICATION:
    case VD_SQL_IDEM_CLAIM:
    case VD_SQL_IDEM_SAVE:
        return false;
    default:
        return true;
    }
}

/* Run steps[0..count), the last a COMMIT, as one pipeline keeping the result of steps[keep];
 * on failure roll back what is still open (a ROLLBACK after a failed COMMIT is harmless). */
static vd_error run_committing(vd_conn *c, const step *steps, int count, int keep, PGresult **out)
{
    vd_error err = run_pipeline(c, steps, count, keep, out);
    if (err && c->ready) {
        PGresult *res = conn_exec(c, "ROLLBACK");
        PQclear(res);
    }
    return err;
}

/* One statement outside a transaction, once: alone in session mode; in transaction mode, or
 * with a generic plan, as BEGIN, settings, statement, COMMIT in one pipeline. */
static vd_error run_alone(vd_conn *c, vd_sql sql, int n, const char *const *params, bool generic,
                          PGresult **out)
{
    step steps[5];
    int k = 0, keep;
    if (!generic && !txn_mode(c->db))
        return run_with_pending(c, (step){(int)sql, NULL, n, params}, out);
    steps[k++] = COMMAND("BEGIN");
    if (txn_mode(c->db))
        steps[k++] = COMMAND(c->settings);
    if (generic)
        steps[k++] = COMMAND("SET LOCAL plan_cache_mode = force_generic_plan");
    keep = k;
    steps[k++] = (step){(int)sql, NULL, n, params};
    steps[k++] = COMMAND("COMMIT");
    return run_committing(c, steps, k, keep, out);
}

/* A statement outside a transaction, with the retry rules: a serialization failure or
 * deadlock (rolled back by the server) is run again after a jittered pause, within the
 * deadline; a connection found closed before sending is re-opened; one lost after sending
 * is re-opened and the statement sent again only when resend_safe. */
static vd_error exec_alone(vd_conn *c, vd_sql sql, int n, const char *const *params, bool generic,
                           PGresult **out)
{
    vd_error err = VD_ERR_DATABASE_UNAVAILABLE;
    bool resent = false;
    for (int attempt = 0; attempt < 6; attempt++) {
        c->last_conflict = false;
        probe_idle(c);
        if (!c->ready && !conn_open(c))
            return VD_ERR_DATABASE_UNAVAILABLE;
        c->last_vanished = false;
        err = run_alone(c, sql, n, params, generic, out);
        if (err == VD_OK)
            return VD_OK;
        if (c->last_vanished) /* it did not run: again, unprepared */
            continue;
        if (c->ready) { /* the statement failed; only a conflict is worth another run */
            if (!c->last_conflict || !conflict_pause(c))
                return err;
            continue;
        }
        if (resent || !resend_safe(sql))
            return err; /* it may have committed: the caller answers 503 */
        resent = true;
    }
    return err;
}

vd_error vd_sql_exec(vd_conn *c, vd_sql sql, int n, const char *const *params, PGresult **out)
{
    vd_error err = VD_OK;
    step tail = {(int)sql, NULL, n, params};
    bool in_tx = c->in_tx, indexed = c->indexed_pending;
    /* nothing has reached the server in this transaction yet: a new connection will do */
    bool fresh = c->begin_pending && c->deferred < 0;
    *out = NULL;
    c->last_vanished = false; /* per call: a stale flag would re-run a committed transaction */
    op_begin(c);
    if (!in_tx)
        return exec_alone(c, sql, n, params, false, out);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!c->ready) {
            if (!fresh || !conn_open(c))
                return VD_ERR_DATABASE_UNAVAILABLE;
            c->in_tx = c->begin_pending = true; /* the BEGIN still has to go */
            c->indexed_pending = indexed;
        }
        err = run_with_pending(c, tail, out);
        /* nothing of this transaction was committed: sending it again is safe */
        if (err != VD_ERR_DATABASE_UNAVAILABLE || !fresh || c->ready)
            break;
    }
    return err;
}

vd_error vd_sql_exec_generic(vd_conn *c, vd_sql sql, int n, const char *const *params,
                             PGresult **out)
{
    *out = NULL;
    if (c->in_tx)
        return VD_ERR_INTERNAL;
    op_begin(c);
    return exec_alone(c, sql, n, params, true, out);
}

vd_error vd_sql_exec_deferred(vd_conn *c, vd_sql sql, int n, const char *const *params)
{
    /* one deferred write at a time: every caller defers at most one between statements */
    if (!c->in_tx || n > VD_SQL_MAX_PARAMS || c->deferred >= 0)
        return VD_ERR_INTERNAL;
    for (int i = 0; i < n; i++) {
        c->deferred_params[i] = params[i] ? strdup(params[i]) : NULL;
        if (params[i] && !c->deferred_params[i]) {
            c->deferred_n = i;
            drop_deferred(c);
            return VD_ERR_INTERNAL;
        }
    }
    c->deferred = (int)sql;
    c->deferred_n = n;
    return VD_OK;
}

/* Send what the committed transaction announced (vd_sql_announce), then forget it. */
static void announce_flush(vd_conn *c)
{
    PGresult *res = NULL;
    const char *p[1];
    if (c->announce_len == 0 || c->in_tx)
        return;
    c->announce[c->announce_len] = '\0';
    p[0] = c->announce;
    c->announce_len = 0; /* the buffer stays valid: nothing appends during the call */
    op_begin(c);
    if (exec_alone(c, VD_SQL_ANNOUNCE, 1, p, false, &res) != VD_OK)
        vd_logf(VD_LOG_INFO, "could not announce claimable items (long-poll claims retry)");
    PQclear(res);
}

void vd_sql_announce(vd_conn *c, const char *lines)
{
    size_t n = lines ? strlen(lines) : 0;
    if (n == 0)
        return;
    if (c->announce_len + n + 2 > c->announce_cap) {
        size_t cap = (c->announce_len + n + 2) * 2;
        char *b = realloc(c->announce, cap);
        if (!b)
            return; /* the periodic retry covers it */
        c->announce = b;
        c->announce_cap = cap;
    }
    if (c->announce_len > 0)
        c->announce[c->announce_len++] = '\n';
    memcpy(c->announce + c->announce_len, lines, n);
    c->announce_len += n;
    if (!c->in_tx)
        announce_flush(c);
}

vd_error vd_sql_first_text_announce(vd_conn *c, vd_sql sql, int n, const char *const *params,
                                    int col, char **out)
{
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, sql, n, params, &res);
    *out = NULL;
    if (rc)
        return rc;
    if (PQntuples(res) > 0 && !PQgetisnull(res, 0, col))
        vd_sql_announce(c, PQgetvalue(res, 0, col));
    return vd_sql_result_text(rc, res, out);
}

vd_error vd_sql_exec_commit(vd_conn *c, vd_sql sql, int n, const char *const *params,
                            PGresult **out)
{
    step steps[7];
    int k;
    vd_error err;
    *out = NULL;
    if (!c->in_tx)
        return VD_ERR_INTERNAL;
    if (!c->ready) { /* lost mid-transaction: whatever was sent is gone with it */
        vd_sql_rollback(c);
        return VD_ERR_DATABASE_UNAVAILABLE;
    }
    c->last_vanished = false;
    op_begin(c);
    k = pending_steps(c, steps, (step){(int)sql, NULL, n, params});
    steps[k++] = COMMAND("COMMIT");
    err = run_committing(c, steps, k, k - 2, out);
    c->begin_pending = c->indexed_pending = false;
    drop_deferred(c);
    c->in_tx = false;
    if (err)
        drop_announce(c);
    else
        announce_flush(c);
    return err;
}

vd_error vd_sql_begin(vd_conn *c)
{
    op_begin(c);
    c->last_conflict = false; /* per transaction: a stale flag would re-run a committed one */
    drop_announce(c);
    probe_idle(c);
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
    op_begin(c);
    res = conn_exec(c, "SET LOCAL enable_seqscan = off");
    err = PQresultStatus(res) == PGRES_COMMAND_OK ? VD_OK : vd_sql_error(c, res);
    PQclear(res);
    return err;
}

vd_error vd_sql_prefer_generic(vd_conn *c)
{
    PGresult *res = NULL;
    vd_error err;
    if (!c->in_tx || c->begin_pending)
        return VD_ERR_INTERNAL;
    if (!c->ready)
        return VD_ERR_DATABASE_UNAVAILABLE;
    op_begin(c);
    res = conn_exec(c, "SET LOCAL plan_cache_mode = force_generic_plan");
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
    c->last_vanished = false;
    op_begin(c);
    err = run_with_pending(c, COMMAND("COMMIT"), NULL);
    if (err)
        vd_sql_rollback(c); /* a failed deferred statement leaves the transaction aborted */
    c->in_tx = false;
    if (!err)
        announce_flush(c);
    return err;
}

void vd_sql_rollback(vd_conn *c)
{
    drop_deferred(c);
    drop_announce(c);
    if (!c->in_tx) /* nothing open (vd_sql_exec_commit ended it) */
        return;
    if (!c->begin_pending && c->pg && PQstatus(c->pg) == CONNECTION_OK) {
        op_begin(c); /* past the deadline this drops the connection: that rolls back too */
        PGresult *res = conn_exec(c, "ROLLBACK");
        PQclear(res);
    }
    c->begin_pending = c->indexed_pending = false;
    c->in_tx = false;
}

vd_error vd_sql_tx(vd_conn *c, vd_tx_fn fn, void *arg)
{
    vd_error err = VD_OK;
    for (int attempt = 0; attempt < 6; attempt++) {
        c->last_vanished = false;
        err = vd_sql_begin(c);
        if (err)
            return err;
        err = fn(c, arg);
        if (err == VD_OK)
            err = vd_sql_commit(c);
        else
            vd_sql_rollback(c);
        /* a prepared statement that vanished aborted the transaction before anything of it
         * committed: the whole transaction runs again, unprepared, on a new connection */
        if (err == VD_ERR_DATABASE_UNAVAILABLE && c->last_vanished) {
            c->last_vanished = false;
            continue;
        }
        /* only a serialization failure or deadlock (rolled back by the server) is run
         * again: a lost connection may have taken a committed COMMIT with it */
        if (err != VD_ERR_DATABASE_UNAVAILABLE || !c->last_conflict || !c->ready ||
            !conflict_pause(c))
            return err;
    }
    return err;
}

vd_i64_text vd_i64_text_of(int64_t v)
{
    vd_i64_text t;
    snprintf(t.s, sizeof(t.s), "%" PRId64, v);
    return t;
}

vd_error vd_sql_result_text(vd_error rc, PGresult *res, char **out)
{
    *out = NULL;
    if (rc)
        return rc;
    if (PQntuples(res) == 0 || PQgetisnull(res, 0, 0))
        rc = VD_ERR_NOT_FOUND;
    else
        rc = vd_sql_dup(res, 0, 0, out);
    PQclear(res);
    return rc;
}

vd_error vd_sql_first_text(vd_conn *c, vd_sql sql, int n, const char *const *params, char **out)
{
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, sql, n, params, &res);
    return vd_sql_result_text(rc, res, out);
}
