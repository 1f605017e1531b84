-- job_usage: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 bigint
-- $3 bigint
-- $4 numeric
-- $5 text
SELECT verdict_job_usage($1::bigint, $2::bigint, $3::bigint, $4::numeric, $5)
