/* flow_steps.c - the per-flow-step settings (see flow_steps.h): read inside a job's
 * transaction by the agent-safety rules, changed by PATCH /v1/flow-steps/{id}. A flow step
 * nobody configured has the defaults, whether or not its row exists yet. */
#include "verdict/store.h"
#include "verdict/store/flow_steps.h"

#include <stdio.h>

#include "store_internal.h"

vd_flow_step_settings vd_flow_step_defaults(void)
{
    return (vd_flow_step_settings){VD_INCIDENT_MIN_ITEMS_DEFAULT,
                                   VD_INCIDENT_WINDOW_MINUTES_DEFAULT, false, false};
}

vd_error vd_store_flow_step_settings(vd_conn *c, const char *flow_step_id,
                                     vd_flow_step_settings *out)
{
    PGresult *res = NULL;
    const char *p[] = {flow_step_id};
    vd_error rc = vd_sql_exec(c, VD_SQL_FLOW_STEP_SETTINGS, 1, p, &res);
    *out = vd_flow_step_defaults();
    if (rc)
        return rc;
    if (PQntuples(res) == 1) {
        out->incident_min_items = (int)strtol(PQgetvalue(res, 0, 0), NULL, 10);
        out->incident_window_minutes = (int)strtol(PQgetvalue(res, 0, 1), NULL, 10);
        out->pause_on_incident = vd_sql_flag(res, 0, 2);
        out->strict_evidence = vd_sql_flag(res, 0, 3);
    }
    PQclear(res);
    return VD_OK;
}

vd_error vd_store_flow_step_configure(vd_conn *c, const char *flow_step_id,
                                      const vd_flow_step_change *ch, char **out)
{
    char min_items[16], window[16];
    snprintf(min_items, sizeof(min_items), "%d", ch->to.incident_min_items);
    snprintf(window, sizeof(window), "%d", ch->to.incident_window_minutes);
    const char *p[] = {flow_step_id,
                       ch->has_min_items ? min_items : NULL,
                       ch->has_window ? window : NULL,
                       ch->has_pause ? (ch->to.pause_on_incident ? "true" : "false") : NULL,
                       ch->has_strict ? (ch->to.strict_evidence ? "true" : "false") : NULL,
                       ch->tools_json};
    return vd_sql_first_text(c, VD_SQL_FLOW_STEP_CONFIGURE, 6, p, out);
}
