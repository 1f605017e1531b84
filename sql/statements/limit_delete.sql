-- limit_delete: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
DELETE FROM limits WHERE key = $1 RETURNING json_build_object('deleted', key)::text
