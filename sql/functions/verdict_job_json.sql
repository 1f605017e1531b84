-- verdict_job_json: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: cf0f94b24526a58c9c0e29a6ede5bdf9
CREATE OR REPLACE FUNCTION public.verdict_job_json(j jobs)
 RETURNS json
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT json_build_object(
        'id', j.id, 'item_id', j.item_id, 'flow_step_id', j.flow_step_id,
        'worker_id', j.worker_id, 'attempt', j.attempt, 'status', j.status,
        'disposition', j.disposition, 'reason_code', j.reason_code, 'reason', j.reason,
        'claimed_at', verdict_ts(j.claimed_at), 'lease_expires_at', verdict_ts(j.lease_expires_at),
        'finished_at', verdict_ts(j.finished_at), 'engine_data', j.engine_data,
        'adjudication', j.adjudication,
        'tool_failures', verdict_tool_failures_json(j.id),
        'worker_version', j.worker_version,
        'claim_trace_id', j.claim_trace_id,
        'disposition_trace_id', j.disposition_trace_id,
        'limit_keys', j.limit_keys, 'estimated_tokens', j.estimated_tokens,
        'usage', CASE WHEN j.usage_input_tokens IS NOT NULL THEN json_build_object(
            'input_tokens', j.usage_input_tokens, 'output_tokens', j.usage_output_tokens,
            'cost_usd', j.usage_cost_usd, 'model', j.usage_model) END) $function$
;
