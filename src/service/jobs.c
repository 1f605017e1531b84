/* jobs.c - finishing a job (see jobs.h): lock, fence, replay or refuse, decide with the
 * state machine, write item + job + transition, and keep the answer for replays, all in one
 * transaction. Depends on the store, never on HTTP. */
#include "verdict/jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/store_ops.h"
#include "verdict/util.h"

typedef struct apply_ctx {
    const vd_config *cfg;
    const vd_job_write *w;
    vd_job_answer *out;
    double jitter;
} apply_ctx;

/* {head,"job":job,"item":item,tail — without the closing "replayed" member. */
static char *compose(const vd_job_write *w, const char *job, const char *item)
{
    size_t len = strlen(w->head) + strlen(job) + strlen(item) + (w->tail ? strlen(w->tail) : 0) + 32;
    char *s = malloc(len);
    if (s)
        snprintf(s, len, "{%s,\"job\":%s,\"item\":%s%s%s", w->head, job, item, w->tail ? "," : "",
                 w->tail ? w->tail : "");
    return s;
}

static char *finish_answer(const char *stored, bool replayed)
{
    size_t len = strlen(stored) + 24;
    char *s = malloc(len);
    if (s)
        snprintf(s, len, "%s,\"replayed\":%s}", stored, replayed ? "true" : "false");
    return s;
}

/* A job that is no longer processing: replay, or say why not. */
static vd_error finished_job(const vd_job_snapshot *snap, vd_job_answer *out)
{
    if (strcmp(snap->status, "expired") == 0)
        return VD_ERR_CLAIM_LOST;
    if (snap->same_request && snap->final_response) {
        out->body = finish_answer(snap->final_response, true);
        out->replayed = true;
        return out->body ? VD_OK : VD_ERR_INTERNAL;
    }
    snprintf(out->standing, sizeof(out->standing), "%s", snap->disposition);
    return VD_ERR_JOB_FINALIZED;
}

/* Store only the adjudication; the job keeps processing and the item stays claimed. */
static vd_error record_only(vd_conn *c, const vd_job_write *w, vd_job_answer *out)
{
    char *item = NULL, *job = NULL, *stored = NULL;
    vd_error rc = vd_store_job_set_adjudication(c, w->job_id, w->adjudication, &item, &job);
    if (rc == VD_OK && !(stored = compose(w, job, item)))
        rc = VD_ERR_INTERNAL;
    if (rc == VD_OK && !(out->body = finish_answer(stored, false)))
        rc = VD_ERR_INTERNAL;
    free(item);
    free(job);
    free(stored);
    return rc;
}

static vd_error apply_tx(vd_conn *c, void *arg)
{
    apply_ctx *a = arg;
    vd_job_write wcopy = *a->w;
    vd_job_write *w = &wcopy;
    vd_job_snapshot snap;
    char *stored = NULL, *reason = NULL;
    vd_error rc = vd_store_job_lock(c, w->job_id, w->token, w->request_json, &snap);
    free(a->out->body);
    a->out->body = NULL;
    a->out->replayed = false;
    if (rc)
        goto out;
    if (!snap.found) {
        rc = VD_ERR_NOT_FOUND;
    } else if (!snap.token_ok) {
        rc = VD_ERR_CLAIM_LOST;
    } else if (strcmp(snap.status, "processing") != 0) {
        rc = finished_job(&snap, a->out);
    } else if (!snap.holds) {
        rc = VD_ERR_CLAIM_LOST;
    } else if (w->is_reject && snap.required_tool_failed && !w->force) {
        rc = VD_ERR_TOOL_FAILURE_PENDING;
    }
    if (rc || a->out->replayed)
        goto out;
    if (w->decide && (rc = w->decide(c, &snap, w, w->decide_arg)))
        goto out;
    if (w->record_only) {
        rc = record_only(c, w, a->out);
        goto out;
    }
    vd_budgets budgets = {snap.failures, snap.defers, snap.max_attempts, snap.max_defers};
    vd_backoff backoff = {a->cfg->backoff_base_seconds, a->cfg->backoff_cap_seconds};
    vd_outcome o = vd_machine_apply(&budgets, &w->event, &backoff, a->jitter);
    if (w->reason && !(reason = vd_redact(w->reason))) {
        rc = VD_ERR_INTERNAL;
        goto out;
    }
    vd_job_finish f = {w->job_id,    snap.item_id, o.to_state, o.job_status,
                       w->cause,     w->disposition, o.reason_code ? o.reason_code : w->reason_code,
                       reason,       o.failures,   o.defers,   o.delay_seconds,
                       w->force && w->is_reject && snap.required_tool_failed,
                       w->actor,     w->engine_data, w->adjudication, w->request_json,
                       w->head,      w->tail};
    /* the last statement: it commits, and its answer is the one replays get */
    rc = vd_store_job_finish(c, &f, &stored);
    if (rc == VD_OK && !(a->out->body = finish_answer(stored, false)))
        rc = VD_ERR_INTERNAL;
out:
    /* a refusal is an answer, not a failure of the transaction: keep it, commit nothing */
    if (rc == VD_ERR_INVALID_TRANSITION)
        snprintf(a->out->item_state, sizeof(a->out->item_state), "%s", snap.item_state);
    vd_job_snapshot_cleanup(&snap);
    free(stored);
    free(reason);
    return rc;
}

vd_error vd_job_apply(vd_conn *conn, const vd_config *cfg, const vd_job_write *w,
                      vd_job_answer *out)
{
    apply_ctx a = {cfg, w, out, vd_random_unit()};
    memset(out, 0, sizeof(*out));
    vd_error rc = vd_store_tx(conn, apply_tx, &a);
    if (rc) { /* e.g. the COMMIT failed after the answer was built: no answer */
        free(out->body);
        out->body = NULL;
        out->replayed = false;
    }
    return rc;
}
