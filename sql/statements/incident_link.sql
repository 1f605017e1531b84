-- incident_link: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 bigint
-- $3 text
WITH l AS (INSERT INTO tool_incident_items (incident_id, item_id)           SELECT $1::bigint, $2::bigint WHERE EXISTS (SELECT 1 FROM tool_incidents             WHERE id = $1::bigint AND state = 'open')           ON CONFLICT DO NOTHING RETURNING incident_id) UPDATE tool_incidents t SET last_seen = now(), items = t.items + (SELECT count(*) FROM l),   tools = CASE WHEN $3 = ANY (t.tools) THEN t.tools ELSE t.tools || $3 END WHERE t.id = $1::bigint AND t.state = 'open' RETURNING t.id, t.tool, t.items
