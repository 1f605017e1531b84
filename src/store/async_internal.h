/* async_internal.h - the executor's job (store/async.c) as the store's own files submit it:
 * a fixed list of statements sent in one pipeline, and a callback for its outcome. Only
 * src/store/ includes this. */
#ifndef VERDICT_ASYNC_INTERNAL_H
#define VERDICT_ASYNC_INTERNAL_H

#include "store_internal.h"
#include "verdict/store/async.h"

/* The most statements of one job (BEGIN, settings, statement, COMMIT, ...). */
#define VD_ASYNC_STEPS 6

/* How a job ended: committed (its kept result given); nothing of it committed (a statement
 * failed and was rolled back, or it was never sent: safe to run again); or it is over without
 * an answer: the connection was lost after it was sent (it may have committed), or its
 * deadline passed (in flight: the connection is dropped; or still waiting for one). */
typedef enum vd_async_outcome { VD_ASYNC_DONE = 0, VD_ASYNC_AGAIN, VD_ASYNC_LOST } vd_async_outcome;

/* kept: the result of steps[keep] (the callee's to PQclear) with VD_ASYNC_DONE, else NULL. A
 * hold job's callback with VD_ASYNC_DONE may send its continuation with vd_async_submit_held
 * before it returns; a held connection it does not continue on is rolled back. */
typedef void (*vd_async_fn)(void *arg, vd_async_outcome o, PGresult *kept);

typedef struct vd_async_step {
    int sql;             /* a vd_sql, or -1: command */
    const char *command; /* a static command ("BEGIN"), when sql < 0 */
    int n;
    char *params[VD_SQL_MAX_PARAMS]; /* owned copies (NULL: SQL NULL) */
} vd_async_step;

typedef struct vd_async_job {
    struct vd_async_job *next;
    vd_async_step steps[VD_ASYNC_STEPS];
    int count, keep;
    double deadline; /* vd_monotonic() */
    vd_async_fn done;
    void *arg;
    PGresult *kept;
    bool failed;     /* a statement of it failed: the transaction is rolled back */
    int failed_step; /* ... which one */
    /* hold: its statements open a transaction (BEGIN, no COMMIT) that its Sync leaves open,
     * the connection kept for the continuation its callback sends (decision 0084); such a
     * job commits nothing, so a lost connection hands it back. in_tx: it is that
     * continuation (set by vd_async_submit_held): a failure of it is rolled back too. */
    bool hold, in_tx;
} vd_async_job;

/* A new job (calloc'd); add steps with vd_async_job_add. NULL when memory ran out. */
vd_async_job *vd_async_job_new(double deadline, vd_async_fn done, void *arg);
/* Append a statement (sql >= 0, its params copied) or a command; false when memory ran out or
 * the job is full (the job is then the caller's to free). */
bool vd_async_job_add(vd_async_job *j, int sql, const char *command, int n,
                      const char *const *params);
void vd_async_job_free(vd_async_job *j);
/* Queue j (the executor owns it from here, and calls j->done exactly once); false, with j
 * freed and no callback, when the executor does not take it. From the executor thread (a
 * callback's follow-up) it is taken while draining too. */
bool vd_async_submit(vd_async *x, vd_async_job *j);
/* From a hold job's callback (VD_ASYNC_DONE) only: send j on the connection that job holds,
 * in its open transaction, at once (no queue); the executor owns j from here and calls
 * j->done exactly once, after the calling callback returned. False, with j freed and no
 * callback, when j could not be handed to libpq (nothing of it reached the server; the
 * connection is closed, which rolls the transaction back). */
bool vd_async_submit_held(vd_async *x, vd_async_job *j);

#endif
