-- verdict_limit_closed: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 2d1e18847488f5d14123475df53073d2
CREATE OR REPLACE FUNCTION public.verdict_limit_closed(l limits, est bigint)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE PARALLEL SAFE
AS $function$
BEGIN
    RETURN coalesce(l.throttled_until > now(), false)
        OR (l.concurrency IS NOT NULL AND NOT EXISTS (SELECT 1 FROM limit_cells c
                WHERE c.key = l.key AND c.kind = 'c' AND c.n < l.concurrency
                  AND (c.job_id IS NULL OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = c.job_id
                                                    AND j.status <> 'processing'))))
        OR (l.rate_count IS NOT NULL AND NOT EXISTS (SELECT 1 FROM limit_cells c
                WHERE c.key = l.key AND c.kind = 'r' AND c.free_at <= now()))
        OR (l.tokens_per_minute IS NOT NULL AND NOT EXISTS (SELECT 1 FROM limit_cells c
                WHERE c.key = l.key AND c.kind = 't'
                  AND verdict_shard_fits(c, l.tokens_per_minute, est)));
END $function$
;
