-- tool_success: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 text
WITH u AS (UPDATE tool_failures SET cleared_at = now()  WHERE job_id = $1 AND tool = $2 AND cleared_at IS NULL RETURNING 1) SELECT count(*) FROM u
