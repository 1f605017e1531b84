-- transitions_feed: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 text
-- $3 bigint
SELECT json_build_object('transitions', coalesce(json_agg(s.j ORDER BY s.id), '[]'::json),  'next_after', coalesce(max(s.id), $1),  'last_id', (SELECT coalesce(max(id), 0) FROM transitions))::text FROM (SELECT t.id, verdict_transition_json(t)::jsonb || jsonb_build_object(         'flow_step_id', s.flow_step_id, 'source_type', s.source_type,         'item_identifier', s.item_identifier) AS j       FROM transitions t JOIN item_sources s ON s.id = t.item_id       WHERE t.id > $1 AND ($2::text IS NULL OR s.flow_step_id = $2)         AND t.id < coalesce((SELECT min(u.id) FROM transitions u                              WHERE u.logged_at >= verdict_feed_horizon()),                             9223372036854775807)       ORDER BY t.id LIMIT $3) s
