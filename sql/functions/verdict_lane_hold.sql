-- verdict_lane_hold: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: e323ddb6af57b552da3b3b979ce5c384
CREATE OR REPLACE FUNCTION public.verdict_lane_hold(c limit_lanes, jobs bigint[])
 RETURNS bigint[]
 LANGUAGE sql
 STABLE
AS $function$ SELECT CASE WHEN c.slots IS NULL THEN c.holders
              WHEN cardinality(c.holders) + cardinality(jobs) <= least(c.slots, 32)
              THEN c.holders || jobs
              ELSE verdict_lane_alive(c.holders) || jobs END $function$
;
