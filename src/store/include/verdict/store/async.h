/* store/async.h - the non-blocking executor (store/async.c): one thread owning connections
 * of its own in non-blocking pipeline mode. A request whose whole transaction is a fixed list
 * of statements is sent in one pipeline and answered from a callback on that thread, so no
 * worker thread waits on PostgreSQL while it runs and many such transactions are in flight at
 * once. A job write (a batch disposition) goes in two pipelines on one connection, its
 * decision taken in C on that thread in between (vd_async_jobs_submit). */
#ifndef VERDICT_STORE_ASYNC_H
#define VERDICT_STORE_ASYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "verdict/error.h"
#include "verdict/store.h"
#include "verdict/store/jobs.h"

typedef struct vd_async vd_async;

/* Start the executor with `connections` connections of its own (opened lazily, each with
 * every statement prepared as the pool's are) to db's server. NULL when connections <= 0, in
 * transaction pool mode, or when the thread could not start. */
vd_async *vd_async_start(vd_db *db, int connections);
/* Whether submissions are taken: false after vd_async_drain began, or once the pool switched
 * to unprepared statements (a transaction pooler detected): then callers take the sync path. */
bool vd_async_usable(vd_async *x);
/* Refuse new submissions and wait until every one in flight has had its callback. */
void vd_async_drain(vd_async *x);
/* Drain, stop the thread, close the connections. NULL is a no-op. */
void vd_async_free(vd_async *x);

/* A claim without Idempotency-Key and without wait (vd_store_claim_keyed's arguments; the
 * strings are copied at submission; worker_version, keys_json, trace and span may be NULL). */
typedef struct vd_async_claim {
    const char *flow_step_id, *worker_id, *worker_version, *actor;
    const char *keys_json; /* the claim's limit keys (a JSON array), or NULL */
    const char *trace_id, *span_id;
    int64_t limit, lease_seconds;
    int64_t estimated_tokens; /* < 0: none */
} vd_async_claim;

/* The answer of a claim, on the executor thread. again: nothing of it committed (a statement
 * failed and was rolled back, or it could not be sent): run it on the synchronous path, which
 * has every retry rule. Otherwise rc is VD_OK with body (malloc'd, the caller's) the same
 * bytes vd_store_claim_keyed answers, or VD_ERR_DATABASE_UNAVAILABLE when the connection was
 * lost after the transaction was sent (it may have committed: never sent again) or the
 * deadline passed. */
typedef void (*vd_async_claim_fn)(void *arg, bool again, vd_error rc, char *body);

/* Submit a claim; done(arg, ...) is called exactly once, on the executor thread, unless this
 * answers false (not taken: the caller runs the claim itself). deadline: vd_monotonic() bound
 * of the whole claim (past it the connection is dropped and the claim answered 503). */
VD_MUST_USE bool vd_async_claim_submit(vd_async *x, const vd_async_claim *q, double deadline,
                                       vd_async_claim_fn done, void *arg);

/* Job writes as a continuation (decision 0084): phase 1 is BEGIN, SET LOCAL enable_seqscan =
 * off and the lock vd_store_jobs_lock sends, with a Sync and no COMMIT, the connection held;
 * on the executor thread the snapshots go to snap and plan() decides in C, without
 * statements, which jobs finish (*fin, *nfin: borrowed until done; false: give up); phase 2
 * on the same connection is the finish vd_store_jobs_finish sends (none when nfin is 0) and
 * the COMMIT. A plan that makes an item claimable at once (its announcement is a statement
 * of the sync path) gives up too. */
typedef struct vd_async_jobs {
    const vd_job_key *keys; /* n distinct jobs (copied at submission) */
    size_t n;
    const char *trace_id;  /* the request's, for jobs_finish (copied), or NULL */
    vd_job_snapshot *snap; /* n, the caller's: filled before plan, until done */
    char **answers;        /* n, the caller's, NULL-initialised: answers[k] for fin[k] */
    bool (*plan)(void *arg, const vd_job_finish **fin, size_t *nfin);
    /* Called exactly once, on the executor thread. again: nothing of it committed (a
     * statement failed and was rolled back, it gave up, a connection lost before the finish
     * could reach the server, or it was never sent): run it on the sync path. Otherwise rc
     * VD_OK (committed; answers filled, the callee's to free) or VD_ERR_DATABASE_UNAVAILABLE
     * (lost once the finish was sent: it may have committed; or past the deadline). */
    void (*done)(void *arg, bool again, vd_error rc);
    void *arg;
} vd_async_jobs;

/* Submit q; false when the executor does not take it (the caller runs it itself). */
VD_MUST_USE bool vd_async_jobs_submit(vd_async *x, const vd_async_jobs *q, double deadline);

#endif
