-- verdict_lane_units: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 45982b92d358609276e73cee1b29c4da
CREATE OR REPLACE FUNCTION public.verdict_lane_units(c limit_lanes, want bigint, est bigint)
 RETURNS bigint
 LANGUAGE sql
AS $function$ SELECT least(
    CASE WHEN c.slots IS NULL THEN NULL
         WHEN cardinality(c.holders) + want <= c.slots THEN want
         ELSE greatest(0, c.slots - cardinality(verdict_lane_alive(c.holders))) END,
    verdict_lane_room(c, want, est)) $function$
;
