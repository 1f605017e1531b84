-- verdict_lane_share: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: a1494364ed4c93e7fc6d2596dd8378b2
CREATE OR REPLACE FUNCTION public.verdict_lane_share(total bigint, lanes integer, n integer)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ SELECT total / lanes + CASE WHEN n < total % lanes THEN 1 ELSE 0 END $function$
;
