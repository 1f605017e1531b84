-- items_lookup: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 text
-- $3 jsonb
SELECT json_build_object('items', coalesce(json_agg(json_build_object(  'id', s.id, 'item_identifier', s.item_identifier, 'state', s.state) ORDER BY s.ord),  '[]'::json))::text FROM (SELECT i.id, s.item_identifier, i.state, min(r.ord) AS ord       FROM jsonb_array_elements_text($3::jsonb) WITH ORDINALITY AS r(ident, ord)       JOIN item_sources s ON s.flow_step_id = $1 AND s.source_type = $2        AND verdict_identity_digest(s.item_identifier) = verdict_identity_digest(r.ident)        AND s.item_identifier = r.ident       JOIN items i ON i.id = s.id       GROUP BY i.id, s.item_identifier, i.state) s
