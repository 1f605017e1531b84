-- flow_step_budgets: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 bigint
-- $3 numeric
UPDATE flow_steps f SET  max_item_tokens = CASE WHEN $2::bigint IS NULL THEN f.max_item_tokens   WHEN $2::bigint > 0 THEN $2::bigint END,  max_item_cost_usd = CASE WHEN $3::numeric IS NULL THEN f.max_item_cost_usd   WHEN $3::numeric > 0 THEN $3::numeric END, updated_at = now() WHERE f.flow_step_id = $1 RETURNING json_build_object('flow_step', verdict_flow_step_json(f)::jsonb  || jsonb_build_object('max_item_tokens', f.max_item_tokens,                        'max_item_cost_usd', f.max_item_cost_usd))::text
