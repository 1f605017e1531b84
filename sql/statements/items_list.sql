-- items_list: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 text
-- $3 bigint
-- $4 bigint
-- $5 text
-- $6 text
SELECT json_build_object('items', coalesce(json_agg(verdict_item_json(s.it, s.src)   ORDER BY (s.it).id), '[]'::json),  'next_after', CASE WHEN count(*) = $4 THEN max((s.it).id) END)::text FROM (SELECT it, src FROM items it JOIN item_sources src ON src.id = it.id WHERE ($1::text IS NULL OR src.flow_step_id = $1) AND ($2::text IS NULL OR it.state = $2)   AND ($5::text IS NULL OR it.last_reason_code = $5)   AND ($6::text IS NULL OR EXISTS (SELECT 1 FROM jobs cj WHERE cj.id = it.current_job_id                                    AND cj.worker_id = $6))       AND it.id > $3 ORDER BY it.id LIMIT $4) s
