/* async_jobs.c - job writes on the non-blocking executor (store/async.h, decision 0084): the
 * lock vd_store_jobs_lock sends, in a transaction left open on a held connection; the decision
 * in C on the executor thread (the caller's plan); then, on that connection, the finish
 * vd_store_jobs_finish sends and the COMMIT. The same statements as the sync path, built by
 * the same code (jobs.c); nothing waits between the two pipelines but the C decision. */
#include "async_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A job write in flight: the caller's request, and what its plan decided. */
typedef struct jobs_state {
    vd_async *x;
    vd_async_jobs q;
    char *trace; /* the request's trace id (owned), or NULL */
    double deadline;
    const vd_job_finish *fin; /* the plan's (borrowed until done) */
    size_t nfin;
} jobs_state;

static void answer(jobs_state *s, bool again, vd_error rc)
{
    s->q.done(s->q.arg, again, rc);
    free(s->trace);
    free(s);
}

static void finish_done(void *arg, vd_async_outcome o, PGresult *kept)
{
    jobs_state *s = arg;
    vd_error rc = VD_OK;
    if (o != VD_ASYNC_DONE) {
        answer(s, o == VD_ASYNC_AGAIN, VD_ERR_DATABASE_UNAVAILABLE);
        return;
    }
    if (s->nfin > 0) /* committed: a missing answer is an internal error, as on the sync path */
        rc = kept ? vd_jobs_read_answers(kept, s->fin, s->nfin, s->q.answers) : VD_ERR_INTERNAL;
    PQclear(kept);
    answer(s, false, rc);
}

/* Phase 2, on the held connection: the finish (positional for one job) and the COMMIT; a
 * plan that finishes nothing commits the lock alone. */
static bool send_finish(jobs_state *s)
{
    vd_async_job *j = vd_async_job_new(s->deadline, finish_done, s);
    bool ok = j != NULL;
    if (ok && s->nfin == 1) {
        char text[VD_FINISH_NCOLUMNS][32];
        const char *p[VD_FINISH_NCOLUMNS + 1];
        vd_job_finish_params(s->fin, s->trace, text, p);
        ok = vd_async_job_add(j, VD_SQL_JOB_FINISH, NULL, VD_FINISH_NCOLUMNS + 1, p);
    } else if (ok && s->nfin > 1) {
        char *rows = vd_jobs_finish_rows(s->fin, s->nfin);
        const char *p[] = {rows, s->trace};
        ok = rows && vd_async_job_add(j, VD_SQL_JOBS_FINISH, NULL, 2, p);
        free(rows);
    }
    if (ok) {
        j->keep = s->nfin > 0 ? 0 : -1;
        ok = vd_async_job_add(j, -1, "COMMIT", 0, NULL);
    }
    if (!ok) {
        vd_async_job_free(j);
        return false;
    }
    return vd_async_submit_held(s->x, j);
}

/* Whether the plan makes an item claimable at once: the sync path announces it with a
 * statement in the transaction (jobs.c, announce_claimable), so it goes there. */
static bool frees_items(const jobs_state *s)
{
    for (size_t k = 0; k < s->nfin; k++)
        if (vd_job_claimable_now(&s->fin[k]))
            return true;
    return false;
}

static void rolled_back(void *arg, vd_async_outcome o, PGresult *kept)
{
    (void)o; /* a ROLLBACK, or a connection lost: nothing of it committed either way */
    PQclear(kept);
    answer(arg, true, VD_OK);
}

/* Give up after phase 1: roll back on the held connection first, so that the sync path the
 * request is handed to does not wait on this transaction's row locks (it may run on this
 * very thread when no worker takes it); hand it back at once when that cannot be sent. */
static void give_up(jobs_state *s)
{
    vd_async_job *j = vd_async_job_new(s->deadline, rolled_back, s);
    bool ok = j && vd_async_job_add(j, -1, "ROLLBACK", 0, NULL);
    if (!ok)
        vd_async_job_free(j);
    if (ok && vd_async_submit_held(s->x, j))
        return;
    answer(s, true, VD_OK);
}

/* Phase 1 answered (the connection held, its transaction open): decide and continue. Any
 * other outcome ends it here. */
static void lock_done(void *arg, vd_async_outcome o, PGresult *kept)
{
    jobs_state *s = arg;
    vd_error rc;
    if (o != VD_ASYNC_DONE) {
        answer(s, o == VD_ASYNC_AGAIN, VD_ERR_DATABASE_UNAVAILABLE);
        return;
    }
    rc = kept ? vd_jobs_read_snapshots(kept, s->q.n, s->q.snap) : VD_ERR_INTERNAL;
    PQclear(kept);
    if (rc || !s->q.plan(s->q.arg, &s->fin, &s->nfin) || frees_items(s) || !send_finish(s))
        give_up(s);
}

/* Phase 1's statements: BEGIN, the index and generic plan preferences and the lock, as
 * vd_store_jobs_lock (vd_sql_prefer_indexes). */
static bool add_lock(vd_async_job *j, const vd_job_key *keys, size_t n)
{
    bool ok = vd_async_job_add(j, -1, "BEGIN", 0, NULL) &&
              vd_async_job_add(j, -1, VD_SQL_NO_SEQSCAN, 0, NULL) &&
              vd_async_job_add(j, -1, VD_SQL_GENERIC_PLAN, 0, NULL);
    char *rows = NULL;
    j->keep = 3;
    if (ok && n == 1) { /* the positional statement, as the sync path sends one job */
        vd_i64_text id = vd_i64_text_of(keys[0].job_id);
        const char *p[] = {id.s, keys[0].token, keys[0].request_json};
        return vd_async_job_add(j, VD_SQL_JOB_LOCK, NULL, 3, p);
    }
    rows = ok ? vd_jobs_lock_rows(keys, n) : NULL;
    ok = rows != NULL;
    if (ok) {
        const char *p[] = {rows};
        ok = vd_async_job_add(j, VD_SQL_JOBS_LOCK, NULL, 1, p);
    }
    free(rows);
    return ok;
}

bool vd_async_jobs_submit(vd_async *x, const vd_async_jobs *q, double deadline)
{
    jobs_state *s = q->n > 0 && vd_async_usable(x) ? calloc(1, sizeof(*s)) : NULL;
    vd_async_job *j = NULL;
    bool traced = q->trace_id && *q->trace_id;
    if (!s)
        return false;
    s->x = x;
    s->q = *q;
    s->deadline = deadline;
    s->trace = traced ? strdup(q->trace_id) : NULL;
    memset(q->snap, 0, q->n * sizeof(*q->snap));
    j = (!traced || s->trace) ? vd_async_job_new(deadline, lock_done, s) : NULL;
    if (!j || !add_lock(j, q->keys, q->n)) {
        vd_async_job_free(j);
        free(s->trace);
        free(s);
        return false;
    }
    j->hold = true;
    if (!vd_async_submit(x, j)) { /* j freed there */
        free(s->trace);
        free(s);
        return false;
    }
    return true;
}
