-- verdict_fold_usage: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: c289094546a7c60c77dea3f31f28f6e1
CREATE OR REPLACE FUNCTION public.verdict_fold_usage()
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
    WITH d AS (DELETE FROM usage_deltas RETURNING *)
    INSERT INTO usage_counts AS u (flow_step_id, key, jobs, input_tokens, output_tokens,
                                   cost_usd)
    SELECT d.flow_step_id, d.key, count(*), sum(d.input_tokens), sum(d.output_tokens),
           coalesce(sum(d.cost_usd), 0)
      FROM d GROUP BY 1, 2
    ON CONFLICT (flow_step_id, key) DO UPDATE SET jobs = u.jobs + EXCLUDED.jobs,
        input_tokens = u.input_tokens + EXCLUDED.input_tokens,
        output_tokens = u.output_tokens + EXCLUDED.output_tokens,
        cost_usd = u.cost_usd + EXCLUDED.cost_usd;
END $function$
;
