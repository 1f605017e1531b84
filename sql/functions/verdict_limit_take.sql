-- verdict_limit_take: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: bd92a3c5d436bf32499e5c2c9782ee29
CREATE OR REPLACE FUNCTION public.verdict_limit_take(p_keys text[], p_est bigint, p_job bigint)
 RETURNS bigint[]
 LANGUAGE plpgsql
AS $function$
DECLARE
    cells bigint[];
BEGIN
    WITH need AS (
        SELECT l.key, k.kind, l.concurrency, l.tokens_per_minute,
               l.rate_burst * verdict_limit_interval(l) AS pause,
               CASE k.kind WHEN 'c' THEN floor(random() * l.concurrency)::integer
                           WHEN 'r' THEN floor(random() * l.rate_burst)::integer
                           WHEN 't' THEN floor(random() * 8)::integer
                           ELSE 0 END AS start
          FROM limits l
         CROSS JOIN LATERAL (VALUES ('c'::"char"), ('r'), ('t'), ('x')) k(kind)
         WHERE l.key = ANY (p_keys)
           AND CASE k.kind WHEN 'c' THEN l.concurrency IS NOT NULL
                           WHEN 'r' THEN l.rate_count IS NOT NULL
                           WHEN 't' THEN l.tokens_per_minute IS NOT NULL
                           ELSE coalesce(l.throttled_until > now(), false) END),
    -- from the start to the last cell, then (only when none was free) from the first
    f AS MATERIALIZED (
        SELECT n.kind, n.pause, coalesce(x.id, y.id) AS id FROM need n
          LEFT JOIN LATERAL (SELECT c.id FROM limit_cells c
              WHERE c.key = n.key AND c.kind = n.kind AND c.n >= n.start
                AND CASE n.kind WHEN 'c' THEN c.n < n.concurrency AND (c.job_id IS NULL
                                OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = c.job_id
                                            AND j.status <> 'processing'))
                            WHEN 'r' THEN c.free_at <= clock_timestamp()
                            ELSE verdict_shard_fits(c, n.tokens_per_minute, p_est) END
              ORDER BY c.n LIMIT 1 FOR UPDATE SKIP LOCKED) x ON true
          LEFT JOIN LATERAL (SELECT c.id FROM limit_cells c
              WHERE x.id IS NULL AND c.key = n.key AND c.kind = n.kind AND c.n < n.start
                AND CASE n.kind WHEN 'c' THEN c.n < n.concurrency AND (c.job_id IS NULL
                                OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = c.job_id
                                            AND j.status <> 'processing'))
                            WHEN 'r' THEN c.free_at <= clock_timestamp()
                            ELSE verdict_shard_fits(c, n.tokens_per_minute, p_est) END
              ORDER BY c.n LIMIT 1 FOR UPDATE SKIP LOCKED) y ON true),
    w AS (
        UPDATE limit_cells c SET
            job_id = CASE WHEN c.kind = 'c' THEN p_job ELSE c.job_id END,
            free_at = CASE WHEN c.kind = 'r' THEN clock_timestamp() + f.pause ELSE c.free_at END,
            reserved = CASE WHEN c.kind <> 't' THEN c.reserved
                            WHEN c.minute = date_trunc('minute', now())
                            THEN c.reserved + coalesce(p_est, 0) ELSE coalesce(p_est, 0) END,
            used = CASE WHEN c.kind = 't'
                             AND c.minute IS DISTINCT FROM date_trunc('minute', now())
                        THEN 0 ELSE c.used END,
            minute = CASE WHEN c.kind = 't' THEN date_trunc('minute', now()) ELSE c.minute END
          FROM f WHERE c.id = f.id AND NOT EXISTS (SELECT 1 FROM f g WHERE g.id IS NULL)
        RETURNING c.id, c.kind)
    SELECT CASE WHEN EXISTS (SELECT 1 FROM f WHERE f.id IS NULL) THEN NULL
                ELSE coalesce((SELECT array_agg(w.id) FROM w WHERE w.kind = 't'), '{}')
           END INTO cells;
    RETURN cells;
END $function$
;
