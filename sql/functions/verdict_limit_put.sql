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
    t timestamptz;
    live bigint[];
    owed float8;
BEGIN
    SELECT * INTO old FROM limits WHERE key = p_key FOR UPDATE;
    -- the lanes, locked: this waits for the claims holding one to commit, and claims skip them
    -- until this commits (sql/migrations/0044_limit_lanes.sql)
    PERFORM 1 FROM limit_lanes WHERE key = p_key ORDER BY n FOR UPDATE;
    t := clock_timestamp();
    -- the jobs holding slots now, and the rate tokens the active lanes owe (tat ahead of now)
    live := ARRAY(SELECT h FROM limit_lanes c CROSS JOIN LATERAL unnest(verdict_lane_alive(c.holders)) h
                   WHERE c.key = p_key ORDER BY h);
    SELECT coalesce(sum(extract(epoch FROM greatest(c.tat, t) - t)
                        / extract(epoch FROM c.pace)), 0) INTO owed
      FROM limit_lanes c WHERE c.key = p_key AND c.n < old.lanes AND c.burst IS NOT NULL;
    INSERT INTO limits AS x (key, concurrency, rate_per_seconds, rate_count, rate_burst,
                             tokens_per_minute, lanes)
    VALUES (p_key, p_conc, p_per, p_count, p_burst, p_tpm,
            CASE WHEN p_conc IS NULL AND p_count IS NULL AND p_tpm IS NULL THEN 0
                 ELSE greatest(1, least(8, p_conc, p_burst, p_tpm)) END)
    ON CONFLICT (key) DO UPDATE SET concurrency = p_conc, rate_per_seconds = p_per,
        rate_count = p_count, rate_burst = p_burst, tokens_per_minute = p_tpm,
        lanes = EXCLUDED.lanes, updated_at = now()
    RETURNING * INTO l;
    INSERT INTO limit_lanes (key, n) SELECT p_key, g FROM generate_series(0, l.lanes - 1) g
    ON CONFLICT (key, n) DO NOTHING;
    -- lanes from l.lanes on are retired: no share, no holder; they keep their token counters
    -- (jobs naming them settle there). The holders are dealt round-robin over the active lanes,
    -- so that with as many holders as the new limit every lane is full; the rate tokens owed
    -- are spread evenly (a new rate starts with a full burst, as before).
    UPDATE limit_lanes c SET
        slots = CASE WHEN c.n < l.lanes THEN verdict_lane_share(l.concurrency, l.lanes, c.n) END,
        holders = CASE WHEN c.n < l.lanes AND l.concurrency IS NOT NULL
                       THEN ARRAY(SELECT live[i] FROM generate_subscripts(live, 1) i
                                   WHERE (i - 1) % l.lanes = c.n ORDER BY i)
                       ELSE '{}' END,
        burst = CASE WHEN c.n < l.lanes THEN verdict_lane_share(l.rate_burst, l.lanes, c.n) END,
        pace = CASE WHEN c.n < l.lanes AND l.rate_count IS NOT NULL
                    THEN l.lanes * verdict_limit_interval(l) END,
        tat = CASE WHEN c.n >= l.lanes OR l.rate_count IS NULL OR owed = 0
                        OR old.rate_per_seconds IS DISTINCT FROM p_per
                        OR old.rate_count IS DISTINCT FROM p_count THEN '-infinity'
                   ELSE t + owed * verdict_limit_interval(l) END,
        tokens = CASE WHEN c.n < l.lanes
                      THEN verdict_lane_share(l.tokens_per_minute, l.lanes, c.n) END
     WHERE c.key = p_key;
    RETURN json_build_object('limit', verdict_limit_json(l))::text;
END $function$
;
