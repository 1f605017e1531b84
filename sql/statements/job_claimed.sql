-- job_claimed: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 uuid
SELECT json_build_object('job', verdict_job_json(j), 'item',  verdict_item_json(i, s))::text FROM jobs j JOIN items i ON i.id = j.item_id JOIN item_sources s ON s.id = j.item_id WHERE j.id = $1 AND j.claim_token = $2::uuid
