-- job_set_adjudication: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 text
WITH uj AS (UPDATE jobs j SET adjudication = $2::text::jsonb WHERE j.id = $1            RETURNING j.item_id, verdict_job_json(j) AS job) SELECT verdict_job_answer(NULL, true, $2::text, uj.job, verdict_item_json(i, s), NULL) FROM uj JOIN items i ON i.id = uj.item_id JOIN item_sources s ON s.id = uj.item_id
