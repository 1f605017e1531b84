-- flow_step_configure: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 integer
-- $3 integer
-- $4 boolean
-- $5 boolean
-- $6 jsonb
INSERT INTO flow_steps AS f (flow_step_id, incident_min_items, incident_window_minutes,                             pause_on_incident, strict_evidence, tools) VALUES ($1, coalesce($2::int, 5), coalesce($3::int, 15), coalesce($4::bool, false),         coalesce($5::bool, false), coalesce($6::jsonb, '{}')) ON CONFLICT (flow_step_id) DO UPDATE SET  incident_min_items = coalesce($2::int, f.incident_min_items),  incident_window_minutes = coalesce($3::int, f.incident_window_minutes),  pause_on_incident = coalesce($4::bool, f.pause_on_incident),  strict_evidence = coalesce($5::bool, f.strict_evidence),  tools = coalesce($6::jsonb, f.tools), updated_at = now() RETURNING json_build_object('flow_step', verdict_flow_step_json(f))::text
