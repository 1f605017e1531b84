-- limit_put: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 integer
-- $3 integer
-- $4 integer
-- $5 integer
-- $6 bigint
SELECT verdict_limit_put($1, $2::int, $3::int, $4::int, $5::int, $6::bigint)
