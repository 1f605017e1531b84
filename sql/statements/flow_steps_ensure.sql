-- flow_steps_ensure: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 jsonb
INSERT INTO flow_steps (flow_step_id) SELECT DISTINCT e->>'flow_step_id' FROM jsonb_array_elements($1::jsonb) e ORDER BY 1 ON CONFLICT DO NOTHING
