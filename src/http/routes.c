/* routes.c - the one route table: method, path pattern, the least role allowed, handler and
 * metrics name. openapi/verdict.yaml documents exactly these (tests/unit/test_routes.c). */
#include "http_internal.h"

const vd_route vd_routes[] = {
    {"GET", "/healthz", VD_ROLE_NONE, vd_h_healthz, "healthz"},
    {"GET", "/readyz", VD_ROLE_NONE, vd_h_readyz, "readyz"},
    {"GET", "/openapi.json", VD_ROLE_NONE, vd_h_openapi_json, "openapi.json"},
    {"GET", "/openapi.yaml", VD_ROLE_NONE, vd_h_openapi_yaml, "openapi.yaml"},
    {"GET", "/metrics", VD_ROLE_READER, vd_h_metrics, "metrics"},
    {"POST", "/v1/items", VD_ROLE_WORKER, vd_h_items_register, "items.register"},
    {"GET", "/v1/items", VD_ROLE_READER, vd_h_items_list, "items.list"},
    {"POST", "/v1/items/lookup", VD_ROLE_READER, vd_h_items_lookup, "items.lookup"},
    {"GET", "/v1/items/{item_id}", VD_ROLE_READER, vd_h_item_get, "items.get"},
    {"POST", "/v1/items/{item_id}/requeue", VD_ROLE_ADMIN, vd_h_requeue_one, "items.requeue"},
    {"POST", "/v1/items/requeue", VD_ROLE_ADMIN, vd_h_requeue_bulk, "items.requeue_bulk"},
    {"POST", "/v1/items/{item_id}/release", VD_ROLE_ADMIN, vd_h_release_item, "items.release"},
    {"POST", "/v1/claims", VD_ROLE_WORKER, vd_h_claims, "claims"},
    {"POST", "/v1/jobs/{job_id}/heartbeat", VD_ROLE_WORKER, vd_h_heartbeat, "jobs.heartbeat"},
    {"POST", "/v1/jobs/{job_id}/disposition", VD_ROLE_WORKER, vd_h_disposition,
     "jobs.disposition"},
    {"POST", "/v1/jobs/{job_id}/release", VD_ROLE_WORKER, vd_h_release, "jobs.release"},
    {"POST", "/v1/dispositions", VD_ROLE_WORKER, vd_h_dispositions, "dispositions"},
    {"POST", "/v1/jobs/{job_id}/tool-failures", VD_ROLE_WORKER, vd_h_tool_failure,
     "jobs.tool_failures"},
    {"POST", "/v1/jobs/{job_id}/session-outcome", VD_ROLE_WORKER, vd_h_session_outcome,
     "jobs.session_outcome"},
    {"POST", "/v1/adjudications", VD_ROLE_WORKER, vd_h_adjudications, "adjudications"},
    {"GET", "/v1/jobs", VD_ROLE_READER, vd_h_jobs_list, "jobs.list"},
    {"GET", "/v1/jobs/{job_id}", VD_ROLE_READER, vd_h_job_get, "jobs.get"},
    {"GET", "/v1/tool-definitions", VD_ROLE_READER, vd_h_tool_definitions, "tool_definitions"},
    {"GET", "/v1/stats", VD_ROLE_READER, vd_h_stats, "stats"},
    {"POST", "/mcp", VD_ROLE_WORKER, vd_h_mcp, "mcp"},
    {"GET", "/mcp", VD_ROLE_NONE, vd_h_mcp_no_stream, "mcp.get"},
    {"DELETE", "/mcp", VD_ROLE_NONE, vd_h_mcp_no_stream, "mcp.delete"},
    {"GET", "/v1/flow-steps", VD_ROLE_READER, vd_h_flow_steps_list, "flow_steps.list"},
    {"POST", "/v1/flow-steps/{flow_step_id}/pause", VD_ROLE_ADMIN, vd_h_flow_step_pause,
     "flow_steps.pause"},
    {"POST", "/v1/flow-steps/{flow_step_id}/resume", VD_ROLE_ADMIN, vd_h_flow_step_resume,
     "flow_steps.resume"},
};

const size_t vd_route_count = sizeof(vd_routes) / sizeof(vd_routes[0]);
