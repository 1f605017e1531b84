-- tool_pending: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
SELECT EXISTS (SELECT 1 FROM tool_failures f  LEFT JOIN flow_steps d ON d.flow_step_id = j.flow_step_id  WHERE f.job_id = j.id AND NOT f.retryable AND f.cleared_at IS NULL    AND CASE WHEN d.tools ? f.tool        THEN d.tools -> f.tool ->> 'role' = 'write'          OR coalesce((d.tools -> f.tool ->> 'required')::boolean, false)        ELSE f.required END) FROM jobs j WHERE j.id = $1
