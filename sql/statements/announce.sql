-- announce: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
SELECT pg_notify('verdict_claimable', x) FROM unnest(string_to_array($1, E'\n')) x WHERE x <> ''
