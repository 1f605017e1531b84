/* store_internal.h - what the store's own files share: the connection struct, the table of
 * prepared statements and the execution helpers. Only src/store/ includes this (and with it
 * libpq-fe.h). */
#ifndef VERDICT_STORE_INTERNAL_H
#define VERDICT_STORE_INTERNAL_H

#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/store.h"

/* The settings of a transaction's statements, the same on the sync path (tx.c) and on the
 * executor (async_claim.c, async_jobs.c): job writes plan with sequential scans off
 * (vd_sql_prefer_indexes), and claims and job writes plan once per connection
 * (docs/decisions/0096-job-writes-planned-once.md). */
#define VD_SQL_NO_SEQSCAN "SET LOCAL enable_seqscan = off"
#define VD_SQL_GENERIC_PLAN "SET LOCAL plan_cache_mode = force_generic_plan"

/* Most parameters any statement takes (statements.def). */
#define VD_SQL_MAX_PARAMS 25

/* Where a connection's transaction is: none; begun, but BEGIN is not sent yet (it goes with
 * the next statement), with SET LOCAL enable_seqscan = off and plan_cache_mode =
 * force_generic_plan too (vd_sql_prefer_indexes); or
 * sent, open on the server until COMMIT or ROLLBACK. */
typedef enum vd_tx_state {
    VD_TX_IDLE = 0,
    VD_TX_BEGIN_PENDING,
    VD_TX_BEGIN_PENDING_INDEXED,
    VD_TX_OPEN
} vd_tx_state;

struct vd_conn {
    PGconn *pg;
    bool ready;         /* connected and every statement prepared */
    vd_tx_state tx;     /* where its transaction is (tx.c) */
    bool last_conflict; /* the last error was a serialization failure or deadlock */
    bool timed_out;     /* the last call passed its deadline (the connection was dropped) */
    bool last_vanished; /* the last error: a prepared statement did not exist (26000), so
                         * nothing ran; a transaction pooler was detected by it */
    int index;
    const char *url;    /* borrowed from the pool */
    struct vd_db *db;   /* the pool it belongs to */
    int timeout_ms;     /* the pool's VERDICT_DB_TIMEOUT_MS */
    double deadline;    /* vd_monotonic() bound of the whole borrow (request), 0: per call */
    double op_deadline; /* the bound of the call in progress */
    /* A statement whose rows nobody reads (vd_sql_exec_deferred), sent in one pipeline with
     * the next statement or the COMMIT; its parameters are owned copies. */
    int deferred; /* a vd_sql, or -1 */
    int deferred_n;
    char *deferred_params[VD_SQL_MAX_PARAMS];
    /* statement_timeout, TimeZone and jit for one transaction (SET LOCAL by set_config): sent
     * after every BEGIN in transaction pool mode, where a session SET would stay behind on
     * whichever server connection the pooler gave us */
    char settings[192];
    /* what this transaction made claimable (vd_sql_announce): "<count> <flow_step_id>" lines
     * to NOTIFY after its COMMIT (malloc'd; len 0: nothing) */
    char *announce;
    size_t announce_len, announce_cap;
    char trace_id[33]; /* the borrowing request's trace id (vd_conn_set_trace), "" none */
    char span_id[17];  /* ... and verdictd's span of it, "" none */
};

/* Inside BEGIN .. COMMIT/ROLLBACK (whether or not BEGIN was sent yet). */
static inline bool vd_in_tx(const vd_conn *c)
{
    return c->tx != VD_TX_IDLE;
}
/* Begun, but BEGIN is not sent yet: it goes with the next statement. */
static inline bool vd_tx_begin_pending(const vd_conn *c)
{
    return c->tx == VD_TX_BEGIN_PENDING || c->tx == VD_TX_BEGIN_PENDING_INDEXED;
}

/* Start a non-blocking connection to url (a libpq connection string or URI, which may
 * override any of these) with verdict's keepalive policy: keepalives after 5 s idle, every
 * 2 s, 3 probes; connect_timeout in whole seconds and tcp_user_timeout in ms as text. Both
 * the pool (conn.c) and the LISTEN connection (listen.c) connect through it. */
PGconn *vd_pg_connect_start(const char *url, const char *app, const char *connect_timeout,
                            const char *user_timeout_ms);

/* The one table of a job's finishing record (vd_job_finish): XX(column, SQL type, kind,
 * value). Its order is the positional job_finish statement's ($1, $2, …); jobs_finish takes
 * the same columns by name from a JSON array (the recordset column list is generated from
 * it). Kinds: I64, INT, DBL, BOOL, STR (NULL allowed), JSON (text that is JSON, or NULL). */
#define VD_FINISH_COLUMNS(XX)                                                                      \
    XX(job_id, "bigint", I64, w->job_id)                                                           \
    XX(item_id, "bigint", I64, w->item_id)                                                         \
    XX(to_state, "text", STR, vd_item_state_name(w->to_state))                                     \
    XX(job_status, "text", STR, vd_job_status_name(w->job_status))                                 \
    XX(cause, "text", STR, vd_cause_name(w->cause))                                                \
    XX(disposition, "text", STR, vd_disposition_name(w->disposition))                              \
    XX(reason_code, "text", STR, w->reason_code)                                                   \
    XX(reason, "text", STR, w->reason)                                                             \
    XX(failures, "integer", INT, w->failures)                                                      \
    XX(defers, "integer", INT, w->defers)                                                          \
    XX(delay, "float8", DBL, w->delay_seconds)                                                     \
    XX(forced, "boolean", BOOL, w->forced)                                                         \
    XX(actor, "text", STR, w->actor)                                                               \
    XX(engine_data, "jsonb", JSON, w->engine_data)                                                 \
    XX(adjudication, "text", JSON, w->adjudication)                                                \
    XX(request, "jsonb", JSON, w->request_json)                                                    \
    XX(answer_disposition, "text", STR,                                                            \
       w->answer_disposition ? vd_disposition_name(w->disposition) : NULL)                         \
    XX(answer_adjudication, "boolean", BOOL, w->answer_adjudication)                               \
    XX(deprecation_hint, "text", STR, w->deprecation_hint)                                         \
    XX(lint_overridden, "boolean", BOOL, w->lint_overridden)                                       \
    XX(evidence, "text", STR, w->evidence)                                                         \
    XX(tool_result_text, "text", STR, w->tool_result_text)                                         \
    XX(tool_result_terminal, "boolean", BOOL, w->tool_result_terminal)                             \
    XX(claims, "text", STR, w->claims)

/* How many columns VD_FINISH_COLUMNS has (the positional job_finish takes one more: the
 * request's trace id). */
#define VD_FINISH_COUNT(col, type, k, value) +1
enum { VD_FINISH_NCOLUMNS = 0 VD_FINISH_COLUMNS(VD_FINISH_COUNT) };

/* jobs.c's pieces of a job write, for the executor's continuation (async_jobs.c) to send the
 * very statements vd_store_jobs_lock and vd_store_jobs_finish send. jobs_lock's one
 * parameter (malloc'd; NULL when memory ran out); its rows (column 0 the index into out)
 * into out[0..n); job_finish's positional parameters into p[0..VD_FINISH_NCOLUMNS] (text
 * holds the numbers; trace_id is the request's, used when w has none); jobs_finish's one
 * parameter (malloc'd); the kept answers of w[0..n) from jobs_finish's rows (answers
 * NULL-initialised; VD_ERR_INTERNAL when one is missing); whether finishing w makes its item
 * claimable at once (a release, a defer without delay: announced after the COMMIT). */
struct vd_job_key;
struct vd_job_snapshot;
struct vd_job_finish;
char *vd_jobs_lock_rows(const struct vd_job_key *keys, size_t n);
vd_error vd_jobs_read_snapshots(const PGresult *res, size_t n, struct vd_job_snapshot *out);
void vd_job_finish_params(const struct vd_job_finish *w, const char *trace_id, char (*text)[32],
                          const char **p);
char *vd_jobs_finish_rows(const struct vd_job_finish *w, size_t n);
vd_error vd_jobs_read_answers(const PGresult *res, const struct vd_job_finish *w, size_t n,
                              char **answers);
bool vd_job_claimable_now(const struct vd_job_finish *w);

/* A copy of the text of row, col (malloc'd) into *out: VD_OK, or VD_ERR_INTERNAL when
 * memory ran out (*out NULL). */
static inline vd_error vd_sql_dup(const PGresult *res, int row, int col, char **out)
{
    *out = strdup(PQgetvalue(res, row, col));
    return *out ? VD_OK : VD_ERR_INTERNAL;
}

/* The decimal text of an id or count, for a statement parameter (.s). */
typedef struct vd_i64_text {
    char s[24];
} vd_i64_text;
vd_i64_text vd_i64_text_of(int64_t v);

/* Whether the boolean value at row, col reads true. */
static inline bool vd_sql_flag(const PGresult *res, int row, int col)
{
    return strcmp(PQgetvalue(res, row, col), "t") == 0;
}

/* Every SQL statement of the service, prepared once per connection (statements.c; in
 * transaction pool mode sent as unnamed statements instead). */
typedef enum vd_sql {
    VD_SQL_SCHEMA_VERSION = 0,
#define VD_SQL_ENUM(name) VD_SQL_##name,
#include "statements.def"
#undef VD_SQL_ENUM
    VD_SQL__MAX
} vd_sql;

typedef struct vd_sql_statement {
    const char *name;
    const char *text;
} vd_sql_statement;

extern const vd_sql_statement vd_sql_statements[VD_SQL__MAX];

/* Run prepared statement `sql` with `n` text parameters (NULL = SQL NULL). On VD_OK *res is
 * a PGRES_TUPLES_OK/COMMAND_OK result the caller PQclears; on error *res is NULL. A lost
 * connection outside a transaction is re-opened and the statement retried once. */
vd_error vd_sql_exec(vd_conn *c, vd_sql sql, int n, const char *const *params, PGresult **res);
/* Run `sql` alone as its own transaction with a generic plan, in one round trip (BEGIN;
 * SET LOCAL plan_cache_mode = force_generic_plan; sql; COMMIT pipelined). For a hot
 * statement whose custom plan costs more to make than to run (the claim); outside a
 * transaction only. Same result contract and reconnect-once rule as vd_sql_exec. */
vd_error vd_sql_exec_generic(vd_conn *c, vd_sql sql, int n, const char *const *params,
                             PGresult **res);
/* The same with sequential scans off as well (SET LOCAL enable_seqscan = off), for the claims:
 * their generic plan is made on a connection's first claim, often while jobs is empty or
 * never analyzed, and a plan that scans jobs then (a claim's look-up of a lane's holders, of
 * an earlier attempt's checkpoint) would scan all of it as it grows, until an ANALYZE
 * (docs/decisions/0122-claims-planned-by-index.md). */
vd_error vd_sql_exec_indexed(vd_conn *c, vd_sql sql, int n, const char *const *params,
                             PGresult **res);
/* Run `sql` and copy the text of its first row's first column into *out (malloc'd):
 * VD_ERR_NOT_FOUND when there is no row or the value is NULL. For the statements that answer
 * one JSON document. */
vd_error vd_sql_first_text(vd_conn *c, vd_sql sql, int n, const char *const *params, char **out);
/* The same for a result already run (rc, res of vd_sql_exec or a sibling); frees res. */
vd_error vd_sql_result_text(vd_error rc, PGresult *res, char **out);
/* Run `sql` later, in the same pipeline as the next statement or the COMMIT (inside a
 * transaction only): for a write whose result nobody reads, it saves a round trip. Its error,
 * if any, is the error of that next call. Parameters are copied. One at a time: a second
 * deferral before the next statement is VD_ERR_INTERNAL. */
vd_error vd_sql_exec_deferred(vd_conn *c, vd_sql sql, int n, const char *const *params);
/* Run `sql` as the transaction's last statement, in one pipeline with what is pending and
 * the COMMIT: one round trip for the final write and its commit. *res holds the statement's
 * result only when both succeeded; on any failure the transaction is rolled back. Either way
 * the transaction is over, and the vd_sql_commit that follows is a no-op. */
vd_error vd_sql_exec_commit(vd_conn *c, vd_sql sql, int n, const char *const *params,
                            PGresult **res);
/* BEGIN / COMMIT / ROLLBACK. BEGIN is sent lazily, in one pipeline with the transaction's
 * first statement; COMMIT carries a deferred statement with it. Rollback never fails
 * visibly. */
vd_error vd_sql_begin(vd_conn *c);
/* Plan the rest of this transaction's statements with sequential scans disabled, and once per
 * connection (a generic plan). For the job writes: a plan cached while a table was small (a
 * sequential scan is cheapest then) would otherwise be kept while the table grows, until the
 * next ANALYZE of it; and left to choose, PostgreSQL planned job_lock and job_finish again at
 * every execution (decisions/0096-job-writes-planned-once.md). Sent with the lazy BEGIN when
 * that is still pending (no round trip), else on its own. */
vd_error vd_sql_prefer_indexes(vd_conn *c);
/* Inside a transaction that has begun: plan the rest of it generically (SET LOCAL
 * plan_cache_mode = force_generic_plan; one round trip), as a claim alone is planned. */
vd_error vd_sql_prefer_generic(vd_conn *c);
vd_error vd_sql_commit(vd_conn *c);
void vd_sql_rollback(vd_conn *c);
/* Map a failed result (or NULL with a broken connection) to the one error table. */
vd_error vd_sql_error(vd_conn *c, const PGresult *res);
/* Whether the last error was a serialization failure or deadlock (worth retrying the tx). */
bool vd_sql_is_retryable_conflict(const PGresult *res);

/* Long-poll claims: lines "<count> <flow_step_id>" (a statement's announce column; NULL or ""
 * is nothing) of items made claimable now, sent as NOTIFY verdict_claimable once committed:
 * at once outside a transaction (the statement has committed), else after the transaction's
 * COMMIT succeeds (dropped on rollback). The NOTIFYs go in a transaction of their own that
 * writes nothing: inside the writing transaction they would serialise every such commit on
 * PostgreSQL's notify lock (README "Long-poll claims"). A failure is logged, not returned:
 * the waiters' periodic retry covers a lost announcement. */
void vd_sql_announce(vd_conn *c, const char *lines);
/* vd_sql_first_text for a statement whose last column (col) is an announcement: the first
 * column's text into *out, the announcement to vd_sql_announce. */
vd_error vd_sql_first_text_announce(vd_conn *c, vd_sql sql, int n, const char *const *params,
                                    int col, char **out);

/* Run fn(c, arg) inside a transaction, retried a few times with a jittered pause on
 * serialization failures and deadlocks. fn must be safe to run again from scratch. */
typedef vd_error (*vd_tx_fn)(vd_conn *c, void *arg);
vd_error vd_sql_tx(vd_conn *c, vd_tx_fn fn, void *arg);

#endif
