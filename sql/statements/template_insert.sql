-- template_insert: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 text
-- $3 text
INSERT INTO failure_templates (flow_step_id, shape, template) VALUES ($1, $2, $3) RETURNING id
