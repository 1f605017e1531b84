-- template_candidates: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 text
-- $3 bigint
-- $4 text
SELECT t.id, t.template, c.same_tool, c.same_job,       coalesce((SELECT i.id FROM tool_incidents i WHERE i.flow_step_id = $1                 AND i.template_id = t.id AND i.state = 'open'), 0) FROM failure_templates t CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE f.tool = $4) AS same_tool,                            count(*) AS same_job FROM tool_failures f                     WHERE f.job_id = $3::bigint AND f.template_id = t.id) c WHERE t.flow_step_id = $1 AND t.shape = $2 ORDER BY t.id LIMIT 256
