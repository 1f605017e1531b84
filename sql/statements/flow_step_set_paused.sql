-- flow_step_set_paused: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 boolean
INSERT INTO flow_steps AS f (flow_step_id, paused) VALUES ($1, $2) ON CONFLICT (flow_step_id) DO UPDATE SET paused = $2, updated_at = now() RETURNING json_build_object('flow_step', verdict_flow_step_json(f))::text,  CASE WHEN NOT f.paused THEN '0 ' || f.flow_step_id END
