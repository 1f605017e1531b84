-- compact_counts: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- (no parameters)
SELECT verdict_compact_counts(), verdict_rollup_job_counts(), verdict_fold_usage()
