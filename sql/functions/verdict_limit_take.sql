-- verdict_limit_take: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: bd92a3c5d436bf32499e5c2c9782ee29
-- The room of one claimed item on p_keys, taken for job p_job in one statement: per key with
-- settings, one active lane with room for one claim of every kind it carries, walked from a
-- random lane (FOR UPDATE SKIP LOCKED: never waiting for another claim) and wrapping; all are
-- written only when every key found one (its slots name the job, its GCRA moves one pace on,
-- its minute reserves p_est). Answers the lanes with a token window (the job settles its usage
-- on them; '{}' for none), NULL when a key is throttled or no lane of it has room (then
-- nothing is written; the lanes locked stay locked, unused, until the claim commits).
CREATE OR REPLACE FUNCTION public.verdict_limit_take(p_keys text[], p_est bigint, p_job bigint)
 RETURNS bigint[]
 LANGUAGE plpgsql
AS $function$
DECLARE
    taken bigint[];
BEGIN
    WITH need AS (
        SELECT l.key, l.lanes, coalesce(l.throttled_until > now(), false) AS shut,
               floor(random() * l.lanes)::integer AS start
          FROM limits l
         WHERE l.key = ANY (p_keys) AND (l.lanes > 0 OR l.throttled_until > now())),
    -- from the start to the last active lane, then (only when none had room) from the first
    f AS MATERIALIZED (
        SELECT CASE WHEN NOT n.shut THEN coalesce(x.id, y.id) END AS id FROM need n
          LEFT JOIN LATERAL (SELECT c.id FROM limit_lanes c
              WHERE NOT n.shut AND c.key = n.key AND c.n >= n.start AND c.n < n.lanes
                AND verdict_lane_units(c, 1, p_est) >= 1
              ORDER BY c.n LIMIT 1 FOR UPDATE SKIP LOCKED) x ON true
          LEFT JOIN LATERAL (SELECT c.id FROM limit_lanes c
              WHERE NOT n.shut AND x.id IS NULL AND c.key = n.key AND c.n < n.start
                AND verdict_lane_units(c, 1, p_est) >= 1
              ORDER BY c.n LIMIT 1 FOR UPDATE SKIP LOCKED) y ON true),
    w AS (
        UPDATE limit_lanes c SET
            holders = verdict_lane_hold(c, ARRAY[p_job]),
            tat = CASE WHEN c.burst IS NULL THEN c.tat
                       ELSE greatest(c.tat, clock_timestamp()) + c.pace END,
            reserved = CASE WHEN c.tokens IS NULL THEN c.reserved
                            WHEN c.minute = date_trunc('minute', now())
                            THEN c.reserved + coalesce(p_est, 0) ELSE coalesce(p_est, 0) END,
            used = CASE WHEN c.tokens IS NOT NULL
                             AND c.minute IS DISTINCT FROM date_trunc('minute', now())
                        THEN 0 ELSE c.used END,
            minute = CASE WHEN c.tokens IS NOT NULL THEN date_trunc('minute', now())
                          ELSE c.minute END
          FROM f WHERE c.id = f.id AND NOT EXISTS (SELECT 1 FROM f g WHERE g.id IS NULL)
        RETURNING c.id, c.tokens IS NOT NULL AS t)
    SELECT CASE WHEN EXISTS (SELECT 1 FROM f WHERE f.id IS NULL) THEN NULL
                ELSE coalesce((SELECT array_agg(w.id) FROM w WHERE w.t), '{}')
           END INTO taken;
    RETURN taken;
END $function$
;
