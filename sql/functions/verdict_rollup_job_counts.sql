-- verdict_rollup_job_counts: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 9030dfe97678b8fc506ffbd7de967067
CREATE OR REPLACE FUNCTION public.verdict_rollup_job_counts()
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF NOT pg_try_advisory_xact_lock(7306153949216651922) THEN
        RETURN;
    END IF;
    WITH d AS (DELETE FROM job_counts
               WHERE minute < date_trunc('hour', now()) - interval '1 hour'
                 AND minute <> date_trunc('hour', minute)
               RETURNING *)
    INSERT INTO job_counts AS c
        SELECT flow_step_id, status, date_trunc('hour', minute), sum(n) FROM d GROUP BY 1, 2, 3
    ON CONFLICT (flow_step_id, minute, status) DO UPDATE SET n = c.n + EXCLUDED.n;
END $function$
;
