/* jobs.c - finishing a job (see jobs.h): lock, fence, replay or refuse, decide with the
 * state machine, write item + job + transition, and keep the answer for replays, all in one
 * transaction. Depends on the store, never on HTTP. */
#include "verdict/jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/fence.h"
#include "verdict/incidents.h"
#include "verdict/limits.h"
#include "verdict/lint.h"
#include "verdict/store.h"
#include "verdict/store/claims.h"
#include "verdict/store/coalesce.h"
#include "verdict/store/idempotency.h"
#include "verdict/store/incidents.h"
#include "verdict/store/items.h"
#include "verdict/store/jobs.h"
#include "verdict/store/lint.h"
#include "verdict/tool_result.h"
#include "verdict/util.h"

typedef struct apply_ctx {
    const vd_config *cfg;
    const vd_job_write *w;
    size_t n;
    vd_job_answer *out;
    /* scratch, per write, reset on every run of the transaction */
    vd_job_write *wcopy;
    vd_job_key *key;
    vd_job_snapshot *snap;
    vd_job_finish *fin;
    size_t *fin_of;                        /* fin[k] finishes write fin_of[k] */
    char **reason;                         /* redacted reasons */
    char **evidence;                       /* redacted evidence */
    char **answer;                         /* answers of fin[k] */
    char (*tool_text)[VD_TOOL_RESULT_MAX]; /* the tool_result texts, per write */
    const vd_claim_next *next;             /* claim_next, or NULL */
    char *claims;                          /* its claim's answer {"claims":[...]}, or NULL */
    char **claims_of;                      /* fin[k]'s own claim_next answer (w->next), or NULL */
    size_t nfin;                           /* how many fin[] the plan queued */
} apply_ctx;

char *vd_job_reply(const char *lead, const char *kept, bool replayed)
{
    size_t n = strlen(kept), lead_n = lead ? strlen(lead) : 0, len = lead_n + n + 24;
    if (n < 2 || kept[0] != '{' || kept[n - 1] != '}')
        return NULL; /* not the closed object the store keeps */
    char *s = malloc(len);
    if (!s)
        return NULL;
    /* the kept members, between the object's braces; "{}" has none */
    snprintf(s, len, "{%s%s%.*s%s\"replayed\":%s}", lead ? lead : "", lead && n > 2 ? "," : "",
             (int)(n - 2), kept + 1, lead || n > 2 ? "," : "", replayed ? "true" : "false");
    return s;
}

vd_error vd_job_heartbeat(vd_conn *conn, int64_t job_id, const char *token, int64_t lease_seconds,
                          int64_t default_lease, const char *checkpoint, char **out)
{
    vd_job_snapshot seen;
    bool too_big = false;
    vd_error rc = vd_store_heartbeat(conn, job_id, token, lease_seconds, default_lease, checkpoint,
                                     &seen, &too_big, out);
    /* a refused merge wrote nothing, the lease included: the holder's request is what failed */
    if (rc == VD_OK && too_big && seen.token_ok && seen.status == VD_JOB_PROCESSING)
        rc = VD_ERR_PAYLOAD_TOO_LARGE;
    if (rc == VD_OK)
        rc = vd_job_fence(&seen);
    if (rc) {
        free(*out);
        *out = NULL;
    }
    vd_job_snapshot_cleanup(&seen);
    return rc;
}

/* A job its holder finished (vd_job_fence said so): replay, or say what stands. */
static vd_error finished_job(const vd_job_snapshot *snap, vd_job_answer *out)
{
    if (snap->same_request && snap->final_response) {
        out->kept = strdup(snap->final_response);
        out->replayed = true;
        return out->kept ? VD_OK : VD_ERR_INTERNAL;
    }
    out->standing =
        snap->status == VD_JOB_RELEASED ? "release" : vd_disposition_name(snap->disposition);
    if (!out->standing)
        out->standing = "";
    return VD_ERR_JOB_FINALIZED;
}

/* Store only the adjudication; the job keeps processing and the item stays claimed. */
static vd_error record_only(vd_conn *c, const vd_job_write *w, vd_job_answer *out)
{
    return vd_store_job_set_adjudication(c, w->job_id, w->adjudication, &out->kept);
}

/* Whether w is the `complete` disposition (not a session outcome, whose event is decided
 * later inside the transaction, nor a release). */
static bool completes(const vd_job_write *w)
{
    return w->disposition == VD_DISPOSITION_COMPLETE;
}

/* Whether write w may go on to the state machine; if not, out says why (or replays). */
static vd_error judge(const vd_job_snapshot *snap, const vd_job_write *w, vd_job_answer *out)
{
    vd_error rc = vd_job_fence(snap);
    if (rc == VD_ERR_JOB_FINALIZED)
        return finished_job(snap, out);
    if (rc)
        return rc;
    if (vd_tool_guard_refuses(&(vd_tool_guard_input){w->is_reject, completes(w), w->force,
                                                     snap->required_tool_failed,
                                                     snap->required_tool_blocked}))
        return VD_ERR_TOOL_FAILURE_PENDING;
    if (completes(w) && w->force && snap->required_tool_blocked && (!w->reason || !*w->reason)) {
        out->why = "forcing complete past a tool failure needs a 'reason' (recorded on the "
                   "transition)";
        out->field = "reason";
        return VD_ERR_MISSING_FIELD;
    }
    return VD_OK;
}

/* Whether the call overrides the required-tool rule with force (the transition's `forced`). */
static bool forced(const vd_job_snapshot *snap, const vd_job_write *w)
{
    return w->force && vd_tool_guard_refuses(&(vd_tool_guard_input){
                           w->is_reject, completes(w), false, snap->required_tool_failed,
                           snap->required_tool_blocked});
}

/* A rejection in a flow step with an open tooling incident (incidents.h): refused with
 * VD_ERR_TOOLING_INCIDENT_OPEN (out->rc) unless force, which is then recorded as forced. */
static vd_error incident_guard(vd_conn *c, const vd_job_snapshot *snap, const vd_job_write *w,
                               vd_job_answer *out, bool *forced_out)
{
    vd_incident_ref inc;
    vd_error rc = VD_OK;
    if (!w->is_reject)
        return VD_OK;
    rc = vd_store_incident_open(c, NULL, snap->item_id, NULL, &inc);
    if (rc || !inc.id)
        return rc;
    if (w->force)
        *forced_out = true;
    else
        out->rc = VD_ERR_TOOLING_INCIDENT_OPEN;
    return VD_OK;
}

static void reset_run(apply_ctx *a)
{
    for (size_t i = 0; i < a->n; i++) {
        free(a->out[i].kept);
        memset(&a->out[i], 0, sizeof(a->out[i]));
        vd_job_snapshot_cleanup(&a->snap[i]);
        free(a->reason[i]);
        free(a->evidence[i]);
        free(a->answer[i]);
        a->reason[i] = a->evidence[i] = a->answer[i] = NULL;
        a->tool_text[i][0] = '\0';
        a->wcopy[i] = a->w[i];
    }
    free(a->claims);
    a->claims = NULL;
    for (size_t k = 0; k < a->n; k++) {
        free(a->claims_of[k]);
        a->claims_of[k] = NULL;
    }
}

/* claim_next: once a write of the call finishes, claim the next items of its job's flow step
 * for its worker, in this transaction (before the finishing statement, which commits and
 * keeps the claims in a single call's answer). A call that finishes nothing claims nothing. */
static vd_error claim_next(vd_conn *c, apply_ctx *a, size_t nfin)
{
    vd_reply reply = {0};
    if (!a->next || a->next->count <= 0 || nfin == 0)
        return VD_OK;
    const vd_job_snapshot *snap = &a->snap[a->fin_of[0]];
    vd_claim_keys keys = {a->next->limit_keys, a->next->estimated_tokens};
    vd_error rc =
        vd_store_claim_keyed(c, snap->flow_step_id, snap->worker_id, snap->worker_version,
                             a->next->count, a->next->lease_seconds, a->w[a->fin_of[0]].actor,
                             &keys, false, NULL, &reply); /* answers even when it claims nothing */
    if (rc) {
        free(reply.body);
        return rc;
    }
    a->claims = reply.body;
    if (a->next->keep)
        for (size_t k = 0; k < nfin; k++)
            a->fin[k].claims = a->claims;
    return VD_OK;
}

/* Whether fin[k]'s write asks for claims of its own (a coalesced single call's claim_next). */
static const vd_claim_next *own_next(const apply_ctx *a, size_t k)
{
    const vd_claim_next *next = a->w[a->fin_of[k]].next;
    return next && next->count > 0 ? next : NULL;
}

/* One item, no limit keys, no token estimate: may share a claim_many with others. */
static bool shares_claim(const vd_claim_next *next)
{
    return next && next->count == 1 && !next->limit_keys && next->estimated_tokens < 0;
}

/* fin[k]'s own claim_next, alone: as the single call claims (claim_next above). */
static vd_error claim_own(vd_conn *c, apply_ctx *a, size_t k)
{
    const vd_job_write *w = &a->w[a->fin_of[k]];
    const vd_job_snapshot *snap = &a->snap[a->fin_of[k]];
    vd_claim_keys keys = {w->next->limit_keys, w->next->estimated_tokens};
    vd_reply reply = {0};
    if (w->trace_id)
        vd_conn_set_trace(c, w->trace_id, w->span_id);
    vd_error rc = vd_store_claim_keyed(c, snap->flow_step_id, snap->worker_id, snap->worker_version,
                                       w->next->count, w->next->lease_seconds, w->actor, &keys,
                                       false, NULL, &reply);
    if (rc) {
        free(reply.body);
        return rc;
    }
    a->claims_of[k] = reply.body;
    a->fin[k].claims = reply.body;
    return VD_OK;
}

/* The writes from fin[k] on that claim one plain item, of whatever flow step: one claim_many
 * for all of them, a flow step's request m getting its m-th item. A keyed flow step's requests
 * claim nothing there and are left to claim_own. */
static vd_error claim_shared(vd_conn *c, apply_ctx *a, size_t k, size_t nfin)
{
    vd_claim_one *reqs = calloc(nfin - k, sizeof(*reqs));
    size_t *of = calloc(nfin - k, sizeof(*of)), n = 0;
    vd_error rc = reqs && of ? VD_OK : VD_ERR_INTERNAL;
    for (size_t m = k; rc == VD_OK && m < nfin; m++) {
        const vd_job_write *w = &a->w[a->fin_of[m]];
        const vd_job_snapshot *snap = &a->snap[a->fin_of[m]];
        if (a->claims_of[m] || !shares_claim(own_next(a, m)))
            continue;
        of[n] = m;
        reqs[n++] = (vd_claim_one){snap->worker_id,
                                   snap->worker_version,
                                   w->actor,
                                   w->trace_id,
                                   w->span_id,
                                   w->next->lease_seconds,
                                   NULL,
                                   snap->flow_step_id,
                                   NULL,
                                   -1,
                                   NULL,
                                   NULL,
                                   VD_CLAIM_OWN};
    }
    if (rc == VD_OK)
        rc = vd_store_claim_many(c, NULL, reqs, n);
    for (size_t i = 0; rc == VD_OK && i < n; i++) {
        if (reqs[i].body) {
            a->claims_of[of[i]] = reqs[i].body;
            a->fin[of[i]].claims = reqs[i].body;
        }
    }
    free(reqs);
    free(of);
    return rc;
}

/* Each finished write's own claim_next (a coalesced group's single calls), in this
 * transaction, before the finishing statement keeps each one's claims in its answer. */
static vd_error claim_next_each(vd_conn *c, apply_ctx *a, size_t nfin)
{
    vd_error rc = VD_OK;
    for (size_t k = 0; rc == VD_OK && k < nfin; k++) {
        const vd_claim_next *next = own_next(a, k);
        if (!next || a->claims_of[k])
            continue;
        if (shares_claim(next))
            rc = claim_shared(c, a, k, nfin);
        if (rc == VD_OK && !a->claims_of[k])
            rc = claim_own(c, a, k);
    }
    return rc;
}

/* The rejection lint (lint.h) of a rejection that passed judge(): a refusal goes to out;
 * *overridden tells that force let a suspect rejection through. Only a failure of the
 * transaction is returned. */
static vd_error lint(vd_conn *c, const vd_job_write *w, bool incident, vd_job_answer *out,
                     bool *overridden)
{
    vd_reject_facts f;
    vd_error rc = vd_store_reject_facts(c, w->job_id, w->evidence, &f);
    if (rc)
        return rc;
    vd_lint_verdict v = vd_lint_judge(&(vd_lint_input){
        .reason = w->reason,
        .force = w->force,
        .deterministic_failure = f.deterministic_failure,
        .retriable_adjudication = f.retriable_adjudication,
        .strict_evidence = f.strict_evidence,
        .has_evidence = w->evidence != NULL,
        .evidence_found = f.evidence_found,
        .evidence = w->evidence,
        .code_other = w->reason_code && strcmp(w->reason_code, "other") == 0,
        .failures = (const char *const *)f.failures,
        .n_failures = f.n_failures,
        .incident_open = incident,
    });
    vd_reject_facts_cleanup(&f);
    out->rc = v.rc;
    out->why = v.why;
    out->field = v.field;
    out->lint_signal = v.signal;
    *overridden = v.overridden;
    return VD_OK;
}

/* The redacted copies of write i's reason and evidence, stored by the finishing statement. */
static vd_error redact_texts(apply_ctx *a, size_t i, const vd_job_write *w)
{
    a->reason[i] = w->reason ? vd_redact(w->reason) : NULL;
    a->evidence[i] = w->evidence ? vd_redact(w->evidence) : NULL;
    if ((w->reason && !a->reason[i]) || (w->evidence && !a->evidence[i]))
        return VD_ERR_INTERNAL;
    return VD_OK;
}

/* A holder's release past VERDICT_MAX_RELEASES (0: twice the item's max_defers) releases
 * without a verdict parks the item in manual_review as churn: a worker that always gives the
 * item back is seen, not looped for ever. */
static vd_error release_churn(vd_conn *c, const vd_config *cfg, const vd_job_snapshot *snap,
                              vd_outcome *o)
{
    int64_t before = 0, max = cfg->max_releases > 0 ? cfg->max_releases : 2 * snap->max_defers;
    vd_error rc = vd_store_item_releases(c, snap->item_id, &before);
    const vd_transition *churn = vd_transition_find(VD_ITEM_CLAIMED, VD_TR_RELEASE_CHURN, NULL);
    if (rc == VD_OK && before + 1 >= max && churn) {
        o->to_state = churn->to;
        o->reason_code = VD_REASON_CHURN;
    }
    return rc;
}

/* Whether deciding w sends a statement between the lock and the finish: the open incident and
 * the lint of a rejection, a decide hook, record_only, a release's churn count, claim_next. */
static bool needs_statement(const vd_job_write *w)
{
    return w->is_reject || w->decide || w->record_only || w->event.kind == VD_EVENT_RELEASE ||
           (w->next && w->next->count > 0);
}

/* Judge write i and, when it may finish, queue its finishing record. A refusal is the
 * write's answer (out->rc); only a failure of the transaction itself is returned. */
static vd_error plan_one(vd_conn *c, apply_ctx *a, size_t i, size_t *nfin)
{
    vd_job_write *w = &a->wcopy[i];
    const vd_job_snapshot *snap = &a->snap[i];
    vd_job_answer *out = &a->out[i];
    vd_error rc;
    bool overridden = false, incident_forced = false;
    out->rc = judge(snap, w, out);
    if (out->rc || out->replayed)
        return out->rc == VD_ERR_INTERNAL ? VD_ERR_INTERNAL : VD_OK;
    /* an open tooling incident first: it is the more specific answer than the lint's */
    rc = incident_guard(c, snap, w, out, &incident_forced);
    if (rc || out->rc)
        return rc;
    if (w->is_reject && (rc = lint(c, w, incident_forced, out, &overridden)))
        return rc;
    if (out->rc)
        return VD_OK;
    if (w->decide && (rc = w->decide(c, snap, w, w->decide_arg)))
        return rc;
    if (w->record_only)
        return out->rc = record_only(c, w, out);
    vd_budgets budgets = {snap->failures, snap->defers, snap->max_attempts, snap->max_defers};
    vd_backoff backoff = {a->cfg->backoff_base_seconds, a->cfg->backoff_cap_seconds};
    vd_outcome o = vd_machine_apply(&budgets, &w->event, &backoff, vd_random_unit());
    if (w->event.kind == VD_EVENT_RELEASE && (rc = release_churn(c, a->cfg, snap, &o)))
        return rc;
    bool answers_disposition =
        w->disposition != VD_DISPOSITION_NONE && w->disposition != VD_DISPOSITION_SESSION_OUTCOME;
    if ((rc = redact_texts(a, i, w)))
        return rc;
    if (answers_disposition)
        vd_tool_result_disposition(w->disposition, o.reason_code ? o.reason_code : w->reason_code,
                                   o.to_state, o.delay_seconds, a->tool_text[i],
                                   VD_TOOL_RESULT_MAX);
    a->fin[*nfin] = (vd_job_finish){
        .job_id = w->job_id,
        .item_id = snap->item_id,
        .to_state = o.to_state,
        .job_status = o.job_status,
        .cause = w->cause,
        .disposition = w->disposition,
        .reason_code = o.reason_code ? o.reason_code : w->reason_code,
        .reason = a->reason[i],
        .failures = o.failures,
        .defers = o.defers,
        .delay_seconds = o.delay_seconds,
        .forced = forced(snap, w) || incident_forced,
        .actor = w->actor,
        .engine_data = w->engine_data,
        .adjudication = w->adjudication,
        .request_json = w->request_json,
        .answer_disposition = answers_disposition,
        .answer_adjudication = w->disposition == VD_DISPOSITION_SESSION_OUTCOME,
        .deprecation_hint = w->deprecation_hint,
        .lint_overridden = overridden,
        .evidence = a->evidence[i],
        .tool_result_text = answers_disposition ? a->tool_text[i] : NULL,
        .tool_result_terminal = true, /* a disposition ends the job: the turn ends too */
    };
    a->fin_of[(*nfin)++] = i;
    return VD_OK;
}

/* kept with a "lint" member that notes an accepted signal (kept is freed; NULL when out of
 * memory). The live answer only: a replay answers what the finishing statement kept. */
static char *with_lint(char *kept, const char *signal)
{
    size_t n = strlen(kept), len = n + strlen(signal) + 96;
    char *out = n >= 2 ? malloc(len) : NULL;
    if (out)
        snprintf(out, len, "%.*s%s\"lint\":{\"signal\":\"%s\",\"refused\":false}}", (int)(n - 1),
                 kept, n > 2 ? "," : "", signal);
    free(kept);
    return out;
}

/* The committed answers of fin[0..nfin) move to their writes. */
static vd_error move_answers(apply_ctx *a, size_t nfin)
{
    for (size_t k = 0; k < nfin; k++) {
        vd_job_answer *out = &a->out[a->fin_of[k]];
        out->kept = a->answer[k];
        a->answer[k] = NULL;
        if (out->lint_signal)
            out->kept = with_lint(out->kept, out->lint_signal);
        if (!out->kept)
            return VD_ERR_INTERNAL;
    }
    return VD_OK;
}

static vd_error apply_tx(vd_conn *c, void *arg)
{
    apply_ctx *a = arg;
    size_t nfin = 0;
    vd_error rc;
    reset_run(a);
    if ((rc = vd_store_jobs_lock(c, a->key, a->n, a->snap)))
        return rc;
    for (size_t i = 0; i < a->n; i++) {
        if ((rc = plan_one(c, a, i, &nfin)))
            return rc;
    }
    if (nfin == 0)
        return VD_OK;
    rc = a->next ? claim_next(c, a, nfin) : claim_next_each(c, a, nfin);
    if (rc)
        return rc;
    for (size_t k = 0; k < nfin; k++) /* each its request's trace (a coalesced batch) */
        a->fin[k].trace_id = a->w[a->fin_of[k]].trace_id;
    /* the last statement: it commits, and its answers are the ones replays get */
    if ((rc = vd_store_jobs_finish(c, a->fin, nfin, a->answer)))
        return rc;
    return move_answers(a, nfin);
}

vd_error vd_job_apply_many(vd_conn *conn, const vd_config *cfg, const vd_job_write *w, size_t n,
                           vd_job_answer *out)
{
    return vd_job_apply_next(conn, cfg, w, n, NULL, out, NULL);
}

/* The scratch arrays of a (zeroed); false when memory ran out. */
static bool ctx_alloc(apply_ctx *a, size_t n)
{
    a->wcopy = calloc(n, sizeof(*a->wcopy));
    a->key = calloc(n, sizeof(*a->key));
    for (size_t i = 0; a->key && i < n; i++)
        a->key[i] = (vd_job_key){a->w[i].job_id, a->w[i].token, a->w[i].request_json};
    a->snap = calloc(n, sizeof(*a->snap));
    a->fin = calloc(n, sizeof(*a->fin));
    a->fin_of = calloc(n, sizeof(*a->fin_of));
    a->reason = calloc(n, sizeof(*a->reason));
    a->evidence = calloc(n, sizeof(*a->evidence));
    a->answer = calloc(n, sizeof(*a->answer));
    a->tool_text = calloc(n, sizeof(*a->tool_text));
    a->claims_of = calloc(n, sizeof(*a->claims_of));
    return n > 0 && a->wcopy && a->key && a->snap && a->fin && a->fin_of && a->reason &&
           a->evidence && a->answer && a->tool_text && a->claims_of;
}

/* The answers after the transaction rc (none on an error) and a's scratch freed; *claims
 * (may be NULL) takes claim_next's answer on VD_OK. */
static void ctx_free(apply_ctx *a, vd_error rc, char **claims)
{
    for (size_t i = 0; i < a->n; i++) {
        if (rc) { /* e.g. the COMMIT failed after the answers were built: no answers */
            free(a->out[i].kept);
            memset(&a->out[i], 0, sizeof(a->out[i]));
        } else if (a->out[i].rc == VD_ERR_INVALID_TRANSITION) {
            a->out[i].item_state = a->snap[i].item_state;
        }
        if (a->snap)
            vd_job_snapshot_cleanup(&a->snap[i]);
        if (a->reason)
            free(a->reason[i]);
        if (a->evidence)
            free(a->evidence[i]);
        if (a->answer)
            free(a->answer[i]);
        if (a->claims_of)
            free(a->claims_of[i]);
    }
    free(a->claims_of);
    free(a->wcopy);
    free(a->key);
    free(a->snap);
    free(a->fin);
    free(a->fin_of);
    free(a->reason);
    free(a->evidence);
    free(a->answer);
    free(a->tool_text);
    if (claims && rc == VD_OK)
        *claims = a->claims;
    else
        free(a->claims);
}

vd_error vd_job_apply_next(vd_conn *conn, const vd_config *cfg, const vd_job_write *w, size_t n,
                           const vd_claim_next *next, vd_job_answer *out, char **claims)
{
    apply_ctx a = {0};
    vd_error rc = VD_ERR_INTERNAL;
    a.cfg = cfg;
    a.w = w;
    a.n = n;
    a.out = out;
    a.next = next;
    memset(out, 0, n * sizeof(*out));
    if (ctx_alloc(&a, n))
        rc = vd_store_tx(conn, apply_tx, &a);
    ctx_free(&a, rc, claims);
    return rc;
}

/* Whether write w may leave its item claimable at once (a defer without delay): the sync path
 * announces that with a statement in the transaction. */
static bool may_free_item(const vd_config *cfg, const vd_job_write *w)
{
    bool waits = w->event.kind == VD_EVENT_DEFER_ITEM || w->event.kind == VD_EVENT_FAIL;
    return waits && (w->event.retry_after_seconds == 0 || cfg->backoff_base_seconds <= 0);
}

bool vd_job_async_fits(const vd_config *cfg, const vd_job_write *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (needs_statement(&w[i]) || may_free_item(cfg, &w[i]))
            return false;
    return n > 0;
}

/* A batch on the executor: the sync path's scratch, and whom to answer. */
typedef struct async_apply {
    apply_ctx a;
    vd_job_async_fn done;
    void *arg;
} async_apply;

/* On the executor thread, between the lock and the finish: plan_one over the snapshots, as
 * apply_tx does, without a connection (no write of the batch needs a statement). */
static bool async_plan(void *arg, const vd_job_finish **fin, size_t *nfin)
{
    apply_ctx *a = &((async_apply *)arg)->a;
    size_t k = 0;
    for (size_t i = 0; i < a->n; i++) {
        if (needs_statement(&a->w[i]) || plan_one(NULL, a, i, &k))
            return false;
    }
    for (size_t m = 0; m < k; m++) /* each its request's trace (a coalesced batch) */
        a->fin[m].trace_id = a->w[a->fin_of[m]].trace_id;
    a->nfin = k;
    *fin = a->fin;
    *nfin = k;
    return true;
}

static void async_finished(void *arg, bool again, vd_error rc)
{
    async_apply *s = arg;
    if (!again && rc == VD_OK)
        rc = move_answers(&s->a, s->a.nfin);
    ctx_free(&s->a, again ? VD_ERR_DATABASE_UNAVAILABLE : rc, NULL);
    s->done(s->arg, again, rc);
    free(s);
}

bool vd_job_apply_async(vd_async *x, const vd_config *cfg, const vd_job_write *w, size_t n,
                        const char *trace_id, double deadline, vd_job_answer *out,
                        vd_job_async_fn done, void *arg)
{
    async_apply *s = vd_job_async_fits(cfg, w, n) ? calloc(1, sizeof(*s)) : NULL;
    if (!s)
        return false;
    s->a = (apply_ctx){.cfg = cfg, .w = w, .n = n, .out = out};
    s->done = done;
    s->arg = arg;
    memset(out, 0, n * sizeof(*out));
    if (ctx_alloc(&s->a, n)) {
        reset_run(&s->a);
        vd_async_jobs q = {s->a.key,    n,          trace_id,       s->a.snap,
                           s->a.answer, async_plan, async_finished, s};
        if (vd_async_jobs_submit(x, &q, deadline))
            return true;
    }
    ctx_free(&s->a, VD_ERR_INTERNAL, NULL);
    free(s);
    return false;
}

vd_error vd_job_apply(vd_conn *conn, const vd_config *cfg, const vd_job_write *w,
                      vd_job_answer *out)
{
    vd_error rc = vd_job_apply_many(conn, cfg, w, 1, out);
    return rc ? rc : out->rc;
}

typedef struct success_ctx {
    int64_t job_id;
    const char *token, *tool;
    int64_t cleared;
    bool pending;
} success_ctx;

static vd_error success_tx(vd_conn *c, void *arg)
{
    success_ctx *s = arg;
    vd_job_snapshot snap;
    vd_error rc = vd_store_job_lock(c, s->job_id, s->token, NULL, &snap);
    if (rc == VD_OK)
        rc = vd_job_fence(&snap);
    vd_job_snapshot_cleanup(&snap);
    return rc ? rc : vd_store_tool_success(c, s->job_id, s->tool, &s->cleared, &s->pending);
}

vd_error vd_job_tool_success(vd_conn *conn, int64_t job_id, const char *token, const char *tool,
                             int64_t *cleared, bool *pending)
{
    success_ctx s = {job_id, token, tool, 0, false};
    vd_error rc = vd_store_tx(conn, success_tx, &s);
    *cleared = s.cleared;
    *pending = s.pending;
    return rc;
}

typedef struct release_ctx {
    int64_t item_id;
    const char *reason, *actor;
    char *out;
    vd_item_state state; /* the item's state when it is not claimed */
} release_ctx;

static vd_error release_tx(vd_conn *c, void *arg)
{
    static const char *const nil = "00000000-0000-0000-0000-000000000000";
    release_ctx *r = arg;
    vd_job_snapshot snap = {0};
    int64_t job = 0;
    vd_error rc = VD_OK;
    /* the item may move on between the unlocked read and the lock (its job finished, or a
     * new claim): read again */
    for (int tries = 0; tries < 3; tries++) {
        vd_job_snapshot_cleanup(&snap);
        if ((rc = vd_store_item_current_job(c, r->item_id, &r->state, &job)))
            break;
        if (r->state != VD_ITEM_CLAIMED) {
            rc = VD_ERR_INVALID_TRANSITION;
            break;
        }
        if ((rc = vd_store_job_lock(c, job, nil, NULL, &snap)))
            break;
        if (snap.found && snap.holds && snap.status == VD_JOB_PROCESSING)
            break;
        rc = VD_ERR_INVALID_TRANSITION;
        r->state = snap.found ? snap.item_state : VD_ITEM_CLAIMED;
    }
    vd_job_snapshot_cleanup(&snap);
    free(r->out);
    r->out = NULL;
    return rc ? rc : vd_store_item_release(c, r->item_id, job, r->reason, r->actor, &r->out);
}

vd_error vd_item_release(vd_conn *conn, int64_t item_id, const char *reason, const char *actor,
                         char **out, vd_item_state *state)
{
    release_ctx r = {item_id, reason, actor, NULL, VD_ITEM_CLAIMED};
    vd_error rc = vd_store_tx(conn, release_tx, &r);
    *out = NULL;
    if (rc == VD_OK)
        *out = r.out;
    else
        free(r.out);
    *state = r.state;
    return rc;
}
