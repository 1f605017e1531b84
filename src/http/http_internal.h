/* http_internal.h - what the http layer's files share: the per-request context handed to
 * handlers, the route table type, response and JSON-input helpers. Only src/http/ includes
 * this (and with it microhttpd.h and cJSON.h). */
#ifndef VERDICT_HTTP_INTERNAL_H
#define VERDICT_HTTP_INTERNAL_H

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

#include "verdict/config.h"
#include "verdict/domain.h"
#include "verdict/error.h"
#include "verdict/jobs.h"
#include "verdict/store.h"
#include "verdict/trace.h"

#include "input.h"

#define VD_MAX_PARAMS 2
#define VD_PARAM_MAX 256
#define VD_JSON_MAX_DEPTH 32
/* the largest integer magnitude a JSON number is read exactly as (2^53 - 1) */
#define VD_JSON_MAX_EXACT 9007199254740991LL

typedef struct vd_ctx vd_ctx;
typedef enum vd_coalesce_kind {
    VD_COALESCE_NONE = 0,
    VD_COALESCE_CLAIM,       /* one item of one flow step, no key, no limits, no wait */
    VD_COALESCE_DISPOSITION, /* one disposition without claim_next */
} vd_coalesce_kind;
typedef vd_error (*vd_handler)(vd_ctx *ctx);

typedef struct vd_route {
    const char *method;  /* "GET", "POST" */
    const char *pattern; /* "/v1/jobs/{job_id}/heartbeat" */
    vd_role role;        /* VD_ROLE_NONE: no token needed */
    vd_handler handler;
    const char *name; /* the metrics label, e.g. "jobs.heartbeat" */
} vd_route;

extern const vd_route vd_routes[];
extern const size_t vd_route_count;
/* The query arguments route r takes, space-separated ("limit after state"), from the one table
 * of routes.c; NULL: none. Any other is 400 invalid_query (vd_request_check_query). */
const char *vd_route_query(const vd_route *r);

typedef enum vd_match_result {
    VD_MATCH_FOUND = 0,
    VD_MATCH_NOT_FOUND,
    VD_MATCH_BAD_METHOD,
} vd_match_result;

typedef struct vd_match {
    size_t route_index;
    int nparams;
    char params[VD_MAX_PARAMS][VD_PARAM_MAX];
    char allow[64]; /* for VD_MATCH_BAD_METHOD: "GET, POST" */
} vd_match;

/* Match method+path (no query string) against the table. Pure; thread-safe. */
vd_match_result vd_route_match(const vd_route *table, size_t n, const char *method,
                               const char *path, vd_match *out);

struct vd_ctx {
    const vd_config *cfg;
    vd_db *db;
    struct MHD_Connection *conn;
    const vd_route *route;
    const char *method;
    const char *path;
    vd_match match;
    const char *body; /* NUL-terminated; "" when none */
    size_t body_len;
    cJSON *json;       /* the parsed body; NULL when empty */
    const char *actor; /* the API key's name, or "anonymous" */
    vd_role role;
    char request_id[80];
    vd_trace trace;   /* W3C Trace Context: the request's trace and verdictd's span of it */
    char *span_links; /* the span's OTLP links (vd_store_claim_links), malloc'd, or NULL */
    /* the answer */
    int status;
    char *resp_body; /* malloc'd */
    const char *resp_ctype;
    vd_error err;
    char err_message[600];
    char err_field[200];
    char retry_after[16];
    bool idempotent_replayed;
    bool console;         /* a /ui answer: CSP, caching and framing headers */
    const char *etag;     /* ETag of an embedded asset, or NULL */
    const char *location; /* Location of a redirect, or NULL */
    vd_conn *dbc;         /* borrowed from the pool by vd_ctx_db, released after the handler */
    double deadline;      /* vd_monotonic() bound of every database wait of this request */
    /* a long-poll claim (POST /v1/claims with wait_seconds; h_claims.c, server.c) */
    double wait_until;          /* vd_monotonic() end of its wait; 0: not waiting */
    bool wait_final;            /* claim once more and answer whatever it finds */
    bool park;                  /* the handler found nothing: park it, no answer yet */
    int wait_runs;              /* how many times it claimed while it could still park */
    const char *wait_flow_step; /* the flow step it waits on (in json) */
    /* a request served by a coalesced statement (coalesce.h): the handler validated it and
     * left it, unanswered, to the coalescer of its kind; server.c submits it after the handler
     * returned, and the kind's serve function below answers it on a runner thread */
    bool coalesce_on; /* set by the server: the coalescers run (VERDICT_COALESCE) */
    vd_coalesce_kind coalesce;
    const char *coalesce_group; /* the group key (in json or coalesce_arg) */
    void *coalesce_arg;         /* the handler's parsed request; freed by the serve function */
    /* a claim whose whole transaction is a fixed statement list (store/async.h): the handler
     * validated it and left it, unanswered, in async_claim (malloc'd, its keys_json too);
     * server.c submits it to the executor after the handler returned, and answers it from
     * the executor's callback. async_sync: run it here, synchronously (the executor handed it
     * back: a statement failed and was rolled back, or it could not be sent). */
    bool async_on; /* set by the server: the executor runs and takes submissions */
    bool async_sync;
    struct vd_async_claim *async_claim;
    /* a batch disposition the executor can take (h_jobs.c, decision 0084): left, unanswered,
     * in async_batch; server.c submits it with vd_dispositions_submit (the same rules) */
    struct disp_batch *async_batch;
};

/* The coalescer's groups of single-item claims (h_claims.c): plain claims, and claims with
 * limit keys or an estimate. A limited group's statement takes at most VD_LIMITED_RUN of them:
 * a run takes its room on one lane per key when a lane has room for all of it, and a larger
 * run is split over lanes by verdict_limit_split, which locks every lane of each key and
 * counts its holders (at 32 clients a third of the statements did, at 1.9 ms a call). A key's
 * lanes share its concurrency eight ways, so 8 fits a lane of any limit of 64 or more
 * (docs/decisions/0089-limited-claims-in-one-statement.md, the second addendum). */
#define VD_CLAIM_GROUP_PLAIN "plain"
#define VD_CLAIM_GROUP_LIMITED "limited"
#define VD_LIMITED_RUN 8

/* Answer ctxs[0..n) (all of one kind and group) with one statement of that kind: each gets
 * its own answer or error envelope on ctx (ctx->err). h_claims.c: single-item claims of one
 * flow step; h_jobs.c: single dispositions. */
void vd_claims_serve(vd_ctx **ctxs, size_t n);
void vd_dispositions_serve(vd_ctx **ctxs, size_t n);
/* Coalesced single dispositions ctxs[0..n) on the executor x (decision 0097), when they may go
 * as a batch would (the executor on, none with async_sync, no OTLP export, distinct jobs,
 * vd_job_async_fits: no claim_next, rejection, decide hook, ...): done(arg, again) is called
 * once, on the executor thread, with every ctx answered exactly as vd_dispositions_serve
 * answers it, or (again: nothing of it committed) every ctx as it was, to be served by
 * vd_dispositions_serve. False (nothing sent, nothing changed): serve them synchronously. */
bool vd_dispositions_serve_async(vd_ctx **ctxs, size_t n, struct vd_async *x,
                                 void (*done)(void *arg, bool again), void *arg);

/* Submit the batch disposition the handler left in ctx->async_batch (taken from it) to the
 * executor x: done(arg, again) is called once, on the executor thread, with ctx answered, or
 * (again: nothing of it committed) unanswered, to be run again with async_sync. False when
 * the executor did not take it (nothing was sent; run it again with async_sync). */
bool vd_dispositions_submit(vd_ctx *ctx, struct vd_async *x, void (*done)(void *arg, bool again),
                            void *arg);
/* Free a batch left in ctx->async_batch that was not submitted. */
void vd_dispositions_batch_free(vd_ctx *ctx);

/* The request's database connection, acquired on first use. VD_ERR_DATABASE_UNAVAILABLE
 * (recorded on ctx) when none can be had. */
vd_error vd_ctx_db(vd_ctx *ctx, vd_conn **out);
/* Record a store error on ctx with a message fitting the error; `what` names the object
 * for not_found/claim_lost ("job 42"). Returns err. */
vd_error vd_store_fail(vd_ctx *ctx, vd_error err, const char *what);
/* The message vd_store_fail records, written to msg; returns the field it names or NULL. */
const char *vd_store_message(vd_error err, const char *what, char *msg, size_t len);
/* Answer 200 with JSON text the store rendered (taken: freed by the server). */
vd_error vd_respond_owned(vd_ctx *ctx, char *json);
/* The Idempotency-Key header: VD_OK with *key NULL when absent; 400 when malformed. */
vd_error vd_idempotency_key(vd_ctx *ctx, const char **key);

/* Answer with a JSON value (taken: freed here) and the given status. Returns VD_OK, or
 * VD_ERR_INTERNAL when it cannot be printed. */
vd_error vd_respond_json(vd_ctx *ctx, int status, cJSON *value);
/* Answer with raw text (copied). */
vd_error vd_respond_text(vd_ctx *ctx, int status, const char *ctype, const char *text, size_t len);
/* Record an error for the envelope: field may be NULL; message is printf-style. Returns err
 * so handlers can `return vd_fail(...)`. */
vd_error vd_fail(vd_ctx *ctx, vd_error err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The error envelope of SPEC §2 as a JSON object (caller frees). */
cJSON *vd_error_envelope(vd_error err, const char *message, const char *field);

/* Parse body[0..len) as JSON under SPEC §2's rules and the strict scanner's (json_scan.h:
 * UTF-8, depth <= 32, no \u0000, raw control characters, leading zeros, duplicate keys or
 * numbers beyond a double, nothing after the value). On success *out is the tree (caller
 * cJSON_Deletes). On failure returns VD_ERR_INVALID_JSON with a message in msg and the field
 * it concerns in field ("" when none applies). Pure; thread-safe. */
vd_error vd_json_parse(const char *body, size_t len, cJSON **out, char *msg, size_t msglen,
                       char *field, size_t fieldlen);

/* Typed field access that records a 400 on the ctx. `path` prefixes the field name
 * ("items[3]" -> "items[3].priority"); NULL for top level. */
typedef struct vd_field {
    vd_ctx *ctx;
    const cJSON *obj;
    const char *path;
} vd_field;

/* The name a 400 gives key of f: "key" or "path.key" (in buf). */
const char *vd_field_name(vd_field f, const char *key, char *buf, size_t len);
/* A free-text field that is stored (a reason): read like vd_get_string, then redacted. *out is
 * a malloc'd copy the caller frees, or NULL when the field is absent. */
vd_error vd_get_redacted(vd_field f, const char *key, bool required, size_t min, size_t max,
                         char **out);
vd_error vd_get_string(vd_field f, const char *key, bool required, size_t min, size_t max,
                       const char **out);
vd_error vd_get_int(vd_field f, const char *key, bool required, int64_t min, int64_t max,
                    int64_t def, int64_t *out);
vd_error vd_get_bool(vd_field f, const char *key, bool def, bool *out);
/* One member a request body may carry and the JSON types it may have (VD_J_*, or'ed). */
#define VD_J_STRING 1u
#define VD_J_NUMBER 2u /* vd_get_int then checks it is whole and in range */
#define VD_J_BOOL 4u
#define VD_J_OBJECT 8u
#define VD_J_ARRAY 16u
#define VD_J_ANY 31u
#define VD_J_NOT_NULL 32u /* null is refused, not read as absent: dry_run */
typedef struct vd_member {
    const char *name;
    unsigned types;
} vd_member;
/* Strict input (docs/decisions/0025): every member of f's object must be declared in
 * table[0..n) with one of its types; the first that is not is a 400 invalid_field naming it
 * ("items[2].priorty"). null passes as "absent" unless the member has VD_J_NOT_NULL. Each body
 * (and each nested object a handler reads member by member) has one table, checked by this
 * function before any member is read. */
vd_error vd_members_check(vd_field f, const vd_member *table, size_t n);
#define VD_MEMBERS_CHECK(f, table)                                                                 \
    vd_members_check((f), (table), sizeof(table) / sizeof((table)[0]))
/* An optional object member, redacted at any depth (vd_json_redact), as the JSON text to
 * store (malloc'd into *out; NULL when absent): engine_data, a checkpoint. Serialised larger
 * than max bytes: the error too_large naming the field. */
vd_error vd_get_redacted_object(vd_field f, const char *key, size_t max, vd_error too_large,
                                char **out);
/* Whether f's object has `key` with a value other than null. */
bool vd_has_member(vd_field f, const char *key);
/* An object (or absent -> *out NULL when not required). */
vd_error vd_get_object(vd_field f, const char *key, bool required, const cJSON **out);
/* The body as an object ({} when empty). */
vd_error vd_body_object(vd_ctx *ctx, const cJSON **out);
/* Integer path parameter i (a positive int64) or 404. */
vd_error vd_param_id(vd_ctx *ctx, int i, const char *what, int64_t *out);
/* A POST on one object of the path (/v1/items/{item_id}/release): its id (path parameter 0,
 * read by vd_param_id: 404 naming `noun` when it is not one), the name messages give it
 * ("item 42") and the body's members (vd_body_object: {} when empty). */
typedef struct vd_target {
    int64_t id;
    char what[48];
    vd_field f;
} vd_target;
vd_error vd_target_read(vd_ctx *ctx, const char *noun, vd_target *t);
/* The decoded path: 400 invalid_path when it holds a control byte (0x00-0x1F, 0x7F; a NUL
 * decoded from %00 arrives as 0x7F: server.c's unescape callback is vd_url_unescape). */
vd_error vd_request_check_path(vd_ctx *ctx);
/* The query of the matched route: 400 invalid_query naming the first argument that the route
 * does not declare (vd_route.query), that is repeated, or whose name or value holds a
 * control byte. */
vd_error vd_request_check_query(vd_ctx *ctx);
/* Query string argument (NULL when absent). */
const char *vd_query(vd_ctx *ctx, const char *key);
/* Query integer within [min,max] or default; 400 naming the argument. */
vd_error vd_query_int(vd_ctx *ctx, const char *key, int64_t min, int64_t max, int64_t def,
                      int64_t *out);
/* Optional query string of 1..max bytes of UTF-8 (NULL when absent); 400 naming it. */
vd_error vd_query_str(vd_ctx *ctx, const char *key, size_t max, const char **out);
/* The `order` query argument: asc (default) or desc. */
vd_error vd_query_order(vd_ctx *ctx, bool *desc);
/* The "claim_token" field: required, a UUID in text form. */
vd_error vd_get_token(vd_field f, const char **out);
/* Redact a free-form JSON tree in place before it is stored (engine_data, tool args): the
 * value of every member whose key names a secret (vd_redact_is_secret_key) becomes
 * "[REDACTED]", and every other string passes vd_redact. Returns false when memory ran out
 * (the tree may then be partly redacted; the caller refuses the request). */
bool vd_json_redact(cJSON *v);

/* A JSON value rendered by the database, embedded as-is (cJSON raw node). */
cJSON *vd_json_raw(const char *text);

/* handlers */
vd_error vd_h_healthz(vd_ctx *ctx);
vd_error vd_h_readyz(vd_ctx *ctx);
vd_error vd_h_openapi_json(vd_ctx *ctx);
vd_error vd_h_openapi_yaml(vd_ctx *ctx);
vd_error vd_h_metrics(vd_ctx *ctx);
vd_error vd_h_stats(vd_ctx *ctx);
vd_error vd_h_items_register(vd_ctx *ctx);
vd_error vd_h_items_lookup(vd_ctx *ctx);
vd_error vd_h_item_get(vd_ctx *ctx);
vd_error vd_h_items_list(vd_ctx *ctx);
vd_error vd_h_claims(vd_ctx *ctx);
vd_error vd_h_heartbeat(vd_ctx *ctx);
vd_error vd_h_disposition(vd_ctx *ctx);
vd_error vd_h_dispositions(vd_ctx *ctx);
vd_error vd_h_job_get(vd_ctx *ctx);
vd_error vd_h_job_briefing(vd_ctx *ctx);
vd_error vd_h_jobs_list(vd_ctx *ctx);
vd_error vd_h_requeue_one(vd_ctx *ctx);
vd_error vd_h_requeue_bulk(vd_ctx *ctx);
vd_error vd_h_release_item(vd_ctx *ctx);
vd_error vd_h_release(vd_ctx *ctx);
vd_error vd_h_tool_success(vd_ctx *ctx);
vd_error vd_h_tool_definitions(vd_ctx *ctx);
vd_error vd_h_tool_failure(vd_ctx *ctx);
vd_error vd_h_adjudications(vd_ctx *ctx);
vd_error vd_h_session_outcome(vd_ctx *ctx);

vd_error vd_h_mcp(vd_ctx *ctx);
vd_error vd_h_mcp_no_stream(vd_ctx *ctx);

/* Apply one disposition as POST /v1/jobs/{job_id}/disposition does: body is that call's body
 * (claim_token, disposition, its fields; borrowed), request_json its text as stored for
 * replays; next: its claim_next (NULL: none; MCP sessions claim nothing). On VD_OK *answer is
 * the answer (malloc'd, caller frees). Otherwise the error is
 * recorded on ctx (vd_fail: message and field) and returned (h_jobs.c). */
vd_error vd_disposition_run(vd_ctx *ctx, int64_t job_id, const cJSON *body,
                            const char *request_json, const vd_claim_next *next, char **answer);
/* Record one tool failure as POST /v1/jobs/{job_id}/tool-failures does (body borrowed). On
 * VD_OK *envelope is SPEC §6's envelope (caller cJSON_Deletes); otherwise the error is recorded
 * on ctx and returned (h_outcomes.c). */
vd_error vd_tool_failure_run(vd_ctx *ctx, int64_t job_id, const cJSON *body, cJSON **envelope);
/* The briefing of job_id as GET /v1/jobs/{job_id}/briefing answers it: on VD_OK *doc is
 * {job_id, item_id, attempt, briefing, attempts} (caller cJSON_Deletes); otherwise the error
 * is recorded on ctx and returned (h_briefing.c). */
vd_error vd_briefing_run(vd_ctx *ctx, int64_t job_id, cJSON **doc);

/* The agent-facing tools (h_tools.c): one table for GET /v1/tool-definitions (the four
 * dispositions of SPEC §5.2) and the MCP endpoint's tools/list (those and the mcp_only ones). */
typedef struct vd_agent_tool {
    const char *name;
    const char *disposition; /* what the disposition endpoint gets; NULL: not a disposition */
    const char *description;
    cJSON *(*schema)(void); /* the JSON Schema of the arguments (caller frees) */
    bool mcp_only;          /* offered only by /mcp (report_tool_failure) */
} vd_agent_tool;

extern const vd_agent_tool vd_agent_tools[];
extern const size_t vd_agent_tool_count;
/* The tool called `name`, or NULL. */
const vd_agent_tool *vd_agent_tool_find(const char *name);
/* The tool in MCP form, {name, description, inputSchema} (caller cJSON_Deletes). */
cJSON *vd_agent_tool_mcp(const vd_agent_tool *t);

/* JSON-RPC 2.0 as MCP uses it (jsonrpc.c). Pure; thread-safe. */
#define VD_RPC_PARSE_ERROR (-32700)
#define VD_RPC_INVALID_REQUEST (-32600)
#define VD_RPC_METHOD_NOT_FOUND (-32601)
#define VD_RPC_INVALID_PARAMS (-32602)
#define VD_RPC_INTERNAL_ERROR (-32603)
#define VD_RPC_RESOURCE_NOT_FOUND (-32002) /* MCP: resources/read of an unknown URI */
#define VD_RPC_SERVER_ERROR (-32000)       /* a transport refusal; data is verdict's envelope */

typedef enum vd_rpc_kind {
    VD_RPC_REQUEST = 0,
    VD_RPC_NOTIFICATION,
    VD_RPC_RESPONSE, /* the client answering a server request */
    VD_RPC_INVALID,
    VD_RPC__MAX
} vd_rpc_kind;

typedef struct vd_rpc_msg {
    vd_rpc_kind kind;
    const cJSON *id;     /* a string or integer id, when the message has a valid one */
    const char *method;  /* requests and notifications */
    const cJSON *params; /* as sent (any type), or NULL */
    const char *why;     /* VD_RPC_INVALID: what is wrong (static text) */
} vd_rpc_msg;

/* Classify one message (borrowed; out points into it). MCP's rules: "jsonrpc" is "2.0", an id
 * is a string or an integer (never null), a method is a string. */
vd_rpc_kind vd_rpc_classify(const cJSON *m, vd_rpc_msg *out);
/* {"jsonrpc":"2.0","id":<copy of id>,"result":<result>} (result taken). NULL on no memory. */
cJSON *vd_rpc_result(const cJSON *id, cJSON *result);
/* {"jsonrpc":"2.0"[,"id"],"error":{"code","message"[,"data"]}}; id NULL: none (MCP's error
 * with no id); data taken, may be NULL. NULL on no memory. */
cJSON *vd_rpc_error(const cJSON *id, int code, const char *message, cJSON *data);
/* The JSON-RPC code a refusal of the HTTP layer (an error of the table) is answered with. */
int vd_rpc_code_of(vd_error err);

/* The reason codes each disposition accepts (NULL-terminated; h_jobs.c). */
extern const char *const vd_reject_codes[];
extern const char *const vd_defer_codes[];
vd_error vd_h_flow_steps_list(vd_ctx *ctx);
/* flow control (h_limits.c) */
vd_error vd_h_limits_list(vd_ctx *ctx);
vd_error vd_h_limit_get(vd_ctx *ctx);
vd_error vd_h_limit_put(vd_ctx *ctx);
vd_error vd_h_limit_delete(vd_ctx *ctx);
vd_error vd_h_limit_backoff(vd_ctx *ctx);
/* The optional `limit_keys` member of f's object (items, claims): 1..VD_LIMIT_KEYS_MAX limit
 * keys, as JSON text into *json (malloc'd; NULL when absent); a 400 naming the bad one. */
vd_error vd_get_limit_keys(vd_field f, char **json);
/* A tool failure that names a provider's limit key (`limit_key`, `retry_after_seconds`
 * 1..3600, default 60): read before anything is written; key NULL when absent. */
typedef struct vd_tool_backoff {
    const char *key;
    int64_t retry_after;
} vd_tool_backoff;
vd_error vd_tool_backoff_parse(vd_field f, vd_tool_backoff *b);
/* The optional `usage` of a disposition: {input_tokens, output_tokens (0..10^9), cost_usd
 * (0..10^6)?, model (1..200 bytes)?}; u->given false when absent. */
struct vd_usage;
/* PATCH /v1/flow-steps/{id}'s cost budget: max_item_tokens, max_item_cost_usd (0 removes
 * one; < 0 not given), read before anything is written. */
typedef struct vd_budget_change {
    bool given;
    int64_t tokens;
    double cost_usd;
} vd_budget_change;
vd_error vd_flow_step_budgets_parse(vd_field f, vd_budget_change *b);
/* PATCH /v1/flow-steps/{id}'s fair_key: a key name (1..100 bytes of letters, digits and
 * . _ @ -) or "" (none); *key stays NULL when absent. */
vd_error vd_flow_step_fair_key_parse(vd_field f, const char **key);
vd_error vd_get_usage(vd_field f, struct vd_usage *u);
/* Once the failure is recorded: throttle the key (as POST /v1/limits/{key}/backoff) and tell
 * the model, in env's hint and a `limit` member, to defer with reason_code rate_limited. */
vd_error vd_tool_backoff_apply(vd_ctx *ctx, vd_conn *c, const vd_tool_backoff *b, cJSON *env);
vd_error vd_h_resolve_one(vd_ctx *ctx);
vd_error vd_h_item_review(vd_ctx *ctx);  /* h_reviews.c */
vd_error vd_h_reviews_list(vd_ctx *ctx); /* h_reviews.c */
vd_error vd_h_resolve_bulk(vd_ctx *ctx);
vd_error vd_h_transitions(vd_ctx *ctx);
vd_error vd_h_whoami(vd_ctx *ctx);
vd_error vd_h_ui_redirect(vd_ctx *ctx);
vd_error vd_h_ui_index(vd_ctx *ctx);
vd_error vd_h_ui_asset(vd_ctx *ctx);
vd_error vd_h_flow_step_pause(vd_ctx *ctx);
vd_error vd_h_flow_step_configure(vd_ctx *ctx);
vd_error vd_h_flow_step_resume(vd_ctx *ctx);
vd_error vd_h_incidents_list(vd_ctx *ctx);
vd_error vd_h_incident_get(vd_ctx *ctx);
vd_error vd_h_incident_resolve(vd_ctx *ctx);

#endif
