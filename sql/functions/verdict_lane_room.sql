-- verdict_lane_room: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: none
-- The rate and token room of lane c for want claims of est tokens each (NULL: the lane sets
-- neither): the part of verdict_lane_units besides the slots.
CREATE OR REPLACE FUNCTION public.verdict_lane_room(c limit_lanes, want bigint, est bigint)
 RETURNS bigint
 LANGUAGE sql
AS $function$ SELECT least(
    CASE WHEN c.burst IS NULL THEN NULL
         ELSE least(c.burst, greatest(0, floor((extract(epoch FROM c.burst * c.pace)
             - extract(epoch FROM greatest(c.tat, clock_timestamp()) - clock_timestamp()))
             / extract(epoch FROM c.pace)))) END::bigint,
    CASE WHEN c.tokens IS NULL THEN NULL
         WHEN c.minute IS DISTINCT FROM date_trunc('minute', now()) OR c.reserved = 0
         THEN CASE WHEN coalesce(est, 0) = 0 THEN want ELSE greatest(1, c.tokens / est) END
         WHEN c.reserved >= c.tokens THEN 0
         WHEN coalesce(est, 0) = 0 THEN want
         ELSE (c.tokens - c.reserved) / est END) $function$
;
