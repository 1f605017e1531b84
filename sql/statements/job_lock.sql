-- job_lock: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 uuid
-- $3 jsonb
SELECT 0, j.status, j.claim_token = $2::uuid, coalesce(j.disposition, ''),  j.required_tool_failed,  CASE WHEN j.answer_digest IS NULL THEN false  ELSE coalesce(j.answer_digest = verdict_request_digest($3::jsonb), false) END, CASE WHEN j.answer_head IS NOT NULL OR j.answer_response IS NOT NULL  THEN verdict_kept_answer(j) END, i.id, i.state,  (i.state = 'claimed' AND i.current_job_id = j.id AND i.claim_token = j.claim_token),  i.failures, i.defers, i.max_attempts, i.max_defers, EXISTS (SELECT 1 FROM tool_failures f  LEFT JOIN flow_steps d ON d.flow_step_id = j.flow_step_id  WHERE f.job_id = j.id AND NOT f.retryable AND f.cleared_at IS NULL    AND CASE WHEN d.tools ? f.tool        THEN d.tools -> f.tool ->> 'role' = 'write'          OR coalesce((d.tools -> f.tool ->> 'required')::boolean, false)        ELSE f.required END),  j.flow_step_id, j.worker_id, j.worker_version FROM jobs j JOIN items i ON i.id = j.item_id WHERE j.id = $1 FOR NO KEY UPDATE OF j
