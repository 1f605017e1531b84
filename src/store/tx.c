/* tx.c - one transaction on a borrowed connection: statements sent in pipelines (the lazy
 * BEGIN with the first statement, a deferred write with the next one, the last write with its
 * COMMIT), the long-poll announcements after COMMIT, and the retries. Serialization failures
 * and deadlocks are retried here, with jitter, for every statement; a statement that may have
 * committed is never sent again after a lost connection (reconnect rules below). */
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
                   ? vd_conn_send_sql(c, (vd_sql)steps[i].sql, steps[i].n, steps[i].params)
                   : PQsendQueryParams(c->pg, steps[i].command, 0, NULL, NULL, NULL, NULL, 0) == 1;
    if (!sent || PQpipelineSync(c->pg) != 1 || !vd_conn_pump(c, false))
        goto broken;
    for (int i = 0; i < count; i++) {
        PGresult *res = NULL, *more = NULL;
        bool ok = vd_conn_next_result(c, &res) && res;
        while (ok) {
            ok = vd_conn_next_result(c, &more);
            if (!ok || !more)
                break;
            PQclear(more);
        }
        if (!ok) {
            PQclear(res);
            goto broken;
        }
        if (err == VD_OK && !vd_sql_result_ok(res)) {
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
    bool synced =
        vd_conn_next_result(c, &sync) && sync && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
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
    vd_conn_log_lost(c, "pipeline");
    vd_conn_close(c);
    return VD_ERR_DATABASE_UNAVAILABLE;
}

/* The steps that are waiting to be sent (a lazy BEGIN, a deferred statement), then `tail`. */
static int pending_steps(vd_conn *c, step *out, step tail)
{
    int k = 0;
    if (vd_tx_begin_pending(c))
        out[k++] = COMMAND("BEGIN");
    if (vd_tx_begin_pending(c) && txn_mode(c->db))
        out[k++] = COMMAND(c->settings);
    if (c->tx == VD_TX_BEGIN_PENDING_INDEXED) {
        out[k++] = COMMAND(VD_SQL_NO_SEQSCAN);
        out[k++] = COMMAND(VD_SQL_GENERIC_PLAN);
    }
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
        res = tail.sql >= 0 ? vd_conn_exec_sql(c, (vd_sql)tail.sql, tail.n, tail.params)
                            : vd_conn_exec(c, tail.command);
        err = vd_sql_result_ok(res) ? VD_OK : vd_sql_error(c, res);
        if (err == VD_OK && out)
            *out = res;
        else
            PQclear(res);
        return err;
    }
    err = run_pipeline(c, steps, k, k - 1, out);
    if (c->pg && vd_tx_begin_pending(c))
        c->tx = VD_TX_OPEN; /* sent: the server holds it now */
    vd_conn_drop_deferred(c);
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
        vd_conn_close(c);
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
        PGresult *res = vd_conn_exec(c, "ROLLBACK");
        PQclear(res);
    }
    return err;
}

/* How a statement run alone is planned: as PostgreSQL chooses, once per connection (a generic
 * plan), or once per connection with sequential scans off. */
typedef enum plan_mode { PLAN_AUTO = 0, PLAN_GENERIC, PLAN_INDEXED } plan_mode;

/* One statement outside a transaction, once: alone in session mode; in transaction mode, or
 * with a generic plan, as BEGIN, settings, statement, COMMIT in one pipeline. */
static vd_error run_alone(vd_conn *c, vd_sql sql, int n, const char *const *params, plan_mode plan,
                          PGresult **out)
{
    step steps[6];
    int k = 0, keep;
    if (plan == PLAN_AUTO && !txn_mode(c->db))
        return run_with_pending(c, (step){(int)sql, NULL, n, params}, out);
    steps[k++] = COMMAND("BEGIN");
    if (txn_mode(c->db))
        steps[k++] = COMMAND(c->settings);
    if (plan == PLAN_INDEXED)
        steps[k++] = COMMAND(VD_SQL_NO_SEQSCAN);
    if (plan != PLAN_AUTO)
        steps[k++] = COMMAND(VD_SQL_GENERIC_PLAN);
    keep = k;
    steps[k++] = (step){(int)sql, NULL, n, params};
    steps[k++] = COMMAND("COMMIT");
    return run_committing(c, steps, k, keep, out);
}

/* A statement outside a transaction, with the retry rules: a serialization failure or
 * deadlock (rolled back by the server) is run again after a jittered pause, within the
 * deadline; a connection found closed before sending is re-opened; one lost after sending
 * is re-opened and the statement sent again only when resend_safe. */
static vd_error exec_alone(vd_conn *c, vd_sql sql, int n, const char *const *params, plan_mode plan,
                           PGresult **out)
{
    vd_error err = VD_ERR_DATABASE_UNAVAILABLE;
    bool resent = false;
    for (int attempt = 0; attempt < 6; attempt++) {
        c->last_conflict = false;
        probe_idle(c);
        if (!c->ready && !vd_conn_open(c))
            return VD_ERR_DATABASE_UNAVAILABLE;
        c->last_vanished = false;
        err = run_alone(c, sql, n, params, plan, out);
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
    bool in_tx = vd_in_tx(c), indexed = c->tx == VD_TX_BEGIN_PENDING_INDEXED;
    /* nothing has reached the server in this transaction yet: a new connection will do */
    bool fresh = vd_tx_begin_pending(c) && c->deferred < 0;
    *out = NULL;
    c->last_vanished = false; /* per call: a stale flag would re-run a committed transaction */
    vd_conn_op_begin(c);
    if (!in_tx)
        return exec_alone(c, sql, n, params, PLAN_AUTO, out);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!c->ready) {
            if (!fresh || !vd_conn_open(c))
                return VD_ERR_DATABASE_UNAVAILABLE;
            /* the BEGIN still has to go */
            c->tx = indexed ? VD_TX_BEGIN_PENDING_INDEXED : VD_TX_BEGIN_PENDING;
        }
        err = run_with_pending(c, tail, out);
        /* nothing of this transaction was committed: sending it again is safe */
        if (err != VD_ERR_DATABASE_UNAVAILABLE || !fresh || c->ready)
            break;
    }
    return err;
}

/* A statement as its own transaction, planned as `plan` says; outside a transaction only. */
static vd_error exec_planned(vd_conn *c, vd_sql sql, int n, const char *const *params,
                             plan_mode plan, PGresult **out)
{
    *out = NULL;
    if (vd_in_tx(c))
        return VD_ERR_INTERNAL;
    vd_conn_op_begin(c);
    return exec_alone(c, sql, n, params, plan, out);
}

vd_error vd_sql_exec_generic(vd_conn *c, vd_sql sql, int n, const char *const *params,
                             PGresult **out)
{
    return exec_planned(c, sql, n, params, PLAN_GENERIC, out);
}

vd_error vd_sql_exec_indexed(vd_conn *c, vd_sql sql, int n, const char *const *params,
                             PGresult **out)
{
    return exec_planned(c, sql, n, params, PLAN_INDEXED, out);
}

vd_error vd_sql_exec_deferred(vd_conn *c, vd_sql sql, int n, const char *const *params)
{
    /* one deferred write at a time: every caller defers at most one between statements */
    if (!vd_in_tx(c) || n > VD_SQL_MAX_PARAMS || c->deferred >= 0)
        return VD_ERR_INTERNAL;
    for (int i = 0; i < n; i++) {
        c->deferred_params[i] = params[i] ? strdup(params[i]) : NULL;
        if (params[i] && !c->deferred_params[i]) {
            c->deferred_n = i;
            vd_conn_drop_deferred(c);
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
    if (c->announce_len == 0 || vd_in_tx(c))
        return;
    c->announce[c->announce_len] = '\0';
    p[0] = c->announce;
    c->announce_len = 0; /* the buffer stays valid: nothing appends during the call */
    vd_conn_op_begin(c);
    if (exec_alone(c, VD_SQL_ANNOUNCE, 1, p, PLAN_AUTO, &res) != VD_OK)
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
    if (!vd_in_tx(c))
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
    if (!vd_in_tx(c))
        return VD_ERR_INTERNAL;
    if (!c->ready) { /* lost mid-transaction: whatever was sent is gone with it */
        vd_sql_rollback(c);
        return VD_ERR_DATABASE_UNAVAILABLE;
    }
    c->last_vanished = false;
    vd_conn_op_begin(c);
    k = pending_steps(c, steps, (step){(int)sql, NULL, n, params});
    steps[k++] = COMMAND("COMMIT");
    err = run_committing(c, steps, k, k - 2, out);
    c->tx = VD_TX_IDLE;
    vd_conn_drop_deferred(c);
    if (err)
        vd_conn_drop_announce(c);
    else
        announce_flush(c);
    return err;
}

vd_error vd_sql_begin(vd_conn *c)
{
    vd_conn_op_begin(c);
    c->last_conflict = false; /* per transaction: a stale flag would re-run a committed one */
    vd_conn_drop_announce(c);
    probe_idle(c);
    if (!c->ready && !vd_conn_open(c))
        return VD_ERR_DATABASE_UNAVAILABLE;
    c->tx = VD_TX_BEGIN_PENDING;
    return VD_OK;
}

vd_error vd_sql_prefer_indexes(vd_conn *c)
{
    PGresult *res = NULL;
    vd_error err;
    if (!vd_in_tx(c))
        return VD_ERR_INTERNAL;
    if (vd_tx_begin_pending(c)) {
        c->tx = VD_TX_BEGIN_PENDING_INDEXED;
        return VD_OK;
    }
    if (!c->ready)
        return VD_ERR_DATABASE_UNAVAILABLE;
    vd_conn_op_begin(c);
    res = vd_conn_exec(c, VD_SQL_NO_SEQSCAN);
    err = PQresultStatus(res) == PGRES_COMMAND_OK ? VD_OK : vd_sql_error(c, res);
    PQclear(res);
    return err ? err : vd_sql_prefer_generic(c);
}

vd_error vd_sql_prefer_generic(vd_conn *c)
{
    PGresult *res = NULL;
    vd_error err;
    if (!vd_in_tx(c) || vd_tx_begin_pending(c))
        return VD_ERR_INTERNAL;
    if (!c->ready)
        return VD_ERR_DATABASE_UNAVAILABLE;
    vd_conn_op_begin(c);
    res = vd_conn_exec(c, VD_SQL_GENERIC_PLAN);
    err = PQresultStatus(res) == PGRES_COMMAND_OK ? VD_OK : vd_sql_error(c, res);
    PQclear(res);
    return err;
}

vd_error vd_sql_commit(vd_conn *c)
{
    vd_error err = VD_OK;
    if (!vd_in_tx(c)) /* vd_sql_exec_commit ended it */
        return VD_OK;
    if (vd_tx_begin_pending(c) && c->deferred < 0) { /* nothing was sent: nothing to commit */
        c->tx = VD_TX_IDLE;
        return VD_OK;
    }
    if (!c->ready) {
        vd_conn_close(c);
        return VD_ERR_DATABASE_UNAVAILABLE;
    }
    c->last_vanished = false;
    vd_conn_op_begin(c);
    err = run_with_pending(c, COMMAND("COMMIT"), NULL);
    if (err)
        vd_sql_rollback(c); /* a failed deferred statement leaves the transaction aborted */
    c->tx = VD_TX_IDLE;
    if (!err)
        announce_flush(c);
    return err;
}

void vd_sql_rollback(vd_conn *c)
{
    vd_conn_drop_deferred(c);
    vd_conn_drop_announce(c);
    if (!vd_in_tx(c)) /* nothing open (vd_sql_exec_commit ended it) */
        return;
    if (!vd_tx_begin_pending(c) && c->pg && PQstatus(c->pg) == CONNECTION_OK) {
        vd_conn_op_begin(c); /* past the deadline this drops the connection: that rolls back too */
        PGresult *res = vd_conn_exec(c, "ROLLBACK");
        PQclear(res);
    }
    c->tx = VD_TX_IDLE;
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
