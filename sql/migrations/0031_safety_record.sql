-- 0031_safety_record: the job's own record decides (heartbeat lease, release churn, rejections
-- and completions after a tool failure).
--
-- jobs.lease_seconds: the lease length the claim asked for (or the server's default then). A
-- heartbeat without lease_seconds extends by it, not by the server's default of the moment.
-- NULL on jobs claimed before this migration: their heartbeats fall back to the default.
ALTER TABLE jobs ADD COLUMN lease_seconds integer;

-- flow_steps.tools: the tools a flow step declares, {"<tool>": {"role": "read"|"write",
-- "required": bool}} (PATCH /v1/flow-steps/{id}, replaced whole). A deterministic failure (or
-- one the envelope said not to retry) of a declared write or required tool leaves the job's
-- `complete` refused with tool_failure_pending until a later success of that tool is reported
-- or the call forces; a tool not declared is judged by its failure's own `required` flag.
ALTER TABLE flow_steps ADD COLUMN tools jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(tools) = 'object');

-- tool_failures.cleared_at: when a later success of the tool in the same job was reported
-- (POST /v1/jobs/{id}/tool-successes); a cleared failure no longer holds `complete` back. It
-- still counts everywhere else (incidents, the loop guard, the rejection checks, briefings).
ALTER TABLE tool_failures ADD COLUMN cleared_at timestamptz;

CREATE OR REPLACE FUNCTION verdict_flow_step_json(f flow_steps) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT json_build_object(
        'flow_step_id', f.flow_step_id, 'paused', f.paused,
        'incident_min_items', f.incident_min_items,
        'incident_window_minutes', f.incident_window_minutes,
        'pause_on_incident', f.pause_on_incident, 'strict_evidence', f.strict_evidence,
        'tools', f.tools,
        'created_at', verdict_ts(f.created_at), 'updated_at', verdict_ts(f.updated_at)) $$;
