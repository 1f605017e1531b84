/* server.c - the libmicrohttpd glue: accept, accumulate the body under the size cap,
 * authenticate, route, run the handler, answer (errors through the one envelope), log one
 * JSON line per request. Per-request state lives in *req_cls and is freed on completion.
 * libmicrohttpd's one thread only does socket I/O: a read request is handed to the bounded
 * worker pool (workers.c) with its connection suspended, and resumed when its answer is
 * ready, so /healthz (answered inline) never waits for a handler or the database. A long-poll
 * claim that finds nothing is parked (waiters.c) with its connection still suspended, and
 * handed back to a worker when woken. */
#include "http_internal.h"
#include "metrics.h"
#include "otlp.h"
#include "tls.h"
#include "waiters.h"
#include "workers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "verdict/coalesce.h"
#include "verdict/store.h"
#include "verdict/store/async.h"
#include "verdict/store/listen.h"
#include "verdict/server.h"
#include "verdict/util.h"

struct vd_server {
    const vd_config *cfg;
    vd_db *db;
    struct MHD_Daemon *daemon;
    vd_workers *workers;
    vd_guard *guard;
    int inflight;          /* requests begun and not completed (atomic) */
    vd_tls tls;            /* optional HTTPS (tls.c) */
    vd_waiters *waiters;   /* parked long-poll claims */
    vd_listener *listener; /* their notifications (store/listen.c) */
    int stopping;          /* vd_server_stop began: refuse new requests (atomic) */
    vd_otlp *otlp;         /* span export (VERDICT_OTLP_ENDPOINT), or NULL */
    vd_coalescer *claims;  /* single-item claims, grouped by flow step (coalesce.h), or NULL */
    vd_coalescer *disps;   /* single dispositions, one group */
    vd_async *async;       /* the non-blocking executor (store/async.h), or NULL */
};

typedef enum req_state {
    REQ_READING = 0, /* headers read; the body may be arriving */
    REQ_RUNNING,     /* queued or running on a worker; the connection is suspended */
    REQ_READY,       /* the answer is on ctx */
    REQ_QUEUED,      /* handed to libmicrohttpd */
} req_state;

typedef struct vd_req {
    vd_buf body; /* the upload so far */
    bool too_large;
    double started;
    req_state state;
    vd_ctx ctx;
    vd_server *srv;
    vd_waiter waiter; /* while parked (a long-poll claim) */
} vd_req;

/* The most requests one coalesced statement serves. */
#define VD_COALESCE_BATCH 100

/* A claim the handler left for the executor, not submitted (or handed back). */
static void async_claim_free(vd_ctx *ctx)
{
    if (ctx->async_claim)
        free((char *)ctx->async_claim->keys_json);
    free(ctx->async_claim);
    ctx->async_claim = NULL;
}

static void req_free(vd_req *r)
{
    if (!r)
        return;
    async_claim_free(&r->ctx);
    vd_dispositions_batch_free(&r->ctx);
    cJSON_Delete(r->ctx.json);
    free(r->ctx.resp_body);
    free(r->ctx.span_links);
    vd_buf_cleanup(&r->body);
    free(r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    vd_server *srv = cls;
    (void)toe;
    if (*req_cls)
        __atomic_fetch_sub(&srv->inflight, 1, __ATOMIC_SEQ_CST);
    req_free(*req_cls);
    *req_cls = NULL;
    vd_guard_busy(c, false); /* the next request's read window starts now */
}

/* Append an upload chunk; past the cap the rest is drained and the request answered 413. */
static void req_append(vd_req *r, const char *data, size_t len, size_t max)
{
    if (r->too_large || r->body.len + len > max) {
        r->too_large = true;
        return;
    }
    vd_buf_append(&r->body, data, len);
    r->too_large = r->body.failed; /* out of memory: answered like a body past the cap */
}

static bool sane_request_id(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.' || c == ':'))
            return false;
    }
    return true;
}

/* Bearer token -> role and actor. With no keys configured everyone is admin (loopback). */
static vd_error authenticate(vd_ctx *ctx)
{
    const char *h = NULL;
    const vd_api_key *found = NULL;
    if (ctx->cfg->api_key_count == 0) {
        ctx->role = VD_ROLE_ADMIN;
        ctx->actor = "anonymous";
        return VD_OK;
    }
    h = MHD_lookup_connection_value(ctx->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return vd_fail(ctx, VD_ERR_UNAUTHORIZED, NULL, "missing bearer token");
    /* compare against every key, so the time does not tell which key was close */
    for (size_t i = 0; i < ctx->cfg->api_key_count; i++) {
        if (vd_ct_streq(h + 7, ctx->cfg->api_keys[i].token) && !found)
            found = &ctx->cfg->api_keys[i];
    }
    if (!found)
        return vd_fail(ctx, VD_ERR_UNAUTHORIZED, NULL, "unknown bearer token");
    ctx->role = found->role;
    ctx->actor = found->name;
    return VD_OK;
}

static bool is_json_ctype(const char *ct)
{
    size_t n = strlen("application/json");
    return ct && strncasecmp(ct, "application/json", n) == 0 &&
           (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

/* Everything between "the request is complete" and "the answer is ready". */
static vd_error dispatch(vd_ctx *ctx, vd_req *r)
{
    char msg[200];
    vd_match_result m =
        vd_route_match(vd_routes, vd_route_count, ctx->method, ctx->path, &ctx->match);
    if (vd_request_check_path(ctx))
        return ctx->err;
    if (m == VD_MATCH_NOT_FOUND)
        return vd_fail(ctx, VD_ERR_NOT_FOUND, NULL, "no endpoint %s %s", ctx->method, ctx->path);
    if (m == VD_MATCH_BAD_METHOD)
        return vd_fail(ctx, VD_ERR_METHOD_NOT_ALLOWED, NULL,
                       "%s is not allowed on %s (allowed: %s)", ctx->method, ctx->path,
                       ctx->match.allow);
    ctx->route = &vd_routes[ctx->match.route_index];
    if (vd_request_check_query(ctx))
        return ctx->err;
    if (ctx->route->role != VD_ROLE_NONE) {
        vd_error rc = authenticate(ctx);
        if (rc)
            return rc;
        if (ctx->role < ctx->route->role)
            return vd_fail(ctx, VD_ERR_FORBIDDEN, NULL, "key '%s' (%s) may not call %s %s",
                           ctx->actor, vd_role_name(ctx->role), ctx->method, ctx->route->pattern);
    }
    if (r->too_large)
        return vd_fail(ctx, VD_ERR_PAYLOAD_TOO_LARGE, NULL, "the body is larger than %zu bytes",
                       ctx->cfg->max_body_bytes);
    ctx->body = r->body.data ? r->body.data : "";
    ctx->body_len = r->body.len;
    if (r->body.len > 0) {
        const char *ct =
            MHD_lookup_connection_value(ctx->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!is_json_ctype(ct))
            return vd_fail(ctx, VD_ERR_UNSUPPORTED_MEDIA_TYPE, NULL,
                           "Content-Type '%s' is not application/json", ct ? ct : "(none)");
        char field[200];
        vd_error jrc = vd_json_parse(r->body.data, r->body.len, &ctx->json, msg, sizeof(msg), field,
                                     sizeof(field));
        if (jrc)
            return vd_fail(ctx, jrc, field[0] ? field : NULL, "%s", msg);
    }
    return ctx->route->handler(ctx);
}

static void access_log(const vd_ctx *ctx, double secs)
{
    char fields[1024];
    size_t n = 0;
    if (!vd_log_enabled(VD_LOG_INFO))
        return;
    n = (size_t)snprintf(
        fields, sizeof(fields),
        "\"request_id\":\"%s\",\"trace_id\":\"%s\",\"span_id\":\"%s\",\"method\":\"",
        ctx->request_id, ctx->trace.trace_id, ctx->trace.span_id);
    n = vd_json_escape(fields, sizeof(fields) - 200, n, ctx->method);
    n += (size_t)snprintf(fields + n, sizeof(fields) - n, "\",\"path\":\"");
    n = vd_json_escape(fields, sizeof(fields) - 200, n, ctx->path);
    snprintf(fields + n, sizeof(fields) - n,
             "\",\"route\":\"%s\",\"status\":%d,\"error\":\"%s\",\"duration_ms\":%.3f,"
             "\"actor\":\"%s\"",
             ctx->route ? ctx->route->name : "unmatched", ctx->status,
             ctx->err ? vd_error_code(ctx->err) : "", secs * 1000.0, ctx->actor ? ctx->actor : "");
    vd_log(VD_LOG_INFO, "request", fields);
}

/* The MCP endpoint answers its refusals as JSON-RPC errors (h_mcp.c). */
static bool speaks_jsonrpc(const vd_route *r)
{
    return r && (r->handler == vd_h_mcp || r->handler == vd_h_mcp_no_stream);
}

/* The console's files: scripts and styles only from this origin (no inline code), no
 * framing, no referrer; revalidated on every load by ETag (the binary may have changed). */
static void add_console_headers(const vd_ctx *ctx, struct MHD_Response *resp)
{
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'self'; script-src 'self'; style-src 'self'; "
                            "img-src 'self'; connect-src 'self'; object-src 'none'; "
                            "base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    if (ctx->etag)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, ctx->etag);
}

/* W3C Trace Context: the request's trace id with verdictd's span of it, and the caller's
 * tracestate back when its traceparent was valid. */
static void add_trace_headers(const vd_ctx *ctx, struct MHD_Response *resp)
{
    char tp[56];
    vd_trace_format(&ctx->trace, tp);
    MHD_add_response_header(resp, "traceparent", tp);
    if (ctx->trace.tracestate[0])
        MHD_add_response_header(resp, "tracestate", ctx->trace.tracestate);
}

/* Whether the client asked for the connection to end after this answer (Connection: close);
 * libmicrohttpd then sends Connection: close itself and a Keep-Alive hint would contradict it. */
static bool client_closes(struct MHD_Connection *conn)
{
    const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONNECTION);
    for (; v && *v; v++)
        if (strncasecmp(v, "close", 5) == 0)
            return true;
    return false;
}

/* close: the server is stopping; the client is told not to send another request here. */
static enum MHD_Result queue_answer(vd_ctx *ctx, bool close)
{
    struct MHD_Response *resp = NULL;
    enum MHD_Result ret;
    if (ctx->err) {
        if (ctx->err == VD_ERR_INTERNAL)
            vd_logf(VD_LOG_ERROR, "internal error on %s %s: %s", ctx->method, ctx->path,
                    ctx->err_message);
        cJSON *env = vd_error_envelope(ctx->err, ctx->err_message, ctx->err_field);
        if (speaks_jsonrpc(ctx->route)) /* MCP: a JSON-RPC error with no id, the envelope as data */
            env =
                vd_rpc_error(NULL, vd_rpc_code_of(ctx->err),
                             ctx->err_message[0] ? ctx->err_message : vd_error_code(ctx->err), env);
        if (vd_respond_json(ctx, vd_error_status(ctx->err), env))
            return MHD_NO;
        if (vd_error_retryable(ctx->err) && !ctx->retry_after[0])
            snprintf(ctx->retry_after, sizeof(ctx->retry_after), "1");
    }
    resp = MHD_create_response_from_buffer(strlen(ctx->resp_body), ctx->resp_body,
                                           MHD_RESPMEM_MUST_FREE);
    if (!resp)
        return MHD_NO;
    ctx->resp_body = NULL; /* owned by the response now */
    if (ctx->resp_ctype)   /* none on a 202 with no body */
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctx->resp_ctype);
    MHD_add_response_header(resp, "X-Request-Id", ctx->request_id);
    add_trace_headers(ctx, resp);
    if (ctx->retry_after[0])
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ctx->retry_after);
    if (ctx->err == VD_ERR_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, ctx->match.allow);
    if (ctx->err == VD_ERR_UNAUTHORIZED) /* RFC 6750 §3: the scheme a 401 wants */
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (ctx->idempotent_replayed)
        MHD_add_response_header(resp, "Idempotent-Replayed", "true");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (ctx->location)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, ctx->location);
    if (ctx->console)
        add_console_headers(ctx, resp);
    if (close) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    } else if (!client_closes(ctx->conn)) { /* how long a kept-alive connection may idle */
        char ka[32];
        snprintf(ka, sizeof(ka), "timeout=%d", ctx->cfg->idle_seconds);
        MHD_add_response_header(resp, "Keep-Alive", ka);
    }
    ret = MHD_queue_response(ctx->conn, (unsigned)ctx->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* The request is read: what the worker (or, for /healthz, the I/O thread) runs. A handler
 * that asks to park (ctx->park) leaves the request running, with no answer. */
static void run_request(vd_req *r)
{
    vd_ctx *ctx = &r->ctx;
    ctx->err = dispatch(ctx, r);
    vd_db_release(ctx->db, ctx->dbc); /* rolls back anything a failed handler left open */
    ctx->dbc = NULL;
    if ((ctx->park || ctx->coalesce || ctx->async_claim || ctx->async_batch) && ctx->err == VD_OK &&
        !ctx->resp_body)
        return;
    async_claim_free(ctx);
    vd_dispositions_batch_free(ctx);
    ctx->park = false;
    if (ctx->err == VD_OK && !ctx->resp_body)
        vd_fail(ctx, VD_ERR_INTERNAL, NULL, "the handler produced no answer");
    r->state = REQ_READY;
}

/* Before a parked request runs again: what its last run left, the parsed body (parsed
 * again), and a fresh database deadline. */
static void rerun_reset(vd_req *r)
{
    vd_ctx *ctx = &r->ctx;
    cJSON_Delete(ctx->json);
    ctx->json = NULL;
    ctx->park = false;
    ctx->wait_flow_step = NULL;
    ctx->deadline = vd_monotonic() + ctx->cfg->db_timeout_ms / 1000.0;
}

/* Park a request whose claim found nothing (waiters.h: PARKED, or RETRY at once, or REFUSED:
 * it runs once more with wait_final and answers). */
static vd_park park(vd_req *r, uint64_t seq, bool may_retry)
{
    vd_waiter *w = &r->waiter;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->ctx.conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    memset(w, 0, sizeof(*w));
    snprintf(w->flow_step, sizeof(w->flow_step), "%s", r->ctx.wait_flow_step);
    w->until = r->ctx.wait_until;
    w->fd = ci ? ci->connect_fd : -1;
    return vd_waiters_park(r->srv->waiters, w, seq, may_retry);
}

/* A request its handler left to a coalescer, answered: resume it (on_access: finish()). */
static void coalesced_answered(vd_req *r)
{
    vd_ctx *ctx = &r->ctx;
    if (ctx->err == VD_OK && !ctx->resp_body)
        vd_fail(ctx, VD_ERR_INTERNAL, NULL, "the handler produced no answer");
    r->state = REQ_READY;
    MHD_resume_connection(ctx->conn);
}

/* Coalesced dispositions on the executor (decision 0097): their group's key and requests,
 * until the executor answers them or hands them back. */
typedef struct async_group {
    vd_server *srv;
    char key[VD_COALESCE_GROUP_MAX + 1];
    size_t n;
    vd_req *reqs[]; /* n */
} async_group;

static void serve_now(vd_req **reqs, size_t n);

/* The executor's end of a coalesced group (on its thread): every request answered, or handed
 * back (nothing of it committed) with async_sync to the front of its group, for a runner to
 * serve synchronously. The group's statement stays in flight until here (vd_coalescer_keep). */
static void async_group_done(void *arg, bool again)
{
    async_group *g = arg;
    vd_coalescer *c = g->srv->disps;
    char key[VD_COALESCE_GROUP_MAX + 1];
    memcpy(key, g->key, sizeof(key));
    vd_metrics_observe_async_coalesced(again, g->n);
    for (size_t i = 0; again && i < g->n; i++)
        g->reqs[i]->ctx.async_sync = true;
    if (again && !vd_coalescer_done(c, key, (void **)g->reqs, g->n)) {
        serve_now(g->reqs, g->n); /* out of memory: here, as the runner would */
        free(g);
        return;
    }
    if (!again) {
        vd_metrics_observe_coalesced(true, g->n);
        for (size_t i = 0; i < g->n; i++) /* r may be freed once resumed: nothing read after */
            coalesced_answered(g->reqs[i]);
        free(g);
        vd_coalescer_done(c, key, NULL, 0); /* the server may stop once it is done: last */
        return;
    }
    free(g);
}

/* Coalesced dispositions the executor takes: their statement kept in flight in the coalescer
 * until it answers (async_group_done). False: serve them here. */
static bool serve_async(vd_server *srv, const char *key, vd_req **reqs, vd_ctx **ctxs, size_t n)
{
    async_group *g = NULL;
    if (!srv->async || reqs[0]->ctx.coalesce != VD_COALESCE_DISPOSITION)
        return false;
    g = calloc(1, sizeof(*g) + n * sizeof(*g->reqs));
    if (!g || !vd_coalescer_keep(srv->disps, key)) {
        free(g);
        return false;
    }
    g->srv = srv;
    snprintf(g->key, sizeof(g->key), "%s", key);
    g->n = n;
    memcpy(g->reqs, reqs, n * sizeof(*reqs));
    if (vd_dispositions_serve_async(ctxs, n, srv->async, async_group_done, g))
        return true; /* g may be answered already: not read */
    vd_coalescer_done(srv->disps, key, NULL, 0);
    free(g);
    return false;
}

/* Serve reqs[0..n) (one kind and group) synchronously, on this thread, and resume them. */
static void serve_now(vd_req **reqs, size_t n)
{
    vd_ctx *ctxs[VD_COALESCE_BATCH] = {0};
    bool claims = reqs[0]->ctx.coalesce == VD_COALESCE_CLAIM;
    for (size_t i = 0; i < n; i++)
        ctxs[i] = &reqs[i]->ctx;
    if (claims)
        vd_claims_serve(ctxs, n);
    else
        vd_dispositions_serve(ctxs, n);
    vd_metrics_observe_coalesced(!claims, n);
    for (size_t i = 0; i < n; i++) /* r may be freed once resumed: nothing read after */
        coalesced_answered(reqs[i]);
}

/* The coalescers' statement (coalesce.h): items are requests of one kind and group. Single
 * dispositions that fit go to the executor; the rest are served here. */
static void serve_coalesced(void *arg, const char *group, void **items, size_t n)
{
    vd_ctx *ctxs[VD_COALESCE_BATCH] = {0};
    vd_req *reqs[VD_COALESCE_BATCH] = {0};
    if (n == 0 || n > VD_COALESCE_BATCH)
        return; /* the coalescer never hands out more than its max_batch */
    for (size_t i = 0; i < n; i++) {
        reqs[i] = items[i];
        ctxs[i] = &reqs[i]->ctx;
    }
    if (!serve_async(arg, group, reqs, ctxs, n))
        serve_now(reqs, n);
}

/* Hand the request to its coalescer. Its group idle: serve it here at once (no hand-off),
 * what arrives meanwhile waits for a runner; a coalescer that is stopping: serve it here. */
static void coalesce_submit(vd_req *r)
{
    vd_server *srv = r->srv;
    vd_coalescer *c = r->ctx.coalesce == VD_COALESCE_CLAIM ? srv->claims : srv->disps;
    char group[VD_COALESCE_GROUP_MAX + 1];
    void *item = r;
    snprintf(group, sizeof(group), "%s", r->ctx.coalesce_group); /* r may be freed once served */
    if (vd_coalescer_lead(c, group)) {
        serve_coalesced(srv, group, &item, 1);
        vd_coalescer_led(c, group);
    } else if (!vd_coalescer_submit(c, group, r)) {
        serve_now(&r, 1); /* not in the coalescer: nothing to keep in flight */
    }
}

static void work(void *item);

/* Back to a worker: the connection is suspended already. */
static void requeued(void *item)
{
    vd_req *r = item;
    r->state = REQ_RUNNING;
}

/* The executor handed the claim back (nothing of it committed): run it on the sync path, on
 * a worker, or here when none takes it (the queue full, or the server stopping). */
static void async_again(vd_req *r)
{
    double deadline = r->ctx.deadline; /* the request's one bound, as on the sync path */
    rerun_reset(r);
    r->ctx.deadline = deadline;
    r->ctx.async_sync = true;
    if (!vd_workers_push(r->srv->workers, r, requeued))
        work(r);
}

/* The executor's answer to a claim (on its thread): the bytes the sync path answers. */
static void async_done(void *arg, bool again, vd_error rc, char *body)
{
    vd_req *r = arg;
    vd_ctx *ctx = &r->ctx;
    vd_metrics_observe_async(again);
    if (again) {
        free(body);
        async_again(r);
        return;
    }
    if (rc)
        ctx->err = vd_store_fail(ctx, rc, NULL);
    else
        ctx->err = vd_respond_owned(ctx, body);
    coalesced_answered(r); /* r may be freed once resumed: nothing read after */
}

/* Hand the claim the handler left to the executor; one it does not take runs here. */
static void async_submit(vd_req *r)
{
    vd_async_claim *q = r->ctx.async_claim;
    char *keys = (char *)q->keys_json;
    bool taken;
    r->ctx.async_claim = NULL;
    taken = vd_async_claim_submit(r->srv->async, q, r->ctx.deadline, async_done, r);
    free(keys); /* copied by the executor; r may be answered already: not read */
    free(q);
    if (!taken) {
        vd_metrics_observe_async(true);
        async_again(r);
    }
}

/* The executor's end of a batch disposition (on its thread): answered on ctx, or handed back
 * (nothing of it committed) to run on the sync path. */
static void async_batch_done(void *arg, bool again)
{
    vd_req *r = arg;
    vd_metrics_observe_async_dispositions(again);
    if (again)
        async_again(r);
    else
        coalesced_answered(r); /* r may be freed once resumed: nothing read after */
}

/* Hand the batch disposition the handler left to the executor; one it does not take runs on
 * the sync path. */
static void async_batch_submit(vd_req *r)
{
    if (!vd_dispositions_submit(&r->ctx, r->srv->async, async_batch_done, r)) {
        vd_metrics_observe_async_dispositions(true);
        async_again(r);
    }
}

static void work(void *item)
{
    vd_req *r = item;
    bool woken = r->ctx.wait_until > 0; /* a parked claim's next run */
    bool by_tick = woken && r->waiter.by_tick;
    char step[VD_WAITER_FLOW_STEP_MAX + 1];
    for (int runs = 0;; runs++) {
        uint64_t seq = vd_waiters_seq(r->srv->waiters);
        if (woken || runs > 0)
            rerun_reset(r);
        run_request(r);
        if (r->ctx.coalesce && r->state != REQ_READY) { /* left to a coalescer */
            coalesce_submit(r);
            return;
        }
        if (r->ctx.async_claim && r->state != REQ_READY) { /* left to the executor */
            async_submit(r);
            return;
        }
        if (r->ctx.async_batch && r->state != REQ_READY) { /* the same, a batch disposition */
            async_batch_submit(r);
            return;
        }
        if (!r->ctx.park)
            break;
        vd_park p = park(r, seq, runs < 3);
        if (p == VD_PARKED)
            return; /* the registry has it now */
        if (p == VD_PARK_REFUSED)
            r->ctx.wait_final = true;
    }
    /* woken by the periodic retry and answered (it claimed): the next waiter of its flow
     * step may find more (deferred items come due by time, without a notification) */
    if (by_tick) { /* r may be freed once resumed: nothing of it is read after */
        vd_waiters *ws = r->srv->waiters;
        snprintf(step, sizeof(step), "%s", r->waiter.flow_step);
        MHD_resume_connection(r->ctx.conn);
        vd_waiters_notify(ws, step, 1, true);
        return;
    }
    MHD_resume_connection(r->ctx.conn); /* libmicrohttpd calls on_access again: finish() */
}

/* The registry wakes a parked claim (waiters.h; under its lock). */
static bool wake(void *cls, vd_waiter *w, vd_wake why)
{
    vd_server *srv = cls;
    vd_req *r = (vd_req *)((char *)w - offsetof(vd_req, waiter));
    if (why == VD_WAKE_GONE) { /* nobody reads the answer: no claim for it */
        static const char empty[] = "{\"claims\":[]}";
        vd_respond_text(&r->ctx, 200, "application/json", empty, sizeof(empty) - 1);
        r->state = REQ_READY;
        MHD_resume_connection(r->ctx.conn);
        return true;
    }
    if (why == VD_WAKE_FINAL)
        r->ctx.wait_final = true;
    if (vd_workers_push(srv->workers, r, requeued))
        return true;
    r->ctx.wait_final = false; /* stays parked; its deadline is checked again */
    return false;
}

static void on_claimable(void *arg, const char *flow_step_id, long count)
{
    vd_server *srv = arg;
    vd_waiters_notify(srv->waiters, flow_step_id, count, false);
}

/* The request's span for OTLP export (otlp.h): queued, never waited on. */
static void export_span(vd_otlp *x, const vd_ctx *ctx, double secs)
{
    struct timespec now;
    vd_span s = {.status = ctx->status, .flags = ctx->trace.flags};
    if (!x)
        return;
    clock_gettime(CLOCK_REALTIME, &now);
    s.end_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    s.start_ns = s.end_ns - (uint64_t)(secs * 1e9);
    memcpy(s.trace_id, ctx->trace.trace_id, sizeof(s.trace_id));
    memcpy(s.span_id, ctx->trace.span_id, sizeof(s.span_id));
    memcpy(s.parent_span_id, ctx->trace.parent_span_id, sizeof(s.parent_span_id));
    snprintf(s.method, sizeof(s.method), "%s", ctx->method ? ctx->method : "");
    snprintf(s.route, sizeof(s.route), "%s", ctx->route ? ctx->route->pattern : "");
    snprintf(s.name, sizeof(s.name), "%s", ctx->route ? ctx->route->name : "");
    snprintf(s.op, sizeof(s.op), "%s", vd_otlp_operation(ctx->route ? ctx->route->name : NULL));
    snprintf(s.error_type, sizeof(s.error_type), "%s", ctx->err ? vd_error_code(ctx->err) : "");
    snprintf(s.request_id, sizeof(s.request_id), "%s", ctx->request_id);
    for (const char *l = ctx->span_links; l && strlen(l) >= 48 && s.n_links < VD_SPAN_LINKS;
         l = l[48] == ',' ? l + 49 : l + 48)
        snprintf(s.links[s.n_links++], sizeof(s.links[0]), "%.48s", l);
    vd_otlp_record(x, &s);
}

/* Hand the answer on ctx to libmicrohttpd, count and log it. */
static enum MHD_Result finish(vd_req *r)
{
    vd_ctx *ctx = &r->ctx;
    enum MHD_Result ret =
        queue_answer(ctx, __atomic_load_n(&r->srv->stopping, __ATOMIC_SEQ_CST) != 0);
    double secs = vd_monotonic() - r->started;
    r->state = REQ_QUEUED;
    vd_metrics_observe_http(ctx->route ? (long)ctx->match.route_index : -1, ctx->status, secs);
    access_log(ctx, secs);
    export_span(r->srv->otlp, ctx, secs);
    return ret;
}

static void ctx_init(const vd_server *srv, vd_req *r, struct MHD_Connection *conn, const char *url,
                     const char *method)
{
    vd_ctx *ctx = &r->ctx;
    const char *rid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
    memset(ctx, 0, sizeof(*ctx));
    ctx->cfg = srv->cfg;
    ctx->db = srv->db;
    ctx->conn = conn;
    ctx->method = method;
    ctx->path = url;
    ctx->deadline = r->started + srv->cfg->db_timeout_ms / 1000.0;
    ctx->coalesce_on = srv->claims && srv->disps;
    ctx->async_on = vd_async_usable(srv->async);
    vd_trace_begin(&ctx->trace, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "traceparent"),
                   MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "tracestate"));
    if (sane_request_id(rid))
        snprintf(ctx->request_id, sizeof(ctx->request_id), "%s", rid);
    else
        vd_random_hex(ctx->request_id, 16);
}

/* What is refused from the headers alone, before any body byte is read: a transfer coding
 * other than chunked (libmicrohttpd would wait for a body it cannot delimit) and a declared
 * Content-Length above the cap. */
static vd_error refuse_early(vd_ctx *ctx)
{
    const char *te =
        MHD_lookup_connection_value(ctx->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    const char *cl =
        MHD_lookup_connection_value(ctx->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (te && strcasecmp(te, "chunked") != 0)
        return vd_fail(ctx, VD_ERR_UNSUPPORTED_TRANSFER_CODING, "Transfer-Encoding",
                       "Transfer-Encoding '%s' is not supported: send the body with a "
                       "Content-Length or 'Transfer-Encoding: chunked'",
                       te);
    if (cl && !te) {
        int64_t n = 0;
        if (!vd_parse_i64(cl, strlen(cl), 0, INT64_MAX, &n) ||
            (uint64_t)n > ctx->cfg->max_body_bytes)
            return vd_fail(ctx, VD_ERR_PAYLOAD_TOO_LARGE, "Content-Length",
                           "the declared body is larger than %zu bytes", ctx->cfg->max_body_bytes);
    }
    return VD_OK;
}

/* libmicrohttpd's percent-decoding of the path and the query, which keeps a %00 visible
 * (input.h): without it "a%00b" would reach a handler as "a". */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls;
    (void)conn;
    return vd_url_unescape(s);
}

static bool is_healthz(const char *method, const char *url)
{
    return strcmp(url, "/healthz") == 0 &&
           (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0);
}

/* A queued request's connection waits, suspended, until its worker resumes it. */
static void suspend(void *item)
{
    vd_req *r = item;
    r->state = REQ_RUNNING;
    MHD_suspend_connection(r->ctx.conn);
}

/* The flow step and wait of a long-poll claim's body (POST /v1/claims with wait_seconds
 * 1..20), read here without answering anything: false for any other request or body (the
 * handler validates the body whole when it runs). */
static bool long_poll_of(const vd_req *r, char *step, size_t cap, double *wait)
{
    const vd_route *route = r->ctx.route;
    if (!route || route->handler != vd_h_claims || r->too_large || r->body.len == 0)
        return false;
    cJSON *j = cJSON_ParseWithLength(r->body.data, r->body.len);
    const cJSON *fs = cJSON_GetObjectItemCaseSensitive(j, "flow_step_id");
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(j, "wait_seconds");
    bool ok = cJSON_IsString(fs) && fs->valuestring[0] && strlen(fs->valuestring) < cap &&
              cJSON_IsNumber(ws) && ws->valuedouble >= 1 && ws->valuedouble <= 20;
    if (ok) {
        snprintf(step, cap, "%s", fs->valuestring);
        *wait = ws->valuedouble;
    }
    cJSON_Delete(j);
    return ok;
}

/* A long-poll claim that finds the worker queue full is parked before it first runs, owed a
 * wake: a tick (100 ms) hands it to a worker once the queue has room, within its wait, instead
 * of a 503 (an unpaced burst of parked claims re-claiming at once); a full or stopping registry
 * answers it 503. False: not a long-poll claim (the caller refuses it). */
static bool park_overflow(vd_server *srv, vd_req *r)
{
    vd_waiter *w = &r->waiter;
    const union MHD_ConnectionInfo *ci;
    double wait = 0;
    memset(w, 0, sizeof(*w));
    if (!long_poll_of(r, w->flow_step, sizeof(w->flow_step), &wait))
        return false;
    ci = MHD_get_connection_info(r->ctx.conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    r->ctx.wait_until = vd_monotonic() + wait;
    w->until = r->ctx.wait_until;
    w->fd = ci ? ci->connect_fd : -1;
    w->owed = true;
    r->state = REQ_RUNNING;
    MHD_suspend_connection(r->ctx.conn);
    if (vd_waiters_park(srv->waiters, w, vd_waiters_seq(srv->waiters), false) != VD_PARKED) {
        vd_fail(&r->ctx, VD_ERR_OVERLOADED, NULL,
                "every worker is busy and %d long-poll claims are parked; try again shortly",
                srv->cfg->max_waiters);
        r->state = REQ_READY; /* libmicrohttpd calls on_access again: finish() */
        MHD_resume_connection(r->ctx.conn);
    }
    return true;
}

/* The request is read: answer /healthz here, queue anything else to a worker (or park a
 * long-poll claim that finds the queue full). */
static enum MHD_Result start_request(vd_server *srv, vd_req *r)
{
    vd_guard_busy(r->ctx.conn, true);
    if (is_healthz(r->ctx.method, r->ctx.path)) {
        run_request(r);
        return finish(r);
    }
    if (vd_workers_push(srv->workers, r, suspend) || park_overflow(srv, r))
        return MHD_YES;
    if (__atomic_load_n(&srv->stopping, __ATOMIC_SEQ_CST)) {
        vd_fail(&r->ctx, VD_ERR_SHUTTING_DOWN, NULL, "the server is stopping: send it again");
        return finish(r);
    }
    vd_fail(&r->ctx, VD_ERR_OVERLOADED, NULL,
            "every worker is busy and %d requests are waiting; try again shortly",
            srv->cfg->queue_depth);
    return finish(r);
}

/* First call: headers only. Set up the request and refuse at once what cannot be served. */
static enum MHD_Result begin_request(vd_server *srv, struct MHD_Connection *conn, const char *url,
                                     const char *method, void **req_cls)
{
    vd_req *r = calloc(1, sizeof(*r));
    if (!r)
        return MHD_NO;
    r->started = vd_monotonic();
    r->srv = srv;
    *req_cls = r;
    __atomic_fetch_add(&srv->inflight, 1, __ATOMIC_SEQ_CST);
    ctx_init(srv, r, conn, url, method);
    /* the route shapes the refusal (the MCP endpoint answers in JSON-RPC); dispatch matches
     * again, with authentication, once the request is read */
    if (vd_route_match(vd_routes, vd_route_count, method, url, &r->ctx.match) == VD_MATCH_FOUND)
        r->ctx.route = &vd_routes[r->ctx.match.route_index];
    if (__atomic_load_n(&srv->stopping, __ATOMIC_SEQ_CST))
        vd_fail(&r->ctx, VD_ERR_SHUTTING_DOWN, NULL, "the server is stopping: send it again");
    else
        refuse_early(&r->ctx);
    if (r->ctx.err)
        return finish(r); /* libmicrohttpd then reads no body and closes the connection */
    return MHD_YES;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **req_cls)
{
    vd_server *srv = cls;
    vd_req *r = *req_cls;
    (void)version;
    if (!r)
        return begin_request(srv, conn, url, method, req_cls);
    if (r->state == REQ_READY)
        return finish(r);
    if (r->state != REQ_READING) { /* answered already: swallow the rest */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        /* past the cap (a chunked body) the rest is drained, within the read deadline, and
         * answered 413: libmicrohttpd 0.9.75 cannot answer in the middle of a body */
        req_append(r, upload_data, *upload_data_size, srv->cfg->max_body_bytes);
        *upload_data_size = 0;
        return MHD_YES;
    }
    return start_request(srv, r);
}

static bool resolve(const char *host, int port, struct sockaddr_storage *ss)
{
    struct addrinfo hints, *res = NULL;
    char portstr[8];
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(portstr, sizeof(portstr), "%d", port);
    if (getaddrinfo(host, portstr, &hints, &res) != 0 || !res)
        return false;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return true;
}

/* The request line arrived (before its headers): the guard's read window starts. What is
 * returned becomes *req_cls: nothing, so on_access sees its first call as before. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    (void)uri;
    vd_guard_reading(c);
    return NULL;
}

/* libmicrohttpd's own diagnostics (a failed bind, thread or epoll setup) go to our log. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[1024];
    size_t n;
    (void)cls;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    vd_logf(VD_LOG_WARN, "libmicrohttpd: %s", msg);
}

/* Connections the guard lets a cap-keeping eviction leave open for a moment (shut down, not
 * yet closed by libmicrohttpd): libmicrohttpd's own limit is the cap plus this. */
static long eviction_slack(long cap)
{
    return cap / 8 + 8;
}

/* The global connection cap (guard.c keeps it), lowered to what the process may open: each
 * connection is a descriptor, and the pool, the listener and libraries need some too. */
static unsigned connection_cap(const vd_config *cfg)
{
    struct rlimit rl;
    long cap = cfg->max_connections;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        long room = (long)rl.rlim_cur - cfg->db_pool_size - 64 - eviction_slack(cap);
        if (room < cap) {
            vd_logf(VD_LOG_WARN, "VERDICT_MAX_CONNECTIONS %ld lowered to %ld (open file limit %ld)",
                    cap, room < 16 ? 16 : room, (long)rl.rlim_cur);
            cap = room < 16 ? 16 : room;
        }
    }
    return (unsigned)cap;
}

static void server_free(vd_server *srv)
{
    vd_store_listen_stop(srv->listener);
    vd_waiters_drain(srv->waiters);
    vd_workers_free(srv->workers);
    vd_coalescer_free(srv->claims); /* after the workers: they may still submit */
    vd_coalescer_free(srv->disps);
    vd_async_free(srv->async); /* after the workers and coalescers: they may submit */
    vd_waiters_free(srv->waiters);
    vd_guard_stop(srv->guard);
    vd_tls_cleanup(&srv->tls);
    vd_otlp_stop(srv->otlp);
    free(srv);
}

/* The daemon: one I/O thread (handlers run on the workers, so it only moves bytes). */
static bool start_daemon(vd_server *srv, unsigned flags, struct sockaddr_storage *ss)
{
    const vd_config *cfg = srv->cfg;
    unsigned cap = connection_cap(cfg);
    vd_guard_set_cap(srv->guard, (int)cap, cfg->connection_reserve_percent);
    errno = 0;
    srv->daemon = MHD_start_daemon(
        flags | srv->tls.flags, (uint16_t)cfg->listen_port, NULL, NULL, on_access, srv,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, (void *)NULL, MHD_OPTION_ARRAY, srv->tls.options,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)ss, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_NOTIFY_CONNECTION, vd_guard_notify, srv->guard, MHD_OPTION_URI_LOG_CALLBACK,
        on_uri, (void *)NULL, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)(cfg->idle_seconds > 55 ? cfg->idle_seconds + 5 : 60),
        MHD_OPTION_CONNECTION_LIMIT, cap + (unsigned)eviction_slack(cap),
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_connections_per_ip,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, (void *)NULL, MHD_OPTION_END);
    if (!srv->daemon) {
        int e = errno;
        vd_logf(VD_LOG_ERROR, "cannot listen on %s:%d (%s)", cfg->listen_host, cfg->listen_port,
                e ? strerror(e) : "see the libmicrohttpd message above");
        return false;
    }
    return true;
}

vd_server *vd_server_start(const vd_config *cfg, vd_db *db)
{
    struct sockaddr_storage ss;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    vd_server *srv = calloc(1, sizeof(*srv));
    if (!srv)
        return NULL;
    srv->cfg = cfg;
    srv->db = db;
    memset(&ss, 0, sizeof(ss));
    if (!resolve(cfg->listen_host, cfg->listen_port, &ss)) {
        vd_logf(VD_LOG_ERROR, "cannot resolve listen address %s", cfg->listen_host);
        free(srv);
        return NULL;
    }
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (!vd_tls_load(cfg, &srv->tls)) {
        server_free(srv);
        return NULL;
    }
    srv->workers = vd_workers_start(cfg->threads, cfg->queue_depth, work);
    srv->guard = vd_guard_start(cfg->read_timeout_ms, cfg->idle_seconds * 1000);
    srv->waiters = vd_waiters_start(cfg->max_waiters, cfg->wait_retry_ms, wake, srv);
    srv->otlp = vd_otlp_start(cfg->otlp_endpoint);
    if (cfg->coalesce_runners > 0) { /* a flow step's claims: one statement at a time */
        srv->claims =
            vd_coalescer_start(cfg->coalesce_runners, VD_COALESCE_BATCH, 1, serve_coalesced, srv);
        if (srv->claims && !vd_coalescer_cap(srv->claims, VD_CLAIM_GROUP_LIMITED, VD_LIMITED_RUN))
            vd_logf(VD_LOG_WARN, "limited claims coalesce without their cap of %d", VD_LIMITED_RUN);
        srv->disps = vd_coalescer_start(cfg->coalesce_runners, VD_COALESCE_BATCH,
                                        cfg->coalesce_runners, serve_coalesced, srv);
    }
    if (!cfg->db_pool_transaction)
        srv->async = vd_async_start(db, cfg->db_async_connections);
    if (!srv->workers || !srv->guard || !srv->waiters) {
        vd_logf(VD_LOG_ERROR, "cannot start the worker threads");
        server_free(srv);
        return NULL;
    }
    if (!start_daemon(srv, flags, &ss)) {
        server_free(srv);
        return NULL;
    }
    /* through a transaction-pooling PgBouncer a LISTEN would not stay on one server
     * connection: long-poll claims then rely on the periodic retry alone */
    if (cfg->db_pool_transaction || cfg->max_waiters == 0)
        vd_logf(VD_LOG_INFO, "long-poll claims: no LISTEN (%s); retried every %d ms",
                cfg->max_waiters == 0 ? "VERDICT_MAX_WAITERS=0" : "transaction pool mode",
                cfg->wait_retry_ms);
    else
        srv->listener = vd_store_listen_start(cfg->database_url, on_claimable, srv);
    return srv;
}

/* Wait, up to secs, until every request begun is answered (its last byte written). */
static void await_answers(vd_server *srv, double secs)
{
    double end = vd_monotonic() + secs;
    while (__atomic_load_n(&srv->inflight, __ATOMIC_SEQ_CST) > 0 && vd_monotonic() < end) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (__atomic_load_n(&srv->inflight, __ATOMIC_SEQ_CST) > 0)
        vd_logf(VD_LOG_WARN, "stop: %d requests unanswered after %.0f s; closing them",
                __atomic_load_n(&srv->inflight, __ATOMIC_SEQ_CST), secs);
}

/* The drain: from here every new request (a kept-alive connection's next one included) is
 * answered 503 shutting_down with Connection: close; every answer carries Connection: close.
 * Parked long-poll claims are answered (one last claim), the workers finish what is queued
 * (each transaction commits or rolls back) and resume those connections, the answers are
 * written, and only then does the daemon close the idle connections. The pool is freed
 * after the daemon, so no request can reach a freed pool. */
void vd_server_stop(vd_server *srv)
{
    MHD_socket lsock;
    if (!srv)
        return;
    __atomic_store_n(&srv->stopping, 1, __ATOMIC_SEQ_CST);
    lsock = MHD_quiesce_daemon(srv->daemon);
    vd_store_listen_stop(srv->listener);
    srv->listener = NULL;
    vd_waiters_drain(srv->waiters);
    vd_workers_stop(srv->workers);  /* joined; vd_workers_push refuses from now on */
    vd_coalescer_stop(srv->claims); /* serves what the workers left to them */
    vd_coalescer_stop(srv->disps);
    vd_async_drain(srv->async); /* every claim in flight answered (or run here) */
    await_answers(srv, srv->cfg->read_timeout_ms / 1000.0 + 5.0);
    MHD_stop_daemon(srv->daemon);
    if (lsock != MHD_INVALID_SOCKET)
        close(lsock);
    server_free(srv);
}
