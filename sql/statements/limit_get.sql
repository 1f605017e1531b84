-- limit_get: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
SELECT json_build_object('limit', verdict_limit_json(l))::text FROM limits l WHERE l.key = $1
