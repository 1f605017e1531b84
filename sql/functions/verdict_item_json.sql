-- verdict_item_json: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 393f2d4b893870bb2aa73c0e32b93e55
CREATE OR REPLACE FUNCTION public.verdict_item_json(i items, s item_sources)
 RETURNS json
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT json_build_object(
        'id', i.id, 'flow_step_id', i.flow_step_id, 'source_type', s.source_type,
        'item_identifier', s.item_identifier, 'state', i.state, 'attempts', i.attempts,
        'failures', i.failures, 'defers', i.defers, 'max_attempts', i.max_attempts,
        'max_defers', i.max_defers, 'priority', i.priority, 'payload', s.payload,
        'available_at', verdict_ts(i.available_at),
        'lease_expires_at', verdict_ts(i.lease_expires_at),
        'current_job_id', i.current_job_id, 'last_reason_code', i.last_reason_code,
        'last_reason', i.last_reason, 'created_at', verdict_ts(s.created_at),
        'updated_at', verdict_ts(i.updated_at)) $function$
;
