-- job_reopen_seconds: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
SELECT verdict_job_reopen_seconds($1::bigint)
