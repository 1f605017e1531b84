-- mcp_offer: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 uuid
SELECT j.status = 'processing' AND i.state = 'claimed' AND i.current_job_id = j.id   AND i.claim_token = j.claim_token AND coalesce(i.lease_expires_at > now(), false),  EXISTS (SELECT 1 FROM tool_failures f WHERE f.job_id = j.id          AND f.kind = 'deterministic'),  EXISTS (SELECT 1 FROM tool_failures f  LEFT JOIN flow_steps d ON d.flow_step_id = j.flow_step_id  WHERE f.job_id = j.id AND NOT f.retryable AND f.cleared_at IS NULL    AND CASE WHEN d.tools ? f.tool        THEN d.tools -> f.tool ->> 'role' = 'write'          OR coalesce((d.tools -> f.tool ->> 'required')::boolean, false)        ELSE f.required END), j.item_id FROM jobs j JOIN items i ON i.id = j.item_id WHERE j.id = $1 AND j.claim_token = $2::uuid
