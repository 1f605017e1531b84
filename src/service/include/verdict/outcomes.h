/* outcomes.h - session outcomes stored on a job (spec: session-outcome.md §6): the service
 * rules that adjudicate a session with the item's own history inside the job's transaction,
 * choose the state machine's event and reason, and the §5 encoder of an adjudication. The
 * request's JSON is decoded by the http layer (adjudication_codec.h). */
#ifndef VERDICT_OUTCOMES_H
#define VERDICT_OUTCOMES_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "verdict/adjudicator.h"
#include "verdict/config.h"
#include "verdict/error.h"
#include "verdict/jobs.h"
#include "verdict/store.h"

/* Encodes *a as the §5 answer object with the keys outcome, success, needs_retry,
 * retry_reason, content_state, subtype, cli_subtype, infra_exit, write_evidence,
 * result_text and warnings, in that order. Returns a new tree the caller frees with
 * cJSON_Delete(), or NULL when memory runs out. *a is borrowed. Thread-safe. */
cJSON *vd_adjudication_to_json(const vd_adjudication *a);

/* session-outcome.md §6: how many retriable outcomes in a row precede a job, given the
 * item's earlier adjudications as a JSON array, newest first (zero_writes neither counts nor
 * stops the run; budget_exhausted counts). */
int vd_prior_retries(const char *adjudications_json);

/* A session outcome of one job. */
typedef struct vd_session_call {
    int64_t job_id;
    const char *token;
    const char *request_json; /* the call, for replays */
    const char *actor;
    bool apply;                /* false: store the adjudication only (the job keeps running) */
    vd_session_report *report; /* decoded; prior_consecutive_retries is filled here */
} vd_session_call;

typedef struct vd_session_result {
    vd_job_answer answer; /* the job write's answer (free answer.kept) */
    bool adjudicated;     /* this call adjudicated (not a replay): adj is set */
    vd_adjudication adj;  /* free with vd_adjudication_cleanup */
} vd_session_result;

/* Adjudicate and store (and with apply, apply) a session outcome in one transaction on conn:
 * the job is fenced (vd_job_fence), a replay of the identical call answers the kept answer.
 * Errors: those of vd_job_apply, VD_ERR_MATCH_BUDGET_EXHAUSTED. The caller frees
 * out->answer.kept and out->adj (vd_session_result_cleanup). */
VD_MUST_USE vd_error vd_session_outcome_apply(vd_conn *conn, const vd_config *cfg,
                                              const vd_session_call *call, vd_session_result *out);
void vd_session_result_cleanup(vd_session_result *r);

#endif
