-- incident_open: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 bigint
-- $3 text
SELECT t.id, t.tool, t.items FROM tool_incidents t WHERE t.state = 'open'   AND t.flow_step_id = coalesce($1, (SELECT i.flow_step_id FROM items i                                      WHERE i.id = $2::bigint)) ORDER BY (t.tool = $3 OR $3 = ANY (t.tools)) DESC NULLS LAST,   t.items DESC, t.id LIMIT 1
