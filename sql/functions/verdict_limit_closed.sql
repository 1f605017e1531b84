-- verdict_limit_closed: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 2d1e18847488f5d14123475df53073d2
CREATE OR REPLACE FUNCTION public.verdict_limit_closed(l limits, est bigint)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE PARALLEL SAFE
AS $function$
BEGIN
    -- a snapshot read, no lock: throttled, or no active lane has room for one claim
    RETURN coalesce(l.throttled_until > now(), false)
        OR (l.lanes > 0 AND NOT EXISTS (SELECT 1 FROM limit_lanes c
                WHERE c.key = l.key AND c.n < l.lanes AND verdict_lane_units(c, 1, est) >= 1));
END $function$
;
