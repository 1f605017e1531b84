-- limit_backoff: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 integer
-- $3 text
-- $4 integer
SELECT verdict_limit_backoff($1, $2::int, $3, $4::int)
