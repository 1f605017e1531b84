-- verdict_lane_alive: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: e7c2f203cfb9d0b60e99338a6806bbe4
CREATE OR REPLACE FUNCTION public.verdict_lane_alive(h bigint[])
 RETURNS bigint[]
 LANGUAGE plpgsql
 STABLE PARALLEL SAFE
AS $function$
BEGIN
    RETURN ARRAY(SELECT x FROM unnest(h) x WHERE NOT EXISTS (SELECT 1 FROM jobs j
                  WHERE j.id = x AND j.status <> 'processing'));
END $function$
;
