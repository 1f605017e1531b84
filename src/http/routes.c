/* routes.c - the one route table: method, path pattern, the least role allowed, handler and
 * metrics name. openapi/verdict.yaml documents exactly these (tests/unit/test_routes.c). */
#include "http_internal.h"

#include <string.h>

const vd_route vd_routes[] = {
    {"GET", "/healthz", VD_ROLE_NONE, vd_h_healthz, "healthz"},
    {"GET", "/readyz", VD_ROLE_NONE, vd_h_readyz, "readyz"},
    {"GET", "/openapi.json", VD_ROLE_NONE, vd_h_openapi_json, "openapi.json"},
    {"GET", "/openapi.yaml", VD_ROLE_NONE, vd_h_openapi_yaml, "openapi.yaml"},
    {"GET", "/metrics", VD_ROLE_READER, vd_h_metrics, "metrics"},
    {"GET", "/ui", VD_ROLE_NONE, vd_h_ui_redirect, "ui.redirect"},
    {"GET", "/ui/", VD_ROLE_NONE, vd_h_ui_index, "ui.index"},
    {"GET", "/ui/{asset}", VD_ROLE_NONE, vd_h_ui_asset, "ui.asset"},
    {"POST", "/v1/items", VD_ROLE_WORKER, vd_h_items_register, "items.register"},
    {"GET", "/v1/items", VD_ROLE_READER, vd_h_items_list, "items.list"},
    {"POST", "/v1/items/lookup", VD_ROLE_READER, vd_h_items_lookup, "items.lookup"},
    {"GET", "/v1/items/{item_id}", VD_ROLE_READER, vd_h_item_get, "items.get"},
    {"POST", "/v1/items/{item_id}/requeue", VD_ROLE_ADMIN, vd_h_requeue_one, "items.requeue"},
    {"POST", "/v1/items/requeue", VD_ROLE_ADMIN, vd_h_requeue_bulk, "items.requeue_bulk"},
    {"POST", "/v1/items/{item_id}/release", VD_ROLE_ADMIN, vd_h_release_item, "items.release"},
    {"POST", "/v1/items/{item_id}/resolve", VD_ROLE_ADMIN, vd_h_resolve_one, "items.resolve"},
    {"POST", "/v1/items/resolve", VD_ROLE_ADMIN, vd_h_resolve_bulk, "items.resolve_bulk"},
    {"POST", "/v1/items/{item_id}/review", VD_ROLE_ADMIN, vd_h_item_review, "items.review"},
    {"GET", "/v1/reviews", VD_ROLE_READER, vd_h_reviews_list, "reviews.list"},
    {"GET", "/v1/transitions", VD_ROLE_READER, vd_h_transitions, "transitions"},
    {"GET", "/v1/whoami", VD_ROLE_READER, vd_h_whoami, "whoami"},
    {"POST", "/v1/claims", VD_ROLE_WORKER, vd_h_claims, "claims"},
    {"POST", "/v1/jobs/{job_id}/heartbeat", VD_ROLE_WORKER, vd_h_heartbeat, "jobs.heartbeat"},
    {"POST", "/v1/jobs/{job_id}/disposition", VD_ROLE_WORKER, vd_h_disposition, "jobs.disposition"},
    {"POST", "/v1/jobs/{job_id}/release", VD_ROLE_WORKER, vd_h_release, "jobs.release"},
    {"POST", "/v1/dispositions", VD_ROLE_WORKER, vd_h_dispositions, "dispositions"},
    {"POST", "/v1/jobs/{job_id}/tool-failures", VD_ROLE_WORKER, vd_h_tool_failure,
     "jobs.tool_failures"},
    {"POST", "/v1/jobs/{job_id}/tool-successes", VD_ROLE_WORKER, vd_h_tool_success,
     "jobs.tool_successes"},
    {"POST", "/v1/jobs/{job_id}/session-outcome", VD_ROLE_WORKER, vd_h_session_outcome,
     "jobs.session_outcome"},
    {"POST", "/v1/adjudications", VD_ROLE_WORKER, vd_h_adjudications, "adjudications"},
    {"GET", "/v1/jobs", VD_ROLE_READER, vd_h_jobs_list, "jobs.list"},
    {"GET", "/v1/jobs/{job_id}", VD_ROLE_READER, vd_h_job_get, "jobs.get"},
    {"GET", "/v1/jobs/{job_id}/briefing", VD_ROLE_READER, vd_h_job_briefing, "jobs.briefing"},
    {"GET", "/v1/tool-definitions", VD_ROLE_READER, vd_h_tool_definitions, "tool_definitions"},
    {"GET", "/v1/stats", VD_ROLE_READER, vd_h_stats, "stats"},
    {"POST", "/mcp", VD_ROLE_WORKER, vd_h_mcp, "mcp"},
    {"GET", "/mcp", VD_ROLE_NONE, vd_h_mcp_no_stream, "mcp.get"},
    {"DELETE", "/mcp", VD_ROLE_NONE, vd_h_mcp_no_stream, "mcp.delete"},
    {"GET", "/v1/tool-incidents", VD_ROLE_READER, vd_h_incidents_list, "tool_incidents.list"},
    {"GET", "/v1/tool-incidents/{incident_id}", VD_ROLE_READER, vd_h_incident_get,
     "tool_incidents.get"},
    {"POST", "/v1/tool-incidents/{incident_id}/resolve", VD_ROLE_ADMIN, vd_h_incident_resolve,
     "tool_incidents.resolve"},
    {"GET", "/v1/flow-steps", VD_ROLE_READER, vd_h_flow_steps_list, "flow_steps.list"},
    {"PATCH", "/v1/flow-steps/{flow_step_id}", VD_ROLE_ADMIN, vd_h_flow_step_configure,
     "flow_steps.configure"},
    {"POST", "/v1/flow-steps/{flow_step_id}/pause", VD_ROLE_ADMIN, vd_h_flow_step_pause,
     "flow_steps.pause"},
    {"POST", "/v1/flow-steps/{flow_step_id}/resume", VD_ROLE_ADMIN, vd_h_flow_step_resume,
     "flow_steps.resume"},
    {"GET", "/v1/limits", VD_ROLE_READER, vd_h_limits_list, "limits.list"},
    {"GET", "/v1/limits/{key}", VD_ROLE_READER, vd_h_limit_get, "limits.get"},
    {"PUT", "/v1/limits/{key}", VD_ROLE_ADMIN, vd_h_limit_put, "limits.put"},
    {"DELETE", "/v1/limits/{key}", VD_ROLE_ADMIN, vd_h_limit_delete, "limits.delete"},
    {"POST", "/v1/limits/{key}/backoff", VD_ROLE_WORKER, vd_h_limit_backoff, "limits.backoff"},
};

const size_t vd_route_count = sizeof(vd_routes) / sizeof(vd_routes[0]);

/* The query arguments of each route that takes any, by its metrics name (openapi/verdict.yaml
 * lists the same; tests/unit/test_http.c holds them equal). A route not here takes none. */
static const struct {
    const char *name;
    const char *query;
} route_queries[] = {
    {"items.list",
     "limit after flow_step_id state reason_code worker_id order identifier identifier_prefix"},
    {"jobs.list",
     "limit after item_id flow_step_id status since reason_code worker_id order trace_id"},
    {"transitions", "after limit flow_step_id"},
    {"tool_incidents.list", "limit after flow_step_id state"},
    {"tool_definitions", "format"},
    {"stats", "flow_step_id"},
    {"reviews.list", "limit flow_step_id"},
};

const char *vd_route_query(const vd_route *r)
{
    for (size_t i = 0; r && i < sizeof(route_queries) / sizeof(route_queries[0]); i++) {
        if (strcmp(r->name, route_queries[i].name) == 0)
            return route_queries[i].query;
    }
    return NULL;
}
