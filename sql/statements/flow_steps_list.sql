-- flow_steps_list: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- (no parameters)
SELECT json_build_object('flow_steps', coalesce(json_agg(verdict_flow_step_json(f)  ORDER BY f.flow_step_id), '[]'::json))::text FROM flow_steps f
