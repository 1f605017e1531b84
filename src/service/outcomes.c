/* outcomes.c - session outcomes stored on a job (session-outcome.md §6, outcomes.h): inside
 * the job's transaction (service/jobs.c) the session is adjudicated with the item's own
 * history, and the outcome chooses the state machine's event and reason code (the §5 encoder
 * is adjudication_json.c). Knows cJSON (the earlier adjudications are JSON) and the store,
 * never HTTP. */
#include "verdict/outcomes.h"

#include <stdlib.h>
#include <string.h>

#include "verdict/store.h"
#include "verdict/store/jobs.h"

int vd_prior_retries(const char *adjudications_json)
{
    cJSON *list = cJSON_Parse(adjudications_json);
    int n = 0;
    for (const cJSON *a = list ? list->child : NULL; a; a = a->next) {
        const char *outcome = cJSON_GetStringValue(cJSON_GetObjectItem(a, "outcome"));
        const char *reason = cJSON_GetStringValue(cJSON_GetObjectItem(a, "retry_reason"));
        vd_session_outcome o = VD_SESSION_OUTCOME_SUCCEEDED;
        vd_retry_reason r = VD_RETRY_REASON_NONE;
        if (!vd_session_outcome_parse(outcome, &o) || !vd_retry_reason_parse(reason, &r) ||
            r == VD_RETRY_REASON_ZERO_WRITES)
            continue; /* neither counts nor stops */
        if (o == VD_SESSION_OUTCOME_RETRIABLE || r == VD_RETRY_REASON_BUDGET_EXHAUSTED)
            n++;
        else
            break;
    }
    cJSON_Delete(list);
    return n;
}

typedef struct outcome_ctx {
    vd_session_report *report;
    vd_adjudication adj;
    char *adj_text;
} outcome_ctx;

static void outcome_reset(outcome_ctx *o)
{
    vd_adjudication_cleanup(&o->adj);
    free(o->adj_text);
    o->adj_text = NULL;
}

/* Inside the transaction: adjudicate with the item's own history, choose the event. */
static vd_error decide_outcome(vd_conn *c, const vd_job_snapshot *snap, vd_job_write *w, void *arg)
{
    outcome_ctx *o = arg;
    char *prior = NULL;
    vd_error rc = vd_store_prior_adjudications(c, snap->item_id, w->job_id, &prior);
    outcome_reset(o);
    if (rc)
        return rc;
    o->report->prior_consecutive_retries = vd_prior_retries(prior);
    free(prior);
    if ((rc = vd_adjudicate(o->report, &o->adj)))
        return rc;
    cJSON *json = vd_adjudication_to_json(&o->adj);
    o->adj_text = json ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);
    if (!o->adj_text)
        return VD_ERR_INTERNAL;
    w->adjudication = o->adj_text;
    if (o->adj.outcome == VD_SESSION_OUTCOME_SUCCEEDED) {
        w->event.kind = VD_EVENT_SESSION_SUCCEEDED;
        w->reason_code = "success";
    } else if (o->adj.outcome == VD_SESSION_OUTCOME_RETRIABLE) {
        w->event.kind = VD_EVENT_SESSION_RETRIABLE;
        w->reason_code = vd_retry_reason_name(o->adj.retry_reason);
    } else {
        w->event.kind = VD_EVENT_SESSION_FAILED;
        w->reason_code = o->adj.retry_reason == VD_RETRY_REASON_BUDGET_EXHAUSTED
                             ? "budget_exhausted"
                             : vd_subtype_label_name(o->adj.subtype);
    }
    return VD_OK;
}

vd_error vd_session_outcome_apply(vd_conn *conn, const vd_config *cfg, const vd_session_call *call,
                                  vd_session_result *out)
{
    outcome_ctx o = {.report = call->report};
    vd_job_write w = {
        .job_id = call->job_id,
        .token = call->token,
        .request_json = call->request_json,
        .actor = call->actor,
        .disposition = VD_DISPOSITION_SESSION_OUTCOME,
        .cause = VD_CAUSE_SESSION_OUTCOME,
        .decide = decide_outcome,
        .decide_arg = &o,
        .record_only = !call->apply,
    };
    memset(out, 0, sizeof(*out));
    vd_error rc = vd_job_apply(conn, cfg, &w, &out->answer);
    out->adjudicated = rc == VD_OK && !out->answer.replayed && o.adj_text;
    if (out->adjudicated) {
        out->adj = o.adj; /* moves: o no longer owns it */
        memset(&o.adj, 0, sizeof(o.adj));
    }
    outcome_reset(&o);
    return rc;
}

void vd_session_result_cleanup(vd_session_result *r)
{
    free(r->answer.kept);
    vd_adjudication_cleanup(&r->adj);
    memset(r, 0, sizeof(*r));
}
