-- tool_failure_count: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 text
-- $3 text
SELECT count(*) FROM tool_failures WHERE job_id = $1 AND tool = $2 AND md5(args) = md5($3) AND args = $3
