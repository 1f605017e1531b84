/* store/incidents.h - the tooling incidents' rows (src/store/incidents.c): open, count, link,
 * list, close and requeue. The service's rules over them are verdict/incidents.h. */
#ifndef VERDICT_STORE_INCIDENTS_H
#define VERDICT_STORE_INCIDENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "verdict/error.h"
#include "verdict/store.h"

/* An open incident as a tool-failure envelope names it (id 0: none). */
typedef struct vd_incident_ref {
    int64_t id;
    long items;
    char tool[201];
} vd_incident_ref;

/* The open incident of flow_step_id (NULL: the flow step of item_id), the one of `tool`
 * first (tool may be NULL); id 0 when none. */
VD_MUST_USE vd_error vd_store_incident_open(vd_conn *c, const char *flow_step_id, int64_t item_id,
                                            const char *tool, vd_incident_ref *out);
/* Serialise the incident decisions of one template until the transaction ends. Sent with
 * the next statement (vd_sql_exec_deferred): its error is that statement's. */
VD_MUST_USE vd_error vd_store_incident_lock(vd_conn *c, const char *flow_step_id,
                                            int64_t template_id);
/* The counting step of vd_incident_note: the incident of the template (*id, 0: none) and
 * whether this call opened it. */
typedef struct vd_incident_key {
    const char *flow_step_id, *tool, *template_text, *sample_error;
    int64_t item_id, template_id;
} vd_incident_key;
VD_MUST_USE vd_error vd_store_incident_note(vd_conn *c, const vd_incident_key *k,
                                            int window_minutes, int min_items, bool pause,
                                            int64_t *id, bool *opened);
/* Link item_id and tool to open incident id; *out names it (id 0 when it is no longer open). */
VD_MUST_USE vd_error vd_store_incident_link(vd_conn *c, int64_t id, int64_t item_id,
                                            const char *tool, vd_incident_ref *out);
/* {"tool_incidents": [...], "next_after": id|null}: state and flow_step_id may be NULL. */
VD_MUST_USE vd_error vd_store_incidents_list(vd_conn *c, const char *state,
                                             const char *flow_step_id, int64_t after, int64_t limit,
                                             char **out);
/* {"tool_incident": {..., "affected_items": [{id, item_identifier, state}]}} or NOT_FOUND. */
VD_MUST_USE vd_error vd_store_incident_get(vd_conn *c, int64_t id, char **out);
/* Inside a transaction: lock incident id and resolve it; VD_ERR_NOT_FOUND, or
 * VD_ERR_INVALID_TRANSITION when it is not open. */
VD_MUST_USE vd_error vd_store_incident_close(vd_conn *c, int64_t id, const char *reason,
                                             const char *actor);
/* Inside the same transaction, after vd_store_incident_close: requeue its items (see
 * vd_incident_resolve) and answer {"tool_incident": {...}, "requeued": [ids]}; requeue false
 * requeues nothing. */
VD_MUST_USE vd_error vd_store_incident_requeue(vd_conn *c, int64_t id, bool requeue,
                                               const char *reason, const char *actor, char **out);

#endif
