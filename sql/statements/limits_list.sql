-- limits_list: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- (no parameters)
SELECT json_build_object('limits', coalesce(json_agg(verdict_limit_json(l) ORDER BY l.key), '[]'::json))::text FROM limits l
