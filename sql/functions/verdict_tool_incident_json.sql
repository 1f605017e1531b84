-- verdict_tool_incident_json: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: ced0b0507caaa6736036a9010ad87ecd
CREATE OR REPLACE FUNCTION public.verdict_tool_incident_json(t tool_incidents)
 RETURNS json
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT json_build_object(
        'id', t.id, 'flow_step_id', t.flow_step_id, 'tool', t.tool,
        'tools', to_json(CASE WHEN cardinality(t.tools) = 0 THEN ARRAY[t.tool] ELSE t.tools END),
        'template_id', t.template_id, 'template', coalesce(t.template, t.signature),
        'signature', t.signature,
        'sample_error', t.sample_error, 'items', t.items,
        'first_seen', verdict_ts(t.first_seen), 'last_seen', verdict_ts(t.last_seen),
        'opened_at', verdict_ts(t.opened_at), 'state', t.state,
        'resolved_at', verdict_ts(t.resolved_at), 'resolved_by', t.resolved_by,
        'resolve_reason', t.resolve_reason) $function$
;
