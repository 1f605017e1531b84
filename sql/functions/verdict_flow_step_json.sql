-- verdict_flow_step_json: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: d2b0e73614213424720b4c02fbba271c
CREATE OR REPLACE FUNCTION public.verdict_flow_step_json(f flow_steps)
 RETURNS json
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT json_build_object(
        'flow_step_id', f.flow_step_id, 'paused', f.paused,
        'incident_min_items', f.incident_min_items,
        'incident_window_minutes', f.incident_window_minutes,
        'pause_on_incident', f.pause_on_incident, 'strict_evidence', f.strict_evidence,
        'tools', f.tools, 'fair_key', f.fair_key,
        'created_at', verdict_ts(f.created_at), 'updated_at', verdict_ts(f.updated_at)) $function$
;
