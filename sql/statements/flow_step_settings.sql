-- flow_step_settings: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
SELECT incident_min_items, incident_window_minutes, pause_on_incident, strict_evidence FROM flow_steps WHERE flow_step_id = $1
