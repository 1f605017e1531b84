-- prior_adjudications: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 bigint
SELECT coalesce(json_agg(adjudication ORDER BY id DESC), '[]'::json)::text FROM jobs WHERE item_id = $1 AND id < $2 AND adjudication IS NOT NULL
