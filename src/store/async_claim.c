/* async_claim.c - a claim on the non-blocking executor (store/async.h): the same statements
 * vd_store_claim_keyed sends without an Idempotency-Key. The plain claim goes as BEGIN,
 * sequential scans off, a generic plan, the claim and COMMIT in one pipeline; when it answers
 * NULL (a keyed flow step) or the claim names keys or tokens, claim_limited goes in a pipeline
 * of its own with sequential scans off, as the sync path sends it (vd_sql_exec_indexed). */
#include "async_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A claim in flight: its parameters (owned) for the follow-up, and whom to answer. */
typedef struct claim_state {
    char *p[10];  /* claim_limited's: fs, worker, limit, lease, actor, version, keys, tokens,
                   * trace, span */
    bool limited; /* claim_limited was sent (the last step) */
    vd_async *x;  /* the executor (a follow-up goes to the same one) */
    double deadline;
    vd_async_claim_fn done;
    void *arg;
} claim_state;

static void state_free(claim_state *s)
{
    for (int i = 0; i < 10; i++)
        free(s->p[i]);
    free(s);
}

static void claim_done(void *arg, vd_async_outcome o, PGresult *kept);

/* The claim's pipeline: BEGIN, sequential scans off, a generic plan, the plain claim, COMMIT;
 * or BEGIN, sequential scans off, claim_limited, COMMIT. */
static bool claim_send(vd_async *x, claim_state *s)
{
    const char *p[10];
    vd_async_job *j = vd_async_job_new(s->deadline, claim_done, s);
    bool ok = j != NULL;
    for (int i = 0; i < 10; i++)
        p[i] = s->p[i];
    /* planned by index, as the store's claims (vd_sql_exec_indexed) */
    ok = ok && vd_async_job_add(j, -1, "BEGIN", 0, NULL) &&
         vd_async_job_add(j, -1, VD_SQL_NO_SEQSCAN, 0, NULL);
    if (ok && s->limited) {
        ok = vd_async_job_add(j, VD_SQL_CLAIM_LIMITED, NULL, 10, p);
    } else if (ok) {
        const char *plain[8] = {p[0], p[1], p[2], p[3], p[4], p[5], p[8], p[9]};
        ok = vd_async_job_add(j, -1, VD_SQL_GENERIC_PLAN, 0, NULL) &&
             vd_async_job_add(j, VD_SQL_CLAIM, NULL, 8, plain);
    }
    ok = ok && vd_async_job_add(j, -1, "COMMIT", 0, NULL);
    if (ok)
        j->keep = s->limited ? 2 : 3;
    if (!ok) {
        vd_async_job_free(j);
        return false;
    }
    return vd_async_submit(x, j);
}

static void claim_answer(claim_state *s, bool again, vd_error rc, char *body)
{
    s->done(s->arg, again, rc, body);
    state_free(s);
}

static void claim_done(void *arg, vd_async_outcome o, PGresult *kept)
{
    claim_state *s = arg;
    bool found = kept && PQntuples(kept) > 0 && !PQgetisnull(kept, 0, 0);
    char *body = NULL;
    if (o != VD_ASYNC_DONE) {
        claim_answer(s, o == VD_ASYNC_AGAIN, VD_ERR_DATABASE_UNAVAILABLE, NULL);
        return;
    }
    if (!found && !s->limited) { /* a keyed flow step: the plain claim claimed nothing */
        PQclear(kept);
        s->limited = true;
        if (!claim_send(s->x, s))
            claim_answer(s, true, VD_OK, NULL);
        return;
    }
    if (found)
        body = strdup(PQgetvalue(kept, 0, 0));
    PQclear(kept);
    claim_answer(s, !body, VD_OK, body); /* no answer, or out of memory: the sync path */
}

bool vd_async_claim_submit(vd_async *x, const vd_async_claim *q, double deadline,
                           vd_async_claim_fn done, void *arg)
{
    char l[24], ls[24], e[24];
    const char *src[10];
    claim_state *s = vd_async_usable(x) ? calloc(1, sizeof(*s)) : NULL;
    if (!s)
        return false;
    snprintf(l, sizeof(l), "%lld", (long long)q->limit);
    snprintf(ls, sizeof(ls), "%lld", (long long)q->lease_seconds);
    snprintf(e, sizeof(e), "%lld", (long long)q->estimated_tokens);
    src[0] = q->flow_step_id;
    src[1] = q->worker_id;
    src[2] = l;
    src[3] = ls;
    src[4] = q->actor;
    src[5] = q->worker_version;
    src[6] = q->keys_json;
    src[7] = q->estimated_tokens >= 0 ? e : NULL;
    src[8] = q->trace_id && q->trace_id[0] ? q->trace_id : NULL;
    src[9] = src[8] && q->span_id && q->span_id[0] ? q->span_id : NULL;
    for (int i = 0; i < 10; i++) {
        s->p[i] = src[i] ? strdup(src[i]) : NULL;
        if (src[i] && !s->p[i]) {
            state_free(s);
            return false;
        }
    }
    s->limited = src[6] || src[7];
    s->x = x;
    s->deadline = deadline;
    s->done = done;
    s->arg = arg;
    if (!claim_send(x, s)) {
        state_free(s);
        return false;
    }
    return true;
}
