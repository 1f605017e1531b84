-- 0013_flow_step_settings: per-flow-step settings of the agent-safety features (issue 17),
-- typed columns on flow_steps, and one function that renders a flow step, so that every
-- answer that shows one (pause, resume, PATCH, the list) shows the same members.
--
--   incident_min_items, incident_window_minutes: a deterministic tool-failure signature seen on
--     this many distinct items within this many minutes opens a tooling incident (5 / 15);
--   pause_on_incident: opening an incident also pauses the flow step;
--   strict_evidence: a rejection must quote evidence found in the item's payload.
ALTER TABLE flow_steps
    ADD COLUMN incident_min_items integer NOT NULL DEFAULT 5
        CHECK (incident_min_items BETWEEN 1 AND 1000),
    ADD COLUMN incident_window_minutes integer NOT NULL DEFAULT 15
        CHECK (incident_window_minutes BETWEEN 1 AND 1440),
    ADD COLUMN pause_on_incident boolean NOT NULL DEFAULT false,
    ADD COLUMN strict_evidence boolean NOT NULL DEFAULT false;

CREATE FUNCTION verdict_flow_step_json(f flow_steps) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT json_build_object(
        'flow_step_id', f.flow_step_id, 'paused', f.paused,
        'incident_min_items', f.incident_min_items,
        'incident_window_minutes', f.incident_window_minutes,
        'pause_on_incident', f.pause_on_incident, 'strict_evidence', f.strict_evidence,
        'created_at', verdict_ts(f.created_at), 'updated_at', verdict_ts(f.updated_at)) $$;
