/* h_jobs.c - SPEC §5: POST /v1/jobs/{job_id}/disposition, and POST /v1/dispositions (up to 100
 * of them in one transaction; README "Batch dispositions"). Validates each call per
 * disposition, maps the legacy skip_item (SPEC §5.1), and hands the rest to the service layer
 * (service/jobs.c), which enforces the state machine. Also the holder's release of its claim
 * (POST /v1/jobs/{job_id}/release, the same fencing and replays) and the job reads. */
#include "http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/jobs.h"
#include "verdict/limits.h"
#include "verdict/lint.h"
#include "verdict/store.h"
#include "verdict/store/items.h"
#include "verdict/store/jobs.h"
#include "verdict/store/limits.h"

#include "metrics.h"

#define MAX_ENGINE_DATA 65536
#define MAX_BATCH 100

const char *const vd_reject_codes[] = {"irrelevant",  "too_thin", "duplicate", "spam",
                                       "low_quality", "other",    NULL};
const char *const vd_defer_codes[] = {
    "tool_error",        "quality_gate", "provider_error", "low_confidence",
    "dependency_outage", "other",        "rate_limited",   NULL};

static vd_error get_code(vd_field f, const char *const *allowed, const char **out)
{
    char name[200], list[200] = "";
    vd_error rc = vd_get_string(f, "reason_code", true, 1, 200, out);
    if (rc)
        return rc;
    for (size_t i = 0; allowed[i]; i++) {
        if (strcmp(*out, allowed[i]) == 0)
            return VD_OK;
    }
    for (size_t i = 0; allowed[i]; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
                 allowed[i]);
    vd_field_name(f, "reason_code", name, sizeof(name));
    return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, name, "'%s' must be one of: %s", name, list);
}

/* The members of one disposition (the single call's body without claim_next and
 * lease_seconds, a batch entry without job_id): those of every disposition, whichever it
 * reads (a member another disposition takes is accepted and ignored; its type is checked). */
#define DISPOSITION_MEMBERS                                                                        \
    {"claim_token", VD_J_STRING}, {"disposition", VD_J_STRING}, {"reason", VD_J_STRING},           \
        {"force", VD_J_BOOL}, {"evidence", VD_J_STRING}, {"engine_data", VD_J_OBJECT},             \
        {"reason_code", VD_J_STRING}, {"manual_review", VD_J_BOOL}, {"error", VD_J_STRING},        \
        {"retryable", VD_J_BOOL}, {"usage", VD_J_OBJECT}, {"question", VD_J_STRING},               \
    {                                                                                              \
        "retry_after_seconds", VD_J_NUMBER                                                         \
    }

/* Fill the event and reason fields of w for one explicit disposition. */
static vd_error parse_explicit(vd_field f, vd_disposition d, vd_job_write *w)
{
    int64_t after = -1;
    bool b = false;
    vd_error rc = VD_OK;
    if (d == VD_DISPOSITION_COMPLETE) {
        w->event.kind = VD_EVENT_COMPLETE;
    } else if (d == VD_DISPOSITION_REJECT_SOURCE) {
        w->event.kind = VD_EVENT_REJECT_SOURCE;
        w->is_reject = true;
        rc = get_code(f, vd_reject_codes, &w->reason_code);
    } else if (d == VD_DISPOSITION_REQUEST_REVIEW) {
        /* the question is the transition's reason (redacted, shown to the editor) */
        w->event.kind = VD_EVENT_REQUEST_REVIEW;
        w->reason_code = "review_requested";
        return vd_get_string(f, "question", true, 1, VD_REVIEW_QUESTION_MAX, &w->reason);
    } else if (d == VD_DISPOSITION_DEFER_ITEM) {
        w->event.kind = VD_EVENT_DEFER_ITEM;
        if ((rc = get_code(f, vd_defer_codes, &w->reason_code)) ||
            (rc = vd_get_bool(f, "manual_review", false, &b)))
            return rc;
        w->event.manual_review = b;
        /* claimable when the job's keys reopen (limits.h, vd_limits_decide) */
        w->event.rate_limited = strcmp(w->reason_code, "rate_limited") == 0;
    } else { /* VD_DISPOSITION_FAIL: parse_disposition let no other word through */
        w->event.kind = VD_EVENT_FAIL;
        w->reason_code = "engine_error";
        if ((rc = vd_get_string(f, "error", true, 1, 4000, &w->reason)) ||
            (rc = vd_get_bool(f, "retryable", true, &b)))
            return rc;
        w->event.retryable = b;
    }
    if (rc)
        return rc;
    if (w->event.kind == VD_EVENT_DEFER_ITEM || w->event.kind == VD_EVENT_FAIL) {
        rc = vd_get_int(f, "retry_after_seconds", false, 0, 604800, -1, &after);
        w->event.retry_after_seconds = after;
    }
    return rc;
}

/* One disposition as parsed: the write and the text it points into. */
typedef struct disp_in {
    vd_job_write w;
    char hint[200];
    char *engine;       /* engine_data re-serialised, or NULL */
    char *request;      /* a batch entry without its job_id, as JSON (replays compare it) */
    vd_usage usage;     /* the model usage it reports (limits.h) */
    vd_claim_next next; /* a coalesced single call's claim_next (w.next points here) */
} disp_in;

static void disp_cleanup(disp_in *in)
{
    free(in->engine);
    free(in->request);
    free(in->next.limit_keys);
}

/* Validate the fields of one disposition (the single call's body, or a batch entry: f.path
 * prefixes the field names of a 400) into in->w; job_id and request_json are the caller's. */
static vd_error parse_disposition(vd_field f, disp_in *in)
{
    vd_job_write *w = &in->w;
    const char *word = NULL, *reason = NULL;
    vd_disposition d = VD_DISPOSITION_NONE;
    char name[200];
    vd_error rc;
    w->event.retry_after_seconds = -1;
    w->event.retryable = true;
    if ((rc = vd_get_token(f, &w->token)) ||
        (rc = vd_get_string(f, "disposition", true, 1, 40, &word)) ||
        (rc = vd_get_string(f, "reason", false, 0, 2000, &reason)) ||
        (rc = vd_get_bool(f, "force", false, &w->force)) ||
        (rc = vd_get_string(f, "evidence", false, 1, VD_EVIDENCE_MAX, &w->evidence)) ||
        (rc = vd_get_redacted_object(f, "engine_data", MAX_ENGINE_DATA, VD_ERR_INVALID_FIELD,
                                     &in->engine)) ||
        (rc = vd_get_usage(f, &in->usage)))
        return rc;
    w->reason = reason;
    if (!vd_disposition_parse(word, &d) || d == VD_DISPOSITION_SESSION_OUTCOME)
        return vd_fail(f.ctx, VD_ERR_INVALID_FIELD,
                       vd_field_name(f, "disposition", name, sizeof(name)),
                       "'%s' must be complete, reject_source, defer_item, fail, request_review or "
                       "skip_item",
                       name);
    if (d == VD_DISPOSITION_SKIP_ITEM) {
        bool reject = false;
        vd_skip_item_map(reason, &reject, &w->reason_code);
        w->event.kind = reject ? VD_EVENT_REJECT_SOURCE : VD_EVENT_DEFER_ITEM;
        w->is_reject = reject;
        w->disposition = reject ? VD_DISPOSITION_REJECT_SOURCE : VD_DISPOSITION_DEFER_ITEM;
        w->cause = VD_CAUSE_SKIP_ITEM;
        snprintf(in->hint, sizeof(in->hint),
                 "skip_item is deprecated: call %s with reason_code '%s' instead%s.",
                 vd_disposition_name(w->disposition), w->reason_code,
                 reject ? "" : " (the item stays eligible and is retried later)");
        w->deprecation_hint = in->hint;
    } else if ((rc = parse_explicit(f, d, w))) {
        return rc;
    } else {
        w->disposition = d;
        w->cause = vd_disposition_cause(d);
    }
    w->actor = f.ctx->actor;
    w->engine_data = in->engine;
    if (in->usage.given || w->event.rate_limited) { /* flow control (limits.h) */
        w->decide = vd_limits_decide;
        w->decide_arg = &in->usage;
    }
    return VD_OK;
}

/* Why a job write was refused: the message (in msg) and the field it names, or NULL. */
static const char *refusal(vd_error rc, const vd_job_write *w, const vd_job_answer *ans, char *msg,
                           size_t len)
{
    int64_t job = w->job_id;
    char what[48];
    snprintf(what, sizeof(what), "job %lld", (long long)job);
    if (rc == VD_ERR_JOB_FINALIZED) {
        snprintf(msg, len,
                 "%s is already finished with disposition '%s'; a different call cannot replace "
                 "it (repeat the identical call to read the stored answer)",
                 what, ans->standing);
        return "disposition";
    }
    if (rc == VD_ERR_TOOL_FAILURE_PENDING && !w->is_reject) { /* complete */
        snprintf(msg, len,
                 "a write or required tool failed in %s and no later success of it was reported, "
                 "so what it should have written was not written: call defer_item or fail "
                 "(complete needs force: true with a reason)",
                 what);
        return "disposition";
    }
    if (rc == VD_ERR_TOOL_FAILURE_PENDING) {
        snprintf(msg, len,
                 "a required tool failed in %s: a tooling failure is not a reason to reject the "
                 "source",
                 what);
        return "disposition";
    }
    if (ans->why) { /* the rejection lint (service/lint.c) */
        snprintf(msg, len, "%s: %s", what, ans->why);
        return ans->field;
    }
    if (rc == VD_ERR_TOOLING_INCIDENT_OPEN) {
        snprintf(msg, len,
                 "a tooling incident is open in the flow step of %s (GET /v1/tool-incidents): "
                 "a tool fails the same way on many items, which is no reason to reject this "
                 "source; call defer_item with reason_code tool_error (or force: true)",
                 what);
        return "disposition";
    }
    return vd_store_message(rc, what, msg, len);
}

/* The members parse_next reads. */
#define NEXT_MEMBERS                                                                               \
    {"claim_next", VD_J_NUMBER}, {"lease_seconds", VD_J_NUMBER}, {"limit_keys", VD_J_ARRAY},       \
    {                                                                                              \
        "estimated_tokens", VD_J_NUMBER                                                            \
    }

/* claim_next (0..100), the lease of its claims (lease_seconds) and the worker's limit_keys
 * and estimated_tokens, as POST /v1/claims takes them, from a single call's body or a batch's
 * top level (next->limit_keys malloc'd: the caller frees it). */
static vd_error parse_next(vd_ctx *ctx, const cJSON *body, vd_claim_next *next)
{
    vd_field f = {ctx, body, NULL};
    vd_error rc = vd_get_int(f, "claim_next", false, 0, MAX_BATCH, 0, &next->count);
    if (rc ||
        (rc =
             vd_get_int(f, "estimated_tokens", false, 0, 100000000, -1, &next->estimated_tokens)) ||
        (rc = vd_get_limit_keys(f, &next->limit_keys)))
        return rc;
    return vd_get_int(f, "lease_seconds", false, 5, 86400, ctx->cfg->lease_seconds,
                      &next->lease_seconds);
}

vd_error vd_disposition_run(vd_ctx *ctx, int64_t job_id, const cJSON *body,
                            const char *request_json, const vd_claim_next *next, char **answer)
{
    vd_conn *c = NULL;
    vd_job_answer ans = {0};
    disp_in in = {0};
    vd_error rc;
    *answer = NULL;
    in.w.job_id = job_id;
    if ((rc = parse_disposition((vd_field){ctx, body, NULL}, &in)) || (rc = vd_ctx_db(ctx, &c)))
        goto out;
    in.w.request_json = request_json;
    rc = vd_job_apply_next(c, ctx->cfg, &in.w, 1, next, &ans, NULL);
    if (rc == VD_OK)
        rc = ans.rc;
    if (rc) {
        char msg[sizeof(ctx->err_message)];
        const char *field = refusal(rc, &in.w, &ans, msg, sizeof(msg));
        vd_fail(ctx, rc, field, "%s", msg);
    } else {
        *answer = vd_job_reply(NULL, ans.kept, ans.replayed);
        if (!*answer)
            rc = vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
        else if (ans.lint_signal && !ans.replayed)
            vd_metrics_observe_lint_signal(ans.lint_signal);
    }
out:
    disp_cleanup(&in);
    free(ans.kept);
    return rc;
}

/* A single disposition, validated here (a 400 answers at once), is left to the coalescer: it
 * shares the batch path's transaction with the dispositions in flight, and its claim_next (which
 * it takes over, *next emptied) claims in that transaction. */
static vd_error coalesce_disposition(vd_ctx *ctx, int64_t job_id, const cJSON *body,
                                     vd_claim_next *next)
{
    disp_in *in = calloc(1, sizeof(*in));
    vd_error rc = in ? VD_OK : vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    if (rc)
        return rc;
    in->next = *next;
    next->limit_keys = NULL;
    in->w.job_id = job_id;
    if ((rc = parse_disposition((vd_field){ctx, body, NULL}, in))) {
        disp_cleanup(in);
        free(in);
        return rc;
    }
    in->w.request_json = ctx->body;
    in->w.trace_id = ctx->trace.trace_id;
    in->w.span_id = ctx->trace.span_id;
    in->w.next = in->next.count > 0 ? &in->next : NULL;
    ctx->coalesce = VD_COALESCE_DISPOSITION;
    ctx->coalesce_group = "";
    ctx->coalesce_arg = in;
    return VD_OK;
}

/* One request's answer from its write's answer (as vd_disposition_run answers). */
static void disposition_answer(vd_ctx *ctx, const vd_job_answer *ans)
{
    const disp_in *in = ctx->coalesce_arg;
    char *answer = NULL;
    if (ans->rc) {
        char msg[sizeof(ctx->err_message)];
        const char *field = refusal(ans->rc, &in->w, ans, msg, sizeof(msg));
        ctx->err = vd_fail(ctx, ans->rc, field, "%s", msg);
        return;
    }
    answer = vd_job_reply(NULL, ans->kept, ans->replayed);
    if (!answer) {
        ctx->err = vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
        return;
    }
    if (ans->lint_signal && !ans->replayed)
        vd_metrics_observe_lint_signal(ans->lint_signal);
    ctx->err = vd_respond_owned(ctx, answer);
}

/* Apply the writes of ctxs[0..n) (distinct jobs) in one transaction and answer each. A
 * failure of the whole transaction is retried one by one when there were several, so that
 * only the request that causes it gets it. */
static void serve_round(vd_conn *c, vd_ctx **ctxs, size_t n, vd_job_write *w, vd_job_answer *ans)
{
    vd_error rc;
    bool alone; /* one by one after a failure of all of them that one may have caused */
    for (size_t i = 0; i < n; i++)
        w[i] = ((const disp_in *)ctxs[i]->coalesce_arg)->w;
    vd_conn_set_trace(c, ctxs[0]->trace.trace_id, ctxs[0]->trace.span_id);
    rc = vd_job_apply_many(c, ctxs[0]->cfg, w, n, ans);
    alone = rc && n > 1 && rc != VD_ERR_DATABASE_UNAVAILABLE;
    for (size_t i = 0; i < n; i++) {
        if (alone)
            serve_round(c, &ctxs[i], 1, w, ans + i);
        else if (rc)
            ctxs[i]->err = vd_store_fail(ctxs[i], rc, NULL);
        else
            disposition_answer(ctxs[i], &ans[i]);
        if (!alone) {
            free(ans[i].kept);
            ans[i].kept = NULL;
        }
    }
}

/* Whether ctxs[i]'s job is named by one of ctxs[0..i). */
static bool job_repeats(vd_ctx **ctxs, size_t i)
{
    int64_t job = ((const disp_in *)ctxs[i]->coalesce_arg)->w.job_id;
    for (size_t k = 0; k < i; k++) {
        if (((const disp_in *)ctxs[k]->coalesce_arg)->w.job_id == job)
            return true;
    }
    return false;
}

void vd_dispositions_serve(vd_ctx **ctxs, size_t n)
{
    vd_ctx **round = calloc(n, sizeof(*round)), **later = calloc(n, sizeof(*later));
    vd_job_write *w = calloc(n, sizeof(*w));
    vd_job_answer *ans = calloc(n, sizeof(*ans));
    vd_conn *c = NULL;
    vd_error rc = round && later && w && ans
                      ? vd_db_acquire_until(ctxs[0]->db, ctxs[0]->deadline, &c)
                      : VD_ERR_INTERNAL;
    size_t left = n;
    memcpy(later, ctxs, n * sizeof(*ctxs));
    while (rc == VD_OK && left > 0) { /* a job named twice goes in the next round */
        size_t k = 0, m = 0;
        for (size_t i = 0; i < left; i++) {
            round[k] = later[i];
            if (job_repeats(round, k))
                later[m++] = later[i];
            else
                k++;
        }
        serve_round(c, round, k, w, ans);
        left = m;
    }
    for (size_t i = 0; i < n; i++) {
        if (rc)
            ctxs[i]->err = vd_store_fail(ctxs[i], rc, NULL);
        disp_cleanup(ctxs[i]->coalesce_arg);
        free(ctxs[i]->coalesce_arg);
        ctxs[i]->coalesce_arg = NULL;
    }
    vd_db_release(ctxs[0]->db, c);
    free(round);
    free(later);
    free(w);
    free(ans);
}

/* Coalesced single dispositions on the executor (decision 0097): their writes and answers
 * (owned) and the requests (borrowed) until they are answered or handed back. */
typedef struct disp_group {
    vd_job_write *w;
    vd_job_answer *ans;
    size_t n;
    void (*done)(void *arg, bool again);
    void *arg;
    vd_ctx *ctxs[]; /* n */
} disp_group;

/* Whether ctxs[0..n) may go to the executor as one batch (the rules of batch_goes_async). */
static bool group_fits(vd_ctx **ctxs, size_t n, const vd_job_write *w)
{
    const vd_config *cfg = ctxs[0]->cfg;
    if (cfg->otlp_endpoint && *cfg->otlp_endpoint)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!ctxs[i]->async_on || ctxs[i]->async_sync || job_repeats(ctxs, i))
            return false;
    }
    return vd_job_async_fits(cfg, w, n);
}

/* The executor's answer (on its thread): each request answered as serve_round answers it
 * when the one transaction did not fail (a failure after the finish was sent, which may have
 * committed, is every request's: nothing is tried again); handed back, left as it was. */
static void group_done(void *arg, bool again, vd_error rc)
{
    disp_group *g = arg;
    void (*done)(void *arg, bool again) = g->done;
    void *done_arg = g->arg;
    for (size_t i = 0; i < g->n; i++) {
        vd_ctx *ctx = g->ctxs[i];
        if (!again && rc)
            ctx->err = vd_store_fail(ctx, rc, NULL);
        else if (!again)
            disposition_answer(ctx, &g->ans[i]);
        free(g->ans[i].kept);
        if (!again) { /* as vd_dispositions_serve leaves it */
            disp_cleanup(ctx->coalesce_arg);
            free(ctx->coalesce_arg);
            ctx->coalesce_arg = NULL;
        }
    }
    free(g->w);
    free(g->ans);
    free(g);
    done(done_arg, again); /* the requests may be resumed there: nothing read after */
}

bool vd_dispositions_serve_async(vd_ctx **ctxs, size_t n, struct vd_async *x,
                                 void (*done)(void *arg, bool again), void *arg)
{
    disp_group *g = n > 0 ? calloc(1, sizeof(*g) + n * sizeof(*g->ctxs)) : NULL;
    vd_job_write *w = g ? calloc(n, sizeof(*w)) : NULL;
    vd_job_answer *ans = w ? calloc(n, sizeof(*ans)) : NULL;
    for (size_t i = 0; ans && i < n; i++)
        w[i] = ((const disp_in *)ctxs[i]->coalesce_arg)->w;
    if (ans && group_fits(ctxs, n, w)) {
        *g = (disp_group){w, ans, n, done, arg};
        memcpy(g->ctxs, ctxs, n * sizeof(*ctxs));
        if (vd_job_apply_async(x, ctxs[0]->cfg, w, n, ctxs[0]->trace.trace_id, ctxs[0]->deadline,
                               ans, group_done, g))
            return true; /* g and the requests may be answered already: not read */
    }
    free(g);
    free(w);
    free(ans);
    return false;
}

vd_error vd_h_disposition(vd_ctx *ctx)
{
    static const vd_member members[] = {DISPOSITION_MEMBERS, NEXT_MEMBERS};
    const cJSON *body = NULL;
    char *answer = NULL;
    int64_t job = 0;
    vd_claim_next next = {0, 0, true, NULL, -1}; /* the claims are kept with the answer */
    vd_error rc = vd_param_id(ctx, 0, "job", &job);
    if (rc || (rc = vd_body_object(ctx, &body)) ||
        (rc = VD_MEMBERS_CHECK(((vd_field){ctx, body, NULL}), members)) ||
        (rc = parse_next(ctx, body, &next))) {
        free(next.limit_keys);
        return rc;
    }
    if (ctx->coalesce_on) {
        rc = coalesce_disposition(ctx, job, body, &next);
        free(next.limit_keys);
        return rc;
    }
    rc = vd_disposition_run(ctx, job, body, ctx->body, &next, &answer);
    free(next.limit_keys);
    if (rc)
        return rc;
    return vd_respond_owned(ctx, answer);
}

/* Counts a release in verdict_releases_total from its kept answer (the item's flow step and
 * whether it was parked). */
static void observe_release(const char *kept)
{
    cJSON *a = kept ? cJSON_Parse(kept) : NULL;
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(a, "item");
    const char *fs = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "flow_step_id"));
    const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "state"));
    if (fs)
        vd_metrics_observe_release(fs, st && strcmp(st, "manual_review") == 0);
    cJSON_Delete(a);
}

/* The holder gives its claim back without a verdict: a job write like a disposition (fenced
 * by the token, kept for replays), whose event spends no budget (VD_EVENT_RELEASE). */
vd_error vd_h_release(vd_ctx *ctx)
{
    static const vd_member members[] = {{"claim_token", VD_J_STRING}, {"reason", VD_J_STRING}};
    const cJSON *body = NULL;
    const char *reason = NULL;
    vd_conn *c = NULL;
    vd_job_answer ans = {0};
    vd_job_write w = {0};
    vd_error rc = vd_param_id(ctx, 0, "job", &w.job_id);
    vd_field f = {ctx, NULL, NULL};
    if (rc || (rc = vd_body_object(ctx, &body)))
        return rc;
    f.obj = body;
    if ((rc = VD_MEMBERS_CHECK(f, members)) || (rc = vd_get_token(f, &w.token)) ||
        (rc = vd_get_string(f, "reason", false, 0, 2000, &reason)) || (rc = vd_ctx_db(ctx, &c)))
        return rc;
    w.event = (vd_event){VD_EVENT_RELEASE, false, true, -1, false};
    w.disposition = VD_DISPOSITION_NONE;
    w.cause = VD_CAUSE_RELEASE;
    w.reason_code = "release";
    w.reason = reason;
    w.actor = ctx->actor;
    w.request_json = ctx->body;
    rc = vd_job_apply(c, ctx->cfg, &w, &ans);
    if (rc) {
        char msg[sizeof(ctx->err_message)];
        const char *field = refusal(rc, &w, &ans, msg, sizeof(msg));
        vd_fail(ctx, rc, field, "%s", msg);
    } else {
        char *reply = vd_job_reply(NULL, ans.kept, ans.replayed);
        if (!ans.replayed)
            observe_release(ans.kept);
        rc = reply ? vd_respond_owned(ctx, reply)
                   : vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    }
    free(ans.kept);
    return rc;
}

/* The plugin reports a later success of a tool that failed in the job: its failures no longer
 * hold `complete` back (POST /v1/jobs/{job_id}/tool-successes). */
vd_error vd_h_tool_success(vd_ctx *ctx)
{
    static const vd_member members[] = {{"claim_token", VD_J_STRING}, {"tool", VD_J_STRING}};
    const cJSON *body = NULL;
    const char *token = NULL, *tool = NULL;
    int64_t job = 0, cleared = 0;
    bool pending = false;
    vd_conn *c = NULL;
    char what[48];
    vd_error rc = vd_param_id(ctx, 0, "job", &job);
    vd_field f = {ctx, NULL, NULL};
    if (rc || (rc = vd_body_object(ctx, &body)))
        return rc;
    f.obj = body;
    if ((rc = VD_MEMBERS_CHECK(f, members)) || (rc = vd_get_token(f, &token)) ||
        (rc = vd_get_string(f, "tool", true, 1, 200, &tool)) || (rc = vd_ctx_db(ctx, &c)))
        return rc;
    snprintf(what, sizeof(what), "job %lld", (long long)job);
    if ((rc = vd_job_tool_success(c, job, token, tool, &cleared, &pending)))
        return vd_store_fail(ctx, rc, what);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "job_id", (double)job);
    cJSON_AddStringToObject(o, "tool", tool);
    cJSON_AddNumberToObject(o, "cleared", (double)cleared);
    cJSON_AddBoolToObject(o, "tool_failure_pending", pending);
    return vd_respond_json(ctx, 200, o);
}

/* dispositions[i]: a disposition with its job_id, distinct from the entries before it. */
static vd_error parse_entry(vd_ctx *ctx, const cJSON *e, int i, disp_in *all)
{
    static const vd_member members[] = {DISPOSITION_MEMBERS, {"job_id", VD_J_NUMBER}};
    char path[32], name[200];
    disp_in *in = &all[i];
    vd_field f = {ctx, e, path};
    vd_error rc;
    snprintf(path, sizeof(path), "dispositions[%d]", i);
    if (!cJSON_IsObject(e))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, path, "'%s' must be an object", path);
    if ((rc = VD_MEMBERS_CHECK(f, members)) ||
        (rc = vd_get_int(f, "job_id", true, 1, VD_MAX_ID, 0, &in->w.job_id)))
        return rc;
    for (int j = 0; j < i; j++) {
        if (all[j].w.job_id == in->w.job_id)
            return vd_fail(ctx, VD_ERR_INVALID_FIELD,
                           vd_field_name(f, "job_id", name, sizeof(name)),
                           "'%s' repeats job %lld of dispositions[%d]: a batch names each job "
                           "once",
                           name, (long long)in->w.job_id, j);
    }
    if ((rc = parse_disposition(f, in)))
        return rc;
    /* the entry as the single call's body would carry it, so a repeat through either replays */
    cJSON *copy = cJSON_Duplicate(e, true);
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "job_id");
    in->request = copy ? cJSON_PrintUnformatted(copy) : NULL;
    cJSON_Delete(copy);
    if (!in->request)
        return vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    in->w.request_json = in->request;
    return VD_OK;
}

/* A refused entry of a batch: {"job_id":…,"status":…, then the single call's envelope}. */
static char *refused_entry(int i, const disp_in *in, const vd_job_answer *ans)
{
    char msg[600], name[200], id[24];
    const char *field = refusal(ans->rc, &in->w, ans, msg, sizeof(msg));
    if (field)
        snprintf(name, sizeof(name), "dispositions[%d].%s", i, field);
    cJSON *env = vd_error_envelope(ans->rc, msg, field ? name : NULL);
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;
    snprintf(id, sizeof(id), "%lld", (long long)in->w.job_id); /* exact beyond 2^53 */
    if (env && o && cJSON_AddRawToObject(o, "job_id", id) &&
        cJSON_AddNumberToObject(o, "status", vd_error_status(ans->rc))) {
        while (env->child) {
            cJSON *m = cJSON_DetachItemViaPointer(env, env->child);
            cJSON_AddItemToObject(o, m->string, m); /* takes m; its key is copied */
        }
        text = cJSON_PrintUnformatted(o);
    }
    cJSON_Delete(env);
    cJSON_Delete(o);
    return text;
}

/* {"results":[{"job_id":…,"status":…, then the single call's answer or error envelope}…]
 *  [,"claims":[…]]}; claims: claim_next's {"claims":[…]}, NULL without claim_next. */
static vd_error respond_results(vd_ctx *ctx, const disp_in *in, const vd_job_answer *ans, int n,
                                const char *claims)
{
    vd_buf b = {0};
    vd_buf_printf(&b, "{\"results\":[");
    for (int i = 0; i < n; i++) {
        char lead[64], *entry = NULL;
        if (ans[i].rc) {
            entry = refused_entry(i, &in[i], &ans[i]);
        } else {
            snprintf(lead, sizeof(lead), "\"job_id\":%lld,\"status\":200",
                     (long long)in[i].w.job_id);
            entry = vd_job_reply(lead, ans[i].kept, ans[i].replayed);
        }
        if (!entry)
            b.failed = true;
        else if (i > 0)
            vd_buf_append(&b, ",", 1);
        if (entry)
            vd_buf_append(&b, entry, strlen(entry));
        free(entry);
    }
    vd_buf_printf(&b, "]");
    if (claims && strlen(claims) > 2) { /* its members, after the results */
        vd_buf_append(&b, ",", 1);
        vd_buf_append(&b, claims + 1, strlen(claims) - 2);
    }
    vd_buf_append(&b, "}", 1);
    if (b.failed) {
        vd_buf_cleanup(&b);
        return vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
    }
    return vd_respond_owned(ctx, b.data);
}

/* The batch's dispositions (1..MAX_BATCH) into *list and *n. */
static vd_error batch_list(vd_ctx *ctx, const cJSON *body, const cJSON **list, int *n)
{
    *list = cJSON_GetObjectItemCaseSensitive(body, "dispositions");
    if (!*list || cJSON_IsNull(*list))
        return vd_fail(ctx, VD_ERR_MISSING_FIELD, "dispositions", "'dispositions' is required");
    *n = cJSON_GetArraySize(*list);
    if (!cJSON_IsArray(*list) || *n < 1 || *n > MAX_BATCH)
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "dispositions",
                       "'dispositions' must be an array of 1 to %d dispositions", MAX_BATCH);
    return VD_OK;
}

/* The batch's answer after vd_job_apply_next (or the executor) returned rc: the results, or
 * the store's error; claims: claim_next's answer, NULL without claim_next. */
static vd_error batch_answer(vd_ctx *ctx, const disp_in *in, const vd_job_answer *ans, int n,
                             vd_error rc, const char *claims)
{
    for (int i = 0; rc == VD_OK && i < n; i++) { /* a signal the lint noted but did not refuse */
        if (ans[i].rc == VD_OK && ans[i].lint_signal && !ans[i].replayed)
            vd_metrics_observe_lint_signal(ans[i].lint_signal);
    }
    if (rc)
        return vd_store_fail(ctx, rc, NULL);
    return respond_results(ctx, in, ans, n, claims);
}

/* A batch disposition on the executor (decision 0084): its parsed entries, writes and
 * answers (owned), until it is answered. */
struct disp_batch {
    disp_in *in;
    vd_job_write *w;
    vd_job_answer *ans;
    int n;
    vd_ctx *ctx;
    void (*done)(void *arg, bool again);
    void *arg;
};

static void batch_free(struct disp_batch *b)
{
    for (int i = 0; b && i < b->n; i++) {
        disp_cleanup(&b->in[i]);
        free(b->ans[i].kept);
    }
    if (b) {
        free(b->in);
        free(b->w);
        free(b->ans);
    }
    free(b);
}

void vd_dispositions_batch_free(vd_ctx *ctx)
{
    batch_free(ctx->async_batch);
    ctx->async_batch = NULL;
}

/* A batch without claim_next whose writes need no statement between the lock and the finish
 * (vd_job_async_fits) goes to the non-blocking executor, unless OTLP export is on (as for a
 * claim) or the executor handed it back to run here; it takes in, w and ans over. */
static bool batch_goes_async(vd_ctx *ctx, disp_in **in, vd_job_write **w, vd_job_answer **ans,
                             int n, const vd_claim_next *next)
{
    struct disp_batch *b = NULL;
    if (!ctx->async_on || ctx->async_sync || next->count > 0 ||
        (ctx->cfg->otlp_endpoint && *ctx->cfg->otlp_endpoint) ||
        !vd_job_async_fits(ctx->cfg, *w, (size_t)n))
        return false;
    b = calloc(1, sizeof(*b));
    if (!b)
        return false;
    *b = (struct disp_batch){*in, *w, *ans, n, ctx, NULL, NULL};
    *in = NULL;
    *w = NULL;
    *ans = NULL;
    ctx->async_batch = b;
    return true;
}

/* The executor's answer (on its thread): rendered as the sync path renders it. */
static void batch_done(void *arg, bool again, vd_error rc)
{
    struct disp_batch *b = arg;
    void (*done)(void *arg, bool again) = b->done;
    void *done_arg = b->arg;
    if (!again)
        b->ctx->err = batch_answer(b->ctx, b->in, b->ans, b->n, rc, NULL);
    batch_free(b); /* before the request may run again: its strings are in ctx->json */
    done(done_arg, again);
}

bool vd_dispositions_submit(vd_ctx *ctx, vd_async *x, void (*done)(void *arg, bool again),
                            void *arg)
{
    struct disp_batch *b = ctx->async_batch;
    ctx->async_batch = NULL;
    if (!b)
        return false;
    b->done = done;
    b->arg = arg;
    if (vd_job_apply_async(x, ctx->cfg, b->w, (size_t)b->n, ctx->trace.trace_id, ctx->deadline,
                           b->ans, batch_done, b))
        return true; /* b and ctx may be answered already: not read */
    batch_free(b);
    return false;
}

vd_error vd_h_dispositions(vd_ctx *ctx)
{
    static const vd_member members[] = {{"dispositions", VD_J_ARRAY}, NEXT_MEMBERS};
    const cJSON *body = NULL, *list = NULL;
    disp_in *in = NULL;
    vd_job_write *w = NULL;
    vd_job_answer *ans = NULL;
    vd_conn *c = NULL;
    vd_claim_next next = {0, 0, false, NULL, -1}; /* a batch's claims are not kept (README) */
    char *claims = NULL;
    int n = 0, i = 0;
    vd_error rc = vd_body_object(ctx, &body);
    if (rc || (rc = VD_MEMBERS_CHECK(((vd_field){ctx, body, NULL}), members)) ||
        (rc = parse_next(ctx, body, &next)) || (rc = batch_list(ctx, body, &list, &n)))
        goto out; /* next's limit_keys are freed there */
    in = calloc((size_t)n, sizeof(*in));
    w = calloc((size_t)n, sizeof(*w));
    ans = calloc((size_t)n, sizeof(*ans));
    if (!in || !w || !ans) {
        rc = vd_fail(ctx, VD_ERR_INTERNAL, NULL, "out of memory");
        goto out;
    }
    for (const cJSON *e = list->child; e && rc == VD_OK; e = e->next, i++)
        rc = parse_entry(ctx, e, i, in);
    for (i = 0; rc == VD_OK && i < n; i++)
        w[i] = in[i].w;
    if (rc || batch_goes_async(ctx, &in, &w, &ans, n, &next) || (rc = vd_ctx_db(ctx, &c)))
        goto out; /* answered from the executor's callback (server.c) */
    rc = vd_job_apply_next(c, ctx->cfg, w, (size_t)n, &next, ans, &claims);
    rc = batch_answer(ctx, in, ans, n, rc,
                      claims           ? claims
                      : next.count > 0 ? "{\"claims\":[]}"
                                       : NULL);
out:
    free(claims);
    free(next.limit_keys);
    for (i = 0; in && i < n; i++)
        disp_cleanup(&in[i]);
    for (i = 0; ans && i < n; i++)
        free(ans[i].kept);
    free(in);
    free(w);
    free(ans);
    return rc;
}

vd_error vd_h_job_get(vd_ctx *ctx)
{
    int64_t id = 0;
    char *out = NULL, what[48];
    vd_conn *c = NULL;
    vd_error rc = vd_param_id(ctx, 0, "job", &id);
    if (rc || (rc = vd_ctx_db(ctx, &c)))
        return rc;
    snprintf(what, sizeof(what), "job %lld", (long long)id);
    rc = vd_store_job_get(c, id, &out);
    return rc ? vd_store_fail(ctx, rc, what) : vd_respond_owned(ctx, out);
}

static bool valid_since(const char *s)
{
    /* RFC 3339: 2026-01-02T03:04:05Z / +01:00, optional fraction; PostgreSQL checks the rest */
    size_t n = strlen(s);
    if (n < 20 || n > 40 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= '0' && ch <= '9') || strchr("-:T.Z+tz", ch)))
            return false;
    }
    return true;
}

vd_error vd_h_jobs_list(vd_ctx *ctx)
{
    vd_list_filter f = {0};
    char *out = NULL;
    vd_conn *c = NULL;
    vd_job_status status = VD_JOB_PROCESSING;
    vd_error rc = vd_query_int(ctx, "limit", 1, 500, 100, &f.limit);
    if (rc || (rc = vd_query_int(ctx, "after", 0, INT64_MAX, 0, &f.after)) ||
        (rc = vd_query_int(ctx, "item_id", 1, INT64_MAX, 0, &f.item_id)) ||
        (rc = vd_query_str(ctx, "flow_step_id", 200, &f.flow_step_id)) ||
        (rc = vd_query_str(ctx, "reason_code", 200, &f.reason_code)) ||
        (rc = vd_query_str(ctx, "worker_id", 200, &f.worker_id)) ||
        (rc = vd_query_str(ctx, "trace_id", 32, &f.trace_id)) ||
        (rc = vd_query_order(ctx, &f.desc)))
        return rc;
    f.state = vd_query(ctx, "status");
    f.since = vd_query(ctx, "since");
    if (f.state && !vd_job_status_parse(f.state, &status))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "status", "'status' is not a job status");
    if (f.trace_id && !vd_trace_id_valid(f.trace_id))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "trace_id",
                       "'trace_id' must be 32 lower-case hex digits (a W3C trace id)");
    if (f.since && !valid_since(f.since))
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "since", "'since' must be an RFC 3339 time");
    if ((rc = vd_ctx_db(ctx, &c)))
        return rc;
    rc = vd_store_jobs_list(c, &f, &out);
    return rc ? vd_store_fail(ctx, rc, NULL) : vd_respond_owned(ctx, out);
}
