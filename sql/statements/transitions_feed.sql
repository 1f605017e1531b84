-- transitions_feed: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 text
-- $3 bigint
SELECT json_build_object('transitions', coalesce(json_agg(s.j ORDER BY s.id), '[]'::json),  'next_after', coalesce(max(s.id), $1),  'last_id', (SELECT coalesce(max(id), 0) FROM audit))::text FROM (SELECT w.id, verdict_audit_json(w.t)::jsonb || jsonb_build_object(         'flow_step_id', s.flow_step_id, 'source_type', s.source_type,         'item_identifier', s.item_identifier) AS j       FROM (SELECT t, t.id, count(*) FILTER (WHERE t.logged_at >= h.at)               OVER (ORDER BY t.id) AS late             FROM (SELECT verdict_feed_horizon() AS at OFFSET 0) h, audit t             WHERE t.id > $1) w       JOIN item_sources s ON s.id = (w.t).item_id       WHERE w.late = 0 AND ($2::text IS NULL OR s.flow_step_id = $2)       ORDER BY w.id LIMIT $3) s
