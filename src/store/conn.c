/* conn.c - one connection: libpq runs non-blocking, and every wait (connect, send, result)
 * is one poll() bounded by a deadline, so a stopped or unreachable server costs a caller at
 * most VERDICT_DB_TIMEOUT_MS. Connect with verdict's keepalive policy, check the schema,
 * prepare every statement, send and collect. */
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

void vd_conn_drop_deferred(vd_conn *c)
{
    for (int i = 0; i < c->deferred_n; i++) {
        free(c->deferred_params[i]);
        c->deferred_params[i] = NULL;
    }
    c->deferred = -1;
    c->deferred_n = 0;
}

void vd_conn_drop_announce(vd_conn *c)
{
    c->announce_len = 0;
}

void vd_conn_close(vd_conn *c)
{
    if (c->pg)
        PQfinish(c->pg);
    c->pg = NULL;
    c->ready = false;
    c->tx = VD_TX_IDLE;
    vd_conn_drop_deferred(c);
    vd_conn_drop_announce(c);
}

/* Start the bound of one call: the borrow's deadline, or the pool timeout from now. */
void vd_conn_op_begin(vd_conn *c)
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
bool vd_conn_pump(vd_conn *c, bool result)
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
bool vd_conn_next_result(vd_conn *c, PGresult **res)
{
    *res = NULL;
    if (!vd_conn_pump(c, true))
        return false;
    *res = PQgetResult(c->pg);
    return true;
}

void vd_conn_log_lost(vd_conn *c, const char *what)
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
    bool ok = sent && vd_conn_pump(c, false);
    while (ok) {
        ok = vd_conn_next_result(c, &res);
        if (!ok || !res)
            break;
        if (keep && !vd_sql_result_ok(keep)) {
            PQclear(res); /* the first failure is the answer */
        } else {
            PQclear(keep);
            keep = res;
        }
    }
    if (!ok) {
        PQclear(keep);
        vd_conn_log_lost(c, "call");
        vd_conn_close(c);
        return NULL;
    }
    return keep;
}

/* PQexec, bounded: a command (several allowed) as one simple query. */
PGresult *vd_conn_exec(vd_conn *c, const char *command)
{
    return c->pg ? collect(c, PQsendQuery(c->pg, command) == 1) : NULL;
}

/* Send statement `sql`: its prepared name in session mode, else its text as an unnamed
 * statement (a transaction pooler may hand every transaction another server connection). */
bool vd_conn_send_sql(vd_conn *c, vd_sql sql, int n, const char *const *params)
{
    if (txn_mode(c->db))
        return PQsendQueryParams(c->pg, vd_sql_statements[sql].text, n, NULL, params, NULL, NULL,
                                 0) == 1;
    return PQsendQueryPrepared(c->pg, vd_sql_statements[sql].name, n, params, NULL, NULL, 0) == 1;
}

/* PQexecPrepared, bounded. */
PGresult *vd_conn_exec_sql(vd_conn *c, vd_sql sql, int n, const char *const *params)
{
    return c->pg ? collect(c, vd_conn_send_sql(c, sql, n, params)) : NULL;
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
    ok = ok && PQpipelineSync(c->pg) == 1 && vd_conn_pump(c, false);
    for (int i = 0; ok && i < VD_SQL__MAX; i++) {
        PGresult *res = NULL, *end = NULL;
        ok = vd_conn_next_result(c, &res) && res && vd_conn_next_result(c, &end) && !end;
        if (ok && PQresultStatus(res) != PGRES_COMMAND_OK) {
            const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
            if (!(state && strcmp(state, "42P05") == 0 &&
                  vd_db_detect_pooler(c->db,
                                      "a statement was prepared already on a new connection")))
                vd_logf(VD_LOG_WARN, "prepare %s failed: %s", vd_sql_statements[i].name,
                        PQresultErrorMessage(res));
            ok = false;
        }
        PQclear(res);
    }
    if (ok) {
        PGresult *sync = NULL;
        ok = vd_conn_next_result(c, &sync) && sync && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
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
        PGresult *res = vd_conn_exec(c, "SELECT coalesce(max(version), 0) FROM schema_migrations");
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
        vd_conn_exec(c, "SELECT pg_backend_pid(), to_regclass('schema_migrations') IS NOT NULL");
    bool ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1, table = false;
    if (ok && strtol(PQgetvalue(res, 0, 0), NULL, 10) != (long)PQbackendPID(c->pg))
        vd_db_detect_pooler(c->db,
                            "the server's backend pid is not the one the connection announced");
    table = ok && strcmp(PQgetvalue(res, 0, 1), "t") == 0;
    PQclear(res);
    return ok && schema_current(c, table);
}

/* Open the connection, check it (conn_probe) and, in session mode, set the session and
 * prepare every statement, under the call's deadline; false leaves it closed. */
bool vd_conn_open(vd_conn *c)
{
    char setup[160];
    PGresult *res = NULL;
    vd_conn_close(c);
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
    res = vd_conn_exec(c, setup);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        goto fail;
    PQclear(res);
    res = NULL;
    if (!prepare_all(c)) {
        if (txn_mode(c->db)) /* a statement existed already: a pooler, now detected */
            return vd_conn_open(c);
        goto fail;
    }
    c->ready = true;
    return true;
fail:
    if (c->timed_out)
        vd_conn_log_lost(c, "connect");
    else if (c->pg && PQstatus(c->pg) != CONNECTION_OK)
        vd_logf(VD_LOG_WARN, "database connection failed: %s", PQerrorMessage(c->pg));
    PQclear(res);
    vd_conn_close(c);
    return false;
}
