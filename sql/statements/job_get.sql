-- job_get: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
SELECT json_build_object('job', verdict_job_detail_json(j))::text FROM jobs j WHERE j.id = $1
