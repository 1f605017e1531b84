/* h_claims.c - SPEC §4: claim a batch of items (idempotent with Idempotency-Key), optionally
 * naming the worker's semantic version and waiting up to wait_seconds for items (a long-poll:
 * the server parks the request, waiters.c), and extend a claim's lease with a heartbeat that may
 * carry a progress checkpoint (a JSON object, redacted at any depth, at most 64 KiB). */
#include "http_internal.h"
#include "otlp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/coalesce.h"
#include "verdict/jobs.h"
#include "verdict/store/limits.h"
#include "verdict/semver.h"
#include "verdict/store.h"
#include "verdict/store/async.h"
#include "verdict/store/claims.h"
#include "verdict/store/coalesce.h"
#include "verdict/store/idempotency.h"
#include "verdict/util.h"

/* the longest wait_seconds of a long-poll claim */
#define VD_CLAIM_WAIT_MAX 20

/* worker_version: optional; a semantic version (semver.h) of at most 64 bytes. */
static vd_error get_worker_version(vd_field f, const char **out)
{
    vd_error rc = vd_get_string(f, "worker_version", false, 1, VD_SEMVER_MAX, out);
    if (rc || !*out || vd_semver_valid(*out))
        return rc;
    return vd_fail(f.ctx, VD_ERR_INVALID_FIELD, "worker_version",
                   "'worker_version' must be a semantic version: MAJOR.MINOR.PATCH with an "
                   "optional -pre-release and +build (e.g. 1.4.2, 2.0.0-rc.1+build.5)");
}

/* A long-poll claim may still park when it has time left (README "Long-poll claims"): its
 * wait starts when it first runs; the run after its deadline (wait_final) answers. */
static bool may_park(vd_ctx *ctx, int64_t wait)
{
    double now = vd_monotonic();
    if (wait <= 0 || ctx->cfg->max_waiters == 0)
        return false;
    if (ctx->wait_until == 0)
        ctx->wait_until = now + (double)wait;
    return !ctx->wait_final && now < ctx->wait_until; /* never answers empty before it */
}

/* What a claim asks for, read from its body. */
typedef struct claim_req {
    const char *fs, *worker, *key, *version;
    int64_t limit, lease, wait;
    char *limit_keys;         /* JSON array (malloc'd) or NULL */
    int64_t estimated_tokens; /* per item; -1: none */
} claim_req;

/* Park the request: no answer now (server.c puts it in the registry). */
static vd_error park(vd_ctx *ctx, const claim_req *q)
{
    ctx->park = true;
    ctx->wait_flow_step = q->fs;
    return VD_OK;
}

/* With OTLP export on: the claim's span links to the claims of its items' earlier attempts
 * (vd_store_claim_links), read by the claimed job ids. A failure only loses the links. */
static void claim_links(vd_ctx *ctx, vd_conn *c, const char *body)
{
    cJSON *root = NULL;
    const cJSON *cl;
    char ids[VD_SPAN_LINKS * 24 + 3] = "{";
    size_t n = 1;
    int k = 0;
    if (!ctx->cfg->otlp_endpoint || !*ctx->cfg->otlp_endpoint || !body)
        return;
    root = cJSON_Parse(body);
    cJSON_ArrayForEach(cl, cJSON_GetObjectItemCaseSensitive(root, "claims"))
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(cl, "job_id");
        if (cJSON_IsNumber(id) && k < VD_SPAN_LINKS)
            n += (size_t)snprintf(ids + n, sizeof(ids) - n, "%s%.0f", k++ ? "," : "",
                                  id->valuedouble);
    }
    cJSON_Delete(root);
    snprintf(ids + n, sizeof(ids) - n, "}");
    if (k > 0 && vd_store_claim_links(c, ids, &ctx->span_links) != VD_OK)
        ctx->span_links = NULL;
}

static bool coalesces(vd_ctx *ctx, const claim_req *q);
static bool goes_async(vd_ctx *ctx, claim_req *q);

static vd_error run_claim(vd_ctx *ctx, const claim_req *q)
{
    vd_conn *c = NULL;
    vd_reply reply = {0};
    bool parkable = may_park(ctx, q->wait);
    bool again = parkable && ctx->wait_runs++ > 0; /* a parked claim woken to try again */
    vd_idem idem = {"claims", ctx->actor, q->key, ctx->body};
    vd_error rc = vd_ctx_db(ctx, &c);
    vd_claim_keys keys = {q->limit_keys, q->estimated_tokens};
    if (rc == VD_OK) /* a claim that may still park keeps nothing when it gets nothing */
        rc = vd_store_claim_keyed(c, q->fs, q->worker, q->version, q->limit, q->lease, ctx->actor,
                                  &keys, parkable, &idem, &reply);
    if (rc == VD_OK && parkable && !reply.body) /* nothing yet */
        return park(ctx, q);
    /* a database outage while it waits does not end the wait: its deadline's run answers */
    if (again && rc == VD_ERR_DATABASE_UNAVAILABLE)
        return park(ctx, q);
    if (rc)
        return vd_store_fail(ctx, rc, NULL);
    ctx->idempotent_replayed = reply.replayed;
    if (!reply.replayed)
        claim_links(ctx, c, reply.body);
    return vd_respond_owned(ctx, reply.body);
}

vd_error vd_h_claims(vd_ctx *ctx)
{
    static const vd_member members[] = {
        {"flow_step_id", VD_J_STRING},     {"worker_id", VD_J_STRING},
        {"worker_version", VD_J_STRING},   {"limit", VD_J_NUMBER},
        {"lease_seconds", VD_J_NUMBER},    {"wait_seconds", VD_J_NUMBER},
        {"estimated_tokens", VD_J_NUMBER}, {"limit_keys", VD_J_ARRAY}};
    const cJSON *body = NULL;
    claim_req q = {0};
    vd_error rc = vd_body_object(ctx, &body);
    vd_field f = {ctx, body, NULL};
    if (rc || (rc = VD_MEMBERS_CHECK(f, members)) || (rc = vd_idempotency_key(ctx, &q.key)) ||
        (rc = vd_get_string(f, "flow_step_id", true, 1, 200, &q.fs)) ||
        (rc = vd_get_string(f, "worker_id", true, 1, 200, &q.worker)) ||
        (rc = get_worker_version(f, &q.version)) ||
        (rc = vd_get_int(f, "limit", false, 1, 100, 1, &q.limit)) ||
        (rc = vd_get_int(f, "lease_seconds", false, 5, 86400, ctx->cfg->lease_seconds, &q.lease)) ||
        (rc = vd_get_int(f, "wait_seconds", false, 0, VD_CLAIM_WAIT_MAX, 0, &q.wait)) ||
        (rc = vd_get_int(f, "estimated_tokens", false, 0, 100000000, -1, &q.estimated_tokens)) ||
        (rc = vd_get_limit_keys(f, &q.limit_keys)))
        return rc;
    if (coalesces(ctx, &q))
        return VD_OK; /* answered by vd_claims_serve, which frees limit_keys */
    if (goes_async(ctx, &q))
        return VD_OK; /* answered from the executor's callback (server.c) */
    rc = run_claim(ctx, &q);
    free(q.limit_keys);
    return rc;
}

/* The coalescer's group of a claim: plain claims (no limit keys, no estimate) of every flow
 * step share one, and claims with limit keys or an estimate another, whatever their flow step,
 * keys and estimate (each request's own go with it in claim_many_limited's rows). */
static const char *claim_group(const claim_req *q)
{
    return !q->limit_keys && q->estimated_tokens < 0 ? VD_CLAIM_GROUP_PLAIN
                                                     : VD_CLAIM_GROUP_LIMITED;
}

/* Whether a claim's Idempotency-Key can go in claim_many's rows: a plain claim (a limited
 * one keeps its key alone) whose body PostgreSQL reads as jsonb as its own key would be (a
 * body with a \u escape, which jsonb may refuse, claims alone: its error stays its own). */
static bool key_coalesces(const vd_ctx *ctx, const claim_req *q)
{
    return !q->key || (!strcmp(claim_group(q), VD_CLAIM_GROUP_PLAIN) && ctx->body &&
                       !strstr(ctx->body, "\\u"));
}

/* A claim of one item without wait is left to the coalescer: it shares a statement with the
 * other single-item claims of its group in flight (claim_group), its Idempotency-Key too
 * (key_coalesces: the key is kept or answered in that statement, claim_many). */
static bool coalesces(vd_ctx *ctx, const claim_req *q)
{
    claim_req *copy = NULL;
    if (!ctx->coalesce_on || q->limit != 1 || !key_coalesces(ctx, q) || q->wait > 0)
        return false;
    copy = malloc(sizeof(*copy));
    if (!copy)
        return false;
    *copy = *q; /* its strings live in ctx->json, as long as the request; limit_keys it owns */
    ctx->coalesce = VD_COALESCE_CLAIM;
    ctx->coalesce_group = claim_group(copy);
    ctx->coalesce_arg = copy;
    return true;
}

/* A claim without key or wait that is not coalesced is one fixed transaction: it goes to the
 * non-blocking executor (store/async.h), unless OTLP export wants its span links (a second
 * statement) or the executor handed it back to run here. */
static bool goes_async(vd_ctx *ctx, claim_req *q)
{
    vd_async_claim *a = NULL;
    if (!ctx->async_on || ctx->async_sync || q->key || q->wait > 0 ||
        (ctx->cfg->otlp_endpoint && *ctx->cfg->otlp_endpoint))
        return false;
    a = malloc(sizeof(*a));
    if (!a)
        return false;
    /* its strings live in ctx->json, as long as the request; the keys move to it */
    *a = (vd_async_claim){q->fs,         q->worker,           q->version,         ctx->actor,
                          q->limit_keys, ctx->trace.trace_id, ctx->trace.span_id, q->limit,
                          q->lease,      q->estimated_tokens};
    q->limit_keys = NULL;
    ctx->async_claim = a;
    return true;
}

/* One request's claim after claim_many answered it: its answer, its key's stored answer or
 * refusal, or (in a keyed flow step with an Idempotency-Key, body NULL) the claim alone on the
 * runner's connection. */
static void claim_answer(vd_ctx *ctx, vd_conn *c, const vd_claim_one *one)
{
    const claim_req *q = ctx->coalesce_arg;
    char *body = one->body;
    if (one->idem == VD_CLAIM_REUSED || one->idem == VD_CLAIM_UNANSWERED) {
        free(body);
        ctx->err = vd_store_fail(ctx,
                                 one->idem == VD_CLAIM_REUSED ? VD_ERR_IDEMPOTENCY_KEY_REUSED
                                                              : VD_ERR_DATABASE_UNAVAILABLE,
                                 NULL);
        return;
    }
    if (one->idem == VD_CLAIM_REPLAYED) {
        ctx->idempotent_replayed = true;
        ctx->err = vd_respond_owned(ctx, body);
        return;
    }
    if (!body) {
        vd_conn_set_trace(c, ctx->trace.trace_id, ctx->trace.span_id);
        ctx->dbc = c;
        ctx->err = run_claim(ctx, q);
        ctx->dbc = NULL;
        vd_conn_set_trace(c, NULL, NULL);
        return;
    }
    claim_links(ctx, c, body);
    ctx->err = vd_respond_owned(ctx, body);
}

/* The coalesced claims' statement. Plain claims (no limit keys, no estimate): claim_many; the
 * requests of keyed flow steps, left without a body, then claim with one claim_many_limited.
 * Claims with keys or an estimate: claim_many_take (one key set and estimate), then
 * claim_many_limited for what it leaves. Each request names its own flow step, limit keys and
 * estimate. */
static vd_error claim_many(vd_conn *c, vd_ctx **ctxs, vd_claim_one *reqs, size_t n)
{
    const claim_req *q = ctxs[0]->coalesce_arg;
    vd_error rc = VD_OK;
    if (q->limit_keys || q->estimated_tokens >= 0)
        return vd_store_claim_many_take(c, q->fs, reqs, n);
    if ((rc = vd_store_claim_many(c, NULL, reqs, n)))
        return rc;
    return vd_store_claim_many_rest(c, q->fs, reqs, n); /* the keyed flow steps' requests */
}

void vd_claims_serve(vd_ctx **ctxs, size_t n)
{
    vd_claim_one *reqs = calloc(n, sizeof(*reqs));
    vd_conn *c = NULL;
    vd_error rc = reqs ? vd_db_acquire_until(ctxs[0]->db, ctxs[0]->deadline, &c) : VD_ERR_INTERNAL;
    for (size_t i = 0; reqs && i < n; i++) {
        const claim_req *q = ctxs[i]->coalesce_arg;
        reqs[i] = (vd_claim_one){q->worker,
                                 q->version,
                                 ctxs[i]->actor,
                                 ctxs[i]->trace.trace_id,
                                 ctxs[i]->trace.span_id,
                                 q->lease,
                                 NULL,
                                 q->fs,
                                 q->limit_keys,
                                 q->estimated_tokens,
                                 q->key,
                                 ctxs[i]->body,
                                 VD_CLAIM_OWN};
    }
    if (rc == VD_OK)
        rc = claim_many(c, ctxs, reqs, n);
    for (size_t i = 0; i < n; i++) {
        claim_req *q = ctxs[i]->coalesce_arg;
        if (rc)
            ctxs[i]->err = vd_store_fail(ctxs[i], rc, NULL);
        else
            claim_answer(ctxs[i], c, &reqs[i]);
        free(q->limit_keys);
        free(q);
        ctxs[i]->coalesce_arg = NULL;
    }
    vd_db_release(ctxs[0]->db, c);
    free(reqs);
}

vd_error vd_h_heartbeat(vd_ctx *ctx)
{
    static const vd_member members[] = {
        {"claim_token", VD_J_STRING}, {"lease_seconds", VD_J_NUMBER}, {"checkpoint", VD_J_OBJECT}};
    const cJSON *body = NULL;
    const char *token = NULL;
    int64_t job = 0, lease = 0;
    char *out = NULL, *checkpoint = NULL, what[48];
    vd_conn *c = NULL;
    vd_error rc = vd_param_id(ctx, 0, "job", &job);
    vd_field f = {ctx, NULL, NULL};
    if (rc || (rc = vd_body_object(ctx, &body)))
        return rc;
    f.obj = body;
    if ((rc = VD_MEMBERS_CHECK(f, members)) || (rc = vd_get_token(f, &token)) ||
        (rc = vd_get_int(f, "lease_seconds", false, 5, 86400, 0, &lease)) || /* 0: the claim's */
        (rc = vd_get_redacted_object(f, "checkpoint", VD_CHECKPOINT_MAX, VD_ERR_PAYLOAD_TOO_LARGE,
                                     &checkpoint)) ||
        (rc = vd_ctx_db(ctx, &c))) {
        free(checkpoint);
        return rc;
    }
    snprintf(what, sizeof(what), "job %lld", (long long)job);
    rc = vd_job_heartbeat(c, job, token, lease, ctx->cfg->lease_seconds, checkpoint, &out);
    free(checkpoint);
    if (rc == VD_ERR_PAYLOAD_TOO_LARGE)
        return vd_fail(ctx, rc, "checkpoint",
                       "%s: the merged checkpoint would be larger than 128 KiB; nothing was "
                       "written (send fewer or smaller members)",
                       what);
    return rc ? vd_store_fail(ctx, rc, what) : vd_respond_owned(ctx, out);
}
