-- incident_get: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
SELECT json_build_object('tool_incident', verdict_tool_incident_json(t)::jsonb  || jsonb_build_object('affected_items', (SELECT coalesce(jsonb_agg(       jsonb_build_object('id', i.id, 'item_identifier', s.item_identifier,                          'state', i.state) ORDER BY i.id), '[]'::jsonb)     FROM tool_incident_items x JOIN items i ON i.id = x.item_id     JOIN item_sources s ON s.id = x.item_id     WHERE x.incident_id = t.id)))::text FROM tool_incidents t WHERE t.id = $1
