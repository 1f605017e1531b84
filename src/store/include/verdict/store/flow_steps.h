/* store/flow_steps.h - the per-flow-step settings of the agent-safety features, stored
 * on flow_steps (sql/migrations/0013_flow_step_settings.sql) and set by PATCH /v1/flow-steps/{id}:
 * when a tool-failure signature becomes a tooling incident, whether opening one pauses the flow
 * step, and whether a rejection must quote evidence from the item's payload. */
#ifndef VERDICT_STORE_FLOW_STEPS_H
#define VERDICT_STORE_FLOW_STEPS_H

#include <stdbool.h>

#include "verdict/error.h"
#include "verdict/store.h"

#define VD_INCIDENT_MIN_ITEMS_DEFAULT 5
#define VD_INCIDENT_WINDOW_MINUTES_DEFAULT 15

typedef struct vd_flow_step_settings {
    int incident_min_items;      /* 1..1000: distinct items of one signature ... */
    int incident_window_minutes; /* 1..1440: ... within this window open an incident */
    bool pause_on_incident;      /* opening an incident pauses the flow step */
    bool strict_evidence;        /* a rejection must quote evidence found in the payload */
} vd_flow_step_settings;

/* A change of settings: the members set are changed, the others kept (has_* false). */
typedef struct vd_flow_step_change {
    bool has_min_items, has_window, has_pause, has_strict;
    vd_flow_step_settings to;
    const char *tools_json; /* the declared tools (a JSON object, replaced whole), or NULL */
} vd_flow_step_change;

/* The defaults of a flow step nobody configured. */
vd_flow_step_settings vd_flow_step_defaults(void);

/* The settings of flow_step_id (the defaults when it is unknown), on conn, inside the
 * caller's transaction or alone. */
VD_MUST_USE vd_error vd_store_flow_step_settings(vd_conn *c, const char *flow_step_id,
                                                 vd_flow_step_settings *out);
/* Apply ch to flow_step_id (created with the defaults for the rest when unknown); *out
 * {"flow_step": {...}} (malloc'd). */
VD_MUST_USE vd_error vd_store_flow_step_configure(vd_conn *c, const char *flow_step_id,
                                                  const vd_flow_step_change *ch, char **out);

/* Pause or resume a flow step (created if unknown): {"flow_step": {...}}. */
VD_MUST_USE vd_error vd_store_flow_step_set_paused(vd_conn *c, const char *flow_step_id,
                                                   bool paused, char **out);
/* {"flow_steps": [{flow_step_id, paused, created_at, updated_at}]}. */
VD_MUST_USE vd_error vd_store_flow_steps_list(vd_conn *c, char **out);

#endif
