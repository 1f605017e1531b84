-- verdict_limit_take_many: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: none
-- The room of p_keys for as many of the jobs p_jobs (in order) as fit. First (the usual case,
-- one statement): per key one active lane with room for the whole run, walked from a random
-- lane SKIP LOCKED, all written when every key found one: one row write per key. Else the run
-- is split: per key the lanes with room for one or more, in the walk's order (up to one per
-- job), the grant m is the least any key can serve, and each key's lanes take the first m
-- jobs in order, each lane as many as it has room for (verdict_limit_split). Answers one JSON
-- array per granted job:
-- the lanes with a token window it reserved on (its limit_cells). A throttled key grants none
-- and writes nothing.
CREATE OR REPLACE FUNCTION public.verdict_limit_take_many(p_keys text[], p_est bigint, p_jobs bigint[])
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
    want integer := cardinality(p_jobs);
    est bigint := coalesce(p_est, 0);
    one jsonb;
    is_shut boolean;
    is_missing boolean;
BEGIN
    WITH need AS (
        SELECT l.key, l.lanes, coalesce(l.throttled_until > now(), false) AS shut,
               floor(random() * l.lanes)::integer AS start
          FROM limits l
         WHERE l.key = ANY (p_keys) AND (l.lanes > 0 OR l.throttled_until > now())),
    f AS MATERIALIZED (
        SELECT n.shut, CASE WHEN NOT n.shut THEN coalesce(x.id, y.id) END AS id FROM need n
          LEFT JOIN LATERAL (SELECT c.id FROM limit_lanes c
              WHERE NOT n.shut AND c.key = n.key AND c.n >= n.start AND c.n < n.lanes
                AND (c.slots IS NULL OR c.slots >= want) AND verdict_lane_units(c, want, est) >= want
              ORDER BY c.n LIMIT 1 FOR UPDATE SKIP LOCKED) x ON true
          LEFT JOIN LATERAL (SELECT c.id FROM limit_lanes c
              WHERE NOT n.shut AND x.id IS NULL AND c.key = n.key AND c.n < n.start
                AND (c.slots IS NULL OR c.slots >= want) AND verdict_lane_units(c, want, est) >= want
              ORDER BY c.n LIMIT 1 FOR UPDATE SKIP LOCKED) y ON true),
    w AS (
        UPDATE limit_lanes c SET
            holders = verdict_lane_hold(c, p_jobs),
            tat = CASE WHEN c.burst IS NULL THEN c.tat
                       ELSE greatest(c.tat, clock_timestamp()) + want * c.pace END,
            reserved = CASE WHEN c.tokens IS NULL THEN c.reserved
                            WHEN c.minute = date_trunc('minute', now())
                            THEN c.reserved + est * want ELSE est * want END,
            used = CASE WHEN c.tokens IS NOT NULL
                             AND c.minute IS DISTINCT FROM date_trunc('minute', now())
                        THEN 0 ELSE c.used END,
            minute = CASE WHEN c.tokens IS NOT NULL THEN date_trunc('minute', now())
                          ELSE c.minute END
          FROM f WHERE c.id = f.id AND NOT EXISTS (SELECT 1 FROM f g WHERE g.id IS NULL)
        RETURNING c.id, c.tokens IS NOT NULL AS t)
    SELECT EXISTS (SELECT 1 FROM f WHERE f.shut), EXISTS (SELECT 1 FROM f WHERE f.id IS NULL),
           coalesce((SELECT jsonb_agg(w.id ORDER BY w.id) FROM w WHERE w.t), '[]')
      INTO is_shut, is_missing, one;
    IF is_shut THEN
        RETURN '[]';
    ELSIF NOT is_missing THEN
        RETURN (SELECT jsonb_agg(one) FROM generate_series(1, want));
    END IF;
    -- the run split over lanes (the lanes found above are still ours: not skipped)
    RETURN verdict_limit_split(p_keys, p_est, p_jobs);
END $function$
;
