-- incidents_list: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 text
-- $3 bigint
-- $4 bigint
SELECT json_build_object('tool_incidents',  coalesce(json_agg(verdict_tool_incident_json(s.t) ORDER BY (s.t).id), '[]'::json),  'next_after', CASE WHEN count(*) = $4 THEN max((s.t).id) END)::text FROM (SELECT t FROM tool_incidents t       WHERE ($1::text IS NULL OR t.state = $1)         AND ($2::text IS NULL OR t.flow_step_id = $2) AND t.id > $3       ORDER BY t.id LIMIT $4) s
