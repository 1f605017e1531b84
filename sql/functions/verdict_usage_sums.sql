-- verdict_usage_sums: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 00860b991d0f0af9692e38afdf60e7df
CREATE OR REPLACE FUNCTION public.verdict_usage_sums(p_fs text)
 RETURNS TABLE(flow_step_id text, key text, jobs bigint, input_tokens bigint, output_tokens bigint, cost_usd numeric)
 LANGUAGE sql
 STABLE
AS $function$ SELECT x.flow_step_id, x.key, sum(x.jobs)::bigint, sum(x.input_tokens)::bigint,
                 sum(x.output_tokens)::bigint, sum(x.cost_usd)
            FROM (SELECT u.flow_step_id, u.key, u.jobs, u.input_tokens, u.output_tokens,
                         u.cost_usd FROM usage_counts u
                  UNION ALL SELECT d.flow_step_id, d.key, 1, d.input_tokens, d.output_tokens,
                         coalesce(d.cost_usd, 0) FROM usage_deltas d) x
           WHERE p_fs IS NULL OR x.flow_step_id = p_fs
           GROUP BY 1, 2 $function$
;
