/* store.h - verdict's PostgreSQL store: a pool of libpq connections, the migrations, and the
 * data operations the service layer calls. Callers never see libpq: resources come back as
 * JSON text rendered by the database (sql/migrations/0001_init.sql's verdict_*_json functions) and
 * failures as vd_error (SQLSTATE mapped in one place, store/sqlstate.c).
 *
 * Thread safety: the pool is thread-safe; one vd_conn belongs to one thread between
 * vd_db_acquire and vd_db_release.
 */
#ifndef VERDICT_STORE_H
#define VERDICT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "verdict/error.h"

typedef struct vd_db vd_db;
typedef struct vd_conn vd_conn;

/* Create a pool of up to `size` connections to `url` (borrowed; copied). Connections are
 * opened lazily. Returns NULL on allocation failure; free with vd_db_destroy. */
vd_db *vd_db_create(const char *url, int size);
void vd_db_destroy(vd_db *db);
/* The client-side bound of a database call (VERDICT_DB_TIMEOUT_MS; default 5000): waiting for
 * a pooled connection, connecting, and every statement's send and result. Call before use. */
void vd_db_set_timeout(vd_db *db, int timeout_ms);

/* VERDICT_DB_POOL_MODE=transaction (a transaction-pooling PgBouncer between us and the
 * server): no named prepared statements (each statement is sent with its text, unnamed) and no
 * session state (the settings go with every transaction as SET LOCAL). `forced`: the mode was
 * set (either way), so it is never switched by itself. Unforced session mode switches to
 * transaction mode by itself, with a warning, when a new connection's backend pid is not the
 * one the server announced (a pooler), or a prepared statement vanished (SQLSTATE 26000) or
 * already existed (42P05). Call before use. */
void vd_db_set_pool_mode(vd_db *db, bool transaction, bool forced);
/* Whether statements are sent unprepared (configured or detected), and whether a pooler was
 * detected by itself (the metrics). */
bool vd_db_unprepared(const vd_db *db);
bool vd_db_pool_mode_detected(const vd_db *db);

/* Borrow a connected, prepared connection for the calling thread. Returns VD_OK and sets
 * *out, or VD_ERR_DATABASE_UNAVAILABLE (nothing to release). Waiting for a free connection
 * and connecting are bounded by the pool's timeout; so is each later call on it, on its own. */
VD_MUST_USE vd_error vd_db_acquire(vd_db *db, vd_conn **out);
/* The same, with one deadline (a vd_monotonic() time) for everything: the wait for a free
 * connection, connecting, and every call on the connection until it is released. A call that
 * passes it drops the connection (whatever it sent is rolled back by the server) and answers
 * VD_ERR_DATABASE_UNAVAILABLE. For requests: nothing they do outlives their bound. */
VD_MUST_USE vd_error vd_db_acquire_until(vd_db *db, double deadline, vd_conn **out);
/* The W3C trace id (32 hex digits, copied; NULL clears) of the request that borrowed conn:
 * a claim or a job's finishing statement made on conn records it on the job. Cleared when the
 * connection is released. */
void vd_conn_set_trace(vd_conn *conn, const char *trace_id, const char *span_id);
/* Give a connection back; a broken one is re-opened by the next acquire. */
void vd_db_release(vd_db *db, vd_conn *conn);
/* How many connections are borrowed right now. */
int vd_db_in_use(vd_db *db);
/* How many connections the pool may hold. */
int vd_db_size(const vd_db *db);

/* Apply every pending embedded migration under an advisory lock, each in its own
 * transaction. *applied (may be NULL) receives how many were applied. On failure writes a
 * message into err. Opens its own connection. */
VD_MUST_USE vd_error vd_store_migrate(const char *url, int *applied, char *err, size_t errlen);
/* The newest migration version the binary knows. */
int vd_store_latest_version(void);
/* VD_OK when the database answers and its schema is at the newest migration. */
VD_MUST_USE vd_error vd_store_ready(vd_conn *conn, int *version);

/* Run fn(c, arg) in one transaction, retried on serialization failures and deadlocks (fn
 * must be safe to run again from scratch). */
typedef vd_error (*vd_store_tx_fn)(vd_conn *c, void *arg);
VD_MUST_USE vd_error vd_store_tx(vd_conn *c, vd_store_tx_fn fn, void *arg);

#endif
