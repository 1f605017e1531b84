/* error.h - the one error table of verdict.
 *
 * Every failure the service can answer with is a row of VD_ERROR_MAP: its stable machine
 * code, HTTP status, whether repeating the same request can succeed, and a hint telling the
 * caller what to do instead. The enum, names, statuses and hints are all generated from it,
 * so no handler invents its own error. Pure data: no I/O, thread-safe.
 */
#ifndef VERDICT_ERROR_H
#define VERDICT_ERROR_H

#include <stdbool.h>

/* On a fallible function: a caller that drops its result is a compile error (-Werror). */
#define VD_MUST_USE __attribute__((warn_unused_result))

/* XX(NAME, code, http_status, retryable, hint) */
#define VD_ERROR_MAP(XX)                                                                           \
    XX(INVALID_JSON, "invalid_json", 400, false,                                                   \
       "Send one strict JSON value (RFC 8259, UTF-8, nesting at most 32 deep, each key once "      \
       "per object, numbers without leading zeros and within a double's range, nothing after "     \
       "it); 'field' names where it failed.")                                                      \
    XX(INVALID_FIELD, "invalid_field", 400, false,                                                 \
       "Fix the field named in 'field' (type, range or length) and send the request again.")       \
    XX(MISSING_FIELD, "missing_field", 400, false,                                                 \
       "Add the required field named in 'field' and send the request again.")                      \
    XX(INVALID_PATH, "invalid_path", 400, false,                                                   \
       "Send a path without control bytes (0x00-0x1F, 0x7F, also percent-encoded).")               \
    XX(INVALID_QUERY, "invalid_query", 400, false,                                                 \
       "Send only the query arguments this endpoint declares, each once and without control "      \
       "bytes; 'field' names the argument.")                                                       \
    XX(UNAUTHORIZED, "unauthorized", 401, false,                                                   \
       "Send 'Authorization: Bearer <token>' with a token from VERDICT_API_KEYS.")                 \
    XX(FORBIDDEN, "forbidden", 403, false,                                                         \
       "Use an API key whose role allows this call (reader < worker < admin).")                    \
    XX(CLAIM_MISMATCH, "claim_mismatch", 403, false,                                               \
       "Send Verdict-Claim as '<job_id>:<claim_token>' of one claim, exactly as POST /v1/claims "  \
       "returned them: an MCP session acts on that job only.")                                     \
    XX(ORIGIN_FORBIDDEN, "origin_forbidden", 403, false,                                           \
       "Call /mcp from an agent runtime (no Origin header) or from a page of this server's own "   \
       "origin.")                                                                                  \
    XX(NOT_FOUND, "not_found", 404, false,                                                         \
       "Check the path and the id; GET /openapi.json lists every endpoint.")                       \
    XX(METHOD_NOT_ALLOWED, "method_not_allowed", 405, false,                                       \
       "Use one of the methods named in the Allow header.")                                        \
    XX(CLAIM_LOST, "claim_lost", 409, false,                                                       \
       "Discard this result; do not retry this call. Claim new work instead.")                     \
    XX(JOB_FINALIZED, "job_finalized", 409, false,                                                 \
       "This job already has a final disposition; read it with GET /v1/jobs/{id} and move on.")    \
    XX(INVALID_TRANSITION, "invalid_transition", 409, false,                                       \
       "The item is not in a state that allows this; read it with GET /v1/items/{id}.")            \
    XX(TOOL_FAILURE_PENDING, "tool_failure_pending", 409, false,                                   \
       "A required tool failed in this job: use defer_item (the source stays eligible) or "        \
       "fail. reject_source, and complete after the tool was given up, need force: true.")         \
    XX(REJECTION_SUSPECT, "rejection_suspect", 409, false,                                         \
       "use defer_item: the source stays eligible and is retried once the tooling works. A "       \
       "rejection is for a source that is itself unsuitable; send force: true only when you are "  \
       "sure the source, not a tool, is the problem.")                                             \
    XX(EVIDENCE_NOT_FOUND, "evidence_not_found", 409, false,                                       \
       "Quote 'evidence' verbatim from one of the item payload's text values (up to 500 bytes), "  \
       "or use defer_item when you cannot point at what is wrong with the source.")                \
    XX(TOOLING_INCIDENT_OPEN, "tooling_incident_open", 409, false,                                 \
       "A tool fails the same way on many items of this flow step (a tooling incident, "           \
       "GET /v1/tool-incidents): use defer_item with reason_code tool_error; the source stays "    \
       "eligible. reject_source needs force: true while the incident is open.")                    \
    XX(PAYLOAD_TOO_LARGE, "payload_too_large", 413, false,                                         \
       "Send a smaller body (see VERDICT_MAX_BODY_BYTES) or split the batch.")                     \
    XX(UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", 415, false,                               \
       "Send the body as 'Content-Type: application/json'.")                                       \
    XX(MATCH_BUDGET_EXHAUSTED, "match_budget_exhausted", 422, false,                               \
       "Simplify the regexes (no nested quantifiers such as (a+)+) or send less text.")            \
    XX(IDEMPOTENCY_KEY_REUSED, "idempotency_key_reused", 422, false,                               \
       "Use a new Idempotency-Key for a different request body.")                                  \
    XX(DATABASE_UNAVAILABLE, "database_unavailable", 503, true,                                    \
       "Retry the same request after the Retry-After delay.")                                      \
    XX(OVERLOADED, "overloaded", 503, true,                                                        \
       "Every worker is busy: retry the same request after the Retry-After delay.")                \
    XX(SHUTTING_DOWN, "shutting_down", 503, true,                                                  \
       "This server is stopping and did not start the request: send it again (a new connection "   \
       "reaches another replica or the restarted server).")                                        \
    XX(UNSUPPORTED_TRANSFER_CODING, "unsupported_transfer_coding", 501, false,                     \
       "Send the body with a Content-Length, or with 'Transfer-Encoding: chunked'.")               \
    XX(INTERNAL, "internal", 500, false,                                                           \
       "Report this with the X-Request-Id; the request was not applied.")

typedef enum vd_error {
    VD_OK = 0,
#define VD__ERR_ENUM(name, code, status, retryable, hint) VD_ERR_##name,
    VD_ERROR_MAP(VD__ERR_ENUM)
#undef VD__ERR_ENUM
        VD_ERR__MAX
} vd_error;

/* The stable machine code ("claim_lost"); "ok" for VD_OK; never NULL. */
const char *vd_error_code(vd_error err);
/* The HTTP status of the error (200 for VD_OK). */
int vd_error_status(vd_error err);
/* Whether repeating the same request can succeed. */
bool vd_error_retryable(vd_error err);
/* What the caller should do instead; never NULL. */
const char *vd_error_hint(vd_error err);

#endif
