-- verdict_limit_take_many: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: none
-- The limit cells of p_keys for as many of the jobs p_jobs (in order) as fit, in one statement:
-- up to n cells per key and kind are locked (SKIP LOCKED, concurrency slots from a random
-- start as verdict_limit_take does; token shards only as many as the n estimates need), the grant m is the least any key and kind can serve, and
-- the first m jobs get a concurrency slot and a rate cell each per key, and share token shards
-- (a shard takes as many estimates as fit under its share of the minute, in one row update).
-- Answers one JSON array per granted job: the token cells it reserved on (its limit_cells).
-- A throttled key grants none and writes nothing.
CREATE OR REPLACE FUNCTION public.verdict_limit_take_many(p_keys text[], p_est bigint, p_jobs bigint[])
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
    want integer := cardinality(p_jobs);
    est bigint := coalesce(p_est, 0);
    answer jsonb;
BEGIN
    WITH need AS (
        SELECT l.key, k.kind, l.concurrency, ceil(l.tokens_per_minute / 8.0) AS cap,
               l.tokens_per_minute, l.rate_burst * verdict_limit_interval(l) AS pause,
               CASE k.kind WHEN 'c' THEN floor(random() * l.concurrency)::integer
                           WHEN 'r' THEN floor(random() * l.rate_burst)::integer
                           WHEN 't' THEN floor(random() * 8)::integer
                           ELSE 0 END AS start,
               -- cells to lock: one each per job; token shards only as many as an empty one
               -- would need, and one more (a shard locked and not needed is one that other
               -- claims skip)
               CASE WHEN k.kind <> 't' THEN want WHEN est = 0 THEN 1
                    ELSE least(want, ceil(want / greatest(1, floor(ceil(l.tokens_per_minute / 8.0)
                                                                    / est))) + 1) END::bigint AS lim
          FROM limits l
         CROSS JOIN LATERAL (VALUES ('c'::"char"), ('r'), ('t'), ('x')) k(kind)
         WHERE l.key = ANY (p_keys)
           AND CASE k.kind WHEN 'c' THEN l.concurrency IS NOT NULL
                           WHEN 'r' THEN l.rate_count IS NOT NULL
                           WHEN 't' THEN l.tokens_per_minute IS NOT NULL
                           ELSE coalesce(l.throttled_until > now(), false) END),
    locked AS MATERIALIZED (
        SELECT n.key, n.kind, n.pause, x.id, x.wrapped, x.n,
               CASE WHEN n.kind <> 't' THEN 1 WHEN est = 0 THEN want
                    WHEN x.minute IS DISTINCT FROM date_trunc('minute', now()) OR x.reserved = 0
                    THEN greatest(1, floor(n.cap / est))
                    ELSE floor((n.cap - x.reserved) / est) END::bigint AS units
          FROM need n
          -- from the start to the last cell, then (only when those were too few) from the first
          JOIN LATERAL (SELECT * FROM (SELECT c.id, c.n, c.reserved, c.minute, false AS wrapped
                FROM limit_cells c
               WHERE c.key = n.key AND c.kind = n.kind AND n.kind <> 'x' AND c.n >= n.start
                 AND CASE n.kind WHEN 'c' THEN c.n < n.concurrency AND (c.job_id IS NULL
                                 OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = c.job_id
                                             AND j.status <> 'processing'))
                             WHEN 'r' THEN c.free_at <= clock_timestamp()
                             ELSE verdict_shard_fits(c, n.tokens_per_minute, p_est) END
               ORDER BY c.n LIMIT n.lim FOR UPDATE SKIP LOCKED) a
              UNION ALL
              SELECT * FROM (SELECT c.id, c.n, c.reserved, c.minute, true AS wrapped
                FROM limit_cells c
               WHERE c.key = n.key AND c.kind = n.kind AND n.kind <> 'x' AND c.n < n.start
                 AND CASE n.kind WHEN 'c' THEN c.n < n.concurrency AND (c.job_id IS NULL
                                 OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = c.job_id
                                             AND j.status <> 'processing'))
                             WHEN 'r' THEN c.free_at <= clock_timestamp()
                             ELSE verdict_shard_fits(c, n.tokens_per_minute, p_est) END
               ORDER BY c.n LIMIT n.lim FOR UPDATE SKIP LOCKED) b LIMIT n.lim) x ON true),
    cells AS MATERIALIZED (
        SELECT l.*, sum(l.units) OVER (PARTITION BY l.key, l.kind
                                       ORDER BY l.wrapped, l.n) AS upto
          FROM locked l),
    g AS (
        SELECT least(want, coalesce(min(a.avail), want))::integer AS m
          FROM (SELECT n.key, n.kind, coalesce(sum(c.units), 0) AS avail FROM need n
                  LEFT JOIN cells c ON c.key = n.key AND c.kind = n.kind
                 GROUP BY n.key, n.kind) a),
    x AS (
        SELECT c.*, greatest(0, least(c.upto, g.m) - (c.upto - c.units)) AS cnt FROM cells c, g),
    w AS (
        UPDATE limit_cells c SET
            job_id = CASE WHEN c.kind = 'c' THEN p_jobs[x.upto] ELSE c.job_id END,
            free_at = CASE WHEN c.kind = 'r' THEN clock_timestamp() + x.pause ELSE c.free_at END,
            reserved = CASE WHEN c.kind <> 't' THEN c.reserved
                            WHEN c.minute = date_trunc('minute', now())
                            THEN c.reserved + est * x.cnt ELSE est * x.cnt END,
            used = CASE WHEN c.kind = 't'
                             AND c.minute IS DISTINCT FROM date_trunc('minute', now())
                        THEN 0 ELSE c.used END,
            minute = CASE WHEN c.kind = 't' THEN date_trunc('minute', now()) ELSE c.minute END
          FROM x WHERE c.id = x.id AND x.cnt > 0
        RETURNING c.id, c.kind, x.upto, x.units)
    SELECT coalesce(jsonb_agg((SELECT coalesce(jsonb_agg(w.id ORDER BY w.id), '[]')
                                 FROM w WHERE w.kind = 't' AND k > w.upto - w.units
                                  AND k <= w.upto) ORDER BY k), '[]')
      INTO answer FROM generate_series(1, (SELECT g.m FROM g)) k;
    RETURN answer;
END $function$
;
