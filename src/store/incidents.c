/* incidents.c - the store side of tooling incidents (incidents.h, sql/migrations/0014): look up the
 * open incident of a flow step, serialise one template's decisions, open or join an incident, list,
 * read, resolve and requeue. Every statement is in statements.c. */
#include "store_internal.h"

#include <inttypes.h>
#include <stdio.h>

#include "verdict/store/incidents.h"

vd_error vd_store_incident_open(vd_conn *c, const char *flow_step_id, int64_t item_id,
                                const char *tool, vd_incident_ref *out)
{
    vd_i64_text item = vd_i64_text_of(item_id);
    const char *p[] = {flow_step_id, item_id ? item.s : NULL, tool};
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, VD_SQL_INCIDENT_OPEN, 3, p, &res);
    memset(out, 0, sizeof(*out));
    if (rc)
        return rc;
    if (PQntuples(res) == 1) {
        out->id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        snprintf(out->tool, sizeof(out->tool), "%s", PQgetvalue(res, 0, 1));
        out->items = strtol(PQgetvalue(res, 0, 2), NULL, 10);
    }
    PQclear(res);
    return VD_OK;
}

vd_error vd_store_incident_lock(vd_conn *c, const char *flow_step_id, int64_t template_id)
{
    vd_i64_text tpl = vd_i64_text_of(template_id);
    const char *p[] = {flow_step_id, tpl.s};
    /* sent in one pipeline with the next statement (the flow step's settings): no round trip
     * of its own; it runs first, so that next statement's snapshot comes after the lock */
    return vd_sql_exec_deferred(c, VD_SQL_INCIDENT_LOCK, 2, p);
}

vd_error vd_store_incident_note(vd_conn *c, const vd_incident_key *k, int window_minutes,
                                int min_items, bool pause, int64_t *id, bool *opened)
{
    vd_i64_text item = vd_i64_text_of(k->item_id), window = vd_i64_text_of(window_minutes),
                min = vd_i64_text_of(min_items), tpl = vd_i64_text_of(k->template_id);
    const char *p[] = {
        k->flow_step_id,          k->tool,         tpl.s,           item.s, window.s, min.s,
        pause ? "true" : "false", k->sample_error, k->template_text};
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, VD_SQL_INCIDENT_NOTE, 9, p, &res);
    *opened = false;
    *id = 0;
    if (rc)
        return rc;
    if (PQntuples(res) == 1) {
        *id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        *opened = PQgetvalue(res, 0, 1)[0] == 't';
    }
    PQclear(res);
    return VD_OK;
}

vd_error vd_store_incident_link(vd_conn *c, int64_t id, int64_t item_id, const char *tool,
                                vd_incident_ref *out)
{
    vd_i64_text ids = vd_i64_text_of(id), item = vd_i64_text_of(item_id);
    const char *p[] = {ids.s, item.s, tool};
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, VD_SQL_INCIDENT_LINK, 3, p, &res);
    memset(out, 0, sizeof(*out));
    if (rc)
        return rc;
    if (PQntuples(res) == 1) {
        out->id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        snprintf(out->tool, sizeof(out->tool), "%s", PQgetvalue(res, 0, 1));
        out->items = strtol(PQgetvalue(res, 0, 2), NULL, 10);
    }
    PQclear(res);
    return VD_OK;
}

vd_error vd_store_incidents_list(vd_conn *c, const char *state, const char *flow_step_id,
                                 int64_t after, int64_t limit, char **out)
{
    vd_i64_text a = vd_i64_text_of(after), l = vd_i64_text_of(limit);
    const char *p[] = {state, flow_step_id, a.s, l.s};
    return vd_sql_first_text(c, VD_SQL_INCIDENTS_LIST, 4, p, out);
}

vd_error vd_store_incident_get(vd_conn *c, int64_t id, char **out)
{
    vd_i64_text ids = vd_i64_text_of(id);
    const char *p[] = {ids.s};
    return vd_sql_first_text(c, VD_SQL_INCIDENT_GET, 1, p, out);
}

vd_error vd_store_incident_close(vd_conn *c, int64_t id, const char *reason, const char *actor)
{
    vd_i64_text ids = vd_i64_text_of(id);
    const char *p[] = {ids.s, reason, actor};
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, VD_SQL_INCIDENT_CLOSE, 3, p, &res);
    if (rc)
        return rc;
    if (PQntuples(res) == 0)
        rc = VD_ERR_NOT_FOUND;
    else if (strcmp(PQgetvalue(res, 0, 0), "open") != 0)
        rc = VD_ERR_INVALID_TRANSITION;
    PQclear(res);
    return rc;
}

vd_error vd_store_incident_requeue(vd_conn *c, int64_t id, bool requeue, const char *reason,
                                   const char *actor, char **out)
{
    vd_i64_text ids = vd_i64_text_of(id);
    const char *p[] = {ids.s, reason, actor, requeue ? "true" : "false"};
    return vd_sql_first_text_announce(c, VD_SQL_INCIDENT_REQUEUE, 4, p, 1, out);
}
