-- verdict_limit_put: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 3dfa15de1cbf9d882836eb40d18b9c60
CREATE OR REPLACE FUNCTION public.verdict_limit_put(p_key text, p_conc integer, p_per integer, p_count integer, p_burst integer, p_tpm bigint)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
DECLARE
    l limits;
    old limits;
BEGIN
    SELECT * INTO old FROM limits WHERE key = p_key FOR UPDATE;
    INSERT INTO limits AS x (key, concurrency, rate_per_seconds, rate_count, rate_burst,
                             tokens_per_minute)
    VALUES (p_key, p_conc, p_per, p_count, p_burst, p_tpm)
    ON CONFLICT (key) DO UPDATE SET concurrency = p_conc, rate_per_seconds = p_per,
        rate_count = p_count, rate_burst = p_burst, tokens_per_minute = p_tpm,
        updated_at = now()
    RETURNING * INTO l;
    INSERT INTO limit_cells (key, kind, n)
    SELECT p_key, 'c', g FROM generate_series(0, coalesce(p_conc, 0) - 1) g
    UNION ALL SELECT p_key, 'r', g FROM generate_series(0, coalesce(p_burst, 0) - 1) g
    UNION ALL SELECT p_key, 't', g FROM generate_series(0, 7) g WHERE p_tpm IS NOT NULL
    ON CONFLICT (key, kind, n) DO NOTHING;
    DELETE FROM limit_cells WHERE key = p_key
       AND ((kind = 'c' AND n >= coalesce(p_conc, 0) AND (job_id IS NULL
                OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = limit_cells.job_id AND j.status <> 'processing')))
            OR (kind = 'r' AND n >= coalesce(p_burst, 0)) OR (kind = 't' AND p_tpm IS NULL));
    IF old.rate_per_seconds IS DISTINCT FROM p_per OR old.rate_count IS DISTINCT FROM p_count
    THEN
        UPDATE limit_cells SET free_at = '-infinity' WHERE key = p_key AND kind = 'r';
    END IF;
    RETURN json_build_object('limit', verdict_limit_json(l))::text;
END $function$
;
