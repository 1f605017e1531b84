-- claim_links: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint[]
SELECT coalesce(string_agg(p.claim_trace_id || p.claim_span_id, ',' ORDER BY j.id), '') FROM jobs j CROSS JOIN LATERAL (SELECT e.claim_trace_id, e.claim_span_id FROM jobs e   WHERE e.item_id = j.item_id AND e.id < j.id ORDER BY e.id DESC LIMIT 1) p WHERE j.id = ANY ($1::bigint[]) AND p.claim_span_id IS NOT NULL
