/* async.c - the non-blocking executor: one thread owning K connections of its own, each
 * non-blocking and in pipeline mode for good. A job (BEGIN, statements, COMMIT) goes out on a
 * free connection in one pipeline with its Sync; poll() on every socket reads the results as
 * they arrive and calls the job's callback at its Sync. One thread is enough: per transaction
 * it only formats a few messages and parses a few results (microseconds), while the
 * transaction itself takes milliseconds in PostgreSQL; K connections keep K in flight.
 * Connections are opened (and every statement prepared, conn.c) on this thread, bounded by the
 * pool timeout, when a job needs one. A failed job's transaction is rolled back (a ROLLBACK
 * with its own Sync) before the connection takes another. A job may hold its connection past
 * its Sync, its transaction open, for the continuation its callback sends on it at once (a
 * batch disposition's finish after its lock, decided in C in between: async_jobs.c). */
#include "async_internal.h"
#include "conn_internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "verdict/util.h"

/* One connection of the executor. */
typedef struct aconn {
    vd_conn c;
    vd_async_job *job; /* in flight, or NULL */
    int step;          /* the step whose results are read (count: its Sync is next) */
    bool got;          /* a result of that step came */
    bool rollback;     /* a ROLLBACK after a failed job is in flight (to its Sync) */
    bool flushing;     /* libpq holds data the socket did not take yet */
    double retry_at;   /* a failed open: no other attempt before this */
} aconn;

struct vd_async {
    vd_db *db;
    int k;
    aconn *conns;
    pthread_t thread;
    bool started;
    int wake_fd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vd_async_job *head, *tail; /* submitted, not sent yet */
    int pending;               /* submitted and not called back */
    bool draining;             /* refuse submissions from other threads */
    bool quit;
    /* executor thread only: the connection a hold job's callback may continue on, and
     * whether that continuation's flush failed (it is answered once the callback returned) */
    aconn *holding;
    bool held_broken;
};

vd_async_job *vd_async_job_new(double deadline, vd_async_fn done, void *arg)
{
    vd_async_job *j = calloc(1, sizeof(*j));
    if (j) {
        j->deadline = deadline;
        j->done = done;
        j->arg = arg;
        j->keep = -1;
    }
    return j;
}

bool vd_async_job_add(vd_async_job *j, int sql, const char *command, int n,
                      const char *const *params)
{
    vd_async_step *s;
    if (j->count >= VD_ASYNC_STEPS || n > VD_SQL_MAX_PARAMS)
        return false;
    s = &j->steps[j->count++];
    s->sql = sql;
    s->command = command;
    s->n = n;
    for (int i = 0; i < n; i++) {
        s->params[i] = params[i] ? strdup(params[i]) : NULL;
        if (params[i] && !s->params[i])
            return false;
    }
    return true;
}

void vd_async_job_free(vd_async_job *j)
{
    if (!j)
        return;
    for (int i = 0; i < j->count; i++)
        for (int p = 0; p < j->steps[i].n; p++)
            free(j->steps[i].params[p]);
    PQclear(j->kept);
    free(j);
}

static void wake(vd_async *x)
{
    uint64_t one = 1;
    ssize_t n = write(x->wake_fd, &one, sizeof(one));
    (void)n; /* a full counter wakes the thread as well */
}

bool vd_async_submit(vd_async *x, vd_async_job *j)
{
    bool ok;
    pthread_mutex_lock(&x->mu);
    ok = !x->quit && (!x->draining || pthread_equal(pthread_self(), x->thread));
    if (ok) {
        if (x->tail)
            x->tail->next = j;
        else
            x->head = j;
        x->tail = j;
        x->pending++;
    }
    pthread_mutex_unlock(&x->mu);
    if (!ok) {
        vd_async_job_free(j);
        return false;
    }
    wake(x);
    return true;
}

bool vd_async_usable(vd_async *x)
{
    bool ok;
    if (!x || txn_mode(x->db))
        return false;
    pthread_mutex_lock(&x->mu);
    ok = !x->draining && !x->quit;
    pthread_mutex_unlock(&x->mu);
    return ok;
}

/* Hand j's outcome to its callback (which may submit a follow-up) and count it done. */
static void finish_job(vd_async *x, vd_async_job *j, vd_async_outcome o)
{
    PGresult *kept = NULL;
    if (o == VD_ASYNC_DONE) {
        kept = j->kept;
        j->kept = NULL;
    }
    j->done(j->arg, o, kept);
    vd_async_job_free(j);
    pthread_mutex_lock(&x->mu);
    x->pending--;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

/* The connection broke, or its job passed its deadline: close it and answer its job. One
 * whose statement failed before the last (the COMMIT, or the statement that is its own
 * transaction) committed nothing: the pipeline skipped the rest. Any other may have
 * committed: never sent again. */
static void conn_lost(vd_async *x, aconn *a)
{
    vd_async_job *j = a->job;
    /* a hold job has no COMMIT: lost, it committed nothing (past its deadline it is over) */
    bool again =
        j && ((j->failed && j->failed_step < j->count - 1) || (j->hold && !a->c.timed_out));
    if (j || a->rollback)
        vd_conn_log_lost(&a->c, "pipeline");
    vd_conn_close(&a->c);
    a->job = NULL;
    a->rollback = false;
    a->flushing = false;
    if (j)
        finish_job(x, j, again ? VD_ASYNC_AGAIN : VD_ASYNC_LOST);
}

/* Open a's connection for a job due by deadline: prepared statements, pipeline mode. False
 * (and no other attempt for a second) when the server did not take it, or when the pool went
 * to unprepared statements (the executor has no transaction pool mode). */
static bool conn_ready(vd_async *x, aconn *a, double deadline)
{
    double now = vd_monotonic();
    if (a->c.ready)
        return true;
    if (now < a->retry_at)
        return false;
    a->c.deadline = deadline;
    vd_conn_op_begin(&a->c);
    a->c.deadline = 0;
    if (vd_conn_open(&a->c) && !txn_mode(x->db) && PQenterPipelineMode(a->c.pg) == 1)
        return true;
    vd_conn_close(&a->c);
    a->retry_at = now + 1.0;
    return false;
}

/* Send j on a in one pipeline with its Sync. False when it could not be handed to libpq
 * (nothing reached the server: libpq buffers until the flush) or the flush failed. */
static bool send_job(aconn *a, vd_async_job *j, bool *flushed)
{
    PGconn *pg = a->c.pg;
    bool ok = true;
    int f;
    *flushed = false;
    for (int i = 0; ok && i < j->count; i++) {
        const vd_async_step *s = &j->steps[i];
        ok = s->sql >= 0
                 ? vd_conn_send_sql(&a->c, (vd_sql)s->sql, s->n, (const char *const *)s->params)
                 : PQsendQueryParams(pg, s->command, 0, NULL, NULL, NULL, NULL, 0) == 1;
    }
    if (!ok || PQpipelineSync(pg) != 1)
        return false;
    *flushed = true;
    f = PQflush(pg);
    a->flushing = f == 1;
    return f >= 0;
}

/* A free connection for the next queued job: an open one first, else one that opens now.
 * NULL when every connection is busy or none opens. */
static aconn *free_conn(vd_async *x, double deadline, bool *all_down)
{
    bool busy = false;
    for (int i = 0; i < x->k; i++) {
        aconn *a = &x->conns[i];
        if (!a->job && !a->rollback && a->c.ready)
            return a;
        busy = busy || a->job || a->rollback;
    }
    for (int i = 0; i < x->k; i++) {
        aconn *a = &x->conns[i];
        if (!a->job && !a->rollback && conn_ready(x, a, deadline))
            return a;
    }
    *all_down = !busy;
    return NULL;
}

static vd_async_job *queue_pop(vd_async *x)
{
    vd_async_job *j;
    pthread_mutex_lock(&x->mu);
    j = x->head;
    if (j) {
        x->head = j->next;
        if (!x->head)
            x->tail = NULL;
        j->next = NULL;
    }
    pthread_mutex_unlock(&x->mu);
    return j;
}

static void queue_push_front(vd_async *x, vd_async_job *j)
{
    pthread_mutex_lock(&x->mu);
    j->next = x->head;
    x->head = j;
    if (!x->tail)
        x->tail = j;
    pthread_mutex_unlock(&x->mu);
}

/* Send queued jobs while connections are free. With no connection open and none that opens,
 * a job goes back to its caller (VD_ASYNC_AGAIN: the sync path answers an outage as usual);
 * one whose deadline passed while it waited for a connection answers as a pool wait that
 * timed out (VD_ASYNC_LOST: 503; nothing of it was sent). */
static void dispatch(vd_async *x)
{
    for (vd_async_job *j = queue_pop(x); j; j = queue_pop(x)) {
        bool all_down = false, flushed = false;
        aconn *a = NULL;
        if (j->deadline <= vd_monotonic()) {
            finish_job(x, j, VD_ASYNC_LOST);
            continue;
        }
        a = txn_mode(x->db) ? NULL : free_conn(x, j->deadline, &all_down);
        if (!a && !all_down && !txn_mode(x->db)) {
            queue_push_front(x, j); /* every connection busy: it waits its turn */
            return;
        }
        if (!a) {
            finish_job(x, j, VD_ASYNC_AGAIN);
            continue;
        }
        a->job = j;
        a->step = 0;
        a->got = false;
        if (!send_job(a, j, &flushed)) {
            a->job = NULL;
            vd_conn_close(&a->c);
            finish_job(x, j, flushed && !j->hold ? VD_ASYNC_LOST : VD_ASYNC_AGAIN);
        }
    }
}

/* A failed job's BEGIN block stays open, aborted, after its Sync: roll it back (its own
 * Sync) before the connection takes another job. */
static void send_rollback(vd_async *x, aconn *a)
{
    PGconn *pg = a->c.pg;
    a->rollback = PQsendQueryParams(pg, "ROLLBACK", 0, NULL, NULL, NULL, NULL, 0) == 1 &&
                  PQpipelineSync(pg) == 1 && PQflush(pg) >= 0;
    if (!a->rollback)
        conn_lost(x, a);
}

/* Whether a failed j left a transaction open at its Sync (aborted: to be rolled back). */
static bool leaves_tx(const vd_async_job *j)
{
    return j->in_tx || (j->steps[0].sql < 0 && strcmp(j->steps[0].command, "BEGIN") == 0);
}

/* A hold job at its Sync: its callback may continue on a (vd_async_submit_held); a
 * connection it does not continue on is rolled back. */
static void held_done(vd_async *x, aconn *a, vd_async_job *j)
{
    x->holding = a;
    x->held_broken = false;
    finish_job(x, j, VD_ASYNC_DONE);
    x->holding = NULL;
    if (x->held_broken) /* the continuation may have reached the server: lost */
        conn_lost(x, a);
    else if (!a->job && a->c.ready)
        send_rollback(x, a);
}

bool vd_async_submit_held(vd_async *x, vd_async_job *j)
{
    aconn *a = x->holding;
    bool flushed = false, sent;
    if (!a || a->job || !a->c.ready) {
        vd_async_job_free(j);
        return false;
    }
    j->in_tx = true;
    a->job = j;
    a->step = 0;
    a->got = false;
    sent = send_job(a, j, &flushed);
    if (!sent && !flushed) { /* nothing reached the server: closing rolls it back */
        a->job = NULL;
        vd_conn_close(&a->c);
        vd_async_job_free(j);
        return false;
    }
    x->held_broken = !sent;
    pthread_mutex_lock(&x->mu);
    x->pending++;
    pthread_mutex_unlock(&x->mu);
    return true;
}

/* One result of a's job (NULL: the end of a step's results). */
static void job_result(vd_async *x, aconn *a, PGresult *res)
{
    vd_async_job *j = a->job;
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_EMPTY_QUERY;
    if (!res) {
        if (a->got) { /* a step's results end with a NULL (a stray one is skipped) */
            a->step++;
            a->got = false;
        }
        return;
    }
    if (st == PGRES_PIPELINE_SYNC) {
        PQclear(res);
        a->job = NULL;
        if (j->failed && leaves_tx(j))
            send_rollback(x, a);
        if (j->hold && !j->failed)
            held_done(x, a, j);
        else
            finish_job(x, j, j->failed ? VD_ASYNC_AGAIN : VD_ASYNC_DONE);
        return;
    }
    a->got = true;
    if (a->step >= j->count) { /* past the last statement: a FATAL before the close */
        PQclear(res);
        return;
    }
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK && !j->failed) {
        j->failed = true;
        j->failed_step = a->step;
        if (st != PGRES_PIPELINE_ABORTED)
            (void)vd_sql_error(&a->c, res); /* logs it; a vanished statement detects a pooler */
    } else if (a->step == j->keep && !j->failed) {
        PQclear(j->kept);
        j->kept = res;
        return;
    }
    PQclear(res);
}

/* Read what a's server sent, as far as it goes without blocking. */
static void conn_read(vd_async *x, aconn *a)
{
    PGconn *pg = a->c.pg;
    if (!PQconsumeInput(pg) || PQstatus(pg) != CONNECTION_OK) {
        conn_lost(x, a);
        return;
    }
    for (int nulls = 0; a->job || a->rollback;) {
        PGresult *res;
        if (PQisBusy(pg))
            return;
        res = PQgetResult(pg);
        if (!res && PQstatus(pg) != CONNECTION_OK) {
            conn_lost(x, a);
            return;
        }
        nulls = res ? 0 : nulls + 1;
        if (nulls > 1) /* nothing more now: the rest comes with the next read */
            return;
        if (a->job) {
            job_result(x, a, res);
        } else if (res) { /* the ROLLBACK's answer, up to its Sync */
            bool sync = PQresultStatus(res) == PGRES_PIPELINE_SYNC;
            PQclear(res);
            if (sync)
                a->rollback = false;
        }
    }
}

/* The poll set: the wake descriptor, then every open connection. */
static int poll_set(vd_async *x, struct pollfd *p, int *which)
{
    int n = 1;
    p[0] = (struct pollfd){x->wake_fd, POLLIN, 0};
    for (int i = 0; i < x->k; i++) {
        aconn *a = &x->conns[i];
        if (!a->c.pg || PQsocket(a->c.pg) < 0)
            continue;
        p[n] = (struct pollfd){PQsocket(a->c.pg), (short)(POLLIN | (a->flushing ? POLLOUT : 0)), 0};
        which[n++] = i;
    }
    return n;
}

/* How long poll may sleep: to the nearest deadline of a job in flight or of the oldest one
 * waiting (at most a second). */
static int poll_timeout(vd_async *x, double now)
{
    double t = now + 1.0;
    pthread_mutex_lock(&x->mu);
    if (x->head && x->head->deadline < t)
        t = x->head->deadline;
    pthread_mutex_unlock(&x->mu);
    for (int i = 0; i < x->k; i++)
        if (x->conns[i].job && x->conns[i].job->deadline < t)
            t = x->conns[i].job->deadline;
    return t <= now ? 0 : (int)((t - now) * 1000.0) + 1;
}

/* One connection's events: flush what is held, read what came; an idle connection that has
 * anything to read (a FATAL before a close, the close itself) is going away: closed now. */
static void conn_events(vd_async *x, aconn *a, short revents)
{
    if (a->flushing && (revents & (POLLOUT | POLLERR | POLLHUP))) {
        int f = PQflush(a->c.pg);
        a->flushing = f == 1;
        if (f < 0) {
            conn_lost(x, a);
            return;
        }
    }
    if (!(revents & (POLLIN | POLLERR | POLLHUP)))
        return;
    if (!a->job && !a->rollback) {
        vd_logf(VD_LOG_INFO, "database connection closed while idle; opening a new one");
        conn_lost(x, a);
        return;
    }
    conn_read(x, a);
}

static void expire(vd_async *x, double now)
{
    for (int i = 0; i < x->k; i++) {
        aconn *a = &x->conns[i];
        if (a->job && a->job->deadline <= now) {
            a->c.timed_out = true;
            conn_lost(x, a);
        }
    }
}

static void *loop(void *arg)
{
    vd_async *x = arg;
    struct pollfd *p = calloc((size_t)x->k + 1, sizeof(*p));
    int *which = calloc((size_t)x->k + 1, sizeof(*which));
    for (;;) {
        bool quit;
        int n, r;
        dispatch(x);
        pthread_mutex_lock(&x->mu);
        quit = x->quit && x->pending == 0;
        pthread_mutex_unlock(&x->mu);
        if (quit || !p || !which)
            break;
        n = poll_set(x, p, which);
        r = poll(p, (nfds_t)n, poll_timeout(x, vd_monotonic()));
        if (r < 0 && errno != EINTR)
            break;
        if (r > 0 && (p[0].revents & POLLIN)) {
            uint64_t v;
            ssize_t got = read(x->wake_fd, &v, sizeof(v));
            (void)got;
        }
        for (int i = 1; r > 0 && i < n; i++)
            if (p[i].revents)
                conn_events(x, &x->conns[which[i]], p[i].revents);
        expire(x, vd_monotonic());
    }
    free(p);
    free(which);
    return NULL;
}

vd_async *vd_async_start(vd_db *db, int connections)
{
    vd_async *x;
    if (!db || connections <= 0 || txn_mode(db))
        return NULL;
    x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->db = db;
    x->k = connections;
    x->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    x->conns = calloc((size_t)connections, sizeof(*x->conns));
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    for (int i = 0; x->conns && i < connections; i++) {
        vd_conn *c = &x->conns[i].c;
        c->index = -1 - i; /* not the pool's */
        c->url = db->url;
        c->db = db;
        c->timeout_ms = db->timeout_ms;
        c->deferred = -1;
    }
    x->started = x->conns && x->wake_fd >= 0 && pthread_create(&x->thread, NULL, loop, x) == 0;
    if (!x->started) {
        vd_async_free(x);
        return NULL;
    }
    return x;
}

void vd_async_drain(vd_async *x)
{
    if (!x)
        return;
    pthread_mutex_lock(&x->mu);
    x->draining = true;
    while (x->pending > 0 && x->started)
        pthread_cond_wait(&x->cv, &x->mu);
    pthread_mutex_unlock(&x->mu);
}

void vd_async_free(vd_async *x)
{
    if (!x)
        return;
    vd_async_drain(x);
    pthread_mutex_lock(&x->mu);
    x->quit = true;
    pthread_mutex_unlock(&x->mu);
    if (x->started) {
        wake(x);
        pthread_join(x->thread, NULL);
    }
    for (int i = 0; x->conns && i < x->k; i++) {
        vd_conn_close(&x->conns[i].c);
        free(x->conns[i].c.announce);
    }
    if (x->wake_fd >= 0)
        close(x->wake_fd);
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    free(x->conns);
    free(x);
}
