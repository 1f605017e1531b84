-- claimable_announce: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint[]
SELECT (SELECT string_agg(an.n || ' ' || an.flow_step_id, E'\n') FROM (SELECT count(*) AS n, flow_step_id FROM items WHERE id = ANY ($1::bigint[]) GROUP BY flow_step_id) an)
