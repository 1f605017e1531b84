-- template_lock: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 text
SELECT pg_advisory_xact_lock(hashtextextended(  concat_ws(chr(1), 'verdict.template', $1::text, $2::text), 0))
