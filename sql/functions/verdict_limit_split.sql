-- verdict_limit_split: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: none
-- The room of p_keys for as many of the jobs p_jobs (in order) as fit, split over lanes: per
-- key the lanes with room for one or more, in a walk from a random lane SKIP LOCKED (up to one
-- per job), the grant m is the least any key can serve, and each key's lanes take the first m
-- jobs in order, each lane as many as it has room for. Answers one JSON array per granted job:
-- the lanes with a token window it reserved on (its limit_cells). The second way of
-- verdict_limit_take_many, and what claim_many_take calls when a key has no lane with room
-- for its whole run (lanes the caller locked are its own: not skipped).
CREATE OR REPLACE FUNCTION public.verdict_limit_split(p_keys text[], p_est bigint, p_jobs bigint[])
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
    want integer := cardinality(p_jobs);
    est bigint := coalesce(p_est, 0);
    answer jsonb;
BEGIN
    WITH need AS (
        SELECT l.key, l.lanes, floor(random() * l.lanes)::integer AS start
          FROM limits l WHERE l.key = ANY (p_keys) AND l.lanes > 0),
    locked AS MATERIALIZED (
        SELECT n.key, x.id, x.wrapped, x.n, least(x.units, want) AS units
          FROM need n
          JOIN LATERAL (SELECT * FROM (SELECT c.id, c.n, false AS wrapped,
                                              verdict_lane_units(c, want, est) AS units
                FROM limit_lanes c
               WHERE c.key = n.key AND c.n >= n.start AND c.n < n.lanes
                 AND verdict_lane_units(c, 1, est) >= 1
               ORDER BY c.n LIMIT want FOR UPDATE SKIP LOCKED) a
              UNION ALL
              SELECT * FROM (SELECT c.id, c.n, true AS wrapped,
                                    verdict_lane_units(c, want, est) AS units
                FROM limit_lanes c
               WHERE c.key = n.key AND c.n < n.start AND verdict_lane_units(c, 1, est) >= 1
               ORDER BY c.n LIMIT want FOR UPDATE SKIP LOCKED) b LIMIT want) x ON true),
    spread AS MATERIALIZED (
        SELECT l.*, sum(l.units) OVER (PARTITION BY l.key ORDER BY l.wrapped, l.n) AS upto
          FROM locked l),
    g AS (
        SELECT least(want, coalesce(min(a.avail), want))::integer AS m
          FROM (SELECT n.key, coalesce(sum(c.units), 0) AS avail FROM need n
                  LEFT JOIN spread c ON c.key = n.key GROUP BY n.key) a),
    x AS (
        SELECT c.*, (c.upto - c.units)::integer AS before,
               greatest(0, least(c.upto, g.m) - (c.upto - c.units))::integer AS cnt
          FROM spread c, g),
    w AS (
        UPDATE limit_lanes c SET
            holders = verdict_lane_hold(c, p_jobs[x.before + 1 : x.before + x.cnt]),
            tat = CASE WHEN c.burst IS NULL THEN c.tat
                       ELSE greatest(c.tat, clock_timestamp()) + x.cnt * c.pace END,
            reserved = CASE WHEN c.tokens IS NULL THEN c.reserved
                            WHEN c.minute = date_trunc('minute', now())
                            THEN c.reserved + est * x.cnt ELSE est * x.cnt END,
            used = CASE WHEN c.tokens IS NOT NULL
                             AND c.minute IS DISTINCT FROM date_trunc('minute', now())
                        THEN 0 ELSE c.used END,
            minute = CASE WHEN c.tokens IS NOT NULL THEN date_trunc('minute', now())
                          ELSE c.minute END
          FROM x WHERE c.id = x.id AND x.cnt > 0
        RETURNING c.id, c.tokens IS NOT NULL AS t, x.before, x.cnt)
    SELECT coalesce(jsonb_agg((SELECT coalesce(jsonb_agg(w.id ORDER BY w.id), '[]')
                                 FROM w WHERE w.t AND k > w.before
                                  AND k <= w.before + w.cnt) ORDER BY k), '[]')
      INTO answer FROM generate_series(1, (SELECT g.m FROM g)) k;
    RETURN answer;
END $function$
;
