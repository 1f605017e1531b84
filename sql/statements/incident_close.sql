-- incident_close: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 text
-- $3 text
WITH cur AS (SELECT id, state FROM tool_incidents WHERE id = $1 FOR UPDATE), u AS (UPDATE tool_incidents t SET state = 'resolved', resolved_at = now(),         resolved_by = $3, resolve_reason = $2       FROM cur WHERE t.id = cur.id AND cur.state = 'open') SELECT state FROM cur
