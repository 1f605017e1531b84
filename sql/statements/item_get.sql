-- item_get: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
SELECT json_build_object('item', verdict_item_json(i, s), 'transitions',  (SELECT coalesce(json_agg(verdict_audit_json(t) ORDER BY (t).id DESC), '[]'::json)   FROM (SELECT tr AS t FROM audit tr WHERE tr.item_id = i.id         ORDER BY tr.id DESC LIMIT 100) s))::text FROM items i JOIN item_sources s ON s.id = i.id WHERE i.id = $1
