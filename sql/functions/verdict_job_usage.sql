-- verdict_job_usage: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: eebd7654d103e279af2755614240af96
CREATE OR REPLACE FUNCTION public.verdict_job_usage(p_job bigint, p_in bigint, p_out bigint, p_cost numeric, p_model text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
DECLARE
    j jobs;
    tot bigint := p_in + p_out;
    over boolean;
BEGIN
    UPDATE jobs SET usage_input_tokens = p_in, usage_output_tokens = p_out,
                    usage_cost_usd = p_cost, usage_model = p_model
     WHERE id = p_job RETURNING * INTO j;
    -- the sums stats show: the flow step's (key '') and each key's (sql/migrations/0038)
    INSERT INTO usage_deltas (flow_step_id, key, input_tokens, output_tokens, cost_usd)
    SELECT j.flow_step_id, k, p_in, p_out, p_cost
      FROM unnest(ARRAY[''] || coalesce(j.limit_keys, '{}')) k;
    UPDATE items i SET usage_tokens = i.usage_tokens + tot,
                       usage_cost_usd = i.usage_cost_usd + coalesce(p_cost, 0)
     WHERE i.id = j.item_id;
    -- the job's estimate on each lane it reserved on is replaced by what it used
    UPDATE limit_lanes c SET
        reserved = greatest(0, CASE WHEN c.minute = date_trunc('minute', now())
            THEN c.reserved + tot
                 - CASE WHEN date_trunc('minute', j.claimed_at) = c.minute
                        THEN coalesce(j.estimated_tokens, 0) ELSE 0 END
            ELSE tot END),
        used = CASE WHEN c.minute = date_trunc('minute', now()) THEN c.used ELSE 0 END + tot,
        minute = date_trunc('minute', now()), used_total = c.used_total + tot
     WHERE c.id = ANY (j.limit_cells);
    SELECT coalesce(i.usage_tokens > f.max_item_tokens, false)
           OR coalesce(i.usage_cost_usd > f.max_item_cost_usd, false) INTO over
      FROM items i JOIN flow_steps f ON f.flow_step_id = i.flow_step_id
     WHERE i.id = j.item_id;
    RETURN coalesce(over, false);
END $function$
;
