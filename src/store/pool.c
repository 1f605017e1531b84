/* pool.c - the connection pool: lend and return connections (vd_db_*), each borrow bounded
 * by a deadline; after a connect that got no answer in time one caller at a time probes the
 * server. The pool mode (prepared statements, or unprepared behind a transaction pooler) is
 * set here or detected by itself. A lost connection is re-opened lazily by the next borrow,
 * so the service recovers by itself when PostgreSQL comes back. */
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
bool vd_db_detect_pooler(vd_db *db, const char *why)
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
        vd_conn_close(&db->conns[i]);
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
    ok = vd_conn_open(c);
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
        vd_conn_close(c);
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
    if (vd_in_tx(c))
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
