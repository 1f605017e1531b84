/* server.c - the libmicrohttpd glue: accept, accumulate the body under the size cap,
 * authenticate, route, run the handler, answer (errors through the one envelope), log one
 * JSON line per request. Per-request state lives in *req_cls and is freed on completion. */
#include "http_internal.h"
#include "metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/server.h"
#include "verdict/util.h"

struct vd_server {
    const vd_config *cfg;
    vd_db *db;
    struct MHD_Daemon *daemon;
};

typedef struct vd_req {
    char *body;
    size_t len, cap;
    bool too_large;
    double started;
} vd_req;

static void req_free(vd_req *r)
{
    if (!r)
        return;
    free(r->body);
    free(r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    req_free(*req_cls);
    *req_cls = NULL;
}

/* Append an upload chunk; past the cap the rest is drained and the request answered 413. */
static void req_append(vd_req *r, const char *data, size_t len, size_t max)
{
    if (r->too_large || r->len + len > max) {
        r->too_large = true;
        return;
    }
    if (r->len + len + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 1024;
        while (cap < r->len + len + 1)
            cap *= 2;
        char *b = realloc(r->body, cap);
        if (!b) {
            r->too_large = true;
            return;
        }
        r->body = b;
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, len);
    r->len += len;
    r->body[r->len] = '\0';
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
    vd_match_result m = vd_route_match(vd_routes, vd_route_count, ctx->method, ctx->path,
                                       &ctx->match);
    if (m == VD_MATCH_NOT_FOUND)
        return vd_fail(ctx, VD_ERR_NOT_FOUND, NULL, "no endpoint %s %s", ctx->method, ctx->path);
    if (m == VD_MATCH_BAD_METHOD)
        return vd_fail(ctx, VD_ERR_METHOD_NOT_ALLOWED, NULL, "%s is not allowed on %s (allowed: %s)",
                       ctx->method, ctx->path, ctx->match.allow);
    ctx->route = &vd_routes[ctx->match.route_index];
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
    ctx->body = r->body ? r->body : "";
    ctx->body_len = r->len;
    if (r->len > 0) {
        const char *ct = MHD_lookup_connection_value(ctx->conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!is_json_ctype(ct))
            return vd_fail(ctx, VD_ERR_UNSUPPORTED_MEDIA_TYPE, NULL,
                           "Content-Type '%s' is not application/json", ct ? ct : "(none)");
        if (vd_json_parse(r->body, r->len, &ctx->json, msg, sizeof(msg)))
            return vd_fail(ctx, VD_ERR_INVALID_JSON, NULL, "%s", msg);
    }
    return ctx->route->handler(ctx);
}

static void access_log(const vd_ctx *ctx, double secs)
{
    char fields[1024];
    size_t n = 0;
    if (!vd_log_enabled(VD_LOG_INFO))
        return;
    n = (size_t)snprintf(fields, sizeof(fields), "\"request_id\":\"%s\",\"method\":\"",
                         ctx->request_id);
    n = vd_json_escape(fields, sizeof(fields) - 200, n, ctx->method);
    n += (size_t)snprintf(fields + n, sizeof(fields) - n, "\",\"path\":\"");
    n = vd_json_escape(fields, sizeof(fields) - 200, n, ctx->path);
    snprintf(fields + n, sizeof(fields) - n,
             "\",\"route\":\"%s\",\"status\":%d,\"error\":\"%s\",\"duration_ms\":%.3f,"
             "\"actor\":\"%s\"",
             ctx->route ? ctx->route->name : "unmatched", ctx->status,
             ctx->err ? vd_error_code(ctx->err) : "", secs * 1000.0,
             ctx->actor ? ctx->actor : "");
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

static enum MHD_Result queue_answer(vd_ctx *ctx)
{
    struct MHD_Response *resp = NULL;
    enum MHD_Result ret;
    if (ctx->err) {
        if (ctx->err == VD_ERR_INTERNAL)
            vd_logf(VD_LOG_ERROR, "internal error on %s %s: %s", ctx->method, ctx->path,
                    ctx->err_message);
        cJSON *env = vd_error_envelope(ctx->err, ctx->err_message, ctx->err_field);
        if (speaks_jsonrpc(ctx->route)) /* MCP: a JSON-RPC error with no id, the envelope as data */
            env = vd_rpc_error(NULL, vd_rpc_code_of(ctx->err),
                               ctx->err_message[0] ? ctx->err_message : vd_error_code(ctx->err),
                               env);
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
    if (ctx->resp_ctype) /* none on a 202 with no body */
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctx->resp_ctype);
    MHD_add_response_header(resp, "X-Request-Id", ctx->request_id);
    if (ctx->retry_after[0])
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ctx->retry_after);
    if (ctx->err == VD_ERR_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, ctx->match.allow);
    if (ctx->idempotent_replayed)
        MHD_add_response_header(resp, "Idempotent-Replayed", "true");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (ctx->location)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, ctx->location);
    if (ctx->console)
        add_console_headers(ctx, resp);
    ret = MHD_queue_response(ctx->conn, (unsigned)ctx->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version,
                                 const char *upload_data, size_t *upload_data_size,
                                 void **req_cls)
{
    vd_server *srv = cls;
    vd_req *r = *req_cls;
    vd_ctx ctx;
    enum MHD_Result ret;
    const char *rid = NULL;
    (void)version;
    if (!r) {
        r = calloc(1, sizeof(*r));
        if (!r)
            return MHD_NO;
        r->started = vd_monotonic();
        *req_cls = r;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        req_append(r, upload_data, *upload_data_size, srv->cfg->max_body_bytes);
        *upload_data_size = 0;
        return MHD_YES;
    }
    memset(&ctx, 0, sizeof(ctx));
    ctx.cfg = srv->cfg;
    ctx.db = srv->db;
    ctx.conn = conn;
    ctx.method = method;
    ctx.path = url;
    rid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
    if (sane_request_id(rid))
        snprintf(ctx.request_id, sizeof(ctx.request_id), "%s", rid);
    else
        vd_random_hex(ctx.request_id, 16);
    ctx.err = dispatch(&ctx, r);
    vd_db_release(srv->db, ctx.dbc); /* rolls back anything a failed handler left open */
    ctx.dbc = NULL;
    if (ctx.err == VD_OK && !ctx.resp_body)
        vd_fail(&ctx, VD_ERR_INTERNAL, NULL, "the handler produced no answer");
    ret = queue_answer(&ctx);
    double secs = vd_monotonic() - r->started;
    vd_metrics_observe_http(ctx.route ? (long)ctx.match.route_index : -1, ctx.status, secs);
    access_log(&ctx, secs);
    cJSON_Delete(ctx.json);
    free(ctx.resp_body);
    return ret;
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

vd_server *vd_server_start(const vd_config *cfg, vd_db *db)
{
    struct sockaddr_storage ss;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG;
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
    errno = 0;
    srv->daemon = MHD_start_daemon(
        flags, (uint16_t)cfg->listen_port, NULL, NULL, on_access, srv,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, (void *)NULL, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->threads,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)60, MHD_OPTION_CONNECTION_LIMIT, (unsigned)4096, MHD_OPTION_END);
    if (!srv->daemon) {
        int e = errno;
        vd_logf(VD_LOG_ERROR, "cannot listen on %s:%d (%s)", cfg->listen_host, cfg->listen_port,
                e ? strerror(e) : "see the libmicrohttpd message above");
        free(srv);
        return NULL;
    }
    return srv;
}

void vd_server_stop(vd_server *srv)
{
    if (!srv)
        return;
    MHD_quiesce_daemon(srv->daemon);
    MHD_stop_daemon(srv->daemon);
    free(srv);
}
