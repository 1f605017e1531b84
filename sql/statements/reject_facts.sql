-- reject_facts: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 text
SELECT EXISTS (SELECT 1 FROM tool_failures f               WHERE f.job_id = j.id AND f.kind = 'deterministic'),  coalesce(j.adjudication->>'outcome' = 'retriable'           OR j.adjudication->>'needs_retry' = 'true', false),  coalesce(s.strict_evidence, false),  $2::text IS NOT NULL AND verdict_payload_quotes(src.payload, $2::text),  (SELECT json_agg(x.error) FROM (SELECT f.error FROM jobs pj     JOIN tool_failures f ON f.job_id = pj.id WHERE pj.item_id = j.item_id     ORDER BY f.id DESC LIMIT 50) x)::text FROM jobs j JOIN item_sources src ON src.id = j.item_id LEFT JOIN flow_steps s ON s.flow_step_id = j.flow_step_id WHERE j.id = $1
