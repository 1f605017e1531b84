-- template_update: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 text
UPDATE failure_templates SET template = $2, updated_at = now() WHERE id = $1::bigint
