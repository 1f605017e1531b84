-- item_current_job: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
SELECT state, coalesce(current_job_id, 0) FROM items WHERE id = $1
