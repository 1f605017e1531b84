-- verdict_tool_incident_json: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 8b6310035192022135257b64759d813a
CREATE OR REPLACE FUNCTION public.verdict_tool_incident_json(t tool_incidents)
 RETURNS json
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT json_build_object(
        'id', t.id, 'flow_step_id', t.flow_step_id, 'tool', t.tool, 'signature', t.signature,
        'sample_error', t.sample_error, 'items', t.items,
        'first_seen', verdict_ts(t.first_seen), 'last_seen', verdict_ts(t.last_seen),
        'opened_at', verdict_ts(t.opened_at), 'state', t.state,
        'resolved_at', verdict_ts(t.resolved_at), 'resolved_by', t.resolved_by,
        'resolve_reason', t.resolve_reason) $function$
;
