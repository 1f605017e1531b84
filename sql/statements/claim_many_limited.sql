-- claim_many_limited: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 jsonb
-- $3 integer
-- $4 jsonb
-- $5 bigint
SELECT req, answer FROM verdict_claim_many_limited($1, $2::jsonb, $3::int, (SELECT array_agg(DISTINCT e ORDER BY e) FROM jsonb_array_elements_text($4::jsonb) e), $5::bigint)
